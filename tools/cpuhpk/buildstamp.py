"""A build directory's stamp: the kernel built before boots again when nothing it read changed.

A build directory remembers the inputs of kunit.py's last build there
(BUILD_STAMP): a run whose inputs are the same boots that kernel again with
kunit.py exec instead of kunit.py run, whose olddefconfig and make take
time even when nothing changed (Documentation/performance.md): each boot
of make coverage and of fixes-test after their first.

build_inputs() digests what a build reads; reusable_build() says whether
the kernel in a build directory is the one of these inputs, untouched
since; forget_build() before a build and remember_build() once its kernel
started keep the stamp true (a build that fails or is stopped leaves none).

A run's lcov tracefile gets a stamp of its own (COVERAGE_STAMP, next to
coverage.info): source_digest(), the part of build_inputs() that is the
tree, when the run started. Its line numbers describe those sources and no
others: make mutate routes a mutant by them only while the tree still
digests the same (tools/cpuhpk/mutant_guests.py). Not the files' mtimes:
make mutate's own git apply -R of every mutant makes kernel/cpu.c newer
than any tracefile.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple

from cpuhpk import arch, knobs, stamp, tree
from cpuhpk.runspec import RunSpec

BUILD_STAMP = 'cpuhp-kunit-build.json'
# The environment kbuild reads besides its command line.
KBUILD_ENV = ('ARCH', 'CROSS_COMPILE', 'CC', 'LD', 'AR', 'HOSTCC', 'HOSTCXX', 'KCFLAGS',
              'KCPPFLAGS', 'KAFLAGS', 'KRUSTFLAGS', 'LLVM', 'LLVM_IAS', 'LOCALVERSION')
# A tree with more files git does not track than this (a user's tree built
# in place) always builds: reading them all would cost what it saves.
UNTRACKED_MAX = 1000


def build_inputs(t: tree.Tree, frags: Sequence[Path], qemu_config: Path,
                 a: arch.Arch, options: Sequence[str] = knobs.MAKE_OPTIONS,
                 kconfig_lines: Sequence[str] = ()) -> Optional[str]:
    """A digest of what kunit.py's build of @t reads: the tree (its commit,
    its changes and the files git does not track, ignored ones too, content
    and all), the kconfigs and the --kconfig_add lines (KCONFIG_ADD), the
    --qemu_config (its kconfig lines), the make options (MAKE_OPTIONS), the
    version of the compiler they choose (knobs.compiler(): clang for LLVM=1) and
    kbuild's environment. None when the tree is not a git tree or has more
    than UNTRACKED_MAX such files: then every run builds. What only the boot
    reads (KERNEL_ARGS, QEMU_ARGS, ISOLATE, FILTER_ATTR) is not in it: the
    same kernel boots again with them."""
    state = tree_state(t)
    if state is None:
        return None
    head, diff_sha, rels, files = state
    try:
        cc = subprocess.run([knobs.compiler(options, a.cross_compile or ''), '--version'],
                            capture_output=True, text=True, check=False).stdout
    except OSError:
        cc = ''
    # The same list as before KCONFIG_ADD existed when it is empty: a build
    # directory stamped then is reused.
    rest = json.dumps([head, diff_sha, rels,
                       [str(f) for f in frags], list(options), a.name, a.cross_compile or '',
                       cc, sorted((k, v) for k, v in os.environ.items()
                                  if k in KBUILD_ENV or k.startswith('KBUILD_'))]
                      + ([list(kconfig_lines)] if kconfig_lines else []))
    return stamp.fingerprint([*frags, qemu_config, *files], rest)


def tree_state(t: tree.Tree) -> Optional[Tuple[str, str, List[str], List[Path]]]:
    """What of @t a build reads: (its commit, the sha256 of its changes, the
    files git does not track, those of them that are files); None when it
    is not a git tree or has more than UNTRACKED_MAX such files."""
    def git_bytes(*argv: str) -> Optional[bytes]:
        res = subprocess.run(['git', '-C', str(t.path), *argv], capture_output=True, check=False)
        return res.stdout if res.returncode == 0 else None

    head = git_bytes('rev-parse', 'HEAD')
    diff = git_bytes('diff', '--binary', 'HEAD')
    # Ignored files too: Debian's .gitignore ignores every top-level
    # directory, so the kunit/ sources tree.install_kunit() copies in are
    # ignored files of the tree.
    untracked = git_bytes('ls-files', '--others', '-z')
    if head is None or diff is None or untracked is None:
        return None
    rels = sorted(r for r in untracked.decode(errors='surrogateescape').split('\0') if r)
    if len(rels) > UNTRACKED_MAX:
        return None
    files = [t.path / r for r in rels if (t.path / r).is_file()]
    return head.decode().strip(), hashlib.sha256(diff).hexdigest(), rels, files


def source_digest(t: tree.Tree) -> Optional[str]:
    """A digest of the sources of @t a build reads, the kunit/ sources
    copied in among them (tree_state()); None when it has none."""
    state = tree_state(t)
    if state is None:
        return None
    head, diff_sha, rels, files = state
    return stamp.fingerprint(files, json.dumps(['sources', head, diff_sha, rels]))


COVERAGE_STAMP = 'coverage-sources.json'


def remember_coverage(out: Path, sources: Optional[str]) -> None:
    """@out/coverage.info was made from the sources that digest to @sources."""
    if sources is not None:
        stamp.write(out / COVERAGE_STAMP, {'sources': sources})


def coverage_sources(out: Path) -> Optional[str]:
    """The source_digest() @out/coverage.info was made from; None when unknown."""
    data = stamp.read(out / COVERAGE_STAMP)
    value = data.get('sources') if data is not None else None
    return value if isinstance(value, str) else None


def run_build_inputs(t: tree.Tree, frags: Sequence[Path], qemu_config: Path, a: arch.Arch,
                     spec: RunSpec) -> Optional[str]:
    """build_inputs() of a make run of @spec: its make options and kconfig lines."""
    return build_inputs(t, frags, qemu_config, a, knobs.make_options(spec),
                        knobs.kconfig_add(spec))


def built_kernel(build_dir: Path) -> Optional[List[Any]]:
    """What tells the kernel in @build_dir apart from any other build there:
    vmlinux's size and modification time (any build that relinks it, ours or
    not, changes them) and the .config."""
    try:
        st = (build_dir / 'vmlinux').stat()
        config = (build_dir / '.config').read_bytes()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, hashlib.sha256(config).hexdigest()]


def reusable_build(build_dir: Path, inputs: Optional[str]) -> bool:
    """Whether @build_dir holds a kernel kunit.py built from @inputs, untouched since."""
    if inputs is None:
        return False
    kernel = built_kernel(build_dir)
    return kernel is not None and stamp.read(build_dir / BUILD_STAMP) == {'inputs': inputs,
                                                                          'kernel': kernel}


def forget_build(build_dir: Path) -> None:
    """Before a build: a build that fails or is stopped leaves no stamp behind."""
    stamp.forget(build_dir / BUILD_STAMP)


def remember_build(build_dir: Path, inputs: Optional[str]) -> None:
    """After kunit.py built @build_dir from @inputs (the kernel started)."""
    kernel = built_kernel(build_dir)
    if inputs is not None and kernel is not None:
        stamp.write(build_dir / BUILD_STAMP, {'inputs': inputs, 'kernel': kernel})
