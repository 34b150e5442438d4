"""Session selectors: the one parser behind every command that names stored sessions
(`--session` of report, accept, bless and changes; `diff OLD NEW`).

    UUID        a stored session's full UUID
    PREFIX      its first characters, 4 or more, as the summaries and `mpimatrix diff`
                print them (8): the one stored session they begin
    latest      the newest stored session that is not a confirmation
    START:END   the sessions that started in a period, as ReFrame takes it: now-7d:now,
                20260101:20260201T1200 (now, YYYYMMDD[THHMM[SS]], each +/-N m|h|d|w)

An empty, malformed, ambiguous or unknown selector stops the command (exit code 2)
with the selector and what it matched. Only full UUIDs and parsed periods reach
ReFrame (an empty query made it run every check and store a new session).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from ..paths import results_db
from ..results.sessions import SessionError, session_info
from . import session_index
from .stored import LIST_HINT, describe, stored_index

LATEST = "latest"
MIN_PREFIX = 4
_TEMPLATE = "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
_HEX = set("0123456789abcdef")
_TESTCASE = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})"
                       r"(:\d+){1,2}")
FORMS = ("give a session's UUID, its first 8 characters (as `mpimatrix diff` and the "
         "summaries print them), `latest`, or a period such as now-7d:now")


@dataclass(frozen=True)
class Selector:
    text: str  # as given (lower case for UUIDs and prefixes)
    kind: str  # "uuid", "prefix", "latest" or "period"


def _uuid_shaped(text: str) -> bool:
    """Whether `text` is a UUID or the start of one (hex digits, hyphens in place)."""
    if len(text) > len(_TEMPLATE):
        return False
    return all((c == "-") if t == "-" else (c in _HEX)
               for c, t in zip(text, _TEMPLATE[:len(text)], strict=True))


def _check_period(text: str, option: str) -> None:
    from reframe.frontend.reporting.utility import parse_time_period

    if "?" in text:
        raise SessionError(f"{option} {text!r}: session filters (?EXPR) are not taken; "
                           f"{FORMS}")
    try:
        parse_time_period(text)
    except (ValueError, TypeError, OverflowError) as err:
        raise SessionError(f"{option} {text!r} is not a period ReFrame takes ({err}): write "
                           "START:END, each now, YYYYMMDD or YYYYMMDDTHHMM[SS], with an "
                           "optional -N or +N and m, h, d or w (now-7d:now)") from None


def parse(text, option: str = "--session") -> Selector:
    """The selector's kind, from its text alone (no database read)."""
    if not isinstance(text, str) or not text.strip():
        raise SessionError(f"{option} {text!r} is empty: {FORMS}")
    low = text.lower()
    if low == LATEST:
        return Selector(LATEST, LATEST)
    if len(low) == len(_TEMPLATE) and _uuid_shaped(low):
        return Selector(low, "uuid")
    m = _TESTCASE.fullmatch(low)
    if m:
        raise SessionError(f"{option} {text!r} is a test case's UUID; its session is "
                           f"{m.group(1)}")
    if ":" in text:
        _check_period(text, option)
        return Selector(text, "period")
    if _uuid_shaped(low):
        if len(low.replace("-", "")) < MIN_PREFIX:
            raise SessionError(f"{option} {text!r} is too short to name a session: give at "
                               f"least {MIN_PREFIX} characters of its UUID (8 as printed)")
        return Selector(low, "prefix")
    raise SessionError(f"{option} {text!r} is not a session: {FORMS}")


def _when(start: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(start))


def _one(uuid: str, selector: str, option: str) -> dict:
    found = describe(uuid)
    if not found:  # gone between the index and ReFrame's read
        raise SessionError(f"{option} {selector!r}: session {uuid} is no longer in the "
                           f"results database {results_db()}")
    return found[0]


def _uuids_of(sel: Selector, option: str, allow_none: bool) -> list[str]:
    if sel.kind == "period":
        from reframe.frontend.reporting.utility import parse_time_period

        t0, t1 = parse_time_period(sel.text)
        found = [u for u, t in stored_index() if t0 <= t < t1]
        if not found and not allow_none:
            raise SessionError(f"{option} {sel.text!r}: no stored session started in that "
                               f"period{_held()}")
        return found
    index = stored_index()
    if not index:
        raise SessionError(f"no stored session {sel.text!r} in the results database "
                           f"{results_db()}: it holds no session: run `mpimatrix run` first")
    if sel.kind == LATEST:
        newest = [u for u, _ in reversed(index)]
        known = session_index.listed()
        for uuid in newest[:20]:
            confirms = (known[uuid][1] if uuid in known
                        else session_info(_one(uuid, sel.text, option)).get("confirms"))
            if not confirms:
                return [uuid]
        return newest[:1]
    if sel.kind == "uuid":
        matches = [u for u, _ in index if u.lower() == sel.text]
    else:
        matches = [u for u, _ in index if u.lower().startswith(sel.text)]
    if not matches:
        what = "no stored session" if sel.kind == "uuid" else "no stored session begins with"
        raise SessionError(f"{what} {sel.text!r} in the results database {results_db()}; "
                           f"{LIST_HINT} ({_count(index)})")
    if len(matches) > 1:
        starts = dict(index)
        shown = ", ".join(f"{u} ({_when(starts[u])})" for u in matches[:5])
        more = f" and {len(matches) - 5} more" if len(matches) > 5 else ""
        raise SessionError(f"{option} {sel.text!r} matches {len(matches)} stored sessions: "
                           f"{shown}{more}; give more characters of the UUID")
    return matches


def _count(index: list[tuple[str, float]]) -> str:
    return (f"{len(index)} session(s) stored, the newest {index[-1][0][:8]} of "
            f"{_when(index[-1][1])}" if index else "no session stored")


def _held() -> str:
    index = stored_index()
    return f" ({_count(index)})" if index else (f"; the results database {results_db()} "
                                                "holds no session: run `mpimatrix run` first")


def select_uuids(selectors: list[str], option: str = "--session",
                 allow_none: bool = False) -> list[str]:
    """The UUIDs of the stored sessions the selectors name, in their order, each once.
    Every selector is parsed before the database is read; a period matching no session
    is an error unless `allow_none` (the caller says so)."""
    parsed = [parse(t, option) for t in selectors]
    out: dict[str, None] = {}
    for sel in parsed:
        out.update(dict.fromkeys(_uuids_of(sel, option, allow_none)))
    return list(out)


def select(selectors: list[str], option: str = "--session",
           allow_none: bool = False) -> list[dict]:
    """The stored sessions the selectors name (select_uuids), trimmed."""
    uuids = select_uuids(selectors, option, allow_none)
    found = session_index.sessions(uuids)
    if len(found) < len(uuids):  # gone between the listing and the read
        gone = sorted(set(uuids) - {s["session_info"]["uuid"] for s in found})
        raise SessionError(f"{option} {' '.join(selectors)!r}: session {gone[0]} is no "
                           f"longer in the results database {results_db()}")
    return found


def select_one(text: str, option: str) -> dict:
    """The one stored session a selector names (a period must match exactly one)."""
    found = select([text], option)
    if len(found) != 1:
        uuids = ", ".join(s["session_info"]["uuid"] for s in found[:5])
        raise SessionError(f"{option} {text!r} matches {len(found)} stored sessions "
                           f"({uuids}{', ...' if len(found) > 5 else ''}); give one "
                           "session's UUID")
    return found[0]


def sessions_in(period: str) -> list[dict]:
    """The stored sessions that started in a period ([] when none did)."""
    return select([period], "--since", allow_none=True)


def uuids_in(period: str) -> list[str]:
    """The UUIDs of the stored sessions that started in a period, oldest first."""
    return select_uuids([period], "--since", allow_none=True)
