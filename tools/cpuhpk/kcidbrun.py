"""A run's out/ directory as KCIDB objects (schema v5.3): report().

report() reads the run's verdict.json, console.log and coverage.info;
kcidb.py writes, merges and validates what it returns.

What a run becomes:

  checkout   the tested source: Debian's linux-source-<KVER> (its package
             and upstream version), or the TREE= tree and commit, with the
             cpuhp-kunit patches (src/<KVER>/series, FIXES=1); its id is a
             hash of those, so runs of one source share it
  build      one per run: architecture, CONFIG= as config_name, the
             compiler the console's boot banner names, series and FIXES in
             misc; its id is a hash of the run's verdict.json and console.log
  tests      under one top-level node, cpuhp-kunit (KCIDB's catalog of test
             paths names programs at the top): one per KUnit case, or per
             parameter, path cpuhp-kunit.<suite>.<case>[.<param>] (each part
             made of [a-zA-Z0-9_-], see path_part()); one per problem of the
             run as a whole, path cpuhp-kunit.run.<category>[.<kind>]; the
             coverage of the profiled files as DONE tests with a number in %,
             path cpuhp-kunit.coverage.<file>.<lines|functions|branches>
  'issues'   (the schema's name) one object per known failure of
             kunit/known-failures-<KVER>, its id a hash of its finding text,
             so every run of it names the same object; and
  incidents  linking each test that failed with a known failure to it
             (present), and the build to each known failure that did not
             occur (absent)

Statuses: the KTAP result, raised by what the verdict holds against the
test (STATUS_OF_KTAP, STATUS_OF_CATEGORY), in the schema's priority order:
a case that is red in verdict.json is never PASS here, and a known failure
is FAIL with its incident.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple

from cpuhpk import gcov, junit, verdict

MAJOR, MINOR = 5, 3
ORIGIN = 'cpuhp_kunit'
# The schema's patterns (kcidb-io v5.0 and later).
ORIGIN_PATTERN = re.compile(r'^[a-z0-9_]+$')
PATH_PART = re.compile(r'^[a-zA-Z0-9_-]+$')
NOT_PATH = re.compile(r'[^a-zA-Z0-9_-]+')
GIT_SHA = re.compile(r'^[0-9a-f]{40}$')
MAX_EXCERPT = 16384
# The top-level node of every test path: 'cpuhp-kunit', as junit.xml and results.json
# name the problems of a run. Under it the suites, 'run' and 'coverage'.
RUN_NODE = junit.RUN_SUITE
# The schema's statuses, highest priority first.
PRIORITY = ('FAIL', 'ERROR', 'MISS', 'PASS', 'DONE', 'SKIP')
STATUS_OF_KTAP = {'pass': 'PASS', 'fail': 'FAIL', 'skip': 'SKIP', 'crashed': 'ERROR',
                  'no results': 'MISS'}
# What a problem of the verdict makes of the test it names (verdict.CATEGORIES).
STATUS_OF_CATEGORY = {
    'failed': 'FAIL',           # an expectation failed: the tested code is faulty
    'kernel-log': 'FAIL',       # the kernel reported a bug while the case ran
    'crashed': 'ERROR',         # no result line: the case never completed
    'missing': 'MISS',          # asked for, never ran
    'unexpected-skip': 'ERROR',  # did not run where it is expected to
    'build': 'FAIL',
    'prepare': 'MISS',
    'interrupted': 'MISS',
}
OTHER_CATEGORY_STATUS = 'ERROR'     # timeout, reboot, lockdep-off, console, coverage, ...
KNOWN_MARK = re.compile(r' \[known failure: (.*)\]$', re.S)
FINDING = re.compile(r'Documentation/findings/[0-9A-Za-z._-]+\.md')
FIX = re.compile(r'src/<KVER>/fixes/[0-9]+')
BANNER = re.compile(r'Linux version (\S+) \(.*?\) \((.+)\) #\d+')
BANNER_LINES = 20000        # the banner is among the first lines of a boot


class ExportError(Exception):
    """An out/ directory or a report that cannot be exported or read."""


def _hash(*parts: str, n: int = 16) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode('utf-8', 'surrogatepass'))
        h.update(b'\0')
    return h.hexdigest()[:n]


def _text(text: str, limit: int = 0) -> str:
    """@text without NUL (no string of the schema takes one), cut to @limit."""
    text = text.replace('\0', '\ufffd')
    if limit and len(text) > limit:
        tail = f'\n... ({len(text) - limit} more characters)'
        text = text[:limit - len(tail)] + tail
    return text


def path_part(text: str) -> str:
    """@text as one part of a KCIDB test path: [a-zA-Z0-9_-]+.

    Every run of other characters becomes one '_', so 'up 8 x86/mce:dead'
    is 'up_8_x86_mce_dead'; an empty text is '_'.
    """
    return NOT_PATH.sub('_', text) or '_'


def test_paths(names: Iterable[str]) -> Dict[str, str]:
    """suite.case[.param] -> its KCIDB path, cpuhp-kunit.<suite>.<case>[.<param>],
    one distinct path per name.

    Suite and case names are C identifiers; a parameter's description is
    free text (it may hold dots too), so a name splits into at most three
    parts. Two names whose parts sanitise alike (a parameter 'x/y' and
    another 'x:y') would share a path: those that were changed get
    '-<8 hex of the name's sha256>' appended, the one already valid keeps
    its path. The result depends on the set of names only.
    """
    plain: Dict[str, str] = {}
    for name in set(names):
        plain[name] = '.'.join([RUN_NODE] + [path_part(p) for p in name.split('.', 2)])
    by_path: Dict[str, List[str]] = {}
    for name, path in plain.items():
        by_path.setdefault(path, []).append(name)
    paths = dict(plain)
    for path, same in by_path.items():
        if len(same) > 1:
            for name in same:
                if name != path[len(RUN_NODE) + 1:]:
                    paths[name] = f'{path}-{_hash(name, n=8)}'
    return paths


def highest(statuses: Iterable[str]) -> str:
    """The highest-priority status of @statuses (the schema's order)."""
    return min(statuses, key=PRIORITY.index)


def category_status(category: str) -> str:
    return STATUS_OF_CATEGORY.get(category, OTHER_CATEGORY_STATUS)


def _problem_text(problems: Sequence[verdict.Problem]) -> str:
    return '\n\n'.join(f'[{p.category}] {p.message}' + (f'\n{p.detail}' if p.detail else '')
                       for p in problems)


def _banner(console: Path) -> Tuple[str, str]:
    """(kernel release, compiler) as the console's boot banner says them, or ''."""
    if not console.is_file():
        return '', ''
    with open(console, errors='replace') as f:
        for n, line in enumerate(f):
            if n >= BANNER_LINES:
                break
            m = BANNER.search(line)
            if m:
                return m.group(1), m.group(2).split(', ')[0]
    return '', ''


def _coverage(out: Path) -> Dict[str, Dict[str, Tuple[int, int]]]:
    """file -> metric -> (hit, found) of out/coverage.info, for gcov.FILES."""
    info = out / 'coverage.info'
    if not info.is_file():
        return {}
    files = gcov.parse_info(info.read_text(errors='replace'))
    found: Dict[str, Dict[str, Tuple[int, int]]] = {}
    for name in gcov.FILES:
        cov = next((c for f, c in files.items() if f == name or f.endswith('/' + name)), None)
        if cov is not None:
            found[name] = {'lines': cov.lines, 'functions': cov.functions,
                           'branches': cov.branches}
    return found


def _url(base: str, name: str) -> str:
    return f'{base.rstrip("/")}/{name}'


def _known_why(p: verdict.Problem) -> str:
    m = KNOWN_MARK.search(p.message)
    return m.group(1) if m else ''


def _checkout(context: Dict[str, str], origin: str, prepared: bool) -> Dict[str, Any]:
    kver = context.get('kver', '')
    fixes = context.get('fixes', '0') == '1'
    patches = context.get('series') or f'src/{kver}/series'
    ident = {k: context.get(k, '') for k in ('kver', 'version', 'package', 'tree', 'rev',
                                              'local', 'series', 'fixes', 'commit')}
    misc: Dict[str, Any] = {'kver': kver, 'series': patches, 'fixes': fixes,
                            'harness_commit': context.get('commit', '')}
    checkout: Dict[str, Any] = {
        'id': f'{origin}:{_hash(json.dumps(ident, sort_keys=True))}', 'origin': origin}
    with_fixes = ', FIXES=1' if fixes else ''
    if context.get('tree'):
        rev = context.get('rev', '')
        checkout['tree_name'] = _text(Path(context['tree']).name or context['tree'])
        if GIT_SHA.match(rev):
            checkout['git_commit_hash'] = rev
        subject = context.get('rev_subject', '')
        local = context.get('local', '')
        checkout['comment'] = _text(
            f'{context["tree"]} at {rev[:12] or "?"}' + (f' ("{subject}")' if subject else '')
            + f', with the cpuhp-kunit patches ({patches}){with_fixes}'
            + (f'; {local}' if local else ''))
        misc.update({'tree': context['tree'], 'rev': rev, 'tree_version':
                     context.get('tree_version', ''), 'local': local})
    else:
        package = context.get('package', '')
        version = context.get('version', '')
        checkout['tree_name'] = 'debian'
        checkout['comment'] = _text(
            f'Debian linux-source-{kver} ' + (package or version or '(version unknown)')
            + f', with the cpuhp-kunit patches ({patches}){with_fixes}')
        misc.update({'source_package': f'linux-source-{kver}', 'package_version': package,
                     'upstream_version': version})
    if prepared:
        checkout['valid'] = True
    checkout['misc'] = {k: v for k, v in misc.items() if v != ''}
    return checkout


def report(out: Path, origin: str = ORIGIN, url: str = '',
           docs_url: str = '') -> Dict[str, Any]:
    """The KCIDB report of one run's out/ directory.

    @url: where the out/ directory is published (log and output file URLs);
    @docs_url: where this repository's files are published (a known
    failure's Documentation/findings/ page as its report URL).
    """
    if not ORIGIN_PATTERN.match(origin):
        raise ExportError(f'origin {origin!r} is not [a-z0-9_]+ (the schema\'s origin)')
    path = out / 'verdict.json'
    if not path.is_file():
        raise ExportError(f'{out}: no verdict.json (not the out/ directory of a run)')
    try:
        v, context = verdict.read_json(path)
    except (ValueError, TypeError, KeyError) as e:
        raise ExportError(f'{path}: unreadable: {e}') from None
    console = out / 'console.log'
    run_hash = hashlib.sha256(path.read_bytes())
    if console.is_file():
        with open(console, 'rb') as f:
            for block in iter(lambda: f.read(1 << 20), b''):
                run_hash.update(block)
    build_id = f'{origin}:{run_hash.hexdigest()[:16]}'
    categories = {p.category for p in v.problems}
    release, compiler = _banner(console)
    ran = bool(v.statuses) or bool(release)
    checkout = _checkout(context, origin, ran and 'prepare' not in categories)
    coverage = _coverage(out)

    build: Dict[str, Any] = {'id': build_id, 'checkout_id': checkout['id'], 'origin': origin}
    arch = context.get('arch', '')
    if arch:
        build['architecture'] = NOT_PATH.sub('_', arch.lower()).replace('-', '_')
    if context.get('config'):
        build['config_name'] = _text(context['config'])
    if compiler:
        build['compiler'] = _text(compiler)
    fixes = context.get('fixes', '0') == '1'
    build['comment'] = _text(f'{arch or "?"} CONFIG={context.get("config", "?")}'
                             + (' FIXES=1' if fixes else '') + (f', linux {release}'
                                                                if release else ''))
    build_problems = [p for p in v.problems if p.category in ('build', 'prepare')]
    if 'build' in categories:
        build['status'] = 'FAIL'
    elif 'prepare' in categories:
        build['status'] = 'MISS'
    elif ran:
        build['status'] = 'PASS'
    if build_problems:
        build['log_excerpt'] = _text(_problem_text(build_problems), MAX_EXCERPT)
    if url:
        if (out / 'kunit.log').is_file():
            build['log_url'] = _url(url, 'kunit.log')
        files = [n for n in ('verdict.json', 'junit.xml', 'results.json', 'console.log',
                             'coverage.info') if (out / n).is_file()]
        if files:
            build['output_files'] = [{'name': n, 'url': _url(url, n)} for n in files]
    build_misc: Dict[str, Any] = {
        k: context[k] for k in ('kver', 'smp', 'topology', 'filter', 'strict', 'userspace',
                                'console', 'version', 'package') if context.get(k)}
    build_misc.update({'series': checkout['misc'].get('series', ''), 'fixes': fixes,
                       'harness_commit': context.get('commit', ''),
                       'verdict': 'pass' if v.ok else 'fail', 'counts': v.counts()})
    if release:
        build_misc['kernel_release'] = release
    if coverage:
        build_misc['coverage'] = {f: {m: list(hf) for m, hf in ms.items()}
                                  for f, ms in coverage.items()}
    build['misc'] = build_misc

    # Tests: every case the KTAP holds, and every name the verdict speaks of.
    by_name: Dict[str, List[verdict.Problem]] = {}
    for p in v.problems:
        by_name.setdefault(p.name, []).append(p)
    known_by_name: Dict[str, List[verdict.Problem]] = {}
    for p in v.known:
        known_by_name.setdefault(p.name, []).append(p)
    for p in v.problems:
        if p.name and _known_why(p):         # STRICT=1: known failures stay red
            known_by_name.setdefault(p.name, []).append(p)
    skips = {s.name: s for s in v.skips}
    names = set(v.statuses) | {n for n in by_name if n} | {n for n in known_by_name if n}
    paths = test_paths(names)
    environment: Dict[str, Any] = {'comment': _text(
        f'QEMU {arch or "?"}, {context.get("smp", "?")} CPUs, topology '
        f'{context.get("topology", "?")}')}
    env_misc = {k: context[k] for k in ('arch', 'smp', 'topology') if context.get(k)}
    if env_misc:
        environment['misc'] = env_misc

    def new_test(test_path: str, status: str, comment: str) -> Dict[str, Any]:
        test: Dict[str, Any] = {'id': f'{build_id}:{test_path}', 'build_id': build_id,
                                'origin': origin, 'path': test_path, 'status': status,
                                'comment': _text(comment), 'environment': environment}
        if url and console.is_file():
            test['log_url'] = _url(url, 'console.log')
        return test

    tests: List[Dict[str, Any]] = []
    findings: Dict[str, Dict[str, Any]] = {}
    incidents: List[Dict[str, Any]] = []

    def finding(why: str) -> str:
        """The id of the KCIDB object of the known failure @why (made once)."""
        ident = f'{origin}:{_hash(why)}'
        if ident not in findings:
            misc: Dict[str, Any] = {'known_failure': why}
            doc = FINDING.search(why)
            fix = FIX.search(why)
            if doc:
                misc['finding'] = doc.group(0)
            if fix:
                misc['fix'] = fix.group(0)
            obj: Dict[str, Any] = {'id': ident, 'version': 1, 'origin': origin,
                                   'culprit': {'code': True, 'tool': False, 'harness': False},
                                   'comment': _text(why), 'misc': misc}
            if doc and docs_url:
                obj['report_url'] = _url(docs_url, doc.group(0))
            findings[ident] = obj
        return ident

    for name in sorted(names, key=lambda n: paths[n]):
        problems = by_name.get(name, [])
        known = known_by_name.get(name, [])
        ktap = v.statuses.get(name, '')
        statuses = [STATUS_OF_KTAP.get(ktap, 'ERROR')] if ktap else []
        statuses += [category_status(p.category) for p in problems]
        statuses += ['FAIL'] * bool(known)
        test = new_test(paths[name], highest(statuses), name)
        misc: Dict[str, Any] = {'name': name}
        if ktap:
            misc['ktap_status'] = ktap
        if name in skips:
            s = skips[name]
            misc.update({'skip_reason': s.reason, 'skip_expected': s.expected})
            if s.why:
                misc['skip_why'] = s.why
        red = [p for p in problems if not _known_why(p)]
        if red:
            misc['problems'] = [{'category': p.category, 'message': p.message} for p in red]
        if known:
            misc['known_failures'] = [p.message for p in known]
        if problems or known:
            test['log_excerpt'] = _text(_problem_text(problems + [p for p in known
                                                                   if p not in problems]),
                                        MAX_EXCERPT)
        test['misc'] = misc
        tests.append(test)
        for p in known:
            ident = finding(_known_why(p))
            incidents.append({'id': f'{test["id"]}:{ident.split(":", 1)[1]}', 'origin': origin,
                              'issue_id': ident, 'issue_version': 1, 'build_id': build_id,
                              'test_id': test['id'], 'present': True,
                              'comment': _text(p.message)})

    # Problems of the run as a whole: one test per category (and report kind).
    run_level: Dict[str, List[verdict.Problem]] = {}
    for p in v.problems:
        if not p.name:
            run_level.setdefault('.'.join([path_part(p.category)]
                                          + ([path_part(p.kind)] if p.kind else [])),
                                 []).append(p)
    for key in sorted(run_level):
        problems = run_level[key]
        test = new_test(f'{RUN_NODE}.run.{key}', highest(category_status(p.category)
                                                     for p in problems),
                        f'{RUN_NODE}: {problems[0].message}')
        test['log_excerpt'] = _text(_problem_text(problems), MAX_EXCERPT)
        test['misc'] = {'problems': [{'category': p.category, 'message': p.message}
                                     for p in problems]}
        tests.append(test)

    for source, metrics in coverage.items():
        for metric, (hit, total) in metrics.items():
            if not total:
                continue
            test = new_test(f'{RUN_NODE}.coverage.{path_part(source)}.{metric}', 'DONE',
                            f'{source}: {metric} covered, {hit} of {total}')
            test['number'] = {'value': round(gcov.pct((hit, total)), 2), 'unit': '%'}
            test['misc'] = {'file': source, 'metric': metric, 'hit': hit, 'found': total}
            tests.append(test)

    # Known failures that applied to cases that ran, and did not occur.
    seen_absent = set()
    for p in v.not_seen:
        if not p.detail or (p.name, p.detail) in seen_absent:
            continue
        seen_absent.add((p.name, p.detail))
        ident = finding(p.detail)
        incidents.append({'id': f'{build_id}:absent:{ident.split(":", 1)[1]}:'
                          f'{_hash(p.name, n=8)}', 'origin': origin, 'issue_id': ident,
                          'issue_version': 1, 'build_id': build_id, 'present': False,
                          'comment': _text(p.message), 'misc': {'cases': p.name}})

    return {'version': {'major': MAJOR, 'minor': MINOR}, 'checkouts': [checkout],
            'builds': [build], 'tests': tests, 'issues': list(findings.values()),
            'incidents': incidents}
