"""Bad inputs by class, not by case: every entry point x every path argument x every input class.

The entry points are found by construction, not listed: every ``ci/*.py`` script, and every
``tritongate`` subcommand of the real argparse parser (its subparsers walked). Each argument of
each is classified by ``classify`` (argparse ``type=Path``, or the words of its metavar or
dest: DIR, PATH, FILE, RUN, YAML, JSON, ...) as a path read (a file or a directory), a path
written (an output file or directory) or not a path. An argument the helper cannot classify
fails ``test_every_argument_is_classified``: the next entry point or option is covered when it
appears, or consciously listed in ``OVERRIDES``.

Each path argument then gets every input class that applies to its kind (``FILE_CLASSES``,
``DIR_CLASSES``, ``OUT_FILE_CLASSES``, ``OUT_DIR_CLASSES``, and a directory whose member
files - results.json, run_identity.json, verdict.json, manifest.json, ... - are damaged in
each ``MEMBER_CLASSES`` way), with the entry point's other arguments valid (``valid_value``,
``EXTRAS``), so that the bad input is what is tested.

What every case asserts (``assert_refused``), the exit codes of docs/reference.md: exit 2 or 3
(3: a preflight check, with its ``!!! PREFLIGHT_FAILED`` marker); never 0 (a silent success),
1 (that means "gate failed"), 4 (a bug) or a traceback; ONE ``error: ...`` line on stderr
naming the input (its file name, its option, or the member file damaged). ``ACCEPTED`` lists the
few classes that are documented as valid for some argument (an empty policy file is the defaults).

Nothing is measured. A command that measures in its own process (``run``, ``batch``) gets an
``--out`` that is a file (the "backstop", as tests/test_bad_inputs.py): its out_dir preflight
is the last check before anything is measured, so a bad input it wrongly accepts fails there
(``check=out_dir``), which a case reports as "accepted". A paired run (``pair``, ``loop``,
``calibrate``) checks its record and suite in its workers, after --out: it gets workers in this
process that make those checks and stop the run at its first row (``checking_workers``).
The oversized class (64 MiB) is ``slow``.

Everything runs in this process (``main(argv)``; a ci script without a ``main`` of its own
runs as ``__main__`` with ``runpy``); no network (GITHUB_API_URL is an unreachable local port).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import hashlib
import importlib.util
import io
import json
import os
import re
import runpy
import shutil
import signal
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, Iterator
from unittest import mock

import pytest

from tritongate.argtypes import nonempty_text
from tritongate.cli import main as tritongate_main
from tritongate.cli.parser import build_parser

ROOT = Path(__file__).resolve().parents[1]
CI = ROOT / "ci"
PASSWD = Path("/etc/passwd")
OVERSIZED = 64 << 20  # 64 MiB of 'a'
CASE_TIMEOUT_S = 60


# =============================================================================================
# 1. the entry points, by construction
# =============================================================================================

@dataclass(frozen=True)
class Entry:
    name: str                                 # "tritongate gate", "ci/gate.py"
    parsers: tuple[argparse.ArgumentParser, ...]  # the parsers its arguments go to (leaves)
    extra: tuple[tuple[str, str | None], ...] = ()  # options its --help lists that no parser holds

    @property
    def is_ci(self) -> bool:
        return self.name.startswith("ci/")

    @property
    def script(self) -> Path:
        return CI / self.name.removeprefix("ci/")

    @property
    def argv0(self) -> list[str]:
        """The subcommand words of a ``tritongate`` entry point."""
        return [] if self.is_ci else self.name.split()[1:]

    def actions(self) -> list[Any]:
        return [a for p in self.parsers for a in p._actions] + list(_extra_actions(self))


@lru_cache(maxsize=None)
def _extra_actions(entry: Entry) -> tuple[Any, ...]:
    """The options a script parses itself, as argparse actions (made once: a case finds its own by identity)."""
    return tuple(SimpleNamespace(option_strings=[opt], dest=opt.lstrip("-").replace("-", "_"), metavar=metavar,
                                 type=None, required=False, nargs=None, choices=None, const=None, help=None)
                 for opt, metavar in entry.extra)


def _has_subparsers(p: argparse.ArgumentParser) -> bool:
    return any(isinstance(a, argparse._SubParsersAction) for a in p._actions)


def cli_entries() -> list[Entry]:
    """Every leaf subcommand of the real ``tritongate`` parser."""
    def walk(p: argparse.ArgumentParser, words: list[str]) -> Iterator[Entry]:
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            yield Entry(" ".join(["tritongate", *words]), (p,))
        for a in subs:
            for name, sp in a.choices.items():
                yield from walk(sp, [*words, name])
    return list(walk(build_parser(), []))


def _own_main(script: Path) -> bool:
    """The script defines ``main`` itself (not imported from tritongate.cli)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body)


def _has_main_block(script: Path) -> bool:
    return "if __name__ == \"__main__\":" in script.read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def _ci_module(script: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"_tg_ci_{script.stem}", script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def invoke(entry: Entry, argv: list[str]) -> int:
    """``entry ARGV`` in this process: its exit code."""
    if not entry.is_ci:
        return tritongate_main([*entry.argv0, *argv])
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(entry.script), *argv]
    try:
        if _own_main(entry.script):
            return _exit_code(_ci_module(entry.script).main(argv))
        runpy.run_path(str(entry.script), run_name="__main__")
        return 0
    except SystemExit as exc:
        return _exit_code(exc.code)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path


OPTION_LINE = re.compile(r"^\s{2,}(--[a-z][a-z0-9-]*)(?:[ =]([A-Z][A-Z0-9_|/,.:=-]*))?")


@lru_cache(maxsize=None)
def ci_entries() -> tuple[Entry, ...]:
    """Every ci/*.py script with a ``__main__`` block: its parsers, seen while it parses ``--help``
    (the leaves: a script that hands its arguments to ``tritongate COMMAND`` gets that command's),
    and the options its help lists that none of them holds (parsed by the script itself)."""
    entries = []
    for script in sorted(CI.glob("*.py")):
        if not _has_main_block(script):
            continue
        seen: list[argparse.ArgumentParser] = []
        real = argparse.ArgumentParser.parse_known_args

        def spy(self: argparse.ArgumentParser, args: Any = None, namespace: Any = None) -> Any:
            seen.append(self)
            return real(self, args, namespace)

        out, err = io.StringIO(), io.StringIO()
        with mock.patch.object(argparse.ArgumentParser, "parse_known_args", spy), \
                contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            invoke(Entry(f"ci/{script.name}", ()), ["--help"])
        leaves = tuple(dict.fromkeys(p for p in seen if not _has_subparsers(p)))
        known = {o for p in leaves for a in p._actions for o in a.option_strings}
        extra = {}
        for line in out.getvalue().splitlines():
            m = OPTION_LINE.match(line)
            if m and m.group(1) not in known:
                extra.setdefault(m.group(1), m.group(2))
        entries.append(Entry(f"ci/{script.name}", leaves, tuple(extra.items())))
    return tuple(entries)


@lru_cache(maxsize=None)
def all_entries() -> tuple[Entry, ...]:
    return (*cli_entries(), *ci_entries())


# -- classifying an argument ----------------------------------------------------------------

NOT_PATH = "not a path"
DIR_WORDS = {"DIR", "FOLDER", "RUN", "RECORD", "STORE", "CALDIR"}
FILE_WORDS = {"FILE", "YAML", "JSON", "J2", "PY", "PATH", "CALIBRATION"}
# a metavar made only of these words names a value, not a path
VALUE_WORDS = {"NAME", "A", "B", "D", "E", "K", "V", "RC", "REPO", "OWNER", "URL", "SHA", "SLUG", "AUTO", "NONE",
               "HEX", "BACKEND", "ARCH"}
# an option without a metavar: its dest says it is a value when it holds one of these
VALUE_DEST_WORDS = {"NAME", "REPO", "URL", "SHA", "REF", "LOGIN", "KEY", "BRANCH", "CLASS", "PR", "WORKFLOW", "ID"}

# (entry point, option or positional dest) -> (kind, form) or NOT_PATH, where the words do not tell.
# kind: "file" / "dir" (read), "out-file" / "out-dir" (written). Keep it short: every line is a
# surface the helper could not read from the parser.
OVERRIDES: dict[tuple[str, str], tuple[str, str] | str] = {
    ("ci/aa_count.py", "verdict"): ("file", "json"),       # VERDICT_JSON, a type=Path positional
    ("ci/aa_count.py", "aa_exit"): NOT_PATH,               # the A/A gate's exit code
    ("ci/aa_count.py", "--summary"): ("out-file", ""),     # appended to (the job summary)
    ("ci/opt_in.py", "--opt-in"): NOT_PATH,                # true|label|false
    ("ci/perf_command.py", "--event-path"): ("file", "json"),
    ("ci/resolve_refs.py", "--event-path"): ("file", "json"),
    ("ci/resolve_refs.py", "--merge-checkout"): ("dir", "checkout"),
    ("ci/resolve_refs.py", "--suite"): NOT_PATH,           # only its name makes the artifact key; never opened
    ("ci/post_comment.py", "--verdict-dir"): ("dir", "verdict"),
    ("ci/verify_entry.py", "folder"): ("dir", "entry"),
    ("ci/verify_entry.py", "--entry"): NOT_PATH,           # RUNNER_CLASS/SUITE/GPU/NAME, compared as text
    ("ci/record_baseline.py", "--publish"): ("out-dir", "store"),  # STORE, parsed by the script itself
    ("ci/record_baseline.py", "--compiler-repo"): NOT_PATH,  # R: OWNER/NAME or a clone URL
    ("ci/record_baseline.py", "--compiler-commit"): NOT_PATH,
    ("tritongate ir-diff", "base"): ("dir", "ir"),         # BASE / CAND: run directories or ir outputs (ttgir/)
    ("tritongate ir-diff", "cand"): ("dir", "ir"),
    ("tritongate baseline publish", "--store"): ("out-dir", "store"),  # an entry is written into it
    # a filter: a suite file is taken by its stem (baselines.manifest.suite_folder), never opened
    ("tritongate history", "--suite"): NOT_PATH,
    ("tritongate dashboard", "--suite"): NOT_PATH,
}

# the form of a path whose words do not say it (by dest); forms pick the valid value and the damage
FORMS = {"calibration": "json", "from_calibration": "json", "patch": "text", "suite": "yaml", "store": "store",
         "changed_from": "irdiff", "run": "run"}


def _words(text: str) -> set[str]:
    return set(re.findall(r"[A-Z0-9]+", text.upper()))


def option_name(action: Any) -> str:
    return action.option_strings[0] if action.option_strings else action.dest


def classify(entry: Entry, action: Any) -> tuple[str, str] | str | None:
    """(kind, form) of a path argument, ``NOT_PATH``, or None when it cannot be told."""
    name = option_name(action)
    if (entry.name, name) in OVERRIDES:
        return OVERRIDES[(entry.name, name)]
    if isinstance(action, (argparse._HelpAction, argparse._VersionAction)) or action.nargs == 0 or action.choices:
        return NOT_PATH
    if action.type not in (None, str, nonempty_text, Path):  # a converter: a number, a URL, a shard
        return NOT_PATH
    words = _words(action.metavar) if isinstance(action.metavar, str) else set()
    dest_words = set(action.dest.upper().split("_"))
    if words & DIR_WORDS or words & FILE_WORDS:
        out = action.dest == "out" or action.dest.endswith(("_out", "output")) or action.dest.startswith("write_")
        is_dir = bool(words & DIR_WORDS) and not words & FILE_WORDS
        kind = ("out-" if out else "") + ("dir" if is_dir else "file")
        return kind, _form(action, words, is_dir)
    if action.type is Path:
        if dest_words & {"OUTPUT", "OUT"}:  # --github-output: appended to
            return "out-file", ""
        return None
    if words and words <= VALUE_WORDS:
        return NOT_PATH
    if not words and dest_words & VALUE_DEST_WORDS:
        return NOT_PATH
    return None


def _form(action: Any, words: set[str], is_dir: bool) -> str:
    if action.dest in FORMS:
        return FORMS[action.dest]
    if is_dir:
        for word, form in (("PAIR", "pair"), ("BATCH", "batch"), ("CALDIR", "caldir"), ("STORE", "store"),
                           ("RUN", "run"), ("RECORD", "run")):
            if word in words:
                return form
        return "any"
    for word, form in (("JSON", "json"), ("YAML", "yaml"), ("J2", "text"), ("PY", "exe"), ("CALIBRATION", "json")):
        if word in words:
            return form
    return "text"


@dataclass(frozen=True)
class PathArg:
    entry: Entry
    action: Any
    kind: str
    form: str

    @property
    def option(self) -> str:
        return option_name(self.action)

    @property
    def id(self) -> str:
        return f"{self.entry.name.replace('tritongate ', 'tg-').replace(' ', '-')}:{self.option}"


def path_args() -> list[PathArg]:
    found = []
    for entry in all_entries():
        for action in entry.actions():
            got = classify(entry, action)
            if isinstance(got, tuple):
                found.append(PathArg(entry, action, *got))
    return found


# =============================================================================================
# 2. the input classes
# =============================================================================================

@dataclass(frozen=True)
class Bad:
    """An input class: ``make(world, path)`` turns ``path`` into the bad input (and may return
    another path to pass); ``named``: words one of which the error line must hold."""
    name: str
    make: Callable[["World", Path], Path | None]
    slow: bool = False


def _file(content: bytes) -> Callable[["World", Path], None]:
    def make(w: "World", p: Path) -> None:
        p.write_bytes(content)
    return make


def _link_to(target: Callable[["World"], Path]) -> Callable[["World", Path], None]:
    def make(w: "World", p: Path) -> None:
        p.symlink_to(target(w))
    return make


def _loop(w: "World", p: Path) -> None:
    other = p.with_name(p.name + ".loop")
    other.symlink_to(p)
    p.symlink_to(other)


def _oversized(w: "World", p: Path) -> None:
    os.link(w.oversized, p)  # one 64 MiB file, a new name for each case


def _under_a_file(w: "World", p: Path) -> Path:
    p.write_text("a file, not a directory\n")
    return p / "inside"


NOT_UTF8 = b"\xff\xfe\x00not \x80utf-8\xc3\x28\n"
DEEP = b"[" * 100_000

CONTENT = [Bad("empty", _file(b"")), Bad("not-utf8", _file(NOT_UTF8)),
           Bad("oversized", _oversized, slow=True)]
JSON_TYPES = [Bad("json-list", _file(b"[]")), Bad("json-string", _file(b'"x"')), Bad("json-number", _file(b"42")),
              Bad("json-deep", _file(DEEP))]
FILE_CLASSES = [Bad("missing", lambda w, p: None), Bad("a-directory", lambda w, p: p.mkdir()),
                Bad("link-passwd", _link_to(lambda w: PASSWD)), Bad("link-loop", _loop), *CONTENT]
DIR_CLASSES = [Bad("missing", lambda w, p: None), Bad("a-file", _file(b"not a directory\n")),
               Bad("link-passwd", _link_to(lambda w: PASSWD)), Bad("link-loop", _loop),
               Bad("empty-dir", lambda w, p: p.mkdir())]
# outputs: never a link to a real system file (these run as root); a decoy stands for it
OUT_FILE_CLASSES = [Bad("a-directory", lambda w, p: p.mkdir()), Bad("link-loop", _loop),
                    Bad("under-a-file", _under_a_file)]
OUT_DIR_CLASSES = [Bad("a-file", _file(b"not a directory\n")), Bad("link-to-a-file", _link_to(lambda w: w.decoy)),
                   Bad("link-loop", _loop), Bad("under-a-file", _under_a_file)]
MEMBER_CLASSES = [Bad("empty", _file(b"")), Bad("not-utf8", _file(NOT_UTF8)), *JSON_TYPES,
                  Bad("link-passwd", _link_to(lambda w: PASSWD)), Bad("a-directory", lambda w, p: p.mkdir()),
                  Bad("oversized", _oversized, slow=True)]

# the files in a directory of each form that a command reads (damaged one at a time)
MEMBERS = {"run": ("results.json", "run_identity.json"), "ir": ("ttgir/index.tsv",), "verdict": ("verdict.json",), "entry": ("manifest.json",),
           "store": ("{entry}/manifest.json",), "pair": ("base/results.json", "candidate/run_identity.json"),
           "batch": ("batch.json",)}
# documented acceptances: (form or dest, class) -> the exit codes that are right besides 2 and 3
ACCEPTED: dict[tuple[str, str], set[int]] = {
    # baselines/README.md: a store that is missing or empty is state=missing (exit 0), and a damaged
    # entry is skipped with a note on stderr: the job records a fresh baseline
    ("store", "missing"): {0}, ("store", "empty-dir"): {0},
    **{("store", f"member-{b.name}"): {0} for b in MEMBER_CLASSES},
    # gate/policy.py: an empty policy file sets nothing: the defaults
    ("policy", "empty"): {0, 1},
    # a file the user names may be a link (safefs: "the root itself ... may be a link"), and any
    # text is a jinja2 template: /etc/passwd's too (see the report: the verdict then shows it)
    ("verdict_template", "link-passwd"): {0, 1},
    # an output written by an atomic rename replaces a dangling link; it writes through nothing
    ("out-file", "link-loop"): {0},
}


@dataclass(frozen=True)
class Case:
    arg: PathArg
    bad: Bad
    member: str | None = None  # the file inside a directory argument that is damaged

    @property
    def cls(self) -> str:
        return f"member-{self.bad.name}" if self.member else self.bad.name

    @property
    def id(self) -> str:
        where = f"[{self.member.replace('{entry}/', '')}]" if self.member else ""
        return f"{self.arg.id}{where}:{self.bad.name}"


def cases_of(arg: PathArg) -> list[Case]:
    if arg.kind == "file":
        extra = JSON_TYPES if arg.form in ("json", "yaml") else []
        return [Case(arg, b) for b in (*FILE_CLASSES, *extra)]
    if arg.kind == "out-file":
        return [Case(arg, b) for b in OUT_FILE_CLASSES]
    if arg.kind == "out-dir":
        return [Case(arg, b) for b in OUT_DIR_CLASSES]
    return [Case(arg, b) for b in DIR_CLASSES] + [Case(arg, b, m) for m in MEMBERS.get(arg.form, ())
                                                  for b in MEMBER_CLASSES]


def all_cases() -> list[Case]:
    return [c for arg in path_args() for c in cases_of(arg)]


def _param(case: Case) -> Any:
    return pytest.param(case, id=case.id, marks=[pytest.mark.slow] if case.bad.slow else [])


# =============================================================================================
# 3. the valid inputs every case starts from
# =============================================================================================

SUITE = "ops: {add: {dtypes: [float32]}}\nshapes: shapes.yaml\n"
SHAPES = "add: {shapes: [[16]]}\n"
SHA = "a" * 40


@dataclass
class World:
    root: Path
    suite: Path
    record: Path                 # a real cpu record of the suite (autotune records, ttgir/index.tsv)
    replay: Path                 # a real replay of it
    verdict: Path                # gate record replay
    store: Path
    entry: Path                  # the record published into the store
    pair: Path                   # a pair directory (shard 1/1, scripted workers)
    batch: Path                  # a batch directory (fake ops)
    merge_group_event: Path
    decoy: Path
    oversized: Path
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def entry_rel(self) -> str:
        return self.entry.relative_to(self.store).as_posix()


def _call(argv: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = tritongate_main(argv)
    assert rc == 0 or (argv[0] == "gate" and rc == 1), f"{argv}: exit {rc}\n{err.getvalue()}"
    return out.getvalue()


def _pair_dir(root: Path) -> Path:
    from tritongate.pair.build import CompilerBuild
    from tritongate.pair.orchestrator import PairRequest, run_pair

    from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World as PairWorld

    def spawn(spec: Any) -> Any:
        return InProcessWorker(spec.side, lambda settings, spec=spec: ScriptedExecutor(
            settings, world=PairWorld(), env=spec.env, side=spec.side))

    request = PairRequest(baseline=root / "no-baseline", suite="scripted", out=root / "pairs",
                          base=CompilerBuild("base"), cand=CompilerBuild("candidate"),
                          executor="tests.pair.fakes:ScriptedExecutor", shard=(1, 1))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return run_pair(request, spawn=spawn).path


def _batch_dir(root: Path) -> Path:
    from tritongate.batch import BatchRequest, run_batch

    from tests.batch.fake_ops import fake_command, write_suite

    suite = write_suite(root / "fake.yaml", {"ok_a": ["float32"]})
    return run_batch(BatchRequest(suite=str(suite), out=root / "batches",
                                  command=fake_command(root / "batch-state"))).path


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("world")
    (root / "shapes.yaml").write_text(SHAPES)
    suite = root / "suite.yaml"
    suite.write_text(SUITE)
    with _quiet_env(root):
        record = Path(_call(["run", "--suite", str(suite), "--backend", "cpu", "--out", str(root / "runs"),
                             "--color", "never"]).splitlines()[-1])
        replay = Path(_call(["run", "--suite", str(suite), "--backend", "cpu", "--out", str(root / "runs"),
                             "--color", "never", "--replay-from", str(record)]).splitlines()[-1])
        _call(["gate", str(record), str(replay), "--out", str(root / "verdict")])
        published = _call(["baseline", "publish", str(record), "--store", str(root / "store"), "--runner-class", "cpu",
                           "--compiler-repo", "o/n"])
        entry = Path(published.splitlines()[-1].removeprefix("baseline: "))
        pair, batch = _pair_dir(root), _batch_dir(root)
    event = root / "merge_group.json"
    event.write_text(json.dumps({"merge_group": {"base_sha": "b" * 40, "head_sha": "c" * 40}}))
    decoy = root / "decoy.txt"
    decoy.write_text("a file that must not change\n")
    big = root / "oversized"
    with big.open("wb") as f:
        chunk = b"a" * (1 << 20)
        for _ in range(OVERSIZED >> 20):
            f.write(chunk)
    w = World(root=root, suite=suite, record=record, replay=replay, verdict=root / "verdict", store=root / "store",
              entry=entry, pair=pair, batch=batch, merge_group_event=event, decoy=decoy, oversized=big)
    w.digests = {str(p): _digest(p) for p in (decoy, PASSWD)}
    yield w


@contextlib.contextmanager
def _quiet_env(tmp: Path) -> Iterator[None]:
    saved = dict(os.environ)
    for var in list(os.environ):
        if var.startswith(("TRITONGATE_", "GITHUB_", "TG_", "ZL_")) or var in (
                "NO_COLOR", "FLAGGEMS_DB_URL", "TRITON_DISABLE_LINE_INFO"):
            os.environ.pop(var)
    os.environ["TRITONGATE_LOG_DIR"] = str(tmp)
    os.environ["GITHUB_API_URL"] = "https://127.0.0.1:9"  # no network: a refused connection
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


# -- filling an entry point's other arguments ------------------------------------------------

PY = sys.executable
# the required arguments that are not paths, by dest
DUMMY = {"runner_class": "cpu", "gpu": "host", "repo": "o/n", "head_sha": SHA, "event_name": "push", "aa_exit": "0",
         "entry": "{entry_rel}", "suite": "{suite}"}
# options an entry point needs besides its required ones, for the bad input to be what is tested
# (a backend that needs no GPU, a build named, an API call skipped); "{...}" are world fields
EXTRAS: dict[str, dict[str, str | None]] = {
    "tritongate run": {"--backend": "cpu", "--color": "never"},
    "tritongate pair": {"--backend": "cpu", "--color": "never", "--suite": "{suite}"},
    "tritongate loop": {"--backend": "cpu", "--color": "never", "--suite": "{suite}"},
    "tritongate calibrate": {"--backend": "cpu", "--color": "never", "--suite": "{suite}", "--baseline": "{record}"},
    "tritongate batch": {"--backend": "cpu", "--suite": "{suite}"},
    "tritongate ops": {"--suite": "{suite}"},
    "tritongate baseline find": {"--store": "{store}"},
    "tritongate baseline list": {"--store": "{store}"},
    "tritongate history": {"--no-plots": None},
    "ci/find_baseline.py": {"--store": "{store}", "--compiler-repo": "o/n"},
    "ci/replay_candidate.py": {"--backend": "cpu", "--color": "never", "--suite": "{suite}", "--base-python": PY,
                               "--cand-python": PY},
    "ci/record_baseline.py": {"--backend": "cpu", "--color": "never"},
    "ci/post_comment.py": {"--pr": "1", "--dry-run": None},
    # both builds named (the full pre-screen; --side/--judge need fewer)
    "ci/prescreen.py": {"--suite": "{suite}", "--base-python": PY, "--cand-python": PY},
    "tritongate prescreen": {"--suite": "{suite}", "--base-python": PY, "--cand-python": PY},
    "ci/resolve_refs.py": {"--event-name": "merge_group", "--event-path": "{merge_group_event}", "--sha": SHA},
}
# (entry point, option under test) -> its extras instead: what that option needs to be read at all
EXTRAS_FOR = {
    ("ci/resolve_refs.py", "--merge-checkout"): {"--event-name": "pull_request", "--sha": SHA},  # the event reading it
    ("ci/record_baseline.py", "--publish"): {"--backend": "cpu", "--color": "never", "--runner-class": "cpu"},
}


def measures(entry: Entry) -> bool:
    """It measures (it takes --rounds) in this process or its own: its --out is the backstop."""
    return any("--rounds" in a.option_strings for a in entry.actions()) and not pairs(entry)


def pairs(entry: Entry) -> bool:
    """It runs paired workers (it takes --row-timeout): they are its backstop (``checking_workers``)."""
    return any("--row-timeout" in a.option_strings for a in entry.actions())


def valid_value(w: World, tmp: Path, arg: PathArg) -> str:
    """A valid value for a path argument that is not the one under test."""
    dest = arg.action.dest
    if arg.kind == "out-dir":
        if measures(arg.entry):
            backstop = tmp / "out-is-a-file"
            backstop.write_text("the backstop: see the module docstring\n")
            return str(backstop)
        return str(tmp / f"out-{dest}")
    if arg.kind == "out-file":
        return str(tmp / f"out-{dest}.txt")
    if arg.form == "run":
        return str(w.replay if dest == "cand" else w.record)
    by_form = {"yaml": w.suite, "exe": Path(PY), "verdict": w.verdict, "entry": w.entry, "store": w.store,
               "pair": w.pair, "batch": w.batch, "ir": w.replay if dest == "cand" else w.record}
    if dest == "verdict":
        return str(w.verdict / "verdict.json")
    if dest == "patch":
        return str(ROOT / "bench" / "patches" / "drop-coalesce.patch")
    if arg.form in by_form:
        return str(by_form[arg.form])
    raise AssertionError(f"{arg.entry.name} {arg.option}: no valid value for a required {arg.kind} of form "
                         f"{arg.form!r}: add one to valid_value")


def build_argv(w: World, tmp: Path, case: Case) -> tuple[list[str], Path]:
    """The entry point's argv with the bad input in place; the path that should be named."""
    bad_arg = case.arg
    entry = bad_arg.entry
    name = f"bad_{bad_arg.action.dest}"
    target = tmp / name
    if case.member:  # a copy of the valid directory, one member damaged
        src = Path(valid_value(w, tmp, bad_arg))
        shutil.copytree(src, target, symlinks=True)
        member = target / case.member.format(entry=w.entry_rel)
        if member.is_dir() and not member.is_symlink():
            shutil.rmtree(member)
        elif member.exists() or member.is_symlink():
            member.unlink()
        case.bad.make(w, member)
        value, named = target, target
    else:
        made = case.bad.make(w, target)
        value, named = (made or target), target
    fields = {**vars(w), "entry_rel": w.entry_rel}
    chosen = EXTRAS_FOR.get((entry.name, bad_arg.option), EXTRAS.get(entry.name, {}))
    extras = {k: (v.format(**fields) if isinstance(v, str) else v) for k, v in chosen.items()}
    positional: list[str] = []
    options: list[str] = []
    for action in entry.actions():
        opt = option_name(action)
        if action is bad_arg.action:
            (options if action.option_strings else positional).extend(
                [opt, str(value)] if action.option_strings else [str(value)])
            continue
        if opt in extras:
            continue
        got = classify(entry, action)
        is_out_dir = isinstance(got, tuple) and got[0] == "out-dir" and action.dest == "out"
        if not (action.required or not action.option_strings or is_out_dir):
            continue
        if isinstance(got, tuple):
            v = valid_value(w, tmp, PathArg(entry, action, *got))
        elif action.dest in DUMMY:
            v = DUMMY[action.dest].format(**fields)
        else:
            raise AssertionError(f"{entry.name}: no dummy value for the required {opt}: add one to DUMMY")
        if action.option_strings:
            options += [opt, v]
        else:
            positional.append(v)
    for opt, v in extras.items():
        if opt != bad_arg.option:
            options += [opt] if v is None else [opt, v]
    return positional + options, named


# =============================================================================================
# 4. the checks
# =============================================================================================

MARKER = re.compile(r"^!!! PREFLIGHT_FAILED check=(\w+)$")
# stderr lines that are not the error: progress, notes and the partial-run note (documented output)
PROGRESS = re.compile(r"^(\d/2 (record|pair): |(measuring|pairing) \d+ rows? into |\[\d+/\d+\] |note: |record: |"
                      r"partial run directory \(loads as incomplete\): |batch )")
MAX_LINE = 2_300


ACCEPTED_RC = -1  # what a case reports when a paired run reached its first row


class Accepted(BaseException):
    """A paired run passed every check and reached its first row (``checking_workers``)."""


def checking_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Paired runs (pair, loop, calibrate) get workers in this process that make the checks a real
    worker makes before its first row (``tritongate.pair.executor.TritonExecutor``: the suite and
    shape file, the record's autotune records), then raise ``Accepted`` at the first row instead of
    measuring: the workers are the backstop of a paired run, as --out is of ``run``."""
    from tritongate.autotune.records import load_records
    from tritongate.pair import executor, orchestrator

    from tests.pair.fakes import InProcessWorker, ScriptedExecutor, World as PairWorld

    class Checking(ScriptedExecutor):
        def __init__(self, settings: dict[str, Any], **kw: Any) -> None:
            super().__init__(settings, **kw)
            if settings.get("suite"):
                executor._suite_registry(settings["suite"], settings.get("shape_file"))
            backend = settings["backend"] if settings["backend"] != "auto" else "cpu"
            load_records(Path(settings["replay_from"]), backend=backend)

        def plan(self, suite: str, shape_file: str | None = None, **kw: Any) -> dict[str, Any]:
            executor._suite_registry(suite, shape_file)
            return super().plan(suite, **kw)

        def prepare(self, *args: Any, **kw: Any) -> dict[str, Any]:
            raise Accepted("the paired run reached its first row")

    real = orchestrator.run_pair

    def run_pair(request: Any, progress: Any = None, **_: Any) -> Any:
        return real(request, progress, spawn=lambda spec: InProcessWorker(spec.side, lambda settings, spec=spec: Checking(
            settings, world=PairWorld(), env=spec.env, side=spec.side)))
    monkeypatch.setattr(orchestrator, "run_pair", run_pair)


class CaseTimeout(BaseException):
    """A case ran past CASE_TIMEOUT_S: the bad input was accepted and something was measured."""


@contextlib.contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"still running after {seconds} s: the bad input was accepted?")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def accepted(case: Case) -> set[int]:
    keys = [(case.arg.form, case.cls), (case.arg.action.dest, case.cls), (case.arg.kind, case.cls)]
    return set().union(*(ACCEPTED.get(k, set()) for k in keys))


def assert_refused(case: Case, rc: int, out: str, err: str, named: Path) -> None:
    where = f"{case.id}: exit {rc}\n--- stderr ---\n{err[-2500:]}\n--- stdout ---\n{out[-1000:]}"
    assert "Traceback" not in out and "Traceback" not in err, f"a traceback\n{where}"
    if rc == ACCEPTED_RC:
        assert accepted(case), f"accepted: a paired run got past every check to its first row\n{where}"
        return
    allowed = {2, 3} | accepted(case)
    assert rc in allowed, f"exit {rc}, expected one of {sorted(allowed)}\n{where}"
    if rc in accepted(case):
        return  # a documented acceptance (ACCEPTED)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    markers = [m.group(1) for m in map(MARKER.match, lines) if m]
    if rc == 3:
        assert len(markers) == 1, f"exit 3 needs one `!!! PREFLIGHT_FAILED check=` line\n{where}"
        if markers[0] == "out_dir" and case.arg.kind != "out-dir" and not accepted(case):
            raise AssertionError(f"accepted: the bad {case.arg.option} got as far as the --out backstop\n{where}")
    else:
        assert not markers, where
    rest = [ln for ln in lines if not MARKER.match(ln) and not PROGRESS.match(ln)]
    assert len(rest) == 1, f"expected ONE error line on stderr, got {len(rest)}\n{where}"
    line = rest[0]
    assert line.startswith("error: "), f"not an `error: ` line\n{where}"
    assert len(line) <= MAX_LINE, f"unbounded message: {len(line)} characters\n{where}"
    names = {named.name, case.arg.option, case.arg.action.metavar or case.arg.option}
    if case.bad.name == "link-passwd":  # a message may name the file the link leads to
        names.add(str(PASSWD))
    if case.member:
        names.add(Path(case.member).name)
    assert any(n and n in line for n in names), f"the error does not name the input ({sorted(map(str, names))})\n{where}"


# =============================================================================================
# 5. the tests
# =============================================================================================

def test_entry_points_are_found_by_construction():
    names = {e.name for e in all_entries()}
    scripts = {f"ci/{p.name}" for p in CI.glob("*.py")}
    assert {n for n in names if n.startswith("ci/")} == scripts, "a ci/*.py script without a __main__ block?"
    assert {"tritongate run", "tritongate gate", "tritongate pair", "tritongate baseline find",
            "tritongate history"} <= names
    for e in all_entries():
        assert e.parsers or e.extra, f"{e.name}: no argument parser seen while it parsed --help"


def test_every_argument_is_classified():
    """A new entry point or option the helper cannot classify fails here: classify it by its
    metavar (DIR, FILE, YAML, JSON, ...; or type=Path), or list it in OVERRIDES."""
    unknown = [f"{e.name} {option_name(a)} (metavar {a.metavar!r}, dest {a.dest!r})"
               for e in all_entries() for a in e.actions() if classify(e, a) is None]
    assert not unknown, "arguments the helper cannot classify:\n  " + "\n  ".join(unknown)
    stale = [k for k in OVERRIDES if not any(e.name == k[0] and any(option_name(a) == k[1] for a in e.actions())
                                             for e in all_entries())]
    assert not stale, f"OVERRIDES lists arguments that no longer exist: {stale}"


CASES = all_cases()


def test_the_classes_cover_every_path_argument():
    args = path_args()
    assert len(args) >= 100 and {a.kind for a in args} == {"file", "dir", "out-file", "out-dir"}
    per_arg = {a.id: sum(1 for c in CASES if c.arg == a) for a in args}
    assert min(per_arg.values()) >= 3, per_arg


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_path_input_is_refused_in_one_line(case: Case, world: World, tmp_path: Path, capfd, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with _quiet_env(tmp_path / "logs"):
        (tmp_path / "logs").mkdir()
        argv, named = build_argv(world, tmp_path, case)
        capfd.readouterr()
        checking_workers(monkeypatch)
        try:
            with time_limit(CASE_TIMEOUT_S):
                rc = invoke(case.arg.entry, argv)
        except Accepted:
            rc = ACCEPTED_RC
        out, err = capfd.readouterr()
    assert_refused(case, rc, out, err, named)
    for path, digest in world.digests.items():
        assert _digest(Path(path)) == digest, f"{case.id}: {path} was written through a link"
