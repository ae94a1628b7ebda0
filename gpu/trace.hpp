// The trace build's buffer (kernels_templates/blocks/trace.cuh) on the host: decode the 64-bit words into
// per-role event lists, and add up where each role's cycles went. A step's time is the time between an
// event and the one before it in the same role, named by the later event (trace.cuh's TraceEvent list).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace attn {

/// attn_trace_info of a trace build: CTAs, roles per CTA, words per role row, header words per row.
struct TraceLayout {
  int ctas = 0, roles = 0, stride = 0, header = 0;
};

/// Role of a row: 0 producer (TMA thread), 1 converter (first converter warp, lane 0), 2+ consumer
/// warpgroup (role - 2), as trace.cuh.
enum class TraceRole { producer, converter, consumer };
TraceRole trace_role(int role);
const char* trace_role_name(TraceRole r);

/// One event: its code (trace.cuh TraceEvent) and the SM cycle counter, relative to the row's start.
struct TraceEvent {
  int code = 0;
  std::int64_t cycle = 0;
};

/// One recorded (cta, role) row.
struct TraceRow {
  int cta = 0, role = 0, smid = 0;
  std::uint64_t start_ns = 0, end_ns = 0;  ///< %globaltimer at the role's start and end (ns, device clock)
  std::int64_t cycles = 0;                 ///< clock64 from start to end
  std::uint64_t dropped = 0;               ///< events past the row's capacity (not recorded)
  std::vector<TraceEvent> events;
};

/// Decodes `words` (attn_trace as read back) laid out as `layout`; rows never written (no magic) are
/// skipped. Throws std::invalid_argument when the layout is malformed or `words` is shorter than it says,
/// or when a row's event count exceeds its capacity or an event's clock runs backwards past the row's end.
std::vector<TraceRow> decode_trace(const std::vector<std::uint64_t>& words, const TraceLayout& layout);

/// Name of an event code, and of the step that ends with it ("softmax", "wait for K", ...); "event <n>"
/// for a code this build does not know.
std::string trace_event_name(int code);
std::string trace_step_name(TraceRole role, int code);

/// Cycles of one role kind spent in one step, summed over rows.
struct TraceStep {
  TraceRole role = TraceRole::consumer;
  std::string step;
  std::int64_t cycles = 0;
  std::int64_t count = 0;
};

/// Where the time went: per role kind and step, the cycles and how often; plus the counts that normalise
/// them and the end-of-kernel idle time of the CTAs (the tail of the schedule).
struct TraceSummary {
  std::vector<TraceStep> steps;     ///< in order of first appearance per role kind
  std::int64_t role_cycles[3] = {}; ///< total cycles of the rows of each role kind
  std::int64_t kv_tiles = 0;        ///< Q K^T completions over consumer rows (a warpgroup's tile)
  std::int64_t work_tiles = 0;      ///< epilogues + empty work tiles over consumer rows
  int consumer_roles = 0;           ///< distinct consumer roles (warpgroups per CTA) among the rows
  int ctas = 0, sms = 0;            ///< CTAs traced, distinct SMs among them
  double span_ns = 0;               ///< last role end - first role start (globaltimer)
  double mean_tail_ns = 0;          ///< mean over CTAs of (last end of any CTA - this CTA's last end)
  std::uint64_t dropped = 0;        ///< events lost to full rows
};

/// Sums `rows` into steps (see the file comment). The start of a row and its first event bound a
/// "start" step, its last event and its end an "exit" step.
TraceSummary summarize_trace(const std::vector<TraceRow>& rows);

/// One line per event: cta,role,smid,index,event,cycle (header line first).
void write_trace_csv(std::ostream& out, const std::vector<TraceRow>& rows);

}  // namespace attn
