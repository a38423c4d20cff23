"""One run of a Python kernel under mpi4py: the exit codes and records of ../README.md, and the
timing loop of the sweeps (warm-up, batches, the run's first message).

Exit codes: bad input 2 (one ERROR line from rank 0, every rank finalizes); a validation
failure 3 and a failed MPI call 4 (the rank that saw it prints one ERROR line and calls
MPI_Abort, as the C kernels do)."""

from __future__ import annotations

import os
import sys
import time
import traceback

from ccargs import Help, UsageError

EXIT_USAGE, EXIT_VALIDATION, EXIT_FAILURE = 2, 3, 4


class ValidationError(Exception):
    """Received data differ from what was sent."""


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
