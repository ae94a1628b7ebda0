#include "tests/workload/golden.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/test_support.hpp"

namespace attn::test {
namespace {

namespace fs = std::filesystem;

std::vector<char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("golden: cannot read {}", p.string()));
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Expands a packed bf16 file (rows [0, seq_len) of each (batch, head)) to [B, H, t_max, 128].
std::vector<bf16_bits> read_packed(const fs::path& p, const BlockSparseLayout& L, int t_max, bf16_bits fill) {
  const auto bytes = read_bytes(p);
  std::size_t rows = 0;
  for (int b = 0; b < L.batch_size; ++b) rows += std::size_t(L.seq_lens[b]) * L.num_heads;
  if (bytes.size() != rows * kHeadDim * 2)
    throw std::runtime_error(fmt::format("golden: {} has {} bytes, expected {} ({} rows of {} bf16)", p.string(),
                                         bytes.size(), rows * kHeadDim * 2, rows, kHeadDim));
  std::vector<bf16_bits> out(std::size_t(L.batch_size) * L.num_heads * t_max * kHeadDim, fill);
  const char* src = bytes.data();
  for (int b = 0; b < L.batch_size; ++b)
    for (int h = 0; h < L.num_heads; ++h) {
      const std::size_t n = std::size_t(L.seq_lens[b]) * kHeadDim;
      std::memcpy(&out[(std::size_t(b) * L.num_heads + h) * t_max * kHeadDim], src, n * 2);  // little-endian host
      src += n * 2;
    }
  return out;
}

}  // namespace

std::string golden_dir() { return data_dir() + "/golden"; }

std::vector<std::string> golden_case_ids(const std::string& dir) {
  std::vector<std::string> ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".json") ids.push_back(e.path().stem().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

GoldenCase load_golden(const std::string& case_id, float masked_fill, const std::string& dir) {
  const fs::path json_path = fs::path(dir) / (case_id + ".json");
  const auto text = read_bytes(json_path);
  GoldenCase g;
  try {
    const auto j = nlohmann::json::parse(text.begin(), text.end());
    if (j.at("format").get<int>() != 1) throw std::runtime_error("unknown format");
    g.case_id = j.at("case_id").get<std::string>();
    g.spec = case_from_json(j.at("spec"));
    g.edited = j.at("edited").get<bool>();
    g.edits = j.at("edits").get<std::vector<std::string>>();
    const auto shape = j.at("shape").get<std::vector<int>>();
    const auto rp_shape = j.at("row_ptr_shape").get<std::vector<int>>();
    const auto ci_shape = j.at("col_idx_shape").get<std::vector<int>>();
    const auto& s = g.spec;
    if (shape != std::vector<int>{s.batch_size, s.num_heads, s.t_max, kHeadDim} || rp_shape.size() != 3 ||
        rp_shape[2] != s.q_blocks() + 1 || ci_shape.size() != 3 || ci_shape[0] != s.batch_size ||
        ci_shape[1] != s.num_heads)
      throw std::runtime_error("shapes do not match the spec");
    BlockSparseLayout& L = g.layout;
    L.batch_size = s.batch_size;
    L.num_heads = s.num_heads;
    L.q_blocks = s.q_blocks();
    L.col_width = ci_shape[2];
    L.seq_lens = j.at("seq_lens").get<std::vector<std::int32_t>>();
    L.row_ptr = j.at("row_ptr").get<std::vector<std::int32_t>>();
    L.col_idx = j.at("col_idx").get<std::vector<std::int32_t>>();
    L.density = j.at("density").get<double>();
    if (L.seq_lens.size() != std::size_t(s.batch_size) ||
        L.row_ptr.size() != std::size_t(s.batch_size) * s.num_heads * (L.q_blocks + 1) ||
        L.col_idx.size() != std::size_t(s.batch_size) * s.num_heads * L.col_width)
      throw std::runtime_error("seq_lens, row_ptr or col_idx length does not match its shape");
    for (int x : L.seq_lens)
      if (x < 0 || x > s.t_max) throw std::runtime_error(fmt::format("seq_len {} outside [0, t_max]", x));
    const auto& files = j.at("files");
    const bf16_bits fill = float_to_bf16(masked_fill);
    g.q = read_packed(fs::path(dir) / files.at("q").get<std::string>(), L, s.t_max, fill);
    g.k = read_packed(fs::path(dir) / files.at("k").get<std::string>(), L, s.t_max, fill);
    g.v = read_packed(fs::path(dir) / files.at("v").get<std::string>(), L, s.t_max, fill);
    g.o = read_packed(fs::path(dir) / files.at("o").get<std::string>(), L, s.t_max, 0);
    const fs::path lse_path = fs::path(dir) / files.at("lse").get<std::string>();
    const auto lse = read_bytes(lse_path);
    const std::size_t rows = std::size_t(s.batch_size) * s.num_heads * s.t_max;
    if (lse.size() != rows * 4)
      throw std::runtime_error(fmt::format("{} has {} bytes, expected {}", lse_path.string(), lse.size(), rows * 4));
    g.lse.resize(rows);
    std::memcpy(g.lse.data(), lse.data(), lse.size());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("golden: {}: {}", json_path.string(), e.what()));
  } catch (const std::exception& e) {  // nlohmann::json errors, case_from_json's invalid_argument
    throw std::runtime_error(fmt::format("golden: {}: {}", json_path.string(), e.what()));
  }
  return g;
}

}  // namespace attn::test
