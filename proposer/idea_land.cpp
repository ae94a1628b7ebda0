// land_lineage: a lineage's wins into the repository template's source (proposer/idea_land.hpp).
#include "proposer/idea_land.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/text_file.hpp"
#include "proposer/champion_template.hpp"
#include "proposer/idea_apply.hpp"
#include "proposer/idea_check.hpp"
#include "proposer/idea_file.hpp"
#include "proposer/parent_template.hpp"
#include "proposer/temp_dir.hpp"
#include "proposer/template_json.hpp"
#include "tuner/compile_request.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string l;
  while (std::getline(in, l)) out.push_back(l);
  return out;
}

/// Lines added and removed from `a` to `b` (a longest common subsequence of lines).
std::pair<int, int> diff_counts(const std::string& a, const std::string& b) {
  const auto x = lines_of(a), y = lines_of(b);
  std::vector<std::vector<int>> l(x.size() + 1, std::vector<int>(y.size() + 1, 0));
  for (std::size_t i = x.size(); i-- > 0;)
    for (std::size_t j = y.size(); j-- > 0;)
      l[i][j] = x[i] == y[j] ? l[i + 1][j + 1] + 1 : std::max(l[i + 1][j], l[i][j + 1]);
  const int common = l[0][0];
  return {int(y.size()) - common, int(x.size()) - common};
}

/// "" when equal, else where the two texts first differ.
std::string first_difference(const std::string& ours, const std::string& theirs) {
  if (ours == theirs) return "";
  const auto a = lines_of(ours), b = lines_of(theirs);
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const auto shown = [](const std::vector<std::string>& v, std::size_t k) {
    return k < v.size() ? "'" + v[k].substr(0, 100) + "'" : std::string("the end of the file");
  };
  return fmt::format("line {}: the landed source has {}, the DB's {}", i + 1, shown(a, i), shown(b, i));
}

/// The files of a template folder as an idea sees them: <root>.cu and every local include (path -> text).
std::map<std::string, std::string> code_files(const std::string& dir, const std::string& root) {
  std::map<std::string, std::string> out;
  const std::string cu = (fs::path(dir) / (root + ".cu")).string();
  out[root + ".cu"] = idea_parent_source(read_text_file(cu));
  for (const auto& [inc, text] : local_includes(cu)) out[inc] = text;
  return out;
}

/// What of a space JSON makes the space (parameters with values and patchable, constraints, default), docs and
/// names left out.
ojson space_essence(const ojson& j) {
  ojson e = {{"parameters", ojson::object()}, {"constraints", j.value("constraints", ojson::array())},
             {"default", j.value("default", ojson::object())}};
  for (const auto& [name, p] : j.at("parameters").items())
    e["parameters"][name] = {{"values", p.at("values")}, {"patchable", p.value("patchable", false)}};
  for (auto& c : e["constraints"]) c.erase("why");
  return e;
}

std::string percent(const std::optional<double>& v) { return v ? fmt::format("{:+.2f} %", *v) : "-"; }

/// `text` without the fallback of macro `name` (the lines `#ifndef NAME`, `#define NAME <value>`, `#endif`); `found`
/// says whether it had one.
std::string without_fallback(const std::string& text, const std::string& name, bool& found) {
  const std::string block = "#ifndef " + name + "\n#define " + name + " ";
  found = false;
  std::string out = text;
  for (std::size_t at; (at = out.find(block)) != std::string::npos && (at == 0 || out[at - 1] == '\n');) {
    const std::size_t def_end = out.find('\n', at + block.size());
    if (def_end == std::string::npos || out.compare(def_end + 1, 7, "#endif\n") != 0) break;
    out.erase(at, def_end + 8 - at);
    found = true;
  }
  return out;
}

/// `cu` with the repository's guard for parameter `name` (kernels_templates/ABI.md: `#ifndef NAME`, `#error "NAME not
/// given: ..."`, `#endif`) after the last guard it has; unchanged when it has none (a template without that
/// convention) or one for `name` already.
std::string with_guard(const std::string& cu, const std::string& name) {
  const std::string tail = " not given: a parameter of the space (its default is in the .json)\"\n#endif\n";
  if (cu.find("#error \"" + name + tail) != std::string::npos) return cu;
  const std::size_t last = cu.rfind(tail);
  if (last == std::string::npos) return cu;
  std::string out = cu;
  out.insert(last + tail.size(), "#ifndef " + name + "\n#error \"" + name + tail);
  return out;
}

/// Writes the template files `files` (relative path -> text) into `dir`, <root>.cu and <root>.json under
/// `name`.cu / `name`.json (the JSON renamed), and returns the space loaded from there.
TemplateSpace write_as(const std::map<std::string, std::string>& files, const std::string& space_json,
                       const std::string& root, const std::string& dir, const std::string& name) {
  for (const auto& [path, text] : files)
    write_text_file((fs::path(dir) / (path == root + ".cu" ? name + ".cu" : path)).string(), text);
  const std::string json = (fs::path(dir) / (name + ".json")).string();
  write_text_file(json, renamed_space_json(space_json, name, name + ".cu"));
  return TemplateSpace::load(json);
}

}  // namespace

LandResult land_lineage(ExperimentDb& db, const LandRequest& req, const Compiler& compiler) {
  if (!req.in_place && req.out_dir.empty()) throw std::invalid_argument("idea land: --out DIR or --in-place");
  if (!req.in_place && fs::exists(req.out_dir) && !fs::is_empty(req.out_dir))
    throw std::invalid_argument(fmt::format("idea land: {} exists and is not empty", req.out_dir));
  LandResult r;
  const auto say = [&](std::string l) {
    if (req.progress) req.progress(l);
    r.lines.push_back(std::move(l));
  };
  const std::string suite = champion_suite(db, req.suite);
  std::string root = req.root;
  const auto champ = db.champion(suite, ChampionScope::overall);
  const auto champ_it = champ ? db.iteration(champ->iteration_id) : std::nullopt;
  if (root.empty()) {
    if (!champ_it) throw std::invalid_argument(fmt::format("{}: no overall champion on {}: name the template (--template)",
                                                           db.path(), suite));
    root = proposal_root_template(champ_it->template_name);
  }
  TempDir scratch("attn-idea-land");
  const fs::path s(scratch.path);
  const ParentTemplate parent = load_parent_template(db, suite, root, req.templates_dir, (s / "parent").string());
  const TemplateSpace repo = TemplateSpace::load_named(req.templates_dir, root);
  std::set<std::string> landed_hashes;
  for (const auto& l : landed_ideas(repo)) landed_hashes.insert(l.idea_hash);
  std::map<std::int64_t, IdeaRecord> by_id;
  for (auto& i : db.ideas()) by_id.emplace(i.id, std::move(i));
  if (parent.rule.wins.empty()) {
    say(fmt::format("nothing to land: {} has no win of its lineage on {}", root, suite));
    return r;
  }
  if (parent.rule.landed) {
    say(fmt::format("nothing to land: every win of the lineage of {} on {} is in its source already (ideas {})", root,
                    suite, fmt::join(parent.rule.win_ideas, ", ")));
    return r;
  }
  for (auto i = parent.rule.win_ideas.rbegin(); i != parent.rule.win_ideas.rend(); ++i)
    if (!landed_hashes.count(by_id.at(*i).idea_hash)) r.landed.push_back(by_id.at(*i));
  say(fmt::format("landing {} win(s) of the lineage of {} on {} into {} ({}): {}", r.landed.size(), root, suite,
                  req.in_place ? req.templates_dir : req.out_dir, repo.json_path(), [&] {
                    std::string s;
                    for (const auto& w : r.landed)
                      s += fmt::format("{}idea {} ({}, {} {})", s.empty() ? "" : ", ", w.id, w.file, w.template_name,
                                       percent(w.delta_pct));
                    return s;
                  }()));

  // The repository's files as an idea's diff sees them, then each win's diff and axes.
  const fs::path work = s / "work";
  write_idea_parent_files(repo, work.string());
  const std::map<std::string, std::string> before = code_files(work.string(), root);
  const std::string json_before = read_text_file(repo.json_path());
  for (const auto& w : r.landed) {
    const std::string what = fmt::format("idea {} ({}, template {})", w.id, w.file, w.template_name);
    IdeaFile idea;
    try {
      idea.files = split_unified_diff(w.diff);
      idea.space = ojson::parse(w.space_json);
      idea.defaults = ojson::parse(w.default_json);
    } catch (const std::exception& e) {
      throw LandRefused(fmt::format("{}: its recorded diff or space does not parse: {}", what, e.what()));
    }
    const DiffApplied d = apply_idea_diff(idea, root, work.string(), s.string(), root + ".cu", root + ".json");
    if (!d.ok)
      throw LandRefused(fmt::format("{} does not apply to the current source of {}: {} (the DB's lineage was built on "
                                    "another {}: nothing written)", what, root, d.reason, root));
    for (const auto& h : d.inexact) say(fmt::format("  {}: {}", what, h));
    ojson j = ojson::parse(read_text_file((work / (root + ".json")).string()));
    for (const auto& [axis, values] : idea.space.items()) {
      if (j["parameters"].contains(axis))
        throw LandRefused(fmt::format("{}: its axis {} is a parameter of {} already", what, axis, root));
      j["parameters"][axis] = {{"values", values},
                               {"doc", fmt::format("{}{} Landed from idea {} ({}), a win on {}: {}.", w.description,
                                                   !w.description.empty() && w.description.back() == '.' ? "" : ".",
                                                   w.id, w.file, suite, percent(w.delta_pct))}};
      j["default"][axis] = idea.defaults.at(axis);
    }
    if (!j.contains("landed")) j["landed"] = ojson::array();
    j["landed"].push_back({{"idea_hash", w.idea_hash}, {"template", w.template_name}, {"idea", w.id}, {"file", w.file},
                           {"suite", suite}});
    write_text_file((work / (root + ".json")).string(), format_template_json(j));

    // The result must be the DB's template of this win: every file, and the space.
    const auto proposal = db.proposal_by_template(w.template_name);
    if (!proposal) throw LandRefused(fmt::format("{}: the DB has no proposal row of {}", what, w.template_name));
    const fs::path theirs = s / ("db_" + w.template_name);
    TemplateSpace db_space = TemplateSpace::load(write_proposal_template(*proposal, (theirs / "stored").string()));
    write_idea_parent_files(db_space, theirs.string());
    const auto ours_files = code_files(work.string(), root), their_files = code_files(theirs.string(), root);
    for (const auto& [path, text] : their_files) {
      const auto o = ours_files.find(path);
      if (o == ours_files.end())
        throw LandRefused(fmt::format("after {}, the landed source lacks {}, a file of the DB's {}", what, path, w.template_name));
      if (const auto diff = first_difference(o->second, text); !diff.empty())
        throw LandRefused(fmt::format("after {}, {} differs from the DB's {} ({}): the repository's {} is not the source "
                                      "the lineage was built on; nothing written", what, path, w.template_name, diff, root));
    }
    for (const auto& [path, text] : ours_files)
      if (!their_files.count(path))
        throw LandRefused(fmt::format("after {}, the landed source has {}, which the DB's {} lacks", what, path, w.template_name));
    if (space_essence(j) != space_essence(ojson::parse(read_text_file(db_space.json_path()))))
      throw LandRefused(fmt::format("after {}, the space of {} (parameters, values, constraints, defaults) differs from "
                                    "the DB's {}: nothing written", what, root, w.template_name));
    say(fmt::format("  {}: applied; every file and the space equal the DB's {}", what, w.template_name));
  }

  // The repository's convention for a parameter (kernels_templates/ABI.md): no fallback in the source, a guard that
  // stops the compile when it is not given. Each landed axis' fallback (an idea keeps one so that its parent's
  // compiles build) goes, and <root>.cu gets its guard; the cubins below are of this final source.
  for (const auto& w : r.landed) {
    const ojson space = ojson::parse(w.space_json);
    for (const auto& [axis, values] : space.items()) {
      std::vector<std::string> where;
      for (const auto& [path, text] : code_files(work.string(), root)) {
        bool found = false;
        const std::string changed = without_fallback(text, axis, found);
        if (!found) continue;
        write_text_file((work / path).string(), changed);
        where.push_back(path);
      }
      const std::string cu = (work / (root + ".cu")).string(), guarded = with_guard(read_text_file(cu), axis);
      const bool guard = guarded != read_text_file(cu);
      if (guard) write_text_file(cu, guarded);
      if (!where.empty() || guard)
        say(fmt::format("  axis {}: {}{}{}", axis, where.empty() ? "" : "its fallback removed from " + fmt::format("{}", fmt::join(where, ", ")),
                        !where.empty() && guard ? ", " : "", guard ? fmt::format("the guard added to {}.cu (ABI.md)", root) : ""));
    }
  }

  // The cubins: the landed source against the DB's templates, under one file name.
  const std::map<std::string, std::string> after = code_files(work.string(), root);
  const std::string json_after = read_text_file((work / (root + ".json")).string());
  const TemplateSpace landed = write_as(after, json_after, root, (s / "landed").string(), root);
  const IdeaRecord& latest = r.landed.back();
  const auto compile_hash = [&](const TemplateSpace& t, const Config& c, const std::string& what) {
    const CompiledVariant v = compiler.compile(compile_request(t, c));
    if (!v.ok) throw LandRefused(fmt::format("{} does not compile: {}", what, compile_error_line(v.log)));
    return v.cubin_hash;
  };
  struct Check {
    std::string template_name, what;
    Config config;
    std::optional<std::int64_t> variant_id;
  };
  std::vector<Check> checks;
  if (parent.best)
    checks.push_back({latest.template_name, fmt::format("the best config of {} on {} (iter {})", latest.template_name,
                                                        suite, parent.best->iter),
                      config_from_json(parent.best->params_json), parent.best->variant_id});
  // The overall champion, when its template is the lineage's or an idea judged on it.
  if (champ_it) {
    const auto champ_idea = std::find_if(by_id.begin(), by_id.end(), [&](const auto& kv) {
      return kv.second.template_name == champ_it->template_name;
    });
    const bool on_lineage =
        std::any_of(r.landed.begin(), r.landed.end(), [&](const IdeaRecord& w) { return w.template_name == champ_it->template_name; }) ||
        (champ_idea != by_id.end() && champ_idea->second.parent_template == latest.template_name);
    if (on_lineage && (!parent.best || champ_it->iter != parent.best->iter))
      checks.push_back({champ_it->template_name, fmt::format("the overall champion of {} (iter {}, {})", suite, champ_it->iter,
                                                             champ_it->template_name),
                        config_from_json(champ_it->params_json), champ_it->variant_id});
  }
  for (const auto& k : checks) {
    const auto proposal = db.proposal_by_template(k.template_name);
    if (!proposal) throw LandRefused(fmt::format("the DB has no proposal row of {}", k.template_name));
    const fs::path d = s / ("cubin_" + k.template_name);
    TemplateSpace stored = TemplateSpace::load(write_proposal_template(*proposal, (d / "stored").string()));
    // Both under <root>.cu: the DB's files as an idea sees them, and the landed ones.
    write_idea_parent_files(stored, (d / "one_name").string());
    const TemplateSpace theirs = TemplateSpace::load((d / "one_name" / (root + ".json")).string());
    const Config c_landed = in_space_of(landed, k.config), c_theirs = theirs.complete(k.config);
    const std::string ours_hash = compile_hash(landed, c_landed, "the landed source at " + k.what);
    const std::string their_hash = compile_hash(theirs, c_theirs, k.template_name + " at " + k.what);
    const bool same = ours_hash == their_hash;
    say(fmt::format("  cubin at {} ({}): the landed source {} {} (both compiled as {}.cu: {} / {})", k.what,
                    config_to_compact(c_landed), same ? "=" : "DIFFERS FROM", k.template_name, root,
                    ours_hash.substr(0, 12), their_hash.substr(0, 12)));
    // And under the DB template's own name: the cubin the DB recorded.
    std::optional<std::string> recorded;
    if (k.variant_id)
      if (const auto v = db.variant(*k.variant_id); v && !v->cubin_hash.empty()) recorded = v->cubin_hash;
    if (recorded) {
      // NVRTC, not the cache: the cache's key is the source's text, and the file name is in the cubin.
      CompilerOptions fresh;
      fresh.use_cache = false;
      const Compiler nvrtc(fresh);
      const TemplateSpace as_db = write_as(after, json_after, root, (d / "as_db").string(), k.template_name);
      const CompiledVariant v = nvrtc.compile(compile_request(as_db, in_space_of(as_db, k.config)));
      if (!v.ok) throw LandRefused(fmt::format("the landed source as {} does not compile: {}", k.template_name,
                                               compile_error_line(v.log)));
      const std::string& h = v.cubin_hash;
      say(fmt::format("  cubin at {}: the landed source compiled as {}.cu {} the DB's recorded cubin ({} / {})", k.what,
                      k.template_name, h == *recorded ? "=" : "DIFFERS FROM", h.substr(0, 12), recorded->substr(0, 12)));
      if (h != *recorded && k.template_name == latest.template_name)
        throw LandRefused(fmt::format("the landed source at {} does not give the DB's recorded cubin: nothing written", k.what));
    }
    if (!same && k.template_name == latest.template_name)
      throw LandRefused(fmt::format("the landed source at {} is not {}'s kernel: nothing written", k.what, k.template_name));
  }

  // What changed, then the files.
  for (const auto& [path, text] : after) {
    const auto b = before.find(path);
    const auto [added, removed] = diff_counts(b == before.end() ? "" : b->second, text);
    if (added || removed) r.changed.push_back({path, added, removed});
  }
  {
    const auto [added, removed] = diff_counts(json_before, json_after);
    r.changed.push_back({root + ".json", added, removed});
  }
  const fs::path dest = req.in_place ? fs::path(req.templates_dir) : fs::path(req.out_dir);
  if (req.in_place) {
    for (const auto& c : r.changed)
      write_text_file((dest / c.path).string(), c.path == root + ".json" ? json_after : after.at(c.path));
  } else {
    for (const auto& [path, text] : after) write_text_file((dest / path).string(), text);
    write_text_file((dest / (root + ".json")).string(), json_after);
  }
  r.written_to = dest.string();
  for (const auto& c : r.changed) say(fmt::format("  changed {}: +{} -{} lines", c.path, c.added, c.removed));
  for (const auto& w : r.landed) {
    const ojson space = ojson::parse(w.space_json), defaults = ojson::parse(w.default_json);
    for (const auto& [axis, values] : space.items())
      say(fmt::format("  axis {} {} (idea {}): kept as an axis, default {} (the parent's kernel: configs recorded without "
                      "it compile as before)", axis, values.dump(), w.id, defaults.at(axis).dump()));
  }
  say(fmt::format("wrote {}{}", dest.string(), req.in_place ? " (in place)" : ""));
  return r;
}

}  // namespace attn
