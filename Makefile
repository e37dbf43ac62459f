# cpuhp-kunit: thin wrapper over tools/; `make help` lists targets and knobs.
KVER    ?= 6.12
# The architecture built and booted: x86_64, or arm64 (cross-compiled,
# qemu-system-aarch64's virt machine; tools/cpuhpk/arch.py).
ARCH    ?= x86_64
SMP     ?= 4
# The guest's CPU topology: flat (one thread per core), smt (two per core),
# hotplug (flat, and CPUs more to plug in and out through QEMU's QMP), nosmt
# and nosmt-force (smt booted with nosmt, or nosmt=force cpuhp.parallel=0).
TOPOLOGY ?= flat
FILTER  ?=
CONFIG  ?= default
TIMEOUT ?= 600
# Debian's python3: the tools use its python3-* packages (junitparser in tools-test).
PYTHON  ?= /usr/bin/python3
MUTANTS ?= mutants
CONSOLE ?=
USERSPACE ?= 1
# make judge: the vmlinux of the console's kernel (its reports' frames decoded).
VMLINUX ?=
FIXES   ?= 0
STRICT  ?= 0
SEED    ?= 0
STRESS_OPS ?= 0
# make matrix (and so make test): 1 runs every job, also those whose inputs
# did not change since they passed (tools/cpuhpk/jobstamp.py).
FORCE   ?= 0
# 1: make matrix and make matrix-list take make test's tier only.
TIER    ?= 0
# The kernel series make matrix (and so make test) runs, each with its own
# configs (tools/cpuhpk/matrix.py: CONFIGS; one build each); CONFIGS, when
# set, is run on every series of KVERS instead. CONFIG=a+b combines
# kconfigs/ fragments. KVER= on the command line (make test KVER=6.1)
# narrows KVERS to it.
KVERS   ?= $(if $(filter command line,$(origin KVER)),$(KVER),6.12 6.1)
CONFIGS ?=
SHARD   ?=
DIRS    ?=
# make series: "Name <email>" for From: and Signed-off-by: (default: git config).
AUTHOR  ?=
# The kernel series whose upstream-shaped series make matrix checks (series-test).
SERIES_KVERS ?= 6.12
# make finding-mails: the findings mailed (numbers of Documentation/findings/).
FINDINGS ?= 14 10 04
# The architectures besides x86_64 whose default kernel make matrix boots,
# with the coverage gate: 6.12's, when the matrix runs 6.12 and its default
# config.
OTHER_ARCHS ?= arm64
PARTS   ?=
RECORD  ?= 0
BOOTS   ?=
# Your own kernel git tree (never written to): run, coverage, mutate, bisect.
TREE    ?=
REV     ?= HEAD
LOCAL   ?= 1
SERIES  ?=
GOOD    ?=
BAD     ?= HEAD
# kunit.py's own knobs (make run; make judge takes ISOLATE and FILTER_ATTR/
# FILTER_ACTION as what the console's run asked for, and ignores the rest).
# Kconfig lines on top of CONFIG's fragments, apart by spaces, e.g.
# KCONFIG_ADD='CONFIG_KASAN=y CONFIG_KCOV=n': part of the build (a change rebuilds).
KCONFIG_ADD ?=
# Kernel arguments after the run's own, apart by spaces.
KERNEL_ARGS ?=
# QEMU arguments after the run's own (split as a shell would).
QEMU_ARGS ?=
# Make options of the kernel build, e.g. LLVM=1 (clang and LLVM's tools):
# part of the build, the toolchain named in verdict.json.
MAKE_OPTIONS ?=
# suite or test: one boot per suite or per case (kunit.py --run_isolated),
# judged, reported and covered as one run.
ISOLATE ?=
# KUnit attribute filter, e.g. FILTER_ATTR='speed>slow' (no KUNIT_CASE_SLOW
# case): kernels with KUnit attributes (6.12, not 6.1). FILTER_ACTION=skip:
# the cases it leaves out run as skipped instead.
FILTER_ATTR ?=
FILTER_ACTION ?=

TREE_ARGS = $(if $(TREE),--tree '$(TREE)' --rev '$(REV)' --local '$(LOCAL)' --series '$(SERIES)')
# kunit.py's own knobs; --x='...' because a value may start with '-' (QEMU_ARGS).
KUNIT_PY_ARGS = --kconfig-add='$(KCONFIG_ADD)' --kernel-args='$(KERNEL_ARGS)' --qemu-args='$(QEMU_ARGS)' \
	   --make-options='$(MAKE_OPTIONS)' --isolate='$(ISOLATE)' --filter-attr='$(FILTER_ATTR)' \
	   --filter-action='$(FILTER_ACTION)'
RUN_ARGS = --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --topology '$(TOPOLOGY)' --filter '$(FILTER)' --config '$(CONFIG)' \
	   --timeout '$(TIMEOUT)' --fixes '$(FIXES)' --strict '$(STRICT)' \
	   --seed '$(SEED)' --stress-ops '$(STRESS_OPS)' $(TREE_ARGS) $(KUNIT_PY_ARGS)

.PHONY: bisect tree-test fixes-test fixes-series fixes-series-test reports series series-config series-check series-pristine series-test help run run-debug matrix matrix-list merge-results test tools-test prepare coverage mutate bench checkpatch clean-cache judge finding-mails ci-files

# Runs share the kernel cache (locked by the tools, too): never in parallel.
.NOTPARALLEL:

# The targets that build or boot only x86_64 so far refuse another ARCH
# rather than build x86_64 under its name (ARCH= reaches every make below).
x86_only = @test '$(ARCH)' = x86_64 || { echo 'make $@: x86_64 only so far; ARCH=$(ARCH) has run, judge, coverage, mutate' >&2; exit 2; }

help:
	@echo 'targets:'
	@echo '  run          prepare the cached tree, build, boot in QEMU, judge, coverage report -> out/$(KVER)[-$$CONFIG]/'
	@echo '  run-debug    run with CONFIG=debug: lockdep, PROVE_RCU, atomic-sleep and object checks'
	@echo '  matrix       for each series of KVERS: coverage for default, run for each other config, the fixes, series and tree jobs, Debian'"'"'s kernel; red if any is'
	@echo '  test         tools-test, then the tier of matrix (TIER=1): both default kernels with the coverage gate, 6.12 with FIXES=1: what CI runs'
	@echo '  matrix-list  the kernel jobs of make matrix, one a line (make arguments; TIER=1: make test'"'"'s)'
	@echo '  ci-files     write the job lists of .gitlab-ci.yml and the GitHub workflow from tools/cpuhpk/matrix.py'
	@echo '  merge-results  merge the out/ directories of DIRS (CI jobs) -> out/merged/'
	@echo '  tools-test   mypy --strict and the tools own tests on recorded consoles'
	@echo '  prepare      only install packages, extract the tree, apply src/$(KVER)/, copy kunit/'
	@echo '  bisect       git bisect run over TREE= from GOOD= to BAD= with the verdict as the test -> out/bisect-<name>/'
	@echo '  tree-test    TREE= and make bisect on a test tree made from the cached 6.12 tree (make matrix)'
	@echo '  fixes-test   run FIXES=1 on five guests (SMP=4, SMP=2, smt, hotplug, nosmt): our kernel fixes do what they claim'
	@echo '  fixes-series our kernel fixes as postable series (cover letters, To/Cc), each checked: applies to the pristine tree, checkpatch, builds'
	@echo '  fixes-series-test  the same, signed off as the commit author without AUTHOR/git config (make matrix)'
	@echo '  coverage     run on the default kernel, flat, SMT, hot-add and nosmt guests + merged coverage gate + selftest anchor -> out/$(KVER)[-smt|-hotplug|-nosmt|-nosmt-force]/'
	@echo '  judge        the verdict of a console log: make judge CONSOLE=file -> out/judge/'
	@echo '  reports      provoke real kernel reports with LKDTM, judge them -> out/reports/ (RECORD=1: into tools/tests/data/reports/)'
	@echo '  mutate       apply each $$MUTANTS/*.patch, run it on the guests whose coverage reaches it until one kills it, report killed/survived/not covered per road'
	@echo '  bench        warm times and the build ratio to kunit.py; PARTS="warm ratio options cold" (tools/bench.sh)'
	@echo '  checkpatch   scripts/checkpatch.pl --strict on kunit/ and src/$(KVER)/'
	@echo '  finding-mails  the reports of FINDINGS as plain-text mails with their fix as a patch, To/Cc from get_maintainer.pl -> out/finding-mails/$(KVER)/'
	@echo '  series       the series posted upstream (our fixes first, the suites in their posted form), cover letter, To/Cc, checks -> out/series/$(KVER)/'
	@echo '  series-check series, then build after every patch and with SYSFS/SUSPEND/TRACING=n'
	@echo '  series-pristine  series, then git am onto a fresh extraction and kunit.py run as the cover letter says'
	@echo '  series-test  series-check and series-pristine (the job make matrix runs for each of SERIES_KVERS)'
	@echo '  clean-cache  delete the cached trees and build directories'
	@echo 'knobs (current value):'
	@echo '  KVER=$(KVER)      kernel series: linux-source-$$KVER from Debian'
	@echo '  ARCH=$(ARCH)    x86_64, or arm64 (cross-compiled, QEMU virt) -> out/$$KVER[-$$CONFIG]-arm64/: run, judge, coverage, mutate'
	@echo '  SMP=$(SMP)          CPUs of the QEMU guest'
	@echo '  TOPOLOGY=$(TOPOLOGY)     flat: one thread per core; smt: two per core (the SMT control cases) -> out/...-smt/;'
	@echo '                   hotplug: CPUs more to hot-add and hot-remove (QMP) -> out/...-hotplug/'
	@echo '                   nosmt, nosmt-force: smt booted with nosmt, nosmt=force (+ cpuhp.parallel=0) -> out/...-nosmt[-force]/'
	@echo '  FILTER=$(FILTER)  kunit.py filter_glob, e.g. FILTER=timekeeping_crosststamp.*'
	@echo '  CONFIG=$(CONFIG)  fragment kconfigs/$$CONFIG.config'
	@echo '  TIMEOUT=$(TIMEOUT)    seconds the booted kernel may take'
	@echo '  MUTANTS=$(MUTANTS)  directory of -p1 mutant patches for make mutate'
	@echo '  CONSOLE=$(CONSOLE)  console log for make judge'
	@echo '  VMLINUX=$(VMLINUX)  make judge: the vmlinux of the console'"'"'s kernel (with debug info): its reports'"'"' frames decoded, file:line'
	@echo '  USERSPACE=$(USERSPACE)    make judge: 1 expects the user-space suite as make run does; 0: a console without it'
	@echo '  FIXES=$(FIXES)       1: apply our kernel fixes (src/$$KVER/fixes/series) -> out/$$KVER[-$$CONFIG]-fixes/'
	@echo '  STRICT=$(STRICT)      1: known failures (kunit/known-failures-$$KVER) are red; run what wedges a CPU'
	@echo '  SEED=$(SEED)         cpuhp_stress: seed of the random walk (0: random, printed in the KTAP)'
	@echo '  STRESS_OPS=$(STRESS_OPS)   cpuhp_stress: operations of the walk (0: the suite default, 400)'
	@echo '  KCONFIG_ADD=$(KCONFIG_ADD)  kconfig lines on top of the fragments, apart by spaces (kunit.py --kconfig_add; a change rebuilds)'
	@echo '  KERNEL_ARGS=$(KERNEL_ARGS)  kernel arguments after the run'"'"'s own, apart by spaces (kunit.py --kernel_args)'
	@echo '  QEMU_ARGS=$(QEMU_ARGS)  QEMU arguments after the run'"'"'s own (kunit.py --qemu_args)'
	@echo '  MAKE_OPTIONS=$(MAKE_OPTIONS)  make options of the build, e.g. LLVM=1 for clang (kunit.py --make_options; a change rebuilds)'
	@echo '  ISOLATE=$(ISOLATE)  suite or test: one boot per suite or per case (kunit.py --run_isolated), judged as one run'
	@echo '  FILTER_ATTR=$(FILTER_ATTR) FILTER_ACTION=$(FILTER_ACTION)  KUnit attribute filter, e.g. FILTER_ATTR='"'"'speed>slow'"'"' (6.12 only); FILTER_ACTION=skip: what it leaves out runs as skipped'
	@echo '  KVERS=$(KVERS)  the kernel series make matrix and make test run'
	@echo '  TIER=$(TIER)        1: make matrix and matrix-list take make test'"'"'s tier only'
	@echo '  FORCE=$(FORCE)       1: make matrix and make test run every job, also those up to date'
	@echo '  CONFIGS=$(CONFIGS)  the configs they run (empty: each series'"'"' own, tools/cpuhpk/matrix.py)'
	@echo '  RECORD=$(RECORD) BOOTS=$(BOOTS)  make reports: 1 records the consoles as test data; only these boots (tools/cpuhpk/provoke.py)'
	@echo '  SHARD=$(SHARD)        make mutate: I/N runs the I-th of N shards of the mutants'
	@echo '  DIRS=$(DIRS)         make merge-results: the out/ directories to merge'
	@echo '  AUTHOR=$(AUTHOR)       make series, fixes-series: "Name <email>" of From: and Signed-off-by: (default: git config)'
	@echo '  FINDINGS=$(FINDINGS)  make finding-mails: the findings to write mails for'
	@echo '  SERIES_KVERS=$(SERIES_KVERS)  the series make matrix checks with series-test'
	@echo '  TREE=$(TREE)  your kernel git tree instead of the Debian one (never written to); KVER follows its version'
	@echo '  REV=$(REV) LOCAL=$(LOCAL)  TREE=: the revision; 1: with the uncommitted changes of its tracked files (REV=HEAD)'
	@echo '  SERIES=$(SERIES)  TREE=: a directory of your own patches instead of src/$$KVER/series'
	@echo '  GOOD=$(GOOD) BAD=$(BAD)  make bisect: the revisions to bisect between'
	@echo '  CPUHP_KUNIT_CACHE (env) cache directory, default ~/.cache/cpuhp-kunit'
	@echo '  CPUHP_KUNIT_NOWAIT=1 (env) fail at once when another run holds the cache'
	@echo '  CPUHP_KUNIT_DIRTY=1 (env) test a cached tree with local edits or commits'

run:
	$(PYTHON) tools/cpuhpk/run.py $(RUN_ARGS)

tools-test:
	sh tools/typecheck.sh
	$(PYTHON) -m unittest discover -s tools/tests -t tools

judge:
	@test -n '$(CONSOLE)' || { echo 'usage: make judge CONSOLE=<console log> [VMLINUX=<vmlinux>] [FILTER=..] [SMP=..] [CONFIG=..]' >&2; exit 2; }
	$(PYTHON) tools/cpuhpk/run.py --judge '$(CONSOLE)' --userspace '$(USERSPACE)' $(if $(VMLINUX),--vmlinux '$(VMLINUX)') $(RUN_ARGS)

run-debug:
	$(MAKE) run CONFIG=debug

# The jobs of make matrix and make test's tier are defined once, in
# tools/cpuhpk/matrix.py (jobs(), TIER); these knobs select from them, and
# the CI definitions' job lists are generated from there (make ci-files).
MATRIX_ARGS = --kvers '$(KVERS)' --configs '$(CONFIGS)' --series-kvers '$(SERIES_KVERS)' \
	      --other-archs '$(OTHER_ARCHS)' --arch '$(ARCH)' --tier '$(TIER)'

# Every job runs even when an earlier one is red; the exit status says if any was
# (tools/cpuhpk/matrix.py: a line a job as it starts and ends, with the time
# left estimated from the last passes, and the summary at the end). A job
# that passed and whose inputs did not change since is not run again
# (out/.jobs/, tools/cpuhpk/jobstamp.py); FORCE=1 runs it.
matrix:
	$(PYTHON) tools/cpuhpk/matrix.py run --force '$(FORCE)' $(MATRIX_ARGS)

test: tools-test
	@$(MAKE) --no-print-directory matrix TIER=1

prepare:
	$(PYTHON) tools/cpuhpk/tree.py --kver '$(KVER)'

coverage:
	@test '$(CONFIG)' = default || { echo 'make coverage gates the default kernel; CONFIG=$(CONFIG) runs yield coverage too: make run CONFIG=$(CONFIG)' >&2; exit 2; }
	$(PYTHON) tools/cpuhpk/coverage.py --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --timeout '$(TIMEOUT)' \
		--seed '$(SEED)' --stress-ops '$(STRESS_OPS)' $(TREE_ARGS)

# A mutant runs on the guests whose coverage (make coverage's tracefiles,
# made first when missing or stale) reaches a line it changes, until one
# kills it; its run on a guest times out after a limit derived from the
# unmutated run's there (tools/cpuhpk/mutate.py); TIMEOUT= given to make
# replaces it.
mutate:
	$(PYTHON) tools/cpuhpk/mutate.py --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --filter '$(FILTER)' \
		--config '$(CONFIG)' --seed '$(SEED)' --stress-ops '$(STRESS_OPS)' --mutants '$(MUTANTS)' \
		--shard '$(SHARD)' --strict '$(STRICT)' $(TREE_ARGS) \
		$(if $(filter command line environment,$(origin TIMEOUT)),--timeout '$(TIMEOUT)')

bisect:
	$(x86_only)
	@test -n '$(TREE)' -a -n '$(GOOD)' || { echo 'usage: make bisect TREE=<kernel git tree> GOOD=<rev> [BAD=<rev>] [FILTER=..] [CONFIG=..]' >&2; exit 2; }
	$(PYTHON) tools/cpuhpk/bisect.py --tree '$(TREE)' --good '$(GOOD)' --bad '$(BAD)' \
		--series '$(SERIES)' --smp '$(SMP)' --filter '$(FILTER)' --config '$(CONFIG)' \
		--timeout '$(TIMEOUT)'

tree-test:
	$(x86_only)
	$(PYTHON) tools/cpuhpk/treetest.py --smp '$(SMP)' --timeout '$(TIMEOUT)'

# Each fix covers known failures that apply with fixes=0 only (the tables
# say which): under FIXES=1 they must pass, at 4 CPUs, at the 2 that
# findings/12 needs, with two threads per core (findings/15, 18), with CPUs
# to hot-add (findings/16) and booted with nosmt (findings/19: the sysfs
# test alone). Every run runs even when an earlier one is red.
fixes-test:
	$(x86_only)
	@rc=0; $(MAKE) run FIXES=1 SMP=4 || rc=1; $(MAKE) run FIXES=1 SMP=2 || rc=1; \
	$(MAKE) run FIXES=1 TOPOLOGY=smt || rc=1; $(MAKE) run FIXES=1 TOPOLOGY=hotplug || rc=1; \
	$(MAKE) run FIXES=1 TOPOLOGY=nosmt FILTER='cpuhp_sysfs.*' || rc=1; \
	exit $$rc

# Our kernel fixes as the series they would be posted as
# (tools/cpuhpk/fixseries.py); its cover letters count the known failures
# of the runs above, so it comes after fixes-test. Writes out/<KVER>-fixes-series/.
fixes-series: series-config
	$(PYTHON) tools/cpuhpk/fixseries.py --kver '$(KVER)' --author '$(AUTHOR)'

# In CI nobody's git config is there: the checks sign off as the commit's author.
fixes-series-test: series-config
	$(PYTHON) tools/cpuhpk/fixseries.py --kver '$(KVER)' --author '$(AUTHOR)' --author-of-head

# The kernel jobs make matrix runs, one a line, as make arguments.
matrix-list:
	@$(PYTHON) tools/cpuhpk/matrix.py list $(MATRIX_ARGS)

# The job lists of .gitlab-ci.yml and .github/workflows/, from matrix.py.
ci-files:
	$(PYTHON) tools/cpuhpk/matrix.py ci

merge-results:
	@test -n '$(DIRS)' || { echo 'usage: make merge-results DIRS="out/a out/b ..."' >&2; exit 2; }
	$(PYTHON) tools/cpuhpk/merge.py --out out/merged $(DIRS)

SERIES_PY = $(PYTHON) tools/cpuhpk/series.py --kver '$(KVER)' --author '$(AUTHOR)'
series-config:
	$(x86_only)
	@test '$(CONFIG)' = default || { echo 'the series are built with their own configs: no CONFIG=$(CONFIG)' >&2; exit 2; }

series: series-config
	$(SERIES_PY)

# The checks write to out/<KVER>-series/ (series.json, junit.xml, the series).
series-check: series-config
	$(SERIES_PY) --out 'out/$(KVER)-series' --no-results --check

series-pristine: series-config
	$(SERIES_PY) --out 'out/$(KVER)-series' --no-results --pristine --smp '$(SMP)' --timeout '$(TIMEOUT)'

# In CI nobody's git config is there: the checks sign off as the commit's author.
series-test: series-config
	$(SERIES_PY) --out 'out/$(KVER)-series' --no-results --check --pristine --smp '$(SMP)' \
		--timeout '$(TIMEOUT)' --author-of-head

finding-mails: series-config
	$(PYTHON) tools/cpuhpk/findingmail.py --kver '$(KVER)' --author '$(AUTHOR)' $(FINDINGS)

reports:
	$(x86_only)
	$(PYTHON) tools/cpuhpk/provoke.py --kver '$(KVER)' --record '$(RECORD)' $(BOOTS)

bench:
	$(x86_only)
	sh tools/bench.sh $(PARTS)

checkpatch:
	sh tools/checkpatch.sh '$(KVER)'

clean-cache:
	rm -rf "$${CPUHP_KUNIT_CACHE:-$$HOME/.cache/cpuhp-kunit}"
