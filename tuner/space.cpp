// TemplateSpace: loading kernels_templates/<name>.json, muparser constraints, check and enumerate.
#include "tuner/space.hpp"

#include "tuner/shard.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <muParser.h>
#include <nlohmann/json.hpp>

namespace attn {

/// One muparser per constraint, all bound to one slot per parameter. Evaluation writes the slots,
/// so it is serialised by `mu`.
struct TemplateSpace::Compiled {
  std::mutex mu;
  std::vector<double> vars;                         // slot i <-> parameters()[i]; never resized
  std::vector<std::unique_ptr<mu::Parser>> parsers;  // parsers[c] <-> constraints()[c]
  std::vector<std::size_t> ready;  // 1 + the highest parameter index constraint c names; 0 = none

  /// True when constraint c holds for the current slots; a throwing expression (modulo by zero) or a
  /// NaN counts as broken, and its message goes to *error when given.
  bool holds(std::size_t c, std::string* error = nullptr) {
    try {
      const double r = parsers[c]->Eval();
      return !std::isnan(r) && r != 0.0;
    } catch (const mu::Parser::exception_type& e) {
      if (error) *error = e.GetMsg();
      return false;
    }
  }
};

namespace {

using ojson = nlohmann::ordered_json;

constexpr double kTwo63 = 9223372036854775808.0;

/// `%` for muparser: integer modulo with C++'s sign rule (the sign of the dividend).
mu::value_type int_mod(mu::value_type a, mu::value_type b) {
  if (!std::isfinite(a) || !std::isfinite(b) || a != std::trunc(a) || b != std::trunc(b) ||
      std::fabs(a) >= kTwo63 || std::fabs(b) >= kTwo63)
    throw mu::ParserError("operator % needs integer operands");
  const auto ib = static_cast<std::int64_t>(b);
  if (ib == 0) throw mu::ParserError("modulo by zero");
  if (ib == -1) return 0.0;  // avoids INT64_MIN % -1
  return static_cast<double>(static_cast<std::int64_t>(a) % ib);
}

mu::value_type logical_not(mu::value_type a) { return a == 0.0 ? 1.0 : 0.0; }

/// Position of a lone '=' (muparser's assignment), or npos.
std::size_t find_assignment(const std::string& e) {
  for (std::size_t i = 0; i < e.size(); ++i) {
    if (e[i] != '=') continue;
    const bool after_cmp = i > 0 && std::string("=!<>").find(e[i - 1]) != std::string::npos;
    const bool before_eq = i + 1 < e.size() && e[i + 1] == '=';
    if (!after_cmp && !before_eq) return i;
    if (before_eq) ++i;  // skip the second '=' of "=="
  }
  return std::string::npos;
}

struct Loader {
  std::string path;

  std::invalid_argument fail(const std::string& msg) const {
    return std::invalid_argument(fmt::format("template space {}: {}", path, msg));
  }

  void only_keys(const ojson& j, std::initializer_list<const char*> allowed, const std::string& where) const {
    for (const auto& [k, v] : j.items()) {
      if (std::none_of(allowed.begin(), allowed.end(), [&k = k](const char* a) { return k == a; }))
        throw fail(fmt::format("{}: unknown key \"{}\" (allowed: {})", where, k, fmt::join(allowed, ", ")));
    }
  }

  std::string get_string(const ojson& j, const char* key, bool required, const std::string& where) const {
    if (!j.contains(key)) {
      if (required) throw fail(fmt::format("{}: missing field \"{}\"", where, key));
      return {};
    }
    if (!j[key].is_string())
      throw fail(fmt::format("{}: \"{}\" must be a string, got {}", where, key, j[key].type_name()));
    return j[key].get<std::string>();
  }

  std::int64_t get_int(const ojson& v, const std::string& where) const {
    if (!v.is_number_integer() ||
        (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      throw fail(fmt::format("{}: {} is not a 64-bit integer", where, v.dump()));
    return v.get<std::int64_t>();
  }
};

}  // namespace

TemplateSpace TemplateSpace::load(const std::string& json_path) {
  namespace fs = std::filesystem;
  const Loader L{json_path};
  std::ifstream in(json_path);
  if (!in) throw L.fail("cannot open the file");
  ojson j;
  try {
    j = ojson::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw L.fail(fmt::format("invalid JSON: {}", e.what()));
  }
  if (!j.is_object()) throw L.fail("the top level must be a JSON object");
  L.only_keys(j, {"name", "source", "kernel", "description", "parameters", "constraints", "default", "landed"},
              "top level");

  TemplateSpace s;
  s.json_path_ = json_path;
  s.name_ = L.get_string(j, "name", true, "top level");
  const std::string stem = fs::path(json_path).stem().string();
  if (s.name_ != stem)
    throw L.fail(fmt::format("\"name\" is \"{}\" but the file is {}.json (they must agree)", s.name_, stem));
  const std::string source = L.get_string(j, "source", true, "top level");
  if (source.empty()) throw L.fail("\"source\" is empty");
  s.source_path_ = (fs::path(json_path).parent_path() / source).string();
  if (!fs::is_regular_file(s.source_path_))
    throw L.fail(fmt::format("source file {} does not exist", s.source_path_));
  s.kernel_ = L.get_string(j, "kernel", true, "top level");
  if (!is_identifier(s.kernel_)) throw L.fail(fmt::format("kernel \"{}\" is not a C identifier", s.kernel_));
  s.description_ = L.get_string(j, "description", false, "top level");

  // Parameters, in the file's order (ordered_json keeps it).
  if (!j.contains("parameters")) throw L.fail("missing field \"parameters\"");
  const auto& jp = j["parameters"];
  if (!jp.is_object() || jp.empty()) throw L.fail("\"parameters\" must be a non-empty object");
  for (const auto& [pname, pj] : jp.items()) {
    const std::string where = fmt::format("parameter {}", pname);
    if (!is_identifier(pname)) throw L.fail(fmt::format("{}: the name is not a C identifier", where));
    if (!pj.is_object()) throw L.fail(fmt::format("{}: must be an object with \"values\"", where));
    L.only_keys(pj, {"values", "doc", "patchable"}, where);
    if (!pj.contains("values") || !pj["values"].is_array() || pj["values"].empty())
      throw L.fail(fmt::format("{}: \"values\" must be a non-empty array of integers", where));
    Parameter p{pname, {}, L.get_string(pj, "doc", false, where)};
    for (const auto& v : pj["values"]) {
      const auto x = L.get_int(v, where);
      if (std::find(p.values.begin(), p.values.end(), x) != p.values.end())
        throw L.fail(fmt::format("{}: value {} is listed twice", where, x));
      p.values.push_back(x);
    }
    if (pj.contains("patchable")) {
      if (!pj["patchable"].is_boolean()) throw L.fail(fmt::format("{}: \"patchable\" must be true or false", where));
      p.patchable = pj["patchable"].get<bool>();
    }
    s.parameters_.push_back(std::move(p));
  }

  // Constraints, compiled once.
  auto compiled = std::make_shared<Compiled>();
  compiled->vars.assign(s.parameters_.size(), 0.0);
  for (std::size_t i = 0; i < s.parameters_.size(); ++i)
    compiled->vars[i] = static_cast<double>(s.parameters_[i].values.front());
  if (j.contains("constraints")) {
    const auto& jc = j["constraints"];
    if (!jc.is_array()) throw L.fail("\"constraints\" must be an array of {\"expr\", \"why\"}");
    for (std::size_t ci = 0; ci < jc.size(); ++ci) {
      const auto& c = jc[ci];
      const std::string where = fmt::format("constraint #{}", ci + 1);
      if (!c.is_object()) throw L.fail(fmt::format("{}: must be an object with \"expr\"", where));
      L.only_keys(c, {"expr", "why"}, where);
      Constraint con{L.get_string(c, "expr", true, where), L.get_string(c, "why", false, where)};
      const std::string named = fmt::format("constraint \"{}\"", con.expr);
      if (con.expr.find_first_not_of(" \t\n") == std::string::npos) throw L.fail(where + ": empty expr");
      if (auto pos = find_assignment(con.expr); pos != std::string::npos)
        throw L.fail(fmt::format("{}: lone '=' at position {} (use '==' to compare)", named, pos));
      if (con.why.empty()) con.why = fmt::format("breaks {}", con.expr);

      auto parser = std::make_unique<mu::Parser>();
      std::size_t ready = 0;
      try {
        parser->DefineOprt("%", int_mod, mu::prMUL_DIV, mu::oaLEFT, true);
        parser->DefineInfixOprt("!", logical_not);
        for (std::size_t i = 0; i < s.parameters_.size(); ++i)
          parser->DefineVar(s.parameters_[i].name, &compiled->vars[i]);
        parser->SetExpr(con.expr);
        // GetUsedVar parses the whole expression (syntax errors throw) with unknown names allowed,
        // so we can name those ourselves.
        for (const auto& [vname, ptr] : parser->GetUsedVar()) {
          auto it = std::find_if(s.parameters_.begin(), s.parameters_.end(),
                                 [&vname = vname](const Parameter& p) { return p.name == vname; });
          if (it == s.parameters_.end())
            throw L.fail(fmt::format("{}: unknown name \"{}\" (not a parameter)", named, vname));
          ready = std::max<std::size_t>(ready, static_cast<std::size_t>(it - s.parameters_.begin()) + 1);
        }
      } catch (const mu::Parser::exception_type& e) {
        throw L.fail(fmt::format("{} does not parse: {}", named, e.GetMsg()));
      }
      compiled->parsers.push_back(std::move(parser));
      compiled->ready.push_back(ready);
      s.constraints_.push_back(std::move(con));
    }
  }
  s.compiled_ = std::move(compiled);

  // Default config: complete and valid.
  if (!j.contains("default")) throw L.fail("missing field \"default\"");
  const auto& jd = j["default"];
  if (!jd.is_object()) throw L.fail("\"default\" must be an object {NAME: value}");
  for (const auto& [k, v] : jd.items()) s.default_[k] = L.get_int(v, fmt::format("default {}", k));
  if (auto why = s.check(s.default_)) throw L.fail(fmt::format("default config is invalid: {}", *why));

  // "landed" (the wins `idea land` wrote into the source) is read by tuner/idea_parent.hpp's landed_ideas.
  if (j.contains("landed")) {
    const auto& jl = j["landed"];
    if (!jl.is_array()) throw L.fail("\"landed\" must be an array (idea land's record)");
    for (std::size_t i = 0; i < jl.size(); ++i) {
      const std::string where = fmt::format("landed #{}", i + 1);
      if (!jl[i].is_object()) throw L.fail(where + ": must be an object");
      L.only_keys(jl[i], {"idea_hash", "template", "idea", "file", "suite"}, where);
      if (L.get_string(jl[i], "idea_hash", true, where).empty() || L.get_string(jl[i], "template", true, where).empty())
        throw L.fail(where + ": \"idea_hash\" and \"template\" must not be empty");
    }
  }
  return s;
}

TemplateSpace TemplateSpace::load_named(const std::string& templates_dir, const std::string& name) {
  const auto path = std::filesystem::path(templates_dir) / (name + ".json");
  if (!std::filesystem::is_regular_file(path))
    throw std::invalid_argument(
        fmt::format("template \"{}\": no file {} (templates dir {})", name, path.string(), templates_dir));
  return load(path.string());
}

std::optional<std::string> TemplateSpace::check(const Config& c) const {
  for (const auto& [k, v] : c) {
    if (std::none_of(parameters_.begin(), parameters_.end(), [&k = k](const Parameter& p) { return p.name == k; }))
      return fmt::format("unknown parameter {} (template {})", k, name_);
  }
  for (const auto& p : parameters_) {
    auto it = c.find(p.name);
    if (it == c.end()) return fmt::format("missing parameter {}", p.name);
    if (std::find(p.values.begin(), p.values.end(), it->second) == p.values.end())
      return fmt::format("{}={} is not one of its values [{}]", p.name, it->second, fmt::join(p.values, ", "));
  }
  if (!in_shard(c)) return fmt::format("outside shard {}/{}", shard_index_, shard_count_);
  if (!compiled_) return std::nullopt;
  std::lock_guard lock(compiled_->mu);
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    compiled_->vars[i] = static_cast<double>(c.at(parameters_[i].name));
  for (std::size_t ci = 0; ci < constraints_.size(); ++ci) {
    std::string error;
    if (!compiled_->holds(ci, &error)) {
      if (!error.empty())
        return fmt::format("constraint \"{}\" cannot be evaluated: {}", constraints_[ci].expr, error);
      return constraints_[ci].why;
    }
  }
  return std::nullopt;
}

void TemplateSpace::walk_valid(const std::function<void(const std::vector<std::size_t>&)>& visit) const {
  if (parameters_.empty() || !compiled_) return;
  const std::size_t n = parameters_.size();
  // at_depth[d]: the constraints that can be decided once parameters [0, d) are set.
  std::vector<std::vector<std::size_t>> at_depth(n + 1);
  for (std::size_t ci = 0; ci < constraints_.size(); ++ci) at_depth[compiled_->ready[ci]].push_back(ci);

  std::lock_guard lock(compiled_->mu);
  auto holds_all = [&](std::size_t d) {
    return std::all_of(at_depth[d].begin(), at_depth[d].end(), [&](std::size_t ci) { return compiled_->holds(ci); });
  };
  if (!holds_all(0)) return;
  std::vector<std::size_t> idx(n, 0);
  std::function<void(std::size_t)> walk = [&](std::size_t d) {
    const auto& values = parameters_[d].values;
    for (std::size_t v = 0; v < values.size(); ++v) {
      idx[d] = v;
      compiled_->vars[d] = static_cast<double>(values[v]);
      if (!holds_all(d + 1)) continue;
      if (d + 1 == n)
        visit(idx);
      else
        walk(d + 1);
    }
  };
  walk(0);
}

std::vector<Config> TemplateSpace::enumerate() const {
  std::vector<Config> out;
  walk_valid([&](const std::vector<std::size_t>& idx) {
    Config c = config_at(idx);
    if (in_shard(c)) out.push_back(std::move(c));
  });
  return out;
}

void TemplateSpace::for_each_valid(const std::function<void(const std::vector<std::size_t>&)>& visit) const {
  walk_valid([&](const std::vector<std::size_t>& idx) {
    if (shard_count_ == 1 || in_shard(config_at(idx))) visit(idx);
  });
}

std::uint64_t TemplateSpace::count_valid() const {
  std::uint64_t n = 0;
  walk_valid([&](const std::vector<std::size_t>& idx) {
    if (shard_count_ == 1 || in_shard(config_at(idx))) ++n;
  });
  return n;
}

void TemplateSpace::restrict_to_shard(unsigned index, unsigned count) {
  if (count == 0 || index >= count)
    throw std::invalid_argument(fmt::format("template {}: shard {}/{} does not exist", name_, index, count));
  shard_index_ = index;
  shard_count_ = count;
}

Config TemplateSpace::complete(const Config& c) const {
  Config out = c;
  for (const auto& p : parameters_) out.emplace(p.name, default_.at(p.name));  // emplace keeps a present key
  return out;
}

void TemplateSpace::pin_to_default(const std::string& name) {
  const auto it = std::find_if(parameters_.begin(), parameters_.end(), [&](const Parameter& p) { return p.name == name; });
  if (it == parameters_.end())
    throw std::invalid_argument(fmt::format("template {}: cannot pin {} to its default: not a parameter", name_, name));
  it->values = {default_.at(name)};
}

bool TemplateSpace::in_shard(const Config& c) const {
  return shard_count_ == 1 || shard_of(name_, c, shard_count_) == shard_index_;
}

std::uint64_t TemplateSpace::raw_size() const {
  std::uint64_t total = 1;
  for (const auto& p : parameters_) {
    const std::uint64_t k = p.values.size();
    if (k != 0 && total > std::numeric_limits<std::uint64_t>::max() / k) return std::numeric_limits<std::uint64_t>::max();
    total *= k;
  }
  return total;
}

std::optional<std::vector<std::size_t>> TemplateSpace::indices_of(const Config& c) const {
  if (c.size() != parameters_.size()) return std::nullopt;
  std::vector<std::size_t> idx(parameters_.size());
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto it = c.find(parameters_[i].name);
    if (it == c.end()) return std::nullopt;
    const auto& values = parameters_[i].values;
    auto pos = std::find(values.begin(), values.end(), it->second);
    if (pos == values.end()) return std::nullopt;
    idx[i] = static_cast<std::size_t>(pos - values.begin());
  }
  return idx;
}

Config TemplateSpace::config_at(const std::vector<std::size_t>& idx) const {
  if (idx.size() != parameters_.size())
    throw std::out_of_range(fmt::format("template {}: {} indices for {} parameters", name_, idx.size(),
                                        parameters_.size()));
  Config c;
  for (std::size_t i = 0; i < idx.size(); ++i) c.emplace(parameters_[i].name, parameters_[i].values.at(idx[i]));
  return c;
}

std::vector<std::string> TemplateSpace::patchable_names() const {
  std::vector<std::string> out;
  for (const auto& p : parameters_)
    if (p.patchable) out.push_back(p.name);
  return out;
}

std::vector<Config> TemplateSpace::patch_siblings(const Config& c) const {
  std::vector<const Parameter*> axes;
  for (const auto& p : parameters_)
    if (p.patchable && c.count(p.name)) axes.push_back(&p);
  std::vector<Config> out;
  std::vector<std::size_t> at(axes.size(), 0);
  for (bool more = !axes.empty(); more;) {
    Config s = c;
    for (std::size_t i = 0; i < axes.size(); ++i) s[axes[i]->name] = axes[i]->values[at[i]];
    if (s != c && !check(s)) out.push_back(std::move(s));
    more = false;
    for (std::size_t i = axes.size(); i-- > 0;) {
      if (++at[i] < axes[i]->values.size()) {
        more = true;
        break;
      }
      at[i] = 0;
    }
  }
  return out;
}

}  // namespace attn
