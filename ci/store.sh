#!/usr/bin/env bash
# The baseline store (a data branch in a git repository) as the CI jobs read and write it.
#
#   store.sh fetch   clone TG_STORE_BRANCH of TG_STORE_REPO into ./baseline-store.
#                    output store=present, or store=absent when the branch does not exist
#                    yet (before the first nightly). A store that exists but cannot be read
#                    (no access, a wrong token, a network failure) fails the step: it must not
#                    pass for "no baseline yet", which would quietly re-record on every PR.
#   store.sh push    add the verified entry TG_ENTRY (copied from TG_ENTRY_SRC) to the data
#                    branch and push it, retrying on a race with another publish.
#
# Authentication: TG_TOKEN, given to git through GIT_CONFIG_* environment variables (an
# http.extraheader), never on git's command line, where any process could read it.
set -euo pipefail

die() { echo "::error title=baseline store::$1" >&2; exit "${2:-1}"; }  # die MESSAGE [EXIT]
# shellcheck source=ci/outputs.sh
source "$(dirname "${BASH_SOURCE[0]}")/outputs.sh"  # out NAME VALUE

repo="${TG_STORE_REPO:-}"
branch="${TG_STORE_BRANCH:-tritongate-baselines}"
[[ "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || die "baseline repository must be OWNER/NAME, got '$repo'"
[[ "$branch" =~ ^[A-Za-z0-9][A-Za-z0-9._/-]*$ && "$branch" != *..* ]] || die "bad baseline branch '$branch'"
url="${GITHUB_SERVER_URL:-https://github.com}/$repo.git"

auth_env() {
  if [[ -n "${TG_TOKEN:-}" ]]; then
    local auth
    auth="$(printf 'x-access-token:%s' "$TG_TOKEN" | base64 -w0)"
    echo "::add-mask::$auth"
    export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.${GITHUB_SERVER_URL:-https://github.com}/.extraheader"
    export GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $auth"
  fi
  export GIT_TERMINAL_PROMPT=0
}

fetch() {
  auth_env
  rm -rf -- baseline-store
  local rc=0
  git ls-remote --exit-code "$url" "refs/heads/$branch" > /dev/null 2> "${RUNNER_TEMP:-/tmp}/store-ls-remote.err" || rc=$?
  case "$rc" in
    0)
      git clone -q --depth 1 --single-branch --branch "$branch" "$url" baseline-store
      out store present
      echo "baseline store: $repo@$branch ($(git -C baseline-store rev-parse --short HEAD))"
      ;;
    2)
      mkdir -p baseline-store
      out store absent
      echo "baseline store: $repo has no branch $branch yet (the first nightly creates it)"
      ;;
    *)
      die "cannot read $repo ($(head -c 300 "${RUNNER_TEMP:-/tmp}/store-ls-remote.err" | tr '\n' ' ')): give the token contents: read on it" ;;
  esac
}

push() {
  local entry="${TG_ENTRY:-}" src="${TG_ENTRY_SRC:-}" name='[A-Za-z0-9][A-Za-z0-9._-]*'
  # <runner_class>/<suite>/<gpu_slug>/<entry>: four plain names, nothing else.
  [[ "$entry" =~ ^$name/$name/$name/$name$ ]] || die "unexpected entry path" 2
  [[ -d "$src" ]] || die "no entry folder at '$src'" 2
  auth_env
  if [[ "${TG_STORE_PRESENT:-}" != present ]]; then
    rm -rf baseline-store
    git init -q -b "$branch" baseline-store
    git -C baseline-store remote add origin "$url"
  fi
  cd baseline-store
  [[ ! -e "$entry" ]] || die "$entry is already in the store; entries are never overwritten" 2
  mkdir -p "$(dirname "$entry")"
  cp -R "$src" "$entry"
  git config user.name "github-actions[bot]"
  git config user.email "41898282+github-actions[bot]@users.noreply.github.com"
  git add -- "$entry"
  git commit -q -m "baseline: $entry (run ${GITHUB_RUN_ID:-local})"
  # New entries never touch existing files, so a race with another push rebases cleanly.
  for attempt in 1 2 3 4 5; do
    if git push -q origin "HEAD:refs/heads/$branch"; then
      echo "pushed $entry to $branch"
      return 0
    fi
    sleep $(( attempt * ${TG_RETRY_SECONDS:-5} ))
    git fetch -q origin "$branch" || continue  # the network: try again
    if ! git rebase -q FETCH_HEAD; then
      # Only a publish of the same entry path conflicts. Left stopped, the rebase's HEAD was the
      # branch without this entry: the next push sent nothing and said "pushed".
      git rebase --abort 2> /dev/null || true
      die "$entry is on $branch already, published by another job with other files; entries are never overwritten: not pushed (publish again for a new entry name)" 2
    fi
  done
  die "could not push to $branch"
}

case "${1:-}" in
  fetch) fetch ;;
  push) push ;;
  *) echo "usage: store.sh fetch|push" >&2; exit 2 ;;
esac
