"""What the recorded consoles of tests/data/ were asked to run.

The recordings of make run, make run CONFIG=debug, make coverage and of the
mutant runs predate the cpuhp_sweep suite (sweep_default_console.log has it):
judged against today's kunit/ sources they would miss it.
"""

from __future__ import annotations

from typing import Dict

from cpuhpk import run, verdict

SUITES = ('cpuhp_install', 'cpuhp_rollback', 'timekeeping_crosststamp')
_expectations = run.expectations


def expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                 userspace: bool = False) -> verdict.Expectations:
    """run.expectations() narrowed to the suites the recordings hold."""
    exp = _expectations(filter_glob, context, strict, userspace)
    if exp.cases is not None and not filter_glob:
        exp.cases = {s: c for s, c in exp.cases.items() if s in SUITES}
    return exp
