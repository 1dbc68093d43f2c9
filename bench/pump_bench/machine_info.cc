#include "bench/pump_bench/machine_info.h"

#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

namespace pump::bench {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

}  // namespace

MachineInfo describe_machine(const GpuProbe& gpu, bool sim) {
  MachineInfo m;
  char host[256] = {};
  m.hostname = gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  m.cpu = cpu_model() + " (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
  if (gpu.present) {
    m.gpu = gpu.name;
    m.driver = "CUDA " + gpu.driver;
  }
  m.mode = sim ? "sim" : "gpu";
  return m;
}

}  // namespace pump::bench
