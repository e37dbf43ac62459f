"""python3 -m cpuhpk <command> [its options]: the tools as one command line.

Each command is the module a make target runs, with that module's own
options (`python3 -m cpuhpk <command> --help`): `make run` is `run`,
`make judge` is `judge` (run --judge), and so on. Run it from tools/ or
with tools/ on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Dict, Optional, Sequence, Tuple

# command -> (module, the option its first operand is given to, the make
# target, what it does)
COMMANDS: Dict[str, Tuple[str, str, str, str]] = {
    'run': ('run', '', 'run', 'build a kernel with the suites, boot it, judge its console'),
    'judge': ('run', '--judge', 'judge', 'judge a console a kernel printed elsewhere (CONSOLE first)'),
    'prepare': ('tree', '', 'prepare', "extract Debian's kernel and apply the series"),
    'coverage': ('coverage', '', 'coverage', 'every guest topology, merged coverage, the gate'),
    'mutate': ('mutate', '', 'mutate', 'run the suites against each mutant on its guests'),
    'bisect': ('bisect', '', 'bisect', 'the first commit of a tree that fails'),
    'tree-test': ('treetest', '', 'tree-test', 'TREE= and bisect on a throw-away tree'),
    'series': ('series', '', 'series', 'the series posted upstream, its checks'),
    'fixes-series': ('fixseries', '', 'fixes-series', 'the kernel fixes as postable series'),
    'finding-mails': ('findingmail', '', 'finding-mails', 'the findings as mails'),
    'reports': ('provoke', '', 'reports', "boots that make the kernel print each report kind"),
    'matrix': ('matrix', '', 'matrix', "the job matrix and make test's tier"),
    'merge-results': ('merge', '', 'merge-results', 'one report of several runs'),
}


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog='python3 -m cpuhpk',
        description='The tools of cpuhp-kunit, one command each make target runs.',
        epilog='python3 -m cpuhpk <command> --help: that command\'s options.')
    sub = ap.add_subparsers(dest='command', metavar='<command>', required=True)
    for name, (_, _, target, what) in COMMANDS.items():
        sub.add_parser(name, help=f'{what} (make {target})', add_help=False)
    return ap


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in COMMANDS:
        parser().parse_args(args)    # prints the commands; exits 0 for --help, 2 otherwise
        return 2
    module, operand, _, _ = COMMANDS[args[0]]
    rest = args[1:]
    if operand and rest and not rest[0].startswith('-'):
        rest = [operand, *rest]
    entry = importlib.import_module(f'cpuhpk.{module}')
    return int(entry.main(rest))


if __name__ == '__main__':
    sys.exit(main())
