"""A run's results for KernelCI's common results database (KCIDB): kcidb.json.

`python3 tools/cpuhpk/kcidb.py OUTDIR... [--out FILE]` reads each run's out/
directory (verdict.json, console.log, coverage.info) and writes one KCIDB
report, schema v5.3 (tools/kcidb/kcidb-io-schema-v5.3.json, vendored from
kcidb-io: tools/kcidb/README.md). An argument that is a .json file is taken
as a KCIDB report already written, and merged in. `--validate FILE...`
checks reports against the vendored schema: one line per error, exit 1.
kcidbrun.py makes the objects of each run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

if __package__ in (None, ''):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    __package__ = 'cpuhpk'  # noqa: A001  (run as a script)

from cpuhpk import kcidbrun  # noqa: E402
from cpuhpk.paths import REPO  # noqa: E402

SCHEMA_PATH = REPO / 'tools' / 'kcidb' / 'kcidb-io-schema-v5.3.json'
# The report's object lists, parents first (the schema's graph).
LISTS = ('checkouts', 'builds', 'tests', 'issues', 'incidents')


def merge(reports: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """One report of @reports: each object once (by id; a known failure's by
    id and version), the first one kept, in the order met."""
    minor = 0
    for r in reports:
        version = r.get('version', {})
        if version.get('major') != kcidbrun.MAJOR:
            raise kcidbrun.ExportError(f'a report of schema v{version.get("major")}: only '
                                       f'v{kcidbrun.MAJOR}.x merges here')
        minor = max(minor, int(version.get('minor', 0)))
    merged: Dict[str, Any] = {'version': {'major': kcidbrun.MAJOR, 'minor': minor}}
    for key in LISTS:
        kept: Dict[Tuple[str, int], Dict[str, Any]] = {}
        for r in reports:
            for obj in r.get(key, []):
                kept.setdefault((str(obj.get('id')), int(obj.get('version', 0))), obj)
        merged[key] = list(kept.values())
    return merged


def load_schema() -> Dict[str, Any]:
    data: Dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return data


def _jsonschema() -> Any:
    try:
        return importlib.import_module('jsonschema')
    except ImportError:
        raise kcidbrun.ExportError('python3-jsonschema is not installed: '
                                   'apt-get install -y python3-jsonschema') from None


def validation_errors(data: Any, schema: Optional[Dict[str, Any]] = None) -> List[str]:
    """'<where>: <what>' for every way @data breaks the vendored schema.

    JSON Schema Draft 7, as kcidb-io validates, with format checking where
    the installed jsonschema can check the format ('uri' needs
    python3-rfc3987, which Debian's python3-jsonschema recommends).
    """
    js = _jsonschema()
    validator_class = js.Draft7Validator
    checker = getattr(validator_class, 'FORMAT_CHECKER', None) or js.FormatChecker()
    validator = validator_class(schema or load_schema(), format_checker=checker)
    lines = []
    for e in validator.iter_errors(data):
        where = '/'.join(str(p) for p in e.absolute_path) or '(top)'
        lines.append(' '.join(f'{where}: {e.message}'.split()))
    return sorted(lines)


def write(path: Path, data: Dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + '\n')


def _read_report(path: Path) -> Dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise kcidbrun.ExportError(f'{path}: {e}') from None
    if not isinstance(data, dict):
        raise kcidbrun.ExportError(f'{path}: not a KCIDB report (not a JSON object)')
    return data


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog='kcidb.py', description='Write the KCIDB report (schema v5.3) of runs\' out/ '
        'directories, or validate reports against the vendored schema.')
    ap.add_argument('inputs', nargs='*', type=Path, metavar='OUTDIR',
                    help='out/ directories of runs (verdict.json); a .json file is a KCIDB '
                    'report to merge in')
    ap.add_argument('--out', type=Path, help='the report to write (default: OUTDIR/kcidb.json '
                    'with one OUTDIR)')
    ap.add_argument('--origin', default=kcidbrun.ORIGIN, help=f'the origin of every object '
                    f'([a-z0-9_]+, default {kcidbrun.ORIGIN})')
    ap.add_argument('--url', default='', help='where OUTDIR is published: log and output '
                    'file URLs (one OUTDIR)')
    ap.add_argument('--docs-url', default='', help='where this repository\'s files are '
                    'published: a known failure\'s Documentation/findings/ page as its URL')
    ap.add_argument('--validate', nargs='+', type=Path, metavar='FILE',
                    help='validate these reports only; one line per error, exit 1')
    return ap


def main(argv: Sequence[str]) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    try:
        if args.validate:
            if args.inputs:
                ap.error('--validate takes no OUTDIR')
            schema = load_schema()
            bad = 0
            for path in args.validate:
                errors = validation_errors(_read_report(path), schema)
                for line in errors:
                    print(f'{path}: {line}')
                bad += bool(errors)
            return 1 if bad else 0
        if not args.inputs:
            ap.error('an OUTDIR (or --validate FILE) is needed')
        dirs = [p for p in args.inputs if p.is_dir()]
        if args.url and len(dirs) != 1:
            ap.error('--url is for one OUTDIR')
        reports = [kcidbrun.report(p, args.origin, args.url, args.docs_url)
                   if p.is_dir() else _read_report(p) for p in args.inputs]
        data = reports[0] if len(reports) == 1 else merge(reports)
        if args.out is None:
            if len(args.inputs) != 1 or not args.inputs[0].is_dir():
                ap.error('--out is needed with several inputs')
            args.out = args.inputs[0] / 'kcidb.json'
        try:
            errors = validation_errors(data)
        except kcidbrun.ExportError as e:
            print(f'kcidb.py: note: not validated: {e}', file=sys.stderr)
            errors = []
        if errors:
            for line in errors:
                print(f'kcidb.py: invalid: {line}', file=sys.stderr)
            return 1
        write(args.out, data)
    except kcidbrun.ExportError as e:
        print(f'kcidb.py: error: {e}', file=sys.stderr)
        return 1
    counts = ', '.join(f'{len(data[k])} {k}' for k in LISTS)
    print(f'kcidb.py: {args.out}: KCIDB v{kcidbrun.MAJOR}.{kcidbrun.MINOR}: {counts}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
