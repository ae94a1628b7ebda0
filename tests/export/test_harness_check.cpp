// `attn-tuner export --harness DIR` (export/harness_check.hpp) against a fake harness made by the test: a
// Python package attention_kernel_challenge/cli.py whose eval-submission prints a JSON summary like the real
// one (valid or not), fails, prints garbage, or hangs. CPU only. Checked: each run recorded in harness_checks
// with its fields, the clear message and exit code of every failure (2: bad input, 1: the harness failed or
// found the submission invalid), and that the written submission stays.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "export/harness_check.hpp"
#include "tests/export/export_db.hpp"
#include "tests/export/helpers.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using test::export_cli;
using test::shell_quote;

// The fake harness. MODE (mode.txt beside the package): valid | invalid | fail | garbage | hang. It records
// its argv, working directory and PYTHONPATH in calls.jsonl beside the package.
constexpr const char* kFakeCli = R"py(import json, os, subprocess, sys, time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary(valid, score):
    lat = {"quick-window-1": 0.30, "quick-window-2": 0.40, "quick-global-1": 0.50,
           "quick-retrieval-1": 0.20, "quick-retrieval-2": 0.40, "quick-retrieval-3": 0.60}
    cases = []
    for case_id, ms in lat.items():
        family = {"window": "sliding_window", "global": "sliding_window_global",
                  "retrieval": "sliding_window_retrieval"}[case_id.split("-")[1]]
        ok = valid or case_id != "quick-global-1"
        cases.append({"case_id": case_id, "family": family, "latency_ms": ms if ok else None,
                      "density": 0.2, "variant": "v",
                      "validation": {"passed": ok, "output_max_abs_diff": 0.0078125 if ok else 3.5,
                                     "lse_max_abs_diff": 1e-6,
                                     "message": "ok (checked 1 of 3)" if ok else "output mismatch (max abs diff 3.5)"}})
    return {"suite": "quick", "device": "cuda", "overall_valid": valid,
            "geometric_mean_family_latency_ms": score if valid else None,
            "worst_family_latency_ms": 0.5 if valid else None, "case_results": cases,
            "scored_case_count": len(cases), "failure_reason": None}


def main():
    args = sys.argv[1:]
    with open(os.path.join(HERE, "calls.jsonl"), "a") as f:
        f.write(json.dumps({"argv": args, "cwd": os.getcwd(), "pythonpath": os.environ.get("PYTHONPATH", ""),
                            "cc": os.environ.get("CC")}) + "\n")
    with open(os.path.join(HERE, "calls.jsonl")) as f:
        calls = sum(1 for _ in f)
    mode = open(os.path.join(HERE, "mode.txt")).read().strip()
    if args[0] != "eval-submission":
        print("error: unknown command", file=sys.stderr)
        return 2
    sub = args[args.index("--submission-dir") + 1]
    if not os.path.isfile(os.path.join(sub, "submission.py")):
        print("error: no submission.py in " + sub, file=sys.stderr)
        return 1
    if mode == "valid":
        print("setup: 3 variants loaded {not json}")
        print(json.dumps(summary(True, [0.30, 0.36, 0.33][(calls - 1) % 3]), indent=2))
        return 0
    if mode == "invalid":
        print(json.dumps(summary(False, None), indent=2))
        return 1
    if mode == "fail":
        print("Traceback (most recent call last):", file=sys.stderr)
        print("RuntimeError: CUDA is not available on this machine", file=sys.stderr)
        return 1
    if mode == "garbage":
        print("Suite: quick\nOverall valid: maybe {")
        return 0
    if mode == "hang":
        child = subprocess.Popen(["sleep", "120"])
        with open(os.path.join(HERE, "child.pid"), "w") as f:
            f.write(str(child.pid))
        time.sleep(120)
        return 0
    return 3


if __name__ == "__main__":
    sys.exit(main())
)py";

/// A fake harness checkout in a fresh folder, in mode `mode`; a git repository of its own when `git`.
std::string fake_harness(const std::string& mode, bool git = false) {
  const std::string dir = test::temp_dir("fake-harness");
  test::write_text(dir + "/attention_kernel_challenge/__init__.py", "");
  test::write_text(dir + "/attention_kernel_challenge/cli.py", kFakeCli);
  test::write_file(dir + "/mode.txt", mode);
  if (git) {
    const auto r = test::run_command("cd " + shell_quote(dir) +
                                     " && git init -q . && git add attention_kernel_challenge && "
                                     "git -c user.name=t -c user.email=t@t commit -qm fake");
    EXPECT_EQ(r.status, 0) << r.output;
  }
  return dir;
}

std::vector<nlohmann::json> calls_of(const std::string& harness) {
  std::vector<nlohmann::json> out;
  std::ifstream in(harness + "/calls.jsonl");
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

/// A quick-suite DB with one overall champion.
struct QuickDb {
  test::ExportDb f{"quick"};
  std::int64_t iter = 0;
  QuickDb() {
    iter = f.add_iteration(test::fa2_mma_default_config(), test::fake_cubin(1), [](const CaseSpec&) { return 1.0; });
    f.champion(ChampionScope::overall, iter);
  }
};

std::string export_args(const std::string& db, const std::string& out, const std::string& harness) {
  return "--db " + shell_quote(db) + " --out " + shell_quote(out) + " --harness " + shell_quote(harness);
}

bool git_available() { return test::run_command("git --version").status == 0; }

TEST(HarnessCheck, ValidRunsAreRecordedWithTheirFieldsAndTheMedianIsPrinted) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  const bool git = git_available();
  QuickDb d;
  const std::string harness = fake_harness("valid", git);
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const auto r = test::run_command("ATTENTION_KERNEL_CHALLENGE_PUBLIC_SUITE_ROOT_SEED=1234 " +
                                   shell_quote(test::binary_path()) + " export " + export_args(d.f.path(), out, harness) +
                                   " --harness-runs 3 --harness-arg=--measure-iters --harness-arg=5");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("suite quick (root seed 1234), --serverlike, 3 run(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("run 1/3: valid, 0.3000 ms (sliding_window 0.3500, sliding_window_global 0.5000, "
                          "sliding_window_retrieval 0.4000)"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("run 2/3: valid, 0.3600 ms"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("harness: median score 0.3300 ms over 3 valid run(s) of 3 (suite quick)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("recorded as harness check(s) 1-3"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));

  // The invocation: the hosted evaluation's, in the checkout, with the extra arguments last.
  const auto calls = calls_of(harness);
  ASSERT_EQ(calls.size(), 3u);
  const std::string abs_out = fs::absolute(out).lexically_normal().string();
  const std::vector<std::string> argv = {"eval-submission", "--submission-dir", abs_out, "--suite", "quick",
                                         "--backend", "local", "--device", "cuda", "--serverlike", "--emit-json",
                                         "--measure-iters", "5"};
  EXPECT_EQ(calls[0]["argv"].get<std::vector<std::string>>(), argv);
  EXPECT_EQ(fs::canonical(calls[0]["cwd"].get<std::string>()), fs::canonical(harness));
  EXPECT_EQ(calls[0]["pythonpath"].get<std::string>().rfind(fs::absolute(harness).lexically_normal().string(), 0), 0u)
      << calls[0]["pythonpath"];

  // Each run is a row of harness_checks.
  auto db = ExperimentDb::open(d.f.path(), ExperimentDb::Mode::read_only);
  const auto checks = db.harness_checks();
  ASSERT_EQ(checks.size(), 3u);
  const auto& c = checks[0];
  EXPECT_EQ(c.suite, "quick");
  EXPECT_EQ(c.export_suite, "quick");
  EXPECT_EQ(c.root_seed, std::optional<std::int64_t>(1234));
  EXPECT_TRUE(c.valid);
  ASSERT_TRUE(c.score_ms);
  EXPECT_DOUBLE_EQ(*c.score_ms, 0.30);
  EXPECT_DOUBLE_EQ(*checks[1].score_ms, 0.36);
  const auto fam = nlohmann::json::parse(c.family_ms_json);
  EXPECT_DOUBLE_EQ(fam["sliding_window"].get<double>(), 0.35);  // median of an even count: the mean of the middle two
  EXPECT_DOUBLE_EQ(fam["sliding_window_global"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(fam["sliding_window_retrieval"].get<double>(), 0.4);
  EXPECT_FALSE(c.failure_reason);
  EXPECT_EQ(c.submission_dir, abs_out);
  EXPECT_EQ(nlohmann::json::parse(c.harness_args), nlohmann::json({"--measure-iters", "5"}));
  EXPECT_FALSE(c.ran_at.empty());
  ASSERT_TRUE(c.wall_s);
  const auto iterations = nlohmann::json::parse(c.iterations_json);
  ASSERT_EQ(iterations.size(), 1u);
  EXPECT_EQ(iterations[0]["iteration"], d.iter);
  EXPECT_EQ(iterations[0]["variant"], "fa2_mma_i" + std::to_string(d.iter));
  EXPECT_EQ(iterations[0]["template"], "fa2_mma");
  if (git) {
    const auto head = test::run_command("git -C " + shell_quote(harness) + " rev-parse HEAD");
    ASSERT_TRUE(c.harness_commit);
    EXPECT_EQ(*c.harness_commit + "\n", head.output);
  }

  // `query harness` lists them.
  const auto q = test::run_command(shell_quote(test::binary_path()) + " query harness --db " + shell_quote(d.f.path()));
  EXPECT_EQ(q.status, 0) << q.output;
  EXPECT_NE(q.output.find("sliding_window=0.3500"), std::string::npos) << q.output;
  EXPECT_NE(q.output.find("1234"), std::string::npos) << q.output;
  const auto qj = test::run_command(shell_quote(test::binary_path()) + " query --format json harness --db " +
                                    shell_quote(d.f.path()));
  ASSERT_EQ(qj.status, 0) << qj.output;
  const auto rows = nlohmann::json::parse(qj.output);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2]["score_ms"], 0.33);
  EXPECT_EQ(rows[0]["iterations"][0]["iteration"], d.iter);
}

TEST(HarnessCheck, AHarnessOutsideAGitCheckoutOfItsOwnHasNoCommit) {
  // A folder inside another repository (this one's .harness/ is) is not the harness's checkout.
  if (!test::python3_available() || !git_available()) GTEST_SKIP() << "python3 or git not available";
  const std::string outer = test::temp_dir("harness-outer");
  ASSERT_EQ(test::run_command("cd " + shell_quote(outer) + " && git init -q . && git -c user.name=t -c user.email=t@t "
                              "commit -q --allow-empty -m outer").status, 0);
  const std::string inner = outer + "/harness";
  fs::create_directories(inner);
  EXPECT_FALSE(harness_commit(inner));
  EXPECT_TRUE(harness_commit(outer));
  EXPECT_FALSE(harness_commit(test::temp_dir("harness-plain")));
}

TEST(HarnessCheck, AnInvalidSubmissionIsRecordedAndExitsOneWithTheReason) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  QuickDb d;
  const std::string harness = fake_harness("invalid");
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const auto r = export_cli(export_args(d.f.path(), out, harness));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("run 1/1: INVALID: quick-global-1: output mismatch (max abs diff 3.5)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the harness found the submission invalid in 1 of 1 run(s)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the submission stays at " + out), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
  auto db = ExperimentDb::open(d.f.path(), ExperimentDb::Mode::read_only);
  const auto checks = db.harness_checks();
  ASSERT_EQ(checks.size(), 1u);
  EXPECT_FALSE(checks[0].valid);
  EXPECT_FALSE(checks[0].score_ms);
  EXPECT_EQ(checks[0].failure_reason.value_or(""), "quick-global-1: output mismatch (max abs diff 3.5)");
  EXPECT_FALSE(checks[0].harness_commit);  // not a git checkout of its own
}

TEST(HarnessCheck, AFailingHarnessShowsItsLastLinesAndExitsOne) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  QuickDb d;
  const std::string harness = fake_harness("fail");
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const auto r = export_cli(export_args(d.f.path(), out, harness));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("run 1/1: the harness exited with code 1 and printed no JSON summary"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("RuntimeError: CUDA is not available on this machine"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the submission stays at " + out), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
  auto db = ExperimentDb::open(d.f.path(), ExperimentDb::Mode::read_only);
  EXPECT_TRUE(db.harness_checks().empty());  // no summary, nothing to record

  test::write_file(harness + "/mode.txt", "garbage");
  const auto g = export_cli(export_args(d.f.path(), out, harness) + " --force");
  EXPECT_EQ(g.status, 1) << g.output;
  EXPECT_NE(g.output.find("exited with code 0 but printed no JSON summary"), std::string::npos) << g.output;
  EXPECT_NE(g.output.find("Overall valid: maybe {"), std::string::npos) << g.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
}

/// True when process `pid` is gone or a zombie.
bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0) return true;
  const std::string stat = test::read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

TEST(HarnessCheck, AHarnessPastItsTimeLimitIsKilledWithItsProcessGroup) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  QuickDb d;
  const std::string harness = fake_harness("hang");
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = export_cli(export_args(d.f.path(), out, harness) + " --harness-timeout 2");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_LT(s, 60) << r.output;
  EXPECT_NE(r.output.find("the harness did not finish within --harness-timeout 2 s; its process group was killed"),
            std::string::npos)
      << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
  const std::string pid_text = test::read_file(harness + "/child.pid");
  ASSERT_FALSE(pid_text.empty());
  const pid_t child = static_cast<pid_t>(std::stol(pid_text));
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(child);
    if (!gone) ::usleep(50000);
  }
  EXPECT_TRUE(gone) << "the harness's child " << child << " survived";
}

TEST(HarnessCheck, NoHarnessOrNoPythonIsBadInputAndTheSubmissionStays) {
  QuickDb d;
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const std::string empty = test::temp_dir("not-a-harness");
  const auto r = export_cli(export_args(d.f.path(), out, empty));
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("no harness at " + empty + ": it has no attention_kernel_challenge package"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("the submission stays at " + out), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
  const auto missing = export_cli(export_args(d.f.path(), out, empty + "/nope") + " --force");
  EXPECT_EQ(missing.status, 2) << missing.output;
  EXPECT_NE(missing.output.find("no harness at " + empty + "/nope: not a directory"), std::string::npos)
      << missing.output;

  const std::string harness = fake_harness("valid");
  const auto p = test::run_command("PATH=" + shell_quote(empty) + " " + shell_quote(test::binary_path()) + " export " +
                                   export_args(d.f.path(), out, harness) + " --force");
  EXPECT_EQ(p.status, 2) << p.output;
  EXPECT_NE(p.output.find("no python3 on PATH"), std::string::npos) << p.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));

  const auto runs = export_cli(export_args(d.f.path(), out, harness) + " --force --harness-runs 0");
  EXPECT_EQ(runs.status, 2) << runs.output;
  EXPECT_NE(runs.output.find("--harness-runs must be at least 1"), std::string::npos) << runs.output;
  auto db = ExperimentDb::open(d.f.path(), ExperimentDb::Mode::read_only);
  EXPECT_TRUE(db.harness_checks().empty());
}

TEST(HarnessCheck, AReadOnlyDbStillExportsAndSaysTheCheckWasNotRecorded) {
  if (!test::python3_available()) GTEST_SKIP() << "python3 not available";
  const std::string disk = test::temp_dir("harness-ro") + "/disk";
  fs::create_directories(disk);
  const bool root = ::geteuid() == 0;
  if (root && ::mount("tmpfs", disk.c_str(), "tmpfs", 0, "size=8m,mode=0777") != 0)
    GTEST_SKIP() << "root, but cannot mount a tmpfs (" << std::strerror(errno) << "): no way to make a file read-only";
  struct Unmount {
    std::string dir;
    bool active;
    ~Unmount() {
      if (active) ::umount2(dir.c_str(), MNT_DETACH);
      else fs::permissions(dir, fs::perms(0755));
    }
  } unmount{disk, root};
  const std::string db_path = disk + "/attn-tuner.db";
  std::string source;
  {
    QuickDb d;
    source = d.f.path();
  }  // closed: its WAL folded into the file
  fs::copy_file(source, db_path);
  if (root) ASSERT_EQ(::mount("tmpfs", disk.c_str(), "tmpfs", MS_REMOUNT | MS_RDONLY, nullptr), 0) << std::strerror(errno);
  else fs::permissions(disk, fs::perms(0555));
  const std::string harness = fake_harness("valid");
  const std::string out = test::temp_dir("harness-out") + "/submission";
  const auto r = export_cli(export_args(db_path, out, harness));
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("run 1/1: valid, 0.3000 ms"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("harness: the check(s) could not be recorded in " + db_path), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/submission.py"));
}

TEST(HarnessCheck, SummaryParsingAndDefaults) {
  EXPECT_EQ(default_harness_suite("full"), "full");
  EXPECT_EQ(default_harness_suite("local-dev"), "local-dev");
  EXPECT_EQ(default_harness_suite("my-manifest"), "quick");
  // The real harness's output (tests/data would do; the shape is what matters): noise, then the summary.
  const std::string out = "loading {x}\n{\"not\": \"it\"}\n{\n  \"suite\": \"quick\",\n  \"overall_valid\": true,\n"
                          "  \"geometric_mean_family_latency_ms\": 0.36,\n  \"case_results\": [\n"
                          "    {\"case_id\": \"a\", \"family\": \"sliding_window\", \"latency_ms\": 0.2},\n"
                          "    {\"case_id\": \"b\", \"family\": \"sliding_window\", \"latency_ms\": 0.1},\n"
                          "    {\"case_id\": \"c\", \"family\": \"sliding_window\", \"latency_ms\": 0.9},\n"
                          "    {\"case_id\": \"d\", \"family\": \"sliding_window_global\", \"latency_ms\": null}\n"
                          "  ],\n  \"failure_reason\": null\n}\n";
  const auto s = find_harness_summary(out);
  ASSERT_TRUE(s);
  EXPECT_EQ((*s)["geometric_mean_family_latency_ms"], 0.36);
  EXPECT_EQ(harness_family_medians(*s), nlohmann::json::parse(R"({"sliding_window": 0.2})"));
  EXPECT_FALSE(find_harness_summary("Suite: quick\nOverall valid: True\n"));
  EXPECT_FALSE(find_harness_summary(""));
  EXPECT_FALSE(find_harness_summary("{\"a\": 1}\n"));
  HarnessRunResult r;
  r.exit_code = 1;
  interpret_harness_output("", "line 1\nerror: boom\n", r, 10);
  EXPECT_FALSE(r.has_summary);
  EXPECT_NE(r.error.find("exited with code 1"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("error: boom"), std::string::npos) << r.error;
}

TEST(HarnessCheck, TheRealHarnessOutputParses) {
  // The summary the official harness printed for the export of the committed research DB (H100, 2026-11-25,
  // commit affdfda, run_harness.sh quick --serverlike).
  const std::string path = test::data_dir() + "/harness_output/quick_serverlike_h100.json";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not present";
  const auto s = find_harness_summary(test::read_file(path));
  ASSERT_TRUE(s);
  HarnessRunResult r;
  r.exit_code = 0;
  interpret_harness_output(test::read_file(path), "", r, 10);
  EXPECT_TRUE(r.valid);
  EXPECT_NEAR(*r.score_ms, 0.3624829195297977, 1e-12);
  EXPECT_EQ(r.family_ms.size(), 3u);
}

}  // namespace
}  // namespace attn
