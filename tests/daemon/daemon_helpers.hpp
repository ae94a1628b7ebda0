// Shared by tests/daemon/*.cpp: running the real attn-tuner binary, and a daemon run on the CPU with
// tests/daemon/fake_worker.py as the GPU worker (tests/data/fake_templates/fake.json as the space).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "db/records.hpp"
#include "tests/test_support.hpp"

namespace attn::test {

/// Exit code and stdout + stderr of one command.
struct Output {
  int code = -1;
  std::string text;
};

/// Runs `<env> attn-tuner <args> 2>&1` through the shell.
Output run(const std::string& args, const std::string& env = "");

/// The whole file, "" when it cannot be read.
std::string read_file(const std::string& path);

/// fake.json: 18 healthy configs + 3 of each of 5 fault kinds.
inline constexpr std::size_t kFakeSpace = 33;

/// A temp dir with a DB and iters.tsv for one daemon on suite smoke with the fake worker.
struct Fixture {
  std::string dir = temp_dir("daemon");
  std::string db = dir + "/t.db", tsv = dir + "/iters.tsv";
  /// `run` arguments for this fixture; `extra` goes last.
  std::string args(const std::string& extra = "", const std::string& strategy = "exhaustive") const;
  std::vector<IterationRecord> iterations() const;
  /// Waits until `n` iterations are finished (or `timeout`); returns how many there were.
  std::size_t wait_finished(std::size_t n, double timeout_s) const;
};

}  // namespace attn::test
