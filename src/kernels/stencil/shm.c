/* Halo exchange through an MPI-3 shared window: every rank of a node allocates its two arrays
 * in one window, and reads its neighbours' boundary values with plain loads (shm, shmnc, and
 * hybrid inside a node). */
#include "stencil.h"

/* Allocates `doubles` per rank in a window over `node` (contiguous: one block of memory for
 * the node, else alloc_shared_noncontig) and finds the segments of the neighbours in nbr
 * (world ranks) that are in this node. Opens one passive-target epoch for the whole run;
 * order within it comes from shm_fence. */
void shm_alloc(struct shm *s, MPI_Comm node, int contiguous, size_t doubles, const int nbr[4])
{
    MPI_Info info = MPI_INFO_NULL;
    if (!contiguous) {
        CC_CHECK(MPI_Info_create(&info));
        CC_CHECK(MPI_Info_set(info, "alloc_shared_noncontig", "true"));
    }
    s->node = node;
    CC_CHECK(MPI_Win_allocate_shared((MPI_Aint)(doubles * sizeof(double)), sizeof(double), info,
                                     node, &s->base, &s->win));
    CC_CHECK(MPI_Win_set_errhandler(s->win, MPI_ERRORS_RETURN));
    if (info != MPI_INFO_NULL)
        CC_CHECK(MPI_Info_free(&info));

    /* A neighbour's rank in the node, or MPI_UNDEFINED when it lives elsewhere. */
    MPI_Group world_group, node_group;
    int node_nbr[4];
    CC_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    CC_CHECK(MPI_Comm_group(node, &node_group));
    CC_CHECK(MPI_Group_translate_ranks(world_group, 4, nbr, node_group, node_nbr));
    for (int d = 0; d < 4; d++) {
        s->nbase[d] = NULL;
        if (node_nbr[d] != MPI_UNDEFINED && node_nbr[d] != MPI_PROC_NULL) {
            MPI_Aint size;
            int disp;
            CC_CHECK(MPI_Win_shared_query(s->win, node_nbr[d], &size, &disp, &s->nbase[d]));
        }
    }
    CC_CHECK(MPI_Group_free(&world_group));
    CC_CHECK(MPI_Group_free(&node_group));
    CC_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
}

/* Inside the MPI_Win_lock_all epoch, make this rank's stores visible to the node and the
 * others' stores visible here (MPI-3.1 sec. 11.7, shared-memory synchronisation). */
void shm_fence(const struct shm *s)
{
    CC_CHECK(MPI_Win_sync(s->win));
    CC_CHECK(MPI_Barrier(s->node));
    CC_CHECK(MPI_Win_sync(s->win));
}

/* Plain loads of the neighbours' boundary values (their current old array, nold[d], NULL
 * when that neighbour is not in this node) into this block's ghosts. */
void halo_shm(const block_t *b, double *a, double *const nold[4])
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

void shm_free(struct shm *s)
{
    CC_CHECK(MPI_Win_unlock_all(s->win));
    CC_CHECK(MPI_Win_free(&s->win));
}
