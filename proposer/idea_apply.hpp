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
};

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
