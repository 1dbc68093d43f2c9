#!/usr/bin/env bash
# The policy matrix of docs/results/policies-*.md: every sim workload and access pattern at
# near-fit and oversubscribed ratios, the four H100 traces and the three H200 traces of programs
# outside tests/ (zoo_*: BERT, ViT-B/16 and OPT-shaped decode, sixteenth session), as pump-bench JSON files.
#
#   bench/policy_matrix.sh OUT_DIR [PLUGIN_DIR] [ITERATIONS]
#
# PLUGIN_DIR: the policies to load (default: this build's); ITERATIONS: per run (default:
# pump-bench's 4); SIM_MODEL (environment): more pump-bench options for the sim's driver
# model, such as "--populate discard-and-prefetch --deferred-limit 0" (the model before the
# H200 populate probe). Then: python3 bench/policy_compare.py --before A --after B.
set -euo pipefail
out=${1:?usage: policy_matrix.sh OUT_DIR [PLUGIN_DIR] [ITERATIONS]}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=${PUMP_BENCH:-$root/build/release/bin/pump-bench}
plugins=${2:-}
iterations=${3:-4}
mkdir -p "$out"
args=(--policies none,lru,learned --iterations "$iterations")
[ -n "$plugins" ] && args+=(--plugin-dir "$plugins")
read -r -a model <<< "${SIM_MODEL:-}"
args+=("${model[@]}")
"$bench" --sim --workload training-loop,mlp,conv,decode --oversubscription 1.02,1.05,1.1,1.5,2,3 \
  "${args[@]}" --json "$out/sim.json" > "$out/sim.txt" 2>&1
"$bench" --sim --workload cycle,grad-accum,varlen,prefill-decode,decode-grow \
  --oversubscription 1.02,1.05,1.1,1.5,2,3 "${args[@]}" --json "$out/patterns.json" > "$out/patterns.txt" 2>&1
# The decoder as HF's generate runs it (a Llama shape, 2 GiB of weights, 8 tokens): where the
# GPU showed learned slower than lru (docs/results, thirteenth session).
"$bench" --sim --workload hf-decode --size 2GiB --oversubscription 1.5,2,3 "${args[@]}" --iterations 8 \
  --json "$out/hf-decode.json" > "$out/hf-decode.txt" 2>&1
for t in gpt_fp32 gpt2 lstm resnet50 zoo_bert zoo_vit zoo_opt; do
  "$bench" --trace "$root/bench/traces/gpu/$t.trace" --oversubscription 1.5,2,3 "${args[@]}" \
    --json "$out/$t.json" > "$out/$t.txt" 2>&1
done
