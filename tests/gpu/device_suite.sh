#!/usr/bin/env bash
# On a GPU machine, from the repo root, with .device/ carried (scripts/device_bundle.sh):
#   tests/gpu/device_suite.sh [part...]     parts: check static-cudart torch-resnet torch-gpt bench datapath decode verify ddp ddp-bench graphs compile dataloader frameworks exits probes
# static-cudart, datapath, decode, verify, ddp, ddp-bench, graphs, compile, dataloader, frameworks, exits and probes are not in the default list: run them by name.
# probes: the data path's one-off probes in tests/gpu (PROBES names them, default the driver's page work:
# discard_parallel_probe remap_cost_probe read_mostly_probe), each built with nvcc and run; each says its SAFETY.
# exits (issue 12): programs that exit from a non-main thread or are killed by SIGTERM under pump leave
# a whole PUMP_STATS report or none (exits_suite below).
# frameworks (issue 9, framework independence; frameworks_suite below): programs that are not
# PyTorch with its default allocator, each natively and then under pump at PUMP_GPU_BUDGET =
# half its native footprint, PUMP_PLUGINS=cudnn,cublas,launch, for each of POLICIES (default
# none,lru; none is the speed reference: on the unified-memory data path, PUMP_DATAPATH=um, as
# pump-bench's none row: no policy, the budget kept by the engine's own evictions by migration;
# FRAMEWORKS_NONE_DATAPATH changes it; on the default data path those evictions move at the link's
# speed) with PUMP_VERIFY off, and poison too for every policy but none. The programs (FRAMEWORKS_CONFIGS picks some, default all five):
#   jax-noprealloc     tests/gpu/frameworks/jax_train.py, a jitted MLP, XLA_PYTHON_CLIENT_PREALLOCATE=false
#   jax-prealloc       the same with preallocation at XLA_PYTHON_CLIENT_MEM_FRACTION 0.40 (SAFETY, see
#                      frameworks_config); its footprint is peak_bytes_in_use, not the pool
#   cupy               tests/gpu/frameworks/cupy_program.py: cuBLAS GEMMs, elementwise, reductions, a RawKernel
#   torch-expandable   train_steps.py ResNet-50 (FRAMEWORKS_TORCH_STEPS, default 8), expandable_segments:True
#   torch-mallocasync  the same with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
# and, by name only (not in the five): jax-platform (jax_train.py with XLA_PYTHON_CLIENT_ALLOCATOR=platform:
# a device allocation per buffer, no arena) and torch-default (ResNet-50 on PyTorch's default allocator),
# the references for what those settings change.
# Every pump run: its loss lines bit for bit against native, and check_engaged.py on its
# PUMP_STATS (pump engaged: managed allocations > 0, else a failure; launches with known
# blocks, target 100%; bytes known over all hooks, target 99%; peak resident <= budget +
# FRAMEWORKS_SLACK; missed targets are MISS lines, failures only with FRAMEWORKS_STRICT=1).
# A missing package (jax, cupy, torch) is a SKIPPED row, not a failure. Ends with a table:
# program x run -> engaged, launches known, bytes known, peak within budget, losses, ms/step
# (median) against pump-none and native. Each run is capped at 300 s (timeout); JAX and CuPy
# runs take FRAMEWORKS_STEPS steps (default 10). Logs: $OUT/frameworks-<program>-<run>.*.
# compile: as graphs, with the model under torch.compile(mode="reduce-overhead") (graph_steps.py --mode compile).
# dataloader: a DataLoader forking its workers after CUDA init (dataloader_suite below).
# graphs: a ResNet-50 step captured whole with torch.cuda.graph and replayed
# (tests/gpu/torch/graph_steps.py, GRAPH_STEPS replays, default 12): native, then under pump at
# PUMP_GPU_BUDGET = half the native footprint for each of POLICIES (default lru,learned) with
# PUMP_VERIFY off and poison; every loss bit for bit against native, and the stats checked by
# check_graph_stats.py (each replay a graph launch decided from its capture, the budget kept).
# PUMP_MANAGED_LIMIT is half the free memory.
# static-cudart: a program built with nvcc's default static CUDA runtime (static_cudart_check.sh).
# ddp (needs two GPUs: the nvidia-h200-x2 machine): tests/gpu/torch/check_multi_gpu.py, native
# against pump at PUMP_GPU_BUDGET = half of each device's footprint, for each of POLICIES
# (default all six) with PUMP_VERIFY off and poison, every loss of every rank bit for bit:
# DDP (torchrun, 2 ranks, NCCL all-reduce) of ResNet-50 fp32 and of the GPT decoder bf16, and
# one process driving both GPUs (the GPT decoder cut in two, activations copied between
# them). PUMP_MANAGED_LIMIT is half of each device's free memory (check_multi_gpu.py).
# ddp-bench: pump-bench on the DDP ResNet-50 under torchrun (none and lru at 2x).
# verify: every step's loss bit for bit against native on the copy path, with and without
# PUMP_VERIFY=poison, ResNet-50 fp32 and the GPT decoder bf16 (POLICIES, default lru,learned).
# datapath: pump-datapath-bench, the backend alone (DATAPATH_ARGS adds arguments).
# decode: Llama-shaped bf16 greedy decoding (tests/gpu/torch/decode_steps.py, DECODE_WEIGHTS_GIB
# of weights, default 6.5, DECODE_TOKENS tokens, default 24): native; HF accelerate offload with
# half the weights on the GPU; pump with PUMP_GPU_BUDGET = half the weights under none (plain
# unified memory, PUMP_DATAPATH=um) and lru, learned (PUMP_DATAPATH=copy). Prints the median
# ms/token of each and checks every run's token checksum against native. DECODE_CONFIGS picks the
# rows after native (default: accelerate pump-none pump-lru pump-learned).
# Writes logs under $OUT (or /tmp/pump-device). SAFETY: every run caps managed memory
# (PUMP_MANAGED_LIMIT) well below the card's free memory; oversubscription is emulated
# with PUMP_GPU_BUDGET. pump-datapath-bench (datapath) caps itself: all its device memory
# <= free/2 (cudaMemGetInfo at start), pinned host memory <= 8 GiB.
set -uo pipefail
OUT=${OUT:-/tmp/pump-device}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
LIBPUMP=$PWD/.device/lib/libpump.so
[ -f "$LIBPUMP" ] || { echo "no .device/lib/libpump.so: run scripts/device_bundle.sh and carry .device"; exit 2; }
# cuBLAS/cuDNN from the toolkit or PyTorch's wheels, for the C++ workload programs.
LIBDIRS=$( (ls -d /usr/local/cuda/lib64 2>/dev/null;
            find / -xdev \( -name 'libcudnn.so.9' -o -name 'libcublas.so.13' \) -path '*nvidia*' 2>/dev/null |
              xargs -r -n1 dirname) | sort -u | paste -sd: )
export LD_LIBRARY_PATH=$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.free --format=csv,noheader
# A DataLoader forking its workers after CUDA init (tests/gpu/torch/dataloader_steps.py):
# native, then under pump at half the native footprint with lru: losses bit for bit, every
# worker's exit code 0, and one whole PUMP_STATS report (the parent's; no %p in the path).
dataloader_suite() {
  local free limit footprint budget rc
  free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB
  limit=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory
  timeout 300 python3 tests/gpu/torch/dataloader_steps.py > "$OUT/dataloader-native.txt" 2> "$OUT/dataloader-native.err" ||
    { echo "native: FAILED: $(tail -3 "$OUT/dataloader-native.err" | tr '\n' ' ')"; return 1; }
  footprint=$(sed -n 's/^pump-bench: footprint_bytes=//p' "$OUT/dataloader-native.txt")
  budget=$((footprint / 2))
  env LD_PRELOAD="$LIBPUMP" PUMP_GPU_BUDGET="$budget" PUMP_MANAGED_LIMIT="$limit" PUMP_POLICY=lru \
    PUMP_STATS="$OUT/dataloader-pump.stats.json" timeout 300 python3 tests/gpu/torch/dataloader_steps.py \
    > "$OUT/dataloader-pump.txt" 2> "$OUT/dataloader-pump.err"
  rc=$?
  tail -1 "$OUT/dataloader-pump.err"
  [ $rc -eq 0 ] || { echo "pump: FAILED rc=$rc"; return 1; }
  if diff <(grep '^loss ' "$OUT/dataloader-native.txt") <(grep '^loss ' "$OUT/dataloader-pump.txt") > /dev/null; then
    echo "dataloader: losses identical to native (budget $((budget >> 20)) MiB)"
  else echo "dataloader: LOSSES DIFFER FROM NATIVE"; return 1; fi
  python3 -c "import json,sys; json.load(open(sys.argv[1])); print('dataloader: one whole stats report')" \
    "$OUT/dataloader-pump.stats.json" || return 1
}

# Programs ending abruptly under pump (issue 12; exits_suite below): a PUMP_STATS report whole
# or none, never torn. EXITS_WORK, EXITS_LIMIT: set by exits_suite.
# exits_run DIR END [ENV=VALUE...] -- PROGRAM...: runs PROGRAM (stdout, stderr in DIR) capped at
# EXITS_TIMEOUT s (default 180); END sigterm: the suite sends SIGTERM once PROGRAM printed
# "step 3 done" (timeout passes it on). Prints PROGRAM's exit status (124 or 137: it hung).
exits_run() {
  local dir=$1 end=$2 pid t; shift 2
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  rm -rf "$dir"; mkdir -p "$dir/stats"
  # timeout outside env: only the program is preloaded.
  timeout -k 10 "${EXITS_TIMEOUT:-180}" env "${envs[@]}" "$@" > "$dir/out.txt" 2> "$dir/err.txt" &
  pid=$!
  if [ "$end" = sigterm ]; then
    for ((t = 0; t < 1500; t++)); do  # up to 150 s to reach step 3
      grep -qs '^step 3 done' "$dir/out.txt" && break
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
    kill -TERM "$pid" 2> /dev/null
  fi
  wait "$pid"
  echo $?
}

# exits_case NAME END EXPECT BUDGET EVICTS -- PROGRAM...: PROGRAM natively (a reference: is a
# failure pump's?), then under pump with lru at BUDGET. PASS: pump's run ended with EXPECT and
# left a whole report or none; EVICTS=1: a report there shows prefetches and evictions
# (check_pump_stats.py; its residency bound is loose, budget + twice the budget: the budget
# suites check residency, this one what is left at exit).
exits_case() {
  local name=$1 end=$2 expect=$3 budget=$4 evicts=$5; shift 6
  local dir="$EXITS_WORK/$name" native rc whole problems=()
  native=$(exits_run "$dir-native" "$end" -- "$@")
  rc=$(exits_run "$dir" "$end" LD_PRELOAD="$LIBPUMP" PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY=lru \
    PUMP_GPU_BUDGET="$budget" PUMP_MANAGED_LIMIT="$EXITS_LIMIT" PUMP_STATS="$dir/stats/stats.json" -- "$@")
  case $rc in
    "$expect") ;;
    124 | 137) problems+=("hung: killed after ${EXITS_TIMEOUT:-180} s") ;;
    *) problems+=("rc=$rc, expected $expect") ;;
  esac
  whole=$(python3 tests/gpu/check_stats_whole.py "$dir/stats" stats.json) || problems+=("torn report")
  if [ "$evicts" = 1 ] && [ "$whole" != none ] && [ ${#problems[@]} -eq 0 ]; then
    python3 tests/gpu/check_pump_stats.py "$dir/stats/stats.json" $((2 * budget)) > "$dir/check.txt" 2>&1 ||
      problems+=("$(grep -m1 '^FAIL' "$dir/check.txt")")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    echo "PASS $name: rc=$rc, report: $whole (native rc=$native)"
  else
    echo "FAIL $name: ${problems[*]}; report: $whole (native rc=$native$([ "$native" = "$expect" ] || echo ", not $expect either"))"
    tail -3 "$dir/err.txt" | sed 's/^/  stderr: /'
  fi
  [ -f "$dir/check.txt" ] && sed -n '1s/^/  /p' "$dir/check.txt"
  [ ${#problems[@]} -eq 0 ]
}

# exits: issue 12's "a program that exits from a non-main thread and one killed by SIGTERM leave a
# complete or no stats file". Under pump (lru, budget half the footprint so it evicts), each
# natively first for reference:
#   torch-thread-exit  tests/gpu/torch/exit_steps.py (an MLP, ~400 MiB): after step 3 a second
#                      thread calls libc exit(0) while the main thread launches steps unawaited
#   torch-sigterm      the same loop, SIGTERM from the suite after step 3 (default action)
#   cuda-thread-exit, cuda-sigterm  tests/gpu/exit_probe.cu (8 x 32 MiB, a kernel per buffer), likewise
#   probe-thread-exit, probe-sigterm  tests/core/interpose/cuda_malloc_probe.c as CI runs it on the
#                      fake driver (exit(0) from a thread; raise(SIGTERM)), here on the GPU
# Expected: exit status 0 (thread-exit) or 143 (SIGTERM), within EXITS_TIMEOUT s (default 180); the report whole
# (check_stats_whole.py) or absent, nothing else left beside it; a thread-exit report of a
# program that evicts shows it did. One PASS/FAIL line a case; logs in $OUT/exits/.
exits_suite() {
  local failures=0 free footprint budget probe_budget=$((128 << 20))
  free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB
  EXITS_LIMIT=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory
  EXITS_WORK=$OUT/exits
  rm -rf "$EXITS_WORK"; mkdir -p "$EXITS_WORK"
  [ "$EXITS_LIMIT" -ge $((2 << 30)) ] || { echo "exits: FAIL: only $free MiB free on the GPU"; return 1; }
  # The shared runtime, as PyTorch uses it; cuda_malloc_probe.c as it is (C, pthreads).
  if ! { nvcc -O2 -std=c++17 -arch=sm_90 -cudart shared -o "$EXITS_WORK/exit_probe" tests/gpu/exit_probe.cu &&
         nvcc -O2 -cudart shared -o "$EXITS_WORK/cuda_malloc_probe" tests/core/interpose/cuda_malloc_probe.c -lpthread
       } > "$EXITS_WORK/build.log" 2>&1; then
    echo "exits: FAIL: the probes do not build: $(tail -3 "$EXITS_WORK/build.log" | tr '\n' ' ')"; return 1
  fi
  timeout 300 python3 tests/gpu/torch/exit_steps.py --end none > "$EXITS_WORK/torch-footprint.txt" \
    2> "$EXITS_WORK/torch-footprint.err" ||
    { echo "exits: FAIL: exit_steps.py natively: $(tail -3 "$EXITS_WORK/torch-footprint.err" | tr '\n' ' ')"; return 1; }
  footprint=$(sed -n 's/^pump-bench: footprint_bytes=//p' "$EXITS_WORK/torch-footprint.txt")
  budget=$((footprint / 2))
  echo "exits: torch footprint $((footprint >> 20)) MiB, budget $((budget >> 20)) MiB; probes 256 MiB, budget" \
    "$((probe_budget >> 20)) MiB; managed limit $((EXITS_LIMIT >> 20)) MiB"
  local torch=(python3 tests/gpu/torch/exit_steps.py)
  exits_case torch-thread-exit run 0 "$budget" 1 -- "${torch[@]}" --end thread-exit || failures=$((failures + 1))
  exits_case torch-sigterm sigterm 143 "$budget" 0 -- "${torch[@]}" --end sigterm || failures=$((failures + 1))
  exits_case cuda-thread-exit run 0 "$probe_budget" 1 -- "$EXITS_WORK/exit_probe" thread-exit 8 32 ||
    failures=$((failures + 1))
  exits_case cuda-sigterm sigterm 143 "$probe_budget" 0 -- "$EXITS_WORK/exit_probe" sigterm 8 32 ||
    failures=$((failures + 1))
  exits_case probe-thread-exit run 0 "$probe_budget" 0 -- "$EXITS_WORK/cuda_malloc_probe" thread-exit ||
    failures=$((failures + 1))
  exits_case probe-sigterm run 143 "$probe_budget" 0 -- "$EXITS_WORK/cuda_malloc_probe" sigterm ||
    failures=$((failures + 1))
  echo "exits: $failures of 6 cases failed"
  [ $failures -eq 0 ]
}

# One decode run: decode_run NAME [ENV=VALUE...] -- ARGS...; prints "NAME: <median> ms/token <checksum>"
# and leaves the output in $OUT/decode-NAME.txt. Each is capped at 9 minutes.
decode_run() {
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  env "${envs[@]}" timeout 540 python3 tests/gpu/torch/decode_steps.py "$@" > "$OUT/decode-$name.txt" 2> "$OUT/decode-$name.err"
  local rc=$?
  if [ $rc -ne 0 ]; then echo "$name: FAILED rc=$rc: $(tail -3 "$OUT/decode-$name.err" | tr '\n' ' ')"; return 1; fi
  python3 - "$OUT/decode-$name.txt" "$name" <<'PY'
import statistics, sys
ms, checksum = [], ""
for line in open(sys.argv[1]):
    if line.startswith("pump-bench: iteration_ms="): ms.append(float(line.split("=", 1)[1]))
    elif line.startswith("pump-bench: checksum="): checksum = line.split("=", 1)[1].strip()
print(f"{sys.argv[2]}: {statistics.median(ms):.2f} ms/token (median of {len(ms)}), checksum {checksum[:16]}")
PY
}

decode_checksum() { sed -n 's/^pump-bench: checksum=//p' "$OUT/decode-$1.txt" 2>/dev/null; }

decode_suite() {
  local w=${DECODE_WEIGHTS_GIB:-6.5} t=${DECODE_TOKENS:-24} failures=0
  local half budget free limit
  half=$(python3 -c "print($w / 2)")
  budget=$(python3 -c "print(int($w / 2 * 2**30))")
  free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB
  limit=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory, far above the ~${w} GiB footprint
  python3 -c "import transformers, accelerate" 2>/dev/null || { echo "decode: transformers/accelerate missing (pip install transformers accelerate)"; return 1; }
  echo "decode: ${w} GiB of weights, ${t} tokens, budget ${half} GiB, managed limit $((limit >> 20)) MiB"
  local args=(--weights-gib "$w" --tokens "$t")
  decode_run native -- "${args[@]}" || return 1
  local ref; ref=$(decode_checksum native)
  local configs=" ${DECODE_CONFIGS:-accelerate pump-none pump-lru pump-learned} "
  if [[ $configs == *" accelerate "* ]]; then
    decode_run accelerate -- "${args[@]}" --offload accelerate --gpu-budget-gib "$half" || failures=$((failures + 1))
  fi
  local pump=(LD_PRELOAD="$LIBPUMP" PUMP_GPU_BUDGET="$budget" PUMP_MANAGED_LIMIT="$limit" PUMP_PLUGINS=cudnn,cublas,launch)
  if [[ $configs == *" pump-none "* ]]; then
    decode_run pump-none "${pump[@]}" PUMP_POLICY=none PUMP_DATAPATH=um PUMP_STATS="$OUT/decode-pump-none.stats.json" -- "${args[@]}" ||
      failures=$((failures + 1))
  fi
  for policy in lru learned; do
    [[ $configs == *" pump-$policy "* ]] || continue
    decode_run "pump-$policy" "${pump[@]}" PUMP_POLICY=$policy PUMP_DATAPATH=copy PUMP_STATS="$OUT/decode-pump-$policy.stats.json" \
      -- "${args[@]}" || failures=$((failures + 1))
  done
  for name in accelerate pump-none pump-lru pump-learned; do
    local c; c=$(decode_checksum "$name")
    [ -n "$c" ] || continue
    if [ "$c" = "$ref" ]; then echo "$name: tokens identical to native"
    else echo "$name: TOKENS DIFFER FROM NATIVE"; failures=$((failures + 1)); fi
  done
  [ $failures -eq 0 ]
}

graphs_suite() {  # graphs_suite [capture|compile]
  local mode=${1:-capture} steps=${GRAPH_STEPS:-12} failures=0 free limit footprint budget
  local tag=graphs; [ "$mode" = capture ] || tag=$mode
  free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB
  limit=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory
  timeout 540 python3 tests/gpu/torch/graph_steps.py --mode "$mode" --steps "$steps" > "$OUT/$tag-native.txt" 2> "$OUT/$tag-native.err" ||
    { echo "native: FAILED: $(tail -3 "$OUT/$tag-native.err" | tr '\n' ' ')"; return 1; }
  footprint=$(sed -n 's/^pump-bench: footprint_bytes=//p' "$OUT/$tag-native.txt")
  budget=$((footprint / 2))
  echo "$tag: footprint $((footprint >> 20)) MiB, budget $((budget >> 20)) MiB, managed limit $((limit >> 20)) MiB"
  grep '^loss ' "$OUT/$tag-native.txt" > "$OUT/$tag-native.losses"
  local policy verify name
  for policy in $(echo "${POLICIES:-lru,learned}" | tr ',' ' '); do
    for verify in off poison; do
      name="pump-$policy-$verify"
      env LD_PRELOAD="$LIBPUMP" PUMP_GPU_BUDGET="$budget" PUMP_MANAGED_LIMIT="$limit" PUMP_PLUGINS=cudnn,cublas,launch \
        PUMP_POLICY="$policy" PUMP_DATAPATH=copy PUMP_VERIFY="$verify" PUMP_STATS="$OUT/$tag-$name.stats.json" \
        timeout 540 python3 tests/gpu/torch/graph_steps.py --mode "$mode" --steps "$steps" > "$OUT/$tag-$name.txt" 2> "$OUT/$tag-$name.err"
      local rc=$?
      if [ $rc -ne 0 ]; then
        echo "$name: FAILED rc=$rc: $(tail -3 "$OUT/$tag-$name.err" | tr '\n' ' ')"; failures=$((failures + 1)); continue
      fi
      if grep '^loss ' "$OUT/$tag-$name.txt" | cmp -s - "$OUT/$tag-native.losses"; then echo "$name: losses identical to native"
      else echo "$name: LOSSES DIFFER FROM NATIVE"; failures=$((failures + 1)); fi
      python3 tests/gpu/torch/check_graph_stats.py "$OUT/$tag-$name.stats.json" "$steps" || failures=$((failures + 1))
    done
  done
  [ $failures -eq 0 ]
}

# Framework independence (issue 9): programs whose allocators and kernels are not PyTorch's
# default ones (frameworks_suite below). FW_* are set by frameworks_config.
FW_CONFIGS="jax-noprealloc jax-prealloc cupy torch-expandable torch-mallocasync"
frameworks_config() {  # frameworks_config NAME: sets FW_MODULES, FW_ENV and FW_PROG for NAME
  local torch_steps=${FRAMEWORKS_TORCH_STEPS:-8}
  FW_ENV=()
  case $1 in
    jax-noprealloc) FW_MODULES="jax"; FW_ENV=(JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false)
                    FW_PROG=(python3 tests/gpu/frameworks/jax_train.py --steps "${FRAMEWORKS_STEPS:-10}") ;;
    jax-prealloc) FW_MODULES="jax"
                  # SAFETY: JAX preallocates XLA_PYTHON_CLIENT_MEM_FRACTION of the card's total
                  # memory (default 0.75) in one allocation, natively and as one managed
                  # allocation under pump: 0.75 is more than we allow ourselves on a shared GPU,
                  # so 0.40, and lower still if that would not fit 90% of PUMP_MANAGED_LIMIT
                  # (half the free memory, FW_LIMIT).
                  local frac
                  frac=$(python3 -c "print(f'{min(0.40, 0.9 * $FW_LIMIT / ($FW_TOTAL_MIB * 2**20)):.3f}')")
                  FW_ENV=(JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=true XLA_PYTHON_CLIENT_MEM_FRACTION="$frac")
                  FW_PROG=(python3 tests/gpu/frameworks/jax_train.py --steps "${FRAMEWORKS_STEPS:-10}") ;;
    jax-platform) FW_MODULES="jax"; FW_ENV=(JAX_PLATFORMS=cuda XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform)
                  FW_PROG=(python3 tests/gpu/frameworks/jax_train.py --steps "${FRAMEWORKS_STEPS:-10}") ;;
    torch-default) FW_MODULES="torch torchvision"; FW_ENV=(PYTORCH_CUDA_ALLOC_CONF=)
                   FW_PROG=(python3 tests/gpu/torch/train_steps.py --model resnet50 --steps "$torch_steps") ;;
    cupy) FW_MODULES="cupy"; FW_PROG=(python3 tests/gpu/frameworks/cupy_program.py --steps "${FRAMEWORKS_STEPS:-10}") ;;
    torch-expandable) FW_MODULES="torch torchvision"; FW_ENV=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
                      FW_PROG=(python3 tests/gpu/torch/train_steps.py --model resnet50 --steps "$torch_steps") ;;
    torch-mallocasync) FW_MODULES="torch torchvision"; FW_ENV=(PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)
                       FW_PROG=(python3 tests/gpu/torch/train_steps.py --model resnet50 --steps "$torch_steps") ;;
    *) return 1 ;;
  esac
}

fw_row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$OUT/frameworks.rows"; }
fw_median() {
  python3 -c 'import statistics,sys; ms=[float(l.split("=",1)[1]) for l in open(sys.argv[1]) if l.startswith("pump-bench: iteration_ms=")]; print(f"{statistics.median(ms):.2f}" if ms else "-")' "$1"
}

# One program under one allocator setting: native, then pump at half the native footprint for
# each policy of POLICIES (PUMP_VERIFY off, and poison too for every policy but none).
# Prints one line a run; returns the number of failures (a skip is none).
frameworks_one() {
  local name=$1 failures=0 free footprint budget rc m
  free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB
  FW_LIMIT=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory (jax-prealloc's fraction is kept under it)
  frameworks_config "$name" || { echo "$name: unknown configuration"; return 1; }
  for m in $FW_MODULES; do
    if ! python3 -c "import importlib.util,sys; sys.exit(importlib.util.find_spec('$m') is None)"; then
      echo "$name: SKIPPED: skipped: $m not installed"; fw_row "$name native" SKIPPED "-" "-" "-" "$m not installed" "-"
      return 0
    fi
  done
  local base="$OUT/frameworks-$name"  # budget: half the native footprint; managed limit: half the free memory
  env "${FW_ENV[@]}" timeout 300 "${FW_PROG[@]}" > "$base-native.txt" 2> "$base-native.err"
  rc=$?
  if [ $rc -eq 77 ]; then
    echo "$name: SKIPPED: $(grep -m1 '^skipped' "$base-native.txt")"
    fw_row "$name native" SKIPPED "-" "-" "-" "$(grep -m1 '^skipped' "$base-native.txt" | cut -c10-)" "-"
    return 0
  elif [ $rc -ne 0 ]; then
    echo "$name native: FAILED rc=$rc: $(tail -3 "$base-native.err" | tr '\n' ' ')"; fw_row "$name native" FAILED "-" "-" "-" "-" "-"
    return 1
  fi
  footprint=$(sed -n 's/^pump-bench: footprint_bytes=//p' "$base-native.txt")
  if [ -z "$footprint" ] || [ "$footprint" -le 0 ]; then
    echo "$name native: FAILED: no footprint_bytes"; fw_row "$name native" FAILED "-" "-" "-" "-" "-"; return 1
  fi
  budget=$((footprint / 2))
  grep '^loss ' "$base-native.txt" > "$base-native.losses"
  echo "$name native: $(fw_median "$base-native.txt") ms/step, footprint $((footprint >> 20)) MiB, $(wc -l < "$base-native.losses") loss lines" \
       "(${FW_ENV[*]:-default allocator})"
  fw_row "$name native" "-" "-" "-" "-" ref "$(fw_median "$base-native.txt")"
  local policy verify run losses
  for policy in $(echo "${POLICIES:-none,lru}" | tr ',' ' '); do
    for verify in off poison; do
      [ "$policy" = none ] && [ "$verify" = poison ] && continue
      run="pump-$policy-$verify"
      local datapath=""  # none: plain unified memory, the reference (see the header)
      [ "$policy" = none ] && datapath=${FRAMEWORKS_NONE_DATAPATH:-um}
      free=$(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1)  # MiB, just before
      FW_LIMIT=$((free * 1024 * 1024 / 2))  # SAFETY: half the free memory
      env "${FW_ENV[@]}" LD_PRELOAD="$LIBPUMP" PUMP_GPU_BUDGET="$budget" PUMP_MANAGED_LIMIT="$FW_LIMIT" \
        PUMP_PLUGINS=cudnn,cublas,launch PUMP_POLICY="$policy" PUMP_VERIFY="$verify" PUMP_STATS="$base-$run.stats.json" \
        ${datapath:+PUMP_DATAPATH=$datapath} timeout 300 "${FW_PROG[@]}" > "$base-$run.txt" 2> "$base-$run.err"
      rc=$?
      if [ $rc -ne 0 ]; then  # 77 too: the framework lost its GPU under pump
        echo "$name $run: FAILED rc=$rc: $(grep -m1 '^skipped' "$base-$run.txt") $(tail -3 "$base-$run.err" | tr '\n' ' ')"
        fw_row "$name $run" "FAILED rc=$rc" "-" "-" "-" "-" "-"; failures=$((failures + 1)); continue
      fi
      if grep '^loss ' "$base-$run.txt" | cmp -s - "$base-native.losses"; then losses=identical
      else losses=DIFFER; failures=$((failures + 1)); fi
      # The whole check in $base-$run.check.txt; here its summary line and its MISS and FAIL lines.
      python3 tests/gpu/frameworks/check_engaged.py "$base-$run.stats.json" --output "$base-$run.txt" \
        --label "$name $run" --losses "$losses" --row "$OUT/frameworks.rows" --slack "${FRAMEWORKS_SLACK:-0}" \
        ${FRAMEWORKS_STRICT:+--strict} > "$base-$run.check.txt" 2>&1 || failures=$((failures + 1))
      grep -E '(summary|MISS|FAIL): ' "$base-$run.check.txt"
    done
  done
  return $failures
}

# The table: one row a run, ms/step against the same program's pump-none run and native.
frameworks_table() {
  python3 - "$OUT/frameworks.rows" <<'PY'
import sys
rows = [line.rstrip("\n").split("\t") for line in open(sys.argv[1]) if line.strip()]
ms = {}
for r in rows:
    program, run = r[0].split(" ", 1)
    ms[(program, run)] = r[6]
def ratio(a, b):
    try:
        return f"{float(a) / float(b):.2f}x"
    except ValueError:
        return "-"
print(f"{'program/allocator':<18} {'run':<20} {'engaged':<9} {'launches':>9} {'bytes':>9} {'peak<=bud':>9} "
      f"{'losses':<10} {'ms/step':>9} {'vs none':>8} {'vs native':>9}")
for r in rows:
    program, run = r[0].split(" ", 1)
    print(f"{program:<18} {run:<20} {r[1]:<9} {r[2]:>9} {r[3]:>9} {r[4]:>9} {r[5]:<10} {r[6]:>9} "
          f"{ratio(r[6], ms.get((program, 'pump-none-off'), '-')) if run != 'native' else '-':>8} "
          f"{ratio(r[6], ms.get((program, 'native'), '-')):>9}")
PY
}

frameworks_suite() {
  local failures=0 name
  FW_TOTAL_MIB=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
  : > "$OUT/frameworks.rows"
  echo "frameworks: ${FRAMEWORKS_CONFIGS:-$FW_CONFIGS}; policies ${POLICIES:-none,lru}; budget half of each native footprint"
  for name in ${FRAMEWORKS_CONFIGS:-$FW_CONFIGS}; do
    frameworks_one "$name"
    failures=$((failures + $?))
  done
  echo "frameworks: table (launches and bytes: known %, targets 100% and 99%; ms/step: median)"
  frameworks_table
  [ $failures -eq 0 ]
}

status=0
for part in "${@:-check torch-resnet torch-gpt bench}"; do
  for p in $part; do
    echo "=================== $p"
    case $p in
      check) tests/gpu/run_on_device.sh .device > "$OUT/check.log" 2>&1; rc=$?; tail -25 "$OUT/check.log" ;;
      static-cudart) tests/gpu/static_cudart_check.sh .device > "$OUT/static-cudart.log" 2>&1; rc=$?
                     tail -25 "$OUT/static-cudart.log" ;;
      torch-resnet) python3 tests/gpu/torch/check_policies.py --libpump "$LIBPUMP" --model resnet50 --steps 20 --policies "${POLICIES:-none,lazy,eager,lru,activations,learned}" \
                      --out "$OUT/torch" 2>&1 | tee "$OUT/torch-resnet.txt"; rc=${PIPESTATUS[0]} ;;
      verify) # Bitwise, on the copy path, normally and under PUMP_VERIFY=poison (a read pump did
              # not foresee turns into NaN): ResNet-50 fp32 and the GPT decoder in bf16.
              rc=0
              for v in ${VERIFY_MODES:-off poison}; do  # VERIFY_MODES: split across calls
                for model in "resnet50 fp32" "transformer bf16"; do
                  set -- $model
                  PUMP_DATAPATH=copy PUMP_VERIFY=$v python3 tests/gpu/torch/check_policies.py --libpump "$LIBPUMP" \
                    --model "$1" --dtype "$2" --steps 12 --policies "${POLICIES:-lru,learned}" --out "$OUT/verify-$v" 2>&1 |
                    tee -a "$OUT/verify.txt" | tail -4
                  [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
                done
              done ;;
      torch-gpt) python3 tests/gpu/torch/check_policies.py --libpump "$LIBPUMP" --model transformer --steps 20 --policies "${POLICIES:-none,lazy,eager,lru,activations,learned}" \
                   --out "$OUT/torch" 2>&1 | tee "$OUT/torch-gpt.txt"; rc=${PIPESTATUS[0]} ;;
      bench) .device/bin/pump-bench --libpump "$LIBPUMP" --plugin-dir .device/lib/pump --workload mlp,conv \
               --oversubscription 1,1.5,2,3 --policies ${POLICIES:-none,eager,lazy,lru,activations,learned} \
               --repeats 1 --json "$OUT/bench.json" --csv "$OUT/bench.csv" 2> "$OUT/bench.err" | tee "$OUT/bench.txt"
             rc=${PIPESTATUS[0]}; tail -5 "$OUT/bench.err" ;;
      datapath) .device/bin/pump-datapath-bench ${DATAPATH_ARGS:-} --json "$OUT/datapath.json" 2>&1 | tee "$OUT/datapath.txt"
                rc=${PIPESTATUS[0]} ;;
      decode) decode_suite 2>&1 | tee "$OUT/decode.txt"; rc=${PIPESTATUS[0]} ;;
      graphs) graphs_suite capture 2>&1 | tee "$OUT/graphs.txt"; rc=${PIPESTATUS[0]} ;;
      compile) graphs_suite compile 2>&1 | tee "$OUT/compile.txt"; rc=${PIPESTATUS[0]} ;;
      dataloader) dataloader_suite 2>&1 | tee "$OUT/dataloader.txt"; rc=${PIPESTATUS[0]} ;;
      exits) exits_suite 2>&1 | tee "$OUT/exits.txt"; rc=${PIPESTATUS[0]} ;;
      frameworks) frameworks_suite 2>&1 | tee "$OUT/frameworks.txt"; rc=${PIPESTATUS[0]} ;;
      ddp) rc=0
           for run in "ddp resnet50 fp32" "ddp transformer bf16" "two-gpu transformer bf16"; do
             set -- $run
             python3 tests/gpu/torch/check_multi_gpu.py --libpump "$LIBPUMP" --mode "$1" --model "$2" --dtype "$3" \
               --steps 12 --policies "${POLICIES:-none,lazy,eager,lru,activations,learned}" --verify off,poison \
               --out "$OUT/ddp" 2>&1 | tee -a "$OUT/ddp.txt"
             [ "${PIPESTATUS[0]}" -eq 0 ] || rc=1
           done ;;
      ddp-bench) .device/bin/pump-bench --libpump "$LIBPUMP" --plugin-dir .device/lib/pump --oversubscription 2 \
                   --policies ${POLICIES:-none,lru} --repeats 1 --json "$OUT/ddp-bench.json" \
                   -- python3 -m torch.distributed.run --standalone --nproc_per_node=2 \
                   tests/gpu/torch/ddp_steps.py --model resnet50 --steps 10 2> "$OUT/ddp-bench.err" | tee "$OUT/ddp-bench.txt"
                 rc=${PIPESTATUS[0]}; tail -5 "$OUT/ddp-bench.err" ;;
      probes) rc=0
              for probe in ${PROBES:-discard_parallel_probe remap_cost_probe read_mostly_probe}; do
                if nvcc -O2 -std=c++17 -arch=sm_90 -o "$OUT/$probe" "tests/gpu/$probe.cu" -lcuda; then
                  timeout 300 "$OUT/$probe" > "$OUT/probe-$probe.txt" 2>&1 || rc=1
                  echo "--- $probe"; cat "$OUT/probe-$probe.txt"
                else
                  echo "--- $probe: does not build"; rc=1
                fi
                rm -f "$OUT/$probe"
              done ;;
      *) echo "unknown part $p"; rc=2 ;;
    esac
    echo "=================== $p: rc=$rc"
    [ "$rc" -eq 0 ] || status=1
  done
done
exit $status
