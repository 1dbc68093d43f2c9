#!/usr/bin/env bash
# Twenty-second session, call 6: as call 2, with the module and library loads now also redirected when found through cuGetProcAddress (call 5: both hangs were cublasCreate loading its kernels through cuLibraryLoadData, found that way, past the hooks). Fences by events (the default) against counters (PUMP_FENCE=counter: the kernel's
# stream waits on the device for a word the worker writes, so the launching thread does not wait for the worker to
# issue the batch; CUDA_MODULE_LOADING=EAGER set by pump), each pair back to back, twice where time allows:
# GPT bf16 at 1.5 (learned, lru), ViT-B/16 at 1.5 (learned, zoo.py, outside tests/), ResNet-50 at 1.5 (learned),
# the Llama-shaped decode at half its weights (lru; cuDNN builds and loads kernels every token).
# SAFETY: PUMP_MANAGED_LIMIT = half the free memory; footprints 4.4-8.1 GB on a 140 GB card.
LIB=$PWD/.device/lib/libpump.so
R=$OUT/r6; mkdir -p $R
limit() { echo $(( $(nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits | head -1) * 1024 * 1024 / 2 )); }
nvidia-smi --query-gpu=name,memory.free,memory.total,driver_version --format=csv > $R/gpu.txt
stats() { python3 - $R/$1.json <<'PY' 2>/dev/null
import json, sys
e = json.load(open(sys.argv[1]))["devices"][0]
g = lambda k: e.get(k, 0)
print(f"restored {g('bytes_restored')/1e9:.1f} GB saved {g('bytes_saved')/1e9:.1f} GB issue_waits {g('backend_issue_waits')} "
      f"{g('backend_issue_wait_ns')/1e6:.0f} ms counter_waits {g('backend_counter_waits')} drains {g('backend_counter_load_drains')} "
      f"maps {g('backend_physical_maps')} map {g('backend_physical_map_ns')/1e6:.0f} ms worker {g('backend_worker_busy_ns')/1e6:.0f} ms "
      f"queue_hw {g('backend_queue_high_water')} failed {g('backend_failed_calls')}")
PY
}
show() { echo "$1 rc=$2 wall=$3s $(grep -o 'iteration_ms=[0-9.]*' $R/$1.txt | cut -d= -f2 | awk '{printf "%.0f ", $1}') $(grep checksum $R/$1.txt | cut -c1-40)"; echo "   $(stats $1)"; grep -i "counter\|EAGER" $R/$1.err | head -3; }
run() {  # run NAME BUDGET TIMEOUT ENV... -- ARGS...
  local name=$1 budget=$2 t=$3; shift 3
  local envs=(); while [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  [ $SECONDS -lt 520 ] || { echo "skipped $name (time)"; return; }
  local t0=$SECONDS
  env "${envs[@]}" PUMP_GPU_BUDGET=$budget LD_PRELOAD=$LIB PUMP_MANAGED_LIMIT=$(limit) PUMP_PLUGINS=cudnn,cublas,launch \
    PUMP_LOG_LEVEL=info PUMP_STATS=$R/$name.json timeout $t python3 "$@" > $R/$name.txt 2> $R/$name.err
  show $name $? $((SECONDS - t0))
  tar czf $OUT/r6.tgz -C $OUT r6
}
gptb="tests/gpu/torch/train_steps.py --model transformer --dtype bf16 --steps 12"
res="tests/gpu/torch/train_steps.py --model resnet50 --steps 12"
vit=".device/zoo.py --model vit --steps 10"
dec="tests/gpu/torch/decode_steps.py --weights-gib 6.5 --tokens 10"
for f in event counter; do run res-learned-$f 4645890730 60 PUMP_POLICY=learned PUMP_FENCE=$f -- $res; done
for f in event counter; do run gptb-learned-$f 2954188117 60 PUMP_POLICY=learned PUMP_FENCE=$f -- $gptb; done
for f in event counter; do run dec-lru-$f 3489660928 100 PUMP_POLICY=lru PUMP_FENCE=$f -- $dec; done
for f in counter event; do run vit-learned-$f 4510274901 60 PUMP_POLICY=learned PUMP_FENCE=$f -- $vit; done
for f in counter event; do run res-learned-$f-2 4645890730 60 PUMP_POLICY=learned PUMP_FENCE=$f -- $res; done
tar czf $OUT/r6.tgz -C $OUT r6 && rm -rf $R
