"""Node-hours and cost, and the fabric cost comparison.

A test case costs its run time (ReFrame's time_run: the job, launcher included) x the
nodes it held. A price per node-hour per partition (`extras: {price_per_node_hour: 1.95,
currency: USD, fabric: infiniband}` in site_config/systems/<cluster>.yaml, or a
--prices file) turns node-hours into money. Two priced partitions whose `fabric`
differs get a table that says whether the dearer, faster fabric pays for itself: per
build, benchmark and placement both ran, minutes and cost on each (cost = minutes x
nodes x price per hour / 60), the difference and the percentage.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path

import yaml

from ..measurements import Case
from ..session_summary import node_hours
from .model import ReportData, Session


class PriceError(Exception):
    """A price that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Price:
    per_node_hour: float
    currency: str = ""
    fabric: str = ""

    @classmethod
    def of(cls, item, where: str = "") -> Price:
        if isinstance(item, cls):
            return item
        price = item.get("price_per_node_hour") if isinstance(item, dict) else None
        if isinstance(price, bool) or not isinstance(price, (int, float)) or price < 0:
            raise PriceError(f"{where or 'price'}: expected {{price_per_node_hour: <number "
                             f">= 0>, currency: USD, fabric: infiniband}}, got {item!r}")
        return cls(float(price), str(item.get("currency", "")), str(item.get("fabric", "")))


@dataclass(frozen=True)
class CostRow:
    """Node-hours and their cost (money() text, "-" without a price) of what is named."""
    what: str
    node_hours: float
    cost: str


@dataclass(frozen=True)
class FabricRow:
    """A build's benchmark and placement on two partitions of different fabric: median
    minutes and cost on each, the difference and the percentage (> 0: the first is
    cheaper)."""
    build: str
    check: str
    placement: str
    nodes: int
    min1: float
    cost1: float
    min2: float
    cost2: float
    diff: float
    pct: float | None


#: Prices per partition ("system:partition").
Prices = Mapping[str, Price]


def read_prices(path) -> dict[str, Price]:
    """A prices file: {"system:partition": {price_per_node_hour, currency, fabric}}."""
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise PriceError(f"{path}: cannot read the prices ({err})") from None
    if not isinstance(data, dict):
        raise PriceError(f"{path}: expected a mapping of system:partition to prices")
    bad = [k for k in data if not isinstance(k, str) or ":" not in k]
    if bad:
        raise PriceError(f"{path}: keys must be system:partition, e.g. vcluster:compute "
                         f"(got {bad[0]!r})")
    return {k: Price.of(v, f"{path}: {k}") for k, v in data.items()}


def money(value: float | None, currency: str) -> str:
    if value is None:
        return "-"
    digits = 2 if abs(value) >= 1 else 4 if abs(value) >= 0.01 else 6
    return f"{currency} {value:.{digits}f}".strip()


def cost_of(hours: Mapping[str, float], prices: Prices) -> float | None:
    """The price of node-hours per partition; None when one of them has no price."""
    if not prices or any(p not in prices for p in hours):
        return None
    return sum(h * prices[p].per_node_hour for p, h in hours.items())


def totals(cases: Sequence[Case], prices: Prices, key) -> list[CostRow]:
    """Node-hours and cost grouped by key(case), largest first."""
    hours: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for c in cases:
        hours[key(c)][c.line.partition] += node_hours(c)
    currency = next((p.currency for p in prices.values()), "")
    rows = [CostRow(k, sum(by.values()), money(cost_of(by, prices), currency))
            for k, by in hours.items()]
    return sorted(rows, key=lambda r: -r.node_hours)


def per_session(data: ReportData, prices: Prices) -> list[CostRow]:
    currency = next((p.currency for p in prices.values()), "")
    return [CostRow(f"{s.date} {s.mode} ({s.uuid[:8]})", sum(s.node_hours.values()),
                    money(cost_of(s.node_hours, prices), currency) if s.node_hours else "-")
            for s in data.summaries]


def fabric_pairs(prices: Prices, partitions: list[str]) -> list[tuple[str, str]]:
    """Priced partitions of the session that differ in fabric, the dearer first."""
    priced = [p for p in partitions if p in prices and prices[p].fabric]
    out = []
    for a, b in combinations(priced, 2):
        if prices[a].fabric != prices[b].fabric:
            out.append((a, b) if prices[a].per_node_hour >= prices[b].per_node_hour else (b, a))
    return out


def fabric_table(s: Session, prices: Prices, first: str, second: str
                 ) -> list[FabricRow]:
    """The fabric cost table: minutes and cost on both partitions, difference, percentage
    (> 0: the first partition is cheaper)."""
    minutes: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    node_count: dict[tuple, int] = {}
    for c in s.cases:
        if c.passed and c.line.partition in (first, second):
            key = (c.line.build, c.check, c.placement)
            minutes[key][c.line.partition].append(c.time_run / 60)
            node_count[key] = c.nodes
    rows = []
    for key, parts in sorted(minutes.items()):
        if first not in parts or second not in parts:
            continue
        m1, m2 = statistics.median(parts[first]), statistics.median(parts[second])
        c1 = m1 * node_count[key] * prices[first].per_node_hour / 60
        c2 = m2 * node_count[key] * prices[second].per_node_hour / 60
        rows.append(FabricRow(build=key[0], check=key[1], placement=key[2],
                              nodes=node_count[key], min1=m1, cost1=c1, min2=m2, cost2=c2,
                              diff=c2 - c1, pct=(c2 - c1) / c1 * 100 if c1 else None))
    return rows
