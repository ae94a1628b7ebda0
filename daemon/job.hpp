// A config on its way to a GPU (daemon/scheduler.hpp queues it, a GPU slot evaluates it): its compile, and its screen
// request once written to a worker ahead of its turn.
#pragma once
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>

#include "gpu/compiler.hpp"
#include "gpu/worker_protocol.hpp"
#include "tuner/multi_search.hpp"

namespace attn::tuning {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

/// A screen request written to a GPU's worker before its turn (GpuSlot::send_screen): the worker answers its
/// requests in order, so it starts this one the moment it has answered the one before.
struct SentScreen {
  std::int64_t cases_gen = 0;         ///< the generation of the cases its worker held when it was sent (CaseSet::gen)
  Clock::time_point sent;             ///< when it was written (its busy time starts then, or at the answer before it)
  std::optional<EvalResponse> reply;  ///< its answer, once read
  /// It never reached the worker: the write met a worker that had ended (reply says so). Not this config's outcome:
  /// the config before it ended the worker, and that config's answer says so.
  bool unsent = false;
};

/// One config compiling ahead (or compiled, waiting for a GPU), a patched sibling whose cubin is ready, or a spare
/// evaluation.
struct InFlight {
  TemplateProposal proposal;
  std::shared_future<CompiledVariant> compiled;
  bool sibling = false;  ///< patched or spare: not the compile pool's work (the compile backlog counts the others)
  /// A spare evaluation (ScreenBook::take_spare): the whole suite for the config that this screen iteration screened out.
  std::optional<std::int64_t> spare_of{};
  /// Its screen request, once written to its GPU's worker (GpuSlot::screen, the send ahead).
  std::shared_ptr<SentScreen> sent{};
  /// Whether its compile has finished (now, without waiting).
  bool ready() const { return compiled.wait_for(std::chrono::seconds(0)) == std::future_status::ready; }
};

}  // namespace attn::tuning
