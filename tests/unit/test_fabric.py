"""commcheck.analysis.fabric: outliers of a node-pair sweep named from the population, no
baseline."""

import itertools
import math
import random

import pytest

from commcheck.analysis import fabric
from commcheck.analysis.fabric import FabricError, Pair, Settings


def sweep(nodes=6, seed=1, noise=0.1, slow_node=None, slow_link=None, factor=3.0,
          lat=30.0, bw=1000.0):
    """Pairs of `nodes` nodes with relative noise; a slow node or link is `factor` worse."""
    rng = random.Random(seed)
    names = [f'n{i:02d}' for i in range(1, nodes + 1)]
    pairs = []
    for a, b in itertools.combinations(names, 2):
        f = factor if slow_node in (a, b) or {a, b} == set(slow_link or ()) else 1.0

        def jitter():
            return 1 + rng.uniform(-noise, noise)
        pairs.append(Pair(a, b, lat * f * jitter(), bw / f * jitter(), bw / f * jitter()))
    return pairs


def test_a_clean_sweep_names_nobody():
    for seed in range(50):
        assert fabric.judge(sweep(nodes=4, seed=seed, noise=0.2)).outliers == [], seed


def test_a_slow_node_is_named_alone_with_its_figures():
    judged = fabric.judge(sweep(nodes=4, slow_node='n03'))
    assert judged.named_nodes == ['n03']
    kinds = {(o.kind, o.name, o.metric) for o in judged.outliers}
    assert kinds == {('node', 'n03', 'latency'), ('node', 'n03', 'bandwidth')}
    lat = next(o for o in judged.outliers if o.metric == 'latency')
    assert lat.value == pytest.approx(90, rel=0.15) and lat.reference == pytest.approx(30, rel=0.2)
    assert lat.effect > 1.5 and lat.z >= 5
    assert 'node n03: latency' in lat.describe() and 'robust z' in lat.describe()


def test_a_slow_link_is_named_as_a_link_not_its_nodes():
    judged = fabric.judge(sweep(nodes=6, slow_link=('n02', 'n05')))
    assert {(o.kind, o.name) for o in judged.outliers} == {('link', 'n02<->n05')}
    assert judged.named_nodes == ['n02', 'n05']


def test_one_direction_of_bandwidth_is_enough():
    pairs = [Pair(p.a, p.b, p.latency_us, p.bw_ab_MBps / (10 if p.a == 'n04' else 1),
                  p.bw_ba_MBps / (10 if p.b == 'n04' else 1)) for p in sweep(nodes=4)]
    judged = fabric.judge(pairs)
    assert [(o.name, o.metric) for o in judged.outliers] == [('n04', 'bandwidth')]
    grid = fabric.matrix(pairs, judged.nodes, 'bandwidth')
    assert grid[3][0] < 200 and grid[0][3] > 800          # the row of the sender n04


def test_tiny_spread_does_not_name_noise():
    """A quiet cluster: all equal but one node 10 % slower; z is huge, the effect is not."""
    pairs = sweep(nodes=5, noise=0.0, slow_node='n02', factor=1.1)
    judged = fabric.judge(pairs)
    assert judged.outliers == []
    assert math.isinf(judged.node_z['latency']['n02']) or judged.node_z['latency']['n02'] > 5
    assert fabric.judge(pairs, Settings(min_effect=0.05)).named_nodes == ['n02']


def test_too_few_nodes_names_no_node_and_says_why():
    judged = fabric.judge(sweep(nodes=3, slow_node='n01', factor=10))
    assert not [o for o in judged.outliers if o.kind == 'node']
    assert any('from 4 nodes on' in n for n in judged.notes)


def test_history_names_a_pair_worse_than_its_past():
    past = [sweep(nodes=4, seed=s) for s in range(5)]
    now = sweep(nodes=4, seed=9, slow_link=('n01', 'n02'), factor=2.0)
    found = fabric.against_history(now, past)
    assert {(o.kind, o.name) for o in found} == {('history', 'n01<->n02')}
    assert fabric.against_history(sweep(nodes=4, seed=9), past) == []
    assert fabric.against_history(now, past[:2]) == []          # too little history


def test_records_are_validated():
    row = {'a': 'x', 'b': 'y', 'ra': 0, 'rb': 1, 'latency_us': 5.0, 'bw_ab_MBps': 1.0,
           'bw_ba_MBps': 2.0}
    assert fabric.pairs_from_records([row])[0].bw_MBps == 1.0
    for bad, why in (({'latency_us': -1}, 'positive'), ({'bw_ab_MBps': float('nan')}, 'positive'),
                     ({'b': 'x', 'rb': 0}, 'itself'), ({'latency_us': 'fast'}, 'positive')):
        with pytest.raises(FabricError, match=why):
            fabric.pairs_from_records([{**row, **bad}])
    with pytest.raises(FabricError, match='missing'):
        fabric.pairs_from_records([{k: v for k, v in row.items() if k != 'bw_ba_MBps'}])
    with pytest.raises(FabricError, match='twice'):
        fabric.pairs_from_records([row, {**row, 'a': 'y', 'b': 'x', 'ra': 1, 'rb': 0}])


def test_ranks_sharing_a_host_are_told_apart():
    rows = [{'a': 'vm', 'b': 'vm', 'ra': a, 'rb': b, 'latency_us': 1.0, 'bw_ab_MBps': 1.0,
             'bw_ba_MBps': 1.0} for a, b in itertools.combinations(range(3), 2)]
    assert {p.a for p in fabric.pairs_from_records(rows)} == {'vm#0', 'vm#1'}


def test_rerun_command_names_the_outliers_and_healthy_peers():
    judged = fabric.judge(sweep(nodes=8, slow_node='n05'))
    cmd = fabric.rerun_command(judged)
    assert cmd.startswith('commcheck run -- -n FabricSweep -S FabricSweep.num_nodes=4 ')
    nodes = cmd.split('nodelist=')[1].split(',')
    assert 'n05' in nodes and len(nodes) == 4
    assert fabric.rerun_command(fabric.judge(sweep(nodes=8))) == ''


def test_the_best_batch_can_be_judged():
    row = {'a': 'x', 'b': 'y', 'ra': 0, 'rb': 1, 'latency_us': 50.0, 'latency_best_us': 5.0,
           'bw_ab_MBps': 10.0, 'bw_ab_best_MBps': 20.0, 'bw_ba_MBps': 30.0,
           'bw_ba_best_MBps': 40.0}
    assert fabric.pairs_from_records([row])[0] == Pair('x', 'y', 50.0, 10.0, 30.0)
    assert fabric.pairs_from_records([row], 'best')[0] == Pair('x', 'y', 5.0, 20.0, 40.0)
    with pytest.raises(FabricError, match='statistic'):
        fabric.pairs_from_records([row], 'mean')


def test_only_the_judged_metrics_name():
    pairs = sweep(nodes=5, slow_node='n02', factor=10)
    assert {o.metric for o in fabric.judge(pairs, Settings(metrics=('bandwidth',))).outliers} \
        == {'bandwidth'}


def test_four_nodes_one_far_out_is_named_despite_a_wide_spread():
    """Leave-one-out: with 4 nodes the outlier does not widen its own reference spread."""
    pairs = sweep(nodes=4, noise=0.4, slow_node='n03', factor=100)
    judged = fabric.judge(pairs, Settings(min_effect=9))
    assert judged.named_nodes == ['n03']


def test_passes_are_combined_per_pair():
    def row(p, lat, best, bw, bw_best, a='x', b='y'):
        return {'a': a, 'b': b, 'ra': 0, 'rb': 1, 'pass': p, 'latency_us': lat,
                'latency_best_us': best, 'bw_ab_MBps': bw, 'bw_ab_best_MBps': bw_best,
                'bw_ba_MBps': bw, 'bw_ba_best_MBps': bw_best}
    rows = [row(0, 10.0, 9.0, 100.0, 110.0), row(1, 500.0, 400.0, 1.0, 2.0),
            row(2, 12.0, 8.0, 90.0, 120.0)]
    assert fabric.pairs_from_records(rows) == [Pair('x', 'y', 12.0, 90.0, 90.0)]
    assert fabric.pairs_from_records(rows, 'best') == [Pair('x', 'y', 8.0, 120.0, 120.0)]
    with pytest.raises(FabricError, match='twice in pass 1'):
        fabric.pairs_from_records(rows + [row(1, 1.0, 1.0, 1.0, 1.0)])


def test_a_large_sweep_is_judged_against_the_whole_population():
    """128 nodes (8128 pairs): above LEAVE_ONE_OUT the median and MAD are computed once (a
    leave-one-out per pair would be quadratic); the slow node is still named, alone."""
    assert 127 * 128 // 2 > fabric.LEAVE_ONE_OUT
    judged = fabric.judge(sweep(nodes=128, slow_node='n77', factor=3.0))
    assert judged.named_nodes == ['n77']
    assert [o.kind for o in judged.outliers] == ['node', 'node']
