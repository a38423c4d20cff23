/* Verification: rank 0 computes the independent reference (reference.c), then receives the
 * blocks one at a time and compares every cell; the first difference ends the run with
 * exit code 3. The printed total heat and checksum are compared with the reference's too. */
#include "stencil.h"
#include "reference.h"
#include <math.h>
#include <time.h>

/* Same operations in the same order give the same bits; the tolerance only leaves room for
 * a compiler that contracts a*b+c into one instruction in one code and not in the other. */
static const double TOLERANCE = 1e-12;

static int differs(double got, double want)
{
    return !(fabs(got - want) <= TOLERANCE * fabs(want));
}

/* The rows x cols interior of `owner`'s block, whose cell (1, 1) is global (row0+1, col0+1);
 * got[i * ld + j] is its cell (i+1, j+1). On a difference it names the first cell that differs
 * (scanning rows), how many do, and the one that differs most: a missing halo shows as a
 * small error far into the block and a large one at its edge. */
static void compare_block(const double *ref, int n, const double *got, int rows, int cols,
                          size_t ld, int row0, int col0, int owner)
{
    long long bad = 0;
    size_t first[2] = {0, 0}, worst[2] = {0, 0};
    double most = -1.0;
    for (size_t i = 0; i < (size_t)rows; i++)
        for (size_t j = 0; j < (size_t)cols; j++) {
            double want = ref[(row0 + 1 + i) * (size_t)(n + 2) + col0 + 1 + j];
            double diff = fabs(got[i * ld + j] - want);
            if (!differs(got[i * ld + j], want))
                continue;
            if (bad++ == 0)
                first[0] = i, first[1] = j;
            if (!(diff <= most)) /* NaN counts as the most */
                most = diff, worst[0] = i, worst[1] = j;
        }
    if (bad == 0)
        return;
    size_t fi = first[0], fj = first[1], wi = worst[0], wj = worst[1];
    cc_validation_error("cell (%zu, %zu) of rank %d's block: got %.17g, expected %.17g "
                        "(independent sequential reference); %lld of its %d cells differ, the "
                        "most cell (%zu, %zu): got %.17g, expected %.17g",
                        row0 + 1 + fi, col0 + 1 + fj, owner, got[fi * ld + fj],
                        ref[(row0 + 1 + fi) * (size_t)(n + 2) + col0 + 1 + fj], bad, rows * cols,
                        row0 + 1 + wi, col0 + 1 + wj, got[wi * ld + wj],
                        ref[(row0 + 1 + wi) * (size_t)(n + 2) + col0 + 1 + wj]);
}

/* A rank other than 0 sends its block's interior and waits for rank 0 without spinning:
 * on a full node the waiting ranks would take the cores rank 0's reference needs. */
static void send_block(const block_t *b, const double *a)
{
    int sizes[2] = {b->bx + 2, b->ld}, sub[2] = {b->bx, b->by}, start[2] = {1, 1};
    MPI_Datatype interior;
    MPI_Request req;
    CC_CHECK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &interior));
    CC_CHECK(MPI_Type_commit(&interior));
    CC_CHECK(MPI_Isend(a, 1, interior, 0, 0, MPI_COMM_WORLD, &req));
    for (int done = 0;;) {
        CC_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE));
        if (done)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    CC_CHECK(MPI_Type_free(&interior));
}

long long verify_grid(const block_t *b, const double *a, int n, int steps, const double sums[2],
                      int px, int py)
{
    if (cc_rank() != 0) {
        send_block(b, a);
        return 0;
    }
    double *ref = reference_grid(n, steps);
    double *got = cc_malloc((size_t)b->bx * (size_t)b->by * sizeof(double), "a received block");
    if (!ref) {
        fprintf(stderr, "ERROR: cannot allocate the reference grid for --n %d\n", n);
        cc_abort(CC_EXIT_USAGE);
    }
    compare_block(ref, n, &AT(b, a, 1, 1), b->bx, b->by, (size_t)b->ld, 0, 0, 0);
    for (int r = 1; r < px * py; r++) {
        CC_CHECK(MPI_Recv(got, b->bx * b->by, MPI_DOUBLE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        compare_block(ref, n, got, b->bx, b->by, (size_t)b->by, r / py * b->bx, r % py * b->by, r);
    }

    double want[2];
    const char *what[2] = {"total_heat", "checksum"};
    reference_sums(n, ref, want);
    for (int k = 0; k < 2; k++)
        if (differs(sums[k], want[k]))
            cc_validation_error("%s %.17g differs from the reference's %.17g (relative %.3g > %g)",
                                what[k], sums[k], want[k], fabs(sums[k] - want[k]) / want[k],
                                TOLERANCE);
    free(got);
    free(ref);
    return (long long)n * n;
}
