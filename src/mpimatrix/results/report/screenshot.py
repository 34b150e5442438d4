"""A screenshot of a report page by headless Chromium (Debian's `chromium`), made small
enough to commit (a 256-colour PNG)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

#: Headless, offline, no profile left behind: the machine may have no network at all.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run", "--hide-scrollbars",
                  "--force-device-scale-factor=1")


class ScreenshotError(Exception):
    pass


def chromium() -> str | None:
    """Chromium's executable: MPIMATRIX_CHROMIUM, else chromium on PATH."""
    exe = os.environ.get("MPIMATRIX_CHROMIUM") or shutil.which("chromium") \
        or shutil.which("chromium-browser")
    return exe if exe and os.access(exe, os.X_OK) else None


def screenshot(page: Path, out: Path, width: int = 1280, height: int = 1500,
               colours: int = 256) -> Path:
    exe = chromium()
    if exe is None:
        raise ScreenshotError("no Chromium to take the screenshot: install Debian's "
                              "`chromium` (apt-get install chromium) or set MPIMATRIX_CHROMIUM")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mpimatrix-chromium-") as profile:
        raw = Path(profile) / "shot.png"
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}/data",
               f"--window-size={width},{height}", "--virtual-time-budget=5000",
               f"--screenshot={raw}", page.resolve().as_uri()]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise ScreenshotError(f"{exe} took more than 120 s to render {page}") from None
        if not raw.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise ScreenshotError(f"{exe} wrote no screenshot of {page} (rc={proc.returncode}:"
                                  f" {tail})")
        shrink(raw, out, colours)
    return out


def shrink(src: Path, dst: Path, colours: int) -> None:
    """Fewer colours, same pixels: the page is flat colours and anti-aliased text."""
    from PIL import Image  # matplotlib's own dependency

    with Image.open(src) as im:
        small = im.convert("RGB").quantize(colors=colours, method=Image.Quantize.MEDIANCUT)
        small.save(dst, format="PNG", optimize=True)


def print_pdf(page: Path, out: Path) -> Path:
    """The page printed to PDF by headless Chromium (A4, the page's own print style)."""
    exe = chromium()
    if exe is None:
        raise ScreenshotError("no Chromium to print the PDF: install Debian's `chromium` "
                              "(apt-get install chromium) or set MPIMATRIX_CHROMIUM")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="mpimatrix-chromium-") as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}/data",
               "--no-pdf-header-footer", f"--print-to-pdf={out.resolve()}",
               page.resolve().as_uri()]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise ScreenshotError(f"{exe} took more than 120 s to print {page}") from None
    if not out.exists() or not out.read_bytes().startswith(b"%PDF"):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise ScreenshotError(f"{exe} wrote no PDF of {page} (rc={proc.returncode}: {tail})")
    return out
