package cc;

import mpi.MPI;
import mpi.MPIException;
import mpi.Request;

/** Simultaneous exchange between two ranks (Parkbench COMMS2 of seed 003): both ranks send at
 *  once, so the link is used in both directions; the exchange is timed per size. */
public final class Comms2 {
    static final String USAGE =
        "Usage: Comms2 [options]   (exactly 2 ranks; MPJ Express, mpiJava 1.2 API)\n"
        + "Both ranks send to each other at once (full duplex), two rounds per iteration;\n"
        + "iteration time per message size.\n"
        + "  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,\n"
        + "                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)\n"
        + "  --iters N       timed iterations per size (default 1000)\n"
        + "  --warmup N      untimed iterations per size before timing (default 100)\n"
        + "  --batches B     the timed iterations in B consecutive batches, each timed;\n"
        + "                  times are the median of the batch means (default 10, at most N)\n"
        + "  --inject-error  self-test: rank 0 sends a stale message (an earlier stamp) in the\n"
        + "                  middle of the first size's timed loop; validation must fail there\n"
        + "                  (exit 3)\n"
        + "  --help          print this text\n";

    private Comms2() {
    }

    public static void main(String[] argv) {
        Kernel.main(argv, Comms2::run);
    }

    /** Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1; two rounds each. */
    static long seq(long it, int round) {
        return 2 * it + round + 4294967296L;
    }

    static void check(Kernel k, byte[] buf, int size, int sender, long it, int round,
                      boolean whole) {
        int j = Payload.mismatch(buf, size, sender, seq(it, round), whole);
        if (j < size)
            k.validationFailed(Payload.describe(buf, size, sender, seq(it, round), j, "iteration "
                    + it + (it < 0 ? " (warm-up)" : "") + ", round " + round));
    }

    static void run(Kernel k) throws MPIException {
        Sweep sw = new Sweep(k, "comms2", USAGE);
        int rank = k.rank, peer = 1 - rank;
        SweepKernel kernel = new SweepKernel("comms2", "exchange", "msg", 4, 2,
            (size, stale, sbuf, rbuf) -> it -> {
                for (int round = 0; round < 2; round++) {
                    if (rank == 1 || it != stale || round != 0)
                        Payload.stamp(sbuf, size, rank, seq(it, round));
                    Request req = MPI.COMM_WORLD.Irecv(rbuf, 0, size, MPI.BYTE, peer, round);
                    MPI.COMM_WORLD.Send(sbuf, 0, size, MPI.BYTE, peer, round);
                    req.Wait();
                    check(k, rbuf, size, peer, it, round, false);
                }
            },
            (buf, size, sender, it) -> check(k, buf, size, sender, it, 1, true));
        sw.run(k, kernel, "# comms2 (Java): one iteration = 2 rounds of (Irecv, Send, Wait) on"
                + " both ranks at once = 4 messages; per size MPI barrier, " + sw.warmup
                + " untimed iterations, then " + sw.iters + " iterations in " + sw.batches
                + " batches timed with System.nanoTime; exchange_us = median of the batch means,"
                + " exchange_mean_us = elapsed/iters, msg_us = exchange_us/4 (Parkbench COMMS2),"
                + " bw_MBps = size/msg_us (10^6 B/s); RESULT first_exchange_us = the run's first"
                + " iteration alone; validated = received messages checked (iteration stamp in"
                + " first/last 8 bytes of each, whole payload of the last)");
    }
}
