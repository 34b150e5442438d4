"""The program's output as a check reads it: parsed once, re-read while the job runs.

A check defines (checked when ReFrame instantiates it, i.e. when it loads the file):

- `parse_output()`: the program's output parsed (from `stdout_text()`/`stderr_text()`);
  used from the sanity phase on (`parsed`), and while the job runs (limits.py
  `output_complete_now`, for the hang watch of rfm/squeue_all.py);
- `results_complete()`: whether the output holds every result the program had to print;
  tells a hang on the way out (after the results) from one in the middle of the work
  (check_outcome.py, at the end of the run phase; limits.py, while it runs).

Both are contract methods: a check class that lacks one fails in its post-init hook
`keep_the_contract`, i.e. when ReFrame loads the file, with a TypeError naming them. (Not
abc's abstract methods: an abc metaclass breaks the classes ReFrame derives from a check
for `--repeat`, `KeyError: 'deferrable'`, which the confirmation runs use.)
"""

from __future__ import annotations

import functools
import os

import reframe as rfm
from reframe.core.builtins import run_after


def contract_method(fn):
    """A method every check must define; the mixin's own is a placeholder that fails."""
    @functools.wraps(fn)
    def placeholder(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define {fn.__name__}() "
                                  "(the checks' contract: rfm/build_check.py)")
    placeholder.contract_placeholder = True
    return placeholder


def undefined_contract_methods(cls) -> list[str]:
    """The contract methods a check class leaves to the mixins' placeholders."""
    seen, missing = set(), []
    for base in cls.__mro__:
        for name, obj in vars(base).items():
            if name not in seen:
                seen.add(name)
                if getattr(obj, "contract_placeholder", False):
                    missing.append(name)
    return sorted(missing)


class OutputMixin(rfm.RegressionTestPlugin):
    @contract_method
    def parse_output(self):
        """The program's output, parsed (read it through `parsed`: once per test case)."""

    @contract_method
    def results_complete(self) -> bool:
        """Whether the program printed everything it had to (usually from `parsed`)."""

    @run_after("init")
    def keep_the_contract(self):
        missing = undefined_contract_methods(type(self))
        if missing:
            raise TypeError(f"{type(self).__name__} does not define {', '.join(missing)} "
                            "(the checks' contract: rfm/build_check.py, docs/develop.md)")

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
