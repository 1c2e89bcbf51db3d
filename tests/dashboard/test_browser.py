"""The site in a real browser: Debian's headless Chromium loads the pages from ``file://`` (no
server, no Node), and the DOM it dumps after the scripts ran is checked: no JS error, the index's
rows, one uPlot chart (with its canvas) per row, the planted step's change point at its night,
a hostile op name as text and never as an element, a pinned point's link to its store entry.

With ``TRITONGATE_UPDATE_SCREENSHOTS=1`` it also writes ``docs/img/dashboard_index.png`` and
``docs/img/dashboard_op.png``.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tritongate.dashboard import build_site

from tests.dashboard.helpers import HOSTILE, STEP_DATE, damage, make_store

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                                 "(apt-get install -y chromium)")]


class Dom(HTMLParser):
    """Elements (tag, attributes, text inside) of a dumped DOM."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str], list[str]]] = []
        self._open: list[int] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}, []))
        if tag not in ("meta", "link", "br", "input", "img", "hr"):
            self._open.append(len(self.elements) - 1)

    def handle_endtag(self, tag: str) -> None:
        while self._open:
            if self.elements[self._open.pop()][0] == tag:
                break

    def handle_data(self, data: str) -> None:
        for i in self._open:
            self.elements[i][2].append(data)

    def find(self, tag: str | None = None, **attrs: str) -> list[tuple[str, dict[str, str], str]]:
        return [(t, a, "".join(text)) for t, a, text in self.elements
                if (tag is None or t == tag) and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def with_class(self, name: str) -> list[tuple[str, dict[str, str], str]]:
        return [(t, a, "".join(x)) for t, a, x in self.elements if name in a.get("class", "").split()]


def chromium(tmp: Path, *args: str) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
           "--virtual-time-budget=5000", "--hide-scrollbars", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def dump(tmp: Path, url: str) -> Dom:
    html = chromium(tmp, "--dump-dom", url)
    dom = Dom(html)
    (errors,) = dom.find("ul", id="errors")
    assert errors[2] == "", f"JS errors on {url}: {errors[2]}"
    assert dom.find("body", data_ready="1"), f"{url}: the page's script did not finish"
    return dom


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browser")
    store, entries = make_store(tmp)
    damage(entries[17])
    build_site(store, tmp / "site", now=NOW)
    return tmp, tmp / "site", entries


def _op_page(out: Path, stem: str) -> Path:
    (page,) = [p for p in (out / "ops").glob("*.html") if p.name.endswith(f"__{stem}.html")]
    return page


def test_the_index_renders_every_row_and_the_change_point(site):
    tmp, out, _ = site
    t0 = time.perf_counter()
    dom = dump(tmp, (out / "index.html").as_uri())
    assert time.perf_counter() - t0 < 20  # the browser's start included; the bench measures the real size
    assert dom.find("body", data_rows="3")
    assert len(dom.find("tr")) == 2 + 3 + 1  # two heads, three rows, one change point
    ((_, cp, text),) = [(t, a, x) for t, a, x in dom.find("tr") if a.get("data-night")]
    assert cp["data-night"] == STEP_DATE
    assert "(other configs)" in text  # the step came with another autotune config
    links = [(a["href"], text) for _, a, text in dom.find("a") if a.get("href", "").startswith("ops/")]
    assert {text for _, text in links} == {"softmax", HOSTILE}
    assert all((out / href.split("#")[0]).is_file() for href, _ in links)


def test_an_op_page_draws_a_chart_per_row_and_marks_the_step(site):
    tmp, out, entries = site
    page = _op_page(out, "softmax")
    dom = dump(tmp, page.as_uri())
    sections = dom.find("section")
    assert len([a for _, a, _ in sections if "row" in a.get("class", "").split()]) == 2
    assert len(dom.with_class("uplot")) == 2 and len(dom.find("canvas")) >= 2
    assert dom.find("body", data_charts="2")
    marks = [(a["data-night"], "".join(x)) for t, a, x in dom.elements if t == "li" and "data-index" in a]
    assert [night for night, _ in marks] == [STEP_DATE] and "autotune chose other configs" in marks[0][1]
    (damaged,) = [text for _, _, text in dom.with_class("damaged")]
    assert "sha256" in damaged and entries[17].name in damaged


def test_a_pinned_point_links_to_its_store_entry(site):
    tmp, out, entries = site
    page = _op_page(out, "softmax")
    dom = dump(tmp, page.as_uri() + "#row1:" + STEP_DATE)
    (panel,) = [a for t, a, _ in dom.elements if t == "a" and a.get("class") == "entry"]
    step_entry = next(e for e in entries if e.name.startswith(STEP_DATE.replace("-", "")))
    assert (page.parent / panel["href"]).resolve() == step_entry.resolve()


def test_a_hostile_op_name_is_text_not_markup(site):
    tmp, out, _ = site
    page = _op_page(out, "img-src-x-onerror-alert-1-script-b-op")
    for dom in (dump(tmp, page.as_uri()), dump(tmp, (out / "index.html").as_uri())):
        assert not dom.find("img") and not dom.find("b") and not dom.find("i")
        assert HOSTILE in {"".join(text) for t, _, text in dom.elements if t in ("h1", "a")}


def test_screenshots(site):
    tmp, out, _ = site
    shots = tmp / "shots"
    shots.mkdir()
    for name, url, height in (("dashboard_index.png", (out / "index.html").as_uri(), 900),
                              ("dashboard_op.png", _op_page(out, "softmax").as_uri(), 1300)):
        chromium(tmp, f"--screenshot={shots / name}", f"--window-size=1400,{height}", url)
        assert (shots / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("TRITONGATE_UPDATE_SCREENSHOTS") == "1":
            (ROOT / "docs" / "img" / name).write_bytes((shots / name).read_bytes())
