// libFuzzer target: the worker protocol's line parser (gpu/worker_protocol.cpp), from both ends. As the
// worker reads a request line: JSON, "cmd", then the prepare / eval request; as the daemon's client reads
// a response line: "status", then the hello / prepare / eval response. Contract: a line that is not JSON
// is a json::exception (a parse_error, or out_of_range for a number beyond double such as 1e309; the
// worker answers "rejected" to both, the client calls the worker broken), every other problem
// std::invalid_argument; nothing else escapes, and what parses writes back to JSON that parses to the
// same message.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "gpu/worker_protocol.hpp"

namespace {
using nlohmann::json;

/// The line as the client sends and the worker re-reads it (invalid UTF-8 replaced, as WorkerClient does).
json reparse(const json& j) { return json::parse(j.dump(-1, ' ', false, json::error_handler_t::replace)); }

void as_worker(const json& j) {
  std::string cmd;
  try {
    cmd = attn::request_command(j);
  } catch (const std::invalid_argument&) {
    return;
  }
  try {
    if (cmd == "prepare") {
      const auto m = attn::prepare_request_from_json(j);
      if (attn::prepare_request_from_json(reparse(attn::to_json(m))) != m) std::abort();
    } else if (cmd == "eval") {
      const auto m = attn::eval_request_from_json(j);
      if (attn::eval_request_from_json(reparse(attn::to_json(m))) != m) std::abort();
    }
  } catch (const std::invalid_argument&) {
  }
}

void as_client(const json& j) {
  try {
    attn::reply_status_from_json(j);
  } catch (const std::invalid_argument&) {
    return;
  }
  try {
    const auto h = attn::hello_response_from_json(j);
    if (attn::hello_response_from_json(reparse(attn::to_json(h))) != h) std::abort();
  } catch (const std::invalid_argument&) {
  }
  try {
    const auto p = attn::prepare_response_from_json(j);
    const auto again = attn::prepare_response_from_json(reparse(attn::to_json(p)));
    if (again.status != p.status || again.cases != p.cases || again.built != p.built) std::abort();
  } catch (const std::invalid_argument&) {
  }
  try {
    const auto e = attn::eval_response_from_json(j);
    const auto again = attn::eval_response_from_json(reparse(attn::to_json(e)));
    if (again.status != e.status || again.cases.size() != e.cases.size()) std::abort();
  } catch (const std::invalid_argument&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception&) {  // as Worker::handle_line and WorkerClient::request
    return 0;
  }
  as_worker(j);
  as_client(j);
  return 0;
}
