// idea_parent, decide_rerun: the parent of the next idea (tuner/idea_parent.hpp).
#include "tuner/idea_parent.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {

std::vector<LandedIdea> landed_ideas(const TemplateSpace& space) {
  std::vector<LandedIdea> out;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_text_file(space.json_path()));
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}: {}", space.json_path(), e.what()));
  }
  if (!j.contains("landed")) return out;
  for (const auto& l : j["landed"]) {
    if (!l.is_object() || !l.contains("idea_hash") || !l.contains("template") || !l["idea_hash"].is_string() ||
        !l["template"].is_string())
      throw std::invalid_argument(fmt::format("{}: a \"landed\" element without \"idea_hash\" and \"template\": {}",
                                              space.json_path(), l.dump()));
    out.push_back({l["idea_hash"].get<std::string>(), l["template"].get<std::string>(), l.value("idea", std::int64_t{0}),
                   l.value("file", std::string()), l.value("suite", std::string())});
  }
  return out;
}

std::vector<IdeaRecord> ideas_on_suite(const std::vector<IdeaRecord>& ideas, const std::vector<RunRecord>& runs,
                                       const std::string& suite) {
  std::set<std::int64_t> here;
  for (const auto& r : runs)
    if (r.suite == suite) here.insert(r.id);
  std::vector<IdeaRecord> out;
  for (const auto& i : ideas)
    if (here.count(i.run_id)) out.push_back(i);
  return out;
}

std::optional<IdeaParent> idea_parent(const std::vector<IdeaRecord>& suite_ideas, const std::string& root,
                                      const std::set<std::string>& landed_hashes,
                                      const std::function<std::optional<ParentCandidate>(const std::string&)>& candidate) {
  const auto root_info = candidate(root);
  if (!root_info) return std::nullopt;
  const auto is_win = [](const IdeaRecord& i) { return i.status == IdeaStatus::done && i.verdict == IdeaVerdict::win; };
  // The latest win of the lineage, then each win's parent's win back to the root.
  const IdeaRecord* latest = nullptr;
  for (auto i = suite_ideas.rbegin(); i != suite_ideas.rend() && !latest; ++i)
    if (is_win(*i) && !i->template_name.empty() && i->template_name != root &&
        proposal_root_template(i->template_name) == root && candidate(i->template_name))
      latest = &*i;
  IdeaParent p;
  if (!latest) {
    p.code = p.measured = root;
    p.why = fmt::format("{}: no win of its lineage on this suite", root);
    return p;
  }
  bool all_landed = true;
  for (const IdeaRecord* w = latest; w;) {
    p.wins.push_back(w->template_name);
    p.win_ideas.push_back(w->id);
    all_landed = all_landed && landed_hashes.count(w->idea_hash);
    const std::string& up = w->parent_template;
    w = nullptr;
    if (up == root || up.empty()) break;
    for (auto i = suite_ideas.rbegin(); i != suite_ideas.rend(); ++i)
      if (is_win(*i) && i->template_name == up) {
        w = &*i;
        break;
      }
    if (!w) {  // a parent that is no win of this suite (a win of another suite's lineage): the chain ends there
      all_landed = false;
      break;
    }
  }
  const std::string wins = fmt::format("{}", fmt::join(p.win_ideas, ", "));
  if (!all_landed) {
    p.code = p.measured = latest->template_name;
    p.why = fmt::format("{}: the latest win of the lineage of {} (idea {}; wins, newest first: ideas {}), not landed in "
                        "{}'s source", latest->template_name, root, latest->id, wins, root);
    return p;
  }
  p.landed = true;
  p.code = root;
  const auto win_info = candidate(latest->template_name);
  p.measured = win_info && win_info->parameters == root_info->parameters ? latest->template_name : root;
  p.why = fmt::format("{}: the repository template, with every win of its lineage landed (ideas {}){}", root, wins,
                      p.measured == root ? std::string()
                                         : fmt::format("; its measured configs are those of {}, the latest win", p.measured));
  return p;
}

RerunDecision decide_rerun(const std::vector<IdeaRecord>& suite_ideas, const std::string& hash, const std::string& parent,
                           bool retry, int verdicts, const std::string& file, const std::string& suite) {
  std::vector<const IdeaRecord*> same, other;  // its verdicts on this parent, and on others
  for (const auto& old : suite_ideas)
    if (old.idea_hash == hash && old.status == IdeaStatus::done) (old.parent_template == parent ? same : other).push_back(&old);
  RerunDecision d;
  const auto skip = [&](const IdeaRecord& old, const std::string& more) {
    d.judge = false;
    d.skipped_for = old;
    d.skip_note = fmt::format("idea {}: already judged {} on {} on {} (idea {}){}", file, to_string(old.verdict),
                              old.parent_template, suite, old.id, more);
    return d;
  };
  const std::size_t wanted = std::size_t(std::max(1, verdicts));
  if (same.size() >= wanted)
    return skip(*same.back(), wanted > 1 ? fmt::format("; {} verdicts there, as its Verdicts: {} asks", same.size(), wanted)
                                         : std::string());
  if (same.empty() && !other.empty() && !retry) return skip(*other.front(), "; add 'Retry: yes' to run it on " + parent);
  if (!same.empty()) d.repeat_of = same.back()->id;
  return d;
}

}  // namespace attn
