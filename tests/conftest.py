"""Shared fixtures: the real builds on this machine."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def buildset():
    from mpimatrix.builds.sources import load_builds

    bs = load_builds()
    if not bs.builds:
        pytest.skip("no MPI build on this machine: run scripts/setup.sh first")
    return bs
