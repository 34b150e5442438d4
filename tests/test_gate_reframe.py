"""The regression gate end to end, for real: `mpimatrix run` sessions on this
machine's MPICH-ABI builds, `mpimatrix bless` from them, an unchanged session
that passes, and a session with the regression injector preloaded into one
build's benchmarks that fails naming build, benchmark, placement and size.

The sessions run as the nightly gates them: 3 interleaved passes (`--mode compare`,
the quick catalogue with --reruns=2), judged by the best pass. One pass per session
is not what the gate is for: on a noisy VM whole sessions run 3x slower, so a
reference blessed from one-pass sessions can sit in the slow mode and a 4x
injected slowdown of a fast session then reads as +19 % (seen in CI)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.mpi, pytest.mark.reframe]

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
SELECT = ["--", "-n", r"ImbCheck.*%benchmark=MPI1:(PingPong|Allreduce)$"]


def mpimatrix(results: Path, *args: str, inject: str = "") -> subprocess.CompletedProcess:
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results)}
    env.pop("MPIMATRIX_INJECT", None)
    if inject:
        env["MPIMATRIX_INJECT"] = inject
    return subprocess.run([MPIMATRIX, *args], capture_output=True, text=True, env=env,
                          timeout=1800)


def quiet_run(results: Path, *args: str, inject: str = "") -> subprocess.CompletedProcess:
    """`mpimatrix run` on a quiet machine: a session other programs disturbed, or during
    which every build ran slow at once (a HOST line: the machine), is run again, twice
    at most, else the test is skipped."""
    for _ in range(3):
        proc = mpimatrix(results, "run", "--mode", "compare", *args, inject=inject)
        busy = [ln for ln in proc.stdout.splitlines() if ln.startswith(("DISTURBED:", "HOST "))]
        if not busy:
            return proc
    pytest.skip("this machine was busy: " + busy[0])


@pytest.fixture(scope="module")
def builds(buildset):
    """Every build with IMB (here three: each value is judged against the host)."""
    names = [b.name for b in buildset.builds if "imb" in b.benchmarks]
    if len(names) < 2:
        pytest.skip("needs two builds with IMB (the Intel MPI wheel and an MPICH build)")
    return names


@pytest.fixture(scope="module")
def blessed(builds, tmp_path_factory):
    results = tmp_path_factory.mktemp("gate")
    only = [a for b in builds for a in ("--only", f"^{re.escape(b)}$")]
    for _ in range(3):
        proc = quiet_run(results, *only, "--no-confirm", *SELECT)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # from ReFrame's results database, as a site blesses a week of nightlies
    proc = mpimatrix(results, "bless", "--tolerance", "0.5", "--since", "1d",
                     "--mode", "compare")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"\d+ value\(s\) from 9 run\(s\), [1-9]\d* gated", proc.stdout), proc.stdout
    return results, only


def gated_values(results: Path, build: str, benchmark: str = "") -> int:
    """How many values of the build (of one IMB benchmark, "MPI1:PingPong") the bless gated:
    on a busy machine it leaves a build's values whose spread needs a tolerance over 50 %
    out (a CI bless left all four of Debian MPICH's out, and a 3x slowdown of it was GREEN)."""
    from mpimatrix.results.reference_set import ReferenceSet

    env = build.replace(".", "_")
    return sum(1 for b in ReferenceSet.of_store(results).blessed.values()
               if b.gated and b.key.environ == env and b.key.ref_key.startswith(benchmark))


def victim_of(results: Path, builds: list[str], benchmark: str = "", *, need: int = 2,
              name: str = "") -> str:
    """The first build (whose name matches `name`, a regex) the bless gated `need` values
    of; the test is skipped, saying so, when the bless gated none so well."""
    for b in builds:
        if re.search(name, b) and gated_values(results, b, benchmark) >= need:
            return b
    counts = {b: gated_values(results, b, benchmark) for b in builds if re.search(name, b)}
    pytest.skip(f"the bless gated fewer than {need} {benchmark or 'IMB'} value(s) of every "
                f"build {name or ''} (gated per build: {counts}): their spread on this "
                "machine needs a tolerance over 50 %")


def test_unchanged_session_passes_the_gate(blessed):
    """An unchanged session passes; a second one is run when the first had a false alarm.
    On a 2-core VM a whole session can switch mode (MPICH 8 B PingPong 0.11 us blessed in
    three sessions, 0.18-0.24 us in all six samples of the next; seen in CI), which no
    tolerance up to 50 % passes: the gate's false-alarm rate is a measured figure
    (`mpimatrix validate gate`: 0.1-6 % here), so one session is allowed one."""
    results, only = blessed
    runs = []
    for _ in range(2):
        proc = quiet_run(results, *only, *SELECT)
        runs.append(proc.stdout)
        assert re.search(r"performance value\(s\), [1-9]\d* gated, \d+ regression\(s\)",
                         proc.stdout), proc.stdout[-3000:]
        if proc.returncode == 0:
            break
        # a failure here is a regression verdict, never a failed test case
        assert proc.returncode == 1 and " 0 failed," in proc.stdout, proc.stdout[-3000:]
    assert proc.returncode == 0, "\n---\n".join(r[-2000:] for r in runs)
    # a value on watch names what it would become ("a REGRESSION if outside next time")
    assert not re.search(r"^REGRESSION ", proc.stdout, re.M), proc.stdout[-3000:]
    assert re.search(r"performance value\(s\), [1-9]\d* gated, 0 regression\(s\)", proc.stdout)


def test_injected_slowdown_fails_naming_build_benchmark_placement_size(blessed, builds):
    results, only = blessed
    victim = victim_of(results, builds)
    # an unchanged session before this one may have confirmed a noisy value too
    confirms_before = set((results / "reports").glob("*-confirm.json"))
    proc = quiet_run(results, *only, *SELECT, inject=f"^{re.escape(victim)}$:clock=3.0")
    if proc.returncode == 0 and f"\nWATCH {victim} " in proc.stdout:
        # a noisy bless may gate one value of the victim only: alone outside, it is on
        # watch the first night and a regression the next (watch.py; seen in CI)
        proc = quiet_run(results, *only, *SELECT, inject=f"^{re.escape(victim)}$:clock=3.0")
    assert proc.returncode == 1, proc.stdout[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("REGRESSION ")]
    assert lines, proc.stdout[-3000:]
    assert all(ln.startswith(f"REGRESSION {victim} Imb MPI1:") for ln in lines), lines
    if len(builds) >= 3:  # judged against the host, which the other builds set
        # (the median build where another build was outside too, a HOST line then)
        assert all(re.search(r" against the (host \(host factor|(other builds' median|median "
                             r"build) \(factor) ", ln) for ln in lines), lines
        assert re.search(r"^(host local:default: every build [+-]\d|HOST local:default: )",
                         proc.stdout, re.M), proc.stdout[-3000:]
    # e.g. "REGRESSION mpich-5.0.2-pypi Imb MPI1:PingPong intranode latency at 8 B: +290%
    # against the host (host factor 1.01, 0.99) (best of 6 sample(s) [...] us vs
    # reference 0.21 us, tolerance +50%)": 3 passes and 3 confirmation samples
    pat = (rf"^REGRESSION {re.escape(victim)} Imb MPI1:(PingPong|Allreduce) intranode "
           r"(latency|t_avg|bandwidth) at \d+ (B|KiB|MiB): [+-]\d+%( against the (host "
           r"\(host factor|(other builds' median|median build) \(factor) [\d., ]+\))? "
           r"\(best of \d+ sample\(s\) "
           r"\[.*\] (us|MB/s) vs reference .* tolerance [+-]\d+%\)$")
    assert any(re.match(pat, ln) for ln in lines), lines
    # the confirmation session is stored, tagged with the session it confirms
    confirms = sorted(set((results / "reports").glob("*-confirm.json")) - confirms_before)
    assert confirms, "the injected session was not confirmed"
    info = json.loads(confirms[-1].read_text())["session_info"]
    assert info["confirms"] and info["mode"] == "compare"
    # blessing the whole period again leaves out the injected session and its confirmation
    proc = mpimatrix(results, "bless", "--tolerance", "0.5", "--since", "1d",
                     "--output", str(results / "again.yaml"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (f"left out session {info['confirms']}: the regression injector slowed {victim}"
            in proc.stdout), proc.stdout
    assert f"left out session {info['uuid']}: a confirmation of session {info['confirms']}" \
        in proc.stdout, proc.stdout


def test_a_value_alone_is_on_watch_the_first_night_and_a_regression_the_next(
        blessed, builds, tmp_path):
    """One build, IMB PingPong, in a store holding the blessed references with one value's
    reference set to a twentieth of what it was (a regression of that value alone) and no
    earlier session: the first night the value is on WATCH (exit 0), the next night,
    outside again, a REGRESSION naming the first session (exit 1)."""
    import yaml

    results, _ = blessed
    store = tmp_path / "store"
    shutil.copytree(results / "references", store / "references")
    victim = builds[0]
    refs_file = store / "references" / "local.yaml"
    refs = yaml.safe_load(refs_file.read_text())
    env = victim.replace(".", "_")
    entry = refs["ImbCheck"]["local:default"][env]["MPI1:PingPong@intranode"]
    # a twentieth, not a third: this machine's 8 B latency moves x4.6 when its state changes
    # (0.12 <-> 0.56 us), and a CI night measured 0.17, 0.57, 0.48 us against a third of a
    # 0.63 us reference: the passes straddled the tolerance and nothing was on watch
    entry["latency_8B"] = [entry["latency_8B"][0] / 20, None, 0.5, "us"]
    refs_file.write_text(yaml.safe_dump(refs))
    args = ("--only", f"^{re.escape(victim)}$", "--", "-n",
            r"ImbCheck.*%benchmark=MPI1:PingPong$")
    first = quiet_run(store, *args)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    watched = [ln for ln in first.stdout.splitlines() if ln.startswith("WATCH ")]
    assert len(watched) == 1 and watched[0].startswith(
        f"WATCH {victim} Imb MPI1:PingPong intranode latency at 8 B: +"), first.stdout[-3000:]
    assert watched[0].endswith("not outside in the session before: a REGRESSION if outside "
                               "next time)"), watched
    assert not re.search(r"^REGRESSION ", first.stdout, re.M)
    assert re.search(r"0 regression\(s\), 1 on watch; session ", first.stdout)
    uuid = re.search(r"session ([0-9a-f-]{36})$", first.stdout, re.M)[1]
    second = quiet_run(store, *args)
    assert second.returncode == 1, second.stdout[-3000:]
    lines = [ln for ln in second.stdout.splitlines() if ln.startswith("REGRESSION ")]
    assert len(lines) == 1 and lines[0].startswith(
        f"REGRESSION {victim} Imb MPI1:PingPong intranode latency at 8 B: +"), lines
    assert lines[0].endswith(f"; outside in session {uuid[:8]} too)"), lines
    # the replay judges the same stored sessions as the live gate did, line for line
    # (a night other programs disturbed, run again, is stored too, and skipped by both
    # as an earlier night of the watch rule)
    from mpimatrix.validation.replay import replay_store

    again = re.search(r"session ([0-9a-f-]{36})$", second.stdout, re.M)[1]
    by_uuid = {n.session.uuid: n for n in replay_store(store)}
    replayed = [by_uuid[uuid], by_uuid[again]]
    live = [[ln for ln in run.stdout.splitlines() if ln.startswith(("REGRESSION ", "WATCH "))]
            for run in (first, second)]
    assert [[*n.judgement.regressions, *n.judgement.watched] for n in replayed] == live


def test_a_verdict_close_to_its_threshold_is_measured_again_round_after_round(
        blessed, builds, tmp_path):
    """The blessed references with a policy of three rounds of measuring again and a band
    wide enough that every regression stays close: one build's PingPong slowed 3x is
    measured again three times (each round stored as a confirmation of the session),
    the verdict pools every round's samples, and the rounds stop at three. In a store
    with no earlier night one gated value of the build is on watch (exit 0), two or more
    are regressions at once (exit 1)."""
    import yaml

    results, _ = blessed
    store = tmp_path / "store"
    shutil.copytree(results / "references", store / "references")
    stats_file = store / "references" / "local.stats.yaml"
    stats = yaml.safe_load(stats_file.read_text())
    stats["$policy"] = {**stats.get("$policy", {}), "confirm_rounds": 3,
                        "close_spreads": 1000.0}
    stats_file.write_text(yaml.safe_dump(stats))
    victim = victim_of(results, builds, "MPI1:PingPong", need=1)
    proc = quiet_run(store, "--only", f"^{re.escape(victim)}$", "--", "-n",
                     r"ImbCheck.*%benchmark=MPI1:PingPong$",
                     inject=f"^{re.escape(victim)}$:clock=3.0")
    named = [ln for ln in proc.stdout.splitlines() if ln.startswith(("WATCH ", "REGRESSION "))]
    red = any(ln.startswith("REGRESSION ") for ln in named)
    assert proc.returncode == (1 if red else 0), proc.stdout[-3000:] + proc.stderr[-2000:]
    assert re.search(r"^mpimatrix: round 1 of measuring again took [\d.]+ min; \d+ test "
                     r"case\(s\) still close to their threshold", proc.stdout, re.M)
    assert "(round 3 of at most 3)" in proc.stdout and "round 4" not in proc.stdout
    uuid = re.search(r"session ([0-9a-f-]{36})$", proc.stdout, re.M)[1]
    rounds = [json.loads(f.read_text())["session_info"]
              for f in sorted((store / "reports").glob("*-confirm.json"))]
    assert [r["confirms"] for r in rounds] == [uuid] * 3
    assert named and all("(best of 12 sample(s) " in ln for ln in named), named


def test_injected_message_delay_is_real_time_and_reaches_only_the_named_test(builds, tmp_path):
    """The delay mode busy-waits in every send: 8 B PingPong takes at least it. Named as
    `<build>@PingPong`, the build's Allreduce in the same session runs as it is."""
    victim = builds[0]
    proc = quiet_run(tmp_path, "--only", f"^{re.escape(victim)}$", "--no-confirm", "--",
                     "-n", r"ImbCheck.*%benchmark=MPI1:(PingPong|Allreduce)$",
                     inject=f"^{re.escape(victim)}$@PingPong:msg_us=300")
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = json.loads(Path(re.search(r"^report: (\S+)$", proc.stdout, re.M)[1]).read_text())
    cases = {tc["name"].rsplit(":", 1)[-1]: tc for r in report["runs"] for tc in r["testcases"]
             if not tc["fixture"]}
    assert set(cases) == {"PingPong", "Allreduce"}, list(cases)
    assert cases["PingPong"]["injected"] == "msg_us=300"
    latency = cases["PingPong"]["perfvalues"]["local:default:latency_8B"][0]
    assert latency >= 295, latency  # one-way: one delayed send per message
    assert not cases["Allreduce"].get("injected")
    untouched = cases["Allreduce"]["perfvalues"]["local:default:t_avg_8B"][0]
    assert untouched < 100, untouched  # a 2-rank 8 B allreduce sends at least one message


def test_changes_names_a_step_once_and_exits_1_for_cron(builds, tmp_path):
    """Six sessions of three benchmarks (six values per build) in 3 interleaved passes, as
    the nightly runs them (the history follows each session's best pass; one pass per
    session was seen to swing values by 2-4x on this VM and hide a 2x step), the last
    three with one build three times as slow: `mpimatrix changes` names the step at the
    first slow session, for the whole build and for its values, and exits 1; run again, it
    has nothing new and exits 0. The victim is the Intel MPI build when there is one: its
    values hold within a few percent between sessions here, while Debian MPICH (ch4:ucx)
    moves by up to 2x between runs, and a 2x step of it measured in 3 sessions against 3
    read p=0.005 in one run and missed p < 0.01 in a CI run."""
    victim = next((b for b in builds if b.startswith("impi-")), builds[0])
    only = [a for b in builds for a in ("--only", f"^{re.escape(b)}$")]
    select = ["--", "-n", r"ImbCheck.*%benchmark=MPI1:(PingPong|Allreduce|Bcast)$"]
    uuids = []
    for i in range(6):
        inject = f"^{re.escape(victim)}$:clock=2.0" if i >= 3 else ""
        proc = mpimatrix(tmp_path, "run", "--mode", "compare", "--no-confirm", *only, *select,
                         inject=inject)
        assert proc.returncode in (0, 1, 4), proc.stdout[-3000:] + proc.stderr[-2000:]
        uuids.append(re.search(r"session ([0-9a-f-]{36})$", proc.stdout, re.M)[1])
    proc = mpimatrix(tmp_path, "changes", "--since", "1d")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    new = [ln for ln in proc.stdout.splitlines() if ln.startswith("NEW SLOWER ")]
    mine = [ln for ln in new if ln.startswith(f"NEW SLOWER {victim} ")]
    assert mine and all(f"from session {uuids[3]} " in ln for ln in mine), proc.stdout
    # the injector changed no software: each step says so, between the sessions around it
    lines = proc.stdout.splitlines()
    after = [lines[lines.index(ln) + 1] for ln in mine]
    assert all(a == f"      software session {uuids[2][:8]} -> {uuids[3][:8]}: no recorded "
               "software change" for a in after), after
    if len(builds) >= 3:  # judged against the host; the build as a whole has a series
        # Each point of it is the build's median over the session's host factor, the median
        # of the three builds: another build's jitter enters it, and in a CI run whose
        # machine changed state the 3x step of the whole build missed p < 0.01 (3 sessions
        # against 3) while half its values stepped at p < 0.001. Divided by the host's
        # level instead it would not miss, but a 10 % step was then found by the third
        # night in 3 of 6 cases instead of 5 of 6 (docs/history.md): the whole build, or half
        # of its values at that session
        whole = [ln for ln in mine
                 if ln.startswith(f"NEW SLOWER {victim} (the whole build, local:default): +")]
        values = {ln.split(" from session ")[0] for ln in mine} - set(whole)
        assert whole or 2 * len(values) >= 6, proc.stdout
    again = mpimatrix(tmp_path, "changes", "--since", "1d")
    assert again.returncode == 0 and "NEW " not in again.stdout, again.stdout


def test_a_regression_names_what_changed_since_the_build_last_passed(blessed, builds,
                                                                     tmp_path):
    """A session where Debian's libucx0 is newer (dpkg-query answers so) and the Debian
    MPICH build is three times as slow: its REGRESSION lines are followed by what changed
    since the last session where those values passed, naming that package; `mpimatrix
    diff` names it for the builds that load libucx0 only, says "no recorded software
    change" between two unchanged sessions, and the HTML report has it under "What
    changed"."""
    from test_software_changes import fake_dpkg_query

    results, only = blessed
    # Debian's MPICH is built on UCX (libmpich12 loads libucx0; Open MPI only through its
    # pml plugin, which the software record does not follow)
    victim = victim_of(results, builds, name=r"^mpich-.*-debian$")
    fake = fake_dpkg_query(tmp_path / "bin", "libucx0", "1.99.0-1~test")
    path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    env = {**os.environ, "PATH": path, "MPIMATRIX_RESULTS": str(results),
           "MPIMATRIX_INJECT": f"^{re.escape(victim)}$:clock=3.0"}
    for _ in range(3):  # as quiet_run: a disturbed session, or a HOST line, runs again
        proc = subprocess.run([MPIMATRIX, "run", "--mode", "compare", *only, *SELECT],
                              capture_output=True, text=True, env=env, timeout=1800)
        busy = [ln for ln in proc.stdout.splitlines()
                if ln.startswith(("DISTURBED:", "HOST "))]
        if not busy:
            break
    else:
        pytest.skip(f"this machine was busy during the session: {busy[0]}")
    assert proc.returncode == 1, proc.stdout[-3000:]
    out = proc.stdout.splitlines()
    head = next(i for i, ln in enumerate(out) if ln.startswith(f"  {victim}: changed since "))
    assert out[head - 1].startswith(f"REGRESSION {victim} "), out[head - 1]
    assert re.match(rf"  {re.escape(victim)}: changed since session [0-9a-f]{{8}} \(\d{{4}}-"
                    r"\d\d-\d\d \d\d:\d\d UTC\), the last where these values passed:$",
                    out[head]), out[head]
    assert re.match(r"    libucx0 \(deb\): \S+ -> 1\.99\.0-1~test$", out[head + 1]), out[head:]
    assert not out[head + 2].startswith("    "), out[head:]  # nothing else changed

    sessions = [json.loads(p.read_text())["session_info"]["uuid"] for p in sorted(
        (results / "reports").glob("compare-*.json"), key=lambda p: p.stat().st_mtime)
        if not p.name.endswith("-confirm.json")]
    new = re.search(r"session ([0-9a-f-]{36})$", proc.stdout, re.M)[1]
    diff = mpimatrix(results, "diff", sessions[0], new)
    assert diff.returncode == 0, diff.stdout + diff.stderr
    loading = [b for b in builds if b.endswith("-debian")]
    assert re.search(rf"^  {re.escape(victim)}:\n    libucx0 \(deb\): \S+ -> 1\.99\.0-1~test$",
                     diff.stdout, re.M), diff.stdout
    named = re.findall(r"^  (\S+):$", diff.stdout, re.M)
    assert set(named) <= set(loading) and victim in named, diff.stdout
    same = mpimatrix(results, "diff", sessions[0], sessions[1])
    assert same.returncode == 0 and "  no recorded software change" in same.stdout, same.stdout

    report = mpimatrix(results, "report", "--html", "--session", new, "--output-dir",
                       str(tmp_path / "html"), "--name", "changed")
    assert report.returncode == 0, report.stdout + report.stderr
    html = (tmp_path / "html" / "changed.html").read_text()
    assert "<h3>What changed</h3>" in html
    assert re.search(r"<code>libucx0 \(deb\): \S+ -&gt; 1\.99\.0-1~test</code>", html)
