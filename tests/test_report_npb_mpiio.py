"""The report's NAS Parallel Benchmarks and MPI-IO sections on a recorded real session,
checked against the raw records: medians, intervals, node-hours, costs, the fabric
comparison and the network ratios, and that the page shows them.

Fixture: tests/fixtures/sessions/npb-mpiio-acceptance-2builds.json, `mpimatrix run --mode
acceptance --no-confirm --only '^openmpi-4.1.4-debian$' --only '^mpich-4.0.2-debian$'
--sources /work/shared/offline -- -n 'NpbCheck.*kernel=(CG|IS).*npb_class=S' -n
'MpiioCheck.*where=stage'` on this machine (2026-12-06, 3 interleaved passes, NPB from
MPIMATRIX_NPB_SOURCE=.../npb/NPB3.4.tar.gz), trimmed to the keys mpimatrix reads. The
two-fabric comparison uses validation.derived_session's copy of it (partitions ib and
eth, NPB times x2 and x6 on two nodes: not measurements)."""

from __future__ import annotations

import html
import json
import statistics
from collections import defaultdict

import pytest
from helpers import FIXTURES

from mpimatrix.results.report import make_report
from mpimatrix.results.report.model import DASH as D
from mpimatrix.results.report.model import TIMES as X
from mpimatrix.results.report.npb_view import estimate
from mpimatrix.results.report.page import number
from mpimatrix.validation.derived_session import derive, prices

SESSION = FIXTURES / "sessions" / "npb-mpiio-acceptance-2builds.json"
IB, ETH = "derived:ib", "derived:eth"


@pytest.fixture(scope="module")
def real() -> dict:
    return json.loads(SESSION.read_text())


@pytest.fixture(scope="module")
def real_report(real):
    return make_report([real], name="npb",
                       prices={"local:default": {"price_per_node_hour": 0.5,
                                                 "currency": "EUR"}})


@pytest.fixture(scope="module")
def derived_report(real):
    return make_report([derive(real)], name="derived", prices=prices())


def raw_npb(session: dict) -> dict[tuple, list[float]]:
    """NPB's time per (build, partition, kernel, class, placement), from the records."""
    out = defaultdict(list)
    for run in session["runs"]:
        for tc in run["testcases"]:
            if tc["name"].startswith("NpbCheck") and tc["result"] == "pass":
                out[(tc["build_name"], f"{tc['system']}:{tc['partition']}", tc["kernel"],
                     tc["npb_class"], tc["placement"])].append(
                    float(tc["npb_summary"]["time"]))
    return out


def raw_mpiio(session: dict) -> dict[tuple, list[dict]]:
    out = defaultdict(list)
    for run in session["runs"]:
        for tc in run["testcases"]:
            if tc["name"].startswith("MpiioCheck") and tc["result"] == "pass":
                out[(tc["build_name"], tc["mode"], tc["layout"], tc["sync"],
                     int(tc["size"]))].append(
                    {k: float(v) for k, v in tc["mpiio_summary"].items() if k != "block"})
    return out


def test_the_fixture_is_a_real_three_pass_session(real):
    assert len(real["runs"]) == 3
    npb = raw_npb(real)
    assert {k[2] for k in npb} == {"CG", "IS"}
    assert {k[0] for k in npb} == {"openmpi-4.1.4-debian", "mpich-4.0.2-debian"}
    assert all(len(v) == 3 for v in npb.values())
    assert len(raw_mpiio(real)) == 2 * 3 * 2 * 2 * 2


def test_npb_rows_median_interval_node_hours_and_cost(real, real_report):
    ctx = real_report.context
    npb = raw_npb(real)
    assert len(ctx["npb_rows"]) == len(npb) == 4
    for r in ctx["npb_rows"]:
        k = r.key
        xs = npb[(k.build, k.partition, k.kernel, k.klass, k.placement)]
        assert r.time.median == statistics.median(xs)
        # three samples: the bootstrap interval of the median is their min-max
        assert (r.time.lo, r.time.hi, r.time.n) == (min(xs), max(xs), 3)
        assert r.nodes == 1 and r.ranks == 2
        assert r.node_hours == pytest.approx(statistics.median(xs) / 3600)
        assert r.cost == pytest.approx(statistics.median(xs) / 3600 * 0.5)
    cg = next(r for r in ctx["npb_rows"]
              if r.key.kernel == "CG" and r.key.build == "openmpi-4.1.4-debian")
    assert (cg.time.median, cg.time.lo, cg.time.hi) == (0.06, 0.03, 0.12)
    assert cg.cost_text == "EUR 0.000008"
    # one partition, one fabric, no multi-node placement: nothing about the network
    assert ctx["npb_fabric"] == [] and ctx["npb_network"] == []


def test_npb_section_on_the_page(real_report):
    page = html.unescape(real_report.html)
    assert '<section id="npb">' in real_report.html and 'href="#npb"' in real_report.html
    assert "NAS Parallel Benchmarks" in page
    assert f"0.06 [0.03{D}0.12]" in " ".join(page.replace("<small class=\"muted\">", "")
                                          .replace("</small>", "").split())
    assert "No kernel ran on two fabrics" in page
    assert any(p.id == "npb-s" for p in real_report.plots)
    # the Builds table names each build's NPB, as it names its IMB and OSU
    builds = page[page.index("<h3>Builds</h3>"):]
    assert "<th>OSU</th><th>NPB</th>" in builds
    assert builds.count("<td>3.4 (mpimatrix bench-build)</td>") == 2, builds[:3000]


def test_mpiio_cells_against_the_records(real, real_report):
    ctx = real_report.context
    raw = raw_mpiio(real)
    tables = ctx["mpiio_tables"]
    assert [t.line.build for t in tables] == ["mpich-4.0.2-debian", "openmpi-4.1.4-debian"]
    seen = 0
    for t in tables:
        assert t.sizes == [65536, 4194304]
        assert t.columns == [("cache", 65536), ("sync", 65536), ("cache", 4194304),
                             ("sync", 4194304)]
        assert [(m, lay) for m, lay, _ in t.rows] == [
            ("shared", "contiguous"), ("shared", "strided"), ("perfile", "contiguous"),
            ("perfile", "strided"), ("gather", "contiguous"), ("gather", "strided")]
        for mode, layout, cells in t.rows:
            for (sync, size), c in zip(t.columns, cells, strict=True):
                runs = raw[(t.line.build, mode, layout, sync, size)]
                medians = [r["bw_MBps_median"] for r in runs]
                assert c.bw.median == statistics.median(medians)
                assert (c.bw.lo, c.bw.hi) == (min(medians), max(medians))
                assert c.trial_min == min(r["bw_MBps_min"] for r in runs)
                assert c.trial_max == max(r["bw_MBps_max"] for r in runs)
                assert c.trials == 60 and c.bw.n == 3
                assert f"<b>{number(c.bw.median)}</b>" in real_report.html
                seen += 1
    assert seen == 48
    assert "MPI-IO bandwidth" in real_report.html and 'href="#mpiio"' in real_report.html
    assert sum(p.id.startswith("mpiio-") for p in real_report.plots) == 2


def test_npb_fabric_cost_and_network_ratio(real, derived_report):
    ctx = derived_report.context
    (f,) = ctx["npb_fabric"]
    assert (f["first"], f["second"]) == (IB, ETH)
    npb = raw_npb(real)
    rows = {(r.label, r.kernel, r.placement): r for r in f["rows"]}
    r = rows[("mpich-4.0.2-debian", "CG", "internode")]
    xs = npb[("mpich-4.0.2-debian", "local:default", "CG", "S", "intranode")]
    a, b = [x * 2.0 for x in xs], [x * 6.0 for x in xs]  # derived: ib x2, eth x6 on 2x1
    k1, k2 = 2 * 0.975 / 3600, 2 * 0.78 / 3600
    assert r.nodes == 2
    assert r.t1.median == pytest.approx(statistics.median(a))
    assert r.t2.median == pytest.approx(statistics.median(b))
    assert r.cost1 == pytest.approx(k1 * statistics.median(a))
    assert r.cost2 == pytest.approx(k2 * statistics.median(b))
    assert r.diff == pytest.approx(r.cost2 - r.cost1)
    # three samples each: the interval of the difference runs between the extremes
    assert r.diff_lo == pytest.approx(k2 * min(b) - k1 * max(a))
    assert r.diff_hi == pytest.approx(k2 * max(b) - k1 * min(a))
    assert r.diff_lo > 0 and r.cheaper == IB and r.currency == "USD"
    # openmpi's CG spread (0.03-0.12 s) is too wide to name the cheaper fabric
    assert rows[("openmpi-4.1.4-debian", "CG", "internode")].cheaper == "not resolved"
    # IS reads 0 s everywhere: no cost difference to resolve
    assert rows[("mpich-4.0.2-debian", "IS", "internode")].diff == 0

    net = {(n.label, n.kernel, n.what): n for n in ctx["npb_network"]}
    n = net[("mpich-4.0.2-debian", "CG", f"ethernet / infiniband at internode (2{X}1)")]
    assert n.ratio == pytest.approx(3.0)
    assert (n.lo, n.hi) == (pytest.approx(min(b) / max(a)), pytest.approx(max(b) / min(a)))
    assert n.lo > 1 and n.verdict == f"3.00{X} slower on ethernet"
    n = net[("openmpi-4.1.4-debian", "CG", f"ethernet / infiniband at internode (2{X}1)")]
    assert n.lo < 1 < n.hi and n.verdict.startswith("not resolved")
    n = net[("mpich-4.0.2-debian", "IS", f"ethernet / infiniband at internode (2{X}1)")]
    assert n.ratio is None and "resolution" in n.verdict
    # one-node layouts say nothing about the network
    assert not any("intranode" in w for _, _, w in net)
    page = html.unescape(derived_report.html)
    assert "NPB cost per run: derived:ib (infiniband" in page
    assert f"3.00{X} slower on ethernet" in page
    assert "MPI-IO bandwidth" not in page  # the derived session has no MPI-IO case


def test_network_ratio_internode_over_intranode_without_a_second_fabric(real):
    ctx = make_report([derive(real)], name="derived").context  # no prices: no fabrics
    assert ctx["npb_fabric"] == []
    net = {(n.label, n.kernel, n.what): n for n in ctx["npb_network"]}
    xs = raw_npb(real)[("mpich-4.0.2-debian", "local:default", "CG", "S", "intranode")]
    n = net[("mpich-4.0.2-debian (ib)", "CG", f"internode (2{X}1) / intranode (1{X}2)")]
    assert n.ratio == pytest.approx(2.0)  # the derived ib model: x2 on 2x1
    assert (n.lo, n.hi) == (pytest.approx(2 * min(xs) / max(xs)),
                            pytest.approx(2 * max(xs) / min(xs)))
    assert n.verdict == f"2.00{X} slower across nodes"
    n = net[("mpich-4.0.2-debian (eth)", "CG", f"internode (2{X}1) / intranode (1{X}2)")]
    assert n.ratio == pytest.approx(6.0)
    # the derived layouts have no 1x4: 2x2, 4x1 and 4x2 have no one-node partner
    assert {w for _, _, w in net} == {f"internode (2{X}1) / intranode (1{X}2)"}


def test_no_section_without_npb_or_mpiio_cases():
    from stored_db import recorded

    report = make_report([recorded("imb-quick-bless-1")])
    assert report.context["npb_rows"] == [] and report.context["mpiio_tables"] == []
    assert 'id="npb"' not in report.html and 'id="mpiio"' not in report.html
    assert 'href="#npb"' not in report.html and 'href="#mpiio"' not in report.html


def test_estimate_of_the_median():
    one = estimate([4.0], seed=1)
    assert (one.median, one.lo, one.hi, one.n) == (4.0, None, None, 1)
    xs = [1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 5.0, 1.25, 1.15]
    e = estimate(xs, seed=7)
    assert e.median == statistics.median(xs)
    assert min(xs) <= e.lo <= e.median <= e.hi < 5.0  # robust to the one outlier
    assert estimate(xs, seed=7) == e  # seeded: the same samples, the same interval


def test_the_markdown_summary_has_the_npb_and_mpiio_tables(real_report, derived_report):
    md = real_report.markdown
    cg = next(ln for ln in md.splitlines()
              if ln.startswith("| openmpi-4.1.4-debian | CG | S | intranode | 2 |"))
    assert f"| 0.06 [0.03{D}0.12] | 3 |" in cg and "| EUR 0.000008 |" in cg, cg
    assert "## MPI-IO write bandwidth" in md
    for t in real_report.context["mpiio_tables"]:
        block = md[md.index(t.title):].split("\n\n")[1].splitlines()
        assert len(block) == 2 + len(t.rows), block
        for (mode, layout, cells), line in zip(t.rows, block[2:], strict=True):
            assert line.startswith(f"| {mode} | {layout} |"), line
            assert [c.split(" [")[0] for c in line.strip("| ").split(" | ")[2:]] == [
                number(c.bw.median) for c in cells], line
    md = derived_report.markdown
    assert ("- mpich-4.0.2-debian CG.S internode: ethernet \u2212 infiniband = USD +0.000046 "
            "[USD +0.000020, USD +0.000056]: infiniband") in md.splitlines()
    assert (f"- mpich-4.0.2-debian CG.S, ethernet / infiniband at internode (2{X}1): "
            f"3.00 [2.00{D}4.50], 3.00{X} slower on ethernet") in md.splitlines()
    assert "## MPI-IO" not in md
