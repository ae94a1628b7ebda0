#include "gpu/nvrtc_job.hpp"

#include <nvrtc.h>

#include <array>
#include <chrono>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

namespace attn {
namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

}  // namespace

int nvrtc_compilation_error_code() { return int(NVRTC_ERROR_COMPILATION); }

std::string nvrtc_error_name(int rc) { return nvrtcGetErrorString(nvrtcResult(rc)); }

NvrtcOutput run_nvrtc(const NvrtcJob& job) {
  NvrtcOutput out;
  std::map<std::string_view, std::string_view> by_name;
  std::vector<const char*> names, texts;
  for (const auto& [name, text] : job.headers) {
    const auto [it, fresh] = by_name.emplace(name, text);
    if (!fresh) {
      if (it->second == text) continue;
      out.rc = int(NVRTC_ERROR_INVALID_INPUT);
      out.log = fmt::format("header '{}' is included as two different files: give them different names", name);
      return out;
    }
    names.push_back(name.c_str());
    texts.push_back(text.c_str());
  }
  std::vector<const char*> argv;
  for (const auto& o : job.options) argv.push_back(o.c_str());

  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&prog, job.source.c_str(), job.name.c_str(), int(names.size()), texts.data(),
                                         names.data());
      r != NVRTC_SUCCESS) {
    out.rc = int(r);
    out.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r);
    return out;
  }
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  out.rc = int(rc);
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    out.log.resize(log_size);
    nvrtcGetProgramLog(prog, out.log.data());
    out.log.resize(log_size - 1);  // drop the terminating NUL
  }
  if (rc == NVRTC_SUCCESS) {
    std::size_t n = 0;
    if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
      out.cubin.resize(n);
      nvrtcGetCUBIN(prog, out.cubin.data());
    }
  } else {
    out.log = fmt::format("{}\n{}", nvrtcGetErrorString(rc), out.log);
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

std::string base64_encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const unsigned v = unsigned(std::uint8_t(bytes[i])) << 16 | unsigned(std::uint8_t(bytes[i + 1])) << 8 |
                       unsigned(std::uint8_t(bytes[i + 2]));
    out += {kAlphabet[v >> 18], kAlphabet[(v >> 12) & 63], kAlphabet[(v >> 6) & 63], kAlphabet[v & 63]};
  }
  if (const std::size_t rest = bytes.size() - i; rest > 0) {
    unsigned v = unsigned(std::uint8_t(bytes[i])) << 16;
    if (rest == 2) v |= unsigned(std::uint8_t(bytes[i + 1])) << 8;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += rest == 2 ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::vector<char> base64_decode(std::string_view text) {
  if (text.size() % 4 != 0)
    throw std::invalid_argument(fmt::format("base64: length {} is not a multiple of 4", text.size()));
  std::array<int, 256> value{};
  value.fill(-1);
  for (int k = 0; k < 64; ++k) value[std::uint8_t(kAlphabet[k])] = k;
  std::vector<char> out;
  out.reserve(text.size() / 4 * 3);
  for (std::size_t i = 0; i < text.size(); i += 4) {
    const bool last = i + 4 == text.size();
    const int pad = last ? (text[i + 3] == '=') + (text[i + 2] == '=') : 0;
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const int d = k >= 4 - pad ? 0 : value[std::uint8_t(c)];
      if (d < 0) throw std::invalid_argument(fmt::format("base64: character '{}' at {} is not base64", c, i + k));
      v = v << 6 | unsigned(d);
    }
    out.push_back(char(v >> 16));
    if (pad < 2) out.push_back(char((v >> 8) & 255));
    if (pad < 1) out.push_back(char(v & 255));
  }
  return out;
}

nlohmann::json to_json(const NvrtcJob& job) {
  return {{"cmd", "compile"}, {"name", job.name}, {"source", job.source}, {"headers", job.headers},
          {"options", job.options}};
}

NvrtcJob nvrtc_job_from_json(const nlohmann::json& j) {
  NvrtcJob job;
  job.name = j.at("name").get<std::string>();
  job.source = j.at("source").get<std::string>();
  job.headers = j.at("headers").get<std::vector<std::pair<std::string, std::string>>>();
  job.options = j.at("options").get<std::vector<std::string>>();
  return job;
}

nlohmann::json to_json(const NvrtcOutput& out) {
  return {{"status", "ok"},
          {"message", ""},
          {"rc", out.rc},
          {"log", out.log},
          {"cubin", base64_encode({out.cubin.data(), out.cubin.size()})},
          {"ms", out.ms}};
}

NvrtcOutput nvrtc_output_from_json(const nlohmann::json& j) {
  NvrtcOutput out;
  out.rc = j.at("rc").get<int>();
  out.log = j.at("log").get<std::string>();
  out.cubin = base64_decode(j.at("cubin").get<std::string>());
  out.ms = j.at("ms").get<double>();
  return out;
}

}  // namespace attn
