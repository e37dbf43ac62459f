"""out/<run>/index.html, rendered by a real browser.

The pages of a recorded green run (data/run_default_6.12_console.log, judged
as make judge judges it) and of the same run with a UBSAN report inside a
case (red) are written to out/page-test/{green,red}/ and rendered with
Debian's headless Chromium: the assertions read the text Chromium rendered,
and a screenshot of each stays next to them for a person to look at.
Chromium comes with make tools-test (tools/typecheck.sh); without it the
test fails, saying so.
"""

from __future__ import annotations

import contextlib
import html
import io
import re
import shutil
import subprocess
import tempfile
import unittest
from pathlib import Path
from typing import List
from unittest import mock

from cpuhpk import merge, outputs, page, run
from cpuhpk.paths import REPO
from tests import test_whole_console as whole
from tests.recorded import run_default_expectations

OUT = REPO / 'out' / 'page-test'
CHROMIUM = ('chromium', '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic',
            '--no-first-run', '--disable-background-networking', '--disable-component-update',
            '--disable-sync')


def write_page(name: str, console: List[str]) -> Path:
    """The run page of @console judged as make judge judges it, in OUT/name/."""
    out = OUT / name
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    src = out / 'captured.log'
    src.write_text('\n'.join(console) + '\n')
    with contextlib.redirect_stdout(io.StringIO()), \
            mock.patch.object(outputs, 'expectations', run_default_expectations):
        run.main(['--judge', str(src), '--out', str(out / 'run'), '--kver', '6.12'])
    return out / 'run' / 'index.html'


def render(page_path: Path, screenshot: Path) -> str:
    """The text of @page_path as Chromium renders it; a screenshot beside."""
    if shutil.which('chromium') is None:
        raise AssertionError('chromium is not installed: make tools-test installs it '
                             '(tools/typecheck.sh), or apt-get install chromium')
    with tempfile.TemporaryDirectory() as profile:
        args = [*CHROMIUM, f'--user-data-dir={profile}']
        dom = subprocess.run([*args, '--dump-dom', page_path.as_uri()], capture_output=True,
                             text=True, timeout=120, check=True).stdout
        subprocess.run([*args, f'--screenshot={screenshot}', '--window-size=1280,1600',
                        page_path.as_uri()], capture_output=True, timeout=120, check=True)
    text = re.sub(r'<style>.*?</style>', ' ', dom, flags=re.S)
    return html.unescape(re.sub(r'\s+', ' ', re.sub(r'<[^>]+>', ' ', text)))


class RunPageTest(unittest.TestCase):
    def test_green_run(self) -> None:
        index = write_page('green', whole.lines())
        text = render(index, OUT / 'green.png')
        self.assertIn('cpuhp-kunit PASS', text)
        self.assertIn('kunit: 193 passed, 0 failed, 87 skipped, 24 known failures', text)
        self.assertIn('Problems (0)', text)
        self.assertIn('cpuhp_rollback.cpuhp_rollback_frozen_clear_after_thaw', text)
        self.assertIn('6.12', text)
        self.assertTrue((OUT / 'green.png').stat().st_size > 10000)

    def test_red_run(self) -> None:
        index = write_page('red', whole.inserted(whole.UBSAN))
        text = render(index, OUT / 'red.png')
        self.assertIn('cpuhp-kunit FAIL', text)
        self.assertIn('1 failed', text)
        self.assertIn('Problems (1)', text)
        self.assertIn('kernel-log (ubsan) cpuhp_rollback.cpuhp_rollback_down_fails', text)
        self.assertIn('UBSAN: shift-out-of-bounds in kernel/cpu.c:1234:20', text)

    def test_page_escapes_the_console(self) -> None:
        evil = ['WARNING: CPU: 1 PID: 2 at x.c:1 <script>alert(1)</script>+0x0/0x1']
        index = write_page('escaped', whole.inserted(evil))
        self.assertNotIn('<script>', index.read_text())
        self.assertIn('&lt;script&gt;', index.read_text())


class MergePageTest(unittest.TestCase):
    def test_merge_links_each_job(self) -> None:
        green = write_page('merge-green', whole.lines())
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / 'merged'
            with contextlib.redirect_stdout(io.StringIO()):
                merge.merge([green.parent], out)
            text = (out / 'index.html').read_text()
            self.assertIn('cpuhp-kunit merge', text)
            self.assertIn('index.html', text)
            self.assertIn(page.esc('KVER=6.12'), text)


if __name__ == '__main__':
    unittest.main()
