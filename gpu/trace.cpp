#include "gpu/trace.hpp"

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

constexpr std::uint64_t kMagic = 0xA77E7ACEull;  // trace.cuh kTraceMagic
constexpr std::uint64_t kClockMask = (1ull << 56) - 1;

/// trace.cuh TraceEvent, by code: the event's name and the step that ends with it.
struct EventNames {
  const char* event;
  const char* step;
};
const std::map<int, EventNames>& event_names() {
  static const std::map<int, EventNames> m{
      {1, {"work", "wait for the next work tile"}},
      {2, {"q", "wait for Q"}},
      {3, {"kv", "wait for K"}},
      {4, {"issue", "wait for V fp16 / GEMM turn"}},
      {5, {"qk_done", "tensor cores: Q K^T (with the previous P V)"}},
      {6, {"softmax", "softmax (and O rescale)"}},
      {7, {"pv_issue", "wait for V fp16 / turn, last P V"}},
      {8, {"pv_done", "wait for P V"}},
      {9, {"epilogue", "epilogue (o, lse)"}},
      {10, {"empty", "empty work tile (zeros)"}},
      {11, {"slot", "wait for a free K/V slot (+ CSR walk, TMA issue)"}},
      {12, {"v_full", "wait for V"}},
      {13, {"v_ready", "convert V to fp16"}},
  };
  return m;
}

}  // namespace

TraceRole trace_role(int role) {
  return role == 0 ? TraceRole::producer : role == 1 ? TraceRole::converter : TraceRole::consumer;
}

const char* trace_role_name(TraceRole r) {
  switch (r) {
    case TraceRole::producer: return "producer";
    case TraceRole::converter: return "converter";
    case TraceRole::consumer: return "consumer";
  }
  return "?";
}

std::string trace_event_name(int code) {
  const auto it = event_names().find(code);
  return it == event_names().end() ? fmt::format("event {}", code) : it->second.event;
}

std::string trace_step_name(TraceRole, int code) {
  const auto it = event_names().find(code);
  return it == event_names().end() ? fmt::format("before event {}", code) : it->second.step;
}

std::vector<TraceRow> decode_trace(const std::vector<std::uint64_t>& words, const TraceLayout& l) {
  if (l.ctas <= 0 || l.roles <= 0 || l.header < 8 || l.stride <= l.header)
    throw std::invalid_argument(fmt::format("trace layout {{ctas {}, roles {}, stride {}, header {}}} is malformed",
                                            l.ctas, l.roles, l.stride, l.header));
  const std::size_t need = std::size_t(l.ctas) * l.roles * l.stride;
  if (words.size() < need)
    throw std::invalid_argument(fmt::format("trace buffer holds {} words, its layout needs {}", words.size(), need));
  std::vector<TraceRow> rows;
  for (int cta = 0; cta < l.ctas; ++cta)
    for (int role = 0; role < l.roles; ++role) {
      const std::uint64_t* w = words.data() + (std::size_t(cta) * l.roles + role) * l.stride;
      if (w[6] != kMagic) continue;
      const std::uint64_t n = w[0];
      if (n > std::uint64_t(l.stride - l.header))
        throw std::invalid_argument(fmt::format("trace row cta {} role {}: {} events, capacity {}", cta, role, n,
                                                l.stride - l.header));
      TraceRow r;
      r.cta = cta;
      r.role = role;
      r.smid = int(w[1]);
      r.start_ns = w[2];
      r.end_ns = w[4];
      const std::uint64_t clk0 = w[3] & kClockMask;
      r.cycles = std::int64_t((w[5] & kClockMask) - clk0);
      r.dropped = w[7];
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t e = w[l.header + i];
        const std::int64_t cycle = std::int64_t(((e & kClockMask) - clk0) & kClockMask);
        if (cycle > r.cycles)
          throw std::invalid_argument(fmt::format("trace row cta {} role {}: event {} at cycle {} after the row's end {}",
                                                  cta, role, i, cycle, r.cycles));
        r.events.push_back({int(e >> 56), cycle});
      }
      rows.push_back(std::move(r));
    }
  return rows;
}

TraceSummary summarize_trace(const std::vector<TraceRow>& rows) {
  TraceSummary s;
  std::map<std::pair<TraceRole, std::string>, std::size_t> index;
  auto add = [&](TraceRole role, const std::string& step, std::int64_t cycles) {
    const auto key = std::make_pair(role, step);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, s.steps.size()).first;
      s.steps.push_back({role, step, 0, 0});
    }
    s.steps[it->second].cycles += cycles;
    s.steps[it->second].count += 1;
  };
  std::set<int> sms, consumer_roles;
  std::map<int, std::uint64_t> cta_end;
  std::uint64_t first_ns = UINT64_MAX, last_ns = 0;
  for (const TraceRow& r : rows) {
    const TraceRole role = trace_role(r.role);
    s.role_cycles[int(role)] += r.cycles;
    s.dropped += r.dropped;
    sms.insert(r.smid);
    if (role == TraceRole::consumer) consumer_roles.insert(r.role);
    cta_end[r.cta] = std::max(cta_end[r.cta], r.end_ns);
    first_ns = std::min(first_ns, r.start_ns);
    last_ns = std::max(last_ns, r.end_ns);
    std::int64_t prev = 0;
    for (std::size_t i = 0; i < r.events.size(); ++i) {
      const TraceEvent& e = r.events[i];
      add(role, i == 0 ? "start" : trace_step_name(role, e.code), e.cycle - prev);
      prev = e.cycle;
      if (role == TraceRole::consumer) {
        if (e.code == 5) ++s.kv_tiles;
        if (e.code == 9 || e.code == 10) ++s.work_tiles;
      }
    }
    add(role, "exit", r.cycles - prev);
  }
  s.ctas = int(cta_end.size());
  s.sms = int(sms.size());
  s.consumer_roles = int(consumer_roles.size());
  if (!rows.empty()) {
    s.span_ns = double(last_ns - first_ns);
    double tail = 0;
    for (const auto& [cta, end] : cta_end) tail += double(last_ns - end);
    s.mean_tail_ns = tail / double(cta_end.size());
  }
  return s;
}

void write_trace_csv(std::ostream& out, const std::vector<TraceRow>& rows) {
  out << "cta,role,smid,index,event,cycle\n";
  for (const TraceRow& r : rows)
    for (std::size_t i = 0; i < r.events.size(); ++i)
      out << fmt::format("{},{},{},{},{},{}\n", r.cta, r.role, r.smid, i, trace_event_name(r.events[i].code),
                         r.events[i].cycle);
}

}  // namespace attn
