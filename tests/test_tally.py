"""validation.tally: the counts `mpimatrix validate gate` and `validate replay` print, with
their 95 % Wilson intervals and the detection curve, on the recorded quiet-machine
sessions (tests/fixtures/reports) with one build slowed as the clock injector slows it."""

from __future__ import annotations

import pytest
from helpers import FIXTURES, slowed

from mpimatrix.results import floors, gate
from mpimatrix.validation.experiment import Experiment
from mpimatrix.validation.store import StoredNight
from mpimatrix.validation.tally import Z95, Rate, Tally, wilson
from mpimatrix.validation.unchanged import recorded_halves

VICTIM = "mpich-5.0.2-pypi"


def stepped(halves: list[dict], plan, test: str = "") -> list[StoredNight]:
    """Night k + 1 of each (k, level) of the plan, the victim slowed by the level (none:
    unchanged), measured again (the next half, slowed alike) when it is slowed; tagged
    (k, level)."""
    return [StoredNight(slowed(halves[k], VICTIM, level, test) if level else halves[k],
                        [slowed(halves[k + 1], VICTIM, level, test)] if level else [],
                        (k, level)) for k, level in plan]


def test_the_wilson_interval_matches_its_closed_forms():
    z2 = Z95 * Z95
    # k = 0: upper bound z^2 / (n + z^2); k = n: lower bound n / (n + z^2)
    assert wilson(0, 5) == (0.0, pytest.approx(z2 / (5 + z2)))
    assert wilson(5, 5) == (pytest.approx(5 / (5 + z2)), 1.0)
    lo, hi = wilson(18, 24)
    assert lo == pytest.approx(0.551, abs=1e-3) and hi == pytest.approx(0.880, abs=1e-3)
    assert wilson(0, 0) == (0.0, 1.0)
    assert Rate(0, 5).text() == "0 of 5 (0%, 95 % interval 0%-43%)"
    assert Rate(2, 341).text(2) == "2 of 341 (0.59%, 95 % interval 0.16%-2.11%)"


@pytest.fixture(scope="module")
def tallied():
    halves = recorded_halves(FIXTURES / "reports")
    experiment = Experiment.bless(halves[:5])
    tally = Tally({(f.partition, f.environ): f.spread
                   for f in floors.build_floors(experiment.references)})
    nights = []
    plan = ((5, None), (6, 0.5), (7, None), (8, 0.5), (9, None))
    for judged in experiment.judge(stepped(halves, plan)):
        k, level = judged.tag
        tally.add(judged.night, (VICTIM, level) if level else None, f"night {k + 1}")
        nights.append((judged.night, level))
    return tally, nights


def test_unchanged_nights_and_their_false_alarms_are_counted(tallied):
    tally, nights = tallied
    unchanged = [n for n, level in nights if not level]
    red = sum(bool(n.judgement.regressions) for n in unchanged)
    assert tally.lines()[0] == (f"unchanged nights red: {Rate(red, 3).text()}; goal at most "
                                "1 in 20")
    # every gated value of an untouched build counts towards the false alarms: all of an
    # unchanged night's, the other builds' of an injected night
    gated = [(v, level) for n, level in nights for v in n.judgement.verdicts
             if v.status not in (gate.NOT_GATED, gate.NO_REFERENCE)]
    untouched = [v for v, level in gated if not level or v.build != VICTIM]
    assert tally.values["unchanged", "n"] == len(untouched) > 0
    assert tally.values["unchanged", "flagged"] == sum(
        v.status == gate.REGRESSION for v in untouched)
    assert tally.builds["unchanged", "n"] == sum(
        len(n.judgement.builds) - (1 if level else 0) for n, level in nights)
    fast = sum(any(h.fast for h in n.judgement.hosts) for n, _ in nights)
    assert (f"sessions where every build ran faster than its references (steps up to that "
            f"much hidden): {fast} of 5") in tally.lines()


def test_a_build_slowed_half_again_is_on_the_detection_curve_with_its_prediction(tallied):
    tally, nights = tallied
    assert tally.levels == [0.5]
    assert tally.builds[0.5, "n"] == 2 and tally.builds[0.5, "flagged"] == 2
    injected = [v for n, level in nights if level for v in n.judgement.verdicts
                if v.build == VICTIM and not v.is_share
                and v.status not in (gate.NOT_GATED, gate.NO_REFERENCE)]
    assert tally.values[0.5, "n"] == len(injected) == len(tally.model_values[0.5])
    assert tally.values[0.5, "flagged"] > len(injected) / 2
    # the floor model gives each injected value and build a probability of being caught
    assert all(0 <= p <= 1 for p, _ in tally.model_values[0.5])
    assert [p for p, _ in tally.model_builds[0.5]] and all(
        p > 0.9 for p, _ in tally.model_builds[0.5])
    [line] = tally.curve()
    assert line.startswith("  +50%: build named 2 of 2 (100%, 95 % interval 34%-100%); "
                           "predicted "), line
    assert f"its values flagged {tally.rate(tally.values, 0.5).text()}; alone" in line
    assert "detection curve, the night of the step" in "\n".join(tally.lines())


def test_one_benchmark_slowed_counts_its_values_and_leaves_the_build_out():
    """MPIMATRIX_INJECT '<build>@MPI1:Allreduce': the victim's Allreduce values count as
    injected, its other values as unchanged (they are), its whole build not at all (one
    benchmark barely moves the build's median)."""
    halves = recorded_halves(FIXTURES / "reports")
    tally = Tally()
    [judged] = Experiment.bless(halves[:5]).judge(
        [StoredNight(slowed(halves[5], VICTIM, 0.5, "MPI1:Allreduce$"))], before=[])
    night = judged.night
    tally.add(night, (VICTIM, 0.5))
    gated = [v for v in night.judgement.verdicts
             if v.status not in (gate.NOT_GATED, gate.NO_REFERENCE) and not v.is_share]
    mine = [v for v in gated if v.build == VICTIM and v.key.case.endswith("MPI1:Allreduce")]
    assert mine and tally.values[0.5, "n"] == len(mine)
    assert tally.values["unchanged", "n"] == len(gated) - len(mine) > len(mine)
    assert tally.builds[0.5, "n"] == 0
    assert tally.builds["unchanged", "n"] == len(night.judgement.builds) - 1 > 0


def test_a_step_held_three_nights_counts_what_is_named_by_each_night():
    """`validate gate --streak 3`: one benchmark of the victim slowed three nights running
    (one streak; an unchanged night after it ends it). A value outside alone is on watch
    the first night and a regression the second, so the values named by night 2 include
    those on watch at night 1; the counts by night k never fall."""
    halves = recorded_halves(FIXTURES / "reports")
    tally = Tally()
    nights = []
    plan = ((5, 0.5), (6, 0.5), (7, 0.5), (8, None))
    for judged in Experiment.bless(halves[:5]).judge(
            stepped(halves, plan, "MPI1:PingPong$")):
        level = judged.tag[1]
        tally.add(judged.night, (VICTIM, level) if level else None)
        nights.append(judged.night)
    [streak] = tally.streaks
    assert streak.victim == (VICTIM, 0.5) and streak.nights == 3

    def named(night) -> set:
        return {(v.build, v.key) for v in night.judgement.verdicts
                if v.build == VICTIM and v.status == gate.REGRESSION
                and v.key.case.endswith("MPI1:PingPong")}

    first, second = named(nights[0]), named(nights[0]) | named(nights[1])
    watched = {(v.build, v.key) for v in nights[0].judgement.verdicts
               if v.status == gate.WATCH and v.build == VICTIM}
    assert watched <= second  # on watch the first night, named the next
    counts = [streak.caught_by(k) for k in (1, 2, 3)]
    n = len(streak.values)
    assert n > 0 and all(total == n for _, total in counts)
    assert counts[0][0] == len(first) and counts[1][0] == len(second)
    assert counts[0][0] <= counts[1][0] <= counts[2][0] and counts[2][0] > 0
    assert streak.caught_by(4) == (0, 0)  # the streak lasted three nights
    # each value is either within its floor of the step or not
    assert streak.caught_by(3, True)[1] + streak.caught_by(3, False)[1] == n
    lines = tally.streak_lines()
    assert lines[0].startswith("steps held 3 nights running (--streak)"), lines
    assert lines[2].startswith("  +50%, all its values: by night 1 "
                               f"{counts[0][0]} of {n} "), lines
    # one benchmark slowed: the build as a whole is not counted
    assert "by night 3" in lines[2] and len(lines) == 3, lines
    assert lines[1] in tally.lines()


def test_the_machine_time_per_night_is_counted_with_the_rounds_measured_again(tallied):
    """Each night's ReFrame seconds (the recorded sessions' time_elapsed), the session's
    and its confirmations', and how many nights measured again in how many rounds."""
    tally, nights = tallied
    session = sum(n.session.elapsed for n, _ in nights)
    again = sum(c.elapsed for n, _ in nights for c in n.confirmations)
    assert session > 0 and again > 0
    assert tally.rounds == {0: 3, 1: 2}
    assert tally.cost_line() == (
        f"machine time per night: session {session / 60 / 5:.1f} min, measured again "
        f"{again / 60 / 5:.1f} min (nights by rounds of measuring again: 0 rounds 3, "
        "1 round 2)")
    assert tally.cost_line() in tally.lines()
