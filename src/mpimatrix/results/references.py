"""Write performance references from stored runs ("bless").

The output is ReFrame's external reference format (4.10+), one file per system:

    ImbCheck:
      $index: ['$partition', '$environ', 'ref_key']
      local:default:
        mpich-4_0_2-debian:
          MPI1:PingPong@intranode:
            latency_8B: [0.41, null, 0.3, us]
            bandwidth_4MiB: [11253.7, -0.3, null, MB/s]

Times get an upper tolerance only (slower is a regression), rates and
percentages a lower one. The median over the given sessions is the reference.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import yaml

from ..atomic import atomic_write
from .sessions import HIGHER_IS_BETTER_UNITS, testcases

INDEX = ["$partition", "$environ", "ref_key"]


class BlessError(Exception):
    pass


def collect(sessions: list[dict], system: str | None = None) -> dict:
    """{test class: {partition: {environ: {ref_key: {var: ([values], unit)}}}}}"""
    acc: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(dict))))
    for tc in testcases(sessions):
        if tc.get("result") != "pass" or not tc.get("perfvalues"):
            continue
        if system and tc.get("system") != system:
            continue
        cls = tc["name"].split()[0]
        key = tc.get("ref_key")
        if not key or key == "<undefined>":
            continue
        part = f"{tc['system']}:{tc['partition']}"
        for fullvar, pv in tc["perfvalues"].items():
            var = fullvar.rsplit(":", 1)[-1]
            value, unit = pv[0], pv[4]
            if value is None:
                continue
            slot = acc[cls][part][tc["environ"]][key].setdefault(var, ([], unit))
            slot[0].append(float(value))
    return acc


def reference_tuple(values: list[float], unit: str, tolerance: float) -> list:
    ref = statistics.median(values)
    ref = float(f"{ref:.4g}")
    if unit in HIGHER_IS_BETTER_UNITS:
        return [ref, -tolerance, None, unit]
    return [ref, None, tolerance, unit]


def build_references(sessions: list[dict], tolerance: float, system: str | None = None,
                     existing: dict | None = None) -> dict:
    if not 0 < tolerance < 10:
        raise BlessError(f"tolerance {tolerance} must be a fraction such as 0.3 (30%)")
    acc = collect(sessions, system)
    if not acc:
        raise BlessError("no passing test case with performance values in the given "
                         "session(s)" + (f" for system {system!r}" if system else ""))
    out = dict(existing or {})
    for cls, parts in acc.items():
        entry = out.setdefault(cls, {"$index": list(INDEX)})
        if entry.get("$index") != INDEX:
            raise BlessError(f"existing references for {cls} use $index {entry.get('$index')}, "
                             f"expected {INDEX}; move the file away and bless again")
        for part, envs in parts.items():
            for env, keys in envs.items():
                for key, pvars in keys.items():
                    slot = entry.setdefault(part, {}).setdefault(env, {}).setdefault(key, {})
                    for var, (values, unit) in pvars.items():
                        slot[var] = reference_tuple(values, unit, tolerance)
    return out


def write(refs: dict, path: Path) -> None:
    """Write the references atomically: readers see the old file or the new one."""
    header = ("# Performance references (ReFrame external reference format, $ref).\n"
              "# Written by `mpimatrix bless`; edit tolerances by hand if needed.\n")
    atomic_write(path, header + yaml.safe_dump(refs, sort_keys=True, width=100))


def read(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise BlessError(f"{path}: not valid YAML ({err}); fix or remove it") from None
    if not isinstance(data, dict):
        raise BlessError(f"{path}: expected a mapping of test names to references")
    return data
