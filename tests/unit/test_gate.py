"""The gate's statistics, baselines and change points, on samples made here (no timings).

The samples are drawn from fixed seeds: the same test always sees the same data, and the
assertions are about the method (a 1 % shift is not flagged, a 30 % one is; direction matters;
too few launches decide nothing), not about this machine's speed.
"""

import json

import numpy as np
import pytest
import yaml

from commcheck import baseline, experiments, gate, references, trend
from commcheck.history import Sample, Session, group

KEY = ('sys', 'part', 'gnu-mpich4', 'PingPong %lang=c', 'latency_8B')


def samples(values, key=KEY, unit='us', session='s', **prov):
    system, partition, environ, test, variable = key
    provenance = tuple(sorted({'binding': 'core', 'placement': 'same-node', **prov}.items()))
    return [Sample(session=session, time=float(i), system=system, partition=partition,
                   environ=environ, test=test, variable=variable, value=float(v), unit=unit,
                   result='pass', provenance=provenance) for i, v in enumerate(values)]


def noisy(n, median, spread=0.05, seed=1):
    return list(median * np.exp(np.random.default_rng(seed).normal(0, spread, n)))


def verdict(base, new, **settings):
    comp, = gate.compare({KEY: samples(base)}, {KEY: samples(new)}, gate.Settings(**settings))
    return comp


def test_a_large_shift_is_flagged_the_worse_way():
    comp = verdict(noisy(8, 1.0, seed=1), noisy(8, 1.3, seed=2))
    assert comp.verdict == gate.REGRESSED and comp.change == pytest.approx(0.3, abs=0.06)
    assert comp.ci[0] > 1 and comp.p_adj < 0.05
    assert verdict(noisy(8, 1.3, seed=1), noisy(8, 1.0, seed=2)).verdict == gate.IMPROVED


def test_a_significant_small_shift_does_not_flag():
    comp = verdict(noisy(30, 1.0, 0.002, seed=3), noisy(30, 1.03, 0.002, seed=4))
    assert comp.p_adj < 1e-6 and comp.verdict == gate.UNCHANGED


def test_bandwidth_down_is_worse():
    key = KEY[:4] + ('bw_1048576B',)
    comp, = gate.compare({key: samples(noisy(8, 9000), key, 'MB/s')},
                         {key: samples(noisy(8, 6000, seed=9), key, 'MB/s')})
    assert comp.direction == experiments.HIGHER_IS_BETTER and comp.verdict == gate.REGRESSED


def test_noise_alone_is_not_flagged():
    rng = np.random.default_rng(7)
    flagged = 0
    for _ in range(200):
        base, new = (list(1 + 0.2 * rng.random(6)) for _ in range(2))
        flagged += verdict(base, new).verdict != gate.UNCHANGED
    assert flagged <= 5


def test_too_few_launches_and_no_baseline_decide_nothing():
    assert verdict([1, 1.1], [2, 2.1, 2.2]).verdict == gate.TOO_FEW
    other = KEY[:4] + ('latency_1024B',)
    comps = gate.compare({KEY: samples([1, 1, 1])}, {other: samples([1, 1, 1], other)})
    assert [c.verdict for c in comps] == [gate.NO_BASELINE]


def test_another_binding_is_not_compared_and_what_changed_is_named():
    comps = gate.compare({KEY: samples([1, 1.1, 1.2], mpi_version='4.1.4')},
                         {KEY: samples([3, 3.1, 3.2], binding='none', mpi_version='5.0.6')})
    assert comps[0].verdict == gate.NOT_COMPARABLE and 'binding core -> none' in comps[0].note
    assert comps[0].provenance_changes['mpi_version'] == ('4.1.4', '5.0.6')


def test_benjamini_hochberg_is_monotone_and_bounded():
    adj = gate.bh_adjust([0.01, 0.04, 0.03, 0.5])
    # sorted 0.01, 0.03, 0.04, 0.5 -> 0.04, 0.06, 0.0533, 0.5; step-up takes the running min
    assert adj == pytest.approx([0.04, 0.16 / 3, 0.16 / 3, 0.5], rel=0.001)
    assert all(0 <= p <= 1 for p in adj)


def session(uuid, values_by_key, t0=0.0, **prov):
    samp = [s for key, values in values_by_key.items()
            for s in samples(values, key, session=uuid, **prov)]
    return Session(uuid=uuid, time_start=t0, info={'time_start': f'2026-11-{int(t0) + 1:02d}'},
                   cases=[], samples=samp)


def test_baseline_writes_refs_reframe_reads_and_keeps_the_previous(tmp_path):
    keys = {KEY: noisy(6, 0.5), KEY[:4] + ('bw_1048576B',): noisy(6, 9000),
            KEY[:4] + ('fit_rms_rel',): noisy(6, 0.01)}
    sess = [session('aaaaaaaa-1', keys)]
    policy = baseline.Policy(min_samples=5)
    chosen = baseline.compute(sess, 'sys', policy, warn=print)
    assert {v.variable for v in chosen} == {'latency_8B', 'bw_1048576B'}   # key variables only
    (tmp_path / 'sys.yaml').write_text('Other:\n  $index: [$partition]\n  "sys:part":\n'
                                       '    x: [1, null, 0.5, us]\n')
    written = baseline.write(tmp_path, 'sys', sess, chosen, policy)
    refs = yaml.safe_load((tmp_path / 'sys.yaml').read_text())
    assert refs['Other']                                  # other checks' entries are kept
    entry = refs['PingPong']
    assert entry['$index'] == ['$partition', '$environ', 'lang']
    lat = entry['sys:part']['gnu-mpich4']['c']['latency_8B']
    assert lat[0] == pytest.approx(np.median(keys[KEY]), rel=1e-4)
    assert lat[1] is None and lat[2] >= policy.floor and lat[3] == 'us'
    bw = entry['sys:part']['gnu-mpich4']['c']['bw_1048576B']
    assert bw[1] <= -policy.floor and bw[2] is None
    assert references.problem(tmp_path / 'sys.yaml') is None
    assert (tmp_path / 'sys.yaml.prev').read_text().startswith('Other:')
    assert '+PingPong:' in written['diff']
    record = baseline.load(tmp_path / 'sys.baseline.json')
    assert sorted(len(v) for v in record.samples().values()) == [6, 6]


def test_baseline_refuses_too_few_launches(tmp_path):
    sess = [session('a', {KEY: [0.5, 0.6]})]
    with pytest.raises(baseline.BaselineError, match='too few launches to baseline: at most 2'):
        baseline.compute(sess, 'sys', baseline.Policy(min_samples=5), warn=print)


def test_baseline_never_overwrites_a_reference_file_it_cannot_read(tmp_path):
    (tmp_path / 'sys.yaml').write_text('PingPong: [unclosed\n')
    sess = [session('a', {KEY: noisy(6, 0.5)})]
    chosen = baseline.compute(sess, 'sys', baseline.Policy(), warn=print)
    with pytest.raises(baseline.BaselineError, match='not valid YAML'):
        baseline.write(tmp_path, 'sys', sess, chosen, baseline.Policy())
    assert (tmp_path / 'sys.yaml').read_text() == 'PingPong: [unclosed\n'
    assert not (tmp_path / 'sys.baseline.json').exists()


def test_a_corrupt_baseline_file_is_one_line(tmp_path):
    path = tmp_path / 'sys.baseline.json'
    path.write_text(json.dumps({'system': 'sys', 'variables': 3}))
    with pytest.raises(baseline.BaselineError, match='sys.baseline.json: not a commcheck base'):
        baseline.load(path)


def test_change_point_found_where_the_shift_started_with_what_changed():
    sessions = [session(f's{i}', {KEY: noisy(3, 0.5, seed=i)}, t0=i, mpi_version='4.1.4')
                for i in range(6)]
    sessions += [session(f's{i}', {KEY: noisy(3, 0.7, seed=i)}, t0=i, mpi_version='5.0.6')
                 for i in range(6, 10)]
    series, points = trend.history(sessions)
    cp, = points
    assert cp.session == 's6' and cp.worse and cp.change == pytest.approx(0.4, abs=0.1)
    assert cp.provenance_changes['mpi_version'] == ('4.1.4', '5.0.6')
    flat = [session(f's{i}', {KEY: noisy(3, 0.5, seed=i)}, t0=i) for i in range(10)]
    assert trend.history(flat)[1] == []


def test_samples_group_by_variable():
    grouped = group(samples([1, 2]) + samples([3], KEY[:4] + ('bw_1048576B',)))
    assert sorted(len(v) for v in grouped.values()) == [1, 2]


@pytest.mark.parametrize('text,words', [
    ('- a\n- b\n', 'the top level must map'),
    ('PingPong:\n  $index: [$partition, $environ]\n  "l:d":\n    ".*":\n'
     '      latency_8B: [1.0, null, "0.5", us]\n', 'upper threshold'),
    ('PingPong:\n  $index: [$partition, $environ]\n  "l:d":\n    ".*":\n'
     '      latency_8B: [fast, null, 0.5, us]\n', 'is not a number'),
    ('PingPong:\n  $index: [$partition, $environ]\n  "l:d": 3\n', 'must be a mapping'),
    ('PingPong:\n  $index: [$partition\n', 'not valid YAML'),
    ('PingPong:\n  $index: [$partition]\n  "l:d":\n    bw: [1.0, 0.5, null, MB/s]\n',
     'lower threshold'),
])
def test_reference_files_are_validated_with_file_and_line(tmp_path, text, words):
    path = tmp_path / 'local.yaml'
    path.write_text(text)
    problem = references.problem(path)
    assert problem and problem.startswith(str(path)) and words in problem, problem
    assert '\n' not in problem
