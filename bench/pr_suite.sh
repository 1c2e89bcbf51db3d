#!/usr/bin/env bash
# Run the `pr` suite on the GPU with the graph timer and keep its results table, run
# directory files and wall time:  bash bench/pr_suite.sh OUT_DIR
set -euo pipefail
out="${1:?usage: bash bench/pr_suite.sh OUT_DIR}"
mkdir -p "$out/pr"
start=$(date +%s.%N)
python3 -m tritongate run --suite pr --out "$out/runs" --color never > "$out/pr_stdout.txt" 2> "$out/pr_stderr.txt"
end=$(date +%s.%N)
run_dir=$(tail -n 1 "$out/pr_stdout.txt")
cp "$run_dir/results.json" "$run_dir/run_identity.json" "$run_dir/run.log" "$out/pr/"
python3 - "$out" "$start" "$end" "$run_dir" <<'PY'
import json, sys
out, start, end, run_dir = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
ident = json.load(open(f"{run_dir}/run_identity.json"))
rows = json.load(open(f"{run_dir}/results.json"))["rows"]
bad = [r for r in rows if r["markers"] or not (r["correctness"] or {}).get("ok")]
sw = ident["software"]
head = (f"{ident['started_utc']} · {ident['device']} · driver {ident['gpu_state_before'].get('driver', '?')} · "
        f"torch {sw['torch']} (CUDA {sw['cuda']}) · triton {sw['triton']['version']} · "
        f"process wall time {end - start:.1f} s · {len(rows)} rows, {len(bad)} flagged")
print(head)
open(f"{out}/pr_summary.txt", "w").write(head + "\n")
PY
rm -rf "$out/runs"
