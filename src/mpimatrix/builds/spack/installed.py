"""Where the specs of a Spack lock are installed: asked from Spack, or read
from an install tree's database without Spack (MPIMATRIX_SPACK_STORE)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

STORE_ENV = "MPIMATRIX_SPACK_STORE"


# -- installed prefixes ---------------------------------------------------------------------------
def spack_env_args(lock_path: Path) -> list[str]:
    """`-e <dir>` when the lock sits in an environment directory (spack.yaml next to it)."""
    env_dir = lock_path.resolve().parent
    return ["-e", str(env_dir)] if (env_dir / "spack.yaml").is_file() else []


def installed_prefixes_spack(spack: str, lock_path: Path) -> tuple[dict[str, str], str]:
    """{hash: prefix} of the installed specs, and an error text if Spack failed."""
    cmd = [spack, *spack_env_args(lock_path), "find", "--no-groups",
           "--format", "{hash} {prefix}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        return {}, f"`{' '.join(cmd)}` failed: {err}"
    out = {}
    for line in proc.stdout.splitlines():
        h, _, prefix = line.strip().partition(" ")
        if len(h) == 32 and prefix:
            out[h] = prefix
    if proc.returncode != 0 and not out:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        if "No package matches" in proc.stderr or "no installed packages" in proc.stderr:
            return {}, ""
        return {}, f"`{' '.join(cmd)}` failed: {err}"
    return out, ""


def installed_prefixes_db(store: Path) -> dict[str, str]:
    """{hash: prefix} from a Spack install tree's database, without Spack."""
    index = store / ".spack-db" / "index.json"
    try:
        data = json.loads(index.read_text())
    except (OSError, ValueError):
        return {}
    installs = (data.get("database") or {}).get("installs") or {}
    return {h: rec["path"] for h, rec in installs.items()
            if rec.get("path") and rec.get("installed", True)}
