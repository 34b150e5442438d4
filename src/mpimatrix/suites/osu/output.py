"""Parse OSU Micro-Benchmarks output (5.x and 7.x, MPI benchmarks).

A run prints a title with the version, a few preamble comments, one header line
and one row per message size:

    # OSU MPI Latency Test v5.6.1              # OSU MPI Latency Test v7.4
    # Size          Latency (us)               # Datatype: MPI_CHAR.
    8                       0.45               # Size       Avg Latency(us)        Validation
                                               8                       0.43              Pass

What varies between versions and benchmarks, and is handled here:

- column names ("Latency (us)" in 5.x, "Avg Latency(us)" in 7.x, "MB/s", NBC's
  "Pure Comm.(us)"...) map to canonical keys (latency, bandwidth, pure_comm...);
- headers with or without "#" (5.x osu_ibarrier), and header lines that are
  not the table's (5.6.1 osu_mbw_mr prints a stray "# Size  Latency (us)"
  before its real header; 7.1 prints "# Datatype" between header and rows):
  the last header before the rows wins;
- single-value outputs: barrier/ibarrier (a header without Size and one row),
  cas/fop latency (one size), osu_init ("nprocs: 2, min: .. ms, max: .., avg:
  .."), osu_hello ("This is a test with 2 processes");
- the Validation column (-c): Pass/Fail (pt2pt, collectives), passed/failed
  (7.x one-sided), or empty (5.9 osu_barrier accepts -c, validates nothing);
  7.x stops at the first failing size with "DATA VALIDATION ERROR: ... on
  message size N.";
- runtime messages in between rows (7.x one-sided "FAILED: ..." lines, MPI
  warnings) do not end a table; a row cut short (a rank killed while rank 0
  printed) is kept as `partial`.

Tables come from the program's stdout only (an Open MPI backtrace line on
stderr such as "Signal code: Address not mapped (1)" is no header); runtime
error messages from stdout and stderr. A row whose size is not a whole number
of bytes is kept in `bad_rows`, not in the table.

Parsing never decides whether a run is good: sanity.py does, with the
expected sizes from options.py.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..common import MPI_ERROR_PATTERNS, runtime_errors

_TITLE = re.compile(r"^#\s*OSU\s+(?P<title>.*?)\s+Test\s+v(?P<version>\d[\w.\-]*)", re.I)
_PREAMBLE_KV = re.compile(r"^#\s*([A-Za-z][\w .\-/]*?)\s*:\s*(.+?)\s*$")
_PAIRS = re.compile(r"\[\s*([\w ]+?)\s*:\s*(\d+)\s*\]")
_INIT = re.compile(r"nprocs:\s*(\d+),\s*min:\s*([\d.]+)\s*ms,\s*max:\s*([\d.]+)\s*ms,\s*"
                   r"avg:\s*([\d.]+)\s*ms")
_HELLO = re.compile(r"This is a test with (\d+) processes")
_DATA_ERROR = re.compile(r"DATA VALIDATION ERROR:.*?on message size (\d+)")
_UNIT = re.compile(r"^(?P<name>.*?)\s*\((?P<unit>[^)]*)\)\s*$")

# Column aliases after slugging (lower case, non-alphanumerics -> _, unit dropped).
ALIASES = {
    "avg_latency": "latency",
    "mb_s": "bandwidth",
    "messages_s": "message_rate",
    "coll_init": "init",
    "mpi_test": "test",
    "mpi_wait": "wait",
}

#: What OSU itself prints when it refuses to run or a check inside it fails.
OSU_ERROR_PATTERNS = (
    r"This test requires (?:exactly|at least) \w+ process(?:es)?",
    r"This test requires an even number of processes",
    r"Invalid [Oo]ption \[-?\w\]",
    r"invalid option -- '\w'",
    r"MPI_Init_thread must return MPI_THREAD_MULTIPLE",
    r"Number of sender and receiver threads must be same",
    r"Error [a-z]+ing (?:device|memory)",
    r"exiting improperly",
)
VALIDATION_WORDS = {"pass": True, "passed": True, "fail": False, "failed": False}


def canonical_column(header: str) -> str:
    """'Avg Latency(us)' -> 'latency', 'Pure Comm.(us)' -> 'pure_comm', 'MB/s' -> 'bandwidth'."""
    m = _UNIT.match(header.strip())
    name = m.group("name") if m and m.group("name") else header
    slug = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    return ALIASES.get(slug, slug)


def _number(tok: str) -> float | None:
    try:
        return float(tok)
    except ValueError:
        return None


@dataclass
class OsuTable:
    title: str = ""
    version: str = ""
    preamble: dict[str, str] = field(default_factory=dict)
    raw_columns: list[str] = field(default_factory=list)
    columns: list[str] = field(default_factory=list)
    rows: list[dict[str, float]] = field(default_factory=list)
    validation: list[bool | None] = field(default_factory=list)  # per row; None: not checked
    partial: str = ""  # a row cut short: the run died while printing it

    @property
    def sized(self) -> bool:
        return bool(self.columns) and self.columns[0] == "size"

    @property
    def validated(self) -> bool:
        return "validation" in self.columns and any(v is not None for v in self.validation)

    def sizes(self) -> list[int]:
        return [int(r["size"]) for r in self.rows] if self.sized else []

    def row(self, size: int | None) -> dict[str, float] | None:
        if size is None or not self.sized:
            return self.rows[0] if self.rows else None
        for r in self.rows:
            if int(r["size"]) == size:
                return r
        return None

    def value(self, column: str, size: int | None) -> float | None:
        r = self.row(size)
        return None if r is None else r.get(column)

    def failed_sizes(self) -> list[int]:
        out = []
        for i, (r, ok) in enumerate(zip(self.rows, self.validation, strict=False)):
            if ok is False:
                out.append(int(r["size"]) if self.sized else i)
        return out

    def curve(self) -> list[dict[str, float]]:
        out = []
        for r, ok in zip(self.rows, self.validation, strict=False):
            d = dict(r)
            if ok is not None:
                d["valid"] = 1.0 if ok else 0.0
            out.append(d)
        return out


@dataclass
class OsuRun:
    tables: list[OsuTable]
    titles: list[tuple[str, str]]  # (title, version) per "# OSU ... Test vX" line
    init: dict[str, float] | None = None  # osu_init: nprocs, min, max, avg (ms)
    hello_nprocs: int | None = None
    validation_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    bad_rows: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        return self.titles[0][1] if self.titles else ""

    @property
    def title(self) -> str:
        return self.titles[0][0] if self.titles else ""

    @property
    def table(self) -> OsuTable | None:
        """The result table: the first one with rows (else the first header seen)."""
        for t in self.tables:
            if t.rows:
                return t
        return self.tables[0] if self.tables else None


_UNIT_FIELD = re.compile(r"^[A-Za-z][\w .\-/]*\((?:us|ms|%|MB/s|s)\)$")


def _is_header(fields: list[str]) -> bool:
    """Column names: 'Size', 'Avg Latency(us)', 'MB/s' ... (not a runtime message that
    happens to end in parentheses, such as 'Signal code: Address not mapped (1)')."""
    if not fields or any(_number(f) is not None for f in fields) or fields[0].startswith("["):
        return False
    first = fields[0].lower()
    return first == "size" or any(
        _UNIT_FIELD.match(f) or f in ("MB/s", "Messages/s", "Iterations", "Validation")
        for f in fields)


def parse(stdout: str, stderr: str = "") -> OsuRun:
    tables: list[OsuTable] = []
    titles: list[tuple[str, str]] = []
    pending_pre: dict[str, str] = {}
    cur_title = ("", "")
    current: OsuTable | None = None
    init = None
    hello = None
    bad_rows: list[str] = []
    for raw in stdout.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            continue
        m = _TITLE.match(stripped)
        if m:
            cur_title = (m.group("title"), m.group("version"))
            titles.append(cur_title)
            current = None  # preamble lines before the title (latency_mt) are kept
            continue
        m = _INIT.search(stripped)
        if m:
            init = {"nprocs": float(m.group(1)), "min": float(m.group(2)),
                    "max": float(m.group(3)), "avg": float(m.group(4))}
            continue
        m = _HELLO.search(stripped)
        if m:
            hello = int(m.group(1))
            continue
        body = stripped.lstrip("#").strip()
        fields = re.split(r"\s{2,}", body)
        if _is_header(fields):
            if current is not None and not current.rows:
                tables.remove(current)  # a header that was not the table's (5.6.1 mbw_mr)
                pending_pre = {**current.preamble, **pending_pre}
            current = OsuTable(title=cur_title[0], version=cur_title[1],
                               preamble=dict(pending_pre), raw_columns=fields,
                               columns=[canonical_column(f) for f in fields])
            tables.append(current)
            pending_pre = {}
            continue
        if stripped.startswith("#"):
            for k, v in _PAIRS.findall(body):
                pending_pre[k.strip()] = v
            m = _PREAMBLE_KV.match(stripped)
            if m and not _PAIRS.search(body):
                pending_pre[m.group(1).strip()] = m.group(2).rstrip(".")
            if current is not None:
                current.preamble.update(pending_pre)
                pending_pre = {}
            continue
        if current is None:
            continue
        bad = _add_row(current, stripped.split())
        if bad:
            bad_rows.append(bad)
    text = stdout + "\n" + stderr
    errors = runtime_errors(text, (*MPI_ERROR_PATTERNS, *OSU_ERROR_PATTERNS))
    verrors = [m.group(0) for m in _DATA_ERROR.finditer(text)]
    verrors += re.findall(r"^FAILED: \d+ of the \d+ combinations.*$", text, re.M)
    return OsuRun(tables, titles, init, hello, verrors, errors, bad_rows)


def _add_row(table: OsuTable, toks: list[str]) -> str:
    """Add a row to the table; returns the row's text when its size is impossible."""
    ncol = len(table.columns)
    has_val = "validation" in table.columns
    nums = [_number(t) for t in toks]
    if not toks or nums[0] is None:
        return ""  # a message, not a row
    val: bool | None = None
    if has_val and len(toks) == ncol and toks[-1].lower() in VALIDATION_WORDS:
        val = VALIDATION_WORDS[toks[-1].lower()]
        values = nums[:-1]
    elif has_val and len(toks) == ncol - 1:
        values = nums  # 5.9 osu_barrier -c: the Validation column stays empty
    elif len(toks) == ncol and not has_val:
        values = nums
    else:
        if all(n is not None for n in nums) and len(toks) < ncol:
            table.partial = " ".join(toks)  # a row cut short
        return ""
    if any(v is None for v in values):
        return ""
    size = values[0]
    if table.sized and not (math.isfinite(size) and size >= 0 and size == int(size)):
        return " ".join(toks)
    cols = [c for c in table.columns if c != "validation"]
    table.rows.append(dict(zip(cols, values, strict=False)))  # type: ignore[arg-type]
    table.validation.append(val)
    return ""


def missing_sizes(table: OsuTable | None, expected: list[int]) -> list[int]:
    have = set(table.sizes()) if table is not None else set()
    return [s for s in expected if s not in have]
