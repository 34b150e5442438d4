"""`mpimatrix cluster ...`: the emulated multi-node Slurm cluster.

  up [-n N] [--dir DIR] [--force]  start head + N nodes (idempotent), wait until idle;
                              restarts a degraded cluster, not over work in head
                              unless --force
  down [--dir DIR]            stop everything it started, remove its namespaces
  status [--json]             members, processes, sinfo
  exec MEMBER [--user NAME] -- CMD...
                              run CMD on head or nodeN (SLURM_CONF set); as the
                              account NAME, in its home, as `ssh` to the node would
  reframe -- ARGS...          the project's ReFrame in the head namespace
  run -- ARGS...              `mpimatrix run ARGS` in the head namespace, e.g.
                              run -- --only impi --partition 'compute$' -- -n Imb
  kill NODE [--slurmd-only]   failure injection: SIGKILL a node's processes

--dir may also come right after MEMBER (exec) or before `--` (reframe, run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..vcluster.layout import ClusterError, Layout, default_dir
from ..vcluster.privileges import tool


def _lay(args, nodes: int | None = None) -> Layout:
    from ..vcluster.cluster import load_state

    if nodes is None:
        state = load_state(Layout.at(args.dir))
        nodes = state["nodes"] if state else 2
    return Layout.at(args.dir, nodes)


def cmd_up(args) -> int:
    from ..vcluster.cluster import up
    from ..vcluster.health import RESTART, assess

    lay = _lay(args, args.nodes)
    plan = assess(lay)
    if plan["action"] == RESTART and (args.force or not plan["work"]):
        what = "half-started" if plan.get("phase") != "up" else "degraded"
        print(f"cluster in {lay.dir} is {what} (dead: {', '.join(plan['dead']) or '-'}): "
              "restarting it from scratch (every daemon and job of it stops)", flush=True)
        if plan["work"]:
            print("  killing what runs in head (--force): " + "; ".join(plan["work"]),
                  flush=True)
    st = up(lay, timeout=args.timeout, force=args.force, cron=args.cron)
    what = {"reuse": "already up (nothing to do)", "restart": "restarted"}.get(
        st["action"], "up")
    print(f"cluster {what}: {st['nodes']} node(s) in {st['dir']} "
          f"({st['up_seconds']:.2f} s)")
    _print_nodes(st)
    print("use: mpimatrix cluster exec head -- sinfo   |   mpimatrix cluster reframe -- "
          "-n MpiPlacementCheck -r")
    return 0


def cmd_down(args) -> int:
    from ..vcluster.cluster import down

    res = down(Layout.at(args.dir))
    if not res["was_up"]:
        extra = f" (killed stray {res['killed_stray']})" if res.get("killed_stray") else ""
        print(f"no cluster in {Layout.at(args.dir).dir}{extra}")
        return 0
    if res["left"]:
        print(f"down in {res['down_seconds']:.2f} s, but processes {res['left']} survived "
              "SIGKILL", file=sys.stderr)
        return 1
    print(f"cluster down ({res['down_seconds']:.2f} s)")
    return 0


def _print_nodes(st: dict) -> None:
    for m, info in st["members"].items():
        procs = [p for p in st["processes"] if p["name"].endswith("@" + m)
                 or (m == "head" and "@" not in p["name"])]
        daemons = ", ".join(f"{p['name'].split('@')[0]}={p['pid']}"
                            + ("" if p["alive"] else "(dead)") for p in procs)
        slurm = st["sinfo"].get(m, "")
        print(f"  {m:6} {info['address']:11} {slurm:10} {daemons}")


def cmd_status(args) -> int:
    from ..vcluster.cluster import status

    st = status(Layout.at(args.dir))
    if args.json:
        print(json.dumps(st, indent=2))
    elif st["phase"] == "down":
        print(f"no cluster in {st['dir']}")
    else:
        dead = [p["name"] for p in st["processes"] if not p["alive"]]
        health = "up" if st["up"] else f"DEGRADED ({st['phase']}; dead: {', '.join(dead)})"
        print(f"cluster {health}: {st['nodes']} node(s) in {st['dir']}")
        _print_nodes(st)
    return 0 if st["up"] else 3


def own_options(args, argv: list[str]) -> list[str]:
    """Take `--dir X` / `--dir=X` (and `--user`) from the front of a command's argv (argparse leaves
    options after a positional in the remainder), then a `--`; the rest is the
    command's."""
    argv = list(argv)
    while argv and argv[0] != "--":
        name, eq, value = argv[0].partition("=")
        own = ("--dir", "--user") if hasattr(args, "user") else ("--dir",)
        if name not in own or not (eq or len(argv) > 1):
            break
        if not eq:
            value, argv = argv[1], argv[1:]
        setattr(args, name[2:], value)
        argv = argv[1:]
    return argv[1:] if argv[:1] == ["--"] else argv


def as_account(name: str, argv: list[str]) -> tuple[list[str], str]:
    """argv run as the account `name` with its login environment (HOME, USER, SHELL,
    PATH; nothing of the caller's), and its home."""
    import pwd

    try:
        account = pwd.getpwnam(name)
    except KeyError:
        raise ClusterError(f"no account {name!r} on this machine (useradd -m {name})") from None
    setpriv = [tool("setpriv"), f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
               "--init-groups", "--reset-env", "--"]
    return [*setpriv, *(argv or [account.pw_shell or "/bin/sh", "-l"])], account.pw_dir


def _exec(lay: Layout, member: str, argv: list[str], user: str = "") -> int:
    from ..vcluster.cluster import command, env_for

    wd = None
    if user:
        argv, wd = as_account(user, argv)
    if not argv:
        argv = [os.environ.get("SHELL", "/bin/bash")]
    full = command(lay, member, argv, wd=wd)
    sys.stdout.flush()
    os.execvpe(full[0], full, env_for(lay))
    return 127  # not reached


def cmd_exec(args) -> int:
    argv = own_options(args, args.argv)
    return _exec(_lay(args), args.member, argv, args.user or "")


def cmd_reframe(args) -> int:
    from ..run.reframe_cmd import reframe_cmd

    argv = own_options(args, args.argv)
    return _exec(_lay(args), "head", reframe_cmd(*argv))


def cmd_run(args) -> int:
    """`mpimatrix run ARGS` in the head: ARGS are mpimatrix run's (--mode, --only,
    --partition, then `--` and ReFrame's)."""
    argv = own_options(args, args.argv)
    exe = os.path.join(os.path.dirname(sys.executable), "mpimatrix")
    return _exec(_lay(args), "head", [exe, "run", *argv])


def cmd_kill(args) -> int:
    from ..vcluster.cluster import kill_node

    pids = kill_node(_lay(args), args.node, slurmd_only=args.slurmd_only)
    print(f"{args.node}: killed {len(pids)} process(es) {pids}")
    return 0


def register(subparsers) -> None:
    p = subparsers.add_parser("cluster", help="emulated multi-node Slurm cluster "
                              "(namespaces; root)", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cluster_cmd", required=True)

    def add(name, func, hlp):
        s = sub.add_parser(name, help=hlp)
        s.add_argument("--dir", default=None,
                       help=f"cluster directory (default {default_dir()}; env "
                       "MPIMATRIX_CLUSTER_DIR)")
        s.set_defaults(func=_guard(func))
        return s

    s = add("up", cmd_up, "start the cluster (idempotent)")
    s.add_argument("-n", "--nodes", type=int, default=2, help="compute nodes (default 2)")
    s.add_argument("--timeout", type=float, default=60.0,
                   help="seconds to wait for the nodes to be idle")
    s.add_argument("--force", action="store_true",
                   help="restart a degraded cluster even over work running in head")
    s.add_argument("--cron", action="store_true",
                   help="also run cron on head, the login node: the accounts' crontabs "
                   "(a nightly scheduled with `crontab`) run there")
    add("down", cmd_down, "stop the cluster and remove everything it created")
    s = add("status", cmd_status, "show members, processes and Slurm node states")
    s.add_argument("--json", action="store_true")
    s = add("exec", cmd_exec, "run a command on head or nodeN")
    s.add_argument("--user", metavar="NAME",
                   help="as this account (its login environment, in its home), as `ssh "
                   "NAME@head` would on a real cluster")
    s.add_argument("member", help="head, node1, node2, ...")
    s.add_argument("argv", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    s = add("reframe", cmd_reframe, "run the project's ReFrame inside the head namespace")
    s.add_argument("argv", nargs=argparse.REMAINDER, help="-- REFRAME ARGS...")
    s = add("run", cmd_run, "run `mpimatrix run` inside the head namespace")
    s.add_argument("argv", nargs=argparse.REMAINDER,
                   help="-- ARGS of mpimatrix run (--mode, --only, --partition, -- REFRAME "
                   "ARGS)")
    s = add("kill", cmd_kill, "failure injection: SIGKILL every process of a node")
    s.add_argument("node", help="node1, node2, ...")
    s.add_argument("--slurmd-only", action="store_true", help="kill only its slurmd")


def _guard(func):
    def wrapped(args):
        try:
            return func(args)
        except ClusterError as err:
            print(f"mpimatrix cluster: {err}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # e.g. `mpimatrix cluster up | head -1`
            sys.stdout = open(os.devnull, "w")
            return 0
    return wrapped
