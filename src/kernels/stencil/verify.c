/* Verification: rank 0 computes the independent reference (reference.c), then receives the
 * blocks one at a time (each rank sends when rank 0 asks for it) and compares every cell; the
 * first difference ends the run with exit code 3. The printed total heat and checksum are
 * compared with the reference's too. */
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
 * got[i * ld + j] is its cell (i+1, j+1), ref[i * rld + j] what that cell must hold. On a
 * difference it names the first cell that differs (scanning rows), how many do, and the one
 * that differs most: a missing halo shows as a small error far into the block and a large one
 * at its edge. `what` names the reference. */
static void compare_block(const double *ref, size_t rld, const double *got, size_t ld, int rows,
                          int cols, int row0, int col0, int owner, const char *what)
{
    long long bad = 0;
    size_t first[2] = {0, 0}, worst[2] = {0, 0};
    double most = -1.0;
    for (size_t i = 0; i < (size_t)rows; i++)
        for (size_t j = 0; j < (size_t)cols; j++) {
            double want = ref[i * rld + j];
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
                        "(%s); %lld of its %d cells differ, the most cell (%zu, %zu): got "
                        "%.17g, expected %.17g", row0 + 1 + fi, col0 + 1 + fj, owner,
                        got[fi * ld + fj], ref[fi * rld + fj], what, bad, rows * cols,
                        row0 + 1 + wi, col0 + 1 + wj, got[wi * ld + wj], ref[wi * rld + wj]);
}

/* Cell (1, 1) of `owner`'s block in the global reference grid. */
static const double *global_at(const double *ref, int n, int row0, int col0)
{
    return ref + (size_t)(row0 + 1) * (size_t)(n + 2) + (size_t)col0 + 1;
}

static const char *const GLOBAL = "independent sequential reference";

/* Tags of the exchange with rank 0: its go-ahead (no data), then the block. */
enum { TAG_BLOCK = 0, TAG_GO = 1 };

/* A rank other than 0 waits for rank 0's go-ahead without spinning (on a full node the
 * waiting ranks would take the cores rank 0's reference needs), then sends its block's
 * interior while rank 0 receives it: both sides drive the transfer, which a sender that
 * only looked at its request every millisecond slowed to seconds (MPICH 5, 69 MB). */
static void send_block(const block_t *b, const double *a)
{
    int sizes[2] = {b->bx + 2, b->ld}, sub[2] = {b->bx, b->by}, start[2] = {1, 1};
    MPI_Datatype interior;
    MPI_Request go;
    CC_CHECK(MPI_Irecv(NULL, 0, MPI_BYTE, 0, TAG_GO, MPI_COMM_WORLD, &go));
    for (int done = 0;;) {
        CC_CHECK(MPI_Test(&go, &done, MPI_STATUS_IGNORE));
        if (done)
            break;
        nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    }
    CC_CHECK(MPI_Type_create_subarray(2, sizes, sub, start, MPI_ORDER_C, MPI_DOUBLE, &interior));
    CC_CHECK(MPI_Type_commit(&interior));
    CC_CHECK(MPI_Send(a, 1, interior, 0, TAG_BLOCK, MPI_COMM_WORLD));
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
    compare_block(global_at(ref, n, 0, 0), (size_t)n + 2, &AT(b, a, 1, 1), (size_t)b->ld,
                  b->bx, b->by, 0, 0, 0, GLOBAL);
    for (int r = 1; r < px * py; r++) {
        CC_CHECK(MPI_Send(NULL, 0, MPI_BYTE, r, TAG_GO, MPI_COMM_WORLD));
        CC_CHECK(MPI_Recv(got, b->bx * b->by, MPI_DOUBLE, r, TAG_BLOCK, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE));
        int row0 = r / py * b->bx, col0 = r % py * b->by;
        compare_block(global_at(ref, n, row0, col0), (size_t)n + 2, got, (size_t)b->by, b->bx,
                      b->by, row0, col0, r, GLOBAL);
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

void verify_alone(const block_t *b, const double *a, int n, int steps)
{
    double *ref = reference_block(n, steps, b->bx, b->by, b->row0, b->col0);
    if (!ref) {
        fprintf(stderr, "ERROR: cannot allocate the floor's reference block for --n %d\n", n);
        cc_abort(CC_EXIT_USAGE);
    }
    compare_block(ref + b->by + 3, (size_t)b->by + 2, &AT(b, a, 1, 1), (size_t)b->ld, b->bx,
                  b->by, b->row0, b->col0, cc_rank(),
                  "the floor: the block alone, border 0, independent reference");
    free(ref);
}
