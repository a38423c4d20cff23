/* The stencil's problem, and nothing else: what the code under test (stencil.c and its halo
 * exchanges) and the independent reference (reference.c) share. stencil.F90 defines the same
 * problem in stencil_problem.F90, so C and Fortran compute the same grid.
 *   grid:    N x N interior cells (i, j) = 1..N, a border of zeros (Dirichlet 0)
 *   start:   cell (i, j) holds initial_value(i, j), in [1, 2), different in every cell
 *   step:    first one unit of heat is added at each of the NSOURCES cells heat_sources(),
 *            then every interior cell becomes a/2 + (north + south + west + east)/8
 *   summary: total heat and the checksum sum(a(i, j) * checksum_weight(i, j)) */
#ifndef STENCIL_PROBLEM_H
#define STENCIL_PROBLEM_H

#include <stdint.h>

enum { NSOURCES = 3 };

/* Global (row, column) of the sources, 1..n each, from a fixed pseudo-random sequence. */
void heat_sources(int n, int rc[NSOURCES][2]);

/* The initial heat of interior cell (i, j): a hash of the position, so that every halo
 * carries nonzero data that change from step to step. */
double initial_value(int64_t i, int64_t j);

/* The checksum weight of cell (i, j), in [1, 2): another hash, not periodic in any stride,
 * so that values moved to a wrong cell change the checksum. */
double checksum_weight(int64_t i, int64_t j);

#endif
