#!/usr/bin/env bash
# A real "compiler change" on the GPU, end to end: record the pr suite, replay it with
# DISABLE_MMA_V3=1 (Hopper's wgmma path switched off in Triton's code generation), gate.
# Kernels without dot products compile to the same binaries (IDENTICAL_BINARY); matmul and
# attention change and should be REGRESSED.      bash bench/planted_regression.sh OUT_DIR
set -uo pipefail
out="${1:?usage: bash bench/planted_regression.sh OUT_DIR}"
mkdir -p "$out"
base=$(python3 -m tritongate run --suite pr --out "$out/runs" --color never 2>"$out/record.log" | tail -n 1)
cand=$(DISABLE_MMA_V3=1 python3 -m tritongate run --suite pr --out "$out/runs" --replay-from "$base" \
       --color never 2>"$out/replay.log" | tail -n 1)
python3 -m tritongate gate "$base" "$cand" --out "$out" > "$out/gate_stdout.txt"
echo "gate exit code: $?" | tee -a "$out/gate_stdout.txt"
cat "$out/gate_stdout.txt"
