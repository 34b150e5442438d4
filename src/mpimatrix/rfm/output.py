"""The program's output as a check reads it: parsed once, re-read while the job runs.

A check defines (checked when ReFrame instantiates it, i.e. when it loads the file):

- `parse_output()`: the program's output parsed (from `stdout_text()`/`stderr_text()`);
  used from the sanity phase on (`parsed`), and while the job runs (limits.py
  `output_complete_now`, for the hang watch of rfm/squeue_all.py);
- `results_complete()`: whether the output holds every result the program had to print;
  tells a hang on the way out (after the results) from one in the middle of the work
  (outcome.py, at the end of the run phase; limits.py, while it runs).

Both are abstract methods: a check class that lacks one cannot be instantiated (ReFrame
reports a TypeError naming it when it loads the file). `CheckMeta` adds abc's metaclass
to ReFrame's, as ReFrame does for its own build systems (reframe.core.buildsystems).
"""

from __future__ import annotations

import abc
import os

import reframe as rfm
from reframe.core.meta import RegressionTestMeta


class CheckMeta(RegressionTestMeta, abc.ABCMeta):
    """ReFrame's test metaclass, with abstract methods enforced."""


class OutputMixin(rfm.RegressionTestPlugin, metaclass=CheckMeta):
    @abc.abstractmethod
    def parse_output(self):
        """The program's output, parsed (read it through `parsed`: once per test case)."""

    @abc.abstractmethod
    def results_complete(self) -> bool:
        """Whether the program printed everything it had to (usually from `parsed`)."""

    @property
    def parsed(self):
        """parse_output(), once per test case (until forget_parsed_output())."""
        if not hasattr(self, "_parsed_output"):
            self._parsed_output = self.parse_output()
        return self._parsed_output

    def forget_parsed_output(self) -> None:
        """Drop the cached parse: the next `parsed` parses the output again (as it is
        then, e.g. while the program still runs)."""
        vars(self).pop("_parsed_output", None)

    def _job_file_text(self, name) -> str:
        try:
            with open(os.path.join(self.stagedir, str(name.evaluate())), errors="replace") as fp:
                return fp.read()
        except OSError:
            return ""

    def stdout_text(self) -> str:
        return self._job_file_text(self.stdout)

    def stderr_text(self) -> str:
        return self._job_file_text(self.stderr)
