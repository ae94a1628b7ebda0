// render_ideas: the table of ideas and one idea in full.
#include "cli/query_ideas.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "db/idea_repeats.hpp"
#include "db/iters_tsv.hpp"
#include "db/text_table.hpp"

namespace attn {
namespace {

std::string pct(const std::optional<double>& v) { return v ? fmt::format("{:+.2f}", *v) : "-"; }
std::string num(const std::optional<double>& v, const char* spec) { return v ? fmt::format(fmt::runtime(spec), *v) : "-"; }
nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
nlohmann::json opt(const std::optional<std::int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

/// Verdict order for the ranking: wins, no gain, slower, broken, then those without a verdict.
int verdict_rank(const IdeaRecord& i) {
  switch (i.verdict) {
    case IdeaVerdict::win: return 0;
    case IdeaVerdict::no_gain: return 1;
    case IdeaVerdict::slower: return 2;
    case IdeaVerdict::broken: return 3;
    case IdeaVerdict::none: break;
  }
  return 4;
}

nlohmann::json idea_json(const IdeaRecord& i) {
  return {{"id", i.id}, {"run_id", i.run_id}, {"file", i.file}, {"idea_hash", i.idea_hash},
          {"description", i.description}, {"hypothesis", i.hypothesis}, {"parent_template", i.parent_template},
          {"parent_iteration", opt(i.parent_iteration_id)}, {"proposal_id", opt(i.proposal_id)},
          {"template", i.template_name}, {"status", to_string(i.status)}, {"verdict", to_string(i.verdict)},
          {"broken_kind", to_string(i.broken_kind)}, {"reason", i.reason}, {"configs", i.configs},
          {"best_iteration", opt(i.best_iteration_id)}, {"best_ms", opt(i.best_ms)}, {"parent_ms", opt(i.parent_ms)},
          {"idea_ms", opt(i.idea_ms)}, {"delta_pct", opt(i.delta_pct)}, {"noise_pct", opt(i.noise_pct)},
          {"aba", nlohmann::json::parse(i.aba_json, nullptr, false)},
          {"holdout_parent_ms", opt(i.holdout_parent_ms)}, {"holdout_idea_ms", opt(i.holdout_idea_ms)},
          {"space", nlohmann::json::parse(i.space_json, nullptr, false)},
          {"default", nlohmann::json::parse(i.default_json, nullptr, false)}, {"gpu_s", opt(i.gpu_s)},
          {"wall_s", opt(i.wall_s)}, {"started_at", i.started_at}, {"finished_at", i.finished_at}};
}

/// "landed in T" or "not landed" for a win, "" otherwise.
std::string landing(const IdeaRecord& i, const std::map<std::string, std::string>& landed) {
  if (i.status != IdeaStatus::done || i.verdict != IdeaVerdict::win) return "";
  const auto it = landed.find(i.idea_hash);
  return it == landed.end() ? "not landed" : "landed in " + it->second;
}

}  // namespace

std::string render_ideas(ExperimentDb& db, const std::string& format, const std::optional<std::int64_t>& id,
                         const std::map<std::string, std::string>& landed) {
  if (id) {
    const auto i = db.idea(*id);
    if (!i) throw CliError(fmt::format("no idea {} in {} (`attn-tuner query ideas` lists them)", *id, db.path()));
    const auto repeats = idea_repeats(db);
    const auto repeat = repeats.find(i->id);
    if (format == "json") {
      auto j = idea_json(*i);
      j["diff"] = i->diff;
      if (const auto l = landing(*i, landed); !l.empty()) j["landed"] = l;
      j["repeat_of"] = repeat == repeats.end() ? nlohmann::json() : nlohmann::json(repeat->second);
      return j.dump(2) + "\n";
    }
    std::string s = fmt::format("idea {} ({}), run {}: {}\n", i->id, i->file, i->run_id, i->description);
    if (repeat != repeats.end())
      if (const auto first = db.idea(repeat->second))
        s += fmt::format("judged again: idea {} had {} on {} ({} %, noise {} %)\n", first->id,
                         first->verdict == IdeaVerdict::none ? to_string(first->status) : to_string(first->verdict),
                         first->parent_template, pct(first->delta_pct), num(first->noise_pct, "{:.2f}"));
    if (!i->hypothesis.empty()) s += fmt::format("hypothesis: {}\n", i->hypothesis);
    s += fmt::format("parent: {} (best iter {}); template: {} (proposal {})\n", i->parent_template.empty() ? "-" : i->parent_template,
                     i->parent_iteration_id ? std::to_string(*i->parent_iteration_id) : "-",
                     i->template_name.empty() ? "-" : i->template_name,
                     i->proposal_id ? std::to_string(*i->proposal_id) : "-");
    s += fmt::format("status: {}; verdict: {}{}{}\n", to_string(i->status),
                     i->verdict == IdeaVerdict::none ? "-" : to_string(i->verdict),
                     i->broken_kind == IdeaBrokenKind::none ? "" : fmt::format(" ({})", to_string(i->broken_kind)),
                     landing(*i, landed).empty() ? "" : fmt::format(" ({})", landing(*i, landed)));
    if (!i->reason.empty()) s += "why: " + i->reason + "\n";
    s += fmt::format("configs tuned: {}; best {} ms (iter {}); A/B/A: parent {} ms, idea {} ms, delta {} % (noise {} %); "
                     "held-out: parent {} ms, idea {} ms; GPU {} s, wall {} s\n",
                     i->configs, num(i->best_ms, "{:.4f}"), i->best_iteration_id ? std::to_string(*i->best_iteration_id) : "-",
                     num(i->parent_ms, "{:.4f}"), num(i->idea_ms, "{:.4f}"), pct(i->delta_pct), num(i->noise_pct, "{:.2f}"),
                     num(i->holdout_parent_ms, "{:.4f}"), num(i->holdout_idea_ms, "{:.4f}"), num(i->gpu_s, "{:.1f}"),
                     num(i->wall_s, "{:.0f}"));
    if (i->space_json != "{}") s += fmt::format("new axes: {} (default {})\n", i->space_json, i->default_json);
    s += "diff as queued:\n" + (i->diff.empty() ? std::string("(none)\n") : i->diff);
    return s;
  }
  auto ideas = db.ideas();
  std::stable_sort(ideas.begin(), ideas.end(), [](const IdeaRecord& a, const IdeaRecord& b) {
    if (verdict_rank(a) != verdict_rank(b)) return verdict_rank(a) < verdict_rank(b);
    return a.delta_pct.value_or(1e9) < b.delta_pct.value_or(1e9);
  });
  std::map<std::int64_t, std::string> suite_of_run;  // a verdict holds for its run's suite (docs/ideas.md)
  for (const auto& r : db.runs()) suite_of_run[r.id] = r.suite;
  TextTable table{{"id", "file", "suite", "parent", "configs", "best_ms", "delta_pct", "noise_pct", "aba_ms", "holdout_ms",
                   "verdict", "gpu_s", "wall_s", "description"},
                  {}};
  auto json = nlohmann::json::array();
  const auto repeats = idea_repeats(db);
  for (const auto& i : ideas) {
    std::string aba = "-";
    const auto a = nlohmann::json::parse(i.aba_json, nullptr, false);
    if (a.is_object() && a.contains("a1_ms"))
      aba = fmt::format("{:.4f}/{:.4f}/{:.4f}", a["a1_ms"].get<double>(), a["b_ms"].get<double>(), a["a2_ms"].get<double>());
    const std::string holdout = i.holdout_idea_ms || i.holdout_parent_ms
                                    ? fmt::format("{}/{}", num(i.holdout_parent_ms, "{:.4f}"), num(i.holdout_idea_ms, "{:.4f}"))
                                    : "-";
    const std::string verdict =
        i.status != IdeaStatus::done
            ? to_string(i.status)
            : to_string(i.verdict) +
                  (i.broken_kind == IdeaBrokenKind::none ? "" : fmt::format(":{}", to_string(i.broken_kind))) +
                  (landing(i, landed).empty() ? "" : fmt::format(" ({})", landing(i, landed)));
    const std::string suite = suite_of_run.count(i.run_id) ? suite_of_run[i.run_id] : "-";
    table.rows.push_back({std::to_string(i.id), i.file, suite, i.parent_template.empty() ? "-" : i.parent_template,
                          std::to_string(i.configs), format_ms(i.best_ms), pct(i.delta_pct), num(i.noise_pct, "{:.2f}"),
                          aba, holdout, verdict, num(i.gpu_s, "{:.1f}"), num(i.wall_s, "{:.0f}"),
                          i.description.empty() ? i.reason : i.description});
    json.push_back(idea_json(i));
    json.back()["suite"] = suite;
    if (const auto l = landing(i, landed); !l.empty()) json.back()["landed"] = l;
    const auto repeat = repeats.find(i.id);
    json.back()["repeat_of"] = repeat == repeats.end() ? nlohmann::json() : nlohmann::json(repeat->second);
  }
  if (format == "json") return json.dump(2) + "\n";
  if (ideas.empty()) return "no ideas yet (attn-tuner run --ideas DIR; docs/ideas.md)\n";
  return format == "tsv" ? render_tsv(table) : render_aligned(table);
}

}  // namespace attn
