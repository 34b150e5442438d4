"""A system's acceptance requirements: the figures the vendor promised, in
site_config/acceptance/<system>.yaml, checked before anything runs.

Each requirement names a benchmark (an OSU program or an IMB benchmark), a placement,
a message size, a metric, a bound with its unit, the builds it applies to and the
confidence its verdict needs. Every defect is an error naming the file, the
requirement and the fix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ...placement import placement_named
from ...strict_yaml import StrictYamlError, load_yaml
from ...suites.imb.catalogue import CATALOGUE as IMB_CATALOGUE
from ...suites.imb.catalogue import SIZES as IMB_SIZES
from ...suites.osu.catalogue import BY_NAME as OSU_BY_NAME
from ...suites.osu.options import expected_sizes
from ...units import KiB, MiB, human_size
from ..values import value_label

IMB_BY_KEY = {b.key: b for b in IMB_CATALOGUE}
#: metric -> (its unit, the curve columns holding it, the first present is used)
METRICS = {
    "latency": ("us", ("latency", "t_avg", "t", "t_pure", "pure_comm")),
    "bandwidth": ("MB/s", ("bandwidth",)),
    "message_rate": ("msg/s", ("message_rate",)),
}
#: bound units -> (metric unit, factor to it)
UNITS = {"ns": ("us", 1e-3), "us": ("us", 1.0), "µs": ("us", 1.0), "ms": ("us", 1e3),
         "s": ("us", 1e6), "MB/s": ("MB/s", 1.0), "GB/s": ("MB/s", 1e3),
         "msg/s": ("msg/s", 1.0), "Mmsg/s": ("msg/s", 1e6)}
#: The largest OSU size a requirement may ask for (OSU allocates 2x it per rank).
OSU_MAX_SIZE = 64 * MiB
_BOUND = re.compile(r"^\s*(<=|>=|≤|≥)\s*([0-9.]+(?:[eE][-+]?\d+)?)\s*(\S+)\s*$")
_SIZE = re.compile(r"^\s*(\d+)\s*(B|KiB|MiB|GiB)?\s*$")
#: A requirements file holds tens of requirements (example.yaml: 4 KiB); read no more.
MAX_BYTES = 256 << 10
SYSTEM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class RequirementsError(Exception):
    """A requirements file that cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class BuildRule:
    """Which builds a requirement applies to: every build matching `pattern`, or
    (`one_of`) at least one of them."""

    pattern: str
    one_of: bool = False

    def matches(self, build: str) -> bool:
        return re.search(self.pattern, build) is not None

    def text(self) -> str:
        if self.pattern == ".*":
            return "at least one build" if self.one_of else "every build"
        return f"at least one of /{self.pattern}/" if self.one_of else f"every /{self.pattern}/"


@dataclass(frozen=True)
class Requirement:
    name: str
    suite: str  # "osu" or "imb"
    benchmark: str  # OSU: "latency"; IMB: "MPI1:PingPong"
    placement: str
    size: int | None
    metric: str
    op: str  # "<=" or ">="
    bound: float  # in the metric's unit
    unit: str
    bound_text: str  # as written
    builds: tuple[BuildRule, ...]
    confidence: float

    @property
    def columns(self) -> tuple[str, ...]:
        return METRICS[self.metric][1]

    @property
    def check(self) -> str:
        return "OsuCheck" if self.suite == "osu" else "ImbCheck"

    @property
    def name_pattern(self) -> str:
        """ReFrame's -n for the requirement's test cases."""
        return (f"^{self.check}%placement={re.escape(self.placement)}"
                f"%benchmark={re.escape(self.benchmark)}$")

    @property
    def what(self) -> str:
        prog = f"osu_{self.benchmark}" if self.suite == "osu" else f"IMB {self.benchmark}"
        return f"{prog} {self.placement} {value_label(self.metric, self.size)}"

    def meets(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value >= self.bound


@dataclass
class Requirements:
    path: Path
    system: str
    requirements: list[Requirement] = field(default_factory=list)

    def osu_max_size(self) -> int:
        """The largest OSU size asked for beyond the full sweep (0: none)."""
        sizes = [r.size for r in self.requirements if r.suite == "osu" and r.size]
        return max(sizes, default=0)


def parse_size(text, where: str) -> int:
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    m = _SIZE.match(str(text))
    if not m:
        raise RequirementsError(f"{where}: size {text!r} is not a size; write bytes "
                                "with a unit: 8 B, 16 KiB, 1 MiB")
    scale = {"B": 1, None: 1, "KiB": KiB, "MiB": MiB, "GiB": 1 << 30}[m.group(2)]
    return int(m.group(1)) * scale


def _benchmark(text, where: str) -> tuple[str, str]:
    """("osu", "latency") from osu_latency; ("imb", "MPI1:PingPong") from MPI1:PingPong
    or "IMB-MPI1 PingPong"."""
    text = str(text or "").strip()
    if text.startswith("osu_"):
        if text[4:] in OSU_BY_NAME:
            return "osu", text[4:]
    else:
        key = re.sub(r"^IMB-(\w+)\s+", r"\1:", text)
        if key in IMB_BY_KEY:
            return "imb", key
    raise RequirementsError(
        f"{where}: benchmark {text!r} is not one the checks run; use an OSU program "
        f"(osu_latency, osu_bibw, osu_mbw_mr, osu_allreduce, ...: "
        f"{len(OSU_BY_NAME)} in all) or an IMB benchmark as SUITE:NAME (MPI1:PingPong, "
        "MPI1:Allreduce, ...)")


def measured_sizes(suite: str, benchmark: str) -> list[int] | None:
    """The sizes the acceptance mode (profile full) measures; None: unsized."""
    if suite == "osu":
        bench = OSU_BY_NAME[benchmark]
        return expected_sizes(bench, "full") if bench.sized else None
    imb = IMB_BY_KEY[benchmark]
    return imb.table_sizes(IMB_SIZES["full"]) if imb.sized else None


def _size(raw: Mapping[str, object], suite: str, benchmark: str, where: str) -> int | None:
    sizes = measured_sizes(suite, benchmark)
    if sizes is None:
        if raw.get("size") is not None:
            raise RequirementsError(f"{where}: {benchmark} takes no message size; remove "
                                    "`size`")
        return None
    if raw.get("size") is None:
        raise RequirementsError(f"{where}: `size` is missing ({benchmark} is measured from "
                                f"{human_size(sizes[0], ' ')} to {human_size(sizes[-1], ' ')})")
    size = parse_size(raw["size"], where)
    if size in sizes:
        return size
    lo = sizes[0]
    if suite == "osu" and size > sizes[-1] and size <= OSU_MAX_SIZE and \
            size & (size - 1) == 0:
        return size  # beyond the full sweep: the requirements session measures up to it
    doubled = [s for s in (lo << i for i in range(40)) if s <= OSU_MAX_SIZE]
    near = min(doubled if suite == "osu" else sizes, key=lambda s: abs(s - size))
    limit = (f"up to {human_size(OSU_MAX_SIZE, ' ')}" if suite == "osu"
             else f"{human_size(sizes[0], ' ')} to {human_size(sizes[-1], ' ')}")
    raise RequirementsError(
        f"{where}: size {human_size(size, ' ')} is not measured by the acceptance mode: "
        f"{benchmark} prints sizes doubling from {human_size(lo, ' ')} ({limit}); the "
        f"nearest is {human_size(near, ' ')}")


def _bound(raw: Mapping[str, object], metric: str, where: str) -> tuple[str, float, str]:
    text = str(raw.get("bound") or "")
    m = _BOUND.match(text)
    if not m:
        raise RequirementsError(f"{where}: bound {text!r} is not '<= VALUE UNIT' or '>= "
                                "VALUE UNIT' (e.g. '<= 2.5 us', '>= 10 GB/s')")
    op = {"≤": "<=", "≥": ">="}.get(m.group(1), m.group(1))
    unit = m.group(3)
    want = METRICS[metric][0]
    if unit not in UNITS or UNITS[unit][0] != want:
        units = sorted(u for u, (base, _) in UNITS.items() if base == want)
        raise RequirementsError(f"{where}: unit {unit!r} does not fit metric {metric} "
                                f"(measured in {want}); use one of {units}")
    value = float(m.group(2)) * UNITS[unit][1]
    if not math.isfinite(value) or value <= 0:
        raise RequirementsError(f"{where}: bound {text!r} must be a positive number")
    better = "<=" if metric == "latency" else ">="
    if op != better:
        raise RequirementsError(f"{where}: a bound on {metric} is '{better} VALUE' (lower "
                                f"{metric} is {'better' if better == '<=' else 'worse'})")
    return op, value, text


def _builds(raw, where: str) -> tuple[BuildRule, ...]:
    if raw is None:
        return (BuildRule(".*"),)
    if not isinstance(raw, list) or not raw:
        raise RequirementsError(f"{where}: builds must be a list of build-name patterns, "
                                "each a regular expression or {one_of: REGEX}")
    out = []
    for item in raw:
        one_of = isinstance(item, dict)
        pattern = item.get("one_of") if one_of and set(item) == {"one_of"} else item
        if not isinstance(pattern, str):
            raise RequirementsError(f"{where}: builds entry {item!r} is neither a regular "
                                    "expression nor {one_of: REGEX}")
        try:
            re.compile(pattern)
        except re.error as err:
            raise RequirementsError(f"{where}: builds pattern {pattern!r} is not a regular "
                                    f"expression ({err})") from None
        out.append(BuildRule(pattern, one_of))
    return tuple(out)


def _requirement(raw, i: int, path: Path, default_conf: float) -> Requirement:
    where = f"{path}: requirement {i + 1}"
    if not isinstance(raw, dict):
        raise RequirementsError(f"{where} is not a mapping (name, benchmark, placement, "
                                "size, metric, bound, builds, confidence)")
    name = str(raw.get("name") or f"requirement-{i + 1}")
    where = f"{path}: requirement {i + 1} ({name})"
    known = {"name", "benchmark", "placement", "size", "metric", "bound", "builds",
             "confidence", "note"}
    unknown = sorted(set(map(str, raw)) - known)
    if unknown:
        raise RequirementsError(f"{where}: unknown keys {unknown}; allowed {sorted(known)}")
    suite, benchmark = _benchmark(raw.get("benchmark"), where)
    placement = str(raw.get("placement") or "")
    if placement not in ("intranode", "internode") and placement_named(placement) is None:
        raise RequirementsError(f"{where}: placement {placement!r} is not intranode, "
                                "internode or NODESxRANKS_PER_NODE (e.g. 4x2)")
    metric = str(raw.get("metric") or "latency")
    if metric not in METRICS:
        raise RequirementsError(f"{where}: metric {metric!r} is not one of {sorted(METRICS)}")
    size = _size(raw, suite, benchmark, where)
    op, bound, text = _bound(raw, metric, where)
    conf = raw.get("confidence", default_conf)
    if not isinstance(conf, (int, float)) or isinstance(conf, bool) or not 0.5 <= conf < 1:
        raise RequirementsError(f"{where}: confidence {conf!r} must be a number in [0.5, 1), "
                                "e.g. 0.95")
    return Requirement(name, suite, benchmark, placement, size, metric, op, bound,
                       METRICS[metric][0], text, _builds(raw.get("builds"), where),
                       float(conf))


def load_requirements(path: Path) -> Requirements:
    path = Path(path)
    try:
        data = load_yaml(path, MAX_BYTES, "requirements file")
    except StrictYamlError as err:
        raise RequirementsError(f"{err} (see site_config/acceptance/example.yaml)") from None
    if not isinstance(data, dict) or not isinstance(data.get("requirements"), list) \
            or not data["requirements"]:
        raise RequirementsError(f"{path}: no `requirements:` list; see "
                                "site_config/acceptance/example.yaml")
    conf = data.get("confidence", 0.95)
    reqs = [_requirement(r, i, path, conf) for i, r in enumerate(data["requirements"])]
    names = [r.name for r in reqs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise RequirementsError(f"{path}: requirement names {twice} are used twice; name "
                                "each once")
    system = data.get("system") or path.stem
    if not isinstance(system, str) or not SYSTEM_NAME.fullmatch(system):
        raise RequirementsError(f"{path}: system {system!r} is not a ReFrame system name "
                                "(letters, digits, '.', '_' and '-'): name the system the "
                                "requirements are for, as `mpimatrix report` shows it")
    return Requirements(path, system, reqs)
