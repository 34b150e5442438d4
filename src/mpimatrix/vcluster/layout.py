"""Names, addresses and files of one emulated cluster (pure: no side effects).

Everything the cluster generates lives in one directory (default
<project>/results/cluster, or MPIMATRIX_CLUSTER_DIR, or --dir). The
namespaces are anonymous: each is held by a small holder process, so it dies
with its processes and nothing is left under /run/netns, and two clusters in
two directories cannot clash.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..paths import project_root

SUBNET = "10.77.0"  # /24, exists only inside the cluster's namespaces
HEAD_ADDR = f"{SUBNET}.1"
MAX_NODES = 8
BRIDGE = "br0"
# Unix socket paths (munge socket, slurmd step sockets under spool/<node>/)
# must stay below 108 bytes.
MAX_DIR_LEN = 64


class ClusterError(Exception):
    """The cluster cannot do what was asked; the message says why and what to do."""


def default_dir() -> Path:
    env = os.environ.get("MPIMATRIX_CLUSTER_DIR")
    return Path(env) if env else project_root() / "results" / "cluster"


@dataclass(frozen=True)
class Layout:
    dir: Path
    nodes: int = 2

    @classmethod
    def at(cls, directory: str | os.PathLike | None = None, nodes: int = 2) -> Layout:
        d = Path(directory) if directory else default_dir()
        d = d.absolute()
        if len(str(d)) > MAX_DIR_LEN:
            raise ClusterError(f"cluster directory {d} is too long ({len(str(d))} > "
                               f"{MAX_DIR_LEN} characters) for the Unix sockets inside it; "
                               "choose a shorter one with --dir or MPIMATRIX_CLUSTER_DIR")
        if not 1 <= nodes <= MAX_NODES:
            raise ClusterError(f"{nodes} nodes: choose 1..{MAX_NODES}")
        return cls(d, nodes)

    # -- names ---------------------------------------------------------------------
    @property
    def node_names(self) -> list[str]:
        return [f"node{i}" for i in range(1, self.nodes + 1)]

    @property
    def members(self) -> list[str]:
        """head first, then the compute nodes."""
        return ["head", *self.node_names]

    def address(self, member: str) -> str:
        if member == "head":
            return HEAD_ADDR
        return f"{SUBNET}.{10 + int(member.removeprefix('node'))}"

    @staticmethod
    def veth(member: str) -> str:
        """Name of the bridge-side end of a node's link (in the head namespace)."""
        return "v" + member  # vnode1 ...; the node side is eth0

    # -- files -----------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def etc(self) -> Path:
        return self.dir / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def hosts_file(self) -> Path:
        return self.etc / "hosts"

    def boot_id_file(self, member: str) -> Path:
        return self.etc / f"boot_id.{member}"

    @property
    def munge_dir(self) -> Path:
        return self.dir / "munge"

    @property
    def munge_key(self) -> Path:
        return self.munge_dir / "munge.key"

    @property
    def munge_socket(self) -> Path:
        return self.munge_dir / "munge.socket.2"

    @property
    def run_dir(self) -> Path:
        return self.dir / "run"

    @property
    def log_dir(self) -> Path:
        return self.dir / "log"

    @property
    def state_save(self) -> Path:
        return self.dir / "slurmctld"

    def spool(self, node: str) -> Path:
        return self.dir / "spool" / node

    def node_tmp(self, node: str) -> Path:
        return self.dir / "nodetmp" / node

    def ready_file(self, member: str) -> Path:
        return self.run_dir / f"{member}.ready"

    def log(self, name: str) -> Path:
        return self.log_dir / f"{name}.log"

    def generated_dirs(self) -> list[Path]:
        """What `down` removes (logs are kept for post-mortems)."""
        return [self.etc, self.munge_dir, self.run_dir, self.state_save,
                self.dir / "spool", self.dir / "nodetmp"]
