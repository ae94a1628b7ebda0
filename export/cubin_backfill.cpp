#include "export/cubin_backfill.hpp"

#include <set>

#include <fmt/format.h>

#include "core/templates_dir.hpp"
#include "export/plan_from_db.hpp"
#include "gpu/compiler.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

/// The variant ids an export takes: every champion's, and the bucket champions of each suite's plan.
std::set<std::int64_t> exported_variants(ExperimentDb& db, const std::string& templates_dir,
                                         std::vector<std::string>& notes) {
  std::set<std::int64_t> ids;
  std::set<std::string> suites;
  for (const ChampionRecord& c : db.champions()) {
    suites.insert(c.suite);
    if (const auto it = db.iteration(c.iteration_id); it && it->variant_id) ids.insert(*it->variant_id);
  }
  for (const std::string& suite : suites) {
    DbExportOptions o;
    o.suite = suite;
    o.templates_dir = templates_dir;
    try {
      for (const ExportVariant& v : build_export_plan(db, o).variants)
        if (v.provenance.contains("variant_id")) ids.insert(v.provenance["variant_id"].get<std::int64_t>());
    } catch (const std::exception& e) {
      notes.push_back(fmt::format("suite {}: no export plan ({}); its champions only", suite, e.what()));
    }
  }
  return ids;
}

}  // namespace

CubinBackfill backfill_cubin_hashes(ExperimentDb& db, const std::string& templates_dir, bool all) {
  if (db.read_only()) throw std::invalid_argument("cubin hashes: the DB is open read-only");
  const std::string dir = templates_dir.empty() ? default_templates_dir() : templates_dir;
  CubinBackfill out;
  std::set<std::int64_t> ids;
  if (all) {
    const SqlResult r = db.sql_readonly("SELECT id FROM variants WHERE compile_ok = 1 ORDER BY id");
    for (const auto& row : r.rows) ids.insert(std::stoll(*row.at(0)));
  } else {
    ids = exported_variants(db, dir, out.skipped);
  }
  const Compiler compiler{CompilerOptions{}};
  for (const std::int64_t id : ids) {
    const auto vr = db.variant(id);
    if (!vr) continue;
    ++out.considered;
    const std::string who = fmt::format("variant {} ({} {})", id, vr->template_name, vr->params);
    if (!vr->cubin_hash.empty()) {
      ++out.already;
      continue;
    }
    if (!vr->compile_ok) {
      out.skipped.push_back(who + ": it did not compile");
      continue;
    }
    try {
      const TemplateSpace space = TemplateSpace::load_named(dir, vr->template_name);
      const CompileRequest req = compile_request(space, config_from_json(vr->params_json));
      if (compiler.content_hash(req) != vr->content_hash) {
        out.skipped.push_back(who + ": the template source changed since it was compiled, so today's cubin may be "
                                    "another (check out the commit it was tuned on to record it)");
        continue;
      }
      const CompiledVariant cv = compiler.compile(req);
      if (!cv.ok) {
        out.skipped.push_back(who + ": does not compile now: " + compile_error_line(cv.log));
        continue;
      }
      db.set_variant_cubin_hash(id, cv.cubin_hash);
      ++out.recorded;
    } catch (const std::exception& e) {
      out.skipped.push_back(fmt::format("{}: {} (a proposal's template, or not in {})", who, e.what(), dir));
    }
  }
  return out;
}

}  // namespace attn
