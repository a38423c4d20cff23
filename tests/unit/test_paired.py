"""The paired statistics of ``commcheck upgrade`` on pairs made here from fixed seeds: the
assertions are about the method (the interval is the signed-rank test's, the regime cancels
in pairs, a machine change within a pair is left out), never about this machine's speed."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from commcheck.analysis import paired, stats, verdicts
from commcheck.results.store import Sample

OLD, NEW = 'gnu-openmpi414', 'gnu-openmpi416'
TEST = 'PingPong %lang=c'


def sample(environ, variable, value, t, unit='us'):
    prov = (('binding', 'core'), ('placement', 'same-node'))
    return Sample(session='s', time=t, system='sys', partition='part', environ=environ,
                  test=TEST, variable=variable, value=float(value), unit=unit, result='pass',
                  provenance=prov)


def session(n, seed, slower=1.0, machine_pairs=(), floor_step=4.0, shuffle=True):
    """n pairs of 8 B launches: each pair shares a machine state drawn from two regimes (a
    4x floor step, as this project's VM shows), MPI's own cost 2x the floor, the new stack's
    x ``slower``; the pairs in ``machine_pairs`` get a floor step between their launches."""
    rng = np.random.default_rng(seed)
    out, t = [], 0.0
    for i in range(n):
        state = (floor_step if rng.random() < 0.5 else 1.0) * math.exp(rng.normal(0, 0.05))
        order = [OLD, NEW] if not shuffle or rng.random() < 0.5 else [NEW, OLD]
        for env in order:
            s = state * (floor_step if env == NEW and i in machine_pairs else 1.0)
            floor = 0.07 * s * math.exp(rng.normal(0, 0.01))
            value = 2 * floor * (slower if env == NEW else 1.0) * math.exp(rng.normal(0, 0.01))
            t += 1.0
            out += [sample(env, 'latency_8B', value, t), sample(env, 'floor_latency_8B', floor, t)]
    return out


def one(samples, **settings):
    judged, = paired.compare(samples, OLD, NEW, paired.Settings(**settings))
    return judged


def test_the_interval_is_the_signed_rank_tests():
    """A value lies outside the interval exactly where the exact signed-rank test of the pairs
    shifted by it rejects at the same level (the interval inverts the test)."""
    d = list(np.random.default_rng(3).normal(0.04, 0.03, 12))
    level = 1 - 0.05 / 3
    centre, low, high = stats.walsh_interval(d, level)
    assert low < centre < high
    for c in np.linspace(low - 0.05, high + 0.05, 201):
        if min(abs(c - low), abs(c - high)) < 1e-9:
            continue
        p = scipy_stats.wilcoxon(np.asarray(d) - c, method='exact').pvalue
        assert (not low <= c <= high) == (p < 1 - level), (c, p)


def test_too_few_pairs_cannot_reach_the_level():
    assert stats.min_pairs(1 - 0.05 / 6) == 8      # 2 / 2^8 < 0.05 / 6 < 2 / 2^7
    assert stats.walsh_interval([0.1] * 7, 1 - 0.05 / 6) is None
    out = paired.judge([0.5] * 7, m=6)
    assert out.outcome == stats.UNKNOWN and out.needed == 8


def test_a_a_reads_no_regression_across_regimes():
    """Same stack under two names; each pair's launches share a regime, the regimes differ 4x
    between pairs: never flagged, and the interval is narrow enough to say the same."""
    said = [one(session(12, seed)).verdict for seed in range(20)]
    assert not set(said) & set(verdicts.SOFTWARE_REGRESSED), said
    assert said.count(verdicts.UNCHANGED) >= 15, said


def test_a_slower_new_stack_is_named_with_its_size():
    j = one(session(12, 7, slower=1.05))
    assert j.verdict == verdicts.MPI_REGRESSED and j.slower == NEW
    assert 0.03 < math.expm1(j.cost.change) < 0.07
    assert math.expm1(j.cost.low) > 0.02 and j.detectable < 0.05
    assert j.statement().startswith(f'{NEW} slower by 5.')


def test_a_faster_new_stack_names_the_old_one():
    j = one(session(12, 8, slower=0.90))
    assert j.verdict == verdicts.IMPROVED and j.slower == OLD
    assert j.statement().startswith(f'{OLD} slower by')


def test_a_pair_whose_floors_differ_is_left_out():
    j = one(session(12, 9, machine_pairs=(2, 5)))
    assert [i for i, p in enumerate(j.pairs) if p.machine] == [2, 5]
    assert j.verdict == verdicts.UNCHANGED and '2 of 12 pairs left out' in j.note


def test_most_pairs_machine_changed_is_not_an_mpi_verdict():
    j = one(session(12, 10, slower=1.3, machine_pairs=range(8)))
    assert j.verdict == verdicts.MACHINE_CHANGED and j.slower is None
    assert '8 of 12 pairs' in j.note


def test_undecided_says_how_many_pairs_would_decide():
    j = one(session(9, 11, slower=1.03), min_effect=0.02)
    if j.verdict == verdicts.CANNOT_TELL:
        assert j.pairs_needed > 9 and f'about {j.pairs_needed} pairs' in j.note
    else:
        assert j.verdict == verdicts.MPI_REGRESSED


def test_launches_pair_with_their_neighbour_in_time():
    seq = [OLD, NEW, NEW, OLD, OLD, OLD, NEW, NEW]
    launches = [sample(env, 'latency_8B', 1.0, float(t)) for t, env in enumerate(seq)]
    pairs = paired.adjacent([s for s in launches if s.environ == OLD],
                            [s for s in launches if s.environ == NEW])
    assert [(o.time, n.time) for o, n in pairs] == [(0, 1), (3, 2), (5, 6)]


def test_bandwidth_worse_is_a_smaller_figure():
    rng = np.random.default_rng(12)
    out, t = [], 0.0
    for _ in range(12):
        for env in (OLD, NEW):
            t += 1
            f = 40000 * math.exp(rng.normal(0, 0.01))
            bw = f / 2 / (1.1 if env == NEW else 1.0) * math.exp(rng.normal(0, 0.01))
            out += [sample(env, 'bw_1048576B', bw, t, 'MB/s'),
                    sample(env, 'floor_bw_1048576B', f, t, 'MB/s')]
    j = one(out)
    assert j.verdict == verdicts.MPI_REGRESSED and j.slower == NEW


@pytest.mark.parametrize('binding', ['none'])
def test_another_binding_is_not_compared(binding):
    samples = session(10, 13)
    moved = [s if s.environ == OLD else Sample(**{**{f: getattr(s, f) for f in s.__slots__},
                                                  'provenance': (('binding', binding),
                                                                 ('placement', 'same-node'))})
             for s in samples]
    assert one(moved).verdict == verdicts.NOT_COMPARABLE


def test_own_costs_and_declared_floors_are_not_judged_on_their_own():
    """A launch's own cost (``own_latency_8B``: the figure over its floor) is what the pairs
    judge already, and a check's declared floor (the stencil's ``floor_time``) goes with its
    variable: neither is a variable of its own, nor counts in the family."""
    samples = session(10, 21)
    own = [sample(s.environ, 'own_latency_8B', s.value / f.value, s.time, unit='x')
           for s, f in zip(samples[::2], samples[1::2])]
    assert [j.key.variable for j in paired.compare(samples + own, OLD, NEW)] == ['latency_8B']
    stencil = [Sample(**{**{f: getattr(s, f) for f in s.__slots__}, 'test': 'Stencil %ranks=2',
                         'variable': {'latency_8B': 'time'}.get(s.variable, 'floor_time'),
                         'unit': 's'}) for s in samples]
    judged, = paired.compare(stencil, OLD, NEW)
    assert (judged.key.variable, judged.floor_variable) == ('time', 'floor_time')


def test_an_mpi_floor_is_each_stacks_own_so_the_value_is_judged():
    """The datatypes' floor is the contiguous send of the same launch, an MPI figure: in an
    upgrade it is each stack's own, so the pairs judge the value (the shared machine cancels
    from it), and a new stack whose contiguous send is what slowed reads as slower, where
    the figure over that floor would call it unchanged."""
    samples = session(12, 5)
    dtype = [Sample(**{**{f: getattr(s, f) for f in s.__slots__},
                       'test': 'DerivedDatatypes %lang=c %element=double %mode=vector',
                       'variable': {'latency_8B': 't0'}.get(s.variable, 't0_contig'),
                       # the new stack's contiguous send and its vector send both 30 % slower
                       'value': s.value * (1.3 if s.environ == NEW else 1.0)})
             for s in samples]
    judged, = paired.compare(dtype, OLD, NEW)
    assert judged.floor_variable is None and judged.floor is None
    assert judged.verdict == verdicts.REGRESSED and judged.slower == NEW
    assert judged.note.startswith('judged on the value: its floor, the contiguous send')


def loose_session(n, seed, slower=1.0, slope=0.2, noise=0.04):
    """n pairs whose MPI figure follows its floor by ``slope`` only (the 8 B latency here:
    -0.2 to +0.2), the floor moving a lot launch to launch: dividing by the floor adds its
    noise, the fitted slope does not."""
    rng = np.random.default_rng(seed)
    out, t = [], 0.0
    for _ in range(n):
        order = [OLD, NEW] if rng.random() < 0.5 else [NEW, OLD]
        for env in order:
            floor = 0.07 * math.exp(rng.normal(0, 0.15))
            value = 0.2 * (floor / 0.07) ** slope * math.exp(rng.normal(0, noise))
            value *= slower if env == NEW else 1.0
            t += 1.0
            out += [sample(env, 'latency_8B', value, t), sample(env, 'floor_latency_8B', floor, t)]
    return out


def test_the_slope_fitted_takes_out_what_the_ratio_adds():
    """A floor that MPI hardly follows: over it (the ratio) the pairs spread wide and +6 %
    cannot be told; adjusted by the fitted slope it is flagged, the slope near the truth."""
    samples = loose_session(16, 31, slower=1.06)
    fitted, ratio = one(samples), one(samples, adjust=stats.RATIO)
    assert fitted.cost.slope == pytest.approx(0.2, abs=0.2) and ratio.cost.slope == 1.0
    assert fitted.cost.high - fitted.cost.low < 0.6 * (ratio.cost.high - ratio.cost.low)
    assert fitted.verdict == verdicts.MPI_REGRESSED and ratio.verdict == verdicts.CANNOT_TELL
    assert fitted.judged().startswith('value adjusted by its floor (slope 0.')
    assert ratio.judged() == "MPI's own cost (value over floor)"
    record = paired.record(['s'], OLD, NEW, paired.Settings(), [fitted])
    assert record['format_version'] == 2
    assert record['judgements'][0]['slope'] == fitted.cost.slope


def test_the_ratio_setting_is_the_rule_before_the_slope():
    """adjust=ratio judges MPI's own cost, the value over its floor: the Walsh interval of
    d_y - d_x, as before issue 44."""
    j = one(session(12, 7, slower=1.05), adjust=stats.RATIO)
    d = [p.raw(j.direction) - p.floor() for p in j.pairs]
    assert (j.cost.change, j.cost.low, j.cost.high) == stats.walsh_interval(d, 0.95)


@pytest.mark.parametrize('response', [0.0, 1.0, 2.0])
def test_a_machine_slowed_for_the_new_stack_is_never_an_mpi_regression(response):
    """Every new launch on a machine 15 % slower (its floor moved) and MPI following by
    ``response`` (0 to double the floor's move, the band the rules admit): the fitted slope
    never makes that an MPI regression."""
    rng = np.random.default_rng(40)
    out, t = [], 0.0
    for _ in range(16):
        for env in ([OLD, NEW] if rng.random() < 0.5 else [NEW, OLD]):
            slow = 1.15 * math.exp(rng.normal(0, 0.01)) if env == NEW else 1.0
            floor = 0.07 * slow * math.exp(rng.normal(0, 0.01))
            value = 0.2 * slow ** response * math.exp(rng.normal(0, 0.01))
            t += 1.0
            out += [sample(env, 'latency_8B', value, t), sample(env, 'floor_latency_8B', floor, t)]
    for adjust in (stats.SLOPE, stats.RATIO):
        j = one(out, adjust=adjust, floor_margin=0.5)     # no pair set aside: all judged
        assert j.verdict == verdicts.MACHINE_CHANGED, (adjust, j.verdict, j.note)


def test_an_acceptance_margin_passes_a_a_and_refuses_a_slowdown_beyond_it():
    aa = one(session(16, 3), accept=0.05)
    assert aa.acceptance == verdicts.PASS and aa.decided and aa.bound < 0.05
    assert 'accepted: not slower by more than 5%' in aa.statement()
    slow = one(session(16, 4, slower=1.12), accept=0.05)
    assert slow.acceptance == verdicts.FAIL and slow.verdict == verdicts.MPI_REGRESSED
    assert slow.bound > 0.05 and 'refused: slower by more than 5%' in slow.statement()
    # +3 %: slower beyond the 2 % threshold, within the 5 % accepted: it passes, and the
    # threshold alone would have flagged it
    small = one(session(16, 5, slower=1.03), accept=0.05)
    assert small.acceptance == verdicts.PASS and small.verdict == verdicts.UNCHANGED
    assert one(session(16, 5, slower=1.03)).verdict == verdicts.MPI_REGRESSED
    assert one(session(16, 5)).acceptance is None


def test_pairs_pair_within_a_session_only():
    first = [sample(OLD, 'latency_8B', 1.0, 0.0), sample(NEW, 'latency_8B', 1.0, 1.0),
             sample(OLD, 'latency_8B', 1.0, 2.0)]
    later = [Sample(**{**{f: getattr(s, f) for f in s.__slots__}, 'session': 't',
                       'time': s.time + 3}) for s in first[1:]]
    launches = first + later
    pairs = paired.adjacent([s for s in launches if s.environ == OLD],
                            [s for s in launches if s.environ == NEW])
    assert [(o.time, n.time) for o, n in pairs] == [(0, 1), (5, 4)]


def test_a_launch_left_unpaired_leaves_the_others_their_floors():
    """One new launch whose partner failed: the other pairs keep their floors (before, the
    floors were matched by position and a launch over left every pair without one)."""
    samples = session(10, 14)
    lonely = [s for s in samples if s.time == samples[-1].time + 0]
    extra = [Sample(**{**{f: getattr(s, f) for f in s.__slots__}, 'time': 999.0,
                       'environ': NEW}) for s in lonely]
    j = one(samples + extra)
    assert len(j.pairs) == 10 and j.floor_variable == 'floor_latency_8B' and j.floor
