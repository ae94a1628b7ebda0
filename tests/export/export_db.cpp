#include "tests/export/export_db.hpp"

#include <gtest/gtest.h>

#include "core/templates_dir.hpp"
#include "gpu/compiler.hpp"
#include "tests/export/check_submission_py.hpp"
#include "tests/test_support.hpp"
#include "tuner/compile_request.hpp"

namespace attn::test {

Config with(Config c, const std::map<std::string, std::int64_t>& changes) {
  for (const auto& [k, v] : changes) c[k] = v;
  return c;
}

std::vector<std::uint8_t> fake_cubin(int salt) {
  std::vector<std::uint8_t> b(static_cast<std::size_t>(777 + salt));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<std::uint8_t>((i * 31 + static_cast<std::size_t>(salt)) & 0xff);
  return b;
}

ExportDb::ExportDb(const std::string& suite) : ExportDb(suite, builtin_suite(suite)) {}

ExportDb::ExportDb(const std::string& suite, std::vector<CaseSpec> cases)
    : dir_(temp_dir("export-db")), db_(ExperimentDb::open(dir_ + "/attn-tuner.db")), suite_(suite),
      cases_(std::move(cases)) {
  RunRecord run;
  run.suite = suite;
  run.suite_json = suite_to_manifest_json(cases_);
  run.strategy = "test";
  run.templates = {"fa2_mma"};
  run.gpu_name = "test GPU";
  run_id_ = db_.begin_run(run);
}

std::int64_t ExportDb::add_iteration(const Config& config, const std::vector<std::uint8_t>& cubin,
                                     const Latency& latency, const std::string& content_hash, bool compile_ok,
                                     IterationStatus status) {
  const TemplateSpace space = TemplateSpace::load_named(default_templates_dir(), "fa2_mma");
  CompilerOptions options;
  options.use_cache = false;
  VariantRecord v;
  v.template_name = "fa2_mma";
  v.params_json = config_to_json(config);
  v.content_hash = content_hash.empty()
                       ? Compiler(options).content_hash(compile_request(space, config))
                       : content_hash;
  v.compile_ok = compile_ok;
  v.cubin_path = dir_ + "/" + v.content_hash + ".cubin";
  if (!cubin.empty()) write_file(v.cubin_path, std::string(cubin.begin(), cubin.end()));
  IterationRecord it;
  it.run_id = run_id_;
  it.variant_id = db_.upsert_variant(v);
  it.suite = suite_;
  it.template_name = "fa2_mma";
  it.params_json = v.params_json;
  it.iter = db_.begin_iteration(it);
  it.status = status;
  it.geomean_ms = 1.0;
  for (const CaseSpec& c : cases_) {
    CaseResultRecord r;
    r.case_id = c.case_id;
    r.family = c.family;
    r.median_ms = latency(c);
    r.samples = 10;
    r.passed = r.median_ms.has_value();
    it.cases.push_back(r);
  }
  db_.finish_iteration(it);
  return it.iter;
}

void ExportDb::champion(ChampionScope scope, std::int64_t iter, double score) {
  db_.set_champion({suite_, scope, iter, score, ""});
}

CommandResult export_cli(const std::string& args) {
  return run_command(shell_quote(binary_path()) + " export " + args);
}

nlohmann::json check_submission_dir(const std::string& dir, const std::string& decoded_dir) {
  const std::string script = temp_dir("export-checker") + "/check.py";
  write_file(script, submission_checker_py());
  std::string cmd = "python3 " + shell_quote(script) + " " + shell_quote(dir);
  if (!decoded_dir.empty()) cmd += " " + shell_quote(decoded_dir);
  const auto r = run_command(cmd);
  EXPECT_EQ(r.status, 0) << r.output;
  return nlohmann::json::parse(r.output.substr(r.output.find('{')));
}

}  // namespace attn::test
