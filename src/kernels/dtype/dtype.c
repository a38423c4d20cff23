/* dtype: ping-pong of non-contiguous data (seed 003, commByte / commDouble).
 * Rank 0 sends and receives the echo in the layout of --send-mode, rank 1 receives and echoes
 * in the layout of --recv-mode. Of `count` useful elements, element k lives in block
 * k / blocklen, and block b starts at element b * stride of the user buffer. */
#include "cc_util.h"

enum mode { CONTIG, STRIDE, LOOP, PACK, SUBARRAY, NMODES };
static const char *const mode_name[NMODES] = {"contig", "stride", "loop", "pack", "subarray"};

/* Values are 0..250 (bytes) or whole numbers >= 0 (doubles), so the gap value never occurs. */
#define BYTE_GAP 0xff
#define DOUBLE_GAP -1.0

struct opts {
    int is_double, stride, blocklen, iters, warmup, batches, inject, nsizes;
    enum mode mode[2]; /* layout of rank 0 (--send-mode) and of rank 1 (--recv-mode) */
    size_t *sizes;
};

/* One rank's layout for one message size. */
struct layout {
    enum mode mode;
    int is_double, peer, count, blocklen, stride, nblocks, pack_bytes;
    size_t slots;        /* elements in the user buffer, gaps included */
    MPI_Datatype elem, type; /* type: vector (stride, pack) or subarray view */
    void *scratch;       /* loop: contiguous copy; pack: pack buffer */
};

static const char *usage =
    "usage: dtype-c [options]   (exactly 2 ranks)\n"
    "Ping-pong of non-contiguous data: rank 0 sends in the layout of --send-mode and\n"
    "receives the echo in it, rank 1 receives and echoes in the layout of --recv-mode.\n"
    "Block b of the user buffer starts at element b*stride and holds blocklen elements.\n"
    "  --type byte|double   element type (default byte)\n"
    "  --stride S           elements from block to block (default 64 byte, 8 double)\n"
    "  --blocklen B         consecutive elements per block, B <= S (default 1)\n"
    "  --send-mode M        rank 0 layout (default contig)\n"
    "  --recv-mode M        rank 1 layout (default contig)\n"
    "      M: contig   elements packed in user memory, sent as count x type\n"
    "         stride   one MPI_Type_vector over the strided buffer\n"
    "         loop     hand copy to/from a contiguous buffer (copies are timed)\n"
    "         pack     MPI_Pack/MPI_Unpack with the vector type, sent as MPI_PACKED\n"
    "         subarray one MPI_Type_create_subarray view (nblocks x stride array,\n"
    "                  first B columns)\n"
    "  --sizes LIST         useful payload bytes, multiples of element size x B:\n"
    "                       '8,64' or power-of-two range 'lo:hi' (default 8:65536)\n"
    "  --iters N            timed round trips per size (default 200)\n"
    "  --warmup N           untimed round trips before them (default 20)\n"
    "  --batches B          split the timed round trips into B batches of consecutive\n"
    "                       ones (default 10, or N if --iters N is smaller; at most\n"
    "                       --iters); rtt_us is the median of the batch means\n"
    "  --inject-error       self-test: corrupt one received element so that the\n"
    "                       validation must fail (exit 3)\n"
    "  --help               this text\n"
    "Records: META, one DATA per size, WAIT cpu_wait=<the sweep's share waiting for a CPU>,\n"
    "PASS validated=<elements checked on both ranks>.\n";

static enum mode parse_mode(const char *opt, const char *text)
{
    for (int m = 0; m < NMODES; m++)
        if (strcmp(text, mode_name[m]) == 0)
            return (enum mode)m;
    cc_usage_error("%s: unknown mode '%s' (contig, stride, loop, pack, subarray)", opt, text);
    return CONTIG;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
    const char *type = "byte", *stride = NULL, *sizes = "8:65536", *v;
    long long batches = 0;
    *o = (struct opts){.blocklen = 1, .iters = 200, .warmup = 20, .mode = {CONTIG, CONTIG}};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            cc_help(usage);
        } else if (strcmp(argv[i], "--inject-error") == 0) {
            o->inject = 1;
        } else if ((v = cc_optval(argc, argv, &i, "--type"))) {
            type = v;
        } else if ((v = cc_optval(argc, argv, &i, "--stride"))) {
            stride = v;
        } else if ((v = cc_optval(argc, argv, &i, "--blocklen"))) {
            o->blocklen = (int)cc_parse_int("--blocklen", v, 1, INT_MAX);
        } else if ((v = cc_optval(argc, argv, &i, "--send-mode"))) {
            o->mode[0] = parse_mode("--send-mode", v);
        } else if ((v = cc_optval(argc, argv, &i, "--recv-mode"))) {
            o->mode[1] = parse_mode("--recv-mode", v);
        } else if ((v = cc_optval(argc, argv, &i, "--sizes"))) {
            sizes = v;
        } else if ((v = cc_optval(argc, argv, &i, "--iters"))) {
            o->iters = (int)cc_parse_int("--iters", v, 1, 1000000000);
        } else if ((v = cc_optval(argc, argv, &i, "--warmup"))) {
            o->warmup = (int)cc_parse_int("--warmup", v, 0, 1000000000);
        } else if ((v = cc_optval(argc, argv, &i, "--batches"))) {
            batches = cc_parse_int("--batches", v, 1, 1000000000);
        } else {
            cc_unknown_option(argv[i]);
        }
    }
    if (strcmp(type, "byte") == 0)
        o->is_double = 0;
    else if (strcmp(type, "double") == 0)
        o->is_double = 1;
    else
        cc_usage_error("--type: unknown type '%s' (byte, double)", type);
    o->stride = o->is_double ? 8 : 64;
    if (stride)
        o->stride = (int)cc_parse_int("--stride", stride, 1, INT_MAX);
    o->batches = cc_batch_count(batches, o->iters);
    if (o->stride < o->blocklen)
        cc_usage_error("--stride %d is smaller than --blocklen %d", o->stride, o->blocklen);

    o->nsizes = cc_parse_sizes("--sizes", sizes, &o->sizes);
    size_t esize = o->is_double ? sizeof(double) : 1, block = esize * (size_t)o->blocklen;
    for (int s = 0; s < o->nsizes; s++) {
        size_t size = o->sizes[s], nblocks = size / block;
        if (size % block != 0)
            cc_usage_error("--sizes: %zu is not a multiple of %zu bytes (element size x blocklen)",
                           size, block);
        if (nblocks > (size_t)(INT_MAX / o->stride) || size / esize > INT_MAX)
            cc_usage_error("--sizes: %zu bytes need more than INT_MAX elements", size);
        if (nblocks * (size_t)o->stride * esize > cc_physical_memory() / 4)
            cc_usage_error("--sizes: the strided buffers of %zu bytes do not fit in memory", size);
    }
    if (cc_size() != 2)
        cc_usage_error("dtype needs exactly 2 ranks, got %d", cc_size());
}

static void layout_init(struct layout *l, const struct opts *o, size_t size, int rank)
{
    *l = (struct layout){.mode = o->mode[rank], .is_double = o->is_double, .peer = 1 - rank,
                         .blocklen = o->blocklen, .stride = o->stride,
                         .elem = o->is_double ? MPI_DOUBLE : MPI_BYTE, .type = MPI_DATATYPE_NULL};
    l->count = (int)(size / (o->is_double ? sizeof(double) : 1));
    l->nblocks = l->count / l->blocklen;
    l->slots = l->mode == CONTIG ? (size_t)l->count : (size_t)l->nblocks * (size_t)l->stride;
    if (l->mode == STRIDE || l->mode == PACK) {
        CC_CHECK(MPI_Type_vector(l->nblocks, l->blocklen, l->stride, l->elem, &l->type));
    } else if (l->mode == SUBARRAY) {
        int sizes[2] = {l->nblocks, l->stride}, sub[2] = {l->nblocks, l->blocklen};
        int start[2] = {0, 0};
        CC_CHECK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, l->elem, &l->type));
    }
    if (l->type != MPI_DATATYPE_NULL)
        CC_CHECK(MPI_Type_commit(&l->type));
    if (l->mode == LOOP)
        l->scratch = cc_malloc((size_t)l->count * (l->is_double ? sizeof(double) : 1), "loop copy");
    if (l->mode == PACK) {
        CC_CHECK(MPI_Pack_size(1, l->type, MPI_COMM_WORLD, &l->pack_bytes));
        l->scratch = cc_malloc((size_t)l->pack_bytes, "pack buffer");
    }
}

static void layout_free(struct layout *l)
{
    if (l->type != MPI_DATATYPE_NULL)
        CC_CHECK(MPI_Type_free(&l->type));
    free(l->scratch);
}

/* The LOOP mode's hand copies, typed as an application would write them: one strided sweep
 * per position in the block, like the seed's loop over a row of a column-major matrix. */
static void gather(const struct layout *l, const void *user)
{
    size_t bl = (size_t)l->blocklen, st = (size_t)l->stride, nb = (size_t)l->nblocks;
    if (l->is_double) {
        const double *u = user;
        double *c = l->scratch;
        for (size_t j = 0; j < bl; j++)
            for (size_t b = 0; b < nb; b++)
                c[b * bl + j] = u[b * st + j];
    } else {
        const unsigned char *u = user;
        unsigned char *c = l->scratch;
        for (size_t j = 0; j < bl; j++)
            for (size_t b = 0; b < nb; b++)
                c[b * bl + j] = u[b * st + j];
    }
}

static void scatter(const struct layout *l, void *user)
{
    size_t bl = (size_t)l->blocklen, st = (size_t)l->stride, nb = (size_t)l->nblocks;
    if (l->is_double) {
        double *u = user;
        const double *c = l->scratch;
        for (size_t j = 0; j < bl; j++)
            for (size_t b = 0; b < nb; b++)
                u[b * st + j] = c[b * bl + j];
    } else {
        unsigned char *u = user;
        const unsigned char *c = l->scratch;
        for (size_t j = 0; j < bl; j++)
            for (size_t b = 0; b < nb; b++)
                u[b * st + j] = c[b * bl + j];
    }
}

static void send_msg(const struct layout *l, const void *user)
{
    int pos = 0;
    switch (l->mode) {
    case CONTIG:
        CC_CHECK(MPI_Send(user, l->count, l->elem, l->peer, 0, MPI_COMM_WORLD));
        break;
    case STRIDE:
    case SUBARRAY:
        CC_CHECK(MPI_Send(user, 1, l->type, l->peer, 0, MPI_COMM_WORLD));
        break;
    case LOOP:
        gather(l, user);
        CC_CHECK(MPI_Send(l->scratch, l->count, l->elem, l->peer, 0, MPI_COMM_WORLD));
        break;
    case PACK:
        CC_CHECK(MPI_Pack(user, 1, l->type, l->scratch, l->pack_bytes, &pos, MPI_COMM_WORLD));
        CC_CHECK(MPI_Send(l->scratch, pos, MPI_PACKED, l->peer, 0, MPI_COMM_WORLD));
        break;
    default:
        break;
    }
}

static void recv_msg(const struct layout *l, void *user)
{
    int pos = 0;
    switch (l->mode) {
    case CONTIG:
        CC_CHECK(MPI_Recv(user, l->count, l->elem, l->peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case STRIDE:
    case SUBARRAY:
        CC_CHECK(MPI_Recv(user, 1, l->type, l->peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        break;
    case LOOP:
        CC_CHECK(MPI_Recv(l->scratch, l->count, l->elem, l->peer, 0, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
        scatter(l, user);
        break;
    case PACK:
        CC_CHECK(MPI_Recv(l->scratch, l->pack_bytes, MPI_PACKED, l->peer, 0, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
        CC_CHECK(MPI_Unpack(l->scratch, l->pack_bytes, &pos, user, 1, l->type, MPI_COMM_WORLD));
        break;
    default:
        break;
    }
}

static double value(const struct layout *l, size_t size, long iter, size_t k)
{
    size_t v = size * 31 + (size_t)iter * 1009 + k;
    return (double)(l->is_double ? v % 1000003 : v % 251);
}

static size_t slot_of(const struct layout *l, size_t k)
{
    if (l->mode == CONTIG)
        return k;
    return (k / (size_t)l->blocklen) * (size_t)l->stride + k % (size_t)l->blocklen;
}

static double get(const struct layout *l, const void *buf, size_t slot)
{
    return l->is_double ? ((const double *)buf)[slot] : ((const unsigned char *)buf)[slot];
}

static void put(const struct layout *l, void *buf, size_t slot, double v)
{
    if (l->is_double)
        ((double *)buf)[slot] = v;
    else
        ((unsigned char *)buf)[slot] = (unsigned char)v;
}

static void fill_gaps(const struct layout *l, void *buf)
{
    for (size_t s = 0; s < l->slots; s++)
        put(l, buf, s, l->is_double ? DOUBLE_GAP : BYTE_GAP);
}

static void fill_values(const struct layout *l, void *buf, size_t size, long iter)
{
    for (size_t k = 0; k < (size_t)l->count; k++)
        put(l, buf, slot_of(l, k), value(l, size, iter, k));
}

static void expect(const struct layout *l, const void *buf, size_t size, long iter, size_t k)
{
    double got = get(l, buf, slot_of(l, k)), want = value(l, size, iter, k);
    if (got != want)
        cc_validation_error("size %zu iteration %ld: element %zu is %g, expected %g", size, iter,
                            k, got, want);
}

/* Every useful element of the last round trip, and every gap still holding its sentinel. */
static size_t check_all(const struct layout *l, const void *buf, size_t size, long iter)
{
    double gap = l->is_double ? DOUBLE_GAP : BYTE_GAP;
    for (size_t k = 0; k < (size_t)l->count; k++)
        expect(l, buf, size, iter, k);
    for (size_t s = 0; s < l->slots; s++)
        if (l->mode != CONTIG && s % (size_t)l->stride >= (size_t)l->blocklen &&
            get(l, buf, s) != gap)
            cc_validation_error("size %zu: gap element %zu of the %s buffer was written (%g)",
                                size, s, mode_name[l->mode], get(l, buf, s));
    return l->slots;
}

/* One size: returns the number of buffer elements this rank checked at the end. */
static size_t run_size(const struct opts *o, size_t size, int first, int rank)
{
    struct layout l;
    layout_init(&l, o, size, rank);
    size_t bytes = l.slots * (l.is_double ? sizeof(double) : 1);
    void *user = cc_malloc(bytes, "user buffer");
    /* Rank 0 receives the echo into its own buffer: an echo that never arrived cannot pass. */
    void *echo = rank == 0 ? cc_malloc(bytes, "echo buffer") : user;
    fill_gaps(&l, user);
    if (rank == 0) {
        fill_gaps(&l, echo);
        fill_values(&l, user, size, 0);
    }
    long last = (long)o->warmup + o->iters - 1;
    double *elapsed = cc_malloc((size_t)o->batches * sizeof(double), "the batch times");
    long long *count = cc_malloc((size_t)o->batches * sizeof(long long), "the batch sizes");
    memset(elapsed, 0, (size_t)o->batches * sizeof(double));
    memset(count, 0, (size_t)o->batches * sizeof(long long));
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    for (long it = 0; it <= last; it++) {
        if (rank == 0) {
            /* Untimed: a per-iteration stamp on the ends, and every element once at the end. */
            if (it == last) {
                fill_values(&l, user, size, it);
            } else {
                put(&l, user, slot_of(&l, 0), value(&l, size, it, 0));
                put(&l, user, slot_of(&l, l.count - 1), value(&l, size, it, l.count - 1));
            }
            double t0 = MPI_Wtime();
            send_msg(&l, user);
            recv_msg(&l, echo);
            double t = MPI_Wtime() - t0;
            if (it >= o->warmup) {
                int b = cc_batch_of(it - o->warmup, o->batches, o->iters);
                elapsed[b] += t;
                count[b]++;
            }
        } else {
            recv_msg(&l, user);
        }
        expect(&l, echo, size, it, 0);
        expect(&l, echo, size, it, l.count - 1);
        if (rank == 1)
            send_msg(&l, user);
    }
    if (o->inject && first && rank == 0) {
        size_t k = (size_t)l.count / 2;
        double v = value(&l, size, last, k);
        put(&l, echo, slot_of(&l, k), l.is_double ? v + 1.0 : (double)(((int)v + 1) % 251));
    }
    size_t checked = check_all(&l, echo, size, last);
    if (rank == 0) {
        struct cc_timing rtt = cc_batch_timing(elapsed, count, o->batches);
        printf("DATA size=%zu count=%d iters=%d batches=%d rtt_us=%.3f oneway_us=%.3f "
               "bw_MBps=%.2f rtt_mean_us=%.3f\n", size, l.count, o->iters, o->batches,
               rtt.median_us, rtt.median_us / 2, (double)size / (rtt.median_us / 2), rtt.mean_us);
        fflush(stdout);
        free(echo);
    }
    free(elapsed);
    free(count);
    free(user);
    layout_free(&l);
    return checked;
}

int main(int argc, char **argv)
{
    struct opts o;
    cc_init(&argc, &argv);
    parse_args(argc, argv, &o);
    int rank = cc_rank();
    if (rank == 0) {
        printf("# dtype: rank 0 times each round trip with MPI_Wtime (warmup excluded) and sums "
               "the times of %d batches of consecutive round trips; rtt_us = median of the batch "
               "means, rtt_mean_us = all batches' time/iters, oneway_us = rtt_us/2, bw_MBps = "
               "useful bytes / oneway_us; size counts useful bytes only; loop and pack copies are "
               "inside the timing\n", o.batches);
        fflush(stdout);
    }
    cc_print_meta("dtype",
                  "type=%s stride=%d blocklen=%d send_mode=%s recv_mode=%s iters=%d warmup=%d "
                  "batches=%d", o.is_double ? "double" : "byte", o.stride, o.blocklen,
                  mode_name[o.mode[0]], mode_name[o.mode[1]], o.iters, o.warmup, o.batches);
    long long checked = 0, total = 0;
    double t_begin = MPI_Wtime(), wait_begin = cc_run_delay_s();
    for (int s = 0; s < o.nsizes; s++)
        checked += (long long)run_size(&o, o.sizes[s], s == 0, rank);
    double wait = cc_cpu_wait(MPI_COMM_WORLD, t_begin, wait_begin);
    CC_CHECK(MPI_Reduce(&checked, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0 && wait >= 0.0)   /* the sweep's share of waiting for a CPU, both ranks' max */
        printf("WAIT cpu_wait=%.4f\n", wait);
    if (rank == 0)
        printf("PASS validated=%lld\n", total);
    free(o.sizes);
    CC_CHECK(MPI_Finalize());
    return 0;
}
