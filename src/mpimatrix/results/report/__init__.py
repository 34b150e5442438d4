"""The HTML report of stored sessions (and its Markdown summary).

Sessions in (ReFrame JSON reports or sessions of the results database, one system);
`make_report` returns a self-contained page (plots embedded as PNG, no network needed)
and a short Markdown summary:

1. front page: the verdict, regressions, values not gated and why, failed and skipped
   builds, provenance (system, lock, builds, versions, nodes, sessions) -- front.py;
2. per benchmark: value vs message size with the min/median/max band over the runs,
   intranode beside internode, references, every build on one plot (family colour,
   fabric dash, compiler marker) -- curves.py, styles.py;
   the families side by side: each axis' effect (fabric, compiler, version, family)
   between builds that differ in it alone, with bootstrap intervals -- axes.py, effects.py;
3. collectives across layouts and the intranode/internode crossover -- layouts.py;
4. build vs build, marked only beyond the measured spread -- compare.py;
5. nightly trends with the reference band and change points -- trend.py;
6. node-hours and cost per build, and the fabric cost comparison (minutes and cost of
   each build on two fabrics) -- cost.py.

The gate's verdicts are the night's (results.night.judge_night); `change_points`
(trend.ChangePoint) from the history is a seam, optional.
"""

from .assemble import Report, make_report
from .cost import Price
from .model import load
from .page import write
from .trend import ChangePoint

__all__ = ["ChangePoint", "Price", "Report", "load", "make_report", "write"]
