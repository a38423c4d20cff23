/* Node-pair sweep: one rank per node; in rounds of disjoint pairs (a round-robin tournament, so
 * any rank count works: N-1 rounds for even N, N for odd N with one rank sitting out per round),
 * every pair measures a ping-pong latency with small messages and a one-way streaming bandwidth
 * with large ones, in both directions. Every received message is checked (stamps of the message
 * number, sender and size at both ends; the whole payload of the last message of each phase).
 * Ranks that wait (for the round, or for their pair in --serial mode) sleep between polls of a
 * non-blocking barrier, so that on nodes that share CPUs they do not steal the measured pair's. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>
#include "cc_payload.h"
#include "cc_util.h"

static const char *usage =
    "Usage: pairsweep-c [options]   (at least 2 ranks, one per node)\n"
    "Every pair of ranks, in rounds of disjoint pairs: ping-pong latency (small messages) and\n"
    "streaming bandwidth (large messages) in both directions; one DATA record per pair, keyed\n"
    "by the two ranks' processor names.\n"
    "  --lat-size BYTES   message size of the latency ping-pong (default 8)\n"
    "  --bw-size BYTES    message size of the bandwidth stream (default 1m)\n"
    "  --lat-iters N      timed round trips per pair (default 200)\n"
    "  --bw-iters N       timed messages per direction and pair (default 20)\n"
    "  --batches B        each phase timed in B batches (bandwidth: at most --bw-iters);\n"
    "                     the median and the best batch are reported (default 5)\n"
    "  --warmup N         untimed round trips / messages before each (default 5)\n"
    "  --rounds R         only R rounds, spread evenly over the schedule (default: all;\n"
    "                     every round covers every rank for even N)\n"
    "  --passes P         the whole sweep P times, one DATA record per pair and pass (a\n"
    "                     transient slows one pass, a slow link every one; default 1)\n"
    "  --serial           the pairs of a round one after another (nodes sharing CPUs, or to\n"
    "                     measure links without the round's other traffic)\n"
    "  --inject-error     self-test: corrupt one received byte, validation must fail (exit 3)\n"
    "  --help             print this text\n";

struct opts {
    size_t lat_size, bw_size;
    long long lat_iters, bw_iters, warmup, rounds;
    int serial, inject, batches, passes;
};

enum { MAX_BATCHES = 1000, TAG_LAT = 1, TAG_BW = 2, TAG_ACK = 3, TAG_RES = 4 };

static void parse(int argc, char **argv, struct opts *o, int nranks)
{
    const char *v;
    *o = (struct opts){.lat_size = 8, .bw_size = 1 << 20, .lat_iters = 200, .bw_iters = 20,
                       .warmup = 5, .rounds = 0, .batches = 5, .passes = 1};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0)
            cc_help(usage);
        else if ((v = cc_optval(argc, argv, &i, "--lat-size")))
            o->lat_size = cc_parse_bytes("--lat-size", v);
        else if ((v = cc_optval(argc, argv, &i, "--bw-size")))
            o->bw_size = cc_parse_bytes("--bw-size", v);
        else if ((v = cc_optval(argc, argv, &i, "--lat-iters")))
            o->lat_iters = cc_parse_int("--lat-iters", v, 1, 100000000);
        else if ((v = cc_optval(argc, argv, &i, "--bw-iters")))
            o->bw_iters = cc_parse_int("--bw-iters", v, 1, 100000000);
        else if ((v = cc_optval(argc, argv, &i, "--warmup")))
            o->warmup = cc_parse_int("--warmup", v, 0, 100000000);
        else if ((v = cc_optval(argc, argv, &i, "--rounds")))
            o->rounds = cc_parse_int("--rounds", v, 1, 1000000);
        else if ((v = cc_optval(argc, argv, &i, "--batches")))
            o->batches = (int)cc_parse_int("--batches", v, 1, MAX_BATCHES);
        else if ((v = cc_optval(argc, argv, &i, "--passes")))
            o->passes = (int)cc_parse_int("--passes", v, 1, 1000);
        else if (strcmp(argv[i], "--serial") == 0)
            o->serial = 1;
        else if (strcmp(argv[i], "--inject-error") == 0)
            o->inject = 1;
        else
            cc_unknown_option(argv[i]);
    }
    if (nranks < 2)
        cc_usage_error("the sweep needs at least 2 ranks (one per node), got %d", nranks);
    if (o->batches > o->lat_iters)
        cc_usage_error("--batches %d is more than --lat-iters %lld: every batch needs an "
                       "iteration", o->batches, o->lat_iters);
    if (o->lat_size > INT_MAX || o->bw_size > INT_MAX)
        cc_usage_error("--lat-size and --bw-size must be below 2 GiB");
}

/* The circle method: M = N rounded up to even, M-1 rounds; in round r rank M-1 meets r and
 * rank x meets (2r - x) mod (M-1). A partner >= N is the bye of an odd N: -1. */
static int partner(int rank, int round, int n)
{
    int m = n + (n % 2), p;
    if (rank == m - 1)
        p = round;
    else if (rank == round)
        p = m - 1;
    else
        p = ((2 * round - rank) % (m - 1) + (m - 1)) % (m - 1);
    return p < n ? p : -1;
}

static int schedule_rounds(int n) { return n + (n % 2) - 1; }

/* The r-th of `count` rounds spread evenly over the `total` of the schedule. */
static int picked_round(long long r, long long count, int total)
{
    return (int)(r * total / count);
}

/* Wait for a request, sleeping 20 us between polls (a waiting rank leaves the CPU). */
static void sleepy_wait(MPI_Request *req)
{
    int done = 0;
    struct timespec pause = {0, 20000};
    for (;;) {
        CC_CHECK(MPI_Test(req, &done, MPI_STATUS_IGNORE));
        if (done)
            return;
        nanosleep(&pause, NULL);
    }
}

static void sleepy_barrier(void)
{
    MPI_Request req;
    CC_CHECK(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    sleepy_wait(&req);
}

/* Message numbers are unique per pair, phase and iteration: a stale buffer is caught. */
static uint64_t seq_of(int phase, long long it) { return ((uint64_t)phase << 40) + (uint64_t)(it + (1LL << 32)); }

static void check(const unsigned char *buf, size_t size, int sender, uint64_t seq, int whole,
                  const char *what, int peer)
{
    size_t j = cc_payload_mismatch(buf, size, sender, seq, whole);
    if (j < size)
        cc_validation_error("%s from rank %d, size %zu, byte %zu: got %u, expected %u", what, peer,
                            size, j, buf[j], cc_payload_byte(size, sender, seq, j));
}

static long long validated;

static void round_trip(const struct opts *o, int me, int peer, unsigned char *sbuf,
                       unsigned char *rbuf, long long it)
{
    int n = (int)o->lat_size;
    cc_payload_stamp(sbuf, o->lat_size, me, seq_of(1, it));
    if (me < peer) {
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD));
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, TAG_LAT, MPI_COMM_WORLD));
    }
    check(rbuf, o->lat_size, peer, seq_of(1, it), 0, "latency message", peer);
    validated++;
}

/* The best (lowest) batch mean of `batches` batches, in us per iteration. */
static double best_batch(const double *elapsed, const long long *count, int batches)
{
    double best = elapsed[0] / (double)count[0];
    for (int b = 1; b < batches; b++)
        best = elapsed[b] / (double)count[b] < best ? elapsed[b] / (double)count[b] : best;
    return best * 1e6;
}

/* One-way latency in us between me and peer from --batches batches of round trips, halved:
 * lat[0] the median of the batch means, lat[1] the best batch mean. `corrupt`: the self-test
 * flips a byte of the last message before its check. */
static void latency(const struct opts *o, int me, int peer, unsigned char *sbuf,
                    unsigned char *rbuf, int corrupt, double *lat)
{
    int batches = o->batches;
    double elapsed[MAX_BATCHES];
    long long count[MAX_BATCHES];
    cc_payload_fill(sbuf, o->lat_size, me);
    memset(rbuf, 0, o->lat_size);
    for (long long it = -o->warmup; it < 0; it++)
        round_trip(o, me, peer, sbuf, rbuf, it);
    for (int b = 0; b < batches; b++) {
        long long first = cc_batch_start(b, batches, o->lat_iters);
        long long end = cc_batch_start(b + 1, batches, o->lat_iters);
        double t0 = MPI_Wtime();
        for (long long it = first; it < end; it++)
            round_trip(o, me, peer, sbuf, rbuf, it);
        elapsed[b] = MPI_Wtime() - t0;
        count[b] = end - first;
    }
    if (corrupt)
        rbuf[o->lat_size / 2] ^= 0x5a;
    check(rbuf, o->lat_size, peer, seq_of(1, o->lat_iters - 1), 1, "latency message", peer);
    lat[0] = cc_batch_timing(elapsed, count, batches).median_us / 2;
    lat[1] = best_batch(elapsed, count, batches) / 2;
}

/* The sender's half of a stream: `count` messages after the receiver's "ready", until its
 * "all received"; returns the seconds. */
static double send_batch(const struct opts *o, int me, int to, unsigned char *sbuf, int phase,
                         long long first, long long count)
{
    char ack = 0;
    CC_CHECK(MPI_Recv(&ack, 1, MPI_CHAR, to, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    double t0 = MPI_Wtime();
    for (long long it = first; it < first + count; it++) {
        cc_payload_stamp(sbuf, o->bw_size, me, seq_of(phase, it));
        CC_CHECK(MPI_Send(sbuf, (int)o->bw_size, MPI_BYTE, to, TAG_BW, MPI_COMM_WORLD));
    }
    CC_CHECK(MPI_Recv(&ack, 1, MPI_CHAR, to, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    return MPI_Wtime() - t0;
}

static void recv_batch(const struct opts *o, int from, unsigned char *rbuf, int phase,
                       long long first, long long count)
{
    char ack = 0;
    CC_CHECK(MPI_Send(&ack, 1, MPI_CHAR, from, TAG_ACK, MPI_COMM_WORLD));
    for (long long it = first; it < first + count; it++) {
        CC_CHECK(MPI_Recv(rbuf, (int)o->bw_size, MPI_BYTE, from, TAG_BW, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
        check(rbuf, o->bw_size, from, seq_of(phase, it), it == o->bw_iters - 1,
              "bandwidth message", from);
        validated++;
    }
    CC_CHECK(MPI_Send(&ack, 1, MPI_CHAR, from, TAG_ACK, MPI_COMM_WORLD));
}

/* Streams bw_size messages from `from` to `to`: warm-up ones, then bw_iters in up to --batches
 * batches, each timed by the sender from the receiver's "ready" to its "all received". The
 * sender gets bw[0] the MB/s (10^6 B/s) of the median batch, bw[1] of the best; the receiver
 * checks every message. */
static void stream(const struct opts *o, int me, int from, int to, unsigned char *sbuf,
                   unsigned char *rbuf, int phase, double *bw)
{
    int batches = o->bw_iters < o->batches ? (int)o->bw_iters : o->batches;
    double elapsed[MAX_BATCHES];
    long long count[MAX_BATCHES];
    if (batches < 1)
        batches = 1;
    if (me == from)
        cc_payload_fill(sbuf, o->bw_size, me);
    else
        memset(rbuf, 0, o->bw_size);
    for (int b = -1; b < batches; b++) {
        long long first = b < 0 ? -o->warmup : cc_batch_start(b, batches, o->bw_iters);
        long long n = b < 0 ? o->warmup : cc_batch_start(b + 1, batches, o->bw_iters) - first;
        if (me == to)
            recv_batch(o, from, rbuf, phase, first, n);
        else if (b < 0)
            send_batch(o, me, to, sbuf, phase, first, n);
        else
            elapsed[b] = send_batch(o, me, to, sbuf, phase, first, n), count[b] = n;
    }
    if (me == from) {
        double per_msg = cc_batch_timing(elapsed, count, batches).median_us;
        bw[0] = (double)o->bw_size / per_msg;
        bw[1] = (double)o->bw_size / best_batch(elapsed, count, batches);
    }
}

/* One pair: latency, then a -> b and b -> a. The leader (lower rank) keeps the figures in
 * out[]: latency median and best, a -> b median and best, b -> a median and best; the other
 * rank sends it its measured direction. */
static void measure_pair(const struct opts *o, int me, int peer, unsigned char *sbuf,
                         unsigned char *rbuf, int corrupt, double *out)
{
    int a = me < peer ? me : peer, b = me < peer ? peer : me;
    double lat[2], ab[2] = {0, 0}, ba[2] = {0, 0};
    latency(o, me, peer, sbuf, rbuf, corrupt, lat);
    stream(o, me, a, b, sbuf, rbuf, 2, ab);
    stream(o, me, b, a, sbuf, rbuf, 3, ba);
    if (me == b) {
        CC_CHECK(MPI_Send(ba, 2, MPI_DOUBLE, a, TAG_RES, MPI_COMM_WORLD));
        return;
    }
    CC_CHECK(MPI_Recv(ba, 2, MPI_DOUBLE, b, TAG_RES, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    out[0] = lat[0], out[1] = lat[1], out[2] = ab[0], out[3] = ab[1], out[4] = ba[0];
    out[5] = ba[1];
}

enum { FIELDS = 9 };    /* per pair kept by its leader: peer, round, pass, measure_pair's 6 */

struct sweep {
    const struct opts *o;
    int me, n, nrounds, kept, injected, pass;
    unsigned char *sbuf, *rbuf;
    double *mine, *round_s;
};

static void pair_of(struct sweep *s, int peer, int round)
{
    double f[6] = {0, 0, 0, 0, 0, 0};
    int corrupt = s->o->inject && s->me == 0 && !s->injected;
    s->injected |= corrupt;
    measure_pair(s->o, s->me, peer, s->sbuf, s->rbuf, corrupt, f);
    if (s->me > peer)
        return;
    double *row = s->mine + (size_t)s->kept++ * FIELDS;
    row[0] = peer, row[1] = round, row[2] = s->pass;
    memcpy(row + 3, f, sizeof f);
}

/* The rounds: all pairs of a round at once, or (--serial) one pair after another; every rank
 * waits (sleeping) at a barrier after each round, or each pair. */
static void run_rounds(struct sweep *s)
{
    int total = schedule_rounds(s->n);
    for (int r = 0; r < s->nrounds; r++) {
        int slot = s->pass * s->nrounds + r;
        int round = picked_round(r, s->nrounds, total), peer = partner(s->me, round, s->n);
        double t0 = MPI_Wtime();
        if (!s->o->serial) {
            if (peer >= 0)
                pair_of(s, peer, round);
            sleepy_barrier();
        } else {
            for (int lead = 0; lead < s->n; lead++) {
                int other = partner(lead, round, s->n);
                if (other <= lead)
                    continue;
                if (s->me == lead || s->me == other)
                    pair_of(s, s->me == lead ? other : lead, round);
                sleepy_barrier();
            }
        }
        s->round_s[slot] = MPI_Wtime() - t0;
    }
}

/* Every rank's processor name on rank 0 (blanks and quotes replaced: names are record values). */
static char *gather_names(int me, int n)
{
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    CC_CHECK(MPI_Get_processor_name(name, &len));
    for (char *c = name; *c; c++)
        if (*c == ' ' || *c == '"' || *c == '=' || *c == '\t')
            *c = '_';
    char *all = me == 0 ? cc_malloc((size_t)n * MPI_MAX_PROCESSOR_NAME, "the host names") : NULL;
    CC_CHECK(MPI_Gather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all, MPI_MAX_PROCESSOR_NAME,
                        MPI_CHAR, 0, MPI_COMM_WORLD));
    return all;
}

/* Rank 0 collects every leader's pairs and prints one DATA record per pair; the count must be
 * the schedule's (n/2 pairs per round), or the sweep lost a pair. */
static void print_pairs(const struct sweep *s, const char *names)
{
    int *counts = s->me == 0 ? cc_malloc((size_t)s->n * sizeof(int), "counts") : NULL;
    int *displs = s->me == 0 ? cc_malloc((size_t)s->n * sizeof(int), "offsets") : NULL;
    int mine = s->kept * FIELDS, total = 0;
    CC_CHECK(MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD));
    for (int i = 0; s->me == 0 && i < s->n; i++)
        displs[i] = total, total += counts[i];
    double *all = s->me == 0 ? cc_malloc((size_t)total * sizeof(double), "the pairs") : NULL;
    CC_CHECK(MPI_Gatherv(s->mine, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                         MPI_COMM_WORLD));
    if (s->me != 0)
        return;
    if (total != s->o->passes * s->nrounds * (s->n / 2) * FIELDS)
        cc_validation_error("the sweep returned %d pair records, the schedule has %d",
                            total / FIELDS, s->o->passes * s->nrounds * (s->n / 2));
    for (int a = 0; a < s->n; a++)
        for (int k = displs[a]; k < displs[a] + counts[a]; k += FIELDS) {
            int b = (int)all[k];
            const double *f = all + k + 3;
            printf("DATA a=%s b=%s ra=%d rb=%d round=%d pass=%d latency_us=%.4f "
                   "latency_best_us=%.4f bw_ab_MBps=%.4f bw_ab_best_MBps=%.4f bw_ba_MBps=%.4f "
                   "bw_ba_best_MBps=%.4f\n", names + (size_t)a * MPI_MAX_PROCESSOR_NAME,
                   names + (size_t)b * MPI_MAX_PROCESSOR_NAME, a, b, (int)all[k + 1],
                   (int)all[k + 2], f[0], f[1], f[2], f[3], f[4], f[5]);
        }
    free(counts), free(displs), free(all);
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    struct opts o;
    int me = cc_rank(), n = cc_size();
    parse(argc, argv, &o, n);
    int total = schedule_rounds(n);
    if (o.rounds > total)
        cc_usage_error("--rounds %lld: %d ranks have only %d rounds", o.rounds, n, total);
    struct sweep s = {.o = &o, .me = me, .n = n, .nrounds = o.rounds ? (int)o.rounds : total};
    size_t max = o.lat_size > o.bw_size ? o.lat_size : o.bw_size;
    s.sbuf = cc_malloc(max, "the send buffer"), s.rbuf = cc_malloc(max, "the receive buffer");
    size_t slots = (size_t)o.passes * (size_t)s.nrounds;
    s.mine = cc_malloc(slots * FIELDS * sizeof(double), "this rank's pairs");
    s.round_s = cc_malloc(slots * sizeof(double), "the round times");
    char *names = gather_names(me, n);
    if (me == 0)
        printf("# pairsweep: %d ranks, %d of %d rounds of %d disjoint pairs (%s); per pair: "
               "latency_us = one-way, the median of %d batch means of round trips of %zu B "
               "(%lld in all), halved; latency_best_us = the best batch's; bw_ab_MBps, "
               "bw_ba_MBps = a -> b and b -> a, %zu B messages streamed in up to %d batches "
               "(%lld messages in all), the median batch's rate (10^6 B/s); *_best_* = the "
               "best batch's\n", n, s.nrounds, total, n / 2,
               o.serial ? "one pair at a time" : "all pairs of a round at once", o.batches,
               o.lat_size, o.lat_iters, o.bw_size, o.batches, o.bw_iters);
    cc_print_meta("pairsweep", "nodes=%d rounds=%d schedule_rounds=%d serial=%d lat_size=%zu "
                  "bw_size=%zu lat_iters=%lld bw_iters=%lld warmup=%lld batches=%d passes=%d", n,
                  s.nrounds, total, o.serial, o.lat_size, o.bw_size, o.lat_iters, o.bw_iters,
                  o.warmup, o.batches, o.passes);
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (s.pass = 0; s.pass < o.passes; s.pass++)
        run_rounds(&s);
    double sweep_s = MPI_Wtime() - t0, slowest = 0.0;
    for (size_t r = 0; r < slots; r++)
        slowest = s.round_s[r] > slowest ? s.round_s[r] : slowest;
    print_pairs(&s, names);
    long long sum = 0;
    CC_CHECK(MPI_Reduce(&validated, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (me == 0) {
        printf("RESULT pairs=%d rounds=%d passes=%d sweep_s=%.4f slowest_round_s=%.4f\n",
               s.nrounds * (n / 2), s.nrounds, o.passes, sweep_s, slowest);
        printf("PASS validated=%lld\n", sum);
        fflush(stdout);
    }
    free(s.sbuf), free(s.rbuf), free(s.mine), free(s.round_s), free(names);
    CC_CHECK(MPI_Finalize());
    return 0;
}
