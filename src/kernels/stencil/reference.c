/* The verification reference: the whole problem on one rank, written apart from the code
 * under test. It shares only the problem definition (problem.h) with stencil.c: its own
 * global (n+2) x (n+2) arrays, its own loops, its own source and update code; no blocks,
 * no ghosts, no halo exchange. A part of the grid alone (reference_block) is the same
 * problem on that part, its border 0: what a rank computes without its neighbours. */
#include "reference.h"
#include "problem.h"
#include <stdlib.h>
#include <string.h>

/* Global cell (i, j), 0..n+1 each, of an (n+2) x (n+2) array. */
#define G(g, i, j) ((g)[(size_t)(i) * (size_t)(n + 2) + (size_t)(j)])
/* Cell (i, j), 0..rows+1 and 0..cols+1, of a (rows+2) x (cols+2) array. */
#define B(g, i, j) ((g)[(size_t)(i) * (size_t)(cols + 2) + (size_t)(j)])

double *reference_block(int n, int steps, int rows, int cols, int row0, int col0)
{
    size_t cells = (size_t)(rows + 2) * (size_t)(cols + 2);
    double *g = malloc(cells * sizeof(double)), *next = malloc(cells * sizeof(double));
    if (!g || !next) {
        free(g);
        free(next);
        return NULL;
    }
    memset(g, 0, cells * sizeof(double)); /* the border stays 0 in both arrays */
    memset(next, 0, cells * sizeof(double));
    for (int i = 1; i <= rows; i++)
        for (int j = 1; j <= cols; j++)
            B(g, i, j) = initial_value(row0 + i, col0 + j);

    int src[NSOURCES][2], inside = 0;
    heat_sources(n, src);
    for (int k = 0; k < NSOURCES; k++) /* the sources in this part, in its own coordinates */
        if (src[k][0] > row0 && src[k][0] <= row0 + rows && src[k][1] > col0 &&
            src[k][1] <= col0 + cols) {
            src[inside][0] = src[k][0] - row0;
            src[inside++][1] = src[k][1] - col0;
        }
    for (int t = 0; t < steps; t++) {
        for (int k = 0; k < inside; k++)
            B(g, src[k][0], src[k][1]) += 1.0;
        for (int i = 1; i <= rows; i++)
            for (int j = 1; j <= cols; j++) {
                double around = B(g, i - 1, j) + B(g, i + 1, j) + B(g, i, j - 1) + B(g, i, j + 1);
                B(next, i, j) = B(g, i, j) / 2.0 + around / 8.0;
            }
        double *swap = g;
        g = next;
        next = swap;
    }
    free(next);
    return g;
}

double *reference_grid(int n, int steps)
{
    return reference_block(n, steps, n, n, 0, 0);
}

void reference_sums(int n, const double *g, double sums[2])
{
    sums[0] = sums[1] = 0.0;
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++) {
            sums[0] += G(g, i, j);
            sums[1] += G(g, i, j) * checksum_weight(i, j);
        }
}
