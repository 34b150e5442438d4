"""Can this process build the cluster? Root, CAP_SYS_ADMIN, CAP_NET_ADMIN, the tools."""

from __future__ import annotations

import os
import shutil
import subprocess

from .layout import ClusterError

CAP_NET_ADMIN = 12
CAP_SYS_ADMIN = 21

# command -> Debian package
TOOLS = {
    "slurmctld": "slurmctld (slurm-wlm)",
    "slurmd": "slurmd (slurm-wlm)",
    "sinfo": "slurm-client",
    "srun": "slurm-client",
    "sbatch": "slurm-client",
    "squeue": "slurm-client",
    "scontrol": "slurm-client",
    "munged": "munge",
    "ip": "iproute2",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "mount": "mount",
}


def effective_caps(pid: str = "self") -> int:
    with open(f"/proc/{pid}/status") as fp:
        for line in fp:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def tool(cmd: str) -> str:
    """Absolute path of a command, also looking in /usr/sbin and /sbin (daemons live
    there, and a non-login root shell may not have them on PATH)."""
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/bin:/bin"
    return shutil.which(cmd, path=path) or cmd


def missing_tools() -> list[str]:
    return [f"{cmd} ({pkg})" for cmd, pkg in TOOLS.items() if tool(cmd) == cmd]


def root_problem() -> str:
    if os.geteuid() != 0:
        return (f"must run as root (uid is {os.geteuid()}): the cluster creates network, "
                "UTS and mount namespaces and runs slurmd, which must be root")
    return ""


def problems() -> list[str]:
    """Why the cluster cannot be built here (empty list: it can)."""
    out = [root_problem()] if root_problem() else []
    caps = effective_caps()
    lacking = [name for bit, name in ((CAP_SYS_ADMIN, "CAP_SYS_ADMIN"),
                                      (CAP_NET_ADMIN, "CAP_NET_ADMIN"))
               if not caps >> bit & 1]
    if lacking:
        out.append(f"lacks {' and '.join(lacking)} (CapEff={caps:#x}); in a container "
                   "use --privileged or --cap-add SYS_ADMIN --cap-add NET_ADMIN")
    tools = missing_tools()
    if tools:
        out.append("missing commands: " + ", ".join(tools) + "; install with: apt-get "
                   "install slurm-wlm munge libpmix2 iproute2 util-linux")
    if not out:
        # Capabilities can be present and namespaces still refused (seccomp,
        # AppArmor, user namespaces): try it.
        try:
            proc = subprocess.run(["unshare", "--net", "--uts", "--mount", "true"],
                                  capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as err:
            out.append(f"cannot run unshare: {err}")
        else:
            if proc.returncode != 0:
                out.append("cannot create namespaces (`unshare --net --uts --mount true`: "
                           f"{proc.stderr.strip() or proc.returncode}); a seccomp or "
                           "AppArmor profile may forbid it")
    return out


def require() -> None:
    why = problems()
    if why:
        raise ClusterError("the emulated cluster cannot run here: " + "; ".join(why))


def require_root(what: str) -> None:
    """Stopping or killing the cluster's processes needs root too (they are root's)."""
    if root_problem():
        raise ClusterError(f"cannot {what}: {root_problem()}")
