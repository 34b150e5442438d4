"""The project's ReFrame command line: its executable and configuration."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from ..paths import project_root


def config_path() -> Path:
    return project_root() / "site_config" / "reframe_config.py"


def reframe_exe() -> str:
    local = Path(sys.executable).parent / "reframe"
    return str(local) if local.exists() else (shutil.which("reframe") or "reframe")


def reframe_cmd(*args: str) -> list[str]:
    return [reframe_exe(), "-C", str(config_path()), *args]
