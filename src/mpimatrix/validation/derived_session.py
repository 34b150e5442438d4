"""A multi-node, multi-layout session derived from a real one-node session.

This VM has one node, and the emulated cluster is shared with other work, so the
report's tests and its timing benchmark get their layouts from here: every run and
test case of a real session (e.g. `mpimatrix run --mode compare` on this machine,
tests/fixtures/reports/) is copied to each layout its benchmark can run on and to two
partitions that differ only in fabric. Intranode copies keep the measured values;
the other layouts scale the measured curves by a plain model, so that the shapes of
real curves, their run-to-run spread and every field of the record are kept:

    time x (1 + 0.35 log2(ranks / 2)) x fabric(size)    (rates divided by the same)

where fabric(size) falls log-linearly from `small` at 1 B to `large` at 4 MiB for
multi-node layouts (ib: 2.0 -> 0.8, so internode beats intranode for large messages
like seed 003's InfiniBand loopback; eth: 6.0 -> 3.0), and is 1 on one node. Run times
grow with the same factor. The values are therefore not measurements of those layouts:
they exist to exercise the report (layouts, crossovers, fabric cost), never to judge MPIs.
NPB cases (NpbCheck) go to the layouts their kernel allows, their time (the `time`
value and `npb_summary`'s) scaled by the factor of a value without a size (1 B).
"""

from __future__ import annotations

import copy
import math
import uuid as uuidlib

from ..placement import Placement
from ..suites.imb.catalogue import BY_KEY
from ..suites.npb.catalogue import BY_NAME as NPB_KERNELS
from ..units import is_share

LAYOUTS = (Placement(1, 2, "intranode"), Placement(2, 1, "internode"), Placement(2, 2),
           Placement(4, 1), Placement(4, 2))
#: partition -> (price per node-hour, fabric, factor at 1 B, factor at 4 MiB)
PARTITIONS = {"ib": (0.975, "infiniband", 2.0, 0.8), "eth": (0.78, "ethernet", 6.0, 3.0)}
SYSTEM = "derived"
TIME_COLUMNS = {"t", "t_avg", "t_min", "t_max", "t_pure", "t_ovrl", "t_CPU", "latency"}
RATE_COLUMNS = {"bandwidth", "message_rate"}


def prices() -> dict[str, dict]:
    """The prices of the derived partitions, as a --prices file holds them."""
    return {f"{SYSTEM}:{p}": {"price_per_node_hour": price, "currency": "USD", "fabric": fab}
            for p, (price, fab, _, _) in PARTITIONS.items()}


def factor(layout: Placement, partition: str, size: float | None) -> float:
    scale = 1 + 0.35 * math.log2(max(1, layout.ranks / 2))
    if layout.nodes == 1:
        return scale
    _, _, small, large = PARTITIONS[partition]
    frac = min(1.0, math.log2(max(size or 1, 1)) / 22)
    return scale * math.exp(math.log(small) + frac * (math.log(large) - math.log(small)))


def can_run(tc: dict, layout: Placement) -> bool:
    bench = BY_KEY.get(tc.get("benchmark") or "")
    if bench is None:
        kernel = NPB_KERNELS.get(str(tc.get("kernel") or ""))
        if kernel is not None and tc["name"].startswith("NpbCheck"):
            return kernel.allows(layout.ranks)  # NPB: its time scales like a size-less value
        return tc["name"].startswith("MpiPlacementCheck")
    return layout.ranks >= bench.min_ranks and (not bench.max_ranks
                                                  or layout.ranks <= bench.max_ranks)


def scaled_curve(curve: dict, f) -> dict:
    out = {}
    for table, rows in curve.items():
        out[table] = []
        for row in rows:
            k = f(row.get("size"))
            out[table].append({c: (v * k if c in TIME_COLUMNS else v / k if c in RATE_COLUMNS
                                   else v) for c, v in row.items()})
    return out


def derived_case(tc: dict, layout: Placement, partition: str) -> dict:
    out = copy.deepcopy(tc)
    old = tc["placement"]
    nodes = [f"n{i + 1:02d}" for i in range(layout.nodes)]
    out.update(system=SYSTEM, partition=partition, placement=layout.name,
               num_tasks=layout.ranks, num_tasks_per_node=layout.ppn, job_nodelist=nodes,
               hosts=nodes, name=tc["name"].replace(f"%placement={old}",
                                                    f"%placement={layout.name}"),
               display_name=tc["display_name"].replace(f"%placement={old}",
                                                       f"%placement={layout.name}"),
               ref_key=str(tc.get("ref_key", "")).replace(f"@{old}", f"@{layout.name}"))
    def f(size):
        return factor(layout, partition, size)

    if isinstance(tc.get("curve"), dict):
        out["curve"] = scaled_curve(tc["curve"], f)
    info = tc.get("perf_info") if isinstance(tc.get("perf_info"), dict) else {}
    perf = {}
    for full, pv in (tc.get("perfvalues") or {}).items():
        var = full.rsplit(":", 1)[-1]
        meta = info.get(var, {})
        k = f(float(meta["size"]) if meta.get("size") else None)
        value = pv[0]
        if value is not None and not is_share(pv[4]):
            value = value / k if meta.get("better") == "higher" else value * k
        perf[f"{SYSTEM}:{partition}:{var}"] = [value, *pv[1:]]
    out["perfvalues"] = perf
    summary = tc.get("npb_summary")
    if isinstance(summary, dict) and summary.get("time") not in (None, ""):
        out["npb_summary"] = {**summary, "time": f"{float(summary['time']) * f(None):.6g}",
                              "total_processes": str(layout.ranks),
                              "active_processes": str(layout.ranks)}
    out["time_run"] = float(tc.get("time_run") or 0) * f(1 << 20)
    return out


def derive(real: dict, layouts: tuple[Placement, ...] = LAYOUTS) -> dict:
    """The derived session of a real session report (not modified), on `layouts`."""
    out = copy.deepcopy({k: v for k, v in real.items() if k != "runs"})
    info = out.setdefault("session_info", {})
    info["uuid"] = str(uuidlib.uuid5(uuidlib.NAMESPACE_URL, f"derived:{info.get('uuid')}"))
    info["hostname"] = "derived"
    runs = []
    for run in real.get("runs", []):
        cases = []
        for tc in run.get("testcases", []):
            if tc.get("fixture"):
                continue
            for partition in PARTITIONS:
                cases += [derived_case(tc, lay, partition) for lay in layouts
                          if can_run(tc, lay)]
        runs.append({**{k: v for k, v in run.items() if k != "testcases"},
                     "testcases": cases})
    out["runs"] = runs
    info["num_cases"] = len(runs[0]["testcases"]) if runs else 0
    return out
