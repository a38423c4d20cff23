/* stencil: 2-D 5-point heat stencil on an N x N grid (seed 002, after the stencil codes of
 * the "Advanced MPI" tutorial by Balaji, Gropp, Hoefler and Thakur). The same problem runs
 * with one of six halo exchanges: sequential, blocking Send/Recv, nonblocking, MPI-3 shared
 * windows (contiguous or not), and a hybrid of shared windows inside a node and Send/Recv
 * between nodes. The problem definition is shared with stencil.F90: results agree up to the
 * order of the final sums (heat sources are added before the halo exchange, see the loop). */
#include "cc_util.h"
#include <math.h>

enum variant { V_SEQ, V_SR, V_NB, V_SHM, V_SHMNC, V_HYBRID, V_COUNT };
static const char *const variant_name[V_COUNT] = {"seq", "sr", "nb", "shm", "shmnc", "hybrid"};

enum { NORTH, SOUTH, WEST, EAST };
enum { NSOURCES = 3, VERIFY_MAX_POINTS = 4000000 };
static const double TOLERANCE = 1e-12;

/* One rank's block: rows 1..bx and columns 1..by of local storage, ghosts at 0 and b+1. */
typedef struct {
    int bx, by, ld;   /* block size; ld = by + 2, the length of a stored row */
    int row0, col0;   /* global index of local row 0 / column 0 */
    int nsrc;
    int src[NSOURCES][2]; /* the heat sources this block owns, local (row, column) */
} block_t;

#define AT(b, a, i, j) ((a)[(size_t)(i) * (size_t)(b)->ld + (size_t)(j)])

static const char *usage =
    "usage: stencil-c [options]\n"
    "  2-D 5-point heat stencil on an N x N grid, three heat sources, Dirichlet 0 border.\n"
    "  --variant V      seq | sr | nb | shm | shmnc | hybrid (default sr)\n"
    "                   seq: 1 rank; sr: blocking MPI_Send/MPI_Recv halo exchange;\n"
    "                   nb: MPI_Isend/MPI_Irecv + MPI_Waitall; shm: ranks read neighbours'\n"
    "                   boundaries from an MPI-3 shared window (all ranks on one node);\n"
    "                   shmnc: shm with alloc_shared_noncontig=true; hybrid: shmnc inside\n"
    "                   a node, blocking Send/Recv between nodes\n"
    "  --n N            interior points per dimension (default 480); N must be divisible\n"
    "                   by both sides of the MPI_Dims_create process grid\n"
    "  --steps T        time steps (default 100)\n"
    "  --node-size K    hybrid only: emulate nodes of K consecutive ranks (K divides the\n"
    "                   rank count; the K ranks must share memory); default: the real\n"
    "                   MPI_COMM_TYPE_SHARED node. Neighbours in the same node are read\n"
    "                   from the window, all others by Send/Recv, so any such K works;\n"
    "                   K a multiple of the grid's row length gives bands of whole rows\n"
    "  --verify yes|no  rank 0 also runs the sequential code and compares total heat and\n"
    "                   checksum (relative difference <= 1e-12); default yes if N*N <= 4e6\n"
    "  --inject-error   self-test: perturb one grid value after the run, so verification\n"
    "                   must fail with exit code 3 (implies --verify yes)\n"
    "  --help           this text\n";

/* The shared LCG: s = (1103515245 s + 12345) mod 2^31 in 64-bit integers. */
static void heat_sources(int n, int rc[NSOURCES][2])
{
    int64_t s = 12345;
    for (int k = 0; k < NSOURCES; k++)
        for (int d = 0; d < 2; d++) {
            s = (1103515245 * s + 12345) % ((int64_t)1 << 31);
            rc[k][d] = 1 + (int)(s % n);
        }
}

static void block_init(block_t *b, int n, int px, int py, int pi, int pj)
{
    int rc[NSOURCES][2];
    b->bx = n / px;
    b->by = n / py;
    b->ld = b->by + 2;
    b->row0 = pi * b->bx;
    b->col0 = pj * b->by;
    b->nsrc = 0;
    heat_sources(n, rc);
    for (int k = 0; k < NSOURCES; k++) {
        int i = rc[k][0] - b->row0, j = rc[k][1] - b->col0;
        if (i >= 1 && i <= b->bx && j >= 1 && j <= b->by) {
            b->src[b->nsrc][0] = i;
            b->src[b->nsrc][1] = j;
            b->nsrc++;
        }
    }
}

static size_t block_doubles(const block_t *b)
{
    return (size_t)(b->bx + 2) * (size_t)b->ld;
}

static void add_sources(const block_t *b, double *a)
{
    for (int k = 0; k < b->nsrc; k++)
        AT(b, a, b->src[k][0], b->src[k][1]) += 1.0;
}

/* The shared update; the neighbour sum is evaluated left to right in this order. */
static void update(const block_t *b, const double *aold, double *anew)
{
    for (int i = 1; i <= b->bx; i++)
        for (int j = 1; j <= b->by; j++)
            AT(b, anew, i, j) = AT(b, aold, i, j) / 2.0
                + (AT(b, aold, i - 1, j) + AT(b, aold, i + 1, j)
                   + AT(b, aold, i, j - 1) + AT(b, aold, i, j + 1)) / 8.0;
}

/* Local total heat and checksum; the checksum weights use global indices. */
static void block_sums(const block_t *b, const double *a, double out[2])
{
    out[0] = out[1] = 0.0;
    for (int i = 1; i <= b->bx; i++)
        for (int j = 1; j <= b->by; j++) {
            int64_t gi = b->row0 + i, gj = b->col0 + j;
            double v = AT(b, a, i, j);
            out[0] += v;
            out[1] += v * (double)(1 + (gi * 131 + gj * 137) % 17);
        }
}

/* The whole grid on this rank alone: the seq variant and the verification reference. */
static void sequential(int n, int steps, double sums[2])
{
    block_t b;
    block_init(&b, n, 1, 1, 0, 0);
    double *aold = cc_malloc(2 * block_doubles(&b) * sizeof(double), "the sequential grid");
    double *anew = aold + block_doubles(&b);
    memset(aold, 0, 2 * block_doubles(&b) * sizeof(double));
    for (int t = 1; t <= steps; t++) {
        add_sources(&b, aold);
        update(&b, aold, anew);
        double *tmp = aold;
        aold = anew;
        anew = tmp;
    }
    block_sums(&b, aold, sums);
    free(aold < anew ? aold : anew);
}

/* One blocking shift along a line of ranks: even coordinates send first, odd ones receive
 * first, so every Send meets a posted Recv and the line cannot deadlock (no MPI_Sendrecv). */
static void shift(const double *sendbuf, int to, double *recvbuf, int from, int count,
                  MPI_Datatype type, int even, int tag)
{
    if (even) {
        CC_CHECK(MPI_Send(sendbuf, count, type, to, tag, MPI_COMM_WORLD));
        CC_CHECK(MPI_Recv(recvbuf, count, type, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CC_CHECK(MPI_Recv(recvbuf, count, type, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CC_CHECK(MPI_Send(sendbuf, count, type, to, tag, MPI_COMM_WORLD));
    }
}

/* Blocking halo exchange with the neighbours in nbr (MPI_PROC_NULL: none, or same node). */
static void exchange_sr(const block_t *b, double *a, const int nbr[4], int pi, int pj,
                        MPI_Datatype column)
{
    int bx = b->bx, by = b->by;
    shift(&AT(b, a, bx, 1), nbr[SOUTH], &AT(b, a, 0, 1), nbr[NORTH], by, MPI_DOUBLE, pi % 2 == 0, SOUTH);
    shift(&AT(b, a, 1, 1), nbr[NORTH], &AT(b, a, bx + 1, 1), nbr[SOUTH], by, MPI_DOUBLE, pi % 2 == 0, NORTH);
    shift(&AT(b, a, 1, by), nbr[EAST], &AT(b, a, 1, 0), nbr[WEST], 1, column, pj % 2 == 0, EAST);
    shift(&AT(b, a, 1, 1), nbr[WEST], &AT(b, a, 1, by + 1), nbr[EAST], 1, column, pj % 2 == 0, WEST);
}

static void exchange_nb(const block_t *b, double *a, const int nbr[4], MPI_Datatype column)
{
    int bx = b->bx, by = b->by;
    MPI_Request req[8];
    CC_CHECK(MPI_Irecv(&AT(b, a, 0, 1), by, MPI_DOUBLE, nbr[NORTH], SOUTH, MPI_COMM_WORLD, &req[0]));
    CC_CHECK(MPI_Irecv(&AT(b, a, bx + 1, 1), by, MPI_DOUBLE, nbr[SOUTH], NORTH, MPI_COMM_WORLD, &req[1]));
    CC_CHECK(MPI_Irecv(&AT(b, a, 1, 0), 1, column, nbr[WEST], EAST, MPI_COMM_WORLD, &req[2]));
    CC_CHECK(MPI_Irecv(&AT(b, a, 1, by + 1), 1, column, nbr[EAST], WEST, MPI_COMM_WORLD, &req[3]));
    CC_CHECK(MPI_Isend(&AT(b, a, bx, 1), by, MPI_DOUBLE, nbr[SOUTH], SOUTH, MPI_COMM_WORLD, &req[4]));
    CC_CHECK(MPI_Isend(&AT(b, a, 1, 1), by, MPI_DOUBLE, nbr[NORTH], NORTH, MPI_COMM_WORLD, &req[5]));
    CC_CHECK(MPI_Isend(&AT(b, a, 1, by), 1, column, nbr[EAST], EAST, MPI_COMM_WORLD, &req[6]));
    CC_CHECK(MPI_Isend(&AT(b, a, 1, 1), 1, column, nbr[WEST], WEST, MPI_COMM_WORLD, &req[7]));
    MPI_Status status[8]; /* not MPI_STATUSES_IGNORE: gcc 12 warns on MPICH's definition */
    CC_CHECK(MPI_Waitall(8, req, status));
}

/* Shared-window halo: plain loads of the neighbours' boundary values (their current old
 * array, nold[d], NULL when that neighbour is not in this node) into this block's ghosts. */
static void halo_shm(const block_t *b, double *a, double *const nold[4])
{
    int bx = b->bx, by = b->by;
    if (nold[NORTH])
        for (int j = 1; j <= by; j++)
            AT(b, a, 0, j) = AT(b, nold[NORTH], bx, j);
    if (nold[SOUTH])
        for (int j = 1; j <= by; j++)
            AT(b, a, bx + 1, j) = AT(b, nold[SOUTH], 1, j);
    if (nold[WEST])
        for (int i = 1; i <= bx; i++)
            AT(b, a, i, 0) = AT(b, nold[WEST], i, by);
    if (nold[EAST])
        for (int i = 1; i <= bx; i++)
            AT(b, a, i, by + 1) = AT(b, nold[EAST], i, 1);
}

/* Inside the MPI_Win_lock_all epoch, make this rank's stores visible to the node and the
 * others' stores visible here (MPI-3.1 sec. 11.7, shared-memory synchronisation). */
static void shm_fence(MPI_Win win, MPI_Comm node)
{
    CC_CHECK(MPI_Win_sync(win));
    CC_CHECK(MPI_Barrier(node));
    CC_CHECK(MPI_Win_sync(win));
}

static int same_node(const int *in_node, int world_rank)
{
    return world_rank != MPI_PROC_NULL && in_node[world_rank];
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    int rank = cc_rank(), nprocs = cc_size();

    enum variant variant = V_SR;
    int n = 480, steps = 100, node_size = 0, verify = -1, inject = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--help") == 0) {
            cc_help(usage);
        } else if ((v = cc_optval(argc, argv, &i, "--variant"))) {
            int k = 0;
            while (k < V_COUNT && strcmp(v, variant_name[k]) != 0)
                k++;
            if (k == V_COUNT)
                cc_usage_error("--variant: '%s' is not one of seq, sr, nb, shm, shmnc, hybrid", v);
            variant = (enum variant)k;
        } else if ((v = cc_optval(argc, argv, &i, "--n"))) {
            n = (int)cc_parse_int("--n", v, 1, 1000000);
        } else if ((v = cc_optval(argc, argv, &i, "--steps"))) {
            steps = (int)cc_parse_int("--steps", v, 1, 1000000000);
        } else if ((v = cc_optval(argc, argv, &i, "--node-size"))) {
            node_size = (int)cc_parse_int("--node-size", v, 1, INT_MAX);
        } else if ((v = cc_optval(argc, argv, &i, "--verify"))) {
            if (strcmp(v, "yes") == 0)
                verify = 1;
            else if (strcmp(v, "no") == 0)
                verify = 0;
            else
                cc_usage_error("--verify: '%s' is not yes or no", v);
        } else if (strcmp(argv[i], "--inject-error") == 0) {
            inject = 1;
        } else {
            cc_unknown_option(argv[i]);
        }
    }
    if (inject && verify == 0)
        cc_usage_error("--inject-error needs verification: drop --verify no");
    if (verify < 0)
        verify = inject || (long long)n * n <= VERIFY_MAX_POINTS;
    if (variant == V_SEQ && nprocs != 1)
        cc_usage_error("--variant seq needs 1 rank, got %d", nprocs);
    if (node_size && variant != V_HYBRID)
        cc_usage_error("--node-size applies to --variant hybrid only");

    int dims[2] = {0, 0};
    CC_CHECK(MPI_Dims_create(nprocs, 2, dims));
    int px = dims[0], py = dims[1];
    if (px > n || py > n)
        cc_usage_error("too many ranks (%d) for --n %d: the %d x %d process grid needs at least "
                       "%d points per dimension", nprocs, n, px, py, px);
    if (n % px != 0 || n % py != 0)
        cc_usage_error("--n %d is not divisible by the %d x %d process grid of %d ranks "
                       "(choose N as a multiple of %d and %d)", n, px, py, nprocs, px, py);

    /* Ranks sharing memory with this one; for hybrid, the (possibly emulated) node. */
    MPI_Comm shared, node = MPI_COMM_NULL;
    CC_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
    int shared_size;
    CC_CHECK(MPI_Comm_size(shared, &shared_size));
    if ((variant == V_SHM || variant == V_SHMNC) && shared_size != nprocs)
        cc_usage_error("--variant %s needs all ranks on one shared-memory node, but only %d of "
                       "%d share memory here: use --variant hybrid", variant_name[variant],
                       shared_size, nprocs);
    if (variant == V_HYBRID && node_size) {
        if (node_size > nprocs || nprocs % node_size != 0)
            cc_usage_error("--node-size %d does not divide the %d ranks into whole nodes",
                           node_size, nprocs);
        /* Emulated nodes are runs of K consecutive ranks, split out of the real node so
         * that their members really share memory. */
        CC_CHECK(MPI_Comm_split(shared, rank / node_size, rank, &node));
        int size, fits;
        CC_CHECK(MPI_Comm_size(node, &size));
        fits = size == node_size;
        CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
        if (!fits)
            cc_usage_error("--node-size %d: some run of %d consecutive ranks does not share "
                           "memory (see the MPI_COMM_TYPE_SHARED nodes)", node_size, node_size);
    } else if (variant == V_SHM || variant == V_SHMNC || variant == V_HYBRID) {
        node = shared;
    }
    int meta_node_size;
    CC_CHECK(MPI_Comm_size(node != MPI_COMM_NULL ? node : shared, &meta_node_size));
    CC_CHECK(MPI_Bcast(&meta_node_size, 1, MPI_INT, 0, MPI_COMM_WORLD));

    /* Row-major process grid: rank = pi * py + pj; north is pi - 1, west is pj - 1. */
    int pi = rank / py, pj = rank % py;
    int nbr[4] = {pi > 0 ? rank - py : MPI_PROC_NULL, pi < px - 1 ? rank + py : MPI_PROC_NULL,
                  pj > 0 ? rank - 1 : MPI_PROC_NULL, pj < py - 1 ? rank + 1 : MPI_PROC_NULL};
    block_t blk;
    block_init(&blk, n, px, py, pi, pj);
    size_t nd = block_doubles(&blk);

    int too_big = 0;
    if (rank == 0) {
        too_big = cc_exceeds_memory(16.0 * (double)nd * shared_size +
                                    (verify ? 16.0 * (n + 2.0) * (n + 2.0) : 0.0));
    }
    CC_CHECK(MPI_Bcast(&too_big, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (too_big)
        cc_usage_error("--n %d needs more memory than this node has", n);

    /* Storage: two arrays (old, new) per rank, private or in the node's shared window. */
    double *base;
    MPI_Win win = MPI_WIN_NULL;
    double *nbase[4] = {NULL, NULL, NULL, NULL};
    int sr_nbr[4];
    if (node != MPI_COMM_NULL) {
        MPI_Info info = MPI_INFO_NULL;
        if (variant != V_SHM) {
            CC_CHECK(MPI_Info_create(&info));
            CC_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
        }
        CC_CHECK(MPI_Win_allocate_shared((MPI_Aint)(2 * nd * sizeof(double)), sizeof(double),
                                         info, node, &base, &win));
        CC_CHECK(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
        if (info != MPI_INFO_NULL)
            CC_CHECK(MPI_Info_free(&info));

        /* Which world ranks are in my node: those neighbours are read from the window, the
         * others (hybrid only) are reached by Send/Recv. */
        MPI_Group world_group, node_group;
        int node_n;
        CC_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
        CC_CHECK(MPI_Comm_group(node, &node_group));
        CC_CHECK(MPI_Group_size(node_group, &node_n));
        int *node_ranks = cc_malloc(node_n * sizeof(int), "the node's ranks");
        int *world_ranks = cc_malloc(node_n * sizeof(int), "the node's ranks");
        int *in_node = cc_malloc(nprocs * sizeof(int), "the node map");
        for (int r = 0; r < node_n; r++)
            node_ranks[r] = r;
        CC_CHECK(MPI_Group_translate_ranks(node_group, node_n, node_ranks, world_group, world_ranks));
        memset(in_node, 0, nprocs * sizeof(int));
        for (int r = 0; r < node_n; r++)
            in_node[world_ranks[r]] = 1 + r; /* node rank + 1, 0 = elsewhere */
        for (int d = 0; d < 4; d++) {
            sr_nbr[d] = nbr[d];
            if (same_node(in_node, nbr[d])) {
                MPI_Aint size;
                int disp;
                CC_CHECK(MPI_Win_shared_query(win, in_node[nbr[d]] - 1, &size, &disp, &nbase[d]));
                sr_nbr[d] = MPI_PROC_NULL;
            }
        }
        free(node_ranks);
        free(world_ranks);
        free(in_node);
        CC_CHECK(MPI_Group_free(&world_group));
        CC_CHECK(MPI_Group_free(&node_group));
        /* One passive-target epoch for the whole run; order comes from shm_fence. */
        CC_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, win));
    } else {
        base = cc_malloc(2 * nd * sizeof(double), "the grid");
        memcpy(sr_nbr, nbr, sizeof nbr);
    }
    memset(base, 0, 2 * nd * sizeof(double));

    MPI_Datatype column;
    CC_CHECK(MPI_Type_vector(blk.bx, 1, blk.ld, MPI_DOUBLE, &column));
    CC_CHECK(MPI_Type_commit(&column));

    if (rank == 0) {
        printf("# time_s = max over ranks of the timed step loop (MPI_Barrier before); step_us = "
               "time_s/steps; halo_share = max over ranks of the loop's fraction spent in halo "
               "exchange and window synchronisation; glups = N*N*steps/time_s/1e9; mem_GBps = "
               "16 B/update (one 8-byte load of aold, one 8-byte store of anew; neighbour loads "
               "assumed cached) * N*N*steps/time_s/1e9, comparable with STREAM copy's 16 B/element\n");
        fflush(stdout);
    }
    cc_print_meta("stencil", "variant=%s n=%d steps=%d px=%d py=%d node_size=%d",
                  variant_name[variant], n, steps, px, py, meta_node_size);

    /* Sources go in before the halo exchange, so a source on a block edge reaches the
     * neighbour in the same step, as in the sequential code: every decomposition computes
     * bit-identical grid values. Window epochs, per step t (the node in lockstep):
     *   1. sources into my old array (stores to my block only)
     *   2. shm_fence: my old array (sources, and step t-1's stencil stores) is visible
     *   3. loads of the neighbours' old boundaries into my ghosts, stencil into my new array
     * The new array's stores of step t never meet a load: neighbours read only old arrays.
     * Step t+1 stores into this step's old array only after its fence, which every rank
     * reaches after finishing its step-t loads. So one fence per step suffices; the first
     * one also publishes the zeroed arrays. */
    int cur = 0; /* which of the two arrays is old; the same on every rank */
    double thalo = 0.0;
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (int t = 1; t <= steps; t++) {
        double *aold = base + cur * nd, *anew = base + (1 - cur) * nd;
        add_sources(&blk, aold);
        double th = MPI_Wtime();
        if (variant == V_SR || variant == V_HYBRID)
            exchange_sr(&blk, aold, sr_nbr, pi, pj, column);
        else if (variant == V_NB)
            exchange_nb(&blk, aold, sr_nbr, column);
        if (win != MPI_WIN_NULL) {
            double *nold[4];
            for (int d = 0; d < 4; d++)
                nold[d] = nbase[d] ? nbase[d] + cur * nd : NULL;
            shm_fence(win, node);
            halo_shm(&blk, aold, nold);
        }
        thalo += MPI_Wtime() - th;
        update(&blk, aold, anew);
        cur = 1 - cur;
    }
    double tloop = MPI_Wtime() - t0;
    double *result = base + cur * nd;

    double share = tloop > 0.0 ? thalo / tloop : 0.0, time_s = tloop;
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &time_s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &share, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));

    if (inject && rank == 0)
        AT(&blk, result, 1, 1) += 1.0;
    double sums[2];
    block_sums(&blk, result, sums);
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));

    if (verify && rank == 0) {
        double ref[2];
        sequential(n, steps, ref);
        const char *what[2] = {"total_heat", "checksum"};
        for (int k = 0; k < 2; k++)
            if (!(fabs(sums[k] - ref[k]) <= TOLERANCE * fabs(ref[k])))
                cc_validation_error("%s %.17g differs from the sequential %.17g (relative %.3g > %g)",
                                    what[k], sums[k], ref[k], fabs(sums[k] - ref[k]) / fabs(ref[k]),
                                    TOLERANCE);
    }
    /* Other ranks wait here while rank 0 verifies, so an abort finds them inside MPI. */
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (rank == 0) {
        double updates = (double)n * n * steps;
        printf("RESULT time_s=%.6f step_us=%.3f halo_share=%.4f glups=%.4f mem_GBps=%.3f "
               "total_heat=%.17g checksum=%.17g\n",
               time_s, time_s / steps * 1e6, share, updates / time_s / 1e9,
               16.0 * updates / time_s / 1e9, sums[0], sums[1]);
        printf("PASS validated=%d\n", verify);
        fflush(stdout);
    }

    CC_CHECK(MPI_Type_free(&column));
    if (win != MPI_WIN_NULL) {
        CC_CHECK(MPI_Win_unlock_all(win));
        CC_CHECK(MPI_Win_free(&win));
    } else {
        free(base);
    }
    if (node != MPI_COMM_NULL && node != shared)
        CC_CHECK(MPI_Comm_free(&node));
    CC_CHECK(MPI_Comm_free(&shared));
    MPI_Finalize();
    return 0;
}
