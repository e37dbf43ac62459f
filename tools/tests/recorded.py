"""What the recorded consoles of tests/data/ were asked to run.

The recordings of make run, make run CONFIG=debug, make coverage and of the
mutant runs predate the cpuhp_sweep suite (sweep_default_console.log has it)
and today's cases: judged against today's kunit/ sources they would miss
them. data/recorded_cases.json holds the cases the kunit/ sources declared
when they were recorded (kunitspec.declared_cases() of kunit/ at 9914cd4).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Sequence

from cpuhpk import kunitspec, outputs, run

SUITES = ('cpuhp_install', 'cpuhp_rollback', 'timekeeping_crosststamp')
CASES: Dict[str, List[str]] = json.loads(
    (Path(__file__).parent / 'data' / 'recorded_cases.json').read_text())
_expectations = outputs.expectations


SWEEP_SUITES = SUITES + ('cpuhp_sweep',)


def expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                 userspace: bool = False,
                 suites: Sequence[str] = SUITES) -> kunitspec.Expectations:
    """outputs.expectations() narrowed to the suites the recordings hold."""
    exp = _expectations(filter_glob, context, strict, userspace)
    if exp.cases is not None:
        exp.cases = kunitspec.filtered({s: c for s, c in CASES.items()
                                        if s in suites or filter_glob}, filter_glob)
    return exp


# Cases kunit/ declares today that the recordings predate, newest last.
# The crosststamp history path (2026-12-05): after the run_default_*
# recordings (and the other whole-run consoles judged against today's
# sources).
ADDED_HISTORY_PATH: Dict[str, List[str]] = {
    'timekeeping_crosststamp': [
        'crosststamp_interval_inclusive', 'crosststamp_interval_across_wrap',
        'crosststamp_history_start', 'crosststamp_history_across_wrap',
        'crosststamp_history_after_wrap', 'crosststamp_history_clock_set',
        'crosststamp_history_long', 'crosststamp_seqcount_retry'],
}
# Hotplug disabled, the real suspend and hibernation, SMT control, CPU
# hot-add (2026-12-05, 15d7ddb and b11ec81): after the
# derailed_* recording too.
ADDED_HOTPLUG_DISABLED: Dict[str, List[str]] = {
    'cpuhp_rollback': ['cpuhp_rollback_frozen_refuses', 'cpuhp_rollback_disabled',
                       'cpuhp_rollback_frozen_set_in_real_suspend',
                       'cpuhp_rollback_frozen_clear_after_real_resume',
                       'cpuhp_rollback_real_suspend_fails', 'cpuhp_rollback_thaw_fails',
                       'cpuhp_rollback_real_resume_fails'],
    'cpuhp_sysfs': ['hibernate_cpus_come_back', 'hibernate_fail_aborts',
                    'hibernate_offline_cpu_stays', 'smt_control_off_on',
                    'smt_control_numeric', 'smt_control_fail_keeps_state',
                    'smt_control_on_fail_retries',
                    'suspend_cpus_come_back',
                    'suspend_fail_aborts', 'suspend_offline_cpu_stays',
                    'hotadd_first_bringup', 'hotadd_fail_rolls_back',
                    'hotremove_takes_cpu_away',
                    # 2026-12-06: forceoff, the nosmt boots
                    'smt_control_forceoff_fail_keeps_state', 'smt_control_forceoff',
                    'nosmt_boot_threads_offline',
                    'nosmt_control_on_off', 'nosmt_force_refuses'],
}
# 2026-12-06 (4be750b, dd46b17): the discontinuity's mult ratio, the realtime rate.
ADDED_HOTPLUG_DISABLED['timekeeping_crosststamp'] = [
    'crosststamp_history_clock_set_scaled', 'crosststamp_history_rate_interpolated',
    'crosststamp_history_overflow_boundary']
# 2026-12-06 (aab6f5a): the freeze's primary and its wakeup abort.
ADDED_HOTPLUG_DISABLED['cpuhp_rollback'] += [
    'cpuhp_rollback_freeze_any_primary', 'cpuhp_rollback_freeze_offline_primary',
    'cpuhp_rollback_freeze_wakeup_aborts']
# 2026-12-06 (7215f06): a hotpluggable boot CPU (arm64) goes and comes back.
ADDED_HOTPLUG_DISABLED['cpuhp_sysfs'] += ['boot_cpu_goes_and_comes_back']
# 2026-12-07: a CPU resting exactly at the state installed, added to, removed.
ADDED_HOTPLUG_DISABLED['cpuhp_install'] = ['cpuhp_install_cpu_at_the_state',
                                           'cpuhp_install_cpu_at_the_multi_state']
# 2026-12-07: the cross-timestamp arithmetic and the current clocksource.
ADDED_HOTPLUG_DISABLED['timekeeping_crosststamp_interp'] = [
    'timestamp_in_interval_bounds', 'adjust_historical_crosststamp_linear',
    'adjust_historical_crosststamp_clock_set', 'adjust_historical_crosststamp_overflow']
ADDED_HOTPLUG_DISABLED['timekeeping_crosststamp_clock'] = [
    'crosststamp_no_clocksource', 'crosststamp_other_clocksource',
    'crosststamp_in_current_interval', 'crosststamp_before_current_interval',
    'crosststamp_history_in_current_interval']
# 2026-12-07: the roads: a wakeup pending before the freeze, a freeze that
# takes no CPU, the PM notifiers; SMT off failing on the first thread,
# forceoff over off.
ADDED_HOTPLUG_DISABLED['cpuhp_rollback'] += [
    'cpuhp_rollback_freeze_wakeup_pending', 'cpuhp_rollback_freeze_takes_none',
    'cpuhp_rollback_pm_notifier_disables', 'cpuhp_rollback_disabled_smt_off',
    'cpuhp_rollback_disable_waits']
# 2026-12-07: the PAT a thaw writes, an unbalanced enable, the maxcpus guest.
ADDED_HOTPLUG_DISABLED['cpuhp_rollback'] += ['cpuhp_rollback_thaw_sets_pat',
                                            'cpuhp_rollback_unbalanced_enable']
ADDED_HOTPLUG_DISABLED['cpuhp_sysfs'] += ['maxcpus_first_bringup_fail_rolls_back',
                                         'maxcpus_smt_on_skips_absent_slots']
ADDED_HOTPLUG_DISABLED['cpuhp_sysfs'] += ['smt_control_first_thread_fail_keeps_state',
                                         'nosmt_forceoff_after_off']
# 2026-12-08: SMT control writes that change nothing or are refused
# (again on, no SMT at all), the callbacks SMT control runs, every
# online CPU booted once.
ADDED_HOTPLUG_DISABLED['cpuhp_rollback'] += ['cpuhp_rollback_online_booted_once']
ADDED_HOTPLUG_DISABLED['cpuhp_sysfs'] += ['smt_control_on_again_changes_nothing',
                                         'control_without_smt_refuses']
ADDED_SINCE_RUN_DEFAULT: Dict[str, List[str]] = {
    s: ADDED_HISTORY_PATH.get(s, []) + ADDED_HOTPLUG_DISABLED.get(s, [])
    for s in {**ADDED_HISTORY_PATH, **ADDED_HOTPLUG_DISABLED}}


def without(exp: kunitspec.Expectations, added: Dict[str, List[str]]) -> kunitspec.Expectations:
    """@exp without the cases of @added (those a recording predates)."""
    if exp.cases is not None:
        kept = {s: [c for c in cases if c not in added.get(s, [])]
                for s, cases in exp.cases.items()}
        # a suite added whole after the recording is not expected at all
        exp.cases = {s: cases for s, cases in kept.items() if cases or s not in added}
    return exp


def run_default_expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                             userspace: bool = False) -> kunitspec.Expectations:
    """outputs.expectations() without the cases added after the run_default_* recordings."""
    return without(_expectations(filter_glob, context, strict, userspace),
                   ADDED_SINCE_RUN_DEFAULT)


def derailed_expectations(filter_glob: str, context: Dict[str, str], strict: bool = False,
                          userspace: bool = False) -> kunitspec.Expectations:
    """outputs.expectations() without the cases added after derailed_smp2_6.12_console.log."""
    return without(_expectations(filter_glob, context, strict, userspace),
                   ADDED_HOTPLUG_DISABLED)
