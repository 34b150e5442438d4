"""The HTML report on recorded real sessions (tests/fixtures/reports/README.md): what each
section computes, checked against the raw records; the seams; refusals."""

from __future__ import annotations

import html
import itertools
import json
import re
import statistics
from collections import defaultdict

import pytest
import yaml
from helpers import FIXTURES, judged, recorded_report, slow_class

from mpimatrix.results import gate
from mpimatrix.results.history import series_of
from mpimatrix.results.host import value_class
from mpimatrix.results.measurements import load as session_view
from mpimatrix.results.reference_set import ReferenceSet
from mpimatrix.results.report import ChangePoint, load, make_report
from mpimatrix.results.report.compare import choose_baseline
from mpimatrix.results.report.gate_view import history_change_points
from mpimatrix.results.report.repetitions import crossovers, curves, ratios
from mpimatrix.results.sessions import SessionError
from mpimatrix.results.statistics import best
from mpimatrix.validation.derived_session import derive, prices

REPORTS = FIXTURES / "reports"


fixture = recorded_report


@pytest.fixture(scope="module")
def compare():
    return fixture("compare-local-5builds")


@pytest.fixture(scope="module")
def nightly():
    return [fixture(f"quick-local-{i}") for i in range(1, 6)]


@pytest.fixture(scope="module")
def refs():
    return yaml.safe_load((REPORTS / "local-references.yaml").read_text())


@pytest.fixture(scope="module")
def derived(compare):
    return derive(compare)


@pytest.fixture(scope="module")
def nightly_report(nightly, refs):
    return make_report(nightly, references=ReferenceSet.of(refs))


@pytest.fixture(scope="module")
def derived_report(derived):
    return make_report([derived], prices=prices())


@pytest.fixture(scope="module")
def compare_report(compare):
    return make_report([compare], name="t")


def raw_values(session: dict, bench: str, env: str, column: str, size: float) -> list[float]:
    """The column at one size in every run of one test case, straight from the record."""
    out = []
    for run in session["runs"]:
        for tc in run["testcases"]:
            if tc.get("benchmark") == bench and tc["environ"] == env and tc["result"] == "pass":
                for row in tc["curve"]["default"]:
                    if row.get("size") == size:
                        out.append(row[column])
    return out


def test_compare_bands_are_min_median_max_over_the_three_runs(compare, compare_report):
    cv = curves(session_view(compare).cases)
    checked = 0
    for (bench, table), cols in cv.items():
        if table != "default" or ("t" not in cols and "t_avg" not in cols):
            continue
        col = "t_avg" if "t_avg" in cols else "t"
        for line, points in cols[col]["intranode"].items():
            env = next(tc["environ"] for tc in compare["runs"][0]["testcases"]
                       if tc.get("build_name") == line.build)
            for p in points:
                raw = raw_values(compare, bench, env, col, p.size)
                assert len(raw) == 3 == p.n
                assert (p.lo, p.mid, p.hi) == (min(raw), statistics.median(raw), max(raw))
                checked += 1
    assert checked > 100
    ctx = compare_report.context
    sized = {b for (b, _), cols in cv.items() for c in cols.values() for pl in c.values()
             for pts in pl.values() if len({p.size for p in pts}) > 1}
    assert len(ctx["curve_plots"]) == len({k for k in cv if k[0] in sized}) > 10
    assert "3 runs: each line is the median over the runs" in compare_report.html
    assert ctx["plot_count"] == len(compare_report.plots) == compare_report.html.count(
        'class="plot"')


def test_front_page_names_builds_sessions_and_provenance(compare, compare_report):
    ctx = compare_report.context
    info = compare["session_info"]
    assert ctx["verdict"]["cls"] == "good" and not ctx["regressions"] and not ctx["failures"]
    envs = set(info["builds"].split("+"))
    assert {b.environ for b in ctx["builds"]} == envs
    assert all(b.status == "ok" and b.library for b in ctx["builds"])
    assert ctx["sessions"][0].uuid == info["uuid"] and ctx["sessions"][0].runs == 3
    assert ctx["reframe"] == info["version"] and ctx["nodes"] == [info["hostname"]]
    for env in envs:
        assert env in compare_report.html or env.replace("_", ".") in compare_report.html
    assert info["uuid"] in compare_report.markdown


def test_a_build_failing_only_against_references_is_no_failed_build():
    """ReFrame fails a pass outside its reference: the build ran fine, its values are
    the gate's to judge (Regressions), so the Builds table says ok with the count."""
    from mpimatrix.results.report import front

    session = json.loads((FIXTURES / "sessions"
                          / "imb-quick-injected-mpich-4.0.2-clock-1.0.json").read_text())
    outside = defaultdict(int)
    for r in session["runs"]:
        for tc in r["testcases"]:
            outside[tc["environ"]] += tc.get("fail_phase") == "performance"
    rows = front.builds(load([session]))
    assert outside["mpich-4_0_2-debian"] == 2
    for b in (b for b in rows if b.results):  # the builds in the session's selection
        assert b.results.get("outside in a pass", 0) == outside[b.environ], b
        assert b.status == "ok" and "fail" not in b.results, b


def test_regressions_are_the_gates_verdicts(nightly, nightly_report):
    """The report lists what the gate decided: values outside their tolerance against
    the host (five builds ran: each value divided by the session's host factor), among
    them the values ReFrame failed against the references as measured."""
    rep = nightly_report
    failed = defaultdict(int)
    for run in nightly[-1]["runs"]:
        for tc in run["testcases"]:
            for full, pv in tc["perfvalues"].items():
                if pv[5] == "fail":
                    failed[(tc["environ"], tc.get("ref_key"), full.rsplit(":", 1)[-1])] += 1
    night = judged(nightly[-1])
    rows, watched = rep.context["regressions"], rep.context["watch"]
    whole = [r.build for r in rows if r.benchmark == "the whole build"]
    assert whole == [b.build for b in night.builds if b.status == gate.REGRESSION]
    rows = [r for r in rows if r.benchmark != "the whole build"]
    # each build here has several values outside at once: none is a value alone, on
    # watch (results/watch.py), so the report's regressions are the gate's
    assert len(rows) == sum(v.status == gate.REGRESSION for v in night.verdicts) > 0
    assert not watched and "on watch" not in rep.context["verdict"]["text"]
    assert len(rows) >= len(failed) - 2, (len(rows), len(failed))
    host = night.hosts[0]
    assert host.factor and 0.8 < host.factor < 1.25
    assert rep.context["verdict"]["cls"] == "bad"
    # each value alone against its class's host factor, never below 1 (a value named with
    # its build, against the level its build was judged against)
    regressed = [v for v in night.verdicts if v.status == gate.REGRESSION]
    for v in regressed:
        cls = value_class(v.size, v.higher_is_better)
        assert v.with_build or v.host == max(host.classes.get(cls, host.factor), 1.0)
    assert sorted(r.reason for r in rows) == sorted(v.why() for v in regressed)
    for r in (r for r in rows if "with the whole build" not in r.reason):
        assert r.value is not None and r.reference and r.change is not None
        # one run: the session's one sample decides, against the host
        assert re.search(r"^best of 1 sample\(s\) \[\S+\] \S+ against the host \(host factor "
                         r"\d\.\d\d\): outside the tolerance [+-]30%$", r.reason), r.reason
    # a failure of the performance stage is a regression, not also a failed test case
    assert all(f.phase != "performance" for f in rep.context["failures"])
    assert f"## Regressions ({len(rows) + len(whole)})" in rep.markdown
    assert rep.context["gate"].startswith("the regression gate: a value outside its tolerance")


def test_repeated_runs_pool_their_samples_before_a_value_is_a_regression():
    loaded = fixture("compare-local-5builds-loaded")
    refs = yaml.safe_load((REPORTS / "local-references.yaml").read_text())
    refset = ReferenceSet.of(refs)
    rep = make_report([loaded], references=refset)
    gated = {(v.environ, v.var, v.check, v.placement): v.status
             for v in gate.judge(session_view(loaded), [], refset).verdicts}
    want = {k for k, st in gated.items() if st in (gate.REGRESSION, gate.NOISE)}
    got = {(r.build, r.benchmark, r.placement, r.what)
           for r in rep.context["regressions"] + rep.context["noise"]}
    assert len(got) == len(want)
    assert len(rep.context["regressions"]) == sum(st == gate.REGRESSION
                                                  for st in gated.values())


def session_values(sessions: list[dict], env: str, key: str, var: str) -> list[float]:
    return [pv[0] for s in sessions for run in s["runs"] for tc in run["testcases"]
            if tc["environ"] == env and tc.get("ref_key") == key
            for full, pv in tc["perfvalues"].items()
            if full.endswith(":" + var) and pv[0] is not None]


def gate_statistics(refs: dict, sessions: list[dict]) -> dict:
    """The noise statistics as `mpimatrix bless` writes them (<system>.stats.yaml): a
    value whose spread over the blessing sessions exceeds the tolerance is not gated."""
    stats: dict = {}
    for cls, parts in refs.items():
        for part, envs in parts.items():
            if part == "$index":
                continue
            for env, keys in envs.items():
                for key, pvars in keys.items():
                    for var, (ref, _lo, _hi, _unit) in pvars.items():
                        vals = session_values(sessions, env, key, var)
                        med = statistics.median(vals)
                        spread = (max(vals) - min(vals)) / med if med else 0.0
                        gated = spread <= 0.3
                        stats.setdefault(cls, {}).setdefault(part, {}).setdefault(env, {}) \
                            .setdefault(key, {})[var] = {
                                "median": ref, "spread": spread, "n": len(vals),
                                "tolerance": 0.3, "gated": gated, "samples": vals,
                                "reason": "" if gated else f"spread {spread:.0%} > 30%"}
    return stats


def test_values_not_gated_and_why_come_from_statistics(nightly, refs, nightly_report):
    stats = gate_statistics(refs, nightly[:2])
    not_gated = sum(1 for p in stats["ImbCheck"].values() for e in p.values()
                    for k in e.values() for v in k.values() if not v["gated"])
    assert not_gated > 0
    rep = make_report(nightly, references=ReferenceSet.of(refs, stats))
    rows = rep.context["not_gated"]
    assert len(rows) == not_gated
    assert all(r["reason"].startswith("spread ") for r in rows)
    assert html.escape(rows[0]["reason"]) in rep.html
    assert nightly_report.context["not_gated"] == []  # no statistics: tolerated


def test_the_detection_floor_of_every_gated_value_is_shown(nightly, refs, nightly_report):
    """"What the gate can see": one row per gated value with the floor floors.py computes
    from its spread and tolerance, one per build with their median, and the plot."""
    from mpimatrix.results import floors

    stats = gate_statistics(refs, nightly[:2])
    rep = make_report(nightly, references=ReferenceSet.of(refs, stats))
    expected = floors.value_floors(ReferenceSet.of(refs, stats))
    rows = rep.context["floor_values"]
    assert [(r["environ"], r["ref_key"], r["var"], r["floor"]) for r in rows] == [
        (f.environ, f.ref_key, f.var, f.text()) for f in expected]
    assert len(rows) == sum(v["gated"] for p in stats["ImbCheck"].values()
                            for e in p.values() for k in e.values() for v in k.values())
    for b in rep.context["floor_builds"]:
        mine = sorted(f.step for f in expected if f.environ == b["environ"])
        assert b["gated"] == len(mine) and b["worst"] == f"{mine[-1]:.0%}"
    assert "<h3>What the gate can see</h3>" in rep.html and 'id="detection-floor"' in rep.html
    assert html.escape(rep.context["floor_summary"][1:]) in rep.html
    assert nightly_report.context["floor_values"] == []  # no statistics: nothing gated
    assert "No value is gated yet: nothing has a detection floor" in nightly_report.html


def test_a_night_the_machine_slowed_a_class_of_values_says_so(nightly, refs, nightly_report):
    """Small-message times 4.6x slower on every build at once: "The machine" lists the
    HOST line naming the class, and no value is a regression it was not without it."""
    slowed = slow_class(json.loads(json.dumps(nightly[-1])), 4.6)
    rep = make_report([*nightly[:-1], slowed], references=ReferenceSet.of(refs))
    assert len(rep.context["machine"]) == 1
    line = rep.context["machine"][0]
    assert line.startswith("HOST local:default:") and "small-message times +3" in line, line
    assert "<h3>The machine</h3>" in rep.html and html.escape(line) in rep.html
    # a night with nothing else wrong is a warning, not a green one (test_night_verdict:
    # the HOST night's headline and exit code)

    def named(report) -> set:
        """Values named alone and whole builds (a value named with its build is judged
        against the others' level in its class, which the class's slowdown moves)."""
        return {(r.build, r.benchmark, r.what) for r in report.context["regressions"]
                if "with the whole build" not in r.reason}

    before, after = named(nightly_report), named(rep)
    assert after <= before, after - before
    assert nightly_report.context["machine"] == []


def test_a_night_every_build_ran_faster_says_what_step_it_hides(nightly, refs):
    """Every time 30 % shorter and every rate 30 % higher at once (references blessed on a
    slower machine): "What the gate can see" says the machine runs faster than when
    blessed and the size of step that hides."""
    night = json.loads(json.dumps(nightly[-1]))
    for run in night["runs"]:
        for tc in run["testcases"]:
            for pv in (tc.get("perfvalues") or {}).values():
                if pv[0] is not None and pv[4] != "%":
                    pv[0] = pv[0] * 1.3 if pv[4] == "MB/s" else pv[0] / 1.3
    rep = make_report([*nightly[:-1], night],
                      references=ReferenceSet.of(refs, gate_statistics(refs, nightly[:2])))
    [line] = rep.context["floor_fast"]
    assert line.startswith("host local:default: every build -2") and "bless again" in line
    assert "a step of up to 3" in line or "a step of up to 2" in line, line
    assert html.escape(line) in rep.html and rep.context["machine"] == []


def test_trends_cover_every_session_and_take_change_points(nightly, refs):
    target = next(tc for tc in nightly[-1]["runs"][0]["testcases"]
                  if tc.get("benchmark") == "MPI1:PingPong")
    cp = {"partition": "local:default", "environ": target["environ"],
          "ref_key": target["ref_key"], "var": "latency_8B",
          "session": nightly[2]["session_info"]["uuid"], "before": 1.0, "after": 2.0}
    rep = make_report(nightly, references=ReferenceSet.of(refs), change_points=[cp], max_trends=6)
    ctx = rep.context
    assert ctx["trend_gated"] and 0 < len(ctx["trend_plots"]) <= 6
    # the values of the sessions before the blessing count too
    assert max(r["n"] for r in ctx["trend_rows"]) == 5
    (got,) = ctx["change_points"]
    assert isinstance(got, ChangePoint)
    assert got.cause == "no lock or build change between the sessions"
    assert ctx["trend_rows"][0]["changes"] == 1  # the series with a change point leads
    assert "trend-imb-mpi1-pingpong-intranode-latency-8b" in rep.html
    single = make_report(nightly[-1:], references=ReferenceSet.of(refs))
    assert single.context["trend_plots"] == [] and "a trend needs two or more" in single.html


def test_each_row_is_a_gate_verdict_in_its_own_words(nightly, nightly_report):
    """A verdict reaches the page as itself: the row's names, change and reason are the
    verdict's, and the reason is written in the words of the line `mpimatrix run` prints."""
    night = judged(nightly[-1])
    regs = {(v.build, v.check, v.placement, v.what): v for v in night.verdicts
            if v.status == gate.REGRESSION}
    rows = {(r.build, r.benchmark, r.placement, r.what): r
            for r in nightly_report.context["regressions"]}
    for b in night.builds:
        row = rows.pop((b.build, "the whole build", "all placements", "factor"), None)
        assert (row.reason if row else None) == (
            b.reason() if b.status == gate.REGRESSION else None)
    assert rows.keys() == regs.keys() and rows
    assert any(w.endswith(" at 8 B") for *_, w in rows)
    for key, row in rows.items():
        v = regs[key]
        assert row.reason == v.why() and row.change == pytest.approx(v.change)
        assert (row.value, row.reference, row.unit) == (v.value, v.reference, v.unit)
        basis, _, _ = row.reason.partition(":")  # "best of 1 sample(s) [x] us against ..."
        samples = basis.split(" against")[0]
        assert v.line().startswith(f"REGRESSION {' '.join(key)}: {v.change_label}")
        assert f"({samples} vs reference" in v.line()


def test_build_vs_build_marks_only_differences_beyond_the_spread(compare, nightly):
    cv = curves(session_view(compare).cases)
    data = load([compare])
    base, *others = [ln for ln in data.lines() if any(
        ln in pl for cols in cv.values() for c in cols.values() for pl in c.values())]
    rs = [r for o in others for r in ratios(cv, base, o)]
    assert rs and any(r.significant for r in rs) and not all(r.significant for r in rs)
    for r in rs:
        overlap = max(r.base.lo, r.other.lo) <= min(r.base.hi, r.other.hi)
        assert r.significant == (not overlap)
    one_run = curves(session_view(nightly[0]).cases)  # one run: no spread, never marked
    assert not any(r.significant for o in others for r in ratios(one_run, base, o))
    rep = make_report([compare], baseline=others[0].build)
    assert rep.context["baseline"] == others[0].build
    assert len(rep.context["compare_plots"]) == len(others)
    assert choose_baseline(data.lines(), "nope") is None
    # a drawing budget: the heat maps of the builds with the most marked differences, in
    # the builds' order; the table still lists every build's largest
    every = make_report([compare], baseline=base.build)
    labels = [p.title.split(" / ")[0] for p in every.context["compare_plots"]]
    marked = dict(zip(labels, [sum(r.significant for r in ratios(cv, base, o))
                               for o in others], strict=True))
    assert len(set(marked.values())) > 1
    few = make_report([compare], baseline=base.build, max_heatmaps=len(others) - 1)
    drawn = [p.title.split(" / ")[0] for p in few.context["compare_plots"]]
    assert len(drawn) == len(others) - 1 and drawn == [lab for lab in labels if lab in drawn]
    assert min(marked[d] for d in drawn) >= max(n for lab, n in marked.items()
                                                if lab not in drawn)
    assert f"Heat maps of the {len(others) - 1} of {len(others)} builds" in few.html
    assert few.context["compare_rows"] == every.context["compare_rows"]


def test_derived_layouts_crossovers_and_fabric_cost_comparison(derived, derived_report):
    rep = derived_report
    ctx = rep.context
    cases = {(tc["name"], tc["partition"], tc["environ"]) for tc in derived["runs"][0]["testcases"]}
    assert len(cases) >= 200
    assert ctx["layout_plots"] and ctx["crossover_plot"]
    heads, rows = ctx["crossover_table"]
    ib = [h for h in heads if h.endswith("(ib)")]
    assert ib and all("internode faster above" in r.cells[heads.index(ib[0])] for r in rows)
    (fabric,) = ctx["cost_fabric"]
    assert (fabric["first"], fabric["second"]) == ("derived:ib", "derived:eth")
    for r in fabric["rows"]:
        assert r.cost1 == pytest.approx(r.min1 * r.nodes * 0.975 / 60)
        assert r.cost2 == pytest.approx(r.min2 * r.nodes * 0.78 / 60)
        assert r.pct == pytest.approx((r.cost2 - r.cost1) / r.cost1 * 100)
    hours = sum(tc["time_run"] * tc["num_tasks"] / tc["num_tasks_per_node"]
                for run in derived["runs"] for tc in run["testcases"]) / 3600
    assert ctx["cost_sessions"][0].node_hours == pytest.approx(hours)
    assert ctx["cost_sessions"][0].cost.startswith("USD ")


def test_crossover_is_interpolated_where_the_ratio_crosses_one(derived):
    for x in crossovers(curves(session_view(derived).cases)):
        ratios_ = [r for _, r in x.ratio_curve]
        crosses = any((a - 1) * (b - 1) < 0 for a, b in itertools.pairwise(ratios_))
        assert (x.size is not None) == crosses
        if x.size:
            assert x.sizes[0] < x.size < x.sizes[1]


def test_sessions_from_two_systems_or_none_are_refused(compare, derived):
    with pytest.raises(SessionError, match=r"2 systems \(derived: .*; local: "):
        load([compare, derived])
    with pytest.raises(SessionError, match="no session to report on"):
        load([])
    empty = {"session_info": {"uuid": "u1"}, "runs": [{"testcases": []}]}
    with pytest.raises(SessionError, match="hold no test case"):
        load([empty])


def test_failed_test_cases_say_how_often_and_why():
    loaded = fixture("compare-local-5builds-loaded")
    rep = make_report([loaded])
    bad = defaultdict(list)
    for run in loaded["runs"]:
        for tc in run["testcases"]:
            bad[(tc["name"], tc["environ"])].append(tc)
    want = {k: sum(t["result"] == "fail" for t in v) for k, v in bad.items()
            if any(t["result"] == "fail" for t in v)}
    rows = rep.context["failures"]
    assert len(rows) == len(want) > 0
    for r in rows:
        assert r.attempts == 3 and r.phase == "sanity" and r.reason
        assert f"{r.failed} of 3" in rep.html
    # as `mpimatrix run` exits (1) for that night
    assert rep.context["verdict"]["cls"] == "bad"
    assert rep.context["verdict"]["text"].startswith(f"FAILED: {len(want)} failed test case")
    imb = {b.imb for b in rep.context["builds"] if b.imb}
    assert imb == {"2021.11 (impi-2021.18.1-pypi wheel)"}


def test_real_cluster_session_has_layouts_and_crossovers():
    """The emulated cluster's session (`mpimatrix cluster run`): internode beside
    intranode, Allreduce across three layouts, crossovers from measured curves."""
    session = fixture("quick-vcluster-2nodes")
    rep = make_report([session])
    ctx = rep.context
    assert ctx["system"] == "vcluster" and ctx["nodes"] == ["node1", "node2"]
    assert ctx["partitions"] == ["vcluster:compute", "vcluster:compute_mpirun"]
    assert [p.id for p in ctx["layout_plots"]] == ["layout-mpi1-allreduce-default"]
    assert ctx["placements"] == ["2x2", "internode", "intranode"]
    heads, rows = ctx["crossover_table"]
    assert len(heads) == 6 and {r.benchmark for r in rows} == {"MPI1:Allreduce",
                                                                   "MPI1:PingPong"}
    assert any("faster above" in c for r in rows for c in r.cells)
    pingpong = next(p for p in ctx["curve_plots"] if p.id == "curve-mpi1-pingpong")
    assert "intranode and internode" in pingpong.alt


def test_change_points_come_from_the_history_by_default(nightly, refs):
    found = history_change_points(series_of([session_view(s) for s in nightly]))  # the five
    uuids = {s["session_info"]["uuid"] for s in nightly}
    assert all(cp.session in uuids and cp.var and cp.environ for cp in found)
    rep = make_report(nightly, references=ReferenceSet.of(refs), max_trends=3)
    assert len(rep.context["change_points"]) == len(found)


def test_the_trend_drift_is_the_gates_statistic():
    """A value's drift is its last session's best sample against the reference (what the
    gate judges, and bless blessed from), not the median: one slow pass of three moves
    the median, not the drift. The trend is the history's series of the value."""
    from mpimatrix.results.history import Point, Series
    from mpimatrix.results.report.trend import Trend

    def points(higher, *sessions):
        return [Point(t, best(xs, higher), f"s{t}", samples=xs)
                for t, xs in enumerate(sessions)]

    latency = Trend(Series(("local:default", "e", "k", "latency_8B"), "b", "Imb",
                           "intranode", "latency_8B", "us", False,
                           points(False, (1.0, 1.0, 1.1), (1.02, 1.5, 1.6))),
                    ref=(1.0, None, 0.1))
    assert latency.drift == pytest.approx(0.02)
    assert latency.points[1].spread == (1.02, 1.5, 1.6)  # drawn: the median, the band
    rate = Trend(Series(("local:default", "e", "k", "bandwidth_4MiB"), "b", "Imb",
                        "intranode", "bandwidth_4MiB", "MB/s", True,
                        points(True, (900.0, 1000.0, 1000.0), (500.0, 600.0, 990.0))))
    assert rate.drift == pytest.approx(-0.01)  # against the first session's best
