"""The KCIDB report of a run (cpuhpk.kcidb) against the vendored schema.

The run is a recorded one: run_default_6.12_console.log judged as make run
judges it (outputs.judge() writes verdict.json), with known failures of
kunit/known-failures-6.12 (the sweep's failing parameters among them),
skips, and parameters named after hotplug states ('up 8 x86/mce:dead').
Reports are validated with python3-jsonschema, Draft 7 as kcidb-io validates.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import io
import json
import re
import shutil
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, List

from cpuhpk import kcidb, kcidbrun, merge, outputs, run, verdict
from tests.recorded import run_default_expectations

DATA = Path(__file__).parent / 'data'
jsonschema: Any = importlib.import_module('jsonschema')
SCHEMA: Dict[str, Any] = json.loads(kcidb.SCHEMA_PATH.read_text())
PATH_RE: 're.Pattern[str]' = re.compile(str(SCHEMA['$defs']['path']['pattern']))
CONTEXT = {'kver': '6.12', 'arch': 'x86_64', 'config': 'default', 'smp': '4',
           'topology': 'flat', 'filter': '', 'fixes': '0', 'strict': '0',
           'commit': '0123456789ab', 'version': '6.12.118', 'package': '6.12.118-1~deb12u1'}
PARAM = 'cpuhp_sweep.cpuhp_sweep_fail_fires.up 8 x86/mce:dead'
KNOWN_CASE = 'cpuhp_rollback.cpuhp_rollback_frozen_clear_after_thaw'
COVERAGE_INFO = """TN:
SF:/build/linux-6.12.118/kernel/cpu.c
FN:100,cpuhp_invoke_callback
FN:200,_cpu_up
FNDA:5,cpuhp_invoke_callback
FNDA:0,_cpu_up
DA:100,5
DA:101,5
DA:200,0
DA:201,0
BRDA:101,0,0,3
BRDA:101,0,1,-
end_of_record
"""


def errors(data: Any) -> List[str]:
    """The schema's complaints about @data, read with jsonschema directly."""
    validator = jsonschema.Draft7Validator(
        SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [e.message for e in validator.iter_errors(data)]


def judged(out: Path, context: Dict[str, str]) -> None:
    """out/: the recorded console, judged as make run judges it."""
    shutil.copy(DATA / 'run_default_6.12_console.log', out / 'console.log')
    exp = run_default_expectations('', context, userspace=True)
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        outputs.judge(out, out / 'console.log', exp, rc=1, kunit_log='')


class RecordedRunTest(unittest.TestCase):
    tmp: tempfile.TemporaryDirectory[str]
    out: Path
    report: Dict[str, Any]

    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / 'out'
        cls.out.mkdir()
        judged(cls.out, CONTEXT)
        (cls.out / 'coverage.info').write_text(COVERAGE_INFO)
        cls.report = kcidbrun.report(cls.out)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def cases_by_name(self) -> Dict[str, Dict[str, Any]]:
        return {t['misc']['name']: t for t in self.report['tests'] if 'name' in t['misc']}

    def test_the_report_is_valid(self) -> None:
        self.assertEqual(errors(self.report), [])
        self.assertEqual(kcidb.validation_errors(self.report), [])
        self.assertEqual(self.report['version'], {'major': 5, 'minor': 3})
        jsonschema.Draft7Validator.check_schema(SCHEMA)

    def test_the_judge_writes_it(self) -> None:
        """make run and make judge leave out/kcidb.json (outputs.write_outputs())."""
        written = json.loads((self.out / 'kcidb.json').read_text())
        self.assertEqual(errors(written), [])
        self.assertEqual(len(written['tests']), len(self.report['tests']) - len(
            [t for t in self.report['tests'] if '.coverage.' in t['path']]))

    def test_merge_results_writes_one(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            other = Path(tmp) / 'debug'
            other.mkdir()
            judged(other, dict(CONTEXT, config='debug'))
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                merge.merge([self.out, other], Path(tmp) / 'merged')
            merged = json.loads((Path(tmp) / 'merged' / 'kcidb.json').read_text())
        self.assertEqual(errors(merged), [])
        self.assertEqual(len(merged['builds']), 2)

    def test_one_checkout_one_build(self) -> None:
        (checkout,), (build,) = self.report['checkouts'], self.report['builds']
        self.assertEqual(checkout['origin'], 'cpuhp_kunit')
        self.assertRegex(checkout['id'], r'^cpuhp_kunit:[0-9a-f]{16}$')
        self.assertEqual(checkout['tree_name'], 'debian')
        self.assertIn('linux-source-6.12 6.12.118-1~deb12u1', checkout['comment'])
        self.assertEqual(checkout['misc']['package_version'], '6.12.118-1~deb12u1')
        self.assertEqual(build['checkout_id'], checkout['id'])
        self.assertEqual((build['architecture'], build['config_name'], build['status']),
                         ('x86_64', 'default', 'PASS'))
        self.assertEqual(build['compiler'], 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0')
        self.assertEqual((build['misc']['series'], build['misc']['fixes']),
                         ('src/6.12/series', False))
        self.assertEqual(build['misc']['verdict'], 'pass')

    def test_every_case_and_parameter_is_a_test(self) -> None:
        v, _ = verdict.read_json(self.out / 'verdict.json')
        tests = self.cases_by_name()
        self.assertEqual(set(tests), set(v.statuses))
        mapping = {'pass': 'PASS', 'skip': 'SKIP'}
        for name, status in v.statuses.items():
            if status in mapping and name not in {p.name for p in v.known}:
                self.assertEqual(tests[name]['status'], mapping[status], name)

    def test_parameter_names_become_valid_paths(self) -> None:
        test = self.cases_by_name()[PARAM]
        self.assertEqual(test['path'],
                         'cpuhp-kunit.cpuhp_sweep.cpuhp_sweep_fail_fires.up_8_x86_mce_dead')
        self.assertEqual(test['comment'], PARAM)
        paths = [t['path'] for t in self.report['tests']]
        self.assertEqual(len(paths), len(set(paths)))
        for path in paths:
            self.assertRegex(path, PATH_RE)

    def test_known_failures_fail_with_an_incident(self) -> None:
        v, _ = verdict.read_json(self.out / 'verdict.json')
        self.assertGreater(len(v.known), 2)
        tests = self.cases_by_name()
        known = {i['id']: i for i in self.report['issues']}
        incidents = self.report['incidents']
        for p in v.known:
            self.assertEqual(tests[p.name]['status'], 'FAIL', p.name)
        linked = {i['test_id']: i for i in incidents if i['present']}
        self.assertEqual(set(linked), {tests[p.name]['id'] for p in v.known})
        for incident in incidents:
            self.assertIn(incident['issue_id'], known)
            self.assertEqual(incident['issue_version'], known[incident['issue_id']]['version'])
        # One object per finding: the failing sweep parameters share theirs.
        whys = {p.message.rsplit(' [known failure: ', 1)[1][:-1] for p in v.known}
        self.assertLess(len(known), len(v.known))
        self.assertEqual({i['comment'] for i in known.values()}, whys)
        frozen = next(p for p in v.known if p.name == KNOWN_CASE)
        incident = linked[tests[KNOWN_CASE]['id']]
        self.assertTrue(frozen.message.endswith(f' [known failure: '
                                                f'{known[incident["issue_id"]]["comment"]}]'))
        self.assertTrue(known[incident['issue_id']]['culprit']['code'])
        # A finding with a page of its own names it.
        pages = {i['misc']['finding'] for i in known.values() if 'finding' in i['misc']}
        self.assertTrue(pages)
        for page in pages:
            self.assertRegex(page, r'^Documentation/findings/\d+-[\w-]+\.md$')
            self.assertTrue((kcidb.SCHEMA_PATH.parents[2] / page).is_file(), page)

    def test_ids_are_unique_and_stable(self) -> None:
        for key in kcidb.LISTS:
            ids = [o['id'] for o in self.report[key]]
            self.assertEqual(len(ids), len(set(ids)), key)
        self.assertEqual(kcidbrun.report(self.out), self.report)

    def test_coverage_is_a_number(self) -> None:
        tests = {t['path']: t for t in self.report['tests']}
        lines = tests['cpuhp-kunit.coverage.kernel_cpu_c.lines']
        self.assertEqual(lines['status'], 'DONE')
        self.assertEqual(lines['number'], {'value': 50.0, 'unit': '%'})
        self.assertEqual(tests['cpuhp-kunit.coverage.kernel_cpu_c.branches']['number']['value'],
                         50.0)
        self.assertEqual(self.report['builds'][0]['misc']['coverage']['kernel/cpu.c']['lines'],
                         [2, 4])

    def test_published_urls_are_valid(self) -> None:
        data = kcidbrun.report(self.out, url='https://ci.example.org/jobs/7/out',
                               docs_url='https://example.org/cpuhp-kunit/-/raw/main')
        self.assertEqual(errors(data), [])
        build = data['builds'][0]
        self.assertIn({'name': 'verdict.json',
                       'url': 'https://ci.example.org/jobs/7/out/verdict.json'},
                      build['output_files'])
        self.assertEqual(data['tests'][0]['log_url'],
                         'https://ci.example.org/jobs/7/out/console.log')
        for obj in data['issues']:
            if 'finding' in obj['misc']:
                self.assertEqual(obj['report_url'], 'https://example.org/cpuhp-kunit/-/raw/main/'
                                 + obj['misc']['finding'])

    def test_merge_keeps_each_object_once(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            other = Path(tmp)
            judged(other, dict(CONTEXT, config='debug'))
            second = kcidbrun.report(other)
        self.assertNotEqual(second['builds'][0]['id'], self.report['builds'][0]['id'])
        merged = kcidb.merge([self.report, second, self.report])
        self.assertEqual(errors(merged), [])
        self.assertEqual(len(merged['checkouts']), 1)   # the same source
        self.assertEqual(len(merged['builds']), 2)
        self.assertEqual(len(merged['tests']),
                         len(self.report['tests']) + len(second['tests']))
        self.assertEqual(len(merged['issues']), len(self.report['issues']))
        with self.assertRaises(kcidbrun.ExportError):
            kcidb.merge([self.report, {'version': {'major': 4, 'minor': 5}}])

    def test_cli_writes_and_validates(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / 'kcidb.json'
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(kcidb.main([str(self.out), '--out', str(out)]), 0)
            self.assertIn('KCIDB v5.3', said.getvalue())
            self.assertEqual(json.loads(out.read_text()), self.report)
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(kcidb.main(['--validate', str(out)]), 0)
            self.assertEqual(said.getvalue(), '')
            broken = copy.deepcopy(self.report)
            del broken['tests'][0]['id']
            broken['tests'][1]['status'] = 'BROKEN'
            bad = Path(tmp) / 'bad.json'
            bad.write_text(json.dumps(broken))
            with contextlib.redirect_stdout(io.StringIO()) as said:
                self.assertEqual(kcidb.main(['--validate', str(bad)]), 1)
            lines = said.getvalue().splitlines()
            self.assertEqual(len(lines), 2, lines)
            self.assertTrue(all(ln.startswith(f'{bad}: tests/') for ln in lines), lines)
            self.assertIn("'id' is a required property", said.getvalue())
            self.assertIn("'BROKEN' is not one of", said.getvalue())


class BrokenReportTest(unittest.TestCase):
    """What the vendored schema refuses: the checks are not empty."""

    def valid(self) -> Dict[str, Any]:
        return {'version': {'major': 5, 'minor': 3},
                'checkouts': [{'id': 'cpuhp_kunit:c', 'origin': 'cpuhp_kunit'}],
                'builds': [{'id': 'cpuhp_kunit:b', 'origin': 'cpuhp_kunit',
                            'checkout_id': 'cpuhp_kunit:c'}],
                'tests': [{'id': 'cpuhp_kunit:t', 'origin': 'cpuhp_kunit',
                           'build_id': 'cpuhp_kunit:b', 'path': 'suite.case',
                           'status': 'MISS'}]}

    def test_the_minimal_report_is_valid(self) -> None:
        self.assertEqual(errors(self.valid()), [])

    def test_broken_reports_fail(self) -> None:
        def broken(change: Any) -> Dict[str, Any]:
            data = self.valid()
            change(data)
            return data

        cases = {
            'test without id': lambda d: d['tests'][0].pop('id'),
            'bad status': lambda d: d['tests'][0].update(status='CRASHED'),
            'path with a space': lambda d: d['tests'][0].update(path='suite.up 8'),
            'empty path part': lambda d: d['tests'][0].update(path='suite..case'),
            'id without origin': lambda d: d['builds'][0].update(id='b'),
            'upper-case origin': lambda d: d['checkouts'][0].update(origin='CPUHP'),
            'unknown property': lambda d: d['tests'][0].update(verdict='pass'),
            'newer minor': lambda d: d['version'].update(minor=4),
            'major 4': lambda d: d['version'].update(major=4),
            'null': lambda d: d['tests'][0].update(comment=None),
            'NUL in a comment': lambda d: d['tests'][0].update(comment='a\0b'),
            'long excerpt': lambda d: d['tests'][0].update(log_excerpt='x' * 16385),
            'number without value': lambda d: d['tests'][0].update(number={'unit': '%'}),
            'incident without version': lambda d: d.update(incidents=[{
                'id': 'cpuhp_kunit:i', 'origin': 'cpuhp_kunit', 'issue_id': 'cpuhp_kunit:x'}]),
        }
        for what, change in cases.items():
            with self.subTest(what):
                self.assertNotEqual(errors(broken(change)), [])
                self.assertNotEqual(kcidb.validation_errors(broken(change)), [])

    @unittest.skipUnless('uri' in jsonschema.Draft7Validator.FORMAT_CHECKER.checkers,
                         'this jsonschema checks no uri format (python3-rfc3987)')
    def test_a_bad_url_fails(self) -> None:
        data = self.valid()
        data['tests'][0]['log_url'] = 'not a url'
        self.assertNotEqual(errors(data), [])


class CraftedVerdictTest(unittest.TestCase):
    """Statuses of what a recorded run does not show: crashes, missing cases,
    unexpected skips, problems of the run as a whole, a user's tree."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.out = Path(self._tmp.name)
        why = 'a finding (Documentation/findings/04-fail-stays-armed.md; src/<KVER>/fixes/0001)'
        v = verdict.Verdict(
            passed=1, skipped=1, crashed=1, missing=2,
            statuses={'s.ok': 'pass', 's.crash': 'crashed', 's.skip': 'skip',
                      's.p.a/b': 'pass', 's.p.a:b': 'pass', 's.p.a_b': 'pass'},
            problems=[verdict.Problem('crashed', 's.crash', 'crashed: the console ended'),
                      verdict.Problem('missing', 's.gone', 'case did not run'),
                      verdict.Problem('missing', 'gone_suite', 'suite did not run'),
                      verdict.Problem('unexpected-skip', 's.skip', 'skipped, not expected'),
                      verdict.Problem('timeout', '', 'killed after 2760 s'),
                      verdict.Problem('kunit.py', '', 'kunit.py exited 1'),
                      verdict.Problem('kernel-log', '', 'warning (warning): WARNING: at x',
                                      'WARNING: at x\0y', 'warning')],
            skips=[verdict.Skip('s.skip', 'not here', False)],
            not_seen=[verdict.Problem('known-not-seen', 's.*', 'known failure did not occur '
                                      '(known-failures-6.12:3: failed: x): fixed in this tree',
                                      why)])
        context = dict(CONTEXT, tree='/home/dev/linux', rev='a' * 40, rev_subject='cpu: fix',
                       tree_version='6.12.0', series='src/6.12/series', local='')
        del context['package']
        verdict.write_json(self.out / 'verdict.json', v, context)
        self.report = kcidbrun.report(self.out)
        self.tests = {t['path']: t for t in self.report['tests']}

    def test_valid(self) -> None:
        self.assertEqual(errors(self.report), [])

    def test_statuses(self) -> None:
        got = {p[len('cpuhp-kunit.'):]: t['status'] for p, t in self.tests.items()}
        self.assertEqual(got['s.ok'], 'PASS')
        self.assertEqual(got['s.crash'], 'ERROR')
        self.assertEqual(got['s.gone'], 'MISS')
        self.assertEqual(got['gone_suite'], 'MISS')
        self.assertEqual(got['s.skip'], 'ERROR')          # an unexpected skip is red
        self.assertEqual(got['run.timeout'], 'ERROR')
        self.assertEqual(got['run.kunit_py'], 'ERROR')
        self.assertEqual(got['run.kernel-log.warning'], 'FAIL')
        self.assertEqual(self.tests['cpuhp-kunit.s.skip']['misc']['skip_reason'], 'not here')
        self.assertNotIn('\0', self.tests['cpuhp-kunit.run.kernel-log.warning']['log_excerpt'])
        # Cases ran: the kernel was built and booted.
        self.assertEqual(self.report['builds'][0]['status'], 'PASS')
        self.assertEqual(self.report['builds'][0]['misc']['verdict'], 'fail')

    def test_build_and_prepare_failures(self) -> None:
        for category, status in (('build', 'FAIL'), ('prepare', 'MISS')):
            with self.subTest(category), tempfile.TemporaryDirectory() as tmp:
                v = verdict.Verdict(problems=[verdict.Problem(category, '', 'it broke',
                                                              'error: x undeclared')])
                verdict.write_json(Path(tmp) / 'verdict.json', v, CONTEXT)
                data = kcidbrun.report(Path(tmp))
                self.assertEqual(errors(data), [])
                self.assertEqual(data['builds'][0]['status'], status)
                self.assertIn('x undeclared', data['builds'][0]['log_excerpt'])
                self.assertNotIn('valid', data['checkouts'][0])
                self.assertEqual([t['status'] for t in data['tests']], [status])

    def test_colliding_parameters_get_distinct_paths(self) -> None:
        names = {t['misc']['name']: t['path'] for t in self.report['tests']
                 if t['misc'].get('name', '').startswith('s.p.')}
        self.assertEqual(names['s.p.a_b'], 'cpuhp-kunit.s.p.a_b')     # valid already: kept
        self.assertRegex(names['s.p.a/b'], r'^cpuhp-kunit\.s\.p\.a_b-[0-9a-f]{8}$')
        self.assertRegex(names['s.p.a:b'], r'^cpuhp-kunit\.s\.p\.a_b-[0-9a-f]{8}$')
        self.assertEqual(len(set(names.values())), 3)
        self.assertEqual(kcidbrun.test_paths(['s.p.a/b', 's.p.a:b', 's.p.a_b']),
                         kcidbrun.test_paths(['s.p.a_b', 's.p.a:b', 's.p.a/b']))

    def test_a_known_failure_that_did_not_occur_is_an_absent_incident(self) -> None:
        (incident,) = self.report['incidents']
        (finding,) = self.report['issues']
        self.assertEqual((incident['present'], incident['issue_id'], incident['build_id']),
                         (False, finding['id'], self.report['builds'][0]['id']))
        self.assertNotIn('test_id', incident)
        self.assertEqual(finding['misc']['finding'],
                         'Documentation/findings/04-fail-stays-armed.md')

    def test_a_users_tree_is_the_checkout(self) -> None:
        (checkout,) = self.report['checkouts']
        self.assertEqual((checkout['tree_name'], checkout['git_commit_hash']), ('linux', 'a' * 40))
        self.assertIn('cpu: fix', checkout['comment'])
        self.assertTrue(checkout['valid'])

    def test_bad_origin_is_refused(self) -> None:
        with self.assertRaises(kcidbrun.ExportError):
            kcidbrun.report(self.out, origin='cpuhp-kunit')

    def test_no_verdict_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as tmp, \
                contextlib.redirect_stderr(io.StringIO()) as said:
            self.assertEqual(kcidb.main([tmp]), 1)
        self.assertIn('no verdict.json', said.getvalue())


class PathPartTest(unittest.TestCase):
    def test_parts(self) -> None:
        self.assertEqual(kcidbrun.path_part('up 8 x86/mce:dead'), 'up_8_x86_mce_dead')
        self.assertEqual(kcidbrun.path_part('RCU/tree:prepare'), 'RCU_tree_prepare')
        self.assertEqual(kcidbrun.path_part('kunit.py'), 'kunit_py')
        self.assertEqual(kcidbrun.path_part('cpuhp-kunit'), 'cpuhp-kunit')
        self.assertEqual(kcidbrun.path_part(''), '_')
        self.assertEqual(kcidbrun.path_part('état  ok'), '_tat_ok')

    def test_a_dotted_parameter_stays_one_part(self) -> None:
        paths = kcidbrun.test_paths(['s.c.v6.12 on', 's.c'])
        self.assertEqual(paths['s.c.v6.12 on'], 'cpuhp-kunit.s.c.v6_12_on')
        self.assertEqual(paths['s.c'], 'cpuhp-kunit.s.c')
        for p in paths.values():
            self.assertRegex(p, PATH_RE)


if __name__ == '__main__':
    unittest.main()
