"""Simultaneous exchange between two ranks with mpi4py (Parkbench COMMS2 of seed 003): both
ranks send at once, so the link is used in both directions; the exchange is timed per size."""

import sys

import ccpayload as payload
from ccargs import parse_sweep
from ccrun import Run, SweepKernel, ValidationError, main

USAGE = """\
Usage: comms2.py [options]   (exactly 2 ranks; mpi4py)
Both ranks send to each other at once (full duplex), two rounds per iteration;
iteration time per message size.
  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,
                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)
  --iters N       timed iterations per size (default 1000)
  --warmup N      untimed iterations per size before timing (default 100)
  --batches B     the timed iterations in B consecutive batches, each timed;
                  times are the median of the batch means (default 10, at most N)
  --path P        buffer: NumPy arrays through Irecv/Send/Wait (the buffer interface);
                  pickle: bytearray objects through isend/recv/wait (pickled)
                  (default buffer)
  --inject-error  self-test: rank 0 sends a stale message (an earlier stamp) in the
                  middle of the first size's timed loop; validation must fail there
                  (exit 3)
  --help          print this text
"""


def seq(it: int, rnd: int) -> int:
    """Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1; two rounds each."""
    return 2 * it + rnd + 4294967296


def check(buf, size, sender, it, rnd, whole=False):
    if len(buf) != size:
        raise ValidationError(f'size {size}, iteration {it}, round {rnd}: got {len(buf)} bytes')
    j, got, want = payload.mismatch(buf, size, sender, seq(it, rnd), whole)
    if j < size:
        warm = ' (warm-up)' if it < 0 else ''
        raise ValidationError(f'size {size}, iteration {it}{warm}, round {rnd}, byte {j}: '
                              f'got {got}, expected {want}')


def buffer_step(run, size, sbuf, rbuf, stale):
    """One iteration: two rounds of Irecv, Send, Wait on NumPy buffers (4 messages)."""
    MPI, comm, rank = run.MPI, run.comm, run.rank
    peer = 1 - rank
    smv, rmv = memoryview(sbuf)[:size], memoryview(rbuf)[:size]
    send, recv = [sbuf[:size], MPI.BYTE], [rbuf[:size], MPI.BYTE]

    def step(it):
        for rnd in (0, 1):
            if rank == 1 or it != stale or rnd:
                payload.stamp(smv, size, payload.stamp_of(size, rank, seq(it, rnd)))
            req = comm.Irecv(recv, peer, rnd)
            comm.Send(send, peer, rnd)
            req.Wait()
            if not payload.ends_ok(rmv, size, payload.stamp_of(size, peer, seq(it, rnd))):
                check(rmv, size, peer, it, rnd)
    return step, lambda: rmv


def pickle_step(run, size, sbuf, stale):
    """One iteration: two rounds of isend, recv, wait of a pickled bytearray (4 messages).
    (isend pickles at once, so the next stamp cannot reach the message in flight.)"""
    comm, rank = run.comm, run.rank
    peer = 1 - rank
    message, got = bytearray(sbuf[:size].tobytes()), [b'']

    def step(it):
        for rnd in (0, 1):
            if rank == 1 or it != stale or rnd:
                payload.stamp(message, size, payload.stamp_of(size, rank, seq(it, rnd)))
            req = comm.isend(message, dest=peer, tag=rnd)
            got[0] = comm.recv(source=peer, tag=rnd)
            req.wait()
            if len(got[0]) != size or not payload.ends_ok(
                    got[0], size, payload.stamp_of(size, peer, seq(it, rnd))):
                check(got[0], size, peer, it, rnd)
    return step, lambda: got[0]


def check_last(buf, size, sender, it):
    """The whole payload of the last exchange's second round."""
    check(buf, size, sender, it, 1, whole=True)


KERNEL = SweepKernel(name='comms2', buffer_step=buffer_step, pickle_step=pickle_step,
                     check_last=check_last, messages=2, time='exchange', message='msg',
                     per_time=4)


def comms2(run: Run) -> None:
    sw = parse_sweep(sys.argv[1:], 'comms2', USAGE, run.size)
    api = ('Irecv/Send/Wait of NumPy arrays' if sw.path == 'buffer'
           else 'isend/recv/wait of pickled bytearrays')
    explanation = (f'# comms2 (Python, mpi4py {api}): one iteration = 2 rounds on both ranks at '
                   f'once = 4 messages; per size MPI barrier, {sw.warmup} untimed iterations, '
                   f'then {sw.iters} iterations in {sw.batches} batches timed with MPI.Wtime; '
                   f'exchange_us = median of the batch means, exchange_mean_us = elapsed/iters, '
                   f'msg_us = exchange_us/4 (Parkbench COMMS2), bw_MBps = size/msg_us (10^6 '
                   f"B/s); RESULT first_exchange_us = the run's first iteration alone; validated "
                   f'= received messages checked (iteration stamp in first/last 8 bytes of each, '
                   f'whole payload of the last)')
    run.sweep(sw, KERNEL, explanation)


if __name__ == '__main__':
    main(comms2)
