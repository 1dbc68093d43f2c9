/* Calls cudaMalloc and cudaFree through the CUDA runtime and prints what they return.
 * Run natively and under LD_PRELOAD=libpump.so: the output must be identical (on a
 * machine without a GPU both return the runtime's no-driver/no-device error).
 * An optional argument then ends the process another way, for the stats-at-exit test:
 *   thread-exit  exit(0) from a second thread while main waits for it
 *   sigterm      killed by SIGTERM (default action: no exit handlers run)
 *   fork         fork(); parent and child both return from main */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

static void* exit_from_thread(void* unused) {
  (void)unused;
  fflush(stdout);
  exit(0);
}

int main(int argc, char** argv) {
  void* p = NULL;
  cudaError_t a = cudaMalloc(&p, 1 << 20);
  cudaError_t f = a == cudaSuccess ? cudaFree(p) : cudaSuccess;
  size_t free_bytes = 0, total = 0;
  cudaError_t i = cudaMemGetInfo(&free_bytes, &total);
  printf("cudaMalloc=%d cudaFree=%d cudaMemGetInfo=%d\n", (int)a, (int)f, (int)i);
  if (argc < 2) return 0;
  if (strcmp(argv[1], "thread-exit") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, exit_from_thread, NULL) != 0) return 2;
    pthread_join(t, NULL);
    return 3; /* not reached: the thread exits the process */
  }
  if (strcmp(argv[1], "sigterm") == 0) {
    fflush(stdout);
    raise(SIGTERM);
    return 3;
  }
  if (strcmp(argv[1], "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) return 0;
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
    return 0;
  }
  return 2;
}
