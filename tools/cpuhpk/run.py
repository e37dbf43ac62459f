"""`make run`: prepare the tree, build and boot it with kunit.py, judge the result.
`make judge`: the same verdict on a console log captured anywhere.

The options (runspec.parser()) make a RunSpec: make judge judges its
console (outputs.judge_file()), make run runs it (execute.execute()).

Every run also yields the coverage of kernel/cpu.c and timekeeping.c: the
kernel profiles those two objects and its initramfs prints the gcov data
after the suites and the user-space test (tools/cpuhpk/gcov.py).

Writes to out/<KVER>[-<CONFIG>]/ (make judge: out/judge/):
  console.log   the whole kernel console (kunit.py's test.log); ISOLATE=: the
                console of each boot, each after a line 'cpuhp-kunit: boot
                <i>/<n> of kunit.py --run_isolated=<suite|test>'
  results.ktap  the KTAP the kernel printed, console prefix removed (ISOLATE=:
                each boot's, one document after the other)
  results.json  kunit.py --json (make run only: kunit.py's own view); when
                kernel lines inside the KTAP derailed kunit.py's parser,
                its parse of the KTAP lines alone (results-ktap-only.*)
                and the derailed one in results-derailed.json
  verdict.json  our verdict: pass/fail, counts, every problem with its category,
                title and key; kernel reports decoded against the run's
                vmlinux (make judge: VMLINUX=) when it has debug info (decode.py)
  junit.xml     one testcase per KUnit case (or parameter), plus one per
                problem of the run as a whole; red in it whenever the verdict is
  kunit.log     what kunit.py printed (config, build, summary)
  coverage.info lcov tracefile of the two files; summary.txt, html/ from it;
                coverage-sources.json the digest of the sources it describes
                (buildstamp.source_digest(): make mutate reads it)
  kcidb.json    the run for KernelCI's KCIDB (kcidb.py, schema in tools/kcidb/)
Exit status 0 only when the verdict has no problem (verdict.py).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import execute, outputs, runspec  # noqa: E402
from cpuhpk.runspec import RunSpec  # noqa: E402


def main(argv: Sequence[str]) -> int:
    ap = runspec.parser()
    spec = RunSpec.from_args(ap.parse_args(argv))
    problem = spec.errors()
    if problem:
        ap.error(problem)
    if spec.console is not None:
        return outputs.judge_file(spec)
    return execute.execute(spec)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
