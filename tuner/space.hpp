// Parameter space of a kernel template: kernels_templates/<name>.json lists each parameter with its
// values and the constraints between them. A Config is one assignment; it reaches NVRTC as -D macros.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config.hpp"

namespace attn {

struct Parameter {
  std::string name;
  std::vector<std::int64_t> values;  ///< in the order the JSON gives; neighbours are adjacent values
  std::string doc;
  /// The template reads it from `__constant__ int attn_param_<NAME>` (initialized from the macro): configs that
  /// differ only in patchable parameters share one NVRTC compile (CompileRequest::patchable, gpu/cubin_patch.hpp)
  /// and the tuning loop queues them together (patch_siblings, docs/tuner.md).
  bool patchable = false;
};

struct Constraint {
  std::string expr;  ///< muparser expression over parameter names; non-zero = allowed. `%` is modulo.
  std::string why;   ///< the reason, shown when a config is rejected
};

/// A template and its space, loaded from kernels_templates/<name>.json:
/// {"name", "source" (file beside the json), "kernel" (entry symbol), "description",
///  "parameters": {NAME: {"values": [...], "doc": "...", "patchable": bool}}, "constraints": [{"expr", "why"}],
///  "default": {NAME: value}}.
/// Required: name (equal to the file's stem), source (must exist), kernel, parameters (non-empty, each
/// with a non-empty list of distinct integers), default. Optional: description, doc, constraints, why
/// (defaults to "breaks <expr>"). Unknown keys are errors (they are usually typos).
///
/// Constraint language (muparser 2.3): numbers, parameter names, + - * / ^ (real arithmetic),
/// `%` (integer modulo, C++ sign rule; by zero = the config is rejected), == != < <= > >=, && ||,
/// unary `!`, `c ? a : b`, and muparser's functions (min, max, abs, ...). A lone `=` (assignment in
/// muparser) is refused at load, since it is almost always a typo for `==`.
///
/// Copies share the compiled constraints; check() and enumerate() are safe to call from several
/// threads (evaluation is serialised by a mutex inside).
class TemplateSpace {
 public:
  /// Throws std::invalid_argument naming the file and the problem (missing field, empty values,
  /// a constraint that does not parse, a default outside the values or breaking a constraint).
  static TemplateSpace load(const std::string& json_path);
  /// Finds <dir>/<name>.json.
  static TemplateSpace load_named(const std::string& templates_dir, const std::string& name);

  const std::string& name() const { return name_; }
  const std::string& kernel() const { return kernel_; }
  const std::string& source_path() const { return source_path_; }
  const std::string& description() const { return description_; }
  /// The .json file this space was loaded from.
  const std::string& json_path() const { return json_path_; }
  const std::vector<Parameter>& parameters() const { return parameters_; }
  const std::vector<Constraint>& constraints() const { return constraints_; }
  const Config& default_config() const { return default_; }
  /// Names of the patchable parameters (Parameter::patchable), in parameters() order.
  std::vector<std::string> patchable_names() const;
  /// The valid configs that differ from `c` only in patchable parameters `c` sets, `c` itself left out: every
  /// combination of their values (an odometer in parameters() order, each walking its list), the rest as in `c`.
  /// Empty when the space has no patchable parameter. The tuning loop's patched siblings (docs/tuner.md).
  std::vector<Config> patch_siblings(const Config& c) const;

  /// Empty when `c` is valid, else why not: an unknown or missing parameter, a value not in the list,
  /// the `why` of the first constraint it breaks, or "outside shard i/N" (restrict_to_shard).
  std::optional<std::string> check(const Config& c) const;
  /// Every valid config, in odometer order over the JSON's parameter order: the last parameter
  /// changes fastest, each parameter walks its values in the JSON's order (itertools.product order).
  /// Constraints prune as soon as the parameters they name are set, so large spaces with tight
  /// constraints stay cheap.
  std::vector<Config> enumerate() const;
  /// The walk behind enumerate() without building the configs: calls `visit` with the value indices of each
  /// valid config (parameters() order; config_at() builds the config), in enumerate()'s order. For holding
  /// a large space compactly (SearchState's ValidConfigs).
  void for_each_valid(const std::function<void(const std::vector<std::size_t>&)>& visit) const;
  /// The number of valid configs (enumerate().size()) without materialising them: the same pruned
  /// odometer walk, counting leaves. For spaces of 10^6 raw configs and more.
  std::uint64_t count_valid() const;
  /// From now on only the configs of shard `index` of `count` are valid (tuner/shard.hpp: a stable hash
  /// of the template name and the canonical config, mod count): check(), enumerate() and count_valid()
  /// see the shard alone. Count 1 = the whole space. Throws std::invalid_argument when index >= count.
  void restrict_to_shard(unsigned index, unsigned count);
  unsigned shard_index() const { return shard_index_; }
  unsigned shard_count() const { return shard_count_; }
  /// `c` plus the default value of each parameter of this space that `c` lacks; the keys `c` has are
  /// kept as they are (unknown ones too: check() still judges them). The JSON default is the one default a
  /// parameter has (a template's source refuses to compile without it, kernels_templates/ABI.md), and a
  /// parameter added to a template takes as default the value that builds the kernel as it was before, so a
  /// config recorded before it, completed, compiles to the kernel it was recorded with (daemon resume, replay,
  /// compile_request).
  Config complete(const Config& c) const;
  /// From now on parameter `name` has only its default value (values() = {default}): check(),
  /// enumerate() and count_valid() see that slice of the space. For a parameter added to a template after
  /// a DB was recorded: replay of that DB then measures the space it was recorded in. Throws
  /// std::invalid_argument naming an unknown parameter.
  void pin_to_default(const std::string& name);

  /// Product of the value counts (before constraints); saturates at UINT64_MAX.
  std::uint64_t raw_size() const;

  /// Position of each parameter's value in its list (parameters() order), or nullopt when `c` has a
  /// missing or unknown parameter or a value outside a list. Constraints are not checked.
  std::optional<std::vector<std::size_t>> indices_of(const Config& c) const;
  /// The config with value index idx[i] for parameters()[i]; throws std::out_of_range on a bad index.
  Config config_at(const std::vector<std::size_t>& idx) const;

  struct Compiled;  // muparser state; defined in space.cpp

 private:
  std::string name_, kernel_, source_path_, description_, json_path_;
  std::vector<Parameter> parameters_;
  std::vector<Constraint> constraints_;
  Config default_;
  std::shared_ptr<Compiled> compiled_;
  unsigned shard_index_ = 0, shard_count_ = 1;

  bool in_shard(const Config& c) const;

  /// The pruned odometer walk behind enumerate() and count_valid(): calls `visit` with the value
  /// indices of each valid config, in odometer order. Holds the constraint mutex throughout.
  void walk_valid(const std::function<void(const std::vector<std::size_t>&)>& visit) const;
};

}  // namespace attn
