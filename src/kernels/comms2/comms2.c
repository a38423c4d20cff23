/* Simultaneous exchange between two ranks (Parkbench COMMS2 of seed 003): both ranks send
 * at once, so the link is used in both directions; exchanges are timed per size in batches,
 * and the median of the batch means is reported. */
#include "cc_sweep.h"

static const char *usage =
    "Usage: comms2-c [options]   (exactly 2 ranks)\n"
    "Both ranks send to each other at once (full duplex), two rounds per iteration;\n"
    "iteration time per message size, the median of the mean times of batches of\n"
    "consecutive iterations.\n"
    "  --sizes LIST    sizes in bytes: a list 8,64,512 or a power-of-two range lo:hi,\n"
    "                  k/m suffixes mean KiB/MiB (default 1:1048576, 21 sizes)\n"
    "  --iters N       timed iterations per size (default 1000)\n"
    "  --warmup N      untimed iterations per size before timing (default 100)\n"
    "  --batches B     split the timed iterations into B batches, each timed on its own\n"
    "                  (default 10, or N if --iters N is smaller; at most --iters)\n"
    "  --floor yes|no|tcp  measure the hardware floor (same ranks, same cores, no MPI)\n"
    "                  a batch after each MPI batch of the smallest and largest sizes, 8 B,\n"
    "                  1 KiB and 1 MiB: shared memory on one node, TCP between nodes;\n"
    "                  tcp forces TCP on one node (default yes; FLOOR records)\n"
    "  --inject-error  self-test: corrupt one received byte, validation must fail (exit 3)\n"
    "  --help          print this text\n";

/* Warm-up iterations are numbered -warmup..-1, timed ones 0..iters-1; two rounds each. */
static uint64_t seq(long long it, int round)
{
    return (uint64_t)(2 * it + round + 4294967296LL);
}

static void check(const unsigned char *buf, size_t size, int sender, long long it, int round,
                  int whole)
{
    size_t j = cc_payload_mismatch(buf, size, sender, seq(it, round), whole);
    if (j < size)
        cc_validation_error(
            "size %zu, iteration %lld%s, round %d, byte %zu: got %u, expected %u", size, it,
            it < 0 ? " (warm-up)" : "", round, j, buf[j],
            cc_payload_byte(size, sender, seq(it, round), j));
}

/* One iteration: two rounds in which each rank receives while it sends (4 messages). */
static void exchange(int rank, unsigned char *sbuf, unsigned char *rbuf, size_t size,
                     long long it)
{
    int peer = 1 - rank, n = (int)size;
    for (int round = 0; round < 2; round++) {
        MPI_Request req;
        cc_payload_stamp(sbuf, size, rank, seq(it, round));
        CC_CHECK(MPI_Irecv(rbuf, n, MPI_BYTE, peer, round, MPI_COMM_WORLD, &req));
        CC_CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, round, MPI_COMM_WORLD));
        CC_CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
        check(rbuf, size, peer, it, round, 0);
    }
}

/* The whole payload of the last exchange's second round. */
static void check_last(const unsigned char *buf, size_t size, int sender, long long it)
{
    check(buf, size, sender, it, 1, 1);
}

static void explain(const struct cc_sweep *sw)
{
    printf("# comms2: one iteration = 2 rounds of (MPI_Irecv, MPI_Send, MPI_Wait) on both ranks at "
           "once = 4 messages; per size MPI_Barrier, %lld untimed iterations, then %lld iterations "
           "in %d batches of consecutive ones, MPI_Wtime around each batch; exchange_us = median "
           "of the batch means, exchange_mean_us = all batches' time/iters, msg_us = "
           "exchange_us/4 (Parkbench COMMS2), bw_MBps = size/msg_us (10^6 B/s); validated = "
           "received messages checked (iteration stamp in first/last 8 bytes of each, whole "
           "payload of the last)\n",
           sw->warmup, sw->iters, sw->batches);
}

static const struct cc_sweep_kernel comms2 = {
    .name = "comms2", .explain = explain, .step = exchange, .messages = 2,
    .time = "exchange", .message = "msg", .per_time = 4, .check_last = check_last};

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    struct cc_sweep sw;
    cc_sweep_args(argc, argv, "comms2", usage, &sw);
    return cc_sweep_run(&sw, &comms2);
}
