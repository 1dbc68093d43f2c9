#include <sys/mman.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
int main() {
  const size_t bytes = size_t(1) << 30, huge = size_t(2) << 20;
  for (int T : {1, 2, 4, 8, 16}) {
    printf("threads %2d:", T);
    for (int rep = 0; rep < 3; ++rep) {
      char* p = (char*)mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      madvise(p, bytes, MADV_HUGEPAGE);
      auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> th;
      const size_t per = bytes / huge / T * huge;
      for (int t = 0; t < T; ++t)
        th.emplace_back([=] {
          for (size_t a = t * per; a < (t + 1) * per; a += 4096) p[a] = 0;
        });
      for (auto& x : th) x.join();
      printf(" %.1f", bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9);
      munmap(p, bytes);
    }
    printf(" GB/s\n");
  }
}
