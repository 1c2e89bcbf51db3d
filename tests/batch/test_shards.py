"""What part of a suite a merge of op runs covers (``batch.shards._merged_selection``), from
wherever the merge is run."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from tests.conftest import write_suite
from tritongate.batch.shards import _merged_selection
from tritongate.suites import load_suite


def test_a_suite_named_by_a_relative_path_is_read_again_from_another_folder(tmp_path: Path, monkeypatch) -> None:
    # batch --suite suite/b2.yaml in one folder, batch-merge from another: the identity kept the
    # relative path, the merge could not read the suite again and called the whole suite "part"
    # of it, which baseline publish then refused
    (tmp_path / "suite").mkdir()
    write_suite(tmp_path / "suite", "shapes: shapes.yaml\ndtypes: [float32]\nops: {add: {}, softmax: {}}\n",
                "add: {shapes: [[16]]}\nsoftmax: {shapes: [[4, 8]]}\n")
    monkeypatch.chdir(tmp_path)
    suite = load_suite("suite/s.yaml")
    assert suite.path.is_absolute()
    identity = {"suite": {"name": suite.name, "path": str(suite.path), "digest": suite.digest}}
    runs = [(SimpleNamespace(op=op), SimpleNamespace(identity={"selection": {"ops": [op]}}, rows=[1]))
            for op in ("add", "softmax")]
    monkeypatch.chdir(tmp_path.parent)
    assert _merged_selection(identity, runs) is None  # the whole suite
    assert _merged_selection(identity, runs[:1]) == {"ops": ["add"], "dtypes": [], "rows": 1}
