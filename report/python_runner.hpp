// Running a Python helper script (the morning report's plotting) through Boost.Process: finding an
// interpreter that has the modules the script needs, and running the script with its output captured.
#pragma once
#include <string>
#include <vector>

namespace attn {

/// The first interpreter that can `import` every one of `modules`: `explicit_exe` when given (the only
/// candidate then), else $ATTN_TUNER_PYTHON when set, else /usr/bin/python3 (Debian's, where
/// python3-matplotlib installs), then python3 and python on PATH (a pyenv python3 there often lacks
/// Debian's packages). Throws std::runtime_error naming every candidate tried and why it failed, with
/// `install_hint` appended.
std::string find_python(const std::string& explicit_exe, const std::vector<std::string>& modules,
                        const std::string& install_hint);

/// Exit code and captured output of a finished script.
struct ScriptResult {
  int exit_code = -1;  ///< -1 when killed by a signal
  std::string out, err;
};

/// Runs `python script args...` to completion with PYTHONDONTWRITEBYTECODE=1 and MPLBACKEND=Agg added to
/// the environment, capturing stdout and stderr. Throws std::runtime_error when it cannot be started.
ScriptResult run_python_script(const std::string& python, const std::string& script,
                               const std::vector<std::string>& args);

}  // namespace attn
