/* The command line of stencil-c. */
#include "stencil.h"

const char *const variant_name[V_COUNT] = {"seq", "sr", "nb", "shm", "shmnc", "hybrid"};

static const char *usage =
    "usage: stencil-c [options]\n"
    "  2-D 5-point heat stencil on an N x N grid: a pseudo-random initial field in [1, 2),\n"
    "  one unit of heat added at three fixed cells every step, Dirichlet 0 border.\n"
    "  --variant V      seq | sr | nb | shm | shmnc | hybrid (default sr)\n"
    "                   seq: 1 rank; sr: blocking MPI_Send/MPI_Recv halo exchange;\n"
    "                   nb: MPI_Isend/MPI_Irecv + MPI_Waitall; shm: ranks read neighbours'\n"
    "                   boundaries from an MPI-3 shared window (all ranks on one node);\n"
    "                   shmnc: shm with alloc_shared_noncontig=true; hybrid: shmnc inside\n"
    "                   a node, blocking Send/Recv between nodes\n"
    "  --n N            interior points per dimension (default 480); N must be divisible\n"
    "                   by both sides of the MPI_Dims_create process grid\n"
    "  --steps T        time steps (default 100)\n"
    "  --reps R         time the steps R times at least, each from the initial field\n"
    "                   (default 1); RESULT time_s is the median run, time_min_s and\n"
    "                   time_max_s the spread, reps how many ran\n"
    "  --target-seconds S  then repeat until the runs' times add up to S seconds\n"
    "                   (default 0; at most 1000 runs; with --baseline, the pairs' times)\n"
    "  --node-size K    hybrid only: emulate nodes of K consecutive ranks (K divides the\n"
    "                   rank count; the K ranks must share memory); default: the real\n"
    "                   MPI_COMM_TYPE_SHARED node. Neighbours in the same node are read\n"
    "                   from the window, all others by Send/Recv, so any such K works;\n"
    "                   K a multiple of the grid's row length gives bands of whole rows\n"
    "  --verify yes|no  yes (default, any N): rank 0 recomputes the grid with separate\n"
    "                   sequential code, receives every block and compares every cell,\n"
    "                   then total heat and checksum (relative difference <= 1e-12);\n"
    "                   the first difference fails with exit code 3. Needs 16 (N+2)^2\n"
    "                   bytes more on rank 0. no: RESULT says verified=0 and there is\n"
    "                   no PASS line\n"
    "  --baseline yes|no  a parallel variant: before each timed run of the variant, one run\n"
    "                   of the same steps on the same ranks without the halo exchange, on\n"
    "                   private arrays (default no). 1 rank: the sequential run; RESULT\n"
    "                   adds seq_time_s, the median sequential run, and seq_ratio, the\n"
    "                   median over pairs of sequential/variant time: the speedup at 1\n"
    "                   rank from one launch, whatever the machine did between launches.\n"
    "                   More ranks: each rank's block alone, ghosts 0 (compute only);\n"
    "                   RESULT adds floor_time_s, the median such run (max over ranks),\n"
    "                   the floor of time_s; every cell of it is checked against the\n"
    "                   independent reference of the block alone (exit 3 on a difference)\n"
    "  --inject-error   self-test: perturb one grid value of the last rank by 1e-6 after\n"
    "                   the run, so verification must fail with exit code 3\n"
    "  --help           this text\n"
    "Records: META; RESULT time_s step_us halo_share glups mem_GBps total_heat checksum\n"
    "verify_s verified reps time_min_s time_max_s [with --baseline yes: seq_time_s seq_ratio\n"
    "at 1 rank, floor_time_s at more];\n"
    "PASS validated=<cells compared> when verified.\n";

static int yes_no(const char *option, const char *v)
{
    if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
        cc_usage_error("%s: '%s' is not yes or no", option, v);
    return strcmp(v, "yes") == 0;
}

void parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.variant = V_SR, .n = 480, .steps = 100, .verify = 1, .reps = 1};
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
            o->variant = (enum variant)k;
        } else if ((v = cc_optval(argc, argv, &i, "--n"))) {
            o->n = (int)cc_parse_int("--n", v, 1, 1000000);
        } else if ((v = cc_optval(argc, argv, &i, "--steps"))) {
            o->steps = (int)cc_parse_int("--steps", v, 1, 1000000000);
        } else if ((v = cc_optval(argc, argv, &i, "--reps"))) {
            o->reps = (int)cc_parse_int("--reps", v, 1, MAX_REPS);
        } else if ((v = cc_optval(argc, argv, &i, "--target-seconds"))) {
            o->target_s = cc_parse_double("--target-seconds", v, 0.0, 3600.0);
        } else if ((v = cc_optval(argc, argv, &i, "--node-size"))) {
            o->node_size = (int)cc_parse_int("--node-size", v, 1, INT_MAX);
        } else if ((v = cc_optval(argc, argv, &i, "--verify"))) {
            o->verify = yes_no("--verify", v);
        } else if ((v = cc_optval(argc, argv, &i, "--baseline"))) {
            o->baseline = yes_no("--baseline", v);
        } else if (strcmp(argv[i], "--inject-error") == 0) {
            o->inject = 1;
        } else {
            cc_unknown_option(argv[i]);
        }
    }
    if (o->inject && !o->verify)
        cc_usage_error("--inject-error needs verification: drop --verify no");
    if (o->variant == V_SEQ && cc_size() != 1)
        cc_usage_error("--variant seq needs 1 rank, got %d", cc_size());
    if (o->baseline && o->variant == V_SEQ)
        cc_usage_error("--baseline yes needs a parallel variant (got --variant seq)");
    if (o->node_size && o->variant != V_HYBRID)
        cc_usage_error("--node-size applies to --variant hybrid only");
}
