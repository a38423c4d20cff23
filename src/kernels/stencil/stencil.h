/* What the files of stencil-c share: the options, a rank's block of the grid, and the
 * halo exchanges and verification that work on blocks. */
#ifndef STENCIL_H
#define STENCIL_H

#include "cc_stepsync.h"
#include "cc_util.h"
#include "problem.h"

enum variant { V_SEQ, V_SR, V_NB, V_SHM, V_SHMNC, V_HYBRID, V_COUNT };
extern const char *const variant_name[V_COUNT];

struct options {
    enum variant variant;
    int n, steps, node_size, verify, inject;
    int reps;              /* at least this many timed runs of the steps */
    double target_s;       /* and more until their times add up to this */
    int baseline;          /* a compute-only run (1 rank: sequential) before each run */
};

/* Timed runs of the steps are repeated up to this many times at most. */
#define MAX_REPS 1000

/* options.c: the command line (see its usage text); exits 2 on bad input. */
void parse_options(int argc, char **argv, struct options *o);

enum { NORTH, SOUTH, WEST, EAST };

/* One rank's block: rows 1..bx and columns 1..by of local storage, ghosts at 0 and b+1. */
typedef struct {
    int bx, by, ld;   /* block size; ld = by + 2, the length of a stored row */
    int row0, col0;   /* global index of local row 0 / column 0 */
    int nsrc;
    int src[NSOURCES][2]; /* the heat sources this block owns, local (row, column) */
} block_t;

#define AT(b, a, i, j) ((a)[(size_t)(i) * (size_t)(b)->ld + (size_t)(j)])

/* exchange.c: halo exchange by messages with the neighbours in nbr (MPI_PROC_NULL: none). */
void exchange_sr(const block_t *b, double *a, const int nbr[4], int pi, int pj,
                 MPI_Datatype column);
void exchange_nb(const block_t *b, double *a, const int nbr[4], MPI_Datatype column);

/* shm.c: the node's shared window, holding every rank's two arrays. */
struct shm {
    MPI_Win win;
    MPI_Comm node;
    double *base;     /* my two arrays */
    double *nbase[4]; /* each neighbour's two arrays, NULL if it is not in my node */
};
void shm_alloc(struct shm *s, MPI_Comm node, int contiguous, size_t doubles, const int nbr[4]);
void shm_fence(const struct shm *s);
void halo_shm(const block_t *b, double *a, double *const nold[4]);
void shm_free(struct shm *s);

/* verify.c: every cell of the distributed grid against the reference (exit 3 on the first
 * difference); returns the number of cells compared, on rank 0. */
long long verify_grid(const block_t *b, const double *a, int n, int steps, const double sums[2],
                      int px, int py);

/* verify.c: every cell of a block computed alone (the floor's compute-only run: no halo,
 * ghosts 0) against the independent reference of that block alone (exit 3 on the first
 * difference). */
void verify_alone(const block_t *b, const double *a, int n, int steps);

#endif
