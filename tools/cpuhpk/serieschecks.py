"""The checks of a make series* run: each check, out/series.json, junit.xml, summary.txt."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import List

from cpuhpk import junit


@dataclass
class Check:
    """One check of a make series* run."""
    name: str
    ok: bool
    detail: str = ''


@dataclass
class Checks:
    """Every check of a make series* run: out/series.json, junit.xml, summary.txt."""
    kver: str
    checks: List[Check] = field(default_factory=list)
    kind: str = 'series'        # what make target: series, fixes-series

    def add(self, name: str, ok: bool, detail: str = '') -> None:
        self.checks.append(Check(name, ok, detail))
        first = detail.splitlines()[0] if detail else ''
        print(f"{'ok  ' if ok else 'FAIL'}  {name}" + (f': {first}' if first else ''), flush=True)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def finish(self, out: Path) -> int:
        """Write the checks to @out, say PASS or FAIL; the exit status."""
        self.write(out)
        print(f'cpuhp-kunit {self.kind} {self.kver}: ' + ('PASS' if self.ok else 'FAIL')
              + f' ({out})')
        return 0 if self.ok else 1

    def write(self, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        (out / 'series.json').write_text(json.dumps(
            {'kver': self.kver, 'kind': self.kind, 'verdict': 'pass' if self.ok else 'fail',
             'checks': [vars(c) for c in self.checks]}, indent=1) + '\n')
        checks = [junit.Check(c.name, 'passed' if c.ok else 'failed',
                              '' if c.ok else c.detail.splitlines()[0] if c.detail else 'failed',
                              c.detail, classname=self.kind) for c in self.checks]
        junit.save(out / 'junit.xml', junit.document([junit.checks_suite(
            f'{self.kind} KVER={self.kver}', checks, counted=('tests', 'failures'))]))
        lines = [f"{'ok  ' if c.ok else 'FAIL'}  {c.name}: {c.detail}" for c in self.checks]
        lines.append(f'cpuhp-kunit {self.kind} {self.kver}: ' + ('PASS' if self.ok else 'FAIL'))
        (out / 'summary.txt').write_text('\n'.join(lines) + '\n')
