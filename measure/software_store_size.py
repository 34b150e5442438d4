#!/usr/bin/env python3
"""Size of the software store (results/software/) per stored session: what keeping
each session's software record and Spack lock costs a results store.

    .venv/bin/python measure/software_store_size.py [RESULTS_DIR]   # default: results/

Printed: sessions (not confirmations) in the store's reports, distinct software records
and locks with their sizes, bytes per session, and what an unchanged night adds.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
from mpimatrix.validation.api import software_dir  # noqa: E402


def main() -> None:
    results = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results"
    store = software_dir(results)
    records = sorted(store.glob("*.json"))
    locks = sorted((store / "locks").glob("*.gz"))
    used = Counter()
    sessions = 0
    for report in (results / "reports").glob("*.json"):
        if report.is_symlink() or report.name.endswith("-confirm.json"):
            continue
        info = json.loads(report.read_text()).get("session_info") or {}
        sessions += 1
        used[info.get("software") or (info.get("extras") or {}).get("software", "")] += 1
    size = {p: p.stat().st_size for p in [*records, *locks]}
    total = sum(size.values())
    print(f"store {store}: {sessions} session(s), {len(records)} software record(s) "
          f"({sum(size[p] for p in records)} B), {len(locks)} Spack lock(s) gzipped "
          f"({sum(size[p] for p in locks)} B); {total} B in all, "
          f"{total / max(sessions, 1):.0f} B per session")
    for p in records:
        print(f"  record {p.stem}: {size[p]} B, used by {used.get(p.stem, 0)} session(s)")
    for p in locks:
        print(f"  lock {p.stem[:12]}: {size[p]} B gzipped")
    print("an unchanged night adds 0 B here (its record and lock are already stored) and "
          "the extra `software=<16 hex>` in its session")


if __name__ == "__main__":
    main()
