#!/usr/bin/env bash
# The comment job's loop (pr-comment.yml, and the post-comment action): one sticky comment per
# verdict artifact of the gate run (one per runner class and suite), each rendered by
# ci/post_comment.py from its verdict.json.
#
# Environment: VERDICTS (where the tritongate-verdict-* artifacts were downloaded; with one
# artifact, download-artifact unpacks it there without its folder), REPO, HEAD_SHA (from the
# workflow_run event), EVENT_PR (the event's PR number; empty for fork PRs, whose PR is then
# looked up from HEAD_REPO and HEAD_BRANCH, the event's head repository and branch, at
# HEAD_SHA; never a number from the artifact), GITHUB_TOKEN. Everything read from the
# artifacts is untrusted data: pr.json gives only the sticky key (one comment per runner
# class and suite, on the PR resolved here).
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

for dir in "${dirs[@]}"; do
  # pr.json: {"pr": N, "key": "h200-pr"}, validated here; no pr.json means no comment
  fields="$(python3 -I - "$dir/pr.json" <<'PY'
import json, os, re, stat, sys
path = sys.argv[1]
try:
    st = os.lstat(path)
except OSError:
    sys.exit("pr.json: missing")
if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
    sys.exit("pr.json: not a small regular file")
doc = json.load(open(path, encoding="utf-8"))
pr, key = doc.get("pr"), doc.get("key", "")
if type(pr) is not int or not 0 < pr < 10**9:
    sys.exit("pr.json: no valid PR number")
if not isinstance(key, str) or not re.fullmatch(r"(?:[A-Za-z0-9][A-Za-z0-9._-]{0,99})?", key):
    sys.exit("pr.json: bad key")
print(pr, key or "-")
PY
  )"
  read -r _ key <<< "$fields"
  [[ "$key" == - ]] && key=""
  if [[ -n "${EVENT_PR:-}" ]]; then
    which=(--pr "$EVENT_PR")
  else
    which=(--head-repo "${HEAD_REPO:-}" --head-branch "${HEAD_BRANCH:-}")
  fi
  python -I "$here/post_comment.py" --verdict-dir "$dir" --repo "$REPO" "${which[@]}" --head-sha "$HEAD_SHA" \
    --key "$key"
done
