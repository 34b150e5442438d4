"""A system's references, the statistics behind their tolerances and the gate's policy,
parsed once at the boundary (the run, the report, the validation) into typed records
keyed by the value, and handed to the gate as one object.

The files are ReFrame's: <system>.yaml (test class → partition → environ → reference
key → variable: [value, lower, upper, unit]) and <system>.stats.yaml, which `mpimatrix
bless` writes beside it (the same tree of value statistics, `$builds` with each build's
spread and tolerance, `$policy`). Nothing past this module walks them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import yaml

from ..reference_file import load_references, read_yaml_file, stats_path
from .measurements import Case
from .policy import DEFAULT_POLICY, POLICY_KEY, GatePolicy, from_record
from .values import Kind, PerfValue

#: The key of the build statistics in the statistics file.
BUILDS_KEY = "$builds"


@dataclass(frozen=True)
class RefKey:
    """Where a value sits in the reference file."""

    check: str  # the test class, "ImbCheck"
    partition: str  # system:partition
    environ: str
    ref_key: str  # "MPI1:PingPong@intranode"
    var: str  # "latency_8B"

    @classmethod
    def of(cls, case: Case, var: str) -> RefKey:
        return cls(case.test_class, case.partition, case.environ, case.ref_key, var)


@dataclass(frozen=True)
class Reference:
    """A value's reference and its thresholds (relative; None: unbounded)."""

    value: float
    lower: float | None
    upper: float | None


@dataclass(frozen=True)
class BlessedValue:
    """What bless wrote about a value: its statistics and whether it is gated."""

    key: RefKey
    median: float | None = None
    spread: float | None = None  # robust CV of the blessed samples
    n: int | None = None
    tolerance: float | None = None
    gated: bool | None = None
    reason: str = ""  # why not gated
    kind: Kind = Kind.TIME
    points: float | None = None  # a share's tolerance in percentage points
    hand_set: bool = False  # thresholds set by hand: the spread does not explain them
    #: the thresholds bless wrote into the reference file (None: not recorded)
    thresholds: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class BlessedBuild:
    """A whole build's blessed spread and tolerance (`$builds`)."""

    partition: str
    environ: str
    spread: float | None = None  # robust spread of its factor over the blessed sessions
    tolerance: float | None = None


_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class ReferenceSet:
    #: each value's reference, from <system>.yaml (empty: none, or no file)
    references: Mapping[RefKey, Reference] = field(default_factory=lambda: _EMPTY)
    #: what bless wrote about each value, from <system>.stats.yaml
    blessed: Mapping[RefKey, BlessedValue] = field(default_factory=lambda: _EMPTY)
    #: each whole build's blessed spread and tolerance, by (partition, environ)
    builds: Mapping[tuple[str, str], BlessedBuild] = field(default_factory=lambda: _EMPTY)
    policy: GatePolicy = DEFAULT_POLICY

    @classmethod
    def of(cls, refs: object = None, stats: object = None,
           policy: GatePolicy | None = None) -> ReferenceSet:
        """The set of a reference tree and a statistics tree as the files hold them; the
        policy given, else the one the statistics record (`$policy`)."""
        stats = stats if isinstance(stats, Mapping) else {}
        return cls(MappingProxyType(dict(_references(refs))),
                   MappingProxyType({b.key: b for b in _blessed(stats)}),
                   MappingProxyType({(b.partition, b.environ): b for b in _builds(stats)}),
                   policy or from_record(stats.get(POLICY_KEY)))

    @classmethod
    def load(cls, refs_file: Path, policy: GatePolicy | None = None) -> ReferenceSet:
        """The reference file (checked: a bad one raises ReferenceFileError naming it) and
        its statistics file; an unreadable statistics file counts as none (the gate then
        judges whole builds at the policy's build_tolerance_unblessed). The policy: the one
        bless wrote beside its tolerances (`$policy`), unless one is given."""
        refs = load_references(refs_file)
        try:
            stats = read_yaml_file(stats_path(refs_file)) or {}
        except (OSError, yaml.YAMLError):
            stats = {}
        return cls.of(refs, stats, policy)

    @classmethod
    def of_store(cls, results: Path, policy: GatePolicy | None = None) -> ReferenceSet:
        """The references `mpimatrix bless` wrote in a results store (its one system)."""
        files = sorted(f for f in (results / "references").glob("*.yaml")
                       if not f.name.endswith(".stats.yaml"))
        return cls.load(files[0], policy) if files else cls(policy=policy or DEFAULT_POLICY)

    def reference_of(self, case: Case, pv: PerfValue) -> Reference | None:
        """The value's reference: from the set when it holds references (none for a
        value it lacks), else the one ReFrame reported the value against (as it ran)."""
        if self.references:
            return self.references.get(RefKey.of(case, pv.var))
        return Reference(pv.ref, pv.lower, pv.upper) if pv.ref is not None else None

    def blessed_of(self, case: Case, var: str) -> BlessedValue | None:
        return self.blessed.get(RefKey.of(case, var))

    def build_tolerance(self, partition: str, environ: str) -> float:
        """The build's blessed tolerance, else the policy's build_tolerance_unblessed."""
        b = self.builds.get((partition, environ))
        return (b.tolerance if b is not None and b.tolerance and b.tolerance > 0
                else self.policy.build_tolerance_unblessed)

    def build_spread(self, partition: str, environ: str) -> float:
        """The robust spread of the build's factor over the blessed sessions (0: none)."""
        b = self.builds.get((partition, environ))
        return b.spread if b is not None and b.spread and b.spread > 0 else 0.0

    def not_gated(self) -> list[BlessedValue]:
        """Values the reference file keeps but does not gate, and why."""
        return [b for b in self.blessed.values() if b.gated is False]


def _number(x: object) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _references(refs: object):
    """(RefKey, Reference) of every value of a reference tree (an expected failure's
    entry, ["$xfail", reason, [value, lower, upper, unit]], by its reference)."""
    for cls, parts in _items(refs):
        for part, envs in _items(parts):
            for env, keys in _items(envs):
                for ref_key, pvars in _items(keys):
                    for var, entry in _items(pvars):
                        if isinstance(entry, list | tuple) and entry[:1] == ["$xfail"]:
                            entry = entry[2] if len(entry) > 2 else None
                        if isinstance(entry, list | tuple) and len(entry) >= 3 and (
                                value := _number(entry[0])) is not None:
                            yield (RefKey(cls, part, env, ref_key, var),
                                   Reference(value, _number(entry[1]), _number(entry[2])))


def _blessed(stats: Mapping):
    for cls, parts in _items(stats):
        for part, envs in _items(parts):
            for env, keys in _items(envs):
                for ref_key, pvars in _items(keys):
                    for var, rec in _items(pvars):
                        if isinstance(rec, Mapping):
                            yield _blessed_value(RefKey(cls, part, env, ref_key, var), rec)


def _blessed_value(key: RefKey, rec: Mapping) -> BlessedValue:
    n, gated, written = rec.get("n"), rec.get("gated"), rec.get("thresholds")
    try:
        kind = Kind(rec.get("kind") or Kind.TIME)
    except ValueError:
        kind = Kind.TIME
    return BlessedValue(key, _number(rec.get("median")), _number(rec.get("spread")),
                        n if isinstance(n, int) else None, _number(rec.get("tolerance")),
                        gated if isinstance(gated, bool) else None,
                        str(rec.get("reason") or ""), kind, _number(rec.get("points")),
                        rec.get("hand_set") is True,
                        (_number(written[0]), _number(written[1]))
                        if isinstance(written, list | tuple) and len(written) == 2 else None)


def _builds(stats: Mapping):
    for part, envs in _items(stats.get(BUILDS_KEY)):
        for env, rec in _items(envs):
            if isinstance(rec, Mapping):
                yield BlessedBuild(part, env, _number(rec.get("spread")),
                                   _number(rec.get("tolerance")))


def _items(tree: object):
    """A tree's entries under string keys, but the `$` keys (`$index`, `$builds`,
    `$policy`)."""
    if isinstance(tree, Mapping):
        for k, v in tree.items():
            if isinstance(k, str) and not k.startswith("$"):
                yield k, v


#: No references: every value as measured, whole builds at the policy's
#: build_tolerance_unblessed.
NO_REFERENCES = ReferenceSet()
