package cc;

import mpi.MPI;
import mpi.MPIException;

/** Ping-pong between two ranks (seeds 000/004 and 001; Parkbench COMMS1 of seed 003): rank 0
 *  sends a message, rank 1 sends one back; the round trip is timed per size. */
public final class PingPong {
    static final String USAGE =
        "Usage: PingPong [options]   (exactly 2 ranks; MPJ Express, mpiJava 1.2 API)\n"
        + "Rank 0 sends a message, rank 1 answers; round-trip time per message size.\n"
        + "  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,\n"
        + "                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)\n"
        + "  --iters N       timed round trips per size (default 1000)\n"
        + "  --warmup N      untimed round trips per size before timing (default 100)\n"
        + "  --batches B     the timed round trips in B consecutive batches, each timed;\n"
        + "                  times are the median of the batch means (default 10, at most N)\n"
        + "  --inject-error  self-test: rank 0 sends a stale message (last iteration's stamp)\n"
        + "                  in the middle of the first size's timed loop; validation must\n"
        + "                  fail there (exit 3)\n"
        + "  --help          print this text\n";

    private PingPong() {
    }

    public static void main(String[] argv) {
        Kernel.main(argv, PingPong::run);
    }

    /** Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1 (as pingpong.c). */
    static long seq(long it) {
        return it + 2147483648L;
    }

    static void check(Kernel k, byte[] buf, int size, int sender, long it, boolean whole) {
        int j = Payload.mismatch(buf, size, sender, seq(it), whole);
        if (j < size)
            k.validationFailed(Payload.describe(buf, size, sender, seq(it), j,
                    "iteration " + it + (it < 0 ? " (warm-up)" : "")));
    }

    static void run(Kernel k) throws MPIException {
        Sweep sw = new Sweep(k, "pingpong", USAGE);
        int rank = k.rank, peer = 1 - rank;
        SweepKernel kernel = new SweepKernel("pingpong", "rtt", "oneway", 2, 1,
            (size, stale, sbuf, rbuf) -> it -> {
                if (rank == 1 || it != stale)
                    Payload.stamp(sbuf, size, rank, seq(it));
                if (rank == 0) {
                    MPI.COMM_WORLD.Send(sbuf, 0, size, MPI.BYTE, peer, 0);
                    MPI.COMM_WORLD.Recv(rbuf, 0, size, MPI.BYTE, peer, 0);
                } else {
                    MPI.COMM_WORLD.Recv(rbuf, 0, size, MPI.BYTE, peer, 0);
                    MPI.COMM_WORLD.Send(sbuf, 0, size, MPI.BYTE, peer, 0);
                }
                check(k, rbuf, size, peer, it, false);
            },
            (buf, size, sender, it) -> check(k, buf, size, sender, it, true));
        sw.run(k, kernel, "# pingpong (Java): per size MPI barrier, " + sw.warmup
                + " untimed round trips, then " + sw.iters + " round trips in " + sw.batches
                + " batches timed with System.nanoTime;"
                + " rtt_us = median of the batch means, rtt_mean_us = elapsed/iters, oneway_us ="
                + " rtt_us/2, bw_MBps = size/oneway_us (10^6 B/s); RESULT first_rtt_us = the run's"
                + " first round trip alone; validated = received messages checked (iteration stamp"
                + " in first/last 8 bytes of each, whole payload of the last)");
    }
}
