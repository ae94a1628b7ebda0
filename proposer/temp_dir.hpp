// A temporary folder for one command's scratch files (`idea check`, `idea land`): made under the system's temporary
// folder, removed with its contents when it goes out of scope.
#pragma once
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace attn {

/// mkdtemp(<tmp>/<prefix>-XXXXXX); throws std::runtime_error when it cannot be made. Not copyable.
struct TempDir {
  std::string path;
  explicit TempDir(const std::string& prefix) {
    std::string t = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("cannot make a temporary folder " + t);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace attn
