// Writing a parameter's value into a compiled cubin: a template that reads parameter NAME from
// `extern "C" __constant__ int attn_param_NAME = NAME;` compiles, for every value of NAME, to cubins that differ
// only in that variable's 4 initial bytes (checked byte for byte by tests/gpu/test_cubin_patch.cpp on
// fa3_tma's CMEM_PARAMS build). So one NVRTC compile serves all its values: the compiler patches the bytes.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace attn {

/// The symbol a patchable parameter's value lives in: "attn_param_" + name.
std::string patchable_symbol(const std::string& name);

/// Writes each value (little-endian int32) over the initial bytes of symbol attn_param_<name> in `cubin`, an
/// ELF64 little-endian CUDA cubin (ELF symbol table: st_shndx names the section, st_value the offset in it).
/// Returns nullopt on success, else why nothing was written: not an ELF64 little-endian file, a section or the
/// symbol table out of bounds, a symbol missing (the config compiled the parameter in), a symbol not 4 bytes or
/// in a section without file bytes. `cubin` is left untouched on any error.
std::optional<std::string> patch_cubin_params(std::vector<char>& cubin, const std::map<std::string, std::int64_t>& values);

}  // namespace attn
