"""The seeds' findings, judged per stack with the spread of the launches (report.findings)."""

from __future__ import annotations

import types

import pytest

from commcheck.report import findings
from commcheck.report.findings import Spread, combine, ratio, within
from commcheck.report.model import Measurements
from commcheck.results.store import Sample


def sample(environ: str, test: str, variable: str, value: float) -> Sample:
    return Sample(session='s', time=0.0, system='local', partition='default', environ=environ,
                  test=test, variable=variable, value=value, unit='MB/s', result='pass')


def context(rows) -> types.SimpleNamespace:
    """What the judges read: the measurements of (environ, test, variable, launches)."""
    samples = [sample(e, t, v, x) for e, t, v, launches in rows for x in launches]
    return types.SimpleNamespace(values=Measurements(samples), warn=pytest.fail)


def comms(environ: str, comms1: list[float], comms2: list[float]) -> list[tuple]:
    return [(environ, 'ParkbenchComms %benchmark=comms1 %lang=c', 'r_inf', comms1),
            (environ, 'ParkbenchComms %benchmark=comms2 %lang=c', 'r_inf', comms2)]


def test_a_finding_that_fails_on_one_stack_holds_on_the_others_and_says_which():
    """The run the issue saw: COMMS2 >= 1.2x COMMS1 on 13 of 14 stacks, 0.82 on MPJ Express:
    not "does not hold", but "holds on some stacks", naming the one that fails."""
    rows = comms('gnu-mpich4', [1000, 1010, 990], [1500, 1520, 1490])
    rows += comms('gnu-openmpi4', [2000, 2050], [4000, 4100])
    rows += comms('java-mpj', [100, 101], [82, 83])
    outcome = findings.comms2_gain(context(rows))
    assert outcome.status == findings.MIXED
    assert outcome.holds == ('gnu-mpich4 c', 'gnu-openmpi4 c')
    assert outcome.fails == ('java-mpj c',) and outcome.told == 3


def test_a_spread_covering_the_threshold_cannot_tell():
    rows = comms('gnu-mpich4', [1000, 1000, 1000], [1100, 1250, 1300])   # 1.1 .. 1.3 vs 1.2
    outcome = findings.comms2_gain(context(rows))
    assert outcome.status == findings.CANNOT_TELL
    assert outcome.undecided == ('gnu-mpich4 c',)
    assert 'covers the threshold' in outcome.detail and '3 launches' in outcome.detail


def test_one_launch_is_judged_and_says_so():
    outcome = findings.comms2_gain(context(comms('gnu-mpich4', [1000], [1500])))
    assert outcome.status == findings.HOLDS and '(one launch)' in outcome.detail


def test_all_stacks_failing_does_not_hold():
    rows = comms('a', [1000, 1001], [1000, 1001]) + comms('b', [10, 11], [9, 9.5])
    outcome = findings.comms2_gain(context(rows))
    assert outcome.status == findings.DOES_NOT_HOLD and outcome.fails == ('a c', 'b c')


def test_nothing_measured_cannot_tell_with_the_reason():
    outcome = findings.comms2_gain(context([]))
    assert outcome.status == findings.CANNOT_TELL and outcome.told == 0
    assert 'no Parkbench' in outcome.detail


def test_stride_slowdown_is_judged_against_the_published_factor_per_stack():
    test = 'DerivedDatatypes %element=byte %lang=c %mode=stride'
    rows = [('fast', test, 'slowdown', [14.0, 15.0, 16.0]),
            ('slow', test, 'slowdown', [150.0, 160.0, 170.0]),
            ('edge', test, 'slowdown', [8.0, 10.0, 12.0])]          # 14.7/1.5 = 9.8 inside
    outcome = findings._stride_slowdown('byte')(context(rows))
    assert outcome.holds == ('fast c',) and outcome.fails == ('slow c',)
    assert outcome.undecided == ('edge c',) and outcome.status == findings.MIXED


def test_cptr_cost_is_judged_on_the_pairs_of_one_launch_where_the_test_ran_them():
    """A machine that slowed between the allocatable and the c_f_pointer tests moves the ratio
    of their reads, not the pairs' ratio measured inside the c_f_pointer launch; a session
    without pairs (an older one) is judged on the two tests' reads, and says so."""
    alloc, cptr = 'FortranPointers %variant=alloc', 'FortranPointers %variant=cptr'
    rows = [('paired', alloc, 'read', [0.10, 0.10]), ('paired', cptr, 'read', [0.20, 0.21]),
            ('paired', cptr, 'read_over_alloc', [1.02, 1.04]),
            ('older', alloc, 'read', [0.10, 0.11]), ('older', cptr, 'read', [0.15, 0.16])]
    outcome = findings.cptr_costs(context(rows))
    assert outcome.fails == ('paired',) and outcome.holds == ('older',)
    assert 'paired runs in one launch' in outcome.detail and 'separate tests' in outcome.detail


def test_spread_arithmetic():
    a, b = Spread(10, 8, 12, 3), Spread(5, 4, 5, 2)
    r = ratio(a, b)
    assert (r.mid, r.lo, r.hi, r.launches) == (2.0, 1.6, 3.0, 2)
    assert ratio(a, None) is None and ratio(a, Spread(0, 0, 0, 1)) is None
    assert within(r, 1.5, 3.0).status == findings.HOLDS
    assert within(r, 1.0, 1.5).status == findings.DOES_NOT_HOLD
    assert within(r, 2.5).status == findings.CANNOT_TELL
    assert findings.spread_of([]) is None
    assert findings.spread_of([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)


def test_combine_keeps_every_stack():
    out = combine({'a': within(Spread(1, 1, 1, 1), 0.5), 'b': within(Spread(1, 1, 1, 1), 2),
                   'c': within(Spread(1, 0, 2, 2), 1)}, 'none')
    assert (out.holds, out.fails, out.undecided) == (('a',), ('b',), ('c',))
    assert out.status == findings.MIXED and out.told == 3
