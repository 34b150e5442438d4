"""OSU parser, catalogue and completeness checks on recorded real OSU runs.

tests/fixtures/osu/<version>/ holds outputs of OSU 5.6.1, 5.9, 7.1 and 7.4
recorded on this project's builds (how: tests/fixtures/osu/README.md and each
directory's MANIFEST.json: build, command line, exit code).
"""

import json

import pytest
from helpers import FIXTURES

from mpimatrix.suites.osu import output as osu_output
from mpimatrix.suites.osu.catalogue import BY_NAME, CATALOGUE, SEED_002, version_from_path
from mpimatrix.suites.osu.known_issues import known_issues
from mpimatrix.suites.osu.options import (
    expected_sizes,
    options,
    size_range,
    supports_validation,
)
from mpimatrix.suites.osu.sanity import complete, osu_result_problems
from mpimatrix.units import version_tuple

OSU_DIR = FIXTURES / "osu"
#: version directory -> the build its catalogue recording ran on
RECORDED = {"5.6.1": "mpich-4.0.2-debian", "5.9": "openmpi-4.1.4-debian",
            "7.4": "mpich-5.0.2-pypi"}


def manifest(version):
    return json.loads((OSU_DIR / version / "MANIFEST.json").read_text())


def parse(version, name):
    """A recording parsed the way OsuCheck parses a job: stdout, then stderr."""
    out = (OSU_DIR / version / f"{name}.out").read_text()
    err = OSU_DIR / version / f"{name}.err"
    return osu_output.parse(out, err.read_text() if err.exists() else "")


def check(version, name, bench, family, mpi_version, validate=None, expected=None):
    """osu_result_problems the way OsuCheck calls it, for a recorded run."""
    run = parse(version, name)
    issues = known_issues(bench, family, mpi_version, version)
    if validate is None:
        validate = supports_validation(bench, version)
    tolerate = tuple(t for k in issues if k.action == "tolerate" for t in k.tolerate)
    rc = manifest(version)[name]["rc"]
    if expected is None:
        expected = expected_sizes(bench, "quick")
    return run, osu_result_problems(run, bench, 2, expected, validate=validate, exitcode=rc,
                                    tolerate=tolerate, osu_version=version)


def test_catalogue_is_seed_002_plus_startup():
    assert len(SEED_002) == 41 and len(CATALOGUE) == 43
    groups = {g: [b.name for b in CATALOGUE if b.group == g]
              for g in ("pt2pt", "one-sided", "collective", "nbc", "startup")}
    assert [len(v) for v in groups.values()] == [6, 9, 13, 13, 2]
    assert {b.name for b in CATALOGUE if b.kind in ("atomic", "coll_unsized",
                                                   "nbc_unsized")} == {
        "cas_latency", "fop_latency", "barrier", "ibarrier"}  # seed 002's single values
    assert [m.name for m in BY_NAME["allreduce"].metrics] == [
        "latency_8B", "latency_1MiB", "latency_4B", "latency_1KiB", "latency_32KiB"]
    assert [m.name for m in BY_NAME["alltoall"].metrics][2:] == [
        "latency_1KiB", "latency_4KiB", "latency_16KiB", "latency_32KiB"]


@pytest.mark.parametrize("version", sorted(RECORDED))
@pytest.mark.parametrize("bench", CATALOGUE, ids=lambda b: b.name)
def test_every_benchmark_parses_and_has_every_metric(version, bench):
    name = bench.binary
    if (OSU_DIR / version / f"{name}.out").exists() is False:
        pytest.fail(f"no fixture {version}/{name}.out")
    build = RECORDED[version]
    family, mpi_version = build.split("-")[0], build.split("-")[1]
    if version == "5.9" and name == "osu_cas_latency":
        # recorded as it is: OSU 5.x osu_cas_latency segfaults on Open MPI 4.1.4
        run, errs = check(version, name, bench, family, mpi_version)
        assert len(errs) == 1 and "a header but no rows" in errs[0]
        assert "Segmentation fault" in errs[0] or "exited on signal" in errs[0]
        return
    run, errs = check(version, name, bench, family, mpi_version)
    assert errs == [], errs
    assert run.version == version and run.title
    for m in bench.metrics:
        if bench.kind == "init":
            value = run.init[m.column]
        else:
            value = run.table.value(m.column, m.size)
        assert value is not None and value >= 0, (m.name, run.table)
    if bench.sized:
        assert run.table.sizes() == expected_sizes(bench, "quick")
    if supports_validation(bench, version):
        assert run.table.validated and not run.table.failed_sizes()
    elif run.table is not None:
        assert not run.table.validated


def test_column_names_of_5x_and_7x_map_to_the_same_keys():
    old, new = parse("5.6.1", "osu_latency").table, parse("7.4", "osu_latency").table
    assert old.raw_columns == ["Size", "Latency (us)"]
    assert new.raw_columns == ["Size", "Avg Latency(us)", "Validation"]
    assert old.columns == ["size", "latency"] and new.columns == ["size", "latency",
                                                                   "validation"]
    assert new.preamble == {"Datatype": "MPI_CHAR"}
    nbc = parse("5.9", "osu_iallreduce").table
    assert nbc.columns == ["size", "overall", "compute", "init", "test", "wait", "pure_comm",
                           "min_comm", "max_comm", "overlap", "validation"]
    old_nbc = parse("5.6.1", "osu_iallreduce").table  # 5.6.1 -f: no min/max comm
    assert "min_comm" not in old_nbc.columns and "pure_comm" in old_nbc.columns
    assert osu_output.canonical_column("MB/s") == "bandwidth"
    assert osu_output.canonical_column("Messages/s") == "message_rate"
    assert osu_output.canonical_column("Bandwidth (MB/s)") == "bandwidth"


def test_quirks_stray_header_headerless_hash_and_single_values():
    # 5.6.1 osu_mbw_mr prints "# Size  Latency (us)" before its real header
    mbw = parse("5.6.1", "osu_mbw_mr")
    assert len(mbw.tables) == 1
    assert mbw.table.columns == ["size", "bandwidth", "message_rate"]
    assert mbw.table.preamble == {"pairs": "1", "window size": "64"}
    # 5.x osu_ibarrier: header line without '#', one row, no size
    ib = parse("5.6.1", "osu_ibarrier").table
    assert not ib.sized and len(ib.rows) == 1 and ib.value("pure_comm", None) > 0
    barrier = parse("7.4", "osu_barrier").table
    assert not barrier.sized and barrier.value("latency", None) > 0
    cas = parse("5.6.1", "osu_cas_latency").table
    assert cas.sizes() == [8] and cas.value("latency", None) > 0
    init = parse("5.9", "osu_init")
    assert init.init["nprocs"] == 2 and init.init["min"] <= init.init["avg"] <= init.init["max"]
    assert parse("7.4", "osu_hello").hello_nprocs == 2
    mt = parse("5.6.1", "osu_latency_mt").table  # preamble printed before the title
    assert mt.preamble["Number of Receiver threads"] == "2"


def test_osu_7_1_double_title_and_datatype_between_header_and_rows():
    run = parse("7.1", "osu_mbw_mr-validated")
    assert run.titles == [("MPI Multiple Bandwidth / Message Rate", "7.1")] * 2
    t = run.table
    assert t.columns == ["size", "bandwidth", "message_rate", "validation"]
    assert t.preamble["Datatype"] == "MPI_CHAR" and t.validated and t.sizes()


def test_5_9_barrier_accepts_c_but_leaves_validation_empty():
    t = parse("5.9", "osu_barrier-c").table
    assert "validation" in t.columns and len(t.rows) == 1
    assert not t.validated  # nothing to validate: the catalogue never passes -c to it
    assert not supports_validation(BY_NAME["barrier"], "5.9")


def test_validation_failure_5_9_corrupting_pmpi_shim():
    run, errs = check("5.9", "osu_latency-validation-fail-shim", BY_NAME["latency"],
                      "mpich", "4.0.2", validate=True, expected=[1 << i for i in range(13)])
    t = run.table
    assert t.failed_sizes() == [1024] and t.validation[:-1] == [True] * (len(t.rows) - 1)
    assert run.validation_errors and "on message size 1024" in run.validation_errors[0]
    assert len(errs) == 1
    assert errs[0] == ("osu_latency: data validation failed at 1 size(s): 1KiB; OSU stopped "
                       "there, 2 of 13 sizes not run")


def test_validation_failure_7_4_allreduce_mpi_char_on_open_mpi():
    run, errs = check("7.4", "osu_allreduce-validation-fail-openmpi-4.1.4",
                      BY_NAME["allreduce"], "openmpi", "4.1.4", validate=True)
    assert run.table.preamble["Datatype"] == "MPI_CHAR"
    assert run.table.failed_sizes() == [16]
    assert errs and "validation failed" in errs[0]
    # which is why 7.x reductions are run with -T mpi_float (5.x's MPI_FLOAT)
    assert options(BY_NAME["allreduce"], "quick", "7.4")[-5:] == [
        "-T", "mpi_float", "-c", "-u", "0"]


def test_validation_failure_7_4_one_sided_failed_rows_on_mpich_4_0():
    run, errs = check("7.4", "osu_acc_latency-validation-fail-mpich-4.0.2",
                      BY_NAME["acc_latency"], "mpich", "4.0.2", validate=True)
    t = run.table
    assert t.validation and all(v is False for v in t.validation)  # "failed" rows
    assert any("FAILED: 1 of the 1 combinations" in e for e in run.validation_errors)
    assert errs and errs[0].startswith("osu_acc_latency: data validation failed")
    # a known fault of exactly this MPI (family, version, fabric): an expected failure
    assert [k.action for k in known_issues(BY_NAME["acc_latency"], "mpich", "4.0.2",
                                           "7.4", fabric="ch4:ucx")] == ["xfail"]
    assert not known_issues(BY_NAME["acc_latency"], "mpich", "5.0.2", "7.4", fabric="ch4:ucx")
    # measured on ch4:ucx only: an MPICH 4.0.2 of another device is not excused
    assert not known_issues(BY_NAME["acc_latency"], "mpich", "4.0.2", "7.4", fabric="ch3:tcp")


@pytest.mark.parametrize("version,name,bench,stopped", [
    ("5.6.1", "osu_bw-died-mid-table", "bw", "died at "),
    ("7.4", "osu_latency-died-mid-table", "latency", "died at "),
])
def test_run_killed_mid_table_reports_where(version, name, bench, stopped):
    b = BY_NAME[bench]
    run = parse(version, name)
    t = run.table
    full = expected_sizes(b, "full")
    assert t.rows and len(t.rows) < len(full)
    errs = osu_result_problems(run, b, 2, full, exitcode=manifest(version)[name]["rc"])
    assert len(errs) == 1 and errs[0].startswith(f"{b.binary} {stopped}")
    first_missing = osu_output.missing_sizes(t, full)[0]
    assert str(first_missing) in errs[0]
    assert run.errors  # the launcher's message is quoted
    # A timeout after this is not "hung after its results": the table is short.
    assert not complete(run, b, full)
    assert complete(run, b, [r["size"] for r in t.rows])


@pytest.mark.parametrize("version", sorted(RECORDED))
def test_startup_outputs_without_a_table_are_complete(version):
    """osu_init and osu_hello print no table: their line is the whole result, so a
    time-out after it is named a hang on the way out."""
    assert complete(parse(version, "osu_init"), BY_NAME["init"], [])
    assert complete(parse(version, "osu_hello"), BY_NAME["hello"], [])
    assert not complete(osu_output.parse("# OSU MPI Init Test v7.4\n"), BY_NAME["init"], [])


def test_open_mpi_backtrace_on_stderr_is_no_table_header():
    """A rank killed by SIGSEGV: Open MPI prints "Signal code: Address not mapped (1)"
    (constructed from a real backtrace's lines); the table and its size stay right."""
    out = ("# OSU MPI Bandwidth Test v7.4\n# Datatype: MPI_CHAR.\n"
           "# Size      Bandwidth (MB/s)\n1                       0.95\n2                1.90\n")
    err = ("[node1:04242] *** Process received signal ***\n"
           "[node1:04242] Signal: Segmentation fault (11)\n"
           "[node1:04242] Signal code: Address not mapped (1)\n"
           "[node1:04242] Failing at address: 0x10\n")
    for run in (osu_output.parse(out, err), osu_output.parse(out + err),
                osu_output.parse(out + err.replace("[node1:04242] ", ""))):
        assert run.table.columns == ["size", "bandwidth"] and run.table.sizes() == [1, 2]
        errs = osu_result_problems(run, BY_NAME["bw"], 2, [1, 2, 4])
        assert errs[0].startswith("osu_bw died at 4B (4 B): table stopped after 2B")
        assert "Segmentation fault" in errs[0]


def test_latency_mt_7_4_without_finalize_is_a_known_issue():
    b = BY_NAME["latency_mt"]
    run = parse("7.4", "osu_latency_mt-no-finalize-openmpi-4.1.4")
    assert run.table.sizes() == expected_sizes(b, "quick")
    bare = osu_result_problems(run, b, 2, expected_sizes(b, "quick"), exitcode=1)
    assert bare and "exiting improperly" in bare[0]
    (issue,) = known_issues(b, "openmpi", "4.1.4", "7.4")
    assert osu_result_problems(run, b, 2, expected_sizes(b, "quick"), exitcode=1,
                               tolerate=issue.tolerate) == []
    assert not known_issues(b, "openmpi", "4.1.4", "7.1")


def test_latency_mt_7_2_on_open_mpi_exits_improperly_too():
    """OSU 7.2 osu_latency_mt on Open MPI: a complete table, then "exiting improperly",
    rc 1, like 7.4 (output constructed from the 7.4 recording with 7.2's title)."""
    b = BY_NAME["latency_mt"]
    out = (OSU_DIR / "7.4" / "osu_latency_mt-no-finalize-openmpi-4.1.4.out").read_text()
    err = OSU_DIR / "7.4" / "osu_latency_mt-no-finalize-openmpi-4.1.4.err"
    run = osu_output.parse(out.replace("v7.4", "v7.2"), err.read_text() if err.exists() else "")
    assert run.version == "7.2"
    (issue,) = known_issues(b, "openmpi", "4.1.4", "7.2")
    assert issue.action == "tolerate"
    assert osu_result_problems(run, b, 2, expected_sizes(b, "quick"), exitcode=1,
                               tolerate=issue.tolerate) == []


def test_a_row_cut_short_is_kept_as_partial():
    # synthetic (not a recording): the last line stops after the size field
    t = osu_output.parse("# OSU MPI Bandwidth Test v5.6.1\n# Size      Bandwidth (MB/s)\n"
                         "1                       0.24\n2                       0.51\n4").table
    assert t.sizes() == [1, 2] and t.partial == "4"
    errs = osu_result_problems(osu_output.parse("# OSU MPI Bandwidth Test v5.6.1\n"
                                                "# Size      Bandwidth (MB/s)\n1   0.24\n4"),
                               BY_NAME["bw"], 2, [1, 2, 4])
    assert "last row cut short: '4'" in errs[0]


def test_wrong_process_count_and_wrong_binary_are_reported():
    hello = osu_output.parse("# OSU MPI Hello World Test v7.4\nThis is a test with 1 processes")
    assert osu_result_problems(hello, BY_NAME["hello"], 2, []) == [
        "osu_hello: MPI_COMM_WORLD has 1 processes, expected 2"]
    run = parse("5.6.1", "osu_latency")
    errs = osu_result_problems(run, BY_NAME["latency"], 2, [8], osu_version="7.4")
    assert errs and "says OSU v5.6.1, the install record says 7.4" in errs[0]
    refused = osu_output.parse("This test requires exactly two processes\n")
    errs = osu_result_problems(refused, BY_NAME["latency"], 3, [8])
    assert "no result table (This test requires exactly two processes)" in errs[0]


def test_options_follow_version_and_profile():
    lat, init, cas = BY_NAME["latency"], BY_NAME["init"], BY_NAME["cas_latency"]
    assert options(lat, "quick", "5.6.1") == ["-m", "8:8"]  # 5.6.1 rejects -c
    assert options(lat, "full", "5.9") == ["-m", "1:4194304", "-c", "-u", "0"]
    assert options(init, "full", "7.4") == []  # 7.x osu_init rejects -m
    assert options(cas, "quick", "7.1") == [] and options(cas, "quick", "7.4") == ["-c"]
    assert "-c" not in options(BY_NAME["barrier"], "full", "7.4")
    assert options(BY_NAME["allreduce"], "quick", "7.0")[:4] == ["-m", "4:1048576", "-i", "100"]
    assert "-T" not in options(BY_NAME["allreduce"], "quick", "7.0")
    assert size_range(BY_NAME["alltoall"], "full") == (1, 1 << 20)
    assert size_range(BY_NAME["bw"], "full") == (1, 4 << 20)
    assert expected_sizes(BY_NAME["reduce"], "full")[:2] == [4, 8]
    assert version_tuple("7.1-1") == (7, 1, 1) and version_tuple("") == ()
    assert version_from_path("/spack/linux-x/osu-micro-benchmarks-7.4-abcdef/libexec") == "7.4"


def test_mpich_4_0_ch4_ucx_osu_init_between_nodes_is_skipped():
    """It hangs in MPI_Finalize (the known fault); the MPI's fabric decides, not the
    build's provenance (tests/test_known_faults.py: each kind of build record). Open
    MPI 4.1's one-sided component between nodes is the launch's (rfm/launchers.py)."""
    (hang,) = known_issues(BY_NAME["init"], "mpich", "4.0.2", "7.4", nodes=2,
                           fabric="ch4:ucx")
    assert hang.action == "skip"
    assert not known_issues(BY_NAME["init"], "mpich", "4.0.2", "7.4", nodes=1,
                            fabric="ch4:ucx")
    assert not known_issues(BY_NAME["init"], "mpich", "4.0.2", "7.4", nodes=2,
                            fabric="ch3:tcp")
    assert not known_issues(BY_NAME["put_latency"], "openmpi", "4.1.4", "7.4", nodes=2)


@pytest.mark.parametrize("row,message", [
    ("8    nan", "impossible values latency=nan at 8B"),
    ("8    -0.11", "impossible values latency=-0.11 at 8B"),
    ("8    0.00", "impossible values latency_8B=0"),
    ("nan  0.40", "a row with an impossible size: nan 0.40"),
    ("1e400  0.40", "a row with an impossible size: 1e400 0.40"),
])
def test_impossible_values_fail_the_sanity(row, message):
    run = osu_output.parse(f"# OSU MPI Latency Test v5.6.1\n# Size    Latency (us)\n{row}\n")
    errs = osu_result_problems(run, BY_NAME["latency"], 2, [8])
    assert any(message in e for e in errs), errs
