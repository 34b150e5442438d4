"""The session index beside ReFrame's results database, the retention rule, and a
generated store of nightlies: the commands give the same verdicts and change points
from the trimmed, indexed sessions (and after the full ones are pruned) as from the
full sessions ReFrame stored."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import recorded_report
from stored_db import store

from mpimatrix.results import summary
from mpimatrix.results.history import steps_of
from mpimatrix.results.measurements import load
from mpimatrix.results.report import make_report
from mpimatrix.run import session_index

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
COMPARE = "compare-local-5builds"  # a recorded real `--mode compare` session, 5 builds


def _env(results: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MPIMATRIX_", "RFM_"))}
    return {**env, "MPIMATRIX_RESULTS": str(results), **extra}


def _mpimatrix(results: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, *args], capture_output=True, text=True,
                          env=_env(results, **extra), timeout=900)


def _reframe_uuids(results: Path) -> set[str]:
    with sqlite3.connect(results / "db" / "results.db") as conn:
        return {u for (u,) in conn.execute("SELECT uuid FROM sessions")}


def test_a_trimmed_session_reads_as_the_full_one():
    """What the index keeps of a session is what every command reads: the summary, the
    report and the history come out the same, at less than half the size."""
    full = recorded_report(COMPARE)
    cut = session_index.trimmed(full)
    assert len(json.dumps(cut)) < 0.6 * len(json.dumps(full))
    assert summary.format_table(load(cut)) == summary.format_table(load(full))
    assert make_report([cut]).markdown == make_report([full]).markdown
    later = json.loads(json.dumps(full))
    later["session_info"].update(uuid="later", time_start_unix=full["session_info"][
        "time_start_unix"] + 86400)
    a = steps_of([load(full), load(later)])
    b = steps_of([load(cut), load(session_index.trimmed(later))])
    assert [s.key for s in a.series] == [s.key for s in b.series]
    assert [c.line() for c in a.changes] == [c.line() for c in b.changes]


def test_sessions_are_indexed_on_first_read_and_stay_after_reframe_forgets_them(
        tmp_path, monkeypatch):
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path))
    from mpimatrix.paths import results_db
    from mpimatrix.run.selectors import select, sessions_in
    from mpimatrix.run.stored import stored_index

    now = time.time()
    full = recorded_report(COMPARE)
    sessions = []
    for i in range(3):
        s = json.loads(json.dumps(full))
        s["session_info"].update(uuid=f"0000000{i}-0000-4000-8000-000000000000",
                                 time_start_unix=now - 3600 * (3 - i))
        sessions.append(s)
    store(results_db(), sessions)
    assert not session_index.index_path().exists()
    got = sessions_in("now-1d:now")
    assert [s["session_info"]["uuid"][:8] for s in got] == ["00000000", "00000001", "00000002"]
    assert "stagedir" not in got[0]["runs"][0]["testcases"][0]  # trimmed
    assert set(session_index.listed()) == {s["session_info"]["uuid"] for s in sessions}
    # ReFrame's copy gone (as `mpimatrix prune` drops it): still listed and selectable
    with sqlite3.connect(results_db()) as conn:
        conn.execute("DELETE FROM sessions")
    assert [u for u, _ in stored_index()] == [s["session_info"]["uuid"] for s in sessions]
    assert select(["00000001"])[0]["session_info"]["uuid"].startswith("00000001")
    assert len(sessions_in("now-1d:now")) == 3


def _stored_nights(n: int) -> list[dict]:
    """n copies of the recorded session an hour apart, each a little slower, and a
    confirmation of the first (left out of the history)."""
    now = time.time()
    full = recorded_report(COMPARE)
    out = []
    for i in range(n):
        s = json.loads(json.dumps(full))
        s["session_info"].update(uuid=f"0000000{i}-0000-4000-8000-000000000000",
                                 time_start_unix=now - 3600 * (n - i), software=f"sw{i}")
        for run in s["runs"]:
            for tc in run["testcases"]:
                for var in (tc.get("perfvalues") or {}).values():
                    if isinstance(var[0], (int, float)):
                        var[0] *= 1 + 0.01 * i
        out.append(s)
    conf = json.loads(json.dumps(out[0]))
    conf["session_info"].update(uuid="0000000c-0000-4000-8000-000000000000",
                                time_start_unix=now - 3600 * n + 600, confirms=out[0][
                                    "session_info"]["uuid"])
    return [*out, conf]


def test_the_values_kept_in_the_index_are_the_sessions_history(tmp_path, monkeypatch):
    """`changes` reads each value's series from the index's value tables, not from the
    sessions: the same series, points, samples and metadata as the sessions give, also
    for an index kept before it held values (they are added on first read) and for a
    store whose index cannot be written (the sessions are read whole)."""
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path))
    from mpimatrix.paths import results_db
    from mpimatrix.results.history import series_of
    from mpimatrix.results.sessions import session_info

    nights = _stored_nights(3)
    store(results_db(), nights)
    uuids = [s["session_info"]["uuid"] for s in nights]
    expected = sorted(series_of([load(s) for s in nights]), key=lambda s: s.key)
    assert expected and all(len(s.points) == 3 for s in expected)

    def read() -> list:
        series, infos = session_index.values(uuids)
        assert {u: i.software for u, i in infos.items()} == {
            u: session_info(s).get("software", "") for u, s in zip(uuids, nights, strict=True)}
        return sorted(series, key=lambda s: s.key)

    assert read() == expected  # indexed on this first read
    with sqlite3.connect(session_index.index_path()) as conn:
        kept = conn.execute("SELECT count(*) FROM value_points").fetchone()[0]
        assert kept == sum(len(s.points) for s in expected)
        conn.execute("DELETE FROM value_points")
        conn.execute("DELETE FROM value_sessions")  # as an index of the earlier version
    assert read() == expected
    with sqlite3.connect(session_index.index_path()) as conn:
        assert conn.execute("SELECT count(*) FROM value_points").fetchone()[0] == kept
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(session_index, "index_path", lambda: blocker / "sessions-index.db")
    assert read() == expected


def test_a_store_whose_index_cannot_be_written_is_read_all_the_same(tmp_path, monkeypatch):
    """A store the reader cannot write to (a shared one; here the index's folder is a
    file, which stops root too): sessions are read from ReFrame's copy each time, and
    nothing fails."""
    monkeypatch.setenv("MPIMATRIX_RESULTS", str(tmp_path))
    from mpimatrix.paths import results_db
    from mpimatrix.run.selectors import sessions_in

    s = recorded_report(COMPARE)
    s["session_info"]["time_start_unix"] = time.time() - 60
    store(results_db(), [s])
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setattr(session_index, "index_path", lambda: blocker / "sessions-index.db")
    assert not session_index.add([s])
    for _ in range(2):
        assert len(sessions_in("now-1d:now")) == 1
    assert session_index.listed() == {}
    # the retention rule drops nothing it could not index first
    from mpimatrix.results.sessions import SessionError
    from mpimatrix.run.prune import prune

    with pytest.raises(SessionError, match="cannot be written: nothing was dropped"):
        prune(keep=1)
    assert len(_reframe_uuids(tmp_path)) == 1


def _judge(results: Path, report: Path) -> subprocess.CompletedProcess:
    """The nightly's judging of a stored night, as `mpimatrix run` does after ReFrame."""
    code = ("import sys; from pathlib import Path; from mpimatrix.run.session import "
            "judge_report; sys.exit(judge_report(Path(sys.argv[1]), 'nightly', 0, []))")
    return subprocess.run([sys.executable, "-c", code, str(report)], capture_output=True,
                          text=True, env=_env(results), timeout=900)


@pytest.mark.reframe
def test_a_generated_month_judged_the_same_from_the_index_and_after_pruning(tmp_path):
    """30 nights of 5 builds generated from a recorded real session, with one build 50 %
    slower from night 24 on after a package update. `changes`, `bless` and the nightly's
    judging give the same change points, references and verdicts from the indexed store
    as from the full sessions, and again after `mpimatrix prune` dropped the full copies
    of all but the last 5 days (through ReFrame's own deletion; `latest` is kept); a bad
    age is refused before anything is dropped."""
    fx = tmp_path / "fx" / "reports"
    fx.mkdir(parents=True)
    (fx / "compare-x.json").write_text(json.dumps(recorded_report(COMPARE)))
    year = tmp_path / "year"
    gen = _mpimatrix(year, "validate", "year", "--nights", "30", "--builds", "5",
                     "--from", str(fx.parent), "--mode", "compare", "--results", str(year),
                     "--step", "2:24:1.5:software", MPIMATRIX_KEEP_FULL="all")
    assert gen.returncode == 0, gen.stderr
    reports = sorted((year / "reports").glob("nightly-*.json"))  # oldest first
    assert len(reports) == 30 and len(_reframe_uuids(year)) == 30
    (year / "reports" / "latest.json").symlink_to(reports[-1].name)

    # the plain store: the full sessions, judged in this process
    full = [load(json.loads(p.read_text())) for p in reports]
    expected = sorted(c.line() for c in steps_of(full).changes)
    slowed = full[-1].listed_builds[2]
    assert any(f"SLOWER {slowed.replace('_', '.')} (the whole build" in c for c in expected)

    def judged_by_commands() -> tuple:
        changes = _mpimatrix(year, "changes", "--dry-run", "--all", "--since", "40d")
        assert changes.returncode == 1, changes.stderr  # the step is new, for the worse
        lines = sorted(ln[4:] for ln in changes.stdout.splitlines()
                       if ln.startswith(("NEW ", "    ")) and not ln.startswith("      "))
        refs = tmp_path / f"refs-{len(_reframe_uuids(year))}.yaml"
        bless = _mpimatrix(year, "bless", "--since", "7d", "--mode", "nightly", "--output",
                           str(refs))
        assert bless.returncode == 0, bless.stdout + bless.stderr
        judge = _judge(year, reports[-1])
        return (lines, changes.stdout, refs.read_text(), judge.returncode, judge.stdout,
                _report(year, tmp_path, "--since", "14d"))

    lines, changes, refs, rc, summary_text, report = judged_by_commands()
    # the report of the stored fortnight (the newest night decoded, the older ones
    # summarised from the index) is the one made of the whole sessions
    fortnight = [p for p, night in zip(reports, full, strict=True)
                 if night.start >= time.time() - 14 * 86400]
    assert report == _report(year, tmp_path, *[a for p in fortnight for a in ("--report", str(p))])
    assert f"Sessions in this report: {len(fortnight)} (" in report
    assert lines == expected
    assert "libmpimatrix-year-step (deb): added 1.0+night24" in changes
    plain = tmp_path / "refs-plain.yaml"
    week = [p for p, night in zip(reports, full, strict=True)
            if night.start >= time.time() - 7 * 86400]  # what --since 7d reads
    bless = _mpimatrix(year, "bless", *[a for p in week for a in ("--report", str(p))],
                       "--output", str(plain))
    assert bless.returncode == 0, bless.stdout + bless.stderr
    assert refs == plain.read_text()
    assert rc in (0, 1), summary_text

    bad = _mpimatrix(year, "prune", "--keep-full", "0d")
    assert bad.returncode == 2 and "--keep-full '0d'" in bad.stderr
    dry = _mpimatrix(year, "prune", "--keep-full", "5d", "--dry-run")
    assert dry.returncode == 0 and len(_reframe_uuids(year)) == 30, dry.stderr
    size = (year / "db" / "results.db").stat().st_size
    done = _mpimatrix(year, "prune", "--keep-full", "5d", "--compact")
    assert done.returncode == 0, done.stderr
    assert "dropped from ReFrame's database" in done.stdout
    # the file rebuilt without the dropped sessions' pages (about 25 of 30 nights)
    assert (year / "db" / "results.db").stat().st_size < 0.4 * size
    assert "MB smaller" in done.stdout
    kept = _reframe_uuids(year)
    assert 4 <= len(kept) <= 5  # the nights of the last 5 days
    left = sorted((year / "reports").glob("nightly-*.json"))
    # the report files, a second copy, go after a day: latest's stays
    assert reports[-1] in left and len(left) <= 2
    assert len(_index_uuids(year)) == 30

    assert judged_by_commands() == (lines, changes, refs, rc, summary_text, report)
    # ReFrame's own listing sees what it still holds
    listed = subprocess.run([str(Path(sys.executable).parent / "reframe"), "-C",
                             str(Path(__file__).parents[1] / "site_config" /
                                 "reframe_config.py"), "--list-stored-sessions=all"],
                            capture_output=True, text=True, env=_env(year), timeout=300)
    assert all(u in listed.stdout for u in kept), listed.stdout + listed.stderr


def test_a_report_of_many_builds_shares_its_legends_and_decodes_one_night(tmp_path):
    """Three nights of 25 builds (15 of them in the benchmark plots, above 12): the
    benchmark and trend plots share a legend naming the builds, each trend plot keeps its
    key for the red change lines; a summary of each night is kept in the index."""
    fx = tmp_path / "fx" / "reports"
    fx.mkdir(parents=True)
    (fx / "compare-x.json").write_text(json.dumps(recorded_report(COMPARE)))
    store = tmp_path / "store"
    gen = _mpimatrix(store, "validate", "year", "--nights", "3", "--builds", "25", "--from",
                     str(fx.parent), "--mode", "compare", "--results", str(store))
    assert gen.returncode == 0, gen.stderr
    with sqlite3.connect(store / "db" / "sessions-index.db") as conn:
        kept = conn.execute("SELECT COUNT(*) FROM value_summaries").fetchone()[0]
    assert kept == 3  # a summary per night, kept when the night was indexed
    page = _report(store, tmp_path, "--since", "14d")
    assert page.count('id="curve-legend"') == 1 and page.count('id="trend-legend"') == 1
    shown = re.search(r'id="curve-legend"><img class="plot"  alt="the (\d+) builds: ', page)
    assert shown and int(shown.group(1)) > 12, page[:2000]
    assert "Sessions in this report: 3 (" in page


def _report(results: Path, tmp_path: Path, *selection: str) -> str:
    """The page and summary `mpimatrix report --html` writes (its tables: sessions,
    trends, change points, cost), but the time it was made and the images."""
    out = _mpimatrix(results, "report", "--html", *selection, "--name", "r", "--output-dir",
                     str(tmp_path / "html"))
    assert out.returncode == 0, out.stderr
    page = re.sub(r'src="data:[^"]*"', "", (tmp_path / "html" / "r.html").read_text())
    return re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", page + (
        tmp_path / "html" / "r.md").read_text())


def _index_uuids(results: Path) -> set[str]:
    with sqlite3.connect(results / "db" / "sessions-index.db") as conn:
        return {u for (u,) in conn.execute("SELECT uuid FROM sessions")}


def test_a_bad_retention_setting_stops_the_run_before_reframe(tmp_path):
    proc = _mpimatrix(tmp_path, "run", "--mode", "quick", MPIMATRIX_KEEP_FULL="forever")
    assert proc.returncode == 2
    assert "MPIMATRIX_KEEP_FULL 'forever'" in proc.stderr and "30d" in proc.stderr
    assert not (tmp_path / "db" / "results.db").exists()
