// An experiment DB for the export tests: one run of a suite (built-in or given cases), fa2_mma variants
// with cubin files, iterations with per-case medians, and champions.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "tests/export/helpers.hpp"
#include "tuner/space.hpp"
#include "workload/case_spec.hpp"

namespace attn::test {

/// `c` with the given defines changed.
Config with(Config c, const std::map<std::string, std::int64_t>& changes);

/// Fake cubin bytes, 777 + salt long.
std::vector<std::uint8_t> fake_cubin(int salt);

class ExportDb {
 public:
  /// A run of built-in suite `suite` (its cases stored as suite_json).
  explicit ExportDb(const std::string& suite = "full");
  /// A run of suite `suite` with these cases (a manifest suite).
  ExportDb(const std::string& suite, std::vector<CaseSpec> cases);

  std::string path() const { return dir_ + "/attn-tuner.db"; }
  std::string dir() const { return dir_; }
  ExperimentDb& db() { return db_; }
  const std::vector<CaseSpec>& cases() const { return cases_; }

  /// Per-case median in ms; nullopt: the case failed (passed false, no median).
  using Latency = std::function<std::optional<double>(const CaseSpec&)>;
  /// A whole-suite iteration of fa2_mma at `config` (status keep unless given) whose cubin file holds
  /// `cubin` (empty: no file, the path still recorded); `latency(case)` gives each case's median.
  /// Returns the iteration number.
  std::int64_t add_iteration(const Config& config, const std::vector<std::uint8_t>& cubin, const Latency& latency,
                             const std::string& content_hash = "", bool compile_ok = true,
                             IterationStatus status = IterationStatus::keep);

  void champion(ChampionScope scope, std::int64_t iter, double score = 1.0);

 private:
  std::string dir_;
  ExperimentDb db_;
  std::string suite_;
  std::vector<CaseSpec> cases_;
  std::int64_t run_id_ = 0;
};

/// `attn-tuner export ARGS` (the built binary), output and exit status.
CommandResult export_cli(const std::string& args);

/// The static checker (check_submission_py) on an exported folder; expects exit status 0 and returns its
/// JSON report. DECODED_DIR (may be "") receives the decoded cubins.
nlohmann::json check_submission_dir(const std::string& dir, const std::string& decoded_dir = "");

}  // namespace attn::test
