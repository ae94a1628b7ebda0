// The compile workers (gpu/compile_procs.hpp): NVRTC in `attn-tuner compile-worker` processes gives the cubins the
// daemon's own process gives; a worker killed or hung mid-compile fails that config with a message and is
// replaced, and the next compile works; a family's waiter does not inherit such a failure. The protocol's pieces
// (base64, the job and answer lines, the worker loop) on their own. No GPU needed.
#include <signal.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "gpu/compile_procs.hpp"
#include "gpu/compiler.hpp"
#include "tuner/space.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p);
  f << text;
}

/// A small kernel; sources containing "SLOW_COMPILE" make a worker started with the sleep hook sleep.
struct Kernel {
  std::string dir = test::temp_dir("attn-procs");
  std::string fast = dir + "/fast.cu", slow = dir + "/slow.cu";
  Kernel() {
    const std::string body = R"(
#include "inc.cuh"
extern "C" __device__ int attn_launch_info[4] = {128, 0, 128, 0};
extern "C" __global__ void k(int* out) { out[threadIdx.x] = VALUE + ADD; }
)";
    write(fast, body);
    write(slow, "// SLOW_COMPILE\n" + body);
    write(dir + "/inc.cuh", "#define VALUE 3\n");
  }
  CompileRequest req(const std::string& src, std::int64_t add) const { return {src, "k", Config{{"ADD", add}}, {}}; }
};

CompilerOptions pool_options(unsigned procs, double sleep_s = 0, std::chrono::milliseconds timeout = 10min) {
  CompilerOptions o;
  o.cache_dir = test::temp_dir("attn-cache");
  o.procs.procs = procs;
  o.procs.exe = ATTN_BINARY;
  o.procs.timeout = timeout;
  if (sleep_s > 0) o.procs.env = {{"ATTN_COMPILE_WORKER_SLEEP", "SLOW_COMPILE:" + std::to_string(sleep_s)}};
  return o;
}

/// Waits until one worker is busy; its pid (0 on timeout).
pid_t busy_worker(const Compiler& c, std::chrono::seconds timeout = 60s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    const auto s = c.procs_stats();
    if (s && s->busy == 1 && s->pids.size() == 1) return s->pids[0];
    std::this_thread::sleep_for(10ms);
  }
  return 0;
}

bool process_gone(pid_t pid, std::chrono::seconds timeout = 5s) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < end) {
    if (::kill(pid, 0) != 0) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

TEST(CompileProcs, Fa3TmaConfigsCompileToTheSameCubinsAsInProcess) {
  const TemplateSpace s = TemplateSpace::load_named(ATTN_TEMPLATES_DIR, "fa3_tma");
  Config other = s.default_config();
  other["CMEM_PARAMS"] = 1;  // the patchable build (attn_param_ symbols): another cubin layout
  CompilerOptions here;
  here.use_cache = false;
  CompilerOptions pooled = pool_options(2);
  pooled.use_cache = false;
  const Compiler in_process(here), pool(pooled);
  for (const Config& c : {s.default_config(), other}) {
    const CompileRequest req{s.source_path(), s.kernel(), c, {}, s.patchable_names()};
    auto a = std::async(std::launch::async, [&] { return pool.compile(req); });
    const CompiledVariant b = in_process.compile(req);
    const CompiledVariant p = a.get();
    ASSERT_TRUE(p.ok && b.ok) << p.log << b.log;
    EXPECT_EQ(p.cubin, b.cubin) << config_to_compact(c);
    EXPECT_EQ(p.hash, b.hash);
    EXPECT_EQ(p.resources, b.resources);
    EXPECT_FALSE(p.cache_hit);
  }
  const auto st = pool.procs_stats();
  ASSERT_TRUE(st);
  EXPECT_EQ(st->procs, 2u);
  EXPECT_EQ(st->compiles, 2);
  EXPECT_EQ(st->restarts, 0);
  EXPECT_FALSE(in_process.procs_stats());
}

TEST(CompileProcs, AWorkerKilledMidCompileFailsThatConfigAndTheNextCompileWorks) {
  Kernel k;
  const Compiler c(pool_options(1, 60));
  auto slow = std::async(std::launch::async, [&] { return c.compile(k.req(k.slow, 1)); });
  const pid_t pid = busy_worker(c);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const CompiledVariant v = slow.get();
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.error, FailureKind::worker_died);
  EXPECT_FALSE(v.transient);
  EXPECT_EQ(v.hash, c.content_hash(k.req(k.slow, 1)));  // the DB can record it
  EXPECT_NE(v.log.find("compile worker (pid " + std::to_string(pid) + ")"), std::string::npos) << v.log;
  EXPECT_NE(v.log.find("killed by signal 9"), std::string::npos) << v.log;
  EXPECT_FALSE(fs::exists(c.cache_dir() + "/" + v.hash + ".json")) << "a worker's death was cached";
  auto st = c.procs_stats();
  EXPECT_EQ(st->restarts, 1);
  EXPECT_EQ(st->failures, 1);
  EXPECT_EQ(st->busy, 0u);

  const CompiledVariant next = c.compile(k.req(k.fast, 2));
  EXPECT_TRUE(next.ok) << next.log;
  st = c.procs_stats();
  ASSERT_EQ(st->pids.size(), 1u);
  EXPECT_NE(st->pids[0], pid);
  EXPECT_EQ(st->compiles, 2);
}

// NVRTC yields the CPU to the daemon's loop and GPU workers: each compile worker runs kCompileWorkerNice lower.
TEST(CompileProcs, WorkersRunAtALowerPriorityThanTheirDaemon) {
  Kernel k;
  const Compiler c(pool_options(2));
  auto a = std::async(std::launch::async, [&] { return c.compile(k.req(k.fast, 1)); });
  auto b = std::async(std::launch::async, [&] { return c.compile(k.req(k.fast, 2)); });
  ASSERT_TRUE(a.get().ok);
  ASSERT_TRUE(b.get().ok);
  const auto st = c.procs_stats();
  ASSERT_FALSE(st->pids.empty());
  errno = 0;
  const int own = ::getpriority(PRIO_PROCESS, 0);
  for (const pid_t pid : st->pids) {
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, pid);
    ASSERT_EQ(errno, 0) << pid;
    EXPECT_EQ(nice, std::min(19, own + kCompileWorkerNice)) << "compile worker " << pid;
  }
}

TEST(CompileProcs, AHungWorkerIsKilledAtTheTimeoutAndReplaced) {
  Kernel k;
  const Compiler c(pool_options(1, 60, 1500ms));
  const auto t0 = std::chrono::steady_clock::now();
  auto hung = std::async(std::launch::async, [&] { return c.compile(k.req(k.slow, 1)); });
  const pid_t pid = busy_worker(c);
  ASSERT_GT(pid, 0);
  const CompiledVariant v = hung.get();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(process_gone(pid)) << "the hung worker was not killed";
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.error, FailureKind::hang);
  EXPECT_NE(v.log.find("within 1500 ms"), std::string::npos) << v.log;
  EXPECT_LT(s, 30) << "the compile waited for the worker's sleep";
  const auto st = c.procs_stats();
  EXPECT_EQ(st->restarts, 1);
  EXPECT_TRUE(st->pids.empty());  // killed; the next job starts a fresh one
  const CompiledVariant next = c.compile(k.req(k.fast, 2));
  EXPECT_TRUE(next.ok) << next.log;
}

// A member of a family (CompileRequest::patchable) waiting for the family's compile while that compile's worker is
// killed compiles itself: a worker's death is not the family's code.
TEST(CompileProcs, AFamilysWaiterDoesNotInheritAWorkersDeath) {
  Kernel k;
  write(k.slow, "// SLOW_COMPILE\n#include \"inc.cuh\"\n"
                "extern \"C\" __device__ int attn_launch_info[4] = {128, 0, 128, 0};\n"
                "extern \"C\" __constant__ int attn_param_ADD = ADD;\n"
                "extern \"C\" __global__ void k(int* out) { out[threadIdx.x] = VALUE + attn_param_ADD; }\n");
  const Compiler c(pool_options(2, 5));
  const auto req = [&](std::int64_t add) {
    CompileRequest r = k.req(k.slow, add);
    r.patchable = {"ADD"};
    return r;
  };
  auto first = std::async(std::launch::async, [&] { return c.compile(req(1)); });
  const pid_t pid = busy_worker(c);
  ASSERT_GT(pid, 0);
  auto waiter = std::async(std::launch::async, [&] { return c.compile(req(2)); });
  std::this_thread::sleep_for(300ms);  // the waiter is waiting on the family, not on a worker
  EXPECT_EQ(c.procs_stats()->busy, 1u);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  const CompiledVariant a = first.get(), b = waiter.get();
  EXPECT_EQ(a.error, FailureKind::worker_died) << a.log;
  EXPECT_TRUE(b.ok) << b.log;  // its own compile (5 s of the hook), not a copy of the death
  EXPECT_TRUE(b.patched_from.empty());
}

TEST(CompileProcs, Base64RoundTrips) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10 x", 5)}) {
    const std::string e = base64_encode(s);
    EXPECT_EQ(e.size() % 4, 0u);
    const std::vector<char> d = base64_decode(e);
    EXPECT_EQ(std::string(d.begin(), d.end()), s);
  }
  EXPECT_EQ(base64_encode("Man"), "TWFu");
  EXPECT_EQ(base64_encode("Ma"), "TWE=");
  EXPECT_THROW(base64_decode("abc"), std::invalid_argument);
  EXPECT_THROW(base64_decode("ab!d"), std::invalid_argument);
}

TEST(CompileProcs, TheWorkerLoopCompilesRefusesAndQuits) {
  const NvrtcJob job{"t.cu", "#include \"h.cuh\"\nextern \"C\" __global__ void k(int* o) { o[0] = H; }\n",
                     {{"h.cuh", "#define H 5\n"}}, {"-arch=sm_90a"}};
  EXPECT_EQ(nvrtc_job_from_json(to_json(job)), job);
  std::istringstream in(to_json(job).dump() + "\nnot json\n{\"cmd\":\"dance\"}\n{\"cmd\":\"quit\"}\n{\"cmd\":\"quit\"}\n");
  std::ostringstream out;
  EXPECT_EQ(run_compile_worker_loop(in, out), 0);
  std::istringstream lines(out.str());
  std::string line;
  std::vector<nlohmann::json> answers;
  while (std::getline(lines, line)) answers.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(answers.size(), 4u);  // nothing after quit
  const NvrtcOutput o = nvrtc_output_from_json(answers[0]);
  EXPECT_EQ(o.rc, 0) << o.log;
  EXPECT_FALSE(o.cubin.empty());
  EXPECT_EQ(o.cubin, run_nvrtc(job).cubin);
  EXPECT_EQ(answers[1]["status"], "rejected");
  EXPECT_EQ(answers[2]["status"], "rejected");
  EXPECT_NE(answers[2]["message"].get<std::string>().find("dance"), std::string::npos);
  EXPECT_EQ(answers[3]["status"], "ok");
}

TEST(CompileProcs, TwoHeadersOfOneNameWithDifferentTextsAreRefused) {
  const NvrtcJob job{"t.cu", "#include \"h.cuh\"\n", {{"h.cuh", "#define H 5\n"}, {"h.cuh", "#define H 6\n"}}, {}};
  const NvrtcOutput o = run_nvrtc(job);
  EXPECT_NE(o.rc, 0);
  EXPECT_NE(o.log.find("'h.cuh'"), std::string::npos) << o.log;
}

}  // namespace
}  // namespace attn
