"""Message sizes, version strings and units, as the benchmarks and the MPIs print them."""

from __future__ import annotations

import re

KiB, MiB = 1 << 10, 1 << 20

#: The unit of a share (IMB's and OSU's overlap, a percentage bounded 0-100).
SHARE_UNIT = "%"


def is_share(unit: str) -> bool:
    """A percentage (an overlap): neither a time nor a rate, judged in percentage points."""
    return unit == SHARE_UNIT


def human_size(n: int, sep: str = "") -> str:
    """8 -> '8B', 2048 -> '2KiB', 1 << 20 -> '1MiB', 3000 -> '3000B' (sep goes
    between number and unit)."""
    for unit, scale in (("MiB", MiB), ("KiB", KiB)):
        if n >= scale and n % scale == 0:
            return f"{n // scale}{sep}{unit}"
    return f"{n}{sep}B"


def doubling_sizes(lo: int, hi: int) -> list[int]:
    """lo, 2 lo, 4 lo ... up to hi: the sizes a benchmark sweeping by doubling prints."""
    out, s = [], max(lo, 1)
    while s <= hi:
        out.append(s)
        s *= 2
    return out


def version_tuple(version: str, parts: int = 3) -> tuple[int, ...]:
    """'5.6.1' -> (5, 6, 1); '7.1-1' -> (7, 1, 1); '' or junk -> ()."""
    return tuple(int(x) for x in re.findall(r"\d+", version or "")[:parts])
