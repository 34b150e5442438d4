"""Careless and hostile input to the commands that read stored sessions, requirement
files and the software store, and write reports and records: one more table of
probes, run like test_bad_input.py's (the real command line; the exit code, a fragment
of the message, no traceback, references and reports untouched) and, for each, what
must not happen: no ReFrame run started by a selector (no new session stored, no stage
directory), no file outside its directory, no tampered or damaged record shown as a
change, no advice to discard a database that opens.

The results database holds recorded sessions (tests/fixtures/sessions) written as
ReFrame stores them (stored_db.py); two of them name software records kept in the
software store from the two real Spack locks of test_software_changes.py."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES
from stored_db import recorded
from stored_db import store as store_sessions
from test_bad_input import S1_UUID, SESSIONS, Probe, digest, make_store, run_probe

from mpimatrix.builds.software import SoftwareRecord, software_of
from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.results.software_store import store_software

LOCK_OLD = FIXTURES / "spack" / "kit-rows-v6.spack.lock"
LOCK_NEW = FIXTURES / "spack" / "kit-rows-imb-O3-v6.spack.lock"
A = "aaaaaaaa-1111-4111-8111-000000000001"  # software record: kernel 6.1.0-1, lock OLD
B = "bbbbbbbb-2222-4222-8222-000000000002"  # software record: kernel 6.1.0-2, lock NEW
C1 = "cccccccc-3333-4333-8333-000000000003"  # two sessions sharing a printed prefix
C2 = "cccccccc-4444-4444-8444-000000000004"
D = "dddddddd-5555-4555-8555-000000000005"  # the newest: a confirmation of B
NOT_STORED = "0e0e0e0e-0000-4000-8000-000000000000"
DISCARD = "move the file away"
EXAMPLE = Path(__file__).resolve().parents[1] / "site_config" / "acceptance" / "example.yaml"


def lock_record(path: Path, kernel: str) -> SoftwareRecord:
    builds, _ = builds_from_lock(path, spack=False, prefixes={})
    return replace(software_of(builds), machine={"kernel": kernel})


@dataclass
class Stored:
    results: Path
    record_b: Path  # B's software record
    lock_b: Path  # B's Spack lock, gzipped


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """The probes' store, made once: references and a report (test_bad_input.py), a
    results database, a software store."""
    store = make_store(tmp_path_factory.mktemp("template") / "results")
    ia = store_software(lock_record(LOCK_OLD, "6.1.0-1"), [LOCK_OLD], store)
    ib = store_software(lock_record(LOCK_NEW, "6.1.0-2"), [LOCK_NEW], store)
    now = time.time()
    store_sessions(store / "db" / "results.db", [
        recorded("imb-quick-bless-1", A, now - 3000, software=ia),
        recorded("imb-quick-bless-2", C1, now - 2400),
        recorded("imb-quick-bless-3", C2, now - 1800),
        recorded("imb-quick-bless-3", B, now - 600, software=ib),
        recorded("imb-quick-injected-mpich-4.0.2-clock-1.0-confirm", D, now - 300,
                 confirms=B)])
    (store / "software" / "b").write_text(ib)
    return store


@pytest.fixture
def stored(template, tmp_path) -> Stored:
    """A copy of the template for one probe."""
    results = tmp_path / "results"
    shutil.copytree(template, results, symlinks=True)
    ib = (results / "software" / "b").read_text()
    (results / "software" / "b").unlink()
    record = results / "software" / f"{ib}.json"
    sha = json.loads(record.read_text())["builds"]["mpich-4.0.2-ext-gcc12"]["spack"]["lock"]
    return Stored(results, record, results / "software" / "locks" / f"{sha}.gz")


def requirements(system: str = "local", **extra) -> str:
    req = {"name": "pingpong-8B", "benchmark": "MPI1:PingPong", "placement": "intranode",
           "size": "8 B", "metric": "latency", "bound": "<= 100 us", "confidence": 0.5}
    return yaml.safe_dump({"system": system, "requirements": [{**req, **extra}]})


def alias_bomb() -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for prev, cur in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{cur}: &{cur} [{', '.join([f'*{prev}'] * 9)}]")
    return "\n".join([*lines, "system: *i", "requirements: *i"]) + "\n"


EXAMPLE_TEXT = EXAMPLE.read_text()
BOUND = "    bound: '<= 2.5 us'\n"
BOUND_LINE = EXAMPLE_TEXT[:EXAMPLE_TEXT.index(BOUND)].count("\n") + 1
ACCENT_LINE = EXAMPLE_TEXT[:EXAMPLE_TEXT.index("placeholders")].count("\n") + 1
THREE = ["--report", "{s1}", "--report", "{s2}", "--report", "{s3}"]
ACCEPT = ["accept", "--requirements", "{local.yaml}", *THREE, "--no-pdf"]


def _edit_record(s: Stored) -> None:
    s.record_b.write_text(s.record_b.read_text().replace("6.1.0-2", "6.6.6-tampered"))


def _truncate_record(s: Stored) -> None:
    s.record_b.write_bytes(s.record_b.read_bytes()[:300])


def _reshape_record(s: Stored) -> None:
    s.record_b.write_text(json.dumps({"builds": [1, 2]}))


def _truncate_lock(s: Stored) -> None:
    s.lock_b.write_bytes(s.lock_b.read_bytes()[:100])


def _edit_lock(s: Stored) -> None:
    raw = gzip.decompress(s.lock_b.read_bytes()).replace(b'"2021.7"', b'"2099.9"')
    s.lock_b.write_bytes(gzip.compress(raw))


def _garbage_db(s: Stored) -> None:
    (s.results / "db" / "results.db").write_text("garbage")


def _disturbed(s: Stored) -> None:
    (s.results / "db" / "machine-load.json").write_text(json.dumps({S1_UUID: {
        "seconds": 100, "foreign_cpu": 14, "cores": 2, "disturbed": True}}))


@dataclass
class Case:
    probe: Probe
    absent: tuple[str, ...] = ()  # must not be in the output
    prepare: object = None  # a function of the Stored store
    kind: str = ""  # the issue's class, for the count


def case(kind, id_, args, rc, message, files=None, absent=(), prepare=None, env=None):
    return Case(Probe(id_, args, rc, message, files or {}, env or {}), tuple(absent),
                prepare, kind)


LOCAL = {"local.yaml": requirements()}
CASES = [
    # -- a session selector never starts a run, never advises discarding a database
    case("selector", "diff-empty", ["diff", "", ""], 2, "OLD '' is empty: give a session's "
         "UUID, its first 8 characters", absent=[DISCARD]),
    case("selector", "accept-session-empty", ["accept", "--requirements", "{local.yaml}",
                                              "--session", ""], 2, "--session '' is empty",
         LOCAL, [DISCARD]),
    case("selector", "report-session-empty", ["report", "--session", ""], 2,
         "--session '' is empty", absent=[DISCARD]),
    case("selector", "report-html-session-blank", ["report", "--html", "--session", "  "], 2,
         "--session '  ' is empty", absent=[DISCARD]),
    case("selector", "bless-session-empty", ["bless", "--session", ""], 2,
         "--session '' is empty", absent=[DISCARD]),
    case("selector", "changes-session-empty", ["changes", "--session", ""], 2,
         "--session '' is empty", absent=[DISCARD]),
    case("selector", "report-since-empty", ["report", "--since", ""], 2,
         "--since '': give an age such as 14d"),
    case("selector", "diff-printed-ids", ["diff", A[:8], B[:8]], 0,
         "the machine's kernel: 6.1.0-1 -> 6.1.0-2", absent=[DISCARD]),
    case("selector", "diff-latest", ["diff", A[:8], "latest"], 0,
         f"-> session {B[:8]} (", absent=[DISCARD, "matches"]),
    case("selector", "diff-ambiguous-prefix", ["diff", "cccccccc", B[:8]], 2,
         f"OLD 'cccccccc' matches 2 stored sessions: {C1} (", absent=[DISCARD]),
    case("selector", "diff-unknown-prefix", ["diff", "0e0e0e0e", B[:8]], 2,
         "no stored session begins with '0e0e0e0e' in the results database", absent=[DISCARD]),
    case("selector", "report-unknown-uuid", ["report", "--session", NOT_STORED], 2,
         f"no stored session '{NOT_STORED}' in the results database", absent=[DISCARD]),
    case("selector", "diff-malformed-id", ["diff", "bbbbbbbb-22zz", A[:8]], 2,
         "OLD 'bbbbbbbb-22zz' is not a session", absent=[DISCARD]),
    case("selector", "diff-too-short", ["diff", "bb", A[:8]], 2,
         "OLD 'bb' is too short to name a session", absent=[DISCARD]),
    case("selector", "diff-period-of-many", ["diff", "now-1d:now", B[:8]], 2,
         "OLD 'now-1d:now' matches 5 stored sessions", absent=[DISCARD, "Traceback"]),
    case("selector", "diff-bad-period", ["diff", "now-1x:now", B[:8]], 2,
         "OLD 'now-1x:now' is not a period ReFrame takes", absent=[DISCARD]),
    case("selector", "report-empty-period", ["report", "--session", "now-1m:now"], 2,
         "--session 'now-1m:now': no stored session started in that period",
         absent=[DISCARD]),
    case("selector", "report-session-filter", ["report", "--session", "now-1d:now?True"], 2,
         "session filters (?EXPR) are not taken", absent=[DISCARD]),
    case("selector", "diff-testcase-uuid", ["diff", f"{B}:0:1", A[:8]], 2,
         f"is a test case's UUID; its session is {B}", absent=[DISCARD]),
    case("selector", "diff-option-like", ["diff", "--", "-r", A[:8]], 2,
         "OLD '-r' is not a session", absent=[DISCARD]),
    case("selector", "report-corrupt-database", ["report", "--session", "latest"], 2,
         f"cannot be read (file is not a database); {DISCARD}", prepare=_garbage_db),
    case("selector", "diff-bad-build-regex", ["diff", A[:8], B[:8], "--build", "("], 2,
         "--build '(' is not a regular expression"),
    # -- requirement files: refused with the file, the line and the fix
    case("requirements", "req-alias-bomb", ["accept", "--requirements", "{bomb.yaml}",
                                            "--report", "{s1}", "--no-pdf"], 2,
         "bomb.yaml: line 10: alias *i stands for", {"bomb.yaml": alias_bomb()}),
    case("requirements", "run-req-alias-bomb", ["run", "--requirements", "{bomb.yaml}"], 2,
         "bomb.yaml: line 10: alias *i stands for", {"bomb.yaml": alias_bomb()}),
    case("requirements", "req-recursive-alias", ["accept", "--requirements", "{r.yaml}",
                                                 "--report", "{s1}", "--no-pdf"], 2,
         "r.yaml: line 1: a value contains an alias of itself",
         {"r.yaml": "system: &a [*a]\nrequirements: []\n"}),
    case("requirements", "req-latin1", ["accept", "--requirements", "{l1.yaml}", "--report",
                                        "{s1}", "--no-pdf"], 2,
         f"l1.yaml: line {ACCENT_LINE}: byte 0xe9 is not UTF-8", {"l1.yaml": EXAMPLE_TEXT.replace(
             "placeholders", "placéholders").encode("latin-1")}),
    case("requirements", "req-20MB", ["accept", "--requirements", "{big.yaml}", "--report",
                                      "{s1}", "--no-pdf"], 2,
         "big.yaml: larger than 256 KiB, the most a requirements file may be",
         {"big.yaml": EXAMPLE_TEXT + "#" + "x" * (20 << 20) + "\n"}),
    case("requirements", "req-device", ["accept", "--requirements", "/dev/zero", "--report",
                                        "{s1}", "--no-pdf"], 2,
         "/dev/zero: larger than 256 KiB"),
    case("requirements", "req-key-twice", ["accept", "--requirements", "{dup.yaml}",
                                           "--report", "{s1}", "--no-pdf"], 2,
         f"dup.yaml: line {BOUND_LINE + 1}: key 'bound' is written twice in this mapping "
         f"(first on line {BOUND_LINE})",
         {"dup.yaml": EXAMPLE_TEXT.replace(BOUND, BOUND + "    bound: '<= 25 us'\n", 1)}),
    case("requirements", "req-control-character", ["accept", "--requirements", "{c.yaml}",
                                                   "--report", "{s1}", "--no-pdf"], 2,
         "c.yaml: line 1: character #x0007 is not allowed in YAML",
         {"c.yaml": "system: a\x07b\nrequirements: []\n"}),
    case("requirements", "req-system-path", ["accept", "--requirements", "{s.yaml}",
                                             "--report", "{s1}", "--no-pdf"], 2,
         "system '../../etc' is not a ReFrame system name",
         {"s.yaml": requirements("../../etc")}),
    # -- the software store: damage named and left out, never shown as a change
    case("store", "diff-edited-record", ["diff", A[:8], B[:8]], 2,
         "is damaged: ", absent=["6.6.6-tampered", DISCARD], prepare=_edit_record),
    case("store", "diff-truncated-record", ["diff", A[:8], B[:8]], 2,
         "(not valid JSON: ", absent=["sessions run before"], prepare=_truncate_record),
    case("store", "diff-record-of-wrong-shape", ["diff", A[:8], B[:8]], 2,
         "(not a software record: builds is not a mapping)", prepare=_reshape_record),
    case("store", "diff-corrupt-lock", ["diff", A[:8], B[:8]], 0,
         "damaged in the software store, left out: ", absent=["zlib"], prepare=_truncate_lock),
    case("store", "diff-edited-lock", ["diff", A[:8], B[:8]], 0,
         "(its content does not match its sha256 (edited or corrupted))",
         absent=["2099.9"], prepare=_edit_lock),
    # -- output paths: under the directory named for them, checked before anything runs
    case("output", "accept-name-traversal", [*ACCEPT, "--name", "../../x"], 2,
         "--name '../../x': letters, digits, '.', '_' and '-' only", LOCAL),
    case("output", "accept-name-hidden", [*ACCEPT, "--name", ".x"], 2,
         "--name '.x': letters, digits", LOCAL),
    case("output", "accept-output-dir-file", [*ACCEPT, "--output-dir", "{local.yaml}"], 2,
         "is a file, not a directory", LOCAL),
    case("output", "accept-output-dir-under-file", [*ACCEPT, "--output-dir",
                                                    "{local.yaml}/sub"], 2,
         "cannot be made: ", LOCAL),
    case("output", "report-output-dir-file", ["report", "--html", "--report", "{s1}",
                                              "--output-dir", "{local.yaml}"], 2,
         "is a file, not a directory", LOCAL),
    case("output", "report-output-dir-empty", ["report", "--html", "--report", "{s1}",
                                               "--output-dir", ""], 2,
         "--output-dir is empty"),
    # -- acceptance on sessions of another system, and a run where nothing can run
    case("acceptance", "accept-other-system", ["accept", "--requirements", "{ex.yaml}",
                                               *THREE, "--no-pdf"], 1,
         "UNMEASURED   pingpong-8B: IMB MPI1:PingPong intranode latency at 8 B <= 100 us "
         "(system 'example' was not measured: the sessions ran on local)",
         {"ex.yaml": requirements("example")}, absent=["MET  "]),
    case("acceptance", "run-example-elsewhere", ["run", "--mode", "acceptance",
                                                 "--requirements", str(EXAMPLE)], 1,
         "system 'example' is not this system (local); no test case ran at placement "
         "internode: no partition of the system hosts it (no internode partition"),
    case("acceptance", "accept-disturbed", ACCEPT, 4,
         "which other programs disturbed: measure again on a quiet machine", LOCAL,
         ["MET  "], _disturbed),
    case("acceptance", "accept-disturbed-included", [*ACCEPT, "--include-disturbed"], 0,
         "included (--include-disturbed)", LOCAL, prepare=_disturbed),
]


def sessions_stored(results: Path) -> int:
    db = results / "db" / "results.db"
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    except sqlite3.Error:
        return -1


@pytest.mark.parametrize("c", CASES, ids=[c.probe.id for c in CASES])
def test_bad_input_to_sessions_requirements_store_and_outputs(c, stored, tmp_path):
    if c.prepare:
        c.prepare(stored)
    files = {**c.probe.files}
    reports = {"s2": "imb-quick-bless-2.json", "s3": "imb-quick-bless-3.json"}
    args = [a.replace("{s2}", str(SESSIONS / reports["s2"]))
             .replace("{s3}", str(SESSIONS / reports["s3"])) for a in c.probe.args]
    probe = replace(c.probe, args=args, files=files)
    written = {f.removeprefix("results/") for f in files}
    before = {k: v for k, v in digest(stored.results).items() if k not in written}
    count = sessions_stored(stored.results)
    outside = set(tmp_path.parent.glob("*.html")) | set(tmp_path.glob("*.html"))
    proc = run_probe(probe, stored.results, tmp_path)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text[-3000:]
    assert c.probe.message in text, text[-3000:]
    assert proc.returncode == c.probe.rc, text[-3000:]
    for word in c.absent:
        assert word not in text, text[-3000:]
    after = {k: v for k, v in digest(stored.results).items() if k in before}
    assert after == before, "references or reports changed"
    # no ReFrame run: no session stored, no stage directory
    assert sessions_stored(stored.results) == count, "a session was stored"
    assert not (stored.results / "stage").exists(), "ReFrame ran a test"
    # nothing written outside the results store
    assert set(tmp_path.parent.glob("*.html")) | set(tmp_path.glob("*.html")) == outside


def test_the_table_covers_each_class_of_the_issue():
    kinds = {c.kind for c in CASES}
    assert kinds == {"selector", "requirements", "store", "output", "acceptance"}
    assert len(CASES) >= 45


# -- what the probes cannot see from outside


def test_a_damaged_record_and_lock_are_written_again_by_a_run_that_has_them(tmp_path):
    from mpimatrix.results.software_store import Store, record_id

    record = lock_record(LOCK_NEW, "6.1.0-2")
    ident = store_software(record, [LOCK_NEW], tmp_path)
    path = tmp_path / "software" / f"{ident}.json"
    lock = next((tmp_path / "software" / "locks").iterdir())
    path.write_text(path.read_text().replace("6.1.0-2", "6.6.6"))
    lock.write_bytes(lock.read_bytes()[:50])
    store = Store(tmp_path)
    assert store.software(ident) is None and "does not match its hash" in store.damage[str(path)]
    assert isinstance(store.lock(lock.name[:-3]), str)
    assert store_software(record, [LOCK_NEW], tmp_path) == ident == record_id(record)
    again = Store(tmp_path)
    assert again.software(ident) == record and not isinstance(again.lock(lock.name[:-3]), str)
    assert not again.damage


def test_a_lock_that_matches_its_name_but_is_no_lock_is_damage(tmp_path):
    import hashlib

    from mpimatrix.results.software_store import Store

    raw = json.dumps({"_meta": 5}).encode()
    sha = hashlib.sha256(raw).hexdigest()
    (tmp_path / "software" / "locks").mkdir(parents=True)
    (tmp_path / "software" / "locks" / f"{sha}.gz").write_bytes(gzip.compress(raw))
    why = Store(tmp_path).lock(sha)
    assert isinstance(why, str) and "not a Spack lock" in why, why


def test_a_store_that_cannot_be_written_costs_the_record_not_the_caller(tmp_path):
    (tmp_path / "software").write_text("a file where the store's directory should be")
    record = lock_record(LOCK_NEW, "6.1.0-2")
    problems: list[str] = []
    ident = store_software(record, [LOCK_NEW], tmp_path, problems)
    assert len(ident) == 16 and len(problems) == 2, problems  # the record and the lock
    assert all(str(tmp_path / "software") in p for p in problems), problems
    with pytest.raises(OSError):
        store_software(record, [LOCK_NEW], tmp_path)  # without a list: the error


def test_files_are_written_with_the_mode_the_umask_gives(tmp_path):
    import os
    import stat
    import subprocess
    import sys

    from mpimatrix.atomic import atomic_write

    old = os.umask(0o022)
    try:
        atomic_write(tmp_path / "a.html", "x")
        os.umask(0o027)
        atomic_write(tmp_path / "b.html", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.html").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.html").stat().st_mode) == 0o640
    # the acceptance record, by the command line, under umask 022
    (tmp_path / "local.yaml").write_text(requirements())
    results = tmp_path / "results"
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "mpimatrix"), "accept", "--requirements",
         str(tmp_path / "local.yaml"), "--report", str(SESSIONS / "imb-quick-bless-1.json"),
         "--no-pdf", "--name", "record"], capture_output=True, text=True,
        env={**os.environ, "MPIMATRIX_RESULTS": str(results)}, preexec_fn=lambda: os.umask(0o022))
    assert (results / "reports" / "record.html").exists(), proc.stdout + proc.stderr
    assert stat.S_IMODE((results / "reports" / "record.html").stat().st_mode) == 0o644


def test_the_record_names_each_sessions_disturbance(tmp_path):
    from mpimatrix.results.acceptance.record import write_record
    from mpimatrix.results.acceptance.requirements import load_requirements
    from mpimatrix.results.acceptance.scope import Scope, SessionLoad
    from mpimatrix.results.acceptance.verdicts import Verdict, judge_all
    from mpimatrix.results.measurements import load

    (tmp_path / "local.yaml").write_text(requirements())
    reqs = load_requirements(tmp_path / "local.yaml")
    sessions = [load(json.loads((SESSIONS / f"imb-quick-bless-{i}.json").read_text()))
                for i in (1, 2, 3)]
    busy = "other programs used 14.0 CPU-s (7.0% of the machine's 2 cores)"
    scope = Scope(loads={sessions[0].uuid: SessionLoad(True, busy),
                         sessions[1].uuid: SessionLoad(False, "other programs used 0.1 CPU-s")})
    verdicts = judge_all(reqs, sessions, scope)
    assert [v.verdict for v in verdicts] == [Verdict.INCONCLUSIVE]
    html = write_record(reqs, verdicts, sessions, tmp_path / "r.html", [], scope).read_text()
    assert f"Other programs disturbed session(s) {sessions[0].uuid[:8]}" in html
    assert "DISTURBED: other programs used 14.0 CPU-s" in html
    assert "quiet: other programs used 0.1 CPU-s" in html
    assert "not recorded" in html  # the third session: no load record


def test_small_aliases_are_still_yaml(tmp_path):
    from mpimatrix.results.acceptance.requirements import load_requirements

    text = EXAMPLE_TEXT.replace("    builds: ['^impi-', {one_of: '^(openmpi|mpich|mvapich2?)-'}]",
                                "    builds: &vendor ['^impi-', {one_of: '^(openmpi|mpich)-'}]",
                                1).replace("    builds: ['^impi-', {one_of: "
                                           "'^(openmpi|mpich|mvapich2?)-'}]",
                                           "    builds: *vendor")
    (tmp_path / "a.yaml").write_text(text)
    reqs = load_requirements(tmp_path / "a.yaml").requirements
    assert reqs[0].builds == reqs[1].builds and reqs[1].builds[1].pattern == "^(openmpi|mpich)-"


@pytest.mark.parametrize(("text", "kind"), [
    (A, "uuid"), (A.upper(), "uuid"), (A[:8], "prefix"), (A[:13], "prefix"), ("latest", "latest"),
    ("now-7d:now", "period"), ("20260101:20260201T1200", "period"),
])
def test_selectors_are_parsed_without_the_database(text, kind):
    from mpimatrix.run.selectors import parse

    assert parse(text).kind == kind


@pytest.mark.mpi
@pytest.mark.reframe
def test_a_store_it_cannot_write_never_costs_the_session(buildset, tmp_path):
    """`mpimatrix run` with the software store's directory taken by a file: the session
    runs and is stored, with a line saying the record could not be kept."""
    import os
    import re
    import subprocess
    import sys

    build = next(b for b in buildset.builds)
    results = tmp_path / "results"
    results.mkdir()
    (results / "software").write_text("not a directory")
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results), "MPIMATRIX_MACHINE_LOCK": ""}
    env.pop("MPIMATRIX_INJECT", None)
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "run", "--only",
                           f"^{re.escape(build.name)}$", "--no-confirm", "--", "-n",
                           "MpiPlacementCheck"], capture_output=True, text=True, env=env,
                          timeout=1200)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text[-3000:]
    assert proc.returncode in (0, 4), text[-3000:]  # 4: the machine was busy
    assert "WARNING: the software record could not be kept: " in text, text[-3000:]
    assert sessions_stored(results) == 1
