"""The page and the summary: jinja2 templates (package data, templates/) rendered from the
report's context; files written atomically."""

from __future__ import annotations

import math
from pathlib import Path

import jinja2

from ...atomic import atomic_write
from .model import DASH
from .render import Context

TEMPLATES = Path(__file__).parent / "templates"


def number(v, digits: int = 3) -> str:
    """Values as people read them: 3 significant digits, no exponent below 1e6."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return DASH
    if not isinstance(v, (int, float)):
        return str(v)
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.{digits}g}"


def percent(v) -> str:
    return DASH if v is None else f"{v:+.0%}"


def environment(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES),
                             autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["num"] = number
    env.filters["pct"] = percent
    env.filters["short"] = lambda s, n=12: (s or "")[:n]
    return env


def render_html(ctx: Context) -> str:
    return environment(True).get_template("report.html.j2").render(**ctx)


def render_markdown(ctx: Context) -> str:
    return environment(False).get_template("summary.md.j2").render(**ctx)


def write(directory: Path, name: str, html: str, markdown: str) -> tuple[Path, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    html_path, md_path = directory / f"{name}.html", directory / f"{name}.md"
    atomic_write(html_path, html)
    atomic_write(md_path, markdown)
    return html_path, md_path
