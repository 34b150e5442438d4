"""What the gate said over an experiment's nights, counted one way for the live
experiment (`mpimatrix validate gate`) and its replay (`mpimatrix validate replay`).

Every rate comes with its 95 % Wilson score interval: with 5 injected nights a build
named 0 times out of 5 is still compatible with a true rate of 43 %. The detection curve
gives, per injected step, the share caught the night it happened next to what the floor
model (results/floors.py) predicted from the blessed statistics for the same values and
builds: a calibrated model is inside the measured interval."""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from ..results import floors, gate
from ..results.night import Night
from ..results.values import Kind, kind_of

#: the normal quantile of the two-sided 95 % interval
Z95 = statistics.NormalDist().inv_cdf(0.975)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a rate of k in n ((0, 1) for n = 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (0.0 if k == 0 else centre - half), (1.0 if k == n else centre + half)


@dataclass(frozen=True)
class Rate:
    k: int
    n: int

    def text(self, digits: int = 0) -> str:
        """'k of n (p %, 95 % interval lo-hi %)'."""
        if not self.n:
            return "0 of 0"
        lo, hi = wilson(self.k, self.n)
        f = f".{digits}%"
        return (f"{self.k} of {self.n} ({self.k / self.n:{f}}, 95 % interval "
                f"{lo:{f}}-{hi:{f}})")


def _caught(runs: list[Streak], night: int, within_floor: bool | None) -> Rate:
    pairs = [r.caught_by(night, within_floor) for r in runs]
    return Rate(sum(k for k, _ in pairs), sum(n for _, n in pairs))


def _stepped(v: gate.ValueVerdict, level: float) -> tuple[Kind, float]:
    """The value's kind and the step the clock injector's `level` makes of it (a rate
    falls by 1 - 1/(1+level), a time grows by level)."""
    return (kind_of(v.unit, v.higher_is_better),
            1 - 1 / (1 + level) if v.higher_is_better else level)


def streak_value(streak: Streak, v: gate.ValueVerdict, level: float) -> None:
    """Records an injected value in its streak: whether its floor (floors.step, from its
    blessed spread and tolerance) is at most the step, and the first night it was named."""
    kind, stepped = _stepped(v, level)
    key = (v.build, v.key)
    below, first = streak.values.get(key, (None, 0))
    if below is None:
        below = floors.step(v.spread or 0.0, abs(v.tolerance or 0.0), kind) <= stepped
    if not first and v.status == gate.REGRESSION:
        first = streak.nights
    streak.values[key] = (below, first)


def value_model(v: gate.ValueVerdict, level: float) -> tuple[float, bool]:
    """(the probability floors.caught gives, whether the gate caught it alone: outside
    in the session and the confirmation at its own tolerance) for a value of a build
    whose every timed interval was made `level` longer (a rate falls by 1 - 1/(1+level))."""
    kind, stepped = _stepped(v, level)
    tol = abs(v.tolerance or 0.0)
    alone = (v.status == gate.REGRESSION and not v.with_build) or v.status == gate.WATCH
    return floors.caught(v.spread or 0.0, tol, kind, stepped), alone


def model_check(values: list[tuple[float, bool]], builds: list[tuple[float, bool]],
                bands: bool = True) -> str:
    """The model's mean predicted catch rate against the measured one, overall and by
    band of the prediction (a calibrated model matches in every band); for values of
    builds left alone, the predicted and measured false alarms."""
    def rate(pairs: list[tuple[float, bool]], what: str = "caught") -> str:
        return (f"predicted {statistics.fmean(p for p, _ in pairs):.1%}, {what} "
                f"{sum(c for _, c in pairs)}/{len(pairs)}")
    if not bands:
        return rate(values, "flagged") if values else "none"
    parts = [f"values {rate(values)}"] + [
        f"predicted {lo:.0%}-{min(hi, 1):.0%}: {rate(sel)}"
        for lo, hi in ((0.0, 0.2), (0.2, 0.8), (0.8, 1.01))
        if (sel := [(p, c) for p, c in values if lo <= p < hi])]
    if builds:
        parts.append(f"whole builds {rate(builds)}")
    return "; ".join(parts)


@dataclass
class Streak:
    """One step laid on the same build (or benchmark) night after night, `mpimatrix
    validate gate --streak N`: the night each injected value and the build were first
    named. A value alone outside is on watch its first night and a regression the next
    (results/watch.py), so its catch is counted within so many nights, not the first."""

    victim: tuple[str, float]
    nights: int = 0
    #: value -> (its floor is at most the step, the first night it was a REGRESSION; 0 none)
    values: dict = field(default_factory=dict)
    build_named: int = 0  # the first night the whole build was named (0: not yet)
    whole_build: bool = True  # False: one benchmark of it slowed (--inject-test)

    def caught_by(self, night: int, within_floor: bool | None = None) -> tuple[int, int]:
        """(values named by `night`, values) of a streak that lasted that long; with
        `within_floor`, only the values whose floor is (not) at most the step."""
        if self.nights < night:
            return 0, 0
        sel = [first for below, first in self.values.values()
               if within_floor is None or below == within_floor]
        return sum(0 < first <= night for first in sel), len(sel)


@dataclass
class Tally:
    """The counts of an experiment: nights, values and whole builds, unchanged and per
    injected level. `build_spread`: the blessed spread of each (partition, environ)'s
    build factor, for the model's prediction of a whole build."""

    build_spread: dict[tuple[str, str], float] = field(default_factory=dict)
    nights: Counter = field(default_factory=Counter)
    #: (level or "unchanged", what) -> count, for single values and for whole builds
    values: Counter = field(default_factory=Counter)
    builds: Counter = field(default_factory=Counter)
    gated: Counter = field(default_factory=Counter)
    hosts: int = 0
    #: sessions where every build ran faster than its references (host.Host.fast)
    fast: int = 0
    sessions: int = 0
    #: machine time: the sessions' and their confirmations' seconds; nights by rounds
    seconds: Counter = field(default_factory=Counter)
    rounds: Counter = field(default_factory=Counter)
    #: level -> (predicted, caught) per injected value / build; 0.0: values left alone
    model_values: dict[float, list[tuple[float, bool]]] = field(
        default_factory=lambda: defaultdict(list))
    model_builds: dict[float, list[tuple[float, bool]]] = field(
        default_factory=lambda: defaultdict(list))
    log: list[str] = field(default_factory=list)
    #: the injected steps in the order they ran; consecutive nights with the same
    #: victim and level are one streak, an unchanged night in between ends it
    streaks: list[Streak] = field(default_factory=list)
    _previous: tuple[str, float] | None = None

    @property
    def levels(self) -> list[float]:
        return sorted({lv for lv, _ in [*self.builds, *self.values] if lv != "unchanged"})

    def add(self, night: Night, injected: tuple[str, float] | None, what: str = "") -> None:
        """Count one judged night; `injected`: (build, level) slowed in it, or None."""
        judged, alone = night.judgement, night.alone
        self.sessions += 1
        self.seconds["session"] += night.session.elapsed
        self.seconds["confirmation"] += sum(c.elapsed for c in night.confirmations)
        self.rounds[len(night.confirmations)] += 1
        self.hosts += any(h.slow for h in judged.hosts)
        self.fast += any(h.fast for h in judged.hosts)
        victim, level = injected or ("", 0.0)
        # the victim's test cases the injector slowed: all of them, or those of one
        # benchmark (MPIMATRIX_INJECT '<build>@<test>'); its other values are unchanged
        slowed = {c.name for c in night.session.cases if c.injected and c.build == victim}
        part = bool(slowed) and any(c.build == victim and not c.injected and c.measured
                                    for c in night.session.cases)
        streak = self._streak_of(injected)
        if streak and part:
            streak.whole_build = False
        if not injected:  # red: a REGRESSION line, exit code 1 of `mpimatrix run`
            self.nights["n"] += 1
            self.nights["red"] += bool(judged.regressions)
            self.nights["red without the watch rule"] += bool(alone.regressions)
            self.nights["with a value on watch"] += bool(judged.watched)
            self.log += [f"red night ({what}): {ln}" for ln in judged.regressions]
        for b in judged.builds:
            if injected and part and b.build == victim:
                continue  # one benchmark slowed: the build as a whole is neither
            kind = level if injected and b.build == victim else "unchanged"
            self.builds[kind, "n"] += 1
            self.builds[kind, "flagged"] += b.status == gate.REGRESSION
            if kind == "unchanged" and b.status == gate.REGRESSION:
                self.log.append(f"false alarm ({what}): {b.line()}")
            if streak and kind != "unchanged" and b.status == gate.REGRESSION:
                streak.build_named = streak.build_named or streak.nights
            spread = self.build_spread.get((b.partition, b.environ))
            if kind != "unchanged" and spread is not None:
                self.model_builds[level].append((
                    floors.caught(spread, b.tolerance, Kind.TIME, level),
                    b.status == gate.REGRESSION))
        for v, v_alone in zip(judged.verdicts, alone.verdicts, strict=True):
            gated = v.status.gated
            self.gated[gated] += 1
            if not gated:
                continue
            hit = v.build == victim and (not part or (v.key is not None
                                                      and v.key.case in slowed))
            kind = level if injected and hit else "unchanged"
            if kind != "unchanged" and v.is_share:
                continue  # an overlap does not move with the clock
            self.values[kind, "n"] += 1
            self.values[kind, "flagged"] += v.status == gate.REGRESSION
            self.values[kind, "flagged without the watch rule"] += (
                v_alone.status == gate.REGRESSION)
            self.values[kind, "on watch"] += v.status == gate.WATCH
            if not v.is_share:
                step = level if kind != "unchanged" else 0.0
                self.model_values[step].append(value_model(v, step))
            if streak and kind != "unchanged":
                streak_value(streak, v, level)
            if kind == "unchanged" and v_alone.status == gate.REGRESSION:
                self.log.append(f"outside alone ({what}): {v.line()}")

    def _streak_of(self, injected: tuple[str, float] | None) -> Streak | None:
        """The streak this night belongs to (a new one unless the night before had the
        same victim and level), None for an unchanged night."""
        if injected and injected == self._previous:
            streak = self.streaks[-1]
        elif injected:
            streak = Streak(injected)
            self.streaks.append(streak)
        else:
            streak = None
        self._previous = injected
        if streak:
            streak.nights += 1
        return streak

    def streak_lines(self) -> list[str]:
        """Per level, the share of injected values named by each night of the streaks
        (nothing when no step lasted more than one night)."""
        longest = max((s.nights for s in self.streaks), default=0)
        if longest < 2:
            return []
        out = [f"steps held {longest} nights running (--streak): named by night k, the "
               "watch rule included (a value alone: on watch, then a regression)"]
        for lv in self.levels:
            runs = [s for s in self.streaks if s.victim[1] == lv]
            for within, what in ((True, "values whose floor is at most the step"),
                                 (None, "all its values")):
                parts = [f"by night {k} {_caught(runs, k, within).text()}"
                         for k in range(1, longest + 1)]
                out.append(f"  +{lv:.0%}, {what}: {'; '.join(parts)}")
            if whole := [r for r in runs if r.whole_build]:
                out.append(f"  +{lv:.0%}, whole build named: " + "; ".join(
                    f"by night {k} " + Rate(sum(0 < r.build_named <= k for r in whole
                                                if r.nights >= k),
                                            sum(r.nights >= k for r in whole)).text()
                    for k in range(1, longest + 1)))
        return out

    @property
    def gated_rate(self) -> Rate:
        """The value-sessions gated among all."""
        return Rate(self.gated[True], sum(self.gated.values()))

    def rate(self, counter: Counter, kind, what: str = "flagged") -> Rate:
        return Rate(counter[kind, what], counter[kind, "n"])

    def curve(self) -> list[str]:
        """One line per injected level: the build named and its values flagged the night
        of the step, each with the floor model's prediction."""
        out = []
        for lv in self.levels:
            builds, values = self.model_builds.get(lv), self.model_values.get(lv)
            pb = f"; predicted {statistics.fmean(p for p, _ in builds):.0%}" if builds else ""
            alone = ""
            if values:
                k = Rate(sum(c for _, c in values), len(values))
                # the floor model's event: outside alone, a regression or on watch
                alone = (f"; alone (not with the build), a regression or on watch "
                         f"{k.text()}, predicted {statistics.fmean(p for p, _ in values):.0%}")
            out.append(f"  +{lv:.0%}: build named {self.rate(self.builds, lv).text()}{pb}; "
                       f"its values flagged {self.rate(self.values, lv).text()}{alone}")
        return out

    def lines(self) -> list[str]:
        """The experiment's figures, one per line."""
        n = self.nights["n"]
        out = [f"unchanged nights red: {Rate(self.nights['red'], n).text()}; goal at most "
               "1 in 20"]
        out += [f"unchanged nights {what}: {Rate(self.nights[what], n).text()}"
                for what in ("red without the watch rule", "with a value on watch")]
        out.append("detection curve, the night of the step (predicted: the floor model "
                   "from the blessed statistics):")
        out += self.curve()
        fa = self.rate(self.values, "unchanged")
        out.append(f"false alarms: {fa.text(2)} gated values of unchanged builds "
                   f"({n} unchanged sessions and the untouched builds of "
                   f"{self.sessions - n} injected ones)")
        alone = self.rate(self.values, "unchanged", "flagged without the watch rule")
        out.append(f"  without the watch rule: {alone.text(2)}; on watch: "
                   f"{self.values['unchanged', 'on watch']}")
        out.append(f"whole builds, false alarms: {self.rate(self.builds, 'unchanged').text(1)}"
                   " build verdicts")
        out.append(f"values gated: {self.gated_rate.text(1)} value-sessions")
        out.append(f"sessions with a HOST line: {self.hosts} of {self.sessions}")
        out.append(f"sessions where every build ran faster than its references (steps "
                   f"up to that much hidden): {self.fast} of {self.sessions}")
        out.append(self.cost_line())
        out += self.streak_lines()
        model = self.model_line()
        return [*out, model] if model else out

    def cost_line(self) -> str:
        """Machine minutes per night, the session's and its confirmation's, and how many
        nights measured again in how many rounds (policy.confirm_rounds)."""
        n = max(1, self.sessions)
        rounds = ", ".join(f"{r} round{'s' if r != 1 else ''} {k}"
                           for r, k in sorted(self.rounds.items()))
        return (f"machine time per night: session {self.seconds['session'] / 60 / n:.1f} "
                f"min, measured again {self.seconds['confirmation'] / 60 / n:.1f} min "
                f"(nights by rounds of measuring again: {rounds or 'none'})")

    def model_line(self) -> str:
        """The floor model's predictions against what was caught ('' without values)."""
        if not self.model_values:
            return ""
        injected = [p for lv in self.levels for p in self.model_values.get(lv, [])]
        builds = [p for lv in self.levels for p in self.model_builds.get(lv, [])]
        return ("detection floor model (results/floors.py), injected: "
                f"{model_check(injected, builds) if injected else 'none'}; "
                f"unchanged values {model_check(self.model_values.get(0.0, []), [], False)}")
