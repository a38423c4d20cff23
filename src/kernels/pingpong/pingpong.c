/* Ping-pong between two ranks (seeds 000/004 and 001; Parkbench COMMS1 of seed 003):
 * rank 0 sends a message, rank 1 sends one back; the mean round trip is timed per size. */
#include "cc_util.h"

static const char *usage =
    "Usage: pingpong-c [options]   (exactly 2 ranks)\n"
    "Rank 0 sends a message, rank 1 answers; mean round-trip time per message size.\n"
    "  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,\n"
    "                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)\n"
    "  --iters N       timed round trips per size (default 1000)\n"
    "  --warmup N      untimed round trips per size before timing (default 100)\n"
    "  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)\n"
    "  --help          print this text\n";

/* The payload depends on size and sender, so a message of the wrong size or from the
 * wrong rank is caught, not only a missing one. */
static unsigned char pattern(size_t size, int rank, size_t j)
{
    return (unsigned char)(j * 13 + (j >> 8) + size * 7 + (size_t)rank * 101 + 1);
}

/* Each message also carries a stamp of its iteration in its first and last 8 bytes (all of
 * it when shorter than 16 bytes): a buffer left over from an earlier iteration is caught.
 * Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1. */
static uint64_t stamp_value(long long it, size_t size, int rank)
{
    return (uint64_t)(it + 2147483648LL) * 1000003u ^ ((uint64_t)size << 1) ^ (uint64_t)rank;
}

static unsigned char expected(size_t size, int rank, long long it, size_t j)
{
    size_t k;
    if (size < 16)
        k = j % 8;
    else if (j < 8)
        k = j;
    else if (j >= size - 8)
        k = j - (size - 8);
    else
        return pattern(size, rank, j);
    return (unsigned char)(stamp_value(it, size, rank) >> (8 * k));
}

static void check(const unsigned char *buf, size_t size, int sender, long long it,
                  size_t lo, size_t hi)
{
    for (size_t j = lo; j < hi; j++) {
        unsigned char want = expected(size, sender, it, j);
        if (buf[j] != want)
            cc_validation_error("size %zu, iteration %lld%s, byte %zu: got %u, expected %u",
                                size, it, it < 0 ? " (warm-up)" : "", j, buf[j], want);
    }
}

static void check_ends(const unsigned char *buf, size_t size, int sender, long long it)
{
    if (size < 16) {
        check(buf, size, sender, it, 0, size);
    } else {
        check(buf, size, sender, it, 0, 8);
        check(buf, size, sender, it, size - 8, size);
    }
}

static void stamp(unsigned char *buf, size_t size, int rank, long long it)
{
    for (size_t j = 0; j < size && j < 8; j++)
        buf[j] = expected(size, rank, it, j);
    for (size_t j = size < 16 ? 8 : size - 8; j < size; j++)
        buf[j] = expected(size, rank, it, j);
}

static void round_trip(int rank, unsigned char *sbuf, unsigned char *rbuf, size_t size,
                       long long it)
{
    int peer = 1 - rank, n = (int)size;
    stamp(sbuf, size, rank, it);
    if (rank == 0) {
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD));
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD));
    }
    check_ends(rbuf, size, peer, it);
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    const char *sizes_text = "1:1048576";
    long long iters = 1000, warmup = 100;
    int inject = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0) {
            if (cc_rank() == 0)
                fputs(usage, stdout);
            CC_CHECK(MPI_Finalize());
            return 0;
        } else if ((v = cc_optval(argc, argv, &i, "--sizes"))) {
            sizes_text = v;
        } else if ((v = cc_optval(argc, argv, &i, "--iters"))) {
            iters = cc_parse_int("--iters", v, 1, 1000000000);
        } else if ((v = cc_optval(argc, argv, &i, "--warmup"))) {
            warmup = cc_parse_int("--warmup", v, 0, 1000000000);
        } else if (strcmp(argv[i], "--inject-error") == 0) {
            inject = 1;
        } else {
            cc_usage_error("unknown option '%s' (see --help)", argv[i]);
        }
    }
    size_t *sizes = NULL, max = 0;
    int nsizes = cc_parse_sizes("--sizes", sizes_text, &sizes);
    for (int k = 0; k < nsizes; k++) {
        if (sizes[k] > INT_MAX)
            cc_usage_error("--sizes: %zu bytes do not fit in one message (at most %d)",
                           sizes[k], INT_MAX);
        if (sizes[k] > max)
            max = sizes[k];
    }
    if (cc_size() != 2)
        cc_usage_error("pingpong needs exactly 2 ranks, got %d", cc_size());

    int rank = cc_rank(), peer = 1 - rank;
    unsigned char *sbuf = cc_malloc(max, "the send buffer");
    unsigned char *rbuf = cc_malloc(max, "the receive buffer");
    if (rank == 0)
        printf("# pingpong: per size MPI_Barrier, %lld untimed round trips, then MPI_Wtime around "
               "%lld round trips; rtt_us = elapsed/iters, oneway_us = rtt_us/2, "
               "bw_MBps = size/oneway_us (10^6 B/s); validated = received messages checked "
               "(iteration stamp in first/last 8 bytes of each, whole payload of the last)\n",
               warmup, iters);
    cc_print_meta("pingpong", "iters=%lld warmup=%lld sizes=%d", iters, warmup, nsizes);

    long long validated = 0;
    for (int k = 0; k < nsizes; k++) {
        size_t size = sizes[k];
        for (size_t j = 0; j < size; j++)
            sbuf[j] = pattern(size, rank, j);
        memset(rbuf, 0, size);
        CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
        for (long long it = -warmup; it < 0; it++)
            round_trip(rank, sbuf, rbuf, size, it);
        double t0 = MPI_Wtime();
        for (long long it = 0; it < iters; it++)
            round_trip(rank, sbuf, rbuf, size, it);
        double rtt_us = (MPI_Wtime() - t0) / (double)iters * 1e6;

        /* The middle byte lies outside the stamps, so only the whole-payload check sees it. */
        if (inject && rank == 0 && k == 0)
            rbuf[size / 2] ^= 0x5a;
        check(rbuf, size, peer, iters - 1, 0, size);
        validated += warmup + iters;
        if (rank == 0) {
            double oneway_us = rtt_us / 2;
            printf("DATA size=%zu iters=%lld rtt_us=%.4f oneway_us=%.4f bw_MBps=%.4f\n", size,
                   iters, rtt_us, oneway_us, (double)size / oneway_us);
            fflush(stdout);
        }
    }

    long long total = 0;
    CC_CHECK(MPI_Reduce(&validated, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0)
        printf("PASS validated=%lld\n", total);
    free(sbuf);
    free(rbuf);
    free(sizes);
    CC_CHECK(MPI_Finalize());
    return 0;
}
