// The status file (daemon/status_file.hpp).
#include "daemon/status_file.hpp"

#include <cstdio>

namespace attn::tuning {

void StatusFile::write(const nlohmann::json& j) {
  const std::string text = j.dump(2), tmp = path_ + ".tmp";
  std::lock_guard lock(mu_);
  if (FILE* f = std::fopen(tmp.c_str(), "we")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
    std::rename(tmp.c_str(), path_.c_str());
  }
}

}  // namespace attn::tuning
