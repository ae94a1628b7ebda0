// `attn-tuner db merge OUT IN...` (one DB from the shards of a Slurm job array, docs/scale-out.md) and
// `attn-tuner db migrate DB` (bring an older DB to this build's schema version, e.g. before a merge).
#include <filesystem>

#include <fmt/format.h>

#include "daemon/commands.hpp"
#include "daemon/db_merge.hpp"
#include "db/schema.hpp"
#include "db/store.hpp"

namespace attn {

void add_db_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("db", "whole-DB operations: merge the DBs of several daemons, migrate");
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
               "({} renamed), {} variants ({} shared by content hash)\n",
               s.inputs, *out, s.runs, s.iterations, s.case_results, s.holdout_checks, s.proposals,
               s.proposals_renamed, s.variants, s.variants_shared);
    for (const auto& w : s.warnings) fmt::print("warning: {}\n", w);
    for (const auto& c : s.champions) fmt::print("champion {}\n", c);
  });

  auto* migrate = cmd->add_subcommand("migrate", "bring a DB to this attn-tuner's schema version");
  auto path = std::make_shared<std::string>();
  migrate->add_option("db", *path, "experiment DB")->required();
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
}

}  // namespace attn
