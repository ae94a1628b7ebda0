// `attn-tuner idea check`: what the daemon does with an idea file before any GPU time, without a GPU
// (docs/ideas.md, "Check an idea"): the daemon's parser (idea_file), the apply and the proposal checks
// (idea_apply: patch, space, NVRTC of the default config, ABI), then what the daemon only finds out on the
// GPU, predicted from the compiles: the default config's cubin byte-identical to the parent's (the control
// config is the parent), and for each config with the idea on, its ptxas performance warnings and spills
// against the parent's build of the same config.
#pragma once
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "gpu/compiler.hpp"
#include "proposer/idea_file.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The exit codes of `attn-tuner idea check`, one per kind of finding; with several findings the smallest
/// code wins. 1 (the tool failed: patch(1) missing, a folder not writable) and 2 (bad usage) are the CLI's.
enum class IdeaCheckCode : int {
  ok = 0,
  bad_input = 3,        ///< the daemon's parser refuses the file (broken: bad_input)
  does_not_apply = 4,   ///< a hunk fails, a file the parent lacks (broken: does_not_apply)
  compile = 5,          ///< NVRTC fails on the default config or a config with the idea on (broken: compile)
  proposal = 6,         ///< the space does not load or the ABI is wrong (broken: proposal)
  default_changed = 7,  ///< the default config's cubin differs from the parent's: the control is not the parent
  slow_build = 8,       ///< ptxas warns of a slow kernel (C7510/C7515/C7520... wgmma serialised) where the parent's
                        ///< build of that config does not
  spills = 9,           ///< a config with the idea on spills more bytes than the parent's build of that config
  already_judged = 10,  ///< the DB judged this idea (its hash) on this suite already and the daemon will skip it:
                        ///< on the same parent, or on an older one without `Retry: yes` (tuner/idea_parent.hpp)
};

/// `c` without the keys `space` lacks (an idea's new axes, a champion's axes the parent does not have), completed
/// with `space`'s defaults: the same config in another template's space.
Config in_space_of(const TemplateSpace& space, const Config& c);

/// The code's name as printed ("ok", "bad_input", ...).
std::string to_string(IdeaCheckCode code);

/// One ptxas diagnostic of an NVRTC log that may predict a slow kernel: its code ("C7520"; "" when it has
/// none) and its text. ptxas 13 prints the wgmma serialisation as an info line with a code:
/// "ptxas info    : (C7510) Potential Performance Loss: wgmma.mma_async instructions are serialized ...".
struct PtxasWarning {
  std::string code;
  std::string text;
  bool operator==(const PtxasWarning&) const = default;
};

/// The ptxas lines of `log` (NVRTC's program log) that carry a code in parentheses ("(C7510)") or say
/// "warning", in order, one per distinct line.
std::vector<PtxasWarning> ptxas_warnings(const std::string& log);

/// Whether `w` predicts a slow kernel: its text says "Potential Performance Loss" (ptxas's wording for wgmma
/// serialisation, C7510 to C7520 and their kin) or it names serialised wgmma.
bool predicts_slow_kernel(const PtxasWarning& w);

/// What `idea check` compiles beyond the default: a config, the reason it is checked, and the parent's config
/// that it is compared with (the same old axes, the new ones dropped).
struct IdeaCheckConfig {
  Config config;       ///< in the idea's space
  std::string what;    ///< "the champion's config with V_LOAD=1", ...
  Config parent;       ///< the parent's config with the same values of its axes
  bool idea_on = true; ///< false: every new value off (it must build the parent's cubin)
};

/// The configs to check for an idea whose installed space is `idea_space`, on top of `base` (a config of
/// the parent: the champion's, or the one given): for each value the idea adds (a new axis' values but its
/// default, a value added to an existing axis) `base` with that value; `base` itself with the idea on when it
/// adds none (a plain code change). When `base` is not the parent's default, also `base` with every new axis
/// at its default (idea_on false). Configs the idea's space refuses are left out.
std::vector<IdeaCheckConfig> idea_check_configs(const TemplateSpace& parent, const TemplateSpace& idea_space,
                                                const Config& base);

/// One finding of a check, in words.
struct IdeaCheckFinding {
  IdeaCheckCode code = IdeaCheckCode::ok;
  std::string message;
};

/// What one config with the idea on shows against the parent's build of the same config.
struct ConfigComparison {
  std::vector<IdeaCheckFinding> failures;
  std::vector<std::string> notes;  ///< lines for people (accepted findings, diagnostics the parent has too)
};

/// The rule for one config with the idea on (`label` names it in the messages), from the two builds: each
/// ptxas diagnostic of `idea` that predicts a slow kernel and that `parent`'s log lacks is slow_build unless
/// its code is in `accepted`; more spill bytes (stores + loads) than `parent` is spills unless "spills" is.
ConfigComparison compare_with_parent(const std::string& label, const CompiledVariant& idea,
                                     const CompiledVariant& parent, const std::set<std::string>& accepted);

/// Everything `idea check` found and printed.
struct IdeaCheckReport {
  std::vector<IdeaCheckFinding> failures;  ///< empty: the idea passes
  std::vector<std::string> lines;          ///< the account, one line each, for people
  /// The exit code: the smallest failure's code, ok when none.
  IdeaCheckCode code() const;
};

/// How to check.
struct IdeaCheckOptions {
  const TemplateSpace* parent = nullptr;  ///< the template the idea is applied to (required)
  /// Configs of the parent to check with the idea on (the champion's, or those given), each with how the
  /// account names it; empty: the parent's default.
  std::vector<std::pair<Config, std::string>> bases;
  std::set<std::string> accepted;         ///< warning codes ("C7520") or "spills" that do not fail the check
  std::string work_dir;                   ///< where the idea is applied (made anew; required)
  /// The ideas judged on the parent's suite (ideas_on_suite), when known: an idea the daemon would skip
  /// (decide_rerun on `judged_parent`, the parent's measured template) is already_judged, and the check stops
  /// there as the daemon does. Null: not checked (no DB).
  const std::vector<IdeaRecord>* judged = nullptr;
  std::string judged_parent, judged_suite;
  /// Values compared with instead of a config's own for the parent's build of a config with the idea on: an idea
  /// that routes a config to another path (EPILOGUE 1 running the EPILOGUE 2 code) is compared with the
  /// parent's build of that path (`--parent-config '{"EPILOGUE": 2}'`). Empty: the same config.
  Config parent_overrides;
};

/// One kind of ptxas's wgmma serialisation message and what usually causes it in a diff (the project's
/// measurements: docs/kernels.md, lab/notebook-gen2.md, the campaigns' ideas). IDEA.md lists these, and the
/// check names the cause of a message it meets.
struct SerialisationPattern {
  const char* codes;    ///< ptxas's codes: "C7520", "C7511 / C7512"
  const char* message;  ///< ptxas's words after "serialized due to"
  const char* match;    ///< the words looked for in a message
  const char* cause;    ///< what in a diff usually causes it, and what to do instead
};

/// The patterns an author met, C7520 first.
const std::vector<SerialisationPattern>& serialisation_patterns();

/// The cause of ptxas's wgmma serialisation message `text` (serialisation_patterns); "" for a message it does not know.
std::string serialisation_cause(const std::string& text);

/// Checks `bytes` (an idea file named `name`) as the daemon would, then the cubins (see the file comment).
/// A bad idea is a finding, never an exception; throws std::runtime_error when `work_dir` cannot be written
/// or patch(1) cannot run, std::invalid_argument without a parent.
IdeaCheckReport check_idea_file(const std::string& name, const std::string& bytes, const IdeaCheckOptions& options,
                                const Compiler& compiler);

}  // namespace attn
