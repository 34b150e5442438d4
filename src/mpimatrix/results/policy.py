"""The gate's settings, in one frozen object: bless, the gate and the history take the
same GatePolicy (DEFAULT_POLICY unless told otherwise), and bless writes the one it used
into the statistics file (`$policy`) beside the references it explains.

Each default was set from measurements on a shared 2-core VM; docs/gate.md says how
each is used and docs/history.md what each was measured against.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass

#: The statistics file's key for the policy bless used.
POLICY_KEY = "$policy"


@dataclass(frozen=True)
class GatePolicy:
    # -- a value alone (bless's tolerance, the gate's first verdict) -------------------
    #: The smallest tolerance of a value judged alone: wide enough for the states a single
    #: value holds for minutes on a shared node (`mpimatrix bless --tolerance`).
    value_floor: float = 0.3
    #: A value's tolerance is this many robust standard deviations of its blessed
    #: samples (relative to their median), at least value_floor.
    k_sigma: float = 4.0
    #: A value whose tolerance would exceed this (or value_floor, if larger) cannot
    #: detect a real regression: reported, not gated.
    max_tolerance: float = 0.3
    #: Fewer blessed samples than this cannot tell noise from a value: not gated.
    min_samples: int = 3
    #: Two groups of samples further apart than this (relative to the lower one) and
    #: more than twice as far apart as either group is wide: a bimodal value, not gated.
    mode_gap: float = 0.3
    #: A value with more blessed samples than this beyond its tolerance on the bad side
    #: (slower, or a lower rate) is not gated: bless already saw the unchanged system
    #: outside, so the value holds a state of its own its tolerance cannot cover, and on
    #: this VM such states lasted for nights (1 allowed: 11 of 20 unchanged nights red).
    max_blessed_outside: int = 0

    # -- a share (a percentage such as IMB's or OSU's overlap), in percentage points -----
    #: The smallest tolerance of a share: shares are judged in points, not relative to
    #: their level (a relative tolerance on an overlap near 0 % flags noise).
    share_floor_points: float = 10.0
    #: A share whose tolerance would exceed this many points cannot detect a real loss.
    max_share_points: float = 30.0

    # -- the host and whole builds --------------------------------------------------------
    #: Builds a session and partition needs for a host factor (fewer: values are judged
    #: as measured); the median of three or more is not moved by one build's regression.
    min_builds: int = 3
    #: Time and rate values with a reference a build needs for a factor of its own. The
    #: host factors and a build's level are taken over all of them, gated or not, as bless
    #: takes the blessed build spreads.
    min_build_values: int = 5
    #: Every build this much slower than its references at once: a HOST line.
    host_tolerance: float = 0.1
    #: A class of values (host.value_class) this much slower on every build at once: a
    #: HOST line naming the class. Wider than host_tolerance: a class holds fewer values
    #: (the small-message times of this VM's quiet sessions moved up to 12 % at once).
    host_class_tolerance: float = 0.25
    #: The smallest tolerance of the verdict on a whole build: 6 % named a build slowed
    #: 10 % the first night in 51 of 56 nights over four 3-hour runs on this VM, 1 of 56
    #: unchanged nights red (15 % before: a 10 % step went unseen).
    build_floor: float = 0.06
    #: A whole build's tolerance when the statistics file holds none for it (references
    #: written by hand, or a build added since bless): the floor above assumes a spread
    #: bless measured; unmeasured, the slow states a build held alone through a session
    #: and its confirmation on this VM reached 15 %.
    build_tolerance_unblessed: float = 0.15
    #: A whole build's tolerance is this many blessed spreads of its factor, at least
    #: build_floor (2: the floor binds on this VM; 4 set every tolerance above 10 %). The
    #: spread is the median over the partition's builds of their own blessed spreads.
    build_sigmas: float = 2.0

    # -- the confirmation -----------------------------------------------------------------
    #: Rounds of measuring again, at most (1: one confirmation). After each round the
    #: test cases of a verdict still close to its threshold (night.close_calls) are
    #: measured again, every build, until none is close or the rounds are spent.
    confirm_rounds: int = 1
    #: Close (read only with confirm_rounds above 1): a whole build's pooled factor within
    #: this many of its spreads of its threshold, the blessed spread shrinking with the
    #: square root of the draws pooled (the session and each round); a value alone, a
    #: regression whose confirmation best lies within this many of its blessed spreads
    #: of its threshold.
    close_spreads: float = 1.0

    # -- a value of a build that regressed as a whole ------------------------------------
    #: Its with-build tolerance: this many blessed spreads, at least with_build_floor, at
    #: most its own tolerance, on the geometric mean of its session and confirmation bests.
    with_build_floor: float = 0.1
    with_build_sigmas: float = 2.0

    # -- the history (change points) -----------------------------------------------------
    #: A series needs this many sessions before any step can be found.
    min_points: int = 5
    #: The smallest step of a value or of the host, and of a whole build, reported.
    min_step: float = 0.1
    min_build_step: float = 0.05
    #: Significance of a step of the host or a whole build (two-sided t-test).
    max_pvalue: float = 0.01
    #: A value's own steps: significant at this share of max_pvalue (some 80 value
    #: series per partition each get the chance of a false step).
    lone_pvalue_share: float = 0.1
    #: A value moved with its build's step: one-sided rank test at this p-value (tested
    #: only where the whole build stepped).
    with_build_pvalue: float = 0.05

    def record(self) -> dict:
        """The policy as the statistics file keeps it."""
        return asdict(self)

    def changed(self) -> str:
        """The fields other than the defaults, as `--vary` takes them ('' for none);
        value_floor is bless's --tolerance and not listed."""
        default = DEFAULT_POLICY.record()
        return ",".join(f"{k}={v}" for k, v in self.record().items()
                        if k != "value_floor" and v != default[k])


DEFAULT_POLICY = GatePolicy()

#: Fields earlier GatePolicies had, each now the one behaviour (its former default):
#: ignored in a statistics file's `$policy`, refused by `--vary` with this reason.
REMOVED = {
    "host_every_value": "the host factors and each build's level are taken over every "
                        "time and rate value with a reference",
    "build_below_references": "what a whole build, or a value named with it, is held to "
                              "never lies below its references",
    "build_against_others": "each whole build is judged against the median of the other "
                            "builds' levels",
    "build_spread_pooled": "a build's blessed spread is the median of the partition's "
                           "builds' spreads",
    "build_confirm_pooled": "a build outside in the session is judged on the geometric "
                            "mean of its session and confirmation factors",
}


def _fields() -> dict[str, type]:
    return {f.name: type(f.default) for f in dataclasses.fields(GatePolicy)}


def variation(text: str) -> dict:
    """`--vary FIELD=VALUE[,FIELD=VALUE...]`: GatePolicy fields, typed as their defaults
    (ValueError naming the item and the fields; for a REMOVED one, what it became)."""
    fields = _fields()
    out: dict = {}
    for item in filter(None, text.split(",")):
        name, sep, value = item.partition("=")
        if name in REMOVED:
            raise ValueError(f"--vary {item!r}: {name} is no longer a GatePolicy field "
                             f"({REMOVED[name]}); the fields: {', '.join(sorted(fields))}")
        if not sep or name not in fields:
            raise ValueError(f"--vary {item!r}: not FIELD=VALUE with a GatePolicy field "
                             f"({', '.join(sorted(fields))})")
        cast = fields[name]
        try:
            out[name] = cast(value)
        except ValueError:
            article = "an" if cast.__name__[0] in "aeiou" else "a"
            raise ValueError(f"--vary {item!r}: {value!r} is not {article} "
                             f"{cast.__name__}") from None
    return out


def from_record(record: object) -> GatePolicy:
    """The policy a statistics file's `$policy` records: its fields of the right type
    over the defaults (a field it lacks, from an older bless, keeps its default; a key
    that is no field, such as one of REMOVED, is ignored)."""
    if not isinstance(record, dict):
        return DEFAULT_POLICY
    fields = _fields()
    kept: dict = {k: v for k, v in record.items() if k in fields and (
        isinstance(v, fields[k]) or (fields[k] is float and type(v) is int))}
    return dataclasses.replace(DEFAULT_POLICY, **kept)
