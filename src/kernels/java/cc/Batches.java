package cc;

import java.util.Arrays;

/**
 * The timed iterations of one size split into consecutive batches, each timed: the reported
 * time is the median of the batch means (robust to a noisy neighbour), the overall mean is
 * kept beside it. Batch j holds iterations [first(j), first(j + 1)): timed iteration i goes to
 * batch i * count / iters, as in cc_util.h, so sizes differ by at most one.
 */
final class Batches {
    final long iters;
    final int count;
    private final long[] ns;

    Batches(long iters, int count) {
        this.iters = iters;
        this.count = count;
        ns = new long[count];
    }

    long first(int j) {
        return (j * iters + count - 1) / count;
    }

    void add(int j, long nanos) {
        ns[j] += nanos;
    }

    /** Mean time of one iteration of batch j, microseconds. */
    double meanUs(int j) {
        return ns[j] / 1e3 / (first(j + 1) - first(j));
    }

    double medianUs() {
        double[] means = new double[count];
        for (int j = 0; j < count; j++)
            means[j] = meanUs(j);
        Arrays.sort(means);
        return count % 2 == 1 ? means[count / 2] : (means[count / 2 - 1] + means[count / 2]) / 2;
    }

    double overallUs() {
        return Arrays.stream(ns).sum() / 1e3 / iters;
    }
}
