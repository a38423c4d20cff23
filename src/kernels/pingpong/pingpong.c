/* Ping-pong between two ranks (seeds 000/004 and 001; Parkbench COMMS1 of seed 003):
 * rank 0 sends a message, rank 1 sends one back; round trips are timed per size in batches,
 * and the median of the batch means is reported. */
#include "cc_sweep.h"

static const char *usage =
    "Usage: pingpong-c [options]   (exactly 2 ranks)\n"
    "Rank 0 sends a message, rank 1 answers; round-trip time per message size, the median\n"
    "of the mean times of batches of consecutive round trips.\n"
    "  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,\n"
    "                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)\n"
    "  --iters N       timed round trips per size (default 1000)\n"
    "  --warmup N      untimed round trips per size before timing (default 100)\n"
    "  --batches B     split the timed round trips into B batches, each timed on its own\n"
    "                  (default 10, or N if --iters N is smaller; at most --iters)\n"
    "  --floor yes|no|tcp  measure the hardware floor (same ranks, same cores, no MPI)\n"
    "                  a batch after each MPI batch of the smallest and largest sizes, 8 B,\n"
    "                  1 KiB and 1 MiB: shared memory on one node, TCP between nodes;\n"
    "                  tcp forces TCP on one node (default yes; FLOOR records)\n"
    "  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)\n"
    "  --help          print this text\n";

/* Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1. */
static uint64_t seq(long long it)
{
    return (uint64_t)(it + 2147483648LL);
}

static void check(const unsigned char *buf, size_t size, int sender, long long it, int whole)
{
    size_t j = cc_payload_mismatch(buf, size, sender, seq(it), whole);
    if (j < size)
        cc_validation_error("size %zu, iteration %lld%s, byte %zu: got %u, expected %u", size, it,
                            it < 0 ? " (warm-up)" : "", j, buf[j],
                            cc_payload_byte(size, sender, seq(it), j));
}

static void round_trip(int rank, unsigned char *sbuf, unsigned char *rbuf, size_t size,
                       long long it)
{
    int peer = 1 - rank, n = (int)size;
    cc_payload_stamp(sbuf, size, rank, seq(it));
    if (rank == 0) {
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD));
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CC_CHECK(MPI_Recv(rbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD));
    }
    check(rbuf, size, peer, it, 0);
}

/* The whole payload of the last round trip's answer. */
static void check_last(const unsigned char *buf, size_t size, int sender, long long it)
{
    check(buf, size, sender, it, 1);
}

static void explain(const struct cc_sweep *sw)
{
    printf("# pingpong: per size MPI_Barrier, %lld untimed round trips, then %lld round trips in "
           "%d batches of consecutive ones, MPI_Wtime around each batch; rtt_us = median of the "
           "batch means, rtt_mean_us = all batches' time/iters, oneway_us = rtt_us/2, bw_MBps = "
           "size/oneway_us (10^6 B/s); validated = received messages checked (iteration stamp in "
           "first/last 8 bytes of each, whole payload of the last)\n",
           sw->warmup, sw->iters, sw->batches);
}

static const struct cc_sweep_kernel pingpong = {
    .name = "pingpong", .explain = explain, .step = round_trip, .messages = 1,
    .time = "rtt", .message = "oneway", .per_time = 2, .check_last = check_last};

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    struct cc_sweep sw;
    cc_sweep_args(argc, argv, "pingpong", usage, &sw);
    return cc_sweep_run(&sw, &pingpong);
}
