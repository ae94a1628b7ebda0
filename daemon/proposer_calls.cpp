// The proposer hook beside the tuning (daemon/proposer_calls.hpp).
#include "daemon/proposer_calls.hpp"

#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "tuner/strategy.hpp"

namespace attn::tuning {

ProposerCalls::ProposerCalls(const RunOptions& o, std::string suite, std::string templates_dir, Env env)
    : o_(o), suite_(std::move(suite)), templates_dir_(std::move(templates_dir)), env_(std::move(env)) {}

void ProposerCalls::poll() {
  if (!enabled()) return;
  std::unique_lock lock(mu_, std::try_to_lock);
  if (!lock) return;  // another GPU's thread is at it
  collect(false);
  const std::int64_t done = env_.scheduler.iterations();
  if (!calls_.running() && o_.proposer.due(done, done - env_.stats.now().champion_at, proposed_at_)) start();
}

bool ProposerCalls::when_idle() {
  if (!enabled()) return false;
  std::lock_guard lock(mu_);
  if (!calls_.running() && !idle_tried_) {  // nothing else to tune: ask the proposer once
    idle_tried_ = true;
    start();
  }
  return calls_.running() > 0;
}

void ProposerCalls::finish() {
  std::lock_guard lock(mu_);
  if (!calls_.running()) return;
  calls_.cancel();  // a call still running: stopped, recorded interrupted
  try {
    collect(true);
  } catch (const std::exception& e) {
    spdlog::warn("the last proposer call: {}", e.what());
  }
}

bool ProposerCalls::running() const {
  std::lock_guard lock(mu_);
  return calls_.running() > 0;
}

void ProposerCalls::start() {
  proposed_at_ = env_.scheduler.iterations();
  const auto champ = env_.champions.overall();
  if (!champ || !env_.search.has(champ->template_name)) return;  // nothing to start from yet
  // The parent is copied: the search's templates may grow (and move) while the proposer runs.
  auto parent = std::make_shared<TemplateSpace>(
      env_.search.read([&](const MultiSearch& s) { return s.state(champ->template_name).space(); }));
  const ProposalRequest req{run_id_, suite_, parent.get(), champ->iter, o_.db_path, call_template_dirs(templates_dir_),
                            daemon_files(o_, env_.compiler.cache_dir())};
  const RunOptions& o = o_;
  Compiler& compiler = env_.compiler;
  const StopRequest& stop = env_.stop;
  calls_.start([&o, &compiler, &stop, req, parent](const std::atomic<bool>& cancel) {
    auto db = ExperimentDb::open(o.db_path);  // a connection of its own: SQLite serialises the two writers
    return run_proposal_round(o.proposer, req, db, compiler, [&] { return stop.stopping() || cancel.load(); });
  });
  env_.say(fmt::format("proposer: `{}` runs beside the tuning (from {}, champion iter {})", o_.proposer.command,
                       champ->template_name, champ->iter));
}

void ProposerCalls::collect(bool wait) {
  for (auto& ended : calls_.collect(wait)) {
    if (!ended.result) {
      spdlog::error("proposer call failed: {}", ended.error);
      env_.say("proposer: the call failed: " + ended.error);
      continue;
    }
    ProposalRoundResult& r = *ended.result;
    if (r.crash_iter) {
      env_.db.log_ready();
      env_.scheduler.count_outside();
    }
    proposed_at_ = env_.scheduler.iterations();  // its own crash iteration does not count towards the next call
    env_.say(r.crash_iter ? fmt::format("iter {:>4} crash       {}", *r.crash_iter, r.summary) : r.summary);
    if (!r.accepted) continue;
    env_.search.add(std::move(*r.accepted), make_strategy(o_.strategy, o_.seed), r.proposal_id, false);
    idle_tried_ = false;
  }
}

}  // namespace attn::tuning
