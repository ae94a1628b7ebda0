// Writes an ExportPlan as a challenge submission directory (harness submission_loader.py rules: only
// .py/.json/.toml/.txt/.md files, at most 128 files and 20 MiB unpacked):
//   submission.py            VARIANT_MANIFEST, setup(), block_sparse_attn_fwd() (export/submission_template.py)
//   attn_tuner_dispatch.py   the shape -> variant rule, pure Python (export/dispatch_template.py)
//   attn_tuner_cuda.py       the CUDA driver and NVRTC through ctypes (export/cuda_template.py)
//   kernels/<v>.cubin.b64.txt  the cubin, base64;  kernels/<v>.cu.txt  its CUDA source (NVRTC fallback)
//   kernels/<v>.inc.<name>.txt  headers the source includes with #include "name"
//   (a source or header text that an earlier variant ships is not copied: the entry names that file)
//   export_plan.json, README.md  provenance for people
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "export/plan.hpp"

namespace attn {

/// The harness's limits on a submission directory (submission_loader.py).
inline constexpr std::uint64_t kMaxSubmissionBytes = 20ull * 1024 * 1024;
inline constexpr int kMaxSubmissionFiles = 128;

/// The Python templates; placeholders are identifiers __ATTN_EXPORT_<NAME>__ replaced by literals.
struct SubmissionTemplates {
  std::string submission_py;  ///< __ATTN_EXPORT_VARIANT_MANIFEST__, __ATTN_EXPORT_VARIANTS__
  std::string dispatch_py;    ///< __ATTN_EXPORT_DEFAULT_VARIANT__, __ATTN_EXPORT_VARIANT_NAMES__, __ATTN_EXPORT_DISPATCH_RULES__
  std::string cuda_py;        ///< no placeholders: copied as attn_tuner_cuda.py
};

/// $ATTN_TUNER_EXPORT_TEMPLATES, else the source tree's export/ folder.
std::string default_export_template_dir();
/// Reads <dir>/submission_template.py, <dir>/dispatch_template.py and <dir>/cuda_template.py. Throws std::invalid_argument
/// naming a file that cannot be read.
SubmissionTemplates load_submission_templates(const std::string& dir = default_export_template_dir());

/// The directory's files, relative path -> bytes; no I/O. Checks the plan (check_export_plan) and
/// throws std::invalid_argument when a template lacks a placeholder or has one twice, or when the
/// files exceed the harness's limits.
std::map<std::string, std::string> render_submission(const ExportPlan& plan, const SubmissionTemplates& templates);

/// Throws std::invalid_argument when `out_dir` cannot take a new submission: it is a file, the root,
/// or a non-empty directory while !force; with force, a non-empty directory that holds neither
/// submission.py nor export_plan.json (so a typo cannot wipe an unrelated folder).
void check_output_dir(const std::string& out_dir, bool force);

/// Renders the plan and writes it into a temporary sibling directory, then renames that to `out_dir`
/// (replacing an earlier export only when force): on any error nothing is left at `out_dir` beyond
/// what was there before. Throws std::invalid_argument (plan, templates, out_dir as above) or
/// std::runtime_error / std::filesystem::filesystem_error on I/O failure.
void write_submission_dir(const ExportPlan& plan, const SubmissionTemplates& templates, const std::string& out_dir,
                          bool force);

}  // namespace attn
