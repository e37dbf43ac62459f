# cpuhp-kunit: each target that runs a tool is one command of python3 -m
# cpuhpk (tools/cpuhpk/__main__.py), with the knobs below as its options.
# The knobs, their defaults and what each does are __main__.py's KNOBS
# (make help prints them; tools/tests/test_cli.py keeps these lines equal).
KVER          ?= 6.12
ARCH          ?= x86_64
SMP           ?= 4
TOPOLOGY      ?= flat
FILTER        ?=
CONFIG        ?= default
TIMEOUT       ?= 600
PYTHON        ?= /usr/bin/python3
MUTANTS       ?= mutants
CONSOLE       ?=
USERSPACE     ?= 1
VMLINUX       ?=
FIXES         ?= 0
STRICT        ?= 0
SEED          ?= 0
STRESS_OPS    ?= 0
KCONFIG_ADD   ?=
KERNEL_ARGS   ?=
QEMU_ARGS     ?=
MAKE_OPTIONS  ?=
ISOLATE       ?=
FILTER_ATTR   ?=
FILTER_ACTION ?=
KVERS         ?= 6.12 6.1
# KVER= on the command line (make test KVER=6.1) narrows KVERS to it: only
# make knows where a variable came from.
ifeq ($(origin KVER)/$(origin KVERS),command line/file)
KVERS = $(KVER)
endif
CONFIGS       ?=
TIER          ?= 0
FORCE         ?= 0
OTHER_ARCHS   ?= arm64
SERIES_KVERS  ?= 6.12
SHARD         ?=
GUESTS        ?=
DIRS          ?=
AUTHOR        ?=
FINDINGS      ?= 14 10 04
RECORD        ?= 0
BOOTS         ?=
PARTS         ?=
TREE          ?=
REV           ?= HEAD
LOCAL         ?= 1
SERIES        ?=
GOOD          ?=
BAD           ?= HEAD

CPUHPK = PYTHONPATH='$(CURDIR)/tools' $(PYTHON) -m cpuhpk
TREE_ARGS = $(if $(TREE),--tree '$(TREE)' --rev '$(REV)' --local '$(LOCAL)' --series '$(SERIES)')
# kunit.py's own knobs; --x='...' because a value may start with '-' (QEMU_ARGS).
KUNIT_PY_ARGS = --kconfig-add='$(KCONFIG_ADD)' --kernel-args='$(KERNEL_ARGS)' --qemu-args='$(QEMU_ARGS)' \
	   --make-options='$(MAKE_OPTIONS)' --isolate='$(ISOLATE)' --filter-attr='$(FILTER_ATTR)' \
	   --filter-action='$(FILTER_ACTION)'
RUN_ARGS = --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --topology '$(TOPOLOGY)' --filter '$(FILTER)' --config '$(CONFIG)' \
	   --timeout '$(TIMEOUT)' --fixes '$(FIXES)' --strict '$(STRICT)' \
	   --seed '$(SEED)' --stress-ops '$(STRESS_OPS)' $(TREE_ARGS) $(KUNIT_PY_ARGS)
MATRIX_ARGS = --kvers '$(KVERS)' --configs '$(CONFIGS)' --series-kvers '$(SERIES_KVERS)' \
	      --other-archs '$(OTHER_ARCHS)' --arch '$(ARCH)' --tier '$(TIER)'
SERIES_ARGS = --kver '$(KVER)' --author '$(AUTHOR)'
# The series checks write to out/<KVER>-series/ (series.json, junit.xml, the series).
SERIES_CHECK_ARGS = $(SERIES_ARGS) --out 'out/$(KVER)-series'

.PHONY: bisect tree-test fixes-test fixes-series fixes-series-test reports series series-config series-check series-pristine series-test help run run-debug matrix matrix-list merge-results test tools-test prepare coverage mutate bench checkpatch clean-cache judge finding-mails ci-files

# Runs share the kernel cache (locked by the tools, too): never in parallel.
.NOTPARALLEL:

help:
	@$(CPUHPK) help KVERS='$(KVERS)'

run:
	$(CPUHPK) run $(RUN_ARGS)

run-debug:
	$(MAKE) run CONFIG=debug

judge:
	$(CPUHPK) judge '$(CONSOLE)' --userspace '$(USERSPACE)' $(if $(VMLINUX),--vmlinux '$(VMLINUX)') $(RUN_ARGS)

tools-test:
	sh tools/typecheck.sh
	$(PYTHON) -m unittest discover -s tools/tests -t tools

# Every job runs even when an earlier one is red; a job that passed and
# whose inputs did not change since is not run again (FORCE=1 runs it).
matrix:
	$(CPUHPK) matrix --force '$(FORCE)' $(MATRIX_ARGS)

test: tools-test
	@$(MAKE) --no-print-directory matrix TIER=1

matrix-list:
	@$(CPUHPK) matrix-list $(MATRIX_ARGS)

ci-files:
	$(CPUHPK) ci-files

merge-results:
	$(CPUHPK) merge-results --out out/merged $(DIRS)

prepare:
	$(CPUHPK) prepare --kver '$(KVER)'

coverage:
	$(CPUHPK) coverage --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --timeout '$(TIMEOUT)' \
		--seed '$(SEED)' --stress-ops '$(STRESS_OPS)' $(TREE_ARGS)

# A mutant's run on a guest times out after a limit derived from the
# unmutated run's there; TIMEOUT= given to make replaces it.
mutate:
	$(CPUHPK) mutate --kver '$(KVER)' --arch '$(ARCH)' --smp '$(SMP)' --filter '$(FILTER)' \
		--config '$(CONFIG)' --seed '$(SEED)' --stress-ops '$(STRESS_OPS)' --mutants '$(MUTANTS)' \
		--shard '$(SHARD)' --guests '$(GUESTS)' --strict '$(STRICT)' $(TREE_ARGS) \
		$(if $(filter command line environment,$(origin TIMEOUT)),--timeout '$(TIMEOUT)')

bisect:
	$(CPUHPK) bisect --tree '$(TREE)' --good '$(GOOD)' --bad '$(BAD)' \
		--series '$(SERIES)' --smp '$(SMP)' --filter '$(FILTER)' --config '$(CONFIG)' \
		--timeout '$(TIMEOUT)'

tree-test:
	$(CPUHPK) tree-test --smp '$(SMP)' --timeout '$(TIMEOUT)'

fixes-test:
	$(CPUHPK) fixes-test $(RUN_ARGS)

fixes-series:
	$(CPUHPK) fixes-series $(SERIES_ARGS)

fixes-series-test:
	$(CPUHPK) fixes-series-test $(SERIES_ARGS)

series-config:
	@$(CPUHPK) series-config

series:
	$(CPUHPK) series $(SERIES_ARGS)

series-check:
	$(CPUHPK) series-check $(SERIES_CHECK_ARGS)

series-pristine:
	$(CPUHPK) series-pristine $(SERIES_CHECK_ARGS) --smp '$(SMP)' --timeout '$(TIMEOUT)'

series-test:
	$(CPUHPK) series-test $(SERIES_CHECK_ARGS) --smp '$(SMP)' --timeout '$(TIMEOUT)'

finding-mails:
	$(CPUHPK) finding-mails $(SERIES_ARGS) $(FINDINGS)

reports:
	$(CPUHPK) reports --kver '$(KVER)' --record '$(RECORD)' $(BOOTS)

bench:
	$(CPUHPK) bench $(PARTS)

checkpatch:
	$(CPUHPK) checkpatch '$(KVER)'

clean-cache:
	rm -rf "$${CPUHP_KUNIT_CACHE:-$$HOME/.cache/cpuhp-kunit}"
