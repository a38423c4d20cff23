/* The steps' coupling of a compute-only run, without MPI: each rank publishes the number of
 * steps it has begun with a C11 release store in a cache line of a segment that MPI only
 * allocates (MPI_Win_allocate_shared over the ranks sharing memory), then spins on acquire
 * loads until each neighbour in its node has begun as many. As MPI's progress does, it
 * spins on a core of its own and yields the core every few thousand loads where the node's
 * ranks outnumber its CPUs (Open MPI yields there: a pure spin left the floor 10-100x the
 * variant's time at 4 ranks on 2 cores, and yielding at 2 ranks on 2 busy cores left it
 * 1-20x, where MPI kept its core). A halo exchange couples the
 * ranks the same way (no rank begins step t+1 before its neighbours have begun step t); so
 * on shared, busy cores a rank waiting for a descheduled neighbour loses the same time in
 * both runs, and only what the exchange itself costs is left between them. Neighbours in
 * other nodes are not waited for (no shared memory there). No data move: the field does
 * not change. */
#ifndef CC_STEPSYNC_H
#define CC_STEPSYNC_H

#include <mpi.h>

struct cc_stepsync;

/* Collective over `shared` (the ranks sharing memory); nbr: world ranks or MPI_PROC_NULL. */
struct cc_stepsync *cc_stepsync_open(MPI_Comm shared, const int nbr[4]);
/* One step begins: publish it, wait until every neighbour in the node has begun it too. */
void cc_stepsync_step(struct cc_stepsync *s);
/* Collective; NULL is nothing to close. */
void cc_stepsync_close(struct cc_stepsync *s);

/* The same for Fortran (bind(C)); nbr in the Fortran binding (MPI_PROC_NULL negative). */
void *cc_stepsync_open_f(MPI_Fint shared, const int *nbr);
void cc_stepsync_step_f(void *s);
void cc_stepsync_close_f(void *s);

#endif
