"""Simultaneous exchange between two ranks with mpi4py (Parkbench COMMS2 of seed 003): both
ranks send at once, so the link is used in both directions; the exchange is timed per size."""

import sys

import ccpayload as payload
import numpy as np
from ccargs import parse_sweep
from ccrun import Run, ValidationError, main

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


def comms2(run: Run) -> None:
    sw = parse_sweep(sys.argv[1:], 'comms2', USAGE, run.size)
    rank, peer = run.rank, 1 - run.rank
    largest = max(sw.sizes)
    sbuf, rbuf = np.zeros(largest, dtype=np.uint8), np.zeros(largest, dtype=np.uint8)
    api = ('Irecv/Send/Wait of NumPy arrays' if sw.path == 'buffer'
           else 'isend/recv/wait of pickled bytearrays')
    run.print(f'# comms2 (Python, mpi4py {api}): one iteration = 2 rounds on both ranks at once '
              f'= 4 messages; per size MPI barrier, {sw.warmup} untimed iterations, then '
              f'{sw.iters} iterations in {sw.batches} batches timed with MPI.Wtime; exchange_us = '
              f'median of the batch means, exchange_mean_us = elapsed/iters, msg_us = '
              f'exchange_us/4 (Parkbench COMMS2), bw_MBps = size/msg_us (10^6 B/s); RESULT '
              f"first_exchange_us = the run's first iteration alone; validated = received "
              f'messages checked (iteration stamp in first/last 8 bytes of each, whole payload '
              f'of the last)')
    run.meta('comms2', f'path={sw.path} iters={sw.iters} warmup={sw.warmup} '
                       f'sizes={len(sw.sizes)} batches={sw.batches}')
    validated = 0
    for k, size in enumerate(sw.sizes):
        stale = sw.iters // 2 if sw.inject and k == 0 else None
        sbuf[:size] = payload.body(size, rank)
        rbuf[:size] = 0
        if sw.path == 'buffer':
            step, last = buffer_step(run, size, sbuf, rbuf, stale)
        else:
            step, last = pickle_step(run, size, sbuf, stale)
        exchange, mean = run.time(step, sw)
        check(last(), size, peer, sw.iters - 1, 1, whole=True)
        validated += 2 * (sw.warmup + sw.iters)
        msg = exchange / 4
        run.print(f'DATA size={size} iters={sw.iters} batches={sw.batches} '
                  f'exchange_us={exchange:.4f} msg_us={msg:.4f} bw_MBps={size / msg:.4f} '
                  f'exchange_mean_us={mean:.4f}')
    first = run.first_s * 1e6
    run.print(f'RESULT first_size={sw.sizes[0]} first_exchange_us={first:.4f} '
              f'first_message_us={first / 4:.4f}')
    total = run.sum(validated)
    run.print(f'PASS validated={total}')


if __name__ == '__main__':
    main(comms2)
