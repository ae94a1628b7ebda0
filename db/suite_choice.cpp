#include "db/suite_choice.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "db/store.hpp"

namespace attn {
namespace {

/// "run 8", "runs 1-7", "runs 1-3, 5".
std::string run_list(std::vector<std::int64_t> ids) {
  std::sort(ids.begin(), ids.end());
  std::string out;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + (i == j ? std::to_string(ids[i]) : fmt::format("{}-{}", ids[i], ids[j]));
    i = j + 1;
  }
  return (ids.size() == 1 ? "run " : "runs ") + out;
}

/// Suites in order of their first run, each with its run ids; `skip` left out.
std::string suites_text(const std::vector<RunRecord>& runs, const std::string& skip) {
  std::vector<RunRecord> sorted = runs;
  std::sort(sorted.begin(), sorted.end(), [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::int64_t>> ids;
  for (const auto& r : sorted) {
    if (r.suite == skip) continue;
    if (!ids.count(r.suite)) order.push_back(r.suite);
    ids[r.suite].push_back(r.id);
  }
  std::string out;
  for (const auto& s : order) out += (out.empty() ? "" : ", ") + fmt::format("{} ({})", s, run_list(ids[s]));
  return out;
}

SuiteChoice resolve(const std::vector<RunRecord>& runs, const std::string& explicit_suite, const std::string& where) {
  if (runs.empty()) throw std::invalid_argument(fmt::format("{}has no runs yet", where));
  if (!explicit_suite.empty()) {
    for (const auto& r : runs)
      if (r.suite == explicit_suite) return {explicit_suite, ""};
    throw std::invalid_argument(fmt::format("{}has no run of suite {} (suites there: {})", where, explicit_suite,
                                            suites_text(runs, "")));
  }
  const auto latest = std::max_element(runs.begin(), runs.end(),
                                       [](const RunRecord& a, const RunRecord& b) { return a.id < b.id; });
  const std::string others = suites_text(runs, latest->suite);
  if (others.empty()) return {latest->suite, ""};
  return {latest->suite, fmt::format("suite {} (the latest run's, run {}); also in this DB: {}; --suite picks another",
                                     latest->suite, latest->id, others)};
}

}  // namespace

std::string suites_with_runs(const std::vector<RunRecord>& runs) { return suites_text(runs, ""); }

SuiteChoice resolve_suite(const std::vector<RunRecord>& runs, const std::string& explicit_suite) {
  return resolve(runs, explicit_suite, "the DB ");
}

SuiteChoice resolve_suite(ExperimentDb& db, const std::string& explicit_suite) {
  return resolve(db.runs(), explicit_suite, db.path() + " ");
}

}  // namespace attn
