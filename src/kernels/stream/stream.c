/* stream: STREAM-style copy and triad on every rank at once (seed 002: the memory bandwidth
 * that bounds the stencil). Each rank works on its own three arrays of n doubles; the node's
 * aggregate bandwidth is all ranks' bytes over the elapsed time on rank 0's clock from just
 * before rank 0 enters the barrier that starts them (no rank leaves a barrier before rank 0
 * has entered it) to just after rank 0 leaves the barrier that follows the last rank's end.
 * Ranks that start late or are time-sliced (more ranks than cores), rank 0 included, lengthen
 * that time, so the aggregate never exceeds what the cores can do together (a per-rank clock,
 * or a clock read after the starting barrier, would not see the wait). */
#include "cc_util.h"
#include <math.h>

/* 0.5 keeps the triad recurrence a <- 2 + a/2 bounded (it tends to 4) for any rep count. */
static const double SCALAR = 0.5, TOLERANCE = 1e-13;

static const char *usage =
    "usage: stream-c [options]\n"
    "  Every rank runs copy (c = a, 16 B/element) and triad (a = b + s*c, 24 B/element)\n"
    "  on its own arrays; the best rep is reported as aggregate and per-rank GB/s.\n"
    "  --n N           doubles per array and rank (default 8000000)\n"
    "  --reps R        repetitions (default 10)\n"
    "  --skew-ms S     self-test: rank r starts each loop r*S ms late (a late or\n"
    "                  time-sliced rank); the aggregate's time must include that wait\n"
    "  --lag-ms L      self-test: rank 0 starts each loop L ms late, as if descheduled\n"
    "                  right after the barrier while the other ranks run\n"
    "  --inject-error  self-test: perturb one array element after the run, so the\n"
    "                  analytic validation must fail with exit code 3\n"
    "  --help          this text\n";

/* --skew-ms, --lag-ms: wait (spinning, as a busy rank would) before starting a loop. */
static void late_start(double seconds)
{
    double until = MPI_Wtime() + seconds;
    while (seconds > 0.0 && MPI_Wtime() < until)
        ;
}

struct opts {
    long long n;     /* doubles per array and rank */
    int reps;        /* timed repetitions */
    int inject;      /* --inject-error */
    double skew;     /* this rank's late start per loop, seconds (--skew-ms, --lag-ms) */
};

static void parse(int argc, char **argv, int rank, struct opts *o)
{
    *o = (struct opts){.n = 8000000, .reps = 10};
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0) {
            cc_help(usage);
        } else if ((v = cc_optval(argc, argv, &i, "--n"))) {
            o->n = cc_parse_int("--n", v, 1, 1000000000000LL);
        } else if ((v = cc_optval(argc, argv, &i, "--reps"))) {
            o->reps = (int)cc_parse_int("--reps", v, 1, 1000000);
        } else if ((v = cc_optval(argc, argv, &i, "--skew-ms"))) {
            o->skew += 1e-3 * (double)cc_parse_int("--skew-ms", v, 0, 10000) * rank;
        } else if ((v = cc_optval(argc, argv, &i, "--lag-ms"))) {
            o->skew += rank == 0 ? 1e-3 * (double)cc_parse_int("--lag-ms", v, 0, 10000) : 0.0;
        } else if (strcmp(argv[i], "--inject-error") == 0) {
            o->inject = 1;
        } else {
            cc_unknown_option(argv[i]);
        }
    }
}

/* All ranks of a node allocate at once: refuse what the node cannot hold. */
static void refuse_oversize(long long n, int rank)
{
    MPI_Comm shared;
    int local, too_big;
    CC_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
    CC_CHECK(MPI_Comm_size(shared, &local));
    too_big = cc_exceeds_memory(24.0 * (double)n * local);
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &too_big, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
    CC_CHECK(MPI_Comm_free(&shared));
    if (too_big)
        cc_usage_error("--n %lld: 3 arrays of %lld doubles on each of %d ranks per node exceed "
                       "this node's memory", n, n, local);
}

/* times[2r], times[2r+1]: copy and triad time of rep r on rank 0's clock, on every rank. */
static void time_reps(double *a, const double *b, double *c, size_t len, int reps, double skew,
                      double *times)
{
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        late_start(skew);
        for (size_t k = 0; k < len; k++)
            c[k] = a[k];
        double t1 = MPI_Wtime();
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        double t2 = MPI_Wtime();
        late_start(skew);
        for (size_t k = 0; k < len; k++)
            a[k] = b[k] + SCALAR * c[k];
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        times[2 * r] = t2 - t0;
        times[2 * r + 1] = MPI_Wtime() - t1;
    }
    /* Rank 0's clock is the one that counts: every rank reports it. */
    CC_CHECK(MPI_Bcast(times, 2 * reps, MPI_DOUBLE, 0, MPI_COMM_WORLD));
}

/* The same recurrence in scalars gives the expected values exactly. */
static void validate(const double *a, const double *b, const double *c, size_t len, int reps)
{
    double ea = 1.0, ec = 0.0;
    for (int r = 0; r < reps; r++) {
        ec = ea;
        ea = 2.0 + SCALAR * ec;
    }
    for (size_t k = 0; k < len; k++)
        if (!(fabs(a[k] - ea) <= TOLERANCE * ea && fabs(c[k] - ec) <= TOLERANCE * ec && b[k] == 2.0))
            cc_validation_error("element %zu: a=%.17g c=%.17g b=%.17g, expected %.17g %.17g 2",
                                k, a[k], c[k], b[k], ea, ec);
}

/* Rank 0: the best rep's aggregate and per-rank rates. */
static void report(const double *times, int reps, long long n, int nprocs)
{
    /* A tiny --n can run faster than the clock ticks. */
    double best[2] = {fmax(times[0], MPI_Wtick()), fmax(times[1], MPI_Wtick())};
    for (int r = 1; r < reps; r++)
        for (int k = 0; k < 2; k++)
            best[k] = fmin(best[k], times[2 * r + k]);
    double copy = 16.0 * (double)n * nprocs / best[0] / 1e9;
    double triad = 24.0 * (double)n * nprocs / best[1] / 1e9;
    printf("RESULT copy_GBps=%.3f triad_GBps=%.3f copy_GBps_per_rank=%.3f "
           "triad_GBps_per_rank=%.3f\n", copy, triad, copy / nprocs, triad / nprocs);
    printf("PASS validated=1\n");
    fflush(stdout);
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    int rank = cc_rank(), nprocs = cc_size();
    struct opts o;
    parse(argc, argv, rank, &o);
    refuse_oversize(o.n, rank);

    size_t len = (size_t)o.n;
    double *a = cc_malloc(len * sizeof(double), "array a");
    double *b = cc_malloc(len * sizeof(double), "array b");
    double *c = cc_malloc(len * sizeof(double), "array c");
    for (size_t k = 0; k < len; k++) { /* first touch by the rank that uses the pages */
        a[k] = 1.0;
        b[k] = 2.0;
        c[k] = 0.0;
    }
    if (rank == 0) {
        printf("# each rep: t0 = rank 0's MPI_Wtime, MPI_Barrier, copy (c=a, 16 B/element) on "
               "every rank, t1 = rank 0's MPI_Wtime, MPI_Barrier, t2 = rank 0's MPI_Wtime, triad "
               "(a=b+s*c, 24 B/element), MPI_Barrier, t3; copy time = t2 - t0, triad time = "
               "t3 - t1 (before any rank's start to after every rank's end, plus barriers); best "
               "(smallest) rep reported; GBps = ranks*bytes/time/1e9 (aggregate), _per_rank = "
               "aggregate/ranks\n");
        fflush(stdout);
    }
    cc_print_meta("stream", "n=%lld reps=%d timing=enter-to-exit bytes_copy=%.0f", o.n, o.reps,
                  16.0 * (double)o.n * nprocs);

    double *times = cc_malloc(2 * (size_t)o.reps * sizeof(double), "the timings");
    time_reps(a, b, c, len, o.reps, o.skew, times);
    if (o.inject && rank == 0)
        a[len / 2] += 1.0;
    validate(a, b, c, len, o.reps);
    /* Every rank's check is done before anyone reports success. */
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0)
        report(times, o.reps, o.n, nprocs);
    free(times);
    free(a);
    free(b);
    free(c);
    MPI_Finalize();
    return 0;
}
