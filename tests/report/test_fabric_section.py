"""The report's fabric section from sweep records: named outliers, heat maps, history."""

import itertools
import types

from commcheck.report import inputs
from commcheck.report.model import Case
from commcheck.report.plots import Painter
from commcheck.report.sections import fabric as section

NODES = ('n1', 'n2', 'n3', 'n4', 'n5')


def job_output(tmp_path, name, slow=None, factor=50.0):
    """A stage directory with a pair sweep's job output: every pair, `slow`'s egress slow."""
    lines = ['META kernel=pairsweep lang=c ranks=5 mpi="x" nodes=5 rounds=5 passes=1']
    for (i, a), (j, b) in itertools.combinations(enumerate(NODES), 2):
        ab = 1000.0 / (factor if a == slow else 1)
        ba = 1000.0 / (factor if b == slow else 1)
        lines.append(f'DATA a={a} b={b} ra={i} rb={j} round=0 pass=0 latency_us=10 '
                     f'latency_best_us=9 bw_ab_MBps={ab} bw_ab_best_MBps={ab} '
                     f'bw_ba_MBps={ba} bw_ba_best_MBps={ba}')
    lines.append('PASS validated=1')
    stage = tmp_path / name
    stage.mkdir()
    (stage / 'rfm_job.out').write_text('\n'.join(lines) + '\n')
    return stage


def case(session, stage, **raw):
    return Case(session, {'display_name': 'FabricSweep', 'environ': 'e', 'system': 's',
                          'partition': 'fabric', 'result': 'fail', 'stagedir': str(stage),
                          'outputdir': '', **raw})


def context(history=()):
    warnings = []
    return types.SimpleNamespace(history=inputs.SessionsHistory(list(history)),
                                 warn=warnings.append), warnings


def test_named_node_first_with_its_rerun_command_and_maps(tmp_path):
    ctx, warnings = context()
    now = case('now', job_output(tmp_path, 'now', slow='n3'),
               outliers=['node n3: bandwidth 20 MB/s against median 1000 MB/s (+4900% worse, '
                         'robust z 99.0)'])
    row = section.sweep_of(ctx, now)
    assert [o['name'] for o in row['outliers']] == ['n3']
    assert 'nodelist=' in row['rerun'] and 'n3' in row['rerun']
    assert row['bandwidth'][2][0] == 20.0 and row['bandwidth'][0][2] == 1000.0   # row sends
    assert row['latency'][0][0] is None
    assert warnings == []                               # the check named the same
    fig = section._heatmap(Painter({}), row)
    fig.savefig(tmp_path / 'map.png')
    assert (tmp_path / 'map.png').stat().st_size > 1000


def test_a_sweep_without_output_is_listed_not_drawn(tmp_path):
    ctx, _ = context()
    row = section.sweep_of(ctx, case('now', tmp_path / 'gone'))
    assert 'not kept' in row['problem'] and row['plot'] is None


def test_a_pair_worse_than_its_own_past_is_named(tmp_path):
    past = [types.SimpleNamespace(uuid=f'old{k}', time_start=float(k), cases=[case(
        f'old{k}', job_output(tmp_path, f'old{k}')).raw]) for k in range(3)]
    ctx, _ = context(past)
    row = section.sweep_of(ctx, case('now', job_output(tmp_path, 'now', slow='n2', factor=3)))
    assert row['history']['sweeps'] == 3
    assert row['history']['worse'] and all('n2' in w for w in row['history']['worse'])
    ctx, _ = context(past[:2])
    assert section.sweep_of(ctx, case('now', tmp_path / 'now'))['history']['worse'] == []


def test_a_difference_from_what_the_check_named_is_a_warning(tmp_path):
    ctx, warnings = context()
    section.sweep_of(ctx, case('now', job_output(tmp_path, 'now'),
                               outliers=['node n1: latency 90 us against median 10 us']))
    assert len(warnings) == 1 and "('node', 'n1', 'latency')" in warnings[0]


def test_the_collectives_table_renders():
    """Collectives' figures reach the page, one column per operation and size."""
    from commcheck.report import render
    row = {'check': 'Collectives', 'test': 'Collectives', 'environ': 'gnu-x', 'partition': 'p',
           'ranks': 2, 'per_node': 2, 'result': 'pass',
           **{k: 1.25 + i for i, k in enumerate(section.COLLECTIVE_KEYS)}}
    data = {'sweeps': [], 'collectives': [row], 'keys': section.COLLECTIVE_KEYS, 'title': 'F'}
    html = render.html_environment().get_template('sections/fabric.html.j2').render(
        s={'title': 'Fabric'}, d=data, plots=[], meta={})
    assert all(f'{k} (µs)' in html for k in section.COLLECTIVE_KEYS)
    assert all(f'{1.25 + i:g}' in html for i in range(len(section.COLLECTIVE_KEYS)))
