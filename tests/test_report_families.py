"""The families side by side: every build on one plot per benchmark,
styled by family, fabric and compiler; each axis' effect between builds that differ in it
alone, with a bootstrap interval. Checked on recorded real sessions
(tests/fixtures/reports/README.md) against numbers computed here from the raw records."""

from __future__ import annotations

import copy
import statistics

import pytest
from helpers import FIXTURES, recorded_report

from mpimatrix.builds.spack.lock_builds import builds_from_lock
from mpimatrix.results.measurements import load as session_view
from mpimatrix.results.report import make_report
from mpimatrix.results.report.axes import Axes, build_axes
from mpimatrix.results.report.curves import benchmark_figure, reference_points
from mpimatrix.results.report.effects import interval, one_axis, pairs
from mpimatrix.results.report.model import Line
from mpimatrix.results.report.repetitions import curves
from mpimatrix.results.report.styles import Colours


def _build_lines(axes) -> list:
    """(build, line) for each line the axes draw for a build (its gid "build:<name>")."""
    return [(ln.get_gid()[6:], ln) for ax in axes for ln in ax.get_lines()
            if (ln.get_gid() or "").startswith("build:")]


@pytest.fixture(scope="module")
def compare():
    return recorded_report("compare-local-5builds")


@pytest.fixture(scope="module")
def compare_report(compare):
    return make_report([compare], name="families")


# -- the axes of a build ----------------------------------------------------------------------
@pytest.mark.parametrize("name, axes", [
    ("openmpi-5.0.7-ucx-gcc12", ("openmpi", "5.0.7", "ucx", "gcc12", "spack")),
    ("openmpi-5.0.8-cma-llvm14", ("openmpi", "5.0.8", "tcp", "llvm14", "spack")),
    ("openmpi-5.0.7-ucx-cma-pmi-gcc12", ("openmpi", "5.0.7", "ucx", "gcc12", "spack")),
    ("mpich-4.0.2-ch3-tcp-gcc12", ("mpich", "4.0.2", "tcp", "gcc12", "spack")),
    ("mpich-4.3.2-ch3-sock-gcc12", ("mpich", "4.3.2", "sock", "gcc12", "spack")),
    ("mpich-4.3.2-ofi-llvm14", ("mpich", "4.3.2", "ofi", "llvm14", "spack")),
    ("mvapich2-2.3.7-1-nemesis-gcc12", ("mvapich2", "2.3.7-1", "tcp", "gcc12", "spack")),
    ("mvapich2-2.3.7-1-mrail-gcc12", ("mvapich2", "2.3.7-1", "verbs", "gcc12", "spack")),
    ("mvapich2-2.3.7-1-kit-nemesis-gcc12", ("mvapich2", "2.3.7-1", "tcp", "gcc12", "spack")),
    ("mvapich-4.1-ucx-oneapi2025", ("mvapich", "4.1", "ucx", "oneapi2025", "spack")),
    ("impi-2021.17.0-gcc12", ("impi", "2021.17.0", "ofi", "gcc12", "spack")),
    ("openmpi-4.1.4-ext-gcc12", ("openmpi", "4.1.4", "", "gcc12", "external")),
    ("openmpi-5.0.7-ucx-gcc12-abcdefg", ("openmpi", "5.0.7", "ucx", "gcc12", "spack")),
    ("openmpi-4.1.4-debian", ("openmpi", "4.1.4", "", "", "debian")),
    ("mpich-5.0.2-pypi", ("mpich", "5.0.2", "", "", "pypi")),
    ("impi-2021.18.1-pypi", ("impi", "2021.18.1", "ofi", "", "pypi")),
    ("hpcx-mpi-2.19-ext-gcc12", ("openmpi", "2.19", "", "gcc12", "external")),
    ("my-own-mpi", ("", "", "", "", "")),
])
def test_axes_of_a_build_name(name, axes):
    assert build_axes(name) == Axes(*axes)


@pytest.mark.parametrize("name, fields, axes", [
    # discovered builds record what discovery knows (builds/discovery.py)
    ("mpich-4.0.2-debian", {"family": "mpich", "version": "4.0.2", "fabric": "ch4:ucx",
                            "compiler": "gcc@12.2.0", "provenance": "debian"},
     ("mpich", "4.0.2", "ucx", "gcc12", "debian")),
    ("openmpi-4.1.4-debian", {"family": "openmpi", "fabric": "ob1/vader+tcp"},
     ("openmpi", "4.1.4", "tcp", "", "debian")),
    ("mpich-5.0.2-pypi", {"fabric": "ch4:ucx+ofi", "compiler": "gcc"},
     ("mpich", "5.0.2", "ucx+ofi", "gcc", "pypi")),
    # a builds file's name says nothing: the fields do
    ("site-mpi", {"family": "openmpi", "version": "5.0.7-kit", "fabric": "none",
                  "compiler": "intel-oneapi-compilers@2025.1.0", "provenance": "site"},
     ("openmpi", "5.0.7", "tcp", "oneapi2025", "site")),
])
def test_recorded_fields_win_over_the_name(name, fields, axes):
    assert build_axes(name, fields) == Axes(*axes)


@pytest.mark.parametrize("lock", ["debian-local-v6.spack.lock", "kit-rows-v6.spack.lock"])
def test_a_spack_builds_name_says_what_its_record_says(lock):
    """The name of every build of a real lock gives the axes its record's fields give
    (but the fabric of an external, and Open MPI's fabrics=none, which its name leaves
    out: spec_naming tags neither)."""
    records, _ = builds_from_lock(FIXTURES / "spack" / lock, spack=False, prefixes={})
    assert len(records) >= 3
    for r in records:
        named = build_axes(r.name)
        recorded = build_axes(r.name, {"family": r.family, "version": r.version,
                                       "fabric": r.fabric, "compiler": r.compiler,
                                       "provenance": r.provenance})
        if named.provenance == "external" or r.fabric in ("none", "auto"):
            assert named.fabric == "" and recorded.fabric, r.name
            recorded = Axes(*[getattr(recorded, k) for k in ("family", "version")], "",
                            recorded.compiler, recorded.provenance)
        assert named == recorded, (r.name, r.fabric, r.compiler)


def test_pairs_differ_in_exactly_one_axis():
    a = {"ompi-ucx": Axes("openmpi", "5.0.7", "ucx", "gcc12", "spack"),
         "ompi-ofi": Axes("openmpi", "5.0.7", "ofi", "gcc12", "spack"),
         "ompi-ucx-llvm": Axes("openmpi", "5.0.7", "ucx", "llvm18", "spack"),
         "ompi4-ucx": Axes("openmpi", "4.1.4", "ucx", "gcc12", "spack"),
         "mpich-ucx": Axes("mpich", "4.3.0", "ucx", "gcc12", "spack"),
         "mpich-ofi-llvm": Axes("mpich", "4.3.0", "ofi", "llvm18", "spack"),
         "ompi-ext": Axes("openmpi", "5.0.7", "ucx", "gcc12", "external")}
    assert one_axis(a["ompi-ucx"], a["ompi-ofi"]) == "fabric"
    assert one_axis(a["ompi-ucx"], a["ompi-ucx-llvm"]) == "compiler"
    assert one_axis(a["ompi-ucx"], a["ompi4-ucx"]) == "version"
    assert one_axis(a["ompi-ucx"], a["mpich-ucx"]) == "family"  # the version goes with it
    assert one_axis(a["ompi-ucx"], a["ompi-ext"]) == "provenance"
    assert one_axis(a["ompi-ofi"], a["ompi-ucx-llvm"]) is None  # fabric and compiler
    assert one_axis(a["mpich-ucx"], a["ompi-ofi"]) is None  # family and fabric
    assert one_axis(a["mpich-ofi-llvm"], a["mpich-ucx"]) is None
    # an unknown value is no difference to measure
    assert one_axis(Axes("mpich", "4.0.2", "", "", "debian"),
                    Axes("mpich", "4.0.2", "ucx", "", "spack")) is None
    del a["ompi-ext"]
    lines = [Line(b, "sys:p") for b in a] + [Line("ompi-ofi", "sys:q")]
    found = pairs(lines, a)
    assert {(p.axis, p.a.build, p.b.build) for p in found} == {
        ("fabric", "ompi-ofi", "ompi-ucx"), ("compiler", "ompi-ucx", "ompi-ucx-llvm"),
        ("version", "ompi-ucx", "ompi4-ucx"),  # A: the newer version
        ("family", "mpich-ucx", "ompi-ucx"), ("family", "mpich-ucx", "ompi4-ucx")}
    assert all(p.a.partition == p.b.partition == "sys:p" for p in found)
    fabric = next(p for p in found if p.axis == "fabric")
    assert (fabric.title, fabric.context) == ("ofi vs ucx", "Open MPI 5.0.7, gcc12")
    family = next(p for p in found if p.axis == "family" and p.b.build == "ompi-ucx")
    assert (family.title, family.context) == ("MPICH 4.3.0 vs Open MPI 5.0.7", "ucx, gcc12")


# -- the plot: every build on one plot ------------------------------------------------------
def test_one_plot_per_benchmark_has_one_line_per_build(compare):
    cur = session_view(compare)
    cv = curves(cur.cases)
    ran = {c.build for c in cur.cases if c.benchmark == "MPI1:PingPong" and c.passed}
    assert len(ran) == 3
    colours = Colours(sorted({c.line for c in cur.cases}))
    fig, title, alt = benchmark_figure("MPI1:PingPong", "default",
                                       cv[("MPI1:PingPong", "default")],
                                       reference_points(cur.cases), colours)
    assert title == "MPI1:PingPong" and "3 builds" in alt
    panels = [ax for ax in fig.axes if ax.get_ylabel()]
    assert [ax.get_ylabel() for ax in panels] == ["t (µs)", "bandwidth (MB/s)"]
    styles = set()
    for ax in panels:
        drawn = _build_lines([ax])
        assert sorted(b for b, _ in drawn) == sorted(ran)  # one line each
        styles |= {(ln.get_color(), str(ln.get_linestyle()), ln.get_marker()) for _, ln in drawn}
    assert len(styles) == 3  # told apart
    # colour by family: the two MPICH builds share a hue family, Intel MPI has its own
    assert colours.axes["impi-2021.18.1-pypi"].family == "impi"
    assert colours.colour["mpich-4.0.2-debian"] != colours.colour["mpich-5.0.2-pypi"]
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert ran | {"MPICH", "Intel MPI"} <= set(legend)


def test_styles_follow_family_fabric_and_compiler():
    axes = {"openmpi-5.0.7-ucx-gcc12": None, "openmpi-5.0.7-ofi-gcc12": None,
            "openmpi-5.0.7-ucx-llvm18": None, "mpich-4.3.0-ucx-gcc12": None}
    colours = Colours([Line(b, "s:p") for b in axes])
    style = {b: (colours.of(Line(b, "s:p")), colours.marker(Line(b, "s:p"))) for b in axes}
    ucx, ofi = style["openmpi-5.0.7-ucx-gcc12"], style["openmpi-5.0.7-ofi-gcc12"]
    assert ucx[0]["linestyle"] == "-" and ofi[0]["linestyle"] == "--"
    assert ucx[1] != style["openmpi-5.0.7-ucx-llvm18"][1]  # compiler: marker
    assert ucx[1] == ofi[1] == style["mpich-4.3.0-ucx-gcc12"][1]
    key = [label for _, label in colours.key(axes)]
    assert key == ["MPICH", "Open MPI", "fabric ofi", "fabric ucx", "compiler gcc12",
                   "compiler llvm18"]


# -- the effect table ---------------------------------------------------------------------------
def raw_values(session: dict, bench: str, build: str, column: str, size: float) -> list[float]:
    out = []
    for run in session["runs"]:
        for tc in run["testcases"]:
            if tc.get("benchmark") == bench and tc.get("build_name") == build \
                    and tc["result"] == "pass":
                out += [row[column] for row in tc["curve"]["default"] if row["size"] == size]
    return out


def test_effect_of_one_pair_from_the_per_pass_samples(compare, compare_report):
    """The recorded compare session (3 passes; discovered builds, no recorded fields):
    the two MPICH builds differ only in version (fabric and compiler unknown in both).
    Each cell: median(A)/median(B) - 1, and with three passes the bootstrap's 95 %
    interval is the ratio of the extremes."""
    tables = compare_report.context["effect_tables"]
    assert [(t.axis, t.a, t.b) for t in tables] == [
        ("version", "mpich-5.0.2-pypi", "mpich-4.0.2-debian")]
    t = tables[0]
    assert t.title == "5.0.2 vs 4.0.2" and t.context == "MPICH, fabric ?, compiler ?"
    assert t.sizes == ["8 B", "64 KiB", "4 MiB"]
    row = next(r for r in t.rows if r.benchmark == "MPI1:PingPong")
    assert row.placement.startswith("intranode") and row.column == "t (µs)"
    statuses = set()
    for size, c in zip((8.0, 65536.0, 4194304.0), row.cells, strict=True):
        a = raw_values(compare, "MPI1:PingPong", "mpich-5.0.2-pypi", "t", size)
        b = raw_values(compare, "MPI1:PingPong", "mpich-4.0.2-debian", "t", size)
        assert len(a) == len(b) == 3
        assert c.estimate == pytest.approx(statistics.median(a) / statistics.median(b) - 1)
        assert c.low == pytest.approx(min(a) / max(b) - 1)
        assert c.high == pytest.approx(max(a) / min(b) - 1)
        resolved = min(a) > max(b) or max(a) < min(b)  # the ranges do not overlap
        assert c.status == ("resolved" if resolved else "spans0")
        assert c.note == ("4.0.2 faster" if resolved and c.estimate > 0 else
                             "5.0.2 faster" if resolved else "not resolved: interval spans 0")
        statuses.add(c.status)
    assert statuses == {"resolved", "spans0"}  # this session has both
    counts = compare_report.context["effect_counts"]
    assert counts["effects"] == len(t.effects) and counts["single"] == 0
    assert "not resolved: interval spans 0" in compare_report.html
    assert 'id="families"' in compare_report.html and "Families side by side" in \
        compare_report.markdown
    again = make_report([compare], name="families").context["effect_tables"]
    assert [e.low for e in again[0].effects] == [e.low for e in t.effects]  # seeded


def test_six_passes_narrow_the_interval_and_one_pass_has_none(compare):
    """Six samples per build (the two recorded compare sessions' passes pooled): the
    bootstrap interval lies inside the ratio of the extremes, around the estimate, and is
    narrower; the same seed gives the same interval. One pass: no interval."""
    loaded = recorded_report("compare-local-5builds-loaded")
    narrower = 0
    for size in (8.0, 65536.0, 4194304.0):
        a, b = ([v for s in (compare, loaded) for v in raw_values(s, "MPI1:PingPong", build,
                                                                  "t", size)]
                for build in ("mpich-5.0.2-pypi", "mpich-4.0.2-debian"))
        assert len(a) == len(b) == 6
        low, high = interval(a, b, seed=7)
        est = statistics.median(a) / statistics.median(b) - 1
        extremes = (min(a) / max(b) - 1, max(a) / min(b) - 1)
        assert extremes[0] <= low <= est <= high <= extremes[1]
        narrower += (high - low) < 0.9 * (extremes[1] - extremes[0])
        assert interval(a, b, seed=7) == (low, high)
    assert narrower >= 2
    assert interval([1.0], [1.0, 2.0, 3.0], seed=7) == (None, None)
    one = make_report([recorded_report("quick-local-1")]).context["effect_tables"]
    cells = [c for t in one for r in t.rows for c in r.cells if c]
    assert cells and all(c.note == "one pass: no interval" and c.low is None
                         for c in cells)


def test_recorded_fields_decide_the_pairs(compare):
    """With the fields the checks now record, the two MPICH builds differ in fabric too
    (Debian's ch4:ucx, the wheel's ch4:ucx+ofi): two axes, no pair."""
    session = copy.deepcopy(compare)
    fabric = {"mpich-4.0.2-debian": "ch4:ucx", "mpich-5.0.2-pypi": "ch4:ucx+ofi",
              "impi-2021.18.1-pypi": "ofi"}
    for run in session["runs"]:
        for tc in run["testcases"]:
            if tc.get("build_name") in fabric:
                tc.update(build_family=tc["build_name"].split("-")[0],
                          build_fabric=fabric[tc["build_name"]], build_compiler="gcc@12.2.0")
    rep = make_report([session])
    assert rep.context["effect_tables"] == []
    builds = {b["build"]: b["fabric"] for b in rep.context["effect_builds"]}
    assert builds["mpich-5.0.2-pypi"] == "ucx+ofi" and builds["mpich-4.0.2-debian"] == "ucx"
    assert "No two builds of the current session differ in exactly one axis" in rep.html


@pytest.fixture(scope="module")
def kit_rows():
    """The 14 kit rows Spack built from source and as externals (Open MPI 4.1.4, 5.0.7
    ucx/ofi/cma; MPICH 4.0.2 ch3/ch4 ofi/ucx; MVAPICH2 nemesis and sock; three with clang
    14), one compare session: OSU latency and bw, IMB Allreduce, intranode, 3 passes."""
    return recorded_report("compare-local-kit-14rows")


def test_the_kit_rows_side_by_side(kit_rows):
    rep = make_report([kit_rows], name="kit")
    cur = session_view(kit_rows)
    builds = {c.build for c in cur.cases}
    assert len(builds) == 14 and all(c.passed for c in cur.cases)
    axes = {b["build"]: b for b in rep.context["effect_builds"]}
    assert {a["family"] for a in axes.values()} == {"Open MPI", "MPICH", "MVAPICH2"}
    assert {a["compiler"] for a in axes.values()} == {"gcc12", "llvm14"}
    assert axes["mvapich2-2.3.7-1-kit-sock-gcc12"]["fabric"] == "sock"
    assert axes["mvapich2-2.3.7-1-kit-nemesis-gcc12"]["fabric"] == "tcp"
    tables = rep.context["effect_tables"]
    pairs = {(t.axis, t.a, t.b) for t in tables}
    # sock and nemesis are a fabric pair; the sock row pairs with no build of another
    # compiler (it did while sock counted as tcp: sock-gcc12 vs nemesis-llvm14)
    assert ("fabric", "mvapich2-2.3.7-1-kit-sock-gcc12",
            "mvapich2-2.3.7-1-kit-nemesis-gcc12") in pairs
    assert not [p for p in pairs if p[0] == "compiler"
                and "mvapich2-2.3.7-1-kit-sock-gcc12" in p[1:]]
    assert {p[0] for p in pairs} >= {"fabric", "compiler", "family", "provenance"}
    sock = next(t for t in tables if t.title == "sock vs tcp")
    # the ch3:sock device is TCP within the host too: slower at 8 B, resolved
    cells = [c for r in sock.rows if r.benchmark == "MPI1:Allreduce" for c in r.cells
             if c]
    assert cells[0].status == "resolved" and cells[0].estimate > 10
    # one Allreduce plot with every row on it
    cv = curves(cur.cases)
    colours = Colours(sorted({c.line for c in cur.cases}))
    fig, _, alt = benchmark_figure("MPI1:Allreduce", "default",
                                   cv[("MPI1:Allreduce", "default")],
                                   reference_points(cur.cases), colours)
    assert "14 builds" in alt
    drawn = {b for b, _ in _build_lines(fig.axes)}
    assert drawn == builds


def test_the_kit_rows_latency_and_bandwidth_against_message_size():
    """The 14 kit rows of the idle cold build (2026-11-28), one compare session of IMB
    PingPong and Allreduce over the whole 1 B .. 4 MiB sweep (`-S profile=full`),
    intranode, 3 passes: one PingPong figure draws every row's latency and bandwidth at
    each of the 23 sizes, and the effects compare the rows at the representative sizes."""
    session = recorded_report("compare-local-kit-14rows-imb-full")
    cur = session_view(session)
    builds = {c.build for c in cur.cases}
    assert len(builds) == 14 and len(cur.cases) == 84 and all(c.passed for c in cur.cases)
    cv = curves(cur.cases)
    pingpong = cv[("MPI1:PingPong", "default")]
    assert set(pingpong) == {"t", "bandwidth"}
    for col in ("t", "bandwidth"):
        lines = pingpong[col]["intranode"]
        assert len(lines) == 14, col
        for points in lines.values():  # every size of the sweep, each from the 3 passes
            assert [p.size for p in points] == [1 << i for i in range(23)], col
            assert all(len(p.values) == 3 for p in points), col
    colours = Colours(sorted({c.line for c in cur.cases}))
    fig, _, alt = benchmark_figure("MPI1:PingPong", "default", pingpong,
                                   reference_points(cur.cases), colours)
    assert "14 builds" in alt
    drawn = [b for b, _ in _build_lines(fig.axes)]
    assert set(drawn) == builds and len(drawn) == 2 * 14  # a latency and a bandwidth panel
    rep = make_report([session], name="kit-full")
    tables = rep.context["effect_tables"]
    sock = next(t for t in tables if t.title == "sock vs tcp")
    cells = [c for r in sock.rows if r.benchmark == "MPI1:PingPong" for c in r.cells
             if c]
    # ch3:sock's TCP within the host against nemesis' shared memory, at 8 B: resolved
    assert cells[0].status == "resolved" and cells[0].estimate > 10
