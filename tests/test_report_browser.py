"""The report in a real browser: Debian's Chromium, headless, driven by Playwright (no
browser download: executable_path). The page must load with no console error and show
every plot the report made, none blank; the screenshot is kept and its path printed.

Skips when Chromium or Playwright is missing, unless MPIMATRIX_REQUIRE_BROWSER=1 (CI
installs both and sets it: there the test must run)."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES, ROOT

from mpimatrix.results.reference_set import ReferenceSet
from mpimatrix.results.report import make_report, write
from mpimatrix.results.report.screenshot import CHROMIUM_FLAGS, chromium
from mpimatrix.validation.derived_session import derive, prices

ARTIFACTS = Path(os.environ.get("MPIMATRIX_TEST_ARTIFACTS", ROOT / "results" / "test-artifacts"))

#: Per plot: loaded, its natural size, distinct colours and the share of non-white pixels
#: (every 7th pixel), drawn on a canvas (data: URIs are same-origin).
PIXELS = """() => Array.from(document.querySelectorAll('img.plot')).map(img => {
  const c = document.createElement('canvas');
  c.width = img.naturalWidth; c.height = img.naturalHeight;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0);
  const d = g.getImageData(0, 0, c.width, c.height).data;
  const colours = new Set(); let ink = 0, n = 0;
  for (let i = 0; i < d.length; i += 28, n++) {
    const k = (d[i] << 16) | (d[i + 1] << 8) | d[i + 2];
    colours.add(k); if (k !== 0xffffff) ink++;
  }
  return {id: img.closest('figure').id, complete: img.complete, width: img.naturalWidth,
          colours: colours.size, ink: ink / n};
})"""


def browser_or_skip():
    required = os.environ.get("MPIMATRIX_REQUIRE_BROWSER") == "1"
    exe = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    why = ("no Chromium (apt-get install chromium)" if exe is None else
           "no Playwright (pip install -e '.[test]')" if sync_playwright is None else "")
    if why:
        if required:
            pytest.fail(f"MPIMATRIX_REQUIRE_BROWSER=1 but {why}")
        pytest.skip(why)
    return exe, sync_playwright


def unpack(name: str) -> dict:
    with gzip.open(FIXTURES / "reports" / f"{name}.json.gz", "rt") as fp:
        return json.load(fp)


def nightly():
    refs = yaml.safe_load((FIXTURES / "reports" / "local-references.yaml").read_text())
    return make_report([unpack(f"quick-local-{i}") for i in range(1, 6)], name="nightly",
                       references=ReferenceSet.of(refs))


def derived():
    return make_report([derive(unpack("compare-local-5builds"))], name="derived",
                       prices=prices())


@pytest.mark.parametrize("make", [nightly, derived], ids=["nightly", "derived-layouts"])
def test_report_renders_in_chromium(make, tmp_path, capsys):
    exe, sync_playwright = browser_or_skip()
    rep = make()
    html, _ = write(tmp_path, rep.context["name"], rep.html, rep.markdown)
    shot = ARTIFACTS / f"report-{rep.context['name']}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=exe, headless=True,
            args=[f for f in CHROMIUM_FLAGS if f != "--headless"],
            viewport={"width": 1280, "height": 1000})
        try:
            page = ctx.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url}"))
            page.goto(html.as_uri(), wait_until="load")
            plots = page.evaluate(PIXELS)
            title = page.title()
            page.screenshot(path=str(shot), full_page=True)
        finally:
            ctx.close()
            shutil.rmtree(tmp_path / "profile", ignore_errors=True)
    with capsys.disabled():
        print(f"\nscreenshot: {shot}")
    assert not problems, problems
    assert title.startswith(f"mpimatrix report {rep.context['name']}")
    assert len(plots) == len(rep.plots) == rep.context["plot_count"] > 10
    assert [p["id"] for p in plots] == [p.id for p in rep.plots]
    for p in plots:
        assert p["complete"] and p["width"] > 200, p
        assert p["colours"] > 20 and 0.02 < p["ink"] < 0.95, p  # drawn, not blank
    assert shot.stat().st_size > 50_000


#: The picture docs/report.md shows.
DOCS_SHOT = ROOT / "docs" / "report-screenshot.png"


def test_the_docs_screenshot_is_made_here(tmp_path):
    """The screenshot docs/report.md shows is the top of the report of the recorded
    comparison of the offline kit's 14 Spack rows (tests/fixtures/reports), taken by the
    code of `mpimatrix report --screenshot`: CI makes it on every run (the test
    artifacts' report-docs.png); MPIMATRIX_UPDATE_DOCS=1 writes it into docs/ too."""
    from PIL import Image

    from mpimatrix.results.report.screenshot import screenshot

    browser_or_skip()
    rep = make_report([unpack("compare-local-kit-14rows")], name="kit-rows")
    html, _ = write(tmp_path, rep.context["name"], rep.html, rep.markdown)
    shot = screenshot(html, ARTIFACTS / "report-docs.png")
    with Image.open(shot) as img:
        width, height = img.size
        colours = len(img.getcolors(1 << 16) or ())
    assert (width, height) == (1280, 1500) and colours > 16, (width, height, colours)
    if os.environ.get("MPIMATRIX_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, DOCS_SHOT)
    assert DOCS_SHOT.exists(), "docs/report-screenshot.png: run with MPIMATRIX_UPDATE_DOCS=1"
