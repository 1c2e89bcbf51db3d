"""Where an ahead-of-time IR folder and an ir-diff folder came from, proven by content hashes.

``pair --changed-from DIR`` skips the rows DIR calls identical, so DIR must prove it was made
from *this* baseline record and *these* two builds. ``tritongate ir`` writes
``ttgir/aot.json`` (record hash, build identity, sha256 of its ``index.tsv``); ``ir-diff``
joins two into ``provenance.json``; ``check_diff_provenance`` recomputes every hash it can.
The record's hash covers what fixes the variants compiled (``RECORD_FILES``); a build's
identity is Triton's ``triton_key()`` (what its compile cache is keyed on): two installs of
the same wheel agree, any rebuild differs.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from tritongate.childenv import build_env, package_link_dir, with_overlay
from tritongate.atomicio import write_json_atomic, write_text_atomic
from tritongate.errors import UsageError
from tritongate.ir.index import INDEX, index_text

AOT_FILE = "aot.json"
PROVENANCE = "provenance.json"
SCHEMA_VERSION = 1
RECORD_FILES = ("results.json", "run_identity.json", f"ttgir/{INDEX}")
MAX_BYTES = 1 * 2**20

_BUILD_PROBE = ("import hashlib, json, triton\n"
                "from triton.runtime.cache import triton_key\n"
                "print(json.dumps({'triton_version': triton.__version__, 'triton_dir': triton.__path__[0],\n"
                "                  'triton_key': hashlib.sha256(triton_key().encode()).hexdigest()}))\n")


def sha256_file(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def record_identity(record: Path) -> dict[str, Any]:
    """The record's content hash (over ``RECORD_FILES``, each by name and sha256) and its
    files' hashes; ``UsageError`` when one is missing or a link (never followed)."""
    record = Path(record)
    files: dict[str, str] = {}
    for rel in RECORD_FILES:
        path = record / rel
        if path.is_symlink() or not path.is_file():
            raise UsageError(f"{path}: missing or not a plain file; the record's IR provenance needs "
                             f"{', '.join(RECORD_FILES)}")
        files[rel] = sha256_file(path)
    content = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    return {"path": str(record.resolve()), "content_sha256": content, "files": files}


def this_build() -> dict[str, Any]:
    """The identity of the Triton imported by this process."""
    import triton
    from triton.runtime.cache import triton_key

    return {"triton_version": triton.__version__, "triton_dir": str(Path(triton.__path__[0]).resolve()),
            "triton_key": hashlib.sha256(triton_key().encode()).hexdigest()}


def _is_python(python: str) -> bool:
    """Whether ``python`` runs Python code (asked only once a probe failed)."""
    try:
        proc = subprocess.run([python, "-c", "print('tritongate' + '-python')"], capture_output=True, text=True,
                              timeout=60, env=build_env(os.environ))
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.stdout.strip() == "tritongate-python"


def build_of(python: str, env: Mapping[str, str] | None = None, timeout_s: float = 120.0) -> dict[str, Any]:
    """The identity of the Triton that ``python`` (a build's interpreter) imports, with ``env``
    (the build's overlay) applied by the rule its compiles run under (``childenv.with_overlay``)."""
    try:
        with tempfile.TemporaryDirectory(prefix="tritongate-probe-") as tmp:
            probe_env = with_overlay(build_env(os.environ), env, lead=str(package_link_dir(Path(tmp))))
            proc = subprocess.run([python, "-c", _BUILD_PROBE], capture_output=True, text=True, timeout=timeout_s,
                                  env=probe_env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"{python}: cannot ask it for its Triton build ({type(exc).__name__}: {exc})") from None
    if proc.returncode != 0:
        if not _is_python(python):
            raise UsageError(f"{python}: not a Python interpreter; pass the venv's bin/python of that compiler build")
        tail = " ".join(proc.stderr.split())[-300:]
        raise UsageError(f"{python}: importing triton failed (exit {proc.returncode}): {tail}")
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"{python}: it printed no Triton build identity when asked (is it a Python interpreter?); "
                         "pass the build venv's bin/python, an interpreter that imports that build's triton") from None
    out["triton_dir"] = str(Path(out["triton_dir"]).resolve())
    from tritongate.overlay import overlay_identity

    overlay = overlay_identity(out["triton_dir"])
    if overlay is not None:  # a patched overlay: the verdict names its patches
        out["overlay"] = overlay
    return out


def write_aot(ttgir_dir: Path, record: Path, *, target: str, compiled: int, failed: Sequence[str],
              codegen_env: Mapping[str, str] | None = None, levels: Mapping[str, int] | None = None,
              record_status: str | None = None) -> Path:
    """``aot.json``; ``codegen_env``: the code-affecting settings it compiled with; ``levels``:
    the IR levels kept beside the TTGIR (level -> variants that have it); ``record_status``:
    the source run's status (an interrupted run's IR covers only the rows it reached)."""
    ttgir_dir = Path(ttgir_dir)
    if not (ttgir_dir / INDEX).is_file():  # nothing compiled: an empty index, still proven
        ttgir_dir.mkdir(parents=True, exist_ok=True)
        write_text_atomic(ttgir_dir / INDEX, index_text([]))
    doc = {"schema_version": SCHEMA_VERSION, "kind": "aot", "record": record_identity(record),
           "build": this_build(), "target": target, "compiled": compiled, "failed": list(failed),
           "index_sha256": sha256_file(ttgir_dir / INDEX), "python": sys.executable}
    doc |= {k: dict(v) for k, v in (("codegen_env", codegen_env), ("levels", levels)) if v is not None}
    if record_status is not None:
        doc["record_status"] = record_status
    write_json_atomic(ttgir_dir / AOT_FILE, doc)
    return ttgir_dir / AOT_FILE


def _read_json(path: Path, what: str) -> dict[str, Any]:
    if path.is_symlink() or not path.is_file():
        raise UsageError(f"{path}: no {what} there (a link is never followed)")
    data = path.read_bytes()
    if len(data) > MAX_BYTES:
        raise UsageError(f"{path}: {len(data)} bytes; not a {what}")
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema_version") != SCHEMA_VERSION:
        raise UsageError(f"{path}: not a version {SCHEMA_VERSION} {what}")
    return doc


def read_aot(ttgir_dir: Path) -> dict[str, Any]:
    ttgir_dir = Path(ttgir_dir)
    doc = _read_json(ttgir_dir / AOT_FILE, "AOT provenance (tritongate ir writes it)")
    if doc.get("index_sha256") != sha256_file(ttgir_dir / INDEX):
        raise UsageError(f"{ttgir_dir / INDEX} does not match the sha256 in {ttgir_dir / AOT_FILE}: edited")
    return doc


def diff_provenance(base_dir: Path, cand_dir: Path) -> dict[str, Any]:
    """The provenance of a diff of two AOT folders (``ttgir/`` roots); ``UsageError`` when
    either lacks its ``aot.json`` or they were made from different records or targets."""
    base, cand = read_aot(base_dir), read_aot(cand_dir)
    if base["record"]["content_sha256"] != cand["record"]["content_sha256"]:
        raise UsageError(f"{base_dir} and {cand_dir} were compiled from different baseline records "
                         f"({base['record']['path']} vs {cand['record']['path']})")
    if base.get("target") != cand.get("target"):
        raise UsageError(f"{base_dir} is for {base.get('target')}, {cand_dir} for {cand.get('target')}")
    return {"record": base["record"], "target": base.get("target"),
            **{side: {"build": doc["build"], "index_sha256": doc["index_sha256"], "compiled": doc.get("compiled"),
                      "failed": doc.get("failed"), "codegen_env": doc.get("codegen_env") or {},
                      "record_status": doc.get("record_status")}
               for side, doc in (("base", base), ("cand", cand))}}


def write_diff_provenance(out: Path, provenance: Mapping[str, Any]) -> Path:
    out = Path(out)
    doc = {"schema_version": SCHEMA_VERSION, "kind": "ir-diff", **provenance,
           "index_sha256": sha256_file(out / INDEX)}
    write_json_atomic(out / PROVENANCE, doc)
    return out / PROVENANCE


Build = Mapping[str, Any] | Callable[[], Mapping[str, Any]] | None


def check_diff_provenance(folder: Path, record: Path, base_build: Build, cand_build: Build,
                          option: str = "--changed-from") -> dict[str, Any]:
    """``folder``'s provenance, refused (``UsageError``) unless its ``index.tsv`` is the one it
    hashed, it was made from ``record`` as it is now, and (when given) by these two builds.
    A build given as a function (``build_of``, slow) is called only after the cheaper checks."""
    folder = Path(folder)
    where = f"{option} {folder}"
    try:
        doc = _read_json(folder / PROVENANCE, "ir-diff provenance (tritongate ir-diff writes it from two "
                                              "`tritongate ir` folders)")
    except UsageError as exc:
        raise UsageError(f"{where}: {exc}; a folder that cannot say where it came from is not trusted") from None
    if doc.get("kind") != "ir-diff":
        raise UsageError(f"{where}: {PROVENANCE} is not an ir-diff's")
    if doc.get("index_sha256") != sha256_file(folder / INDEX):
        raise UsageError(f"{where}: {INDEX} does not match the sha256 in {PROVENANCE}: edited after ir-diff wrote it")
    mine = record_identity(record)
    claimed = doc.get("record") or {}
    if claimed.get("content_sha256") != mine["content_sha256"]:
        raise UsageError(f"{where}: made from another baseline record ({claimed.get('path')!r}, content "
                         f"{str(claimed.get('content_sha256'))[:12]}) than {record} (content "
                         f"{mine['content_sha256'][:12]}); recompile and diff against this record")
    actuals: dict[str, Mapping[str, Any]] = {}
    for side, given in (("base", base_build), ("cand", cand_build)):
        if given is None:
            continue
        actual = given() if callable(given) else given
        built = (doc.get(side) or {}).get("build") or {}
        if built.get("triton_key") != actual.get("triton_key"):
            raise UsageError(f"{where}: its {side} IR was compiled by Triton {built.get('triton_version')} "
                             f"(key {str(built.get('triton_key'))[:12]}), not by this pair's {side} build "
                             f"(Triton {actual.get('triton_version')}, key {str(actual.get('triton_key'))[:12]})")
        actuals[side] = actual
    screened = [(doc.get(side) or {}).get("codegen_env") for side in ("base", "cand")]
    paired = [(actuals.get(side) or {}).get("codegen_env") for side in ("base", "cand")]
    if None not in screened and None not in paired:  # an ir-diff older than this record of it: unchecked
        was, now = (settings_between(*(env or {} for env in envs)) for envs in (screened, paired))
        if was != now:
            raise UsageError(f"{where}: it was screened with {describe_settings(was)} between the builds, and this "
                             f"pair has {describe_settings(now)}; screen again with the pair's --base-env/--cand-env, "
                             "or pair with the ones it was screened with")
    return doc


def settings_between(base: Mapping[str, Any], cand: Mapping[str, Any]) -> dict[str, tuple[Any, Any]]:
    """The code-generation settings (``ir.aot.CODEGEN_ENV``) the two sides set differently, as
    (base, candidate); line info is left out (the pre-screen compiles without it, as GPU runs
    compare binaries). Settings both sides share (the record's own) cancel."""
    from tritongate.ir.aot import CODEGEN_ENV

    return {k: (base.get(k) or None, cand.get(k) or None) for k in CODEGEN_ENV
            if k != "TRITON_DISABLE_LINE_INFO" and (base.get(k) or None) != (cand.get(k) or None)}


def describe_settings(between: Mapping[str, tuple[Any, Any]]) -> str:
    if not between:
        return "no code-generation setting differing"
    return ", ".join(f"{k} {'unset' if b is None else b} (base) vs {'unset' if c is None else c} (candidate)"
                     for k, (b, c) in sorted(between.items()))
