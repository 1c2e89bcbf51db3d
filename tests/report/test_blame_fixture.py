"""The committed pass blame of a real Triton change (``golden/blame/``) is what
``tritongate ir-diff --blame`` gives today: both builds made and compiled again (about a minute)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tests.report.blame_fixture import FIXTURE, produce

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

STABLE = ("case", "kernel", "variant", "kind", "pass_name", "stage", "next_pass", "added", "removed", "first_level",
          "levels", "passes_base", "passes_cand")


def _blame(folder: Path) -> list[dict]:
    doc = json.loads((folder / "blame.json").read_text(encoding="utf-8"))
    assert doc["schema_version"] == 1 and doc["target"] == "cuda:90"
    return [{k: v.get(k) for k in STABLE} for v in doc["variants"]]


def _index(folder: Path) -> list[tuple[str, ...]]:
    with open(folder / "index.tsv", encoding="utf-8", newline="") as f:
        return [(r["case"], r["kernel"], r["name"], r["status"], r["rows"]) for r in csv.DictReader(f, delimiter="\t")]


def test_the_committed_blame_is_what_ir_diff_blame_gives_today(tmp_path: Path) -> None:
    out = produce(tmp_path / "work")
    assert _index(out) == _index(FIXTURE), "remake it: python -m tests.report.blame_fixture"
    assert _blame(out) == _blame(FIXTURE), "remake it: python -m tests.report.blame_fixture"
    assert {v["pass_name"] for v in _blame(out)} == {"tritongpu-coalesce"}
