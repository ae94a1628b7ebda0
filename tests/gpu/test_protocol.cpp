// Worker protocol JSON round trips, failure-kind names, and the stopping criterion on synthetic samples.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gpu/failure.hpp"
#include "gpu/timing.hpp"
#include "gpu/worker_protocol.hpp"

namespace attn {
namespace {
using nlohmann::json;

TEST(FailureKind, NamesRoundTrip) {
  const FailureKind all[] = {FailureKind::none,         FailureKind::compile, FailureKind::device_limit,
                             FailureKind::fault,        FailureKind::hang,    FailureKind::wrong_result,
                             FailureKind::worker_died, FailureKind::interrupted, FailureKind::proposal};
  for (auto k : all) EXPECT_EQ(parse_failure_kind(to_string(k)), k);
  EXPECT_STREQ(to_string(FailureKind::device_limit), "device_limit");
  EXPECT_STREQ(to_string(FailureKind::worker_died), "worker_died");
  EXPECT_STREQ(to_string(FailureKind::proposal), "proposal");
  EXPECT_FALSE(failure_kind_from_string("Fault").has_value());
  EXPECT_THROW(parse_failure_kind("segfault"), std::invalid_argument);
}

TEST(Protocol, StatusNames) {
  json j;
  put_status(j, {FailureKind::none, true, "no suite"});
  EXPECT_EQ(j["status"], "rejected");
  EXPECT_TRUE(reply_status_from_json(j).rejected);
  put_status(j, {FailureKind::hang, false, "slow"});
  EXPECT_EQ(j["status"], "hang");
  EXPECT_EQ(reply_status_from_json(j), (ReplyStatus{FailureKind::hang, false, "slow"}));
  put_status(j, {});
  EXPECT_EQ(j["status"], "ok");
  EXPECT_TRUE(reply_status_from_json(j).ok());
  EXPECT_THROW(reply_status_from_json(json{{"status", "none"}}), std::invalid_argument);
  EXPECT_THROW(reply_status_from_json(json{{"status", "weird"}}), std::invalid_argument);
  EXPECT_THROW(reply_status_from_json(json{{"message", "x"}}), std::invalid_argument);
  EXPECT_THROW(reply_status_from_json(json::array()), std::invalid_argument);
}

TEST(Protocol, HelloRoundTrip) {
  HelloResponse h;
  h.status.message = "ok";
  h.gpu_name = "NVIDIA H100 80GB HBM3";
  h.pci_bus_id = "0000:19:00.0";
  h.driver_version = 13000;
  h.cc_major = 9;
  h.sm_count = 132;
  h.l2_bytes = 52428800;
  h.max_smem_per_block_optin = 232448;
  h.sm_clock_mhz = 1980;
  h.nvrtc_version = "13.0";
  h.pid = 4242;
  EXPECT_EQ(hello_response_from_json(json::parse(to_json(h).dump())), h);
}

TEST(Protocol, PrepareRoundTrip) {
  PrepareRequest req{builtin_suite("smoke")};
  ASSERT_FALSE(req.cases.empty());
  const json j = json::parse(to_json(req).dump());
  EXPECT_EQ(request_command(j), "prepare");
  EXPECT_EQ(prepare_request_from_json(j), req);
  PrepareResponse r{{}, 3, 2, 812.5};
  EXPECT_EQ(prepare_response_from_json(json::parse(to_json(r).dump())), r);
  EXPECT_THROW(prepare_request_from_json(json{{"cmd", "prepare"}}), std::invalid_argument);
  json bad = j;
  bad["cases"][0]["t_max"] = 100;  // not a multiple of 128
  EXPECT_THROW(prepare_request_from_json(bad), std::invalid_argument);
}

TEST(Protocol, EvalRequestRoundTripAndDefaults) {
  EvalRequest r{"/tmp/x.cubin", "block_sparse_attn_fwd", {2, 5, 50, 0.5, 0.02}, false, true};
  const json j = json::parse(to_json(r).dump());
  EXPECT_EQ(request_command(j), "eval");
  EXPECT_EQ(eval_request_from_json(j), r);
  const EvalRequest d = eval_request_from_json(
      json{{"cmd", "eval"}, {"cubin", "a"}, {"kernel", "k"}, {"timing", {{"min_samples", 7}}}});
  EXPECT_EQ(d.timing.min_samples, 7);
  EXPECT_EQ(d.timing.max_samples, TimingParams{}.max_samples);
  EXPECT_TRUE(d.validate);
  EXPECT_TRUE(d.time);
  EXPECT_THROW(eval_request_from_json(json{{"cmd", "eval"}, {"kernel", "k"}}), std::invalid_argument);
  EXPECT_THROW(eval_request_from_json(json{{"cmd", "eval"}, {"cubin", 3}, {"kernel", "k"}}), std::invalid_argument);
}

TEST(Protocol, EvalCaseSubsetIsOptionalAndChecked) {
  // An older daemon's request (no "cases") is the whole suite; a whole-suite request writes no "cases".
  EvalRequest whole{"/tmp/x.cubin", "k", {}, true, true, {}};
  EXPECT_FALSE(to_json(whole).contains("cases"));
  EvalRequest sub = whole;
  sub.case_ids = {"full-retrieval-2", "full-window-1"};
  const json j = json::parse(to_json(sub).dump());
  EXPECT_EQ(j.at("cases"), json({"full-retrieval-2", "full-window-1"}));
  EXPECT_EQ(eval_request_from_json(j), sub);
  json bad = j;
  bad["cases"] = json({"a", "a"});
  EXPECT_THROW(eval_request_from_json(bad), std::invalid_argument);
  bad["cases"] = json({1});
  EXPECT_THROW(eval_request_from_json(bad), std::invalid_argument);
  bad["cases"] = "full-window-1";
  EXPECT_THROW(eval_request_from_json(bad), std::invalid_argument);

  // The selection keeps the suite's order, whatever order the request names them in.
  const auto suite = builtin_suite("full");
  const auto picked = select_cases(suite, sub.case_ids);
  ASSERT_EQ(picked.size(), 2u);
  EXPECT_EQ(picked[0].case_id, "full-window-1");
  EXPECT_EQ(picked[1].case_id, "full-retrieval-2");
  EXPECT_EQ(select_cases(suite, {}), suite);
  try {
    select_cases(suite, {"full-window-1", "quick-window-1"});
    ADD_FAILURE() << "an unknown case was selected";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'quick-window-1' is not in the prepared suite"), std::string::npos);
  }
}

TEST(Protocol, PrepareEvictIsOptional) {
  PrepareRequest req{builtin_suite("smoke"), false};
  EXPECT_FALSE(to_json(req).contains("evict"));
  req.evict = true;
  const json j = json::parse(to_json(req).dump());
  EXPECT_EQ(prepare_request_from_json(j), req);
  json bad = j;
  bad["evict"] = "yes";
  EXPECT_THROW(prepare_request_from_json(bad), std::invalid_argument);
}

TEST(Protocol, EvalResponseKeepsNonFiniteNumbers) {
  EvalResponse r;
  r.status = {FailureKind::wrong_result, false, "1 of 2 cases outside the tolerances"};
  r.launch = {256, 98304, 128, 0};
  CaseResult a;
  a.case_id = "w1";
  a.family = Family::sliding_window;
  a.o_max_abs_diff = std::numeric_limits<double>::infinity();  // finiteness mismatch, as the harness
  a.lse_max_abs_diff = 0.25;
  a.validated = true;
  CaseResult b = a;
  b.case_id = "r1";
  b.family = Family::sliding_window_retrieval;
  b.passed = true;
  b.timed = true;
  b.median_ms = 0.0731;
  b.spread = 0.004;
  b.samples = 40;
  b.sm_clock_mhz = 1980;
  r.cases = {a, b};
  r.score_ms = std::numeric_limits<double>::quiet_NaN();
  r.family_median_ms = {{Family::sliding_window_retrieval, 0.0731}};
  r.wall_ms = 12.5;
  const std::string text = to_json(r).dump();  // must not throw on inf / NaN
  const EvalResponse back = eval_response_from_json(json::parse(text));
  EXPECT_EQ(back.status, r.status);
  EXPECT_EQ(back.launch.smem_bytes, 98304);
  ASSERT_EQ(back.cases.size(), 2u);
  EXPECT_EQ(back.cases[0], a);
  EXPECT_EQ(back.cases[1], b);
  EXPECT_TRUE(std::isinf(back.cases[0].o_max_abs_diff));
  EXPECT_TRUE(std::isnan(back.score_ms));
  EXPECT_EQ(back.family_median_ms, r.family_median_ms);
  EXPECT_DOUBLE_EQ(back.wall_ms, 12.5);
}

// Found by fuzz/fuzz_protocol: an integer field given as a huge float was cast to int (undefined
// behaviour), a huge integer wrapped. Both are now a clear protocol error.
TEST(Protocol, IntegerFieldsMustBeIntegersInRange) {
  json r = json::parse(R"({"status":"ok","message":"","cases":[{"case_id":"c","family":"sliding_window",
      "median_ms":0.1,"spread":0.01,"samples":20,"sm_clock_mhz":1980,"o_max_abs_diff":0.0,
      "lse_max_abs_diff":0.0,"passed":true,"validated":true,"timed":true}],"score_ms":0.1,"wall_ms":1.0,
      "launch":{"threads":128,"smem_bytes":0,"block_m":128,"grid_mode":0},"family_median_ms":{}})");
  EXPECT_EQ(eval_response_from_json(r).cases.at(0).samples, 20);
  for (const json& bad : {json(5.5e57), json(20.0), json(std::int64_t(1) << 40), json(std::uint64_t(-1)), json("20")}) {
    json x = r;
    x["cases"][0]["samples"] = bad;
    try {
      eval_response_from_json(x);
      ADD_FAILURE() << "accepted samples = " << bad.dump();
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("'samples'"), std::string::npos) << e.what();
    }
  }
  json neg = r;
  neg["cases"][0]["sm_clock_mhz"] = -1;  // unsigned field
  EXPECT_THROW(eval_response_from_json(neg), std::invalid_argument);
  json big = {{"status", "ok"}, {"message", ""}, {"cases", 4294967296.0}, {"built", 1}, {"ms", 1.0}};
  EXPECT_THROW(prepare_response_from_json(big), std::invalid_argument);
}

TEST(Protocol, RequestCommand) {
  EXPECT_EQ(request_command(json{{"cmd", "hello"}}), "hello");
  EXPECT_EQ(request_command(json{{"cmd", "quit"}}), "quit");
  EXPECT_THROW(request_command(json{{"cmd", "format_disk"}}), std::invalid_argument);
  EXPECT_THROW(request_command(json{{"command", "hello"}}), std::invalid_argument);
  EXPECT_THROW(request_command(json("hello")), std::invalid_argument);
}

TEST(Timing, SummarizeQuartiles) {
  const SampleStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.q1, 2);
  EXPECT_DOUBLE_EQ(s.q3, 4);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.spread, 2.0 / 3.0);
  const SampleStats even = summarize({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_DOUBLE_EQ(even.q1, 1.75);  // numpy.quantile([1,2,3,4], 0.25)
  EXPECT_DOUBLE_EQ(summarize({7}).spread, 0);
  EXPECT_THROW(summarize({}), std::invalid_argument);
}

// Feeds samples until the criterion stops; returns how many it took (or -1 if it never stopped).
int samples_until_stop(StoppingCriterion& c, const std::vector<double>& seq, double seconds_per_sample = 0) {
  c.reset();
  for (std::size_t i = 0; i < seq.size(); ++i) {
    c.add_sample(seq[i]);
    if (c.is_finished(double(i + 1) * seconds_per_sample)) return int(i + 1);
  }
  return -1;
}

TEST(Timing, SpreadCriterionStopsWhenStable) {
  TimingParams p;
  p.min_samples = 10;
  p.max_samples = 100;
  p.max_seconds = 1e9;
  p.target_spread = 0.01;
  SpreadCriterion c(p);
  EXPECT_EQ(samples_until_stop(c, std::vector<double>(200, 0.1)), 10);  // stable: at min_samples

  std::vector<double> noisy;  // alternating 1 and 2: IQR/median stays ~0.67, never below 1%
  for (int i = 0; i < 200; ++i) noisy.push_back(i % 2 ? 2.0 : 1.0);
  EXPECT_EQ(samples_until_stop(c, noisy), 100);  // runs to max_samples

  // Noisy start, then stable: stops once the quartiles settle, after min and before max.
  std::vector<double> settling = {1, 3, 1, 3, 1, 3};
  for (int i = 0; i < 100; ++i) settling.push_back(2.0);
  const int n = samples_until_stop(c, settling);
  EXPECT_GT(n, 10);
  EXPECT_LT(n, 100);
  EXPECT_LE(summarize(c.samples()).spread, 0.01);
}

TEST(Timing, SpreadCriterionTimeCap) {
  TimingParams p;
  p.min_samples = 5;
  p.max_samples = 1000;
  p.max_seconds = 1.0;
  SpreadCriterion c(p);
  std::vector<double> noisy;
  for (int i = 0; i < 1000; ++i) noisy.push_back(i % 2 ? 2.0 : 1.0);
  EXPECT_EQ(samples_until_stop(c, noisy, 0.3), 5);   // 1 s passed after 4 samples, but min is 5
  EXPECT_EQ(samples_until_stop(c, noisy, 0.0125), 80);  // stops at 1 s = 80 samples
  EXPECT_THROW(SpreadCriterion(TimingParams{0, 10, 5, 1, 0.01}), std::invalid_argument);  // max < min
  EXPECT_THROW(SpreadCriterion(TimingParams{0, 0, 5, 1, 0.01}), std::invalid_argument);
}

}  // namespace
}  // namespace attn
