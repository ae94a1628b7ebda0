#include "export/plan_from_db.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/templates_dir.hpp"
#include "db/champion_score.hpp"
#include "db/suite_choice.hpp"
#include "export/bucket_variants.hpp"
#include "export/db_variant.hpp"
#include "export/shape_rules.hpp"
#include "tuner/space.hpp"

namespace attn {
namespace {

/// One champion row with the iteration and the variant it points to.
struct Champion {
  ChampionRecord record;
  IterationRecord iteration;
  VariantRecord variant;
};

Champion load_champion(ExperimentDb& db, const ChampionRecord& c) {
  const std::string who = fmt::format("{}: champion '{}' of suite '{}'", db.path(), to_string(c.scope), c.suite);
  auto it = db.iteration(c.iteration_id);
  if (!it) throw std::invalid_argument(fmt::format("{} points to iteration {}, which is not in the DB", who, c.iteration_id));
  if (it->status != IterationStatus::keep && it->status != IterationStatus::discard)
    throw std::invalid_argument(fmt::format("{} is iteration {} with status {}, not a measured result", who, it->iter,
                                            to_string(it->status)));
  if (!it->variant_id)
    throw std::invalid_argument(fmt::format("{} (iteration {}) has no compiled variant", who, it->iter));
  auto v = db.variant(*it->variant_id);
  if (!v) throw std::invalid_argument(fmt::format("{} (iteration {}) points to variant {}, which is not in the DB", who,
                                                  it->iter, *it->variant_id));
  if (!v->compile_ok)
    throw std::invalid_argument(fmt::format("{} (iteration {}): its variant {} failed to compile", who, it->iter, v->id));
  return {c, std::move(*it), std::move(*v)};
}

std::string suites_with_champions(ExperimentDb& db) {
  std::set<std::string> suites;
  for (const auto& c : db.champions()) suites.insert(c.suite);
  std::string out;
  for (const auto& s : suites) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

/// The suite to export: the rule of every read command (db/suite_choice.hpp); a DB without champions is refused
/// first.
std::string pick_suite(ExperimentDb& db, const std::string& requested) {
  if (db.champions().empty())
    throw std::invalid_argument(fmt::format("{}: no champions yet (nothing to export; run `attn-tuner run` first)", db.path()));
  return resolve_suite(db, requested).suite;
}

/// provenance["idea"] of a variant whose template the idea queue installed (its proposal row is an idea's):
/// id, file, the suite of the idea's run, status and verdict. docs/ideas.md, "An idea's template after its
/// verdict": a champion is exported whatever its idea's verdict, and says so.
void add_idea(ExperimentDb& db, nlohmann::json& p) {
  if (!p.contains("proposal") || !p["proposal"].is_number_integer()) return;
  const auto proposal = p["proposal"].get<std::int64_t>();
  for (const auto& i : db.ideas()) {
    if (i.proposal_id != proposal) continue;
    const auto run = db.run(i.run_id);
    p["idea"] = {{"id", i.id},
                 {"file", i.file},
                 {"suite", run ? run->suite : std::string()},
                 {"status", to_string(i.status)},
                 {"verdict", to_string(i.verdict)}};
    return;
  }
}

/// provenance: root_seed, tuned_ms (the score the variant was chosen with) and its latest held-out check.
void add_tuned_and_holdout(ExperimentDb& db, const IterationRecord& it, const std::optional<double>& tuned_ms,
                           nlohmann::json& p) {
  p["root_seed"] = it.root_seed ? nlohmann::json(*it.root_seed) : nlohmann::json(nullptr);
  p["tuned_ms"] = tuned_ms ? nlohmann::json(*tuned_ms) : nlohmann::json(nullptr);
  const auto checks = db.holdout_checks(it.iter);
  p["holdout"] = checks.empty() ? nlohmann::json(nullptr) : nlohmann::json(checks.back());
  if (!checks.empty()) p["holdout"].erase("cases");
}

/// The cases of run `run_id` of `suite`: its suite_json, else the built-in suite of that name.
std::vector<CaseSpec> run_cases(ExperimentDb& db, std::int64_t run_id, const std::string& suite) {
  const auto run = db.run(run_id);
  if (run && !run->suite_json.empty()) {
    try {
      return suite_from_manifest_json(run->suite_json);
    } catch (const std::exception& e) {
      throw std::invalid_argument(fmt::format("{}: run {} has an unreadable suite_json: {}", db.path(), run->id, e.what()));
    }
  }
  const auto& names = builtin_suite_names();
  if (std::find(names.begin(), names.end(), suite) != names.end()) return builtin_suite(suite);
  throw std::invalid_argument(fmt::format("{}: run {} of suite '{}' stores no cases and '{}' is not a built-in suite",
                                          db.path(), run_id, suite, suite));
}

/// Runs of `suite` whose cases are `cases` up to their seeds (rotated or other root seeds draw other
/// layouts of the same shapes): their iterations' case medians are comparable with the champions'.
std::vector<std::int64_t> runs_with_cases(ExperimentDb& db, const std::string& suite, const std::vector<CaseSpec>& cases) {
  auto shapes = [](std::vector<CaseSpec> cs) {
    for (CaseSpec& c : cs) c.seed = 0;
    std::sort(cs.begin(), cs.end(), [](const CaseSpec& a, const CaseSpec& b) { return a.case_id < b.case_id; });
    return cs;
  };
  const std::vector<CaseSpec> wanted = shapes(cases);
  std::vector<std::int64_t> out;
  for (const RunRecord& run : db.runs()) {
    if (run.suite != suite) continue;
    try {
      if (shapes(run_cases(db, run.id, suite)) == wanted) out.push_back(run.id);
    } catch (const std::invalid_argument&) {
      // a run whose cases cannot be read: its iterations are not bucket candidates
    }
  }
  return out;
}

}  // namespace

ExportPlan build_export_plan(ExperimentDb& db, const DbExportOptions& options) {
  if (!(options.bucket_margin >= 0 && options.bucket_margin < 1))
    throw std::invalid_argument(fmt::format("bucket margin {} is not in [0, 1)", options.bucket_margin));
  const std::string suite = pick_suite(db, options.suite);
  const auto overall_record = db.champion(suite, ChampionScope::overall);
  if (!overall_record)
    throw std::invalid_argument(fmt::format("{}: no overall champion for suite '{}' (suites with champions: {})", db.path(),
                                            suite, suites_with_champions(db)));
  const std::string templates_dir = options.templates_dir.empty() ? default_templates_dir() : options.templates_dir;

  // Champions: overall first (the default variant), then each family's.
  std::vector<Champion> champions{load_champion(db, *overall_record)};
  std::map<Family, std::size_t> family_champion;  // family -> index into champions
  for (Family f : kAllFamilies)
    if (const auto c = db.champion(suite, champion_scope_of(f))) {
      family_champion[f] = champions.size();
      champions.push_back(load_champion(db, *c));
    }

  // One exported variant per distinct variant id, in champion order.
  ExportPlan plan;
  plan.suite = suite;
  std::map<std::int64_t, int> index_of_variant;  // variant id -> plan index
  std::vector<const Champion*> representative;   // plan index -> first champion with that variant
  std::vector<std::vector<std::string>> scopes;
  for (const Champion& c : champions) {
    const auto [it, inserted] = index_of_variant.emplace(c.variant.id, static_cast<int>(representative.size()));
    if (inserted) {
      representative.push_back(&c);
      scopes.emplace_back();
    }
    scopes[static_cast<std::size_t>(it->second)].push_back(to_string(c.record.scope));
  }
  // Plan index -> the iteration whose per-case medians stand for the variant (with its cases).
  std::vector<MeasuredVariant> measured;
  for (std::size_t i = 0; i < representative.size(); ++i) {
    const Champion& c = *representative[i];
    plan.variants.push_back(load_export_variant(c.iteration, c.variant, scopes[i], options.allow_stale_source,
                                                templates_dir, db.proposal_by_template(c.variant.template_name)));
    add_idea(db, plan.variants.back().provenance);
    measured.push_back({c.variant.id, &c.iteration});
    // The suite score it was chosen with, the measure of the held-out check (holdout_checks.tuned_ms): the overall
    // champion's score by the one rule (db/champion_score.hpp), the suite geomean of a family-only champion too.
    add_tuned_and_holdout(db, c.iteration, champion_score_ms(ChampionScope::overall, c.iteration),
                          plan.variants.back().provenance);
  }
  plan.default_variant = 0;
  for (const auto& [family, ci] : family_champion)
    plan.family_variants[family] = index_of_variant.at(champions[ci].variant.id);
  auto family_variant = [&](Family f) {
    const auto fc = plan.family_variants.find(f);
    return fc == plan.family_variants.end() ? plan.default_variant : fc->second;
  };

  // Bucket champions (docs/export.md, "Bucket champions"): extra variants for the (family, t_max,
  // batch*heads) buckets they beat the family champion on by more than bucket_margin.
  const std::vector<CaseSpec> cases = run_cases(db, champions.front().iteration.run_id, suite);
  std::vector<IterationRecord> candidates;  // measured[] points into it: not resized below
  std::vector<BucketRow> buckets;
  if (options.buckets) {
    candidates = bucket_candidates(db, suite, runs_with_cases(db, suite, cases));
    buckets = measure_buckets(cases, candidates, measured, family_variant, options.bucket_margin);
    choose_bucket_variants(buckets, static_cast<int>(plan.variants.size()), index_of_variant, [&](std::int64_t iter) {
      const auto it = std::find_if(candidates.begin(), candidates.end(),
                                   [&](const IterationRecord& r) { return r.iter == iter; });
      const auto variant = db.variant(*it->variant_id);
      if (!variant || !variant->compile_ok)
        throw std::invalid_argument(fmt::format("iteration {}: variant {} missing or not compiled", iter, *it->variant_id));
      plan.variants.push_back(load_export_variant(*it, *variant, {"bucket"}, options.allow_stale_source,
                                                  templates_dir, db.proposal_by_template(variant->template_name)));
      add_idea(db, plan.variants.back().provenance);
      measured.push_back({variant->id, &*it});
      add_tuned_and_holdout(db, *it, it->geomean_ms, plan.variants.back().provenance);
      return static_cast<int>(plan.variants.size()) - 1;
    });
  }
  std::map<std::string, int> bucket_variant;  // case id -> plan index of its bucket's champion
  for (const BucketRow& b : buckets) {
    if (b.variant < 0) continue;
    for (const std::string& id : b.bucket.case_ids) bucket_variant[id] = b.variant;
    auto& served = plan.variants[static_cast<std::size_t>(b.variant)].provenance["buckets"];
    served.push_back(b.bucket.label());
  }

  // Each variant's measured median per case (passed cases only).
  std::vector<std::map<std::string, double>> latency(plan.variants.size());
  for (std::size_t i = 0; i < measured.size(); ++i)
    for (const CaseResultRecord& r : measured[i].iteration->cases)
      if (r.passed && r.median_ms) latency[i][r.case_id] = *r.median_ms;

  std::vector<CaseAssignment> assignments;
  nlohmann::json case_choices = nlohmann::json::object();
  for (const CaseSpec& spec : cases) {
    CaseAssignment a;
    a.spec = spec;
    const auto bv = bucket_variant.find(spec.case_id);
    a.variant = bv != bucket_variant.end() ? bv->second : family_variant(spec.family);
    for (const auto& per_variant : latency) {
      const auto found = per_variant.find(spec.case_id);
      a.latency_ms.push_back(found == per_variant.end() ? std::nullopt : std::optional<double>(found->second));
    }
    if (const auto base = a.latency_ms[static_cast<std::size_t>(a.variant)]) {
      int fastest = a.variant;
      for (std::size_t v = 0; v < a.latency_ms.size(); ++v)
        if (a.latency_ms[v] && *a.latency_ms[v] < *a.latency_ms[static_cast<std::size_t>(fastest)])
          fastest = static_cast<int>(v);
      if (*a.latency_ms[static_cast<std::size_t>(fastest)] < *base * (1.0 - options.override_margin)) a.variant = fastest;
    }
    case_choices[spec.case_id] = plan.variants[static_cast<std::size_t>(a.variant)].name;
    assignments.push_back(std::move(a));
  }
  plan.rules = build_shape_rules(assignments);
  // A bucket champion serves a shape only where no case of another bucket with the same (batch, heads,
  // t_max) and an overlapping col_width range outvotes it (build_shape_rules): say so when it serves none.
  for (BucketRow& b : buckets) {
    if (b.variant < 0) continue;
    const bool serves = std::any_of(plan.rules.begin(), plan.rules.end(), [&](const ShapeRule& r) {
      if (r.variant != b.variant) return false;
      const std::string label = "+" + r.label + "+";
      return std::any_of(b.bucket.case_ids.begin(), b.bucket.case_ids.end(),
                         [&](const std::string& id) { return label.find("+" + id + "+") != std::string::npos; });
    });
    if (!serves) b.note = "no dispatch rule: its shapes are outvoted by overlapping cases of other buckets";
  }

  // Only variants a call reaches are exported (drop_unreached_variants): a family champion whose every case went to
  // a faster variant, a bucket champion outvoted by overlapping cases.
  std::vector<std::string> names;  // before dropping: the rows below name references and champions by it
  for (const ExportVariant& v : plan.variants) names.push_back(v.name);
  const std::vector<int> kept = drop_unreached_variants(plan);
  nlohmann::json not_exported = nlohmann::json::array();
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (kept[i] < 0)
      not_exported.push_back({{"variant", names[i]},
                              {"why", "no dispatch rule reaches it: every case it was chosen for goes to another "
                                      "variant"}});
  for (BucketRow& b : buckets)
    if (b.variant >= 0 && kept[static_cast<std::size_t>(b.variant)] < 0) {
      b.status = BucketStatus::unreached;
      b.variant = -1;
    }
  nlohmann::json champion_rows = nlohmann::json::array();
  for (const Champion& c : champions)
    champion_rows.push_back({{"scope", to_string(c.record.scope)},
                             {"iteration", c.record.iteration_id},
                             {"score_ms", champion_score_ms(c.record.scope, c.iteration).value_or(c.record.score_ms)},
                             {"aba_b_ms", c.record.score_ms},
                             {"promoted_at", c.record.promoted_at},
                             {"variant", names[static_cast<std::size_t>(index_of_variant.at(c.variant.id))]},
                             {"exported", kept[static_cast<std::size_t>(index_of_variant.at(c.variant.id))] >= 0}});
  const auto run = db.run(champions.front().iteration.run_id);
  plan.provenance = {{"db", db.path()},
                     {"suite", suite},
                     {"run_id", champions.front().iteration.run_id},
                     {"gpu_name", run ? run->gpu_name : ""},
                     {"champions", champion_rows},
                     {"case_variants", case_choices},
                     {"override_margin", options.override_margin},
                     {"buckets_enabled", options.buckets},
                     {"bucket_margin", options.bucket_margin},
                     {"buckets", bucket_rows_json(buckets, names)},
                     {"not_exported", not_exported}};
  check_export_plan(plan);
  return plan;
}

}  // namespace attn
