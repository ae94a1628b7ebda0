// The trace build (kernels_templates/blocks/trace.cuh) and its host side (gpu/trace.hpp, gpu/trace_run.hpp):
// decoding and summing on hand-made buffers (CPU), and on the GPU a traced fa3_tma whose event counts must
// equal what the case's CSR layout says the kernel has to do.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <sstream>

#include "core/templates_dir.hpp"
#include "gpu/case_data.hpp"
#include "gpu/compiler.hpp"
#include "gpu/trace.hpp"
#include "gpu/trace_run.hpp"
#include "tests/test_support.hpp"
#include "tuner/space.hpp"
#include "workload/case_spec.hpp"
#include "workload/layout.hpp"

namespace attn {
namespace {

constexpr std::uint64_t kMagic = 0xA77E7ACEull;

/// A buffer of `l`'s shape with row (cta, role) written: start at clock `clk0`, events (code, clock).
void write_row(std::vector<std::uint64_t>& w, const TraceLayout& l, int cta, int role, int smid, std::uint64_t ns0,
               std::uint64_t ns1, std::uint64_t clk0, std::uint64_t clk1,
               const std::vector<std::pair<int, std::uint64_t>>& events) {
  std::uint64_t* r = w.data() + (std::size_t(cta) * l.roles + role) * l.stride;
  r[0] = events.size();
  r[1] = std::uint64_t(smid);
  r[2] = ns0;
  r[3] = clk0;
  r[4] = ns1;
  r[5] = clk1;
  r[6] = kMagic;
  for (std::size_t i = 0; i < events.size(); ++i)
    r[l.header + i] = (std::uint64_t(events[i].first) << 56) | events[i].second;
}

TEST(Trace, DecodesWrittenRowsOnlyWithClocksRelativeToTheRowStart) {
  const TraceLayout l{2, 4, 16, 8};
  std::vector<std::uint64_t> w(2 * 4 * 16, 0);
  write_row(w, l, 0, 2, 7, 1000, 3000, 500, 900, {{1, 510}, {3, 600}, {5, 700}, {9, 850}});
  write_row(w, l, 1, 0, 9, 1100, 2000, 10, 60, {{11, 20}});
  const auto rows = decode_trace(w, l);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].cta, 0);
  EXPECT_EQ(rows[0].role, 2);
  EXPECT_EQ(rows[0].smid, 7);
  EXPECT_EQ(rows[0].cycles, 400);
  ASSERT_EQ(rows[0].events.size(), 4u);
  EXPECT_EQ(rows[0].events[1].code, 3);
  EXPECT_EQ(rows[0].events[1].cycle, 100);
  EXPECT_EQ(rows[1].role, 0);
  EXPECT_EQ(trace_role(rows[1].role), TraceRole::producer);
  EXPECT_EQ(rows[1].events[0].cycle, 10);
}

TEST(Trace, RejectsMalformedLayoutsShortBuffersAndOverfullRows) {
  std::vector<std::uint64_t> w(2 * 4 * 16, 0);
  EXPECT_THROW(decode_trace(w, {0, 4, 16, 8}), std::invalid_argument);
  EXPECT_THROW(decode_trace(w, {2, 4, 8, 8}), std::invalid_argument);   // no room for events
  EXPECT_THROW(decode_trace(w, {3, 4, 16, 8}), std::invalid_argument);  // buffer shorter than the layout
  const TraceLayout l{2, 4, 16, 8};
  write_row(w, l, 1, 3, 0, 0, 1, 0, 100, {});
  w[(1 * 4 + 3) * 16] = 9;  // 9 events in a row of 8
  EXPECT_THROW(decode_trace(w, l), std::invalid_argument);
  w[(1 * 4 + 3) * 16] = 1;
  w[(1 * 4 + 3) * 16 + 8] = (5ull << 56) | 200;  // after the row's end at 100
  EXPECT_THROW(decode_trace(w, l), std::invalid_argument);
}

TEST(Trace, SummaryNamesEachIntervalByTheEventThatEndsItAndMeasuresTheTail) {
  const TraceLayout l{2, 4, 32, 8};
  std::vector<std::uint64_t> w(2 * 4 * 32, 0);
  // CTA 0, consumer warpgroup 0: start 0 .. work 10 .. q 30 .. kv 35 .. issue 40 .. qk_done 140 ..
  // softmax 200 .. epilogue 260 .. work (exit) 270, end 300.
  write_row(w, l, 0, 2, 0, 0, 5000, 0, 300,
            {{1, 10}, {2, 30}, {3, 35}, {4, 40}, {5, 140}, {6, 200}, {9, 260}, {1, 270}});
  // CTA 1, consumer warpgroup 0: one empty work tile; ends 2000 ns before CTA 0.
  write_row(w, l, 1, 2, 1, 100, 3000, 0, 100, {{1, 20}, {10, 50}, {1, 60}});
  const TraceSummary s = summarize_trace(decode_trace(w, l));
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> by_step;
  for (const auto& st : s.steps) {
    EXPECT_EQ(st.role, TraceRole::consumer);
    by_step[st.step] = {st.cycles, st.count};
  }
  EXPECT_EQ(by_step["start"], std::make_pair(std::int64_t(30), std::int64_t(2)));
  EXPECT_EQ(by_step[trace_step_name(TraceRole::consumer, 5)], std::make_pair(std::int64_t(100), std::int64_t(1)));
  EXPECT_EQ(by_step[trace_step_name(TraceRole::consumer, 6)], std::make_pair(std::int64_t(60), std::int64_t(1)));
  EXPECT_EQ(by_step[trace_step_name(TraceRole::consumer, 10)], std::make_pair(std::int64_t(30), std::int64_t(1)));
  EXPECT_EQ(by_step["exit"], std::make_pair(std::int64_t(30 + 40), std::int64_t(2)));
  EXPECT_EQ(s.role_cycles[int(TraceRole::consumer)], 400);
  std::int64_t sum = 0;
  for (const auto& st : s.steps) sum += st.cycles;
  EXPECT_EQ(sum, 400) << "every cycle of every row is in exactly one step";
  EXPECT_EQ(s.kv_tiles, 1);
  EXPECT_EQ(s.work_tiles, 2);
  EXPECT_EQ(s.ctas, 2);
  EXPECT_EQ(s.sms, 2);
  EXPECT_EQ(s.consumer_roles, 1) << "both rows are consumer warpgroup 0 of their CTA";
  EXPECT_DOUBLE_EQ(s.span_ns, 5000);
  EXPECT_DOUBLE_EQ(s.mean_tail_ns, (0 + 2000) / 2.0);
  std::ostringstream csv;
  write_trace_csv(csv, decode_trace(w, l));
  EXPECT_NE(csv.str().find("0,2,0,4,qk_done,140\n"), std::string::npos) << csv.str();
}

/// A GPU context, a compiler with its own cache and the fa3_tma space; skips without a GPU.
class TraceGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!test::gpu_available()) GTEST_SKIP() << "no CUDA device";
    ctx_.emplace(0);
    CompilerOptions co;
    co.cache_dir = test::temp_dir("attn-trace-cache");
    compiler_.emplace(co);
  }
  /// The cubin of `config` (+ NVRTC options `extra`); a compile failure fails the test.
  std::vector<char> cubin(const Config& config, std::vector<std::string> extra) {
    const CompiledVariant v = compiler_->compile({space_.source_path(), space_.kernel(), config, std::move(extra)});
    EXPECT_TRUE(v.ok) << v.log;
    return v.cubin;
  }
  std::optional<Context> ctx_;
  std::optional<Compiler> compiler_;
  const TemplateSpace space_ = TemplateSpace::load_named(default_templates_dir(), "fa3_tma");
};

TEST_F(TraceGpu, Fa3TmaTraceCountsEqualTheWorkOfTheLayoutAndOutputsPass) {
  const Config def = space_.default_config();
  CaseBuilder cases(*ctx_, *compiler_);
  // local-dev holds ragged seq_lens (rows and whole q blocks past seq_len: empty work tiles) in every family.
  for (const CaseSpec& spec : builtin_suite("local-dev")) {
    SCOPED_TRACE(spec.case_id);
    TraceRequest req{cubin(def, {"-DATTN_TRACE=1"}), cubin(def, {}), space_.kernel(), spec};
    req.warmup = 1;
    req.launches = 3;
    const TraceResult r = run_trace(cases, req);
    EXPECT_TRUE(r.outputs.passed) << r.outputs.message;
    EXPECT_GT(r.traced_us, 0);
    EXPECT_GT(r.plain_us, 0);
    ASSERT_LE(r.grid, unsigned(r.layout.ctas)) << "every CTA traced";
    std::map<int, std::map<int, std::int64_t>> per_role;  // role -> code -> count
    for (const TraceRow& row : r.rows) {
      EXPECT_EQ(row.dropped, 0u);
      for (std::size_t i = 1; i < row.events.size(); ++i) EXPECT_LE(row.events[i - 1].cycle, row.events[i].cycle);
      for (const auto& e : row.events) ++per_role[row.role][e.code];
    }
    const BlockSparseLayout layout = build_layout(spec);
    const std::int64_t work_tiles = std::int64_t(spec.batch_size) * spec.num_heads * (spec.t_max / 128);
    const std::int64_t ctas = r.grid;
    for (int role : {2, 3}) {  // the two consumer warpgroups (default CONSUMERS 2, BLOCK_N 128, OVERLAP 1)
      auto& c = per_role[role];
      EXPECT_EQ(c[5], layout.allowed_pairs()) << "Q K^T per allowed kv block";
      EXPECT_EQ(c[6], c[5]) << "a softmax per Q K^T";
      EXPECT_EQ(c[9] + c[10], work_tiles) << "an epilogue or empty store per work tile";
      EXPECT_EQ(c[1], work_tiles + ctas) << "each work tile and each CTA's exit";
    }
    // The producer claims a slot per kv tile, per empty work tile and once per CTA to send the exit.
    EXPECT_EQ(per_role[0][11], layout.allowed_pairs() + per_role[2][10] + ctas);
    const TraceSummary s = summarize_trace(r.rows);
    EXPECT_EQ(s.consumer_roles, 2);
    EXPECT_EQ(s.kv_tiles, 2 * layout.allowed_pairs());
    EXPECT_GT(s.span_ns, 0);
  }
}

// A launch of a few hundred microseconds: the poison and the trace buffer's zeroing must be ordered before
// it (they once ran on the legacy stream, concurrently with the kernel on the non-blocking one, and
// overwrote lse rows the kernel had already written: lse diff inf on every full case). The config is the
// 2026-11-24 daemon champion's shape, whose V ring is one slot deeper than its K ring (OVERLAP 1, room in
// shared memory): a ragged local-dev case checks that path too.
TEST_F(TraceGpu, TracedOutputsPassOnAFullCaseAndEveryRowIsComplete) {
  Config champ = space_.default_config();
  for (const auto& [name, value] : std::map<std::string, std::int64_t>{
           {"SCHEDULE", 2}, {"OVERLAP", 1}, {"EPILOGUE", 2}, {"Q_BUFFERS", 1}, {"KV_ORDER", 0}, {"ORDER", 2}})
    champ[name] = value;  // SCHEDULE 2: persistent, 132 CTAs, all traced
  const std::vector<char> traced = cubin(champ, {"-DATTN_TRACE=1"});
  CaseBuilder cases(*ctx_, *compiler_);
  for (const auto& [suite, id] : {std::pair{"full", "full-window-1"}, std::pair{"local-dev", "local-window-2"}}) {
    SCOPED_TRACE(id);
    CaseSpec spec;
    for (const CaseSpec& c : builtin_suite(suite))
      if (c.case_id == id) spec = c;
    ASSERT_EQ(spec.case_id, id);
    TraceRequest req{traced, {}, space_.kernel(), spec};
    req.warmup = 1;
    req.launches = 2;
    const TraceResult r = run_trace(cases, req);
    EXPECT_TRUE(r.outputs.passed) << r.outputs.message;
    ASSERT_EQ(r.rows.size(), std::size_t(r.grid) * 4) << "producer, converter and two consumer rows per CTA";
    const TraceSummary s = summarize_trace(r.rows);
    EXPECT_EQ(s.kv_tiles, 2 * build_layout(spec).allowed_pairs());
    EXPECT_EQ(s.work_tiles, 2 * std::int64_t(spec.batch_size) * spec.num_heads * (spec.t_max / 128))
        << "each of the two consumer warpgroups stores its rows of every work tile";
  }
}

}  // namespace
}  // namespace attn
