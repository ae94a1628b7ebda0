#include "daemon/next_job.hpp"

namespace attn {

NextJob next_job(const std::vector<bool>& compiled, bool spare_available) {
  for (std::size_t i = 0; i < compiled.size(); ++i)
    if (compiled[i]) return {NextJob::Kind::compiled, i};
  return {spare_available ? NextJob::Kind::spare : NextJob::Kind::wait, 0};
}

}  // namespace attn
