"""`mpimatrix validate`: the experiments as product commands (the nights judged through
results.night.judge_night, as `mpimatrix run` judges them)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

MPIMATRIX = str(Path(sys.executable).parent / "mpimatrix")


def validate(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([MPIMATRIX, "validate", *args], capture_output=True, text=True,
                          timeout=600)


RECORDED = Path(__file__).parent / "fixtures" / "reports"


def test_unchanged_nights_on_the_recorded_sessions():
    """The 14 recorded quiet-machine halves: blessed from 5, 8 nights judged (the last
    one is only a confirmation); each night's line and the count of red ones."""
    proc = validate("unchanged", str(RECORDED))
    assert proc.returncode == 0, proc.stderr
    nights = re.findall(r"^night (\d+): (\d+) values gated, (\d+) REGRESSION line\(s\), "
                        r"(\d+) on watch$", proc.stdout, re.M)
    assert [int(n[0]) for n in nights] == list(range(6, 14)), proc.stdout
    assert all(int(n[1]) > 0 for n in nights)
    red = sum(int(n[2]) > 0 for n in nights)
    assert re.search(rf"^unchanged nights red: {red} of 8 \(\d+%\); without the watch rule "
                     r"\d+ of 8; blessed from 5 sessions, \d+ values gated$", proc.stdout,
                     re.M), proc.stdout


def test_unchanged_is_given_its_recorded_sessions_and_says_so_without_them(tmp_path):
    """The product reads no test fixtures: the recorded sessions' folder (or --report
    files) is given; without it, or with a folder holding none, the command says what it
    needs."""
    proc = validate("unchanged")
    assert proc.returncode == 2
    assert "give the folder of the recorded sessions (RECORDED" in proc.stderr, proc.stderr
    proc = validate("unchanged", str(tmp_path))
    assert proc.returncode == 1
    assert f"{tmp_path}: no recorded sessions (imb-6pass-unchanged-<i>.json.gz)" in (
        proc.stderr), proc.stderr


def test_replay_of_a_folder_that_is_no_store_says_so(tmp_path):
    proc = validate("replay", str(tmp_path))
    assert proc.returncode == 2
    assert f"{tmp_path}: not a results store (no reports/ in it)" in proc.stderr


def test_an_unknown_experiment_lists_the_known_ones():
    proc = validate("nightly")
    assert proc.returncode == 2
    assert "choose from 'gate', 'history', 'replay', 'unchanged'" in proc.stderr


def test_each_experiment_has_its_own_help():
    for name in ("gate", "history", "replay", "unchanged"):
        proc = validate(name, "--help")
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(f"usage: mpimatrix validate {name} "), proc.stdout


def test_replay_varies_the_gate_policy_by_field_and_refuses_an_unknown_field(tmp_path):
    from mpimatrix.results.policy import variation

    assert variation("build_floor=0.1,build_sigmas=3") == {
        "build_floor": 0.1, "build_sigmas": 3.0}
    assert variation("min_builds=4") == {"min_builds": 4}
    with pytest.raises(ValueError, match=r"^--vary 'build_below_references=1': "
                       r"build_below_references is no longer a GatePolicy field \(what a "
                       r"whole build, or a value named with it, is held to never lies below "
                       r"its references\); the fields: .*build_floor"):
        variation("build_floor=0.1,build_below_references=1")
    (tmp_path / "reports").mkdir()
    proc = validate("replay", str(tmp_path), "--vary", "build_flor=0.1")
    assert proc.returncode == 2
    assert "--vary 'build_flor=0.1': not FIELD=VALUE with a GatePolicy field (" in proc.stderr
    assert "build_floor" in proc.stderr
    proc = validate("replay", str(tmp_path), "--vary", "build_floor=low")
    assert proc.returncode == 2 and "'low' is not a float" in proc.stderr


def test_gate_slows_one_benchmark_and_refuses_a_bad_test_regex():
    """`validate gate --inject-test REGEX` injects '<build>@REGEX' (checked before any
    session runs: a regex that does not compile is an argparse error)."""
    from mpimatrix.rfm.inject_spec import injection_for
    from mpimatrix.validation.gate_rates import scheduled

    build, level, spec = scheduled(0, True, ["mpich-4.0.2-debian"], [0.1], "MPI1:Allreduce$")
    assert (build, level) == ("mpich-4.0.2-debian", 0.1)
    assert spec == r"^mpich\-4\.0\.2\-debian$@MPI1:Allreduce$:clock=0.1"
    assert injection_for(build, spec, "ImbCheck %benchmark=MPI1:Allreduce") == "clock=0.1"
    assert injection_for(build, spec, "ImbCheck %benchmark=MPI1:PingPong") == ""
    proc = validate("gate", "--inject-test", "MPI1:(Allreduce")
    assert proc.returncode == 2
    assert "'MPI1:(Allreduce' is not a regular expression" in proc.stderr, proc.stderr


def test_gate_holds_each_step_streak_nights_running_and_refuses_counts_below_one():
    """`validate gate --streak 3`: each injected step (the same build and level) three
    nights running after every --inject-every unchanged ones; a count below one is an
    argparse error, before any session runs."""
    from mpimatrix.validation.gate_rates import schedule, scheduled

    assert schedule(4, 2) == [(0, False), (1, False), (0, True), (2, False), (3, False),
                              (1, True)]
    plan = schedule(4, 2, streak=3)
    assert plan == [(0, False), (1, False), (0, True), (0, True), (0, True), (2, False),
                    (3, False), (1, True), (1, True), (1, True)]
    builds = ["impi-2021.18.1-pypi", "mpich-4.0.2-debian"]
    steps = [scheduled(i, True, builds, [0.1, 0.25])[:2] for i, injected in plan if injected]
    assert steps == [("impi-2021.18.1-pypi", 0.1)] * 3 + [("mpich-4.0.2-debian", 0.25)] * 3
    for option in ("--streak", "--inject-every", "--sessions", "--bless"):
        proc = validate("gate", option, "0")
        assert proc.returncode == 2
        assert f"{option} must be at least 1, not 0" in proc.stderr, proc.stderr


def test_gate_measures_again_in_as_many_samples_as_asked():
    """`validate gate --confirm-repeats 2`: each session's `mpimatrix run` measures again
    in 2 samples of each test (the bless sessions measure nothing again); below one is
    an argparse error, before any session runs."""
    from argparse import Namespace

    from mpimatrix.validation.gate_rates import run_command

    args = Namespace(mode="compare", only=["mpich|impi"], confirm_repeats=2,
                     reframe="-n ImbCheck")
    assert run_command(args)[1:] == ["run", "--mode", "compare", "--only", "mpich|impi",
                                     "--confirm-repeats", "2", "--", "-n", "ImbCheck"]
    assert run_command(args, confirm=False)[6:] == ["--no-confirm", "--", "-n", "ImbCheck"]
    proc = validate("gate", "--confirm-repeats", "0")
    assert proc.returncode == 2
    assert "--confirm-repeats must be at least 1, not 0" in proc.stderr, proc.stderr
