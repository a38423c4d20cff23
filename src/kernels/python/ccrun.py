"""One run of a Python kernel under mpi4py: the exit codes and records of ../README.md, and the
timing loop and the run over every size of the sweeps (warm-up, batches, the run's first
message).

Exit codes: bad input 2 (one ERROR line from rank 0, every rank finalizes); a validation
failure 3 and a failed MPI call 4 (the rank that saw it prints one ERROR line and calls
MPI_Abort, as the C kernels do)."""

from __future__ import annotations

import dataclasses
import os
import sys
import time
import traceback
from collections.abc import Callable

import ccpayload as payload
import numpy as np
from ccargs import Help, UsageError

EXIT_USAGE, EXIT_VALIDATION, EXIT_FAILURE = 2, 3, 4


class ValidationError(Exception):
    """Received data differ from what was sent."""


@dataclasses.dataclass(frozen=True)
class SweepKernel:
    """What a two-rank sweep (pingpong.py, comms2.py) gives :meth:`Run.sweep`."""

    #: The META record's ``kernel=``.
    name: str
    #: ``(run, size, sbuf, rbuf, stale) -> (step(it), last())`` for ``--path buffer``: one step
    #: on NumPy buffers, and the last message received; rank 0 sends timed iteration ``stale``
    #: without its new stamp (``--inject-error``; None: never).
    buffer_step: Callable
    #: ``(run, size, sbuf, stale) -> (step(it), last())`` for ``--path pickle``.
    pickle_step: Callable
    #: ``(buf, size, sender, it)``: the whole payload of iteration ``it``'s last message.
    check_last: Callable
    #: Messages a rank receives (and checks) per step.
    messages: int
    #: The DATA and RESULT name of the step's time (``rtt``, ``exchange``).
    time: str
    #: The DATA name of one message's time (``oneway``, ``msg``).
    message: str
    #: Messages in the step's time.
    per_time: int


class Run:
    """The MPI side of a run: rank, records, sums, timing."""

    def __init__(self, mpi):
        self.MPI = mpi
        self.comm = mpi.COMM_WORLD
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        self.first_s = None    # the run's first step, timed alone

    def print(self, line: str) -> None:
        """Free text or a record, from rank 0 only, flushed at once."""
        if self.rank == 0:
            sys.stdout.write(line + '\n')
            sys.stdout.flush()

    def meta(self, kernel: str, params: str) -> None:
        import mpi4py
        text = self.MPI.Get_library_version().replace('\0', '').strip()
        lib = ''.join(' ' if c in '"\t' else c for c in text.splitlines()[0]).strip()
        self.print(f'META kernel={kernel} lang=python ranks={self.size} mpi="{lib}" '
                   f'mpi4py={mpi4py.__version__} {params}')

    def sum(self, value: int) -> int:
        return self.comm.reduce(value, op=self.MPI.SUM, root=0)

    def _first(self, step, it) -> float:
        t0 = self.MPI.Wtime()
        step(it)
        self.first_s = self.MPI.Wtime() - t0
        return self.first_s

    def time(self, step, sweep) -> tuple[float, float]:
        """Times ``step(it)`` for one size: barrier, ``sweep.warmup`` untimed iterations
        (-warmup..-1), then ``sweep.iters`` timed ones (0..iters-1) in consecutive batches.
        Returns (median of the batch means, overall mean), microseconds per iteration."""
        wtime = self.MPI.Wtime
        self.comm.Barrier()
        start = -sweep.warmup
        if self.first_s is None and start < 0:
            self._first(step, start)
            start += 1
        for it in range(start, 0):
            step(it)
        means, total = [], 0.0
        for b in range(sweep.batches):
            lo, hi = batch_start(b, sweep), batch_start(b + 1, sweep)
            extra, first = 0.0, lo
            if self.first_s is None:      # no warm-up: the first step is a timed one
                extra, first = self._first(step, lo), lo + 1
            t0 = wtime()
            for it in range(first, hi):
                step(it)
            elapsed = wtime() - t0 + extra
            means.append(elapsed / (hi - lo) * 1e6)
            total += elapsed
        means.sort()
        n = len(means)
        median = means[n // 2] if n % 2 else (means[n // 2 - 1] + means[n // 2]) / 2
        return median, total / sweep.iters * 1e6

    def sweep(self, sw, kernel: SweepKernel, explanation: str) -> None:
        """Every size of a two-rank sweep in the given order (as cc_sweep_run): the buffers,
        the explanation and META record; per size the timing (:meth:`time`), the whole payload
        of the last message checked and the DATA record; then the RESULT record of the run's
        first step and ``PASS validated=N`` (the messages both ranks checked)."""
        rank, peer = self.rank, 1 - self.rank
        largest = max(sw.sizes)
        sbuf, rbuf = np.zeros(largest, dtype=np.uint8), np.zeros(largest, dtype=np.uint8)
        self.print(explanation)
        self.meta(kernel.name, f'path={sw.path} iters={sw.iters} warmup={sw.warmup} '
                               f'sizes={len(sw.sizes)} batches={sw.batches}')
        validated, name = 0, kernel.time
        for k, size in enumerate(sw.sizes):
            stale = sw.iters // 2 if sw.inject and k == 0 else None
            sbuf[:size] = payload.body(size, rank)
            rbuf[:size] = 0
            if sw.path == 'buffer':
                step, last = kernel.buffer_step(self, size, sbuf, rbuf, stale)
            else:
                step, last = kernel.pickle_step(self, size, sbuf, stale)
            median, mean = self.time(step, sw)
            kernel.check_last(last(), size, peer, sw.iters - 1)
            validated += kernel.messages * (sw.warmup + sw.iters)
            one = median / kernel.per_time
            self.print(f'DATA size={size} iters={sw.iters} batches={sw.batches} '
                       f'{name}_us={median:.4f} {kernel.message}_us={one:.4f} '
                       f'bw_MBps={size / one:.4f} {name}_mean_us={mean:.4f}')
        first = self.first_s * 1e6
        self.print(f'RESULT first_size={sw.sizes[0]} first_{name}_us={first:.4f} '
                   f'first_message_us={first / kernel.per_time:.4f}')
        total = self.sum(validated)
        self.print(f'PASS validated={total}')


def batch_start(b: int, sweep) -> int:
    """The first timed iteration of batch b (as cc_util.h: sizes differ by at most one)."""
    return (b * sweep.iters + sweep.batches - 1) // sweep.batches


def _abort(mpi, code: int, line: str) -> None:
    os.write(2, (line + '\n').encode())
    time.sleep(0.3)     # let the launcher relay the line before it kills the job
    mpi.COMM_WORLD.Abort(code)


def main(body) -> None:
    """Runs ``body(run)`` on every rank and ends the process with the convention's exit code."""
    from mpi4py import MPI
    run = Run(MPI)
    try:
        body(run)
    except Help as text:
        run.print(str(text).rstrip('\n'))
    except UsageError as err:
        if run.rank == 0:
            sys.stderr.write(f'ERROR: {err}\n')
            sys.stderr.flush()
        sys.exit(EXIT_USAGE)    # mpi4py finalizes MPI at exit
    except ValidationError as err:
        _abort(MPI, EXIT_VALIDATION, f'ERROR: validation failed on rank {run.rank}: {err}')
    except MPI.Exception as err:
        _abort(MPI, EXIT_FAILURE, f'ERROR: MPI call failed on rank {run.rank}: '
                                  f'{err.Get_error_string()}')
    except MemoryError:
        _abort(MPI, EXIT_USAGE, f'ERROR: rank {run.rank} cannot allocate its buffers')
    except Exception as err:    # a bug: say where, then end every rank
        where = traceback.extract_tb(err.__traceback__)[-1]
        _abort(MPI, EXIT_FAILURE, f'ERROR: rank {run.rank} failed: {err!r} at '
                                  f'{os.path.basename(where.filename)}:{where.lineno}')
