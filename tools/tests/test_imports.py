"""The imports between the modules of tools/cpuhpk/: all at the top, no cycle.

Every `from cpuhpk import a, b`, `from cpuhpk.a import x`, `import cpuhpk.a`
(and the relative forms) of every tools/cpuhpk/*.py is read with ast, at any
depth. An import of a cpuhpk module inside a function is an error: it hides
a dependency from whoever reads the top of the file, and it is how an import
cycle gets in unnoticed. The graph of the modules' imports must have no
cycle.

No module is longer than MAX_LINES: a module that grows past it holds more
than one job and is split along its seams.
"""

from __future__ import annotations

import ast
import tempfile
import unittest
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Set

PACKAGE = 'cpuhpk'
SOURCES = Path(__file__).resolve().parents[1] / PACKAGE
MAX_LINES = 500


@dataclass(frozen=True)
class Import:
    """One module of the package imported by another, and where."""
    module: str         # the importing module
    target: str         # the imported module
    line: int
    in_function: bool


def _targets(node: ast.stmt, modules: Set[str]) -> List[str]:
    """The package's modules that the import statement @node imports."""
    found: List[str] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            parts = alias.name.split('.')
            if parts[0] == PACKAGE and len(parts) > 1:
                found.append(parts[1])
    elif isinstance(node, ast.ImportFrom):
        parts = node.module.split('.') if node.module else []
        if node.level == 0 and parts[:1] != [PACKAGE]:
            return []
        if node.level > 0:           # relative: `from . import a`, `from .a import x`
            parts = [PACKAGE, *parts]
        if len(parts) > 1:           # from cpuhpk.a import x
            found.append(parts[1])
        else:                        # from cpuhpk import a, b (names that are modules)
            found.extend(alias.name for alias in node.names)
    return [m for m in found if m in modules]


def imports_of(name: str, source: str, modules: Set[str]) -> List[Import]:
    """Every import of a module of @modules in module @name's @source, at any depth."""
    out: List[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.extend(Import(name, t, node.lineno, in_function)
                       for t in _targets(node, modules))
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                 ast.Lambda))
        for child in ast.iter_child_nodes(node):
            visit(child, inner)

    visit(ast.parse(source, filename=f'{name}.py'), False)
    return out


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """A cycle of @graph as [a, b, ..., a], or None when it has none."""
    state: Dict[str, int] = {}          # 1: on the current path, 2: done
    path: List[str] = []

    def dfs(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = dfs(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = dfs(node)
            if found:
                return found
    return None


def package_imports() -> List[Import]:
    """The imports between the modules of tools/cpuhpk/."""
    files = sorted(SOURCES.glob('*.py'))
    modules = {p.stem for p in files if p.stem != '__init__'}
    return [imp for p in files for imp in imports_of(p.stem, p.read_text(), modules)]


class ImportsTest(unittest.TestCase):
    def test_no_package_import_inside_a_function(self) -> None:
        local = [f'tools/{PACKAGE}/{i.module}.py:{i.line}: imports {i.target} in a function'
                 for i in package_imports() if i.in_function]
        self.assertEqual(local, [], 'import the module at the top of the file (and break '
                         'any cycle that kept it inside the function)')

    def test_the_module_graph_has_no_cycle(self) -> None:
        graph: Dict[str, Set[str]] = {}
        for i in package_imports():
            graph.setdefault(i.module, set()).add(i.target)
        cycle = find_cycle(graph)
        self.assertIsNone(cycle, 'import cycle: ' + ' -> '.join(cycle or []))

    def test_no_module_goes_through_run_s_command_line(self) -> None:
        # run.py is make run's and make judge's command line: a module that
        # runs or judges takes a RunSpec to execute.py or outputs.py.
        users = sorted(f'tools/{PACKAGE}/{i.module}.py:{i.line}' for i in package_imports()
                       if i.target == 'run')
        self.assertEqual(users, [], 'build a RunSpec and call execute.execute() or '
                         'outputs.judge_file()')

    def test_the_scan_sees_the_package(self) -> None:
        # Not vacuous: the modules are found and their imports are read.
        edges = {(i.module, i.target) for i in package_imports()}
        self.assertIn(('runspec', 'usertree'), edges)
        self.assertIn(('junit', 'verdict'), edges)      # from cpuhpk.verdict import ...
        self.assertGreater(len({m for m, _ in edges}), 20)


def too_long(files: List[Path], limit: int = MAX_LINES) -> List[str]:
    """'<name>: <lines> lines' for each of @files longer than @limit lines."""
    out = []
    for path in files:
        lines = len(path.read_text().splitlines())
        if lines > limit:
            out.append(f'{path.name}: {lines} lines')
    return out


class ModuleSizeTest(unittest.TestCase):
    def test_no_module_over_max_lines(self) -> None:
        files = sorted(SOURCES.glob('*.py'))
        self.assertGreater(len(files), 20)
        self.assertEqual(too_long(files), [], f'split these modules of tools/{PACKAGE}/ by job '
                         f'(at most {MAX_LINES} lines each)')

    def test_too_long_names_the_offenders(self) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            short, long = Path(tmp) / 'short.py', Path(tmp) / 'long.py'
            short.write_text('x = 1\n' * 3)
            long.write_text('x = 1\n' * 4)
            self.assertEqual(too_long([short, long], limit=3), ['long.py: 4 lines'])


class ScannerTest(unittest.TestCase):
    """The reading itself, on made-up modules."""
    MODULES = {'a', 'b', 'c', 'd'}

    def test_every_form_at_any_depth(self) -> None:
        src = ('from cpuhpk import a, b  # noqa\n'
               'import cpuhpk.c as cc\n'
               'from cpuhpk.d import thing\n'
               'from . import a\n'
               'import os\n'
               'from cpuhpk import not_a_module\n'
               'class K:\n'
               '    from cpuhpk import b\n'
               'def f() -> None:\n'
               '    if True:\n'
               '        from cpuhpk import c\n'
               'g = lambda: __import__("x")\n')
        got = [(i.target, i.line, i.in_function) for i in imports_of('m', src, self.MODULES)]
        self.assertEqual(got, [('a', 1, False), ('b', 1, False), ('c', 2, False),
                               ('d', 3, False), ('a', 4, False), ('b', 8, False),
                               ('c', 11, True)])

    def test_cycles(self) -> None:
        self.assertIsNone(find_cycle({'a': {'b', 'c'}, 'b': {'c'}, 'c': set()}))
        self.assertEqual(find_cycle({'run': {'usertree'}, 'usertree': {'series'},
                                     'series': {'run', 'tree'}, 'tree': set()}),
                         ['run', 'usertree', 'series', 'run'])
        self.assertEqual(find_cycle({'a': {'a'}}), ['a', 'a'])


if __name__ == '__main__':
    unittest.main()
