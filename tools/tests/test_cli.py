"""python3 -m cpuhpk: one command line over the modules the make targets run."""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import subprocess
import sys
import unittest
from pathlib import Path

from cpuhpk import __main__ as cli

REPO = Path(__file__).resolve().parents[2]


class CommandLineTest(unittest.TestCase):
    def run_cli(self, *argv: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                rc = cli.main(list(argv))
            except SystemExit as e:
                rc = int(e.code or 0)
        return rc, out.getvalue()

    def test_every_command_has_a_main_and_a_make_target(self) -> None:
        phony = re.search(r'^\.PHONY:(.*)$', (REPO / 'Makefile').read_text(), re.M)
        assert phony is not None
        targets = set(phony.group(1).split())
        for name, (module, _, target, _) in cli.COMMANDS.items():
            with self.subTest(name):
                self.assertTrue(callable(importlib.import_module(f'cpuhpk.{module}').main))
                self.assertIn(target, targets)

    def test_help_lists_the_commands(self) -> None:
        rc, text = self.run_cli('--help')
        self.assertEqual(rc, 0)
        for name in cli.COMMANDS:
            self.assertIn(name, text)

    def test_a_command_takes_its_modules_options(self) -> None:
        rc, text = self.run_cli('run', '--help')
        self.assertEqual(rc, 0)
        self.assertIn('--kver', text)
        rc, text = self.run_cli('judge', '--help')
        self.assertEqual(rc, 0)
        self.assertIn('--judge', text)

    def test_unknown_or_no_command(self) -> None:
        self.assertEqual(self.run_cli('nosuch')[0], 2)
        self.assertEqual(self.run_cli()[0], 2)

    def test_python_dash_m(self) -> None:
        p = subprocess.run([sys.executable, '-m', 'cpuhpk', 'matrix', 'list'],
                           cwd=REPO / 'tools', capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('coverage KVER=6.12 CONFIG=default', p.stdout)


if __name__ == '__main__':
    unittest.main()
