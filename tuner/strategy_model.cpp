// Model strategy: a random-forest surrogate (dlib's random_forest_regression_trainer, Debian libdlib-dev)
// trained on the evaluated configs ranks unseen ones; it proposes the best predicted, with some random
// exploration. Features: each parameter's value index scaled to [0, 1], plus registers / shared memory /
// spilled bytes from the compile report when the state knows them (ConfigResources).
#include <dlib/random_forest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "tuner/strategy.hpp"

namespace attn {
namespace {

using Sample = dlib::matrix<double, 0, 1>;
using Forest = dlib::random_forest_regression_function<dlib::dense_feature_extractor>;

class ModelStrategy final : public Strategy {
 public:
  ModelStrategy(std::uint64_t seed, ModelOptions o) : rng_(seed), seed_(seed), o_(o) {}

  std::optional<Proposal> next(const SearchState& state) override {
    if (state.unseen_count() == 0) return std::nullopt;
    const auto& def = state.space().default_config();
    if (!state.seen(def) && !state.space().check(def)) return Proposal{def, "template default (start of model search)"};
    std::size_t ok = 0;
    for (const auto& [c, o] : state.results()) ok += o.ok() ? 1 : 0;
    std::uniform_real_distribution<double> coin(0, 1);
    if (ok < o_.initial || coin(rng_) < o_.explore) {
      auto c = detail::random_unseen(state, rng_);
      if (!c) return std::nullopt;
      return Proposal{*c, ok < o_.initial ? fmt::format("random sample {} of {} before the first model", ok + 1, o_.initial)
                                          : "random sample (model exploration)"};
    }
    train(state);
    const auto candidates = pick_candidates(state);
    if (candidates.empty()) return std::nullopt;
    std::size_t best = 0;
    double best_pred = 0;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const double p = predict(state, candidates[i]);
      if (i == 0 || p < best_pred) best = i, best_pred = p;
    }
    const auto& ranked = state.ranked();
    return Proposal{candidates[best],
                    fmt::format("model: predicted {:.4f} ms (best seen {:.4f} ms; {} candidates, {} trees on {} results)",
                                std::exp(best_pred), ranked.empty() ? 0.0 : *ranked.front().second.score_ms,
                                candidates.size(), o_.trees, trained_on_)};
  }
  std::string name() const override { return "model"; }

 private:
  std::mt19937_64 rng_;
  std::uint64_t seed_;
  ModelOptions o_;
  std::size_t trained_on_ = 0;  // results the forests were last trained on
  std::optional<Forest> params_forest_, resources_forest_;

  /// Parameter value indices scaled to [0, 1], in parameters() order; resources appended when given.
  static Sample features(const SearchState& state, const Config& c, const ConfigResources* r) {
    const auto& params = state.space().parameters();
    const auto idx = state.space().indices_of(c);
    Sample s(static_cast<long>(params.size() + (r ? 3 : 0)));
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double n = static_cast<double>(params[i].values.size());
      s(long(i)) = idx && n > 1 ? static_cast<double>((*idx)[i]) / (n - 1) : 0.0;
    }
    if (r) {
      const long k = static_cast<long>(params.size());
      s(k) = r->registers / 255.0, s(k + 1) = r->smem_bytes / 232448.0, s(k + 2) = std::log1p(r->spill_bytes);
    }
    return s;
  }

  /// Retrains when the results grew by an eighth since the last training (every result at first).
  void train(const SearchState& state) {
    const std::size_t n = state.results().size();
    if (params_forest_ && n < trained_on_ + std::max<std::size_t>(1, trained_on_ / 8)) return;
    trained_on_ = n;
    // Target: log score; a failed config gets twice the worst score, so the model learns to avoid it.
    double worst = 0;
    for (const auto& [c, o] : state.results())
      if (o.ok() && state.space().indices_of(c)) worst = std::max(worst, *o.score_ms);
    const double fail_target = std::log(std::max(worst, 1e-9) * 2);
    std::vector<Sample> xp, xr;
    std::vector<double> yp, yr;
    for (const auto& [c, o] : state.results()) {
      if (!state.space().indices_of(c)) continue;  // from an older space: no features
      const double y = o.ok() ? std::log(*o.score_ms) : fail_target;
      xp.push_back(features(state, c, nullptr));
      yp.push_back(y);
      if (const auto* r = state.resources(c)) {
        xr.push_back(features(state, c, r));
        yr.push_back(y);
      }
    }
    params_forest_ = fit(xp, yp);
    resources_forest_.reset();
    if (xr.size() >= o_.initial) resources_forest_ = fit(xr, yr);
  }

  Forest fit(const std::vector<Sample>& x, const std::vector<double>& y) const {
    dlib::random_forest_regression_trainer<dlib::dense_feature_extractor> trainer;
    trainer.set_num_trees(o_.trees);
    trainer.set_min_samples_per_leaf(3);
    trainer.set_seed(std::to_string(seed_));
    return trainer.train(x, y);
  }

  /// Predicted log score: the resources forest when the config's compile report is known.
  double predict(const SearchState& state, const Config& c) const {
    if (const auto* r = state.resources(c); r && resources_forest_) return (*resources_forest_)(features(state, c, r));
    return (*params_forest_)(features(state, c, nullptr));
  }

  /// Every unseen valid config when there are at most o_.candidates, else that many distinct random ones.
  std::vector<Config> pick_candidates(const SearchState& state) {
    std::vector<Config> out;
    const auto& valid = state.valid_configs();
    if (state.unseen_count() <= o_.candidates) {
      for (const auto& c : valid)
        if (!state.seen(c)) out.push_back(c);
      return out;
    }
    std::set<std::size_t> picked;
    std::uniform_int_distribution<std::size_t> any(0, valid.size() - 1);
    for (std::size_t tries = 0; out.size() < o_.candidates && tries < 20 * o_.candidates; ++tries) {
      const std::size_t i = any(rng_);
      if (!state.seen(valid[i]) && picked.insert(i).second) out.push_back(valid[i]);
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Strategy> make_model_strategy(std::uint64_t seed, ModelOptions options) {
  return std::make_unique<ModelStrategy>(seed, options);
}

}  // namespace attn
