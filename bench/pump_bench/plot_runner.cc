#include "bench/pump_bench/plot_runner.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <vector>

extern char** environ;

namespace pump::bench {

namespace {

// `quiet`: the child's stderr goes to /dev/null (a probe whose failure we explain ourselves).
int run(const std::vector<std::string>& argv, bool quiet) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string plot_python(std::string* message) {
  // The first interpreter on PATH may be a virtualenv without matplotlib while
  // the distribution's has it (Debian: python3-matplotlib).
  for (const char* candidate : {"python3", "/usr/bin/python3"})
    if (run({candidate, "-c", "import matplotlib"}, true) == 0) return candidate;
  *message = "--plot needs python3 with matplotlib, which is not available (apt-get install python3-matplotlib)";
  return "";
}

bool plot_csv(const std::string& script, const std::string& csv_path, const std::string& png_path,
              std::string* message) {
  const std::string python = plot_python(message);
  if (python.empty()) return false;
  if (const int rc = run({python, script, csv_path, png_path}, false); rc != 0) {
    *message = "no plot: drawing " + png_path + " failed (plot_results.py exit " + std::to_string(rc) + ")";
    return false;
  }
  return true;
}

}  // namespace pump::bench
