// run_proposal_round: DB records, working directory, watched set, the proposer process, the checks.
#include "proposer/proposal_round.hpp"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "proposer/proposal_check.hpp"
#include "proposer/proposal_workdir.hpp"
#include "proposer/proposer_process.hpp"
#include "proposer/watched_files.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kOutputBytes = 64 * 1024;

std::string joined_first(const std::vector<std::string>& lines, std::size_t n) {
  std::vector<std::string> head(lines.begin(), lines.begin() + std::ptrdiff_t(std::min(n, lines.size())));
  std::string s = fmt::format("{}", fmt::join(head, "; "));
  if (lines.size() > n) s += fmt::format("; ... ({} in all)", lines.size());
  return s;
}

ProposalContext context_for(const ProposerOptions& o, const ProposalRequest& r, ExperimentDb& db, std::int64_t id) {
  ProposalContext c;
  c.proposal_id = id;
  c.suite = r.suite;
  c.command = o.command;
  c.timeout_s = o.timeout_s;
  c.parent = r.parent;
  if (auto it = db.iteration(r.champion_iter)) c.champion = std::move(*it);
  if (c.champion.variant_id) c.champion_variant = db.variant(*c.champion.variant_id);
  c.top = db.iterations({.suite = r.suite,
                         .run_id = std::nullopt,
                         .statuses = {IterationStatus::keep, IterationStatus::discard},
                         .order = IterationQuery::Order::geomean_asc,
                         .limit = std::int64_t(o.top_k)});
  c.recent = db.iterations({.suite = r.suite,
                            .run_id = std::nullopt,
                            .statuses = {IterationStatus::keep, IterationStatus::discard, IterationStatus::crash,
                                         IterationStatus::interrupted},
                            .order = IterationQuery::Order::iter_desc,
                            .limit = std::int64_t(o.recent)});
  std::reverse(c.recent.begin(), c.recent.end());
  c.ideas = db.ideas();
  return c;
}

/// Leaves out of `s` the folders proposals/<N> of the idea queue's proposals (`ideas`, the N of their
/// proposal_id): the daemon applies and checks ideas in them while the proposer runs beside the tuning.
void drop_idea_folders(Snapshot& s, const std::string& proposals_dir, const std::vector<IdeaRecord>& ideas) {
  for (const IdeaRecord& i : ideas) {
    if (!i.proposal_id) continue;
    const std::string folder = proposals_dir + "/" + std::to_string(*i.proposal_id);
    std::erase_if(s.files, [&](const auto& entry) {
      const std::string& path = entry.first;
      return path.rfind(folder, 0) == 0 && (path.size() == folder.size() || path[folder.size()] == '/');
    });
  }
}

}  // namespace

bool ProposerOptions::due(std::int64_t done, std::int64_t since_champion, std::int64_t done_at_last_call) const {
  if (!enabled()) return false;
  if (every > 0) return done - done_at_last_call >= every;
  if (when_stalled > 0) return since_champion >= when_stalled && done - done_at_last_call >= when_stalled;
  return false;
}

std::string proposals_dir_for(const std::string& db_path) {
  return (fs::absolute(db_path).parent_path() / "proposals").lexically_normal().string();
}

ProposalRoundResult run_proposal_round(const ProposerOptions& o, const ProposalRequest& r, ExperimentDb& db,
                                       const Compiler& compiler, const std::function<bool()>& should_stop) {
  if (!r.parent) throw std::invalid_argument("run_proposal_round: no parent template");
  ProposalRecord rec;
  rec.run_id = r.run_id;
  rec.command = o.command;
  rec.parent_template = r.parent->name();
  rec.parent_iteration_id = r.champion_iter;
  rec.id = db.begin_proposal(rec);
  rec = *db.proposal(rec.id);

  ProposalRoundResult out;
  out.proposal_id = rec.id;
  out.template_name = proposal_template_name(r.parent->name(), rec.id);
  const fs::path dir = fs::path(proposals_dir_for(r.db_path)) / std::to_string(rec.id);
  const std::string workdir = (dir / "work").string(), install = (dir / "template").string();
  const std::string log = (dir / "proposer.log").string();
  std::error_code ec;
  fs::remove_all(dir, ec);  // left over from a DB that was replaced
  fs::create_directories(dir);
  write_proposal_workdir(workdir, context_for(o, r, db, rec.id));

  // The watched set: the template folders (contents kept, restored after a write) and the DB's folder.
  WatchedSet watched;
  for (const auto& t : r.template_dirs) watched.add(t, true);
  watched.add(fs::absolute(r.db_path).parent_path().string(), false);
  watched.exclude(workdir);
  watched.exclude(log);
  const std::string db_file = fs::absolute(r.db_path).lexically_normal().string();
  watched.exclude(db_file + "-shm");  // readers of a WAL database (`attn-tuner query`) write to it
  watched.exclude(db_file + ".log");  // the daemon's own log (--detach): its threads and the worker may write it
  watched.by_content(db_file);
  watched.by_content(db_file + "-wal");
  for (const auto& f : r.daemon_files) watched.exclude(fs::absolute(f).lexically_normal().string());
  spdlog::info("proposal {}: running `{}` in {} (limit {:g} s)", rec.id, o.command, workdir, o.timeout_s);
  Snapshot before = watched.snapshot();
  const ProposerExit ex = run_proposer_command(
      o.command, workdir, log, proposer_environment({fmt::format("ATTN_PROPOSAL_ID={}", rec.id)}), o.timeout_s,
      should_stop);
  Snapshot after = watched.snapshot();
  const std::vector<IdeaRecord> ideas = db.ideas();  // read after the run: those queued meanwhile too
  drop_idea_folders(before, proposals_dir_for(r.db_path), ideas);
  drop_idea_folders(after, proposals_dir_for(r.db_path), ideas);

  rec.exit_status = ex.status;
  rec.proposer_ms = ex.wall_ms;
  rec.output = file_tail(log, kOutputBytes);
  rec.template_name = out.template_name;
  ProposalCheck check;
  const std::vector<std::string> changes = snapshot_changes(before, after);
  if (ex.stopped) {
    check.status = ProposalStatus::interrupted;
    check.reason = "the daemon was asked to stop while the proposer ran; " + ex.status;
  }
  if (!changes.empty()) {
    std::string restored;
    try {
      const auto done = restore_snapshot(before, after);
      if (!done.empty()) restored = "; put back: " + joined_first(done, 5);
    } catch (const std::exception& e) {
      restored = std::string("; putting back failed: ") + e.what();
    }
    spdlog::warn("proposal {}: the proposer wrote outside its directory: {}{}", rec.id, joined_first(changes, 20), restored);
    const std::string why = "the proposer wrote outside its directory: " + joined_first(changes, 5) + restored;
    if (check.status == ProposalStatus::interrupted) {
      check.reason += "; " + why;
    } else {
      check.status = ProposalStatus::rejected;
      check.reason = why;
    }
  } else if (ex.stopped) {
  } else if (!ex.ok()) {
    check.status = ProposalStatus::rejected;
    check.reason = "the proposer failed: " + ex.status;
  } else {
    check = check_proposal(workdir, install, out.template_name, *r.parent, compiler);
  }

  rec.status = check.status;
  rec.reason = check.reason;
  rec.description = check.description;
  rec.source = check.source;
  rec.space_json = check.space_json;
  rec.headers_json = check.headers_json;
  rec.diff = check.diff;
  if (rec.status != ProposalStatus::accepted && rec.status != ProposalStatus::rejected) rec.template_name.clear();
  db.finish_proposal(rec);
  out.status = rec.status;

  const std::string what = rec.description.empty() ? o.command : rec.description;
  if (rec.status == ProposalStatus::rejected) {
    IterationRecord it;
    it.run_id = r.run_id;
    it.suite = r.suite;
    it.template_name = out.template_name;
    it.params_json = config_to_json(check.default_config);
    it.proposal_id = rec.id;
    it.description = fmt::format("proposal {}", rec.id);
    it.iter = db.begin_iteration(it);
    if (check.compiled && !check.compiled->hash.empty()) {
      VariantRecord v;
      v.template_name = out.template_name;
      v.params_json = it.params_json;
      v.content_hash = check.compiled->hash;
      v.compile_ok = false;
      v.compile_ms = check.compiled->compile_ms;
      v.compile_log = check.compiled->log;
      it.variant_id = db.upsert_variant(v);
      it.compile_ms = check.compiled->compile_ms;
    }
    it.status = IterationStatus::crash;
    it.failure_kind = check.failure;
    it.description = fmt::format("proposal {} ({}) [{}]: rejected: {}", rec.id, what, out.template_name, rec.reason);
    db.finish_iteration(it);
    out.crash_iter = it.iter;
  }
  if (check.status == ProposalStatus::accepted) out.accepted = std::move(check.space);
  out.summary = fmt::format("proposal {} {}: {} [{}] in {:.1f} s{}", rec.id, to_string(rec.status), what,
                            out.template_name, ex.wall_ms / 1000,
                            rec.reason.empty() ? std::string() : "; " + rec.reason);
  return out;
}

}  // namespace attn
