"""The gate's statistics, baselines and change points, on samples made here (no timings).

The samples are drawn from fixed seeds: the same test always sees the same data, and the
assertions are about the method (a 1 % shift is not flagged, a 30 % one is; direction matters;
too few launches decide nothing), not about this machine's speed.
"""

import json
import math
from collections import Counter

import numpy as np
import pytest
import yaml

from commcheck import cli, experiments
from commcheck.analysis import baseline, gate, stats, trend, verdicts
from commcheck.bench import gate as bench_gate
from commcheck.bench import gate_sequential
from commcheck.cli import compare
from commcheck.results import baselinefile, references, store
from commcheck.results.store import Sample, Session, group

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


FLOOR = KEY[:4] + ('floor_latency_8B',)


def launches(n, seed, machine=1.0, mpi=1.0, regime_cv=0.10):
    """Synthetic launches of a floored latency: each launch's machine state (lognormal) slows
    floor and MPI alike; MPI's own cost is 3x the floor times ``mpi``, with its own noise."""
    rng = np.random.default_rng(seed)
    state = machine * np.exp(rng.normal(0, regime_cv, n))
    floor = 0.1 * state * np.exp(rng.normal(0, 0.02, n))
    value = floor * 3 * mpi * np.exp(rng.normal(0, 0.03, n))
    return list(value), list(floor)


def floored(base, new, session_base='b', session_new='n', **settings):
    (bv, bf), (nv, nf) = base, new
    comp, = gate.compare(
        {KEY: samples(bv, session=session_base), FLOOR: samples(bf, FLOOR, session=session_base)},
        {KEY: samples(nv, session=session_new), FLOOR: samples(nf, FLOOR, session=session_new)},
        gate.Settings(**settings))
    return comp


def test_a_large_shift_is_flagged_the_worse_way():
    comp = verdict(noisy(8, 1.0, seed=1), noisy(8, 1.3, seed=2))
    assert comp.verdict == verdicts.REGRESSED and comp.change == pytest.approx(0.3, abs=0.06)
    assert comp.cost.low > comp.cost.threshold and comp.cost.p < 0.05
    assert comp.floor is None and comp.cost.level == 'launches'
    assert verdict(noisy(8, 1.3, seed=1), noisy(8, 1.0, seed=2)).verdict == verdicts.IMPROVED


def test_a_significant_small_shift_reads_unchanged():
    comp = verdict(noisy(30, 1.0, 0.002, seed=3), noisy(30, 1.03, 0.002, seed=4))
    assert comp.cost.p < 1e-6 and comp.verdict == verdicts.UNCHANGED
    assert comp.cost.high < comp.cost.threshold == pytest.approx(np.log(1.10))


def test_min_effect_given_overrides_the_derived_threshold():
    comp = verdict(noisy(30, 1.0, 0.002, seed=3), noisy(30, 1.03, 0.002, seed=4),
                   min_effect=0.01)
    assert comp.verdict == verdicts.REGRESSED


def test_bandwidth_down_is_worse():
    key = KEY[:4] + ('bw_1048576B',)
    comp, = gate.compare({key: samples(noisy(8, 9000), key, 'MB/s')},
                         {key: samples(noisy(8, 6000, seed=9), key, 'MB/s')})
    assert comp.direction == experiments.HIGHER_IS_BETTER and comp.verdict == verdicts.REGRESSED


@pytest.mark.parametrize('seed', range(10))
@pytest.mark.parametrize('machine', [0.6, 1.5, 2.5])
@pytest.mark.parametrize('adjust', [stats.SLOPE, stats.RATIO])
def test_a_slower_or_faster_machine_is_machine_changed_never_mpi(seed, machine, adjust):
    """Over the floor (MPI 3x the floor here) the cost holds; with the slope fitted on a
    baseline whose floor moved 10 % (these launches) and a new floor moved 0.6-2.5x, the
    slope's interval times that move leaves the cost undecided: machine changed either way."""
    comp = floored(launches(8, seed), launches(8, seed + 100, machine=machine), adjust=adjust)
    assert comp.verdict == verdicts.MACHINE_CHANGED, (comp.verdict, verdicts.describe(comp))
    assert comp.floor.outcome in (stats.WORSE, stats.BETTER)
    assert comp.cost.outcome == (stats.SAME if adjust == stats.RATIO else stats.UNKNOWN)


@pytest.mark.parametrize('seed', range(10))
def test_a_slower_mpi_on_the_same_machine_is_mpi_regressed(seed):
    comp = floored(launches(8, seed), launches(8, seed + 100, mpi=1.5))
    assert comp.verdict == verdicts.MPI_REGRESSED, verdicts.describe(comp)
    assert comp.floor.outcome != stats.WORSE and comp.floor_variable == 'floor_latency_8B'


@pytest.mark.parametrize('name,size,variable', [
    ('latency', 8, 'latency_8B'), ('bw', 1 << 20, 'bw_1048576B'),
    ('floor_latency', 8, 'floor_latency_8B'), ('allreduce', 65536, 'allreduce_65536B')])
def test_a_sized_variable_is_built_and_read_by_the_one_rule(name, size, variable):
    assert experiments.sized_name(name, size) == variable
    assert experiments.split_sized(variable) == (name, size)


@pytest.mark.parametrize('variable', ['time', 'floor_time', 'latency_8', 'latency_8Bx', 'n_half'])
def test_a_variable_of_no_size_is_not_read_as_one(variable):
    assert experiments.split_sized(variable) is None
    assert experiments.floor_variable(variable) is None


@pytest.mark.parametrize('check,variable,floor', [
    ('Stencil %variant=sr %ranks=2', 'time', 'floor_time'),
    ('DerivedDatatypes %mode=stride', 't0', 't0_contig'),
    ('DerivedDatatypes %mode=stride', 'r_inf', 'r_inf_contig')])
def test_a_checks_own_floor_is_judged_with_its_variable_never_alone(check, variable, floor):
    """The floors a check declares (not the hardware ones): its key variable is judged as
    its own cost over that floor, the way the floor's variable goes, and the floor itself
    gets no verdict of its own."""
    key, fkey = KEY[:3] + (check, variable), KEY[:3] + (check, floor)
    higher = experiments.direction(experiments.check_of(check), variable) == \
        experiments.HIGHER_IS_BETTER
    assert experiments.direction(experiments.check_of(check), floor) == \
        experiments.direction(experiments.check_of(check), variable)

    def side(seed, machine, mpi, session):
        value, floor_values = launches(8, seed, machine=machine, mpi=mpi)
        if higher:      # a rate: the machine and MPI make it smaller
            value, floor_values = [1 / v for v in value], [1 / f for f in floor_values]
        return {key: samples(value, key, session=session),
                fkey: samples(floor_values, fkey, session=session)}

    slower_machine = gate.compare(side(1, 1.0, 1.0, 'b'), side(2, 2.0, 1.0, 'n'))
    slower_mpi = gate.compare(side(1, 1.0, 1.0, 'b'), side(2, 1.0, 1.5, 'n'))
    # a floor that is an MPI figure (the datatypes' contiguous send) cannot say the machine
    moved = verdicts.CANNOT_TELL if experiments.mpi_floor(experiments.check_of(check)) \
        else verdicts.MACHINE_CHANGED
    for comps, want in ((slower_machine, moved), (slower_mpi, verdicts.MPI_REGRESSED)):
        comp, = comps
        assert comp.key.variable == variable and comp.floor_variable == floor
        assert comp.verdict == want, verdicts.describe(comp)


def test_both_slower_is_both():
    comp = floored(launches(8, 1), launches(8, 2, machine=1.3, mpi=2.5))
    assert comp.verdict == verdicts.BOTH, verdicts.describe(comp)


@pytest.mark.parametrize('machine', [0.5, 2.0])
@pytest.mark.parametrize('adjust', [stats.SLOPE, stats.RATIO])
def test_a_cost_change_the_floors_move_can_explain_is_the_machine(machine, adjust):
    """MPI's cost is not proportional to the floor: once the floor moved by a factor f, a
    cost change within f is not the software's (it reads machine changed, and says so)."""
    comp = floored(launches(8, 1), launches(8, 2, machine=machine, mpi=1.4), adjust=adjust)
    assert comp.floor.outcome != stats.SAME
    assert comp.verdict == verdicts.MACHINE_CHANGED, verdicts.describe(comp)
    if adjust == stats.RATIO:
        assert comp.cost.outcome == stats.WORSE
        assert "MPI's own cost +" in comp.note and "floor's move" in comp.note
    else:       # the slope's interval times a 2x move: the cost cannot be told apart
        assert comp.cost.outcome == stats.UNKNOWN and 'cannot be told apart' in comp.note


def test_a_moved_floor_is_named_beside_the_variables_of_its_launches_that_cannot_be_told():
    moved = stats.Outcome(stats.WORSE, 0.8, 0.6, 1.0, 0.05, 'sessions')
    unknown = stats.Outcome(stats.UNKNOWN, 0.0, -0.3, 0.3, 0.05, 'sessions')

    def comp(key, verdict, floor, floor_variable):
        return gate.Comparison(key=key, unit='us', direction='lower', base=[], new=[],
                               verdict=verdict, cost=unknown, floor=floor,
                               floor_variable=floor_variable)
    bw = comp(KEY[:4] + ('bw_1048576B',), verdicts.verdict(unknown, moved), moved,
              'floor_bw_1048576B')
    same_launches = comp(KEY, verdicts.CANNOT_TELL, unknown, 'floor_latency_8B')
    other_stack = comp(('sys', 'part', 'gnu-openmpi4') + KEY[3:], verdicts.CANNOT_TELL, unknown,
                       'floor_latency_8B')
    verdicts.machine_notes([bw, same_launches, other_stack])
    assert bw.verdict == verdicts.MACHINE_CHANGED and bw.note == ''
    assert same_launches.note == ('the machine changed in these launches: floor_bw_1048576B '
                                  '+123% [+82%, +172%] worse-positive')
    assert other_stack.note == ''


def test_an_mpi_regression_whose_floor_held_names_another_floor_that_moved():
    """Intel MPI's 1 MiB on a VM whose 8 B floor rose 4x in the same launches: the verdict
    stays the rule's (MPI regressed), and the note says the machine changed beside it; an
    MPI regressed of other launches, or whose own floor moved (got faster), gets no note."""
    moved = stats.Outcome(stats.WORSE, 1.4, 1.2, 1.6, 0.05, 'sessions')
    held = stats.Outcome(stats.SAME, 0.0, -0.03, 0.03, 0.05, 'sessions')
    worse = stats.Outcome(stats.WORSE, 2.5, 2.3, 2.7, 0.05, 'sessions')

    def comp(environ, variable, verdict, floor, floor_variable):
        return gate.Comparison(key=('sys', 'part', environ, KEY[3], variable), unit='us',
                               direction='lower', base=[], new=[], verdict=verdict, cost=worse,
                               floor=floor, floor_variable=floor_variable)
    lat = comp('gnu-impi2021', 'latency_8B', verdicts.MACHINE_CHANGED, moved, 'floor_latency_8B')
    bw = comp('gnu-impi2021', 'bw_1048576B', verdicts.MPI_REGRESSED, held, 'floor_bw_1048576B')
    alone = comp('gnu-mpich4', 'bw_1048576B', verdicts.MPI_REGRESSED, held, 'floor_bw_1048576B')
    faster = stats.Outcome(stats.BETTER, -0.5, -0.6, -0.4, 0.05, 'sessions')
    own_moved = comp('gnu-openmpi5', 'latency_1024B', verdicts.MPI_REGRESSED, faster,
                     'floor_latency_1024B')
    verdicts.machine_notes([lat, bw, alone, own_moved])
    assert bw.verdict == verdicts.MPI_REGRESSED and alone.verdict == verdicts.MPI_REGRESSED
    assert bw.note == ('its own floor held, but the machine changed in these launches: '
                       'floor_latency_8B +306% [+232%, +395%] worse-positive')
    assert alone.note == '' and lat.note == '' and own_moved.note == ''


def test_noise_alone_never_reads_regressed():
    """Launch noise with regimes (the state of the machine differs per launch by 20 %):
    no clean comparison reads regressed, floored or not."""
    found = Counter()
    for seed in range(150):
        found[floored(launches(8, seed, regime_cv=0.2),
                      launches(8, seed + 1000, regime_cv=0.2)).verdict] += 1
        found[verdict(noisy(8, 1.0, 0.2, seed=seed), noisy(8, 1.0, 0.2, seed=seed + 1000))
              .verdict] += 1
    assert set(found) <= {verdicts.UNCHANGED, verdicts.CANNOT_TELL, verdicts.MACHINE_CHANGED}, found
    assert found[verdicts.UNCHANGED] > 0


def test_few_launches_cannot_tell_and_say_how_many_would():
    comp = verdict(noisy(4, 1.0, 0.15, seed=5), noisy(4, 1.25, 0.15, seed=6))
    assert comp.verdict == verdicts.CANNOT_TELL
    assert comp.launches_needed > 4 and f'about {comp.launches_needed} launches' in comp.note
    comp = verdict([1, 1.1, 1.2], [1.5, 1.6, 1.7])     # a rank test cannot decide 3 a side
    assert comp.verdict == verdicts.CANNOT_TELL and comp.launches_needed >= 4
    comp = verdict([1, 1.1], [2, 2.1, 2.2])
    assert comp.verdict == verdicts.CANNOT_TELL and 'need 3 each' in comp.note


def test_more_launches_shrink_what_is_detectable():
    few = verdict(noisy(5, 1.0, 0.05, seed=1), noisy(5, 1.0, 0.05, seed=2))
    many = verdict(noisy(40, 1.0, 0.05, seed=1), noisy(40, 1.0, 0.05, seed=2))
    assert many.cost.detectable < few.cost.detectable
    assert many.cost.detectable > many.cost.threshold > 0


def test_sessions_are_the_unit_when_the_baseline_has_them():
    """Each session has its own machine state (+/- 15 %); a new session in a state the baseline
    has seen is not a regression, although its launches all lie above the baseline's median."""
    states = [1.0, 1.15, 0.87, 1.1, 0.95]
    base = [s for i, st in enumerate(states)
            for s in samples(noisy(6, st, 0.01, seed=i), session=f'b{i}')]
    new = samples(noisy(6, 1.16, 0.01, seed=99), session='new')
    comp, = gate.compare({KEY: base}, {KEY: new})
    assert comp.cost.level == 'sessions' and comp.verdict != verdicts.REGRESSED
    assert comp.cost.threshold > np.log(1.05)
    one, = gate.compare({KEY: [s for s in base if s.session == 'b0']}, {KEY: new})
    assert one.cost.level == 'launches' and one.verdict == verdicts.REGRESSED


def test_a_floor_missing_on_one_side_judges_the_value():
    bv, bf = launches(8, 1)
    nv, _ = launches(8, 2)
    comp, = gate.compare({KEY: samples(bv), FLOOR: samples(bf, FLOOR)}, {KEY: samples(nv)})
    assert comp.floor is None and 'judged on the value' in comp.note
    assert comp.verdict in (verdicts.UNCHANGED, verdicts.CANNOT_TELL)


def test_value_and_floor_pair_by_launch_not_by_position():
    values = samples([1.0, 2.0, 3.0])
    floors = list(reversed(samples([0.1, 0.2, 0.3], FLOOR)))
    assert [(v.value, f.value) for v, f in gate.pair(values, floors)] == [
        (1.0, 0.1), (2.0, 0.2), (3.0, 0.3)]


def test_floor_variables_are_judged_with_their_variable_not_alone():
    bv, bf = launches(8, 1)
    nv, nf = launches(8, 2)
    comps = gate.compare({KEY: samples(bv), FLOOR: samples(bf, FLOOR)},
                         {KEY: samples(nv), FLOOR: samples(nf, FLOOR)})
    assert [c.variable for c in comps] == ['latency_8B']
    record = comps[0].as_dict()
    assert record['floor']['outcome'] in (stats.SAME, stats.UNKNOWN)
    assert record['judged'].startswith('MPI cost') and record['detectable'] > 0


@pytest.mark.parametrize('said,fail_on_machine,code', [
    ([verdicts.MPI_REGRESSED, verdicts.UNCHANGED], False, 1),
    ([verdicts.BOTH], False, 1),
    ([verdicts.REGRESSED, verdicts.CANNOT_TELL], False, 1),
    ([verdicts.MACHINE_CHANGED, verdicts.UNCHANGED], False, 0),
    ([verdicts.MACHINE_CHANGED, verdicts.UNCHANGED], True, 1),
    ([verdicts.CANNOT_TELL, verdicts.NO_BASELINE], False, 3),
    ([verdicts.UNCHANGED, verdicts.CANNOT_TELL, verdicts.IMPROVED], False, 0),
])
def test_exit_codes(said, fail_on_machine, code):
    comps = [gate.Comparison(key=KEY, unit='us', direction='lower', base=[], new=[], verdict=v)
             for v in said]
    assert compare.exit_code(comps, fail_on_machine) == code


def test_verdict_rule_table():
    def out(kind, change=0.0):      # a change with a +/- 0.05 interval (log, worse up)
        return stats.Outcome(kind, change, change - 0.05, change + 0.05, 0.1, 'launches')
    W, B, S, U = out(stats.WORSE, 0.3), out(stats.BETTER, -0.2), out(stats.SAME), out(stats.UNKNOWN)
    FW, FB = out(stats.WORSE, 0.1), out(stats.BETTER, -0.1)         # the floor moved by 0.1
    assert verdicts.verdict(W, S) == verdicts.MPI_REGRESSED == verdicts.verdict(W, U)
    # an undecided floor whose estimate moved by 0.5 bounds the cost's 0.25-0.35: not MPI's
    assert verdicts.verdict(W, out(stats.UNKNOWN, -0.5)) == verdicts.CANNOT_TELL
    # 0.25 beyond 0.2
    assert verdicts.verdict(W, out(stats.UNKNOWN, 0.2)) == verdicts.MPI_REGRESSED
    assert verdicts.verdict(W, FW) == verdicts.BOTH
    assert verdicts.verdict(W, FB) == verdicts.MPI_REGRESSED
    # 0.25 within 0.5
    assert verdicts.verdict(W, out(stats.WORSE, 0.5)) == verdicts.MACHINE_CHANGED
    assert verdicts.verdict(S, FW) == verdicts.MACHINE_CHANGED == verdicts.verdict(S, FB)
    # 0 within 0.1; 0.12 beyond 0.1
    assert verdicts.verdict(U, FW) == verdicts.MACHINE_CHANGED == verdicts.verdict(U, FB)
    assert verdicts.verdict(out(stats.UNKNOWN, 0.17), FW) == verdicts.CANNOT_TELL
    assert verdicts.verdict(U, U) == verdicts.CANNOT_TELL
    assert verdicts.verdict(S, S) == verdicts.UNCHANGED == verdicts.verdict(S, U)
    assert verdicts.verdict(B, S) == verdicts.IMPROVED
    assert verdicts.verdict(W, None) == verdicts.REGRESSED
    assert verdicts.verdict(U, None) == verdicts.CANNOT_TELL
    # a floor that is an MPI figure (the datatypes' contiguous send): its move is never
    # "machine changed", and a cost beyond a worse one is MPI's alone, not "both"
    for cost, floor in ((S, FW), (S, FB), (U, FW), (W, out(stats.WORSE, 0.5))):
        assert verdicts.verdict(cost, floor, mpi_floor=True) == verdicts.CANNOT_TELL
    assert verdicts.verdict(W, FW, mpi_floor=True) == verdicts.MPI_REGRESSED
    for cost, floor in ((W, S), (S, S), (B, S), (U, U), (W, None)):
        assert verdicts.verdict(cost, floor, True) == verdicts.verdict(cost, floor)


def test_a_moved_mpi_floor_reads_cannot_tell_and_says_why():
    """The datatypes' floor moved (CMA off made the contiguous send 2.9x faster, measured
    2026-11-28): the gate cannot tell the MPI's move from the machine's there, says so, and
    names no machine change for the other variables of those launches."""
    test = 'DerivedDatatypes %lang=c %element=double %mode=vector'
    r_inf, contig = (('s', 'p', 'gnu-openmpi4', test, v) for v in ('r_inf', 'r_inf_contig'))
    t0 = r_inf[:4] + ('t0',)
    base = {r_inf: samples(noisy(8, 1000, 0.02, 1), r_inf, 'MB/s'),
            contig: samples(noisy(8, 2000, 0.02, 2), contig, 'MB/s'),
            t0: samples(noisy(8, 5.0, 0.02, 3), t0)}
    new = {r_inf: samples(noisy(8, 1300, 0.02, 4), r_inf, 'MB/s'),
           contig: samples(noisy(8, 5800, 0.02, 5), contig, 'MB/s'),
           t0: samples(noisy(8, 5.0, 0.2, 6), t0)}
    # over the floor (the slope fitted on a baseline of unrelated noise leaves it undecided)
    by_variable = {c.variable: c for c in gate.compare(base, new, gate.Settings(
        adjust=stats.RATIO))}
    comp = by_variable['r_inf']
    assert comp.floor.outcome == stats.BETTER and comp.cost.outcome == stats.WORSE
    assert comp.verdict == verdicts.CANNOT_TELL, verdicts.describe(comp)
    assert {c.variable: c.verdict for c in gate.compare(base, new)}['r_inf'] == verdicts.CANNOT_TELL
    assert comp.note.startswith('its floor r_inf_contig is the contiguous send')
    assert "the MPI's or the machine's" in comp.note and 'would decide' not in comp.note
    verdicts.machine_notes(list(by_variable.values()))
    assert 'machine changed' not in by_variable['t0'].note


WAIT = KEY[:4] + (experiments.CPU_WAIT,)


@pytest.mark.parametrize('base_wait,new_wait,want', [
    (0.002, 0.45, verdicts.MACHINE_CHANGED),    # busy loops on the cores: not MPI's
    (None, 0.45, verdicts.MACHINE_CHANGED),     # a baseline from before the figure: none then
    (0.002, 0.004, verdicts.MPI_REGRESSED),     # quiet both times: MPI's
    (0.40, 0.45, verdicts.MPI_REGRESSED),       # contended both times: comparable, MPI's
    (0.002, None, verdicts.MPI_REGRESSED)])     # no figure now: the floors' rule alone
def test_launches_contended_for_their_cpus_are_never_an_mpi_regression(base_wait, new_wait,
                                                                        want):
    """MPICH 4's 1 MiB bandwidth fell 43-52 % beside busy loops while its floor fell 7-32 %
    (docs/floors.md): its own cost grew with no software change. Launches whose ranks waited
    for a CPU beyond the baseline's say the machine changed, and why; the wait is never a
    variable of its own."""
    (bv, bf), (nv, nf) = launches(8, 1), launches(8, 2, mpi=1.6)

    def side(values, floors, wait, session):
        out = {KEY: samples(values, session=session), FLOOR: samples(floors, FLOOR,
                                                                      session=session)}
        if wait is not None:
            out[WAIT] = samples([wait] * len(values), WAIT, '', session=session)
        return out

    comps = gate.compare(side(bv, bf, base_wait, 'b'), side(nv, nf, new_wait, 'n'))
    comp, = comps
    assert comp.verdict == want, verdicts.describe(comp)
    assert ('waited for a CPU' in comp.note) == (want == verdicts.MACHINE_CHANGED)
    if want == verdicts.MACHINE_CHANGED:
        assert 'MPI not judged (without it: MPI regressed)' in comp.note
    for check in ('PingPong', 'ParkbenchComms', 'DerivedDatatypes'):
        assert experiments.CPU_WAIT in experiments.gated_variables(check)
    assert experiments.CPU_WAIT not in experiments.gated_variables('Stencil')


def test_contended_launches_read_machine_changed_whatever_the_rule_said():
    """As a floor that moved: a contended session is a different machine, decided (exit 0,
    1 with --fail-on-machine-change), whether MPI's own cost read unchanged or cannot tell."""
    (bv, bf), (nv, nf) = launches(8, 1), launches(8, 2)
    base = {KEY: samples(bv, session='b'), FLOOR: samples(bf, FLOOR, session='b'),
            WAIT: samples([0.004] * 8, WAIT, '', session='b')}
    new = {KEY: samples(nv, session='n'), FLOOR: samples(nf, FLOOR, session='n'),
           WAIT: samples([0.33] * 8, WAIT, '', session='n')}
    comp, = gate.compare(base, new)
    assert comp.verdict == verdicts.MACHINE_CHANGED and 'without it: ' in comp.note
    assert compare.exit_code([comp], False) == 0 and compare.exit_code([comp], True) == 1


def test_a_worse_ratio_of_two_mpi_figures_of_one_job_is_mpis():
    """The datatypes' slowdown (contiguous r_inf over the mode's, one job, the same ranks) has
    no floor, but a slower machine moves both its figures: worse reads "MPI regressed"; a
    raw figure without a floor still reads "regressed"."""
    test = 'DerivedDatatypes %lang=c %element=double %mode=pack'
    slowdown, t0 = (('s', 'p', 'gnu-openmpi4', test, v) for v in ('slowdown', 't0'))
    comps = {c.variable: c for c in gate.compare(
        {slowdown: samples(noisy(8, 5.5, 0.02, 1), slowdown, 'x'),
         t0: samples(noisy(8, 0.16, 0.02, 2), t0)},
        {slowdown: samples(noisy(8, 11.0, 0.02, 3), slowdown, 'x'),
         t0: samples(noisy(8, 0.32, 0.02, 4), t0)})}
    assert comps['slowdown'].verdict == verdicts.MPI_REGRESSED and comps['slowdown'].note
    assert comps['t0'].verdict == verdicts.REGRESSED          # no floor on either side
    assert experiments.is_own_ratio('DerivedDatatypes', 'slowdown')
    assert not experiments.is_own_ratio('PingPong', 'latency_8B')


def test_no_baseline_decides_nothing():
    other = KEY[:4] + ('latency_1024B',)
    comps = gate.compare({KEY: samples([1, 1, 1])}, {other: samples([1, 1, 1], other)})
    assert [c.verdict for c in comps] == [verdicts.NO_BASELINE]


def test_another_binding_is_not_compared_and_what_changed_is_named():
    comps = gate.compare({KEY: samples([1, 1.1, 1.2], mpi_version='4.1.4')},
                         {KEY: samples([3, 3.1, 3.2], binding='none', mpi_version='5.0.6')})
    assert comps[0].verdict == verdicts.NOT_COMPARABLE and 'binding core -> none' in comps[0].note
    assert comps[0].provenance_changes['mpi_version'] == ('4.1.4', '5.0.6')


def test_nodes_count_as_a_change_only_where_hosts_differ_and_both_sides_know_them():
    known = samples([1, 1], host='login', nodelist='cc-n1,cc-n2')
    moved = samples([1, 1], host='cc-n3', nodelist='cc-n3,cc-n4')
    unknown = samples([1, 1], host='cc-n3', nodelist='')
    assert gate.provenance_changes(known, moved)['nodelist'] == ('cc-n1,cc-n2', 'cc-n3,cc-n4')
    assert 'nodelist' not in gate.provenance_changes(known, unknown)
    assert 'nodelist' not in gate.provenance_changes(
        known, samples([1, 1], host='login', nodelist='cc-n3,cc-n4'))


@pytest.mark.parametrize('reported, nodes', [
    (['cc-n1', 'cc-n2'], ['cc-n1', 'cc-n2']), (['None'], []), ([None], []), ([], []),
    (None, [])])
def test_job_nodes_drop_the_placeholder_of_a_job_that_ended_between_polls(reported, nodes):
    assert store.job_nodes({'job_nodelist': reported}) == nodes


def test_old_rule_benjamini_hochberg_is_monotone_and_bounded():
    adj = bench_gate.bh_adjust([0.01, 0.04, 0.03, 0.5])
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
    assert bw[1] <= -(1 - 1 / (1 + policy.floor)) and bw[2] is None
    assert references.problem(tmp_path / 'sys.yaml') is None
    assert (tmp_path / 'sys.yaml.prev').read_text().startswith('Other:')
    assert '+PingPong:' in written['diff']
    record = baselinefile.load(tmp_path / 'sys.baseline.json')
    assert sorted(len(v) for v in record.samples().values()) == [6, 6]


def test_baseline_references_mpis_own_cost_not_the_raw_figure_nor_the_floor(tmp_path):
    """A key variable with a floor is referenced through its own cost (a perf variable of the
    same launches), bounded at least own_floor above its median; its raw figure and the
    floor get no $ref; a key variable whose own cost was not recorded (an older session)
    keeps its raw reference."""
    own = KEY[:4] + ('own_latency_8B',)
    bw, bw_floor = KEY[:4] + ('bw_1048576B',), KEY[:4] + ('floor_bw_1048576B',)
    keys = {KEY: noisy(6, 0.5), FLOOR: noisy(6, 0.2), own: noisy(6, 2.5),
            bw: noisy(6, 9000), bw_floor: noisy(6, 20000), WAIT: [0.0] * 5 + [0.002]}
    sess = [session('aaaaaaaa-1', keys)]
    policy = baseline.Policy(min_samples=5)
    chosen = baseline.compute(sess, 'sys', policy, warn=print)
    assert {v.variable for v in chosen} == {'latency_8B', 'floor_latency_8B', 'own_latency_8B',
                                            'bw_1048576B', 'floor_bw_1048576B', 'cpu_wait'}
    # a quiet node's CPU wait is 0: kept as measured, for the gate, with no bound
    wait, = [v for v in chosen if v.variable == experiments.CPU_WAIT]
    assert (wait.median, wait.tolerance, len(wait.samples)) == (0.0, 0.0, 6)
    baseline.write(tmp_path, 'sys', sess, chosen, policy)
    level = yaml.safe_load((tmp_path / 'sys.yaml').read_text())['PingPong']['sys:part'][
        'gnu-mpich4']['c']
    assert set(level) == {'own_latency_8B', 'bw_1048576B'}
    value, lower, upper, unit = level['own_latency_8B']
    assert value == pytest.approx(np.median(keys[own]), rel=1e-4) and unit == 'us'
    assert lower is None and upper >= policy.own_floor > policy.floor
    assert experiments.direction('PingPong', 'own_bw_1048576B') == experiments.LOWER_IS_BETTER
    assert experiments.own_cost_of('PingPong', 'own_bw_1048576B') == (
        'bw_1048576B', 'floor_bw_1048576B')
    assert experiments.own_cost_of('PingPong', 'latency_8B') is None


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
    with pytest.raises(baselinefile.BaselineError, match='sys.baseline.json: not a commcheck base'):
        baselinefile.load(path)


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


def test_a_change_point_is_kept_by_the_gates_rule_on_the_windows_around_it():
    """A shift the gate calls worse is a change point, with the gate's interval; a noisy
    stretch of the same size, which the gate cannot tell from the series' own spread, is not."""
    def series_of(medians, spread, seed=0):
        return [session(f's{i:02d}', {KEY: noisy(4, m, spread, seed=seed + i)}, t0=i)
                for i, m in enumerate(medians)]
    shifted = series_of([0.5] * 12 + [0.56] * 12, 0.005)          # +12 %, 0.5 % noise
    _, (cp,) = trend.history(shifted)
    assert cp.session == 's12' and cp.worse and cp.judged.outcome == stats.WORSE
    low, high = cp.interval
    assert low > math.expm1(cp.judged.threshold) and low < cp.change < high
    wobbly = [0.5 * math.exp(d) for d in np.random.default_rng(3).normal(0, 0.12, 24)]
    assert trend.history(series_of(wobbly, 0.005))[1] == []   # 12 % session to session


def test_the_series_spread_is_not_inflated_by_a_step_or_a_drift():
    rng = np.random.default_rng(5)
    noise = rng.normal(0, 0.03, 200)
    steady = trend.spread(noise)
    assert 0.025 < steady < 0.035
    assert trend.spread(noise + np.r_[np.zeros(100), np.full(100, 0.4)]) == pytest.approx(
        steady, rel=0.1)
    assert trend.spread(noise + np.linspace(0, 0.5, 200)) == pytest.approx(steady, rel=0.15)


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


# ---- commcheck bench gate: its rules and bookkeeping, on synthetic sessions -----------------

def bench_session(index, kind=bench_gate.CLEAN, seed=0, machine=1.0, mpi=None, n=6):
    """A session as the gate benchmark records it: per stack, launches of the three key variables
    and their floors; ``mpi`` = {stack: factor} makes that stack's MPI slower."""
    rng = np.random.default_rng(seed)
    launches = {}
    for stack in ('mpich', 'openmpi'):
        pool = []
        for _ in range(n):
            state = machine * np.exp(rng.normal(0, 0.05))
            slow = (mpi or {}).get(stack, 1.0) * np.exp(rng.normal(0, 0.02))
            f8, f1k, fbw = 0.1 * state, 0.15 * state, 20000 / state
            pool.append({'latency_8B': 3 * f8 * slow, 'latency_1024B': 3 * f1k * slow,
                         'bw_1048576B': fbw / 3 / slow, 'floor_latency_8B': f8,
                         'floor_latency_1024B': f1k, 'floor_bw_1048576B': fbw})
        launches[stack] = pool
    return {'index': index, 'kind': kind, 'started': 0.0, 'ended': 0.0,
            'degraded_stacks': sorted(mpi or {}), 'launches': launches}


def test_bench_power_scales_mpi_figures_and_leaves_floors_as_measured():
    sess = bench_session(0)
    plain, slow = bench_gate.as_samples(sess, 6), bench_gate.as_samples(sess, 6, 1.25)
    for key, samples_ in plain.items():
        ratio = [s.value / p.value for s, p in zip(slow[key], samples_)]
        want = (1.0 if experiments.floor_variable(key[4]) else
                1 / 1.25 if key[4].startswith('bw') else 1.25)
        assert ratio == pytest.approx([want] * 6)


def test_bench_stencil_launches_are_the_stencil_checks_time_against_its_floor():
    sess = bench_session(0)
    for pool in sess['launches'].values():
        for launch in pool:
            launch.update({'time': 0.05, 'floor_time': 0.049})
    plain, slow = bench_gate.as_samples(sess, 6), bench_gate.as_samples(sess, 6, 1.25)
    keys = {k for k in plain if k[3] == bench_gate.STENCIL_TEST}
    assert {k[4] for k in keys} == {'time', 'floor_time'}
    for key in keys:
        want = 1.0 if key[4] == 'floor_time' else 1.25
        assert [s.value / p.value for s, p in zip(slow[key], plain[key])] == \
            pytest.approx([want] * 6)
        assert plain[key][0].unit == 's'
    comps = gate.compare(plain, bench_gate.as_samples(bench_session(1), 6) | {
        k: v for k, v in slow.items() if k in keys})
    stencil, = [c for c in comps if c.key.test == bench_gate.STENCIL_TEST and
                c.key.environ == next(iter(sess['launches']))]
    assert stencil.variable == 'time' and stencil.floor_variable == 'floor_time'


def test_bench_schedule_starts_with_the_baseline_and_spreads_the_rest():
    kinds = bench_gate.schedule(24, 4, 4)
    assert kinds[:3] == [bench_gate.CLEAN] * 3 and len(kinds) == 32
    assert kinds.count(bench_gate.SLOWED) == 4 == kinds.count(bench_gate.DEGRADED)
    assert kinds[-1] == bench_gate.CLEAN or kinds[-2] == bench_gate.CLEAN


def test_bench_rules_on_synthetic_sessions():
    """Clean sessions in different machine states: the new rule raises no alarm where the
    median-moved peer does; a slower machine is never a software regression; a 2x slower MPI
    on one stack reads MPI regressed there and nothing on the other."""
    sessions = [bench_session(i, seed=i, machine=m) for i, m in enumerate((1, 1.1, 0.9, 1.3))]
    sessions.append(bench_session(4, bench_gate.SLOWED, seed=4, machine=2.0))
    sessions.append(bench_session(5, bench_gate.DEGRADED, seed=5, mpi={'openmpi': 2.0}))
    ev = bench_gate.evaluate(sessions, 6)
    clean, = ev[bench_gate.CLEAN]
    assert not clean['slope']['fail'] and not clean['ratio']['fail'] and clean['peer 10%']['fail']
    slowed, = ev[bench_gate.SLOWED]
    assert not slowed['slope']['fail'] and slowed['old']['fail']
    # The baseline's own sessions spread by 30 %: a floor 1.8x slower is within what it saw.
    assert not set(slowed['slope']['verdicts'].values()) & set(verdicts.SOFTWARE_REGRESSED)
    degraded, = ev[bench_gate.DEGRADED]
    said = degraded['slope']['verdicts']
    assert all(v == verdicts.MPI_REGRESSED for k, v in said.items() if k.startswith('openmpi'))
    assert not any(v in verdicts.SOFTWARE_REGRESSED for k, v in said.items()
                   if k.startswith('mpich'))
    assert len(ev['power'][0.2]) == 1
    # launches until decided: the same sessions, judged at 6 launches a side (one look)
    seq = gate_sequential.evaluate(sessions, 6)
    assert not seq[bench_gate.CLEAN][0]['fail'] and not seq[bench_gate.SLOWED][0]['fail']
    assert seq[bench_gate.DEGRADED][0]['fail'] and seq[0.2][0]['launches'] == 6


def test_bench_rejudges_recorded_launches_and_refuses_a_record_it_cannot_read(tmp_path, capsys):
    sessions = [bench_session(i, seed=i, machine=m) for i, m in enumerate((1, 1.1, 0.9, 1.3))]
    sessions.append(bench_session(4, bench_gate.DEGRADED, seed=5, mpi={'openmpi': 2.0}))
    record = tmp_path / 'gate.json'
    record.write_text(json.dumps({'binding': 'core', 'sessions': sessions}))
    assert cli.main(['bench', 'gate', '--rejudge', str(record)]) == 0
    out = capsys.readouterr().out
    assert 'degraded MPI sessions' in out and 're-judging' in out
    assert 'launches until decided' in out and 'floor_bw_1048576B GB/s' in out
    assert not list(tmp_path.glob('*.json'))[1:]          # nothing written beside the record
    broken = [dict(s, launches={'mpich': [{'latency_8B': -1.0}]}) for s in sessions]
    for bad in ({'binding': 'core', 'sessions': broken}, {'binding': 'core', 'sessions': []},
                {'binding': 'core', 'sessions': [{'index': 0, 'kind': 'clean'}]},
                {'binding': 'core', 'sessions': [dict(sessions[0], launches={'m': {'a': 1}})]},
                ['not', 'a', 'record'], 'text'):
        record.write_text(json.dumps(bad) if bad != 'text' else '{"sessions": [')
        assert cli.main(['bench', 'gate', '--rejudge', str(record)]) == 2, bad
        err = capsys.readouterr().err
        assert 'not a `commcheck bench gate --json` record' in err and len(err.splitlines()) == 1


def test_repeated_launches_are_interleaved_in_time():
    from commcheck.cli.run import interleaved
    assert interleaved(['-n', 'PingPong', '--repeat', '8'])[-2:] == ['--exec-order', 'random']
    assert interleaved(['--repeat=8', '--exec-order', 'name']) == [
        '--repeat=8', '--exec-order', 'name']
    assert interleaved(['-n', 'PingPong']) == ['-n', 'PingPong']


@pytest.mark.parametrize('n_base,n_new,level', [(160, 8, 0.9999), (3, 3, 0.95), (24, 7, 0.999)])
def test_the_bootstrap_interval_is_scipys_percentile_bootstrap(n_base, n_new, level):
    from scipy import stats as scipy_stats
    rng = np.random.default_rng(n_base)
    base, new = rng.lognormal(0, 0.3, n_base), rng.lognormal(0.1, 0.3, n_new)
    settings = gate.Settings()
    ref = scipy_stats.bootstrap((new, base), lambda a, b, axis=-1: np.median(a, axis=axis)
                          - np.median(b, axis=axis), vectorized=True, paired=False,
                          n_resamples=settings.n_boot, method='percentile',
                          confidence_level=level, rng=np.random.default_rng(settings.seed))
    low, high = stats.boot_interval(list(base), list(new), level, settings.n_boot,
                                    settings.seed)
    assert low == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert high == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert low < high
