/* Halo exchange by messages: blocking Send/Recv (sr, and hybrid between nodes) and
 * nonblocking Isend/Irecv (nb). Rows are contiguous; a column is the `column` vector type. */
#include "stencil.h"

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

void exchange_sr(const block_t *b, double *a, const int nbr[4], int pi, int pj,
                 MPI_Datatype column)
{
    int bx = b->bx, by = b->by;
    /* rows: my last row goes south (into the southern neighbour's north ghost), and back */
    shift(&AT(b, a, bx, 1), nbr[SOUTH], &AT(b, a, 0, 1), nbr[NORTH], by, MPI_DOUBLE, pi % 2 == 0, SOUTH);
    shift(&AT(b, a, 1, 1), nbr[NORTH], &AT(b, a, bx + 1, 1), nbr[SOUTH], by, MPI_DOUBLE, pi % 2 == 0, NORTH);
    /* columns: my last column goes east, my first west */
    shift(&AT(b, a, 1, by), nbr[EAST], &AT(b, a, 1, 0), nbr[WEST], 1, column, pj % 2 == 0, EAST);
    shift(&AT(b, a, 1, 1), nbr[WEST], &AT(b, a, 1, by + 1), nbr[EAST], 1, column, pj % 2 == 0, WEST);
}

void exchange_nb(const block_t *b, double *a, const int nbr[4], MPI_Datatype column)
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
