// `attn-tuner idea`: the idea author's tools, no GPU needed (docs/ideas.md).
//   idea check FILE     what the daemon does with an idea file before any GPU time, and what its cubins predict
//   idea context        the author's kit from a DB: the parent template, the champion, the rules, the ideas
//                       tried, the champion's profile
//   idea import FILES   ideas an agent wrote from a kit outside the daemon, recorded as an idea agent call
//   idea land           a lineage's wins written into the repository template's source, checked
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "proposer/champion_template.hpp"
#include "proposer/idea_check.hpp"
#include "proposer/idea_context.hpp"
#include "proposer/idea_import.hpp"
#include "core/text_file.hpp"
#include "proposer/idea_land.hpp"
#include "proposer/parent_template.hpp"
#include "proposer/temp_dir.hpp"
#include "tuner/idea_parent.hpp"
#include "tuner/proposal_template.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

struct CheckCliOptions {
  std::string file, templates_dir, template_name, db_path, suite, cache_dir, keep_dir, kit_dir, parent_config;
  std::vector<std::string> configs, accept;
  bool no_cache = false;
};

/// The judged ideas of a kit's ideas_tried.tsv on `suite` (the columns idea_hash, suite, parent, verdict): what
/// decide_rerun needs. A kit written before those columns gives none.
std::vector<IdeaRecord> kit_judged(const std::string& kit, const std::string& suite) {
  std::vector<IdeaRecord> out;
  std::istringstream in(read_text_file((fs::path(kit) / "ideas_tried.tsv").string()));
  std::string line;
  std::vector<std::string> head;
  const auto split = [](const std::string& l) {
    std::vector<std::string> f;
    std::size_t a = 0;
    for (std::size_t b; (b = l.find('\t', a)) != std::string::npos; a = b + 1) f.push_back(l.substr(a, b - a));
    f.push_back(l.substr(a));
    return f;
  };
  if (!std::getline(in, line)) return out;
  head = split(line);
  const auto col = [&](const char* name) { return std::find(head.begin(), head.end(), name) - head.begin(); };
  const std::size_t id = col("idea"), hash = col("idea_hash"), s = col("suite"), parent = col("parent"), verdict = col("verdict");
  if (hash >= head.size() || s >= head.size()) return out;
  while (std::getline(in, line)) {
    const auto f = split(line);
    if (f.size() != head.size() || f[s] != suite) continue;
    IdeaRecord r;
    r.id = std::stoll(f[id]);
    r.idea_hash = f[hash];
    r.parent_template = f[parent];
    r.status = IdeaStatus::done;
    r.verdict = parse_idea_verdict(f[verdict]);
    out.push_back(std::move(r));
  }
  return out;
}

void run_check(const CheckCliOptions& o) {
  std::string bytes;
  try {
    bytes = read_text_file(o.file);
  } catch (const std::exception& e) {
    throw CliError(fmt::format("idea check: {}", e.what()));
  }
  if (bytes.size() > kIdeaFileMaxBytes)
    throw CliError(fmt::format("idea check: {} is {} bytes, over the {} the queue reads", o.file, bytes.size(), kIdeaFileMaxBytes));
  if (int(!o.kit_dir.empty()) + int(!o.db_path.empty()) + int(!o.template_name.empty()) > 1)
    throw CliError("idea check: the parent comes from one of --kit, --db and --template");
  const std::string templates = o.templates_dir.empty() ? default_templates_dir() : o.templates_dir;
  const std::string name = fs::path(o.file).filename().string();
  std::string template_root;
  try {  // the daemon's parser first: a file that is not an idea needs no parent
    template_root = parse_idea(name, bytes).template_root;
  } catch (const IdeaInputError& e) {
    fmt::print("FAIL {}: {}\nRESULT {}\n", to_string(IdeaCheckCode::bad_input), e.what(), to_string(IdeaCheckCode::bad_input));
    std::fflush(stdout);
    throw CliExit{static_cast<int>(IdeaCheckCode::bad_input)};
  }
  TempDir tmp("attn-idea-check");

  // The parent: the daemon's (tuner/idea_parent.hpp) from a kit or a DB, else the template named; the config
  // checked with the idea on: the parent's best on the suite (what the daemon tunes the idea from first).
  std::optional<TemplateSpace> parent;
  IdeaCheckOptions opts;
  std::vector<IdeaRecord> judged;
  if (!o.kit_dir.empty()) {
    try {
      const auto pj = nlohmann::json::parse(read_text_file((fs::path(o.kit_dir) / "parent.json").string()));
      const std::string root = pj.at("template_root").get<std::string>();
      parent.emplace(TemplateSpace::load_named((fs::path(o.kit_dir) / "template").string(), root));
      fmt::print("parent: {} from the kit {} ({}), on {}\n", pj.at("template").get<std::string>(), o.kit_dir,
                 pj.at("why").get<std::string>(), pj.at("suite").get<std::string>());
      if (o.configs.empty())
        opts.bases.emplace_back(parent->complete(config_from_json(pj.at("config").dump())),
                                pj.at("iteration").is_null() ? std::string("the parent's default config (parent.json)")
                                                             : fmt::format("the parent's best config (iter {}, parent.json)",
                                                                           pj.at("iteration").get<std::int64_t>()));
      judged = kit_judged(o.kit_dir, pj.at("suite").get<std::string>());
      opts.judged = &judged;
      opts.judged_parent = pj.at("measured").get<std::string>();
      opts.judged_suite = pj.at("suite").get<std::string>();
    } catch (const std::exception& e) {
      throw CliError(fmt::format("idea check: --kit {}: {} (a folder written by `attn-tuner idea context`)", o.kit_dir, e.what()));
    }
  } else if (!o.db_path.empty()) {
    try {
      auto db = ExperimentDb::open(o.db_path, ExperimentDb::Mode::read_only);
      const std::string suite = champion_suite(db, o.suite);
      std::string root = template_root;
      if (root.empty()) {
        const auto champ = db.champion(suite, ChampionScope::overall);
        const auto it = champ ? db.iteration(champ->iteration_id) : std::nullopt;
        if (!it) throw std::invalid_argument(fmt::format("{}: no overall champion on {} and no Template: header", o.db_path, suite));
        root = proposal_root_template(it->template_name);
      }
      ParentTemplate p = load_parent_template(db, suite, root, templates, tmp.path + "/parent");
      fmt::print("parent: {} ({}), on {}\n", p.space.name(), p.rule.why, suite);
      if (o.configs.empty())
        opts.bases.emplace_back(p.config, p.best ? fmt::format("the parent's best config (iter {} of {})", p.best->iter,
                                                               p.rule.measured)
                                                 : std::string("the parent's default config (no whole-suite result)"));
      judged = ideas_on_suite(db.ideas(), db.runs(), suite);
      opts.judged = &judged;
      opts.judged_parent = p.rule.measured;
      opts.judged_suite = suite;
      parent.emplace(std::move(p.space));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: {}", e.what()));
    }
  } else {
    const std::string parent_name = o.template_name.empty() ? template_root : o.template_name;
    if (parent_name.empty())
      throw CliError("idea check: no parent: give the idea a 'Template:' header, or pass --kit KIT, --db DB or --template NAME");
    try {
      parent.emplace(TemplateSpace::load_named(templates, parent_name));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: {}", e.what()));
    }
    fmt::print("parent: template {} ({}); without --kit or --db the configs checked are the JSON default and "
               "--config, not the parent's best\n", parent->name(), parent->source_path());
  }
  for (const auto& json : o.configs) {
    try {
      opts.bases.emplace_back(parent->complete(config_from_json(json)), fmt::format("the config {}", json));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: --config {}: {}", json, e.what()));
    }
  }
  if (!o.parent_config.empty()) {
    try {
      opts.parent_overrides = config_from_json(o.parent_config);
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: --parent-config {}: {}", o.parent_config, e.what()));
    }
  }
  opts.parent = &*parent;
  opts.accepted = {o.accept.begin(), o.accept.end()};
  opts.work_dir = o.keep_dir.empty() ? tmp.path + "/idea" : o.keep_dir;
  CompilerOptions copts;
  copts.cache_dir = o.cache_dir;
  copts.use_cache = !o.no_cache;
  const Compiler compiler(copts);
  const IdeaCheckReport r = check_idea_file(name, bytes, opts, compiler);
  for (const auto& line : r.lines) fmt::print("{}\n", line);
  std::fflush(stdout);
  if (r.code() != IdeaCheckCode::ok) throw CliExit{static_cast<int>(r.code())};
}

struct ContextCliOptions {
  std::string db_path, out, suite, templates_dir, trace_dir, cache_dir;
};

void run_context(const ContextCliOptions& o) {
  const std::string templates = o.templates_dir.empty() ? default_templates_dir() : o.templates_dir;
  if (fs::exists(o.out) && !fs::is_empty(o.out))
    throw CliError(fmt::format("idea context: {} exists and is not empty (the kit goes into a fresh folder)", o.out));
  try {
    auto db = ExperimentDb::open(o.db_path, ExperimentDb::Mode::read_only);
    IdeaContextRequest req;
    req.suite = o.suite;
    req.templates_dir = templates;
    req.trace_dir = o.trace_dir;
    req.cache_dir = o.cache_dir;
    const IdeaContextSummary s = write_idea_context(o.out, db, req);
    fmt::print("{}\n", s.text);
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("idea context: {}", e.what()));
  }
}

struct LandCliOptions {
  std::string db_path, cache_dir;
  LandRequest req;
};

void run_land(LandCliOptions& o) {
  if (o.req.templates_dir.empty()) o.req.templates_dir = default_templates_dir();
  CompilerOptions copts;
  copts.cache_dir = o.cache_dir;
  const Compiler compiler(copts);
  try {
    auto db = ExperimentDb::open(o.db_path, ExperimentDb::Mode::read_only);
    o.req.progress = [](const std::string& line) {
      fmt::print("{}\n", line);
      std::fflush(stdout);
    };
    land_lineage(db, o.req, compiler);
  } catch (const LandRefused& e) {
    throw CliError(fmt::format("idea land: refused: {}", e.what()));
  } catch (const std::invalid_argument& e) {
    throw CliError(fmt::format("idea land: {}", e.what()));
  }
}

struct ImportCliOptions {
  std::string db_path;
  IdeaImportRequest req;
};

void run_import(ImportCliOptions& o) {
  auto db = ExperimentDb::open(o.db_path);
  IdeaImportResult r;
  try {
    r = import_agent_ideas(db, o.req);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  fmt::print("idea agent call {} recorded in {}: {} idea(s){}\n", r.call_id, o.db_path, r.queued_as.size(),
             o.req.queue_dir.empty() ? " (recorded only)" : " queued in " + o.req.queue_dir);
  for (const auto& q : r.queued_as) fmt::print("  {}\n", q);
}

}  // namespace

void add_idea_command(CLI::App& app) {
  auto* idea = app.add_subcommand("idea", "the idea author's tools (docs/ideas.md): check an idea file, write the kit");
  idea->require_subcommand(1);

  auto c = std::make_shared<CheckCliOptions>();
  auto* check = idea->add_subcommand(
      "check", "what the daemon does with an idea file before any GPU time (its parser, the apply, NVRTC, the ABI), "
               "plus the default cubin against the parent's and ptxas warnings and spills of the configs with the "
               "idea on. Exit 0 passes; 3 bad_input, 4 does_not_apply, 5 compile, 6 proposal, 7 default_changed, "
               "8 slow_build, 9 spills (the smallest of the findings), 10 already_judged (the daemon skips it); 1 the "
               "tool failed, 2 bad usage (105-109: an option the parser refuses)");
  check->add_option("file", c->file, "the idea file")->required();
  check->add_option("--templates", c->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source "
                                                     "tree's kernels_templates)");
  check->add_option("--template", c->template_name, "the parent template (default: the idea's Template: header)");
  check->add_option("--kit", c->kit_dir, "a kit written by `idea context`: the parent is its template/, the config "
                                         "checked its parent.json's (the parent's best), and an idea judged already "
                                         "(ideas_tried.tsv) is already_judged");
  check->add_option("--db", c->db_path, "the parent is the daemon's for this DB (tuner/idea_parent.hpp: the latest win "
                                        "of the lineage, or the repository template once it is landed), its best "
                                        "config is checked with the idea on, and an idea judged already is "
                                        "already_judged");
  check->add_option("--suite", c->suite, "with --db: the suite (default: the DB's suite rule)");
  check->add_option("--config", c->configs, "a config of the parent (JSON; parameters it does not name take the "
                                            "parent's default) to check with each new value of the idea on; repeatable "
                                            "(default: the parent's best with --kit or --db, else the parent's JSON "
                                            "default)");
  check->add_option("--parent-config", c->parent_config, "values (JSON) the parent's build is compared at instead of a "
                                                         "config's own, for an idea that routes a config to another "
                                                         "path, e.g. '{\"EPILOGUE\": 2}'");
  check->add_option("--accept-warning", c->accept, "a ptxas code (C7520) or 'spills' that does not fail the check; "
                                                   "repeatable");
  check->add_option("--cache", c->cache_dir, "compile cache folder (default: $ATTN_TUNER_CACHE or ~/.cache/attn-tuner)");
  check->add_flag("--no-cache", c->no_cache, "always run NVRTC, write no cache");
  check->add_option("--keep", c->keep_dir, "apply the idea in this folder and keep it (made anew)");
  check->callback([c] { run_check(*c); });

  auto x = std::make_shared<ContextCliOptions>();
  auto* context = idea->add_subcommand(
      "context", "write the author's kit into a fresh folder: the parent template, the champion's config and "
                 "per-case results, IDEA.md (the format and every limit), the ideas tried, the champion's profile");
  context->add_option("--db", x->db_path, "the experiment DB")->required()->check(CLI::ExistingFile);
  context->add_option("--out", x->out, "the folder to write (new or empty)")->required();
  context->add_option("--suite", x->suite, "the suite whose champion is the parent (default: the only one)");
  context->add_option("--templates", x->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the "
                                                       "source tree's kernels_templates)");
  context->add_option("--trace", x->trace_dir, "a folder of `attn-tuner trace` outputs (*.txt) to put into "
                                               "profile/trace/ (the DB holds no trace)");
  context->add_option("--cache", x->cache_dir, "compile cache folder, where the champion's cubin is looked for or built");
  context->callback([x] { run_context(*x); });

  auto l = std::make_shared<LandCliOptions>();
  auto* land = idea->add_subcommand(
      "land", "write the wins of an idea lineage (the DB's winning diffs, in order) into the repository template's "
              "source, checked: the result must equal the DB's template of each win, file by file, and give its "
              "cubins byte for byte; the new axes stay axes, default the parent's value (docs/ideas.md, \"Land the "
              "wins\"). Prints what it changed; refuses, writing nothing, when the lineage does not apply");
  land->add_option("--db", l->db_path, "the experiment DB")->required()->check(CLI::ExistingFile);
  land->add_option("--suite", l->req.suite, "the suite whose lineage lands (default: the DB's suite rule)");
  land->add_option("--template", l->req.root, "the repository template (default: the root of the suite's champion's)");
  land->add_option("--templates", l->req.templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the "
                                                        "source tree's kernels_templates)");
  auto* out = land->add_option("--out", l->req.out_dir, "write the landed template (its .cu, .json and headers) into "
                                                        "this new folder");
  auto* in_place = land->add_flag("--in-place", l->req.in_place, "write the changed files into the templates folder");
  out->excludes(in_place);
  land->add_option("--cache", l->cache_dir, "compile cache folder for the cubin checks");
  land->callback([l] {
    if (l->req.out_dir.empty() && !l->req.in_place) throw CliError("idea land: --out DIR or --in-place");
    run_land(*l);
  });

  auto m = std::make_shared<ImportCliOptions>();
  auto* import = idea->add_subcommand(
      "import", "record ideas that an agent wrote from a kit outside the daemon as a call of the idea agent (its "
                "kit's files, its ideas; the record `run --idea-agent` leaves), and queue them under their own names");
  import->add_option("files", m->req.files, "the agent's *.idea files")->required();
  import->add_option("--db", m->db_path, "the experiment DB (the call joins its latest run)")->required()->check(CLI::ExistingFile);
  import->add_option("--kit", m->req.kit_dir, "the kit as the agent saw it (`idea context`'s folder)")->required();
  import->add_option("--agent", m->req.agent, "who wrote the ideas and how, e.g. \"helper agent d, softmax focus\"")->required();
  import->add_option("--queue", m->req.queue_dir, "the idea queue (`run --ideas DIR`) to copy them into; without it they "
                                                  "are only recorded (already queued under these names)");
  import->callback([m] { run_import(*m); });
}

}  // namespace attn
