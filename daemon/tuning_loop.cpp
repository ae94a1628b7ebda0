// The tuning loop's entry point (daemon/tuning_loop.hpp) and the run it drives: start, the status file,
// the end and its throughput lines. The loop itself: daemon/loop.hpp and the loop_*.cpp files.
#include "daemon/tuning_loop.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "core/templates_dir.hpp"
#include "daemon/loop.hpp"
#include "daemon/stale_worker.hpp"
#include "daemon/storage_checks.hpp"
#include "db/iters_tsv.hpp"
#include "db/iters_tsv_owner.hpp"
#include "tuner/strategy.hpp"

namespace attn {
namespace tuning {
namespace {

std::vector<std::string> resolve_templates(const RunOptions& o, const std::string& dir) {
  if (!o.templates.empty()) return o.templates;
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  if (names.empty()) throw std::invalid_argument("no templates (*.json) in " + dir);
  return names;
}

/// The source checkout's commit when the run starts, "-dirty" appended when the tree has uncommitted
/// changes (a build from such a tree is not that commit), for the run record ("" when unknown).
std::string git_commit() {
  const std::string cmd =
      std::string("git -C '") + ATTN_SOURCE_DIR + "' describe --always --dirty --abbrev=7 --exclude='*' 2>/dev/null";
  std::string out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[64];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    ::pclose(p);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
}

/// The daemon's compiler: its cache, and NVRTC in --compile-procs processes (default: one per hardware thread).
CompilerOptions compiler_options(const RunOptions& o) {
  CompilerOptions c;
  c.cache_dir = o.cache_dir;
  c.procs.procs = o.compile_procs.value_or(std::max(1u, std::thread::hardware_concurrency()));
  return c;
}

}  // namespace

Loop::Loop(const RunOptions& o, StopRequest& stop)
    : o_(o),
      stop_(stop),
      db_(ExperimentDb::open(o.db_path)),
      suite_label_(suite_label(o)),
      templates_dir_(o.templates_dir.empty() ? default_templates_dir() : o.templates_dir),
      tsv_path_(tsv_path_of(o)),
      compiler_(compiler_options(o)),
      pool_(compiler_, o.compile_jobs ? o.compile_jobs : std::max(1u, std::thread::hardware_concurrency())) {
  db_.set_sync_full(o.db_sync_full);
  make_slots();
  cases_ = o.manifest.empty() ? builtin_suite(o.suite, o.root_seed) : suite_from_manifest_file(o.manifest);
  setup_seeds_and_fidelity();
  for (const auto& name : resolve_templates(o, templates_dir_)) {
    TemplateSpace space = TemplateSpace::load_named(templates_dir_, name);
    if (o.shard) space.restrict_to_shard(o.shard->index, o.shard->count);
    kernels_[name] = space.kernel();
    search_.add(std::move(space), make_strategy(o.strategy, o.seed));
  }
  load_proposed_templates();
  load_idea_templates();
  if (o.ideas.enabled()) {
    std::error_code ec;
    std::filesystem::create_directories(o.ideas.dir, ec);  // a queue folder the user fills later
  }
}

RunSummary Loop::run() {
  std::unique_lock lock(mu_);  // the loop's lock: held except around worker I/O and compile waits
  resume();
  start_worker(*slots_[0]);  // fails before the run is logged when there is no usable GPU
  const HelloResponse& hello_ = slots_[0]->hello;
  RunRecord rr;
  rr.suite = suite_label_;
  rr.suite_json = suite_to_manifest_json(cases_);
  rr.strategy = o_.strategy;
  rr.templates = search_.template_names();
  rr.gpu_name = hello_.gpu_name;
  rr.driver = std::to_string(hello_.driver_version);
  if (hello_.sm_clock_mhz) rr.sm_clock_mhz = hello_.sm_clock_mhz;
  rr.git_commit = git_commit();
  rr.host = host_name();
  summary_.run_id = db_.begin_run(rr);
  if (holdout_) holdout_->set_run(summary_.run_id);
  say(fmt::format("run {} on {} ({} SMs): suite {} ({} cases), templates {}, strategy {}, db {}, tsv {}",
                  summary_.run_id, hello_.gpu_name, hello_.sm_count, suite_label_, cases_.size(),
                  fmt::join(rr.templates, ","), o_.strategy, o_.db_path, tsv_path_));
  if (!o_.gpus.empty() || o_.shard) {
    std::vector<std::string> gpus;
    for (const auto& s : slots_) gpus.push_back(s->gpu.uuid.empty() ? std::to_string(s->gpu.index)
                                                                     : fmt::format("{} ({})", s->gpu.index, s->gpu.uuid));
    std::size_t total = 0;
    for (const auto& n : search_.template_names()) total += search_.state(n).valid_configs().size();
    say(fmt::format("{} worker(s), one per GPU: {}; {}", slots_.size(), fmt::join(gpus, ", "),
                    o_.shard ? fmt::format("shard {} of the space: {} valid configs", o_.shard->text(), total)
                             : std::string("the whole space")));
  }
  say(fmt::format("fidelity {}{}; case seeds {}; held-out check {}", to_string(o_.fidelity),
                  screen_ ? fmt::format(" (screen: {}, {} samples, cut-off {:g}%)", screen_->describe(),
                                        o_.ladder.screen_max_samples, o_.ladder.cutoff * 100)
                  : o_.fidelity == FidelityMode::ladder ? " (one case per family: every config is evaluated in full)"
                                                        : "",
                  !root_seed_ ? "fixed by the suite"
                  : o_.rotate_seeds ? fmt::format("root seed {}, a new one every {} configs", *root_seed_, o_.round_configs)
                                    : fmt::format("root seed {}", *root_seed_),
                  holdout_ ? fmt::format("on (root seed {})", holdout_->root_seed()) : std::string("off")));
  RunStatus status = RunStatus::finished;
  write_status("starting");
  try {
    loop(lock);
    if (stop_.stopping()) status = RunStatus::stopped;
    if (holdout_ && !stop_.abandoning()) {  // before export: every champion confirmed on held-out seeds
      challenge_slot_ = slots_[0].get();    // the main thread's GPU
      for (const auto& note : holdout_->confirm_champions(champions_)) say("held-out check: " + note);
    }
  } catch (const std::exception& e) {
    status = RunStatus::failed;
    summary_.failed = true;
    summary_.stop_reason = std::string("failed: ") + explain_run_failure(e, o_.db_path);
    spdlog::error("run {} {}", summary_.run_id, summary_.stop_reason);
  }
  if (proposing_.valid()) {  // a proposer call still running: stopped, recorded interrupted
    proposal_cancel_ = true;
    try {
      collect_proposal(true);
    } catch (const std::exception& e) {
      spdlog::warn("the last proposer call: {}", e.what());
    }
  }
  if (agent_call_.valid()) {  // an idea agent call still running: stopped, recorded interrupted
    agent_cancel_ = true;
    try {
      collect_idea_agent(true);
    } catch (const std::exception& e) {
      spdlog::warn("the last idea agent call: {}", e.what());
    }
  }
  for (auto& f : inflight_) search_.state(f.proposal.template_name).cancel_pending(f.proposal.proposal.config);
  interrupt_idea("the run ended before its verdict (" + summary_.stop_reason + "); queued again, it runs from the start");
  try {
    db_.end_run(summary_.run_id, status, summary_.stop_reason);
  } catch (const std::exception& e) {  // e.g. the disk is still full: the next start marks it interrupted
    throw std::runtime_error(fmt::format("run {} {}; its end could not be recorded ({}), so the next start "
                                         "marks it interrupted",
                                         summary_.run_id, summary_.stop_reason, e.what()));
  }
  for (auto& slot : slots_) slot->state = "stopped";
  write_status(std::string("ended: ") + summary_.stop_reason);
  report_throughput();
  if (const auto best = db_.best(suite_label_)) summary_.best_ms = best->geomean_ms;
  return summary_;
}

void Loop::write_status(const std::string& current) {
  std::size_t total = 0, seen = 0;
  for (const auto& n : search_.template_names()) {
    const auto& st = search_.state(n);
    total += st.valid_configs().size();
    seen += st.valid_configs().size() - st.unseen_count();
  }
  const ActiveIdea* idea = ideas_.current();
  nlohmann::json j = {{"pid", ::getpid()},
                      {"run_id", summary_.run_id},
                      {"suite", suite_label_},
                      {"elapsed_s", seconds_since(started_)},
                      {"iterations", summary_.iterations},
                      {"budget_s", o_.budget_s ? nlohmann::json(*o_.budget_s) : nlohmann::json()},
                      {"max_iterations", o_.max_iterations ? nlohmann::json(*o_.max_iterations) : nlohmann::json()},
                      {"space_total", total},
                      {"space_seen", seen},
                      {"current", current},
                      {"stale_worker", o_.stale_worker_note},
                      {"fidelity", screen_ ? "ladder" : "full"},  // what runs: no screen on one case per family
                      {"screened_out", screened_out_},
                      {"full_evaluations", full_evals_},
                      {"spare_evaluations", spare_evals_},
                      {"spare_kept", spare_kept_},
                      {"spare_gpu_s", spare_ms_ / 1000},
                      {"spare_evals_on", o_.spare_evals && screen_.has_value()},
                      {"screens_sent_ahead", sent_ahead_},
                      {"root_seed", root_seed_ ? nlohmann::json(*root_seed_) : nlohmann::json()},
                      {"holdout_seed", holdout_ ? nlohmann::json(holdout_->root_seed()) : nlohmann::json()},
                      {"shard", o_.shard ? nlohmann::json(o_.shard->text()) : nlohmann::json()},
                      {"gpus", gpus_status()},
                      {"compile_pool", compile_pool_status()},
                      {"idea", idea ? nlohmann::json{{"id", idea->rec.id}, {"file", idea->rec.file},
                                                     {"status", to_string(idea->rec.status)},
                                                     {"template", idea->rec.template_name},
                                                     {"configs", ideas_.finished()}}
                                     : nlohmann::json()},
                      {"idea_queue", o_.ideas.dir},
                      {"proposer", proposing_.valid() ? "running beside the tuning" : ""},
                      {"updated_unix", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()}};
  const std::string path = status_file_for(o_.db_path), tmp = path + ".tmp";
  if (FILE* f = std::fopen(tmp.c_str(), "we")) {  // close-on-exec: no child of the daemon keeps it
    const std::string text = j.dump(2);
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), path.c_str());
  }
}

nlohmann::json Loop::gpus_status() const {
  nlohmann::json list = nlohmann::json::array();
  const double hours = std::max(1e-9, seconds_since(started_)) / 3600;
  for (const auto& s : slots_)
    list.push_back({{"index", s->gpu.index},
                    {"uuid", s->gpu.uuid},
                    {"pid", s->worker->pid()},
                    {"state", s->state},
                    {"iterations", s->iterations},
                    {"rate_per_hour", s->iterations / hours},
                    {"restarts", s->restarts},
                    {"busy_s", s->busy_ms / 1000},
                    {"spare_s", s->spare_ms / 1000},
                    {"busy_share", s->busy_ms / 1000 / std::max(1e-9, seconds_since(started_))}});
  return list;
}

nlohmann::json Loop::compile_pool_status() const {
  nlohmann::json j = {{"threads", pool_.threads()}, {"processes", 0}, {"procs", 0}};
  if (const auto s = compiler_.procs_stats())
    j.update({{"procs", s->procs}, {"processes", s->processes}, {"busy", s->busy}, {"restarts", s->restarts},
              {"compiles", s->compiles}, {"failures", s->failures}, {"pids", s->pids}});
  return j;
}

void Loop::say(const std::string& line) {
  if (o_.progress) fmt::print("{}\n", line);
  std::fflush(stdout);
  spdlog::debug("{}", line);
}

void Loop::report_throughput() {
  const double wall = seconds_since(started_);
  say(fmt::format("run {} ended: {} iterations in {:.0f} s ({:.0f} configs/hour); {}", summary_.run_id,
                  summary_.iterations, wall, summary_.iterations / std::max(wall, 1e-9) * 3600,
                  summary_.stop_reason));
  const double hours = std::max(wall, 1e-9) / 3600;
  say(fmt::format("configs: {} screened out ({:.0f}/h), {} evaluated on the whole suite ({:.0f}/h)", screened_out_,
                  screened_out_ / hours, full_evals_, full_evals_ / hours));
  say(fmt::format("time: case building {:.1f} s, screening {:.1f} s, whole-suite evaluation (validation + timing) "
                  "{:.1f} s, champion re-timing {:.1f} s, held-out checks {:.1f} s, NVRTC {:.1f} s over {} compile "
                  "threads{} (overlapped with the GPU)",
                  prepare_ms_ / 1000, screen_ms_ / 1000, eval_ms_ / 1000, retime_ms_ / 1000, holdout_ms_ / 1000,
                  compile_ms_ / 1000, pool_.threads(),
                  compiler_.procs_stats() ? fmt::format(" and {} compile worker processes", compiler_.procs_stats()->procs)
                                          : std::string(" in the daemon's process")));
  if (o_.spare_evals && screen_)
    say(fmt::format("spare GPU time: {} whole-suite evaluations of screened-out near misses (within {:g}% of the best "
                    "screen) while no compiled config waited, {:.1f} s of GPU time, {} kept as a new champion",
                    spare_evals_, o_.spare_cutoff * 100, spare_ms_ / 1000, spare_kept_));
  if (o_.eval_ahead && screen_)
    say(fmt::format("screens sent ahead: {} (written to a GPU's worker while it timed the config before)", sent_ahead_));
  std::string busy;
  for (const auto& s : slots_)
    busy += fmt::format("{}GPU {} {:.1f} % ({:.1f} s{})", busy.empty() ? "" : ", ", s->gpu.index,
                        100 * s->busy_ms / 1000 / std::max(wall, 1e-9), s->busy_ms / 1000,
                        o_.spare_evals && screen_ ? fmt::format(", spare {:.1f} s", s->spare_ms / 1000) : "");
  say("GPU busy (its worker evaluating, share of the run's wall time): " + busy);
}

}  // namespace tuning

std::string suite_label(const RunOptions& o) {
  return o.manifest.empty() ? o.suite : std::filesystem::path(o.manifest).stem().string();
}

std::string tsv_path_of(const RunOptions& o) {
  return o.tsv_path.empty() ? default_iters_tsv_path(o.db_path) : o.tsv_path;
}

void validate_run_options(const RunOptions& o) {
  const auto bad = [](const std::string& why) { throw std::invalid_argument(why); };
  if (o.budget_s && !(*o.budget_s > 0)) bad("--budget must be positive");
  if (o.max_iterations && *o.max_iterations <= 0) bad("--iterations must be positive");
  if (!(o.ladder.cutoff >= 0)) bad("--screen-cutoff must be >= 0");
  if (!(o.spare_cutoff >= 0)) bad("--spare-cutoff must be >= 0");
  if (o.ladder.screen_max_samples < 1) bad("--screen-samples must be >= 1");
  if (o.round_configs <= 0) bad("--round must be a positive number of configs");
  const bool seeded = o.manifest.empty() && suite_has_root_seed(o.suite);
  if (o.rotate_seeds && !seeded)
    bad(fmt::format("--rotate-seeds needs a suite whose case seeds come from a root seed (quick, full, broad), not {}",
                    suite_label(o)));
  if (seeded && o.holdout && o.root_seed == o.holdout_seed)
    bad(fmt::format("--root-seed {} is the held-out seed: tuning never uses it (pick another, or --holdout-seed)",
                    o.root_seed));
  if (o.ideas.enabled()) {
    if (o.ideas.budget < 1) bad("--idea-budget must be at least 1 config");
    if (!(o.ideas.poll_s > 0)) bad("--idea-poll must be positive");
  }
  if (!o.manifest.empty() && !std::filesystem::exists(o.manifest)) bad("--manifest: no such file " + o.manifest);
  const auto& names = strategy_names();
  if (std::find(names.begin(), names.end(), o.strategy) == names.end())
    bad(fmt::format("--strategy: unknown '{}' ({})", o.strategy, fmt::join(names, ", ")));
}

RunSummary run_tuning_loop(const RunOptions& options, StopRequest& stop) {
  validate_run_options(options);
  tuning::Loop loop(options, stop);
  return loop.run();
}

}  // namespace attn
