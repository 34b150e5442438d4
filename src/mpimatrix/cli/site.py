"""`mpimatrix site`: the site's settings in force (site_config/site.yaml and the
environment), and whether they work here: the builds, Spack, the results store's file
system, the site's ReFrame systems and the one this host selects, the nightly."""

from __future__ import annotations

import os
import re
import socket
import sys

from ..builds.record import BuildError
from ..builds.sources import load_builds
from ..builds.spack.tool import find_spack
from ..paths import results_db, results_dir
from ..run.store_fs import StoreFileSystemError, check_store
from ..site.perflog import handler_line
from ..site.systems import REFRAME_CONFIG_ENV, site_systems, systems_dir
from ..site_settings import EXAMPLE, apply, current


def _systems(host: str) -> list[str]:
    lines, chosen = [], ""
    for system in site_systems([]):
        match = any(re.search(h, host) for h in system["hostnames"])
        chosen = chosen or (system["name"] if match else "")
        lines.append(f"  system {system['name']}: partitions "
                     f"{', '.join(p['name'] for p in system['partitions'])}"
                     + (" <- this host" if match and chosen == system["name"] else ""))
    lines.append(f"  on {host} ReFrame selects "
                 + (f"{chosen}" if chosen else "`local` (no site system's hostnames match; "
                    "`mpimatrix cluster` systems while the emulated cluster is up)"))
    return lines


def cmd_site(args) -> int:
    settings = current()
    problems = []
    print(f"site settings: {settings.path or f'none (copy {EXAMPLE} to site_config/site.yaml)'}")
    for s in apply(settings, dict(os.environ)):
        print(f"  {s.key:18} {s.variable} = {s.value}"
              + ("   (the environment's, over the file's)" if s.origin == "environment" else ""))
    try:
        bs = load_builds()
        print(f"builds: {len(bs.builds)} usable from {bs.source}"
              + (f", {len(bs.skipped)} skipped" if bs.skipped else ""))
        for skipped in bs.skipped:
            print(f"  SKIPPED {skipped.name}: {skipped.reason}")
        if not bs.builds:
            problems.append("no usable build (`mpimatrix builds` says why)")
    except BuildError as err:
        problems.append(f"builds: {err}")
    if os.environ.get("SPACK_ROOT") or os.environ.get("MPIMATRIX_LOCK"):
        spack = find_spack()
        print(f"spack: {spack or 'NOT FOUND'}")
        if spack is None:
            problems.append("Spack not found: set spack_root in the site settings")
    try:
        print(f"store: {check_store(results_db().parent)}")
    except StoreFileSystemError as err:
        problems.append(str(err))
    print(f"results (references, reports, local stage): {results_dir()}")
    config = os.environ.get(REFRAME_CONFIG_ENV)
    print(f"systems ({systems_dir()}" + (f" and {config}" if config else "") + "):")
    try:
        print("\n".join(_systems(socket.gethostname())))
    except BuildError as err:
        problems.append(str(err))
    print("perflog handlers: mpimatrix's file log (perflogs/ under each system's prefix)"
          + ("" if settings.perflog else "; the site's: none (monitoring.perflog)"))
    for handler in settings.perflog:
        print(f"  {handler_line(handler)}")
    n = settings.nightly
    print(f"nightly: mode {n.mode}" + (f", run {' '.join(n.args)}" if n.args else "")
          + f"; report {n.report_name} over {n.report_since}"
          + (f"; mail to {', '.join(n.mail_to)}" if n.mail_to else "")
          + (f"; hook {n.hook}" if n.hook else ""))
    for p in problems:
        print(f"mpimatrix site: {p}", file=sys.stderr)
    return 2 if problems else 0


def register(sub) -> None:
    s = sub.add_parser("site", help="the site's settings in force and whether they work here",
                       description=__doc__)
    s.set_defaults(func=cmd_site)
