// The suite a read command works on: one rule for status, query (top, proposals, csv), report, replay and
// export (README.md, "The suite of a read command").
#pragma once
#include <string>
#include <vector>

#include "db/records.hpp"

namespace attn {

class ExperimentDb;

/// The suite a read command reads, and what it tells the user about the choice.
struct SuiteChoice {
  std::string suite;
  /// Empty unless the suite was picked among several (no --suite): then the line the command prints first,
  /// naming the other suites and their runs, e.g. "suite quick (the latest run's, run 8); also in this DB: full
  /// (runs 1-7); --suite picks another".
  std::string note;
};

/// The rule: an explicit suite (--suite, non-empty) wins; else the only suite of the DB's runs; else, with
/// several, the suite of the latest run (the highest run id), with a note. `runs` as ExperimentDb::runs()
/// returns them (any order). Throws std::invalid_argument when there is no run, or when the explicit suite has no
/// run (the message names the suites there with their runs).
SuiteChoice resolve_suite(const std::vector<RunRecord>& runs, const std::string& explicit_suite);
/// The same on the runs of `db`; the messages name db.path().
SuiteChoice resolve_suite(ExperimentDb& db, const std::string& explicit_suite);

/// "full (runs 1-7), quick (run 8)": each suite of `runs` with its run ids (ranges of consecutive ids), in
/// order of first appearance.
std::string suites_with_runs(const std::vector<RunRecord>& runs);

}  // namespace attn
