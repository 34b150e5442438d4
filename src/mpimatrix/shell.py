"""Turning paths, names and values into shell words.

ReFrame joins launcher tokens and writes `export NAME=value` into job scripts
without quoting, and build scripts are shell too: every path, name or value
that goes into a script goes through here, so a space or a `$(...)` in a prefix
stays a character.
"""

from __future__ import annotations

import re
import shlex

#: In the values of a build's environment variables, $NAME and ${NAME} refer to
#: the environment of the job and $$ is a literal $.
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\$))")


def literal(text: str) -> str:
    """A path or name for an environment value: its $ signs stay characters."""
    return text.replace("$", "$$")


def shell_value(value: str) -> str:
    """One shell word for an environment value: literal text quoted, $NAME and
    ${NAME} references live ('a b:$LD_LIBRARY_PATH' -> 'a b:'"${LD_LIBRARY_PATH}")."""
    parts, text, pos = [], "", 0
    for m in _VAR.finditer(value):
        text += value[pos:m.start()]
        pos = m.end()
        if m.group(3):
            text += "$"
            continue
        if text:
            parts.append(shlex.quote(text))
            text = ""
        parts.append('"${%s}"' % (m.group(1) or m.group(2)))
    text += value[pos:]
    if text or not parts:
        parts.append(shlex.quote(text))
    return "".join(parts)


def expand_value(value: str, env: dict[str, str]) -> str:
    """An environment value as the job's shell would set it: $NAME and ${NAME} from
    `env` (empty when unset), $$ a literal $."""
    return _VAR.sub(lambda m: "$" if m.group(3) else env.get(m.group(1) or m.group(2), ""),
                    value)


def quote_argv(argv: list[str]) -> list[str]:
    """Each token quoted, for APIs that join tokens with spaces (ReFrame launchers)."""
    return [shlex.quote(a) for a in argv]


def printable(text: str, limit: int = 200) -> str:
    """Text safe for a one-line shell comment or log line: no control characters."""
    return re.sub(r"[\x00-\x1f\x7f]", "?", text)[:limit]
