"""`mpimatrix validate replay` judges a store's nights as `mpimatrix run` judged them: a
night other programs disturbed (db/machine-load.json) is stored, and left out of the
watch rule's earlier nights, by the live gate (run/nights.py) and by the replay alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import FIXTURES, slowed

from mpimatrix.validation.replay import replay_store
from mpimatrix.validation.unchanged import recorded_halves

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
VICTIM = "mpich-5.0.2-pypi"


def test_a_disturbed_night_is_no_earlier_night_of_the_watch_rule(tmp_path):
    """Blessed from 5 recorded quiet sessions; then three nights with the victim's PingPong
    twice as slow, the second disturbed: the third night's REGRESSION lines name the first
    night as the one where the values were outside before, not the disturbed one."""
    halves = recorded_halves(FIXTURES / "reports")
    reports = tmp_path / "reports"
    reports.mkdir()
    files = []
    for k, half in enumerate(halves[:8]):
        if k >= 5:
            half = slowed(half, VICTIM, 1.0, "MPI1:PingPong$")
        files.append(reports / f"compare-{k:02d}.json")
        files[-1].write_text(json.dumps(half))
    proc = subprocess.run([MPIMATRIX, "bless", "--include-disturbed",
                           *[a for f in files[:5] for a in ("--report", str(f))]],
                          env={**os.environ, "MPIMATRIX_RESULTS": str(tmp_path)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, busy, last = (h["session_info"]["uuid"] for h in halves[5:8])
    (tmp_path / "db").mkdir()
    (tmp_path / "db" / "machine-load.json").write_text(json.dumps(
        {busy: {"seconds": 150.0, "foreign_cpu": 60.0, "cores": 2, "disturbed": True}}))
    nights = {n.session.uuid: n for n in replay_store(tmp_path)}
    assert nights[first].judgement.watched and not nights[first].judgement.regressions
    lines = nights[last].judgement.regressions
    assert lines and all(ln.startswith(f"REGRESSION {VICTIM} Imb MPI1:PingPong ")
                         for ln in lines), lines
    assert all(ln.endswith(f"outside in session {first[:8]} too)") for ln in lines), lines


def test_a_confirmation_cut_to_its_first_samples_as_fewer_repeats_would_measure_it():
    """A recorded confirmation (`--repeat=3`: each test's samples back to back, as copies
    under new hashcodes): cut to its first k samples of each test on each build, the
    build fixtures kept; k = 3 leaves it whole."""
    from mpimatrix.validation.replay import first_samples

    conf = json.loads((Path(__file__).parent / "fixtures" / "sessions" /
                       "imb-quick-injected-mpich-4.0.2-clock-1.0-confirm.json").read_text())
    cases = conf["runs"][0]["testcases"]
    imb = [tc for tc in cases if tc["name"].startswith("ImbCheck")]
    builds = {tc["environ"] for tc in imb}
    assert len(builds) == 3 and len(imb) == 3 * len({tc["name"] for tc in imb}) * 3
    for k in (1, 2):
        kept = first_samples(conf, k)["runs"][0]["testcases"]
        assert [tc for tc in kept if not tc["name"].startswith("ImbCheck")] == [
            tc for tc in cases if not tc["name"].startswith("ImbCheck")]
        for env in builds:
            for name in {tc["name"] for tc in imb}:
                mine = [tc for tc in imb if (tc["environ"], tc["name"]) == (env, name)]
                assert [tc for tc in kept if (tc.get("environ"), tc["name"]) == (env, name)
                        ] == mine[:k]
    assert first_samples(conf, 3) == conf
    assert conf["runs"][0]["testcases"] == cases  # the stored report is left as it was


def test_replay_judges_confirmations_on_their_first_samples_and_refuses_zero(tmp_path):
    (tmp_path / "reports").mkdir()
    proc = subprocess.run([MPIMATRIX, "validate", "replay", str(tmp_path),
                           "--confirm-samples", "0"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "--confirm-samples must be at least 1, not 0" in proc.stderr
