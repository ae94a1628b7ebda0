// Checking what a proposer wrote, before any GPU time (docs/proposer.md): the files, the space JSON, an
// NVRTC compile of the default config and the kernel ABI. A proposal that passes is installed as a template
// folder of its own (<name>.cu, <name>.json and its headers) that the daemon tunes like any other.
#pragma once
#include <optional>
#include <string>

#include "db/records.hpp"
#include "gpu/compiler.hpp"
#include "tuner/space.hpp"

namespace attn {

/// What became of a proposal's files.
struct ProposalCheck {
  ProposalStatus status = ProposalStatus::rejected;  ///< accepted, rejected or empty (no files at all)
  FailureKind failure = FailureKind::proposal;       ///< for rejected: compile or proposal
  std::string reason;                                ///< why rejected / empty; "" when accepted
  std::string description;                           ///< the one line of description.txt
  std::optional<std::string> source;                 ///< proposal.cu as installed: as written + a last
                                                     ///< line naming the template (own compile hash)
  std::optional<std::string> space_json;             ///< the space JSON as installed (name, source set)
  std::string headers_json = "{}";                   ///< {"include name": text} as installed
  std::string diff;                                  ///< against the parent template's files
  std::optional<TemplateSpace> space;                ///< the installed template (accepted only)
  Config default_config;                             ///< its default config, {} when the JSON did not load
  std::optional<CompiledVariant> compiled;           ///< the default config's compile, when it was tried
};

/// Checks the proposer's files in `workdir` and, when they pass, installs them in `install_dir` (made
/// anew) as template `name`:
/// 1. proposal.cu, proposal.json, description.txt: all or none (none: status empty); regular files inside
///    `workdir` (no symlinks), the source at most 1 MiB, the description one non-empty line (<= 300 chars);
///    every local include a relative path inside `workdir` without "..", a regular file;
/// 2. the JSON parses and is an object; its kernel, when given, is the parent's; name and source are set;
///    TemplateSpace::load accepts the installed file;
/// 3. the default config compiles with `compiler` (failure: FailureKind::compile, first error line);
/// 4. check_kernel_abi passes for the default config.
/// The diff (unified, `diff -u` of diffutils) of the source, space and headers against the parent's is
/// made whenever a source was read. Never throws for a bad proposal; throws std::runtime_error when the
/// install folder cannot be written.
ProposalCheck check_proposal(const std::string& workdir, const std::string& install_dir, const std::string& name,
                             const TemplateSpace& parent, const Compiler& compiler);

/// `diff -u` of two texts, labelled `label_a` / `label_b` ("" when equal). Missing texts are empty files.
/// Throws std::runtime_error when diff cannot run.
std::string unified_diff(const std::string& label_a, const std::string& text_a, const std::string& label_b,
                         const std::string& text_b);

}  // namespace attn
