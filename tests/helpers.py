"""Helpers shared by the tests: paths and real ReFrame runs with the project config."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
CONFIG = ROOT / "site_config" / "reframe_config.py"
REFRAME = str(Path(sys.executable).parent / "reframe")


def main_job_env(results: Path, cache: Path | None) -> dict[str, str]:
    """The environment of an `mpimatrix run` a test starts: its results under `results`,
    no machine lock, no download, no injected fault; with `cache`, a project cache of its
    own, so that what the run builds (IMB or NPB from --sources) never reaches later
    tests, whose builds were discovered before it existed."""
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results), "MPIMATRIX_MACHINE_LOCK": "",
           "MPIMATRIX_DOWNLOAD": "0"}
    if cache is not None:
        env["MPIMATRIX_CACHE"] = str(cache)
    env.pop("MPIMATRIX_INJECT", None)
    return env


def recorded_report(name: str) -> dict:
    """A recorded real session report (tests/fixtures/reports/<name>.json.gz)."""
    import gzip

    with gzip.open(FIXTURES / "reports" / f"{name}.json.gz", "rt") as fp:
        return json.load(fp)


def run_reframe(results: Path, *args: str, env: dict | None = None,
                timeout: int = 1200) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run ReFrame with the project config, results under `results`; return the report."""
    report = results / "reports" / "test-report.json"
    report.unlink(missing_ok=True)
    full_env = {**os.environ, "MPIMATRIX_RESULTS": str(results), **(env or {})}
    cmd = [REFRAME, "-C", str(CONFIG), "--report-file", str(report), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=full_env, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def report_cases(report: dict, fixtures: bool = False) -> list[dict]:
    """The report's test cases (with the fixtures' too, e.g. the probe builds, if asked)."""
    return [tc for run in report["runs"] for tc in run["testcases"]
            if fixtures or not tc.get("fixture")]


def final_cases(report: dict) -> list[dict]:
    """Each test case's last attempt (a session run with --max-retries has one
    report run per retry round, holding only the cases retried)."""
    last = {}
    for run in report["runs"]:
        for tc in run["testcases"]:
            if not tc.get("fixture"):
                last[(tc["name"], tc["system"], tc["partition"], tc["environ"])] = tc
    return list(last.values())


def retried_failures(report: dict) -> list[dict]:
    """The failed attempts that were retried (all but the last report run)."""
    return [tc for run in report["runs"][:-1] for tc in run["testcases"]
            if tc["result"] != "pass"]


def passed_cases(proc: subprocess.CompletedProcess, report: dict) -> list[dict]:
    """The report's test cases, asserting that ReFrame succeeded and every case passed
    (or failed as expected: a known fault of an MPI, XFAIL)."""
    failed = [f"{tc['display_name']} {tc['partition']}+{tc['environ']}: {tc['fail_reason']}"
              for tc in report_cases(report, fixtures=True)
              if tc["result"] not in ("pass", "xfail")]
    assert proc.returncode == 0 and not failed, "\n".join(failed) or proc.stdout[-2000:]
    return report_cases(report)


def six_pass_session(i: int, first: int = 0, last: int = 6) -> dict:
    """Passes first..last-1 of the i-th (1..7) recorded six-pass quick session of a quiet
    machine (tests/fixtures/reports/README.md)."""
    import gzip

    with gzip.open(FIXTURES / "reports" / f"imb-6pass-unchanged-{i}.json.gz", "rt") as fp:
        session = json.load(fp)
    session["runs"] = session["runs"][first:last]
    return session


def offline_kit_or_skip() -> Path:
    """The offline kit, or skip saying what it is for."""
    import pytest

    from mpimatrix.paths import offline_kit

    kit = offline_kit()
    if kit is None:
        pytest.skip("no offline kit (../shared/offline or MPIMATRIX_OFFLINE_KIT): it holds "
                    "the OSU and IMB sources these tests build from")
    return kit


def require_lmod() -> None:
    """Skip without Lmod, saying how to install it; fail instead where
    MPIMATRIX_REQUIRE_LMOD=1 (CI, which installs it)."""
    import pytest

    from mpimatrix.builds.lmod import INSTALL, lmod_home

    if lmod_home() is None:
        why = f"Lmod is not installed: {INSTALL}"
        if os.environ.get("MPIMATRIX_REQUIRE_LMOD") == "1":
            pytest.fail(f"MPIMATRIX_REQUIRE_LMOD=1 but {why}")
        pytest.skip(why)


def skip_or_fail(why: str) -> None:
    """Skip saying why; fail instead where MPIMATRIX_REQUIRE_SERVERS=1 (CI, which installs
    the servers the tests start)."""
    import pytest

    if os.environ.get("MPIMATRIX_REQUIRE_SERVERS") == "1":
        pytest.fail(f"MPIMATRIX_REQUIRE_SERVERS=1 but {why}")
    pytest.skip(why)


def require_programs(*programs: str, package: str) -> dict[str, str]:
    """Each program's path (PATH, then the folders Debian puts server binaries in); skip
    naming the Debian package when one is missing, fail instead where
    MPIMATRIX_REQUIRE_SERVERS=1 (CI, which installs them)."""
    import shutil


    found = {}
    for program in programs:
        path = shutil.which(program) or next(
            (str(p) for p in sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{program}"))),
            None)
        if path is None:
            skip_or_fail(f"{program} is not installed: apt install {package}")
        found[program] = path
    return found


#: Built from the offline kit when no build has OSU: one build of each family.
KIT_OSU_BUILDS = ("openmpi-4.1.4-debian", "mpich-4.0.2-debian")


#: The caches osu_from_kit built, by the builds they hold: built once per test session
#: (each build of OSU costs a minute or two of CI; the tests only read them).
_OSU_CACHES: dict[tuple[str, ...], Path] = {}


def osu_from_kit(buildset, cache: Path) -> dict:
    """The environment OSU runs need: none when a build has OSU; with the offline kit, a
    cache where `mpimatrix bench-build` put OSU 7.4 for KIT_OSU_BUILDS (`cache`, unless an
    earlier test of the session built them). Skips, saying how to get OSU, without
    either."""
    import pytest

    from mpimatrix.paths import offline_kit

    if any("osu" in b.benchmarks for b in buildset.builds):
        return {}
    kit = offline_kit()
    names = [n for n in KIT_OSU_BUILDS if n in {b.name for b in buildset.builds}]
    if kit is None or not names:
        pytest.skip("no build has OSU Micro-Benchmarks: run `mpimatrix bench-build --suite "
                    "osu --source <kit, OSU tarball or tree>` (Debian/PyPI MPIs have no OSU "
                    "package), or use a Spack environment with osu-micro-benchmarks")
    built = _OSU_CACHES.get(tuple(names))
    if built is not None and built.is_dir():
        return {"MPIMATRIX_CACHE": str(built)}
    env = {"MPIMATRIX_CACHE": str(cache)}
    base = {k: v for k, v in os.environ.items() if not k.startswith("MPIMATRIX_SOURCES")}
    subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "bench-build", "--suite",
                    "osu", "--source", str(kit), *[a for n in names for a in ("--build", n)]],
                   env={**base, **env}, check=True, capture_output=True, timeout=1200)
    _OSU_CACHES[tuple(names)] = cache
    return env



def reported_against(report: dict, refs: dict) -> dict:
    """A recorded session as ReFrame would have written it, run against `refs` (a stored
    night of a fixture store): each value's reference tuple from there."""
    out = json.loads(json.dumps(report))
    for run in out.get("runs") or []:
        for tc in run.get("testcases") or []:
            entry = (((refs.get(tc["name"].split()[0]) or {})
                      .get(f"{tc.get('system')}:{tc.get('partition')}") or {})
                     .get(tc.get("environ", "?")) or {}).get(tc.get("ref_key")) or {}
            for fullvar, pv in (tc.get("perfvalues") or {}).items():
                ref = entry.get(fullvar.rsplit(":", 1)[-1])
                pv[1:4] = [ref[0], ref[1], ref[2]] if ref else [0, None, None]
    return out


def judged(session, confirmations=None, stats=None, policy=None):
    """gate.judge of sessions given as reports (a test's fixtures) or loaded."""
    from mpimatrix.results import gate
    from mpimatrix.results.measurements import as_session
    from mpimatrix.results.policy import POLICY_KEY, from_record
    from mpimatrix.results.reference_set import ReferenceSet
    # no policy given: the one bless recorded in the statistics, as the gate takes it
    policy = policy or from_record((stats or {}).get(POLICY_KEY))
    return gate.judge(as_session(session), [as_session(c) for c in confirmations or []],
                      ReferenceSet.of(stats=stats or {}, policy=policy))


def slow_class(session: dict, factor: float) -> dict:
    """Every small-message time (host.value_class: 4 KiB or less, or no size) `factor`
    times longer."""
    from mpimatrix.results.host import value_class
    from mpimatrix.results.values import perf_values
    for run in session["runs"]:
        for tc in run["testcases"]:
            for pv, raw in zip(perf_values(tc), (tc.get("perfvalues") or {}).values(),
                               strict=True):
                if (raw[0] is not None and not pv.is_share
                        and value_class(pv.size, pv.higher_is_better) == "small-message times"):
                    raw[0] = raw[0] * factor
    return session


def slowed(session: dict, build: str, level: float, test: str = "") -> dict:
    """A copy of the session with every timed interval of `build` `level` longer, as the
    clock injector makes it (times x (1 + level), rates / (1 + level), shares untouched),
    its test cases marked injected as `mpimatrix run` marks them; with `test` (a regex),
    only the build's test cases whose name matches ('<build>@<test>')."""
    import copy
    import re
    out = copy.deepcopy(session)
    for run in out["runs"]:
        for tc in run["testcases"]:
            if tc.get("build_name") != build or not re.search(test, tc["name"]):
                continue
            tc["injected"] = f"clock={level}"
            for pv in (tc.get("perfvalues") or {}).values():
                if pv[0] is not None and pv[4] != "%":
                    pv[0] = pv[0] / (1 + level) if pv[4] == "MB/s" else pv[0] * (1 + level)
    return out
