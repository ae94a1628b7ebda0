#include "gpu/compile_procs.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <istream>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "gpu/worker_client.hpp"
#include "gpu/worker_protocol.hpp"

namespace attn {
using nlohmann::json;

namespace {

CompileProcs::Result failure(FailureKind kind, std::string message, double ms = 0) {
  CompileProcs::Result r;
  r.failure = kind;
  r.message = std::move(message);
  r.ms = ms;
  return r;
}

}  // namespace

struct CompileProcs::Impl {
  struct Job {
    json request;
    std::promise<Result> done;
  };
  /// One worker process and the thread that owns it (and so its death signal).
  struct Slot {
    pid_t pid = 0;
    bool busy = false;
  };

  CompileProcsOptions options;
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<Job> queue;
  std::vector<Slot> slots;
  bool stopping = false;
  std::int64_t restarts = 0, compiles = 0, failures = 0;
  std::vector<std::thread> threads;

  WorkerCommand command() const {
    WorkerCommand c = default_worker_command();
    if (!options.exe.empty()) c.exe = options.exe;
    c.args = {"compile-worker"};
    c.env = options.env;
    return c;
  }

  void drive(std::size_t i) {
    WorkerClient client(command());
    client.on_start([this, i](pid_t pid) {
      std::lock_guard lock(mu);
      slots[i].pid = pid;
    });
    for (;;) {
      Job job;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) break;
        job = std::move(queue.front());
        queue.pop_front();
        slots[i].busy = true;
      }
      const auto t0 = std::chrono::steady_clock::now();
      const WorkerReply reply = client.request(job.request, options.timeout);
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      Result r;
      r.ms = ms;
      ReplyStatus status = reply.status;
      if (status.ok()) {
        try {
          r.output = nvrtc_output_from_json(reply.body);
        } catch (const std::exception& e) {
          status = {FailureKind::worker_died, false, fmt::format("malformed answer: {}", e.what())};
        }
      }
      bool restarted = false;
      if (!status.ok()) {
        pid_t pid = 0;
        {
          std::lock_guard lock(mu);
          pid = slots[i].pid;
        }
        // A worker that hung was killed already; one that refused a job or broke the protocol is not trusted either.
        r.failure = status.failure == FailureKind::hang ? FailureKind::hang : FailureKind::worker_died;
        r.message = fmt::format("compile worker (pid {}): {}{}; a fresh worker takes the next compile", pid,
                                status.rejected ? "refused the job: " : "", status.message);
        client.restart();
        restarted = true;
        spdlog::warn("{}", r.message);
      }
      {
        std::lock_guard lock(mu);
        slots[i].busy = false;
        ++compiles;
        if (restarted) {
          ++failures;
          ++restarts;
          slots[i].pid = 0;
        }
      }
      job.done.set_value(std::move(r));
    }
    std::lock_guard lock(mu);
    slots[i].pid = 0;
  }  // ~WorkerClient: quit, then kill after 2 s
};

CompileProcs::CompileProcs(CompileProcsOptions options) : impl_(std::make_unique<Impl>()) {
  if (options.procs == 0) throw std::invalid_argument("CompileProcs needs at least one process");
  impl_->options = std::move(options);
  impl_->slots.resize(impl_->options.procs);
  for (std::size_t i = 0; i < impl_->options.procs; ++i) impl_->threads.emplace_back([this, i] { impl_->drive(i); });
}

CompileProcs::~CompileProcs() {
  std::deque<Impl::Job> left;
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    left.swap(impl_->queue);
  }
  impl_->cv.notify_all();
  for (auto& job : left) job.done.set_value(failure(FailureKind::worker_died, "the compile pool is shutting down"));
  for (auto& t : impl_->threads) t.join();
}

CompileProcs::Result CompileProcs::run(const NvrtcJob& job) {
  Impl::Job j;
  j.request = to_json(job);
  try {
    (void)j.request.dump();  // the line as the worker will get it: a source that is not UTF-8 cannot travel
  } catch (const json::type_error& e) {
    Result r;
    r.output = run_nvrtc(job);  // exactly these bytes, in this process
    r.ms = r.output.ms;
    return r;
  }
  std::future<Result> done = j.done.get_future();
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping) return failure(FailureKind::worker_died, "the compile pool is shutting down");
    impl_->queue.push_back(std::move(j));
  }
  impl_->cv.notify_one();
  return done.get();
}

CompileProcsStats CompileProcs::stats() const {
  std::lock_guard lock(impl_->mu);
  CompileProcsStats s;
  s.procs = unsigned(impl_->slots.size());
  for (const auto& slot : impl_->slots) {
    if (slot.pid > 0) {
      ++s.processes;
      s.pids.push_back(slot.pid);
    }
    s.busy += slot.busy ? 1 : 0;
  }
  s.restarts = impl_->restarts;
  s.compiles = impl_->compiles;
  s.failures = impl_->failures;
  return s;
}

int run_compile_worker_loop(std::istream& in, std::ostream& out) {
  std::string sleep_marker;
  double sleep_s = 0;
  if (const char* hook = std::getenv("ATTN_COMPILE_WORKER_SLEEP"); hook && *hook) {
    const std::string h = hook;
    const std::size_t colon = h.rfind(':');
    if (colon != std::string::npos) {
      sleep_marker = h.substr(0, colon);
      sleep_s = std::atof(h.c_str() + colon + 1);
    }
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json answer;
    bool quit = false;
    try {
      const json request = json::parse(line);
      const std::string cmd = request.at("cmd").get<std::string>();
      if (cmd == "quit") {
        answer = {{"status", "ok"}, {"message", ""}};
        quit = true;
      } else if (cmd == "compile") {
        const NvrtcJob job = nvrtc_job_from_json(request);
        if (sleep_s > 0 && job.source.find(sleep_marker) != std::string::npos)
          std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
        answer = to_json(run_nvrtc(job));
      } else {
        answer = {{"status", "rejected"}, {"message", "unknown command '" + cmd + "' (compile, quit)"}};
      }
    } catch (const std::exception& e) {
      answer = {{"status", "rejected"}, {"message", std::string("bad request: ") + e.what()}};
    }
    out << answer.dump(-1, ' ', false, json::error_handler_t::replace) << '\n';
    out.flush();
    if (quit) return 0;
  }
  return 0;
}

}  // namespace attn
