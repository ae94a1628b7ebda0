#include "cli/run_preflight.hpp"

#include <chrono>

#include <fmt/format.h>

#include "cli/commands.hpp"
#include "daemon/gpu_set.hpp"
#include "db/iters_tsv_owner.hpp"
#include "gpu/worker_client.hpp"

namespace attn {

void require_gpu(const RunOptions& o) {
  WorkerCommand cmd = o.worker ? *o.worker : default_worker_command();
  if (!o.gpus.empty()) cmd.env = worker_env_for(o.gpus.front());  // as the loop starts the first GPU's worker
  WorkerClient worker(cmd);
  const HelloResponse hello = worker.hello(std::chrono::seconds(60));
  if (!hello.status.ok())
    throw CliError(fmt::format("run: no usable GPU: the GPU worker did not start ({}: {}); nothing was done to {}",
                               hello.status.name(), hello.status.message, o.db_path));
}

void require_own_tsv(const RunOptions& o) {
  if (const auto why = iters_tsv_not_owned_by_file(tsv_path_of(o), o.db_path)) throw CliError("run: " + *why);
}

}  // namespace attn
