// Helpers for the tuner tests: template spaces written to temp files, and a driver that plays the
// daemon's loop (propose, score, record, promote when strictly better) against a synthetic score.
#pragma once
#include <cstdint>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "tests/test_support.hpp"
#include "tuner/strategy.hpp"

namespace attn::test {

/// Writes <dir>/<name>.json with `json` and an empty <name>.cu beside it; returns the json path.
inline std::string write_space(const std::string& dir, const std::string& name, const std::string& json) {
  const std::string path = dir + "/" + name + ".json";
  std::ofstream(path) << json;
  std::ofstream(dir + "/" + name + ".cu") << "// test template\n";
  return path;
}

/// A space JSON with the given "parameters" and "constraints" bodies and "default" object.
inline std::string space_json(const std::string& name, const std::string& parameters, const std::string& constraints,
                              const std::string& default_config) {
  return "{\"name\": \"" + name + "\", \"source\": \"" + name +
         ".cu\", \"kernel\": \"block_sparse_attn_fwd\", \"description\": \"test space\",\n"
         " \"parameters\": {" + parameters + "},\n \"constraints\": [" + constraints + "],\n \"default\": " +
         default_config + "}";
}

/// A 4-parameter tile space (BLOCK_M, BLOCK_N, WARPS, STAGES; raw 108, about 40 valid) with three
/// constraints; tile_valid is the same rule in C++.
inline bool tile_valid(std::int64_t m, std::int64_t n, std::int64_t w, std::int64_t s) {
  return m % (16 * w) == 0 && m * n * s <= 128 * 128 * 2 && (s >= 2 || n <= 64);
}
inline TemplateSpace tile_space(const std::string& dir) {
  const char* params =
      R"("BLOCK_M": {"values": [64, 128, 192], "doc": "query rows per CTA"},
         "BLOCK_N": {"values": [32, 64, 128]},
         "WARPS": {"values": [2, 4, 8]},
         "STAGES": {"values": [1, 2, 3, 4]})";
  const char* constraints =
      R"({"expr": "BLOCK_M % (16*WARPS) == 0", "why": "each warp owns 16-row slices"},
         {"expr": "BLOCK_M * BLOCK_N * STAGES <= 128*128*2", "why": "smem budget"},
         {"expr": "STAGES >= 2 || BLOCK_N <= 64", "why": "one stage only for small tiles"})";
  return TemplateSpace::load(write_space(
      dir, "tile", space_json("tile", params, constraints, R"({"BLOCK_M": 128, "BLOCK_N": 64, "WARPS": 4, "STAGES": 2})")));
}

/// The tile space after it gained a parameter: SOFTMAX (values 0, 1, 2; default 0, the value a config
/// recorded before it existed had; 1 and 2 need STAGES >= 3).
inline TemplateSpace grown_tile_space(const std::string& dir) {
  const char* params =
      R"("BLOCK_M": {"values": [64, 128, 192]}, "BLOCK_N": {"values": [32, 64, 128]}, "WARPS": {"values": [2, 4, 8]},
         "STAGES": {"values": [1, 2, 3, 4]}, "SOFTMAX": {"values": [0, 1, 2]})";
  const char* constraints =
      R"({"expr": "BLOCK_M % (16*WARPS) == 0"}, {"expr": "BLOCK_M * BLOCK_N * STAGES <= 128*128*2"},
         {"expr": "STAGES >= 2 || BLOCK_N <= 64"}, {"expr": "SOFTMAX == 0 || STAGES >= 3"})";
  return TemplateSpace::load(write_space(
      dir, "tile",
      space_json("tile", params, constraints, R"({"BLOCK_M": 128, "BLOCK_N": 64, "WARPS": 4, "STAGES": 2, "SOFTMAX": 0})")));
}

/// Score of a config in ms, or nullopt for a config that "fails" (compile error, crash).
using ScoreFn = std::function<std::optional<double>(const Config&)>;

struct DriveResult {
  std::vector<Proposal> proposals;
  double best_ms = 1e300;               ///< best score seen
  std::optional<std::size_t> evals_to;  ///< evaluations until `target_ms` was first reached
};

/// Runs `strategy` for at most `budget` evaluations (or until it is exhausted, or `target_ms` is
/// reached when given); every proposal is recorded with iteration ids 1, 2, ... and promoted when
/// strictly better than the champion.
inline DriveResult drive(Strategy& strategy, SearchState& state, const ScoreFn& score, std::size_t budget,
                         std::optional<double> target_ms = std::nullopt) {
  DriveResult r;
  for (std::size_t i = 0; i < budget; ++i) {
    auto p = strategy.next(state);
    if (!p) break;
    r.proposals.push_back(*p);
    const auto iter = static_cast<std::int64_t>(state.results().size() + 1);
    const auto s = score(p->config);
    if (!s) {
      state.record(p->config, Outcome::failed(iter, "synthetic failure"));
      continue;
    }
    state.record(p->config, Outcome::success(iter, *s));
    const auto champ = state.champion();
    if (!champ || *s < champ->score_ms) state.set_champion(p->config);
    r.best_ms = std::min(r.best_ms, *s);
    if (target_ms && *s <= *target_ms) {
      r.evals_to = i + 1;
      break;
    }
  }
  return r;
}

}  // namespace attn::test
