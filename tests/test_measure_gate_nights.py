"""measure/gate_nights.py and measure/steps_on_stored_nights.py on a small store made of the
recorded quiet-machine sessions (tests/fixtures/reports), two of them with PyPI MPICH
slowed by half as the clock injector slows it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import slowed

from mpimatrix.validation.unchanged import recorded_halves

ROOT = Path(__file__).resolve().parents[1]
VICTIM = "mpich-5.0.2-pypi"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """14 nights: 5 to bless, then unchanged ones with the victim +50 % on nights 8, 11."""
    root = tmp_path_factory.mktemp("store")
    (root / "reports").mkdir()
    for i, night in enumerate(recorded_halves(), 1):
        report = slowed(night, VICTIM, 0.5) if i in (8, 11) else night
        (root / "reports" / f"compare-{i:02d}.json").write_text(json.dumps(report))
    return root


def measure(script: str, *args: str) -> str:
    proc = subprocess.run([sys.executable, str(ROOT / "measure" / script), *args],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_each_night_build_by_build_and_each_builds_level_against_the_others(store):
    out = measure("gate_nights.py", str(store))
    nights = re.findall(r"^ *(\d+) (\S+)( \+50%)? +host (\d\.\d\d); own (.*)$", out, re.M)
    # sessions 6-14 are judged, 5 blessed
    assert [int(n[0]) for n in nights] == list(range(6, 15)), out
    assert [n[1] for n in nights if n[2]] == [VICTIM, VICTIM]
    assert all(0.5 < float(n[3]) < 2 for n in nights)
    levels = re.findall(r"^  (\S+): (\d\.\d{3}), [\d.]+%, (\d\.\d{3})-(\d\.\d{3}) over (\d+) "
                        r"nights$", out, re.M)
    assert {b for b, *_ in levels} == {"impi-2021.18.1-pypi", "mpich-4.0.2-debian", VICTIM}
    assert all(int(n) == 7 and float(lo) <= float(m) <= float(hi)
               for _, m, lo, hi, n in levels)
    # slowed by half, the victim stands above every unchanged night of its own
    stepped = re.findall(rf"^  \+50% {re.escape(VICTIM)}: (\d\.\d{{3}})  above$", out, re.M)
    assert len(stepped) == 2 and all(float(r) > 1.3 for r in stepped), out
    assert "  +50%: 2 of 2 above their build's unchanged range" in out


def test_steps_laid_on_the_unchanged_nights_are_counted_per_level(store):
    out = measure("steps_on_stored_nights.py", str(store), "--levels", "0.5")
    assert out.startswith(f"{store}: 12 unchanged sessions, blessed from the first 5, 7 "
                          "judged; 3 builds"), out
    m = re.search(r"^\+50%: whole build named the first night (\d+) of (\d+) .*; other "
                  r"builds named with it (\d+) of (\d+) ", out, re.M)
    assert m, out
    named, n, others, n_others = map(int, m.groups())
    assert n == 7 * 3 and n_others == 7 * 3 * 2
    # half again on a quiet machine: named nearly every night, the others left alone
    assert named >= 0.8 * n and others <= 2, out
    m = re.search(r"^  whole build, history by the third night (\d+) of (\d+) ", out, re.M)
    assert m and int(m.group(2)) > 0 and int(m.group(1)) >= 0.8 * int(m.group(2)), out
