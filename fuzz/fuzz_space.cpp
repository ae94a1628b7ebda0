// libFuzzer target: the template-space loader (tuner/space.cpp): kernels_templates/<name>.json with its
// parameters, default and muparser constraints. The input is written as fz.json beside an empty fz.cu in a
// scratch folder (the loader reads files). Contract: std::invalid_argument for a bad space, nothing
// else; a loaded space's default is valid, and for a small space every enumerated config checks clean
// and maps to value indices and back.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tuner/space.hpp"

namespace {

/// A scratch folder with fz.cu, removed at exit.
struct Scratch {
  std::string dir;
  Scratch() {
    const auto d = std::filesystem::temp_directory_path() / ("attn-fuzz-space-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::ofstream(d / "fz.cu") << "// fuzz\n";
    dir = d.string();
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

const std::string& scratch_dir() {
  static const Scratch scratch;
  return scratch.dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_dir() + "/fz.json";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
  }
  try {
    const attn::TemplateSpace space = attn::TemplateSpace::load(path);
    if (space.check(space.default_config())) std::abort();  // load promises a valid default
    if (space.raw_size() <= 512) {
      for (const auto& c : space.enumerate()) {
        if (space.check(c)) std::abort();
        const auto idx = space.indices_of(c);
        if (!idx || space.config_at(*idx) != c) std::abort();
      }
    }
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
