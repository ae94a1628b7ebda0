// The ABI check of a kernel template from its PTX (see abi_check.hpp).
#include "gpu/abi_check.hpp"

#include "gpu/nvrtc_ptx.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace attn {
namespace {

/// One `.param` of an entry: bytes and alignment as PTX declares them.
struct PtxParam {
  std::string decl;
  int bytes = 0;
  int align = 0;
};

int type_bytes(const std::string& t) {
  if (t == "b8" || t == "u8" || t == "s8") return 1;
  if (t == "b16" || t == "u16" || t == "s16" || t == "f16") return 2;
  if (t == "b32" || t == "u32" || t == "s32" || t == "f32") return 4;
  if (t == "b64" || t == "u64" || t == "s64" || t == "f64") return 8;
  return 0;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

PtxParam parse_param(const std::string& decl) {
  // ".param .u64 k_param_0", ".param .u64 .ptr .global .align 2 k_param_0", ".param .align 64 .b8 k_param_12[512]"
  static const std::regex type_re(R"(\.(b8|u8|s8|b16|u16|s16|f16|b32|u32|s32|f32|b64|u64|s64|f64)\b)");
  static const std::regex align_re(R"(\.align\s+(\d+))");
  static const std::regex array_re(R"(\[(\d+)\]\s*$)");
  PtxParam p{trim(decl), 0, 0};
  std::smatch m;
  // The value type is the first type token (after .ptr the .align belongs to the pointee, not the param).
  if (std::regex_search(p.decl, m, type_re)) p.bytes = type_bytes(m[1].str());
  std::string before_type = p.decl.substr(0, m.empty() ? p.decl.size() : std::size_t(m.position(0)));
  if (std::regex_search(before_type, m, align_re)) p.align = std::stoi(m[1].str());
  if (std::regex_search(p.decl, m, array_re)) p.bytes *= std::stoi(m[1].str());
  if (p.align == 0) p.align = p.bytes;
  return p;
}

/// The lines of `ptx` that contain `needle` (regexes then run on short lines, never on the whole module).
std::vector<std::pair<std::size_t, std::string>> lines_with(const std::string& ptx, const std::string& needle) {
  std::vector<std::pair<std::size_t, std::string>> out;  // (offset of the line end, line)
  for (std::size_t pos = ptx.find(needle); pos != std::string::npos; pos = ptx.find(needle, pos + 1)) {
    const std::size_t begin = ptx.rfind('\n', pos) == std::string::npos ? 0 : ptx.rfind('\n', pos) + 1;
    const std::size_t end = std::min(ptx.find('\n', pos), ptx.size());
    out.emplace_back(end, ptx.substr(begin, end - begin));
    pos = end;
  }
  return out;
}

std::string entry_names(const std::string& ptx) {
  static const std::regex entry_re(R"(\.entry\s+([A-Za-z_$][\w$]*))");
  std::vector<std::string> names;
  for (const auto& [end, line] : lines_with(ptx, ".entry")) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) names.push_back(m[1].str());
  }
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}

/// attn_launch_info from its PTX definition: nullopt when absent; throws std::invalid_argument when the
/// declaration is not usable (extern only, wrong size).
std::optional<std::vector<int>> launch_info_from_ptx(const std::string& ptx) {
  static const std::regex decl_re(
      R"(^[ \t]*((?:\.(?:visible|weak|extern)[ \t]+)*)\.global[ \t]+(?:\.align[ \t]+\d+[ \t]+)?\.(b8|u8|s8|b32|u32|s32)[ \t]+attn_launch_info\[(\d+)\][ \t]*(=[ \t]*\{([^}]*)\})?[ \t]*;)");
  std::smatch m;
  std::string line;
  for (const auto& [end, l] : lines_with(ptx, "attn_launch_info["))
    if (std::regex_search(l, m, decl_re)) {
      line = l;
      break;
    }
  if (line.empty()) return std::nullopt;
  std::regex_search(line, m, decl_re);
  if (m[1].str().find(".extern") != std::string::npos)
    throw std::invalid_argument("attn_launch_info is only declared (extern), not defined in this module");
  const int elem = type_bytes(m[2].str());
  const int count = std::stoi(m[3].str());
  const int bytes = elem * count;
  if (bytes != 16 && bytes != 32)
    throw std::invalid_argument(fmt::format("attn_launch_info has {} bytes; the ABI needs int[4] (16) or int[8] (32)", bytes));
  std::vector<std::int64_t> elems(std::size_t(count), 0);
  if (m[4].matched) {
    std::stringstream list(m[5].str());
    std::string item;
    for (std::size_t i = 0; std::getline(list, item, ',') && i < elems.size(); ++i) elems[i] = std::stoll(trim(item), nullptr, 0);
  }
  std::vector<int> ints(std::size_t(bytes / 4), 0);
  for (std::size_t i = 0; i < ints.size(); ++i) {
    if (elem == 4) {
      ints[i] = int(std::uint32_t(elems[i]));
    } else {
      std::uint32_t v = 0;
      for (int b = 0; b < 4; ++b) v |= std::uint32_t(elems[i * 4 + std::size_t(b)] & 0xff) << (8 * b);
      ints[i] = int(v);
    }
  }
  return ints;
}

/// The host's checks of gpu/attn_kernel.cpp load_attn_kernel, as a message ("" when fine).
std::string launch_info_problem(const std::vector<int>& v) {
  const int threads = v[0], smem = v[1], block_m = v[2], grid_mode = v[3];
  const int q_rows = v.size() > 4 ? v[4] : 0, kv_rows = v.size() > 5 ? v[5] : 0, o_rows = v.size() > 6 ? v[6] : 0;
  const int ctas = v.size() > 7 ? v[7] : 1;
  const auto rows_ok = [](int r) { return r >= 1 && r <= 256; };
  std::vector<std::string> bad;
  if (threads < 1 || threads > 1024) bad.push_back(fmt::format("threads {} not in 1..1024", threads));
  if (smem < 0) bad.push_back(fmt::format("dynamic smem {} < 0", smem));
  if (block_m < 1) bad.push_back(fmt::format("BLOCK_M {} < 1", block_m));
  if (grid_mode != 0 && grid_mode != 1) bad.push_back(fmt::format("grid mode {} not 0 or 1", grid_mode));
  if (kv_rows != 0 && !(rows_ok(q_rows) && rows_ok(kv_rows) && (o_rows == 0 || rows_ok(o_rows))))
    bad.push_back(fmt::format("tensor-map rows q {} kv {} o {} outside 1..256", q_rows, kv_rows, o_rows));
  if (kv_rows < 0) bad.push_back(fmt::format("tensor-map kv rows {} < 0", kv_rows));
  if (ctas < 1) bad.push_back(fmt::format("CTAs per SM {} < 1", ctas));
  if (bad.empty()) return "";
  return fmt::format("attn_launch_info {{{}}} as initialised is malformed: {}", fmt::join(v, ", "), fmt::join(bad, "; "));
}

}  // namespace

KernelAbi check_ptx_abi(const std::string& ptx, const std::string& kernel) {
  KernelAbi r;
  r.compiled = true;
  const auto fail = [&](std::string why) {
    r.ok = false;
    r.problem = std::move(why);
    return r;
  };
  const std::regex entry_re("\\.visible\\s+\\.entry\\s+" + kernel + "\\s*\\(");
  std::optional<std::size_t> open;
  for (const auto& [end, line] : lines_with(ptx, ".entry")) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      open = end - line.size() + std::size_t(m.position(0) + m.length(0));
      break;
    }
  }
  if (!open)
    return fail(fmt::format("no kernel entry `{}` with C linkage (declare it extern \"C\" __global__); entries in "
                            "the PTX: {}",
                            kernel, entry_names(ptx)));
  const std::size_t close = ptx.find(')', *open);
  if (close == std::string::npos) return fail("the PTX entry declaration of " + kernel + " is not closed");
  std::vector<PtxParam> params;
  std::stringstream list(ptx.substr(*open, close - *open));
  for (std::string item; std::getline(list, item, ',');)
    if (!trim(item).empty()) params.push_back(parse_param(item));
  r.params = int(params.size());

  static const char* const kNames[] = {"q", "k", "v", "row_ptr", "col_idx", "seq_lens", "o", "lse",
                                       "batch_size", "num_heads", "t_max", "col_width", "tensor maps"};
  if (params.size() != 12 && params.size() != 13)
    return fail(fmt::format("{} has {} parameters; the ABI (kernels_templates/ABI.md) has 12 (q, k, v, row_ptr, "
                            "col_idx, seq_lens, o, lse, batch_size, num_heads, t_max, col_width) and optionally a "
                            "13th, the tensor maps",
                            kernel, params.size()));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int want = i < 8 ? 8 : i < 12 ? 4 : 512;
    const char* what = i < 8 ? "a 64-bit pointer" : i < 12 ? "a 32-bit int" : "512 bytes (four CUtensorMap)";
    if (params[i].bytes != want)
      return fail(fmt::format("parameter {} ({}) of {} is {} bytes (`{}`); the ABI has {} there", i + 1, kNames[i],
                              kernel, params[i].bytes, params[i].decl, what));
    if (i == 12 && params[i].align < 64)
      return fail(fmt::format("parameter 13 (tensor maps) of {} is aligned to {} bytes; CUtensorMap needs 64", kernel,
                              params[i].align));
  }

  std::optional<std::vector<int>> info;
  try {
    info = launch_info_from_ptx(ptx);
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  if (!info)
    return fail("no `extern \"C\" __device__ int attn_launch_info[4]` (or [8]) in the module: the host reads the "
                "launch geometry from it (kernels_templates/ABI.md)");
  r.launch_info = *info;
  if (auto why = launch_info_problem(*info); !why.empty()) return fail(why);
  const bool wants_maps = info->size() > 5 && (*info)[5] > 0;
  if (wants_maps && params.size() != 13)
    return fail("attn_launch_info asks for tensor maps (kv rows > 0) but the kernel has no 13th parameter for them");
  if (!wants_maps && params.size() == 13)
    return fail("the kernel takes tensor maps (13th parameter) but attn_launch_info does not ask for them (entry 5, "
                "kv rows, is 0 or missing), so the host would pass zeroed maps");
  r.ok = true;
  return r;
}

KernelAbi check_kernel_abi(const CompileRequest& req) {
  const PtxBuild b = nvrtc_ptx(req);
  if (!b.ok) {
    KernelAbi r;
    r.problem = b.problem;
    return r;
  }
  return check_ptx_abi(b.ptx, req.kernel);
}

}  // namespace attn
