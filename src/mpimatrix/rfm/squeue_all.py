"""ReFrame scheduler `squeue-all`: the `squeue` backend, seeing finished jobs too.

ReFrame's `squeue` backend (for Slurm without accounting) polls
`squeue -h -j IDS`, which lists only pending and running jobs. A job that ends
before the first poll (2 s after submission; most placement checks here take
0.3 s) is then never seen: ReFrame assumes COMPLETED, and the job's node list
stays unknown (`job_nodelist` = ['None'] in the report and the results DB), a
failed job (FAILED, NODE_FAIL, TIMEOUT) looks completed. With `-t all`
squeue also reports jobs that ended less than MinJobAge (300 s) ago, with
their final state and node list.
"""

from __future__ import annotations

from reframe.core.backends import register_scheduler
from reframe.core.exceptions import ConfigError
from reframe.core.schedulers.slurm import SqueueJobScheduler

NAME = "squeue-all"


class SqueueAllJobScheduler(SqueueJobScheduler):
    def __init__(self):
        super().__init__()
        self._squeue += " -t all"


try:
    register_scheduler(NAME)(SqueueAllJobScheduler)
except ConfigError:  # already registered in this process
    pass
