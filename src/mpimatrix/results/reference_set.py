"""A system's references, the statistics behind their tolerances and the gate's policy,
loaded once at the boundary (the run, the report, the validation) and handed to the
gate as one object."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..reference_file import load_references, read_yaml_file, stats_path
from .measurements import Case, Session, load
from .policy import DEFAULT_POLICY, POLICY_KEY, GatePolicy, from_record

#: The key of the build statistics in the statistics file.
BUILDS_KEY = "$builds"


@dataclass(frozen=True)
class ReferenceSet:
    #: <system>.yaml as ReFrame reads it (test class → partition → environ → key → var)
    refs: dict = field(default_factory=dict)
    #: <system>.stats.yaml as `mpimatrix bless` writes it (spreads, build tolerances)
    stats: dict = field(default_factory=dict)
    policy: GatePolicy = DEFAULT_POLICY

    @classmethod
    def load(cls, refs_file: Path, policy: GatePolicy | None = None) -> ReferenceSet:
        """The reference file (checked: a bad one raises ReferenceFileError naming it) and
        its statistics file; an unreadable statistics file counts as none (the gate then
        judges whole builds at the policy's build_tolerance_unblessed). The policy: the one bless
        wrote beside its tolerances (`$policy`), unless one is given."""
        refs = load_references(refs_file)
        try:
            stats = read_yaml_file(stats_path(refs_file)) or {}
        except (OSError, yaml.YAMLError):
            stats = {}
        stats = stats if isinstance(stats, dict) else {}
        return cls(refs, stats, policy or from_record(stats.get(POLICY_KEY)))

    @classmethod
    def of_store(cls, results: Path, policy: GatePolicy | None = None) -> ReferenceSet:
        """The references `mpimatrix bless` wrote in a results store (its one system)."""
        files = sorted(f for f in (results / "references").glob("*.yaml")
                       if not f.name.endswith(".stats.yaml"))
        return cls.load(files[0], policy) if files else cls(policy=policy or DEFAULT_POLICY)

    def applied(self, report: dict) -> Session:
        """A stored session as ReFrame would have reported it against these references
        (as it ran when there are none)."""
        return load(report, self.refs or None)

    def judging(self, session: Session) -> Session:
        """An earlier session as today's references judge it (itself when there are
        none: as it ran)."""
        return load(session.raw, self.refs) if self.refs else session

    def build_tolerance(self, partition: str, environ: str) -> float:
        return build_tolerance(self.stats, partition, environ, self.policy)

    def build_spread(self, partition: str, environ: str) -> float:
        """The robust spread of the build's factor over the blessed sessions (0: none)."""
        rec = (((self.stats.get(BUILDS_KEY) or {}).get(partition) or {}).get(environ)
               or {})
        spread = rec.get("spread") if isinstance(rec, dict) else None
        return float(spread) if isinstance(spread, int | float) and spread > 0 else 0.0

    def blessed(self, case: Case, var: str) -> dict:
        return blessed_record(self.stats, case, var)

    def not_gated(self) -> list[dict]:
        return not_gated(self.stats)


def blessed_record(stats: dict | None, case: Case, var: str) -> dict:
    """What bless wrote about a value in the statistics file ({} when nothing): test
    class → partition → environ → reference key → variable."""
    entry = ((((stats or {}).get(case.test_class) or {}).get(case.partition) or {})
             .get(case.environ) or {})
    rec = (entry.get(case.ref_key) or {}).get(var) or {}
    return rec if isinstance(rec, dict) else {}


def build_tolerance(stats: dict | None, partition: str, environ: str,
                    policy: GatePolicy = DEFAULT_POLICY) -> float:
    """The build's tolerance from the statistics file, else the policy's
    build_tolerance_unblessed."""
    rec = (((stats or {}).get(BUILDS_KEY) or {}).get(partition) or {}).get(environ) or {}
    tol = rec.get("tolerance") if isinstance(rec, dict) else None
    return (float(tol) if isinstance(tol, int | float) and tol > 0
            else policy.build_tolerance_unblessed)


def value_records(stats: dict | None) -> Iterator[tuple[str, str, str, str, str, dict]]:
    """(class, partition, environ, ref_key, var, record) of every value in the statistics
    `mpimatrix bless` writes beside the references ({class: {partition: {environ: {ref_key:
    {var: {median, spread, n, tolerance, gated, reason, ...}}}}}})."""
    if not isinstance(stats, dict):
        return
    for cls, parts in stats.items():
        if cls.startswith("$") or not isinstance(parts, dict):  # `$builds`, `$policy`
            continue
        for part, envs in parts.items():
            for env, keys in (envs or {}).items():
                for ref_key, pvars in (keys or {}).items():
                    for var, rec in (pvars or {}).items():
                        if isinstance(rec, dict):
                            yield cls, part, env, ref_key, var, rec


def build_records(stats: dict | None) -> Iterator[tuple[str, str, dict]]:
    """(partition, environ, record) of each build under `$builds` ({factors, spread,
    tolerance})."""
    builds = stats.get(BUILDS_KEY) if isinstance(stats, dict) else None
    for part, envs in (builds or {}).items():
        for env, rec in (envs or {}).items():
            if isinstance(rec, dict):
                yield part, env, rec


def not_gated(stats: dict | None) -> list[dict]:
    """Values the reference file keeps but does not gate, and why."""
    return [{"check": cls, "partition": part, "environ": env, "ref_key": ref_key, "var": var,
             "median": st.get("median"), "spread": st.get("spread"), "n": st.get("n"),
             "reason": st.get("reason", "")}
            for cls, part, env, ref_key, var, st in value_records(stats)
            if st.get("gated") is False]


#: No references: every value as measured, whole builds at the policy's
#: build_tolerance_unblessed.
NO_REFERENCES = ReferenceSet()
