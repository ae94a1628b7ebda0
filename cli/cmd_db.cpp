// `attn-tuner db merge OUT IN...` (one DB from the shards of a Slurm job array, docs/scale-out.md) and
// `attn-tuner db migrate --db DB` (bring an older DB to this build's schema version, e.g. before a merge) and
// `attn-tuner db cubin-hashes --db DB` (record the cubin hashes an older DB lacks: export/cubin_backfill.hpp).
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "daemon/db_merge.hpp"
#include "export/cubin_backfill.hpp"
#include "db/schema.hpp"
#include "db/store.hpp"

namespace attn {
namespace {

/// --db DB, as every command takes its DB (docs/cli.md); the DB as a positional argument, this command's older
/// spelling, still works. Both at once is bad usage.
void add_db_options(CLI::App* cmd, std::string& path) {
  auto* named = cmd->add_option("--db", path, "experiment DB")->capture_default_str();
  cmd->add_option("db", path, "the same, as an argument (older spelling)")->excludes(named);
}

}  // namespace

void add_db_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("db", "whole-DB operations: merge the DBs of several daemons, migrate, record cubin hashes");
  cmd->require_subcommand(1);

  auto* merge = cmd->add_subcommand("merge", "merge experiment DBs (e.g. the shards of a Slurm job array) into OUT");
  auto out = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::vector<std::string>>();
  auto force = std::make_shared<bool>(false);
  merge->add_option("out", *out, "the merged DB to create (must not exist unless --force)")->required();
  merge->add_option("inputs", *inputs, "the DBs to merge, in this order")->required();
  merge->add_flag("--force", *force, "replace OUT when it exists");
  merge->callback([out, inputs, force] {
    MergeSummary s;
    try {
      s = merge_experiment_dbs(*out, *inputs, *force);
    } catch (const std::invalid_argument& e) {
      throw CliError(e.what());
    }
    fmt::print("merged {} DB(s) into {}: {} runs, {} iterations, {} case results, {} held-out checks, {} proposals "
               "({} renamed), {} ideas, {} harness checks, {} variants ({} shared by content hash)\n",
               s.inputs, *out, s.runs, s.iterations, s.case_results, s.holdout_checks, s.proposals,
               s.proposals_renamed, s.ideas, s.harness_checks, s.variants, s.variants_shared);
    for (const auto& w : s.warnings) fmt::print("warning: {}\n", w);
    for (const auto& c : s.champions) fmt::print("champion {}\n", c);
  });

  auto* migrate = cmd->add_subcommand("migrate", "bring a DB to this attn-tuner's schema version");
  auto path = std::make_shared<std::string>("runs/attn-tuner.db");
  add_db_options(migrate, *path);
  migrate->callback([path] {
    if (!std::filesystem::exists(*path)) throw CliError("no experiment DB at " + *path);
    int before = 0;
    {
      auto conn = sqlite::Connection::open(*path, sqlite::OpenMode::read_only);
      db::configure_connection(conn);
      before = db::read_schema_version(conn);
    }
    auto d = ExperimentDb::open(*path);
    fmt::print("{}: schema version {} -> {}\n", *path, before, db::read_schema_version(d.connection()));
  });

  auto* hashes = cmd->add_subcommand(
      "cubin-hashes", "record the cubin hash of the variants an export takes (or --all), compiled from today's "
                      "templates where they still match, so that a later refactor of a template still exports");
  auto hdb = std::make_shared<std::string>("runs/attn-tuner.db");
  auto htemplates = std::make_shared<std::string>();
  auto hall = std::make_shared<bool>(false);
  add_db_options(hashes, *hdb);
  hashes->add_option("--templates", *htemplates, "kernel templates folder (default: the source tree's)");
  hashes->add_flag("--all", *hall, "every variant that compiled, not only those an export takes (slow: NVRTC each)");
  hashes->callback([hdb, htemplates, hall] {
    if (!std::filesystem::exists(*hdb)) throw CliError("no experiment DB at " + *hdb);
    CubinBackfill s;
    try {
      auto d = ExperimentDb::open(*hdb);
      s = backfill_cubin_hashes(d, *htemplates, *hall);
    } catch (const std::invalid_argument& e) {
      throw CliError("db cubin-hashes: " + std::string(e.what()));
    }
    fmt::print("{}: {} variant(s) considered, {} cubin hash(es) recorded, {} already recorded, {} skipped\n", *hdb,
               s.considered, s.recorded, s.already, s.skipped.size());
    for (const auto& why : s.skipped) fmt::print("  skipped {}\n", why);
  });
}

}  // namespace attn
