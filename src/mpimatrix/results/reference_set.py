"""A system's references, the statistics behind their tolerances and the gate's policy,
loaded once at the boundary (the run, the report, the validation) and handed to the
gate as one object."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..reference_file import load_references, stats_path
from .measurements import Case, Session, load, with_references
from .policy import DEFAULT_POLICY, GatePolicy


@dataclass(frozen=True)
class ReferenceSet:
    #: <system>.yaml as ReFrame reads it (test class → partition → environ → key → var)
    refs: dict = field(default_factory=dict)
    #: <system>.stats.yaml as `mpimatrix bless` writes it (spreads, build tolerances)
    stats: dict = field(default_factory=dict)
    policy: GatePolicy = DEFAULT_POLICY

    @classmethod
    def load(cls, refs_file: Path, policy: GatePolicy = DEFAULT_POLICY) -> ReferenceSet:
        """The reference file (checked: a bad one raises ReferenceFileError naming it) and
        its statistics file; an unreadable statistics file counts as none (the gate then
        judges whole builds at the policy's build floor)."""
        refs = load_references(refs_file)
        try:
            stats = yaml.safe_load(stats_path(refs_file).read_text()) or {}
        except (OSError, yaml.YAMLError):
            stats = {}
        return cls(refs, stats if isinstance(stats, dict) else {}, policy)

    @classmethod
    def of_store(cls, results: Path, policy: GatePolicy = DEFAULT_POLICY) -> ReferenceSet:
        """The references `mpimatrix bless` wrote in a results store (its one system)."""
        files = sorted(f for f in (results / "references").glob("*.yaml")
                       if not f.name.endswith(".stats.yaml"))
        return cls.load(files[0], policy) if files else cls(policy=policy)

    def applied(self, report: dict) -> Session:
        """A stored session as ReFrame would have reported it against these references
        (as it ran when there are none)."""
        return load(with_references(report, self.refs) if self.refs else report)


def blessed_record(stats: dict | None, case: Case, var: str) -> dict:
    """What bless wrote about a value in the statistics file ({} when nothing): test
    class → partition → environ → reference key → variable."""
    entry = ((((stats or {}).get(case.test_class) or {}).get(case.partition) or {})
             .get(case.environ) or {})
    rec = (entry.get(case.ref_key) or {}).get(var) or {}
    return rec if isinstance(rec, dict) else {}
