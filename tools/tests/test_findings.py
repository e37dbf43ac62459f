"""The findings' reports: the lines each opens with, every fix named by one,
and the mails of make finding-mails made from them."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from typing import List, Sequence, Tuple

from cpuhpk import findingmail
from cpuhpk.paths import REPO

WHO = 'A Developer <dev@example.org>'

REPORT = """# cpu/hotplug: something breaks

**Class:** bug on a production kernel — any kernel with CPU hotplug
**Who meets it:** root, every kernel with `CONFIG_HOTPLUG_CPU`
**Versions:** 6.12.118: yes; 6.1.192: yes
**Mainline:** unchanged in torvalds/linux kernel/cpu.c at 0123456789ab, read 2026-12-07

**What happens.** It breaks.

**Shortest reproducer.**

```
echo 1 > /sys/devices/system/cpu/cpu1/online
```

**Console** (unedited):

```
[    1.0] Error taking CPU1 down: -11
```

**Root cause.** `_cpu_down()` forgets the error:

```
	ret = 0;
```

**Fix.** `src/<KVER>/fixes/0001`: keep the error.
"""

PATCH = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: cpuhp-kunit developers <dev@cpuhp-kunit.example>
Date: Sat, 5 Dec 2026 12:41:14 +0000
Subject: [PATCH 1/3] cpu/hotplug: Keep the
 error

Keep it.

Signed-off-by: cpuhp-kunit developers <dev@cpuhp-kunit.example>
---
 kernel/cpu.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/kernel/cpu.c b/kernel/cpu.c
--- a/kernel/cpu.c
+++ b/kernel/cpu.c
@@ -1 +1 @@
-	ret = 0;
+	ret = ret;
--
2.39.5
"""


def fake_maintainers(patches: Sequence[Path]) -> Tuple[List[str], List[str]]:
    assert patches
    return ['Thomas Gleixner <tglx@linutronix.de>'], ['linux-kernel@vger.kernel.org']


class ReportsTest(unittest.TestCase):
    """Every report of Documentation/findings/ as a maintainer reads it first."""

    def test_every_report_opens_with_class_who_versions_mainline(self) -> None:
        reports = findingmail.all_reports()
        self.assertGreaterEqual(len(reports), 19)
        for r in reports:
            with self.subTest(report=r.path.name):
                self.assertEqual(findingmail.problems(r), [])

    def test_every_fix_is_named_by_a_report(self) -> None:
        reports = findingmail.all_reports()
        for kver in ('6.12', '6.1'):
            named = {n for r in reports for n in r.fixes(kver)}
            for patch in sorted((REPO / 'src' / kver / 'fixes').glob('[0-9]*.patch')):
                with self.subTest(patch=f'{kver}/{patch.name}'):
                    self.assertIn(patch.name[:4], named)

    def test_the_default_mails_are_made(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            rc = findingmail.write_mails('6.12', findingmail.DEFAULT, WHO, Path(d),
                                         fake_maintainers)
            self.assertEqual(rc, 0)
            mails = sorted(Path(d).glob('*.txt'))
            self.assertEqual([m.name[:2] for m in mails], sorted(findingmail.DEFAULT))
            for m in mails:
                text = m.read_text()
                self.assertIn('\n-- >8 --\nFrom: ' + WHO, text)
                self.assertNotIn('cpuhp-kunit.example', text)


class CheckTest(unittest.TestCase):
    def report(self, text: str) -> findingmail.FindingReport:
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / '01-something.md'
            path.write_text(text)
            return findingmail.read_report(path)

    def test_a_whole_report_passes(self) -> None:
        self.assertEqual(findingmail.problems(self.report(REPORT)), [])

    def test_each_missing_or_wrong_line_is_named(self) -> None:
        r = self.report(REPORT.replace('**Who meets it:**', 'Who meets it:'))
        self.assertEqual(findingmail.problems(r), ['no "**Who meets it:**" line'])
        r = self.report(REPORT.replace('bug on a production kernel', 'a bug'))
        self.assertIn('is none of', findingmail.problems(r)[0])
        r = self.report(REPORT.replace('at 0123456789ab, read 2026-12-07', 'not checked'))
        self.assertIn('neither a commit id', findingmail.problems(r)[0])

    def test_fixes_named_for_either_series(self) -> None:
        r = self.report(REPORT)
        self.assertEqual((r.fixes('6.12'), r.fixes('6.1')), (['0001'], ['0001']))
        r = self.report(REPORT.replace('<KVER>', '6.1'))
        self.assertEqual((r.fixes('6.12'), r.fixes('6.1')), ([], ['0001']))


class ComposeTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)
        self.path = Path(self.dir.name) / '01-something.md'
        self.patch = Path(self.dir.name) / '0001-cpu-hotplug-Keep-the-error.patch'
        self.patch.write_text(PATCH)

    def compose(self, text: str) -> str:
        self.path.write_text(text)
        report = findingmail.read_report(self.path)
        people, lists = fake_maintainers([self.patch])
        return findingmail.compose(report, '6.12', self.patch, WHO, people, lists)

    def test_mail_reads_reproducer_console_cause_fix_then_the_patch(self) -> None:
        mail = self.compose(REPORT)
        head, _, body = mail.partition('\n\n')
        self.assertEqual(head.splitlines(), [
            f'From: {WHO}', 'To: Thomas Gleixner <tglx@linutronix.de>',
            'Cc: linux-kernel@vger.kernel.org', 'Subject: [BUG] cpu/hotplug: something breaks'])
        order = [body.index(s) for s in ('Class: bug on a production kernel',
                                          'Shortest reproducer.', 'echo 1 >',
                                          '[    1.0] Error taking CPU1 down: -11',
                                          'Root cause. _cpu_down()', '\tret = 0;',
                                          'Fix. src/<KVER>/fixes/0001', '-- >8 --',
                                          'Subject: [PATCH] cpu/hotplug: Keep the error\n',
                                          f'Signed-off-by: {WHO}\n---\n', '+\tret = ret;')]
        self.assertEqual(order, sorted(order))
        self.assertNotIn('```', body)
        self.assertNotIn('cpuhp-kunit.example', body)
        self.assertNotIn('What happens', body)

    def test_a_report_without_a_part_makes_no_mail(self) -> None:
        for cut in ('**Console** (unedited):', '**Root cause.**', '**Shortest reproducer.**'):
            with self.subTest(cut=cut), self.assertRaises(findingmail.MailError) as e:
                self.compose(REPORT.replace(cut, 'Something else.'))
            self.assertIn('part', str(e.exception))


if __name__ == '__main__':
    unittest.main()
