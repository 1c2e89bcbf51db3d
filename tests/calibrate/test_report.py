"""calibration.md and calibration.png."""

from __future__ import annotations

from tritongate.calibrate.report import plot, render

from tests.model.test_calibration import cal, row


def test_the_table_escapes_names_from_user_ops_and_marks_catches():
    c = cal([row("evil|<img src=x onerror=alert(1)>", 20.0, {"0.01": False, "0.02": True, "0.05": True})])
    text = render(c)
    assert "<img" not in text and ("evil&#124;" in text or "evil\\|" in text)
    assert "| 10–100 µs | 1 | 0/1 (0%) | 1/1 (100%) | 1/1 (100%) |" in text
    assert "✅ 2% caught on ≥ 95% of rows ≥ 10 µs: 1 of 1 (100%)" in text


def test_the_plot_is_a_png_and_is_skipped_without_detectable_effects(tmp_path):
    c = cal([row("a", 2.0, {"0.02": True}), row("b", 200.0, {"0.02": False})])
    assert plot(c, tmp_path / "c.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    none = cal([])
    assert plot(none, tmp_path / "none.png") is None and not (tmp_path / "none.png").exists()
