"""No include cycle among the kernels' C files: a header and the .c file of the same name are one
unit (cc_floor.h and cc_floor.c), and no unit includes one that includes it back, directly or
through others (as the sweep's header once included the floor's, whose code used the sweep's
header for its payload stamps)."""

import re
from pathlib import Path

KERNELS = Path(__file__).resolve().parents[2] / 'src' / 'kernels'
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_graph(root: Path) -> dict[str, set[str]]:
    """Unit (a file's name without .c/.h) -> the units it includes."""
    graph: dict[str, set[str]] = {}
    for path in sorted([*root.rglob('*.c'), *root.rglob('*.h')]):
        included = {Path(name).stem for name in INCLUDE.findall(path.read_text(errors='replace'))}
        graph.setdefault(path.stem, set()).update(included - {path.stem})
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every cycle found by a depth-first search, each as the path that closes it."""
    found, state = [], {}

    def visit(unit: str, path: list[str]) -> None:
        state[unit] = 'open'
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 'open':
                found.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[unit] = 'done'

    for unit in sorted(graph):
        if unit not in state:
            visit(unit, [unit])
    return found


def test_no_include_cycle_among_the_kernels():
    graph = include_graph(KERNELS)
    assert 'cc_payload' in graph and 'cc_sweep' in graph['pingpong']
    assert cycles(graph) == []


def test_the_payload_stamps_stand_alone():
    assert include_graph(KERNELS)['cc_payload'] == set()


def test_a_planted_cycle_is_caught(tmp_path):
    (tmp_path / 'a.h').write_text('#include "b.h"\n')
    (tmp_path / 'b.h').write_text('#include <mpi.h>\n')
    (tmp_path / 'b.c').write_text('#include "b.h"\n#include "a.h"\n')
    assert cycles(include_graph(tmp_path)) == [['a', 'b', 'a']]
