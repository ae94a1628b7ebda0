// What `run` checks before it does any work (issue 48): before the tuning loop is constructed, that is before the DB
// is created or migrated, the champions are compiled again, iters.tsv is rebuilt or a proposal folder is written.
// Each check throws CliError (exit 2) naming the problem, and leaves nothing behind.
#pragma once
#include "daemon/tuning_loop.hpp"

namespace attn {

/// The worker the run would start first (RunOptions::worker or this binary's `worker`, with the environment of the
/// first GPU of --gpus) must start and answer its hello within 60 s: without a GPU it answers an error, which is
/// the message. Starts that worker and stops it again.
void require_gpu(const RunOptions& options);

/// The run's iters.tsv (tsv_path_of) must be this DB's log or none yet (db/iters_tsv_owner.hpp): a run on a new DB
/// never overwrites another DB's log.
void require_own_tsv(const RunOptions& options);

}  // namespace attn
