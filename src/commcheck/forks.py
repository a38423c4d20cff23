"""Work spread over the machine's cores in forked processes, or done here where it cannot be.

:func:`fork_map` is ``[fn(x) for x in items]``, in the same order, computed by forked workers:
they inherit ``fn`` and ``items`` (closures, open state, unpicklable objects alike), and only
indices go to them and results come back. Where forking is unavailable or fails, or a worker
dies, the same list is computed in this process. Not reentrant: one map at a time.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

#: (fn, items) of the map under way: what a forked worker reads.
_WORK: tuple = ()


def _one(i: int):
    fn, items = _WORK
    return fn(items[i])


def cores(limit: int | None = None) -> int:
    """The cores this process may use (its affinity mask), at most ``limit``."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(n, limit) if limit else n)


def fork_map(fn: Callable, items: Sequence, workers: int | None = None,
             on_fallback: Callable[[BaseException], None] | None = None) -> list:
    """``[fn(x) for x in items]``, in ``workers`` forked processes (default: the cores)."""
    global _WORK
    workers = min(len(items), workers or cores())
    if workers < 2 or 'fork' not in multiprocessing.get_all_start_methods():
        return [fn(x) for x in items]
    _WORK = (fn, items)
    try:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context('fork')) as pool:
            return list(pool.map(_one, range(len(items))))
    except (OSError, RuntimeError, BrokenProcessPool) as err:
        if on_fallback:
            on_fallback(err)
    finally:
        _WORK = ()
    return [fn(x) for x in items]
