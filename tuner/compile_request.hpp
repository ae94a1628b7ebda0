// How a config of a template is compiled: compile_request builds the one CompileRequest every caller hands to the
// Compiler (gpu/compiler.hpp): the tuning loop, `attn-tuner compile`, `bench`, `trace`, the proposal checks and
// export (db_variant, cubin_backfill).
#pragma once
#include <string>
#include <vector>

#include "core/config.hpp"
#include "gpu/compiler.hpp"
#include "tuner/space.hpp"

namespace attn {

/// The request that compiles `config` of `space`: its source and kernel; `config` completed with the space's
/// defaults (TemplateSpace::complete: a parameter the config lacks, e.g. one added to the template after the
/// config was recorded, gets its JSON default, the one source of a template's defaults: the source has none);
/// `extra` NVRTC options after the defines; and the space's patchable parameters (configs that differ only in
/// them share one NVRTC compile, CompileRequest::patchable). Two callers with the same space, config and extra
/// options get the same request, so the same content hash and cubin.
CompileRequest compile_request(const TemplateSpace& space, const Config& config, std::vector<std::string> extra = {});

}  // namespace attn
