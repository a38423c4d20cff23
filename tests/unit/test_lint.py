"""The code passes the linter configured in pyproject.toml (ruff: pycodestyle, pyflakes, import
order, pyupgrade, bugbear), so a ``# noqa`` is a decision on the line, not a habit; the package's
layers import only downwards; no function is longer than 50 lines."""

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def ruff() -> list[str]:
    beside = Path(sys.executable).parent / 'ruff'
    found = str(beside) if beside.exists() else shutil.which('ruff')
    if not found:
        pytest.fail('ruff is not installed: it is a test dependency (pip install -e .[test])')
    return [found]


def test_ruff_finds_nothing():
    done = subprocess.run([*ruff(), 'check', '--no-cache', 'src', 'checks', 'config', 'tests'],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_fails_on_a_defect(tmp_path):
    """The linter run above can fail: an unused import in a copy of the configuration."""
    (tmp_path / 'pyproject.toml').write_text((ROOT / 'pyproject.toml').read_text())
    (tmp_path / 'bad.py').write_text('import os\n')
    done = subprocess.run([*ruff(), 'check', '--no-cache', 'bad.py'], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and 'F401' in done.stdout


#: The package's layers, lowest first: a module imports only from its own layer and those
#: below it (``base``: the top-level modules, paths, errors, console, yamltext, experiments).
LAYERS = ('base', 'site', 'results', 'analysis', 'rfm', 'report', 'bench', 'cli')
#: Layers that import ReFrame: its glue, and the readers of ReFrame's own results database.
REFRAME_LAYERS = {'rfm', 'results'}


def layer_of(package: Path, module: str) -> str:
    parts = module.split('.')
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and (package / parts[1]).is_dir()) \
        else 'base'


def layering_faults(package: Path) -> list[str]:
    """Imports that reach up a layer, or ReFrame from a layer that should not need it."""
    import ast
    faults = []
    for path in sorted(package.rglob('*.py')):
        rel = path.relative_to(package.parent).with_suffix('')
        me = '.'.join(p for p in rel.parts if p != '__init__')
        mine = layer_of(package, me)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module] if node.module != package.name else \
                    [f'{package.name}.{a.name}' for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                root = target.split('.')[0]
                if root == package.name and \
                        LAYERS.index(layer_of(package, target)) > LAYERS.index(mine):
                    faults.append(f'{me} ({mine}) imports {target} ({layer_of(package, target)})')
                elif root == 'reframe' and mine not in REFRAME_LAYERS:
                    faults.append(f'{me} ({mine}) imports {target}')
    return faults


def test_each_layer_imports_only_the_layers_below_it():
    package = ROOT / 'src' / 'commcheck'
    assert {p.name for p in package.iterdir() if (p / '__init__.py').exists()} == \
        set(LAYERS) - {'base'}
    assert layering_faults(package) == []


def test_an_import_reaching_up_a_layer_is_found(tmp_path):
    package = tmp_path / 'commcheck'
    for sub in ('site', 'analysis'):
        (package / sub).mkdir(parents=True)
        (package / sub / '__init__.py').write_text('')
    (package / '__init__.py').write_text('')
    (package / 'site' / 'stacks.py').write_text('from commcheck.analysis import gate\n')
    (package / 'analysis' / 'gate.py').write_text('import reframe\nfrom commcheck import site\n')
    assert layering_faults(package) == [
        'commcheck.analysis.gate (analysis) imports reframe',
        'commcheck.site.stacks (site) imports commcheck.analysis (analysis)']


#: The longest function the code may hold (issue 23: a reader sees a function whole).
MAX_FUNCTION_LINES = 50


def long_functions(root: Path) -> list[str]:
    """Each function (or method) of the Python files under ``root`` longer than the limit."""
    out = []
    for path in sorted(root.rglob('*.py')):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    out.append(f'{path.relative_to(root)}:{node.lineno} {node.name}: {lines} lines')
    return out


def test_no_function_is_longer_than_the_limit():
    assert [f for d in ('src', 'checks', 'config') for f in long_functions(ROOT / d)] == []


def test_a_long_function_is_found(tmp_path):
    body = ''.join(f'    x{i} = {i}\n' for i in range(MAX_FUNCTION_LINES))
    (tmp_path / 'long.py').write_text(f'def short():\n    pass\n\n\ndef long():\n{body}')
    assert long_functions(tmp_path) == [f'long.py:5 long: {MAX_FUNCTION_LINES + 1} lines']


#: The longest kernel routine (issue 23: mains that read like the MPI tutorial's examples).
MAX_ROUTINE_LINES = 80
_F_START = re.compile(r'^\s*(?:(?:pure|elemental|recursive|impure|module)\s+)*'
                      r'(?:(?:integer|real|logical|character|type)\b[^!]*?\s)?'
                      r'(program|subroutine|function)\s+(\w+)', re.I)
_F_END = re.compile(r'^\s*end\s*(?:(?:program|subroutine|function)\b.*)?$', re.I)
_C_START = re.compile(r'^[A-Za-z_][\w \t*]*\b(\w+)\s*\([^;]*$')


def long_routines(root: Path) -> list[str]:
    """Each Fortran program, subroutine or function (a program up to its ``contains``) and each
    C function (in sources and headers) under ``root`` longer than the limit."""
    out = []
    for path in sorted([*root.rglob('*.F90'), *root.rglob('*.c'), *root.rglob('*.h')]):
        lines = path.read_text().splitlines()
        spans = _fortran_spans(lines) if path.suffix == '.F90' else _c_spans(lines)
        out += [f'{path.relative_to(root)}:{start + 1} {name}: {end - start - 1} lines'
                for name, start, end in spans if end - start - 1 > MAX_ROUTINE_LINES]
    return out


def _fortran_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    spans, open_ = [], []
    for i, line in enumerate(lines):
        text = line.split('!')[0]
        if _F_END.match(text) and open_:
            name, start, body_end = open_.pop()
            spans.append((name, start, body_end if body_end is not None else i))
        elif text.strip().lower() == 'contains' and open_ and open_[-1][2] is None:
            open_[-1] = (open_[-1][0], open_[-1][1], i)
        elif (found := _F_START.match(text)) and 'end' not in text.lower().split()[:1]:
            open_.append((found[2], i, None))
    return spans


def _c_spans(lines: list[str]) -> list[tuple[str, int, int]]:
    spans, start = [], None
    for i, line in enumerate(lines):
        if start is None and (found := _C_START.match(line)) and not line.startswith(
                ('if', 'for', 'while', 'return', 'static const', 'typedef')):
            start = (found[1], i)
        elif line.startswith('}') and start is not None:
            spans.append((start[0], start[1], i))
            start = None
        elif line.rstrip().endswith(';') and start is not None and '{' not in ''.join(
                lines[start[1]:i + 1]):
            start = None            # a prototype, not a definition
    return spans


def test_no_kernel_routine_is_longer_than_the_limit():
    assert long_routines(ROOT / 'src' / 'kernels') == []


def test_a_long_kernel_routine_is_found(tmp_path):
    body = ''.join(f'  x = {i}\n' for i in range(MAX_ROUTINE_LINES + 1))
    (tmp_path / 'k.F90').write_text(f'program k\n  implicit none\n{body}contains\n'
                                    f'  subroutine s()\n  end subroutine\nend program\n')
    (tmp_path / 'k.c').write_text(f'static int f(int a)\n{{\n{body}}}\n\nint main(void)\n{{\n'
                                  f'    return 0;\n}}\n')
    assert long_routines(tmp_path) == [f'k.F90:1 k: {MAX_ROUTINE_LINES + 2} lines',
                                       f'k.c:1 f: {MAX_ROUTINE_LINES + 2} lines']


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports, at its top or inside a function (``from
    commcheck.results import store`` names the module ``store``; a name that is not a module
    names the package's ``__init__``)."""
    modules = {'.'.join(p for p in path.relative_to(package.parent).with_suffix('').parts
                        if p != '__init__'): path for path in package.rglob('*.py')}
    graph: dict[str, set[str]] = {}
    for me, path in modules.items():
        targets = graph.setdefault(me, set())
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                found = [f'{node.module}.{a.name}' if f'{node.module}.{a.name}' in modules
                         else node.module for a in node.names]
            elif isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            else:
                continue
            targets.update(t for t in found if t in modules and t != me)
    return graph


def import_cycles(package: Path) -> list[list[str]]:
    """Each cycle of the import graph (its strongly connected components of more than one
    module), its modules sorted (Tarjan's algorithm)."""
    graph, order, low, stack, on, out = import_graph(package), {}, {}, [], set(), []

    def visit(node: str) -> None:
        order[node] = low[node] = len(order)
        stack.append(node)
        on.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            part = []
            while not part or part[-1] != node:
                part.append(stack.pop())
                on.discard(part[-1])
            if len(part) > 1:
                out.append(sorted(part))
    for node in sorted(graph):
        if node not in order:
            visit(node)
    return sorted(out)


def test_no_import_cycle_even_inside_functions():
    assert import_cycles(ROOT / 'src' / 'commcheck') == []


def test_an_import_cycle_inside_a_function_is_found(tmp_path):
    package = tmp_path / 'commcheck'
    (package / 'results').mkdir(parents=True)
    for name in ('__init__.py', 'results/__init__.py', 'results/other.py'):
        (package / name).write_text('')
    (package / 'results' / 'source.py').write_text(
        'def opened():\n    from commcheck.results import pgread\n')
    (package / 'results' / 'pgread.py').write_text('from commcheck.results.source import x\n')
    assert import_cycles(package) == [['commcheck.results.pgread', 'commcheck.results.source']]


def undocumented_variables(root: Path) -> list[str]:
    """Each ReFrame ``variable``/``parameter`` declared in a class under ``root`` whose ``#:``
    block above it (as ReFrame's ``pipeline.py`` documents its own) lacks ``:type:`` or
    ``:default:``."""
    out = []
    for path in sorted(root.rglob('*.py')):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse('\n'.join(lines), str(path))):
            for st in node.body if isinstance(node, ast.ClassDef) else ():
                func = getattr(getattr(st, 'value', None), 'func', None)
                if getattr(func, 'id', getattr(func, 'attr', None)) not in ('variable',
                                                                            'parameter'):
                    continue
                i, doc = st.lineno - 2, []
                while i >= 0 and lines[i].strip().startswith('#:'):
                    doc.append(lines[i])
                    i -= 1
                if not (':type:' in ''.join(doc) and ':default:' in ''.join(doc)):
                    out.append(f'{path.relative_to(root)}:{st.lineno}')
    return out


def test_every_check_variable_has_its_doc_type_and_default():
    assert undocumented_variables(ROOT / 'checks') == []


def test_a_variable_without_its_doc_is_found(tmp_path):
    (tmp_path / 'c.py').write_text('class C:\n    #: Sizes. :type: str :default: \'8\'\n'
                                   '    sizes = variable(str, value=\'8\')\n'
                                   '    #: Iterations.\n    iters = variable(int, value=1)\n'
                                   '    lang = parameter([\'c\'])\n')
    assert undocumented_variables(tmp_path) == ['c.py:5', 'c.py:6']
