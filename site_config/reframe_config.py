"""ReFrame configuration generated from the builds (use: reframe -C site_config/reframe_config.py).

Systems, partitions and one environment per MPI build come from
mpimatrix.site.config: a Spack lock when a Spack environment is active (or
MPIMATRIX_LOCK is set), an explicit builds file (MPIMATRIX_BUILDS), or else the
MPIs discovered on this machine. Performance runs are serial: every mode uses
--exec-policy=serial and every partition max_jobs=1.
"""

import os
import sys

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("MPIMATRIX_HOME", _root)
try:
    import mpimatrix  # noqa: F401
except ImportError:  # not installed: use the source tree
    sys.path.insert(0, os.path.join(_root, "src"))

from mpimatrix.site.config import build_config  # noqa: E402
from mpimatrix.site_settings import apply_current  # noqa: E402

apply_current()  # site_config/site.yaml, for `reframe -C` started by hand too
site_configuration = build_config()
