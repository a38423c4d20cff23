/* Collectives over all ranks: allreduce, alltoall, bcast and barrier, time per call over message
 * sizes. Every result is checked: each allreduce element against the closed form of the sum,
 * each alltoall block and each bcast message by its stamps (sender, destination, call number;
 * the whole payload of the last call). The time of a size is the slowest rank's median of
 * batch means: a collective is done when its last rank is. */
#include "cc_sweep.h"

static const char *usage =
    "Usage: collectives-c [options]   (at least 2 ranks)\n"
    "Time per call of MPI_Allreduce (doubles, MPI_SUM), MPI_Alltoall, MPI_Bcast (root moving\n"
    "round the ranks) and MPI_Barrier; every result validated.\n"
    "  --ops LIST      allreduce,alltoall,bcast,barrier (default: all four)\n"
    "  --sizes LIST    bytes per rank (allreduce: the vector; alltoall: each block; bcast: the\n"
    "                  message): a list 8,1k or a range lo:hi (default 8:65536)\n"
    "  --iters N       timed calls per size (default 100)\n"
    "  --warmup N      untimed calls per size (default 10)\n"
    "  --batches B     timed calls in B batches, median of the batch means (default 10)\n"
    "  --inject-error  self-test: corrupt one received element, validation must fail (exit 3)\n"
    "  --help          print this text\n";

enum { OP_ALLREDUCE, OP_ALLTOALL, OP_BCAST, OP_BARRIER, NOPS };
static const char *op_names[NOPS] = {"allreduce", "alltoall", "bcast", "barrier"};

struct opts {
    struct cc_sweep sw;          /* sizes, iters, warmup, batches, inject */
    int ops[NOPS];
};

static void parse_ops(const char *text, int *ops)
{
    char *copy = strdup(text), *save = NULL;
    int any = 0;
    memset(ops, 0, NOPS * sizeof *ops);
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int k = 0;
        while (k < NOPS && strcmp(tok, op_names[k]) != 0)
            k++;
        if (k == NOPS)
            cc_usage_error("--ops: unknown collective '%s' (allreduce, alltoall, bcast, barrier)",
                           tok);
        ops[k] = any = 1;
    }
    free(copy);
    if (!any)
        cc_usage_error("--ops: no collective in '%s'", text);
}

static void parse(int argc, char **argv, struct opts *o)
{
    const char *v, *sizes = "8:65536";
    long long batches = 0;
    *o = (struct opts){.sw = {.iters = 100, .warmup = 10}, .ops = {1, 1, 1, 1}};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0)
            cc_help(usage);
        else if ((v = cc_optval(argc, argv, &i, "--ops")))
            parse_ops(v, o->ops);
        else if ((v = cc_optval(argc, argv, &i, "--sizes")))
            sizes = v;
        else if ((v = cc_optval(argc, argv, &i, "--iters")))
            o->sw.iters = cc_parse_int("--iters", v, 1, 1000000000);
        else if ((v = cc_optval(argc, argv, &i, "--warmup")))
            o->sw.warmup = cc_parse_int("--warmup", v, 0, 1000000000);
        else if ((v = cc_optval(argc, argv, &i, "--batches")))
            batches = cc_parse_int("--batches", v, 1, 1024);
        else if (strcmp(argv[i], "--inject-error") == 0)
            o->sw.inject = 1;
        else
            cc_unknown_option(argv[i]);
    }
    if (cc_size() < 2)
        cc_usage_error("collectives need at least 2 ranks, got %d", cc_size());
    o->sw.batches = cc_batch_count(batches, o->sw.iters);
    o->sw.nsizes = cc_parse_sizes("--sizes", sizes, &o->sw.sizes);
    for (int k = 0; k < o->sw.nsizes; k++) {
        if (o->sw.sizes[k] % sizeof(double) && o->ops[OP_ALLREDUCE])
            cc_usage_error("--sizes: %zu is not a whole number of doubles (allreduce)",
                           o->sw.sizes[k]);
        if (o->sw.sizes[k] > INT_MAX / (size_t)cc_size())
            cc_usage_error("--sizes: %zu bytes times %d ranks is too large", o->sw.sizes[k],
                           cc_size());
        o->sw.max = o->sw.sizes[k] > o->sw.max ? o->sw.sizes[k] : o->sw.max;
    }
}

/* Call numbers: warm-up calls are negative; a stamp must never repeat between sizes. */
static uint64_t seq_of(size_t size, long long it)
{
    return ((uint64_t)size << 32) + (uint64_t)(it + (1LL << 31));
}

/* Allreduce: rank r contributes (r + 1) * c + (j mod 1021) at element j in call c (c = 1..7);
 * the sum over n ranks is c * n(n+1)/2 + n * (j mod 1021), exact in doubles. */
static double term(int rank, long long it, size_t j)
{
    return (double)(rank + 1) * (double)((it & 7) + 1) + (double)(j % 1021);
}

static double expected_sum(int n, long long it, size_t j)
{
    return (double)((it & 7) + 1) * n * (n + 1) / 2.0 + (double)n * (double)(j % 1021);
}

static long long validated;

static void allreduce(double *in, double *out, size_t count, long long it, int corrupt)
{
    int rank = cc_rank(), n = cc_size();
    for (size_t j = 0; j < count; j++)
        in[j] = term(rank, it, j);
    CC_CHECK(MPI_Allreduce(in, out, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    if (corrupt)
        out[count / 2] += 1.0;
    for (size_t j = 0; j < count; j++)
        if (out[j] != expected_sum(n, it, j))
            cc_validation_error("allreduce of %zu doubles, call %lld, element %zu: got %.17g, "
                                "expected %.17g", count, it, j, out[j], expected_sum(n, it, j));
    validated++;
}

/* Alltoall: the block from s to d carries the payload of "sender" s * n + d. */
static void alltoall(unsigned char *sbuf, unsigned char *rbuf, size_t size, long long it,
                     int whole, int corrupt)
{
    int me = cc_rank(), n = cc_size();
    for (int d = 0; d < n; d++)
        cc_payload_stamp(sbuf + (size_t)d * size, size, me * n + d, seq_of(size, it));
    CC_CHECK(MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD));
    if (corrupt)
        rbuf[size / 2] ^= 0x5a;
    for (int s = 0; s < n; s++) {
        const unsigned char *block = rbuf + (size_t)s * size;
        size_t j = cc_payload_mismatch(block, size, s * n + me, seq_of(size, it), whole);
        if (j < size)
            cc_validation_error("alltoall block of %zu bytes from rank %d, call %lld, byte %zu: "
                                "got %u, expected %u", size, s, it, j, block[j],
                                cc_payload_byte(size, s * n + me, seq_of(size, it), j));
    }
    validated++;
}

static int root_of(long long it, int n) { return (int)(((it % n) + n) % n); }

/* Bcast: the root moves round the ranks (call it: root it mod n); the payload is "sender" n
 * (one body for every root), the stamps carry the call number. */
static void bcast(unsigned char *buf, size_t size, long long it, int whole, int corrupt)
{
    int me = cc_rank(), n = cc_size(), root = root_of(it, n);
    if (me == root)
        cc_payload_stamp(buf, size, n, seq_of(size, it));
    CC_CHECK(MPI_Bcast(buf, (int)size, MPI_BYTE, root, MPI_COMM_WORLD));
    if (me == root)
        return;
    if (corrupt)
        buf[size / 2] ^= 0x5a;
    size_t j = cc_payload_mismatch(buf, size, n, seq_of(size, it), whole);
    if (j < size)
        cc_validation_error("bcast of %zu bytes from root %d, call %lld, byte %zu: got %u, "
                            "expected %u", size, root, it, j, buf[j],
                            cc_payload_byte(size, n, seq_of(size, it), j));
    validated++;
}

struct bufs {
    unsigned char *s, *r;       /* n blocks of the largest size each */
};

/* One call of `op` with `size` bytes; `whole`: the final, untimed call (buffers zeroed first,
 * whole payloads checked); `corrupt`: the self-test's flipped byte or element. */
static void call(int op, struct bufs *b, size_t size, long long it, int whole, int corrupt)
{
    if (op == OP_ALLREDUCE)
        allreduce((double *)b->s, (double *)b->r, size / sizeof(double), it, corrupt);
    else if (op == OP_ALLTOALL)
        alltoall(b->s, b->r, size, it, whole, corrupt);
    else if (op == OP_BCAST)
        bcast(b->r, size, it, whole, corrupt);
    else
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* Fills the payload bodies once per size (outside the timing). Before the final call
 * (`final_it`), the receive buffers are zeroed: its whole payload is checked, so a byte left
 * from an earlier call cannot pass for a received one. */
static void prepare(int op, struct bufs *b, size_t size, long long final_it)
{
    int me = cc_rank(), n = cc_size();
    if (final_it < 0) {
        if (op == OP_ALLTOALL)
            for (int d = 0; d < n; d++)
                cc_payload_fill(b->s + (size_t)d * size, size, me * n + d);
        if (op == OP_BCAST)
            cc_payload_fill(b->r, size, n);
        return;
    }
    memset(b->r, 0, size * (size_t)(op == OP_ALLTOALL ? n : 1));
    if (op == OP_BCAST && me == root_of(final_it, n))
        cc_payload_fill(b->r, size, n);
}

/* The slowest rank's median of batch means and mean, in us per call. */
static struct cc_timing time_op(const struct opts *o, int op, struct bufs *b, size_t size)
{
    const struct cc_sweep *sw = &o->sw;
    double elapsed[1024];
    long long count[1024];
    prepare(op, b, size, -1);
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (long long it = -sw->warmup; it < 0; it++)
        call(op, b, size, it, 0, 0);
    for (int k = 0; k < sw->batches; k++) {
        long long first = cc_batch_start(k, sw->batches, sw->iters);
        long long end = cc_batch_start(k + 1, sw->batches, sw->iters);
        double t0 = MPI_Wtime();
        for (long long it = first; it < end; it++)
            call(op, b, size, it, 0, 0);
        elapsed[k] = MPI_Wtime() - t0;
        count[k] = end - first;
    }
    struct cc_timing t = cc_batch_timing(elapsed, count, sw->batches), worst;
    CC_CHECK(MPI_Allreduce(&t, &worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    return worst;
}

/* One untimed, validated call of every op at every size before any timing: a library's lazy
 * setup (connections, shared-memory segments, algorithm tables) is not the first op's time. */
static void warm_up(const struct opts *o, struct bufs *b)
{
    for (int op = 0; op < NOPS; op++)
        for (int k = 0; o->ops[op] && k < (op == OP_BARRIER ? 1 : o->sw.nsizes); k++) {
            size_t size = op == OP_BARRIER ? 0 : o->sw.sizes[k];
            prepare(op, b, size, -1);
            call(op, b, size, -1 - o->sw.warmup, 0, 0);
        }
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    struct opts o;
    parse(argc, argv, &o);
    int me = cc_rank(), n = cc_size();
    struct bufs b = {cc_malloc(o.sw.max * (size_t)n, "the send buffer"),
                     cc_malloc(o.sw.max * (size_t)n, "the receive buffer")};
    if (me == 0)
        printf("# collectives: one untimed call of every op and size first; then per op and "
               "size MPI_Barrier, %lld untimed calls, %lld timed calls "
               "in %d batches (MPI_Wtime around each); time_us = the slowest rank's median of "
               "its batch means, time_mean_us = the slowest rank's mean; size = bytes per rank "
               "(allreduce: doubles x 8, alltoall: each block); then one untimed call with "
               "zeroed buffers whose whole result is checked\n", o.sw.warmup, o.sw.iters,
               o.sw.batches);
    cc_print_meta("collectives", "iters=%lld warmup=%lld batches=%d sizes=%d", o.sw.iters,
                  o.sw.warmup, o.sw.batches, o.sw.nsizes);
    warm_up(&o, &b);
    for (int op = 0; op < NOPS; op++) {
        if (!o.ops[op])
            continue;
        for (int k = 0; k < (op == OP_BARRIER ? 1 : o.sw.nsizes); k++) {
            size_t size = op == OP_BARRIER ? 0 : o.sw.sizes[k];
            struct cc_timing t = time_op(&o, op, &b, size);
            prepare(op, &b, size, o.sw.iters);
            int victim = op == OP_BCAST ? (root_of(o.sw.iters, n) + 1) % n : 0;
            call(op, &b, size, o.sw.iters, 1, o.sw.inject && k == 0 && me == victim);
            if (me == 0)
                printf("DATA op=%s size=%zu iters=%lld batches=%d time_us=%.4f "
                       "time_mean_us=%.4f\n", op_names[op], size, o.sw.iters, o.sw.batches,
                       t.median_us, t.mean_us);
            fflush(stdout);
        }
    }
    long long sum = 0;
    CC_CHECK(MPI_Reduce(&validated, &sum, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (me == 0)
        printf("PASS validated=%lld\n", sum);
    free(b.s), free(b.r), free(o.sw.sizes);
    CC_CHECK(MPI_Finalize());
    return 0;
}
