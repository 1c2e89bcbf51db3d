#!/usr/bin/env bash
# The build-compiler action's logic (action.yml calls it; kept here so it can be read, linted
# and tested as a script). Two sub-commands, both driven by environment variables that
# action.yml fills from its inputs (never by `${{ }}` inside a script):
#
#   build.sh plan    validate the inputs; for mode source, say whether the venv of this
#                    commit is already built (then the checkout is skipped) and where the
#                    checkout goes (and how deep: 2 for a patch from the PR's diff).
#                    outputs: slug, commit, cached, src, fetch-depth
#   build.sh build   make (or reuse) the build's venv and print its interpreter.
#                    outputs: python, commit, built (source|wheel|installed|overlay|elsewhere),
#                    patch-sha256 (overlay), wheel (a source build made here: the wheel it
#                    was installed from, with WHEEL.build-host beside it, the glibc it was
#                    built against; mode wheel: the input wheel; empty otherwise, a reused
#                    venv included)
#
# Environment: TG_MODE (source|wheel|installed|overlay|auto), TG_REPO (owner/name), TG_REF,
# TG_WHEEL, TG_CACHE_ROOT, TG_PYTHON (the base interpreter), and for `build` in mode source
# TG_SRC (the checkout, relative to GITHUB_WORKSPACE) and TG_PLAN_COMMIT. Modes overlay and
# auto: TG_OVERLAY_BASE (the build the patch is applied to; default TG_PYTHON), TG_PATCH (a
# patch file) or TG_PATCH_FROM=pr (the diff of the checkout from TG_BASE_COMMIT, default its
# first parent, to its HEAD). Outputs are appended to $GITHUB_OUTPUT (stdout when unset).
#
# Mode overlay: the base build with the patch applied to its Python sources (tritongate
# overlay; seconds, no compile), made in this job's throwaway folder. With TG_PATCH_FROM=pr
# the diff is restricted to what an overlay can take (python/triton/**,
# third_party/*/backend/**) and the files left out are named. Mode auto: an overlay when the
# PR's diff touches only those files, a source build of the checkout otherwise; the log says
# which and why.
#
# TG_ONLY (pr-gate's pre-screen, modes overlay and auto: one build per compiler): `overlay` makes
# the PR build only where it is an overlay (the base half, which holds the base build), `source`
# only where it is a source build (the PR half); the other case outputs built=elsewhere and no
# python, and the log says which half makes it.
#
# Cache layout (runner-local, shared by every job of the runner's user):
#   <cache-root>/<repo-slug>/<commit>-<key>/venv        mode source, one venv per compiler commit
#   <cache-root>/<repo-slug>/wheel-<sha256>-<key>/venv  mode wheel, one venv per wheel (its bytes)
#   <key>: tritongate's version and deps, the base interpreter and torch, the build settings
#   <...>/venv/.tritongate-manifest.json          sha256 of every file (venv_manifest.py), written
#                                                 by the trusted build; checked before a PR job
#                                                 reuses the venv
#   <...>/venv/.tritongate-complete               written last: a venv without it is rebuilt
#   <...>.lock                                    flock: one builder per venv at a time
set -euo pipefail
shopt -s inherit_errexit  # a failure inside "$(...)" stops the script, not only the substitution

die() { local msg="$*"; echo "::error title=build-compiler::${msg//$'\n'/ }" >&2; exit 2; }
out() {
  if [[ -n "${GITHUB_OUTPUT:-}" ]]; then echo "$1=$2" >> "$GITHUB_OUTPUT"; else echo "$1=$2"; fi
}

# Runtime dependencies of tritongate beside torch and the compiler (pyproject.toml's bounds):
# the parent of a paired run needs all of them; a worker needs numpy and pyyaml.
TG_DEPS=("numpy>=1.26" "pyyaml>=6.0" "pandas>=2.1" "scipy>=1.11" "jinja2>=3.1" "rich>=13.0" "pydantic>=2.7,<3"
         "matplotlib>=3.8")

mode="${TG_MODE:-}"
repo="${TG_REPO:-}"
ref="${TG_REF:-}"
built_wheel=""  # set by install_source: the wheel a source build made in this job

check_inputs() {
  case "$mode" in
    source|wheel|installed|overlay|auto) ;;
    *) die "mode must be source, wheel, installed, overlay or auto, got '${mode}'" ;;
  esac
  case "${TG_ONLY:-}" in
    ""|overlay|source) ;;
    *) die "TG_ONLY must be overlay, source or empty, got '${TG_ONLY}'" ;;
  esac
  if [[ -n "${TG_PATCH_FROM:-}" && "${TG_PATCH_FROM}" != pr ]]; then
    die "patch-from must be 'pr' or empty, got '${TG_PATCH_FROM}'"
  fi
  if [[ "$mode" == overlay && -z "${TG_PATCH:-}" && "${TG_PATCH_FROM:-}" != pr ]]; then
    die "mode overlay needs a patch: the patch input (a file) or patch-from: pr"
  fi
  if [[ "$mode" == auto && -n "${TG_PATCH:-}" ]]; then die "mode auto takes its patch from the PR (patch-from: pr), not the patch input"; fi
  if [[ -n "${TG_BASE_COMMIT:-}" ]] && ! is_sha "$TG_BASE_COMMIT"; then
    die "base-commit must be a 40-hex commit, got '${TG_BASE_COMMIT}'"
  fi
  if [[ "$mode" != installed && ( "$mode" != overlay || "${TG_PATCH_FROM:-}" == pr ) ]]; then
    [[ "$repo" =~ ^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$ ]] || die "repo must be OWNER/NAME, got '${repo}'"
    local owner="${repo%%/*}" name="${repo#*/}"
    [[ "$owner" != . && "$owner" != .. && "$name" != . && "$name" != .. ]] || die "repo must be OWNER/NAME, got '${repo}'"
  fi
  if [[ ( "$mode" == source || "$mode" == auto || "${TG_PATCH_FROM:-}" == pr ) && -z "$ref" ]]; then
    die "mode $mode needs a ref"
  fi
  if [[ "$mode" == wheel && -z "${TG_WHEEL:-}" ]]; then die "mode wheel needs the wheel input (a path or URL)"; fi
  if [[ "$ref" == -* ]]; then die "ref must not start with '-', got '${ref}'"; fi
  return 0
}

repo_slug() {  # triton-lang/triton -> triton-lang__triton (one path component, never '..')
  local s
  s="$(printf '%s' "$repo" | tr '[:upper:]' '[:lower:]')"
  s="${s/\//__}"
  printf '%s' "${s//[^a-z0-9._-]/-}"
}

cache_root() {
  local root="${TG_CACHE_ROOT:-}"
  [[ -n "$root" ]] || root="$HOME/.cache/tritongate-builds"
  root="${root/#\~/$HOME}"
  mkdir -p "$root"
  (cd "$root" && pwd -P)
}

is_sha() { [[ "$1" =~ ^[0-9a-f]{40}$ ]]; }

# Trust domains. TG_CACHE_WRITE=true (trusted jobs: the nightly, on main) builds into the
# shared cache and writes each venv's manifest. TG_CACHE_WRITE=false (jobs that run PR code)
# reuses a complete venv of the shared cache that still matches its manifest, but never
# writes there: a venv it has to build goes to a throwaway folder under $RUNNER_TEMP (emptied
# by the runner at the end of the job), so no later job reuses it. The manifest lives beside
# the venv: it catches a venv changed by anything that did not also rewrite the manifest;
# a cache owned by another user than the one PR jobs run as is the stronger fence
# (docs/compiler-builds.md).
venv_for() {  # $1: <slug>/<name>: the venv of this build, shared when complete or when writable
  local shared
  shared="$(cache_root)/$1/venv"
  if [[ "${TG_CACHE_WRITE:-true}" == false ]] && ! trusted_venv "$shared"; then
    local scratch="${RUNNER_TEMP:?RUNNER_TEMP is needed for a throwaway build}/tritongate-pr/builds"
    mkdir -p "$scratch"
    printf '%s' "$(cd "$scratch" && pwd -P)/$1/venv"
  else
    printf '%s' "$shared"
  fi
}

manifest_tool() {  # the runner's interpreter checks the venv, never the venv's own
  "$(resolve_python "${TG_PYTHON:-python3}")" "$(dirname "${BASH_SOURCE[0]}")/venv_manifest.py" "$@"
}

# A complete shared venv that is still, file for file, what the trusted build wrote. PR code
# runs as the same user and could have changed it: a mismatch makes it untrusted (named in
# the log), and this job builds its own in the throwaway folder.
trusted_venv() {
  local venv="$1" why
  [[ -f "$venv/.tritongate-complete" ]] || return 1
  if why="$(manifest_tool verify "$venv")"; then
    return 0
  fi
  echo "::warning title=build-compiler::not reusing the shared build: ${why//$'\n'/ }; building in this job's throwaway folder" >&2
  return 1
}

# Environment that changes what a compiler build produces (Triton's and FlagTree's setup.py
# read these); a venv built under other values is another build.
BUILD_ENV_NAMES=(FLAGTREE_BACKEND MAX_JOBS CC CXX LLVM_SYSPATH LLVM_INCLUDE_DIRS LLVM_LIBRARY_DIR
                 TRITON_APPEND_CMAKE_ARGS TRITON_CODEGEN_BACKENDS TRITON_PLUGIN_DIRS TRITON_OFFLINE_BUILD)
# An input left empty reaches this script as an empty variable: the build must see it unset
# (FlagTree's own default applies only to an unset FLAGTREE_BACKEND), as the key does.
for name in "${BUILD_ENV_NAMES[@]}"; do
  if [[ -z "${!name-}" ]]; then unset "$name"; fi
done

# The venv's key besides the commit: tritongate's version and runtime deps, the base
# interpreter (path, version, torch) and the build settings. 16 hex digits of a sha256.
build_key() {
  local base root version="unknown" name
  base="$(resolve_python "${TG_PYTHON:-python3}")"
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
  if [[ -f "$root/pyproject.toml" ]]; then
    version="$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/pyproject.toml" | head -n 1)"
  fi
  {
    printf 'tritongate %s\n' "$version"
    printf 'dep %s\n' "${TG_DEPS[@]}"
    printf 'python %s\n' "$base"
    "$base" -c 'import sys; print("version", sys.version)
try:
    import torch
    print("torch", torch.__version__, torch.version.cuda, torch.version.hip)
except Exception:
    print("torch none")'
    # empty counts as unset: the actions pass an empty input as an empty variable
    for name in "${BUILD_ENV_NAMES[@]}"; do printf 'env %s=%s\n' "$name" "${!name:-<unset>}"; done
    env | LC_ALL=C sort | grep '^TRITON_BUILD_' || true
  } | sha256sum | cut -c1-16
}

plan() {
  check_inputs
  local slug="" commit="" cached=false src="" depth=1 shared
  if [[ "$mode" != installed ]]; then slug="$(repo_slug)"; fi
  if [[ "$mode" == auto || "${TG_PATCH_FROM:-}" == pr ]]; then
    # The diff needs the base commit: the candidate's first parent is in a 2-deep checkout
    # (the base of a PR's merge commit); any other base is fetched by the build step.
    depth=2
    src=".tritongate-src/${slug}-$(date +%s)-$$-${RANDOM}"
  elif [[ "$mode" == source ]]; then
    local key
    key="$(build_key)"  # its own statement: a bad interpreter stops the plan, never keys a venv
    shared="$(cache_root)/$slug/$ref-$key/venv"
    if is_sha "$ref" && trusted_venv "$shared"; then
      commit="$ref"
      cached=true
    else
      # A fresh folder under the workspace (actions/checkout only writes there); removed after the build.
      src=".tritongate-src/${slug}-$(date +%s)-$$-${RANDOM}"
    fi
  fi
  out slug "$slug"
  out commit "$commit"
  out cached "$cached"
  out src "$src"
  out fetch-depth "$depth"
}

# The absolute path of an interpreter that runs, e.g. `python3` -> /usr/bin/python3.
resolve_python() {
  local py="$1" path
  path="$(command -v -- "$py")" || die "python '$py' not found"
  [[ "$path" == /* ]] || path="$PWD/$path"
  "$path" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' || die "'$path' is not a usable python"
  printf '%s' "$path"
}

install_deps() {  # into the venv: tritongate's runtime deps; torch only when the base has none
  local vpy="$1"
  "$vpy" -m pip install -q --disable-pip-version-check --upgrade pip
  if ! "$vpy" -c 'import torch' 2>/dev/null; then
    local index=()  # TG_TORCH_INDEX: a CPU runner's CPU build (PyPI's Linux torch is a CUDA build of GBs)
    if [[ -n "${TG_TORCH_INDEX:-}" ]]; then index=(--index-url "$TG_TORCH_INDEX"); fi
    echo "torch is not importable from '${TG_PYTHON:-python3}': installing it into the build venv" \
         "${TG_TORCH_INDEX:+from $TG_TORCH_INDEX}" >&2
    "$vpy" -m pip install -q --disable-pip-version-check "${index[@]}" torch
  fi
  "$vpy" -m pip install -q --disable-pip-version-check "${TG_DEPS[@]}"
}

# The compiler's own code (its setup.py and CMake, its Triton when imported) runs through
# compiler_code.sh: without the runner's file commands and tokens, and in a PR job with a
# throwaway HOME.
compiler_code() { bash "$(dirname "${BASH_SOURCE[0]}")/compiler_code.sh" "$@"; }

check_compiler() {  # the venv's own triton, not the base interpreter's
  local venv="$1"
  compiler_code "$venv/bin/python" - "$venv" <<'EOF'
import os, sys
import triton
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(triton.__file__)
if not where.startswith(venv + os.sep):
    sys.exit(f"triton is imported from {where}, not from the build venv {venv}")
print(f"triton {triton.__version__} from {where}")
EOF
}

# Make the venv at $1 under an exclusive lock, unless a complete one is there.
# $2 is a function that installs the compiler into it.
make_venv() {
  local venv="$1" installer="$2" base
  mkdir -p "$(dirname "$venv")"
  exec 9>"$(dirname "$venv")/venv.lock"
  echo "waiting for the build lock $(dirname "$venv")/venv.lock ..." >&2
  flock -w 10800 9 || die "timed out waiting for another job building $venv"
  # A shared venv is reused only while it matches its manifest: a trusted job rebuilds one that
  # PR code (the same user) changed, rather than running on it.
  if [[ -f "$venv/.tritongate-complete" ]] && { [[ "$venv" != "$(cache_root)"/* ]] || trusted_venv "$venv"; }; then
    echo "reusing $venv (built by an earlier job)" >&2
  else
    rm -rf "$venv"   # a build that died half-way
    base="$(resolve_python "${TG_PYTHON:-python3}")"
    # --system-site-packages: the runner's torch (CUDA build) is reused; the venv's own
    # compiler shadows any triton the base interpreter has.
    "$base" -m venv --system-site-packages "$venv"
    install_deps "$venv/bin/python"
    "$installer" "$venv/bin/python"
    check_compiler "$venv"
    if [[ "$venv" == "$(cache_root)"/* ]]; then  # a shared build: later PR jobs check it against this
      # every .pyc now, so that a later import writes none (an unlisted file is a mismatch)
      "$venv/bin/python" -m compileall -q "$venv" >/dev/null || true
      manifest_tool write "$venv" >&2
    fi
    date -u +%Y-%m-%dT%H:%M:%SZ > "$venv/.tritongate-complete"
  fi
  flock -u 9
  exec 9>&-
}

# ccache for a source build, where the runner has it and the job names its folder (CCACHE_DIR;
# pr-gate's pre-screen restores one that a nightly on the default branch saved): Triton's
# setup.py compiles through it with TRITON_BUILD_WITH_CCACHE. CCACHE_BASEDIR and
# CCACHE_NOHASHDIR leave the checkout's folder, a fresh name in every job, out of the hashes.
# Not part of the build key: ccache hands back what the compiler would make.
use_ccache() {  # $1: the checkout
  [[ -z "${TRITON_BUILD_WITH_CCACHE:-}" && -n "${CCACHE_DIR:-}" ]] || return 0
  command -v ccache >/dev/null || { echo "no ccache on this runner: the compiler is built without it" >&2; return 0; }
  export TRITON_BUILD_WITH_CCACHE=true CCACHE_BASEDIR="$1" CCACHE_NOHASHDIR=true
  mkdir -p "$CCACHE_DIR"
  echo "ccache: $CCACHE_DIR ($(du -sh "$CCACHE_DIR" 2>/dev/null | cut -f1) before this build)" >&2
}

install_source() {
  local vpy="$1" src="$GITHUB_WORKSPACE/$TG_SRC" target
  # Triton >= 3.4 (and forks that follow it) build from the repository root; older
  # Triton and FlagTree from python/.
  if [[ -f "$src/setup.py" ]]; then
    target="$src"
  elif [[ -f "$src/python/setup.py" || -f "$src/python/pyproject.toml" ]]; then
    target="$src/python"
  elif [[ -f "$src/pyproject.toml" ]] && grep -q '^\[build-system\]' "$src/pyproject.toml"; then
    target="$src"
  else
    die "no setup.py or pyproject.toml in $TG_REPO@$TG_REF (looked in ./ and ./python)"
  fi
  echo "building $TG_REPO from ${target#"$GITHUB_WORKSPACE/"} (this takes a while the first time)" >&2
  use_ccache "$src"
  # The one compile: a wheel (what `pip install <dir>` builds anyway), then that wheel installed,
  # so that pr-gate can hand the build to its GPU job instead of compiling it there again.
  local wheels found=()
  wheels="${RUNNER_TEMP:?RUNNER_TEMP is needed for the wheel of a source build}/tritongate-pr/wheels/$(repo_slug)-$$-${RANDOM}"
  mkdir -p "$wheels"
  compiler_code "$vpy" -m pip wheel --disable-pip-version-check --no-deps -w "$wheels" "$target"
  mapfile -t found < <(find "$wheels" -maxdepth 1 -type f -name '*.whl')
  (( ${#found[@]} == 1 )) || die "pip wheel of $TG_REPO left ${#found[@]} wheels in $wheels, not one"
  install_wheel_file "$vpy" "${found[0]}"
  if [[ "${TRITON_BUILD_WITH_CCACHE:-}" == true ]] && command -v ccache >/dev/null; then
    ccache --show-stats >&2 || true  # the log says how much of this build the cache held
  fi
  # The C library it was built against (the runner's interpreter says, not the build's): a
  # runner with an older one cannot load it; pr-gate checks before it installs it elsewhere.
  "$(resolve_python "${TG_PYTHON:-python3}")" -c 'import os; print(os.confstr("CS_GNU_LIBC_VERSION") or "")' \
    > "${found[0]}.build-host" || true
  built_wheel="${found[0]}"
}

# A wheel into the venv, over any triton of the same version the base interpreter has (a
# CUDA torch brings one): pip skips a local wheel whose version is installed, and the venv
# would import the base's. Then its own dependencies.
install_wheel_file() {
  local vpy="$1" whl="$2"
  compiler_code "$vpy" -m pip install --disable-pip-version-check --no-deps --force-reinstall "$whl"
  compiler_code "$vpy" -m pip install --disable-pip-version-check "$whl"
}

install_wheel() { install_wheel_file "$1" "$TG_WHEEL"; }

# What an overlay can take: the Python sources of the package (tritongate.overlay maps these
# paths to the installed ones). A `:(glob)` `*` never crosses a `/`.
OVERLAY_PATHSPECS=(':(glob)python/triton/**' ':(glob)third_party/*/backend/**')
overlay_takes() { [[ "$1" =~ ^(python/triton/|third_party/[A-Za-z0-9_]+/backend/). ]]; }

# The base commit of the checkout's diff: TG_BASE_COMMIT (fetched when the shallow checkout
# lacks it) or HEAD's first parent (the base of a PR's merge commit).
diff_base() {
  local src="$1" base="${TG_BASE_COMMIT:-}"
  if [[ -z "$base" ]]; then
    base="$(git -C "$src" rev-parse --verify -q 'HEAD^1^{commit}')" ||
      die "the checkout of $TG_REPO@$TG_REF has no parent commit to diff against; pass base-commit"
  elif ! git -C "$src" cat-file -e "$base^{commit}" 2>/dev/null; then
    git -C "$src" fetch -q --no-tags --depth=1 origin "$base" >&2 ||
      die "the base commit $base is not in the checkout and could not be fetched"
  fi
  printf '%s' "$base"
}

# The overlay of the base build with $1 applied, in this job's throwaway folder (an overlay
# takes seconds: it is never cached). Sets the outputs.
make_overlay() {
  local patch="$1" base root dest stdout sha
  base="$(resolve_python "${TG_OVERLAY_BASE:-${TG_PYTHON:-python3}}")"
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
  dest="${RUNNER_TEMP:?RUNNER_TEMP is needed for an overlay build}/tritongate-pr/overlays/$(repo_slug)-$$-${RANDOM}"
  mkdir -p "$(dirname "$dest")"
  sha="$(sha256sum -- "$patch" | cut -d' ' -f1)"
  echo "overlay build: $base with patch sha256 $sha" >&2
  stdout="$(PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" "$base" -m tritongate overlay --base-python "$base" \
            --patch "$patch" --out "$dest")" || die "the overlay build failed (see the error above)"
  check_compiler "$dest"
  out python "$(printf '%s\n' "$stdout" | tail -n 1)"
  out patch-sha256 "$sha"
  out built overlay
  out wheel ""  # the base build patched: nothing of its own to hand on
}

# TG_ONLY says another half makes this build (see the header): say which, and output no build.
made_elsewhere() {  # $1: the build this PR gets (overlay|source)
  local what="an overlay of the base build" by="the base half makes it after its own half" here="from source"
  if [[ "$1" == source ]]; then what="a source build"; by="the PR half makes it"; here="as an overlay"; fi
  echo "the PR build is ${what}: ${by} (this job makes the PR build only ${here})" >&2
  out python ""
  out built elsewhere
  out patch-sha256 ""
  out wheel ""
}

# Modes overlay and auto with patch-from pr: the PR's diff, and which build it gets.
build_from_pr() {
  local src="$GITHUB_WORKSPACE/$TG_SRC" base head names files=() outside=() f patch
  head="$(git -C "$src" rev-parse HEAD)"
  base="$(diff_base "$src")"
  names="$(git -C "$src" diff --no-renames --name-only "$base" "$head")"
  if [[ -n "$names" ]]; then mapfile -t files <<<"$names"; fi
  for f in "${files[@]}"; do overlay_takes "$f" || outside+=("$f"); done
  out commit "$head"
  local gets=overlay
  if [[ "$mode" == auto && ${#files[@]} -gt 0 && ${#outside[@]} -gt 0 ]]; then gets=source; fi
  if [[ -n "${TG_ONLY:-}" && "$TG_ONLY" != "$gets" ]]; then
    made_elsewhere "$gets"
    return 0
  fi
  if [[ "$mode" == auto && ${#files[@]} -eq 0 ]]; then
    # an overlay with an empty patch is the base build itself
    echo "build mode auto: overlay; the PR changes no file from ${base:0:12} to ${head:0:12}: the candidate is the base build, unpatched" >&2
    out python "$(resolve_python "${TG_OVERLAY_BASE:-${TG_PYTHON:-python3}}")"
    out built overlay
    out wheel ""
    return 0
  fi
  if [[ "$mode" == auto && ${#outside[@]} -gt 0 ]]; then
    echo "build mode auto: source build; the PR changes ${#outside[@]} file(s) outside the package's Python sources" \
         "(${outside[*]:0:5}${outside[5]:+ ...}), which an overlay cannot take" >&2
    commit="$head"
    build_source "$head"
    out built source
    out wheel "$built_wheel"
    return 0
  fi
  if (( ${#outside[@]} == ${#files[@]} )); then
    die "the PR changes no file an overlay can take (${files[*]:0:5}); use mode source or auto"
  fi
  if [[ "$mode" == auto ]]; then
    echo "build mode auto: overlay; the PR changes only the package's Python sources (${#files[@]} file(s): ${files[*]:0:5}${files[5]:+ ...})" >&2
  elif (( ${#outside[@]} > 0 )); then
    echo "::warning title=build-compiler::mode overlay leaves out ${#outside[@]} changed file(s) an overlay cannot take: ${outside[*]:0:10}" >&2
  fi
  patch="${RUNNER_TEMP:?}/tritongate-pr/pr-${head:0:12}-$$.patch"
  mkdir -p "$(dirname "$patch")"
  git -C "$src" diff --no-renames --binary "$base" "$head" -- "${OVERLAY_PATHSPECS[@]}" > "$patch"
  make_overlay "$patch"
}

build_source() {  # $1: the commit checked out at TG_SRC
  local venv key
  key="$(build_key)"
  venv="$(venv_for "$(repo_slug)/$1-$key")"
  make_venv "$venv" install_source
  out python "$venv/bin/python"
}

build() {
  check_inputs
  local venv commit="" key
  case "$mode" in
    overlay|auto)
      if [[ "$mode" == overlay && "${TG_ONLY:-}" == source ]]; then
        if is_sha "$ref"; then out commit "$ref"; else out commit ""; fi
        made_elsewhere overlay
        return 0
      fi
      if [[ "${TG_PATCH_FROM:-}" == pr || "$mode" == auto ]]; then
        build_from_pr
      else
        [[ -f "$TG_PATCH" ]] || die "patch $TG_PATCH: no such file"
        if is_sha "$ref"; then out commit "$ref"; else out commit ""; fi
        make_overlay "$TG_PATCH"
      fi
      return 0
      ;;
    installed)  # no commit: nothing says which commit the interpreter's compiler was built from
      # (assigned first: a `die` inside "$(...)" as an argument would only end the subshell)
      local py
      py="$(resolve_python "${TG_PYTHON:-python3}")"
      out python "$py"
      out commit ""
      out built installed
      out wheel ""
      return 0
      ;;
    source)
      if [[ -n "${TG_SRC:-}" ]]; then
        commit="$(git -C "$GITHUB_WORKSPACE/$TG_SRC" rev-parse HEAD)"
      else
        commit="${TG_PLAN_COMMIT:-}"
      fi
      is_sha "$commit" || die "could not resolve $TG_REPO@$TG_REF to a commit (got '${commit}')"
      key="$(build_key)"
      venv="$(venv_for "$(repo_slug)/$commit-$key")"
      make_venv "$venv" install_source
      ;;
    wheel)
      if [[ ! -f "$TG_WHEEL" ]]; then
        # A URL names whatever is there today: key the venv by the bytes, not the string.
        local dl="${RUNNER_TEMP:-/tmp}/tritongate-wheel-$$-$RANDOM"
        mkdir -p "$dl"
        "$(resolve_python "${TG_PYTHON:-python3}")" -m pip download -q --disable-pip-version-check --no-deps \
          --only-binary :all: -d "$dl" "$TG_WHEEL" || die "could not download the wheel $TG_WHEEL"
        TG_WHEEL="$(find "$dl" -maxdepth 1 -name '*.whl' -print -quit)"
        [[ -f "$TG_WHEEL" ]] || die "the download of the wheel left no .whl file"
      fi
      key="$(build_key)"
      key="$(sha256sum -- "$TG_WHEEL" | cut -d' ' -f1 | cut -c1-32)-$key"
      is_sha "$ref" && commit="$ref"
      venv="$(venv_for "$(repo_slug)/wheel-$key")"
      make_venv "$venv" install_wheel
      ;;
  esac
  out python "$venv/bin/python"
  out commit "$commit"
  out built "$mode"
  if [[ "$mode" == wheel ]]; then out wheel "$TG_WHEEL"; else out wheel "$built_wheel"; fi
}

case "${1:-}" in
  plan) plan ;;
  build) build ;;
  key) build_key; echo ;;
  where) check_inputs; key="$(build_key)"; venv_for "$(repo_slug)/${TG_PLAN_COMMIT:?}-$key"; echo ;;
  *) echo "usage: build.sh plan|build|key|where (see action.yml)" >&2; exit 2 ;;
esac
