/* The two-rank message sweeps (pingpong, comms2; the collectives reuse the options): command
 * line, timing loop and the run over every size, with the hardware floor (cc_floor.h) measured
 * between the MPI batches. The messages' payloads and stamps are in cc_payload.h. */
#ifndef CC_SWEEP_H
#define CC_SWEEP_H

#include "cc_util.h"
#include "cc_floor.h"
#include "cc_payload.h"

/* What the command line asks for (see the programs' --help). */
struct cc_sweep {
    size_t *sizes, max; /* message sizes in bytes, in the given order; the largest */
    int nsizes, inject, batches;
    int floor;          /* --floor: CC_FLOOR_YES, CC_FLOOR_NO or CC_FLOOR_TCP (cc_floor.h) */
    long long iters, warmup;
};

/* Parses the command line; a sweep runs on exactly 2 ranks. */
static inline void cc_sweep_args(int argc, char **argv, const char *kernel, const char *usage,
                                 struct cc_sweep *sw)
{
    const char *sizes_text = "1:1048576", *v;
    long long batches = 0;
    *sw = (struct cc_sweep){.iters = 1000, .warmup = 100, .floor = CC_FLOOR_YES};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0)
            cc_help(usage);
        else if ((v = cc_optval(argc, argv, &i, "--sizes")))
            sizes_text = v;
        else if ((v = cc_optval(argc, argv, &i, "--iters")))
            sw->iters = cc_parse_int("--iters", v, 1, 1000000000);
        else if ((v = cc_optval(argc, argv, &i, "--warmup")))
            sw->warmup = cc_parse_int("--warmup", v, 0, 1000000000);
        else if ((v = cc_optval(argc, argv, &i, "--batches")))
            batches = cc_parse_int("--batches", v, 1, 1000000000);
        else if ((v = cc_optval(argc, argv, &i, "--floor")))
            sw->floor = cc_floor_mode(v);
        else if (strcmp(argv[i], "--inject-error") == 0)
            sw->inject = 1;
        else
            cc_unknown_option(argv[i]);
    }
    sw->batches = cc_batch_count(batches, sw->iters);
    sw->nsizes = cc_parse_sizes("--sizes", sizes_text, &sw->sizes);
    for (int k = 0; k < sw->nsizes; k++) {
        if (sw->sizes[k] > INT_MAX)
            cc_usage_error("--sizes: %zu bytes do not fit in one message (at most %d)",
                           sw->sizes[k], INT_MAX);
        if (sw->sizes[k] > sw->max)
            sw->max = sw->sizes[k];
    }
    if (cc_size() != 2)
        cc_usage_error("%s needs exactly 2 ranks, got %d", kernel, cc_size());
}

/* One step of a sweep: the messages of iteration `it` (negative: warm-up) with `size` bytes. */
typedef void cc_sweep_step(int rank, unsigned char *sbuf, unsigned char *rbuf, size_t size,
                           long long it);

/* Time in microseconds of one step with `size` bytes: the body goes into sbuf and rbuf is
 * zeroed, then MPI_Barrier, sw->warmup untimed steps and sw->iters timed ones in
 * sw->batches batches, each timed with MPI_Wtime. Returns the median of the batch means and
 * the overall mean (cc_batch_timing). With `floor`, the hardware floor is measured at this
 * size if the sweep wants it there (cc_floor_wanted), one floor batch after each MPI batch. */
static inline struct cc_timing cc_sweep_time(const struct cc_sweep *sw, cc_sweep_step *step,
                                             int rank, unsigned char *sbuf, unsigned char *rbuf,
                                             size_t size, struct cc_floor *floor)
{
    double *elapsed = cc_malloc((size_t)sw->batches * sizeof(double), "the batch times");
    long long *count = cc_malloc((size_t)sw->batches * sizeof(long long), "the batch sizes");
    cc_floor_begin(floor, size, sw->warmup, sw->batches,
                   cc_floor_wanted(size, sw->sizes, sw->nsizes));
    cc_payload_fill(sbuf, size, rank);
    memset(rbuf, 0, size);
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (long long it = -sw->warmup; it < 0; it++)
        step(rank, sbuf, rbuf, size, it);
    for (int b = 0; b < sw->batches; b++) {
        long long first = cc_batch_start(b, sw->batches, sw->iters);
        long long end = cc_batch_start(b + 1, sw->batches, sw->iters);
        double t0 = MPI_Wtime();
        for (long long it = first; it < end; it++)
            step(rank, sbuf, rbuf, size, it);
        elapsed[b] = MPI_Wtime() - t0;
        count[b] = end - first;
        cc_floor_batch(floor, count[b]);
    }
    cc_floor_end(floor);
    struct cc_timing t = cc_batch_timing(elapsed, count, sw->batches);
    free(elapsed);
    free(count);
    return t;
}

/* What a sweep's kernel gives cc_sweep_run: its name, its step and what one step is. */
struct cc_sweep_kernel {
    const char *name;                          /* the META record's kernel= */
    void (*explain)(const struct cc_sweep *sw); /* rank 0's "# ..." line: what is timed */
    cc_sweep_step *step;                       /* one iteration */
    int messages;                              /* messages a rank receives (and checks) per step */
    const char *time, *message;                /* DATA names: the step's time, one message's */
    int per_time;                              /* messages in the step's time (one way each) */
    /* the whole payload of iteration `it`'s last message from `sender` (exit 3 if wrong) */
    void (*check_last)(const unsigned char *buf, size_t size, int sender, long long it);
};

/* The sweep over every size in the given order, for a parsed command line (cc_sweep_args):
 * the buffers, rank 0's explanation and META record, the floor (cc_floor_open); per size the
 * timing (cc_sweep_time), the whole payload of the last message checked (--inject-error first
 * corrupts its middle byte, outside the stamps, at the first size on rank 0) and rank 0's DATA
 * record; then "PASS validated=N" (the messages both ranks checked) and MPI_Finalize. */
static inline int cc_sweep_run(struct cc_sweep *sw, const struct cc_sweep_kernel *k)
{
    int rank = cc_rank(), peer = 1 - rank;
    unsigned char *sbuf = cc_malloc(sw->max, "the send buffer");
    unsigned char *rbuf = cc_malloc(sw->max, "the receive buffer");
    if (rank == 0)
        k->explain(sw);
    cc_print_meta(k->name, "iters=%lld warmup=%lld batches=%d sizes=%d", sw->iters, sw->warmup,
                  sw->batches, sw->nsizes);

    struct cc_floor *hw_floor = cc_floor_open(MPI_COMM_WORLD, sw->max, sw->floor);
    long long validated = 0;
    for (int s = 0; s < sw->nsizes; s++) {
        size_t size = sw->sizes[s];
        struct cc_timing t = cc_sweep_time(sw, k->step, rank, sbuf, rbuf, size, hw_floor);
        if (sw->inject && rank == 0 && s == 0)
            rbuf[size / 2] ^= 0x5a;
        k->check_last(rbuf, size, peer, sw->iters - 1);
        validated += k->messages * (sw->warmup + sw->iters);
        if (rank == 0) {
            double message_us = t.median_us / k->per_time;
            printf("DATA size=%zu iters=%lld batches=%d %s_us=%.4f %s_us=%.4f bw_MBps=%.4f "
                   "%s_mean_us=%.4f\n", size, sw->iters, sw->batches, k->time, t.median_us,
                   k->message, message_us, (double)size / message_us, k->time, t.mean_us);
            fflush(stdout);
        }
    }

    cc_floor_close(hw_floor);
    long long total = 0;
    CC_CHECK(MPI_Reduce(&validated, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0)
        printf("PASS validated=%lld\n", total);
    free(sbuf);
    free(rbuf);
    free(sw->sizes);
    CC_CHECK(MPI_Finalize());
    return 0;
}

#endif
