/* The hardware floor of a two-rank sweep: what the same two processes, on the same cores, in
 * the same launch, achieve without MPI. Measured batch by batch between the MPI batches, so a
 * machine that is slower today moves both figures and MPI's own cost (MPI over floor) does not.
 *
 * - Both ranks on one node (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) puts them together):
 *   a ping-pong through a shared segment that MPI only allocates (MPI_Win_allocate_shared).
 *   The sender stamps its message in its own segment and publishes the message number with
 *   a C11 release store; the receiver spins on an acquire load of that number, copies `size`
 *   bytes out of the peer's segment with memcpy (the one copy a shared-memory transport must
 *   make) and checks them. 8 B is a round trip of one cache line; 1 MiB is a copy bandwidth.
 * - Ranks on different nodes: a plain TCP ping-pong between the two hosts (rank 1 listens on
 *   an ephemeral port of its host's address and sends address and port by MPI).
 * - Neither (no host address, a socket that fails): a `FLOOR kind=none reason=...` record.
 *
 * Records (rank 0): `FLOOR size=N kind=shm|tcp iters=I batches=B rtt_us= oneway_us= bw_MBps=
 * cpu_wait=`, timed like the MPI figures (batches, the median of the batch means), one floor
 * batch right after each MPI batch of the same size, so both see the same moments of the
 * machine; cpu_wait, the larger of the two ranks' share of that size's measuring spent
 * waiting for a CPU (run delay, /proc/self/schedstat; absent where the kernel has none). Every message is
 * validated (message number and stamps, the whole payload of the last); a wrong value exits 3. */
#ifndef CC_FLOOR_H
#define CC_FLOOR_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* --floor yes (shared memory or TCP, whichever applies), no, tcp (TCP even on one node). */
enum { CC_FLOOR_NO = 0, CC_FLOOR_YES = 1, CC_FLOOR_TCP = 2 };

struct cc_floor;

/* Collective over the two ranks of `comm`; `max` is the largest size measured. */
struct cc_floor *cc_floor_open(MPI_Comm comm, size_t max, int mode);
/* Whether the sweep measures the floor at `size`: its smallest and largest sizes, 8 B,
 * 1 KiB and 1 MiB. */
int cc_floor_wanted(size_t size, const size_t *sizes, int nsizes);
/* Interleaved with the MPI timing of a size (collective): cc_floor_begin fills the message
 * and runs `warmup` untimed round trips (nothing when `wanted` is 0 or no floor applies),
 * cc_floor_batch times `count` round trips right after each MPI batch, cc_floor_end checks
 * the last message whole and prints the FLOOR record (the median of the batch means). */
void cc_floor_begin(struct cc_floor *f, size_t size, long long warmup, int batches, int wanted);
void cc_floor_batch(struct cc_floor *f, long long count);
void cc_floor_end(struct cc_floor *f);
void cc_floor_close(struct cc_floor *f);
/* Parses the value of --floor (yes, no, tcp); bad input is a usage error. */
int cc_floor_mode(const char *text);

/* The same for Fortran (bind(C)); the communicator goes through MPI_Comm_c2f/f2c. */
void *cc_floor_open_f(MPI_Fint comm, int64_t max, int mode);
int cc_floor_wanted_f(int64_t size, const int64_t *sizes, int nsizes);
void cc_floor_begin_f(void *f, int64_t size, int64_t warmup, int batches, int wanted);
void cc_floor_batch_f(void *f, int64_t count);
void cc_floor_end_f(void *f);
void cc_floor_close_f(void *f);

#endif
