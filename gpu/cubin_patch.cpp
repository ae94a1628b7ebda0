#include "gpu/cubin_patch.hpp"

#include <elf.h>

#include <cstring>
#include <limits>

#include <fmt/format.h>

namespace attn {
namespace {

/// `count` records of T at byte `offset` of `bytes`, or nullptr when they do not fit.
template <class T>
const T* records_at(const std::vector<char>& bytes, std::uint64_t offset, std::uint64_t count) {
  if (offset > bytes.size() || count > (bytes.size() - offset) / sizeof(T)) return nullptr;
  return reinterpret_cast<const T*>(bytes.data() + offset);
}

}  // namespace

std::string patchable_symbol(const std::string& name) { return "attn_param_" + name; }

std::optional<std::string> patch_cubin_params(std::vector<char>& cubin, const std::map<std::string, std::int64_t>& values) {
  Elf64_Ehdr eh;
  if (cubin.size() < sizeof eh) return "not an ELF file (too short)";
  std::memcpy(&eh, cubin.data(), sizeof eh);
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
      eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return "not an ELF64 little-endian file";
  if (eh.e_shentsize != sizeof(Elf64_Shdr)) return fmt::format("section header size {}, expected 64", eh.e_shentsize);
  const Elf64_Shdr* sh = records_at<Elf64_Shdr>(cubin, eh.e_shoff, eh.e_shnum);
  if (!sh) return "section headers out of bounds";
  const Elf64_Shdr* symtab = nullptr;
  for (unsigned i = 0; i < eh.e_shnum; ++i)
    if (sh[i].sh_type == SHT_SYMTAB) symtab = &sh[i];
  if (!symtab || symtab->sh_link >= eh.e_shnum) return "no symbol table";
  const Elf64_Shdr& strtab = sh[symtab->sh_link];
  const Elf64_Sym* syms = records_at<Elf64_Sym>(cubin, symtab->sh_offset, symtab->sh_size / sizeof(Elf64_Sym));
  if (!syms || strtab.sh_offset > cubin.size() || strtab.sh_size > cubin.size() - strtab.sh_offset)
    return "symbol table out of bounds";
  const std::size_t n_syms = symtab->sh_size / sizeof(Elf64_Sym);

  std::vector<std::pair<std::size_t, std::int32_t>> writes;  // (file offset, value): all checked before any write
  for (const auto& [name, value] : values) {
    if (value < std::numeric_limits<std::int32_t>::min() || value > std::numeric_limits<std::int32_t>::max())
      return fmt::format("{} = {} does not fit the int of {}", name, value, patchable_symbol(name));
    const std::string symbol = patchable_symbol(name);
    const Elf64_Sym* found = nullptr;
    for (std::size_t i = 0; i < n_syms && !found; ++i) {
      const std::uint64_t at = strtab.sh_offset + syms[i].st_name;
      if (syms[i].st_name < strtab.sh_size && strtab.sh_size - syms[i].st_name > symbol.size() &&
          std::memcmp(cubin.data() + at, symbol.c_str(), symbol.size() + 1) == 0)
        found = &syms[i];
    }
    if (!found) return fmt::format("symbol {} not in the cubin (this build compiles {} in)", symbol, name);
    if (found->st_size != 4) return fmt::format("symbol {} has {} bytes, expected 4 (an int)", symbol, found->st_size);
    if (found->st_shndx == SHN_UNDEF || found->st_shndx >= eh.e_shnum || sh[found->st_shndx].sh_type == SHT_NOBITS)
      return fmt::format("symbol {} has no initial bytes in the file (section {})", symbol, found->st_shndx);
    const Elf64_Shdr& sec = sh[found->st_shndx];
    if (found->st_value > sec.sh_size || sec.sh_size - found->st_value < 4 || sec.sh_offset > cubin.size() ||
        cubin.size() - sec.sh_offset < sec.sh_size)
      return fmt::format("symbol {} lies outside its section", symbol);
    writes.emplace_back(sec.sh_offset + found->st_value, std::int32_t(value));
  }
  for (const auto& [offset, value] : writes) {
    const std::uint32_t u = std::uint32_t(value);
    const unsigned char le[4] = {static_cast<unsigned char>(u), static_cast<unsigned char>(u >> 8),
                                 static_cast<unsigned char>(u >> 16), static_cast<unsigned char>(u >> 24)};
    std::memcpy(cubin.data() + offset, le, 4);
  }
  return std::nullopt;
}

}  // namespace attn
