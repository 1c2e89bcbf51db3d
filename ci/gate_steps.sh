#!/usr/bin/env bash
# The steps of the pr-gate action (.github/actions/pr-gate/action.yml), one sub-command each,
# driven by environment variables the action fills from its inputs and earlier steps' outputs
# (never by `${{ }}` inside a script). Outputs go to $GITHUB_OUTPUT; run directories under
# $RUNNER_TEMP/tritongate.
#
#   find-baseline  the store's record for this suite, runner class and GPU (state ok|stale|
#                  mismatched|missing|no-gpu); `no-gpu`: stage prescreen without the gpu input
#   record         the fallback: record a baseline with the base build (refused when
#                  TG_REQUIRE=true)
#   prescreen      ci/prescreen.py: which rows' kernels the PR changes (rows_changed,
#                  rows_total, ir-diff, and a verdict folder when none changed)
#   pair           the paired check, --strict (a rejected or not-comparable row fails the PR:
#                  docs/ci.md says why); with TG_CHANGED_FROM, only the rows that folder names.
#                  Its exit code is pair's: 2 also when it judged no row (the verdict says so)
#   note-pr        pr.json (PR number, head SHA, key) into the verdict folder
#   runner-class   the runner class to use: TG_RUNNER_CLASS, or <owner>-h200 when empty
#                  (TG_OWNER, the repository owner, lower-cased): stores of two organisations
#                  never share a folder by default. Also used by record-baseline.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${RUNNER_TEMP:?}/tritongate"
mkdir -p "$work"
# shellcheck source=ci/outputs.sh
source "$(dirname "${BASH_SOURCE[0]}")/outputs.sh"  # out NAME VALUE
ops_args() { if [[ -n "${TG_OPS:-}" ]]; then printf '%s\n' --ops "$TG_OPS"; fi; }

find_baseline() {
  local gpu days="${TG_MAX_AGE_DAYS:-}"
  # A suite path is the caller's file, relative to the workspace (not to tritongate's folder).
  if [[ "$TG_SUITE" == */* || "$TG_SUITE" == *.yaml || "$TG_SUITE" == *.yml ]] && [[ ! -f "$TG_SUITE" ]]; then
    echo "::error::suite $TG_SUITE: no such file in the workspace ($PWD); check it out first, or name a builtin suite"
    exit 2
  fi
  # `0` is a real value (only a baseline recorded today); only an empty input means the default.
  [[ -n "$days" ]] || days=7
  if [[ "${TG_BACKEND:-cuda}" == cpu ]]; then
    gpu=cpu
  elif [[ "${TG_STAGE:-gate}" == prescreen ]]; then
    gpu="${TG_GPU:-}"
    if [[ -z "$gpu" ]]; then
      echo "no gpu input: the pre-screen cannot pick the GPU's baseline; the GPU job runs every row"
      out state no-gpu
      return 0
    fi
  else  # the name the run identity records (torch's, as the nightly saw it)
    gpu="$("$BASE_PY" -c 'import torch; print(torch.cuda.get_device_name(0))')"
  fi
  echo "device: $gpu; store: ${TG_STORE:-?}"
  "$BASE_PY" "$root/ci/find_baseline.py" --store baseline-store --suite "$TG_SUITE" \
    --runner-class "$TG_RUNNER_CLASS" --gpu "$gpu" --backend "$TG_BACKEND" --max-age-days "$days" \
    --github-output "$GITHUB_OUTPUT" --state-out "$work/baseline-state.json"
}

record() {
  if [[ "${TG_REQUIRE:-false}" == true ]]; then
    echo "::error::no usable baseline in the store (state $STATE) and require-baseline is true: run the nightly"
    exit 2
  fi
  echo "baseline lookup: state=$STATE; recording one with the base build in this job"
  if [[ -n "${BASE_COMMIT:-}" ]]; then  # the build's name and commit in the record's identity
    export TRITONGATE_COMMIT="$BASE_COMMIT" TRITONGATE_COMPILER_REF="$TG_COMPILER_REPO@${BASE_COMMIT:0:12}"
  fi
  local stdout="$work/record.stdout" record
  mapfile -t ops < <(ops_args)
  "$BASE_PY" "$root/ci/record_baseline.py" --suite "$TG_SUITE" --backend "$TG_BACKEND" \
    "${ops[@]}" --out "$work/record" | tee "$stdout"
  record="$(tail -n 1 "$stdout")"
  if [[ ! -d "$record" ]]; then
    echo "::error::record_baseline.py printed no run directory (last line: $record)"
    exit 4
  fi
  out record "$record"
}

prescreen() {
  local dir="$work/prescreen" rc=0
  # --suite: each build replays the baseline with it, to see what it launches for each row
  "$BASE_PY" "$root/ci/prescreen.py" --baseline "$RECORD" --base-python "$BASE_PY" --cand-python "$CAND_PY" \
    --suite "$TG_SUITE" --out "$dir" || rc=$?
  out exit-code "$rc"
  if (( rc != 0 )); then
    echo "::warning::the pre-screen failed (exit $rc): the GPU job runs every row"
    return 0
  fi
  [[ -d "$dir/ir-diff" ]] && out ir-diff "$dir/ir-diff"
  # No row changed: the pre-screen's verdict is the gate's (no GPU time used).
  if [[ -f "$dir/verdict/verdict.json" ]]; then out verdict-dir "$dir/verdict"; fi
}

pair() {
  # --strict: a row the PR's build turned REJECTED or NOT_COMPARABLE (a timer fallback, a
  # correctness mismatch, a config that no longer compiles) is no evidence; it fails the check
  # rather than passing unmeasured (docs/ci.md, "Rows the gate could not judge").
  local builds=() extra=(--strict) stdout="$work/pair.stdout" rc verdict_md verdict_dir
  if [[ -n "${BASE_COMMIT:-}" ]]; then
    builds+=(--base-env "TRITONGATE_COMMIT=$BASE_COMMIT" --base-env "TRITONGATE_COMPILER_REF=$TG_COMPILER_REPO@${BASE_COMMIT:0:12}")
  fi
  if [[ -n "${CAND_COMMIT:-}" ]]; then
    builds+=(--cand-env "TRITONGATE_COMMIT=$CAND_COMMIT" --cand-env "TRITONGATE_COMPILER_REF=$TG_COMPILER_REPO@${CAND_COMMIT:0:12}")
  fi
  if [[ -n "${TG_CHANGED_FROM:-}" ]]; then
    [[ -d "$TG_CHANGED_FROM" ]] || { echo "::error::changed-from $TG_CHANGED_FROM is not a folder"; exit 2; }
    extra+=(--changed-from "$TG_CHANGED_FROM")
  fi
  local run_url="${GITHUB_SERVER_URL:-}/${GITHUB_REPOSITORY:-}/actions/runs/${GITHUB_RUN_ID:-}"
  if [[ "$run_url" == https://* ]]; then extra+=(--artifact-url "$run_url"); fi  # the verdict links https only
  mapfile -t ops < <(ops_args)
  set +e
  "$BASE_PY" "$root/ci/replay_candidate.py" "$RECORD" --suite "$TG_SUITE" --backend "$TG_BACKEND" \
    "${ops[@]}" --out "$work/runs" --base-python "$BASE_PY" --cand-python "$CAND_PY" "${builds[@]}" "${extra[@]}" \
    --baseline-state "$work/baseline-state.json" | tee "$stdout"
  rc=${PIPESTATUS[0]}
  set -e
  out exit-code "$rc"
  verdict_md="$(sed -n 's/^verdict: *//p' "$stdout" | tail -n 1)"
  if [[ -n "$verdict_md" && -f "$verdict_md" ]]; then
    verdict_dir="$(cd "$(dirname "$verdict_md")" && pwd)"
    out verdict-dir "$verdict_dir"
    out pair-dir "$(dirname "$verdict_dir")"
  else
    echo "### tritongate: no verdict (exit $rc; see the job log)" >> "$GITHUB_STEP_SUMMARY"
  fi
}

note_pr() {
  if [[ ! "${PR_NUMBER:-}" =~ ^[0-9]+$ || ! "${HEAD_SHA:-}" =~ ^[0-9a-f]{40}$ ]]; then
    echo "not a pull request event: no pr.json"
    return 0
  fi
  [[ "${TG_KEY:-}" =~ ^[A-Za-z0-9._-]+$ ]] || TG_KEY=""
  printf '{"pr": %s, "head_sha": "%s", "key": "%s"}\n' "$PR_NUMBER" "$HEAD_SHA" "$TG_KEY" > "$VERDICT_DIR/pr.json"
  cat "$VERDICT_DIR/pr.json"
}

runner_class() {
  local rc="${TG_RUNNER_CLASS:-}" owner="${TG_OWNER:-}"
  if [[ -z "$rc" ]]; then
    owner="${owner,,}"
    [[ "$owner" =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "::error::no runner-class input and no repository owner to name one after"; exit 2; }
    rc="$owner-h200"
    echo "runner class: $rc (the default, <owner>-h200; set the runner-class input to name another)"
  else
    echo "runner class: $rc"
  fi
  out runner-class "$rc"
}

case "${1:-}" in
  runner-class) runner_class ;;
  find-baseline) find_baseline ;;
  record) record ;;
  prescreen) prescreen ;;
  pair) pair ;;
  note-pr) note_pr ;;
  *) echo "usage: gate_steps.sh runner-class|find-baseline|record|prescreen|pair|note-pr" >&2; exit 2 ;;
esac
