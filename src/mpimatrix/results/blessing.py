"""Write performance references from stored sessions ("bless").

Per value: the samples of samples.py (one per session, its best pass, against
the host); then the median, a robust spread, the number of samples, and a
tolerance derived from the spread with a floor (statistics.py). Each build's
factor against the other builds over the sessions, their spreads pooled over the
partition's builds, gives the tolerance of the verdict on the whole build (`$builds` in
the statistics file).
Times get an upper tolerance only (slower is a regression), rates and
percentages a lower one. A value too noisy to gate is written with unbounded
thresholds (ReFrame reports it, never fails it) and the reason.

The ReFrame file keeps its comments and every hand-set entry: an entry whose
thresholds differ from what bless wrote last time (the statistics file says) was
edited by hand, so only its reference value is renewed; `$xfail` entries stay.
Both files are written atomically.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field, replace
from pathlib import Path

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from ..atomic import atomic_write
from ..reference_file import INDEX, dump_yaml, load_references, read_yaml_file, stats_path
from .policy import DEFAULT_POLICY, POLICY_KEY, GatePolicy
from .reference_set import BUILDS_KEY, ReferenceSet, RefKey
from .samples import Samples, against_host, build_stats, collect
from .statistics import ValueStats, round_sig, value_stats
from .values import kind_of

HEADER = ("# Performance references (ReFrame external reference format, $ref), written by\n"
          "# `mpimatrix bless`; the statistics behind each tolerance are in the .stats.yaml\n"
          "# file beside this one. Hand edits (tolerances, $xfail) are kept by later blesses.\n")


class BlessError(Exception):
    pass


def thresholds(stats: ValueStats, higher_is_better: bool) -> tuple[float | None, float | None]:
    if not stats.gated:
        return None, None
    tol = round(stats.tolerance, 4)
    return (-tol, None) if higher_is_better else (None, tol)


def _node(tree, *keys):
    for k in keys:
        if k not in tree or not isinstance(tree[k], dict):
            tree[k] = CommentedMap()
        tree = tree[k]
    return tree


@dataclass
class Blessed:
    refs: CommentedMap
    stats: dict
    gated: int = 0
    not_gated: list[str] = field(default_factory=list)
    hosts: dict[str, dict[str, float]] = field(default_factory=dict)  # partition: session: f
    kept_by_hand: list[str] = field(default_factory=list)


def bless(sessions: list, floor: float, system: str | None, refs: CommentedMap,
          old_stats: dict, policy: GatePolicy = DEFAULT_POLICY) -> Blessed:
    """References of the sessions' values (tolerance: policy.k_sigma robust spreads, at
    least `floor`, the policy's value_floor for this bless; a value needing more than
    policy.max_tolerance is not gated). The policy goes into the statistics."""
    if not 0 < floor < 1:
        raise BlessError(f"tolerance floor {floor} must be a fraction between 0 and 1, such as "
                         "0.1 (10 %): ReFrame's lower thresholds cannot go below -1")
    policy = replace(policy, value_floor=floor)
    acc = collect(sessions, system, policy)
    if not acc:
        raise BlessError("no test case with performance values in the given session(s)"
                         + (f" for system {system!r}" if system else ""))
    previous = ReferenceSet.of(None, old_stats)  # what the statistics file held
    out = Blessed(refs, {k: v for k, v in old_stats.items()})
    out.stats[POLICY_KEY] = policy.record()
    out.hosts, builds = against_host(acc, policy)
    if builds:
        out.stats[BUILDS_KEY] = build_stats(builds, policy)
    for cls, parts in acc.items():
        entry = _node(out.refs, cls)
        entry.setdefault("$index", flow(list(INDEX)))
        if list(entry["$index"]) != INDEX:
            raise BlessError(f"existing references for {cls} use $index {entry['$index']}, "
                             f"expected {INDEX}; move the file away and bless again")
        for part, envs in parts.items():
            for env, keys in envs.items():
                for key, pvars in keys.items():
                    for var, samples in pvars.items():
                        _bless_value(out, RefKey(cls, part, env, key, var), samples,
                                     lambda xs, kind: value_stats(xs, policy, kind),
                                     previous)
    return out


def _bless_value(out: Blessed, path: RefKey, samples: Samples, judge,
                 previous: ReferenceSet) -> None:
    cls, part, env, key, var = path.check, path.partition, path.environ, path.ref_key, path.var
    stats = judge(samples.values, kind_of(samples.unit, samples.higher_is_better))
    stats.basis = samples.basis
    if samples.excluded:
        stats.gated, stats.reason = False, samples.excluded
    lower, upper = thresholds(stats, samples.higher_is_better)
    slot = _node(out.refs, cls, part, env, key)
    old = slot.get(var)
    old_stat = previous.blessed.get(path)
    label = f"{env} {key} {var}"
    new = [round_sig(stats.median), lower, upper, samples.unit]
    if isinstance(old, list) and old[:1] == ["$xfail"]:
        old[2][0] = new[0]
        new = old
        out.kept_by_hand.append(f"{label}: $xfail entry kept, reference renewed")
    elif isinstance(old, list) and len(old) == 4 and old_stat is not None and (
            old_stat.hand_set or [plain(x) for x in old[1:3]] != list(
                old_stat.thresholds if old_stat.thresholds is not None else old[1:3])):
        new = [new[0], old[1], old[2], samples.unit]
        out.kept_by_hand.append(f"{label}: hand-set thresholds {old[1]}, {old[2]} kept")
    slot[var] = flow(new)
    record = stats.to_dict()
    if out.kept_by_hand and out.kept_by_hand[-1].startswith(f"{label}: hand-set"):
        record["hand_set"] = True
    record["thresholds"] = [plain(new[1]), plain(new[2])] if new[0] != "$xfail" else [None, None]
    out.stats.setdefault(cls, {}).setdefault(part, {}).setdefault(env, {}).setdefault(
        key, {})[var] = record
    if stats.gated:
        out.gated += 1
    else:
        out.not_gated.append(f"{label}: {stats.reason}")


# -- files -------------------------------------------------------------------------------------
def plain(x):
    """A number read by the round-trip loader as the float or int it is (or None)."""
    return None if x is None else float(x) if isinstance(x, float) else int(x)


def flow(items: list) -> CommentedSeq:
    """A list written on one line, [0.41, null, 0.15, us], as ReFrame's docs show them."""
    seq = CommentedSeq(items)
    seq.fa.set_flow_style()
    return seq


def _yaml() -> YAML:
    y = YAML()
    y.width = 100
    y.indent(mapping=2, sequence=4, offset=2)
    y.representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    return y


def read(path: Path) -> tuple[CommentedMap, dict]:
    """The reference file (round-trip: comments kept) and its statistics file."""
    load_references(path)  # checks structure and size, naming the file and key
    refs = CommentedMap()
    if path.exists():
        refs = _yaml().load(path.read_text()) or CommentedMap()
    stats: dict = {}
    sp = stats_path(path)
    if sp.exists():
        stats = read_yaml_file(sp) or {}
    return refs, stats


def write(blessed: Blessed, path: Path) -> None:
    """Write both files atomically (the statistics first: a reader of the references
    never sees thresholds the statistics do not explain)."""
    atomic_write(stats_path(path), "# Statistics behind the tolerances of "
                 f"{path.name} (mpimatrix bless); not read by ReFrame.\n"
                 + dump_yaml(blessed.stats))
    buf = io.StringIO()
    y = _yaml()
    if not blessed.refs.ca.comment:
        blessed.refs.yaml_set_start_comment(HEADER.replace("# ", "").rstrip())
    y.dump(blessed.refs, buf)
    atomic_write(path, buf.getvalue())
