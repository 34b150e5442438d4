"""The site's settings, recorded once in the checkout: site_config/site.yaml.

What a scheduled nightly needs (the builds file or Spack lock, the site's Spack and its
overlay, where the results store lives, OSU/IMB sources, module paths) is written once
here instead of being exported in every crontab line. Each key sets an environment
variable for mpimatrix and the ReFrame it runs; a variable already set in the
environment wins over the file. MPIMATRIX_SITE_FILE names another file.
"""

from __future__ import annotations

import getpass
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .paths import project_root
from .strict_yaml import StrictYamlError, load_yaml

SITE_FILE_ENV = "MPIMATRIX_SITE_FILE"
EXAMPLE = "site_config/site.yaml.example"
MAX_BYTES = 64 * 1024

#: key -> environment variable it sets (paths relative to the checkout)
PATH_KEYS = {
    "builds": "MPIMATRIX_BUILDS",
    "lock": "MPIMATRIX_LOCK",
    "spack_root": "SPACK_ROOT",
    "store": "MPIMATRIX_STORE",
    "results": "MPIMATRIX_RESULTS",
    "sources": "MPIMATRIX_SOURCES",
    "systems": "MPIMATRIX_SYSTEMS",
    "reframe_config": "MPIMATRIX_REFRAME_CONFIG",
}
WORD_KEYS = {"spack_site": "MPIMATRIX_SPACK_SITE"}
LIST_KEYS = ("modulepath",)
NIGHTLY_KEYS = {"mode": str, "args": list, "report_since": str, "report_name": str,
                "mail_to": list, "hook": str}
KNOWN = (*PATH_KEYS, *WORD_KEYS, *LIST_KEYS, "environment", "nightly", "monitoring")
#: monitoring key -> environment variable it sets
MONITORING_PATHS = {"metrics_textfile": "MPIMATRIX_METRICS_TEXTFILE"}
MONITORING_WORDS = {"store_url": "MPIMATRIX_STORE_URL", "system_name": "MPIMATRIX_SYSTEM_NAME"}
MONITORING_KEYS = ("perflog", *MONITORING_PATHS, *MONITORING_WORDS)
#: ReFrame's perflog handler types a site may add (ReFrame's own, configured as ReFrame
#: documents them)
PERFLOG_TYPES = ("httpjson", "syslog", "filelog", "graylog", "stream", "file")


class SiteSettingsError(ValueError):
    """The settings file cannot be used; the message names it and the fix."""


@dataclass(frozen=True)
class Nightly:
    mode: str = "nightly"
    args: tuple[str, ...] = ()
    report_since: str = "14d"
    report_name: str = "nightly"
    mail_to: tuple[str, ...] = ()
    hook: str = ""


@dataclass(frozen=True)
class Setting:
    key: str
    variable: str
    value: str
    origin: str  # "file", "environment" (the environment won over the file)


@dataclass(frozen=True)
class SiteSettings:
    path: Path | None  # None: no settings file
    variables: dict[str, str] = field(default_factory=dict)  # from the file, resolved
    keys: dict[str, str] = field(default_factory=dict)  # variable -> the file's key
    modulepath: tuple[str, ...] = ()
    nightly: Nightly = Nightly()
    #: the site's own ReFrame perflog handlers, merged beside mpimatrix's filelog
    perflog: tuple[Mapping, ...] = ()


def settings_file() -> Path:
    env = os.environ.get(SITE_FILE_ENV)
    if env:
        return Path(env).expanduser().absolute()
    return project_root() / "site_config" / "site.yaml"


def _fail(path: Path, what: str) -> SiteSettingsError:
    return SiteSettingsError(f"{path}: {what} (the keys and their meaning: {EXAMPLE})")


VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


def expand(value: str, key: str, path: Path) -> str:
    """$NAME and ${NAME} from the environment ($USER: the account's name when unset)."""
    def one(m: re.Match) -> str:
        name = m[1] or m[2]
        if name in os.environ:
            return os.environ[name]
        if name in ("USER", "LOGNAME"):
            return getpass.getuser()
        raise _fail(path, f"{key}: ${name} is not set in the environment")
    return VARIABLE.sub(one, value)


def _path(value, key: str, path: Path) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(path, f"{key}: expected a path, got {value!r}")
    p = Path(expand(value, key, path)).expanduser()
    return str(p if p.is_absolute() else (project_root() / p))


def _strings(value, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
        raise _fail(path, f"{key}: expected a list of words, got {value!r}")
    return tuple(str(v) for v in value)


def _nightly(data, path: Path) -> Nightly:
    if data is None:
        return Nightly()
    if not isinstance(data, dict):
        raise _fail(path, f"nightly: expected a mapping of {', '.join(NIGHTLY_KEYS)}")
    unknown = sorted(set(data) - set(NIGHTLY_KEYS))
    if unknown:
        raise _fail(path, f"nightly: unknown key(s) {', '.join(map(str, unknown))}; known: "
                    f"{', '.join(NIGHTLY_KEYS)}")
    out = {}
    for key, kind in NIGHTLY_KEYS.items():
        if key not in data or data[key] is None:
            continue
        if kind is list:
            out[key] = _strings(data[key], f"nightly.{key}", path)
        elif isinstance(data[key], str) and data[key].strip():
            out[key] = data[key]
        else:
            raise _fail(path, f"nightly.{key}: expected a word, got {data[key]!r}")
    return Nightly(**out)


def _expanded(value, key: str, path: Path):
    """Strings in a handler's settings with $VARIABLES expanded (a token in the
    environment, not in the file)."""
    if isinstance(value, str):
        return expand(value, key, path)
    if isinstance(value, list):
        return [_expanded(v, key, path) for v in value]
    if isinstance(value, dict):
        return {k: _expanded(v, f"{key}.{k}", path) for k, v in value.items()}
    return value


def _perflog(value, path: Path) -> tuple[Mapping, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(path, "monitoring.perflog: expected a list of ReFrame perflog handlers "
                    "(- type: httpjson, url: ...)")
    out = []
    for i, handler in enumerate(value):
        key = f"monitoring.perflog[{i}]"
        if not isinstance(handler, dict) or handler.get("type") not in PERFLOG_TYPES:
            raise _fail(path, f"{key}: expected a mapping with type one of "
                        f"{', '.join(PERFLOG_TYPES)}, got {handler!r}")
        if handler["type"] == "httpjson" and not str(handler.get("url", "")).startswith(
                ("http://", "https://")):
            raise _fail(path, f"{key}: an httpjson handler needs url: http(s)://...")
        if handler["type"] == "graylog" and ":" not in str(handler.get("address", "")):
            raise _fail(path, f"{key}: a graylog handler needs address: host:port")
        out.append(_expanded(handler, key, path))
    return tuple(out)


def _monitoring(data, path: Path, variables: dict, keys: dict) -> tuple[Mapping, ...]:
    if data is None:
        return ()
    if not isinstance(data, dict):
        raise _fail(path, f"monitoring: expected a mapping of {', '.join(MONITORING_KEYS)}")
    unknown = sorted(map(str, set(data) - set(MONITORING_KEYS)))
    if unknown:
        raise _fail(path, f"monitoring: unknown key(s) {', '.join(unknown)}; known: "
                    f"{', '.join(MONITORING_KEYS)}")
    for key, var in MONITORING_PATHS.items():
        if data.get(key) is not None:
            variables[var] = _path(data[key], f"monitoring.{key}", path)
            keys[var] = f"monitoring.{key}"
    for key, var in MONITORING_WORDS.items():
        if data.get(key) is not None:
            if not isinstance(data[key], str) or not data[key].strip():
                raise _fail(path, f"monitoring.{key}: expected a word, got {data[key]!r}")
            variables[var] = expand(data[key], f"monitoring.{key}", path)
            keys[var] = f"monitoring.{key}"
    return _perflog(data.get("perflog"), path)


def load(path: Path) -> SiteSettings:
    try:
        data = load_yaml(path, MAX_BYTES, "site settings file")
    except StrictYamlError as err:
        raise SiteSettingsError(f"{err} (the keys: {EXAMPLE})") from None
    if data is None:
        return SiteSettings(path)
    if not isinstance(data, dict):
        raise _fail(path, "expected a mapping of settings")
    unknown = sorted(map(str, set(data) - set(KNOWN)))
    if unknown:
        raise _fail(path, f"unknown key(s) {', '.join(unknown)}; known: {', '.join(KNOWN)}")
    variables, keys = {}, {}
    for key, var in PATH_KEYS.items():
        if data.get(key) is not None:
            variables[var], keys[var] = _path(data[key], key, path), key
    for key, var in WORD_KEYS.items():
        if data.get(key) is not None:
            if not isinstance(data[key], str) or not data[key].strip():
                raise _fail(path, f"{key}: expected a word, got {data[key]!r}")
            variables[var], keys[var] = data[key], key
    env = data.get("environment") or {}
    if not isinstance(env, dict):
        raise _fail(path, "environment: expected a mapping of NAME: value")
    for name, value in env.items():
        if not isinstance(name, str) or not name.isidentifier() or isinstance(value, (dict, list)):
            raise _fail(path, f"environment: {name!r}: expected NAME: value")
        variables[name] = expand(str(value), f"environment.{name}", path)
        keys[name] = f"environment.{name}"
    modulepath = tuple(_path(p, "modulepath", path) for p in
                       _strings(data.get("modulepath") or [], "modulepath", path))
    perflog = _monitoring(data.get("monitoring"), path, variables, keys)
    return SiteSettings(path, variables, keys, modulepath, _nightly(data.get("nightly"), path),
                        perflog)


def current() -> SiteSettings:
    """The settings of the file in force (no file: empty settings)."""
    path = settings_file()
    if not path.exists():
        if os.environ.get(SITE_FILE_ENV):
            raise SiteSettingsError(f"{path}: no such site settings file ({SITE_FILE_ENV}); "
                                    f"copy {EXAMPLE} there, or unset {SITE_FILE_ENV}")
        return SiteSettings(None)
    return load(path)


def apply(settings: SiteSettings, environ: dict | None = None) -> list[Setting]:
    """Set the file's variables where the environment has not set them (PATH gets the
    site's Spack, MODULEPATH the module folders). Returns what is in force."""
    env = os.environ if environ is None else environ
    out = []
    for var, value in settings.variables.items():
        key = settings.keys[var]
        if var in env and env[var] != value:
            out.append(Setting(key, var, env[var], "environment"))
            continue
        env[var] = value
        out.append(Setting(key, var, value, "file"))
    spack_bin = str(Path(env["SPACK_ROOT"]) / "bin") if env.get("SPACK_ROOT") else ""
    if "SPACK_ROOT" in settings.variables and spack_bin not in env.get("PATH", "").split(":"):
        env["PATH"] = f"{spack_bin}:{env.get('PATH', '')}".rstrip(":")
    if settings.modulepath:
        have = [p for p in env.get("MODULEPATH", "").split(":") if p]
        env["MODULEPATH"] = ":".join([*[p for p in settings.modulepath if p not in have], *have])
        out.append(Setting("modulepath", "MODULEPATH", env["MODULEPATH"], "file"))
    return out


def apply_current() -> SiteSettings:
    """Load the file in force and apply it to this process's environment."""
    settings = current()
    apply(settings)
    return settings
