"""The website builds with `mkdocs build --strict`, and headless Chromium renders it: the home
page, an op page and the search index load with the expected text. A screenshot of the op
page is kept as a build artifact (under site/screenshots/, or $KTIR_SCREENSHOT_DIR), never
committed.

Skips, with the reason, when mkdocs (and its plugins) or Debian's `chromium` is not installed.
"""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from docs_support import ROOT

from ktir.dialects.registry import OPS

SITE_PLUGINS = ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def _missing_site_tools() -> list[str]:
    return [name for name in SITE_PLUGINS if importlib.util.find_spec(name.split(".")[0]) is None or _missing(name)]


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = _missing_site_tools()
    if missing:
        pytest.skip(
            f"the docs tools are not installed ({', '.join(missing)}): pip install mkdocs mkdocs-material 'mkdocstrings[python]'"
        )
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr[-6000:]}"
    return out


def test_site_has_every_op_page_and_the_status_table(site: Path) -> None:
    for op in OPS.values():
        page = site / "spec" / "ops" / op.name / "index.html"
        assert page.exists(), f"no page for {op.name}"
    status = (site / "status" / "index.html").read_text(encoding="utf-8")
    for name in OPS:
        assert f"op-{name.replace('.', '-')}" in status


def test_ktir_blocks_are_highlighted(site: Path) -> None:
    html = (site / "spec" / "ops" / "ktdp.load" / "index.html").read_text(encoding="utf-8")
    assert '<span class="k">ktdp.load</span>' in html, "```ktir blocks are not highlighted by the KTIR lexer"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def chromium() -> str:
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("headless Chromium is not installed (Debian: apt-get install -y chromium)")


def _chromium(browser: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def _dom(browser: str, url: str) -> str:
    result = _chromium(browser, "--virtual-time-budget=10000", "--dump-dom", url)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_browser_renders_the_home_page(chromium: str, server: str) -> None:
    dom = _dom(chromium, f"{server}/")
    assert "KTIR — Kernel Tile IR" in dom
    assert "Where to start" in dom
    assert 'class="md-tabs' in dom, "the material theme's navigation tabs did not render"


def test_browser_renders_an_op_page_and_keeps_a_screenshot(chromium: str, server: str) -> None:
    dom = _dom(chromium, f"{server}/spec/ops/ktdp.load/")
    for expected in ("ktdp.load", "Semantics", "Constraints", "ktdp.load.C1", "ktdp.load.C2", "Accuracy class"):
        assert expected in dom, f"the op page lacks {expected!r}"
    out_dir = Path(os.environ.get("KTIR_SCREENSHOT_DIR", ROOT / "site" / "screenshots"))
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / "ktdp.load.png"
    result = _chromium(chromium, "--window-size=1280,1800", f"--screenshot={shot}", f"{server}/spec/ops/ktdp.load/")
    assert result.returncode == 0, result.stderr[-3000:]
    assert shot.stat().st_size > 10_000, "the screenshot is empty"


def test_browser_loads_the_search_index(chromium: str, server: str) -> None:
    dom = _dom(chromium, f"{server}/search/search_index.json")
    start, end = dom.find("{"), dom.rfind("}")
    index = json.loads(_unescape_html(dom[start : end + 1]))
    locations = {doc["location"] for doc in index["docs"]}
    assert "spec/ops/ktdp.load/" in locations
    load = next(doc for doc in index["docs"] if doc["location"] == "spec/ops/ktdp.load/")
    assert "access tile" in load["text"]


def _unescape_html(text: str) -> str:
    import html

    return html.unescape(text)


def test_browser_shows_the_run_guides_timeline_picture(chromium: str, server: str, site: Path) -> None:
    """The picture `ktir run --timeline` draws loads on the run guide (at its own size), and a
    screenshot of that part of the page is kept next to the op page's."""
    import xml.etree.ElementTree as ET

    svg = ET.parse(site / "guides" / "images" / "run_softmax_timeline.svg").getroot()
    probe = site / "probe-run-timeline.html"
    probe.write_text(
        '<html><body><iframe id="f" src="/guides/run/" width="1280" height="1600"></iframe><pre id="result">pending</pre>'
        "<script>document.getElementById('f').addEventListener('load', function () {"
        " var doc = this.contentDocument;"
        " function check() {"
        "  var img = doc.querySelector('img[src*=\"run_softmax_timeline.svg\"]');"
        "  if (!img) { document.getElementById('result').textContent = 'no image'; return; }"
        "  if (!img.complete) { setTimeout(check, 100); return; }"
        "  document.getElementById('result').textContent = 'image ' + img.naturalWidth + 'x' + img.naturalHeight;"
        " } check(); });</script></body></html>",
        encoding="utf-8",
    )
    dom = _dom(chromium, f"{server}/{probe.name}")
    assert f"image {svg.get('width')}x{svg.get('height')}" in dom, dom[-2000:]
    out_dir = Path(os.environ.get("KTIR_SCREENSHOT_DIR", ROOT / "site" / "screenshots"))
    out_dir.mkdir(parents=True, exist_ok=True)
    shot = out_dir / "run-timeline.png"
    # the whole page down to the picture (headless Chromium shoots a blank page when asked for a
    # #fragment); the virtual time budget lets the page and the picture finish loading first
    result = _chromium(chromium, "--window-size=1280,3400", "--virtual-time-budget=10000", f"--screenshot={shot}",
                       f"{server}/guides/run/")
    assert result.returncode == 0, result.stderr[-3000:]
    assert shot.stat().st_size > 10_000, "the screenshot is empty"
