/* The steps' coupling without MPI (cc_stepsync.h). */
#include "cc_stepsync.h"
#include "cc_util.h"
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

enum { LINE = 64 }; /* one cache line per rank: its step counter */
enum { SPINS = 4096 }; /* loads before each yield of the core */

struct cc_stepsync {
    MPI_Win win;
    char *mine;
    char *peer[4];   /* the neighbours' lines, NULL when not in this node (or none) */
    long long count; /* steps published so far */
    int yield;       /* more ranks in the node than CPUs: yield the core while waiting */
};

static _Atomic long long *counter(char *line)
{
    return (_Atomic long long *)(void *)line;
}

struct cc_stepsync *cc_stepsync_open(MPI_Comm shared, const int nbr[4])
{
    struct cc_stepsync *s = cc_malloc(sizeof *s, "the steps' coupling");
    MPI_Group world, node;
    int in_node[4];
    int ranks;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    CC_CHECK(MPI_Comm_size(shared, &ranks));
    s->count = 0;
    s->yield = cpus > 0 && ranks > cpus;
    CC_CHECK(MPI_Win_allocate_shared(LINE, 1, MPI_INFO_NULL, shared, &s->mine, &s->win));
    atomic_store_explicit(counter(s->mine), 0, memory_order_relaxed);
    CC_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CC_CHECK(MPI_Comm_group(shared, &node));
    CC_CHECK(MPI_Group_translate_ranks(world, 4, nbr, node, in_node));
    for (int d = 0; d < 4; d++) {
        s->peer[d] = NULL;
        if (in_node[d] != MPI_UNDEFINED && in_node[d] != MPI_PROC_NULL) {
            MPI_Aint size;
            int disp;
            CC_CHECK(MPI_Win_shared_query(s->win, in_node[d], &size, &disp, &s->peer[d]));
        }
    }
    CC_CHECK(MPI_Group_free(&world));
    CC_CHECK(MPI_Group_free(&node));
    CC_CHECK(MPI_Barrier(shared)); /* every counter is 0 before anyone publishes */
    return s;
}

void cc_stepsync_step(struct cc_stepsync *s)
{
    long long step = ++s->count;
    atomic_store_explicit(counter(s->mine), step, memory_order_release);
    for (int d = 0; d < 4; d++)
        for (long spins = 1; s->peer[d] &&
             atomic_load_explicit(counter(s->peer[d]), memory_order_acquire) < step; spins++)
            if (s->yield && spins % SPINS == 0)
                sched_yield();
}

void cc_stepsync_close(struct cc_stepsync *s)
{
    if (!s)
        return;
    CC_CHECK(MPI_Win_free(&s->win));
    free(s);
}

void *cc_stepsync_open_f(MPI_Fint shared, const int *nbr)
{
    int c_nbr[4];
    for (int d = 0; d < 4; d++) /* MPI_PROC_NULL differs between the C and Fortran bindings */
        c_nbr[d] = nbr[d] < 0 ? MPI_PROC_NULL : nbr[d];
    return cc_stepsync_open(MPI_Comm_f2c(shared), c_nbr);
}

void cc_stepsync_step_f(void *s)
{
    cc_stepsync_step(s);
}

void cc_stepsync_close_f(void *s)
{
    cc_stepsync_close(s);
}
