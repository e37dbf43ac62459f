"""A report's title and key in every output: verdict.json, junit.xml,
index.html, and make merge-results, which counts a finding once.

The consoles are today's recorded default run (data/run_default_6.12_console.log,
24 known failures of which 21 are the same failed expectation on different
states) and the same run with one WARNING printed in two of its cases, as
make judge writes their outputs.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import List
from unittest import mock

from cpuhpk import judging, merge, outputs, page, run, verdict
from tests import test_whole_console as whole
from tests.recorded import run_default_expectations

WARN = ['------------[ cut here ]------------',
        'WARNING: CPU: 1 PID: 1234 at kernel/cpu.c:2299 cpuhp_reserve_state+0x5e/0x80',
        'Modules linked in:', 'RIP: 0010:cpuhp_reserve_state+0x5e/0x80', 'Call Trace:',
        ' <TASK>', ' __cpuhp_setup_state_cpuslocked+0x1a0/0x2c0', ' </TASK>',
        '---[ end trace 0000000000000000 ]---']


def twice() -> List[str]:
    """The recorded run with WARN printed in two of its cases."""
    console = whole.lines()
    first = whole.at(console, '    ok 1 cpuhp_rollback_up_ap_fails')
    second = whole.at(console, whole.CASE)
    return console[:first] + WARN + console[first:second] + WARN + console[second:]


class OutputsTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)

    def judged(self, name: str, console: List[str]) -> Path:
        """The out/ directory make judge writes for @console."""
        out = self.tmp / name
        src = self.tmp / f'{name}.log'
        src.write_text('\n'.join(console) + '\n')
        with contextlib.redirect_stdout(io.StringIO()), \
                mock.patch.object(outputs, 'expectations', run_default_expectations):
            run.main(['--judge', str(src), '--out', str(out), '--kver', '6.12'])
        return out

    def test_verdict_json_has_title_and_key(self) -> None:
        out = self.judged('red', twice())
        data = json.loads((out / 'verdict.json').read_text())
        logs = [p for p in data['problems'] if p['category'] == 'kernel-log']
        self.assertEqual([p['title'] for p in logs], ['WARNING in cpuhp_reserve_state'] * 2)
        self.assertEqual(len({p['key'] for p in logs}), 1)
        self.assertEqual(len({p['name'] for p in logs}), 2)
        fails = [p for p in data['known_failures'] if 'cpuhp_sweep_fail_fires' in p['name']]
        self.assertEqual(len(fails), 21)
        self.assertEqual(len({p['key'] for p in fails}), 1)

    def test_junit_names_the_title(self) -> None:
        out = self.judged('red', twice())
        root = ET.parse(out / 'junit.xml').getroot()
        titles = [p.get('value') for tc in root.iter('testcase')
                  for p in tc.iterfind('properties/property') if p.get('name') == 'title']
        self.assertEqual(titles.count('WARNING in cpuhp_reserve_state'), 2)
        failure = next(f for f in root.iter('failure') if 'cpuhp_reserve_state' in (f.text or ''))
        self.assertIn('title: WARNING in cpuhp_reserve_state', failure.text or '')

    def test_page_lists_a_finding_once(self) -> None:
        out = self.judged('red', twice())
        html = (out / 'index.html').read_text()
        self.assertIn('Problems (2) <span class="muted">1 distinct</span>', html)
        self.assertEqual(html.count('<b>WARNING in cpuhp_reserve_state</b>'), 1)
        self.assertIn('&times;2', html)
        self.assertIn('cpuhp_rollback.cpuhp_rollback_up_ap_fails', html)
        self.assertIn('cpuhp_rollback.cpuhp_rollback_down_fails', html)

    def test_known_failures_on_many_states_are_one_row(self) -> None:
        v = whole.judge(whole.lines())
        self.assertEqual(len(v.known), 24)
        groups = page.findings(v.known)
        self.assertEqual(sorted(len(g) for g in groups), [1, 1, 1, 21])
        html = page.run_page(self.judged('green', whole.lines()))
        self.assertIn('Known failures (24) <span class="muted">4 distinct</span>', html)
        self.assertIn('&times;21', html)
        self.assertIn('and 13 more', html)

    def test_merge_counts_a_finding_once(self) -> None:
        a = self.judged('a', twice())
        b = self.judged('b', twice())
        # Two jobs of the same report: another configuration for the second.
        data = json.loads((b / 'verdict.json').read_text())
        data['context']['config'] = 'debug'
        (b / 'verdict.json').write_text(json.dumps(data))
        with contextlib.redirect_stdout(io.StringIO()):
            self.assertEqual(merge.merge([a, b], self.tmp / 'merged'), 1)
        found = json.loads((self.tmp / 'merged' / 'findings.json').read_text())
        warn = [f for f in found if f['title'] == 'WARNING in cpuhp_reserve_state']
        self.assertEqual(len(warn), 1)
        self.assertEqual((warn[0]['count'], len(warn[0]['jobs'])), (4, 2))
        fires = [f for f in found if 'cpuhp_sweep_fail_fires' in f['title']]
        self.assertEqual([(f['count'], f['known']) for f in fires], [(42, True)])
        summary = (self.tmp / 'merged' / 'summary.txt').read_text()
        self.assertIn('findings: 5 distinct, 52 in all (1 red, 4 known failures)', summary)
        self.assertIn('4x in 2 job(s): [kernel-log:warning] WARNING in cpuhp_reserve_state',
                      summary)
        html = (self.tmp / 'merged' / 'index.html').read_text()
        self.assertIn('Findings (5 distinct, 52 in all)', html)

    def test_a_report_printed_many_times_is_quoted_once_per_twenty(self) -> None:
        # A WARN in a loop: each is listed, with its case; the first 20 quoted.
        v = whole.judge(whole.inserted(WARN * 30))
        logs = [p for p in v.problems if p.category == 'kernel-log']
        self.assertEqual(len(logs), 30)
        quoted = [p for p in logs if p.detail.startswith('WARNING: CPU: 1 PID: 1234')]
        self.assertEqual(len(quoted), judging.QUOTED_ALIKE)
        self.assertTrue(all(p.detail.startswith('(the same report as in cpuhp_rollback.')
                            for p in logs if p not in quoted))

    def test_an_older_verdict_without_keys_still_merges(self) -> None:
        out = self.judged('old', twice())
        data = json.loads((out / 'verdict.json').read_text())
        for p in data['problems'] + data['known_failures']:
            for field in ('title', 'key', 'decoded'):
                p.pop(field, None)
        (out / 'verdict.json').write_text(json.dumps(data))
        v, _ = verdict.read_json(out / 'verdict.json')
        self.assertTrue(all(p.ident() for p in v.problems))
        with contextlib.redirect_stdout(io.StringIO()):
            merge.merge([out], self.tmp / 'merged')
        self.assertTrue((self.tmp / 'merged' / 'findings.json').is_file())


if __name__ == '__main__':
    unittest.main()
