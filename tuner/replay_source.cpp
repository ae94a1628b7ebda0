// Replay input: a finished DB's iterations of one suite, read from the DB or from its CSV export.
#include <cmath>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "db/store.hpp"
#include "db/suite_choice.hpp"
#include "tuner/replay.hpp"

namespace attn {
namespace {

struct CaseRow {
  std::string case_id;
  Family family = Family::sliding_window;
  double median_ms = 0;
  std::int64_t samples = 0;
  bool screen = false;
};

/// One finished iteration with what replay needs.
struct Row {
  std::string template_name;
  Config config;
  std::string status;    // keep | discard | crash
  std::string fidelity;  // screen | full
  std::optional<double> geomean_ms, screen_ms, gpu_ms;
  std::optional<std::int64_t> registers, smem_bytes, spill_bytes, root_seed;
  std::vector<CaseRow> cases;
};

const char* kColumns[] = {"template",   "params",    "status",   "fidelity",  "geomean_ms", "screen_ms",
                          "gpu_ms",     "registers", "smem_bytes", "spill_bytes", "root_seed", "case_id",
                          "family",     "median_ms", "samples",  "screen_case"};
constexpr std::size_t kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

/// The screen cases of the suite's latest run (its suite_json; the built-in suite when that is empty).
std::vector<std::string> screen_cases_of(ExperimentDb& db, const std::string& suite) {
  std::vector<CaseSpec> cases;
  const auto runs = db.runs();
  for (auto it = runs.rbegin(); it != runs.rend() && cases.empty(); ++it)
    if (it->suite == suite && !it->suite_json.empty()) {
      try {
        cases = suite_from_manifest_json(it->suite_json);
      } catch (const std::exception&) {
      }
    }
  if (cases.empty()) {
    try {
      cases = builtin_suite(suite);
    } catch (const std::exception&) {
      return {};
    }
  }
  return plan_screen(cases).case_ids;
}

std::vector<Row> rows_from_db(ExperimentDb& db, const std::string& suite, const std::vector<std::string>& screen) {
  auto& conn = db.connection();
  auto st = conn.prepare(
      "SELECT i.id, i.template, i.params_json, i.status, i.fidelity, i.geomean_ms, i.screen_ms, i.gpu_ms, "
      "v.registers, v.smem_bytes, v.spill_bytes, i.root_seed FROM iterations i "
      "LEFT JOIN variants v ON v.id = i.variant_id "
      "WHERE i.suite = ? AND i.status IN ('keep', 'discard', 'crash') ORDER BY i.id");
  st.bind(1, suite);
  std::vector<Row> rows;
  std::map<std::int64_t, std::size_t> index;
  while (st.step()) {
    Row r;
    r.template_name = st.column_text(1);
    r.config = config_from_json(st.column_text(2));
    r.status = st.column_text(3);
    r.fidelity = st.column_text(4);
    r.geomean_ms = st.column_opt_double(5);
    r.screen_ms = st.column_opt_double(6);
    r.gpu_ms = st.column_opt_double(7);
    r.registers = st.column_opt_int64(8);
    r.smem_bytes = st.column_opt_int64(9);
    r.spill_bytes = st.column_opt_int64(10);
    r.root_seed = st.column_opt_int64(11);
    index[st.column_int64(0)] = rows.size();
    rows.push_back(std::move(r));
  }
  auto cs = conn.prepare(
      "SELECT c.iteration_id, c.case_id, c.family, c.median_ms, c.samples FROM case_results c "
      "JOIN iterations i ON i.id = c.iteration_id WHERE i.suite = ? AND i.status IN ('keep', 'discard') "
      "AND c.median_ms IS NOT NULL ORDER BY c.iteration_id, c.case_id");
  cs.bind(1, suite);
  while (cs.step()) {
    CaseRow c;
    c.case_id = cs.column_text(1);
    c.family = parse_family(cs.column_text(2));
    c.median_ms = cs.column_double(3);
    c.samples = cs.column_int64(4);
    c.screen = std::find(screen.begin(), screen.end(), c.case_id) != screen.end();
    rows[index.at(cs.column_int64(0))].cases.push_back(std::move(c));
  }
  return rows;
}

ReplayTable table_from_rows(const std::vector<Row>& rows, std::vector<std::string> screen, std::string source,
                            std::string suite) {
  ReplayTable t;
  t.source = std::move(source);
  t.suite = std::move(suite);
  t.screen_case_ids = std::move(screen);
  double samples = 0;
  std::size_t sampled = 0;
  for (const auto& r : rows) {
    auto& configs = t.templates[r.template_name];
    if (configs.count(r.config)) continue;  // the first finished row of a config answers
    ReplayEntry e;
    e.failed = r.status == "crash";
    if (!e.failed && r.fidelity == "full") e.full_ms = r.geomean_ms;
    e.screen_ms = r.screen_ms;
    e.gpu_ms = r.gpu_ms;
    if (r.registers) e.resources = ConfigResources{double(*r.registers), double(r.smem_bytes.value_or(0)),
                                                   double(r.spill_bytes.value_or(0))};
    for (const auto& c : r.cases) {
      e.case_ms[c.case_id] = c.median_ms;
      e.case_family[c.case_id] = c.family;
      if (r.fidelity == "full" && c.samples > 0) samples += double(c.samples), ++sampled;
    }
    configs.emplace(r.config, std::move(e));
  }
  t.full_samples = sampled ? samples / double(sampled) : 0;
  return t;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

template <class T>
std::string opt_text(const std::optional<T>& v) {
  if (!v) return "";
  if constexpr (std::is_floating_point_v<T>) return fmt::format("{:.17g}", *v);
  return std::to_string(*v);
}

/// Splits one CSV record (RFC 4180; no line breaks inside fields, which our writer never produces).
std::vector<std::string> csv_split(const std::string& line, const std::string& where) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, was_quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (ch == '"') {
        quoted = false;
      } else {
        cur += ch;
      }
    } else if (ch == '"' && cur.empty() && !was_quoted) {
      quoted = was_quoted = true;
    } else if (ch == ',') {
      out.push_back(cur);
      cur.clear();
      was_quoted = false;
    } else if (ch != '\r') {
      cur += ch;
    }
  }
  if (quoted) throw std::invalid_argument(where + ": unterminated quoted field");
  out.push_back(cur);
  return out;
}

std::optional<double> csv_double(const std::string& s, const std::string& where) {
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || !std::isfinite(v)) throw std::invalid_argument(fmt::format("{}: '{}' is not a number", where, s));
  return v;
}

std::optional<std::int64_t> csv_int(const std::string& s, const std::string& where) {
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size()) throw std::invalid_argument(fmt::format("{}: '{}' is not an integer", where, s));
  return v;
}

}  // namespace

ReplayTable load_replay_table(ExperimentDb& db, const std::string& suite_in) {
  const std::string suite = resolve_suite(db, suite_in).suite;
  const auto screen = screen_cases_of(db, suite);
  const auto rows = rows_from_db(db, suite, screen);
  if (rows.empty())
    throw std::invalid_argument(fmt::format("replay: {} has no finished iteration of suite {}", db.path(), suite));
  return table_from_rows(rows, screen, db.path(), suite);
}

std::size_t write_replay_csv(ExperimentDb& db, const std::string& suite, std::ostream& out) {
  const auto screen = screen_cases_of(db, suite);
  const auto rows = rows_from_db(db, suite, screen);
  for (std::size_t i = 0; i < kColumnCount; ++i) out << (i ? "," : "") << kColumns[i];
  out << "\n";
  for (const auto& r : rows) {
    const std::string head = fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{}", csv_field(r.template_name), csv_field(config_to_compact(r.config)), r.status,
        r.fidelity, opt_text(r.geomean_ms), opt_text(r.screen_ms), opt_text(r.gpu_ms), opt_text(r.registers),
        opt_text(r.smem_bytes), opt_text(r.spill_bytes), opt_text(r.root_seed));
    if (r.cases.empty()) out << head << ",,,,,\n";
    for (const auto& c : r.cases)
      out << head << fmt::format(",{},{},{:.17g},{},{}\n", csv_field(c.case_id), family_name(c.family), c.median_ms,
                                 c.samples, c.screen ? 1 : 0);
  }
  return rows.size();
}

ReplayTable load_replay_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::invalid_argument(fmt::format("replay: cannot read {}", path));
  std::string line;
  if (!std::getline(in, line)) throw std::invalid_argument(fmt::format("replay: {} is empty", path));
  const auto header = csv_split(line, path + ":1");
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  for (const char* c : kColumns)
    if (!col.count(c))
      throw std::invalid_argument(fmt::format("replay: {}: no column '{}' (write the file with `attn-tuner query csv`)",
                                              path, c));
  std::vector<Row> rows;
  std::vector<std::string> screen;
  std::string last_key;
  for (std::size_t n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    const std::string where = fmt::format("{}:{}", path, n);
    const auto f = csv_split(line, where);
    if (f.size() != header.size())
      throw std::invalid_argument(fmt::format("{}: {} fields, the header has {}", where, f.size(), header.size()));
    auto at = [&](const char* name) -> const std::string& { return f[col.at(name)]; };
    const std::string key = at("template") + "\t" + at("params");
    if (key != last_key || rows.empty()) {
      Row r;
      r.template_name = at("template");
      try {
        r.config = config_from_compact(at("params"));
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(fmt::format("{}: {}", where, e.what()));
      }
      r.status = at("status");
      if (r.status != "keep" && r.status != "discard" && r.status != "crash")
        throw std::invalid_argument(fmt::format("{}: status '{}' (expected keep, discard or crash)", where, r.status));
      r.fidelity = at("fidelity");
      if (r.fidelity != "screen" && r.fidelity != "full")
        throw std::invalid_argument(fmt::format("{}: fidelity '{}' (expected screen or full)", where, r.fidelity));
      r.geomean_ms = csv_double(at("geomean_ms"), where);
      r.screen_ms = csv_double(at("screen_ms"), where);
      r.gpu_ms = csv_double(at("gpu_ms"), where);
      r.registers = csv_int(at("registers"), where);
      r.smem_bytes = csv_int(at("smem_bytes"), where);
      r.spill_bytes = csv_int(at("spill_bytes"), where);
      r.root_seed = csv_int(at("root_seed"), where);
      rows.push_back(std::move(r));
      last_key = key;
    }
    if (at("case_id").empty()) continue;
    CaseRow c;
    c.case_id = at("case_id");
    try {
      c.family = parse_family(at("family"));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("{}: {}", where, e.what()));
    }
    const auto median = csv_double(at("median_ms"), where);
    if (!median) throw std::invalid_argument(fmt::format("{}: case {} has no median_ms", where, c.case_id));
    c.median_ms = *median;
    c.samples = csv_int(at("samples"), where).value_or(0);
    c.screen = at("screen_case") == "1";
    if (c.screen && std::find(screen.begin(), screen.end(), c.case_id) == screen.end()) screen.push_back(c.case_id);
    rows.back().cases.push_back(std::move(c));
  }
  if (rows.empty()) throw std::invalid_argument(fmt::format("replay: {} has no rows", path));
  return table_from_rows(rows, screen, path, "");
}

}  // namespace attn
