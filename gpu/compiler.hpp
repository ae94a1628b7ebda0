// NVRTC compilation of a kernel template with one config, the resource report ptxas prints, and a disk
// cache keyed by a content hash (XXH3-128), so a config is compiled once per (source, includes, defines,
// options, NVRTC version).
#pragma once
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/compile_procs.hpp"
#include "gpu/failure.hpp"
#include "core/config.hpp"

namespace attn {

/// What to compile: a template file, its entry kernel, the config (each entry becomes -DNAME=VALUE) and
/// extra NVRTC options (e.g. "--use_fast_math", "-maxrregcount=128").
struct CompileRequest {
  std::string source_path;
  std::string kernel;
  Config defines;
  std::vector<std::string> extra_options;
  /// Defines whose value the template reads from `__constant__ int attn_param_<NAME>` (a space's "patchable"
  /// parameters, tuner/space.hpp): configs that differ only in them share one NVRTC compile, the others' cubins
  /// get their values written in (gpu/cubin_patch.hpp), byte-identical to what NVRTC builds for them. Used only
  /// with the cache on; a build without the symbols (a config that compiles them in) is compiled as usual.
  /// Not part of the content hash: it says how to obtain the cubin, not what the cubin is.
  std::vector<std::string> patchable = {};
};

/// Per-kernel resources from ptxas -v ("Used 96 registers, ... 1024 bytes smem"; "N bytes stack frame,
/// N bytes spill stores, N bytes spill loads"). registers = -1 when the log does not mention the kernel.
struct ResourceUsage {
  int registers = -1;
  int spill_stores = 0;       ///< bytes
  int spill_loads = 0;        ///< bytes
  int stack_frame = 0;        ///< bytes per thread
  int static_smem = 0;        ///< bytes of __shared__ arrays (dynamic smem comes from attn_launch_info)
  bool operator==(const ResourceUsage&) const = default;
};

/// A compiled config (a variant). ok = false: `log` says why, and `error` is FailureKind::compile (NVRTC's verdict,
/// or the files could not be read: see `transient`), or hang / worker_died when the compile worker running it
/// (CompilerOptions::procs) hung or died; those two are never cached nor shared with the config's family.
struct CompiledVariant {
  bool ok = false;
  FailureKind error = FailureKind::none;
  std::string log;              ///< NVRTC program log (ptxas -v lines on success, errors on failure)
  std::vector<char> cubin;      ///< sm_90a cubin (nvrtcGetCUBIN); empty when !ok
  std::string hash;             ///< 32 lowercase hex chars, see Compiler::content_hash
  std::string cubin_path;       ///< <cache>/<hash>.cubin, empty when the cache is off
  std::string cubin_hash;       ///< cubin_hash(cubin): what export compares a recompiled cubin with; "" when !ok
  double compile_ms = 0;        ///< NVRTC wall time of the compile that produced it (also on a cache hit)
  bool cache_hit = false;       ///< no NVRTC ran for it in this call (from the cache, or patched from a sibling)
  /// Content hash of the compile whose cubin this one's was patched from (CompileRequest::patchable), "" when
  /// NVRTC built this cubin itself.
  std::string patched_from;
  /// Its cubin takes its request's patchable defines (CompileRequest::patchable): a sibling can be patched from it
  /// (Compiler::from_sibling). False without patchable defines or for a build that compiles them in.
  bool patchable = false;
  /// The failure came from the file system, not from the config: the template source or one of its
  /// headers could not be read (a folder being rewritten, a deleted file). Such results are never cached
  /// and are worth a retry (Compiler::retry_transient).
  bool transient = false;
  ResourceUsage resources;
};

/// Compiler settings. The cache dir is created on first use.
struct CompilerOptions {
  std::string cache_dir;        ///< empty: default_cache_dir()
  bool use_cache = true;
  std::string arch = "sm_90a";  ///< -arch=...; sm_90a enables wgmma / setmaxnreg
  /// Accept --Ofast-compile (-Ofc) in a request's extra options: only for a process that compiles one config and
  /// nothing after it (`bench --nvrtc-option`), since NVRTC 13.0 keeps the setting for every later compile.
  bool allow_process_state = false;
  /// NVRTC runs in `procs.procs` compile worker processes (gpu/compile_procs.hpp), 0: in this process. The
  /// reading, hashing, cache and family waits stay in this process (Compiler::compile).
  CompileProcsOptions procs{};
};

/// XXH3-128 of a cubin's bytes as 32 lowercase hex chars, "" for an empty cubin. Two cubins with the same
/// hash are byte-identical for every practical purpose: export accepts a changed template source when its
/// recompiled cubin hashes to the one recorded with the variant (docs/export.md).
std::string cubin_hash(const std::vector<char>& cubin);
/// XXH3-128 of `bytes` as 32 lowercase hex digits (the hash of cubin_hash and of the compile cache's keys;
/// also an idea file's identity, proposer/idea_file.hpp).
std::string xxh128_hex(std::string_view bytes);

/// $ATTN_TUNER_CACHE, else $HOME/.cache/attn-tuner (./.attn-tuner-cache without HOME).
std::string default_cache_dir();

/// NVRTC 13's switch for its own cross-process compile cache (nvrtc.h, "--no-cache": "Disable the use of cache for
/// both ptx and cubin code generation"). Every compile passes it (Compiler::nvrtc_options): a cubin from that cache
/// comes without the ptxas -v log. It changes no code, so it is neither in the cache key nor exported.
inline constexpr std::string_view kNoNvrtcCache = "-no-cache";
/// "13.0" (nvrtcVersion).
std::string nvrtc_version_string();
/// Parses ptxas -v output in an NVRTC log for entry function `kernel`.
ResourceUsage parse_ptxas_resources(const std::string& log, const std::string& kernel);

/// The line of an NVRTC log that first says "error" (the first line when none does), cut to 200 chars:
/// the reason shown for a compile failure.
std::string compile_error_line(const std::string& log);

/// The bytes of one compile: a template's source and the files it pulls in with `#include "name"` (recursively,
/// resolved beside the including file, then in the template's folder), as (name as written, file text) pairs
/// sorted by name; files that do not exist are skipped (NVRTC then says "cannot open source file"). Each file is
/// read once, and the includes followed are those of the text recorded.
struct CompileSources {
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;
};
/// Reads `source_path` and its local includes (CompileSources). Throws std::invalid_argument ("cannot read
/// template source ...") when the source cannot be read.
CompileSources read_compile_sources(const std::string& source_path);
/// read_compile_sources(source_path).headers; empty when the source cannot be read.
std::vector<std::pair<std::string, std::string>> local_includes(const std::string& source_path);

/// Thread-safe: compile() may run on many threads at once (each call owns its nvrtcProgram, or a compile worker
/// for the time of its NVRTC run; cache files are written to a temporary name and renamed into place, so several
/// processes can share the cache folder).
class Compiler {
 public:
  explicit Compiler(CompilerOptions options = {});

  /// Compiles (or loads from the cache). The template and its includes are read once (read_compile_sources):
  /// the content hash, the family's hash and NVRTC (headers given in memory, no -I to the template's folder)
  /// all use those bytes, so a folder rewritten meanwhile never leaves one text's cubin under another's hash.
  /// Any problem (unreadable source, bad define name, NVRTC error, a compile worker that hung or died, a file
  /// system error) gives ok = false, the reason in `log` and `error` as CompiledVariant says. An extra option
  /// --Ofast-compile / -Ofc is refused that way (NVRTC 13.0 keeps it for every later compile of the process).
  /// Throws only std::bad_alloc; a call waiting for the same family's compile (CompileRequest::patchable) then
  /// throws the same exception.
  CompiledVariant compile(const CompileRequest& req) const;

  /// `req`'s variant from `sibling`, a compile of a config that differs from `req` only in patchable defines
  /// (CompileRequest::patchable): its cubin with `req`'s values written in, stored in the cache under `req`'s
  /// hash; cache_hit = true, compile_ms and log are the sibling's, patched_from its hash. A sibling that failed
  /// to compile (not transiently) gives the same failure under `req`'s hash: the code is the same. nullopt when
  /// it cannot be patched (a transient failure, a failure of a compile worker, no such symbols, no cache, `req`'s
  /// source unreadable): compile `req` instead. Throws only std::bad_alloc.
  std::optional<CompiledVariant> from_sibling(const CompiledVariant& sibling, const CompileRequest& req) const;

  /// Retries of a compile that failed because a file could not be read, and the wait before each.
  static constexpr int kTransientRetries = 3;
  static constexpr std::chrono::seconds kTransientWait{2};
  /// `result` of compiling `req`, or, while it failed transiently (a source or header missing for a moment:
  /// an editor or a copy rewriting the folder), `req` compiled again up to kTransientRetries times,
  /// kTransientWait apart; `before_retry(attempt 1.., last result)` is called before each wait. Blocks
  /// the calling thread for up to 6 s. The daemon (daemon/iteration.cpp) and `attn-tuner compile` use it.
  CompiledVariant retry_transient(CompiledVariant result, const CompileRequest& req,
                                  const std::function<void(int, const CompiledVariant&)>& before_retry = {}) const;

  /// The NVRTC options for `req`: -arch, -std=c++17, -I<cuda include>, -I<template dir>,
  /// --ptxas-options=-v, -DNAME=VALUE per define (sorted), then the extra options. compile() passes them all
  /// but -I<template dir> (its headers come from memory).
  std::vector<std::string> nvrtc_options(const CompileRequest& req) const;

  /// XXH3-128 (32 hex chars) of: source text, every local include (name and text), sorted defines, the
  /// options other than -I paths (includes count by content, not location), arch, kernel name and NVRTC
  /// version. Throws std::invalid_argument when the source cannot be read.
  std::string content_hash(const CompileRequest& req) const;
  /// The same hash of sources already read.
  std::string content_hash(const CompileRequest& req, const CompileSources& sources) const;

  /// The compile workers' counters (CompilerOptions::procs), nullopt when NVRTC runs in this process.
  std::optional<CompileProcsStats> procs_stats() const;

  const CompilerOptions& options() const { return options_; }
  const std::string& cache_dir() const { return options_.cache_dir; }

 private:
  CompilerOptions options_;
  /// Families being compiled now (family hash -> the compile's result): a second member waits and is patched
  /// from it instead of running NVRTC too. Shared by copies of this compiler.
  struct InFlightFamilies;
  std::shared_ptr<InFlightFamilies> in_flight_;
  /// The compile workers (CompilerOptions::procs), shared by copies of this compiler; null: NVRTC in this process.
  std::shared_ptr<CompileProcs> procs_;

  /// The cache entry `hash` (a complete one), or nullopt.
  std::optional<CompiledVariant> lookup(const std::string& hash) const;
  /// Writes `v` (ok, or a deterministic compile error) as cache entry `hash`; sets v.cubin_path. False and a
  /// note in v.log when the write failed.
  bool store(CompiledVariant& v, const std::string& hash, const CompileRequest& req) const;
  /// compile() but for the exceptions it turns into failures.
  CompiledVariant compile_sources(const CompileRequest& req) const;
  /// from_sibling for `req` of content hash `hash`.
  std::optional<CompiledVariant> from_sibling(const CompiledVariant& sibling, const CompileRequest& req,
                                              const std::string& hash) const;
  /// NVRTC run of `sources` for `req` (content hash `hash`), here or in a compile worker; stored in the cache
  /// when on and deterministic (a cubin or a compile error).
  CompiledVariant compile_fresh(const CompileRequest& req, const CompileSources& sources, const std::string& hash) const;
  /// The patchable defines `req` sets, with their values (empty: nothing to share).
  static Config patchable_values(const CompileRequest& req);
  /// Cache key of the configs that differ from `req` only in patchable defines.
  std::string family_hash(const CompileRequest& req, const CompileSources& sources) const;
};

/// N threads compiling ahead while the GPU is busy. Destruction drops requests not yet started (their
/// futures throw std::future_error broken_promise) and waits for those running.
class CompilePool {
 public:
  CompilePool(const Compiler& compiler, unsigned threads);
  ~CompilePool();
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  std::future<CompiledVariant> submit(CompileRequest req);
  unsigned threads() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace attn
