#include "gpu/compiler.hpp"

#include "gpu/compile_procs.hpp"
#include "gpu/cubin_patch.hpp"
#include "gpu/nvrtc_job.hpp"

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
  std::error_code ec;
  if (!std::count(dirs.begin(), dirs.end(), "/usr/local/cuda/include") &&
      fs::exists("/usr/local/cuda/include/cuda_bf16.h", ec))
    dirs.push_back("/usr/local/cuda/include");  // the toolkit location on the GPU machines
  return dirs;
}

// An include resolves like the preprocessor with -I<template dir>: beside the including file first, then in
// the template's own directory (root), so blocks/x.cuh may include "blocks/y.cuh" or "hopper_common.cuh".
// Each file is read once: its recorded text is the text whose includes are followed.
void collect_includes(const fs::path& file, const std::string& text, const fs::path& root,
                      std::set<std::string>& seen, std::vector<std::pair<std::string, std::string>>& out) {
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, include_re)) continue;
    std::error_code ec;
    fs::path inc = file.parent_path() / m[1].str();
    if (!fs::exists(inc, ec)) inc = root / m[1].str();
    const fs::path canonical = fs::weakly_canonical(inc, ec);
    if (!seen.insert(ec ? inc.lexically_normal().string() : canonical.string()).second) continue;
    const auto inc_text = read_text(inc);
    if (!inc_text) continue;  // NVRTC says "cannot open source file": a transient failure
    out.emplace_back(m[1].str(), *inc_text);
    collect_includes(inc, *inc_text, root, seen, out);
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

CompileSources read_compile_sources(const std::string& source_path) {
  auto source = read_text(source_path);
  if (!source) throw std::invalid_argument("cannot read template source '" + source_path + "'");
  CompileSources s;
  s.source = std::move(*source);
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(source_path, ec);
  std::set<std::string> seen{ec ? source_path : canonical.string()};
  collect_includes(source_path, s.source, fs::path(source_path).parent_path(), seen, s.headers);
  std::sort(s.headers.begin(), s.headers.end());
  return s;
}

std::vector<std::pair<std::string, std::string>> local_includes(const std::string& source_path) {
  try {
    return read_compile_sources(source_path).headers;
  } catch (const std::invalid_argument&) {
    return {};
  }
}

struct Compiler::InFlightFamilies {
  std::mutex mu;
  std::map<std::string, std::shared_future<CompiledVariant>> compiling;
};

Compiler::Compiler(CompilerOptions options)
    : options_(std::move(options)), in_flight_(std::make_shared<InFlightFamilies>()) {
  if (options_.cache_dir.empty()) options_.cache_dir = default_cache_dir();
  if (options_.procs.procs > 0) procs_ = std::make_shared<CompileProcs>(options_.procs);
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
  // NVRTC 13 keeps a cross-process cache of its own where a driver is installed: a config it has seen comes back
  // without the ptxas -v log and with its lookup time as the compile time. Our content-hashed cache is the one
  // cache; the option changes no code, so it stays out of the hash (content_hash).
  o.push_back(std::string(kNoNvrtcCache));
  for (const auto& [name, value] : req.defines) o.push_back(fmt::format("-D{}={}", name, value));
  o.insert(o.end(), req.extra_options.begin(), req.extra_options.end());
  return o;
}

std::string Compiler::content_hash(const CompileRequest& req) const {
  return content_hash(req, read_compile_sources(req.source_path));
}

std::string Compiler::content_hash(const CompileRequest& req, const CompileSources& src) const {
  Hasher h;
  h.add("attn-tuner compile v1");
  h.add(src.source);
  for (const auto& [name, text] : src.headers) {
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

std::string Compiler::family_hash(const CompileRequest& req, const CompileSources& src) const {
  CompileRequest family = req;
  for (const auto& name : req.patchable) family.defines.erase(name);
  family.patchable.clear();
  return xxh128_hex("attn-tuner patch family v1 " + content_hash(family, src));
}

CompiledVariant Compiler::compile(const CompileRequest& req) const {
  try {
    return compile_sources(req);
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception& e) {  // a file system or library error outside NVRTC: this call's failure
    return failed(fmt::format("internal error while compiling '{}': {}", req.source_path, e.what()));
  }
}

CompiledVariant Compiler::compile_sources(const CompileRequest& req) const {
  for (const auto& [name, value] : req.defines)
    if (!is_identifier(name)) return failed("config parameter '" + name + "' is not a C identifier");
  if (req.kernel.empty()) return failed("no kernel name given for '" + req.source_path + "'");
  if (const std::string o = process_state_option(req.extra_options); !o.empty() && !options_.allow_process_state)
    return failed("NVRTC option '" + o + "' refused: NVRTC 13.0 keeps --Ofast-compile for every later compile of "
                  "the process (other cubins for other configs)");
  // The one read of the template and its includes: hashed, and compiled, from these bytes.
  CompileSources src;
  try {
    src = read_compile_sources(req.source_path);
  } catch (const std::invalid_argument& e) {
    return failed(e.what(), {}, true);
  }
  const std::string hash = content_hash(req, src);
  const std::string family =
      options_.use_cache && !patchable_values(req).empty() ? family_hash(req, src) : std::string();
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
        if (auto v = from_sibling(*member, req, hash)) return std::move(*v);
  }
  if (family.empty()) return compile_fresh(req, src, hash);
  // One member of a family compiles at a time; another one asked meanwhile waits for it and is patched.
  std::promise<CompiledVariant> mine;
  std::shared_future<CompiledVariant> other;
  {
    std::lock_guard lock(in_flight_->mu);
    const auto it = in_flight_->compiling.find(family);
    if (it != in_flight_->compiling.end())
      other = it->second;
    else
      in_flight_->compiling.emplace(family, mine.get_future().share());
  }
  if (other.valid()) {  // get() rethrows what the family's compile threw (compiler.hpp: only std::bad_alloc)
    if (auto v = from_sibling(other.get(), req, hash)) return std::move(*v);
    return compile_fresh(req, src, hash);  // not patchable after all, or its compile failed in its worker
  }
  // The members waiting for this compile get its result, or what it threw; either way the family leaves the
  // in-flight map.
  const auto leave = [&] {
    std::lock_guard lock(in_flight_->mu);
    in_flight_->compiling.erase(family);
  };
  CompiledVariant v;
  try {
    v = compile_fresh(req, src, hash);
    // The family's entry: a copy of this member, kept only when its cubin takes the patch.
    if (takes_patch(v)) {
      CompiledVariant member = v;
      store(member, family, req);
    }
  } catch (...) {
    mine.set_exception(std::current_exception());
    leave();
    throw;
  }
  mine.set_value(v);
  leave();
  return v;
}

std::optional<CompiledVariant> Compiler::from_sibling(const CompiledVariant& sibling, const CompileRequest& req) const {
  try {
    return from_sibling(sibling, req, content_hash(req));
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<CompiledVariant> Compiler::from_sibling(const CompiledVariant& sibling, const CompileRequest& req,
                                                      const std::string& hash) const {
  // Shared: a cubin, or NVRTC's verdict on the code; not a failure of the file system or of a compile worker.
  if (!options_.use_cache || (!sibling.ok && (sibling.transient || sibling.hash.empty() ||
                                              sibling.error != FailureKind::compile)))
    return std::nullopt;
  CompiledVariant v;
  v.hash = hash;
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

CompiledVariant Compiler::compile_fresh(const CompileRequest& req, const CompileSources& src,
                                        const std::string& hash) const {
  // The headers go to NVRTC from memory, so the template's folder is not an include path: NVRTC reads no file
  // of the template's (CUDA's own headers come from the toolkit's -I).
  NvrtcJob job{req.source_path, src.source, src.headers, {}};
  const fs::path dir = fs::path(req.source_path).parent_path();
  const std::string template_dir = "-I" + (dir.empty() ? std::string(".") : dir.string());
  for (auto& o : nvrtc_options(req))
    if (o != template_dir) job.options.push_back(std::move(o));
  CompiledVariant v;
  v.hash = hash;
  NvrtcOutput out;
  if (procs_) {
    CompileProcs::Result r = procs_->run(job);
    if (!r.ok()) {  // the compile worker hung or died: this config's failure, never cached nor shared
      v.error = r.failure;
      v.log = r.message;
      v.compile_ms = r.ms;
      return v;
    }
    out = std::move(r.output);
  } else {
    out = run_nvrtc(job);
  }
  v.compile_ms = out.ms;
  v.log = std::move(out.log);
  if (out.rc == 0) {
    if (!out.cubin.empty()) {
      v.cubin = std::move(out.cubin);
      v.cubin_hash = cubin_hash(v.cubin);
      v.ok = true;
      v.resources = parse_ptxas_resources(v.log, req.kernel);
    } else {
      v.log += "\nnvrtcGetCUBIN: no cubin produced (is -arch a real sm_XX target?)";
    }
  }
  if (!v.ok) v.error = FailureKind::compile;
  v.transient = !v.ok && missing_file(v.log);
  // Cache successes and genuine compile errors (deterministic); not internal NVRTC failures, and not a
  // header that could not be opened (the same content compiles once the file is back).
  if (options_.use_cache && (v.ok || (out.rc == nvrtc_compilation_error_code() && !v.transient))) store(v, hash, req);
  return v;
}

std::optional<CompileProcsStats> Compiler::procs_stats() const {
  if (!procs_) return std::nullopt;
  return procs_->stats();
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
