/* The independent sequential computation that verification compares with (reference.c). */
#ifndef STENCIL_REFERENCE_H
#define STENCIL_REFERENCE_H

/* The (n+2) x (n+2) grid after `steps` steps, row-major with the zero border; malloc'ed,
 * NULL when memory runs out. */
double *reference_grid(int n, int steps);

/* The same steps on the rows x cols part of the grid whose cell (1, 1) is global (row0+1,
 * col0+1), alone: its border 0 (no neighbours), its initial values and the sources inside
 * it; (rows+2) x (cols+2), row-major, malloc'ed, NULL when memory runs out. */
double *reference_block(int n, int steps, int rows, int cols, int row0, int col0);

/* Total heat and checksum of a reference grid. */
void reference_sums(int n, const double *g, double sums[2]);

#endif
