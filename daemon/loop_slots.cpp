// The GPU slots of the tuning loop (daemon/loop.hpp): one isolated worker per GPU, its cases, restarts,
// the watchdog's deadline, the stop conditions, and the scheduling of compiled configs onto idle slots.
#include <algorithm>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "daemon/gpu_set.hpp"
#include "daemon/loop.hpp"
#include "daemon/next_job.hpp"
#include "daemon/seed_rounds.hpp"
#include "daemon/stale_worker.hpp"

namespace attn::tuning {

void Loop::make_slots() {
  const WorkerCommand base = o_.worker ? *o_.worker : default_worker_command();
  const std::vector<GpuSpec> gpus = o_.gpus.empty() ? std::vector<GpuSpec>{GpuSpec{}} : o_.gpus;
  if (gpus.size() > std::size_t(StopRequest::kMaxExtraWorkers) + 1)
    throw std::invalid_argument(fmt::format("--gpus: at most {} GPUs", StopRequest::kMaxExtraWorkers + 1));
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    auto slot = std::make_unique<GpuSlot>();
    slot->slot = int(i);
    slot->gpu = gpus[i];
    WorkerCommand cmd = base;
    if (!o_.gpus.empty()) cmd.env = worker_env_for(gpus[i]);  // the worker's only device is ordinal 0
    slot->worker = std::make_unique<WorkerClient>(std::move(cmd));
    GpuSlot* raw = slot.get();
    // Runs in the slot's thread without the loop's lock: so that a later daemon can kill a worker that
    // outlives this one, and a second Ctrl-C kills every worker.
    raw->worker->on_start([this, raw](pid_t pid) {
      (raw->slot == 0 ? stop_.worker_pid : stop_.extra_worker_pids[std::size_t(raw->slot - 1)]) = pid;
      std::lock_guard lock(records_mu_);
      raw->record = make_worker_record(pid, raw->worker->command().exe);
      bool ok = true;
      if (slots_.size() == 1) {
        ok = save_worker_record(o_.db_path, raw->record);
      } else {
        std::vector<WorkerRecord> all;
        for (const auto& s : slots_)
          if (s->record.pgid > 0) all.push_back(s->record);
        ok = save_worker_records(o_.db_path, all);
      }
      if (!ok) spdlog::warn("cannot write {}", worker_record_file_for(o_.db_path));
    });
    slots_.push_back(std::move(slot));
  }
}

bool Loop::prepare_suite(GpuSlot& slot, const std::vector<CaseSpec>& cases) {
  drain_ahead(slot);  // screens sent ahead are answered on the cases they were sent with
  start_worker(slot);
  slot.state = "preparing cases";
  const auto timeout = milliseconds(std::int64_t(o_.prepare_timeout_s * 1000));
  const auto prep = unlocked(mu_, [&] { return slot.worker->prepare(cases, timeout, true); });
  prepare_ms_ += prep.ms;
  if (prep.status.ok()) return true;
  spdlog::warn("GPU {}: preparing {} cases failed: {} {}", slot.gpu.index, cases.size(), prep.status.name(),
               prep.status.message);
  restart_worker(slot);
  return false;
}

void Loop::ensure_cases(GpuSlot& slot) {
  start_worker(slot);
  while (slot.cases_gen != cases_gen_) {
    const std::vector<CaseSpec> cases = cases_;
    const std::int64_t gen = cases_gen_;
    if (prepare_suite(slot, cases))
      slot.cases_gen = gen;
    else
      start_worker(slot);
  }
}

void Loop::restart_worker(GpuSlot& slot) {
  slot.ready = false;
  slot.state = "restarting";
  slot.unanswered.clear();  // their answers die with the worker
  if (slot.ahead && !slot.ahead->sent->reply) {  // not this config's fault: back to the queue's front, unsent
    spdlog::info("GPU {}: {} {} goes back to the queue: its screen was sent ahead to a worker that ended",
                 slot.gpu.index, slot.ahead->proposal.template_name, config_to_compact(slot.ahead->proposal.proposal.config));
    slot.ahead->sent.reset();
    inflight_.push_front(std::move(*slot.ahead));
    slot.ahead.reset();
    --busy_;
    cv_.notify_all();
  }
  unlocked(mu_, [&] { slot.worker->restart(); });
}

void Loop::maybe_rotate() {
  if (!o_.rotate_seeds) return;
  const std::int64_t round = summary_.iterations / o_.round_configs;
  if (round == round_) return;
  round_ = round;
  root_seed_ = round_root_seed(o_.root_seed, summary_.run_id, round_, o_.holdout_seed);
  cases_ = builtin_suite(o_.suite, *root_seed_);
  ++cases_gen_;  // every slot prepares the new cases before its next evaluation
  if (screen_) screen_ = plan_screen(cases_);
  say(fmt::format("round {}: the suite's cases now come from root seed {}", round_, *root_seed_));
}

void Loop::start_worker(GpuSlot& slot) {
  if (slot.ready) return;
  const std::string gpu = slots_.size() > 1 ? fmt::format(" of GPU {}", slot.gpu.index) : "";
  if (slot.worker->starts() > 0) {
    unlocked(mu_, [&] { slot.worker->restart(); });
    ++slot.restarts;
  }
  slot.state = "starting";
  const HelloResponse hello = unlocked(mu_, [&] { return slot.worker->hello(milliseconds(60'000)); });
  if (!hello.status.ok()) throw std::runtime_error("the GPU worker" + gpu + " did not start: " + hello.status.message);
  slot.hello = hello;
  if (slot.gpu.uuid.empty()) slot.gpu.uuid = hello.uuid;
  const std::vector<CaseSpec> cases = cases_;
  const std::int64_t gen = cases_gen_;
  const auto timeout = milliseconds(std::int64_t(o_.prepare_timeout_s * 1000));
  const auto prep = unlocked(mu_, [&] { return slot.worker->prepare(cases, timeout); });
  if (!prep.status.ok())
    throw std::runtime_error("the GPU worker" + gpu + " could not build the suite's cases: " + prep.status.name() +
                             ": " + prep.status.message);
  prepare_ms_ += prep.ms;
  slot.cases_gen = gen;
  slot.ready = true;
  slot.state = "idle";
}

milliseconds Loop::eval_deadline() const {
  double s = o_.watchdog_cap_s;
  if (champion_eval_ms_ > 0)
    s = std::min(std::max(o_.watchdog_factor * champion_eval_ms_ / 1000.0, o_.watchdog_min_s), o_.watchdog_cap_s);
  return milliseconds(std::int64_t(s * 1000));
}

std::optional<std::string> Loop::stop_reason(int own_ahead) const {
  // Another GPU's loop ended the run. A slot holding a job sent ahead checks the conditions itself: that job was
  // counted in flight when another slot stopped at the iteration limit, so it still fits under it.
  if (!summary_.stop_reason.empty() && own_ahead == 0) return summary_.stop_reason;
  if (failure_) return std::string("a GPU's loop failed");
  if (stop_.stopping()) return std::string("stopped on request");
  if (o_.budget_s && seconds_since(started_) >= *o_.budget_s)
    return fmt::format("budget of {:.0f} s used up", *o_.budget_s);
  if (o_.max_iterations && summary_.iterations + busy_ - own_ahead >= *o_.max_iterations)  // counting those in flight
    return fmt::format("iteration limit {} reached", *o_.max_iterations);
  return std::nullopt;
}

void Loop::refill() {
  const std::size_t threads = std::max<std::size_t>(2, pool_.threads());
  const auto issue = [&](const TemplateProposal& p) -> InFlight {
    ideas_.on_issued(p.template_name);
    search_.state(p.template_name).mark_pending(p.proposal.config);
    return {p, pool_.submit(compile_request(p.template_name, p.proposal.config)).share()};
  };
  // An idea being tuned (the preferred template, a few configs) goes ahead of the backlog: its judging waits for
  // them, and the parent's configs compiled meanwhile could move the parent's champion on (docs/ideas.md).
  std::vector<InFlight> idea;
  while (idea.size() < kCompiledBacklogPerThread * threads)
    if (auto p = search_.next_preferred()) idea.push_back(issue(*p));
    else break;
  inflight_.insert(inflight_.begin(), std::make_move_iterator(idea.begin()), std::make_move_iterator(idea.end()));
  std::size_t compiling = 0, waiting = 0;
  for (const InFlight& f : inflight_)
    if (!f.sibling) ++(f.compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready ? waiting : compiling);
  for (std::size_t n = compiles_to_start(compiling, waiting, threads); n > 0; --n) {
    auto p = search_.next();
    if (!p) return;
    inflight_.push_back(issue(*p));
  }
}

void Loop::queue_siblings(const TemplateProposal& p, const CompiledVariant& cv) {
  if (!cv.ok || !cv.patchable || ideas_.is_idea_template(p.template_name)) return;
  SearchState& st = search_.state(p.template_name);
  std::vector<InFlight> ready;
  for (const Config& c : st.space().patch_siblings(p.proposal.config)) {
    if (st.seen(c)) continue;
    auto v = compiler_.from_sibling(cv, compile_request(p.template_name, c));  // microseconds and 3 files
    if (!v) continue;
    st.mark_pending(c);
    std::string changes;
    for (const auto& [name, value] : c)
      if (p.proposal.config.at(name) != value) changes += fmt::format("{}{}={}", changes.empty() ? "" : ",", name, value);
    std::promise<CompiledVariant> done;
    done.set_value(std::move(*v));
    ready.push_back({TemplateProposal{p.template_name, {c, fmt::format("{} (sibling {}: one compile, patched)",
                                                                       p.proposal.move, changes)}},
                     done.get_future().share(), true});
  }
  inflight_.insert(inflight_.begin(), std::make_move_iterator(ready.begin()), std::make_move_iterator(ready.end()));
}

void Loop::send_ahead(GpuSlot& slot) {
  if (!o_.eval_ahead || !screen_ || slot.ahead || !slot.ready || slot.cases_gen != cases_gen_ || stop_reason()) return;
  // stop_reason() counts busy_: with an iteration limit, this job fits under it.
  for (std::size_t i = 0; i < inflight_.size(); ++i) {
    InFlight& f = inflight_[i];
    if (f.spare_of || ideas_.is_idea_template(f.proposal.template_name) ||
        f.compiled.wait_for(std::chrono::seconds(0)) != std::future_status::ready)
      continue;
    const CompiledVariant& cv = f.compiled.get();
    if (!cv.ok || cv.cubin_path.empty()) continue;  // its iteration records the failure without a GPU
    const std::shared_ptr<SentScreen> sent = send_screen(slot, screen_request(f.proposal.template_name, cv));
    if (sent->reply) return;  // the worker is gone: the current job's answer says so
    InFlight job = std::move(f);
    inflight_.erase(inflight_.begin() + std::ptrdiff_t(i));
    job.sent = sent;
    slot.ahead = std::move(job);
    ++busy_;
    ++sent_ahead_;
    return;
  }
}

bool Loop::spare_due() {
  while (!near_misses_.empty()) {
    const auto best = near_misses_.begin();
    // Sorted by screen score: when the best near miss is out of the cut-off now, so is every other.
    if (!spare_candidate(best->first, best_screen_ms_, o_.spare_cutoff)) {
      near_misses_.clear();
      return false;
    }
    std::error_code ec;
    if (std::filesystem::exists(best->second.cv.cubin_path, ec)) return true;
    near_misses_.erase(best);  // its cubin left the cache: not worth a compile of GPU time that is spare
  }
  return false;
}

InFlight Loop::take_spare() {
  auto node = near_misses_.extract(near_misses_.begin());
  ScreenedNearMiss& miss = node.mapped();
  miss.cv.cache_hit = true;  // compiled for its screen: no NVRTC time again
  std::promise<CompiledVariant> ready;
  ready.set_value(std::move(miss.cv));
  TemplateProposal p = std::move(miss.proposal);
  p.proposal.move = fmt::format("spare GPU time: the whole suite for iter {}, screened {:.4f} ms", miss.iter, node.key());
  InFlight job{std::move(p), ready.get_future().share(), true};
  job.spare_of = miss.iter;
  return job;
}

void Loop::loop(std::unique_lock<std::mutex>& lock) {
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < slots_.size(); ++i)
    threads.emplace_back([this, i] {
      std::unique_lock slot_lock(mu_);
      GpuSlot& slot = *slots_[i];
      try {
        gpu_loop(slot, slot_lock);
      } catch (...) {
        if (!failure_) failure_ = std::current_exception();
      }
      cv_.notify_all();
      slot.state = "stopped";
      slot.ready = false;
      // Its worker dies with this thread (PR_SET_PDEATHSIG); end it cleanly first.
      unlocked(mu_, [&] { slot.worker->restart(); });
    });
  try {
    gpu_loop(*slots_[0], lock);
  } catch (...) {
    if (!failure_) failure_ = std::current_exception();
  }
  cv_.notify_all();
  unlocked(mu_, [&] {
    for (auto& t : threads) t.join();
  });
  if (failure_) std::rethrow_exception(failure_);
}

void Loop::gpu_loop(GpuSlot& slot, std::unique_lock<std::mutex>& lock) {
  for (;;) {
    if (auto why = stop_reason(slot.ahead ? 1 : 0)) {
      if (summary_.stop_reason.empty() && !failure_) summary_.stop_reason = *why;
      if (slot.ahead) {  // its screen is dropped with the run (no row was written for it)
        slot.ahead.reset();
        --busy_;
      }
      return;
    }
    maybe_rotate();
    poll_ideas(slot);
    poll_idea_agent();
    collect_proposal();
    if (!proposing_.valid() && o_.proposer.due(summary_.iterations, summary_.iterations - champion_at_, proposed_at_))
      start_proposal();
    refill();
    InFlight job;
    if (slot.ahead) {  // its screen is on this GPU already (send_ahead); busy_ counts it since
      job = std::move(*slot.ahead);
      slot.ahead.reset();
    } else {
      if (inflight_.empty() && busy_ == 0 && o_.proposer.enabled() && !stop_reason()) {
        if (!proposing_.valid() && !idle_proposal_tried_) {  // nothing else to tune: ask the proposer once
          idle_proposal_tried_ = true;
          start_proposal();
        }
        if (proposing_.valid()) {  // it may bring a template: wait for it rather than end
          slot.state = "idle";
          cv_.wait_for(lock, milliseconds(200));
          continue;
        }
      }
      // With an idea agent, nothing to tune is no end: its calls may bring ideas until the budget ends.
      if (inflight_.empty() && busy_ == 0 && o_.idea_agent.enabled() && o_.ideas.enabled() && !stop_reason()) {
        slot.state = "idle";
        cv_.wait_for(lock, milliseconds(200));
        continue;
      }
      if (inflight_.empty() && ideas_.current() && busy_ == 0) {  // its check is still running: wait for it, not the end
        slot.state = "idle";
        cv_.wait_for(lock, milliseconds(200));
        continue;
      }
      if (inflight_.empty()) {
        if (busy_ > 0) {
          slot.state = "idle";
          cv_.wait(lock);
          continue;
        }
        if (o_.ideas.enabled()) {  // the queue may still hold ideas: look once more before the end
          ideas_.look_now();
          poll_ideas(slot);
          if (ideas_.current()) continue;
        }
        std::size_t total = 0;
        for (const auto& n : search_.template_names()) total += search_.state(n).valid_configs().size();
        if (summary_.stop_reason.empty())
          summary_.stop_reason = fmt::format("search space exhausted: all {} valid configs evaluated", total);
        cv_.notify_all();
        return;
      }
      // A compiled config waiting for a GPU goes first (in queue order); with none, spare GPU time; else the front.
      std::vector<bool> compiled(inflight_.size());
      for (std::size_t i = 0; i < inflight_.size(); ++i)
        compiled[i] = inflight_[i].compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      const NextJob next = next_job(compiled, o_.spare_evals && spare_due());
      if (next.kind == NextJob::Kind::spare) {
        job = take_spare();
      } else {
        job = std::move(inflight_[next.index]);
        inflight_.erase(inflight_.begin() + std::ptrdiff_t(next.index));
      }
      ++busy_;
    }
    struct Done {  // also when evaluate throws
      Loop& loop;
      GpuSlot& slot;
      ~Done() {
        --loop.busy_;
        slot.state = "idle";
        loop.cv_.notify_all();
      }
    } done{*this, slot};
    evaluate(job, slot);
  }
}

}  // namespace attn::tuning
