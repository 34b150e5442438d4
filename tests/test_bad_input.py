"""Faults and bad input lose nothing and execute nothing: one table of probes.

Each probe runs the real `mpimatrix` command line on a bad input and asserts the
exit code, a fragment of the message (naming the file, key or option and the
fix), that no Python traceback reaches the user, and that the results store's
references and reports are byte-identical afterwards. Probes that need a ReFrame
session run one placement check on one build (seconds)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from helpers import FIXTURES

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")
SESSIONS = FIXTURES / "sessions"
GOOD = dict(name="mpich-4.0.2-x", family="mpich", version="4.0.2", provenance="site",
            prefix="/usr", cc="/usr/bin/mpicc.mpich", launcher="/usr/bin/mpiexec.mpich",
            launcher_style="hydra")
REFS_HEAD = "ImbCheck:\n  $index: [$partition, $environ, ref_key]\n"
S1_UUID = json.loads((SESSIONS / "imb-quick-bless-1.json").read_text())["session_info"]["uuid"]


def digest(results: Path) -> dict[str, str]:
    """Hashes of what a fault must never change: references and reports."""
    out = {}
    for sub in ("references", "reports"):
        for f in sorted((results / sub).rglob("*")) if (results / sub).exists() else []:
            if f.is_file():
                out[str(f.relative_to(results))] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@pytest.fixture
def store(tmp_path):
    """A results store with references (from real sessions) and a report."""
    return make_store(tmp_path / "results")


def make_store(results: Path) -> Path:
    """A results store at `results` with references (from real sessions) and a report."""
    (results / "references").mkdir(parents=True)
    (results / "reports").mkdir()
    shutil.copy(SESSIONS / "imb-quick-bless-1.json", results / "reports" / "quick-1.json")
    env = {**os.environ, "MPIMATRIX_RESULTS": str(results)}
    blessed = subprocess.run([MPIMATRIX, "bless", "--include-disturbed", *[
        a for n in (1, 2, 3) for a in ("--report", str(SESSIONS / f"imb-quick-bless-{n}.json"))]],
        env=env, capture_output=True, text=True)
    assert blessed.returncode == 0, blessed.stdout + blessed.stderr
    return results


@dataclass
class Probe:
    id: str
    args: list[str]
    rc: int
    message: str  # a fragment of stdout + stderr
    files: dict[str, str] = field(default_factory=dict)  # name -> text (or bytes) to write
    env: dict[str, str] = field(default_factory=dict)  # {file} = tmp path of that file


def builds_file(*items) -> str:
    return json.dumps({"builds": list(items)})


def lock(version=6, specs=None) -> str:
    return json.dumps({"_meta": {"file-type": "spack-lockfile", "lockfile-version": version,
                                 "specfile-version": 5},
                       "roots": [], "concrete_specs": specs if specs is not None else {}})


B = {"MPIMATRIX_BUILDS": "{builds.json}"}
PROBES = [
    # -- builds file: one bad record is skipped with its reason, the good one stays
    Probe("build-item-string", ["builds"], 0, "a build must be a mapping of fields, not str",
          {"builds.json": builds_file("mpich", GOOD)}, B),
    Probe("build-item-null", ["builds"], 0, "a build must be a mapping of fields, not NoneType",
          {"builds.json": builds_file(None, GOOD)}, B),
    Probe("build-name-number", ["builds"], 0, "name must be a string, not 123",
          {"builds.json": builds_file({**GOOD, "name": 123}, GOOD)}, B),
    Probe("build-benchmarks-list", ["builds"], 0, "benchmarks must be a mapping of suite",
          {"builds.json": builds_file({**GOOD, "name": "b", "benchmarks": ["imb"]}, GOOD)}, B),
    Probe("build-benchmark-unknown", ["builds"], 0, "benchmark suite 'hpl' is not one of",
          {"builds.json": builds_file({**GOOD, "name": "b", "benchmarks": {"hpl": {
              "bin_dir": "/x"}}}, GOOD)}, B),
    Probe("build-prefix-list", ["builds"], 0, "prefix must be a string",
          {"builds.json": builds_file({**GOOD, "name": "b", "prefix": ["/usr"]}, GOOD)}, B),
    Probe("build-env-list", ["builds"], 0, "env must be a mapping of names to values",
          {"builds.json": builds_file({**GOOD, "name": "b", "env": [1, 2]}, GOOD)}, B),
    Probe("build-env-bad-name", ["builds"], 0, "['A B'] are not variable names",
          {"builds.json": builds_file({**GOOD, "name": "b", "env": {"A B": "1"}}, GOOD)}, B),
    Probe("build-prepare-string", ["builds"], 0, "prepare_cmds must be a list of strings",
          {"builds.json": builds_file({**GOOD, "name": "b", "prepare_cmds": "echo hi"}, GOOD)},
          B),
    Probe("build-version-float", ["builds"], 0, 'version must be a string, not 4.0 (quote it',
          {"builds.yaml": "builds:\n- {name: b, family: mpich, version: 4.0, provenance: site, "
           "prefix: /usr, cc: /usr/bin/mpicc.mpich, launcher: /usr/bin/mpiexec.mpich, "
           "launcher_style: hydra}\n- " + json.dumps(GOOD) + "\n"},
          {"MPIMATRIX_BUILDS": "{builds.yaml}"}),
    Probe("build-name-newline", ["builds"], 0, "a name may hold letters, digits and . _ + -",
          {"builds.json": builds_file({**GOOD, "name": "x\ntouch /tmp/pwned"}, GOOD)}, B),
    Probe("build-name-path", ["builds"], 0, "a name may hold letters, digits and . _ + -",
          {"builds.json": builds_file({**GOOD, "name": "/etc"}, GOOD)}, B),
    Probe("build-unknown-field", ["builds"], 0, "unknown fields ['colour']",
          {"builds.json": builds_file({**GOOD, "name": "b", "colour": "red"}, GOOD)}, B),
    Probe("build-family", ["builds"], 0, "family 'lam' is not one of",
          {"builds.json": builds_file({**GOOD, "name": "b", "family": "lam"}, GOOD)}, B),
    Probe("build-missing-fields", ["builds"], 0, "lacks cc, launcher; add them (`mpimatrix "
          "builds --json` prints complete records", {"builds.json": builds_file(
              {k: v for k, v in GOOD.items() if k not in ("cc", "launcher")} | {"name": "b"},
              GOOD)}, B),
    Probe("build-environ-clash", ["builds"], 0, "its ReFrame environment name "
          "'mpich-4_0_2-x' is already 'mpich-4.0.2-x''s; rename one of them",
          {"builds.json": builds_file(GOOD, {**GOOD, "name": "mpich-4_0_2-x"})}, B),
    Probe("builds-non-utf8", ["builds"], 2, "not UTF-8 text",
          {"builds.json": b"\xff\xfe{builds"}, B),
    Probe("builds-missing", ["builds"], 2, "cannot read builds file: No such file or "
          "directory; check MPIMATRIX_BUILDS", {}, {"MPIMATRIX_BUILDS": "/nonexistent.yaml"}),
    Probe("builds-bad-yaml", ["builds"], 2, "not valid YAML",
          {"builds.yaml": "builds: [unclosed"}, {"MPIMATRIX_BUILDS": "{builds.yaml}"}),
    Probe("builds-bad-json", ["builds"], 2, "not valid JSON",
          {"builds.json": "{builds"}, B),
    Probe("builds-not-a-list", ["builds"], 2, "expected a list of builds or a mapping with a "
          "'builds' list", {"builds.json": json.dumps({"builds": "x"})}, B),
    # -- Spack locks
    Probe("lock-missing", ["builds"], 2, "no Spack lock file (MPIMATRIX_LOCK); make it with "
          "`spack -e", {}, {"MPIMATRIX_LOCK": "/nonexistent/spack.lock"}),
    Probe("lock-not-json", ["builds"], 2, "not a valid Spack lock file (invalid JSON",
          {"spack.lock": "{x"}, {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-version-string", ["builds"], 2, "_meta.lockfile-version is '6', not a number",
          {"spack.lock": lock("6")}, {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-version-old", ["builds"], 2, "written by Spack < 1.0",
          {"spack.lock": lock(4)}, {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-version-new", ["builds"], 2, "written by a newer Spack",
          {"spack.lock": lock(9)}, {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-node-string", ["builds"], 2, "malformed Spack lock: concrete_specs['h'] is not "
          "a spec with a name", {"spack.lock": lock(6, {"h": "x"})},
          {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-deps-not-list", ["builds"], 2, "concrete_specs['h'].dependencies is not a list",
          {"spack.lock": lock(6, {"h": {"name": "mpich", "dependencies": "x"}})},
          {"MPIMATRIX_LOCK": "{spack.lock}"}),
    Probe("lock-no-mpi", ["builds"], 2, "the lock has no MPI build",
          {"spack.lock": lock(6, {"h": {"name": "zlib"}})}, {"MPIMATRIX_LOCK": "{spack.lock}"}),
    # -- references
    Probe("refs-list", ["run"], 2, "local.yaml: (top level): expected a mapping",
          {"results/references/local.yaml": "- 1\n"}),
    Probe("refs-lower", ["run"], 2, "v: lower threshold -2 must be null or a fraction in "
          "[-1, 0]", {"results/references/local.yaml":
                      REFS_HEAD + "  p: {e: {k: {v: [1, -2, null, us]}}}\n"}),
    Probe("refs-zero", ["run"], 2, "reference 0: a gated time or rate is positive",
          {"results/references/local.yaml": REFS_HEAD + "  p: {e: {k: {v: [0, null, 1, us]}}}\n"}),
    Probe("refs-negative", ["run"], 2, "reference -5: a gated time or rate is positive",
          {"results/references/local.yaml": REFS_HEAD + "  p: {e: {k: {v: [-5, -0.1, null, "
           "MB/s]}}}\n"}),
    Probe("refs-index", ["run"], 2, "ImbCheck.$index: is ['$environ']",
          {"results/references/local.yaml": "ImbCheck: {$index: [$environ]}\n"}),
    Probe("refs-yaml", ["run"], 2, "not readable YAML",
          {"results/references/local.yaml": "ImbCheck: [unclosed\n"}),
    Probe("refs-huge", ["run"], 2, "is over the 4 MiB that ReFrame can re-read for every test",
          {"results/references/local.yaml": REFS_HEAD + "# " + "x" * (5 << 20) + "\n"}),
    # -- bless and report
    Probe("bless-tolerance-2", ["bless", "--report", "{s1}", "--tolerance", "2"], 2,
          "tolerance floor 2.0 must be a fraction between 0 and 1"),
    Probe("bless-tolerance-0", ["bless", "--report", "{s1}", "--tolerance", "0"], 2,
          "between 0 and 1"),
    Probe("bless-unknown-session", ["bless", "--session",
                                    "00000000-0000-0000-0000-000000000000"], 2,
          "no stored session '00000000-0000-0000-0000-000000000000' in the results database"),
    Probe("report-unknown-session", ["report", "--session",
                                     "00000000-0000-0000-0000-000000000000"], 2,
          "no stored session '00000000-0000-0000-0000-000000000000'"),
    Probe("bless-missing-report", ["bless", "--report", "/nonexistent.json"], 2,
          "/nonexistent.json: cannot read ReFrame report: No such file or directory"),
    Probe("bless-report-not-json", ["bless", "--report", "{x.json}"], 2,
          "not a ReFrame JSON report", {"x.json": "{x"}),
    Probe("bless-report-no-runs", ["bless", "--report", "{x.json}"], 2,
          "not a ReFrame JSON report (no 'runs' list)", {"x.json": "{}"}),
    Probe("bless-two-systems", ["bless", "--report", "{s1}", "--report", "{other.json}"], 2,
          "the sessions cover systems ['local', 'mycluster']; choose one with --system"),
    Probe("report-corrupt-db", ["report", "--session", "00000000-0000-0000-0000-000000000000"],
          2, "cannot be read (file is not a database); move the file away",
          {"results/db/results.db": "garbage"}),
    Probe("bless-all-disturbed", ["bless", "--report", "{s1}"], 2,
          "every session given was disturbed by other programs",
          {"results/db/machine-load.json": json.dumps({
              S1_UUID: {
                  "seconds": 30, "foreign_cpu": 40, "cores": 2, "disturbed": True}})}),
    # -- run options checked before ReFrame starts
    Probe("run-only-bad-regex", ["run", "--only", "mpich("], 2,
          "--only / MPIMATRIX_ONLY: 'mpich(' is not a regular expression"),
    Probe("run-only-no-match", ["run", "--only", "no-such-mpi"], 2,
          "--only no-such-mpi matches none of the builds"),
    Probe("run-bad-injection", ["run"], 2,
          "MPIMATRIX_INJECT: 'mpich' is not <build regex>[@<test regex>]:<spec>",
          {}, {"MPIMATRIX_INJECT": "mpich"}),
    Probe("osu-build-unknown", ["osu-build", "--source", "/", "--build", "x\ny"], 2,
          "unknown build(s) ['x\\ny']"),
    Probe("changes-bad-since", ["changes", "--since", "yesterday"], 2,
          "--since 'yesterday': give an age such as 14d, 12h, 2w or 90m"),
    Probe("bless-bad-since", ["bless", "--since", "a week"], 2,
          "--since 'a week': give an age such as 14d, 12h, 2w or 90m"),
    Probe("bless-injected-only", ["bless", "--report", "{inj}"], 2,
          "none of the 1 session(s) given can be blessed from (see above)"),
    Probe("bless-mode-matches-none", ["bless", "--report", "{s1}", "--mode", "nightly"], 2,
          "none of the 1 session(s) given can be blessed from (see above)"),
]


def run_probe(probe: Probe, store: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    paths = {"s1": str(SESSIONS / "imb-quick-bless-1.json"),
             "inj": str(SESSIONS / "imb-quick-injected-mpich-4.0.2-clock-1.0.json")}
    other = json.loads((SESSIONS / "imb-quick-bless-2.json").read_text())
    for r in other["runs"]:
        for tc in r["testcases"]:
            tc["system"] = "mycluster"
    (tmp_path / "other.json").write_text(json.dumps(other))
    paths["other.json"] = str(tmp_path / "other.json")
    for name, text in probe.files.items():
        path = store.parent / name if name.startswith("results/") else tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
        paths[name] = str(path)
    def fill(text: str) -> str:
        for name, path in paths.items():
            text = text.replace("{" + name + "}", path)
        return text

    args = [fill(a) for a in probe.args]
    env = {**os.environ, "MPIMATRIX_RESULTS": str(store), "MPIMATRIX_MACHINE_LOCK": ""}
    for k in ("MPIMATRIX_BUILDS", "MPIMATRIX_LOCK", "SPACK_ENV", "MPIMATRIX_INJECT"):
        env.pop(k, None)
    env.update({k: fill(v) for k, v in probe.env.items()})
    return subprocess.run([MPIMATRIX, *args], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=600)


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_bad_input(probe, store, tmp_path):
    written = {f.removeprefix("results/") for f in probe.files}
    before = {k: v for k, v in digest(store).items() if k not in written}
    proc = run_probe(probe, store, tmp_path)
    text = proc.stdout + proc.stderr
    assert "Traceback" not in text, text[-3000:]
    assert probe.message in text, text[-3000:]
    assert proc.returncode == probe.rc, text[-3000:]
    after = {k: v for k, v in digest(store).items() if k in before}
    assert after == before, "references or reports changed"


def test_probe_table_covers_the_issue():
    assert len(PROBES) >= 50
