"""python3 -m cpuhpk: one command line over the tools the make targets run.

The Makefile and the command line cannot drift: the Makefile's `NAME ?=
default` lines are KNOBS (names, defaults, order), its .PHONY targets are
TARGETS, and the recipe of each target with a command is that command;
make help is the command line's help. The refusals make reports (another
ARCH, CONFIG, a missing knob) are the command line's, checked here without
running a tool: call_main and spawn are replaced by recorders.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Dict, List, Sequence, Tuple
from unittest import mock

from cpuhpk import __main__ as cli
from cpuhpk.paths import REPO


def makefile_defaults(text: str) -> List[Tuple[str, str]]:
    """(name, default) of each `NAME ?= default` line of @text, in order."""
    return [(m.group(1), m.group(2).strip())
            for m in re.finditer(r'^([A-Z][A-Z0-9_]*)[ \t]*\?=(.*)$', text, re.M)]


def recipes(text: str) -> Dict[str, List[str]]:
    """target -> its recipe lines (continuations joined) of each rule of @text."""
    out: Dict[str, List[str]] = {}
    current = None
    for line in text.replace('\\\n', ' ').splitlines():
        m = re.match(r'^([a-z][a-z0-9-]*):', line)
        if m:
            current = m.group(1)
            out[current] = []
        elif line.startswith('\t') and current is not None:
            out[current].append(line.strip())
        elif not line.strip() or not line.startswith('#'):
            current = None if not line.strip() else current
    return out


class Recorder:
    """Stands in for call_main and spawn: records what would run."""

    def __init__(self, status: int = 0) -> None:
        self.calls: List[Tuple[str, List[str]]] = []
        self.status = status

    def call_main(self, module: str, argv: Sequence[str]) -> int:
        self.calls.append((module, list(argv)))
        return self.status

    def spawn(self, argv: Sequence[str]) -> int:
        self.calls.append(('spawn', list(argv)))
        return self.status


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *argv: str, env: Dict[str, str] | None = None,
                status: int = 0) -> Tuple[int, str, Recorder]:
        out = io.StringIO()
        rec = Recorder(status)
        environ = dict(env or {})
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out), \
                mock.patch.object(cli, 'call_main', rec.call_main), \
                mock.patch.object(cli, 'spawn', rec.spawn), \
                mock.patch.dict(os.environ, environ):
            for name in ('ARCH', 'CONFIG'):
                if name not in environ:
                    os.environ.pop(name, None)
            try:
                rc = cli.main(list(argv))
            except SystemExit as e:
                rc = int(e.code or 0)
        return rc, out.getvalue(), rec

    def test_the_makefile_knobs_are_the_table(self) -> None:
        """Both ways: each `?=` line is a row of KNOBS with its default, in
        its order, and each row is a `?=` line."""
        make = makefile_defaults((REPO / 'Makefile').read_text())
        table = [(k.name, k.default) for k in cli.KNOBS]
        self.assertGreater(len(table), 30)
        self.assertEqual(make, table)
        self.assertEqual(len({k.name for k in cli.KNOBS}), len(cli.KNOBS))

    def test_a_knob_out_of_step_is_found(self) -> None:
        text = (REPO / 'Makefile').read_text()
        self.assertNotEqual(makefile_defaults(text.replace('SMP           ?= 4', 'SMP ?= 2')),
                            [(k.name, k.default) for k in cli.KNOBS])
        self.assertNotEqual(makefile_defaults(text + 'NEW_KNOB ?= 1\n'),
                            [(k.name, k.default) for k in cli.KNOBS])

    def test_the_targets_are_the_makefiles(self) -> None:
        """TARGETS are the Makefile's .PHONY targets, both ways, each once."""
        phony = re.search(r'^\.PHONY:(.*)$', (REPO / 'Makefile').read_text(), re.M)
        assert phony is not None
        names = [name for name, _, _ in cli.TARGETS]
        self.assertEqual(len(names), len(set(names)))
        self.assertEqual(sorted(names), sorted(phony.group(1).split()))

    def test_each_target_with_a_command_is_that_command(self) -> None:
        """The recipe of a target that runs a tool is one line: $(CPUHPK) <target> ..."""
        rules = recipes((REPO / 'Makefile').read_text())
        self.assertRegex(rules['help'][0], r'^@\$\(CPUHPK\) help ')
        for name, _, command in cli.TARGETS:
            with self.subTest(name):
                self.assertIn(name, rules)
                if name == 'help':
                    continue
                if command is None:
                    self.assertNotIn('$(CPUHPK)', ' '.join(rules[name]))
                    continue
                self.assertEqual(len(rules[name]), 1, rules[name])
                self.assertRegex(rules[name][0], r'^@?\$\(CPUHPK\) ' + re.escape(name) + r'( |$)')
                if command.module:
                    self.assertTrue(callable(
                        importlib.import_module(f'cpuhpk.{command.module}').main))
                if command.script:
                    self.assertTrue((REPO / 'tools' / command.script).is_file())

    def test_help_lists_every_target_and_knob_once(self) -> None:
        for argv in (('help',), ('--help',), ('-h',)):
            rc, text, _ = self.run_cli(*argv)
            self.assertEqual(rc, 0)
            for name, _, _ in cli.TARGETS:
                self.assertEqual(len(re.findall(rf'^  {re.escape(name)} ', text, re.M)), 1, name)
            for k in cli.KNOBS:
                self.assertEqual(len(re.findall(rf'^  {k.name}=', text, re.M)), 1, k.name)
            for name, _ in cli.ENVIRONMENT:
                self.assertIn(f'  {name}=', text)

    def test_help_shows_the_current_values(self) -> None:
        rc, text, _ = self.run_cli('help', 'KVERS=6.1', env={'KVER': '6.1'})
        self.assertEqual(rc, 0)
        self.assertRegex(text, r'(?m)^  KVER=6\.1 ')
        self.assertRegex(text, r'(?m)^  KVERS=6\.1 ')
        self.assertRegex(text, r'(?m)^  SMP=4 ')

    def test_make_help_is_the_command_lines(self) -> None:
        res = subprocess.run(['make', '--no-print-directory', '-s', 'help'], cwd=REPO,
                             capture_output=True, text=True, timeout=60,
                             env={'PATH': '/usr/bin:/bin', 'HOME': str(Path.home())})
        self.assertEqual(res.returncode, 0, res.stderr)
        self.assertEqual(res.stdout, cli.usage({}) + '\n')

    def test_a_command_takes_its_modules_options(self) -> None:
        for name, option in (('run', '--kver'), ('judge', '--judge'),
                             ('series-test', '--pristine')):
            out = io.StringIO()
            with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as exit:
                cli.main([name, '--help'])
            self.assertEqual(exit.exception.code, 0)
            self.assertIn(option, out.getvalue())

    def test_each_command_runs_its_tool(self) -> None:
        cases: List[Tuple[List[str], Tuple[str, List[str]]]] = [
            (['run', '--kver', '6.1'], ('run', ['--kver', '6.1'])),
            (['judge', 'c.log', '--userspace', '0'],
             ('run', ['--judge', 'c.log', '--userspace', '0'])),
            (['matrix', '--tier', '1'], ('matrix', ['run', '--tier', '1'])),
            (['matrix-list'], ('matrix', ['list'])),
            (['ci-files'], ('matrix', ['ci'])),
            (['prepare', '--kver', '6.1'], ('tree', ['--kver', '6.1'])),
            (['tree-test'], ('treetest', [])),
            (['reports', 'a'], ('provoke', ['a'])),
            (['series-check', '--kver', '6.12'],
             ('series', ['--no-results', '--check', '--kver', '6.12'])),
            (['series-test'],
             ('series', ['--no-results', '--check', '--pristine', '--author-of-head'])),
            (['fixes-series-test'], ('fixseries', ['--author-of-head'])),
            (['finding-mails', '04'], ('findingmail', ['04'])),
            (['merge-results', 'out/a'], ('merge', ['out/a'])),
            (['bench', 'cold'], ('spawn', ['sh', str(REPO / 'tools' / 'bench.sh'), 'cold'])),
        ]
        for argv, want in cases:
            with self.subTest(argv[0]):
                rc, _, rec = self.run_cli(*argv)
                self.assertEqual((rc, rec.calls), (0, [want]))

    def test_refusals_are_makes(self) -> None:
        """One line on stderr, exit 2, nothing run."""
        cases: List[Tuple[List[str], Dict[str, str], str]] = [
            (['bisect', '--tree', 't', '--good', 'g'], {'ARCH': 'arm64'},
             'make bisect: x86_64 only so far; ARCH=arm64 has run, judge, coverage, mutate'),
            (['bisect', '--tree', 't', '--good', ''], {}, 'usage: make bisect TREE='),
            (['judge', '', '--userspace', '1'], {}, 'usage: make judge CONSOLE='),
            (['merge-results', '--out', 'out/merged'], {}, 'usage: make merge-results DIRS='),
            (['coverage'], {'CONFIG': 'debug'},
             'make coverage gates the default kernel; CONFIG=debug runs yield coverage too: '
             'make run CONFIG=debug'),
            (['series-pristine'], {'CONFIG': 'rt'},
             'the series are built with their own configs: no CONFIG=rt'),
            (['series-config'], {'ARCH': ''}, 'make series-config: x86_64 only so far; ARCH= '),
            (['fixes-test'], {'ARCH': 'arm64'}, 'make fixes-test: x86_64 only'),
            (['bench'], {'ARCH': 'arm64'}, 'make bench: x86_64 only'),
        ]
        for argv, env, message in cases:
            with self.subTest(argv=argv, env=env):
                rc, text, rec = self.run_cli(*argv, env=env)
                self.assertEqual((rc, rec.calls), (2, []))
                self.assertEqual(len(text.splitlines()), 1, text)
                self.assertTrue(text.startswith(message), text)
        rc, _, rec = self.run_cli('series-config', env={'ARCH': 'x86_64', 'CONFIG': 'default'})
        self.assertEqual((rc, rec.calls), (0, []))
        rc, _, rec = self.run_cli('run', env={'ARCH': 'arm64', 'CONFIG': 'debug'})
        self.assertEqual((rc, rec.calls), (0, [('run', [])]))

    def test_fixes_test_runs_five_guests_each_with_the_fixes(self) -> None:
        """Each run is the command line's with the run's values in place;
        every run runs even when one is red."""
        argv = ['--kver', '6.1', '--smp', '8', '--topology', 'smt', '--filter', 'f',
                '--fixes', '0', '--filter-attr=']
        rc, _, rec = self.run_cli('fixes-test', *argv, status=1)
        self.assertEqual(rc, 1)
        runs = [a for _, a in rec.calls]
        self.assertEqual(len(runs), 5)
        for run in runs:
            self.assertEqual(run[:4], [sys.executable, '-m', 'cpuhpk', 'run'])
            self.assertEqual(len(run), 4 + len(argv))
            self.assertEqual(cli.option(run, '--fixes'), '1')
        self.assertEqual([(cli.option(r, '--smp'), cli.option(r, '--topology'),
                           cli.option(r, '--filter')) for r in runs],
                         [('4', 'smt', 'f'), ('2', 'smt', 'f'), ('8', 'smt', 'f'),
                          ('8', 'hotplug', 'f'), ('8', 'nosmt', 'cpuhp_sysfs.*')])
        rc, _, _ = self.run_cli('fixes-test', *argv)
        self.assertEqual(rc, 0)

    def test_with_options(self) -> None:
        self.assertEqual(cli.with_options(['--a', '1', '--b=2', 'x'], ['--a', '3', '--b', '4',
                                                                     '--c', '5']),
                         ['--a', '3', '--b=4', 'x', '--c', '5'])

    def test_unknown_or_no_command(self) -> None:
        for argv in (('nosuch',), ()):
            rc, text, rec = self.run_cli(*argv)
            self.assertEqual((rc, rec.calls), (2, []))
            self.assertEqual(len(text.splitlines()), 1)
            self.assertIn('python3 -m cpuhpk help lists them', text)

    def test_python_dash_m(self) -> None:
        p = subprocess.run([sys.executable, '-m', 'cpuhpk', 'matrix-list'],
                           cwd=REPO / 'tools', capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('coverage KVER=6.12 CONFIG=default', p.stdout)


if __name__ == '__main__':
    unittest.main()
