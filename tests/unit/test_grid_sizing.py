"""The stencil's grid, sized from the last-level cache (commcheck.experiments.grid_n) so the
stencil and its STREAM bound run from one level of the hierarchy at every rank count, and the
cache it is read from (commcheck.rfm.caches, ReFrame's processor topology)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from commcheck import experiments
from commcheck.experiments import (
    GRID_IN_CACHE,
    GRID_MULTIPLE,
    GRID_OVER_CACHE,
    MAX_GRID,
    MAX_STEPS,
    UPDATES_PER_RUN,
)
from commcheck.rfm.caches import last_level_cache

MiB = 1 << 20


def grid_bytes(n: int) -> int:
    return 16 * (n + 2) ** 2


@settings(derandomize=True, max_examples=300)
@given(st.integers(min_value=256 * 1024, max_value=4096 * MiB))
def test_the_grid_runs_from_memory_or_inside_the_cache_never_at_its_edge(llc):
    n = experiments.grid_n(llc)
    assert n % GRID_MULTIPLE == 0
    if experiments.grid_from_memory(llc):       # the smallest that takes 4x the cache
        assert grid_bytes(n) >= GRID_OVER_CACHE * llc
        assert n == GRID_MULTIPLE or grid_bytes(n - GRID_MULTIPLE) < GRID_OVER_CACHE * llc
        assert grid_bytes(n - GRID_MULTIPLE) <= MAX_GRID
    else:                            # the largest inside a quarter of it, and MAX_GRID
        room = min(GRID_IN_CACHE * llc, MAX_GRID)
        assert grid_bytes(n) <= room < grid_bytes(n + GRID_MULTIPLE)


def test_a_32_mib_l3_gets_138_mb_of_grids_and_a_260_mib_one_a_grid_in_the_cache():
    assert experiments.grid_n(32 * MiB) == 2940
    assert grid_bytes(2940) == pytest.approx(138.5e6, rel=1e-3)
    assert experiments.grid_from_memory(32 * MiB) and not experiments.grid_from_memory(33 * MiB)
    assert experiments.grid_n(260 * MiB) == 2040
    assert grid_bytes(experiments.grid_n(2304 * MiB)) <= MAX_GRID      # 2 x 1152 MiB, Genoa-X


def test_no_cache_size_keeps_the_fallback_grid_and_its_20_steps():
    assert experiments.grid_n(None) == experiments.grid_n(0) == experiments.FALLBACK_N
    assert experiments.grid_steps(experiments.FALLBACK_N) == 20


@pytest.mark.parametrize('n', [60, 480, 720, 1920, 2940, 8280, 11640])
def test_a_run_does_about_the_same_work_whatever_the_grid_within_2_and_20_steps(n):
    steps = experiments.grid_steps(n)
    assert 2 <= steps <= MAX_STEPS
    if 2 < steps < MAX_STEPS:
        assert abs(n * n * steps - UPDATES_PER_RUN) <= n * n / 2
    elif steps == MAX_STEPS:
        assert n * n * steps <= UPDATES_PER_RUN


def topology(*caches):
    return {'caches': [dict(zip(('type', 'size', 'cpusets'), c)) for c in caches]}


def test_the_last_level_is_the_highest_level_over_all_its_instances():
    one = topology(('L1', 32768, ['0x1', '0x2']), ('L3', 32 * MiB, ['0x3']),
                   ('L2', MiB, ['0x1', '0x2']))
    assert last_level_cache(one) == 32 * MiB
    two_ccds = topology(('L3', 32 * MiB, ['0x0f', '0xf0']), ('L2', MiB, ['0x1']))
    assert last_level_cache(two_ccds) == 64 * MiB
    assert last_level_cache(topology(('L2', 2 * MiB, ['0x1']))) == 2 * MiB


@pytest.mark.parametrize('described', [None, {}, {'caches': []}, topology(('L3', 0, ['0x1'])),
                                       topology(('LLC', 1 << 20, ['0x1']))])
def test_a_topology_without_cache_sizes_gives_none(described):
    assert last_level_cache(described) is None
