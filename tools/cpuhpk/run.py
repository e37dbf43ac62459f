"""`make run`: prepare the tree, build and boot it with kunit.py, judge the result.

Writes to out/<KVER>[-<CONFIG>]/:
  console.log   the whole kernel console (kunit.py's test.log)
  results.ktap  the KTAP the kernel printed, console prefix removed
  results.json  kunit.py --json
  junit.xml     one testcase per KUnit case (or parameter)
  kunit.log     what kunit.py printed (config, build, summary)
Exit status 0 only when every case passed or was skipped with a reason, none
crashed, kunit.py agreed, and the console log is clean (hygiene.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List, Optional, Sequence

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import hygiene, ktap, tree  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
# Time for kunit.py to configure and build a cold tree on a 2-core machine,
# with a wide margin: the kernel's own run has its own timeout (--timeout).
BUILD_TIMEOUT = 45 * 60
# Kernel arguments: reboot (and so end QEMU, -no-reboot) at once on a panic
# instead of waiting for the timeout.
KERNEL_ARGS = ('panic=-1',)


def out_dir(kver: str, config: str) -> Path:
    return REPO / 'out' / (kver if config == 'default' else f'{kver}-{config}')


def fragment(config: str) -> Path:
    path = REPO / 'kconfigs' / f'{config}.config'
    if not path.is_file():
        known = ' '.join(sorted(p.stem for p in (REPO / 'kconfigs').glob('*.config')))
        raise tree.PrepareError(f'no kconfigs/{config}.config (known: {known})')
    return path


def kunit_command(t: tree.Tree, args: argparse.Namespace, build_dir: Path,
                  out: Path) -> List[str]:
    # Every fragment builds on the default one (all suites, SMP, hotplug).
    configs = ['default'] + [c for c in [args.config, *args.add_config] if c != 'default']
    cmd = [sys.executable, str(t.kunit_py), 'run',
           *[f'--kunitconfig={fragment(c)}' for c in configs], f'--build_dir={build_dir}',
           f'--jobs={args.jobs}', f'--timeout={args.timeout}',
           f'--qemu_args=-smp {args.smp}', f'--json={out / "results.json"}']
    cmd += [f'--make_options={o}' for o in args.make_option]
    cmd.append(f'--qemu_config={args.qemu_config}' if args.qemu_config else '--arch=x86_64')
    cmd += [f'--kernel_args={a}' for a in KERNEL_ARGS]
    if args.filter:
        cmd.append(args.filter)
    return cmd


def run_kunit(cmd: List[str], cwd: Path, log_path: Path, seconds: float) -> Optional[int]:
    """Run kunit.py, teeing its output; None if it had to be killed after @seconds."""
    with open(log_path, 'w') as log, subprocess.Popen(
            cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors='replace', start_new_session=True) as proc:
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            os.killpg(proc.pid, signal.SIGKILL)

        timer = threading.Timer(seconds, kill)
        timer.start()
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                sys.stdout.write(line)
                log.write(line)
            rc = proc.wait()
        finally:
            timer.cancel()
        return None if killed.is_set() else rc


def judge(out: Path, rc: Optional[int], timeout: int) -> List[str]:
    """Write results.ktap and junit.xml; return what makes the run red."""
    problems: List[str] = []
    console_path = out / 'console.log'
    if not console_path.is_file():
        return [f'the kernel never ran (kunit.py exited {rc}): see {out / "kunit.log"}']
    console = console_path.read_text(errors='replace').splitlines()
    lines = ktap.extract(console)
    (out / 'results.ktap').write_text(''.join(f'{ln}\n' for ln in lines))
    root = ktap.parse(lines)
    ktap.junit(root).write(out / 'junit.xml', encoding='utf-8', xml_declaration=True)
    v = ktap.verdict(root)
    print(f'cpuhp-kunit: {v.crashed} crashed' if v.crashed else 'cpuhp-kunit: none crashed')
    for name, t in ktap.cases(root):
        if t.status is ktap.Status.SKIP:
            print(f'cpuhp-kunit: skipped {name}: {t.reason}')
    problems += v.problems
    problems += [str(f) for f in hygiene.check(console)]
    kunit_log = (out / 'kunit.log').read_text(errors='replace')
    if rc is None or 'timed out after' in kunit_log:
        problems.append(f'the kernel did not finish within {timeout} s (hang or deadlock?); '
                        f'partial KTAP kept in {out / "results.ktap"}')
    elif rc != 0 and v.ok:
        problems.append(f'kunit.py exited {rc} although every case passed: see {out / "kunit.log"}')
    return problems


def counts_line(out: Path) -> str:
    """'kunit: N passed, N failed, N skipped' of a run, crashed cases counted as failed."""
    path = out / 'results.ktap'
    root = ktap.parse(path.read_text().splitlines()) if path.is_file() else ktap.Test(name='')
    v = ktap.verdict(root)
    return f'kunit: {v.passed} passed, {v.failed + v.crashed} failed, {v.skipped} skipped'


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--kver', default='6.12')
    ap.add_argument('--smp', type=int, default=4)
    ap.add_argument('--filter', default='')
    ap.add_argument('--config', default='default')
    ap.add_argument('--timeout', type=int, default=600, help='seconds for the kernel run')
    ap.add_argument('--jobs', type=int, default=os.cpu_count() or 1)
    ap.add_argument('--out', type=Path, help='output directory (default out/KVER[-CONFIG])')
    ap.add_argument('--add-config', action='append', default=[], metavar='CONFIG',
                    help='a further kconfigs/ fragment on top of --config')
    ap.add_argument('--make-option', action='append', default=[], metavar='OPT',
                    help='passed to the kernel build (kunit.py --make_options)')
    ap.add_argument('--qemu-config', type=Path,
                    help='kunit.py --qemu_config file instead of --arch=x86_64')
    ap.add_argument('--build-name', help='build directory name in the cache '
                    '(default build-VERSION-CONFIG)')
    args = ap.parse_args(argv)
    if args.smp < 1:
        ap.error('--smp must be at least 1')

    try:
        frag = fragment(args.config)
        t = tree.prepare(args.kver, REPO)
    except tree.PrepareError as e:
        print(f'cpuhp-kunit: error: {e}', file=sys.stderr)
        return 1
    out = args.out or out_dir(args.kver, args.config)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    build_dir = tree.cache_root() / (args.build_name or f'build-{t.version}-{frag.stem}')
    build_dir.mkdir(parents=True, exist_ok=True)
    test_log = build_dir / 'test.log'
    test_log.unlink(missing_ok=True)     # never judge a previous run's console

    tree.log(f'linux {t.version} ({t.package}) in {t.path}, SMP={args.smp}, '
             f'CONFIG={args.config}, FILTER={args.filter or "*"}')
    started = time.monotonic()
    rc = run_kunit(kunit_command(t, args, build_dir, out), t.path, out / 'kunit.log',
                   BUILD_TIMEOUT + args.timeout + 60)
    if test_log.is_file():
        shutil.copyfile(test_log, out / 'console.log')
    problems = judge(out, rc, args.timeout)
    tree.log(f'{time.monotonic() - started:.0f} s; outputs in {out}')
    for p in problems:
        print(f'cpuhp-kunit: FAIL: {p}')
    if not problems:
        print('cpuhp-kunit: PASS')
    print(counts_line(out))
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
