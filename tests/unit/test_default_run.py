"""What the default run measures, from the table of experiments: everything the gate judges,
with as many launches as the full sweep (``--mode full``, the default run before the
oversubscribed rank counts were left out), and nothing left out that is judged.

Computed from commcheck.experiments for nodes of several core counts, never from a list
written here.
"""

from __future__ import annotations

import pytest

from commcheck import experiments
from tests.kernels.test_mutants import STENCIL_MUTANTS, STENCIL_TEST

CORES = (1, 2, 3, 4, 6, 8, 12, 16, 24, 36, 64)
#: Settings that shape only the oversubscribed runs (never judged).
OVERSUBSCRIBED_ONLY = ('oversubscribed_counts', 'oversubscribed_n', 'oversubscribed_steps')


def stencil_runs(mode: str | None, cores: int) -> dict[int, bool]:
    """Rank count -> judged, of the stencil's test cases that run on one node of ``cores``,
    as the check chooses them (limit_ranks, keep_one_oversubscribed_count)."""
    found = experiments.settings(mode, 'Stencil')
    upto, keep = int(found['max_ranks']), int(found['oversubscribed_counts'])
    over = [r for r in experiments.STENCIL_RANKS if cores < r <= upto]
    return {r: r <= cores for r in experiments.STENCIL_RANKS if r <= upto and
            (r <= cores or experiments.oversubscribed_runs(r, over, keep))}


def judged(mode: str | None, check: str, cores: int) -> set[tuple]:
    """(case, key variable) pairs the gate judges in a mode; the case is the stencil's rank
    count, one case for the other checks (their cases do not depend on the mode)."""
    cases = ([r for r, gated in stencil_runs(mode, cores).items() if gated]
             if check == 'Stencil' else [None])
    return {(case, var) for case in cases for var in experiments.gated_variables(check)}


def shaping(mode: str | None, check: str) -> dict:
    """The settings that shape the judged runs: sizes, iterations, repetitions."""
    return {k: str(v) for k, v in experiments.settings(mode, check).items()
            if k not in OVERSUBSCRIBED_ONLY}


@pytest.mark.parametrize('cores', CORES)
def test_the_default_run_judges_every_key_variable_the_full_sweep_judges(cores):
    for exp in experiments.EXPERIMENTS:
        before, now = judged('full', exp.check, cores), judged(None, exp.check, cores)
        assert exp.key_variables and before, exp.check
        assert before <= now, (exp.check, cores, sorted(before - now, key=str))


def test_the_judged_runs_are_the_same_runs_with_as_many_repetitions():
    for exp in experiments.EXPERIMENTS:
        assert shaping(None, exp.check) == shaping('full', exp.check), exp.check
    for mode in experiments.MODES:        # no mode moves a judged setting of the default
        for exp in experiments.EXPERIMENTS:
            settings = getattr(exp, experiments.MODES[mode])
            if mode == 'full':
                assert all(s.split('=')[0] in OVERSUBSCRIBED_ONLY for s in settings), exp.check


@pytest.mark.parametrize('cores', CORES)
def test_only_unjudged_counts_are_left_out_and_one_oversubscribed_count_stays(cores):
    full, default = stencil_runs('full', cores), stencil_runs(None, cores)
    left_out = set(full) - set(default)
    assert not any(full[r] for r in left_out)          # nothing judged is left out
    over = [r for r, gated in default.items() if not gated]
    assert len(over) == (1 if any(not gated for gated in full.values()) else 0)
    assert over == sorted(r for r, gated in full.items() if not gated)[:len(over)]


def test_the_default_run_on_a_two_core_node_leaves_out_9_ranks_only():
    """The machine of the issue: 1 and 2 ranks judged, 4 ranks validated, 9 left out."""
    assert stencil_runs(None, 2) == {1: True, 2: True, 4: False}
    assert stencil_runs('full', 2) == {**stencil_runs(None, 2), 9: False}


def test_every_stencil_mutant_runs_at_the_oversubscribed_count_of_a_two_core_node():
    """The oversubscribed run the default keeps (smallest count on 2 cores, the small grid)
    is a size test_mutants.py kills every stencil mutant at, for every variant it covers."""
    found = experiments.settings(None, 'Stencil')
    ranks = next(r for r, gated in stencil_runs(None, 2).items() if not gated)
    n = experiments.grid_for(ranks, int(found['oversubscribed_n']))
    size = ('--n', str(n), '--steps', str(found['oversubscribed_steps']))
    assert size == STENCIL_TEST
    for mutant in STENCIL_MUTANTS:
        variants = {dict(zip(a, a[1:]))['--variant'] for _, a in mutant.runs}
        for variant in variants:
            assert any(r == ranks and dict(zip(a, a[1:]))['--variant'] == variant and
                       '\0'.join(size) in '\0'.join(a) for r, a in mutant.runs), \
                (mutant.name, mutant.lang, variant)


def test_a_process_grid_divides_the_small_grid():
    for ranks in experiments.STENCIL_RANKS:
        n = experiments.grid_for(ranks, 48)
        root = int(ranks ** 0.5)
        assert n >= 48 and n % (root if root * root == ranks else ranks) == 0
