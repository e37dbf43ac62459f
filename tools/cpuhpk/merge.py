"""`make merge-results DIRS="out/a out/b ..."`: one report of many CI jobs.

Each directory is the out/ directory of one job: a run (make run, make
coverage: verdict.json, junit.xml, coverage.info) or a mutant set or shard
(make mutate: report.json, junit.xml). Writes to out/merged/:

  junit.xml     every job's testsuites, named '<job>: <suite>', plus a
                'cpuhp-kunit merge' suite with one error per problem of the
                merge itself
  coverage-<KVER>.info, html-<KVER>/
                lcov -a of the jobs' coverage.info, per kernel series (two
                series have two different sources); genhtml's report
  mutants.md    the mutants of every shard, with the kill ratio per set and
                overall
  kcidb.json    the runs' KCIDB reports in one, each object once (kcidb.py)
  findings.json the jobs' problems and known failures counted by key
                (verdict.py: a kernel report's or failure's title), each
                finding once however many jobs, cases or parameters hit it,
                with where it was seen
  summary.txt   one line per job, the findings, the problems, PASS or FAIL
  index.html    the same as a page, each job linked to its own index.html

Red (exit 1) when a job is red, a directory holds no result, two
directories are the same job, a mutant is in two shards, or the shards of a
set do not add up to the set (the union of the shards must be every mutant).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from cpuhpk import cache, junit, kcidb, kcidbrun, page, say, verdict

MERGE_SUITE = 'cpuhp-kunit merge'
# lcov's SF: paths name the tree where the job built: <...>/linux-<version>/<file>.
TREE_PATH = re.compile(r'^SF:.*/(linux-[0-9][^/]*/.+)$')


@dataclasses.dataclass
class Job:
    path: Path
    label: str                          # 'KVER=6.12 CONFIG=debug', 'mutate KVER=6.12 ...'
    ok: bool
    counts: str
    kver: str = ''
    mutants: Optional[Dict[str, Any]] = None     # report.json of a make mutate
    # A run's problems and known failures (verdict.json).
    problems: List[verdict.Problem] = dataclasses.field(default_factory=list)
    known: List[verdict.Problem] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Finding:
    """One finding of the merge: every problem of every job with its key."""
    key: str
    title: str
    category: str
    kind: str
    known: bool                         # a known failure wherever it was seen
    seen: List[Tuple[str, str]] = dataclasses.field(default_factory=list)  # (job, case)

    @property
    def jobs(self) -> List[str]:
        return list(dict.fromkeys(job for job, _ in self.seen))

    def line(self) -> str:
        what = f'{self.category}:{self.kind}' if self.kind else self.category
        return (f'{len(self.seen)}x in {len(self.jobs)} job(s): [{what}] {self.title}'
                + (' (known failure)' if self.known else ''))


def findings(jobs: Sequence[Job]) -> List[Finding]:
    """The problems and known failures of @jobs, one Finding per key: the same
    report in two jobs, or in many cases of one, is counted once."""
    out: Dict[str, Finding] = {}
    for job in jobs:
        for known, problems in ((False, job.problems), (True, job.known)):
            for p in problems:
                # A report's or failure's title names it; anything else is
                # named by its case and message.
                title = p.title if p.title and p.category in ('kernel-log', 'failed') else str(p)
                f = out.setdefault(p.ident(), Finding(p.ident(), title, p.category, p.kind,
                                                       known))
                f.known = f.known and known
                f.seen.append((job.label, p.name))
    return sorted(out.values(), key=lambda f: (f.known, -len(f.jobs), -len(f.seen), f.title))


def read_job(d: Path) -> Job:
    """What one directory holds; say.PrepareError when it holds no result."""
    report, verdict_path = d / 'report.json', d / 'verdict.json'
    if (d / 'series.json').is_file():
        try:
            data = json.loads((d / 'series.json').read_text())
            checks = data['checks']
            good = sum(bool(c['ok']) for c in checks)
        except (ValueError, KeyError, TypeError) as e:
            raise say.PrepareError(f'{d}: series.json is unreadable: {e}') from None
        return Job(d, f"{data.get('kind', 'series')} KVER={data.get('kver', '?')}",
                   data.get('verdict') == 'pass' and bool(checks) and good == len(checks),
                   f'{good}/{len(checks)} checks', '')
    if report.is_file():
        try:
            data = json.loads(report.read_text())
            outcomes = data['outcomes']
            killed = sum(o['verdict'] == 'killed' for o in outcomes)
        except (ValueError, KeyError, TypeError) as e:
            raise say.PrepareError(f'{d}: report.json is unreadable: {e}') from None
        label = (f"mutate KVER={data.get('kver', '?')} CONFIG={data.get('config', '?')}"
                 + (f" STRICT={data['strict']}" if str(data.get('strict', '0')) != '0' else '')
                 + (f" MUTANTS=mutants/{data['set']}" if data.get('set') else '')
                 + (f" SHARD={data['shard']}" if data.get('shard') else ''))
        return Job(d, label, killed == len(outcomes), f'{killed}/{len(outcomes)} killed',
                   str(data.get('kver', '')), data)
    if verdict_path.is_file():
        try:
            v, context = verdict.read_json(verdict_path)
        except (ValueError, KeyError, TypeError) as e:
            raise say.PrepareError(f'{d}: verdict.json is unreadable: {e}') from None
        label = ' '.join(f'{k.upper()}={context[k]}' for k in ('kver', 'config', 'smp', 'topology',
                                                               'fixes', 'strict', 'filter')
                         if context.get(k) and not (k, context[k]) in (
                             ('smp', '4'), ('topology', 'flat'), ('fixes', '0'), ('strict', '0')))
        passed, failed, skipped, known = v.closing_counts()
        return Job(d, label or d.name, v.ok, f'{passed} passed, {failed} failed, '
                   f'{skipped} skipped, {known} known', context.get('kver', ''),
                   problems=v.problems, known=v.known)
    raise say.PrepareError(f'{d}: no verdict.json, report.json or series.json: not the out/ '
                           'directory of a make run, coverage, mutate or series-test')


def merge_junit(jobs: Sequence[Job], problems: Sequence[str]) -> ET.ElementTree:
    suites: List[ET.Element] = []
    for job in jobs:
        path = job.path / 'junit.xml'
        try:
            src = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as e:
            suites.append(junit.checks_suite(f'{job.label}: {MERGE_SUITE}', [junit.Check(
                'junit.xml', 'error', f'{path}: {e}', classname=job.label)]))
            continue
        for suite in src.iter('testsuite'):
            suite.set('name', f"{job.label}: {suite.get('name', '')}")
            for tc in suite.iter('testcase'):
                tc.set('classname', f"{job.label}: {tc.get('classname', '')}")
            suites.append(suite)
    if problems:
        suites.append(junit.checks_suite(MERGE_SUITE, [
            junit.Check(f'problem {i}', 'error', p, classname=MERGE_SUITE)
            for i, p in enumerate(problems, 1)]))
    for suite in suites:
        for each in suite.iter('testsuite'):
            junit.count(each)
    return junit.document(suites, tuple(junit.COUNTS))


def mutant_sets(jobs: Sequence[Job]) -> Tuple[List[str], List[str]]:
    """The mutants table and the merge's problems with the shards."""
    sets: Dict[Tuple[str, str, str, str], List[Job]] = {}
    for job in jobs:
        if job.mutants is not None:
            m = job.mutants
            sets.setdefault((str(m.get('kver')), str(m.get('config')),
                             str(m.get('strict', '0')), str(m.get('set') or '')),
                            []).append(job)
    table: List[str] = []
    problems: List[str] = []
    all_killed = all_count = 0
    for (kver, config, strict, set_), shards in sorted(sets.items()):
        seen: Dict[str, Job] = {}
        rows: List[str] = []
        killed = 0
        for job in shards:
            assert job.mutants is not None
            for o in job.mutants['outcomes']:
                name = o['mutant']
                if name in seen:
                    problems.append(f'mutant {name} is in two shards: {seen[name].path} and '
                                    f'{job.path}')
                    continue
                seen[name] = job
                rows.append(f"| {name} | {o['promise']} | {o['verdict']} | {o['by']} | "
                            f"{job.mutants.get('shard') or '-'} |")
                killed += o['verdict'] == 'killed'
        problems += shard_problems(kver, config, shards, set_)
        all_killed += killed
        all_count += len(rows)
        table += [f'## KVER={kver} CONFIG={config}' + (' STRICT=1' if strict == '1' else '')
                  + (f' MUTANTS=mutants/{set_}' if set_ else ''),
                  '', f'{killed}/{len(rows)} killed ({100.0 * killed / max(len(rows), 1):.1f}%)',
                  '', '| mutant | promise broken | verdict | killed by / why not | shard |',
                  '|---|---|---|---|---|', *sorted(rows), '']
    if sets:
        table.insert(0, f'mutants overall: {all_killed}/{all_count} killed '
                        f'({100.0 * all_killed / max(all_count, 1):.1f}%)\n')
    return table, problems


def shard_problems(kver: str, config: str, shards: Sequence[Job], set_: str = '') -> List[str]:
    """Shards 1..N of one set all there, once, adding up to the whole set."""
    name = f'the mutants of KVER={kver} CONFIG={config}' + (f' in mutants/{set_}' if set_ else '')
    specs = [str((j.mutants or {}).get('shard') or '') for j in shards]
    totals = {int((j.mutants or {}).get('total', -1)) for j in shards}
    count = sum(len((j.mutants or {}).get('outcomes', [])) for j in shards)
    if '' in specs:
        if len(specs) > 1:
            return [f'{name}: a whole set and shards of it at once']
    else:
        ns = {s.partition('/')[2] for s in specs}
        if len(ns) != 1:
            return [f'{name}: shards of different splits: {", ".join(sorted(specs))}']
        n = int(ns.pop())
        have = sorted(int(s.partition('/')[0]) for s in specs)
        if have != list(range(1, n + 1)):
            missing = sorted(set(range(1, n + 1)) - set(have))
            return [f'{name}: shards {", ".join(f"{i}/{n}" for i in missing) or "twice"} '
                    f'missing' if missing else f'{name}: a shard is there twice']
    if len(totals) != 1 or count != min(totals):
        return [f'{name}: the shards hold {count} mutants, the set has '
                f'{", ".join(str(t) for t in sorted(totals)) or "?"}']
    return []


def merge_coverage(jobs: Sequence[Job], out: Path) -> List[str]:
    """coverage-<KVER>.info and html-<KVER>/ per kernel series; returns problems."""
    by_kver: Dict[str, List[Path]] = {}
    for job in jobs:
        if (job.path / 'coverage.info').is_file():
            by_kver.setdefault(job.kver or '?', []).append(job.path / 'coverage.info')
    problems = []
    for kver, infos in sorted(by_kver.items()):
        stage = out / f'stage-{kver}'
        stage.mkdir(parents=True, exist_ok=True)
        args: List[str] = []
        for i, info in enumerate(infos):
            # Paths relative to the cache, so jobs of other machines add up.
            text = '\n'.join(TREE_PATH.sub(r'SF:\1', ln) for ln in info.read_text().splitlines())
            (stage / f'{i}.info').write_text(text + '\n')
            args += ['-a', str(stage / f'{i}.info')]
        merged = out / f'coverage-{kver}.info'
        res = subprocess.run(['lcov', '--quiet', '--rc', 'lcov_branch_coverage=1', *args,
                              '-o', str(merged)], capture_output=True, text=True, check=False)
        shutil.rmtree(stage)
        if res.returncode != 0:
            problems.append(f'lcov -a of {len(infos)} tracefiles failed: {res.stderr.strip()}')
            continue
        # Sources are read from the cache when this machine has the tree.
        src = cache.cache_root()
        missing = [] if all((src / ln[3:]).is_file() for ln in merged.read_text().splitlines()
                            if ln.startswith('SF:')) else ['--ignore-errors', 'source']
        if missing:
            say.log(f'KVER={kver}: the tree is not in {src}: html without source lines '
                    '(make prepare first to have them)')
        # Absolute: genhtml runs in the cache, where the sources are.
        res = subprocess.run(['genhtml', '--quiet', '--branch-coverage', *missing,
                              '--output-directory', str((out / f'html-{kver}').resolve()),
                              str(merged.resolve())],
                             cwd=src if not missing else out, capture_output=True, text=True,
                             check=False)
        if res.returncode != 0:
            problems.append(f'genhtml of {merged} failed: {res.stderr.strip()}')
        say.log(f'KVER={kver}: {len(infos)} tracefiles -> {merged}')
    return problems


def merge(dirs: Sequence[Path], out: Path) -> int:
    problems: List[str] = []
    jobs: List[Job] = []
    for d in dirs:
        if d.resolve() == out.resolve():
            continue        # DIRS=out/* names the merge's own output too
        try:
            jobs.append(read_job(d))
        except say.PrepareError as e:
            problems.append(str(e))
    labels: Dict[str, Path] = {}
    for job in jobs:
        if job.label in labels:
            problems.append(f'{labels[job.label]} and {job.path} are the same job '
                            f'({job.label})')
        labels.setdefault(job.label, job.path)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    table, shard_issues = mutant_sets(jobs)
    problems += shard_issues
    if table:
        (out / 'mutants.md').write_text('\n'.join(table) + '\n')
    problems += merge_coverage(jobs, out)
    merge_junit(jobs, problems).write(out / 'junit.xml', encoding='utf-8',
                                      xml_declaration=True)
    try:
        reports = [kcidbrun.report(j.path) for j in jobs if (j.path / 'verdict.json').is_file()]
        if reports:
            kcidb.write(out / 'kcidb.json', kcidb.merge(reports))
    except kcidbrun.ExportError as e:
        problems.append(str(e))
    ok = bool(jobs) and all(j.ok for j in jobs) and not problems
    found = findings(jobs)
    (out / 'findings.json').write_text(json.dumps(
        [{'key': f.key, 'title': f.title, 'category': f.category, 'kind': f.kind,
          'known': f.known, 'count': len(f.seen), 'jobs': f.jobs,
          'seen': [{'job': j, 'case': c} for j, c in f.seen]} for f in found], indent=1) + '\n')
    lines = [f"{'PASS' if j.ok else 'FAIL'}  {j.label:45} {j.counts}  ({j.path})" for j in jobs]
    if found:
        lines.append(f'findings: {len(found)} distinct, {sum(len(f.seen) for f in found)} '
                     f'in all ({sum(not f.known for f in found)} red, '
                     f'{sum(f.known for f in found)} known failures)')
        lines += [f'  {f.line()}' for f in found]
    lines += [f'merge problem: {p}' for p in problems]
    if table:
        lines.append(table[0].strip())
    if not dirs:
        lines.append('no directories given')
    lines.append(f'cpuhp-kunit: merged {len(jobs)} job(s): ' + ('PASS' if ok else 'FAIL'))
    (out / 'summary.txt').write_text('\n'.join(lines) + '\n')
    rows = [{'ok': j.ok, 'label': j.label, 'counts': j.counts, 'path': str(j.path),
             'page': os.path.relpath(j.path / 'index.html', out)
             if (j.path / 'index.html').is_file() else ''} for j in jobs]
    (out / 'index.html').write_text(page.merge_page(ok, rows, problems, table, [
        {'title': f.title, 'category': f.category, 'kind': f.kind, 'known': f.known,
         'count': len(f.seen), 'jobs': f.jobs, 'cases': list(dict.fromkeys(c for _, c in f.seen))}
        for f in found]))
    print('\n'.join(lines))
    return 0 if ok else 1


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--out', type=Path, default=Path('out') / 'merged')
    ap.add_argument('dirs', nargs='*', type=Path)
    args = ap.parse_args(argv)
    return merge(args.dirs, args.out)


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
