#!/usr/bin/env bash
# Run a command of the compiler's own code (its setup.py and CMake under pip, its Triton when
# imported) without the runner's file commands or tokens: one line appended to GITHUB_ENV
# (BASH_ENV=...) would run code in every later bash step, one in GITHUB_OUTPUT would set the
# step's outputs. In a PR job (TG_CACHE_WRITE=false) it also gets a throwaway HOME under
# $RUNNER_TEMP/tritongate-pr, so nothing it leaves in ~ (a pip.conf, a shell rc, a git config)
# reaches later jobs of the runner's user. Not a sandbox: it still runs as that user
# (docs/adopting.md, "What the gate does not defend against").
#   bash compiler_code.sh COMMAND [ARG ...]
set -euo pipefail
home="$HOME"
if [[ "${TG_CACHE_WRITE:-true}" == false ]]; then
  home="${RUNNER_TEMP:?RUNNER_TEMP is needed for a PR build}/tritongate-pr/home-$$-$RANDOM"
  mkdir -p "$home"
fi
exec env -u GITHUB_ENV -u GITHUB_PATH -u GITHUB_OUTPUT -u GITHUB_STEP_SUMMARY -u GITHUB_STATE -u GITHUB_TOKEN \
  -u ACTIONS_RUNTIME_TOKEN -u ACTIONS_RUNTIME_URL -u ACTIONS_RESULTS_URL -u ACTIONS_CACHE_URL \
  -u ACTIONS_ID_TOKEN_REQUEST_TOKEN -u ACTIONS_ID_TOKEN_REQUEST_URL HOME="$home" "$@"
