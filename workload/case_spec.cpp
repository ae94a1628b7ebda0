// CaseSpec rules, manifest JSON and the built-in suites (harness cases.py / spec.py).
#include "workload/case_spec.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xxhash.h>

namespace attn {
namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::invalid_argument(msg); }

// Field names of the harness's CaseSpec dataclass, in its declaration order.
constexpr const char* kFields[] = {"case_id",          "family",          "batch_size",
                                   "num_heads",        "t_max",           "window_blocks",
                                   "global_blocks",    "retrieval_blocks", "retrieval_local_bias",
                                   "seq_len_min_ratio", "seed",            "profile"};
constexpr const char* kRequired[] = {"case_id", "family", "batch_size", "num_heads", "t_max", "window_blocks"};

std::string where(const nlohmann::json& j) {
  if (j.is_object() && j.contains("case_id") && j["case_id"].is_string())
    return fmt::format("case '{}'", j["case_id"].get<std::string>());
  return "manifest item";
}

std::int64_t get_int(const nlohmann::json& j, const char* field, std::int64_t lo, std::int64_t hi) {
  const auto& v = j.at(field);
  // JSON integers only (5, not 5.0 or "5"): the harness would pass a float on and fail much later.
  if (!v.is_number_integer())
    fail(fmt::format("{}: field '{}' must be an integer, got {}", where(j), field, v.dump()));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    fail(fmt::format("{}: field '{}' = {} is out of range", where(j), field, v.dump()));
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) fail(fmt::format("{}: field '{}' = {} is out of range [{}, {}]", where(j), field, x, lo, hi));
  return x;
}

double get_double(const nlohmann::json& j, const char* field) {
  const auto& v = j.at(field);
  if (!v.is_number()) fail(fmt::format("{}: field '{}' must be a number, got {}", where(j), field, v.dump()));
  return v.get<double>();
}

std::string get_string(const nlohmann::json& j, const char* field) {
  const auto& v = j.at(field);
  if (!v.is_string()) fail(fmt::format("{}: field '{}' must be a string, got {}", where(j), field, v.dump()));
  return v.get<std::string>();
}

CaseSpec make(const char* id, Family f, int b, int h, int t, int w, int g, int r, double bias, double ratio,
              const char* profile) {
  CaseSpec c;
  c.case_id = id;
  c.family = f;
  c.batch_size = b;
  c.num_heads = h;
  c.t_max = t;
  c.window_blocks = w;
  c.global_blocks = g;
  c.retrieval_blocks = r;
  c.retrieval_local_bias = bias;
  c.seq_len_min_ratio = ratio;
  c.profile = profile;
  return c;
}

constexpr Family W = Family::sliding_window, G = Family::sliding_window_global, R = Family::sliding_window_retrieval;

// cases.py _smoke_suite, with its seeds.
std::vector<CaseSpec> smoke_suite() {
  std::vector<CaseSpec> s = {
      make("smoke-window-1", W, 1, 2, 256, 2, 0, 0, 0.7, 0.625, "smoke"),
      make("smoke-global-1", G, 1, 2, 384, 2, 1, 0, 0.7, 0.625, "smoke"),
      make("smoke-retrieval-1", R, 1, 2, 512, 2, 0, 2, 0.7, 0.625, "smoke"),
  };
  s[0].seed = 11, s[1].seed = 22, s[2].seed = 33;
  return s;
}

// cases.py _local_dev_suite, with its seeds.
std::vector<CaseSpec> local_dev_suite() {
  std::vector<CaseSpec> s = {
      make("local-window-1", W, 1, 4, 512, 4, 0, 0, 0.7, 0.625, "local-dev"),
      make("local-window-2", W, 2, 4, 768, 3, 0, 0, 0.7, 0.625, "local-dev"),
      make("local-global-1", G, 1, 4, 640, 4, 2, 0, 0.7, 0.625, "local-dev"),
      make("local-global-2", G, 2, 4, 896, 3, 1, 0, 0.7, 0.625, "local-dev"),
      make("local-retrieval-1", R, 1, 4, 768, 3, 0, 2, 0.7, 0.625, "local-dev"),
      make("local-retrieval-2", R, 2, 4, 1024, 4, 0, 3, 0.7, 0.625, "local-dev"),
  };
  const std::int64_t seeds[] = {101, 102, 201, 202, 301, 302};
  for (std::size_t i = 0; i < s.size(); ++i) s[i].seed = seeds[i];
  return s;
}

// cases.py _quick_suite (seeds derived later).
std::vector<CaseSpec> quick_suite() {
  return {
      make("quick-window-1", W, 1, 16, 4096, 4, 0, 0, 0.7, 0.625, "quick"),
      make("quick-global-1", G, 1, 16, 4096, 4, 1, 0, 0.7, 0.625, "quick"),
      make("quick-retrieval-1", R, 1, 16, 4096, 4, 0, 2, 0.75, 0.625, "quick"),
  };
}

// cases.py _full_suite.
std::vector<CaseSpec> full_suite() {
  return {
      make("full-window-1", W, 2, 16, 8192, 4, 0, 0, 0.7, 0.625, "full"),
      make("full-window-2", W, 2, 16, 8192, 6, 0, 0, 0.7, 0.75, "full"),
      make("full-window-3", W, 2, 16, 8192, 8, 0, 0, 0.7, 1.0, "full"),
      make("full-global-1", G, 2, 16, 8192, 4, 1, 0, 0.7, 0.625, "full"),
      make("full-global-2", G, 2, 16, 8192, 5, 2, 0, 0.7, 0.75, "full"),
      make("full-global-3", G, 2, 16, 8192, 7, 4, 0, 0.7, 1.0, "full"),
      make("full-retrieval-1", R, 2, 16, 8192, 4, 0, 2, 0.8, 0.625, "full"),
      make("full-retrieval-2", R, 2, 16, 8192, 5, 0, 3, 0.5, 0.75, "full"),
      make("full-retrieval-3", R, 2, 16, 8192, 7, 0, 4, 0.2, 1.0, "full"),
  };
}

// cases.py _broad_suite.
std::vector<CaseSpec> broad_suite() {
  return {
      make("broad-window-1", W, 1, 16, 4096, 4, 0, 0, 0.7, 0.625, "broad"),
      make("broad-window-2", W, 2, 16, 8192, 6, 0, 0, 0.7, 0.625, "broad"),
      make("broad-window-3", W, 4, 32, 16384, 8, 0, 0, 0.7, 0.625, "broad"),
      make("broad-global-1", G, 1, 16, 4096, 4, 1, 0, 0.7, 0.625, "broad"),
      make("broad-global-2", G, 2, 32, 8192, 5, 2, 0, 0.7, 0.625, "broad"),
      make("broad-global-3", G, 4, 16, 16384, 7, 2, 0, 0.7, 0.625, "broad"),
      make("broad-retrieval-1", R, 1, 16, 4096, 4, 0, 2, 0.75, 0.625, "broad"),
      make("broad-retrieval-2", R, 2, 16, 8192, 5, 0, 3, 0.65, 0.625, "broad"),
      make("broad-retrieval-3", R, 2, 32, 16384, 7, 0, 4, 0.55, 0.625, "broad"),
  };
}

// Per-case seed of a published-distribution suite: same structure as the harness's
// _derive_public_case_seed (hash of "root:suite:case_id" mod 2^31-1), with XXH64 in place of SHA-256.
std::int64_t derive_case_seed(std::int64_t root_seed, const std::string& suite, const std::string& case_id) {
  const std::string payload = fmt::format("{}:{}:{}", root_seed, suite, case_id);
  const XXH64_hash_t h = XXH64(payload.data(), payload.size(), 0);
  return std::int64_t(h % 2147483647ull);
}

}  // namespace

const char* family_name(Family f) {
  switch (f) {
    case Family::sliding_window: return "sliding_window";
    case Family::sliding_window_global: return "sliding_window_global";
    case Family::sliding_window_retrieval: return "sliding_window_retrieval";
  }
  fail(fmt::format("unknown family value {}", int(f)));
}

const char* family_short_name(Family f) {
  switch (f) {
    case Family::sliding_window: return "window";
    case Family::sliding_window_global: return "global";
    case Family::sliding_window_retrieval: return "retrieval";
  }
  fail(fmt::format("unknown family value {}", int(f)));
}

Family parse_family(const std::string& name) {
  for (Family f : kAllFamilies)
    if (name == family_name(f)) return f;
  fail(fmt::format("unknown family '{}' (expected sliding_window, sliding_window_global or "
                   "sliding_window_retrieval)",
                   name));
}

void validate_case_spec(const CaseSpec& c) {
  const std::string id = fmt::format("case '{}'", c.case_id);
  const int fam = int(c.family);
  if (fam < 0 || fam > 2) fail(fmt::format("{}: unsupported family value {}", id, fam));
  if (c.batch_size < 1) fail(fmt::format("{}: batch_size {} must be >= 1", id, c.batch_size));
  if (c.num_heads < 1) fail(fmt::format("{}: num_heads {} must be >= 1", id, c.num_heads));
  if (c.t_max < kBlockSize || c.t_max % kBlockSize != 0)
    fail(fmt::format("{}: t_max {} is not a positive multiple of {}", id, c.t_max, kBlockSize));
  if (c.window_blocks < 1) fail(fmt::format("{}: window_blocks {} must be >= 1", id, c.window_blocks));
  if (c.global_blocks < 0) fail(fmt::format("{}: global_blocks {} must not be negative", id, c.global_blocks));
  if (c.retrieval_blocks < 0)
    fail(fmt::format("{}: retrieval_blocks {} must not be negative", id, c.retrieval_blocks));
  // Written as the harness's `not 0 <= x <= 1`, so NaN is rejected too.
  if (!(c.retrieval_local_bias >= 0.0 && c.retrieval_local_bias <= 1.0))
    fail(fmt::format("{}: retrieval_local_bias {} is not in [0, 1]", id, c.retrieval_local_bias));
  if (!(c.seq_len_min_ratio > 0.0 && c.seq_len_min_ratio <= 1.0))
    fail(fmt::format("{}: seq_len_min_ratio {} is not in (0, 1]", id, c.seq_len_min_ratio));
  // Not a validate_case_spec rule of the harness, but its materialize_case fails on it (numpy seeds).
  if (c.seed < 0) fail(fmt::format("{}: seed {} must not be negative", id, c.seed));
}

nlohmann::json case_to_json(const CaseSpec& c) {
  return nlohmann::json{{"case_id", c.case_id},
                        {"family", family_name(c.family)},
                        {"batch_size", c.batch_size},
                        {"num_heads", c.num_heads},
                        {"t_max", c.t_max},
                        {"window_blocks", c.window_blocks},
                        {"global_blocks", c.global_blocks},
                        {"retrieval_blocks", c.retrieval_blocks},
                        {"retrieval_local_bias", c.retrieval_local_bias},
                        {"seq_len_min_ratio", c.seq_len_min_ratio},
                        {"seed", c.seed},
                        {"profile", c.profile}};
}

CaseSpec case_from_json(const nlohmann::json& j) {
  if (!j.is_object()) fail(fmt::format("each suite manifest item must be an object, got {}", j.dump()));
  for (const auto& [key, _] : j.items()) {
    bool known = false;
    for (const char* f : kFields) known = known || key == f;
    if (!known) fail(fmt::format("{}: unknown field '{}'", where(j), key));
  }
  for (const char* f : kRequired)
    if (!j.contains(f)) fail(fmt::format("{}: missing required field '{}'", where(j), f));

  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  constexpr std::int64_t kIntMin = std::numeric_limits<int>::min();
  CaseSpec c;  // defaults of the optional fields are the harness dataclass's
  c.case_id = get_string(j, "case_id");
  try {
    c.family = parse_family(get_string(j, "family"));
  } catch (const std::invalid_argument& e) {
    fail(fmt::format("{}: {}", where(j), e.what()));
  }
  c.batch_size = int(get_int(j, "batch_size", kIntMin, kIntMax));
  c.num_heads = int(get_int(j, "num_heads", kIntMin, kIntMax));
  c.t_max = int(get_int(j, "t_max", kIntMin, kIntMax));
  c.window_blocks = int(get_int(j, "window_blocks", kIntMin, kIntMax));
  if (j.contains("global_blocks")) c.global_blocks = int(get_int(j, "global_blocks", kIntMin, kIntMax));
  if (j.contains("retrieval_blocks")) c.retrieval_blocks = int(get_int(j, "retrieval_blocks", kIntMin, kIntMax));
  if (j.contains("retrieval_local_bias")) c.retrieval_local_bias = get_double(j, "retrieval_local_bias");
  if (j.contains("seq_len_min_ratio")) c.seq_len_min_ratio = get_double(j, "seq_len_min_ratio");
  if (j.contains("seed"))
    c.seed = get_int(j, "seed", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  if (j.contains("profile")) c.profile = get_string(j, "profile");
  validate_case_spec(c);
  return c;
}

const std::vector<std::string>& builtin_suite_names() {
  static const std::vector<std::string> names = {"smoke", "local-dev", "quick", "full", "broad"};
  return names;
}

std::vector<CaseSpec> builtin_suite(const std::string& name, std::int64_t root_seed) {
  std::vector<CaseSpec> suite;
  bool published = true;  // quick/full/broad: seeds derived from root_seed
  if (name == "smoke") {
    suite = smoke_suite(), published = false;
  } else if (name == "local-dev") {
    suite = local_dev_suite(), published = false;
  } else if (name == "quick") {
    suite = quick_suite();
  } else if (name == "full") {
    suite = full_suite();
  } else if (name == "broad") {
    suite = broad_suite();
  } else {
    fail(fmt::format("unknown suite '{}' (expected one of: smoke, local-dev, quick, full, broad)", name));
  }
  if (published)
    for (auto& c : suite) c.seed = derive_case_seed(root_seed, name, c.case_id);
  for (const auto& c : suite) validate_case_spec(c);
  return suite;
}

std::vector<CaseSpec> suite_from_manifest_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number such as 1e309
    fail(fmt::format("suite manifest is not valid JSON: {}", e.what()));
  }
  if (!j.is_array()) fail("suite manifest JSON must be a list of case specs");
  std::vector<CaseSpec> suite;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < j.size(); ++i) {
    suite.push_back(case_from_json(j[i]));
    // Not a harness rule: our results are keyed by case_id, so two cases may not share one.
    auto [it, inserted] = seen.emplace(suite.back().case_id, i);
    if (!inserted)
      fail(fmt::format("suite manifest: duplicate case_id '{}' (items {} and {})", it->first, it->second, i));
  }
  return suite;
}

std::vector<CaseSpec> suite_from_manifest_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail(fmt::format("cannot read suite manifest '{}'", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  try {
    return suite_from_manifest_json(ss.str());
  } catch (const std::invalid_argument& e) {
    fail(fmt::format("{}: {}", path, e.what()));
  }
}

std::string suite_to_manifest_json(const std::vector<CaseSpec>& suite) {
  // ordered_json keeps the harness's field order (json.dumps of CaseSpec.__dict__, indent=2).
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& c : suite) {
    nlohmann::ordered_json o;
    o["case_id"] = c.case_id;
    o["family"] = family_name(c.family);
    o["batch_size"] = c.batch_size;
    o["num_heads"] = c.num_heads;
    o["t_max"] = c.t_max;
    o["window_blocks"] = c.window_blocks;
    o["global_blocks"] = c.global_blocks;
    o["retrieval_blocks"] = c.retrieval_blocks;
    o["retrieval_local_bias"] = c.retrieval_local_bias;
    o["seq_len_min_ratio"] = c.seq_len_min_ratio;
    o["seed"] = c.seed;
    o["profile"] = c.profile;
    arr.push_back(std::move(o));
  }
  return arr.dump(2) + "\n";
}

}  // namespace attn
