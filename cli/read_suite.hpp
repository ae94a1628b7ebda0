// The suite of a read command (status, query top / proposals / csv, report, replay, export): the rule of
// db/suite_choice.hpp, and its note printed the same way by every command.
#pragma once
#include <string>

#include "db/suite_choice.hpp"

namespace attn {

class ExperimentDb;

/// resolve_suite(db, explicit_suite), its errors as CliError (exit 2). A note (a suite picked among several) is
/// printed at once as the command's first line: on stdout, or on stderr when `machine_readable` (JSON, TSV or CSV
/// on stdout stays parseable).
SuiteChoice choose_read_suite(ExperimentDb& db, const std::string& explicit_suite, bool machine_readable);

}  // namespace attn
