// WorkerClient against fake workers (sh -c scripts standing in for `attn-tuner worker`): deadline -> hang,
// early exit -> worker_died, garbage -> worker_died naming the garbage, fault -> fault; and the real
// worker binary's answers that need no GPU.
#include <gtest/gtest.h>

#include <signal.h>

#include <chrono>
#include <thread>

#include "gpu/worker_client.hpp"
#include "tests/test_support.hpp"

namespace attn {
namespace {
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

WorkerCommand fake(const std::string& script) { return {"/bin/sh", {"-c", script}}; }

const char* kEcho = R"(while read line; do echo '{"status":"ok","message":"pong"}'; done)";

TEST(WorkerClient, AnswersFromAWellBehavedWorker) {
  WorkerClient c(fake(kEcho));
  EXPECT_FALSE(c.alive());
  for (int i = 0; i < 3; ++i) {
    const WorkerReply r = c.request(json{{"cmd", "hello"}}, 5s);
    EXPECT_TRUE(r.status.ok()) << r.status.message;
    EXPECT_EQ(r.status.message, "pong");
  }
  EXPECT_TRUE(c.alive());
  EXPECT_GT(c.pid(), 0);
  EXPECT_EQ(c.starts(), 1);
}

TEST(WorkerClient, DeadlineKillsAHungWorker) {
  WorkerClient c(fake("read line; sleep 60"));
  const auto t0 = Clock::now();
  const WorkerReply r = c.request(json{{"cmd", "eval"}}, 300ms);
  const auto took = Clock::now() - t0;
  EXPECT_EQ(r.status.failure, FailureKind::hang) << r.status.message;
  EXPECT_GE(took, 300ms);
  EXPECT_LT(took, 5s);  // the shell and its sleep were both killed, so EOF came at once
  EXPECT_FALSE(c.alive());
  EXPECT_NE(c.last_exit().find("signal 9"), std::string::npos) << c.last_exit();

  // Dead until restart(); then a fresh process answers again.
  EXPECT_EQ(c.request(json{{"cmd", "hello"}}, 1s).status.failure, FailureKind::worker_died);
  c.restart();
  WorkerClient good(fake(kEcho));
  EXPECT_TRUE(good.request(json{{"cmd", "hello"}}, 5s).status.ok());
}

// Requests sent ahead (the daemon's next screen while the GPU times the current one): the worker reads each line
// after answering the one before, and the answers come back in order.
TEST(WorkerClient, RequestsSentAheadAreAnsweredInOrder) {
  // Answers each request with its own "n", after a pause: the second is written while the first is worked on.
  WorkerClient c(fake(R"(while read line; do sleep 0.2; n=$(echo "$line" | sed 's/.*"n":\([0-9]*\).*/\1/'); )"
                      R"(echo "{\"status\":\"ok\",\"message\":\"answer $n\"}"; done)"));
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}, {"n", 1}}).ok());
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}, {"n", 2}}).ok());
  EXPECT_EQ(c.pending(), 2u);
  EXPECT_THROW(c.request(json{{"cmd", "hello"}}, 1s), std::logic_error);  // its answer would be the first's
  const auto t0 = Clock::now();
  EXPECT_EQ(c.receive(5s).status.message, "answer 1");
  EXPECT_EQ(c.receive(5s).status.message, "answer 2");
  EXPECT_LT(Clock::now() - t0, 2s);
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_THROW(c.receive(1s), std::logic_error);
  EXPECT_EQ(c.request(json{{"cmd", "eval"}, {"n", 3}}, 5s).status.message, "answer 3");
  EXPECT_EQ(c.starts(), 1);
}

TEST(WorkerClient, AHangKillsTheWorkerAndTheRequestBehindItIsWorkerDied) {
  WorkerClient c(fake("read line; sleep 60"));
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}}).ok());
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}}).ok());
  EXPECT_EQ(c.receive(300ms).status.failure, FailureKind::hang);
  const WorkerReply behind = c.receive(5s);
  EXPECT_EQ(behind.status.failure, FailureKind::worker_died);
  EXPECT_NE(behind.status.message.find("before its response to 'eval'"), std::string::npos) << behind.status.message;
  EXPECT_FALSE(c.alive());
  EXPECT_FALSE(c.send(json{{"cmd", "eval"}}).ok());  // dead until restart()
  c.restart();
  EXPECT_EQ(c.pending(), 0u);
}

TEST(WorkerClient, RestartForgetsRequestsSentAhead) {
  WorkerClient c(fake(kEcho));
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}}).ok());
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}}).ok());
  c.restart();
  EXPECT_EQ(c.pending(), 0u);
  EXPECT_TRUE(c.request(json{{"cmd", "hello"}}, 5s).status.ok());  // a fresh worker, nothing owed
  EXPECT_EQ(c.starts(), 2);
}

TEST(WorkerClient, EarlyExitIsWorkerDied) {
  WorkerClient c(fake("read line; exit 7"));
  const WorkerReply r = c.request(json{{"cmd", "prepare"}}, 5s);
  EXPECT_EQ(r.status.failure, FailureKind::worker_died);
  EXPECT_NE(r.status.message.find("exited with code 7"), std::string::npos) << r.status.message;
  EXPECT_NE(r.status.message.find("prepare"), std::string::npos) << r.status.message;
  EXPECT_FALSE(c.alive());
}

// A worker that answers, then ends before the next request is written (a screen sent ahead, seen under
// ThreadSanitizer): the write meets a closed pipe, which Boost.Process throws as process_error ("Broken pipe") or the
// stream keeps as badbit. That request is worker_died, unsent; the answer written before the end is still read, for
// its own request; and nothing throws later (the stream's destructor would flush what the failed write left).
TEST(WorkerClient, AWriteToAWorkerThatEndedIsWorkerDiedAndItsLastAnswerStillCounts) {
  WorkerClient c(fake(R"(read line; echo '{"status":"ok","message":"last"}'; exit 3)"));
  ASSERT_TRUE(c.send(json{{"cmd", "eval"}}).ok());
  std::this_thread::sleep_for(300ms);  // it has answered and exited: nobody reads its stdin
  ReplyStatus s;
  EXPECT_NO_THROW(s = c.send(json{{"cmd", "eval"}, {"pad", std::string(1 << 17, 'x')}}));  // more than a pipe holds
  EXPECT_EQ(s.failure, FailureKind::worker_died) << s.message;
  EXPECT_NE(s.message.find("before the request 'eval' could be sent"), std::string::npos) << s.message;
  EXPECT_EQ(c.pending(), 1u);  // the first request only
  EXPECT_EQ(c.receive(5s).status.message, "last");
  EXPECT_EQ(c.send(json{{"cmd", "eval"}}).failure, FailureKind::worker_died);  // still no worker to write to
  c.restart();
  EXPECT_EQ(c.pending(), 0u);
  WorkerClient good(fake(kEcho));
  EXPECT_TRUE(good.request(json{{"cmd", "hello"}}, 5s).status.ok());
}

TEST(WorkerClient, GarbageIsAClearError) {
  WorkerClient c(fake("read line; echo 'Segmentation fault (core dumped) in libfoo'; sleep 60"));
  const auto t0 = Clock::now();
  const WorkerReply r = c.request(json{{"cmd", "hello"}}, 10s);
  EXPECT_EQ(r.status.failure, FailureKind::worker_died);
  EXPECT_NE(r.status.message.find("broke the protocol"), std::string::npos) << r.status.message;
  EXPECT_NE(r.status.message.find("Segmentation fault (core dumped) in libfoo"), std::string::npos);
  EXPECT_LT(Clock::now() - t0, 5s);  // killed, not waited for
  EXPECT_FALSE(c.alive());

  WorkerClient no_status(fake(R"(read line; echo '{"result":1}'; sleep 60)"));
  EXPECT_EQ(no_status.request(json{{"cmd", "hello"}}, 10s).status.failure, FailureKind::worker_died);
}

TEST(WorkerClient, FaultResponseThenExit) {
  WorkerClient c(fake(R"(read line; echo '{"status":"fault","message":"cuStreamSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS"}'; exit 3)"));
  const EvalResponse r = c.eval(EvalRequest{"x.cubin", "k", {}, true, true}, 5s);
  EXPECT_EQ(r.status.failure, FailureKind::fault);
  EXPECT_NE(r.status.message.find("ILLEGAL_ADDRESS"), std::string::npos);
  EXPECT_FALSE(c.alive());
  EXPECT_NE(c.last_exit().find("exited with code 3"), std::string::npos) << c.last_exit();
}

TEST(WorkerClient, RestartStartsAFreshProcess) {
  WorkerClient c(fake(kEcho));
  ASSERT_TRUE(c.request(json{{"cmd", "hello"}}, 5s).status.ok());
  const pid_t first = c.pid();
  c.restart();
  EXPECT_FALSE(c.alive());
  ASSERT_TRUE(c.request(json{{"cmd", "hello"}}, 5s).status.ok());
  EXPECT_NE(c.pid(), first);
  EXPECT_EQ(c.starts(), 2);
  EXPECT_NE(::kill(first, 0), 0);  // the old worker is gone (and reaped)
}

TEST(WorkerClient, MissingExecutableIsWorkerDied) {
  WorkerClient c({"/nonexistent/attn-tuner", {"worker"}});
  const WorkerReply r = c.request(json{{"cmd", "hello"}}, 5s);
  EXPECT_EQ(r.status.failure, FailureKind::worker_died);
  EXPECT_NE(r.status.message.find("/nonexistent/attn-tuner"), std::string::npos) << r.status.message;
}

TEST(WorkerClient, TypedHelpersRejectMalformedBodies) {
  WorkerClient c(fake(R"(while read line; do echo '{"status":"ok","message":"","cases":"three"}'; done)"));
  const PrepareResponse p = c.prepare({}, 5s);
  EXPECT_EQ(p.status.failure, FailureKind::worker_died);
  EXPECT_NE(p.status.message.find("malformed prepare response"), std::string::npos) << p.status.message;
}

// The real worker binary: malformed requests are rejected and it keeps running; without a GPU, hello is
// a fault (and the worker exits); with one, hello describes the device.
TEST(WorkerBinary, RejectsBadRequestsAndReportsTheDevice) {
  WorkerClient c({test::binary_path(), {"worker", "--cache", test::temp_dir("attn-cache")}});
  WorkerReply r = c.request(json{{"cmd", "format_disk"}}, 20s);
  EXPECT_TRUE(r.status.rejected) << r.status.message;
  EXPECT_NE(r.status.message.find("format_disk"), std::string::npos);
  r = c.request(json{{"cmd", "eval"}, {"cubin", "/nonexistent.cubin"}, {"kernel", "k"}}, 20s);
  EXPECT_TRUE(r.status.rejected) << r.status.message;
  EXPECT_TRUE(c.alive());

  const HelloResponse h = c.hello(60s);
  if (test::gpu_available()) {
    ASSERT_TRUE(h.status.ok()) << h.status.message;
    EXPECT_FALSE(h.gpu_name.empty());
    EXPECT_GT(h.sm_count, 0);
    EXPECT_GT(h.l2_bytes, 0);
    EXPECT_EQ(h.pid, c.pid());
  } else {
    EXPECT_EQ(h.status.failure, FailureKind::fault) << h.status.message;
    EXPECT_NE(h.status.message.find("libcuda"), std::string::npos) << h.status.message;
    EXPECT_FALSE(c.alive());
    EXPECT_NE(c.last_exit().find("exited with code 3"), std::string::npos) << c.last_exit();
  }
}

}  // namespace
}  // namespace attn
