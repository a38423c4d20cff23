"""Every performance variable has a unit in ReFrame's report, and a count or a share names what
it counts or what it is a share of (``experiments.UNITS``: ``cpu_wait`` in ``of wall time``);
sessions recorded before those units had none, and every reader reads them as having them:
nothing stored is lost or read as another series."""

from __future__ import annotations

import ast
import copy
import json
import sqlite3
import subprocess
from pathlib import Path

from commcheck import experiments, paths
from commcheck.results import history_gen, sample_index
from tests.conftest import commcheck_cmd

ROOT = paths.REPO_ROOT
REPORT = ROOT / 'tests' / 'data' / 'run-report-pingpong.json'
#: What sets a performance variable's unit: the call and the position of its unit argument.
UNIT_ARGUMENT = {'perf_record': 3, 'largest_field': 3, 'make_performance_function': 1}


# -- the code: no performance variable without a unit ---------------------------------------
def unitless(path: Path) -> list[str]:
    """``file:line`` of every performance variable given an empty unit: a call that makes
    one (:data:`UNIT_ARGUMENT`) or a ``name: (value, '')`` entry of the checks' tables."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, 'attr', getattr(node.func, 'id', ''))
            if name in UNIT_ARGUMENT:
                at = UNIT_ARGUMENT[name]
                units = [*node.args[at:at + 1], *(k.value for k in node.keywords
                                                  if k.arg == 'unit')]
                if any(_empty(u) for u in units):
                    found.append(f'{path.name}:{node.lineno}')
        elif isinstance(node, ast.Dict):
            found += [f'{path.name}:{v.lineno}' for v in node.values
                      if isinstance(v, ast.Tuple) and len(v.elts) == 2 and _empty(v.elts[1])]
    return found


def _empty(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value == ''


def sources(root: Path) -> list[Path]:
    return sorted([*(root / 'checks').glob('*.py'),
                   *(root / 'src' / 'commcheck' / 'rfm').glob('*.py')])


def test_every_performance_variable_has_a_unit():
    assert len(sources(ROOT)) >= 10
    assert [where for path in sources(ROOT) for where in unitless(path)] == []
    assert all(experiments.UNITS.values())


def test_a_unitless_variable_is_caught(tmp_path):
    planted = tmp_path / 'planted.py'
    planted.write_text("values = {'time': (t, 's'), 'share': (x, '')}\n"
                       "perf = {'reps': perf_record(self, 'RESULT', 'reps', '')}\n"
                       "ok = make_performance_function(v, 'us')\n"
                       "bad = sn.make_performance_function(v, unit='')\n")
    assert sorted(unitless(planted)) == ['planted.py:1', 'planted.py:2', 'planted.py:4']


def test_a_unit_recorded_empty_reads_as_todays():
    assert experiments.unit_now('cpu_wait', '') == 'of wall time'
    assert experiments.unit_now('cpu_wait', 'of wall time') == 'of wall time'
    assert experiments.unit_now('latency_8B', 'us') == 'us'
    assert experiments.unit_now('something_new', '') == ''


# -- stored sessions recorded without the units -----------------------------------------------
def _session(n: int, wait: float, unit: str) -> dict:
    """The stored PingPong session, as session ``n`` (a day apart), each launch with a
    ``cpu_wait`` of ``wait`` recorded in ``unit``."""
    report = copy.deepcopy(json.loads(REPORT.read_text()))
    info = report['session_info']
    shift = n * 86400.0
    info.update(uuid=f'{n:08x}-0000-4000-8000-000000000000',
                time_start_unix=info['time_start_unix'] + shift,
                time_end_unix=info['time_end_unix'] + shift)
    for case in report['runs'][0]['testcases']:
        case['job_completion_time_unix'] = (case['job_completion_time_unix'] or 0) + shift
        if case['perfvalues']:
            case['perfvalues']['local:default:cpu_wait'] = [wait, 0, None, None, unit, 'pass']
    return report


def _commcheck(env: dict, *args) -> subprocess.CompletedProcess:
    return subprocess.run([commcheck_cmd(), *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=300)


def test_the_readers_read_old_sessions_in_todays_units(isolated_env, tmp_path):
    """Three quiet sessions recorded with ``cpu_wait`` unitless (before its unit), a contended
    one with it: the baseline keeps the old sessions' wait, compare reads both as one series
    (the launches contended, so the machine changed), from a baseline file of either age."""
    old = [_session(n, 0.002, '') for n in (1, 2, 3)]
    db = tmp_path / 'results.db'
    history_gen.write_db(db, [*old, _session(4, 0.4, 'of wall time')])
    refs = tmp_path / 'refs'
    refs.mkdir()
    picks = [a for r in old for a in ('--session', r['session_info']['uuid'])]
    done = _commcheck(isolated_env, 'baseline', '--db', db, '--refs', refs, *picks)
    assert done.returncode == 0, done.stderr
    written = json.loads((refs / 'local.baseline.json').read_text())
    waits = [v for v in written['variables'] if v['variable'] == 'cpu_wait']
    assert waits and {v['unit'] for v in waits} == {'of wall time'}
    assert all(v['samples'] == [0.002] * 12 for v in waits)
    judged = _judged(isolated_env, db, refs, tmp_path / 'now.json')
    for v in waits:                          # a baseline file written before the unit
        v['unit'] = ''
    (refs / 'local.baseline.json').write_text(json.dumps(written))
    assert _judged(isolated_env, db, refs, tmp_path / 'then.json') == judged


def _judged(env: dict, db: Path, refs: Path, out: Path) -> list:
    done = _commcheck(env, 'compare', '--db', db, '--baseline', refs / 'local.baseline.json',
                      '--json', out)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = json.loads(out.read_text())['comparisons']
    latency = [r for r in rows if r['variable'] == 'latency_8B']
    assert latency and all(r['verdict'] == 'machine changed' for r in latency), latency
    assert all('waited for a CPU 40%' in r['note'] for r in latency)
    assert not [r for r in rows if r['unit'] == '']
    return [(r['variable'], r['unit'], r['verdict']) for r in rows]


def test_an_index_built_before_the_units_reads_in_todays(tmp_path):
    """A sample index built by a commcheck before the unit (``unit = ''`` in its rows) is read
    as today's, like the records it was derived from."""
    db = tmp_path / 'results.db'
    history_gen.write_db(db, [_session(1, 0.002, '')])
    sample_index.open_index(db).close()
    with sqlite3.connect(sample_index.index_path(db)) as conn:     # as an older one wrote it
        conn.execute("UPDATE keys SET unit = '' WHERE variable = 'cpu_wait'")
        conn.execute("UPDATE samples SET unit = '' WHERE key IN "
                     "(SELECT id FROM keys WHERE variable = 'cpu_wait')")
    index = sample_index.open_index(db)
    try:
        waits = [(k, u) for k, u in index.keys() if k.variable == 'cpu_wait']
        assert waits and {u for _, u in waits} == {'of wall time'}
        assert {u for _, _, u, _ in index.launches(waits[0][0])} == {'of wall time'}
    finally:
        index.close()
