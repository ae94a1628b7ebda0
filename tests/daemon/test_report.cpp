// `attn-tuner report` end to end on the CPU: a DB made by the real daemon with the fake worker, the
// report drawn by report/report.py (matplotlib), every section and image checked, and the numbers it
// shows compared with `attn-tuner query` and `attn-tuner suites`. Also the clear messages for an empty
// DB, a DB without champions, a bad baseline, a Python without matplotlib; and `status --watch`.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "db/store.hpp"
#include "tests/daemon/daemon_harness.hpp"
#include "tests/test_support.hpp"
#include "workload/case_spec.hpp"

namespace attn {
namespace {

namespace fs = std::filesystem;
using test::Fixture;
using test::Output;
using test::read_file;
using test::run;

/// True when a Python that `attn-tuner report` would pick can import matplotlib (CI installs it with
/// scripts/setup.sh; a dev machine may lack it).
bool matplotlib_available() {
  static const bool ok = [] {
    std::string candidates = "/usr/bin/python3 python3";
    if (const char* env = std::getenv("ATTN_TUNER_PYTHON"); env && *env) candidates = env;
    for (std::size_t pos = 0; pos < candidates.size();) {
      std::size_t end = candidates.find(' ', pos);
      if (end == std::string::npos) end = candidates.size();
      const std::string cmd = candidates.substr(pos, end - pos) + " -c 'import matplotlib, numpy' >/dev/null 2>&1";
      if (std::system(cmd.c_str()) == 0) return true;
      pos = end + 1;
    }
    return false;
  }();
  return ok;
}

#define SKIP_WITHOUT_MATPLOTLIB() \
  if (!matplotlib_available())      \
    GTEST_SKIP() << "no Python with matplotlib (scripts/setup.sh installs python3-matplotlib)"

/// The numbers the report tags for tests: data-key -> text.
std::map<std::string, std::string> shown_numbers(const std::string& html) {
  std::map<std::string, std::string> out;
  const std::regex re(R"re(data-key="([^"]+)">([^<]*)<)re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out[(*it)[1]] = (*it)[2];
  return out;
}

nlohmann::json query_json(const std::string& db, const std::string& what) {
  const Output o = run("query --db '" + db + "' --format json " + what);
  EXPECT_EQ(o.code, 0) << o.text;
  return nlohmann::json::parse(o.text);
}

/// Every image the page references exists beside it and is a non-empty PNG.
void expect_images_exist(const std::string& dir, const std::string& html, std::size_t at_least) {
  const std::regex re(R"re(<img src="([^"]+)")re");
  std::size_t n = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it, ++n) {
    const std::string png = read_file(dir + "/" + (*it)[1].str());
    EXPECT_GT(png.size(), 2000u) << (*it)[1];
    EXPECT_EQ(png.substr(0, 4), "\x89PNG") << (*it)[1];
  }
  EXPECT_GE(n, at_least);
}

TEST(Report, FromAFakeWorkerRunShowsEverySectionAndTheNumbersOfQuery) {
  SKIP_WITHOUT_MATPLOTLIB();
  Fixture f;
  ASSERT_EQ(run(f.args()).code, 0);
  // A baseline as scripts/device/step_harness.sh appends it: two runs of smoke (median per case) and one
  // of another suite that must be ignored.
  const std::string baseline = f.dir + "/harness_runs.jsonl";
  {
    std::ofstream b(baseline);
    for (double w : {0.3, 0.5})
      b << nlohmann::json{{"suite_name", "smoke"}, {"run", 1},
                          {"case_results", {{{"case_id", "smoke-window-1"}, {"latency_ms", w}},
                                            {{"case_id", "smoke-global-1"}, {"latency_ms", 0.2}}}}}
               .dump()
        << "\n";
    const nlohmann::json other_suite = {{"case_id", "smoke-window-1"}, {"latency_ms", 9.0}};
    b << nlohmann::json{{"suite_name", "quick"}, {"case_results", nlohmann::json::array({other_suite})}}.dump() << "\n";
  }
  const std::string out = f.dir + "/report";
  const Output o = run("report --db '" + f.db + "' --out '" + out + "' --baseline '" + baseline + "'");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("wrote " + out + "/index.html"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(out + ".partial"));

  const std::string html = read_file(out + "/index.html");
  for (const char* id : {"timeline", "score", "params", "champions", "failures", "baseline"})
    EXPECT_NE(html.find(fmt::format("<section id=\"{}\">", id)), std::string::npos) << id;
  for (const char* png : {"timeline.png", "score.png", "params_0.png", "interactions_0.png", "roofline.png",
                          "failures.png", "baseline.png"})
    EXPECT_NE(html.find(fmt::format("<img src=\"{}\"", png)), std::string::npos) << png;
  expect_images_exist(out, html, 7);
  EXPECT_EQ(html.find("http://"), std::string::npos);  // nothing to fetch: it views offline
  EXPECT_EQ(html.find("https://"), std::string::npos);

  const auto shown = shown_numbers(html);
  // Champions: iteration and score as `query best` has them.
  const auto best = query_json(f.db, "best");
  ASSERT_EQ(best.size(), 4u);  // overall + three families
  for (const auto& c : best) {
    const std::string scope = c["scope"];
    EXPECT_EQ(shown.at("champion." + scope + ".iter"), std::to_string(c["iter"].get<std::int64_t>()));
    EXPECT_EQ(shown.at("champion." + scope + ".score_ms"), fmt::format("{:.4f}", c["score_ms"].get<double>()));
  }
  // Iteration counts by status and failure kind, as SQL through `query` counts them.
  const auto by_status =
      query_json(f.db, "sql \"SELECT status, count(*) FROM iterations WHERE suite = 'smoke' GROUP BY status\"");
  std::int64_t total = 0;
  for (const auto& row : by_status["rows"]) {
    EXPECT_EQ(shown.at("iterations." + row[0].get<std::string>()), row[1].get<std::string>());
    total += std::stoll(row[1].get<std::string>());
  }
  EXPECT_EQ(shown.at("iterations.total"), std::to_string(total));
  EXPECT_EQ(total, std::int64_t(test::kFakeSpace));
  // The fidelity column (schema 2 on): screened and whole-suite counts as SQL has them.
  const auto by_fidelity = query_json(
      f.db, "sql \"SELECT sum(fidelity = 'screen' AND status != 'running'), sum(fidelity = 'full' AND status != 'running') "
            "FROM iterations WHERE suite = 'smoke'\"");
  EXPECT_EQ(shown.at("iterations.screened"), by_fidelity["rows"][0][0].get<std::string>());
  EXPECT_EQ(shown.at("iterations.full"), by_fidelity["rows"][0][1].get<std::string>());
  EXPECT_EQ(html.find("This DB records no fidelity"), std::string::npos);
  const auto by_kind = query_json(
      f.db, "sql \"SELECT failure_kind, count(*) FROM iterations WHERE status = 'crash' GROUP BY failure_kind\"");
  ASSERT_EQ(by_kind["rows"].size(), 5u);
  for (const auto& row : by_kind["rows"])
    EXPECT_EQ(shown.at("failures." + row[0].get<std::string>()), row[1].get<std::string>());
  EXPECT_EQ(shown.at("failures.device_limit"), "0");
  // Per-case latency of the overall champion, as `query show` has it.
  const auto champ = query_json(f.db, "show " + shown.at("champion.overall.iter"));
  ASSERT_EQ(champ["cases"].size(), 3u);
  for (const auto& c : champ["cases"])
    EXPECT_EQ(shown.at("case." + c["case_id"].get<std::string>() + ".us"),
              fmt::format("{:.1f}", c["median_ms"].get<double>() * 1e3));
  // Promotions: the last overall one is the champion.
  const auto history = query_json(
      f.db, "sql \"SELECT id, iteration_id FROM champion_history WHERE scope = 'overall' ORDER BY id DESC LIMIT 1\"");
  EXPECT_EQ(shown.at("promotion." + history["rows"][0][0].get<std::string>() + ".iter"),
            shown.at("champion.overall.iter"));
  // The baseline: median of the two smoke runs, the quick line ignored.
  EXPECT_EQ(shown.at("baseline.smoke-window-1.us"), "400.0");
  EXPECT_EQ(shown.at("baseline.smoke-global-1.us"), "200.0");
  // One example log per failure kind; the compile one carries NVRTC's message.
  for (const char* k : {"compile", "fault", "hang", "wrong_result", "worker_died"})
    EXPECT_NE(html.find(fmt::format("data-kind=\"{}\"", k)), std::string::npos) << k;
  EXPECT_NE(html.find("deliberate compile error"), std::string::npos);
  // Work and floor per case come from workload/roofline, exactly as `attn-tuner suites` prints them
  // (FakeGPU is not a known GPU: the H100 SXM ceilings, suites' defaults).
  const auto cases = nlohmann::json::parse(read_file(out + "/cases.json"));
  const auto suites = nlohmann::json::parse(run("suites --name smoke --json").text);
  const auto& set = cases["case_sets"][cases["run_case_set"]["1"].get<int>()];
  ASSERT_EQ(set.size(), suites["suites"][0]["cases"].size());
  for (std::size_t i = 0; i < set.size(); ++i) {
    const auto& want = suites["suites"][0]["cases"][i];
    EXPECT_EQ(set[i]["case_id"], want["case_id"]);
    EXPECT_DOUBLE_EQ(set[i]["flops"].get<double>(), want["work"]["flops"].get<double>());
    EXPECT_DOUBLE_EQ(set[i]["floor_us"].get<double>(), want["work"]["floor_us"].get<double>());
  }
  // Bucket champions (db/shape_buckets): smoke's buckets hold one case each, so each one's champion has the
  // least passed median on that case among whole-suite keep/discard iterations, as SQL has it.
  ASSERT_EQ(cases["buckets"].size(), 3u);
  for (const auto& b : cases["buckets"]) {
    ASSERT_EQ(b["case_ids"].size(), 1u);
    const auto least = query_json(
        f.db, fmt::format("sql \"SELECT min(c.median_ms) FROM case_results c JOIN iterations i ON i.id = "
                          "c.iteration_id WHERE c.case_id = '{}' AND c.passed AND i.status IN ('keep', 'discard') "
                          "AND i.fidelity = 'full' AND i.geomean_ms IS NOT NULL\"",
                          b["case_ids"][0].get<std::string>()));
    EXPECT_DOUBLE_EQ(b["score_ms"].get<double>(), std::stod(least["rows"][0][0].get<std::string>())) << b.dump();
  }
  EXPECT_NE(html.find("Per shape bucket (t_max, batch·heads)"), std::string::npos);

  // A second report replaces the first in place (a CSV baseline this time); a folder that holds anything
  // else is refused.
  { std::ofstream(f.dir + "/base.csv") << "case_id,us\nsmoke-retrieval-1,250\n"; }
  const Output again = run("report --db '" + f.db + "' --out '" + out + "/' --baseline '" + f.dir + "/base.csv'");
  ASSERT_EQ(again.code, 0) << again.text;
  const auto shown2 = shown_numbers(read_file(out + "/index.html"));
  EXPECT_EQ(shown2.at("baseline.smoke-retrieval-1.us"), "250.0");
  EXPECT_EQ(shown2.count("baseline.smoke-window-1.us"), 0u);
  fs::create_directories(f.dir + "/notes");
  { std::ofstream(f.dir + "/notes/todo.txt") << "mine\n"; }
  const Output refused = run("report --db '" + f.db + "' --out '" + f.dir + "/notes'");
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.text.find("'todo.txt', which is not part of an earlier report"), std::string::npos) << refused.text;
  EXPECT_EQ(read_file(f.dir + "/notes/todo.txt"), "mine\n");
}

/// An idea of run `run_id` as the idea queue leaves it: added (checking), then given its status, verdict and
/// effect (delta and noise in %, vs its parent).
std::int64_t add_judged_idea(ExperimentDb& db, std::int64_t run_id, const std::string& file, const std::string& parent,
                             const std::string& tmpl, const std::string& status, const std::string& verdict,
                             const std::string& kind, std::optional<double> delta_pct,
                             std::optional<double> noise_pct, const std::string& reason) {
  IdeaRecord i;
  i.run_id = run_id;
  i.file = file;
  i.idea_hash = "hash-" + file;
  i.description = "idea " + file;
  i.parent_template = parent;
  i.id = db.add_idea(i);
  i.template_name = tmpl;
  i.status = parse_idea_status(status);
  i.verdict = parse_idea_verdict(verdict);
  i.broken_kind = parse_idea_broken_kind(kind);
  i.delta_pct = delta_pct;
  i.noise_pct = noise_pct;
  i.reason = reason;
  i.configs = delta_pct ? 6 : 0;
  if (delta_pct) {
    i.parent_ms = 0.1;
    i.idea_ms = 0.1 * (1 + *delta_pct / 100);
  }
  db.update_idea(i);
  return i.id;
}

/// The items of the report's champion lineage (<ol id="idea-lineage">), root first: "template" or
/// "template idea N".
std::vector<std::string> lineage_items(const std::string& html) {
  std::vector<std::string> out;
  const auto begin = html.find("<ol id=\"idea-lineage\">");
  if (begin == std::string::npos) return out;
  const std::string ol = html.substr(begin, html.find("</ol>", begin) - begin);
  const std::regex re(R"re(<li data-template="([^"]+)"(?: data-idea="(\d+)")?)re");
  for (auto it = std::sregex_iterator(ol.begin(), ol.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str() + ((*it)[2].matched ? " idea " + (*it)[2].str() : ""));
  return out;
}

TEST(Report, IdeasAreRankedByEffectWithVerdictsAndTheChampionsLineage) {
  SKIP_WITHOUT_MATPLOTLIB();
  Fixture f;
  ASSERT_EQ(run(f.args()).code, 0);
  {
    auto db = ExperimentDb::open(f.db);
    const std::int64_t run_id = db.runs().back().id;
    // Two lineages off fake: fake -> fake_p1 (win) -> fake_p3 (win) -> fake_p4 (no gain), and fake_p1 -> fake_p2
    // (slower); a broken idea and one still tuning.
    add_judged_idea(db, run_id, "a_unroll.idea", "fake", "fake_p1", "done", "win", "", -4.2, 0.8, "win by 4.2 %");
    add_judged_idea(db, run_id, "b_exp2.idea", "fake_p1", "fake_p2", "done", "slower", "", 2.5, 0.7, "slower");
    add_judged_idea(db, run_id, "c_vload.idea", "fake_p1", "fake_p3", "done", "win", "", -1.9, 0.5, "win by 1.9 %");
    add_judged_idea(db, run_id, "d_split.idea", "fake_p3", "fake_p4", "done", "no_gain", "", -0.3, 0.6, "within noise");
    add_judged_idea(db, run_id, "e_typo.idea", "fake_p3", "fake_p5", "done", "broken", "compile", std::nullopt,
                    std::nullopt, "compile error (default config): identifier \"fooo\" is undefined");
    add_judged_idea(db, run_id, "f_later.idea", "fake_p3", "fake_p6", "tuning", "", "", std::nullopt, std::nullopt, "");
    // The overall champion's template is the second win's.
    db.connection().exec(
        "INSERT INTO configs (template, names_id, param_values) SELECT 'fake_p3', c.names_id, c.param_values FROM "
        "configs c JOIN iteration_rows i ON i.config_id = c.id WHERE i.id = (SELECT iteration_id FROM champions "
        "WHERE scope = 'overall')");
    db.connection().exec(
        "UPDATE iteration_rows SET config_id = last_insert_rowid() WHERE id = (SELECT iteration_id FROM champions "
        "WHERE scope = 'overall')");
  }
  const std::string out = f.dir + "/report";
  const Output o = run("report --db '" + f.db + "' --out '" + out + "'");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("champions, ideas, failures"), std::string::npos) << o.text;  // "sections: ..."
  const std::string html = read_file(out + "/index.html");
  ASSERT_NE(html.find("<section id=\"ideas\">"), std::string::npos);
  EXPECT_NE(html.find("<img src=\"ideas.png\""), std::string::npos);
  expect_images_exist(out, html, 6);
  EXPECT_EQ(html.find("id=\"no-ideas\""), std::string::npos);
  const auto shown = shown_numbers(html);
  EXPECT_EQ(shown.at("ideas.total"), "6");
  EXPECT_EQ(shown.at("ideas.win"), "2");
  EXPECT_EQ(shown.at("ideas.slower"), "1");
  EXPECT_EQ(shown.at("ideas.no_gain"), "1");
  EXPECT_EQ(shown.at("ideas.broken"), "1");
  EXPECT_EQ(shown.at("ideas.pending"), "1");
  // Ranked by measured effect, the biggest speed-up first; broken and unjudged ideas have no rank.
  EXPECT_EQ(shown.at("idea.1.rank"), "1");
  EXPECT_EQ(shown.at("idea.3.rank"), "2");
  EXPECT_EQ(shown.at("idea.4.rank"), "3");
  EXPECT_EQ(shown.at("idea.2.rank"), "4");
  EXPECT_EQ(shown.count("idea.5.rank"), 0u);
  EXPECT_EQ(shown.count("idea.6.rank"), 0u);
  EXPECT_EQ(shown.at("idea.1.delta_pct"), "-4.20");
  EXPECT_EQ(shown.at("idea.2.delta_pct"), "+2.50");
  // Verdicts (coloured by class), the broken one with its kind, a win with whether it is landed (no repository
  // template lists its hash: idea land).
  EXPECT_EQ(shown.at("idea.1.verdict"), "win, not landed");
  EXPECT_EQ(shown.at("ideas.wins_landed"), "0");
  EXPECT_EQ(shown.at("idea.2.verdict"), "slower");
  EXPECT_EQ(shown.at("idea.4.verdict"), "no_gain");
  EXPECT_EQ(shown.at("idea.5.verdict"), "broken (compile)");
  EXPECT_EQ(shown.at("idea.6.verdict"), "tuning");
  EXPECT_NE(html.find("class=\"verdict v-win\""), std::string::npos);
  EXPECT_NE(html.find("class=\"verdict v-broken\""), std::string::npos);
  EXPECT_NE(html.find("identifier &quot;fooo&quot; is undefined"), std::string::npos);
  // The champion (fake_p3) stacks ideas 1 and 3 on fake; not the slower or the no-gain one.
  EXPECT_EQ(lineage_items(html), (std::vector<std::string>{"fake", "fake_p1 idea 1", "fake_p3 idea 3"}));
  EXPECT_EQ(shown.at("ideas.lineage.count"), "2");

  // A DB without ideas still gets its report, with "no ideas yet" (a schema-7 file, without the table, is migrated
  // first since schema 10: `db migrate`).
  {
    auto db = ExperimentDb::open(f.db);
    db.connection().exec("DELETE FROM ideas");
  }
  const Output o7 = run("report --db '" + f.db + "' --out '" + out + "'");
  ASSERT_EQ(o7.code, 0) << o7.text;
  const std::string html7 = read_file(out + "/index.html");
  EXPECT_NE(html7.find("<section id=\"ideas\">"), std::string::npos);
  EXPECT_NE(html7.find("id=\"no-ideas\""), std::string::npos);
  EXPECT_NE(html7.find("No ideas yet"), std::string::npos);
  EXPECT_EQ(html7.find("ideas.png"), std::string::npos);
}

/// A DB written through the store: one run of smoke on an H100, and (with_crash) one iteration that
/// failed to compile. No champion.
std::string championless_db(const std::string& dir, bool with_crash) {
  const std::string path = dir + "/nochamp.db";
  auto db = ExperimentDb::open(path);
  RunRecord r;
  r.suite = "smoke";
  r.suite_json = suite_to_manifest_json(builtin_suite("smoke"));
  r.strategy = "random";
  r.gpu_name = "NVIDIA H100 80GB HBM3";
  const auto run_id = db.begin_run(r);
  if (with_crash) {
    VariantRecord v;
    v.template_name = "fa3_tma";
    v.params_json = R"({"BLOCK_N":128,"stages":4})";
    v.content_hash = "h1";
    v.compile_ok = false;
    v.compile_log = "fa3_tma.cu(88): error: too many resources requested for launch";
    const auto vid = db.upsert_variant(v);
    IterationRecord it;
    it.run_id = run_id;
    it.suite = "smoke";
    it.template_name = v.template_name;
    it.params_json = v.params_json;
    it.iter = db.begin_iteration(it);
    it.variant_id = vid;
    it.status = IterationStatus::crash;
    it.failure_kind = FailureKind::compile;
    it.description = "random [fa3_tma]; compile error: too many resources";
    it.compile_ms = 900;
    db.finish_iteration(it);
  }
  return path;
}

TEST(Report, EmptyDbsAndBadInputAreClearMessagesAndADbWithoutChampionsSaysSo) {
  const std::string dir = test::temp_dir("report");
  const std::string out = dir + "/out";
  { std::ofstream(dir + "/empty.db"); }
  Output o = run("report --db '" + dir + "/empty.db' --out '" + out + "'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("cannot read the experiment DB"), std::string::npos) << o.text;
  o = run("report --db '" + dir + "/none.db' --out '" + out + "'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("no experiment DB at"), std::string::npos) << o.text;
  { ExperimentDb::open(dir + "/fresh.db"); }  // schema, no runs
  o = run("report --db '" + dir + "/fresh.db' --out '" + out + "'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("has no runs yet: nothing to report"), std::string::npos) << o.text;

  const std::string db = championless_db(dir, true);
  o = run("report --db '" + db + "' --out '" + out + "' --suite full");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("has no run of suite full (suites there: smoke (run "), std::string::npos) << o.text;
  o = run("report --db '" + db + "' --out '" + out + "' --baseline '" + dir + "/missing.csv'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("--baseline " + dir + "/missing.csv: no such file"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(out));

  SKIP_WITHOUT_MATPLOTLIB();
  { std::ofstream(dir + "/bad.csv") << "case_id,us\nsmoke-window-1,fast\n"; }
  o = run("report --db '" + db + "' --out '" + out + "' --baseline '" + dir + "/bad.csv'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("line 2: 'fast' is not a latency in us"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("Traceback"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".partial"));

  {  // The multi-fidelity column of issue 9, when the DB has it: this crash was a screening run.
    auto w = ExperimentDb::open(db);
    bool has = false;
    for (auto st = w.connection().prepare("PRAGMA table_info(iterations)"); st.step();)
      has = has || st.column_text(1) == "fidelity";
    if (!has) w.connection().exec("ALTER TABLE iterations ADD COLUMN fidelity TEXT");
    w.connection().exec("UPDATE iteration_rows SET fidelity = 'screen'");
  }
  // Two bench results of different configs are ambiguous; one, as `attn-tuner bench --json` prints it
  // (no suite field), is a kernel-only baseline.
  nlohmann::json bench = {{"template", "fa2_mma"}, {"config", {{"BLOCK_N", 64}}},
                          {"cases", {{{"case_id", "smoke-window-1"}, {"median_ms", 0.012}, {"passed", true}}}}};
  {
    std::ofstream b(dir + "/sweep.jsonl");
    b << bench.dump() << "\n";
    bench["config"]["BLOCK_N"] = 128;
    b << bench.dump() << "\n";
  }
  o = run("report --db '" + db + "' --out '" + out + "' --baseline '" + dir + "/sweep.jsonl'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("2 bench results of suite smoke with different configs"), std::string::npos) << o.text;
  { std::ofstream(dir + "/bench.json") << bench.dump(2) << "\n"; }
  o = run("report --db '" + db + "' --out '" + out + "' --baseline '" + dir + "/bench.json'");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("note: no champion for suite smoke yet"), std::string::npos) << o.text;
  const std::string html = read_file(out + "/index.html");
  EXPECT_NE(html.find("id=\"no-champion\""), std::string::npos);
  EXPECT_NE(html.find("id=\"no-scores\""), std::string::npos);
  EXPECT_NE(html.find("id=\"no-baseline-overlap\""), std::string::npos);
  EXPECT_NE(html.find("id=\"no-ideas\""), std::string::npos);  // an empty ideas table
  EXPECT_NE(html.find("bench (kernel-only) results, 1 of smoke, fa2_mma"), std::string::npos);
  EXPECT_NE(html.find("too many resources requested for launch"), std::string::npos);  // the compile log
  const auto shown = shown_numbers(html);
  EXPECT_EQ(shown.at("iterations.total"), "1");
  EXPECT_EQ(shown.at("iterations.crash"), "1");
  EXPECT_EQ(shown.at("failures.compile"), "1");
  EXPECT_EQ(shown.at("iterations.screened"), "1");
  EXPECT_EQ(shown.at("iterations.full"), "0");
  EXPECT_EQ(shown.count("champion.overall.score_ms"), 0u);
  expect_images_exist(out, html, 2);  // timeline, failures
  // The H100's ceilings, from the run's GPU name.
  const auto cases = nlohmann::json::parse(read_file(out + "/cases.json"));
  EXPECT_DOUBLE_EQ(cases["ceilings"]["tbps"].get<double>(), 3.35);
  EXPECT_NE(cases["ceilings"]["source"].get<std::string>().find("H100 SXM"), std::string::npos);
}

TEST(Report, APythonWithoutMatplotlibIsNamedWithWhatToInstall) {
  const std::string dir = test::temp_dir("report");
  const std::string db = championless_db(dir, false);
  Output o = run("report --db '" + db + "' --out '" + dir + "/out' --python /nonexistent/python3");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("/nonexistent/python3 (not found)"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("python3-matplotlib"), std::string::npos) << o.text;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3 to hide matplotlib from";
  // Debian's python3 without its site packages: runs, but cannot import matplotlib.
  const std::string bare = dir + "/bare-python3";
  { std::ofstream(bare) << "#!/bin/sh\nexec /usr/bin/python3 -I -S \"$@\"\n"; }
  fs::permissions(bare, fs::perms::owner_all);
  o = run("report --db '" + db + "' --out '" + dir + "/out'", "ATTN_TUNER_PYTHON='" + bare + "'");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("needs Python 3 with matplotlib, numpy"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("No module named"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(dir + "/out"));
}

/// Starts `attn-tuner <args>` with stdout and stderr to `log`; returns its pid.
pid_t spawn(const std::vector<std::string>& args, const std::string& log) {
  const std::string exe = test::binary_path();
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (!f) ::_exit(127);
    ::dup2(STDOUT_FILENO, STDERR_FILENO);
    std::vector<char*> argv{const_cast<char*>(exe.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

TEST(Status, WatchRedrawsUntilInterruptedAndWaitsForADbThatIsNotThereYet) {
  const std::string dir = test::temp_dir("report");
  const std::string db = championless_db(dir, true);
  const std::string log = dir + "/watch.txt";
  const pid_t pid = spawn({"status", "--db", db, "--watch", "0.2"}, log);
  ASSERT_GT(pid, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "status --watch did not exit on SIGINT";
  EXPECT_EQ(WEXITSTATUS(st), 0);
  const std::string text = read_file(log);
  std::size_t frames = 0, runs = 0;
  for (std::size_t p = text.find("--- "); p != std::string::npos; p = text.find("--- ", p + 1)) ++frames;
  for (std::size_t p = text.find("run 1 (running)"); p != std::string::npos; p = text.find("run 1 (running)", p + 1))
    ++runs;
  EXPECT_GE(frames, 3u) << text;
  EXPECT_EQ(runs, frames) << text;
  EXPECT_NE(text.find("crash 1"), std::string::npos) << text;

  const pid_t waiting = spawn({"status", "--db", dir + "/later.db", "--watch", "0.2"}, log);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(waiting, SIGTERM);
  ASSERT_EQ(::waitpid(waiting, &st, 0), waiting);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  EXPECT_NE(read_file(log).find("no experiment DB at " + dir + "/later.db"), std::string::npos) << read_file(log);

  const Output bad = run("status --db '" + db + "' --watch 0");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("--watch: the period must be a positive number of seconds"), std::string::npos);
}

}  // namespace
}  // namespace attn
