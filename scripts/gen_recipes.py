#!/usr/bin/env python3
"""The adoption recipes examples/same-org/*.yml and examples/cross-org/*.yml, generated from
one jinja2 template per workflow file (examples/templates/<file>.j2), so that the two recipes
cannot drift apart and every `uses:` of tritongate takes its pin from the same two values.

    python scripts/gen_recipes.py           # (re)write the recipes that differ
    python scripts/gen_recipes.py --check   # exit 1 naming the recipes that differ

The templates see `recipe` ("same-org" or "cross-org"), `same_org` and `cross_org` (booleans),
the pin (`tritongate`, `sha`, `version`) and the example settings below. GitHub's `${{ }}`
passes through untouched: template variables are written `<< name >>`, statements
`{% ... %}`. tests/workflows/test_recipes.py runs the check and compares the two recipes."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = "examples"
TEMPLATES = "examples/templates"
RECIPES = ("same-org", "cross-org")

# The one place the pin is written: every `uses:` of tritongate in both recipes is
# `<< tritongate >>/<path>@<< sha >> # << version >>` (examples/README.md: replace both).
PIN = {
    "tritongate": "tritongate-org/tritongate",
    "sha": "0123456789abcdef0123456789abcdef01234567",
    "version": "v0.1.0",
}

# An adopter's settings, the same in both recipes.
SETTINGS = {
    "runner_labels": ["self-hosted", "linux", "x64", "h200"],  # the GPU runner
    "prescreen_runner_labels": ["ubuntu-latest"],  # the pre-screen's CPU runner
    "runner_class": "acme-h200",
    "gpu": "NVIDIA H200",
    "suite": "pr",
    "python": "/opt/torch/bin/python",  # the GPU runner's interpreter, with a CUDA torch
    "prescreen_python": "python3",  # the CPU runner's interpreter
    "compiler_ref": "main",  # what the nightly records
}


def _runs_on(labels: list[str]) -> str:
    """A `runs-on:` value in flow style: one label plain, several as a list."""
    return labels[0] if len(labels) == 1 else "[" + ", ".join(labels) + "]"


def _json_list(labels: list[str]) -> str:
    """A JSON list of labels for a reusable workflow's string input, single-quoted for YAML."""
    return "'[" + ", ".join(f'"{label}"' for label in labels) + "]'"


def environment(root: Path = ROOT) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root / TEMPLATES)),
        variable_start_string="<<", variable_end_string=">>",
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True,
        autoescape=False,
    )
    env.filters.update(runs_on=_runs_on, json_list=_json_list)
    return env


def workflows(root: Path = ROOT) -> list[str]:
    """The workflow file names there are templates for (perf-gate.yml, ...)."""
    return sorted(p.name.removesuffix(".j2") for p in (root / TEMPLATES).glob("*.yml.j2"))


def render(recipe: str, workflow: str, root: Path = ROOT) -> str:
    if recipe not in RECIPES:
        raise ValueError(f"recipe {recipe!r}: one of {', '.join(RECIPES)}")
    text = environment(root).get_template(f"{workflow}.j2").render(
        recipe=recipe, same_org=recipe == "same-org", cross_org=recipe == "cross-org", **PIN, **SETTINGS)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{recipe}/{workflow}: the template renders invalid YAML: {exc}") from exc
    if not isinstance(doc, dict) or "jobs" not in doc:
        raise ValueError(f"{recipe}/{workflow}: the template renders no workflow")
    return text


def expected(root: Path = ROOT) -> dict[str, str]:
    """Repository-relative path -> the text the templates produce for it."""
    return {f"{EXAMPLES}/{recipe}/{workflow}": render(recipe, workflow, root)
            for recipe in RECIPES for workflow in workflows(root)}


def stale(root: Path = ROOT) -> list[str]:
    """The recipe files that differ from the templates' output, are missing, or have no template."""
    want = expected(root)
    out = [rel for rel, text in want.items()
           if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text]
    extra = [p.relative_to(root).as_posix() for recipe in RECIPES for p in (root / EXAMPLES / recipe).glob("*.yml")]
    return sorted(out + [rel for rel in extra if rel not in want])


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:  # remove the half-written file, then re-raise whatever it was
        Path(tmp).unlink(missing_ok=True)
        raise


def write(root: Path = ROOT) -> list[str]:
    """Write every recipe that differs (all rendered first, so a broken template writes none)."""
    want = expected(root)
    changed = [rel for rel, text in want.items()
               if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text]
    for rel in changed:
        _write_atomic(root / rel, want[rel])
    return changed


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a committed recipe differs")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale(root)
        for rel in bad:
            print(f"stale: {rel}", file=sys.stderr)
        if bad:
            print("edit examples/templates/, then run: python scripts/gen_recipes.py", file=sys.stderr)
            return 1
        print(f"recipes up to date ({len(expected(root))} files)")
        return 0
    for rel in write(root):
        print(f"wrote {rel}")
    want = expected(root)
    extra = [rel for rel in stale(root) if rel not in want]
    for rel in extra:
        print(f"no template for {rel}: remove it or add examples/templates/{Path(rel).name}.j2", file=sys.stderr)
    return 1 if extra else 0


if __name__ == "__main__":
    sys.exit(main())
