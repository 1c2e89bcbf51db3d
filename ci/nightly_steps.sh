#!/usr/bin/env bash
# The record stage of the record-baseline action (.github/actions/record-baseline), one
# sub-command per step, driven by environment variables the action fills (never by `${{ }}`
# inside a script).
#
#   record    record the suite with the build (live autotune) and publish it into the local
#             store: outputs entry (relative to the store) and entry-path
#   aa        the A/A self-check: the same build on both sides, every row timed
#   aa-count  the rows the A/A run called slower or faster (each one a false alarm), into the
#             job summary; fails when there is any, or when the A/A run failed
#   history   change points over the nightly history, into the summary
#   dashboard the store's whole history as a static site ($RUNNER_TEMP/tritongate/dashboard,
#             uploaded with the run artifact); its place in the summary
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="${RUNNER_TEMP:?}/tritongate"
mkdir -p "$work"
# shellcheck source=ci/outputs.sh
source "$(dirname "${BASH_SOURCE[0]}")/outputs.sh"  # out NAME VALUE

record() {
  mkdir -p baseline-store
  local store stdout="$work/record.stdout" entry rel
  store="$(cd baseline-store && pwd)"
  local sample=()  # the sample length PRs will replay (each row's launches per sample)
  if [[ -n "${TG_SAMPLE_MS:-}" ]]; then sample=(--sample-ms "$TG_SAMPLE_MS"); fi
  TRITONGATE_COMMIT="$COMMIT" TRITONGATE_COMPILER_REF="$TG_COMPILER_REPO@${COMMIT:0:12}" \
    "$PY" "$root/ci/record_baseline.py" --suite "$TG_SUITE" --backend "$TG_BACKEND" "${sample[@]}" \
    --out "$work/record" --publish "$store" --runner-class "$TG_RUNNER_CLASS" \
    --compiler-repo "$TG_COMPILER_REPO" --compiler-commit "$COMMIT" | tee "$stdout"
  entry="$(sed -n 's/^baseline: *//p' "$stdout" | tail -n 1)"
  if [[ -z "$entry" || ! -d "$entry" ]]; then
    echo "::error::record_baseline.py printed no 'baseline:' entry"
    exit 4
  fi
  entry="$(cd "$entry" && pwd)"
  rel="${entry#"$store"/}"
  out entry "$rel"
  out entry-path "$entry"
  echo "published locally: $rel"
}

aa() {
  local stdout="$work/aa.stdout" rc verdict_md
  set +e
  "$PY" "$root/ci/replay_candidate.py" "$ENTRY" --suite "$TG_SUITE" --backend "$TG_BACKEND" \
    --out "$work/aa" --base-python "$PY" --cand-python "$PY" --time-identical | tee "$stdout"
  rc=${PIPESTATUS[0]}
  set -e
  out exit-code "$rc"
  verdict_md="$(sed -n 's/^verdict: *//p' "$stdout" | tail -n 1)"
  if [[ -n "$verdict_md" && -f "$verdict_md" ]]; then
    out verdict-dir "$(cd "$(dirname "$verdict_md")" && pwd)"
  fi
}

aa_count() {
  if [[ -z "${VERDICT_DIR:-}" ]]; then
    echo "### A/A self-check: no verdict (exit $AA_EXIT)" >> "$GITHUB_STEP_SUMMARY"
    exit "$(( AA_EXIT == 0 ? 4 : AA_EXIT ))"
  fi
  "$PY" "$root/ci/aa_count.py" "$VERDICT_DIR/verdict.json" "$AA_EXIT" --summary "$GITHUB_STEP_SUMMARY"
  if [[ "$AA_EXIT" != 0 ]]; then
    echo "::error::the A/A run exited $AA_EXIT"
    exit "$AA_EXIT"
  fi
}

history() {
  # Every published night of this runner class and suite, tonight's included (the local
  # store); change points are findings: only a failure to build the report fails.
  PYTHONPATH="$root" "$PY" -m tritongate history --store baseline-store --runner-class "$TG_RUNNER_CLASS" \
    --suite "$TG_SUITE" --compiler-repo "$TG_COMPILER_REPO" --out "$work/history" --summary-out "$GITHUB_STEP_SUMMARY"
}

dashboard() {
  # every runner class and suite the store holds, of this compiler repository; a point links
  # its entry on the data branch (TG_STORE_URL)
  local link=()
  # an https data branch (GitHub's): points link their entries there; otherwise (a file://
  # server in a replay) the site links the store relatively, as the artifact holds it
  if [[ "${TG_STORE_URL:-}" == https://* ]]; then link=(--store-url "$TG_STORE_URL"); fi
  PYTHONPATH="$root" "$PY" -m tritongate dashboard --store baseline-store --compiler-repo "$TG_COMPILER_REPO" \
    --out "$work/dashboard" "${link[@]}"
  echo "Dashboard of the nightly history: \`dashboard/index.html\` in this run's nightly artifact" \
    >> "$GITHUB_STEP_SUMMARY"
}

case "${1:-}" in
  record) record ;;
  aa) aa ;;
  aa-count) aa_count ;;
  history) history ;;
  dashboard) dashboard ;;
  *) echo "usage: nightly_steps.sh record|aa|aa-count|history|dashboard" >&2; exit 2 ;;
esac
