"""`make series`: the upstream-shaped patch series, generated from src/ and kunit/.

src/<KVER>/upstream/plan says which patches of src/<KVER>/series form which
series ([cpu-hotplug], [timekeeping]), which kunit/ sources each patch adds,
and which patches are the harness's own (never posted). For each series this
commits the patches on the pristine tree, adds the test sources to the commit
that wires them up (as the kernel will build them: the 6.1 compat header and
version blocks resolved for this kernel), signs them off as the user, and
writes `git format-patch --cover-letter --base` output with the cover letter
of src/<KVER>/upstream/<name>.cover filled in:

  out/series/<KVER>/<name>/0000-cover-letter.patch, 0001-*.patch ...
  out/series/<KVER>/checkpatch.txt   checkpatch.pl --strict of every patch

`make series-check`: builds after every patch (series-check.txt), and
`make series-pristine`: git am onto a fresh extraction, kunit.py run as the
cover letter says, the verdict of its console (pristine/).
Exit status 0 only when everything asked for is clean.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from cpuhpk import arch, cache, outputs, packages, proc, say, seriesplan, tree, verdict
from cpuhpk.paths import REPO
from cpuhpk.runspec import RunSpec
from cpuhpk.seriesmake import (BASE_TREE, cpus, git, identity, make_series,
                               pristine_commit, run_command, scratch, signer)
from cpuhpk.serieschecks import Checks

# make series-check: every prefix of every series builds with BASE_CONFIG
# (a tinyconfig kernel with the suites: =m where tristate; without
# CONFIG_CPU_HOTPLUG_STATE_CONTROL, which no posted case needs), and the series
# together build, or drop the suites, with each of VARIANTS. An option a
# variant turns off stays off; a suite it drops must say why in Kconfig.
BASE_CONFIG = (
    'CONFIG_64BIT=y', 'CONFIG_SMP=y', 'CONFIG_HOTPLUG_CPU=y', 'CONFIG_PRINTK=y',
    'CONFIG_SYSFS=y', 'CONFIG_MODULES=y', 'CONFIG_KUNIT=y', 'CONFIG_SUSPEND=y',
    'CONFIG_FTRACE=y', 'CONFIG_ENABLE_DEFAULT_TRACERS=y', 'CONFIG_DEBUG_KERNEL=y',
    'CONFIG_CPUHP_KUNIT_TEST=y', 'CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST=m',
    'CONFIG_TIMEKEEPING_KUNIT_TEST=y')
VARIANTS = {
    'sysfs-n': ('# CONFIG_SYSFS is not set',),
    'suspend-n': ('# CONFIG_SUSPEND is not set',),
    'tracing-n': ('# CONFIG_FTRACE is not set', '# CONFIG_ENABLE_DEFAULT_TRACERS is not set',
                  '# CONFIG_TRACING is not set'),
}
SUITE_OPTIONS = ('CONFIG_CPUHP_KUNIT_TEST', 'CONFIG_TIMEKEEPING_CROSSTSTAMP_KUNIT_TEST',
                 'CONFIG_TIMEKEEPING_KUNIT_TEST')
# Every patch is built for these architectures too (since 8e6f8d1), with BASE_CONFIG.
CHECK_ARCHES = ('arm64',)
BUILD_SECONDS = 45 * 60


def kconfig_value(config: Path, option: str) -> str:
    """'y', 'm', or 'n' (not set, or not there) in a .config."""
    for line in config.read_text().splitlines():
        if line.startswith(option + '='):
            return line.partition('=')[2]
    return 'n'


def suite_options(build_dir: Path) -> str:
    """How the suites came out in @build_dir's .config, e.g. 'CPUHP_KUNIT_TEST=y ...'."""
    cfg = build_dir / '.config'
    if not cfg.is_file():
        return 'no .config'
    return ' '.join(f'{o.removeprefix("CONFIG_")}={kconfig_value(cfg, o)}'
                    for o in SUITE_OPTIONS)


def missing_modules(build_dir: Path) -> List[str]:
    """The suites configured =m whose module this build did not make.

    A suite's module is named after its option (style.rst: option
    <SUITE>_KUNIT_TEST, module <suite>_kunit). Read from modules.order,
    which every build writes anew: a .ko an earlier build left proves nothing.
    """
    cfg, order = build_dir / '.config', build_dir / 'modules.order'
    made = {Path(ln).stem for ln in (order.read_text().split() if order.is_file() else [])
            if (build_dir / ln).with_suffix('.ko').is_file()}
    wanted = [o for o in SUITE_OPTIONS if cfg.is_file() and kconfig_value(cfg, o) == 'm']
    return [o for o in wanted
            if o.removeprefix('CONFIG_').removesuffix('_KUNIT_TEST').lower() + '_kunit'
            not in made]


def make_command(work: Path, build_dir: Path, a: Optional[arch.Arch] = None) -> List[str]:
    """make in @work building into @build_dir, for @a (x86_64), on every CPU."""
    return ['make', '-s', '-C', str(work), f'O={build_dir}',
            *arch.make_arguments(a or arch.get(arch.HOST)), f'-j{os.cpu_count() or 1}']


def run_steps(work: Path, steps: Sequence[Sequence[str]], log: Path) -> Tuple[bool, str]:
    """Run @steps in @work, output to @log, until one fails: (all ran, why not)."""
    with open(log, 'a') as out:
        for cmd in steps:
            out.write('$ ' + ' '.join(cmd) + '\n')
            out.flush()
            try:
                res = subprocess.run(cmd, cwd=work, stdout=out, stderr=subprocess.STDOUT,
                                     timeout=BUILD_SECONDS, check=False)
            except subprocess.TimeoutExpired:
                return False, f'{cmd[-1]} did not end in {BUILD_SECONDS} s'
            if res.returncode != 0:
                return False, f'{" ".join(cmd[-2:])} failed (exit {res.returncode}), see {log}'
    return True, ''


def configure(work: Path, build_dir: Path, fragment: Sequence[str], log: Path,
              a: Optional[arch.Arch] = None) -> Tuple[bool, str]:
    """tinyconfig + @fragment, olddefconfig in @build_dir for @a: (configured, why not)."""
    make = make_command(work, build_dir, a)
    build_dir.mkdir(parents=True, exist_ok=True)
    frag = build_dir / 'series-check.config'
    frag.write_text('\n'.join(fragment) + '\n')
    return run_steps(work, [make + ['tinyconfig'],
                            ['sh', str(work / 'scripts' / 'kconfig' / 'merge_config.sh'), '-m',
                             '-O', str(build_dir), str(build_dir / '.config'), str(frag)],
                            make + ['olddefconfig']], log)


def build(work: Path, build_dir: Path, fragment: Sequence[str], log: Path,
          a: Optional[arch.Arch] = None) -> Tuple[bool, str]:
    """configure(), then make vmlinux and modules: (built, why not)."""
    ok, why = configure(work, build_dir, fragment, log, a)
    if not ok:
        return ok, why
    return run_steps(work, [make_command(work, build_dir, a) + ['vmlinux', 'modules']], log)


def series_check(kver: str, who: str, out: Path, checks: Checks) -> None:
    """Build after every patch of the branches make_series() left, for
    x86_64 and for each of CHECK_ARCHES, then the variants of VARIANTS on
    both series; a suite configured =m must come out as its module each time."""
    src = tree.series_dir(REPO, kver)
    plan = seriesplan.read_plan(src)
    others = [arch.get(n) for n in CHECK_ARCHES]
    packages.ensure_packages([p for a in others for p in a.packages])
    t = tree.prepare(kver, REPO)
    work = scratch(t)
    base = pristine_commit(work, 'baseline', f'linux-source-{kver} {t.package}')
    log = out / 'series-check.log'
    out.mkdir(parents=True, exist_ok=True)
    log.write_text('')
    build_root = cache.cache_root() / f'series-build-{t.version}'
    def check(name: str, build_dir: Path, fragment: Sequence[str],
              a: Optional[arch.Arch] = None) -> None:
        built, why = build(work, build_dir, fragment, log, a)
        missing = missing_modules(build_dir) if built else []
        checks.add(name, built and not missing,
                   why or (f'no module for {", ".join(missing)}' if missing
                           else f'builds ({suite_options(build_dir)})'))

    for s in plan.series:
        # make_series() made the branch: build each of its commits in turn.
        commits = git(work, 'rev-list', '--reverse', f'{base}..{s.name}').split()
        for i, c in enumerate(commits, 1):
            git(work, 'checkout', '-q', '-f', c)
            subject = git(work, 'log', '-1', '--format=%s', c)
            check(f'build {s.name} {i}/{len(commits)} {subject}', build_root / 'base', BASE_CONFIG)
            for a in others:
                check(f'build {s.name} {i}/{len(commits)} {subject} ({a.name})',
                      build_root / f'base{a.out_suffix}', BASE_CONFIG, a)
    # Both series on one tree, each variant.
    git(work, 'checkout', '-q', '-f', '-B', 'all', plan.series[0].name)
    for s in plan.series[1:]:
        git(work, 'cherry-pick', f'{base}..{s.name}', env=identity(who))
    for name, frag in VARIANTS.items():
        check(f'build all series {name}', build_root / name, BASE_CONFIG + frag)
    git(work, 'checkout', '-q', '-f', base)


def pristine_spec(console: Path, kver: str, smp: int, filter_glob: str, dest: Path,
                  fixes: bool = False) -> RunSpec:
    """make judge of a pristine kunit.py run's console, into @dest.

    kunit.py run as the cover letter says boots no initramfs of ours, so the
    console has no user-space suite: make judge expects it unless told. Its
    kernel is the series' own .kunitconfig, not one of kconfigs/: CONFIG=series
    (kunit/expected-skips names what that kernel cannot run). @fixes: the
    series carries fixes of ours (its known failures of fixes=0 do not apply).
    """
    return RunSpec(console=console, kver=kver, smp=smp, filter=filter_glob, out=dest,
                   fixes=fixes, userspace=False, config='series')


def series_pristine(kver: str, out: Path, smp: int, timeout: int, checks: Checks) -> None:
    """git am each series of @out onto a fresh extraction, kunit.py run as the cover
    letter says, and the verdict of each run's console (out/pristine-<name>/)."""
    src = tree.series_dir(REPO, kver)
    plan = seriesplan.read_plan(src)
    package = packages.installed_version(packages.source_package(kver))
    if package is None:
        raise seriesplan.SeriesError(f'{packages.source_package(kver)} is not installed: '
                                     'run make prepare')
    version = packages.upstream_version(package)
    fresh = cache.cache_root() / f'pristine-{version}'
    shutil.rmtree(fresh, ignore_errors=True)
    tree.extract(kver, package, fresh)
    base = pristine_commit(fresh, 'baseline', f'linux-source-{kver} {package}')
    tree_id = git(fresh, 'rev-parse', 'baseline^{tree}')
    for s in plan.series:
        patches = sorted((out / s.name).glob('0*.patch'))
        if not patches:
            raise seriesplan.SeriesError(f'no series in {out / s.name}: run make series first')
        said = BASE_TREE.search(' '.join(patches[0].read_text().split()))
        if not said or said.group(1) != tree_id:
            raise seriesplan.SeriesError(f'{patches[0]} says its base is git tree '
                                         f'{said.group(1) if said else "(none said)"}, the '
                                         f'fresh extraction of {package} is {tree_id}')
        # Each series applies on its own to the pristine tree.
        git(fresh, 'checkout', '-q', '-f', '-B', f'alone-{s.name}', base)
        git(fresh, 'am', '-q', *map(str, patches[1:]), env=identity('git am <am@localhost>'))
        checks.add(f'git am {s.name}', True, f'{len(patches) - 1} patches apply to a fresh '
                   f'extraction of linux-source-{kver} {package} (git tree {tree_id[:12]})')
    # Then all of them, and each series' suites run as its cover letter says.
    git(fresh, 'checkout', '-q', '-f', '-B', 'all', base)
    for s in plan.series:
        git(fresh, 'am', '-q', *map(str, sorted((out / s.name).glob('0*.patch'))[1:]),
            env=identity('git am <am@localhost>'))
    for s in plan.series:
        # One kept build directory per series (their .kunitconfigs differ: one
        # shared directory was reconfigured and rebuilt twice a run): make
        # rebuilds only what changed since that series' last run.
        kept = cache.cache_root() / f'pristine-kunit-{version}-{s.name}'
        if kept.is_dir():
            kept.rename(fresh / '.kunit')
        try:
            dest = out / f'pristine-{s.name}'
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            # Exactly the cover letter's command; only our outer timer is added.
            cmd = shlex.split(run_command(s, smp))
            console = fresh / '.kunit' / 'test.log'
            # The kept build directory holds the last run's console: never judge that one.
            console.unlink(missing_ok=True)
            rc, killed = proc.run_logged(cmd, fresh, dest / 'kunit.log', BUILD_SECONDS + timeout)
            if console.is_file():
                shutil.copy(console, dest / 'kunit-test.log')
            what = f'kunit.py run {s.name}'
            if killed is not None or not console.is_file():
                checks.add(what, False, 'kunit.py ' + (
                    'did not end' if killed is not None else f'left no console (exit {rc})'))
                continue
            verdict_rc = outputs.judge_file(pristine_spec(console, kver, cpus(s, smp), s.filter, dest, any(
                p.startswith('fixes/') for p, _ in s.patches)))
            v, _ = verdict.read_json(dest / 'verdict.json')
            passed, failed, skipped, known = v.closing_counts()
            # A posted test passes where it lands: a known failure (a
            # finding, a kernel report) is the harness's to list, not the series'.
            checks.add(what, verdict_rc == 0 and known == 0,
                       f'$ {run_command(s, smp)}: verdict {"pass" if v.ok else "fail"}: '
                       f'{passed} passed, {failed} failed, {skipped} skipped, {known} known '
                       f'failures (kunit.py exit {rc}; pristine-{s.name}/)')
        finally:
            if (fresh / '.kunit').is_dir():
                shutil.rmtree(kept, ignore_errors=True)
                (fresh / '.kunit').rename(kept)
    # The one shared directory earlier versions kept: superseded.
    shutil.rmtree(cache.cache_root() / f'pristine-kunit-{version}', ignore_errors=True)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--author', default='', help='"Name <email>" (default: git config)')
    ap.add_argument('--out', type=Path, help='default out/series/KVER')
    ap.add_argument('--no-results', dest='results', action='store_false',
                    help='cover letters without the results of out/KVER/ (for the checks)')
    ap.add_argument('--check', action='store_true',
                    help='then build after every patch and the config variants')
    ap.add_argument('--pristine', action='store_true',
                    help='then git am onto a fresh extraction and run kunit.py as the cover '
                    'letter says')
    ap.add_argument('--author-of-head', action='store_true',
                    help='without --author and git config: the author of the checked-out '
                    'commit (for the checks, which post nothing)')
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--timeout', type=int, default=600, help='seconds for each kernel run')
    return ap


def main(argv: Sequence[str]) -> int:
    args = parser().parse_args(argv)
    out = (args.out or REPO / 'out' / 'series' / args.kver).resolve()

    checks = Checks(args.kver)

    def job() -> int:
        try:
            make_series(args.kver, who, out, checks, args.results)
            if args.check:
                series_check(args.kver, who, out, checks)
            if args.pristine:
                series_pristine(args.kver, out, args.smp, args.timeout, checks)
        except (seriesplan.SeriesError, say.PrepareError) as e:
            checks.add('series', False, str(e))
        return checks.finish(out)

    try:
        who = signer(args.author, args.author_of_head)
        return cache.locked(f'series {args.kver}', job)
    except (seriesplan.SeriesError, say.PrepareError) as e:
        print(f'cpuhp-kunit: series: {e}', file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
