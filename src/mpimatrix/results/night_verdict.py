"""The night's one verdict: what the exit code of `mpimatrix run`, the headline of the
HTML report, the Markdown summary and the text table all say about a night.

Worst first: a test case that failed for another reason than its references (FAILED),
an expected failure that passed (XPASS: a known fault is gone, news to act on), a
regression on a night other programs disturbed (DISTURBED: run again), a confirmed
regression, the machine slow on every build at once (HOST: run again), values on
watch, green."""

from __future__ import annotations

from dataclasses import dataclass

from .gate import Judgement
from .measurements import Session
from .status import Word

#: `mpimatrix run`'s exit codes (BAD_INPUT and NOT_RUN come before any verdict).
OK, FAILED, BAD_INPUT, NOT_RUN, MACHINE = 0, 1, 2, 3, 4
#: How the text table's verdict line starts.
VERDICT_LINE = "VERDICT: "


class Verdict(Word):
    """A night's verdict, worst first; its value is the word every rendering shows."""

    FAILED = "FAILED"
    XPASS = "XPASS"
    DISTURBED = "DISTURBED"
    REGRESSION = "REGRESSION"
    HOST = "HOST"
    WATCH = "WATCH"
    GREEN = "GREEN"

    @property
    def exit_code(self) -> int:
        return {Verdict.FAILED: FAILED, Verdict.XPASS: FAILED, Verdict.REGRESSION: FAILED,
                Verdict.DISTURBED: MACHINE, Verdict.HOST: MACHINE}.get(self, OK)

    @property
    def css(self) -> str:
        """The report's colour: good, warn (the machine: run again; on watch) or bad."""
        return ("bad" if self.exit_code == FAILED else
                "good" if self is Verdict.GREEN else "warn")


@dataclass(frozen=True)
class NightCounts:
    """What the headline counts: test cases (distinct, over every run of the session)."""

    cases: int
    failed: int
    xpassed: int
    regressions: int
    watched: int
    slow_hosts: int
    #: skipped test cases (what a build lacks, e.g. NPB's Fortran kernels without mpif90)
    skipped: int = 0


@dataclass(frozen=True)
class NightVerdict:
    verdict: Verdict
    counts: NightCounts

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def sentence(self) -> str:
        """The headline after the verdict's word."""
        n = self.counts
        watch = f"; {n.watched} value(s) on watch" if n.watched else ""
        regs = f"{n.regressions} performance regression(s)"
        failed = f"{n.failed} failed test case(s)"
        passed = (f"{n.cases - n.skipped} test case(s) passed, {n.skipped} skipped (their "
                  "rows say why)" if n.skipped else f"all {n.cases} test case(s) passed")
        xpass = (f"{n.xpassed} expected failure(s) passed (a known fault gone: drop it from "
                 "the known faults)")
        return {
            Verdict.FAILED: ", ".join([failed, *([regs] if n.regressions else []),
                                       *([xpass] if n.xpassed else [])]),
            Verdict.XPASS: ", ".join([xpass, *([regs] if n.regressions else [])]),
            Verdict.DISTURBED: f"{regs} on a night other programs disturbed: not judged, "
                               "run again on a quiet machine",
            Verdict.REGRESSION: regs,
            Verdict.HOST: "no regression; the machine ran slow on every build at once: "
                          "run again on a quiet machine",
            Verdict.WATCH: f"no regression: {passed}",
            Verdict.GREEN: f"no regression: {passed}",
        }[self.verdict] + watch

    def headline(self) -> str:
        """'REGRESSION: 2 performance regression(s)' (the report's and summary's)."""
        return f"{self.verdict}: {self.sentence()}"

    def line(self) -> str:
        """The text table's last line, which `mpimatrix nightly` reads."""
        return f"{VERDICT_LINE}{self.headline()} (exit {self.exit_code})"


def night_verdict(session: Session, judged: Judgement, disturbed: bool) -> NightVerdict:
    """The night's verdict from its test cases, its judgement and whether other programs
    disturbed it (the session or a confirmation)."""
    def key(c):  # the same test case in every run of the session
        return c.name, c.partition, c.environ

    failed = {key(c) for c in session.cases if c.failed_in_sanity}
    xpassed = {key(c) for c in session.cases if c.result == "xpass"}
    # skipped in every run of the session (a case that ran in one run is not skipped)
    ran = {key(c) for c in session.cases if c.result != "skip"}
    skipped = {key(c) for c in session.cases} - ran
    counts = NightCounts(len({key(c) for c in session.cases}), len(failed), len(xpassed),
                         len(judged.regressions), len(judged.watched),
                         sum(h.slow for h in judged.hosts), len(skipped))
    verdict = (Verdict.FAILED if failed else Verdict.XPASS if xpassed
               else (Verdict.DISTURBED if disturbed else Verdict.REGRESSION)
               if counts.regressions else Verdict.HOST if counts.slow_hosts
               else Verdict.WATCH if counts.watched else Verdict.GREEN)
    return NightVerdict(verdict, counts)
