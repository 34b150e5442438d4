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
from helpers import FIXTURES, slowed

from mpimatrix.validation.unchanged import recorded_halves

ROOT = Path(__file__).resolve().parents[1]
VICTIM = "mpich-5.0.2-pypi"


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """14 nights: 5 to bless, then unchanged ones with the victim +50 % on nights 8, 11."""
    root = tmp_path_factory.mktemp("store")
    (root / "reports").mkdir()
    for i, night in enumerate(recorded_halves(FIXTURES / "reports"), 1):
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
    # each gated value's spread over the 7 unchanged nights against its blessed one, and
    # the floors from each
    m = re.search(r"^gated values' spread from night to night over their blessed spread "
                  r"\((\d+) values\): median (\d+\.\d\d), 10th-90th percentile "
                  r"(\d+\.\d\d)-(\d+\.\d\d)\n  detection floor from the blessed spread: "
                  r"median (\d+)%, 90th percentile (\d+)%; from the nights' spread: median "
                  r"(\d+)%, 90th percentile (\d+)%$", out, re.M)
    assert m, out
    n, med, lo, hi = int(m[1]), float(m[2]), float(m[3]), float(m[4])
    assert n > 10 and lo <= med <= hi
    assert int(m[5]) <= int(m[6]) and int(m[7]) <= int(m[8])


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


def test_values_slowed_by_their_own_floor_are_counted_per_band(store):
    """Each gated value slowed by its own detection floor (--at-floor): per band of floors,
    how many were seen the first night and named within three; the model says 95 % the
    first night, and on this quiet recorded machine most are."""
    out = measure("steps_on_stored_nights.py", str(store), "--levels", "0.5", "--at-floor")
    head = out.index("single values alone, each slowed by its own detection floor")
    bands = re.findall(r"^  floor (\d+)%-(\d+)%: seen the first night (\d+) of (\d+) .*; "
                       r"named within three nights \(gate or history\) (\d+) of (\d+) ",
                       out[head:], re.M)
    assert bands, out[head:]
    assert all(int(lo) < int(hi) and n == n3 and int(k) <= int(n) and int(k3) <= int(n3)
               for lo, hi, k, n, k3, n3 in bands), bands
    first = sum(int(b[2]) for b in bands) / sum(int(b[3]) for b in bands)
    three = sum(int(b[4]) for b in bands) / sum(int(b[5]) for b in bands)
    assert first >= 0.7 and three >= first - 0.2, (first, three, out[head:])


@pytest.fixture(scope="module")
def confirmed_store(store, tmp_path_factory) -> Path:
    """The store with night 8 (the victim +50 %) measured again: night 9's passes stored as
    its confirmation, over the same minutes."""
    root = tmp_path_factory.mktemp("confirmed")
    (root / "reports").mkdir()
    for f in (store / "reports").glob("*.json"):
        (root / "reports" / f.name).write_text(f.read_text())
    conf = json.loads((store / "reports" / "compare-09.json").read_text())
    conf["session_info"].update(uuid="night-08-confirm", confirms="night-08")
    (root / "reports" / "compare-08b-confirm.json").write_text(json.dumps(conf))
    return root


def test_the_cost_of_measuring_again_per_setting_on_the_same_nights(confirmed_store):
    """measure/confirm_cost.py: minutes a night of session and measuring again, for the
    default gate and a setting with tighter whole builds, on the same stored nights, over
    every night and for unchanged and injected nights apart; the tighter setting measures
    again on at least the default's nights. Given the store twice, the two together give
    the same figures."""
    out = measure("confirm_cost.py", str(confirmed_store), "--vary", "build_floor=0.03")
    head = re.match(rf"{re.escape(str(confirmed_store))}: 9 nights after 5 blessed; "
                    r"session (\d+\.\d\d) min a night; one test measured again on every "
                    r"build \d\.\d{3} min \(median over 1 confirmations\) at 3 samples of "
                    r"each test\n", out)
    assert head, out
    rows = re.findall(r"^  (.+): measured again (\d+\.\d\d) min a night \(on (\d+) of 9 "
                      r"nights\); session and measuring again (\d+\.\d\d) min, ([+-]\d+)% "
                      r"against the default gate\n    unchanged nights \(7\): (\d+\.\d\d) "
                      r"min, ([+-]\d+)%\n    injected nights \(2\): (\d+\.\d\d) min, "
                      r"([+-]\d+)%$", out, re.M)
    assert [r[0] for r in rows] == ["the default gate", "build_floor=0.03"], out
    (_, again, nights, total, pct, *split), (_, again6, nights6, total6, pct6, *split6) = rows
    session = float(head.group(1))
    for a, t in ((again, total), (again6, total6)):
        assert float(a) >= 0 and float(t) == pytest.approx(session + float(a), abs=0.011)
    assert pct == "+0" and int(nights) >= 2  # the two nights at +50 % at least
    assert int(nights6) >= int(nights) and float(total6) >= float(total)
    assert int(pct6) == round((float(total6) / float(total) - 1) * 100)
    # the nights apart: 7 unchanged and 2 injected make the whole
    assert split[1] == split[3] == "+0", out
    for (u, _, i, _), t in ((split, total), (split6, total6)):
        assert (7 * float(u) + 2 * float(i)) / 9 == pytest.approx(float(t), abs=0.011)
    assert int(split6[1]) == round((float(split6[0]) / float(split[0]) - 1) * 100)
    twice = measure("confirm_cost.py", str(confirmed_store), str(confirmed_store),
                    "--vary", "build_floor=0.03")
    together = twice[twice.index("the 2 stores together:\n"):]
    assert re.search(rf"^  build_floor=0.03: measured again {again6} min a night \(on "
                     rf"{2 * int(nights6)} of 18 nights\); session and measuring again "
                     rf"{total6} min, {re.escape(pct6)}% against the default gate\n    "
                     rf"unchanged nights \(14\): {split6[0]} min", together, re.M), together
    # priced at one sample of each test, the setting's measuring again costs a third
    one = measure("confirm_cost.py", str(confirmed_store), "--vary", "build_floor=0.03",
                  "--confirm-samples", "1")
    assert "; other settings priced at 1\n" in one, one
    m = re.search(r"^  build_floor=0.03: measured again (\d+\.\d\d) min", one, re.M)
    assert m and float(m.group(1)) == pytest.approx(float(again6) / 3, abs=0.011), one
    # against the whole-build tolerances before 2026-12-02: the default gate is priced
    before = "build_floor=0.15,build_sigmas=4"
    old = measure("confirm_cost.py", str(confirmed_store), "--baseline", before,
                  "--vary", "")
    names = re.findall(r"^  (.+): measured again .* against (.+)$", old, re.M)
    assert [n for n, _ in names] == [before, "the default gate"], old
    assert {a for _, a in names} == {before}, old
    gone = subprocess.run([sys.executable, str(ROOT / "measure" / "confirm_cost.py"),
                           str(confirmed_store), "--baseline", "pre-2026-12"],
                          capture_output=True, text=True, timeout=900)
    assert gone.returncode == 2 and "no longer settings" in gone.stderr, gone.stderr
