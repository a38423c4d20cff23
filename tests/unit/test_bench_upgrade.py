"""``commcheck bench upgrade``'s judging on recorded launches made here (fixed seeds): every
rule sees the same sessions, the paired rules flag a real slowdown and not an A/A session,
pairs until decided stop early on a large slowdown and within the budget, the floors beside
them, records of format 1 still read, a bad record or kind is one ERROR line. Its real
sessions are a benchmark, run by hand."""

import json
import math
import subprocess

import numpy as np
import pytest

from commcheck.bench import upgrade as bench_upgrade
from commcheck.bench import upgrade_rules as rules
from tests.conftest import commcheck_cmd


def launch(rng, state, slower, seq, seconds=0.5):
    f8, f1k, fbw = 0.07 * state, 0.1 * state, 40000 / state
    noise = lambda: math.exp(rng.normal(0, 0.01))  # noqa: E731
    return {'seq': seq, 'added_small_ns': 0.0 if slower == 1 else 30.0,
            'added_large_ns': 0.0 if slower == 1 else 9000.0, 'seconds': seconds,
            # the share of time the ranks waited for a CPU: 0 in a quiet launch
            'values': {'cpu_wait': 0.0 if seq % 3 else 0.002,
                       'latency_8B': 2 * f8 * slower * noise(),
                       'latency_1024B': 2 * f1k * slower * noise(),
                       'bw_1048576B': fbw / 2 / slower * noise(),
                       'floor_latency_8B': f8 * noise(), 'floor_latency_1024B': f1k * noise(),
                       'floor_bw_1048576B': fbw * noise()}}


def session(index, kind, pairs=40):
    rng = np.random.default_rng(index)
    slower = 1 + rules.KINDS[kind] / 100
    sides, seq = {'old': [], 'new': []}, 0
    for _ in range(pairs):
        state = 4.0 if rng.random() < 0.5 else 1.0         # the regime, shared by the pair
        for side in ('old', 'new'):
            seq += 1
            sides[side].append(launch(rng, state, slower if side == 'new' else 1, seq))
    return {'index': index, 'kind': kind, 'started': 1.8e9 + index, 'ended': 1.8e9 + index,
            'stacks': {'gnu-mpich4': sides}}


def sessions():
    return [session(i, kind) for i, kind in enumerate(
        [rules.AA] * 3 + ['+20 %', rules.AA, '+5 %'])]


def test_the_rules_on_the_same_sessions():
    recorded = sessions()
    rows = {(r['kind'], r['pairs']): r for r in rules.evaluate(recorded, ['gnu-mpich4'],
                                                               [6, 8, 12])}
    aa, slow = rows[(rules.AA, 12)], rows[('+20 %', 12)]
    assert aa['slope'] == {'latency_8B': 0, 'bw_1048576B': 0, 'any': 0, 'of': 4}
    assert aa['ratio'] == aa['slope']
    assert slow['slope'] == {'latency_8B': 1, 'bw_1048576B': 1, 'any': 1, 'of': 1}
    assert rows[('+5 %', 12)]['slope']['latency_8B'] == 1
    assert rows[('+20 %', 6)]['slope']['any'] == 0      # 6 pairs cannot reach the level
    assert aa['gate']['of'] == 1                          # 3 sessions before it: one judged
    assert slow['perf-compare 10 %']['latency_8B'] == 1
    old8 = [x['values']['latency_8B'] * 1e3
            for x in recorded[3]['stacks']['gnu-mpich4']['old'][:12]]
    assert math.isclose(slow['realized']['latency_8B'], 30.0 / float(np.median(old8)))
    # the floors beside them: the old side's medians, and new/old of the pairs (no move here)
    (f8, r8), (f1m, r1m) = (aa['floors'][name] for name in rules.FLOORS)
    assert 0.07 < f8 < 0.28 and 10000 < f1m < 40000 and abs(r8 - 1) < 0.02 > abs(r1m - 1)


def test_pairs_until_decided_stop_early_and_keep_to_the_budget():
    recorded = sessions()
    rows = {r['kind']: r for r in rules.evaluate_sequential(recorded, ['gnu-mpich4'], None,
                                                            0.05)}
    aa, slow = rows[rules.AA], rows['+20 %']
    assert aa['flagged']['any'] == 0 and aa['accepted'] == 4 and aa['refused'] == 0
    assert slow['flagged']['latency_8B'] == 1 and slow['refused'] == 1
    assert slow['pairs'] == [12]                          # decided at the first look
    assert max(aa['accept pairs']) < 40                   # A/A accepted before the horizon
    # a budget of 9 s at 1 s a pair: 9 pairs planned, below the first look's 12
    budgeted = rules.evaluate_sequential(recorded, ['gnu-mpich4'], 9.0, 0.05)
    assert all(h == 9 for r in budgeted for h in r['horizon'])
    assert all(n <= 9 for r in budgeted for n in r['pairs'])
    # a cap (upgrade's --max-pairs) beside the recorded pairs: a row each, the cap kept
    capped = rules.evaluate_sequential(recorded, ['gnu-mpich4'], None, 0.05, [14, None])
    assert [r['cap'] for r in capped if r['kind'] == rules.AA] == [14, None]
    assert all(h == 14 and n <= 14 for r in capped if r['cap'] == 14
               for h, n in zip(r['horizon'], r['pairs'] + r['accept pairs']))
    assert [r for r in capped if r['cap'] is None] == list(rows.values())


def test_records_of_two_stacks_pooled_are_judged_each_on_its_own_sessions():
    """``--rejudge`` of a record of MPICH and one of Open MPI: each stack's rows count its own
    sessions, none reads a session that did not record it."""
    other = [{**s, 'index': 10 + s['index'], 'stacks': {'gnu-openmpi4': s['stacks']['gnu-mpich4']}}
             for s in sessions()[:2]]
    pooled = sessions() + other
    stacks = ['gnu-mpich4', 'gnu-openmpi4']
    fixed = {(r['kind'], r['stack']): r for r in rules.evaluate(pooled, stacks, [12])}
    assert fixed[(rules.AA, 'gnu-mpich4')]['sessions'] == 4
    assert fixed[(rules.AA, 'gnu-openmpi4')]['sessions'] == 2
    assert (('+20 %', 'gnu-openmpi4')) not in fixed
    until = {(r['kind'], r['stack']): r for r in rules.evaluate_sequential(pooled, stacks, None,
                                                                          0.05)}
    assert until[(rules.AA, 'gnu-openmpi4')]['sessions'] == 2
    assert until[(rules.AA, 'gnu-openmpi4')]['floors'] == rules.floors(
        sessions()[:2], rules.AA, 'gnu-mpich4', None)


@pytest.mark.parametrize('text,want', [
    ('aa:20,busy:10,+5', {rules.AA: 20, rules.AA_BUSY: 10, '+5 %': 0}),
    ('+2', {'+2 %': 0})])
def test_kinds_are_chosen_and_interleaved(text, want):
    chosen = bench_upgrade.kinds_spec(text)
    assert chosen == want
    order = bench_upgrade.schedule(bench_upgrade.kinds_spec('aa:3,busy:1,+5'), 2)
    assert order == [rules.AA, '+5 %', rules.AA_BUSY, rules.AA, '+5 %', rules.AA]


def _bench(env, *args):
    return subprocess.run([commcheck_cmd(), 'bench', 'upgrade', *args], env=env,
                          capture_output=True, text=True, timeout=600)


def test_rejudge_reads_records_of_both_formats_and_refuses_a_bad_one(tmp_path, isolated_env):
    new, old = tmp_path / 'u2.json', tmp_path / 'u1.json'
    new.write_text(json.dumps({'format_version': 2, 'kind': 'bench upgrade', 'gap_s': 60,
                               'sessions': sessions()[:4]}))
    first = [{**s, 'stacks': {k: {side: [{x: v for x, v in launch.items() if x != 'seconds'}
                                         for launch in sides[side]] for side in sides}
                              for k, sides in s['stacks'].items()}} for s in sessions()[4:]]
    old.write_text(json.dumps({'format_version': 1, 'kind': 'bench upgrade', 'gap_s': 60,
                               'sessions': first}))
    done = _bench(isolated_env, '--rejudge', str(new), '--rejudge', str(old), '--budget', '1m')
    assert done.returncode == 0, done.stderr
    assert 'Fixed counts. Sessions flagged per rule' in done.stdout
    assert 'Pairs until decided' in done.stdout and '6 sessions' in done.stdout
    bad = tmp_path / 'bad.json'
    bad.write_text(json.dumps({'format_version': 1, 'kind': 'bench upgrade', 'sessions': []}))
    done = _bench(isolated_env, '--rejudge', str(bad))
    assert done.returncode == 2
    assert done.stderr.strip().startswith('ERROR:') and 'no sessions recorded' in done.stderr
    done = _bench(isolated_env, '--kinds', 'aa,+7')
    assert done.returncode == 2 and "'+7' is not a kind" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
