"""CONFIG=debian: the kernel as Debian configures it, its built-in part.

linux-config-<KVER> (a Debian package, installed like every other) holds
the configuration Debian builds its kernels with, one per architecture
(config.amd64_none_amd64.xz, ARCH=arm64: config.arm64_none_arm64.xz). Its modules are left out (every =m turned
off: the kernel as Debian boots it before it loads a module); on top,
kconfigs/debian.config adds what the suites need (KUnit and our suites,
hotplug state control, gcov) and what a build outside Debian's packaging
must change (no debug info: it changes no code, and BTF needs pahole).

kunit.py checks that every line of its fragments holds after its own make
olddefconfig, and turning modules off changes what Debian's lines resolve
to. So the merged configuration is resolved here once (make olddefconfig
in the cache, keyed by what went in) and kunit.py gets that complete
.config as its first fragment: every line of it holds.
"""

from __future__ import annotations

import hashlib
import lzma
import re
import shutil
import subprocess
from pathlib import Path
from typing import List, Sequence, Tuple

from cpuhpk import arch, cache, packages, say, tree

PACKAGES = ('openssl',)   # Debian's config signs modules: the build makes a key

_MODULE = re.compile(r'^(CONFIG_[A-Za-z0-9_]+)=m$')


def package(kver: str) -> str:
    return f'linux-config-{kver}'


def source_config(kver: str, a: arch.Arch) -> Path:
    """Debian's configuration of @a's kernel (not the cloud or rt flavour)."""
    return Path('/usr/src') / package(kver) / f'config.{a.deb}_none_{a.deb}.xz'


def builtin_only(text: str) -> str:
    """@text (a .config) with every module turned off."""
    out: List[str] = []
    for line in text.splitlines():
        m = _MODULE.match(line)
        out.append(f'# {m.group(1)} is not set' if m else line)
    return '\n'.join(out) + '\n'


def counts(text: str) -> Tuple[int, int]:
    """(options built in, options as modules) of a .config."""
    lines = text.splitlines()
    return (sum(1 for x in lines if x.startswith('CONFIG_') and x.endswith('=y')),
            sum(1 for x in lines if _MODULE.match(x)))


def base(t: tree.Tree, fragments: Sequence[Path], make_options: Sequence[str],
         a: arch.Arch) -> Path:
    """The resolved .config of Debian's built-in configuration plus @fragments.

    Resolved with make olddefconfig in the cache; reused while Debian's
    configuration, @fragments and the tree are the same.
    """
    packages.ensure_packages([package(t.kver), *PACKAGES])
    src = source_config(t.kver, a)
    if not src.is_file():
        raise say.PrepareError(f'{src}: not in {package(t.kver)} (its flavours: '
                               f'{" ".join(p.name for p in src.parent.glob("config.*"))})')
    merged = builtin_only(lzma.decompress(src.read_bytes()).decode())
    for f in fragments:
        merged += f.read_text()
    key = hashlib.sha256(f'{t.build_key}\n{merged}'.encode()).hexdigest()[:12]
    work = cache.cache_root() / f'debian-config-{t.build_key}{a.out_suffix}'
    resolved = work / f'debian-{key}.config'
    if resolved.is_file():
        return resolved
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    (work / '.config').write_text(merged)
    res = subprocess.run(['make', '-C', str(t.path), f'O={work}', *arch.make_arguments(a),
                          *make_options, 'olddefconfig'],
                         capture_output=True, text=True, check=False, timeout=600)
    if res.returncode != 0:
        tail = ' '.join((res.stderr or res.stdout).strip().splitlines()[-2:])
        raise say.PrepareError(f'make olddefconfig of Debian\'s configuration failed: {tail}')
    shutil.copy(work / '.config', resolved)
    return resolved
