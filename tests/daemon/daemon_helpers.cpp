#include "tests/daemon/daemon_helpers.hpp"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "db/store.hpp"

namespace attn::test {

namespace fs = std::filesystem;

Output run(const std::string& args, const std::string& env) {
  const std::string cmd = env + " '" + binary_path() + "' " + args + " 2>&1";
  Output out;
  FILE* p = ::popen(cmd.c_str(), "r");
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.text.append(buf, n);
  const int status = ::pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Fixture::args(const std::string& extra, const std::string& strategy) const {
  const std::string src = fs::path(data_dir()).parent_path().parent_path().string();
  return "run --db '" + db + "' --tsv '" + tsv + "' --suite smoke --templates '" + data_dir() +
         "/fake_templates' --template fake --strategy " + strategy + " --worker-exe '" + src +
         "/tests/daemon/fake_worker.py' --cache '" + dir + "/cache' --jobs 2 --watchdog-min 0.5 --watchdog-cap 2 " +
         extra;
}

std::vector<IterationRecord> Fixture::iterations() const {
  auto d = ExperimentDb::open(db, ExperimentDb::Mode::read_only);
  return d.iterations();
}

std::size_t Fixture::wait_finished(std::size_t n, double timeout_s) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::size_t done = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (fs::exists(db)) {
      try {
        done = 0;
        for (const auto& it : iterations()) done += is_finished(it.status) ? 1 : 0;
        if (done >= n) return done;
      } catch (const std::exception&) {  // the daemon is creating the schema
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return done;
}

}  // namespace attn::test
