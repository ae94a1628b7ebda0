#include "daemon/next_job.hpp"

#include <algorithm>

namespace attn {

NextJob next_job(const std::vector<bool>& compiled, bool spare_available) {
  for (std::size_t i = 0; i < compiled.size(); ++i)
    if (compiled[i]) return {NextJob::Kind::compiled, i};
  return {spare_available ? NextJob::Kind::spare : NextJob::Kind::wait, 0};
}

std::size_t compiles_to_start(std::size_t compiling, std::size_t waiting, std::size_t threads) {
  const std::size_t cap = kCompiledBacklogPerThread * threads;
  if (compiling >= threads || compiling + waiting >= cap) return 0;
  return std::min(threads - compiling, cap - compiling - waiting);
}

}  // namespace attn
