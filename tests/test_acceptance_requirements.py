"""Acceptance requirements: the file's checks (each defect named with its fix), and the
median's distribution-free confidence interval the verdicts rest on."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest
import yaml

from mpimatrix.paths import project_root
from mpimatrix.results.acceptance.requirements import RequirementsError, load_requirements
from mpimatrix.results.acceptance.verdicts import (
    Verdict,
    build_verdict,
    coverage,
    median_interval,
    samples_needed,
)

EXAMPLE = project_root() / "site_config" / "acceptance" / "example.yaml"


def _file(tmp_path: Path, **overrides) -> Path:
    req = {"name": "lat", "benchmark": "osu_latency", "placement": "internode",
           "size": "8 B", "metric": "latency", "bound": "<= 2 us", **overrides}
    path = tmp_path / "sys.yaml"
    path.write_text(yaml.safe_dump({"requirements": [req]}))
    return path


def test_the_example_file_is_valid_and_models_the_procurement_set():
    reqs = load_requirements(EXAMPLE)
    names = {r.benchmark for r in reqs.requirements}
    assert {"latency", "bibw", "mbw_mr", "get_acc_latency", "allreduce", "alltoall"} <= names
    big = next(r for r in reqs.requirements if r.name == "allreduce-32MiB-4x2")
    assert big.size == 32 << 20 and big.bound == 20_000 and big.unit == "us"
    assert reqs.osu_max_size() == 32 << 20  # the run measures OSU up to it
    vendor = reqs.requirements[0].builds
    assert not vendor[0].one_of and vendor[1].one_of


@pytest.mark.parametrize(("override", "message"), [
    ({"benchmark": "osu_latencyy"}, "benchmark 'osu_latencyy' is not one the checks run"),
    ({"benchmark": "MPI1:PingPongg"}, "is not one the checks run"),
    ({"size": "3 KiB"}, "size 3 KiB is not measured by the acceptance mode: latency prints "
                        "sizes doubling from 1 B"),
    ({"size": "128 MiB"}, "the nearest is 64 MiB"),
    ({"benchmark": "MPI1:PingPong", "size": "8 MiB"}, "nearest is 4 MiB"),
    ({"bound": "<= 2 MB/s"}, "unit 'MB/s' does not fit metric latency (measured in us)"),
    ({"metric": "bandwidth", "bound": ">= 2 us"}, "unit 'us' does not fit metric bandwidth"),
    ({"bound": ">= 2 us"}, "a bound on latency is '<= VALUE'"),
    ({"bound": "fast"}, "is not '<= VALUE UNIT'"),
    ({"placement": "far"}, "placement 'far' is not intranode, internode or NODESxRANKS"),
    ({"confidence": 1.5}, "confidence 1.5 must be a number in [0.5, 1)"),
    ({"builds": ["(impi"]}, "builds pattern '(impi' is not a regular expression"),
    ({"speed": 1}, "unknown keys ['speed']"),
    ({"benchmark": "osu_barrier", "size": "8 B"}, "barrier takes no message size"),
])
def test_a_bad_requirement_names_the_file_the_requirement_and_the_fix(tmp_path, override,
                                                                      message):
    path = _file(tmp_path, **override)
    with pytest.raises(RequirementsError) as err:
        load_requirements(path)
    assert str(err.value).startswith(f"{path}: requirement 1 (lat): ") or \
        str(err.value).startswith(f"{path}: requirement 1"), err.value
    assert message in str(err.value), err.value


def test_units_convert_to_the_metrics_unit(tmp_path):
    req = load_requirements(_file(tmp_path, metric="bandwidth", size="1 MiB",
                                  bound=">= 12.5 GB/s")).requirements[0]
    assert (req.op, req.bound, req.unit) == (">=", 12_500.0, "MB/s")
    assert load_requirements(_file(tmp_path, bound="<= 900 ns")).requirements[0].bound == 0.9


def test_samples_needed_for_an_interval_at_the_confidence():
    assert samples_needed(0.95) == 6 and samples_needed(0.99) == 8 and \
        samples_needed(0.9) == 5
    assert median_interval([1, 2, 3, 4, 5], 0.95) is None  # 5 samples: at most 93.75 %
    lo, hi, cov = median_interval([5, 1, 4, 2, 6, 3], 0.95)
    assert (lo, hi) == (1, 6) and cov == pytest.approx(1 - 2 / 64)


def test_the_interval_covers_the_median_as_often_as_it_says():
    """Skewed (log-normal) samples like latencies: the 95 % interval of 12 samples holds
    the true median in at least 95 % of 4000 draws."""
    rng = random.Random(7)
    true_median = 1.0  # exp(0)
    hits = 0
    for _ in range(4000):
        xs = [math.exp(rng.gauss(0, 0.5)) for _ in range(12)]
        lo, hi, cov = median_interval(xs, 0.95)
        hits += lo <= true_median <= hi
    assert cov == pytest.approx(coverage(12, 3))
    assert hits / 4000 >= 0.95 - 0.01, hits  # 0.01: the draw's own noise (sd 0.0034)


def test_verdicts_met_not_met_and_inconclusive_within_the_noise(tmp_path):
    req = load_requirements(_file(tmp_path)).requirements[0]  # <= 2 us
    fast = [1.0, 1.1, 0.9, 1.05, 0.95, 1.02]
    slow = [3.0, 3.1, 2.9, 3.05, 2.95, 3.02]
    noisy = [1.5, 2.6, 1.8, 2.3, 1.9, 2.2]  # median 2.05: the bound is in the noise
    assert build_verdict(req, "a", fast).verdict == Verdict.MET
    assert build_verdict(req, "b", slow).verdict == Verdict.NOT_MET
    v = build_verdict(req, "c", noisy)
    assert v.verdict == Verdict.INCONCLUSIVE and v.low < 2 < v.high
    assert v.median == statistics.median(noisy)
    assert build_verdict(req, "a", fast).margin == pytest.approx((2 - 1.01) / 2)
    few = build_verdict(req, "d", fast[:3])
    assert few.verdict == Verdict.INCONCLUSIVE and "an interval at 95% needs 6" in few.reason


def test_the_run_takes_enough_passes_and_extends_the_osu_sweep_to_the_sizes_asked():
    from mpimatrix.cli.accept import run_options
    from mpimatrix.suites.osu.catalogue import BY_NAME
    from mpimatrix.suites.osu.options import expected_sizes, options

    opts = run_options(load_requirements(EXAMPLE))
    assert "--reruns=5" in opts  # 6 passes: 95 %
    assert "--setvar=OsuCheck.max_size=33554432" in opts  # allreduce at 32 MiB
    assert "^OsuCheck%placement=internode%benchmark=latency$" in opts
    allreduce = BY_NAME["allreduce"]
    got = options(allreduce, "full", "7.4", max_size=32 << 20)
    assert got[got.index("-m") + 1] == f"4:{32 << 20}"
    assert expected_sizes(allreduce, "full", 32 << 20)[-1] == 32 << 20
    assert expected_sizes(allreduce, "full")[-1] == 1 << 20  # the sweep without it
