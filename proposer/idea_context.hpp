// The idea author's kit (`attn-tuner idea context`, docs/ideas.md): everything a person or an agent needs to
// write the next idea, from the DB alone. The idea agent (`run --idea-agent`) is called in a fresh one, and
// the proposer's working folder holds IDEA.md and the profile too.
//
//   IDEA.md                       the format, every limit (from the parser's constants), what the daemon does,
//                                 what keeps a default cubin byte-identical, NVRTC's limits, the files an idea
//                                 may touch, ideas that stack, how to check one, the exit codes of `idea check`
//   template/                     the parent (tuner/idea_parent.hpp): <root>.cu, <root>.json and its headers,
//                                 as the diff sees them
//   parent.json                   which template the parent is and why, its best config on the suite and its
//                                 top configs (the ones the daemon tunes an idea from first)
//   champion.json                 the champion: suite, iteration, template, config, scores, resources
//   champion_cases.tsv            its per-case results
//   ideas_tried.tsv               every judged idea: verdict, kind, delta and noise vs its parent, reason
//   ideas_tried/<id>_<file>       each of them as an idea file (headers and diff as queued)
//   template/ABI.md               the kernel ABI the host honours (kernels_templates/ABI.md)
//   profile/PROFILE.md            where the champion's time goes: resources, ptxas diagnostics, the SASS mix,
//                                 the trace; at its top what is missing and how to get it
//   profile/compile.log, profile/sass.txt, profile/sass_mix.tsv, profile/trace/
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "tuner/space.hpp"

namespace attn {

/// IDEA.md for ideas on `parent` (its include paths `headers`, its files in the folder `template_dir` of the
/// kit: "template" in `idea context`, "." in the proposer's folder), with the queue's limits and `idea
/// check`'s exit codes filled in from their definitions.
std::string idea_md(const TemplateSpace& parent, const std::vector<std::string>& headers, const std::string& template_dir);

/// `attn-tuner idea context` for the DB at `db_path` and `suite`, into a new folder NEW_KIT. The kit passes the DB's
/// absolute path: its command is read on another machine or in a copied kit.
std::string idea_context_command(const std::string& db_path, const std::string& suite);

/// What the profile is made of.
struct ProfileInput {
  std::string template_name, params;
  std::string kernel = "block_sparse_attn_fwd";  ///< the entry point whose ptxas -v lines are read
  std::string compile_log;                 ///< NVRTC / ptxas log of the champion's build
  std::optional<std::string> cubin_path;   ///< its cubin (for the SASS mix), when there is one
  IterationRecord champion;                ///< for the trace commands: suite, cases, root seed
  std::string trace_dir;                   ///< `attn-tuner trace` outputs (*.txt) to copy; "" none
  std::string templates_arg;               ///< the --templates folder the trace commands name, relative to the kit's root
  /// the command that writes the kit again (PROFILE.md's "Missing here": on a GPU machine it fills in the SASS mix)
  std::string context_command = idea_context_command("DB", "SUITE");
};

/// Writes profile/ into `dir` (PROFILE.md, compile.log, sass.txt and sass_mix.tsv when a disassembler and a
/// cubin are there, trace/ when traces are given). Returns PROFILE.md's text. Never throws for a missing tool,
/// cubin or trace: PROFILE.md says at its top what is missing, why, and how to get it. Throws
/// std::runtime_error on I/O errors.
std::string write_champion_profile(const std::string& dir, const ProfileInput& in);

/// PROFILE.md of the overall champion of `suite` ("": the only one) from the DB alone (the report's Profile
/// section): its variant's compile log and, when its cubin is still at its recorded path, the SASS mix. Throws
/// std::invalid_argument when the DB has no champion.
std::string champion_profile_markdown(ExperimentDb& db, const std::string& suite);

/// The ideas of `ideas` that were judged (status done), as ideas_tried.tsv, with the suite of each one's run
/// (`runs`) and its hash (a verdict holds for its suite; the hash is the idea's identity).
std::string ideas_tried_tsv(const std::vector<IdeaRecord>& ideas, const std::vector<RunRecord>& runs);

/// Idea `i` as an idea file again (its headers and diff as queued).
std::string idea_file_text(const IdeaRecord& i);

/// What `write_idea_context` needs besides the DB.
struct IdeaContextRequest {
  std::string suite;          ///< "" = the only suite with a champion
  std::string templates_dir;  ///< the repository templates
  std::string trace_dir;      ///< `attn-tuner trace` outputs to include; "" none
  std::string cache_dir;      ///< the compile cache ("" the default) where the champion's cubin is built
};

/// What was written.
struct IdeaContextSummary {
  std::string text;                ///< a few lines for people
  std::string parent_template;     ///< the parent's template (tuner/idea_parent.hpp)
  std::int64_t champion_iter = 0;
};

/// Writes the kit into `dir` (made when missing; must be empty). Throws std::invalid_argument for a DB
/// without a champion or an unusable template, std::runtime_error on I/O errors.
IdeaContextSummary write_idea_context(const std::string& dir, ExperimentDb& db, const IdeaContextRequest& request);

}  // namespace attn
