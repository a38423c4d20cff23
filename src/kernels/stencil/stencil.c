/* stencil: 2-D 5-point heat stencil on an N x N grid (seed 002, after the stencil codes of
 * the "Advanced MPI" tutorial by Balaji, Gropp, Hoefler and Thakur). The same problem
 * (problem.h) runs with one of six halo exchanges: sequential, blocking Send/Recv and
 * nonblocking (exchange.c), MPI-3 shared windows, contiguous or not (shm.c), and a hybrid of
 * shared windows inside a node and Send/Recv between nodes. Every cell of the result is then
 * compared with an independent sequential computation (verify.c, reference.c). */
#include "stencil.h"

/* My block of the global grid and the heat sources in it. */
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

/* The initial field in my interior; ghosts 0 (the Dirichlet border, or not yet received). */
static void block_fill(const block_t *b, double *a)
{
    memset(a, 0, block_doubles(b) * sizeof(double));
    for (int i = 1; i <= b->bx; i++)
        for (int j = 1; j <= b->by; j++)
            AT(b, a, i, j) = initial_value(b->row0 + i, b->col0 + j);
}

static void add_sources(const block_t *b, double *a)
{
    for (int k = 0; k < b->nsrc; k++)
        AT(b, a, b->src[k][0], b->src[k][1]) += 1.0;
}

static void update(const block_t *b, const double *aold, double *anew)
{
    for (int i = 1; i <= b->bx; i++)
        for (int j = 1; j <= b->by; j++)
            AT(b, anew, i, j) = AT(b, aold, i, j) / 2.0
                + (AT(b, aold, i - 1, j) + AT(b, aold, i + 1, j)
                   + AT(b, aold, i, j - 1) + AT(b, aold, i, j + 1)) / 8.0;
}

/* Local total heat and checksum, row by row (partial sums keep the rounding small). */
static void block_sums(const block_t *b, const double *a, double out[2])
{
    out[0] = out[1] = 0.0;
    for (int i = 1; i <= b->bx; i++) {
        double heat = 0.0, check = 0.0;
        for (int j = 1; j <= b->by; j++) {
            heat += AT(b, a, i, j);
            check += AT(b, a, i, j) * checksum_weight(b->row0 + i, b->col0 + j);
        }
        out[0] += heat;
        out[1] += check;
    }
}

/* The node of the window variants: every rank sharing memory, or for hybrid --node-size K
 * runs of K consecutive ranks split out of it (so that they really share memory). */
static MPI_Comm node_comm(const struct options *o, MPI_Comm shared, int nprocs)
{
    MPI_Comm node;
    int fits = 1, size;
    if (o->variant != V_HYBRID || !o->node_size)
        return shared;
    if (o->node_size > nprocs || nprocs % o->node_size != 0)
        cc_usage_error("--node-size %d does not divide the %d ranks into whole nodes",
                       o->node_size, nprocs);
    CC_CHECK(MPI_Comm_split(shared, cc_rank() / o->node_size, cc_rank(), &node));
    CC_CHECK(MPI_Comm_size(node, &size));
    fits = size == o->node_size;
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &fits, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD));
    if (!fits)
        cc_usage_error("--node-size %d: some run of %d consecutive ranks does not share memory "
                       "(see the MPI_COMM_TYPE_SHARED nodes)", o->node_size, o->node_size);
    return node;
}

/* Everything one timed run of the steps needs. */
struct run {
    const struct options *o;
    enum variant variant;  /* the options' variant; V_SEQ for the baseline's runs */
    const block_t *blk;
    double *base;      /* the two arrays, old first */
    size_t nd;
    int windowed, pi, pj;
    const int *sr_nbr;
    MPI_Datatype column;
    const struct shm *shm;
    struct cc_stepsync *sync; /* the floor's runs at more ranks: the steps' coupling */
};

/* Sources go in before the halo exchange, so a source on a block edge reaches the
 * neighbour in the same step, as in the sequential code: every decomposition computes
 * bit-identical grid values. Window epochs, per step t (the node in lockstep):
 *   1. sources into my old array (stores to my block only)
 *   2. shm_fence: my old array (sources, and step t-1's stencil stores) is visible
 *   3. loads of the neighbours' old boundaries into my ghosts, stencil into my new array
 * The new array's stores of step t never meet a load: neighbours read only old arrays.
 * Step t+1 stores into this step's old array only after its fence, which every rank
 * reaches after finishing its step-t loads. So one fence per step suffices.
 * One run starts from the initial field (after a barrier: every rank has finished the
 * previous run) and returns this rank's loop time; *thalo gets its halo part, *cur which
 * array holds the result. */
static double timed_steps(const struct run *r, double *thalo, int *cur)
{
    const block_t *blk = r->blk;
    size_t nd = r->nd;
    enum variant v = r->variant;
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    block_fill(blk, r->base);
    memset(r->base + nd, 0, nd * sizeof(double));
    *cur = 0; /* which of the two arrays is old; the same on every rank */
    *thalo = 0.0;
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));
    double t0 = MPI_Wtime();
    for (int t = 1; t <= r->o->steps; t++) {
        double *aold = r->base + *cur * nd, *anew = r->base + (1 - *cur) * nd;
        add_sources(blk, aold);
        double th = MPI_Wtime();
        if (v == V_SEQ && r->sync)
            cc_stepsync_step(r->sync);
        else if (v == V_SR || v == V_HYBRID)
            exchange_sr(blk, aold, r->sr_nbr, r->pi, r->pj, r->column);
        else if (v == V_NB)
            exchange_nb(blk, aold, r->sr_nbr, r->column);
        if (r->windowed) {
            double *nold[4];
            for (int d = 0; d < 4; d++)
                nold[d] = r->shm->nbase[d] ? r->shm->nbase[d] + *cur * nd : NULL;
            shm_fence(r->shm);
            halo_shm(blk, aold, nold);
        }
        *thalo += MPI_Wtime() - th;
        update(blk, aold, anew);
        *cur = 1 - *cur;
    }
    return MPI_Wtime() - t0;
}

/* The baseline's runs computed the variant's field, bit for bit (1 rank: one block, the same
 * sources and update), or the job fails (exit 3): a ratio is only shown between runs that
 * did the same work. */
static void check_baseline(const struct run *r, int cur, const struct run *seq, int scur)
{
    double got[2], expected[2];
    block_sums(seq->blk, seq->base + (size_t)scur * seq->nd, got);
    block_sums(r->blk, r->base + (size_t)cur * r->nd, expected);
    if (got[0] != expected[0] || got[1] != expected[1])
        cc_validation_error("the baseline's sequential run ended with total heat %.17g and "
                            "checksum %.17g, the variant's with %.17g and %.17g", got[0], got[1],
                            expected[0], expected[1]);
}

/* The times of the runs (sorted), and with --baseline those of the sequential runs and of
 * each pair's ratio sequential/variant. */
struct timings {
    int reps;
    double share; /* the largest halo share of any rank */
    double times[MAX_REPS], seq_times[MAX_REPS], ratios[MAX_REPS];
};

/* Runs of the steps until there are o->reps of them and their times (max over ranks, the
 * same on every rank, so every rank stops together) add up to o->target_s. With a baseline
 * (seq), a compute-only run on the twin's own arrays precedes each run: a pair, timed back
 * to back, so their ratio does not depend on what the machine did between launches. At 1
 * rank the twin is the sequential run and must end with the variant's field; at more, each
 * rank's block computed alone, checked cell by cell against the block's own reference. */
static void repeated_steps(const struct run *r, const struct run *seq, struct timings *tm,
                           int *cur)
{
    int reps = 0, scur = 0;
    double total = 0.0, halo = 0.0, loop = 0.0;
    do {
        double thalo, both[2] = {0.0, 0.0}; /* the variant's run, then its twin's */
        if (seq)
            both[1] = timed_steps(seq, &thalo, &scur);
        both[0] = timed_steps(r, &thalo, cur);
        halo += thalo;
        loop += both[0];
        CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, both, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
        double t = both[0], ts = both[1];
        tm->seq_times[reps] = ts;
        tm->ratios[reps] = ts / t;
        tm->times[reps++] = t;
        total += t + ts; /* a launch lasts as long with a baseline as without */
    } while (reps < MAX_REPS && (reps < r->o->reps || total < r->o->target_s));
    tm->reps = reps;
    tm->share = loop > 0.0 ? halo / loop : 0.0;
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, &tm->share, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    qsort(tm->times, (size_t)reps, sizeof(double), cc_compare_doubles);
    qsort(tm->seq_times, (size_t)reps, sizeof(double), cc_compare_doubles);
    qsort(tm->ratios, (size_t)reps, sizeof(double), cc_compare_doubles);
    if (seq && cc_size() == 1)
        check_baseline(r, *cur, seq, scur);
    else if (seq)
        verify_alone(seq->blk, seq->base + (size_t)scur * seq->nd, r->o->n, r->o->steps);
}

/* The compute-only twin of a run, on arrays of its own (NULL without --baseline): the same
 * block (the whole grid at 1 rank: the sequential run), the same sources and updates, no
 * exchange, no window; its ghosts stay 0. At more ranks it is the floor of the variant's
 * time: what the same ranks take for the same steps without the halo exchange, each step
 * coupled to the neighbours in the node as the exchange couples it (cc_stepsync.h). */
static struct run sequential_twin(const struct run *r, MPI_Comm shared, const int nbr[4])
{
    struct run seq = *r;
    seq.variant = V_SEQ;
    seq.windowed = 0;
    seq.sync = r->o->baseline && cc_size() > 1 ? cc_stepsync_open(shared, nbr) : NULL;
    seq.base = r->o->baseline ? cc_malloc(2 * r->nd * sizeof(double), "the baseline's grid")
                              : NULL;
    return seq;
}

/* The 2-D process grid (MPI_Dims_create); refuses an --n it cannot divide evenly. */
static void process_grid(int n, int nprocs, int *px, int *py)
{
    int dims[2] = {0, 0};
    CC_CHECK(MPI_Dims_create(nprocs, 2, dims));
    *px = dims[0], *py = dims[1];
    if (*px > n || *py > n)
        cc_usage_error("too many ranks (%d) for --n %d: the %d x %d process grid needs at least "
                       "%d points per dimension", nprocs, n, *px, *py, *px);
    if (n % *px != 0 || n % *py != 0)
        cc_usage_error("--n %d is not divisible by the %d x %d process grid of %d ranks "
                       "(choose N as a multiple of %d and %d)", n, *px, *py, nprocs, *px, *py);
}

/* The ranks sharing my memory (*shared, *shared_size) and, for the windowed variants, the
 * emulated node whose window I join (*node); returns the node size every rank reports. */
static int nodes(const struct options *o, int windowed, MPI_Comm *shared, int *shared_size,
                 MPI_Comm *node)
{
    int nprocs = cc_size(), node_size;
    CC_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, cc_rank(), MPI_INFO_NULL,
                                 shared));
    CC_CHECK(MPI_Comm_size(*shared, shared_size));
    if ((o->variant == V_SHM || o->variant == V_SHMNC) && *shared_size != nprocs)
        cc_usage_error("--variant %s needs all ranks on one shared-memory node, but only %d of "
                       "%d share memory here: use --variant hybrid", variant_name[o->variant],
                       *shared_size, nprocs);
    if (windowed)
        *node = node_comm(o, *shared, nprocs);
    CC_CHECK(MPI_Comm_size(windowed ? *node : *shared, &node_size));
    CC_CHECK(MPI_Bcast(&node_size, 1, MPI_INT, 0, MPI_COMM_WORLD));
    return node_size;
}

/* A node holds its ranks' blocks (and with --baseline the twins' blocks, and at more than 1
 * rank the references of the twins' blocks); rank 0 also the reference's two global arrays. */
static void refuse_oversize(const struct options *o, size_t nd, int shared_size)
{
    int n = o->n, twins = o->baseline ? (cc_size() > 1 ? 2 : 1) : 0;
    double blocks = 16.0 * (double)nd * shared_size * (1 + twins);
    double reference = o->verify ? 16.0 * (n + 2.0) * (n + 2.0) : 0.0;
    int too_big = cc_rank() == 0 && cc_exceeds_memory(blocks + reference);
    CC_CHECK(MPI_Bcast(&too_big, 1, MPI_INT, 0, MPI_COMM_WORLD));
    if (too_big)
        cc_usage_error("--n %d needs more memory than this node has%s", n,
                       o->verify ? " (with verification: --verify no needs less)" : "");
}

/* Storage: two arrays (old, new) per rank, private or in the node's shared window.
 * Neighbours in my node are read from the window, not sent to (sr_nbr: MPI_PROC_NULL). */
static double *storage(const struct options *o, int windowed, MPI_Comm node, size_t nd,
                       const int nbr[4], struct shm *shm, int sr_nbr[4])
{
    memcpy(sr_nbr, nbr, 4 * sizeof nbr[0]);
    if (!windowed)
        return cc_malloc(2 * nd * sizeof(double), "the grid");
    shm_alloc(shm, node, o->variant == V_SHM, 2 * nd, nbr);
    for (int d = 0; d < 4; d++)
        if (shm->nbase[d])
            sr_nbr[d] = MPI_PROC_NULL;
    return shm->base;
}

static void print_header(void)
{
    printf("# a run: MPI_Barrier, the steps from the initial field, timed; its time = max over "
           "ranks; runs repeat until --reps of them and --target-seconds of time; time_s = "
           "the median run (time_min_s, time_max_s: the fastest and slowest); step_us = "
           "time_s/steps; halo_share = max over ranks of the loop's fraction spent in halo "
           "exchange and window synchronisation; glups = N*N*steps/time_s/1e9; mem_GBps = "
           "16 B/update (one 8-byte load of aold, one 8-byte store of anew; neighbour loads "
           "assumed cached) * N*N*steps/time_s/1e9, comparable with STREAM copy's 16 B/element; "
           "verify_s = rank 0's time to compute the independent sequential reference, receive "
           "every block and compare every cell (after the loop, not in time_s); with "
           "--baseline: seq_time_s = the median sequential run, each run just before one of "
           "the variant's, seq_ratio = the median of each pair's sequential/variant time (1 "
           "rank), floor_time_s = the median compute-only run (more ranks: the same steps on "
           "each rank's block without the halo exchange, each just before one of the "
           "variant's, its time the max over ranks)\n");
    fflush(stdout);
}

static double median(const double *sorted, int n)
{
    return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

/* Rank 0: the median run's rates, the field's sums, and PASS when every cell was verified. */
static void report(const struct options *o, const struct timings *tm, const double sums[2],
                   double verify_s, long long validated)
{
    int reps = tm->reps;
    double time_s = median(tm->times, reps);
    double updates = (double)o->n * o->n * o->steps;
    printf("RESULT time_s=%.6f step_us=%.3f halo_share=%.4f glups=%.4f mem_GBps=%.3f "
           "total_heat=%.17g checksum=%.17g verify_s=%.3f verified=%d reps=%d "
           "time_min_s=%.6f time_max_s=%.6f",
           time_s, time_s / o->steps * 1e6, tm->share, updates / time_s / 1e9,
           16.0 * updates / time_s / 1e9, sums[0], sums[1], verify_s, o->verify, reps,
           tm->times[0], tm->times[reps - 1]);
    if (o->baseline && cc_size() == 1)
        printf(" seq_time_s=%.6f seq_ratio=%.4f", median(tm->seq_times, reps),
               median(tm->ratios, reps));
    else if (o->baseline)
        printf(" floor_time_s=%.6f", median(tm->seq_times, reps));
    printf("\n");
    if (o->verify)
        printf("PASS validated=%lld\n", validated);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    cc_init(&argc, &argv);
    int rank = cc_rank(), nprocs = cc_size();
    struct options o;
    parse_options(argc, argv, &o);
    int n = o.n, steps = o.steps;
    int windowed = o.variant == V_SHM || o.variant == V_SHMNC || o.variant == V_HYBRID;

    int px, py;
    process_grid(n, nprocs, &px, &py);

    MPI_Comm shared, node = MPI_COMM_NULL;
    int shared_size, node_size = nodes(&o, windowed, &shared, &shared_size, &node);

    /* Row-major process grid: rank = pi * py + pj; north is pi - 1, west is pj - 1. */
    int pi = rank / py, pj = rank % py;
    int nbr[4] = {pi > 0 ? rank - py : MPI_PROC_NULL, pi < px - 1 ? rank + py : MPI_PROC_NULL,
                  pj > 0 ? rank - 1 : MPI_PROC_NULL, pj < py - 1 ? rank + 1 : MPI_PROC_NULL};
    block_t blk;
    block_init(&blk, n, px, py, pi, pj);
    size_t nd = block_doubles(&blk);

    refuse_oversize(&o, nd, shared_size);
    struct shm shm = {.win = MPI_WIN_NULL};
    int sr_nbr[4];
    double *base = storage(&o, windowed, node, nd, nbr, &shm, sr_nbr);
    MPI_Datatype column;
    CC_CHECK(MPI_Type_vector(blk.bx, 1, blk.ld, MPI_DOUBLE, &column));
    CC_CHECK(MPI_Type_commit(&column));

    if (rank == 0)
        print_header();
    cc_print_meta("stencil", "variant=%s n=%d steps=%d px=%d py=%d node_size=%d verify=%s "
                  "min_reps=%d target_s=%g", variant_name[o.variant], n, steps, px, py, node_size,
                  o.verify ? "yes" : "no", o.reps, o.target_s);

    struct run run = {.o = &o, .variant = o.variant, .blk = &blk, .base = base, .nd = nd,
                      .windowed = windowed, .pi = pi, .pj = pj, .sr_nbr = sr_nbr,
                      .column = column, .shm = &shm};
    struct run seq = sequential_twin(&run, shared, nbr);
    struct timings *tm = cc_malloc(sizeof *tm, "the run times");
    int cur;
    repeated_steps(&run, seq.base ? &seq : NULL, tm, &cur);
    double *result = base + cur * nd;

    if (o.inject && rank == nprocs - 1)
        AT(&blk, result, blk.bx, blk.by) += 1e-6;
    double sums[2];
    block_sums(&blk, result, sums);
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));

    long long validated = 0;
    double verify_s = MPI_Wtime();
    if (o.verify)
        validated = verify_grid(&blk, result, n, steps, sums, px, py);
    verify_s = MPI_Wtime() - verify_s;
    /* Other ranks wait here while rank 0 verifies, so an abort finds them inside MPI. */
    CC_CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (rank == 0)
        report(&o, tm, sums, verify_s, validated);

    free(tm);
    free(seq.base);
    cc_stepsync_close(seq.sync);
    CC_CHECK(MPI_Type_free(&column));
    if (windowed)
        shm_free(&shm);
    else
        free(base);
    if (node != MPI_COMM_NULL && node != shared)
        CC_CHECK(MPI_Comm_free(&node));
    CC_CHECK(MPI_Comm_free(&shared));
    MPI_Finalize();
    return 0;
}
