// Which DB an iters.tsv belongs to. A log is one DB's rendering: a run must never rewrite the log of another DB
// (two DBs in one folder, or one `--tsv` given to runs on two DBs), since that log may be the only readable copy
// its user has at hand. The rule reads the file's first iteration line, not a record kept elsewhere: a log
// belongs to a DB when it holds nothing yet (missing, empty, or only the header) or when its first iteration is
// that DB's first finished iteration, as render_row writes it. A log truncated or appended to by its own DB stays
// its own; a file whose first line is not the header is no log at all and is never rewritten.
#pragma once
#include <optional>
#include <string>

namespace attn {

class ExperimentDb;

/// The iters.tsv of the DB at `db_path` when `run --tsv` names none: beside the DB, named after it, so that two
/// DBs in one folder have two logs: "runs/attn-tuner.db" -> "runs/attn-tuner.iters.tsv" (the DB's extension,
/// whatever it is, replaced; a name without one gets ".iters.tsv" appended).
std::string default_iters_tsv_path(const std::string& db_path);

/// Why the file at `tsv_path` is not the log of a DB whose first finished iteration renders as `first_line`
/// ("" for a DB without one), or nullopt when it is (the rule above). The reason names the file, what it holds
/// and what to do ("--tsv"). Reads the file's first two lines only; a file that cannot be read is left to the
/// writer's own error.
std::optional<std::string> iters_tsv_not_owned(const std::string& tsv_path, const std::string& first_line);

/// The same for the DB `db` (its first finished iteration rendered).
std::optional<std::string> iters_tsv_not_owned(const std::string& tsv_path, ExperimentDb& db);

/// The same for the DB file at `db_path`, read-only; a DB not there yet has no iteration. `run` asks this before
/// it creates or changes anything. A DB that cannot be read here (e.g. an older schema that `run` migrates) is
/// not judged: nullopt, and the writer's own check judges it once the run has opened the DB.
std::optional<std::string> iters_tsv_not_owned_by_file(const std::string& tsv_path, const std::string& db_path);

}  // namespace attn
