#include "report/python_runner.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <future>

#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <fmt/format.h>

namespace attn {
namespace bp = boost::process;

namespace {

/// Exit code of a finished child; -1 when a signal ended it.
int exit_code_of(const bp::child& c) {
  const int native = c.native_exit_code();
  return WIFEXITED(native) ? WEXITSTATUS(native) : -1;
}

/// "" when `python` imports every module, else why not (first line of its error).
std::string import_problem(const std::string& python, const std::vector<std::string>& modules) {
  std::string code = "import ";
  for (std::size_t i = 0; i < modules.size(); ++i) code += (i ? ", " : "") + modules[i];
  try {
    boost::asio::io_context ios;
    std::future<std::string> err;
    bp::child c(bp::exe = python, bp::args = {"-c", code}, bp::std_out > bp::null, bp::std_err > err,
                bp::std_in < bp::null, ios);
    ios.run();
    c.wait();
    if (exit_code_of(c) == 0) return "";
    std::string text = err.get();
    while (!text.empty() && text.back() == '\n') text.pop_back();
    const auto last = text.rfind('\n');
    return last == std::string::npos ? text : text.substr(last + 1);  // "ModuleNotFoundError: ..."
  } catch (const std::exception& e) {
    return fmt::format("cannot run it: {}", e.what());
  }
}

}  // namespace

std::string find_python(const std::string& explicit_exe, const std::vector<std::string>& modules,
                        const std::string& install_hint) {
  std::vector<std::string> candidates;
  if (!explicit_exe.empty()) {
    candidates.push_back(explicit_exe);
  } else if (const char* env = std::getenv("ATTN_TUNER_PYTHON"); env && *env) {
    candidates.push_back(env);
  } else {
    candidates.push_back("/usr/bin/python3");
    for (const char* name : {"python3", "python"}) {
      const auto found = bp::search_path(name);
      if (!found.empty()) candidates.push_back(found.string());
    }
  }
  std::string tried;
  for (const auto& exe : candidates) {
    std::string why;
    if (!std::filesystem::exists(exe)) why = "not found";
    else why = import_problem(exe, modules);
    if (why.empty()) return exe;
    tried += fmt::format("{}{} ({})", tried.empty() ? "" : "; ", exe, why);
  }
  std::string mods;
  for (const auto& m : modules) mods += (mods.empty() ? "" : ", ") + m;
  throw std::runtime_error(fmt::format("needs Python 3 with {}; tried {}. {}", mods, tried, install_hint));
}

ScriptResult run_python_script(const std::string& python, const std::string& script,
                               const std::vector<std::string>& args) {
  std::vector<std::string> argv{script};
  argv.insert(argv.end(), args.begin(), args.end());
  bp::environment env = boost::this_process::environment();
  env.set("PYTHONDONTWRITEBYTECODE", "1");  // set(), not env[name]: see proposer/proposer_process.cpp
  env.set("MPLBACKEND", "Agg");
  ScriptResult r;
  try {
    boost::asio::io_context ios;
    std::future<std::string> out, err;
    bp::child c(bp::exe = python, bp::args = argv, bp::std_out > out, bp::std_err > err, bp::std_in < bp::null,
                env, ios);
    ios.run();
    c.wait();
    r.exit_code = exit_code_of(c);
    r.out = out.get();
    r.err = err.get();
  } catch (const bp::process_error& e) {
    throw std::runtime_error(fmt::format("cannot run {} {}: {}", python, script, e.what()));
  }
  return r;
}

}  // namespace attn
