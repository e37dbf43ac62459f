"""Tests for cpuhpk.coverage: the gcov transfer over the console and the lcov parsing."""

from __future__ import annotations

import base64
import hashlib
import io
import tarfile
import tempfile
import unittest
from pathlib import Path

from cpuhpk import coverage, tree

INFO = """SF:/src/kernel/cpu.c
FN:10,cpuhp_issue_call
FN:20,helper
FNDA:3,cpuhp_issue_call
FNDA:0,helper
DA:10,3
DA:11,3
DA:12,0
DA:20,0
DA:21,0
BRDA:11,0,0,2
BRDA:11,0,1,-
end_of_record
"""


def console_with(build: Path, payload: bytes, damage: bool = False) -> str:
    """A console log as the guest prints it: marker with sha256, base64, marker."""
    buf = io.BytesIO()
    rel = str(build / 'kernel' / 'cpu.gcda').lstrip('/')
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        info = tarfile.TarInfo('./' + rel)
        info.size = len(payload)
        tar.addfile(info, io.BytesIO(payload))
    blob = buf.getvalue()
    b64 = base64.encodebytes(blob).decode().splitlines()
    if damage:
        b64[0] = b64[0][:-4]
    return '\n'.join(['boot noise', f'{coverage.BEGIN} {hashlib.sha256(blob).hexdigest()}  -',
                      *b64, coverage.END, 'reboot: Restarting system']) + '\n'


class GcdaTransferTest(unittest.TestCase):
    def test_roundtrip_into_the_build_directory(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp) / 'build'
            (build / 'kernel').mkdir(parents=True)
            console = Path(tmp) / 'console.log'
            console.write_text(console_with(build, b'gcda bytes'))
            written = coverage.extract_gcda(console, build)
            self.assertEqual(written, [(build / 'kernel' / 'cpu.gcda').resolve()])
            self.assertEqual(written[0].read_bytes(), b'gcda bytes')

    def test_damaged_transfer_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp) / 'build'
            (build / 'kernel').mkdir(parents=True)
            console = Path(tmp) / 'console.log'
            console.write_text(console_with(build, b'gcda bytes', damage=True))
            with self.assertRaisesRegex(tree.PrepareError, 'damaged'):
                coverage.extract_gcda(console, build)

    def test_no_data_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            console = Path(tmp) / 'console.log'
            console.write_text('Kernel panic - not syncing\n')
            with self.assertRaisesRegex(tree.PrepareError, 'no gcov data'):
                coverage.extract_gcda(console, Path(tmp))


class InfoTest(unittest.TestCase):
    def test_parse_and_function_lines(self) -> None:
        cov = coverage.parse_info(INFO)['/src/kernel/cpu.c']
        self.assertEqual(cov.lines, (2, 5))
        self.assertEqual(cov.functions, (1, 2))
        self.assertEqual(cov.branches, (1, 2))
        self.assertEqual(coverage.function_lines(cov, 'cpuhp_issue_call'), (2, 3))
        self.assertEqual(coverage.function_lines(cov, 'helper'), (0, 2))

    def test_gate(self) -> None:
        files = coverage.parse_info(INFO)
        self.assertEqual(coverage.gate(files, {'kernel/cpu.c': (40.0, 50.0)}), [])
        self.assertEqual(coverage.gate(files, {'kernel/cpu.c': (41.0, 50.0)}),
                         ['kernel/cpu.c: line coverage 40.0% < 41.0%'])
        self.assertEqual(coverage.gate(files, {'kernel/time/timekeeping.c': (1.0, 1.0)}),
                         ['kernel/time/timekeeping.c: no coverage data'])


if __name__ == '__main__':
    unittest.main()
