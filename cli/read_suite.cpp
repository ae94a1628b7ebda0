#include "cli/read_suite.hpp"

#include <cstdio>
#include <stdexcept>

#include "cli/commands.hpp"
#include "db/store.hpp"

namespace attn {

SuiteChoice choose_read_suite(ExperimentDb& db, const std::string& explicit_suite, bool machine_readable) {
  SuiteChoice c;
  try {
    c = resolve_suite(db, explicit_suite);
  } catch (const std::invalid_argument& e) {
    throw CliError(e.what());
  }
  if (!c.note.empty()) {
    std::FILE* to = machine_readable ? stderr : stdout;
    std::fprintf(to, "%s\n", c.note.c_str());
    std::fflush(to);
  }
  return c;
}

}  // namespace attn
