// Applying a queued idea to a parent template (docs/ideas.md): the parent's files under the names the
// repository gives them, the idea's diff through GNU patch (a dry run first: a conflict changes nothing),
// its new axes added to the space, then the proposal checks (space, NVRTC, ABI) and the install.
#pragma once
#include <string>
#include <vector>

#include "db/records.hpp"
#include "gpu/compiler.hpp"
#include "proposer/idea_file.hpp"
#include "proposer/proposal_check.hpp"
#include "tuner/space.hpp"

namespace attn {

/// What became of an idea before any GPU time.
struct IdeaApplied {
  /// none when installed; else does_not_apply (a hunk fails, a file the parent lacks, another template's file),
  /// bad_input (an axis the parent already has), compile (the default config), proposal (the space does not
  /// load, the ABI).
  IdeaBrokenKind broken_kind = IdeaBrokenKind::none;
  std::string reason;   ///< why broken, in words ("" when installed)
  ProposalCheck check;  ///< the proposal checks (description, source, space, headers, diff, the template)
  bool checked = false; ///< whether check_proposal ran
  /// The hunks patch(1) applied elsewhere than their @@ line says or with fuzz (inexact_hunks): applied, but
  /// worth a look (the context it matched may not be the code the author read).
  std::vector<std::string> inexact_hunks;
};

/// An idea's diff applied to a folder.
struct DiffApplied {
  bool ok = true;
  std::string reason;                 ///< why not (a hunk fails, a file the template lacks), in words
  std::vector<std::string> inexact;   ///< inexact_hunks of patch's output
};

/// Applies `idea`'s diff (paths <root>.cu / <root>.json mapped onto `source_name` / `space_name`, headers at their
/// include paths) to the files in `workdir` through GNU patch, a dry run first (a conflict changes nothing);
/// `scratch` holds the patch file. Never throws for a diff that does not apply; throws std::runtime_error when
/// patch(1) cannot run or `scratch` cannot be written.
DiffApplied apply_idea_diff(const IdeaFile& idea, const std::string& root, const std::string& workdir,
                            const std::string& scratch, const std::string& source_name, const std::string& space_name);

/// The lines of GNU patch's output that report a hunk applied at an offset or with fuzz, each prefixed with its
/// file ("blocks/epilogue.cuh: Hunk #2 succeeded at 57 (offset 7 lines)."). Pure.
std::vector<std::string> inexact_hunks(const std::string& patch_output);

/// Applies `idea` to `parent` in `dir` (made anew): `dir`/work holds the parent's files as proposal.cu,
/// proposal.json (name and source of the repository template it descends from) and its headers at their
/// include paths; the diff's paths <root>.cu / <root>.json map onto the first two. The installed template
/// `name` goes to `dir`/template. Never throws for a bad idea; throws std::runtime_error when `dir` cannot
/// be written or patch(1) cannot run.
IdeaApplied apply_idea(const IdeaFile& idea, const TemplateSpace& parent, const std::string& dir,
                       const std::string& name, const Compiler& compiler);

/// A parent template's source as an idea's diff sees it: without the line(s) the daemon appends to a proposal's
/// source when it installs it ("// attn-tuner: template ...").
std::string idea_parent_source(std::string source);

/// Writes `parent`'s files into `dir` (made when missing) under the repository's names, as an idea's diff
/// sees them: <root>.cu (idea_parent_source), <root>.json (named <root>) and every local include at its
/// include path, where <root> is the repository template it descends from. Returns the include paths.
/// Throws std::runtime_error naming the path on I/O errors.
std::vector<std::string> write_idea_parent_files(const TemplateSpace& parent, const std::string& dir);

/// `text` (a template's space JSON) with "name" and "source" set, in the repository's layout
/// (format_template_json). Throws nlohmann::json::exception when it does not parse.
std::string renamed_space_json(const std::string& text, const std::string& name, const std::string& source);

}  // namespace attn
