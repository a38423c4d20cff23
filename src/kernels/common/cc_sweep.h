/* The two-rank message sweeps (pingpong, comms2; the collectives reuse the options): command
 * line and timing loop, with the hardware floor (cc_floor.h) measured between the MPI batches.
 * The messages' payloads and stamps are in cc_payload.h. */
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

#endif
