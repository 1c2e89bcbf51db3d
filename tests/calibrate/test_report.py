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


def test_a_calibration_on_the_interpreter_says_what_its_plant_and_rates_are():
    # every size "not plantable", both goals MISSED, exit 0: a new user could not tell that the
    # interpreter's plant is a host busy-wait and its rates nothing a GPU runner uses
    from dataclasses import replace

    gpu = cal([row("a", 20.0, {"0.02": True})])
    assert "On the Triton interpreter" not in render(gpu)
    interp = replace(gpu, runner={**gpu.runner, "timer": "host-wall", "gpus": ["host:vm"]})
    text = render(interp)
    assert "⚠️ **On the Triton interpreter** (timer host-wall): the plant is a busy-wait on the host" in text
    assert "Every step on one host (host:vm)." in text and "one GPU" not in text
