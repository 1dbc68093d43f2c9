#!/usr/bin/env bash
# Twenty-fourth session, call 2: shadow slabs' pages touched by several threads before registering
# (PUMP_PIN_THREADS; default the machine's threads, at most 8) against one thread (the former way), lru, back to
# back, alternating which goes first. First: how fast anonymous memory (huge pages asked for) is touched by 1-16
# threads on this host, 1 GiB three times each. Programs from tests/ (GPT bf16 and ResNet-50 at 1.5, the Llama
# decode at half) and outside tests/ (zoo.py: BERT and ViT-B/16 at 1.5).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 2.9-10.9 GB on a 140 GB card; the touch probe maps
# 1 GiB of ordinary (unpinned) memory at a time.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r2; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
nproc >> $R/gpu.txt; cat /sys/kernel/mm/transparent_hugepage/enabled >> $R/gpu.txt
cat > $R/touch.cc <<'CC'
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
        th.emplace_back([=] { for (size_t a = t * per; a < (t + 1) * per; a += 4096) p[a] = 0; });
      for (auto& x : th) x.join();
      printf(" %.1f", bytes / std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 1e9);
      munmap(p, bytes);
    }
    printf(" GB/s\n");
  }
}
CC
g++ -O2 -pthread -o $R/touch $R/touch.cc && $R/touch | tee $R/touch.txt; rm -f $R/touch
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB pinned {g('backend_pinned_bytes')/1e9:.2f} GB ahead {g('backend_pinned_ahead_bytes')/1e9:.2f} GB caller_pin_ms {g('backend_pinned_alloc_ns')/1e6:.0f} ahead_waits {g('backend_pinned_ahead_waits')} pressure_ms {g('launch_pressure_ns')/1e6:.0f} locked_ms {g('launch_locked_ns')/1e6:.0f} issue_wait_ms {g('backend_issue_wait_ns')/1e6:.0f} failed {g('backend_failed_calls')}")
PY
}
med() { grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | tail -6 | sort -n | awk '{a[NR]=$1} END {printf "%.1f", (a[3]+a[4])/2}'; }
show() { echo "$1 rc=$2 wall=$3s median6=$(med $1) | $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep -h "checksum\|ms/token\|token_ms" $R/$1.txt | tail -2 | cut -c1-120)"; echo "   $(stats $1) $(grep -o "token [01] in [0-9.]* ms" $R/$1.err | tr "\n" " ")"; grep -i "error" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 480 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_POLICY=lru PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
  tar czf $OUT/r2.tgz -C $OUT r2
}
pair() {  # pair NAME BUDGET TIMEOUT ORDER ARGS...
  local name=$1 budget=$2 t=$3 order=$4; shift 4
  for v in $order; do
    if [ $v = one ]; then run $name-one $budget $t PUMP_PIN_THREADS=1 -- "$@"
    else run $name-many $budget $t PUMP_LOG_LEVEL=info -- "$@"; fi
  done
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 8"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 8"
pair bert 7243562341 75 "one many" .device/zoo.py --model bert --steps 6
pair gptb 2954188117 60 "many one" $gptb
pair res 4645890730 60 "one many" $res
pair vit 4510274901 60 "many one" .device/zoo.py --model vit --steps 6
pair decode 3489660928 150 "one many" tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 8
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $R
