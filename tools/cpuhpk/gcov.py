"""gcov data out of the guest, and lcov reports of it, for every run.

Every kernel is built with CONFIG_GCOV_KERNEL and profiles only the objects
under test, kernel/cpu.o and kernel/time/timekeeping.o (make
CPUHP_KUNIT_GCOV=y, see src/), not GCOV_PROFILE_ALL: measured, it costs
nothing visible at run time (Documentation/coverage.md), so the default kernel is
the coverage kernel and no build is spent on coverage alone. After the
suites the guest (guest.py) prints the .gcda files of
/sys/kernel/debug/gcov as a base64 tar on the console. Those files go back
into the build directory next to their .gcno files, where lcov and genhtml
read them (with llvm-cov gcov for a kernel clang built,
MAKE_OPTIONS=LLVM=1). With ISOLATE= every boot prints its own; their
tracefiles are added up (merge_boots()).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import zlib
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from cpuhpk import arch, hygiene, ktap, say
from cpuhpk.paths import REPO

# What the coverage reports need.
PACKAGES = ('lcov',)
FILES = ('kernel/cpu.c', 'kernel/time/timekeeping.c')
# Functions of the state-machine core and of the crosststamp, listed one by one.
CORE_FUNCTIONS = re.compile(
    r'^(cpuhp_\w+|__cpuhp_\w+|_cpu_up|_cpu_down|undo_cpu_\w+|'
    r'get_device_system_crosststamp|adjust_historical_crosststamp|'
    r'timestamp_in_interval|convert_base_to_cs|convert_clock|scale64_check_overflow)$')
# The gcov dump's markers and lines: the hygiene check knows them too.
BEGIN, END, BASE64_LINE = hygiene.GCOV_BEGIN, hygiene.GCOV_END, hygiene.BASE64_LINE


def thresholds_path(kver: str, a: Optional[arch.Arch] = None) -> Path:
    """The coverage gate of one kernel series: tools/coverage-thresholds-<KVER>,
    on another architecture than x86_64 tools/coverage-thresholds-<KVER>-<ARCH>."""
    suffix = (a or arch.get(arch.HOST)).out_suffix
    return REPO / 'tools' / f'coverage-thresholds-{kver}{suffix}'


# The gcda archive comes from the guest: untrusted. Limits well above what
# two profiled objects produce (a few hundred KiB).
MAX_GCDA_BYTES = 64 << 20


def gcda_blob(console: Path) -> bytes:
    """The gcov archive printed on the console, checked against its sha256."""
    if not console.is_file():
        raise say.PrepareError(f'no console ({console}): the kernel was not built or did '
                               'not boot')
    return gcda_blob_of(ktap.read_console(console).lines, str(console))


def gcda_blob_of(lines: Sequence[str], where: str) -> bytes:
    """The first gcov archive printed in @lines (a console, or one boot of
    it, read from @where), checked against its sha256."""
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith(BEGIN))
        end = next(i for i, ln in enumerate(lines) if i > start and ln.strip() == END)
    except StopIteration:
        raise say.PrepareError(f'no gcov data on the console ({where}): '
                               'did the kernel reach /init?') from None
    # Kernel messages may interleave: keep the lines that are base64.
    b64 = [ln.strip() for ln in lines[start + 1:end] if BASE64_LINE.match(ln.strip())]
    if sum(map(len, b64)) > MAX_GCDA_BYTES * 4 // 3 + 4:
        raise say.PrepareError(f'gcov data on the console is larger than '
                               f'{MAX_GCDA_BYTES >> 20} MiB: refused')
    try:
        blob = base64.b64decode(''.join(b64), validate=True)
    except ValueError as e:
        raise say.PrepareError(f'gcov data on the console is damaged: {e}') from None
    want = lines[start][len(BEGIN):].split()[:1]
    if not blob or want != [hashlib.sha256(blob).hexdigest()]:
        raise say.PrepareError(f'gcov data in {where} is missing or damaged '
                               '(sha256 differs from the one the guest printed)')
    return blob


def gcda_members(blob: bytes, build_dir: Path) -> List[Tuple[Path, bytes]]:
    """Where each .gcda of the archive goes in @build_dir, and its data.

    debugfs mirrors the build directory's absolute path, so a member
    './<build dir>/kernel/cpu.gcda' goes to <build dir>/kernel/cpu.gcda.
    Everything else is refused, whole archive, before anything is written:
    absolute names, '..', links, devices, files that are not .gcda, a place
    outside the build directory or without its directory there, and more
    than MAX_GCDA_BYTES in all.
    """
    root = Path(os.path.normpath(build_dir.absolute()))
    out: List[Tuple[Path, bytes]] = []
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(blob), mode='r:gz') as tar:
            for member in tar:
                name = member.name
                if name.startswith('/') or '..' in name.split('/'):
                    raise say.PrepareError(f'gcov archive: unsafe name {name!r}: refused')
                if member.isdir():
                    continue
                if not member.isfile():
                    raise say.PrepareError(f'gcov archive: {name!r} is not a regular file '
                                           '(link or device): refused')
                if not name.endswith('.gcda'):
                    raise say.PrepareError(f'gcov archive: {name!r} is not a .gcda file: '
                                           'refused')
                total += member.size
                if total > MAX_GCDA_BYTES:
                    raise say.PrepareError(f'gcov archive: more than {MAX_GCDA_BYTES >> 20} '
                                           'MiB: refused')
                path = Path(os.path.normpath('/' + name.removeprefix('./')))
                if root not in path.parents:
                    raise say.PrepareError(f'gcov archive: {name!r} is outside the build '
                                           f'directory {root}: refused')
                if not path.parent.is_dir():
                    raise say.PrepareError(f'gcov archive: {name!r}: no such directory in '
                                           'the build: refused')
                data = tar.extractfile(member)
                assert data is not None
                out.append((path, data.read(member.size)))
    except (tarfile.TarError, EOFError, OSError, zlib.error) as e:
        raise say.PrepareError(f'gcov archive is damaged: {e}') from None
    return out


def extract_gcda(console: Path, build_dir: Path) -> List[Path]:
    """Put the .gcda files printed on the console back into the build directory."""
    return write_gcda(gcda_blob(console), build_dir)


def write_gcda(blob: bytes, build_dir: Path) -> List[Path]:
    """Put the .gcda files of the gcov archive @blob back into the build directory."""
    written: List[Path] = []
    for path, data in gcda_members(blob, build_dir):
        # Never through a link that may stand where the file should be.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, 'wb') as f:
            f.write(data)
        written.append(path)
    return written



@dataclasses.dataclass
class FileCov:
    lines: Tuple[int, int] = (0, 0)         # hit, found
    functions: Tuple[int, int] = (0, 0)
    branches: Tuple[int, int] = (0, 0)
    fn_start: Dict[str, int] = dataclasses.field(default_factory=dict)
    fn_calls: Dict[str, int] = dataclasses.field(default_factory=dict)
    line_hits: Dict[int, int] = dataclasses.field(default_factory=dict)
    branch_taken: Dict[int, List[bool]] = dataclasses.field(default_factory=dict)


def parse_info(text: str) -> Dict[str, FileCov]:
    """The per-file records of an lcov tracefile."""
    files: Dict[str, FileCov] = {}
    cur: Optional[FileCov] = None
    for line in text.splitlines():
        key, _, val = line.partition(':')
        if key == 'SF':
            cur = files.setdefault(val, FileCov())
        elif cur is None:
            continue
        elif key == 'FN':
            start, name = val.split(',', 1)
            cur.fn_start[name] = int(start)
        elif key == 'FNDA':
            count, name = val.split(',', 1)
            cur.fn_calls[name] = int(count)
        elif key == 'DA':
            num, count = val.split(',')[:2]
            cur.line_hits[int(num)] = int(count)
        elif key == 'BRDA':
            num, _, _, taken = val.split(',')[:4]
            hit = taken not in ('-', '0')
            h, f = cur.branches
            cur.branches = (h + hit, f + 1)
            cur.branch_taken.setdefault(int(num), []).append(hit)
    for cov in files.values():
        cov.lines = (sum(1 for c in cov.line_hits.values() if c), len(cov.line_hits))
        cov.functions = (sum(1 for c in cov.fn_calls.values() if c), len(cov.fn_start))
    return files


def _function_range(cov: FileCov, name: str) -> Tuple[int, int]:
    """@name's first line and the next function's first line (lcov gives no ends)."""
    start = cov.fn_start[name]
    later = [s for s in cov.fn_start.values() if s > start]
    end = min(later) if later else max([*cov.line_hits, *cov.branch_taken], default=start) + 1
    return start, end


def function_lines(cov: FileCov, name: str) -> Tuple[int, int]:
    """Lines hit/found from @name's first line to the next function's."""
    start, end = _function_range(cov, name)
    hits = [c for n, c in cov.line_hits.items() if start <= n < end]
    return sum(1 for c in hits if c), len(hits)


def function_branches(cov: FileCov, name: str) -> Tuple[int, int]:
    """Branches taken/found from @name's first line to the next function's."""
    start, end = _function_range(cov, name)
    taken = [t for n, ts in cov.branch_taken.items() if start <= n < end for t in ts]
    return sum(taken), len(taken)


def missed_branches(cov: FileCov, name: str) -> List[str]:
    """'line:k' for each branch of @name never taken (k: its place on the line)."""
    start, end = _function_range(cov, name)
    return [f'{n}:{k}' for n in sorted(cov.branch_taken) if start <= n < end
            for k, t in enumerate(cov.branch_taken[n]) if not t]


def pct(hit_found: Tuple[int, int]) -> float:
    hit, found = hit_found
    return 100.0 * hit / found if found else 0.0


def summary(files: Dict[str, FileCov], thresholds: Optional[Path] = None) -> List[str]:
    out = ['file                          lines            functions        branches']
    for name in FILES:
        cov = next((c for f, c in files.items() if f.endswith('/' + name)), None)
        if cov is None:
            out.append(f'{name:30}(no data)')
            continue
        out.append(f'{name:30}' + ''.join(
            f'{pct(v):5.1f}% {v[0]:4}/{v[1]:<4}  ' for v in (cov.lines, cov.functions,
                                                             cov.branches)))
    out.append('')
    out.append('function                                  file                 calls  lines'
               '           branches')
    gated = read_function_thresholds(thresholds) if thresholds and thresholds.is_file() else {}
    for name in FILES:
        cov = next((c for f, c in files.items() if f.endswith('/' + name)), None)
        if cov is None:
            continue
        for fn in sorted(cov.fn_start, key=cov.fn_start.__getitem__):
            if CORE_FUNCTIONS.match(fn) or fn in gated:
                lines, branches = function_lines(cov, fn), function_branches(cov, fn)
                out.append(f'{fn:42}{Path(name).name:18}{cov.fn_calls.get(fn, 0):8}  '
                           f'{lines[0]:3}/{lines[1]:<3} {pct(lines):5.1f}%  '
                           f'{branches[0]:3}/{branches[1]:<3} {pct(branches):5.1f}%'
                           + ('  gated' if fn in gated else ''))
    if gated:
        out.append('')
        out.append('branches of the gated functions never taken (line:place, see README):')
        for name in FILES:
            cov = next((c for f, c in files.items() if f.endswith('/' + name)), None)
            for fn in gated:
                if cov is not None and fn in cov.fn_start:
                    out.append(f'  {fn}: {" ".join(missed_branches(cov, fn)) or "none"}')
    return out


def _threshold_rows(path: Path) -> List[List[str]]:
    rows = []
    for line in path.read_text().splitlines():
        line = line.split('#', 1)[0].strip()
        if line:
            rows.append(line.split())
    return rows


def read_thresholds(path: Path) -> Dict[str, Tuple[float, ...]]:
    """'<file> <min line %> <min function %> [<min branch %>]' per line."""
    return {r[0]: tuple(float(v) for v in r[1:])
            for r in _threshold_rows(path) if not r[0].endswith('()')}


def read_function_thresholds(path: Path) -> Dict[str, Tuple[float, float]]:
    """'<function>() <min line %> <min branch %>' per line."""
    return {name[:-2]: (float(lines), float(branches))
            for name, lines, branches in (r for r in _threshold_rows(path)
                                          if r[0].endswith('()'))}


def gate(files: Dict[str, FileCov], limits: Dict[str, Tuple[float, ...]]) -> List[str]:
    """Per file: lines, functions and (where a third limit is given) branches."""
    problems = []
    for name, (min_lines, min_funcs, *min_branches) in limits.items():
        cov = next((c for f, c in files.items() if f.endswith('/' + name)), None)
        if cov is None:
            problems.append(f'{name}: no coverage data')
            continue
        if pct(cov.lines) < min_lines:
            problems.append(f'{name}: line coverage {pct(cov.lines):.1f}% < {min_lines}%')
        if pct(cov.functions) < min_funcs:
            problems.append(f'{name}: function coverage {pct(cov.functions):.1f}% < {min_funcs}%')
        if min_branches and pct(cov.branches) < min_branches[0]:
            problems.append(f'{name}: branch coverage {pct(cov.branches):.1f}% '
                            f'< {min_branches[0]}%')
    return problems


def gate_functions(files: Dict[str, FileCov],
                   limits: Dict[str, Tuple[float, float]]) -> List[str]:
    """Per function of FILES: its line and branch coverage against its limits."""
    problems = []
    for fn, (min_lines, min_branches) in limits.items():
        cov = next((c for f, c in files.items() if any(f.endswith('/' + n) for n in FILES)
                    and fn in c.fn_start), None)
        if cov is None:
            problems.append(f'{fn}(): no coverage data')
            continue
        lines, branches = pct(function_lines(cov, fn)), pct(function_branches(cov, fn))
        if lines < min_lines:
            problems.append(f'{fn}(): line coverage {lines:.1f}% < {min_lines}%')
        if branches < min_branches:
            problems.append(f'{fn}(): branch coverage {branches:.1f}% < {min_branches}%')
    return problems


CLANG_VERSION = re.compile(r'^CONFIG_CLANG_VERSION=(\d+)$', re.M)


def gcov_tool(build_dir: Path) -> List[str]:
    """lcov's --gcov-tool for the kernel in @build_dir: none for gcc's
    (lcov runs gcc's gcov), for clang's (MAKE_OPTIONS=LLVM=1) llvm-cov gcov,
    through a script in the build directory (lcov runs one program): gcc's
    gcov cannot read clang's .gcno and .gcda files ('version 408*, prefer
    B22*' with Debian 12's gcc 12 and clang 14)."""
    try:
        config = (build_dir / '.config').read_text(errors='replace')
    except OSError:
        return []
    if not re.search(r'^CONFIG_CC_IS_CLANG=y$', config, re.M):
        return []
    m = CLANG_VERSION.search(config)
    versioned = f'llvm-cov-{int(m.group(1)) // 10000}' if m else ''
    cov = versioned if versioned and shutil.which(versioned) else 'llvm-cov'
    script = build_dir / 'cpuhp-kunit' / 'llvm-gcov'
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f'#!/bin/sh\nexec {cov} gcov "$@"\n')
    script.chmod(0o755)
    return ['--gcov-tool', str(script)]


def capture(build_dir: Path, src: Path, out: Path, name: str) -> Dict[str, FileCov]:
    """lcov over the .gcda files now in @build_dir, restricted to FILES."""
    lcov('--capture', '--directory', str(build_dir), '--base-directory', str(src),
         *gcov_tool(build_dir), '--output-file', str(out / f'{name}-all.info'))
    lcov('--extract', str(out / f'{name}-all.info'), *[f'*/{f}' for f in FILES],
         '--output-file', str(out / f'{name}.info'))
    return parse_info((out / f'{name}.info').read_text())


def lcov(*args: str) -> str:
    res = subprocess.run(['lcov', '--quiet', '--rc', 'lcov_branch_coverage=1', *args],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise say.PrepareError(f"lcov {' '.join(args)} failed: {res.stderr.strip()}")
    return res.stdout


def report(out: Path, build_dir: Path, src: Path, kver: str,
           a: Optional[arch.Arch] = None,
           boots: Optional[Sequence[Sequence[str]]] = None) -> Dict[str, FileCov]:
    """The gcov data of out/console.log as out/coverage.info, summary.txt, html/.

    Stale .gcda files of an earlier run must have been removed from
    @build_dir before the run (clear()). With @boots (ISOLATE=: the
    console's boots, each a list of lines) every boot printed its own gcov
    data, the counts of that boot alone: merge_boots() adds them up.
    """
    if boots is not None:
        files = merge_boots(out, build_dir, src, boots)
    else:
        gcda = extract_gcda(out / 'console.log', build_dir)
        say.log(f'{len(gcda)} .gcda files from the guest')
        files = capture(build_dir, src, out, 'coverage')
    (out / 'coverage-all.info').unlink(missing_ok=True)
    genhtml(out / 'coverage.info', out / 'html')
    text = summary(files, thresholds_path(kver, a))
    (out / 'summary.txt').write_text('\n'.join(text) + '\n')
    return files


def merge_boots(out: Path, build_dir: Path, src: Path,
                boots: Sequence[Sequence[str]]) -> Dict[str, FileCov]:
    """out/coverage.info of several boots of one kernel: each boot's gcov
    data put into @build_dir in turn and captured (lcov), the tracefiles
    added up (lcov -a): a line run in any boot is covered, its count the
    sum. A boot that printed no gcov data (it crashed before /init: the
    verdict says so) adds nothing and is named in the log; none at all is
    an error, as for a single boot."""
    parts: List[Path] = []
    missing: List[str] = []
    for n, lines in enumerate(boots, 1):
        try:
            blob = gcda_blob_of(lines, f'{out / "console.log"}, boot {n}')
        except say.PrepareError as e:
            missing.append(f'boot {n}: {e}')
            continue
        clear(build_dir)
        write_gcda(blob, build_dir)
        capture(build_dir, src, out, f'coverage-boot{n}')
        (out / f'coverage-boot{n}-all.info').unlink(missing_ok=True)
        parts.append(out / f'coverage-boot{n}.info')
    if not parts:
        raise say.PrepareError(f'no gcov data in any of the {len(boots)} boots: '
                               + (missing[0] if missing else 'no boot'))
    say.log(f'coverage: the gcov data of {len(parts)} of {len(boots)} boots added up (lcov -a)'
            + (f'; none from {"; ".join(missing)}' if missing else ''))
    args: List[str] = []
    for part in parts:
        args += ['--add-tracefile', str(part)]
    lcov(*args, '--output-file', str(out / 'coverage.info'))
    for part in parts:
        part.unlink(missing_ok=True)
    return parse_info((out / 'coverage.info').read_text())


def genhtml(info: Path, html: Path) -> None:
    """genhtml's report of the tracefile @info in @html."""
    res = subprocess.run(['genhtml', '--quiet', '--branch-coverage', '--output-directory',
                          str(html), str(info)],
                         capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise say.PrepareError(f'genhtml failed: {res.stderr.strip()}')


def clear(build_dir: Path) -> None:
    """Remove the .gcda files an earlier run left in @build_dir."""
    for stale in (build_dir / 'kernel').rglob('*.gcda'):
        stale.unlink()
