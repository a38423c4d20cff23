"""Ping-pong between two ranks with mpi4py (seeds 000/004 and 001; Parkbench COMMS1 of seed
003): rank 0 sends a message, rank 1 sends one back; the round trip is timed per size."""

import sys

import ccpayload as payload
from ccargs import parse_sweep
from ccrun import Run, SweepKernel, ValidationError, main

USAGE = """\
Usage: pingpong.py [options]   (exactly 2 ranks; mpi4py)
Rank 0 sends a message, rank 1 answers; round-trip time per message size.
  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,
                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)
  --iters N       timed round trips per size (default 1000)
  --warmup N      untimed round trips per size before timing (default 100)
  --batches B     the timed round trips in B consecutive batches, each timed;
                  times are the median of the batch means (default 10, at most N)
  --path P        buffer: NumPy arrays through Send/Recv (the buffer interface);
                  pickle: bytearray objects through send/recv (pickled) (default buffer)
  --inject-error  self-test: rank 0 sends a stale message (last iteration's stamp)
                  in the middle of the first size's timed loop; validation must
                  fail there (exit 3)
  --help          print this text
"""


def seq(it: int) -> int:
    """Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1 (as pingpong.c)."""
    return it + 2147483648


def check(buf, size, sender, it, whole=False):
    if len(buf) != size:
        raise ValidationError(f'size {size}, iteration {it}: got {len(buf)} bytes')
    j, got, want = payload.mismatch(buf, size, sender, seq(it), whole)
    if j < size:
        warm = ' (warm-up)' if it < 0 else ''
        raise ValidationError(f'size {size}, iteration {it}{warm}, byte {j}: got {got}, '
                              f'expected {want}')


def buffer_step(run, size, sbuf, rbuf, stale):
    """One round trip of NumPy buffers through Send/Recv."""
    MPI, comm, rank = run.MPI, run.comm, run.rank
    peer = 1 - rank
    smv, rmv = memoryview(sbuf)[:size], memoryview(rbuf)[:size]
    send, recv = [sbuf[:size], MPI.BYTE], [rbuf[:size], MPI.BYTE]

    def step(it):
        if rank == 1 or it != stale:
            payload.stamp(smv, size, payload.stamp_of(size, rank, seq(it)))
        if rank == 0:
            comm.Send(send, peer, 0)
            comm.Recv(recv, peer, 0)
        else:
            comm.Recv(recv, peer, 0)
            comm.Send(send, peer, 0)
        if not payload.ends_ok(rmv, size, payload.stamp_of(size, peer, seq(it))):
            check(rmv, size, peer, it)
    return step, lambda: rmv


def pickle_step(run, size, sbuf, stale):
    """One round trip of a bytearray through the pickling send/recv."""
    comm, rank = run.comm, run.rank
    peer = 1 - rank
    message, got = bytearray(sbuf[:size].tobytes()), [b'']

    def step(it):
        if rank == 1 or it != stale:
            payload.stamp(message, size, payload.stamp_of(size, rank, seq(it)))
        if rank == 0:
            comm.send(message, dest=peer, tag=0)
            got[0] = comm.recv(source=peer, tag=0)
        else:
            got[0] = comm.recv(source=peer, tag=0)
            comm.send(message, dest=peer, tag=0)
        if len(got[0]) != size or not payload.ends_ok(got[0], size,
                                                      payload.stamp_of(size, peer, seq(it))):
            check(got[0], size, peer, it)
    return step, lambda: got[0]


def check_last(buf, size, sender, it):
    """The whole payload of the last round trip."""
    check(buf, size, sender, it, whole=True)


KERNEL = SweepKernel(name='pingpong', buffer_step=buffer_step, pickle_step=pickle_step,
                     check_last=check_last, messages=1, time='rtt', message='oneway',
                     per_time=2)


def pingpong(run: Run) -> None:
    sw = parse_sweep(sys.argv[1:], 'pingpong', USAGE, run.size)
    api = 'Send/Recv of NumPy arrays' if sw.path == 'buffer' else 'send/recv of pickled bytearrays'
    explanation = (f'# pingpong (Python, mpi4py {api}): per size MPI barrier, {sw.warmup} '
                   f'untimed round trips, then {sw.iters} round trips in {sw.batches} batches '
                   f'timed with MPI.Wtime; rtt_us = median of the batch means, rtt_mean_us = '
                   f'elapsed/iters, oneway_us = rtt_us/2, bw_MBps = size/oneway_us (10^6 B/s); '
                   f"RESULT first_rtt_us = the run's first round trip alone; validated = "
                   f'received messages checked (iteration stamp in first/last 8 bytes of each, '
                   f'whole payload of the last)')
    run.sweep(sw, KERNEL, explanation)


if __name__ == '__main__':
    main(pingpong)
