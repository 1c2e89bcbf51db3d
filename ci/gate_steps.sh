#!/usr/bin/env bash
# The steps of the pr-gate action (.github/actions/pr-gate/action.yml), one sub-command each,
# driven by environment variables the action fills from its inputs and earlier steps' outputs
# (never by `${{ }}` inside a script). Outputs go to $GITHUB_OUTPUT; run directories under
# $RUNNER_TEMP/tritongate.
#
#   check-stage    TG_STAGE is one the action has: gate (the GPU job), prescreen-base and
#                  prescreen-cand (one build's half of the pre-screen each, a CPU job each),
#                  judge (the pre-screen's verdict from the two halves, a job with no build)
#   build          build.sh build (the compiler's build) contained: see `contained` below
#   handed-wheel   stage gate: the wheel a pre-screen half built of side TG_SIDE (base|cand),
#                  downloaded into TG_DIR, when it fits this runner's interpreter TG_PYTHON
#                  (output wheel; empty: the build step builds that side here, as before)
#   find-baseline  the store's record for this suite, runner class and GPU (state ok|stale|
#                  mismatched|missing|no-gpu), looked up by LOOKUP_PY (contained: in a side
#                  job it is a build's interpreter); `no-gpu`: a CPU stage without the gpu input
#   record         the fallback: record a baseline with the base build (refused when
#                  TG_REQUIRE=true)
#   prescreen-side one build's half of the pre-screen (TG_SIDE base|cand: ci/prescreen.py
#                  --side, contained) into $RUNNER_TEMP/tritongate/prescreen-SIDE: outputs
#                  side, side-dir (for the upload) and exit-code; it decides nothing
#   judge          ci/prescreen.py --judge over the two halves downloaded into
#                  $RUNNER_TEMP/tritongate/prescreen (untrusted data: links refused), by
#                  JUDGE_PY, an interpreter holding no build: rows_changed, rows_total,
#                  ir-diff, and a verdict folder when no row changed
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
ops_args() {  # the ops and dtypes inputs, as record/pair options (empty: the whole suite)
  if [[ -n "${TG_OPS:-}" ]]; then printf '%s\n' --ops "$TG_OPS"; fi
  if [[ -n "${TG_DTYPES:-}" ]]; then printf '%s\n' --dtypes "$TG_DTYPES"; fi
}

# contained OUTFILE "KEY ..." COMMAND [ARG ...]: run COMMAND (a compiler build, a pre-screen
# side: a build's own code runs in it) without the runner's file commands and tokens, in a
# throwaway HOME, with workflow commands stopped while it prints. Its GITHUB_OUTPUT is OUTFILE,
# a file of this step's own; of what is written there, only the named outputs reach the step's
# (one line each, through `out`). A casual or accidental write to $GITHUB_ENV (BASH_ENV=...)
# or $GITHUB_OUTPUT (rows_changed=0) then reaches nothing. Not a sandbox: the code still runs as
# the runner user (docs/adopting.md, "What the gate does not defend against").
contained() {
  local outfile="$1" keep="$2" home rc=0 token line name
  shift 2
  home="${RUNNER_TEMP:?}/tritongate-pr/home-$$-$RANDOM"
  mkdir -p "$home"
  : > "$outfile"
  # a `~` in the build cache's path is the runner user's home, not the throwaway one
  if [[ -n "${TG_CACHE_ROOT:-}" ]]; then export TG_CACHE_ROOT="${TG_CACHE_ROOT/#\~/$HOME}"; fi
  token="$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
  echo "::stop-commands::$token"
  env -u GITHUB_ENV -u GITHUB_PATH -u GITHUB_STEP_SUMMARY -u GITHUB_STATE -u GITHUB_TOKEN \
    -u ACTIONS_RUNTIME_TOKEN -u ACTIONS_RUNTIME_URL -u ACTIONS_RESULTS_URL -u ACTIONS_CACHE_URL \
    -u ACTIONS_ID_TOKEN_REQUEST_TOKEN -u ACTIONS_ID_TOKEN_REQUEST_URL \
    HOME="$home" GITHUB_OUTPUT="$outfile" "$@" || rc=$?
  echo "::$token::"
  while IFS= read -r line || [[ -n "$line" ]]; do
    name="${line%%=*}"
    if [[ "$line" == *=* && " $keep " == *" $name "* ]]; then out "$name" "${line#*=}"; fi
  done < "$outfile"
  return "$rc"
}

own_output() {  # removed with the job's PR builds (the action's last steps)
  mkdir -p "${RUNNER_TEMP:?}/tritongate-pr"
  mktemp "$RUNNER_TEMP/tritongate-pr/output.XXXXXX"
}

check_stage() {
  case "${TG_STAGE:-}" in
    gate|prescreen-base|prescreen-cand|judge) echo "stage: $TG_STAGE" ;;
    prescreen)
      echo "::error::stage prescreen was split: run prescreen-base and prescreen-cand (one build each, CPU jobs) and judge (a job with no build) as the recipes do (docs/adopting.md)"
      exit 2 ;;
    *) echo "::error::stage must be gate, prescreen-base, prescreen-cand or judge, got '${TG_STAGE:-}'"; exit 2 ;;
  esac
}

build() {
  local rc=0
  contained "$(own_output)" "python commit built patch-sha256 wheel" \
    bash "$root/.github/actions/build-compiler/build.sh" build || rc=$?
  if (( rc != 0 )); then
    echo "::error title=build-compiler::the compiler build failed (exit $rc): its error is in the log above"
    exit "$rc"
  fi
}

# The pre-screen's build of one side, for the GPU job to install instead of building it again.
# The folder is untrusted data (a job that ran PR code wrote it): only a plain file's name is
# read here, and the one line beside it, by the runner's own interpreter; the wheel itself is
# installed by the contained build step, in a job that runs the PR's code anyway.
handed_wheel() {
  local side="${TG_SIDE:-}" dir="${TG_DIR:-}" found=() name py why
  [[ "$side" == base || "$side" == cand ]] || { echo "::error::TG_SIDE must be base or cand, got '$side'"; exit 2; }
  if [[ -d "$dir" && ! -L "$dir" ]]; then
    mapfile -t found < <(find "$dir" -maxdepth 1 -type f -name '*.whl')
  fi
  name="${found[0]:-}"
  name="${name##*/}"
  if (( ${#found[@]} != 1 )) || [[ ! "$name" =~ ^[A-Za-z0-9._+-]+\.whl$ ]]; then
    echo "::notice title=tritongate::no $side build from the pre-screen (${#found[@]} wheel(s); it did not run, reused" \
         "a cached build, made an overlay, or could not upload): building it here"
    out wheel ""
    return 0
  fi
  if ! py="$(command -v -- "${TG_PYTHON:-python3}")"; then
    echo "::notice title=tritongate::python '${TG_PYTHON:-python3}' not found to check the pre-screen's $side build: building it here"
    out wheel ""
    return 0
  fi
  if why="$("$py" -I "$root/.github/actions/build-compiler/wheel_fits.py" "${found[0]}")"; then
    echo "the $side build: $name from the pre-screen, installed here (no compiler build)"
    out wheel "${found[0]}"
  else
    echo "::notice title=tritongate::the pre-screen's $side build does not fit this runner (${why:-no reason given})." \
         "Building it here; a pre-screen runner with this runner's Python and an older or equal glibc saves the build"
    out wheel ""
  fi
}

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
  elif [[ "${TG_STAGE:-gate}" != gate ]]; then  # a CPU stage of the pre-screen: no GPU to ask
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
  local own rc=0
  own="$(own_output)"
  contained "$own" "state record reason refresh age_days" \
    "${LOOKUP_PY:-$BASE_PY}" "$root/ci/find_baseline.py" --store baseline-store --suite "$TG_SUITE" \
    --runner-class "$TG_RUNNER_CLASS" --gpu "$gpu" --backend "$TG_BACKEND" --max-age-days "$days" \
    --github-output "$own" --state-out "$work/baseline-state.json" || rc=$?
  if (( rc != 0 )); then
    echo "::error::the baseline lookup failed (exit $rc): its error is in the log above"
    exit "$rc"
  fi
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
  local sample=()  # the nightly's sample length, so this record measures as its would
  if [[ -n "${TG_SAMPLE_MS:-}" ]]; then sample=(--sample-ms "$TG_SAMPLE_MS"); fi
  "$BASE_PY" "$root/ci/record_baseline.py" --suite "$TG_SUITE" --backend "$TG_BACKEND" \
    "${ops[@]}" "${sample[@]}" --out "$work/record" | tee "$stdout"
  record="$(tail -n 1 "$stdout")"
  if [[ ! -d "$record" ]]; then
    echo "::error::record_baseline.py printed no run directory (last line: $record)"
    exit 4
  fi
  out record "$record"
}

prescreen_side() {
  local side="${TG_SIDE:-}" py dir rc=0
  case "$side" in
    base) py="${BASE_PY:-}" ;;
    cand) py="${CAND_PY:-}" ;;
    *) echo "::error::TG_SIDE must be base or cand, got '$side'"; exit 2 ;;
  esac
  dir="$work/prescreen-$side"
  out side "$side"
  # --suite: the build replays the baseline with it, to see what it launches for each row.
  # Its own interpreter runs it (in a side job it may be the only one), contained: the half
  # is this build's output, and only the judge job reads anything into a verdict.
  contained "$(own_output)" "" "$py" "$root/ci/prescreen.py" --baseline "$RECORD" --side "$side" \
    "--$side-python" "$py" --suite "$TG_SUITE" --out "$dir" || rc=$?
  out exit-code "$rc"
  if (( rc != 0 )); then
    echo "::warning::the pre-screen's $side half failed (exit $rc): the judge gets no $side half and fails, and the GPU job runs every row"
    return 0
  fi
  out side-dir "$dir"
}

judge() {
  local dir="$work/prescreen" rc=0 link
  # The halves are the side jobs' output (one of them ran the PR's build): data, never run or
  # sourced here; ci/prescreen.py validates them, and no link may stand in for a file.
  if [[ ! -d "$dir" ]]; then
    echo "::error::no halves in $dir: the GPU job runs every row"
    out exit-code 2
    return 0
  fi
  link="$(find "$dir" -type l -print -quit)"
  if [[ -n "$link" ]]; then
    echo "::error::the downloaded halves hold a link (${link#"$dir/"}): refused; the GPU job runs every row"
    out exit-code 2
    return 0
  fi
  "$JUDGE_PY" -I "$root/ci/prescreen.py" --baseline "$RECORD" --judge --suite "$TG_SUITE" --out "$dir" || rc=$?
  out exit-code "$rc"
  if (( rc != 0 )); then
    echo "::warning::the pre-screen's judge failed (exit $rc): the GPU job runs every row"
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
  check-stage) check_stage ;;
  runner-class) runner_class ;;
  build) build ;;
  handed-wheel) handed_wheel ;;
  find-baseline) find_baseline ;;
  record) record ;;
  prescreen-side) prescreen_side ;;
  judge) judge ;;
  pair) pair ;;
  note-pr) note_pr ;;
  *) echo "usage: gate_steps.sh check-stage|runner-class|build|handed-wheel|find-baseline|record|prescreen-side|judge|pair|note-pr" >&2
     exit 2 ;;
esac
