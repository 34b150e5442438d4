"""The NAS Parallel Benchmarks section: NPB's own time per build, kernel, class,
placement and partition, its cost, which fabric is cheaper per run, and which kernels
depend on the network.

Samples: NPB's `Time in seconds` (the run record's `npb_summary`, else the `time`
performance value) of every passed run of a test case in the sessions the report is
given whole (the newest session's passes; from the store the older nights come as
summaries and add none; report files are all whole). A time is the
median of its samples with a 95 % percentile bootstrap interval of the median (the
samples resampled with replacement, 4000 times, seeded per row like effects.py: the
same sessions give the same interval; with two or three samples it is their min-max;
one sample has none).

Cost of a run = median time x nodes x price per node-hour / 3600 (cost.py's prices).
Where two priced partitions differ in fabric (cost.fabric_pairs, the dearer first),
the cost difference per run (second - first) gets the bootstrap interval of the same
expression over the two resampled medians; the cheaper fabric is named only where the
interval excludes 0. The network ratio is time(second) / time(first) between the two
fabrics, or, without a second fabric, time(multi-node) / time(one node) at the same
process count (internode 2x1 over intranode 1x2, 2x2 over 1x4), with effects.interval's
interval: a kernel whose ratio interval lies above 1 runs slower over the network.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from ..measurements import Case
from . import cost
from .effects import interval, seed_of
from .figures import Colours
from .medians import Estimate, cost_difference, estimate
from .model import TIMES, Line, ReportData, placement_label, placement_order
from .npb_plot import npb_plot
from .render import Job

CHECK = "NpbCheck"
#: NPB prints the time with 2 decimals: a median below this is no time to divide by.
RESOLUTION = 0.01


@dataclass(frozen=True)
class NpbKey:
    build: str
    partition: str
    kernel: str
    klass: str
    placement: str


@dataclass(frozen=True)
class NpbRow:
    """One kernel and class of a build on a placement and partition."""
    key: NpbKey
    label: str  # the build as the page names it
    nodes: int
    ranks: int
    time: Estimate  # s
    mops: float | None  # median Mop/s total
    sessions: int  # sessions the samples come from
    node_hours: float  # per run: median time x nodes
    cost: float | None  # per run, None without a price
    cost_text: str


@dataclass(frozen=True)
class NpbFabricRow:
    """A kernel on two partitions of different fabric: cost per run on each, the
    difference (second - first) with its interval, and the time ratio second / first."""
    label: str
    kernel: str
    klass: str
    placement: str
    nodes: int
    t1: Estimate
    t2: Estimate
    cost1: float
    cost2: float
    diff: float
    diff_lo: float | None
    diff_hi: float | None
    cheaper: str  # the partition cheaper per run, or "not resolved" / "one sample"
    currency: str

    def money(self, value: float | None, sign: bool = False) -> str:
        """A cost as the page shows it: the currency, 2 significant digits or more."""
        if value is None:
            return ""
        if value == 0:
            return "0"
        plus = ("+" if value > 0 else "-") if sign else ""
        return f"{self.currency} {plus}{cost.money(abs(value), '')}".strip()


@dataclass(frozen=True)
class NetworkRow:
    """Which kernels depend on the network: time over the network / time without it."""
    label: str
    kernel: str
    klass: str
    what: str  # "ethernet / infiniband at 2x1" or "2x1 / 1x2"
    ratio: float | None
    lo: float | None
    hi: float | None
    verdict: str


def npb_cases(cases: Sequence[Case]) -> list[Case]:
    return [c for c in cases if c.test_class == CHECK and c.passed]


def kernel_class(c: Case) -> tuple[str, str]:
    kernel, klass = c.recorded("kernel"), c.recorded("npb_class")
    if kernel and klass:
        return str(kernel), str(klass)
    k, _, cl = c.benchmark.partition(".")
    return k, cl


def npb_time(c: Case) -> float | None:
    """NPB's time in seconds: its summary's, else the performance value."""
    summary = c.recorded("npb_summary")
    if isinstance(summary, dict) and summary.get("time") not in (None, ""):
        try:
            return float(summary["time"])
        except ValueError:
            pass
    return _value(c, "time")


def npb_mops(c: Case) -> float | None:
    return _value(c, "mops_total")


def _value(c: Case, var: str) -> float | None:
    v = next((v for v in c.values if v.var == var), None)
    return float(v.value) if v is not None and v.value is not None else None


@dataclass
class NpbSamples:
    """NPB times per NpbKey over the sessions given whole; nodes and ranks per key."""
    times: dict[NpbKey, list[float]]
    mops: dict[NpbKey, list[float]]
    sessions: dict[NpbKey, set[str]]
    nodes: dict[NpbKey, int]
    ranks: dict[NpbKey, int]


def samples(data: ReportData) -> NpbSamples:
    out = NpbSamples(defaultdict(list), defaultdict(list), defaultdict(set), {}, {})
    for s in data.sessions:
        for c in npb_cases(s.cases):
            t = npb_time(c)
            if t is None:
                continue
            kernel, klass = kernel_class(c)
            key = NpbKey(c.line.build, c.line.partition, kernel, klass, c.placement)
            out.times[key].append(t)
            m = npb_mops(c)
            if m is not None:
                out.mops[key].append(m)
            out.sessions[key].add(s.uuid)
            out.nodes[key] = c.nodes
            out.ranks[key] = c.shape.ranks if c.shape else int(c.recorded("num_tasks") or 1)
    return out


def _order(key: NpbKey) -> tuple:
    return (key.klass, key.kernel, placement_order(key.placement), key.build, key.partition)


def rows(sm: NpbSamples, prices: cost.Prices, colours: Colours) -> list[NpbRow]:
    out = []
    for key in sorted(sm.times, key=_order):
        xs = sm.times[key]
        est = estimate(xs, seed_of("npb", *vars(key).values()))
        hours = est.median * sm.nodes[key] / 3600
        price = prices.get(key.partition)
        money = hours * price.per_node_hour if price else None
        out.append(NpbRow(key, colours.label(Line(key.build, key.partition)), sm.nodes[key],
                          sm.ranks[key], est,
                          statistics.median(sm.mops[key]) if sm.mops.get(key) else None,
                          len(sm.sessions[key]), hours, money,
                          cost.money(money, price.currency if price else "")))
    return out


def fabric_rows(sm: NpbSamples, prices: cost.Prices, first: str, second: str
                ) -> list[NpbFabricRow]:
    """Per build, kernel, class and placement both partitions ran: cost per run on each
    (NPB's time, not the job's), the difference and which is cheaper."""
    p1, p2 = prices[first], prices[second]
    out = []
    for key in sorted(sm.times, key=_order):
        if key.partition != first:
            continue
        other = NpbKey(key.build, second, key.kernel, key.klass, key.placement)
        if other not in sm.times:
            continue
        a, b, nodes = sm.times[key], sm.times[other], sm.nodes[key]
        k1, k2 = nodes * p1.per_node_hour / 3600, nodes * p2.per_node_hour / 3600
        seed = seed_of("npb-fabric", key.build, key.kernel, key.klass, key.placement)
        diff, lo, hi = cost_difference(a, b, k1, k2, seed)
        if max(statistics.median(a), statistics.median(b)) < RESOLUTION:
            cheaper = f"time below NPB's {RESOLUTION} s resolution"
        elif lo is None or hi is None:
            cheaper = "one sample"
        elif lo > 0:
            cheaper = first
        elif hi < 0:
            cheaper = second
        else:
            cheaper = "not resolved"
        out.append(NpbFabricRow(
            key.build, key.kernel, key.klass,
            key.placement, nodes, estimate(a, seed_of("npb", *vars(key).values())),
            estimate(b, seed_of("npb", *vars(other).values())),
            k1 * statistics.median(a), k2 * statistics.median(b), diff, lo, hi, cheaper,
            p1.currency or p2.currency))
    return out


def ratio_row(label: str, kernel: str, klass: str, what: str, num: Sequence[float],
              den: Sequence[float], seed: int, where: str = "over the network"
              ) -> NetworkRow:
    """time(num) / time(den) with effects.interval's interval; `where` says what num
    ran over ("on ethernet")."""
    mn, md = statistics.median(num), statistics.median(den)
    if md < RESOLUTION or mn < RESOLUTION or min(min(num), min(den)) <= 0:
        return NetworkRow(label, kernel, klass, what, None, None, None,
                          f"a time below NPB's {RESOLUTION} s resolution")
    lo, hi = interval(num, den, seed)
    ratio = mn / md
    if lo is None or hi is None:
        return NetworkRow(label, kernel, klass, what, ratio, None, None, "one sample")
    lo, hi = lo + 1, hi + 1
    verdict = (f"{ratio:.2f}{TIMES} slower {where}" if lo > 1 else
               f"{1 / ratio:.2f}{TIMES} faster {where}" if hi < 1 else
               "not resolved: interval spans 1")
    return NetworkRow(label, kernel, klass, what, ratio, lo, hi, verdict)


def network_rows(sm: NpbSamples, prices: cost.Prices, pairs: list[tuple[str, str]],
                 colours: Colours) -> list[NetworkRow]:
    """Per build, kernel and class: the slower fabric's time over the dearer's, at every
    multi-node placement both ran; without two fabrics, multi-node over one node at the
    same process count on each partition."""
    out = []
    if pairs:
        for first, second in pairs:
            f1, f2 = prices[first].fabric, prices[second].fabric
            for key in sorted(sm.times, key=_order):
                other = NpbKey(key.build, second, key.kernel, key.klass, key.placement)
                if key.partition != first or other not in sm.times or sm.nodes[key] < 2:
                    continue
                out.append(ratio_row(
                    key.build, key.kernel,
                    key.klass, f"{f2} / {f1} at {placement_label(key.placement)}",
                    sm.times[other], sm.times[key],
                    seed_of("npb-net", key.build, key.kernel, key.klass, key.placement),
                    f"on {f2}"))
        return out
    for key in sorted(sm.times, key=_order):
        if sm.nodes[key] < 2:
            continue
        for near in sorted(sm.times, key=_order):
            if (near.build, near.partition, near.kernel, near.klass) != (
                    key.build, key.partition, key.kernel, key.klass) \
                    or sm.nodes[near] != 1 or sm.ranks[near] != sm.ranks[key]:
                continue
            out.append(ratio_row(
                colours.label(Line(key.build, key.partition)), key.kernel, key.klass,
                f"{placement_label(key.placement)} / {placement_label(near.placement)}",
                sm.times[key], sm.times[near],
                seed_of("npb-net", key.build, key.partition, key.kernel, key.klass,
                        key.placement, near.placement), "across nodes"))
    return out


def section(data: ReportData, prices: cost.Prices, colours: Colours) -> dict:
    """The template context of the NPB section (empty lists: no NPB in the sessions)."""
    sm = samples(data)
    table = rows(sm, prices, colours)
    pairs = [(a, b) for a, b in cost.fabric_pairs(prices, data.partitions)
             if any(k.partition == a for k in sm.times)
             and any(k.partition == b for k in sm.times)]
    fabric = [{"first": a, "second": b, "p1": prices[a], "p2": prices[b],
               "rows": fabric_rows(sm, prices, a, b)} for a, b in pairs]
    classes = sorted({r.key.klass for r in table})
    return {"npb_rows": table, "npb_fabric": fabric,
            "npb_network": network_rows(sm, prices, pairs, colours),
            "npb_sessions": len({u for us in sm.sessions.values() for u in us}),
            "npb_plots": [Job(npb_plot, (k, [r for r in table if r.key.klass == k],
                                         colours)) for k in classes]}
