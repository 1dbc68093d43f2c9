// A CUDA program that ends abruptly while pump evicts and its kernels are in flight, for
// `tests/gpu/device_suite.sh exits`: PUMP_STATS must then be a whole report or none.
//   exit_probe thread-exit|sigterm [buffers] [MiB each]   (default 8 x 32 MiB)
// Each round launches one kernel per buffer (reading and writing all of it), so a budget
// under the footprint evicts every round. After round 3 (synchronised) it prints
// "step 3 done", then launches without waiting, forever:
//   thread-exit  a second thread calls exit(0) 200 ms later (exit handlers, pump's report
//                among them, run on that thread while main keeps launching)
//   sigterm      until the parent's SIGTERM (default action: no exit handlers)
// alarm(300) ends an orphan left by a killed suite.
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

std::atomic<bool> exiting{false};

__global__ void touch(float* p, size_t n, float v) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    p[i] = p[i] * 0.5f + v;
}

void* exit_soon(void*) {
  usleep(200 * 1000);  // main is back to launching by then
  std::printf("exit(0) from a second thread\n");
  std::fflush(stdout);
  exiting = true;
  std::exit(0);
}

// A failure once exit has begun is the runtime shutting down under main: wait to be ended.
void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  if (exiting) {
    for (;;) pause();
  }
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || (std::strcmp(argv[1], "thread-exit") != 0 && std::strcmp(argv[1], "sigterm") != 0)) {
    std::fprintf(stderr, "usage: exit_probe thread-exit|sigterm [buffers] [MiB each]\n");
    return 2;
  }
  const bool thread_exit = std::strcmp(argv[1], "thread-exit") == 0;
  const int buffers = argc > 2 ? std::atoi(argv[2]) : 8;
  const size_t bytes = (size_t)(argc > 3 ? std::atoi(argv[3]) : 32) << 20;
  alarm(300);
  std::vector<float*> p(buffers);
  for (auto& b : p) {
    check(cudaMalloc(&b, bytes), "cudaMalloc");
    check(cudaMemset(b, 0, bytes), "cudaMemset");
  }
  const size_t n = bytes / sizeof(float);
  for (long round = 1;; ++round) {
    for (int b = 0; b < buffers; ++b) {
      touch<<<264, 256>>>(p[b], n, (float)b);
      check(cudaGetLastError(), "launch");
    }
    if (round > 3) continue;  // no waiting: kernels stay in flight
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::printf("step %ld done\n", round);
    std::fflush(stdout);
    if (round == 3 && thread_exit) {
      pthread_t t;
      if (pthread_create(&t, nullptr, exit_soon, nullptr) != 0) return 2;
    }
  }
}
