package cc;

import java.util.Locale;
import mpi.MPI;
import mpi.MPIException;

/**
 * Ping-pong of non-contiguous data (seed 003, commByte / commDouble), as dtype.c: rank 0 sends
 * and receives the echo in the layout of --send-mode, rank 1 receives and echoes in the layout
 * of --recv-mode (see Layout).
 */
public final class Dtype {
    static final String USAGE =
        "Usage: Dtype [options]   (exactly 2 ranks; MPJ Express, mpiJava 1.2 API)\n"
        + "Ping-pong of non-contiguous data: rank 0 sends in the layout of --send-mode and\n"
        + "receives the echo in it, rank 1 receives and echoes in the layout of --recv-mode.\n"
        + "Block b of the user buffer starts at element b*stride and holds blocklen elements.\n"
        + "  --type byte|double   element type (default byte)\n"
        + "  --stride S           elements from block to block (default 64 byte, 8 double)\n"
        + "  --blocklen B         consecutive elements per block, B <= S (default 1)\n"
        + "  --send-mode M        rank 0 layout (default contig)\n"
        + "  --recv-mode M        rank 1 layout (default contig)\n"
        + "      M: contig   elements packed in user memory, sent as count x type\n"
        + "         stride   one Datatype.Vector over the strided buffer\n"
        + "         loop     hand copy to/from a contiguous buffer (copies are timed)\n"
        + "         pack, subarray: C and Fortran only, refused here (exit 2): mpiJava 1.2\n"
        + "                  has no subarray type, and MPJ Express's Pack takes its own\n"
        + "                  mpjbuf buffers, not mpiJava's byte[] signature\n"
        + "  --sizes LIST         useful payload bytes, multiples of element size x B:\n"
        + "                       '8,64' or power-of-two range 'lo:hi' (default 8:65536)\n"
        + "  --iters N            timed round trips per size (default 200)\n"
        + "  --warmup N           untimed round trips before them (default 20)\n"
        + "  --batches B          the timed round trips in B consecutive batches; times are\n"
        + "                       the median of the batch means (default 10, at most N)\n"
        + "  --inject-error       self-test: corrupt one received element so that the\n"
        + "                       validation must fail (exit 3)\n"
        + "  --help               this text\n"
        + "Records: META, one DATA per size, RESULT (first round trip), PASS validated=<elements\n"
        + "checked on both ranks>.\n";

    private final Kernel k;
    private final DtypeOptions o;
    private final boolean isDouble;
    private long firstNs = -1;

    private Dtype(Kernel k) {
        this.k = k;
        o = new DtypeOptions(k);
        isDouble = o.isDouble;
    }

    public static void main(String[] argv) {
        Kernel.main(argv, kernel -> new Dtype(kernel).run());
    }

    private void run() throws MPIException {
        k.print("# dtype (Java): rank 0 times each round trip with System.nanoTime (warm-up"
                + " excluded), the timed ones in " + o.batches + " consecutive batches; rtt_us is"
                + " the median of the batch means, rtt_mean_us the overall mean, oneway_us ="
                + " rtt_us/2,"
                + " bw_MBps = useful bytes / oneway_us; size counts useful bytes only; loop copies"
                + " are inside the timing; RESULT first_rtt_us = the run's first round trip");
        k.meta("dtype", String.format(Locale.ROOT, "type=%s stride=%d blocklen=%d send_mode=%s"
                + " recv_mode=%s iters=%d warmup=%d batches=%d", isDouble ? "double" : "byte",
                o.stride, o.blocklen, Layout.MODES[o.mode[0]], Layout.MODES[o.mode[1]], o.iters,
                o.warmup, o.batches));
        long checked = 0;
        for (int s = 0; s < o.sizes.length; s++)
            checked += runSize(o.sizes[s], s == 0);
        double first = firstNs / 1e3;
        k.print(String.format(Locale.ROOT, "RESULT first_size=%d first_rtt_us=%.3f"
                + " first_message_us=%.3f", o.sizes[0], first, first / 2));
        long total = k.sum(checked);
        k.print("PASS validated=" + total);
    }

    private double value(long size, long iter, int e) {
        long v = size * 31 + iter * 1009 + e;
        return isDouble ? v % 1000003 : v % 251;
    }

    private void expect(Layout l, Object buf, long size, long iter, int e) {
        double got = l.get(buf, l.slotOf(e)), want = value(size, iter, e);
        if (got != want)
            k.validationFailed("size " + size + " iteration " + iter + ": element " + e + " is "
                    + fmt(got) + ", expected " + fmt(want));
    }

    private static String fmt(double v) {
        return v == Math.rint(v) ? Long.toString((long) v) : Double.toString(v);
    }

    private double gap() {
        return isDouble ? -1.0 : 0xff; // values are 0..250 or >= 0: the gap value never occurs
    }

    /** Rank 0's time of one round trip `it` (0-based, warm-up first), nanoseconds. */
    private long roundTrip(Layout l, Object user, Object echo, long size, long it, long last)
            throws MPIException {
        long t = 0;
        if (k.rank == 0) {
            if (it == last) { // untimed: ends stamped per iteration, every element at the end
                for (int e = 0; e < l.count; e++)
                    l.put(user, l.slotOf(e), value(size, it, e));
            } else {
                l.put(user, l.slotOf(0), value(size, it, 0));
                l.put(user, l.slotOf(l.count - 1), value(size, it, l.count - 1));
            }
            long t0 = System.nanoTime();
            l.send(user);
            l.recv(echo);
            t = System.nanoTime() - t0;
        } else {
            l.recv(user);
        }
        expect(l, echo, size, it, 0);
        expect(l, echo, size, it, l.count - 1);
        if (k.rank == 1)
            l.send(user);
        if (firstNs < 0)
            firstNs = t;
        return t;
    }

    /** One size: returns the number of buffer elements this rank checked at the end. */
    private long runSize(long size, boolean first) throws MPIException {
        Layout l = new Layout(k, o.mode[k.rank], isDouble, o.blocklen, o.stride, size);
        Object user = l.buffer(k, l.slots, "the user buffer");
        // Rank 0 receives the echo into its own buffer: an echo that never arrived cannot pass.
        Object echo = k.rank == 0 ? l.buffer(k, l.slots, "the echo buffer") : user;
        for (int s = 0; s < l.slots; s++) {
            l.put(user, s, gap());
            l.put(echo, s, gap());
        }
        if (k.rank == 0)
            for (int e = 0; e < l.count; e++)
                l.put(user, l.slotOf(e), value(size, 0, e));
        long last = o.warmup + o.iters - 1;
        MPI.COMM_WORLD.Barrier();
        for (long it = 0; it < o.warmup; it++)
            roundTrip(l, user, echo, size, it, last);
        Batches b = new Batches(o.iters, o.batches);
        for (int j = 0; j < b.count; j++)
            for (long it = o.warmup + b.first(j); it < o.warmup + b.first(j + 1); it++)
                b.add(j, roundTrip(l, user, echo, size, it, last));
        if (o.inject && first && k.rank == 0) {
            int e = l.count / 2;
            double v = value(size, last, e);
            l.put(echo, l.slotOf(e), isDouble ? v + 1.0 : (v + 1) % 251);
        }
        for (int e = 0; e < l.count; e++)
            expect(l, echo, size, last, e);
        for (int s = 0; s < l.slots; s++)
            if (l.isGap(s) && l.get(echo, s) != gap())
                k.validationFailed("size " + size + ": gap element " + s + " of the "
                        + Layout.MODES[l.mode] + " buffer was written (" + fmt(l.get(echo, s))
                        + ")");
        double rtt = b.medianUs();
        k.print(String.format(Locale.ROOT, "DATA size=%d count=%d iters=%d batches=%d rtt_us=%.3f"
                + " oneway_us=%.3f bw_MBps=%.2f rtt_mean_us=%.3f", size, l.count, o.iters,
                o.batches, rtt, rtt / 2, size / (rtt / 2), b.overallUs()));
        return l.slots;
    }
}
