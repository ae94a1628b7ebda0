// The live progress of a run for `attn-tuner status` (docs/daemon.md, "Files beside the DB"): <db>.status.json, what
// is in flight and the run's limits (the DB holds the iterations), replaced atomically.
#pragma once
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

namespace attn::tuning {

/// Thread-safe: one lock, held while the file is written (any GPU's thread writes it).
class StatusFile {
 public:
  explicit StatusFile(std::string path) : path_(std::move(path)) {}
  /// Replaces the file with `j` (through <path>.tmp and a rename; close-on-exec: no child of the daemon keeps it). A
  /// file that cannot be written is left as it was.
  void write(const nlohmann::json& j);

 private:
  const std::string path_;
  std::mutex mu_;
};

}  // namespace attn::tuning
