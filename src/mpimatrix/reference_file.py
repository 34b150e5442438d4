"""The performance reference file: ReFrame's external reference format ($ref),
one file per system, results/references/<system>.yaml:

    ImbCheck:
      $index: [$partition, $environ, ref_key]
      local:default:
        mpich-4_0_2-debian:
          MPI1:PingPong@intranode:
            latency_8B: [0.41, null, 0.15, us]        # slower than +15 % fails
            bandwidth_4MiB: [6519.0, -0.12, null, MB/s] # lower than -12 % fails
            t_avg_1MiB: [520.0, null, null, us]       # reported, not gated

ReFrame re-reads the whole file for every test case, so its size is bounded and
its structure checked once, with messages that name the file and the key. The
noise statistics `mpimatrix bless` derives the tolerances from live beside it in
<system>.stats.yaml, which ReFrame never reads.
"""

from __future__ import annotations

import hashlib
import marshal
import math
import os
import sys
from pathlib import Path

import yaml

from .atomic import atomic_write
from .paths import cache_dir

INDEX = ["$partition", "$environ", "ref_key"]
#: ReFrame parses the file once per test case: 4 MiB take about a second each.
MAX_BYTES = 4 << 20


class ReferenceFileError(Exception):
    """A reference file ReFrame cannot use; the message names the file, key and fix."""


def stats_path(path: Path) -> Path:
    return path.with_name(path.name.removesuffix(".yaml") + ".stats.yaml")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def entry_problem(value) -> str:
    """Why one reference entry is not [ref, lower, upper, unit] ('' when it is)."""
    if isinstance(value, list) and value[:1] == ["$xfail"]:
        if len(value) != 3 or not isinstance(value[2], list):
            return "an $xfail entry is ['$xfail', 'reason', [ref, lower, upper, unit]]"
        return entry_problem(value[2])
    if not isinstance(value, list) or len(value) != 4:
        return "expected [reference, lower, upper, unit]"
    ref, lower, upper, unit = value
    if not _is_number(ref):
        return f"reference {ref!r} is not a finite number"
    if ref < 0 or (ref == 0 and (lower is not None or upper is not None)):
        return (f"reference {ref!r}: a gated time or rate is positive (a reference of 0 or "
                "less would let every value pass or fail); only a value reported without "
                "thresholds, such as an overlap of 0 %, may be 0")
    if lower is not None and not (_is_number(lower) and -1 <= lower <= 0):
        return f"lower threshold {lower!r} must be null or a fraction in [-1, 0]"
    if upper is not None and not (_is_number(upper) and upper >= 0):
        return f"upper threshold {upper!r} must be null or a fraction >= 0"
    if not isinstance(unit, str):
        return f"unit {unit!r} is not a string"
    return ""


def check_references(data, path: Path) -> None:
    """Raise ReferenceFileError on the first structural problem."""
    def fail(key: str, what: str):
        raise ReferenceFileError(f"{path}: {key}: {what}; fix the entry, or move the file "
                                 "away and run `mpimatrix bless` again")

    if not isinstance(data, dict):
        fail("(top level)", "expected a mapping of test names (ImbCheck, ...) to references")
    for check, entry in data.items():
        if not isinstance(entry, dict):
            fail(str(check), "expected a mapping with $index and partitions")
        if entry.get("$index") != INDEX:
            fail(f"{check}.$index", f"is {entry.get('$index')!r}, expected {INDEX}")
        for part, envs in entry.items():
            if part == "$index":
                continue
            if not isinstance(envs, dict):
                fail(f"{check}.{part}", "expected a mapping of environments")
            for env, keys in envs.items():
                if not isinstance(keys, dict):
                    fail(f"{check}.{part}.{env}", "expected a mapping of benchmark@placement")
                for key, pvars in keys.items():
                    if not isinstance(pvars, dict):
                        fail(f"{check}.{part}.{env}.{key}",
                             "expected a mapping of performance variables")
                    for var, value in pvars.items():
                        why = entry_problem(value)
                        if why:
                            fail(f"{check}.{part}.{env}.{key}.{var}", why)


#: libyaml's parser where PyYAML has it (its wheels do): the files bless writes hold every
#: value of every build, megabytes at 40 builds, which the pure-Python parser reads at
#: about 0.25 MB/s
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_yaml(text: str):
    """A YAML document as yaml.safe_load reads it, parsed by libyaml where present."""
    return yaml.load(text, Loader=_LOADER)  # a safe loader: CSafeLoader or SafeLoader


#: Files at least this large are parsed once per content (libyaml takes 4 s for the
#: 3 MB statistics of 40 builds, marshal 0.05 s).
CACHE_FROM = 256 << 10


def read_yaml_file(path: Path):
    """read_yaml of a file; a large one's parse is kept in the cache folder, keyed by the
    file's path and checked against its content's digest (marshal keeps the exact types:
    integer keys stay integers)."""
    raw = path.read_bytes()
    if len(raw) < CACHE_FROM:
        return read_yaml(raw.decode())
    digest = hashlib.sha256(raw).hexdigest()
    tag = f"{digest}-py{sys.version_info[0]}.{sys.version_info[1]}"
    cached = _parse_cache(path)
    try:
        held, data = marshal.loads(cached.read_bytes()) if cached else (None, None)
        if held == tag:
            return data
    except (OSError, EOFError, ValueError, TypeError):
        pass
    data = read_yaml(raw.decode())
    try:
        if cached:
            atomic_write(cached, marshal.dumps((tag, data)))
    except (OSError, ValueError):  # a read-only cache, or data marshal cannot keep
        pass
    return data


def _parse_cache(path: Path) -> Path | None:
    try:
        folder = cache_dir() / "yaml"
    except OSError:
        return None
    return folder / (hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:24]
                     + ".marshal")


def dump_yaml(data) -> str:
    """Plain data as YAML (keys sorted, lists of scalars on one line), written by libyaml
    where present."""
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=True, default_flow_style=None,
                     allow_unicode=True)


def load_references(path: Path) -> dict:
    """The references of a file, checked ({} when there is no file)."""
    if not path.exists():
        return {}
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ReferenceFileError(
            f"{path}: {size >> 20} MiB is over the {MAX_BYTES >> 20} MiB that ReFrame can "
            "re-read for every test case; keep one file per system with the values you gate")
    try:
        data = read_yaml_file(path) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise ReferenceFileError(f"{path}: not readable YAML ({err}); fix it or move it "
                                 "away and run `mpimatrix bless` again") from None
    check_references(data, path)
    return data


_checked: dict[tuple[str, float, int], str] = {}


def checked_once(path: Path) -> None:
    """check the file once per process and version of it (ReFrame hooks call this for
    every test case)."""
    st = os.stat(path)
    key = (str(path), st.st_mtime, st.st_size)
    if key not in _checked:
        try:
            load_references(path)
            _checked[key] = ""
        except ReferenceFileError as err:
            _checked[key] = str(err)
    if _checked[key]:
        raise ReferenceFileError(_checked[key])
