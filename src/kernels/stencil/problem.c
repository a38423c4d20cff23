/* The problem definition of problem.h. Integer arithmetic only, in int64_t with every value
 * below 2^62, so that stencil_problem.F90 computes the very same numbers. */
#include "problem.h"

static const int64_t M31 = (int64_t)1 << 31;

/* One step of the LCG s = (1103515245 s + 12345) mod 2^31. */
static int64_t lcg(int64_t s)
{
    return (1103515245 * s + 12345) % M31;
}

/* A hash of x >= 0 into [0, 2^31): two LCG steps, each followed by an xor-shift that mixes
 * the high bits into the low ones (an LCG alone is affine, hence regular in x). */
static int64_t mix(int64_t x)
{
    int64_t s = lcg(x % M31);
    s ^= s >> 15;
    s = lcg(s);
    return s ^ (s >> 13);
}

void heat_sources(int n, int rc[NSOURCES][2])
{
    int64_t s = 12345;
    for (int k = 0; k < NSOURCES; k++)
        for (int d = 0; d < 2; d++) {
            s = lcg(s);
            rc[k][d] = 1 + (int)(s % n);
        }
}

double initial_value(int64_t i, int64_t j)
{
    return 1.0 + (double)mix(i * 1000003 + j) / (double)M31;
}

double checksum_weight(int64_t i, int64_t j)
{
    return 1.0 + (double)mix(mix(j * 1000003 + i)) / (double)M31;
}
