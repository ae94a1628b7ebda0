#include "db/records.hpp"

#include <array>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace attn {
namespace {

template <class E, std::size_t N>
E parse_enum(std::string_view s, const std::array<const char*, N>& names, const char* what) {
  for (std::size_t i = 0; i < N; ++i) {
    if (s == names[i]) return static_cast<E>(i);
  }
  throw std::invalid_argument(fmt::format("unknown {} \"{}\" (expected one of: {})", what, s,
                                          fmt::join(names, ", ")));
}

constexpr std::array<const char*, 5> kRunStatus{"running", "finished", "stopped", "interrupted", "failed"};
constexpr std::array<const char*, 5> kIterStatus{"running", "keep", "discard", "crash", "interrupted"};
constexpr std::array<const char*, 2> kFidelity{"screen", "full"};
constexpr std::array<const char*, 3> kHoldoutRole{"challenger", "incumbent", "champion"};
constexpr std::array<const char*, 5> kProposalStatus{"running", "accepted", "rejected", "empty", "interrupted"};
constexpr std::array<const char*, 5> kIdeaStatus{"checking", "tuning", "judging", "done", "interrupted"};
constexpr std::array<const char*, 5> kIdeaVerdict{"", "win", "no_gain", "slower", "broken"};
constexpr std::array<const char*, 14> kIdeaBrokenKind{
    "",      "bad_input",   "does_not_apply", "crash",    "compile",     "device_limit", "fault",
    "hang",  "wrong_result", "worker_died",   "interrupted", "proposal", "inconsistent", "below_floor"};
static_assert(kIdeaBrokenKind.size() == std::size_t(IdeaBrokenKind::below_floor) + 1, "a name for every IdeaBrokenKind");

/// Whether every FailureKind but none names an IdeaBrokenKind (idea_broken_kind maps them by name).
constexpr bool every_failure_kind_names_a_broken_kind() {
  for (std::size_t i = 1; i < std::size(kFailureKindNames); ++i) {
    bool found = false;
    for (const char* n : kIdeaBrokenKind) found = found || std::string_view(n) == kFailureKindNames[i];
    if (!found) return false;
  }
  return true;
}
static_assert(every_failure_kind_names_a_broken_kind(), "an IdeaBrokenKind for every FailureKind (same name)");

constexpr std::array<const char*, 4> kScope{"overall", "sliding_window", "sliding_window_global",
                                            "sliding_window_retrieval"};

template <class T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
nlohmann::json opt_text(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }

nlohmann::json parse_params_object(const std::string& json) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for a number such as 1e309
    throw std::invalid_argument(fmt::format("params JSON does not parse ({}): {}", e.what(), json));
  }
  if (!j.is_object()) throw std::invalid_argument(fmt::format("params JSON is not an object: {}", json));
  for (const auto& [key, value] : j.items()) {
    if (!value.is_primitive() || value.is_null()) {
      throw std::invalid_argument(fmt::format("params JSON: value of \"{}\" is not a number, string or bool: {}",
                                              key, json));
    }
  }
  return j;
}

}  // namespace

const char* to_string(RunStatus s) { return kRunStatus.at(static_cast<std::size_t>(s)); }
const char* to_string(IterationStatus s) { return kIterStatus.at(static_cast<std::size_t>(s)); }
const char* to_string(ChampionScope s) { return kScope.at(static_cast<std::size_t>(s)); }
const char* to_string(Fidelity f) { return kFidelity.at(static_cast<std::size_t>(f)); }
const char* to_string(HoldoutRole r) { return kHoldoutRole.at(static_cast<std::size_t>(r)); }
Fidelity parse_fidelity(std::string_view s) { return parse_enum<Fidelity>(s, kFidelity, "fidelity"); }
HoldoutRole parse_holdout_role(std::string_view s) {
  return parse_enum<HoldoutRole>(s, kHoldoutRole, "held-out check role");
}
const char* to_string(ProposalStatus s) { return kProposalStatus.at(static_cast<std::size_t>(s)); }

const char* to_string(IdeaStatus s) { return kIdeaStatus.at(static_cast<std::size_t>(s)); }
const char* to_string(IdeaVerdict v) { return kIdeaVerdict.at(static_cast<std::size_t>(v)); }
const char* to_string(IdeaBrokenKind k) { return kIdeaBrokenKind.at(static_cast<std::size_t>(k)); }
IdeaStatus parse_idea_status(std::string_view s) { return parse_enum<IdeaStatus>(s, kIdeaStatus, "idea status"); }
IdeaVerdict parse_idea_verdict(std::string_view s) { return parse_enum<IdeaVerdict>(s, kIdeaVerdict, "idea verdict"); }
IdeaBrokenKind parse_idea_broken_kind(std::string_view s) {
  return parse_enum<IdeaBrokenKind>(s, kIdeaBrokenKind, "idea broken kind");
}
IdeaBrokenKind idea_broken_kind(FailureKind k) {
  return k == FailureKind::none ? IdeaBrokenKind::none : parse_idea_broken_kind(to_string(k));
}

RunStatus parse_run_status(std::string_view s) { return parse_enum<RunStatus>(s, kRunStatus, "run status"); }
IterationStatus parse_iteration_status(std::string_view s) {
  return parse_enum<IterationStatus>(s, kIterStatus, "iteration status");
}
ChampionScope parse_champion_scope(std::string_view s) {
  return parse_enum<ChampionScope>(s, kScope, "champion scope");
}
ProposalStatus parse_proposal_status(std::string_view s) {
  return parse_enum<ProposalStatus>(s, kProposalStatus, "proposal status");
}

ChampionScope champion_scope_of(Family f) {
  switch (f) {
    case Family::sliding_window: return ChampionScope::sliding_window;
    case Family::sliding_window_global: return ChampionScope::sliding_window_global;
    case Family::sliding_window_retrieval: return ChampionScope::sliding_window_retrieval;
  }
  throw std::invalid_argument("champion_scope_of: unknown family");
}

bool is_finished(IterationStatus s) { return s != IterationStatus::running; }

std::string canonical_params_json(const std::string& json) {
  // nlohmann::json objects are std::map-backed: dump() writes the keys sorted.
  return parse_params_object(json).dump();
}

std::string compact_params(const std::string& json) {
  std::string out;
  const nlohmann::json params = parse_params_object(json);  // named: items() must not outlive it
  for (const auto& [key, value] : params.items()) {
    if (!out.empty()) out += ',';
    out += key;
    out += '=';
    if (value.is_string()) out += value.get<std::string>();
    else if (value.is_boolean()) out += value.get<bool>() ? "1" : "0";
    else out += value.dump();
  }
  return out;
}

void to_json(nlohmann::json& j, const RunRecord& r) {
  j = {{"id", r.id},
       {"started_at", r.started_at},
       {"ended_at", opt_text(r.ended_at)},
       {"suite", r.suite},
       {"strategy", r.strategy},
       {"templates", r.templates},
       {"gpu_name", r.gpu_name},
       {"driver", r.driver},
       {"sm_clock_mhz", opt(r.sm_clock_mhz)},
       {"git_commit", r.git_commit},
       {"host", r.host},
       {"status", to_string(r.status)},
       {"stop_reason", opt_text(r.stop_reason)}};
}

void to_json(nlohmann::json& j, const VariantRecord& v) {
  j = {{"id", v.id},
       {"template", v.template_name},
       {"params", v.params},
       {"params_json", nlohmann::json::parse(v.params_json.empty() ? "{}" : v.params_json)},
       {"content_hash", v.content_hash},
       {"compile_ok", v.compile_ok},
       {"compile_ms", opt(v.compile_ms)},
       {"compile_log", v.compile_log},
       {"registers", opt(v.registers)},
       {"smem_bytes", opt(v.smem_bytes)},
       {"spill_bytes", opt(v.spill_bytes)},
       {"cubin_path", opt_text(v.cubin_path)},
       {"created_at", v.created_at}};
}

void to_json(nlohmann::json& j, const CaseResultRecord& c) {
  j = {{"case_id", c.case_id},
       {"family", family_name(c.family)},
       {"median_ms", opt(c.median_ms)},
       {"spread", opt(c.spread)},
       {"samples", c.samples},
       {"sm_clock_mhz", opt(c.sm_clock_mhz)},
       {"o_max_abs_diff", opt(c.o_max_abs_diff)},
       {"lse_max_abs_diff", opt(c.lse_max_abs_diff)},
       {"passed", c.passed}};
}

void to_json(nlohmann::json& j, const IterationRecord& it) {
  j = {{"iter", it.iter},
       {"run_id", it.run_id},
       {"variant_id", opt(it.variant_id)},
       {"suite", it.suite},
       {"template", it.template_name},
       {"params", it.params},
       {"params_json", nlohmann::json::parse(it.params_json.empty() ? "{}" : it.params_json)},
       {"status", to_string(it.status)},
       {"failure_kind", to_string(it.failure_kind)},
       {"geomean_ms", opt(it.geomean_ms)},
       {"delta_ms", opt(it.delta_ms)},
       {"window_ms", opt(it.window_ms)},
       {"global_ms", opt(it.global_ms)},
       {"retrieval_ms", opt(it.retrieval_ms)},
       {"description", it.description},
       {"started_at", it.started_at},
       {"finished_at", opt_text(it.finished_at)},
       {"gpu_ms", opt(it.gpu_ms)},
       {"compile_ms", opt(it.compile_ms)},
       {"fidelity", to_string(it.fidelity)},
       {"screen_ms", opt(it.screen_ms)},
       {"root_seed", opt(it.root_seed)},
       {"proposal_id", opt(it.proposal_id)},
       {"gpu_index", opt(it.gpu_index)},
       {"gpu_uuid", opt_text(it.gpu_uuid)},
       {"sm_clock_mhz", opt(it.sm_clock_mhz)}};
  if (!it.cases.empty()) j["cases"] = it.cases;
}

void to_json(nlohmann::json& j, const ChampionRecord& c) {
  j = {{"suite", c.suite},
       {"scope", to_string(c.scope)},
       {"iter", c.iteration_id},
       {"score_ms", c.score_ms},
       {"promoted_at", c.promoted_at}};
}

void to_json(nlohmann::json& j, const ChampionPromotion& p) {
  j = p.champion;
  j["id"] = p.id;
  j["previous_iter"] = opt(p.previous_iteration_id);
  j["previous_score_ms"] = opt(p.previous_score_ms);
  nlohmann::json aba = nlohmann::json::parse(p.aba_json, nullptr, /*allow_exceptions=*/false);
  j["aba"] = aba.is_discarded() ? nlohmann::json(p.aba_json) : aba;
}

void to_json(nlohmann::json& j, const RunProgress& p) {
  j = {{"iterations", p.iterations}, {"running", p.running},       {"keep", p.keep},
       {"discard", p.discard},       {"crash", p.crash},           {"interrupted", p.interrupted},
       {"gpu_ms", p.gpu_ms},         {"compile_ms", p.compile_ms}, {"best_geomean_ms", opt(p.best_geomean_ms)},
       {"screened_out", p.screened_out}, {"full_evaluations", p.full_evaluations}};
}

void to_json(nlohmann::json& j, const HoldoutCheckRecord& h) {
  j = {{"id", h.id},
       {"run_id", h.run_id},
       {"iteration_id", h.iteration_id},
       {"suite", h.suite},
       {"root_seed", h.root_seed},
       {"role", to_string(h.role)},
       {"ok", h.ok},
       {"score_ms", opt(h.score_ms)},
       {"window_ms", opt(h.window_ms)},
       {"global_ms", opt(h.global_ms)},
       {"retrieval_ms", opt(h.retrieval_ms)},
       {"tuned_ms", opt(h.tuned_ms)},
       {"verdict", h.verdict},
       {"cases", nlohmann::json::parse(h.cases_json.empty() ? "[]" : h.cases_json)},
       {"checked_at", h.checked_at}};
}

void to_json(nlohmann::json& j, const ProposalRecord& p) {
  j = {{"id", p.id},
       {"run_id", p.run_id},
       {"command", p.command},
       {"started_at", p.started_at},
       {"finished_at", opt_text(p.finished_at)},
       {"parent_template", p.parent_template},
       {"parent_iteration_id", opt(p.parent_iteration_id)},
       {"template", opt_text(p.template_name)},
       {"status", to_string(p.status)},
       {"reason", p.reason},
       {"description", p.description},
       {"source", opt(p.source)},
       {"space_json", opt(p.space_json)},
       {"headers_json", p.headers_json},
       {"diff", p.diff},
       {"exit_status", p.exit_status},
       {"proposer_ms", opt(p.proposer_ms)},
       {"output", p.output}};
}

}  // namespace attn
