"""The detection floor (results/floors.py): the step the gate catches the night it
happens 95 % of the time, checked against a simulation of the gate's two draws, and
read from a real bless of recorded sessions."""

from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES

from mpimatrix.results import floors
from mpimatrix.results.reference_set import ReferenceSet
from mpimatrix.results.values import Kind

SESSIONS = FIXTURES / "sessions"
BLESS = [SESSIONS / f"imb-quick-bless-{i}.json" for i in (1, 2, 3)]


def _caught(spread: float, tolerance: float, kind: Kind, step: float, nights: int,
            rng: random.Random) -> float:
    """Share of simulated nights on which a value stepped by `step` is beyond its
    threshold in the session and again in the confirmation (normal noise of CV
    `spread` around the stepped median; a share's in points)."""
    def beyond() -> bool:
        if kind == Kind.SHARE:
            return 50 - step + rng.gauss(0, spread) < 50 - tolerance
        if kind == Kind.RATE:
            return (1 - step) * (1 + spread * rng.gauss(0, 1)) < 1 - tolerance
        return (1 + step) * (1 + spread * rng.gauss(0, 1)) > 1 + tolerance
    return sum(beyond() and beyond() for _ in range(nights)) / nights


@pytest.mark.parametrize("spread,tolerance,kind", [
    (0.02, 0.3, Kind.TIME), (0.075, 0.3, Kind.TIME), (0.05, 0.1, Kind.TIME),
    (0.075, 0.3, Kind.RATE), (0.02, 0.1, Kind.RATE), (3.0, 12.0, Kind.SHARE)])
def test_a_step_at_the_floor_is_caught_95_percent_of_nights(spread, tolerance, kind):
    """20000 simulated nights per case: at the floor 95 % (binomial sd 0.15 %), at the
    tolerance itself about a quarter (half of each draw), well below the floor much less."""
    rng = random.Random(38)
    floor = floors.step(spread, tolerance, kind)
    assert floor > tolerance
    assert _caught(spread, tolerance, kind, floor, 20000, rng) == pytest.approx(0.95, abs=0.006)
    assert _caught(spread, tolerance, kind, tolerance, 20000, rng) == pytest.approx(
        0.25, abs=0.02)


def test_a_spread_too_wide_for_any_step_has_no_floor():
    assert floors.step(0.6, 0.3, Kind.TIME) == math.inf
    assert floors.Floor("p", "e", "k", "v", Kind.TIME, 0.6, 0.3, math.inf).text() == "none seen"


def test_bless_summarises_the_floors_of_what_it_gated(tmp_path):
    """`mpimatrix bless` of three recorded sessions prints the floors' median and 90th
    percentile and the whole builds' range, as computed from the statistics file it wrote;
    every gated time or rate has a floor above its tolerance, a value not gated none."""
    env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path)}
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "bless",
                           "--include-disturbed", "--output", str(tmp_path / "refs.yaml"),
                           *[a for r in BLESS for a in ("--report", str(r))]],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stats = yaml.safe_load((tmp_path / "refs.stats.yaml").read_text())
    refset = ReferenceSet.of(None, stats)
    values, builds = floors.value_floors(refset), floors.build_floors(refset)
    gated = [(part, env, key, var) for cls, parts in stats.items() if not cls.startswith("$")
             for part, envs in parts.items() for env, keys in envs.items()
             for key, pvars in keys.items() for var, rec in pvars.items() if rec["gated"]]
    assert sorted((f.partition, f.environ, f.ref_key, f.var) for f in values) == sorted(gated)
    assert gated and all(f.step > f.tolerance for f in values)
    line = floors.summary(values, builds)
    assert line.startswith("detection floor (the step caught the night it happens 95% of "
                           "the time): values median ")
    assert f"  {line}" in proc.stdout.splitlines(), proc.stdout
    rel = sorted(f.step for f in values if f.kind != Kind.SHARE)
    assert f"median {rel[(len(rel) + 1) // 2 - 1]:.0%}," in line


@pytest.mark.parametrize("kind", [Kind.TIME, Kind.RATE, Kind.SHARE])
def test_the_catch_probability_is_the_floors_inverse(kind):
    """floors.caught at the floor is 95 %, at the tolerance a quarter, and it grows with
    the step: what `mpimatrix validate replay` predicts for each injected value."""
    spread, tolerance = (2.0, 10.0) if kind == Kind.SHARE else (0.05, 0.3)
    floor = floors.step(spread, tolerance, kind)
    assert floors.caught(spread, tolerance, kind, floor) == pytest.approx(0.95, abs=1e-9)
    assert floors.caught(spread, tolerance, kind, tolerance) == pytest.approx(0.25, abs=0.02)
    steps = [tolerance * x for x in (0.5, 0.9, 1.0, 1.1, 1.5)]
    probs = [floors.caught(spread, tolerance, kind, s) for s in steps]
    assert probs == sorted(probs) and probs[0] < 0.01
    rng = random.Random(7)
    for s, p in zip(steps, probs, strict=True):
        assert _caught(spread, tolerance, kind, s, 20000, rng) == pytest.approx(p, abs=0.01)
    # no spread measured: caught exactly when the step is beyond the tolerance
    assert floors.caught(0.0, 0.3, Kind.TIME, 0.31) == 1.0
    assert floors.caught(0.0, 0.3, Kind.TIME, 0.29) == 0.0


def test_the_replay_compares_the_model_with_what_was_caught():
    from mpimatrix.validation.tally import model_check

    values = [(0.1, False)] * 9 + [(0.1, True)] + [(0.9, True)] * 9 + [(0.9, False)]
    line = model_check(values, [(0.97, True), (0.97, True)])
    assert line == ("values predicted 50.0%, caught 10/20; predicted 0%-20%: predicted "
                    "10.0%, caught 1/10; predicted 80%-100%: predicted 90.0%, caught 9/10; "
                    "whole builds predicted 97.0%, caught 2/2")
    assert model_check([(0.001, False)] * 3 + [(0.001, True)], [], bands=False) == (
        "predicted 0.1%, flagged 1/4")


def test_a_pooled_build_with_one_round_is_caught_as_the_normal_model_integrates():
    """One round, pooled: named when the session's draw and the mean of the two are
    beyond the threshold; the simulation agrees with the integral of the normal model."""
    from statistics import NormalDist

    norm = NormalDist()
    spread, tol, step = 0.03, 0.06, 0.08
    a = (math.log1p(tol) - math.log1p(step)) / spread  # the threshold in spreads
    # P(x0 > a and x0 + x1 > 2a), x0, x1 standard normal: over x0 on a fine grid
    dx = 0.001
    exact = sum(norm.pdf(x) * (1 - norm.cdf(2 * a - x)) * dx
                for x in (a + dx * (i + 0.5) for i in range(10000)))
    simulated, rounds = floors.caught_pooled(spread, tol, step, rounds=1, trials=40000)
    assert simulated == pytest.approx(exact, abs=0.01) and rounds == 1.0


def test_more_rounds_where_the_verdict_is_close_cut_false_alarms_at_a_cost():
    """At a 4 % spread and a 6 % tolerance: an unchanged build named less often with
    three rounds than with one, each round measured only when close (fewer than three on
    average), and the same figures on every call (a fixed seed)."""
    one = floors.caught_pooled(0.04, 0.06, 0.0, rounds=1)
    three = floors.caught_pooled(0.04, 0.06, 0.0, rounds=3)
    assert three[0] < one[0] / 2 and 1.0 < three[1] < 3.0
    assert floors.caught_pooled(0.04, 0.06, 0.0, rounds=3) == three
    assert floors.caught_pooled(0.04, 0.06, 0.3, rounds=3)[0] > 0.999
