"""Stack traces a person can read: a kernel report decoded against its vmlinux.

A report's frames say 'cpuhp_invoke_callback+0x1e/0x40'; the kernel tree's
scripts/decode_stacktrace.sh turns each into the function, file and line,
inlined frames included ('cpuhp_invoke_callback (kernel/cpu.c:194)'). It
needs the vmlinux the console's kernel was, with its debug information
(CONFIG_DEBUG_INFO_DWARF*; a vmlinux built with CONFIG_DEBUG_INFO_NONE has
symbols only, and nothing to decode them with), and binutils (nm,
addr2line, readelf; the cross ones for another architecture).

make run decodes the kernel reports of its console against the kernel it
built (build_dir/vmlinux, the tree's own script); make judge does when
given VMLINUX= (the script of the tree the vmlinux was built from: its
build directory's 'source' link, the tree it was built in, or the cached
tree of KVER=). Each finding (verdict.Problem.key) is decoded once: the
same report in many cases is the same stack. The decoded text is kept in
verdict.json ("decoded") and shown in index.html and junit.xml.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from cpuhpk import verdict

SCRIPT = Path('scripts') / 'decode_stacktrace.sh'
# Seconds all of a run's reports get, and one report at most: the script
# runs nm and addr2line once per frame, seconds each on a large vmlinux.
BUDGET = 300
ONE = 120
# Reports decoded at most (distinct findings), the rest left as printed.
MAX_REPORTS = 20
# A frame the script decoded: 'func (kernel/cpu.c:194)', inlined ones after it.
DECODED = re.compile(r' \((?:\S+/)?[\w.-]+\.(?:c|h|S|rs):\d+')


class DecodeError(Exception):
    """Why nothing can be decoded: one line."""


def sections(vmlinux: Path) -> List[str]:
    """The section names of the ELF file @vmlinux (DecodeError if it is none)."""
    try:
        with open(vmlinux, 'rb') as f:
            ident = f.read(64)
            if len(ident) < 52 or ident[:4] != b'\x7fELF':
                raise DecodeError(f'{vmlinux} is not an ELF file')
            bits64, end = ident[4] == 2, '<' if ident[5] == 1 else '>'
            if bits64:
                shoff, = struct.unpack_from(end + 'Q', ident, 0x28)
                entsize, count, strndx = struct.unpack_from(end + 'HHH', ident, 0x3A)
            else:
                shoff, = struct.unpack_from(end + 'I', ident, 0x20)
                entsize, count, strndx = struct.unpack_from(end + 'HHH', ident, 0x2E)
            f.seek(shoff)
            table = f.read(entsize * count)
            if len(table) < entsize * count or strndx >= count:
                raise DecodeError(f'{vmlinux}: its section table is cut short')

            def header(i: int) -> Sequence[int]:
                fmt = end + ('IIQQQQ' if bits64 else 'IIIIII')
                return struct.unpack_from(fmt, table, i * entsize)

            name_off, strings_size = header(strndx)[4], header(strndx)[5]
            f.seek(name_off)
            names = f.read(strings_size)
    except OSError as e:
        raise DecodeError(f'cannot read {vmlinux}: {e.strerror}') from None
    except struct.error:
        raise DecodeError(f'{vmlinux}: not a readable ELF file') from None
    out = []
    for i in range(count):
        start = header(i)[0]
        out.append(names[start:names.index(b'\0', start)].decode(errors='replace')
                   if start < len(names) and b'\0' in names[start:] else '')
    return out


def check(vmlinux: Path, cross_compile: str = '') -> None:
    """DecodeError, in one line, when @vmlinux cannot be decoded against."""
    if not vmlinux.is_file():
        raise DecodeError(f'no vmlinux at {vmlinux}')
    if '.debug_line' not in sections(vmlinux):
        raise DecodeError(f'{vmlinux} has no debug information (built with '
                          'CONFIG_DEBUG_INFO_NONE): frames not decoded; a kernel built with '
                          'CONFIG_DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT=y has it')
    missing = [t for t in ('nm', 'addr2line', 'readelf')
               if shutil.which(cross_compile + t) is None]
    if missing:
        raise DecodeError(f'{", ".join(cross_compile + t for t in missing)} not found '
                          '(binutils): frames not decoded')


def script_for(vmlinux: Path, trees: Sequence[Optional[Path]] = ()) -> Path:
    """The decode_stacktrace.sh of the tree @vmlinux was built from: its build
    directory's 'source' link (O= builds), the tree it was built in, or the
    first of @trees that has one."""
    for root in (vmlinux.parent / 'source', vmlinux.parent, *[t for t in trees if t]):
        if (root / SCRIPT).is_file():
            return (root / SCRIPT).resolve()
    raise DecodeError(f'no {SCRIPT} next to {vmlinux} (its build directory\'s source link '
                      'or tree) nor in the kernel tree: frames not decoded')


def decode(text: str, vmlinux: Path, script: Path, seconds: float = ONE,
           cross_compile: str = '') -> str:
    """@text (a report, prefixes stripped) with its frames decoded; '' when
    no frame could be (DecodeError for a script that fails)."""
    # 'Code:' lines would be disassembled (decodecode): not frames.
    lines = [ln for ln in text.splitlines() if 'Code: ' not in ln]
    base = script.parent.parent
    env = dict(os.environ, CROSS_COMPILE=cross_compile) if cross_compile else None
    try:
        res = subprocess.run(['bash', str(script), str(vmlinux), str(base)],
                             input='\n'.join(lines) + '\n', capture_output=True, text=True,
                             errors='replace', timeout=seconds, check=False, env=env)
    except subprocess.TimeoutExpired:
        raise DecodeError(f'{script.name} took more than {seconds:.0f} s') from None
    except OSError as e:
        raise DecodeError(f'cannot run {script}: {e.strerror}') from None
    if res.returncode != 0:
        why = (res.stderr.strip().splitlines() or [f'exit status {res.returncode}'])[0]
        raise DecodeError(f'{script.name} failed: {why}')
    out = res.stdout.rstrip('\n')
    return out if DECODED.search(out) else ''


def decode_problems(problems: Sequence[verdict.Problem], vmlinux: Path, script: Path,
                    cross_compile: str = '', budget: float = BUDGET) -> str:
    """Decode the kernel reports of @problems (p.decoded), once per finding.

    Returns what was done, in one line (for the log and verdict.json's
    context); a report that cannot be decoded keeps decoded ''.
    """
    done: Dict[str, str] = {}
    started = time.monotonic()
    failed: List[str] = []
    reports = [p for p in problems if p.category == 'kernel-log' and p.detail]
    for p in reports:
        key = p.ident()
        if key not in done:
            left = budget - (time.monotonic() - started)
            if len(done) >= MAX_REPORTS or left <= 0:
                failed.append(f'{len(set(q.ident() for q in reports)) - len(done)} report(s) '
                              'not decoded (time or count limit)')
                break
            try:
                done[key] = decode(p.detail, vmlinux, script, min(ONE, left), cross_compile)
            except DecodeError as e:
                done[key] = ''
                failed.append(str(e))
        p.decoded = done[key]
    for p in reports:
        p.decoded = p.decoded or done.get(p.ident(), '')
    if not reports:
        return ''
    ok = sum(1 for d in done.values() if d)
    note = f'{ok} of {len(done)} report(s) decoded against {vmlinux}'
    return note + (f' ({failed[0]})' if failed else '')


def decode_verdict(v: verdict.Verdict, vmlinux: Path, trees: Sequence[Optional[Path]] = (),
                   cross_compile: str = '') -> str:
    """Decode the reports of @v (its problems and known failures); what was
    done or why nothing was, in one line ('' when it has no report)."""
    if not any(p.category == 'kernel-log' for p in v.problems + v.known):
        return ''
    try:
        check(vmlinux, cross_compile)
        script = script_for(vmlinux, trees)
    except DecodeError as e:
        return str(e)
    return decode_problems(v.problems + v.known, vmlinux, script, cross_compile)
