/* The hardware floor of a two-rank sweep (see cc_floor.h). */
#define _DEFAULT_SOURCE     /* MAP_ANONYMOUS under a strict -std=c11 too */
#include "cc_floor.h"
#include "cc_payload.h"
#include "cc_util.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/socket.h>

enum { KIND_NONE, KIND_SHM, KIND_TCP, LINE = 64 };
/* Where the floor's own buffers begin in their first page: 16 bytes in, as glibc places a
 * malloc of 128 KiB or more in a fresh process (its own mapping, after a 16-byte header),
 * which is where every floor measured before was copied to. See floor_buffer. */
enum { BUFFER_OFFSET = 16 };
static const char *KIND_NAMES[] = {"none", "shm", "tcp"};

struct cc_floor {
    MPI_Comm comm;
    int rank, kind, sock;
    MPI_Win win;
    unsigned char *mine, *theirs;   /* the segments: a flag line, then the message */
    unsigned char *sbuf, *rbuf;     /* TCP's send buffer; the copy every receiver makes */
    size_t max;                     /* their size */
    uint64_t next;                  /* message number of the last round trip */
    char why[160];
    /* The size being measured, interleaved with the MPI batches (cc_floor_begin..end). */
    size_t size;
    int active, batches, done;
    double *elapsed;
    long long *count;
    /* When the size's measuring began: wall time, and this rank's scheduler run delay. */
    double t_begin, wait_begin;
};

/* A buffer of the floor in its own anonymous mapping, BUFFER_OFFSET bytes into its first page.
 * Not malloc: where malloc puts a large buffer depends on what the process freed before (glibc
 * raises its mmap threshold to the size of a freed mapped chunk, so a later 1 MiB buffer comes
 * from the heap at another offset in its page). An LD_PRELOAD interposer that calibrated
 * itself with a 1 MiB buffer did that, and so may an MPI library at MPI_Init: the floor's 1 MiB
 * copy then ran between other relative alignments than in plain launches, and on an Intel
 * Xeon VM read another bandwidth. Its own mapping makes the floor the same in every launch,
 * whatever else the process allocated. */
static unsigned char *floor_buffer(size_t size, const char *what)
{
    void *p = mmap(NULL, size + BUFFER_OFFSET, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "ERROR: cannot map %zu bytes for %s: %s\n", size, what, strerror(errno));
        cc_abort(CC_EXIT_USAGE);
    }
    return (unsigned char *)p + BUFFER_OFFSET;
}

static void floor_buffer_free(unsigned char *buf, size_t size)
{
    if (buf)
        munmap(buf - BUFFER_OFFSET, size + BUFFER_OFFSET);
}

static _Atomic uint64_t *flag(unsigned char *segment)
{
    return (_Atomic uint64_t *)(void *)segment;
}

static void check_copy(struct cc_floor *f, size_t size, uint64_t seq, int whole)
{
    int peer = 1 - f->rank;
    size_t j = cc_payload_mismatch(f->rbuf, size, peer, seq, whole);
    if (j < size)
        cc_validation_error("floor (%s), size %zu, message %llu, byte %zu: got %u, expected %u",
                            KIND_NAMES[f->kind], size, (unsigned long long)seq, j, f->rbuf[j],
                            cc_payload_byte(size, peer, seq, j));
}

/* Shared memory: stamp the message in my segment, then publish its number. */
static void shm_send(struct cc_floor *f, size_t size, uint64_t seq)
{
    cc_payload_stamp(f->mine + LINE, size, f->rank, seq);
    atomic_store_explicit(flag(f->mine), seq, memory_order_release);
}

/* Wait for message `seq` in the peer's segment, copy it out, check number and stamps. */
static void shm_recv(struct cc_floor *f, size_t size, uint64_t seq)
{
    uint64_t got;
    while ((got = atomic_load_explicit(flag(f->theirs), memory_order_acquire)) < seq)
        ;
    if (got != seq)
        cc_validation_error("floor (shm), size %zu: message number %llu, expected %llu", size,
                            (unsigned long long)got, (unsigned long long)seq);
    memcpy(f->rbuf, f->theirs + LINE, size);
}

static void tcp_all(struct cc_floor *f, unsigned char *buf, size_t size, int sending)
{
    size_t done = 0;
    while (done < size) {
        ssize_t n = sending ? send(f->sock, buf + done, size - done, MSG_NOSIGNAL)
                            : recv(f->sock, buf + done, size - done, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            fprintf(stderr, "ERROR: floor (tcp): %s failed after %zu of %zu bytes: %s\n",
                    sending ? "send" : "recv", done, size, n ? strerror(errno) : "peer closed");
            cc_abort(CC_EXIT_MPI);
        }
        done += (size_t)n;
    }
}

static void floor_send(struct cc_floor *f, size_t size, uint64_t seq)
{
    if (f->kind == KIND_SHM) {
        shm_send(f, size, seq);
        return;
    }
    cc_payload_stamp(f->sbuf, size, f->rank, seq);
    tcp_all(f, f->sbuf, size, 1);
}

static void floor_recv(struct cc_floor *f, size_t size, uint64_t seq)
{
    if (f->kind == KIND_SHM)
        shm_recv(f, size, seq);
    else
        tcp_all(f, f->rbuf, size, 0);
    check_copy(f, size, seq, 0);
}

/* One round trip: rank 0 sends first, rank 1 answers; both number it f->next + 1. */
static void round_trip(struct cc_floor *f, size_t size)
{
    uint64_t seq = ++f->next;
    if (f->rank == 0) {
        floor_send(f, size, seq);
        floor_recv(f, size, seq);
    } else {
        floor_recv(f, size, seq);
        floor_send(f, size, seq);
    }
}

/* Both ranks in one shared-memory domain: a segment each, the flag line first. */
static int shm_open_segments(struct cc_floor *f, size_t max)
{
    MPI_Comm node;
    int n = 0, unit = 0;
    CC_CHECK(MPI_Comm_split_type(f->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CC_CHECK(MPI_Comm_size(node, &n));
    if (n != 2) {
        CC_CHECK(MPI_Comm_free(&node));
        return 0;
    }
    MPI_Aint bytes = (MPI_Aint)(LINE + (max + LINE - 1) / LINE * LINE);
    void *peer = NULL;
    CC_CHECK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, node, &f->mine, &f->win));
    CC_CHECK(MPI_Win_shared_query(f->win, 1 - f->rank, &bytes, &unit, &peer));
    f->theirs = peer;
    atomic_store_explicit(flag(f->mine), 0, memory_order_relaxed);
    CC_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, f->win));
    CC_CHECK(MPI_Win_sync(f->win));
    CC_CHECK(MPI_Barrier(node));
    CC_CHECK(MPI_Win_sync(f->win));
    CC_CHECK(MPI_Comm_free(&node));
    return 1;
}

/* Rank 1: a listening socket on its host's address; "address port", or "-reason". */
static void tcp_listen(struct cc_floor *f, char *where, size_t len)
{
    char host[256] = "";
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    struct sockaddr_in addr;
    socklen_t alen = sizeof addr;
    int rc = gethostname(host, sizeof host - 1) ? EAI_NONAME
                                                : getaddrinfo(host, NULL, &hints, &ai);
    if (rc) {
        snprintf(where, len, "-no IPv4 address for host %s: %s", host, gai_strerror(rc));
        return;
    }
    addr = *(struct sockaddr_in *)(void *)ai->ai_addr;
    freeaddrinfo(ai);
    addr.sin_port = 0;
    f->sock = socket(AF_INET, SOCK_STREAM, 0);
    if (f->sock < 0 || bind(f->sock, (struct sockaddr *)&addr, sizeof addr) ||
        listen(f->sock, 1) || getsockname(f->sock, (struct sockaddr *)&addr, &alen)) {
        snprintf(where, len, "-cannot listen on %s: %s", host, strerror(errno));
        return;
    }
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
    snprintf(where, len, "%s %u", ip, (unsigned)ntohs(addr.sin_port));
}

static int tcp_connect(struct cc_floor *f, const char *where)
{
    char ip[INET_ADDRSTRLEN + 1] = "";
    unsigned port = 0;
    struct sockaddr_in addr = {.sin_family = AF_INET};
    if (sscanf(where, "%16s %u", ip, &port) != 2 || inet_pton(AF_INET, ip, &addr.sin_addr) != 1)
        return snprintf(f->why, sizeof f->why, "bad address '%s' from rank 1", where), 0;
    addr.sin_port = htons((uint16_t)port);
    f->sock = socket(AF_INET, SOCK_STREAM, 0);
    if (f->sock < 0 || connect(f->sock, (struct sockaddr *)&addr, sizeof addr))
        return snprintf(f->why, sizeof f->why, "cannot connect to %s: %s", where,
                        strerror(errno)), 0;
    return 1;
}

/* Rank 1 listens, rank 0 connects; both learn by MPI whether it worked. */
static int tcp_open(struct cc_floor *f)
{
    char where[160] = "";
    int ok = 0, one = 1;
    if (f->rank == 1)
        tcp_listen(f, where, sizeof where);
    CC_CHECK(MPI_Bcast(where, sizeof where, MPI_CHAR, 1, f->comm));
    if (where[0] == '-')
        snprintf(f->why, sizeof f->why, "%s", where + 1);
    else if (f->rank == 0)
        ok = tcp_connect(f, where);
    CC_CHECK(MPI_Bcast(&ok, 1, MPI_INT, 0, f->comm));
    if (ok && f->rank == 1) {
        int listener = f->sock;
        f->sock = accept(listener, NULL, NULL);
        close(listener);
        if (f->sock < 0)
            cc_validation_error("floor (tcp): accept failed: %s", strerror(errno));
    }
    if (ok)
        setsockopt(f->sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return ok;
}

struct cc_floor *cc_floor_open(MPI_Comm comm, size_t max, int mode)
{
    struct cc_floor *f = cc_malloc(sizeof *f, "the floor");
    *f = (struct cc_floor){.comm = comm, .kind = KIND_NONE, .sock = -1, .win = MPI_WIN_NULL};
    CC_CHECK(MPI_Comm_rank(comm, &f->rank));
    f->max = max ? max : 1;
    f->rbuf = floor_buffer(f->max, "the floor's receive buffer");
    if (mode == CC_FLOOR_NO)
        snprintf(f->why, sizeof f->why, "not asked for (--floor no)");
    else if (mode == CC_FLOOR_YES && shm_open_segments(f, max))
        f->kind = KIND_SHM;
    else if (tcp_open(f))
        f->kind = KIND_TCP;
    if (f->kind == KIND_TCP)
        f->sbuf = floor_buffer(f->max, "the floor's send buffer");
    if (f->kind == KIND_NONE && f->rank == 0) {
        for (char *c = f->why; *c; c++)
            if (*c == '"')
                *c = '\'';
        printf("FLOOR kind=none reason=\"%s\"\n", f->why);
        fflush(stdout);
    }
    return f;
}

int cc_floor_wanted(size_t size, const size_t *sizes, int nsizes)
{
    size_t lo = SIZE_MAX, hi = 0;
    for (int k = 0; k < nsizes; k++) {
        lo = sizes[k] < lo ? sizes[k] : lo;
        hi = sizes[k] > hi ? sizes[k] : hi;
    }
    return size == lo || size == hi || size == 8 || size == 1024 || size == 1048576;
}

void cc_floor_begin(struct cc_floor *f, size_t size, long long warmup, int batches, int wanted)
{
    if (!f)
        return;
    f->active = wanted && f->kind != KIND_NONE;
    if (!f->active)
        return;
    f->size = size, f->batches = batches, f->done = 0;
    f->elapsed = cc_malloc((size_t)batches * sizeof(double), "the floor's batch times");
    f->count = cc_malloc((size_t)batches * sizeof(long long), "the floor's batches");
    CC_CHECK(MPI_Barrier(f->comm));     /* the peer has copied out the previous message */
    cc_payload_fill(f->kind == KIND_SHM ? f->mine + LINE : f->sbuf, size, f->rank);
    memset(f->rbuf, 0, size);
    CC_CHECK(MPI_Barrier(f->comm));
    for (long long it = 0; it < warmup; it++)
        round_trip(f, size);
    f->wait_begin = cc_run_delay_s();
    f->t_begin = MPI_Wtime();
}

void cc_floor_batch(struct cc_floor *f, long long count)
{
    if (!f || !f->active)
        return;
    if (f->done == f->batches)
        cc_usage_error("internal: more floor batches than announced (%d)", f->batches);
    double t0 = MPI_Wtime();
    for (long long it = 0; it < count; it++)
        round_trip(f, f->size);
    f->elapsed[f->done] = MPI_Wtime() - t0;
    f->count[f->done++] = count;
}

void cc_floor_end(struct cc_floor *f)
{
    if (!f || !f->active)
        return;
    long long iters = 0;
    for (int b = 0; b < f->done; b++)
        iters += f->count[b];
    check_copy(f, f->size, f->next, 1);
    struct cc_timing t = cc_batch_timing(f->elapsed, f->count, f->done);
    /* The share of the size's measuring (its MPI and floor batches) that a rank waited for a
     * CPU, the larger of the two ranks': CPU contention, which a floor need not see as MPI
     * does (a pipelined transport waits on its peer's time slice once per chunk). */
    double wait = cc_cpu_wait(f->comm, f->t_begin, f->wait_begin);
    if (f->rank == 0) {
        printf("FLOOR size=%zu kind=%s iters=%lld batches=%d rtt_us=%.4f oneway_us=%.4f "
               "bw_MBps=%.4f", f->size, KIND_NAMES[f->kind], iters, f->done, t.median_us,
               t.median_us / 2, (double)f->size / (t.median_us / 2));
        if (wait >= 0.0)        /* both ranks read their run delay */
            printf(" cpu_wait=%.4f", wait);
        printf("\n");
        fflush(stdout);
    }
    free(f->elapsed);
    free(f->count);
    f->active = 0;
}

void cc_floor_close(struct cc_floor *f)
{
    if (f->kind == KIND_SHM) {
        CC_CHECK(MPI_Win_unlock_all(f->win));
        CC_CHECK(MPI_Win_free(&f->win));
    }
    if (f->sock >= 0)
        close(f->sock);
    floor_buffer_free(f->sbuf, f->max);
    floor_buffer_free(f->rbuf, f->max);
    free(f);
}

int cc_floor_mode(const char *text)
{
    if (strcmp(text, "yes") == 0)
        return CC_FLOOR_YES;
    if (strcmp(text, "no") == 0)
        return CC_FLOOR_NO;
    if (strcmp(text, "tcp") == 0)
        return CC_FLOOR_TCP;
    cc_usage_error("--floor: '%s' is not yes, no or tcp", text);
    return CC_FLOOR_NO;
}

void *cc_floor_open_f(MPI_Fint comm, int64_t max, int mode)
{
    return cc_floor_open(MPI_Comm_f2c(comm), (size_t)max, mode);
}

int cc_floor_wanted_f(int64_t size, const int64_t *sizes, int nsizes)
{
    size_t *s = cc_malloc((size_t)nsizes * sizeof *s, "the floor's sizes");
    for (int k = 0; k < nsizes; k++)
        s[k] = (size_t)sizes[k];
    int wanted = cc_floor_wanted((size_t)size, s, nsizes);
    free(s);
    return wanted;
}

void cc_floor_begin_f(void *f, int64_t size, int64_t warmup, int batches, int wanted)
{
    cc_floor_begin(f, (size_t)size, (long long)warmup, batches, wanted);
}

void cc_floor_batch_f(void *f, int64_t count)
{
    cc_floor_batch(f, (long long)count);
}

void cc_floor_end_f(void *f)
{
    cc_floor_end(f);
}

void cc_floor_close_f(void *f)
{
    cc_floor_close(f);
}
