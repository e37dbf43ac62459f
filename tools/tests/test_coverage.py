"""Tests for cpuhpk.coverage: the gcov transfer over the console and the lcov parsing."""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import io
import tarfile
import tempfile
import unittest
from unittest import mock
from pathlib import Path
from typing import List, Optional

from cpuhpk import (arch, coverage, execute, gcov, guest, hygiene, kunitspec, outputs, runspec, say,
                    verdict)
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec

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


def console_with(build: Path, payload: bytes, damage: bool = False,
                 members: Optional[List[tarfile.TarInfo]] = None) -> str:
    """A console log as the guest prints it: marker with sha256, base64, marker."""
    buf = io.BytesIO()
    rel = str(build / 'kernel' / 'cpu.gcda').lstrip('/')
    with tarfile.open(fileobj=buf, mode='w:gz') as tar:
        for info in members or [tarfile.TarInfo('./' + rel)]:
            if info.isfile():
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            else:
                tar.addfile(info)
    blob = buf.getvalue()
    b64 = base64.encodebytes(blob).decode().splitlines()
    if damage:
        b64[0] = b64[0][:-4]
    return '\n'.join(['boot noise', f'{gcov.BEGIN} {hashlib.sha256(blob).hexdigest()}  -',
                      *b64, gcov.END, 'reboot: Restarting system']) + '\n'


class GcdaTransferTest(unittest.TestCase):
    def test_roundtrip_into_the_build_directory(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp) / 'build'
            (build / 'kernel').mkdir(parents=True)
            console = Path(tmp) / 'console.log'
            console.write_text(console_with(build, b'gcda bytes'))
            written = gcov.extract_gcda(console, build)
            self.assertEqual(written, [build.absolute() / 'kernel' / 'cpu.gcda'])
            self.assertEqual(written[0].read_bytes(), b'gcda bytes')

    def test_damaged_transfer_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp) / 'build'
            (build / 'kernel').mkdir(parents=True)
            console = Path(tmp) / 'console.log'
            console.write_text(console_with(build, b'gcda bytes', damage=True))
            with self.assertRaisesRegex(say.PrepareError, 'damaged'):
                gcov.extract_gcda(console, build)

    def test_no_data_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            console = Path(tmp) / 'console.log'
            console.write_text('Kernel panic - not syncing\n')
            with self.assertRaisesRegex(say.PrepareError, 'no gcov data'):
                gcov.extract_gcda(console, Path(tmp))


class HostileArchiveTest(unittest.TestCase):
    """The gcda archive comes from the guest: nothing outside the build directory."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.root = Path(self._tmp.name)
        self.build = self.root / 'build'
        (self.build / 'kernel').mkdir(parents=True)
        self.inside = './' + str(self.build / 'kernel').lstrip('/')

    def refused(self, members: List[tarfile.TarInfo], why: str, payload: bytes = b'x') -> None:
        console = self.root / 'console.log'
        console.write_text(console_with(self.build, payload, members=members))
        before = sorted(p for p in self.root.rglob('*') if p.name != 'console.log')
        with self.assertRaises(say.PrepareError) as cm:
            gcov.extract_gcda(console, self.build)
        self.assertIn(why, str(cm.exception))
        self.assertNotIn('\n', str(cm.exception))
        self.assertEqual(sorted(p for p in self.root.rglob('*') if p.name != 'console.log'),
                         before)

    def test_absolute_name(self) -> None:
        self.refused([tarfile.TarInfo(str(self.build / 'kernel' / 'cpu.gcda'))], 'unsafe name')

    def test_dot_dot(self) -> None:
        self.refused([tarfile.TarInfo(self.inside + '/../../../evil.gcda')], 'unsafe name')

    def test_links_and_devices(self) -> None:
        for kind in (tarfile.SYMTYPE, tarfile.LNKTYPE, tarfile.CHRTYPE, tarfile.FIFOTYPE):
            with self.subTest(kind=kind):
                info = tarfile.TarInfo(self.inside + '/cpu.gcda')
                info.type = kind
                info.linkname = '/etc/passwd'
                self.refused([info], 'not a regular file')

    def test_outside_the_build_directory(self) -> None:
        self.refused([tarfile.TarInfo('./' + str(self.root / 'x.gcda').lstrip('/'))],
                     'outside the build directory')

    def test_not_gcda(self) -> None:
        self.refused([tarfile.TarInfo(self.inside + '/cpu.o')], 'not a .gcda file')

    def test_too_large(self) -> None:
        members = [tarfile.TarInfo(f'{self.inside}/f{i}.gcda') for i in range(3)]
        with mock.patch.object(gcov, 'MAX_GCDA_BYTES', 2 << 20):
            self.refused(members, 'more than 2 MiB', payload=b'\0' * (1 << 20))

    def test_link_in_the_build_directory_is_not_followed(self) -> None:
        target = self.root / 'victim'
        target.write_text('keep')
        (self.build / 'kernel' / 'cpu.gcda').symlink_to(target)
        console = self.root / 'console.log'
        console.write_text(console_with(self.build, b'gcda'))
        with self.assertRaises(OSError):
            gcov.extract_gcda(console, self.build)
        self.assertEqual(target.read_text(), 'keep')


class SelftestStatusTest(unittest.TestCase):
    def test_exit_status(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            console = Path(tmp) / 'console.log'
            for text, want in (('cpuhp-kunit: selftest exit 0\n', 0),
                               ('cpuhp-kunit: selftest exit 1\n', 1), ('nothing\n', None)):
                console.write_text('cpuhp-kunit: selftest begin\n' + text)
                self.assertEqual(guest.selftest_status(console), want)


class GcovHygieneTest(unittest.TestCase):
    def test_oops_in_base64_is_not_a_report(self) -> None:
        lines = [f'{gcov.BEGIN} abc  -', 'H4sIAAAAAAAAA+3OOopsQ0kBQ==', gcov.END]
        self.assertEqual(hygiene.check(lines), [])
        # A real report inside the window is still one, and base64 outside it too.
        lines.insert(2, 'Oops: 0000 [#1] PREEMPT SMP')
        self.assertEqual([f.lineno for f in hygiene.check(lines)], [3])
        # Outside it a line is read, but 'Oops' inside a word is no report.
        self.assertEqual(hygiene.check(['H4sIAAAAAAAAA+3OOopsQ0kBQ==']), [])
        self.assertEqual(len(hygiene.check(['Oops: 0000 [#1] PREEMPT SMP'])), 1)


class InfoTest(unittest.TestCase):
    def test_parse_and_function_lines(self) -> None:
        cov = gcov.parse_info(INFO)['/src/kernel/cpu.c']
        self.assertEqual(cov.lines, (2, 5))
        self.assertEqual(cov.functions, (1, 2))
        self.assertEqual(cov.branches, (1, 2))
        self.assertEqual(gcov.function_lines(cov, 'cpuhp_issue_call'), (2, 3))
        self.assertEqual(gcov.function_lines(cov, 'helper'), (0, 2))
        self.assertEqual(gcov.function_branches(cov, 'cpuhp_issue_call'), (1, 2))
        self.assertEqual(gcov.function_branches(cov, 'helper'), (0, 0))
        self.assertEqual(gcov.missed_branches(cov, 'cpuhp_issue_call'), ['11:1'])

    def test_gate(self) -> None:
        files = gcov.parse_info(INFO)
        self.assertEqual(gcov.gate(files, {'kernel/cpu.c': (40.0, 50.0)}), [])
        self.assertEqual(gcov.gate(files, {'kernel/cpu.c': (41.0, 50.0)}),
                         ['kernel/cpu.c: line coverage 40.0% < 41.0%'])
        self.assertEqual(gcov.gate(files, {'kernel/cpu.c': (40.0, 50.0, 50.0)}), [])
        self.assertEqual(gcov.gate(files, {'kernel/cpu.c': (40.0, 50.0, 50.1)}),
                         ['kernel/cpu.c: branch coverage 50.0% < 50.1%'])
        self.assertEqual(gcov.gate(files, {'kernel/time/timekeeping.c': (1.0, 1.0)}),
                         ['kernel/time/timekeeping.c: no coverage data'])

    def test_function_gate(self) -> None:
        files = gcov.parse_info(INFO)
        self.assertEqual(gcov.gate_functions(files, {'cpuhp_issue_call': (66.0, 50.0)}), [])
        self.assertEqual(gcov.gate_functions(files, {'cpuhp_issue_call': (67.0, 51.0)}),
                         ['cpuhp_issue_call(): line coverage 66.7% < 67.0%',
                          'cpuhp_issue_call(): branch coverage 50.0% < 51.0%'])
        self.assertEqual(gcov.gate_functions(files, {'nosuch': (0.0, 0.0)}),
                         ['nosuch(): no coverage data'])

    def test_merge_adds_up_the_topologies(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            src = Path(d, 'src', 'kernel', 'cpu.c')
            src.parent.mkdir(parents=True)
            src.write_text('\n' * 30)
            mine = INFO.replace('/src/', f'{d}/src/')
            other = mine.replace('DA:12,0', 'DA:12,1').replace('BRDA:11,0,1,-', 'BRDA:11,0,1,1')
            a, b = Path(d, '6.12', 'coverage.info'), Path(d, '6.12-smt', 'coverage.info')
            for info, text in ((a, mine), (b, other)):
                info.parent.mkdir()
                info.write_text(text)
            cov = coverage.merged([a, b], a.parent)[str(src)]
            self.assertEqual(cov.lines, (3, 5))
            self.assertEqual(cov.branches, (2, 2))
            self.assertEqual(cov.line_hits[10], 6)
            self.assertTrue(Path(d, '6.12', 'html', 'index.html').is_file())
            self.assertEqual(coverage.topology_lines([a, b])[1:3],
                             ['  6.12                   lines  40.0%  branches  50.0%',
                              '  6.12-smt               lines  60.0%  branches 100.0%'])

    def test_every_topology_runs_and_a_missing_one_is_red(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            ran: List[RunSpec] = []

            def fake_run(spec: RunSpec) -> int:
                ran.append(spec)
                if spec.topology != 'hotplug':
                    out = spec.output_dir()
                    out.mkdir(parents=True)
                    (out / 'coverage.info').write_text(INFO)
                return 0

            with mock.patch.object(execute, 'execute', side_effect=fake_run), \
                    mock.patch.object(runspec, 'REPO', Path(d)), \
                    mock.patch.object(outputs, 'add_problems') as add:
                add.return_value = verdict.Verdict()
                spec = RunSpec(kver='6.12', arch='x86_64', smp=4, timeout=600)
                with contextlib.redirect_stdout(io.StringIO()), \
                        contextlib.redirect_stderr(io.StringIO()):
                    rc = coverage.coverage(spec, selftest=False)
            self.assertEqual([s.topology for s in ran], list(runspec.TOPOLOGIES))
            self.assertEqual([s.filter for s in ran],
                             ['', '', '', 'cpuhp_sysfs.*', 'cpuhp_sysfs.*',
                              'cpuhp_sysfs.maxcpus_*'])
            self.assertEqual([s.output_dir().name for s in ran],
                             ['6.12', '6.12-smt', '6.12-hotplug', '6.12-nosmt',
                              '6.12-nosmt-force', '6.12-maxcpus'])
            self.assertEqual(rc, 1)
            problems = add.call_args.args[1]
            self.assertEqual([str(p) for p in problems],
                             [str(verdict.Problem('coverage', '', 'make coverage: the hotplug '
                                                  'run left no coverage.info: no gate'))])

    def test_the_real_thresholds_parse(self) -> None:
        for kver, a in (('6.12', 'x86_64'), ('6.1', 'x86_64'), ('6.12', 'arm64')):
            with self.subTest(kver=kver, arch=a):
                path = gcov.thresholds_path(kver, arch.get(a))
                files = gcov.read_thresholds(path)
                functions = gcov.read_function_thresholds(path)
                self.assertIn('kernel/cpu.c', files)
                self.assertIn('cpuhp_invoke_callback', functions)
                self.assertFalse(set(files) & {f + '()' for f in functions})
        # 6.1 has no base clock: no gate on functions it does not have.
        self.assertNotIn('convert_base_to_cs',
                         gcov.read_function_thresholds(gcov.thresholds_path('6.1')))


if __name__ == '__main__':
    unittest.main()


class GuestTest(unittest.TestCase):
    """The initramfs of a run runs the sysfs cases FILTER selects, and dumps gcov data."""

    def init_of(self, filter_glob: str) -> str:
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch.object(guest, 'busybox', return_value=Path('/bin/busybox')), \
                mock.patch.object(guest, 'make_initramfs',
                                   side_effect=lambda dest, text, extra=(), bb=None: dest) as mk:
            qemu = guest.write(Path(tmp), filter_glob)
            self.assertIn("'-initrd'", qemu.read_text())
            self.assertIn('kunit_shutdown=none rdinit=/init --', qemu.read_text())
            text: str = mk.call_args.args[1]
            names = [name for name, _ in mk.call_args.args[2]]
            self.assertEqual(names, ['cpuhp_sysfs_test.sh'] if 'sysfs_test' in text else [])
            return text

    def test_all_cases_without_a_filter(self) -> None:
        cases = kunitspec.declared_cases(REPO / 'kunit', userspace=True)['cpuhp_sysfs']
        self.assertEqual(guest.userspace_cases(''), cases)
        self.assertIn(f"sh /cpuhp_sysfs_test.sh {' '.join(cases)}\n", self.init_of(''))

    def test_filter_of_other_suites_runs_no_sysfs_case(self) -> None:
        self.assertEqual(guest.userspace_cases('cpuhp_sweep.*'), [])
        self.assertNotIn('cpuhp_sysfs_test', self.init_of('cpuhp_sweep.*'))

    def test_filter_of_some_sysfs_cases(self) -> None:
        self.assertEqual(guest.userspace_cases('cpuhp_sysfs.bad_*'),
                         ['bad_target_input', 'bad_fail_input'])
        self.assertIn('sh /cpuhp_sysfs_test.sh bad_target_input bad_fail_input\n',
                      self.init_of('cpuhp_sysfs.bad_*'))

    def test_gcov_data_is_printed_in_every_init(self) -> None:
        for f in ('', 'cpuhp_sweep.*'):
            text = self.init_of(f)
            self.assertIn(gcov.BEGIN, text)
            self.assertTrue(text.rstrip().endswith('/bin/busybox reboot -f'))
