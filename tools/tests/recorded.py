"""What the recorded consoles of tests/data/ were asked to run.

The recordings of make run, make run CONFIG=debug, make coverage and of the
mutant runs predate the cpuhp_sweep suite (sweep_default_console.log has it)
and today's cases: judged against today's kunit/ sources they would miss
them. data/recorded_cases.json holds the cases the kunit/ sources declared
when they were recorded (verdict.declared_cases() of kunit/ at 9914cd4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence

from cpuhpk import run, verdict

SUITES = ('cpuhp_install', 'cpuhp_rollback', 'timekeeping_crosststamp')
CASES: Dict[str, List[str]] = json.loads(
    (Path(__file__).parent / 'data' / 'recorded_cases.json').read_text())
_expectations = run.expectations


SWEEP_SUITES = SUITES + ('cpuhp_sweep',)


def expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                 userspace: bool = False,
                 suites: Sequence[str] = SUITES) -> verdict.Expectations:
    """run.expectations() narrowed to the suites the recordings hold."""
    exp = _expectations(filter_glob, context, strict, userspace)
    if exp.cases is not None:
        exp.cases = verdict.filtered({s: c for s, c in CASES.items()
                                      if s in suites or filter_glob}, filter_glob)
    return exp
