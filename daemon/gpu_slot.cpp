// One GPU and its worker (daemon/gpu_slot.hpp).
#include "daemon/gpu_slot.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/worker_answers.hpp"

namespace attn::tuning {

GpuSlot::GpuSlot(int index, GpuSpec gpu, WorkerCommand command, Env env)
    : index_(index), gpu_(std::move(gpu)), env_(std::move(env)), worker_(std::make_unique<WorkerClient>(std::move(command))) {
  status_.index = gpu_.index;
  status_.uuid = gpu_.uuid;
  // Runs on this slot's thread, which starts its workers: so that a later daemon can kill a worker that outlives this
  // one, and a second Ctrl-C kills every worker.
  worker_->on_start([this](pid_t pid) {
    {
      std::lock_guard lock(status_mu_);
      status_.pid = pid;
    }
    if (env_.started) env_.started(pid);
  });
}

void GpuSlot::start() {
  if (ready_) return;
  if (worker_->starts() > 0) {
    worker_->restart();
    std::lock_guard lock(status_mu_);
    ++status_.restarts;
  }
  set_state("starting");
  const HelloResponse hello = worker_->hello(milliseconds(60'000));
  const std::string of_gpu = env_.one_of_several ? fmt::format(" of GPU {}", gpu_.index) : "";
  if (!hello.status.ok()) throw std::runtime_error("the GPU worker" + of_gpu + " did not start: " + hello.status.message);
  hello_ = hello;
  if (gpu_.uuid.empty()) {
    gpu_.uuid = hello.uuid;
    std::lock_guard lock(status_mu_);
    status_.uuid = gpu_.uuid;
  }
  const auto cases = env_.cases();
  const auto prep = worker_->prepare(cases->cases, env_.prepare_timeout);
  if (!prep.status.ok())
    throw std::runtime_error("the GPU worker" + of_gpu + " could not build the suite's cases: " + prep.status.name() +
                             ": " + prep.status.message);
  env_.prepared(prep.ms);
  cases_gen_ = cases->gen;
  ready_ = true;
  set_state("idle");
}

bool GpuSlot::prepare(const std::vector<CaseSpec>& cases) {
  drain();  // screens sent ahead are answered on the cases they were sent with
  start();
  set_state("preparing cases");
  const auto prep = worker_->prepare(cases, env_.prepare_timeout, true);
  env_.prepared(prep.ms);
  if (prep.status.ok()) return true;
  spdlog::warn("GPU {}: preparing {} cases failed: {} {}", gpu_.index, cases.size(), prep.status.name(),
               prep.status.message);
  restart();
  return false;
}

std::shared_ptr<const CaseSet> GpuSlot::ensure_cases() {
  start();
  for (;;) {
    const auto cases = env_.cases();
    if (ready_ && cases_gen_ == cases->gen) return cases;
    if (prepare(cases->cases))
      cases_gen_ = cases->gen;
    else
      start();
  }
}

bool GpuSlot::prepare_other(const std::vector<CaseSpec>& cases) {
  cases_gen_ = -1;  // its worker holds other cases from now on
  return prepare(cases);
}

void GpuSlot::busy_for(Clock::time_point from, Clock::time_point to) {
  std::lock_guard lock(status_mu_);
  status_.busy_ms += std::chrono::duration<double, std::milli>(to - from).count();
}

void GpuSlot::answered(const ReplyStatus& s) {
  if (ends_worker(s)) restart();  // a fresh worker on this GPU for its next request; the other GPUs go on
}

EvalResponse GpuSlot::eval(const EvalRequest& req) {
  drain();
  if (!ready_) ensure_cases();  // a screen read just now ended the worker
  const auto t0 = Clock::now();
  EvalResponse r = worker_->eval(req, env_.deadline());
  answered_at_ = Clock::now();
  busy_for(t0, answered_at_);
  answered(r.status);
  return r;
}

std::shared_ptr<SentScreen> GpuSlot::send_screen(const EvalRequest& req) {
  auto s = std::make_shared<SentScreen>();
  s->cases_gen = cases_gen_;
  s->sent = Clock::now();
  if (const ReplyStatus st = worker_->send_eval(req); !st.ok()) {  // a pipe write to a worker that ended
    EvalResponse r;
    r.status = st;
    s->reply = std::move(r);
    s->unsent = true;  // no restart here: the answer in flight before it (or screen()'s retry) restarts the worker
  } else {
    unanswered_.push_back(s);
  }
  return s;
}

void GpuSlot::receive_front() {
  const std::shared_ptr<SentScreen> s = unanswered_.front();
  EvalResponse r = worker_->receive_eval(env_.deadline());
  unanswered_.pop_front();
  const auto now = Clock::now();
  busy_for(std::max(s->sent, answered_at_), now);
  answered_at_ = now;
  const ReplyStatus st = r.status;
  s->reply = std::move(r);
  answered(st);  // a restart loses the screens behind it (their jobs go back to the queue)
}

void GpuSlot::drain() {
  while (!unanswered_.empty()) receive_front();
}

EvalResponse GpuSlot::screen(InFlight& job, const EvalRequest& req, const std::function<void()>& send_next) {
  std::int64_t gen = cases_gen_;  // the cases its worker holds now (ensure_cases ran)
  for (int unsent = 0;;) {
    if (job.sent && job.sent->unsent) {  // the worker had ended when it was written: a fresh one, then again
      if (++unsent > kUnsentRetries) return *job.sent->reply;
      answered(job.sent->reply->status);
      job.sent.reset();
    }
    const bool answered_now = job.sent && job.sent->reply && job.sent->cases_gen == gen;
    const bool waiting = job.sent && !job.sent->reply &&
                         std::find(unanswered_.begin(), unanswered_.end(), job.sent) != unanswered_.end();
    if (answered_now || waiting) {
      send_next();  // the GPU gets its next config before this answer is read and recorded
      while (!job.sent->reply && !unanswered_.empty()) receive_front();
      if (job.sent->reply && job.sent->cases_gen == gen) return *job.sent->reply;
    }
    // Not sent yet, sent against cases the worker no longer holds, or lost with a worker that ended: now.
    if (!ready_) ensure_cases();
    gen = cases_gen_;
    job.sent = send_screen(req);
  }
}

void GpuSlot::set_ahead(InFlight job) { ahead_ = std::move(job); }

std::optional<InFlight> GpuSlot::take_ahead() {
  std::optional<InFlight> job = std::move(ahead_);
  ahead_.reset();
  return job;
}

void GpuSlot::restart() {
  ready_ = false;
  set_state("restarting");
  unanswered_.clear();  // their answers die with the worker
  if (ahead_ && !ahead_->sent->reply) {  // not this config's fault: back to the queue's front, unsent
    spdlog::info("GPU {}: {} {} goes back to the queue: its screen was sent ahead to a worker that ended", gpu_.index,
                 ahead_->proposal.template_name, config_to_compact(ahead_->proposal.proposal.config));
    ahead_->sent.reset();
    InFlight job = std::move(*ahead_);
    ahead_.reset();
    env_.lost(std::move(job));
  }
  worker_->restart();
  std::lock_guard lock(status_mu_);
  status_.pid = 0;
}

void GpuSlot::stop() {
  set_state("stopped");
  ready_ = false;
  worker_->restart();
  std::lock_guard lock(status_mu_);
  status_.pid = 0;
}

void GpuSlot::set_state(std::string state) {
  std::lock_guard lock(status_mu_);
  status_.state = std::move(state);
}

void GpuSlot::count(bool counted, double spare_ms) {
  std::lock_guard lock(status_mu_);
  if (counted) ++status_.iterations;
  status_.spare_ms += spare_ms;
}

SlotStatus GpuSlot::status() const {
  std::lock_guard lock(status_mu_);
  return status_;
}

WorkerRecords::WorkerRecords(std::string db_path, std::size_t slots) : db_path_(std::move(db_path)), records_(slots) {}

void WorkerRecords::started(int slot, pid_t pid, const std::string& exe) {
  std::lock_guard lock(mu_);
  records_.at(std::size_t(slot)) = make_worker_record(pid, exe);
  bool ok = true;
  if (records_.size() == 1) {
    ok = save_worker_record(db_path_, records_[0]);
  } else {
    std::vector<WorkerRecord> all;
    for (const auto& r : records_)
      if (r.pgid > 0) all.push_back(r);
    ok = save_worker_records(db_path_, all);
  }
  if (!ok) spdlog::warn("cannot write {}", worker_record_file_for(db_path_));
}

}  // namespace attn::tuning
