"""`mpimatrix schedule KIND`: the scheduler file that runs `mpimatrix nightly` from this
checkout, filled in from the templates in site_config/schedule/ (cron, Slurm's scrontab,
a systemd user timer, a GitLab CI pipeline). It prints; installing is the site's step,
e.g. `(crontab -l; mpimatrix schedule cron --at 02:00) | crontab -`."""

from __future__ import annotations

import re
import sys

from ..paths import project_root, results_dir

TEMPLATES = {
    "cron": ("crontab",),
    "scrontab": ("scrontab",),
    "systemd": ("mpimatrix-nightly.service", "mpimatrix-nightly.timer"),
    "gitlab": ("gitlab-ci.yml",),
}
AT = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")
TIME_LIMIT = re.compile(r"^(\d+)([mh])$")


def fill(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    return text


def values(args) -> dict[str, str]:
    hour, minute = ("*", "*") if args.every_minute else AT.match(args.at).groups()
    number, unit = TIME_LIMIT.match(args.time_limit).groups()
    seconds = int(number) * (3600 if unit == "h" else 60)
    return {"CHECKOUT": str(project_root()), "RESULTS": str(results_dir()),
            "HOUR": hour if hour == "*" else f"{int(hour):02d}", "MINUTE": minute,
            "PARTITION": args.partition, "RUNNER_TAG": args.runner_tag,
            "TIME_LIMIT": f"{seconds // 60}" if args.kind == "scrontab" else args.time_limit,
            "TIME_LIMIT_SECONDS": str(seconds)}


def cmd_schedule(args) -> int:
    if not args.every_minute and not AT.match(args.at):
        print(f"mpimatrix schedule: --at {args.at!r}: give the time as HH:MM (02:00)",
              file=sys.stderr)
        return 2
    if not TIME_LIMIT.match(args.time_limit):
        print(f"mpimatrix schedule: --time-limit {args.time_limit!r}: give minutes or hours "
              "as 90m or 6h", file=sys.stderr)
        return 2
    folder = project_root() / "site_config" / "schedule"
    filled = values(args)
    for i, name in enumerate(TEMPLATES[args.kind]):
        if len(TEMPLATES[args.kind]) > 1:
            print(f"{'' if i == 0 else chr(10)}# ---- {name}")
        print(fill((folder / name).read_text(), filled), end="")
    return 0


def register(sub) -> None:
    s = sub.add_parser("schedule", help="print the cron, scrontab, systemd or GitLab file that "
                       "runs `mpimatrix nightly` from this checkout", description=__doc__)
    s.add_argument("kind", choices=sorted(TEMPLATES))
    s.add_argument("--at", default="02:00", help="time of day, HH:MM (default 02:00)")
    s.add_argument("--every-minute", action="store_true",
                   help="every minute instead, to try a schedule out (a night that finds "
                   "the last one running waits for it, or with --no-wait in the nightly's "
                   "args stops: exit 3)")
    s.add_argument("--partition", default="service",
                   help="scrontab: the partition the nightly's own job runs in (default "
                   "service)")
    s.add_argument("--runner-tag", default="mpimatrix",
                   help="gitlab: the tag of the runner on the login node")
    s.add_argument("--time-limit", default="6h",
                   help="the longest a night may take, 90m or 6h (default 6h)")
    s.set_defaults(func=cmd_schedule)
