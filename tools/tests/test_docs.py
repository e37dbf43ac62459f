"""README.md and Documentation/: links resolve, knobs are documented, the
product speaks of the project alone.

- Every relative link of README.md and Documentation/**/*.md must name a
  file or directory of the repository, and a '#anchor' must name one of the
  headings of its page as GitHub makes anchors of them (lower case,
  punctuation dropped, spaces to hyphens, '-1', '-2' for repeats; headings
  in code blocks are no headings). README stays short: the detail lives in
  Documentation/.
- No file the repository tracks speaks of the way the work was organised
  rather than of the project: no issue numbers, no numbered or relative
  stops or sittings of the work, no names of tools that are not the
  project's (PROCESS_WORDS). A change is named by its commit, a moment by
  its date, a result by its measurement.
- Every knob the Makefile defines (`NAME ?=`) and every knob of the
  command line's table (python3 -m cpuhpk: KNOBS, ENVIRONMENT) has its row
  in Documentation/knobs.md's table, with the table's default, and every
  row's knob is the Makefile's and the table's; every command of the
  command line has its row in knobs.md's table of commands and every row
  there is a command; every target of .PHONY is written as `make <target>`
  somewhere in README or Documentation/; Documentation/internals.md names
  every module of tools/cpuhpk/.
- A figure is stated by one page, its owner, and linked from the others
  (FIGURES: the default set's mutant count, the x86 state table's counts,
  cpu.c's merged line coverage, arm64's branch coverage, the tools' test
  count, the QEMU boots of make test). A page other than the owner that
  states one fails; so does an owner whose figure disagrees with what the
  repository says where that can be worked out (mutants/*.patch counted,
  the recorded flat 6.12 console's sweep, the coverage gate's thresholds,
  the tests unittest discovers, the tier's jobs).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import subprocess
import unittest
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from cpuhpk import __main__ as cli
from cpuhpk.paths import REPO

LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)')
CODE = re.compile(r'`[^`\n]*`')
HEADING = re.compile(r'^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$')


def pages() -> List[Path]:
    return [REPO / 'README.md'] + sorted((REPO / 'Documentation').rglob('*.md'))


def prose(text: str) -> List[str]:
    """@text's lines with fenced and indented code blocks blanked (line numbers kept)."""
    out: List[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip(' ').startswith('```'):
            fenced = not fenced
            out.append('')
        elif fenced or line.startswith('    ') or line.startswith('\t'):
            out.append('')
        else:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading's text (before repeats are numbered)."""
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', heading)      # a link: its text
    text = text.replace('`', '').strip().lower()
    return re.sub(r'[^\w\- ]', '', text).replace(' ', '-')


def anchors(page: Path) -> Set[str]:
    """The anchors GitHub gives the headings of @page: a repeat gets -1, -2, ..."""
    out: Set[str] = set()
    seen: Dict[str, int] = {}
    for line in prose(page.read_text()):
        m = HEADING.match(line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f'{base}-{n}')
    return out


def links(page: Path) -> List[Tuple[int, str]]:
    """(line, target) of each link of @page outside code; a link's text may span lines."""
    text = '\n'.join(CODE.sub(lambda m: ' ' * len(m.group(0)), line)
                     for line in prose(page.read_text()))
    return [(text.count('\n', 0, m.start()) + 1, m.group(1) or m.group(2))
            for m in LINK.finditer(text)]


def broken(page: Path) -> List[str]:
    out = []
    for n, target in links(page):
        if re.match(r'[a-z][a-z0-9+.-]*:', target):
            continue        # http:, https:, mailto:
        path, _, anchor = target.partition('#')
        dest = (page.parent / path).resolve() if path else page
        where = f'{page.relative_to(REPO) if page.is_relative_to(REPO) else page}:{n}: {target}'
        if not dest.exists():
            out.append(f'{where}: no such file')
        elif not dest.is_relative_to(REPO):
            out.append(f'{where}: outside the repository')
        elif anchor and dest.suffix == '.md' and anchor not in anchors(dest):
            out.append(f'{where}: no such heading')
    return out


# --- the words of the work's organisation, not of the project -------------

# Each pattern is written so that it does not match its own source text.
# Legitimate uses it must let through: KCIDB's "issues" objects, the
# kernel's cpuhp_issue_call(), "issue" as a plain word, a kernel "helper",
# Python's start_new_session, a run that "stops".
PROCESS_WORDS: Tuple['re.Pattern[str]', ...] = tuple(re.compile(rx, re.I) for rx in (
    r'\bissues?[ ]?#?\d+',                         # an issue number
    r'\(#\d+\)',                                    # the same, bare
    r'\bstops?[ ]\d+\b',                           # a numbered stop
    r'\b(?:this|last|next|previous)[ ]stop\b',     # a relative one
    r'\bsess(?:ion)s?\b',
    r'\bwork[ ]periods?\b',
    r'\bsearch[ ]tools?\b|\bcode[ ]search\b',      # tools that are not the project's
    r'\bstored[ ]cop(?:y|ies)\b',
    r'\bsub-?agents?\b',
    r'\bseed[ ]0\d\d\b',                          # an item of a work list, not a stress seed
))


def tracked_files() -> List[Path]:
    """The files git tracks; outside a git checkout, every file but .git's and out/."""
    try:
        res = subprocess.run(['git', '-C', str(REPO), 'ls-files', '-z'], capture_output=True,
                             check=True)
        return [REPO / name for name in res.stdout.decode().split('\0') if name]
    except (OSError, subprocess.CalledProcessError):
        skip = {'.git', 'out', '__pycache__', '.mypy_cache'}
        return [p for p in REPO.rglob('*')
                if p.is_file() and not skip & set(p.relative_to(REPO).parts)]


def process_words(text: str) -> List[Tuple[int, str, str]]:
    """(line, the pattern, the words) of each process word in @text."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for rx in PROCESS_WORDS:
            for m in rx.finditer(line):
                found.append((n, rx.pattern, m.group(0)))
    return found


def process_words_in(paths: Iterable[Path]) -> List[str]:
    out = []
    for path in paths:
        if not path.is_file():
            continue        # deleted, not yet committed
        data = path.read_bytes()
        if b'\0' in data:
            continue        # binary
        text = data.decode('utf-8', errors='replace')
        rel = path.relative_to(REPO) if path.is_relative_to(REPO) else path
        out += [f'{rel}:{n}: {what}: {words!r}' for n, what, words in process_words(text)]
    return out


# --- knobs and targets -----------------------------------------------------

def makefile() -> str:
    return (REPO / 'Makefile').read_text()


def makefile_knobs(text: str) -> Set[str]:
    return set(re.findall(r'^([A-Z][A-Z0-9_]*)[ \t]*\?=', text, re.M))


def makefile_targets(text: str) -> Set[str]:
    """The targets of every .PHONY line (continuation lines joined)."""
    joined = text.replace('\\\n', ' ')
    return {t for line in re.findall(r'^\.PHONY[ \t]*:(.*)$', joined, re.M) for t in line.split()}


def table_knobs(text: str) -> Tuple[Set[str], Set[str]]:
    """The knobs of knobs.md's table rows, and of those the environment's ('(env)')."""
    knobs: Set[str] = set()
    env: Set[str] = set()
    for line in text.splitlines():
        if not line.startswith('| `'):
            continue
        cell = line.split('|')[1]
        names = set(re.findall(r'`([A-Z][A-Z0-9_]*)(?:=[^`]*)?`', cell))
        (env if '(env)' in cell else knobs).update(names)
    return knobs, env


def table_defaults(text: str) -> Dict[str, str]:
    """knob -> its default cell in knobs.md's table (a row of several
    knobs: their defaults apart by commas)."""
    out: Dict[str, str] = {}
    for line in text.splitlines():
        if not line.startswith('| `'):
            continue
        cells = line.split('|')
        names = re.findall(r'`([A-Z][A-Z0-9_]*)(?:=[^`]*)?`', cells[1])
        defaults = cells[2].split(',') if len(names) > 1 else [cells[2]]
        out.update(zip(names, (d.strip() for d in defaults)))
    return out


def table_commands(text: str) -> Set[str]:
    """The commands of knobs.md's table of commands: rows that begin with
    a lower-case `name`."""
    return set(re.findall(r'^\| `([a-z][a-z0-9-]*)` \|', text, re.M))


def undocumented_cli(knobs_md: str, knobs: Sequence[cli.Knob], environment: Sequence[str],
                     commands: Mapping[str, object]) -> List[str]:
    """What the command line knows that knobs.md does not, both ways; a
    default that is not the table's (a knob with one: its row's default
    is `it`, first; one without: no value in backquotes)."""
    documented, env = table_knobs(knobs_md)
    names = {k.name for k in knobs}
    out = [f'knob {k}: no row in Documentation/knobs.md' for k in sorted(names - documented)]
    out += [f'knob {k}: in Documentation/knobs.md, not in python3 -m cpuhpk\'s KNOBS'
            for k in sorted(documented - names)]
    out += [f'environment {k}: no "(env)" row in Documentation/knobs.md'
            for k in sorted(set(environment) - env)]
    out += [f'environment {k}: in Documentation/knobs.md, not in python3 -m cpuhpk\'s '
            'ENVIRONMENT' for k in sorted(env - set(environment))]
    defaults = table_defaults(knobs_md)
    for k in knobs:
        cell = defaults.get(k.name)
        if cell is None:
            continue
        if k.default and not cell.startswith(f'`{k.default}`'):
            out.append(f'knob {k.name}: default `{k.default}`, Documentation/knobs.md says {cell!r}')
        elif not k.default and cell.startswith('`'):
            out.append(f'knob {k.name}: no default, Documentation/knobs.md says {cell!r}')
    told = table_commands(knobs_md)
    out += [f'command {c}: no row in Documentation/knobs.md' for c in sorted(set(commands) - told)]
    out += [f'command {c}: in Documentation/knobs.md, not a command of python3 -m cpuhpk'
            for c in sorted(told - set(commands))]
    return out


def documented_targets(texts: Iterable[str]) -> Set[str]:
    """Every target written as `make [options] <target>` in @texts."""
    out: Set[str] = set()
    for text in texts:
        text = text.replace('`', ' ')
        out |= set(re.findall(r'\bmake\s+(?:-[A-Za-z]+\s+)*([a-z][a-z0-9-]*)(?![\w-])', text))
    return out


def undocumented(make_text: str, knobs_md: str, docs: Iterable[str]) -> List[str]:
    knobs, env = table_knobs(knobs_md)
    defined = makefile_knobs(make_text)
    out = [f'knob {k}: no row in Documentation/knobs.md' for k in sorted(defined - knobs)]
    out += [f'knob {k}: in Documentation/knobs.md, not in the Makefile'
            for k in sorted(knobs - defined)]
    told = documented_targets(docs)
    out += [f'target {t}: no "make {t}" in README.md or Documentation/'
            for t in sorted(makefile_targets(make_text) - told)]
    return out



# --- figures: each stated once, by its owner --------------------------------

@dataclasses.dataclass(frozen=True)
class Figure:
    """A figure of the project: the one page that states it, how a statement
    of it reads, and what the repository says of it where that can be worked
    out."""
    name: str
    owner: str                  # the page, relative to the repository
    statement: str              # regex of the owner's statement; group 1 the figure
    elsewhere: str              # regex of a statement on any other page; '{value}': the owner's
    check: Optional[Callable[['re.Match[str]'], Optional[str]]] = None  # None: agrees


def page_texts() -> Dict[str, str]:
    """Every page by its path relative to the repository, lines joined (a
    statement may span lines), code blocks left out."""
    return {str(p.relative_to(REPO)): '\n'.join(prose(p.read_text())) for p in pages()}


def number(text: str) -> int:
    return int(text.replace(',', ''))


def _mutants(m: 're.Match[str]') -> Optional[str]:
    n = len(list((REPO / 'mutants').glob('*.patch')))
    return None if number(m.group(1)) == n else f'mutants/*.patch holds {n}'


@functools.lru_cache(maxsize=None)
def recorded_table() -> Dict[str, int]:
    """The sweep's counts in the recorded flat guest of make coverage on 6.12's
    default kernel, as states.txt's first line gives them."""
    from cpuhpk import judging, ktap, states
    from tests import recorded
    console = ktap.read_console(REPO / 'tools' / 'tests' / 'data' / 'flat_6.12_console.log')
    exp = recorded.expectations('', {'kver': '6.12', 'config': 'default', 'smp': '4',
                                     'fixes': '0', 'topology': 'flat', 'arch': 'x86_64'},
                                suites=recorded.SWEEP_SUITES)
    _, root, v = judging.judge_console(console, exp)
    table = states.table(console.lines)
    states.outcomes(table, root, v)
    return {'states': len(table),
            'refused down': sum(s.cells.get('down') == 'refused' for s in table)}


def _table(key: str) -> Callable[['re.Match[str]'], Optional[str]]:
    def check(m: 're.Match[str]') -> Optional[str]:
        n = recorded_table()[key]
        return None if number(m.group(1)) == n else (
            f'the recorded flat 6.12 console (tools/tests/data/flat_6.12_console.log) gives {n}')
    return check


def _coverage(thresholds: str, column: int) -> Callable[['re.Match[str]'], Optional[str]]:
    """The gate holds the measured figure less about 2 points: the figure lies
    at or above its threshold and no more than 3 points over it; its count
    (covered/all) gives the same percentage."""
    def check(m: 're.Match[str]') -> Optional[str]:
        value = float(m.group(1))
        if m.group(2) and m.group(3) and round(100 * int(m.group(2)) / int(m.group(3)), 1) != value:
            return f'{m.group(2)}/{m.group(3)} is not {value}%'
        for line in (REPO / 'tools' / thresholds).read_text().splitlines():
            if line.startswith('kernel/cpu.c '):
                limit = float(line.split()[column])
                if not limit <= value <= limit + 3:
                    return f'tools/{thresholds} gates kernel/cpu.c at {limit}%'
                return None
        return f'tools/{thresholds} has no kernel/cpu.c line'
    return check


def tools_test_count() -> int:
    """The tests make tools-test runs (unittest's discovery, as the Makefile runs it)."""
    tools = REPO / 'tools'
    return unittest.defaultTestLoader.discover(str(tools / 'tests'),
                                               top_level_dir=str(tools)).countTestCases()


def _tools_tests(m: 're.Match[str]') -> Optional[str]:
    """Within a tenth of the count: a figure with its date, not a counter."""
    n = tools_test_count()
    return None if abs(number(m.group(1)) - n) <= n // 10 else f'make tools-test runs {n}'


def tier_boots() -> int:
    """QEMU boots of make test with every job run: a coverage job boots each
    guest topology, then the selftest anchor (tools/cpuhpk/coverage.py); a
    fixes-test job runs each of the command line's FIXES_RUNS."""
    from cpuhpk import arch, matrix
    per_job = {'coverage': len(arch.get(arch.HOST).topologies) + 1,
               'fixes-test': len(cli.FIXES_RUNS)}
    return sum(per_job[job.split()[0]] for job in matrix.TIER)


def _boots(m: 're.Match[str]') -> Optional[str]:
    n = tier_boots()
    return None if number(m.group(1)) == n else f'the tier (tools/cpuhpk/matrix.py) boots {n}'


COVERAGE = 'Documentation/coverage.md'
PERCENT = r'(?<![\d.]){value}%'
FIGURES: Tuple[Figure, ...] = (
    Figure('the default set\'s mutant count', 'Documentation/mutation.md',
           r'the default set, (\d+) mutants', r'\b\d+(?: of \d+)? mutants\b', _mutants),
    Figure('x86 state table: named states', 'Documentation/sweep.md',
           r'(\d+) named states \(\d+ bp', r'\b\d+ named states\b|\b{value} states\b',
           _table('states')),
    Figure('x86 state table: refused on the way down', 'Documentation/sweep.md',
           r'down \d+ clean, (\d+) refused', r'\b{value} refused\b', _table('refused down')),
    Figure('cpu.c line coverage, five guests merged, 6.12', COVERAGE,
           r'\*\*merged\*\* \| \*\*(\d+\.\d)% \((\d+)/(\d+)\)', PERCENT,
           _coverage('coverage-thresholds-6.12', 1)),
    Figure('cpu.c line coverage, five guests merged, 6.1', COVERAGE,
           r'merged (\d+\.\d)% of lines\s+\((\d+)/(\d+)\)', PERCENT,
           _coverage('coverage-thresholds-6.1', 1)),
    Figure('cpu.c branch coverage on arm64', 'Documentation/arm64.md',
           r'(\d+\.\d)% branches\s+\((\d+)/(\d+)', PERCENT,
           _coverage('coverage-thresholds-6.12-arm64', 3)),
    Figure('the tools\' test count', 'Documentation/performance.md',
           r'\b(\d[\d,]*) tests\b', r'\b\d[\d,]* (?:unit )?tests\b', _tools_tests),
    Figure('QEMU boots of make test', 'Documentation/ci.md',
           r'boots QEMU (\d+) times', r'\b\d+ (?:QEMU )?boots\b|\bboots QEMU \d+ times\b',
           _boots),
)


def spaced(rx: str) -> str:
    """@rx with each space standing for any run of white space: a statement
    may be wrapped."""
    return rx.replace(' ', r'\s+')


def line_of(text: str, at: int) -> int:
    return text.count('\n', 0, at) + 1


def figure_problems(texts: Dict[str, str],
                    figures: Iterable[Figure] = FIGURES) -> List[str]:
    """Each page but its owner that states a figure, each owner that states
    it not once or otherwise than the repository says."""
    out = []
    for f in figures:
        owner = texts.get(f.owner, '')
        found = list(re.finditer(spaced(f.statement), owner))
        if len(found) != 1:
            out.append(f'{f.owner}: states {f.name} {len(found)} times, not once')
            continue
        m = found[0]
        wrong = f.check(m) if f.check else None
        if wrong:
            out.append(f'{f.owner}:{line_of(owner, m.start())}: {f.name} is {m.group(1)}, '
                       f'but {wrong}')
        elsewhere = re.compile(spaced(f.elsewhere.replace('{value}', re.escape(m.group(1)))))
        for page, text in sorted(texts.items()):
            if page == f.owner:
                continue
            for e in elsewhere.finditer(text):
                out.append(f'{page}:{line_of(text, e.start())}: states {f.name} '
                           f'({e.group(0)!r}): link to {f.owner} instead')
    return out


class DocsTest(unittest.TestCase):
    def test_links_resolve(self) -> None:
        self.assertGreater(len(pages()), 10)
        self.assertEqual([b for p in pages() for b in broken(p)], [])

    def test_every_page_is_reachable_from_the_index(self) -> None:
        index = REPO / 'Documentation' / 'README.md'
        linked = {(index.parent / t.partition('#')[0]).resolve() for _, t in links(index)}
        findings = REPO / 'Documentation' / 'findings' / 'README.md'
        linked |= {(findings.parent / t.partition('#')[0]).resolve() for _, t in links(findings)}
        for page in pages()[1:]:
            if page.name != 'README.md':
                self.assertIn(page.resolve(), linked, f'{page} is linked from no index')

    def test_a_broken_link_is_found(self) -> None:
        tmp = REPO / 'Documentation' / '.test-broken-link.md'
        try:
            tmp.write_text('[x](no-such-page.md) [y](verdict.md#no-such-heading) [z](verdict.md)\n'
                           '[w](verdict.md#known-failures) [v](../../outside.md) [a\n'
                           'link over two lines](verdict.md#nor-this-one)\n'
                           '`[not](a-link.md)`\n\n    [in](code.md)\n')
            got = broken(tmp)
            self.assertEqual(len(got), 4, got)
            self.assertIn(':2: ../../outside.md: no such file', got[2])
            self.assertIn(':2: verdict.md#nor-this-one: no such heading', got[3])
        finally:
            tmp.unlink()

    def test_anchors_as_github_makes_them(self) -> None:
        tmp = REPO / 'Documentation' / '.test-anchors.md'
        try:
            tmp.write_text("# The tier, cold\n## What's in `Debian`'s kernel\n## Notes\n"
                           "## Notes\n```\n# not a heading\n```\n#nor this\n")
            self.assertEqual(anchors(tmp), {'the-tier-cold', 'whats-in-debians-kernel', 'notes',
                                            'notes-1'})
        finally:
            tmp.unlink()

    def test_readme_is_short(self) -> None:
        self.assertLessEqual(len((REPO / 'README.md').read_text().splitlines()), 200)

    def test_no_process_words_in_tracked_files(self) -> None:
        files = tracked_files()
        self.assertGreater(len(files), 100)
        self.assertEqual(process_words_in(files), [])

    def test_process_words_are_found_and_legitimate_uses_pass(self) -> None:
        # Built from pieces, so that this file holds none of them whole.
        bad = ['the CI of st' + 'op 36', 'fixed in iss' + 'ue 26', '(iss' + 'ue #8)',
               'what (#' + '9) asked', 'Iss' + "ue 28's break", 'the ne' + 'xt stop',
               'last st' + 'op', '(sess' + 'ion 4)', 'this work per' + 'iod',
               'the sear' + 'ch tool', 'the code sear' + 'ch gives', 'the stor' + 'ed copy',
               'a sub' + 'agent', '(se' + 'ed 011: the check)']
        for text in bad:
            with self.subTest(text=text):
                self.assertEqual(len(process_words(text)), 1, text)
        good = ['cpuhp_issue_call()', 'one issue per known failure', 'KCIDB issues, incidents',
                'to address this issue.', 'start_new_session=True', 'a helper of kernel/cpu.c',
                'it stops at operation 0', 'the run was stopped at 11:11', 'stop_machine',
                'a stop at the timeout', 'x86 #3', 'seed 3909835271 op 295', 'SEED=0']
        for text in good:
            with self.subTest(text=text):
                self.assertEqual(process_words(text), [], text)

    def test_a_process_word_in_a_file_is_found(self) -> None:
        tmp = REPO / 'Documentation' / '.test-process-word.md'
        try:
            tmp.write_text('Measured in the CI of st' + 'op 36.\n')
            self.assertEqual(len(process_words_in([tmp])), 1)
        finally:
            tmp.unlink()

    def test_every_knob_and_target_is_documented(self) -> None:
        docs = [p.read_text() for p in pages()]
        knobs_md = (REPO / 'Documentation' / 'knobs.md').read_text()
        self.assertGreater(len(makefile_knobs(makefile())), 20)
        self.assertGreater(len(makefile_targets(makefile())), 20)
        self.assertEqual(undocumented(makefile(), knobs_md, docs), [])

    def test_every_knob_and_command_of_the_command_line_is_documented(self) -> None:
        knobs_md = (REPO / 'Documentation' / 'knobs.md').read_text()
        self.assertGreater(len(table_commands(knobs_md)), 20)
        self.assertEqual(undocumented_cli(knobs_md, cli.KNOBS, [n for n, _ in cli.ENVIRONMENT],
                                          cli.COMMANDS), [])

    def test_an_undocumented_knob_or_command_of_the_command_line_is_found(self) -> None:
        knobs_md = (REPO / 'Documentation' / 'knobs.md').read_text()
        env = [n for n, _ in cli.ENVIRONMENT]
        knobs = [*cli.KNOBS, cli.Knob('NEW_KNOB', '', '')]
        commands = {**cli.COMMANDS, 'brand-new': cli.Command()}
        self.assertEqual(undocumented_cli(knobs_md, knobs, env + ['CPUHP_KUNIT_NEW'], commands),
                         ['knob NEW_KNOB: no row in Documentation/knobs.md',
                          'environment CPUHP_KUNIT_NEW: no "(env)" row in Documentation/knobs.md',
                          'command brand-new: no row in Documentation/knobs.md'])
        gone = (knobs_md.replace('| `SMP` | `4` |', '| `SMP` | `2` |')
                .replace('| `CONSOLE` | |', '| `CONSOLE` | `c.log` |')
                + '| `GONE_KNOB` | | gone |\n| `GONE_ENV` (env) | | gone |\n'
                '| `gone-command` | | gone |\n')
        self.assertEqual(undocumented_cli(gone, cli.KNOBS, env, cli.COMMANDS),
                         ["knob GONE_KNOB: in Documentation/knobs.md, not in python3 -m cpuhpk's "
                          'KNOBS',
                          "environment GONE_ENV: in Documentation/knobs.md, not in python3 -m "
                          "cpuhpk's ENVIRONMENT",
                          "knob SMP: default `4`, Documentation/knobs.md says '`2`'",
                          "knob CONSOLE: no default, Documentation/knobs.md says '`c.log`'",
                          'command gone-command: in Documentation/knobs.md, not a command of '
                          'python3 -m cpuhpk'])

    def test_an_undocumented_knob_or_target_is_found(self) -> None:
        docs = [p.read_text() for p in pages()]
        knobs_md = (REPO / 'Documentation' / 'knobs.md').read_text()
        make = makefile() + '\nNEW_KNOB ?= 1\n.PHONY: brand-new\n'
        self.assertEqual(undocumented(make, knobs_md, docs),
                         ['knob NEW_KNOB: no row in Documentation/knobs.md',
                          'target brand-new: no "make brand-new" in README.md or Documentation/'])
        gone = knobs_md + '| `GONE_KNOB` | | a knob the Makefile no longer has |\n'
        self.assertEqual(undocumented(makefile(), gone, docs),
                         ['knob GONE_KNOB: in Documentation/knobs.md, not in the Makefile'])
        # make series-test does not document make series.
        self.assertEqual(documented_targets(['`make series-test` and make\nseries-check']),
                         {'series-test', 'series-check'})

    def test_each_figure_is_stated_by_its_owner_alone(self) -> None:
        self.assertEqual(figure_problems(page_texts()), [])

    def test_a_figure_stated_twice_or_wrong_is_found(self) -> None:
        texts = page_texts()
        mutation = 'Documentation/mutation.md'
        n = len(list((REPO / 'mutants').glob('*.patch')))
        mutants = [f for f in FIGURES if f.owner == mutation]
        self.assertEqual(figure_problems(texts, mutants), [])
        # Another page states it: found, with its line.
        told = dict(texts, **{'README.md': texts['README.md'] + f'\nThe {n} mutants all die.\n'})
        got = figure_problems(told, mutants)
        self.assertEqual(len(got), 1, got)
        self.assertRegex(got[0], rf"^README\.md:\d+: states .*'{n} mutants'.*link to "
                                 rf'Documentation/mutation\.md')
        # The owner's figure is not the repository's.
        stale = dict(texts, **{mutation: texts[mutation].replace(
            f'the default set, {n} mutants', f'the default set, {n - 1} mutants')})
        got = figure_problems(stale, mutants)
        self.assertEqual(len(got), 1, got)
        self.assertIn(f'is {n - 1}, but mutants/*.patch holds {n}', got[0])
        # The owner no longer states it.
        gone = dict(texts, **{mutation: texts[mutation].replace('the default set, ', '')})
        self.assertEqual(figure_problems(gone, mutants),
                         [f'{mutation}: states the default set\'s mutant count 0 times, not once'])
        # An owner's value echoed elsewhere: a coverage percentage.
        arm64 = [f for f in FIGURES if f.owner == 'Documentation/arm64.md']
        value = re.search(spaced(arm64[0].statement), texts['Documentation/arm64.md'])
        assert value is not None
        echoed = dict(texts, **{COVERAGE: texts[COVERAGE] + f'\narm64: {value.group(1)}%.\n'})
        got = figure_problems(echoed, arm64)
        self.assertEqual(len(got), 1, got)
        self.assertTrue(got[0].startswith(f'{COVERAGE}:'), got)

    def test_a_figure_checks_against_the_repository(self) -> None:
        self.assertEqual(recorded_table(), {'states': 59, 'refused down': 40})
        self.assertEqual(tier_boots(), 19)
        self.assertGreater(tools_test_count(), 500)
        check = _coverage('coverage-thresholds-6.12', 1)
        m = re.match(r'(\S+) \((\d+)/(\d+)\)', '99.9 (807/890)')
        assert m is not None
        self.assertIn('807/890 is not 99.9%', check(m) or '')
        m = re.match(r'(\S+)()()', '99.9')
        assert m is not None
        self.assertIn('gates kernel/cpu.c at', check(m) or '')

    def test_internals_names_every_module(self) -> None:
        text = (REPO / 'Documentation' / 'internals.md').read_text()
        modules = sorted(p.name for p in (REPO / 'tools' / 'cpuhpk').glob('*.py')
                         if p.name != '__init__.py')
        self.assertGreater(len(modules), 20)
        self.assertEqual([m for m in modules if f'`{m}`' not in text], [])


if __name__ == '__main__':
    unittest.main()
