/* The verification reference: the whole problem on one rank, written apart from the code
 * under test. It shares only the problem definition (problem.h) with stencil.c: its own
 * global (n+2) x (n+2) arrays, its own loops, its own source and update code; no blocks,
 * no ghosts, no halo exchange. */
#include "reference.h"
#include "problem.h"
#include <stdlib.h>
#include <string.h>

/* Global cell (i, j), 0..n+1 each, of an (n+2) x (n+2) array. */
#define G(g, i, j) ((g)[(size_t)(i) * (size_t)(n + 2) + (size_t)(j)])

double *reference_grid(int n, int steps)
{
    size_t cells = (size_t)(n + 2) * (size_t)(n + 2);
    double *g = malloc(cells * sizeof(double)), *next = malloc(cells * sizeof(double));
    if (!g || !next) {
        free(g);
        free(next);
        return NULL;
    }
    memset(g, 0, cells * sizeof(double)); /* the border stays 0 in both arrays */
    memset(next, 0, cells * sizeof(double));
    for (int i = 1; i <= n; i++)
        for (int j = 1; j <= n; j++)
            G(g, i, j) = initial_value(i, j);

    int src[NSOURCES][2];
    heat_sources(n, src);
    for (int t = 0; t < steps; t++) {
        for (int k = 0; k < NSOURCES; k++)
            G(g, src[k][0], src[k][1]) += 1.0;
        for (int i = 1; i <= n; i++)
            for (int j = 1; j <= n; j++) {
                double around = G(g, i - 1, j) + G(g, i + 1, j) + G(g, i, j - 1) + G(g, i, j + 1);
                G(next, i, j) = G(g, i, j) / 2.0 + around / 8.0;
            }
        double *swap = g;
        g = next;
        next = swap;
    }
    free(next);
    return g;
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
