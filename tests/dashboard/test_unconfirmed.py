"""A row without a confirmed change point has no measured drift: the pages say why (no shift
confirmed yet, or too few nights to look), never "0.0 %"."""

from __future__ import annotations

import pytest

from tritongate.dashboard import build_site

from tests.dashboard.test_browser import CHROMIUM, Dom, chromium
from tests.dashboard.test_site import doc_of
from tests.gate.helpers import row
from tests.history.helpers import T0, DAY, publish_nights

NOW = T0 + 30 * DAY
NIGHTS = 24


def _night(i: int) -> list:
    return [row(median=20.0 * (1.08 if i >= 14 else 1.0), seed=i),  # confirmed: 10 nights after
            row(case="recent", median=10.0 * (1.5 if i >= NIGHTS - 2 else 1.0), seed=50 + i)]  # 2 nights after


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unconfirmed")
    store = tmp / "store"
    publish_nights(store, tmp / "runs", [_night(i) for i in range(NIGHTS)])
    publish_nights(store, tmp / "short", [[row(op="young", median=3.0, seed=i)] for i in range(NIGHTS - 4, NIGHTS)],
                   device="NVIDIA H100")
    build_site(store, tmp / "site", now=NOW)
    return tmp, tmp / "site"


def _rows(out):
    return {(r["op"], r["case"]): r for r in doc_of(out / "index.html")["rows"]}


def test_a_step_too_recent_to_confirm_has_no_drift_figure(site):
    rows = _rows(site[1])
    step, recent, young = rows[("softmax", "4096x4096")], rows[("softmax", "recent")], rows[("young", "4096x4096")]
    assert step["nc"] == 1 and 0.07 < step["dt"] < 0.09 and step["dw"] == step["dt"]
    assert recent["last"] > 14 and recent["nc"] == 0
    assert recent["dw"] is None and recent["dt"] is None  # was 0.0: a measured "no drift"
    assert "no shift confirmed" in recent["dn"] and "9 and 3" in recent["dn"]
    assert young["dw"] is None and young["dt"] is None and "too few nights" in young["dn"]
    (page,) = [p for p in (site[1] / "ops").glob("*softmax.html")]
    (shown,) = [r for r in doc_of(page)["rows"] if r["case"] == "recent"]
    assert shown["drift"] is None and shown["dw"] is None and "no shift confirmed" in shown["dn"]


def test_a_change_older_than_the_window_is_no_drift_in_the_window(tmp_path, site):
    out = tmp_path / "site"
    build_site(site[0] / "store", out, gpu="nvidia-h200", window_nights=5, now=NOW)
    step = _rows(out)[("softmax", "4096x4096")]
    assert step["nw"] == 0 and step["dw"] is None and step["dt"] > 0.07
    assert "in the window" in step["dwn"]


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_the_pages_say_no_shift_confirmed_not_zero_drift(site):
    tmp, out = site
    html = chromium(tmp, "--dump-dom", (out / "index.html").as_uri())
    dom = Dom(html)
    cells = ["".join(x) for t, _, x in dom.elements if t == "td"]
    assert {"no shift confirmed so far", "too few nights"} <= set(cells) and "0.0 %" not in cells
    (page,) = [p for p in (out / "ops").glob("*softmax.html")]
    meta = ["".join(x) for t, a, x in Dom(chromium(tmp, "--dump-dom", page.as_uri())).elements
            if t == "p" and a.get("class") == "meta" and "latest" in "".join(x)]
    assert len(meta) == 2 and not any("0.0 %" in m for m in meta)
    assert "drift over the window +8." in meta[0] and "drift: no shift confirmed so far" in meta[1]
