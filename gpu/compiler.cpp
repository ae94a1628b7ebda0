#include "gpu/compiler.hpp"

#include "gpu/cubin_patch.hpp"

#include <nvrtc.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace attn {
namespace fs = std::filesystem;
namespace {

std::optional<std::string> read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::optional<std::vector<char>> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  return std::vector<char>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

/// Writes `data` to `path` through a temporary file in the same folder and a rename, so that readers
/// (other threads or processes) never see a partial file.
void write_atomic(const fs::path& path, const char* data, std::size_t n) {
  std::ostringstream tmp_name;
  tmp_name << path.filename().string() << ".tmp." << ::getpid() << "." << std::this_thread::get_id();
  const fs::path tmp = path.parent_path() / tmp_name.str();
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
    f.write(data, std::streamsize(n));
    if (!f) throw std::runtime_error("cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
}

std::vector<std::string> cuda_include_dirs() {
  std::vector<std::string> dirs;
  std::string list = CUDA_TOOLKIT_INCLUDE;  // CMake's CUDAToolkit_INCLUDE_DIRS, ';'-separated
  std::size_t pos = 0;
  while (pos <= list.size()) {
    const std::size_t end = std::min(list.find(';', pos), list.size());
    if (end > pos) dirs.push_back(list.substr(pos, end - pos));
    pos = end + 1;
  }
  if (!std::count(dirs.begin(), dirs.end(), "/usr/local/cuda/include") &&
      fs::exists("/usr/local/cuda/include/cuda_bf16.h"))
    dirs.push_back("/usr/local/cuda/include");  // the toolkit location on the GPU machines
  return dirs;
}

// An include resolves like the preprocessor with -I<template dir>: beside the including file first, then in
// the template's own directory (root), so blocks/x.cuh may include "blocks/y.cuh" or "hopper_common.cuh".
void collect_includes(const fs::path& file, const fs::path& root, std::set<std::string>& seen,
                      std::vector<std::pair<std::string, std::string>>& out) {
  const auto text = read_text(file);
  if (!text) return;
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    fs::path inc = file.parent_path() / m[1].str();
    if (!fs::exists(inc)) inc = root / m[1].str();
    const std::string key = fs::weakly_canonical(inc).string();
    if (!seen.insert(key).second) continue;
    const auto inc_text = read_text(inc);
    if (!inc_text) continue;
    out.emplace_back(m[1].str(), *inc_text);
    collect_includes(inc, root, seen, out);
  }
}

std::string hex128(XXH128_hash_t h) {
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

struct Hasher {
  XXH3_state_t* st = XXH3_createState();
  Hasher() { XXH3_128bits_reset(st); }
  ~Hasher() { XXH3_freeState(st); }
  // Length-prefixed, so ("ab","c") and ("a","bc") differ.
  void add(const std::string& s) {
    const std::uint64_t n = s.size();
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, s.data(), s.size());
  }
  std::string digest() const { return hex128(XXH3_128bits_digest(st)); }
};

/// NVRTC's words for a header it could not open (see CompiledVariant::transient).
bool missing_file(const std::string& log) { return log.find("cannot open source file") != std::string::npos; }

/// NVRTC 13.0's --Ofast-compile (-Ofc) leaves its setting behind in the process: every later compile in the same
/// process, with or without the option, gives other PTX and another cubin (measured with fa3_tma:
/// lab/scripts/nvrtc_cost_probe.py, docs/results.md). In the daemon or `attn-tuner compile` one such request would
/// put wrong cubins into the cache under the keys of later plain configs, so Compiler::compile refuses it.
/// The option as given when it is one of those, else "" (=0, the default, leaves nothing behind: allowed).
std::string process_state_option(const std::vector<std::string>& extra) {
  for (const auto& o : extra)
    for (const char* p : {"-Ofc", "--Ofc", "-Ofast-compile", "--Ofast-compile"})
      if ((o == p || o.rfind(std::string(p) + "=", 0) == 0) && o != std::string(p) + "=0") return o;
  return {};
}

CompiledVariant failed(std::string log, std::string hash = {}, bool transient = false) {
  CompiledVariant v;
  v.ok = false;
  v.transient = transient;
  v.error = FailureKind::compile;
  v.log = std::move(log);
  v.hash = std::move(hash);
  return v;
}

nlohmann::json resources_to_json(const ResourceUsage& r) {
  return {{"registers", r.registers},     {"spill_stores", r.spill_stores}, {"spill_loads", r.spill_loads},
          {"stack_frame", r.stack_frame}, {"static_smem", r.static_smem}};
}

ResourceUsage resources_from_json(const nlohmann::json& j) {
  ResourceUsage r;
  r.registers = j.at("registers").get<int>();
  r.spill_stores = j.at("spill_stores").get<int>();
  r.spill_loads = j.at("spill_loads").get<int>();
  r.stack_frame = j.at("stack_frame").get<int>();
  r.static_smem = j.at("static_smem").get<int>();
  return r;
}

}  // namespace

std::string default_cache_dir() {
  if (const char* c = std::getenv("ATTN_TUNER_CACHE"); c && *c) return c;
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "attn-tuner").string();
  return ".attn-tuner-cache";
}

std::string nvrtc_version_string() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

ResourceUsage parse_ptxas_resources(const std::string& log, const std::string& kernel) {
  // ptxas -v (CUDA 13) prints, per entry function:
  //   ptxas info    : Compiling entry function 'K' for 'sm_90a'
  //   ptxas info    : Function properties for K
  //   ptxas         .     40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 32 registers, used 1 barriers, 40 bytes cumulative stack size, 4096 bytes smem
  // "Function properties for" also appears for device functions (no "Used" line follows those).
  static const std::regex entry_re(R"(Compiling entry function '([^']+)')");
  static const std::regex props_re(R"(Function properties for (\S+))");
  static const std::regex frame_re(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used_re(R"(Used (\d+) registers)");
  static const std::regex smem_re(R"((\d+) bytes smem)");
  ResourceUsage r;
  std::string entry, props;
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_search(line, m, entry_re)) {
      entry = m[1].str();
    } else if (std::regex_search(line, m, props_re)) {
      props = m[1].str();
    } else if (std::regex_search(line, m, frame_re)) {
      if (props == kernel) {
        r.stack_frame = std::stoi(m[1].str());
        r.spill_stores = std::stoi(m[2].str());
        r.spill_loads = std::stoi(m[3].str());
      }
    } else if (std::regex_search(line, m, used_re)) {
      if (entry == kernel) {
        r.registers = std::stoi(m[1].str());
        std::smatch s;
        if (std::regex_search(line, s, smem_re)) r.static_smem = std::stoi(s[1].str());
      }
    }
  }
  return r;
}

std::string compile_error_line(const std::string& log) {
  std::size_t pos = log.find("error");
  if (pos == std::string::npos) pos = 0;
  const std::size_t start = log.rfind('\n', pos) == std::string::npos ? 0 : log.rfind('\n', pos) + 1;
  std::string line = log.substr(start, log.find('\n', pos) - start);
  return line.size() > 200 ? line.substr(0, 200) + "..." : line;
}

std::vector<std::pair<std::string, std::string>> local_includes(const std::string& source_path) {
  std::set<std::string> seen{fs::weakly_canonical(source_path).string()};
  std::vector<std::pair<std::string, std::string>> out;
  collect_includes(source_path, fs::path(source_path).parent_path(), seen, out);
  std::sort(out.begin(), out.end());
  return out;
}

struct Compiler::InFlightFamilies {
  std::mutex mu;
  std::map<std::string, std::shared_future<CompiledVariant>> compiling;
};

Compiler::Compiler(CompilerOptions options)
    : options_(std::move(options)), in_flight_(std::make_shared<InFlightFamilies>()) {
  if (options_.cache_dir.empty()) options_.cache_dir = default_cache_dir();
}

CompiledVariant Compiler::retry_transient(CompiledVariant result, const CompileRequest& req,
                                          const std::function<void(int, const CompiledVariant&)>& before_retry) const {
  for (int attempt = 1; !result.ok && result.transient && attempt <= kTransientRetries; ++attempt) {
    if (before_retry) before_retry(attempt, result);
    std::this_thread::sleep_for(kTransientWait);
    result = compile(req);
  }
  return result;
}

std::string xxh128_hex(std::string_view bytes) { return hex128(XXH3_128bits(bytes.data(), bytes.size())); }

std::string cubin_hash(const std::vector<char>& cubin) {
  return cubin.empty() ? std::string() : xxh128_hex({cubin.data(), cubin.size()});
}

std::vector<std::string> Compiler::nvrtc_options(const CompileRequest& req) const {
  std::vector<std::string> o{"-arch=" + options_.arch, "-std=c++17"};
  for (const auto& d : cuda_include_dirs()) o.push_back("-I" + d);
  const fs::path dir = fs::path(req.source_path).parent_path();
  o.push_back("-I" + (dir.empty() ? std::string(".") : dir.string()));
  o.push_back("--ptxas-options=-v");
  // NVRTC 13 keeps a cross-process cache of its own where a driver is installed (the GPU machine, not a
  // CPU-only one); a config it has seen before comes back without the ptxas -v log (registers and spills
  // unknown) and with its lookup time as the compile time. Our content-hashed cache is the one cache, so
  // NVRTC's is off; the option changes no code, so it stays out of the hash (content_hash). What it cost:
  // docs/results.md, "No idling on the GPU".
  o.push_back(std::string(kNoNvrtcCache));
  for (const auto& [name, value] : req.defines) o.push_back(fmt::format("-D{}={}", name, value));
  o.insert(o.end(), req.extra_options.begin(), req.extra_options.end());
  return o;
}

std::string Compiler::content_hash(const CompileRequest& req) const {
  const auto source = read_text(req.source_path);
  if (!source) throw std::invalid_argument("cannot read template source '" + req.source_path + "'");
  Hasher h;
  h.add("attn-tuner compile v1");
  h.add(*source);
  for (const auto& [name, text] : local_includes(req.source_path)) {
    h.add(name);
    h.add(text);
  }
  for (const auto& opt : nvrtc_options(req))
    if (opt.rfind("-I", 0) != 0 && opt != kNoNvrtcCache) h.add(opt);  // -arch, -std, -D (sorted: Config is a std::map), extras
  h.add(req.kernel);
  h.add(nvrtc_version_string());
  return h.digest();
}

std::optional<CompiledVariant> Compiler::lookup(const std::string& hash) const {
  // The .json is written last, so its presence means a complete entry.
  const fs::path dir(options_.cache_dir);
  try {
    const auto text = read_text(dir / (hash + ".json"));
    if (!text) return std::nullopt;
    const auto j = nlohmann::json::parse(*text);
    CompiledVariant v;
    v.ok = j.at("ok").get<bool>();
    v.error = v.ok ? FailureKind::none : FailureKind::compile;
    v.log = j.at("log").get<std::string>();
    v.compile_ms = j.at("compile_ms").get<double>();
    v.resources = resources_from_json(j.at("resources"));
    v.patched_from = j.value("patched_from", std::string());
    v.hash = hash;
    v.cache_hit = true;
    if (!v.ok) {
      if (missing_file(v.log)) return std::nullopt;  // an entry of a missing header: compile again
      return v;
    }
    const fs::path cubin_path = dir / (hash + ".cubin");
    if (auto bytes = read_bytes(cubin_path); bytes && bytes->size() == j.at("cubin_bytes").get<std::size_t>()) {
      v.cubin = std::move(*bytes);
      v.cubin_path = cubin_path.string();
      v.cubin_hash = cubin_hash(v.cubin);
      return v;
    }
  } catch (const std::exception&) {
    // A damaged entry: compile again and overwrite it.
  }
  return std::nullopt;
}

bool Compiler::store(CompiledVariant& v, const std::string& hash, const CompileRequest& req) const {
  const fs::path dir(options_.cache_dir);
  try {
    fs::create_directories(dir);
    const fs::path cubin_path = dir / (hash + ".cubin");
    if (v.ok) write_atomic(cubin_path, v.cubin.data(), v.cubin.size());
    nlohmann::json j = {{"hash", hash},
                        {"source", req.source_path},
                        {"kernel", req.kernel},
                        {"defines", req.defines},
                        {"options", nvrtc_options(req)},
                        {"nvrtc_version", nvrtc_version_string()},
                        {"ok", v.ok},
                        {"log", v.log},
                        {"compile_ms", v.compile_ms},
                        {"cubin_bytes", v.cubin.size()},
                        {"resources", resources_to_json(v.resources)}};
    if (!v.patched_from.empty()) j["patched_from"] = v.patched_from;
    const std::string text = j.dump(2);
    write_atomic(dir / (hash + ".json"), text.data(), text.size());
    if (v.ok) v.cubin_path = cubin_path.string();
    return true;
  } catch (const std::exception& e) {
    v.log += fmt::format("\n(cache write failed: {})", e.what());
    return false;
  }
}

Config Compiler::patchable_values(const CompileRequest& req) {
  Config out;
  for (const auto& name : req.patchable)
    if (const auto it = req.defines.find(name); it != req.defines.end()) out.insert(*it);
  return out;
}

std::string Compiler::family_hash(const CompileRequest& req) const {
  CompileRequest family = req;
  for (const auto& name : req.patchable) family.defines.erase(name);
  family.patchable.clear();
  return xxh128_hex("attn-tuner patch family v1 " + content_hash(family));
}

CompiledVariant Compiler::compile(const CompileRequest& req) const {
  for (const auto& [name, value] : req.defines)
    if (!is_identifier(name)) return failed("config parameter '" + name + "' is not a C identifier");
  if (req.kernel.empty()) return failed("no kernel name given for '" + req.source_path + "'");
  if (const std::string o = process_state_option(req.extra_options); !o.empty() && !options_.allow_process_state)
    return failed("NVRTC option '" + o + "' refused: NVRTC 13.0 keeps --Ofast-compile for every later compile of "
                  "the process (other cubins for other configs)");
  std::string hash, family;
  try {
    hash = content_hash(req);  // throws "cannot read template source ..." when it cannot: a transient failure
    if (options_.use_cache && !patchable_values(req).empty()) family = family_hash(req);
  } catch (const std::exception& e) {
    return failed(e.what(), {}, true);
  }
  // Whether `v`'s cubin takes the patch (a build that compiles the parameters in has no attn_param_ symbols).
  const auto takes_patch = [&](CompiledVariant& v) {
    std::vector<char> probe = v.cubin;
    v.patchable = v.ok && !family.empty() && !patch_cubin_params(probe, patchable_values(req));
    return v.patchable;
  };
  if (options_.use_cache) {
    if (auto hit = lookup(hash)) {
      takes_patch(*hit);
      return std::move(*hit);
    }
    // A config of the same family compiled before (this run or an earlier one): patch its cubin.
    if (!family.empty())
      if (auto member = lookup(family))
        if (auto v = from_sibling(*member, req)) return std::move(*v);
  }
  // One member of a family compiles at a time; another one asked meanwhile waits for it and is patched.
  std::promise<CompiledVariant> mine;
  if (!family.empty()) {
    std::shared_future<CompiledVariant> other;
    {
      std::lock_guard lock(in_flight_->mu);
      const auto it = in_flight_->compiling.find(family);
      if (it != in_flight_->compiling.end())
        other = it->second;
      else
        in_flight_->compiling.emplace(family, mine.get_future().share());
    }
    if (other.valid()) {
      if (auto v = from_sibling(other.get(), req)) return std::move(*v);
      return compile_fresh(req, hash);  // not patchable after all: its own compile
    }
  }
  // The members waiting for this compile get its result (publish), or its exception should it throw; either
  // way the family leaves the in-flight map.
  struct Release {
    const std::string& family;
    InFlightFamilies& in_flight;
    std::promise<CompiledVariant>& mine;
    bool published = false;
    void publish(const CompiledVariant& v) {
      if (family.empty()) return;
      mine.set_value(v);
      published = true;
      std::lock_guard lock(in_flight.mu);
      in_flight.compiling.erase(family);
    }
    ~Release() {
      if (family.empty() || published) return;
      mine.set_exception(std::make_exception_ptr(std::runtime_error("the family's compile threw")));
      std::lock_guard lock(in_flight.mu);
      in_flight.compiling.erase(family);
    }
  } release{family, *in_flight_, mine};
  CompiledVariant v = compile_fresh(req, hash);
  // The family's entry: a copy of this member, kept only when its cubin takes the patch.
  if (takes_patch(v)) {
    CompiledVariant member = v;
    store(member, family, req);
  }
  release.publish(v);
  return v;
}

std::optional<CompiledVariant> Compiler::from_sibling(const CompiledVariant& sibling, const CompileRequest& req) const {
  if (!options_.use_cache || (!sibling.ok && (sibling.transient || sibling.hash.empty()))) return std::nullopt;
  CompiledVariant v;
  try {
    v.hash = content_hash(req);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  v.ok = sibling.ok;
  v.error = sibling.error;
  v.log = sibling.log;
  v.compile_ms = sibling.compile_ms;
  v.resources = sibling.resources;
  v.cache_hit = true;
  v.patched_from = sibling.patched_from.empty() ? sibling.hash : sibling.patched_from;
  if (v.ok) {
    v.cubin = sibling.cubin;
    if (patch_cubin_params(v.cubin, patchable_values(req))) return std::nullopt;
    v.cubin_hash = cubin_hash(v.cubin);
    v.patchable = true;
  }
  store(v, v.hash, req);
  return v;
}

CompiledVariant Compiler::compile_fresh(const CompileRequest& req, const std::string& hash) const {
  const auto source = read_text(req.source_path);
  if (!source) return failed("cannot read template source '" + req.source_path + "'", {}, true);
  const auto options = nvrtc_options(req);
  std::vector<const char*> argv;
  for (const auto& o : options) argv.push_back(o.c_str());

  const auto t0 = std::chrono::steady_clock::now();
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r = nvrtcCreateProgram(&prog, source->c_str(), req.source_path.c_str(), 0, nullptr, nullptr);
      r != NVRTC_SUCCESS)
    return failed(std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(r), hash);
  const nvrtcResult rc = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();

  std::string log;
  std::size_t log_size = 0;
  if (nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 1) {
    log.resize(log_size);
    nvrtcGetProgramLog(prog, log.data());
    log.resize(log_size - 1);  // drop the terminating NUL
  }
  CompiledVariant v;
  v.hash = hash;
  v.compile_ms = ms;
  v.log = log;
  if (rc == NVRTC_SUCCESS) {
    std::size_t n = 0;
    if (nvrtcGetCUBINSize(prog, &n) == NVRTC_SUCCESS && n > 0) {
      v.cubin.resize(n);
      nvrtcGetCUBIN(prog, v.cubin.data());
      v.cubin_hash = cubin_hash(v.cubin);
      v.ok = true;
      v.resources = parse_ptxas_resources(log, req.kernel);
    } else {
      v.log += "\nnvrtcGetCUBIN: no cubin produced (is -arch a real sm_XX target?)";
    }
  } else {
    v.log = fmt::format("{}\n{}", nvrtcGetErrorString(rc), log);
  }
  nvrtcDestroyProgram(&prog);
  if (!v.ok) v.error = FailureKind::compile;
  v.transient = !v.ok && missing_file(v.log);

  // Cache successes and genuine compile errors (deterministic); not internal NVRTC failures, and not a
  // header that could not be opened (the same content compiles once the file is back).
  if (options_.use_cache && (v.ok || (rc == NVRTC_ERROR_COMPILATION && !v.transient))) store(v, hash, req);
  return v;
}

// ---- CompilePool ----

struct CompilePool::Impl {
  const Compiler& compiler;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::packaged_task<CompiledVariant()>> queue;
  bool stopping = false;
  std::vector<std::jthread> workers;

  explicit Impl(const Compiler& c) : compiler(c) {}
  void run() {
    for (;;) {
      std::packaged_task<CompiledVariant()> task;
      {
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return stopping || !queue.empty(); });
        if (stopping) return;
        task = std::move(queue.front());
        queue.pop_front();
      }
      task();
    }
  }
};

CompilePool::CompilePool(const Compiler& compiler, unsigned threads) : impl_(std::make_unique<Impl>(compiler)) {
  if (threads == 0) throw std::invalid_argument("CompilePool needs at least one thread");
  for (unsigned i = 0; i < threads; ++i) impl_->workers.emplace_back([this] { impl_->run(); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
    impl_->queue.clear();  // futures of requests not started: broken_promise
  }
  impl_->cv.notify_all();
  impl_->workers.clear();  // joins
}

std::future<CompiledVariant> CompilePool::submit(CompileRequest req) {
  std::packaged_task<CompiledVariant()> task(
      [c = &impl_->compiler, r = std::move(req)] { return c->compile(r); });
  auto fut = task.get_future();
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->stopping) throw std::logic_error("CompilePool::submit after shutdown");
    impl_->queue.push_back(std::move(task));
  }
  impl_->cv.notify_one();
  return fut;
}

unsigned CompilePool::threads() const { return unsigned(impl_->workers.size()); }

}  // namespace attn
