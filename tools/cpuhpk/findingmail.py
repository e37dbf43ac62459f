"""`make finding-mails`: the findings as the plain-text mails a maintainer reads.

    python3 -m cpuhpk finding-mails --kver 6.12 [--author 'Name <email>'] 14 10 04

For each finding number, reads its report (Documentation/findings/NN-*.md)
and the fix it names (src/<KVER>/fixes/NNNN, in the form posted on the
pristine tree where the plan has one) and writes
out/finding-mails/<KVER>/NN-<slug>.txt: To/Cc from the kernel tree's
scripts/get_maintainer.pl for the files the fix touches, the report's
class and who meets it, then the reproducer, the console excerpt, the root
cause and the fix, and the fix itself as a patch after a scissors line
(`git am --scissors` takes it). Nothing is sent: the mails are for a person
to read and send.

A report lacks a part a mail needs (a reproducer, a console, a root cause,
a fix): one line says which, and no mail is written for it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from cpuhpk import cache, fixseries, seriesmake, seriesplan, tree
from cpuhpk.paths import REPO

FINDINGS = REPO / 'Documentation' / 'findings'
DEFAULT = ('14', '10', '04')
# The header lines every report opens with, under its title.
FIELDS = ('Class', 'Who meets it', 'Versions', 'Mainline')
CLASSES = ('bug on a production kernel', 'hardening of a debug interface', 'latent',
           'not a kernel bug', 'withdrawn')
# The parts of a report a mail is made of, in the mail's order: the label
# each starts with (a paragraph opening with **<label>...**).
PARTS = (('reproducer', ('Shortest reproducer', 'Reproducer')),
         ('console', ('Console',)),
         ('root cause', ('Root cause',)),
         ('fix', ('Fix',)))
FIX_REF = re.compile(r'src/(6\.12|6\.1|<KVER>)/fixes/(\d{4})')


class MailError(Exception):
    """A report or fix a mail cannot be made from; the message says why."""


@dataclass
class FindingReport:
    """One report of Documentation/findings/, read."""
    path: Path
    title: str
    fields: Dict[str, str]
    # Label of each paragraph-led part ('Shortest reproducer', 'Root cause', ...)
    # -> its Markdown text, in the report's order.
    parts: Dict[str, str] = field(default_factory=dict)

    @property
    def number(self) -> str:
        return self.path.name[:2]

    def part(self, labels: Sequence[str]) -> Optional[str]:
        for label, text in self.parts.items():
            if any(label.startswith(want) for want in labels):
                return text
        return None

    def fixes(self, kver: str) -> List[str]:
        """The fix numbers (NNNN) the report names for @kver."""
        text = '\n'.join([*self.fields.values(), *self.parts.values()])
        return sorted({num for k, num in FIX_REF.findall(text) if k in (kver, '<KVER>')})


LABEL = re.compile(r'^\*\*([^*]+?)[.:]?\*\*')


def read_report(path: Path) -> FindingReport:
    """@path parsed: its title, the header fields and the labelled parts."""
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith('# '):
        raise MailError(f'{path.name}: no "# title" first line')
    fields: Dict[str, str] = {}
    for line in lines[1:]:
        m = re.match(r'^\*\*([^*]+):\*\*\s*(.*)$', line)
        if m and m.group(1) in FIELDS:
            fields[m.group(1)] = m.group(2).strip()
    body = '\n'.join(lines[1:])
    parts: Dict[str, str] = {}
    # Paragraphs: blank-line separated, fenced blocks kept whole.
    label = ''
    for para in paragraphs(body):
        m = LABEL.match(para)
        if m and m.group(1) not in FIELDS:
            label = m.group(1).strip()
            parts[label] = para
        elif label:
            parts[label] += '\n\n' + para
    return FindingReport(path, lines[0][2:].strip(), fields, parts)


def paragraphs(text: str) -> List[str]:
    out: List[str] = []
    cur: List[str] = []
    fenced = False
    for line in text.splitlines():
        if line.startswith('```'):
            fenced = not fenced
        if not line.strip() and not fenced:
            if cur:
                out.append('\n'.join(cur))
            cur = []
        else:
            cur.append(line)
    if cur:
        out.append('\n'.join(cur))
    return out


def plain(markdown: str) -> str:
    """Markdown as mail text: fences dropped (their lines kept as they are),
    links as their text with the target after, emphasis and backticks off."""
    out: List[str] = []
    fenced = False
    for line in markdown.splitlines():
        if line.startswith('```'):
            fenced = not fenced
            continue
        if fenced:
            out.append(line)
            continue
        line = re.sub(r'\[([^\]]+)\]\(([^)]+)\)', r'\1', line)
        line = re.sub(r'\*\*([^*]+)\*\*', r'\1', line)
        line = re.sub(r'(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])', r'\1', line)
        out.append(line.replace('`', ''))
    return '\n'.join(out).strip('\n')


def problems(report: FindingReport) -> List[str]:
    """What @report lacks of the lines every report opens with: a class of
    CLASSES, who meets it, the versions, and a mainline status with its
    evidence (a commit id of 12 hex digits or more, or a dated copy)."""
    out = [f'no "**{f}:**" line' for f in FIELDS if not report.fields.get(f)]
    cls = report.fields.get('Class', '')
    if cls and not any(cls.strip('`').startswith(c) for c in CLASSES):
        out.append(f'class "{cls[:40]}" is none of: {", ".join(CLASSES)}')
    mainline = report.fields.get('Mainline', '')
    if mainline and not re.search(r'\b[0-9a-f]{12,40}\b|\b20\d\d-\d\d-\d\d\b', mainline):
        out.append('the mainline line has neither a commit id (12+ hex digits) nor a dated copy '
                   '(YYYY-MM-DD)')
    return out


def all_reports() -> List[FindingReport]:
    return [read_report(p) for p in sorted(FINDINGS.glob('[0-9][0-9]-*.md'))]


def report_path(number: str) -> Path:
    found = sorted(FINDINGS.glob(f'{int(number):02d}-*.md'))
    if len(found) != 1:
        raise MailError(f'finding {number}: no report Documentation/findings/{number}-*.md')
    return found[0]


def posted_patch(kver: str, number: str) -> Path:
    """src/<kver>/fixes/<number>-*.patch, or the form posted on the pristine
    tree when the plan names one (upstream/<patch>)."""
    fixes = tree.series_dir(REPO, kver) / 'fixes'
    found = sorted(fixes.glob(f'{number}-*.patch'))
    if len(found) != 1:
        raise MailError(f'src/{kver}/fixes/{number}: no such patch')
    for s in fixseries.read_plan(fixes):
        if found[0].name in s.posted:
            return fixes / s.posted[found[0].name]
    return found[0]


def patch_text(patch: Path, who: str) -> str:
    """@patch as sent after the scissors: From/Subject header, [PATCH],
    signed off by @who last (fixseries.signed_off(): a backport keeps its
    author and upstream trailers; the placeholder author becomes @who)."""
    text = patch.read_text()
    head, sep, rest = text.partition('\n\n')
    subject = re.search(r'^Subject: (.*(?:\n .*)*)', head, re.M)
    author = re.search(r'^From: (.*)$', head, re.M)
    if not sep or not subject or not author:
        raise MailError(f'{patch.name}: not a format-patch file')
    subj = re.sub(r'^\[PATCH[^\]]*\]\s*', '', ' '.join(subject.group(1).split()))
    message, dashes, diff = rest.partition('\n---\n')
    if not dashes:
        raise MailError(f'{patch.name}: no "---" line before the diff')
    frm = who if seriesmake.PLACEHOLDER in author.group(1) else author.group(1)
    message = fixseries.signed_off(message, who)
    return f'From: {frm}\nSubject: [PATCH] {subj}\n\n{message.rstrip()}\n---\n{diff}'


def subject_of(patch_mail: str) -> str:
    return patch_mail.split('\n', 2)[1].removeprefix('Subject: ')


def compose(report: FindingReport, kver: str, patch: Path, who: str,
            people: Sequence[str], lists: Sequence[str]) -> str:
    """The mail of @report with @patch as its fix, to @people, Cc @lists."""
    missing = [name for name, labels in PARTS if report.part(labels) is None]
    if missing:
        raise MailError(f'{report.path.name}: no {", no ".join(missing)} part '
                        '(a paragraph opening with **Shortest reproducer.**, **Console**, '
                        '**Root cause.**, **Fix.**)')
    absent = [f for f in FIELDS if f not in report.fields]
    if absent:
        raise MailError(f'{report.path.name}: no {", ".join(absent)} line under the title')
    fix = patch_text(patch, who)
    head = [f'From: {who}', f'To: {", ".join(people)}']
    if lists:
        head.append(f'Cc: {", ".join(lists)}')
    head.append(f'Subject: [BUG] {report.title}')
    body = [plain(f'**{f}:** {report.fields[f]}') for f in FIELDS]
    for _, labels in PARTS:
        body.append(plain(report.part(labels) or ''))
    body.append(f'The fix, as a patch ("{subject_of(fix)}"; git am --scissors takes it):')
    return '\n'.join(head) + '\n\n' + '\n\n'.join(body) + '\n\n-- >8 --\n' + fix


def slug(title: str) -> str:
    return re.sub(r'[^a-z0-9]+', '-', title.lower()).strip('-')[:60]


def maintainers_dir(kver: str) -> Path:
    """A directory holding the pristine tree's MAINTAINERS and
    scripts/get_maintainer.pl (from the cached tree's baseline commit)."""
    t = tree.prepare(kver, REPO)
    dest = cache.cache_root() / f'maintainers-{t.version}'
    if not (dest / 'MAINTAINERS').is_file():
        (dest / 'scripts').mkdir(parents=True, exist_ok=True)
        for name in ('MAINTAINERS', 'scripts/get_maintainer.pl'):
            (dest / name).write_text(seriesmake.git(t.path, 'show', f'baseline:{name}') + '\n')
    return dest


Maintainers = Callable[[Sequence[Path]], Tuple[List[str], List[str]]]


def write_mails(kver: str, numbers: Sequence[str], who: str, out: Path,
                maintainers: Maintainers) -> int:
    """Write a mail per finding of @numbers to @out; 0 when all were made."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    rc = 0
    for number in numbers:
        try:
            report = read_report(report_path(number))
            fixes = report.fixes(kver)
            if len(fixes) != 1:
                raise MailError(f'{report.path.name}: names {len(fixes)} fixes for {kver} '
                                f'({", ".join(fixes) or "none"}); a mail carries one')
            patch = posted_patch(kver, fixes[0])
            people, lists = maintainers([patch])
            mail = compose(report, kver, patch, who, people, lists)
        except (MailError, seriesplan.SeriesError, OSError) as e:
            print(f'cpuhp-kunit: finding-mails: {e}', file=sys.stderr)
            rc = 1
            continue
        path = out / f'{report.number}-{slug(report.title)}.txt'
        path.write_text(mail)
        print(f'cpuhp-kunit: finding {report.number}: {path.relative_to(REPO) if path.is_relative_to(REPO) else path} '
              f'(To: {len(people)}, Cc: {len(lists)})')
    return rc


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--author', default='', help='"Name <email>" (default: git config)')
    ap.add_argument('--out', type=Path, help='default out/finding-mails/KVER')
    ap.add_argument('findings', nargs='*', default=list(DEFAULT),
                    help=f'finding numbers (default: {" ".join(DEFAULT)})')
    args = ap.parse_args(argv)
    out = (args.out or REPO / 'out' / 'finding-mails' / args.kver).resolve()
    try:
        who = seriesmake.author_of(args.author)
    except seriesplan.SeriesError as e:
        print(f'cpuhp-kunit: finding-mails: {e}', file=sys.stderr)
        return 2

    def job() -> int:
        work = maintainers_dir(args.kver)
        return write_mails(args.kver, args.findings, who, out,
                           lambda patches: seriesmake.maintainers(work, patches))

    return cache.locked(f'finding-mails {args.kver}', job)


if __name__ == '__main__':
    sys.exit(main())
