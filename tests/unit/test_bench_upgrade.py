"""``commcheck bench upgrade``'s judging on recorded launches made here (fixed seeds): every
rule sees the same sessions, the paired rule flags a real slowdown and not an A/A session, a
bad record is one ERROR line. Its real sessions are a benchmark, run by hand."""

import json
import math
import subprocess

import numpy as np

from commcheck.bench import upgrade as bench_upgrade
from tests.conftest import commcheck_cmd


def launch(rng, state, slower, seq):
    f8, f1k, fbw = 0.07 * state, 0.1 * state, 40000 / state
    noise = lambda: math.exp(rng.normal(0, 0.01))  # noqa: E731
    return {'seq': seq, 'added_small_ns': 0.0 if slower == 1 else 30.0,
            'added_large_ns': 0.0 if slower == 1 else 9000.0,
            'values': {'latency_8B': 2 * f8 * slower * noise(),
                       'latency_1024B': 2 * f1k * slower * noise(),
                       'bw_1048576B': fbw / 2 / slower * noise(),
                       'floor_latency_8B': f8 * noise(), 'floor_latency_1024B': f1k * noise(),
                       'floor_bw_1048576B': fbw * noise()}}


def session(index, kind, pairs=12):
    rng = np.random.default_rng(index)
    slower = 1 + bench_upgrade.KINDS[kind] / 100
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
        [bench_upgrade.AA] * 3 + ['+20 %', bench_upgrade.AA, '+5 %'])]


def test_the_rules_on_the_same_sessions():
    recorded = sessions()
    rows = {(r['kind'], r['pairs']): r for r in bench_upgrade.evaluate(recorded, ['gnu-mpich4'],
                                                                        [6, 8, 12])}
    aa, slow = rows[(bench_upgrade.AA, 12)], rows[('+20 %', 12)]
    assert aa['paired'] == {'latency_8B': 0, 'bw_1048576B': 0, 'any': 0, 'of': 4}
    assert slow['paired'] == {'latency_8B': 1, 'bw_1048576B': 1, 'any': 1, 'of': 1}
    assert rows[('+5 %', 12)]['paired']['latency_8B'] == 1
    assert rows[('+20 %', 6)]['paired']['any'] == 0      # 6 pairs cannot reach the level
    assert aa['gate']['of'] == 1                          # 3 sessions before it: one judged
    assert slow['perf-compare 10 %']['latency_8B'] == 1
    old8 = [x['values']['latency_8B'] * 1e3 for x in recorded[3]['stacks']['gnu-mpich4']['old']]
    assert math.isclose(slow['realized']['latency_8B'], 30.0 / float(np.median(old8)))


def test_rejudge_reads_a_record_and_refuses_a_bad_one(tmp_path, isolated_env):
    good = tmp_path / 'u.json'
    good.write_text(json.dumps({'format_version': 1, 'kind': 'bench upgrade', 'gap_s': 60,
                                'sessions': sessions()}))
    done = subprocess.run([commcheck_cmd(), 'bench', 'upgrade', '--rejudge', str(good)],
                          env=isolated_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert 'Sessions flagged, per rule' in done.stdout
    bad = tmp_path / 'bad.json'
    bad.write_text(json.dumps({'format_version': 1, 'kind': 'bench upgrade', 'sessions': []}))
    done = subprocess.run([commcheck_cmd(), 'bench', 'upgrade', '--rejudge', str(bad)],
                          env=isolated_env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr.strip().startswith('ERROR:') and 'no sessions recorded' in done.stderr
