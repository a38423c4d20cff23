/* slowmpi: a PMPI interposer that makes every point-to-point message slower by a known amount.
 *
 * Loaded with LD_PRELOAD into an MPI program, it busy-waits before each send (MPI_Send,
 * MPI_Isend, their synchronous, ready and buffered forms, MPI_Sendrecv[_replace]) for
 *     SLOWMPI_NS + bytes / 1024 * SLOWMPI_NS_PER_KIB   nanoseconds,
 * or, with SLOWMPI_PERCENT=p instead, sizes both itself from the launch's own figures: at
 * MPI_Init ranks 0 and 1 time a ping-pong through PMPI (8 B and 1 MiB), and the fixed part is
 * p % of the 8 B one-way time and the per-byte part p % of the rest of the 1 MiB one-way time,
 * so the 8 B latency grows by about p % and the 1 MiB bandwidth falls to about 1/(1 + p/100)
 * in this launch's regime, whatever that is. The floor of the kernels (no MPI messages) is
 * not touched. A busy-wait, not a sleep: below 1 us it turns a loop whose speed is calibrated
 * at start (a clock read would cost more than a 2 % wait), above it spins on the clock.
 *
 * It leaves the process's allocator as it found it: its calibration buffer is a mapping of its
 * own, not malloc's. A 1 MiB calloc and free at MPI_Init raised glibc's mmap threshold (to the
 * size of the freed chunk), so every later 1 MiB malloc of the kernel (its message buffers,
 * the floor's copy) came from the heap at another offset in its page than in a plain launch,
 * and the interposed launches' 1 MiB floor read other figures than plain ones on an Intel
 * Xeon VM (docs/floors.md#the-floor-under-an-interposer).
 *
 * It validates itself: one message in SLOWMPI_SAMPLE (default 64) has its wait timed with
 * the clock, less the cost of one clock read (measured at start: a 2 % wait of a 0.2 us
 * latency is 4 ns, a clock read about 30 ns, which a bare timing would count as added), and at
 * MPI_Finalize rank 0 prints one line on stderr with what was asked and what
 * was measured, summed over the ranks:
 *   slowmpi: 2 ranks, 24000 messages; asked 46.0 ns + 8.79 ns/KiB (...); added, measured on
 *   375 messages: small 46.3 ns a message (asked 46.0), large 9250 ns (asked 9210)
 * A launch at 0 % reports the same way (asked 0): the path's own cost as timed.
 * SLOWMPI_QUIET=1 drops the line. A bad setting is one line on stderr and exit 2.
 */
#define _DEFAULT_SOURCE     /* clock_gettime, MAP_ANONYMOUS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SMALL_BYTES 4096          /* messages up to this are "small" in the report line */

static double delay_ns, ns_per_kib, ns_per_spin = 1.0, clock_ns, percent = -1.0;
static double cal_small_us, cal_large_us;
static long long sample_every = 64, messages;
/* [small, large]: sampled messages, asked ns, measured ns */
static double sampled[2], asked[2], measured[2];

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void spin(long long n)
{
    for (long long i = 0; i < n; i++)
        __asm__ __volatile__("" ::: "memory");
}

/* The loop's time per turn: the median of 5 timings (a preempted one does not count). */
static void calibrate_spin(void)
{
    const long long n = 1 << 20;
    double t[5];
    for (int k = 0; k < 5; k++) {
        double t0 = now_ns();
        spin(n);
        t[k] = (now_ns() - t0) / (double)n;
    }
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    ns_per_spin = t[2] > 0.0 ? t[2] : 1.0;
}

/* The cost of one clock read: the median of 5 batches of back-to-back reads. A timed wait
 * (read, wait, read) counts one read's cost beside the wait; this is taken off. */
static void calibrate_clock(void)
{
    const int n = 4096;
    double t[5];
    for (int k = 0; k < 5; k++) {
        double t0 = now_ns(), last = t0;
        for (int i = 0; i < n; i++)
            last = now_ns();
        t[k] = (last - t0) / (double)n;
    }
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    clock_ns = t[2] > 0.0 ? t[2] : 0.0;
}

/* A wait of ``want`` ns: counted turns of the loop below CLOCKED_NS (a clock read costs tens
 * of ns, more than a short wait), a spin on the clock above it (exact in wall time). */
#define CLOCKED_NS 1000.0
static void busy_wait(double want)
{
    if (want < CLOCKED_NS) {
        spin((long long)(want / ns_per_spin + 0.5));
        return;
    }
    double until = now_ns() + want;
    while (now_ns() < until)
        __asm__ __volatile__("" ::: "memory");
}

static void bad_setting(const char *name, const char *value)
{
    fprintf(stderr, "slowmpi: %s=%s: expected a number >= 0\n", name, value);
    exit(2);
}

static double setting(const char *name, double fallback)
{
    const char *text = getenv(name);
    if (!text || !*text)
        return fallback;
    char *end;
    double v = strtod(text, &end);
    if (*end || v < 0.0 || v != v)
        bad_setting(name, text);
    return v;
}

static void wait_for(size_t bytes)
{
    double want = delay_ns + (double)bytes / 1024.0 * ns_per_kib;
    int large = bytes > SMALL_BYTES;
    /* A wait of 0 takes the same path, sampled too: a launch at 0 % (the "old" side of an
     * A/B) carries the path's own cost as the slowed side does, and its measured "added" is
     * that cost plus the timing's residue, which a reader subtracts. */
    if (messages++ % sample_every == 0) {
        double t0 = now_ns();
        busy_wait(want);
        measured[large] += now_ns() - t0 - clock_ns;   /* unbiased: one may be below 0 */
        asked[large] += want;
        sampled[large] += 1.0;
    } else {
        busy_wait(want);
    }
}

static size_t bytes_of(int count, MPI_Datatype type)
{
    int size = 0;
    PMPI_Type_size(type, &size);
    return count > 0 && size > 0 ? (size_t)count * (size_t)size : 0;
}

/* Median one-way time (us) of batches of round trips between ranks 0 and 1, through PMPI. */
static double pingpong_us(MPI_Comm comm, int rank, char *buf, int size, int iters)
{
    double times[5];
    int peer = 1 - rank;
    for (int b = -1; b < 5; b++) {          /* batch -1 warms up */
        PMPI_Barrier(comm);
        double t0 = PMPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (rank == 0) {
                PMPI_Send(buf, size, MPI_BYTE, peer, 0, comm);
                PMPI_Recv(buf, size, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
            } else {
                PMPI_Recv(buf, size, MPI_BYTE, peer, 0, comm, MPI_STATUS_IGNORE);
                PMPI_Send(buf, size, MPI_BYTE, peer, 0, comm);
            }
        }
        if (b >= 0)
            times[b] = (PMPI_Wtime() - t0) / iters / 2 * 1e6;
    }
    for (int i = 1; i < 5; i++)             /* insertion sort of 5 */
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            double t = times[j];
            times[j] = times[j - 1], times[j - 1] = t;
        }
    return times[2];
}

/* SLOWMPI_PERCENT: this launch's own 8 B and 1 MiB one-way times, from ranks 0 and 1. */
static void calibrate_percent(void)
{
    MPI_Comm comm;
    int rank, size;
    PMPI_Comm_dup(MPI_COMM_WORLD, &comm);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    double figures[2] = {0.0, 0.0};
    if (size >= 2 && rank < 2) {
        /* a mapping of its own (zeroed), not calloc: see the top of this file */
        char *buf = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        if (buf == MAP_FAILED) {
            fprintf(stderr, "slowmpi: out of memory\n");
            PMPI_Abort(MPI_COMM_WORLD, 2);
        }
        figures[0] = pingpong_us(comm, rank, buf, 8, 400);
        figures[1] = pingpong_us(comm, rank, buf, 1 << 20, 8);
        munmap(buf, 1 << 20);
    }
    PMPI_Bcast(figures, 2, MPI_DOUBLE, 0, comm);
    PMPI_Comm_free(&comm);
    cal_small_us = figures[0], cal_large_us = figures[1];
    delay_ns = percent / 100.0 * cal_small_us * 1e3;
    double rest = cal_large_us > cal_small_us ? cal_large_us - cal_small_us : 0.0;
    ns_per_kib = percent / 100.0 * rest * 1e3 / 1024.0;
}

static void start(void)
{
    delay_ns = setting("SLOWMPI_NS", 0.0);
    ns_per_kib = setting("SLOWMPI_NS_PER_KIB", 0.0);
    percent = setting("SLOWMPI_PERCENT", -1.0);
    sample_every = (long long)setting("SLOWMPI_SAMPLE", 64.0);
    if (sample_every < 1)
        sample_every = 1;
    calibrate_spin();
    calibrate_clock();
}

int MPI_Init(int *argc, char ***argv)
{
    start();
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS && percent >= 0.0)
        calibrate_percent();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    start();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS && percent >= 0.0)
        calibrate_percent();
    return rc;
}

static void report(void)
{
    int rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    double mine[7] = {(double)messages, sampled[0], asked[0], measured[0], sampled[1], asked[1],
                      measured[1]};
    double sum[7];
    PMPI_Reduce(mine, sum, 7, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    const char *quiet = getenv("SLOWMPI_QUIET");
    if (rank != 0 || (quiet && strcmp(quiet, "1") == 0))
        return;
    char how[160] = "given";
    if (percent >= 0.0)
        snprintf(how, sizeof how, "self-calibrated: +%g %% of this launch's 8 B one-way %.4f us "
                 "and 1 MiB one-way %.2f us", percent, cal_small_us, cal_large_us);
    fprintf(stderr, "slowmpi: %d ranks, %.0f messages; asked %.1f ns + %.3f ns/KiB (%s); "
            "spin %.3f ns; clock read %.1f ns; added, measured on %.0f messages: small %.1f ns a message "
            "(asked %.1f), large %.1f ns (asked %.1f)\n", size, sum[0], delay_ns, ns_per_kib, how,
            ns_per_spin, clock_ns, sum[1] + sum[4], sum[1] > 0 ? sum[3] / sum[1] : 0.0,
            sum[1] > 0 ? sum[2] / sum[1] : 0.0, sum[4] > 0 ? sum[6] / sum[4] : 0.0,
            sum[4] > 0 ? sum[5] / sum[4] : 0.0);
}

int MPI_Finalize(void)
{
    report();
    return PMPI_Finalize();
}

/* The sends: the wait, then the library's own call (blocking and nonblocking forms). */
#define SLOW_SEND(name)                                                                  \
    int MPI_##name(const void *b, int c, MPI_Datatype t, int d, int g, MPI_Comm m)       \
    {                                                                                    \
        wait_for(bytes_of(c, t));                                                        \
        return PMPI_##name(b, c, t, d, g, m);                                            \
    }
#define SLOW_ISEND(name)                                                                 \
    int MPI_##name(const void *b, int c, MPI_Datatype t, int d, int g, MPI_Comm m,       \
                   MPI_Request *r)                                                       \
    {                                                                                    \
        wait_for(bytes_of(c, t));                                                        \
        return PMPI_##name(b, c, t, d, g, m, r);                                         \
    }
SLOW_SEND(Send)
SLOW_SEND(Ssend)
SLOW_SEND(Rsend)
SLOW_SEND(Bsend)
SLOW_ISEND(Isend)
SLOW_ISEND(Issend)
SLOW_ISEND(Irsend)
SLOW_ISEND(Ibsend)

int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int d, int sg, void *rb, int rc,
                 MPI_Datatype rt, int s, int rg, MPI_Comm m, MPI_Status *status)
{
    wait_for(bytes_of(sc, st));
    return PMPI_Sendrecv(sb, sc, st, d, sg, rb, rc, rt, s, rg, m, status);
}

int MPI_Sendrecv_replace(void *b, int c, MPI_Datatype t, int d, int sg, int s, int rg,
                         MPI_Comm m, MPI_Status *status)
{
    wait_for(bytes_of(c, t));
    return PMPI_Sendrecv_replace(b, c, t, d, sg, s, rg, m, status);
}
