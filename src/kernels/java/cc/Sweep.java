package cc;

import java.util.Arrays;
import java.util.Locale;
import mpi.MPI;
import mpi.MPIException;

/**
 * The two-rank message sweeps (PingPong, Comms2): their command line, timing loop and the run
 * over every size, as cc_sweep.h, plus batches and the time of the run's first message.
 */
final class Sweep {
    /** One iteration of a sweep: number `it` (negative: warm-up). */
    interface Step {
        void run(long it) throws MPIException;
    }

    final long[] sizes;
    final int max, batches;
    final long iters, warmup;
    final boolean inject;
    /** The run's first step (first iteration of the first size), timed alone; -1 until run. */
    long firstNs = -1;

    Sweep(Kernel k, String kernel, String usage) {
        String sizesText = "1:1048576", batchesText = null, v;
        long iters = 1000, warmup = 100;
        boolean inject = false;
        Args a = new Args(k.args);
        while (a.next()) {
            if (a.is("--help"))
                throw new Kernel.Help(usage);
            else if ((v = a.value("--sizes")) != null)
                sizesText = v;
            else if ((v = a.value("--iters")) != null)
                iters = Args.parseLong("--iters", v, 1, 1000000000);
            else if ((v = a.value("--warmup")) != null)
                warmup = Args.parseLong("--warmup", v, 0, 1000000000);
            else if ((v = a.value("--batches")) != null)
                batchesText = v;
            else if (a.is("--inject-error"))
                inject = true;
            else
                throw a.unknown();
        }
        sizes = Args.parseSizes("--sizes", sizesText);
        long largest = 0;
        for (long s : sizes) {
            if (s > Integer.MAX_VALUE - 8)
                throw k.usage("--sizes: " + s + " bytes do not fit in one Java array (at most "
                        + (Integer.MAX_VALUE - 8) + ")");
            largest = Math.max(largest, s);
        }
        max = (int) largest;
        this.iters = iters;
        this.warmup = warmup;
        this.inject = inject;
        batches = Args.batches(batchesText, iters);
        if (k.size != 2)
            throw k.usage(kernel + " needs exactly 2 ranks, got " + k.size);
    }

    /** Times `step` for one size: MPI barrier, `warmup` untimed iterations, then `iters` timed
     *  ones in consecutive batches. */
    Batches time(Step step) throws MPIException {
        MPI.COMM_WORLD.Barrier();
        for (long it = -warmup; it < 0; it++)
            call(step, it);
        Batches b = new Batches(iters, batches);
        for (int j = 0; j < b.count; j++) {
            long end = b.first(j + 1), t0 = System.nanoTime();
            for (long it = b.first(j); it < end; it++)
                call(step, it);
            b.add(j, System.nanoTime() - t0);
        }
        return b;
    }

    private void call(Step step, long it) throws MPIException {
        if (firstNs >= 0) {
            step.run(it);
            return;
        }
        long t0 = System.nanoTime();
        step.run(it);
        firstNs = System.nanoTime() - t0;
    }

    /** The timed iteration at which --inject-error makes rank 0 send a stale message. */
    private long staleIteration(boolean firstSize) {
        return inject && firstSize ? iters / 2 : Long.MIN_VALUE;
    }

    /** Every size in the given order (as cc_sweep_run): the buffers, the explanation and META
     *  record; per size the timing ({@link #time}), the whole payload of the last message
     *  checked and the DATA record; then the RESULT record of the run's first step and
     *  "PASS validated=N" (the messages both ranks checked). */
    void run(Kernel k, SweepKernel kernel, String explanation) throws MPIException {
        int rank = k.rank, peer = 1 - rank;
        byte[] sbuf = k.bytes(max, "the send buffer");
        byte[] rbuf = k.bytes(max, "the receive buffer");
        k.print(explanation);
        k.meta(kernel.name(), "iters=" + iters + " warmup=" + warmup + " sizes=" + sizes.length
                + " batches=" + batches);
        long validated = 0;
        for (int s = 0; s < sizes.length; s++) {
            int size = (int) sizes[s];
            Payload.fill(sbuf, size, rank);
            Arrays.fill(rbuf, 0, size, (byte) 0);
            Batches b = time(kernel.step().at(size, staleIteration(s == 0), sbuf, rbuf));
            kernel.checkLast().check(rbuf, size, peer, iters - 1);
            validated += kernel.messages() * (warmup + iters);
            double median = b.medianUs(), one = median / kernel.perTime();
            k.print(String.format(Locale.ROOT, "DATA size=%d iters=%d batches=%d %s_us=%.4f "
                    + "%s_us=%.4f bw_MBps=%.4f %s_mean_us=%.4f", size, iters, batches,
                    kernel.time(), median, kernel.message(), one, size / one, kernel.time(),
                    b.overallUs()));
        }
        double first = firstNs / 1e3;
        k.print(String.format(Locale.ROOT, "RESULT first_size=%d first_%s_us=%.4f "
                + "first_message_us=%.4f", sizes[0], kernel.time(), first,
                first / kernel.perTime()));
        long total = k.sum(validated);
        k.print("PASS validated=" + total);
    }
}
