"""``commcheck upgrade`` without launching anything: the site's upgrade pair (the example's
validates once uncommented), the ReFrame arguments that make the pairs, and bad input as one
ERROR line and exit 2; the stages of pairs until decided, on pairs made here. Real paired
sessions: tests/integration/test_gate_scenario.py."""

import math
import re
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from commcheck import paths
from commcheck.analysis import paired, verdicts
from commcheck.cli import pairing, upgrade
from commcheck.errors import UserError
from commcheck.results.store import Sample
from commcheck.site import sitefile
from tests.conftest import commcheck_cmd

EXAMPLE = paths.CONFIG_DIR / 'sites' / 'example-slurm.yaml'
DECLARATION = re.compile(r'^(\s*)# ((?:- |  |upgrade:).*)$')


def uncommented_upgrade_pair(text: str) -> str:
    """The example site file with its commented upgrade pair (stacks and key) uncommented."""
    out, inside = [], False
    for line in text.splitlines():
        inside = (inside or 'upgrade pair: begin' in line) and 'upgrade pair: end' not in line
        found = DECLARATION.match(line) if inside else None
        out.append(found[1] + found[2] if found else line)
    return '\n'.join(out) + '\n'


def test_the_example_upgrade_pair_validates():
    site = sitefile.parse(uncommented_upgrade_pair(EXAMPLE.read_text()), str(EXAMPLE))
    assert (site.upgrade.old, site.upgrade.new) == ('gnu-openmpi414', 'gnu-openmpi416')
    specs = {s.id: s.mpi.spack_spec for s in site.stacks if s.build == 'spack'}
    assert specs == {'gnu-openmpi414': 'openmpi@4.1.4', 'gnu-openmpi416': 'openmpi@4.1.6'}
    assert sitefile.parse(EXAMPLE.read_text(), str(EXAMPLE)).upgrade is None


@pytest.mark.parametrize('pair,said', [
    ('{old: gnu-openmpi414, new: nope}', "upgrade: new: no stack 'nope'"),
    ('{old: gnu-openmpi414, new: gnu-openmpi414}', 'old and new are the same stack'),
    ('{old: gnu-openmpi414}', "upgrade: missing required key 'new'"),
])
def test_a_bad_upgrade_pair_is_refused(pair, said):
    text = uncommented_upgrade_pair(EXAMPLE.read_text()).replace(
        'upgrade: {old: gnu-openmpi414, new: gnu-openmpi416}', f'upgrade: {pair}')
    with pytest.raises(UserError, match=re.escape(said)):
        sitefile.parse(text, str(EXAMPLE))


def test_the_pairs_are_reframes_repeats_in_random_order():
    args = upgrade.reframe_args('a', 'b', 8, ['-n', 'PingPong'])
    assert args == ['-n', 'PingPong', '-p', '^(a|b)$', '--repeat', '8', '--exec-order',
                    'random']


@pytest.mark.parametrize('given', [['--repeat', '3'], ['-p', 'x'], ['--exec-order=name']])
def test_options_that_break_the_pairs_are_refused(given):
    with pytest.raises(UserError, match='commcheck upgrade sets it'):
        upgrade.reframe_args('a', 'b', 8, given)


@pytest.mark.parametrize('argv,said', [
    (['--old', 'gnu-mpich4'], '--old and --new: name the two stacks'),
    (['--old', 'x', '--new', 'x'], 'are the same stack'),
    (['--old', 'nope', '--new', 'gnu-mpich4'], '--old nope: no such stack'),
    (['--old', 'gnu-mpich4', '--new', 'gnu-openmpi4', '--', '--repeat', '2'],
     '--repeat: commcheck upgrade sets'),
])
def test_bad_input_is_one_error_line(isolated_env, argv, said):
    done = subprocess.run([commcheck_cmd(), 'upgrade', *argv], env=isolated_env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR:') and said in lines[0], lines


# ---- pairs until decided (commcheck.cli.pairing), on pairs made here -------------------------

def _pairs(test, n, seed, slower=1.0, start=0.0, session='s1'):
    """n adjacent pairs of one test case's 8 B launches with their floors, random order."""
    rng, out, t = np.random.default_rng(seed), [], start
    prov = (('binding', 'core'), ('placement', 'same-node'))
    for _ in range(n):
        state = 4.0 if rng.random() < 0.5 else 1.0
        for env in (['old', 'new'] if rng.random() < 0.5 else ['new', 'old']):
            floor = 0.07 * state * math.exp(rng.normal(0, 0.01))
            value = 2 * floor * (slower if env == 'new' else 1.0) * math.exp(rng.normal(0, 0.02))
            t += 1.0
            for variable, v in (('latency_8B', value), ('floor_latency_8B', floor)):
                out.append(Sample(session=session, time=t, system='sys', partition='part',
                                  environ=env, test=test, variable=variable, value=v, unit='us',
                                  result='pass', provenance=prov))
    return out


def test_a_later_stage_names_its_undecided_test_cases_exactly():
    run_ = pairing.Run('a', 'b', paired.Settings(), None, 60, None)
    args = pairing.stage_args(run_, 6, ['-n', 'PingPong', '-S', 'x=1', '--name=Foo', '-nBar',
                                        '--name', 'Baz'], ['PingPong %lang=c'])
    assert args == ['-S', 'x=1', '-n', '^PingPong%lang=c$', '-p', '^(a|b)$', '--repeat', '6',
                    '--exec-order', 'random']
    pattern = re.compile(args[3])          # ReFrame matches display names without spaces
    assert pattern.search('PingPong %lang=c'.replace(' ', ''))
    assert not pattern.search('PingPong %lang=c %x=1'.replace(' ', ''))
    assert pairing.stage_args(run_, 12, ['-n', 'PingPong'], None)[:2] == ['-n', 'PingPong']


def test_a_decided_test_case_stops_and_the_other_gets_its_next_look():
    run_ = pairing.Run('old', 'new', paired.Settings(), None, 60, None)
    slow, same = 'PingPong %lang=c', 'PingPong %lang=f'
    samples = _pairs(slow, 12, 1, slower=1.3) + _pairs(same, 12, 2, start=100)
    pairing.look(run_, samples, {})
    cases = {c.test: c for c in run_.cases.values()}
    assert run_.family == 2 and cases[slow].stopped == pairing.DECIDED
    assert cases[same].stopped == '' and cases[same].looks == [12]
    assert pairing.next_stages(run_) == {6: [same]}           # 12, then 18 (x1.5)
    more = _pairs(same, 6, 3, start=200, session='s2')
    pairing.look(run_, samples + more, {})
    assert cases[same].looks == [12, 18] and cases[same].judgements[0].looks == [12, 18]
    plan = run_.as_dict()
    assert plan['family'] == 2 and {c['test']: c['looks'] for c in plan['cases']} == {
        slow: [12], same: [12, 18]}


def test_the_budget_sets_the_planned_pairs_and_ends_the_pairing():
    run_ = pairing.Run('old', 'new', paired.Settings(), None, 60, 150.0)
    test = 'PingPong %lang=c'
    pairing.look(run_, _pairs(test, 12, 2), {('sys', 'part', test): 10.0})
    case, = run_.cases.values()
    assert case.plan.horizon == 15                      # 150 s at 10 s a pair
    assert case.stopped == '' and pairing.next_stages(run_) == {3: [test]}
    pairing.look(run_, _pairs(test, 15, 2), {})
    assert case.stopped in (pairing.BUDGET, pairing.DECIDED) and case.looks == [12, 15]


def test_a_fixed_count_is_one_look_at_all_of_alpha():
    run_ = pairing.Run('old', 'new', paired.Settings(), 10, None, None)
    pairing.look(run_, _pairs('PingPong %lang=c', 9, 4), {})    # one launch failed: 9 pairs
    case, = run_.cases.values()
    assert case.looks == [9] and case.stopped and case.judgements[0].level == 0.95


@pytest.mark.parametrize('results,code', [
    (['pass', 'pass'], 0), (['pass', 'fail'], 1), (['pass', None], 3), ([None, 'fail'], 1)])
def test_with_a_margin_the_exit_code_is_the_acceptances(results, code):
    judged = [SimpleNamespace(accept=0.05, acceptance=r,
                              verdict={'fail': verdicts.MPI_REGRESSED,
                                       'pass': verdicts.UNCHANGED}.get(r, verdicts.CANNOT_TELL))
              for r in results]
    assert upgrade.exit_code(judged) == code


@pytest.mark.parametrize('argv,said', [
    (['--pairs', '8', '--budget', '10m'], '--pairs 8: a fixed count'),
    (['--accept', '150%'], 'argument --accept: 150.0 must be between 0 and 100 %'),
    (['--budget', 'soon'], "argument --budget: 'soon' is not a duration"),
    (['--session', 'abc', '--max-pairs', '30'], '--session judges stored pairs'),
])
def test_bad_pairing_options_are_one_error_line(isolated_env, argv, said):
    done = subprocess.run([commcheck_cmd(), 'upgrade', '--old', 'gnu-mpich4', '--new',
                           'gnu-openmpi4', *argv], env=isolated_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('ERROR:') and said in lines[0], lines


def test_a_test_case_whose_stage_made_no_new_pair_stops():
    """Its launches failed (or one stack never ran it): no endless stages."""
    run_ = pairing.Run('old', 'new', paired.Settings(), None, 60, None)
    test, other = 'PingPong %lang=c', 'PingPong %lang=f'
    same = _pairs(test, 12, 2)
    alone = [s for s in _pairs(other, 12, 3, start=100) if s.environ == 'old']
    pairing.look(run_, same + alone, {})
    cases = {c.test: c for c in run_.cases.values()}
    assert cases[other].stopped == pairing.STALLED and cases[test].stopped == ''
    pairing.look(run_, same + alone, {})          # the next stage added nothing
    assert cases[test].stopped == pairing.STALLED and not pairing.next_stages(run_)
