// `attn-tuner idea`: the idea author's tools, no GPU needed (docs/ideas.md).
//   idea check FILE     what the daemon does with an idea file before any GPU time, and what its cubins predict
//   idea context        the author's kit from a DB: the parent template, the champion, the rules, the ideas
//                       tried, the champion's profile
//   idea import FILES   ideas an agent wrote from a kit outside the daemon, recorded as an idea agent call
#include <unistd.h>

#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "core/templates_dir.hpp"
#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "proposer/champion_template.hpp"
#include "proposer/idea_check.hpp"
#include "proposer/idea_context.hpp"
#include "proposer/idea_import.hpp"
#include "core/text_file.hpp"

namespace attn {
namespace fs = std::filesystem;
namespace {

/// A temporary folder, removed with its contents on destruction.
struct TempDir {
  std::string path;
  explicit TempDir(const char* prefix) {
    std::string t = fmt::format("/tmp/{}-XXXXXX", prefix);
    if (!::mkdtemp(t.data())) throw std::runtime_error("idea: cannot make a temporary folder in /tmp");
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

struct CheckCliOptions {
  std::string file, templates_dir, template_name, db_path, suite, cache_dir, keep_dir;
  std::vector<std::string> configs, accept;
  bool no_cache = false;
};

void run_check(const CheckCliOptions& o) {
  std::string bytes;
  try {
    bytes = read_text_file(o.file);
  } catch (const std::exception& e) {
    throw CliError(fmt::format("idea check: {}", e.what()));
  }
  if (bytes.size() > kIdeaFileMaxBytes)
    throw CliError(fmt::format("idea check: {} is {} bytes, over the {} the queue reads", o.file, bytes.size(), kIdeaFileMaxBytes));
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

  // The parent: the DB's champion (its lineage, written out of the DB), else the template named.
  std::optional<TemplateSpace> parent;
  IdeaCheckOptions opts;
  if (!o.db_path.empty()) {
    try {
      auto db = ExperimentDb::open(o.db_path, ExperimentDb::Mode::read_only);
      ChampionTemplate c = load_champion_template(db, o.suite, templates, tmp.path + "/parent");
      fmt::print("parent: the champion of {} on {}: iteration {}, template {} ({})\n", o.db_path, c.suite,
                 c.champion.iter, c.space.name(), c.champion.params);
      if (o.configs.empty()) opts.bases.emplace_back(c.config, fmt::format("the champion's config (iter {})", c.champion.iter));
      parent.emplace(std::move(c.space));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: {}", e.what()));
    }
  } else {
    const std::string parent_name = o.template_name.empty() ? template_root : o.template_name;
    if (parent_name.empty())
      throw CliError("idea check: no parent: give the idea a 'Template:' header, or pass --template NAME or --db DB");
    try {
      parent.emplace(TemplateSpace::load_named(templates, parent_name));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: {}", e.what()));
    }
    fmt::print("parent: template {} ({})\n", parent->name(), parent->source_path());
  }
  for (const auto& json : o.configs) {
    try {
      opts.bases.emplace_back(parent->complete(config_from_json(json)), fmt::format("the config {}", json));
    } catch (const std::invalid_argument& e) {
      throw CliError(fmt::format("idea check: --config {}: {}", json, e.what()));
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
               "8 slow_build, 9 spills (the smallest of the findings); 1 the tool failed, 2 bad usage");
  check->add_option("file", c->file, "the idea file")->required();
  check->add_option("--templates", c->templates_dir, "templates folder (default: $ATTN_TUNER_TEMPLATES or the source "
                                                     "tree's kernels_templates)");
  check->add_option("--template", c->template_name, "the parent template (default: the idea's Template: header)");
  check->add_option("--db", c->db_path, "the parent is this DB's overall champion (its lineage, as the daemon and "
                                        "export read it) and its config is checked with the idea on");
  check->add_option("--suite", c->suite, "with --db: the suite whose champion is the parent");
  check->add_option("--config", c->configs, "a config of the parent (JSON; parameters it does not name take the "
                                            "parent's default) to check with each new value of the idea on; repeatable "
                                            "(default: the champion's with --db, else the parent's default)");
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
