"""One PNG per op, names from the store kept as plain text and safe file names."""

from __future__ import annotations

import pytest

from tritongate.history.changepoints import Detection
from tritongate.history.plot import file_name, label, plot_history
from tritongate.history.report import build_report

from tests.history.helpers import noisy, series
from tests.history.test_report import history_of

PNG = b"\x89PNG\r\n\x1a\n"


def test_one_valid_png_per_op_with_gaps_missing_nights_and_change_points(tmp_path):
    values = noisy([1.0] * 8 + [1.06] * 8, 0.004, seed=0)
    values[3] = None
    step = series(values, op="soft$max$_{x}", case="4096x4096", skip_nights=[5])
    other = series(noisy([1.0] * 16, 0.004, seed=1), op="soft$max$_{x}", case="1024x1024", skip_nights=[5])
    tiny = series([None, 3.0, 3.1], op="add", case="n=16", dtype="float32")
    report = build_report(history_of(step, other, tiny), Detection())
    assert report.change_points and report.history.missing
    written = plot_history(report, tmp_path / "plots")
    assert set(written) == {"soft$max$_{x}", "add"}
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["add.png", "soft-max-_-x.png"]
    for path in written.values():
        data = path.read_bytes()
        assert data[:8] == PNG and len(data) > 5_000


def test_labels_are_plain_text():
    assert label("a$b$") == r"a\$b\$"  # mathtext would parse $...$
    assert label("x\u202ey\nz") == "x\\u202ey z"
    assert len(label("x" * 500)) == 60


@pytest.mark.parametrize("ops,names", [
    (["softmax", "Softmax", "softmax"], ["softmax.png", "Softmax-2.png", "softmax-3.png"]),
    (["../../etc/passwd", "..", "a b/c"], ["etc-passwd.png", "op.png", "a-b-c.png"]),
])
def test_file_names_are_safe_and_unique(ops, names):
    taken: set[str] = set()
    assert [file_name(op, taken) for op in ops] == names
