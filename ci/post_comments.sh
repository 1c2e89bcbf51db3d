#!/usr/bin/env bash
# The comment job's loop (pr-comment.yml, and the post-comment action): one sticky comment per
# verdict artifact of the gate run (one per runner class and suite), each rendered by
# ci/post_comment.py from its verdict.json.
#
# Environment: VERDICTS (where the tritongate-verdict-* artifacts were downloaded; with one
# artifact, download-artifact unpacks it there without its folder), REPO, HEAD_SHA (from the
# workflow_run event), EVENT_PR (the event's PR number; empty for fork PRs, whose PR is then
# looked up from HEAD_REPO and HEAD_BRANCH, the event's head repository and branch, at
# HEAD_SHA; never a number from the artifact), RUN_ID (the gate run, workflow_run.id: the only
# run the comment links; unset, a link to any run page of REPO is kept), GITHUB_TOKEN, BOT_LOGIN
# (the login that token comments as, whose comments hold the sticky; empty: github-actions[bot]).
# Everything read from the artifacts is untrusted data: pr.json gives only the sticky key (one comment per runner
# class and suite, on the PR resolved here), and where the run uploaded several verdicts the
# key must be the one in its artifact's name, so one class's verdict cannot replace another's.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dirs=()
if [[ -f "$VERDICTS/verdict.json" ]]; then
  dirs=("$VERDICTS")
else
  for d in "$VERDICTS"/*/; do
    if [[ -f "$d/verdict.json" && ! -L "${d%/}" ]]; then dirs+=("${d%/}"); fi
  done
fi
if (( ${#dirs[@]} == 0 )); then
  echo "no verdict in the downloaded artifacts: nothing to post"
  exit 0
fi
if (( ${#dirs[@]} > 16 )); then
  echo "::error::${#dirs[@]} verdict artifacts; at most 16 are posted"
  exit 2
fi

# One verdict that cannot be posted (a damaged pr.json, an API failure) is named and the rest
# are still posted; the job fails at the end when any was not.
failed=()
for dir in "${dirs[@]}"; do
  name="$(basename "$dir")"
  name="${name//[^A-Za-z0-9._-]/_}"  # an artifact's name, printed into a workflow-command line
  # pr.json: {"pr": N, "key": "h200-pr"}, validated here; no pr.json means no comment
  if ! fields="$(python3 -I - "$dir/pr.json" 2>&1 <<'PY'
import json, os, re, stat, sys
path = sys.argv[1]
try:
    st = os.lstat(path)
except OSError:
    sys.exit("pr.json: missing")
if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
    sys.exit("pr.json: not a small regular file")
try:
    doc = json.load(open(path, encoding="utf-8"))
except (ValueError, UnicodeDecodeError):
    sys.exit("pr.json: not JSON")
if not isinstance(doc, dict):
    sys.exit("pr.json: not a JSON object")
pr, key = doc.get("pr"), doc.get("key", "")
if type(pr) is not int or not 0 < pr < 10**9:
    sys.exit("pr.json: no valid PR number")
if not isinstance(key, str) or not re.fullmatch(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,99})?", key):
    sys.exit("pr.json: bad key")
print(pr, key or "-")
PY
  )"; then
    echo "::error::${name}: ${fields//[^A-Za-z0-9 .:_-]/_}; this verdict is not posted"
    failed+=("$name")
    continue
  fi
  read -r _ key <<< "$fields"
  [[ "$key" == - ]] && key=""
  # Several artifacts sit in folders named by the upload step (tritongate-verdict-<key>): the
  # key must be the folder's, so no artifact of the run can take over another's comment.
  if [[ "$dir" != "$VERDICTS" && "$(basename "$dir")" != "tritongate-verdict-${key}" ]]; then
    echo "::error::${name}: pr.json's key is not this artifact's name (tritongate-verdict-<key>); this verdict is not posted"
    failed+=("$name")
    continue
  fi
  if [[ -n "${EVENT_PR:-}" ]]; then
    which=(--pr "$EVENT_PR")
  else
    which=(--head-repo "${HEAD_REPO:-}" --head-branch "${HEAD_BRANCH:-}")
  fi
  bot=()
  if [[ -n "${BOT_LOGIN:-}" ]]; then bot=(--bot-login "$BOT_LOGIN"); fi
  if ! python -I "$here/post_comment.py" --verdict-dir "$dir" --repo "$REPO" "${which[@]}" --head-sha "$HEAD_SHA" \
    --key "$key" --run-id "${RUN_ID:-}" "${bot[@]}"; then
    echo "::error::${name}: its comment could not be posted (the step's log above says why)"
    failed+=("$name")
  fi
done
if (( ${#failed[@]} )); then
  echo "::error::${#failed[@]} of ${#dirs[@]} verdicts not posted: ${failed[*]}"
  exit 1
fi
