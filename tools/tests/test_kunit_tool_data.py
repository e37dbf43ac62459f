"""cpuhpk.ktap against kunit_tool's own parser on kunit_tool's own test data.

Reads tools/testing/kunit/test_data/*.log of the cached 6.12 tree and
compares, case by case, the status our parser gives with kunit_parser's.
Every difference is listed in DIFFERENCES with the reason. Skipped, saying
so, when no tree is cached (make prepare makes one).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import unittest
from pathlib import Path
from typing import Any, Dict, Optional

from cpuhpk import ktap, say, tree

# kunit_parser's status name -> ours.
STATUS = {'SUCCESS': 'PASS', 'FAILURE': 'FAIL', 'SKIPPED': 'SKIP',
          'TEST_CRASHED': 'CRASHED', 'NO_TESTS': 'EMPTY'}
DIFFERENCES = {
    'test_kernel_panic_interrupt.log':
        'the console ends (panic) inside a suite planned with 3 cases after 1 result: '
        "kunit_parser reports one CRASHED case named '' (it drops the names), we report "
        'each planned case that never reported, #2 and #3, as crashed',
}


def kunit_tool() -> Optional[Path]:
    try:
        path = tree.tree_path('6.12') / 'tools' / 'testing' / 'kunit'
    except say.PrepareError:
        return None
    return path if (path / 'kunit_parser.py').is_file() else None


def theirs(test: Any, prefix: str = '') -> Dict[str, str]:
    out: Dict[str, str] = {}
    for t in test.subtests:
        name = f'{prefix}{t.name}'
        if t.subtests:
            out.update(theirs(t, name + '.'))
        else:
            out[name] = STATUS.get(t.status.name, t.status.name)
    return out


class KunitToolDataTest(unittest.TestCase):
    def test_same_statuses_as_kunit_parser(self) -> None:
        path = kunit_tool()
        if path is None:
            self.skipTest('no cached 6.12 tree (make prepare): kunit_tool test data not here')
        sys.path.insert(0, str(path))
        try:
            # kunit_printer binds sys.stdout when imported: keep its summary quiet.
            with contextlib.redirect_stdout(io.StringIO()):
                parser: Any = importlib.import_module('kunit_parser')
        finally:
            sys.path.remove(str(path))
        logs = sorted((path / 'test_data').glob('*.log'))
        self.assertGreater(len(logs), 10)
        for log in logs:
            with self.subTest(log=log.name):
                lines = log.read_text(errors='replace').splitlines()
                with contextlib.redirect_stdout(io.StringIO()):
                    want = theirs(parser.parse_run_tests(lines))
                got = {n: t.status.name for n, t in
                       ktap.cases(ktap.parse(ktap.extract(lines)))}
                if log.name in DIFFERENCES:
                    self.assertNotEqual(got, want, f'{log.name} no longer differs: '
                                        'drop it from DIFFERENCES')
                else:
                    self.assertEqual(got, want)


if __name__ == '__main__':
    unittest.main()
