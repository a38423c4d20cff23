/* The independent sequential computation that verification compares with (reference.c). */
#ifndef STENCIL_REFERENCE_H
#define STENCIL_REFERENCE_H

/* The (n+2) x (n+2) grid after `steps` steps, row-major with the zero border; malloc'ed,
 * NULL when memory runs out. */
double *reference_grid(int n, int steps);

/* Total heat and checksum of a reference grid. */
void reference_sums(int n, const double *g, double sums[2]);

#endif
