// `attn-tuner idea land` (docs/ideas.md, "Land the wins"): the wins of an idea lineage written into the
// repository template's source, checked, not trusted.
//
// The rule for a win's new axes: each stays an axis, its default the parent's value (the idea's Default). The
// JSON default is the one default of a parameter (TemplateSpace::complete): a config recorded before the axis
// existed, completed, must compile to the kernel it was measured as. The research DB holds 86,219 rows of
// fa3_tma without V_UNPACK or EPI_LEAN, quick's sliding_window champion among them (iter 50667, exported); a
// default of 1 would make every one of them another kernel, and export would refuse it (its recompiled cubin
// differs). Removing the off branch is not possible for the same reason (those rows use it). The champion's
// values are in its config, as for every other axis; `idea context` and `idea check` start from that config.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "db/store.hpp"
#include "gpu/compiler.hpp"

namespace attn {

/// What to land.
struct LandRequest {
  std::string suite;          ///< "" = the DB's suite rule (champion_suite)
  std::string root;           ///< the repository template; "" = the root of the suite's overall champion's template
  std::string templates_dir;  ///< the repository templates
  std::string out_dir;        ///< where the landed template goes (made; must be new or empty) unless in_place
  bool in_place = false;      ///< write the changed files into templates_dir
  /// Called with each line of the account as it is said (LandResult::lines), so that a refusal shows the steps
  /// before it; none: only collected.
  std::function<void(const std::string&)> progress;
};

/// One file the landing changed.
struct LandedFileChange {
  std::string path;  ///< relative to the templates folder
  int added = 0, removed = 0;
};

/// What `idea land` did.
struct LandResult {
  std::vector<IdeaRecord> landed;            ///< the wins written, oldest first (empty: nothing to land)
  std::vector<LandedFileChange> changed;     ///< files that differ from the repository's
  std::vector<std::string> lines;            ///< the account, for people
  std::string written_to;                    ///< the folder written ("" when nothing was)
};

/// A landing the DB's lineage does not allow (it does not apply to the current source, a file or the space comes
/// out other than the DB's template, a cubin differs): nothing is written.
struct LandRefused : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Lands the wins of the lineage of `request.root` on the suite not yet in its source (tuner/idea_parent.hpp),
/// oldest first: each diff applied to the repository's files (GNU patch), its new axes added (default: the
/// parent's value, the file comment), then the result compared with the DB's template of that win, file by file
/// and axis by axis. Then the cubins: the latest win's best config on the suite and the suite's overall champion's
/// config (when its template descends from the lineage) compiled from the landed source and from the DB's
/// template under one file name (<root>.cu) must be byte-identical, and the landed source compiled under the
/// champion template's name must give the champion's recorded cubin (variants.cubin_hash) where its code is the
/// lineage's. Throws LandRefused (nothing written) when the lineage does not apply or a check fails,
/// std::invalid_argument for a DB without a champion or an unknown template, std::runtime_error on I/O errors.
LandResult land_lineage(ExperimentDb& db, const LandRequest& request, const Compiler& compiler);

}  // namespace attn
