// pc_sampler: a flat CPU profile where perf is not installed (the GPU machines). Preloaded
// beside libpump.so, it samples the interrupted program counter on SIGPROF (a timer on the
// process's CPU time) and at exit writes every sample's (module, offset) to
// PC_SAMPLER_OUT.<pid>, grouped by module; tests/gpu/pc_samples_to_functions.py names the
// functions with the unstripped libraries of the build. A one-off measurement tool, not in CI.
//
//   g++ -O2 -shared -fPIC -o libpc_sampler.so tests/gpu/pc_sampler.cc -ldl
//   PC_SAMPLER_OUT=samples.txt PC_SAMPLER_HZ=4000 LD_PRELOAD="libpump.so libpc_sampler.so" program
#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

namespace {

constexpr size_t kMaxSamples = 1 << 22;
uintptr_t* g_samples = nullptr;
std::atomic<size_t> g_count{0};
timer_t g_timer{};

void on_sigprof(int, siginfo_t*, void* context) {
  const size_t i = g_count.fetch_add(1, std::memory_order_relaxed);
  if (i < kMaxSamples)
    g_samples[i] = static_cast<uintptr_t>(static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RIP]);
}

__attribute__((constructor)) void start() {
  if (!std::getenv("PC_SAMPLER_OUT")) return;
  g_samples = static_cast<uintptr_t*>(std::calloc(kMaxSamples, sizeof(uintptr_t)));
  if (!g_samples) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigprof;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigaction(SIGPROF, &sa, nullptr);
  const long hz = std::getenv("PC_SAMPLER_HZ") ? std::atol(std::getenv("PC_SAMPLER_HZ")) : 4000;
  // A POSIX timer on the process's CPU clock, not setitimer: an itimer survives exec, and
  // would kill a program started through a wrapper before its own copy of this library
  // installed the handler.
  sigevent ev{};
  ev.sigev_notify = SIGEV_SIGNAL;
  ev.sigev_signo = SIGPROF;
  if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &g_timer) != 0) return;
  itimerspec t{};
  t.it_interval.tv_nsec = 1000000000L / (hz > 0 ? hz : 4000);
  t.it_value = t.it_interval;
  timer_settime(g_timer, 0, &t, nullptr);
}

__attribute__((destructor)) void finish() {
  const char* path = std::getenv("PC_SAMPLER_OUT");
  if (!path || !g_samples) return;
  if (g_count.load() == 0) return;  // (helper processes that never ran long)
  timer_delete(g_timer);
  const size_t n = std::min(g_count.load(), kMaxSamples);
  std::map<std::pair<std::string, uintptr_t>, size_t> counts;
  for (size_t i = 0; i < n; ++i) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(g_samples[i]), &info) && info.dli_fname)
      ++counts[{info.dli_fname, g_samples[i] - reinterpret_cast<uintptr_t>(info.dli_fbase)}];
    else ++counts[{"?", 0}];
  }
  // One file per process (a program may start helper processes that inherit the preload).
  const std::string file = std::string(path) + "." + std::to_string(getpid());
  FILE* f = std::fopen(file.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "# samples %zu\n", n);
  for (const auto& [key, c] : counts)
    std::fprintf(f, "%s 0x%lx %zu\n", key.first.c_str(), static_cast<unsigned long>(key.second), c);
  std::fclose(f);
}

}  // namespace
