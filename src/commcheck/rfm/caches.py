"""The last-level cache that memory-bound checks size their problems from, and the grid they
size from it (the stencil and the pointer study: two (n+2)^2 arrays of doubles)."""

from __future__ import annotations

import functools
import re

from reframe.core.builtins import run_after, variable
from reframe.utility import cpuinfo

from commcheck import experiments
from commcheck.rfm.plugin import Plugin

LEVEL = re.compile(r'L(\d+)')


def last_level_cache(topology: dict | None) -> int | None:
    """Bytes of the highest cache level over all its instances, from a processor topology as
    ReFrame describes one (``caches``: type, size, cpusets), or None if it lists none."""
    caches = [(int(level[1]), c) for c in (topology or {}).get('caches', ())
              if c.get('size') and (level := LEVEL.fullmatch(str(c.get('type', ''))))]
    if not caches:
        return None
    _, top = max(caches, key=lambda found: found[0])
    return int(top['size']) * max(len(top.get('cpusets') or ()), 1)


@functools.cache
def host_last_level_cache() -> int | None:
    """The last-level cache of the host this runs on (ReFrame's detection, read from sysfs)."""
    return last_level_cache(cpuinfo.cpuinfo().get('topology'))


def partition_last_level_cache(partition) -> tuple[int | None, str]:
    """A partition's last-level cache and where it was read: the processor topology that its
    configuration declares (or ReFrame detected), else this host's, which is the partition's
    nodes when they are this machine (local and emulated partitions)."""
    declared = last_level_cache(getattr(partition.processor, 'topology', None))
    if declared:
        return declared, f'the processor topology of {partition.fullname}'
    return host_last_level_cache(), 'the host ReFrame runs on'


def sized_from(llc: int | None, where: str) -> str:
    """What :func:`commcheck.experiments.grid_n` sized the grid from, for the report."""
    if not llc:
        return 'no last-level cache found: the fallback grid'
    cache = f'{llc / (1 << 20):.0f} MiB last-level cache of {where}'
    if experiments.grid_from_memory(llc):
        return f'{experiments.GRID_OVER_CACHE}x the {cache}, from memory'
    return (f'at most {experiments.GRID_IN_CACHE:.0%} of the {cache}: in the cache, as a grid '
            f'from memory would take {experiments.GRID_OVER_CACHE * llc / 1e9:.1f} GB')


class CacheSizedGrid(Plugin):
    """A grid sized from the node's last-level cache unless given (:func:`commcheck.experiments.
    grid_n`): its two arrays take four times the cache (or, for a cache over 32 MiB, at most a
    quarter of it and 128 MiB), so the check runs from one level of the hierarchy at every rank
    count, never from the cache's edge, where one rank's share of the grid fits and the whole
    does not, and a few seconds of a neighbour's cache use move the time.

    Precondition: the check runs a kernel's ``--n`` and ``--steps`` over two (n+2)^2 arrays of
    doubles. Checks that must agree on the grid (the stencil's variants and their sequential
    fixture) size it the same way on the same partition and compare the two in their sanity."""

    #: Grid points per dimension (``--n``); None: from the last-level cache.
    #:
    #: :type: :class:`int` or None
    #: :default: the experiment's (None; 2940 on a 32 MiB L3: 138 MB of grids)
    n = variable(int, type(None))

    #: Time steps per timed run (``--steps``); None: as many as make a run of 1920^2 x 20
    #: updates (2-20).
    #:
    #: :type: :class:`int` or None
    #: :default: the experiment's (None; 9 on a 32 MiB L3)
    steps = variable(int, type(None))

    #: How the grid was chosen (the cache it was sized from, or "given").
    #:
    #: :type: :class:`str`  :default: set at setup
    grid_source = variable(str, value='')

    @run_after('setup')
    def size_grid(self):
        if self.n is None:
            llc, where = partition_last_level_cache(self.current_partition)
            self.n = experiments.grid_n(llc)
            self.grid_source = sized_from(llc, where)
        else:
            self.grid_source = 'n given'
        if self.steps is None:
            self.steps = experiments.grid_steps(self.n)
