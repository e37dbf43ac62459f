"""Stack traces decoded against a vmlinux (decode.py), in every output.

The kernel's scripts/decode_stacktrace.sh needs a vmlinux with debug
information; the tests stand one in: an ELF file with (or without) a
.debug_line section, and a decode_stacktrace.sh in a stand-in tree that
decodes as the real one prints ('func (file:line)'). The last test runs
the real script of a cached kernel tree (make prepare) on a small
program compiled with -g, when the tree and gcc are there.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import struct
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import List, Sequence
from unittest import mock

from cpuhpk import cache, decode, outputs, run, say, tree, verdict
from tests import test_whole_console as whole
from tests.recorded import run_default_expectations
from tests.test_titles import WARN

FAKE_SCRIPT = r'''#!/bin/bash
# Stands in for scripts/decode_stacktrace.sh <vmlinux> <base>: decodes
# every 'func+0x../0x..' as the real one prints a decoded frame.
echo "$1 $2" >> "$(dirname "$0")/../calls"
sed -E 's/([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+\/0x[0-9a-f]+/\1 (kernel\/cpu.c:12)/'
'''


def elf(sections: Sequence[str]) -> bytes:
    """A minimal ELF64 file whose section table names @sections."""
    names = ['.shstrtab', *sections]
    strtab = b'\0' + b''.join(n.encode() + b'\0' for n in names)
    shoff = 64 + (len(strtab) + 7) // 8 * 8
    header = struct.pack('<4sBBBBB7sHHIQQQIHHHHHH', b'\x7fELF', 2, 1, 1, 0, 0, b'\0' * 7, 2,
                         62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, len(names) + 1, 1)
    table = [b'\0' * 64]
    offset = 1
    for i, name in enumerate(names):
        table.append(struct.pack('<IIQQQQIIQQ', offset, 3 if i == 0 else 1, 0, 0,
                                 64 if i == 0 else 0, len(strtab) if i == 0 else 0, 0, 0, 1, 0))
        offset += len(name) + 1
    return header + strtab.ljust(shoff - 64, b'\0') + b''.join(table)


class DecodeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.src = self.tmp / 'linux-9.9'
        (self.src / 'scripts').mkdir(parents=True)
        script = self.src / 'scripts' / 'decode_stacktrace.sh'
        script.write_text(FAKE_SCRIPT)
        self.build = self.tmp / 'build'
        self.build.mkdir()
        (self.build / 'source').symlink_to(self.src)
        self.vmlinux = self.build / 'vmlinux'
        self.vmlinux.write_bytes(elf(['.text', '.debug_info', '.debug_line']))

    def calls(self) -> List[str]:
        path = self.src / 'calls'
        return path.read_text().splitlines() if path.is_file() else []

    def judged(self, console: List[str], *args: str) -> Path:
        out = self.tmp / 'out'
        src = self.tmp / 'captured.log'
        src.write_text('\n'.join(console) + '\n')
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(outputs, 'expectations', run_default_expectations), \
                mock.patch.object(tree, 'tree_path', side_effect=say.PrepareError('no tree')):
            run.main(['--judge', str(src), '--out', str(out), '--kver', '6.12', *args])
        return out

    def test_sections_of_an_elf_file(self) -> None:
        self.assertEqual(decode.sections(self.vmlinux),
                         ['', '.shstrtab', '.text', '.debug_info', '.debug_line'])
        garbage = self.tmp / 'garbage'
        garbage.write_bytes(b'not an elf file at all' * 4)
        with self.assertRaisesRegex(decode.DecodeError, 'not an ELF file'):
            decode.sections(garbage)

    def test_a_vmlinux_without_debug_info_is_said_so(self) -> None:
        self.vmlinux.write_bytes(elf(['.text', '.symtab']))
        with self.assertRaises(decode.DecodeError) as e:
            decode.check(self.vmlinux)
        self.assertIn('CONFIG_DEBUG_INFO_NONE', str(e.exception))
        self.assertNotIn('\n', str(e.exception))
        with self.assertRaisesRegex(decode.DecodeError, 'no vmlinux at'):
            decode.check(self.tmp / 'nothing')

    def test_the_script_of_the_vmlinux_tree(self) -> None:
        self.assertEqual(decode.script_for(self.vmlinux),
                         (self.src / 'scripts' / 'decode_stacktrace.sh').resolve())
        (self.build / 'source').unlink()
        with self.assertRaisesRegex(decode.DecodeError, 'decode_stacktrace.sh'):
            decode.script_for(self.vmlinux)
        self.assertEqual(decode.script_for(self.vmlinux, [None, self.src]).parent.parent,
                         self.src.resolve())

    def test_judge_with_vmlinux_decodes_each_finding_once(self) -> None:
        out = self.judged(whole.inserted(WARN) + WARN, '--vmlinux', str(self.vmlinux))
        data = json.loads((out / 'verdict.json').read_text())
        logs = [p for p in data['problems'] if p['category'] == 'kernel-log']
        self.assertEqual(len(logs), 2)
        for p in logs:
            self.assertIn('cpuhp_reserve_state (kernel/cpu.c:12)', p['decoded'])
            self.assertIn('__cpuhp_setup_state_cpuslocked (kernel/cpu.c:12)', p['decoded'])
        # One finding, one decoding; the known failures' report is decoded too.
        self.assertEqual(len(self.calls()), 2)
        self.assertEqual(self.calls()[0], f'{self.vmlinux} {self.src.resolve()}')
        self.assertIn('of 2 report(s) decoded against', data['context']['decoded'])
        html = (out / 'index.html').read_text()
        self.assertIn('stack decoded against the vmlinux', html)
        self.assertIn('cpuhp_reserve_state (kernel/cpu.c:12)', html)
        junit = (out / 'junit.xml').read_text()
        self.assertIn('decoded:\nWARNING: CPU: 1 PID: 1234 at kernel/cpu.c:2299 '
                      'cpuhp_reserve_state (kernel/cpu.c:12)', junit)

    def test_judge_without_vmlinux_decodes_nothing(self) -> None:
        out = self.judged(whole.inserted(WARN))
        data = json.loads((out / 'verdict.json').read_text())
        self.assertEqual({p['decoded'] for p in data['problems']}, {''})
        self.assertNotIn('decoded', data['context'])
        self.assertEqual(self.calls(), [])

    def test_judge_with_a_vmlinux_without_debug_info(self) -> None:
        self.vmlinux.write_bytes(elf(['.text', '.symtab']))
        out = self.judged(whole.inserted(WARN), '--vmlinux', str(self.vmlinux))
        data = json.loads((out / 'verdict.json').read_text())
        self.assertIn('has no debug information', data['context']['decoded'])
        self.assertEqual(self.calls(), [])
        self.assertIn('has no debug information', (out / 'index.html').read_text())

    def test_a_failing_script_leaves_the_report_as_printed(self) -> None:
        (self.src / 'scripts' / 'decode_stacktrace.sh').write_text(
            '#!/bin/bash\necho "ERROR! vmlinux image must be specified" >&2\nexit 1\n')
        v = verdict.Verdict()
        v.add('kernel-log', 's.a', 'WARNING', '\n'.join(WARN), 'warning', 'WARNING in x')
        note = decode.decode_verdict(v, self.vmlinux)
        self.assertIn('decode_stacktrace.sh failed: ERROR! vmlinux image must be specified',
                      note)
        self.assertEqual(v.problems[0].decoded, '')

    def test_the_kernel_trees_own_script_on_a_program_with_debug_info(self) -> None:
        scripts = sorted(cache.cache_root().glob('linux-*/scripts/decode_stacktrace.sh'))
        if not scripts or shutil.which('gcc') is None or shutil.which('addr2line') is None:
            self.skipTest('needs a prepared kernel tree (make prepare), gcc and binutils')
        program = self.tmp / 'k.c'
        program.write_text(
            '__attribute__((noinline)) int cpuhp_invoke_callback(int x) { return x * 3; }\n'
            '__attribute__((noinline)) int kernel_init(int x)\n'
            '{ return cpuhp_invoke_callback(x) - 1; }\n'
            'int main(int argc, char **argv) { return kernel_init(argc); }\n')
        subprocess.run(['gcc', '-g', '-O1', '-o', str(self.vmlinux), str(program)], check=True)
        text = 'Call Trace:\n <TASK>\n cpuhp_invoke_callback+0x1/0x8\n kernel_init+0x5/0xc\n'
        decoded = decode.decode(text, self.vmlinux, scripts[-1])
        self.assertIn('cpuhp_invoke_callback (', decoded)
        self.assertRegex(decoded, r'kernel_init \((?:\S*/)?k\.c:3\)')


if __name__ == '__main__':
    unittest.main()
