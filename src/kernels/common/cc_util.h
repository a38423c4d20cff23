/* Helpers shared by the C kernels: checked MPI calls, argument parsing, records.
 * Conventions (records, exit codes) are described in ../README.md. */
#ifndef CC_UTIL_H
#define CC_UTIL_H

#include <mpi.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { CC_EXIT_USAGE = 2, CC_EXIT_VALIDATION = 3, CC_EXIT_MPI = 4 };

/* Ends the whole job with exit code `code`. MPI_Abort need not return, but a library may
 * only ask its process manager to end the job and return (MPICH 5 does): this rank must not
 * then go on (to a PASS line, say), so it ends itself at once. */
static inline void cc_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
    _exit(code);
}

/* Every MPI call goes through CC_CHECK; MPI_COMM_WORLD is set to MPI_ERRORS_RETURN in
 * cc_init so that a failing call is named here instead of dying inside the library. */
#define CC_CHECK(call) cc_check_((call), #call, __FILE__, __LINE__)

static inline void cc_check_(int rc, const char *what, const char *file, int line)
{
    if (rc == MPI_SUCCESS)
        return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    fprintf(stderr, "ERROR: %s failed at %s:%d: %s\n", what, file, line, msg);
    fflush(stderr);
    cc_abort(CC_EXIT_MPI);
}

static inline int cc_rank(void)
{
    int rank = 0;
    CC_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    return rank;
}

static inline int cc_size(void)
{
    int size = 0;
    CC_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    return size;
}

static inline void cc_init(int *argc, char ***argv)
{
    CC_CHECK(MPI_Init(argc, argv));
    CC_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
}

/* Bad input. Every rank parses the same arguments and so reaches this call: rank 0 says
 * what is wrong in one line, all ranks finalize, the job exits 2 without a hang. */
static inline void cc_usage_error(const char *fmt, ...)
{
    if (cc_rank() == 0) {
        va_list ap;
        va_start(ap, fmt);
        fputs("ERROR: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        fflush(stderr);
    }
    MPI_Finalize();
    exit(CC_EXIT_USAGE);
}

/* Received data differ from what was sent: only the rank that saw it knows, so abort. The
 * line goes out in one write, and the launcher gets a moment to forward it: hydra may kill
 * the job on MPI_Abort before relaying stderr. */
static inline void cc_validation_error(const char *fmt, ...)
{
    char line[1024];
    int len = snprintf(line, sizeof line, "ERROR: validation failed on rank %d: ", cc_rank());
    va_list ap;
    va_start(ap, fmt);
    len += vsnprintf(line + len, sizeof line - (size_t)len - 1, fmt, ap);
    va_end(ap);
    len = len < (int)sizeof line - 1 ? len : (int)sizeof line - 2;
    line[len++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, line, (size_t)len);
    (void)ignored;
    double until = MPI_Wtime() + 0.3;
    while (MPI_Wtime() < until)
        ;
    cc_abort(CC_EXIT_VALIDATION);
}

/* argv[*i] is the option `name`: returns its value and advances *i. */
static inline const char *cc_optval(int argc, char **argv, int *i, const char *name)
{
    if (strcmp(argv[*i], name) != 0)
        return NULL;
    if (*i + 1 >= argc)
        cc_usage_error("%s needs a value", name);
    *i += 1;
    return argv[*i];
}

/* --help: rank 0 prints `usage`, every rank finalizes, the program exits 0. */
static inline void cc_help(const char *usage)
{
    if (cc_rank() == 0) {
        fputs(usage, stdout);
        fflush(stdout);
    }
    CC_CHECK(MPI_Finalize());
    exit(0);
}

static inline void cc_unknown_option(const char *arg)
{
    cc_usage_error("unknown option '%s' (see --help)", arg);
}

static inline long long cc_parse_int(const char *opt, const char *text, long long min, long long max)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0')
        cc_usage_error("%s: '%s' is not a whole number", opt, text);
    if (v < min || v > max)
        cc_usage_error("%s: %lld is out of range [%lld, %lld]", opt, v, min, max);
    return v;
}

static inline double cc_parse_double(const char *opt, const char *text, double min, double max)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0')
        cc_usage_error("%s: '%s' is not a number", opt, text);
    if (!(v >= min && v <= max))
        cc_usage_error("%s: %g is out of range [%g, %g]", opt, v, min, max);
    return v;
}

static inline size_t cc_physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return (pages > 0 && page > 0) ? (size_t)pages * (size_t)page : SIZE_MAX;
}

/* More than 90% of the node's memory: the rest is left to the system and the MPI library. */
static inline int cc_exceeds_memory(double bytes)
{
    return bytes > 0.9 * (double)cc_physical_memory();
}

/* A byte count: digits with an optional k/m/g suffix (KiB, MiB, GiB); at least 1 and no
 * more than the node's physical memory. */
static inline size_t cc_parse_bytes(const char *opt, const char *text)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno != 0 || end == text)
        cc_usage_error("%s: '%s' is not a byte count", opt, text);
    unsigned long long mult = 1;
    if (*end == 'k' || *end == 'K') mult = 1ULL << 10, end++;
    else if (*end == 'm' || *end == 'M') mult = 1ULL << 20, end++;
    else if (*end == 'g' || *end == 'G') mult = 1ULL << 30, end++;
    if (*end != '\0')
        cc_usage_error("%s: '%s' is not a byte count", opt, text);
    if (v <= 0)
        cc_usage_error("%s: sizes must be positive, got '%s'", opt, text);
    unsigned long long bytes = (unsigned long long)v * mult;
    if (bytes / mult != (unsigned long long)v || bytes > cc_physical_memory())
        cc_usage_error("%s: %s bytes is more than this node's memory (%zu bytes)", opt, text,
                       cc_physical_memory());
    return (size_t)bytes;
}

/* A size list: "8,64,512" or a power-of-two range "lo:hi". Returns the count; *out is
 * malloc'ed and ascending order is the caller's choice (lists keep the given order). */
static inline int cc_parse_sizes(const char *opt, const char *text, size_t **out)
{
    const char *colon = strchr(text, ':');
    size_t cap = 64, n = 0;
    size_t *sizes = malloc(cap * sizeof *sizes);
    if (!sizes)
        cc_usage_error("%s: out of memory", opt);
    if (colon) {
        char lo_text[64], hi_text[64];
        size_t lo_len = (size_t)(colon - text);
        if (lo_len == 0 || lo_len >= sizeof lo_text || strlen(colon + 1) >= sizeof hi_text)
            cc_usage_error("%s: '%s' is not a range lo:hi", opt, text);
        memcpy(lo_text, text, lo_len);
        lo_text[lo_len] = '\0';
        strcpy(hi_text, colon + 1);
        size_t lo = cc_parse_bytes(opt, lo_text), hi = cc_parse_bytes(opt, hi_text);
        if (lo > hi)
            cc_usage_error("%s: range '%s' runs backwards", opt, text);
        for (size_t s = lo; s <= hi && n < cap; s *= 2)
            sizes[n++] = s;
    } else {
        char *copy = strdup(text), *save = NULL;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (n == cap)
                cc_usage_error("%s: more than %zu sizes", opt, cap);
            sizes[n++] = cc_parse_bytes(opt, tok);
        }
        free(copy);
        if (n == 0)
            cc_usage_error("%s: no sizes in '%s'", opt, text);
    }
    *out = sizes;
    return (int)n;
}

/* Allocation that turns failure into a clear usage error instead of a crash. */
static inline void *cc_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p) {
        fprintf(stderr, "ERROR: cannot allocate %zu bytes for %s\n", bytes, what);
        cc_abort(CC_EXIT_USAGE);
    }
    return p;
}

/* Timing in batches: the timed iterations 0..iters-1 are split into `batches` runs of
 * consecutive iterations, iteration k going to batch k * batches / iters (sizes differ by at
 * most one). A figure is the median of the batch means, which one disturbed batch (a page
 * fault, a daemon waking up) cannot move; the overall mean is reported beside it. */
enum { CC_DEFAULT_BATCHES = 10 };

/* The batch count: `given` (0: not given, then 10 or iters if fewer); more than iters is
 * bad input. */
static inline int cc_batch_count(long long given, long long iters)
{
    if (given > iters)
        cc_usage_error("--batches %lld is more than --iters %lld: every batch needs an iteration",
                       given, iters);
    if (given > 0)
        return (int)given;
    return iters < CC_DEFAULT_BATCHES ? (int)iters : CC_DEFAULT_BATCHES;
}

/* The first timed iteration of batch b (b = batches: one past the last iteration). */
static inline long long cc_batch_start(int b, int batches, long long iters)
{
    return ((long long)b * iters + batches - 1) / batches;
}

static inline int cc_batch_of(long long k, int batches, long long iters)
{
    return (int)(k * batches / iters);
}

static inline int cc_compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct cc_timing {
    double median_us, mean_us;
};

/* From the seconds each batch took and its iteration count: the median of the batch means
 * (the middle one, or the mean of the two middle ones) and the mean over all iterations,
 * both in microseconds per iteration. */
static inline struct cc_timing cc_batch_timing(const double *elapsed, const long long *count,
                                               int batches)
{
    double *means = cc_malloc((size_t)batches * sizeof(double), "the batch means"), total = 0.0;
    long long iters = 0;
    for (int b = 0; b < batches; b++) {
        means[b] = elapsed[b] / (double)count[b] * 1e6;
        total += elapsed[b];
        iters += count[b];
    }
    qsort(means, (size_t)batches, sizeof means[0], cc_compare_doubles);
    double median = batches % 2 ? means[batches / 2]
                                : (means[batches / 2 - 1] + means[batches / 2]) / 2.0;
    free(means);
    return (struct cc_timing){.median_us = median, .mean_us = total / (double)iters * 1e6};
}

/* This process's run delay so far in seconds: the time it was ready to run but waited for a
 * CPU (the second field of /proc/self/schedstat, ns); negative where the kernel has none. */
static inline double cc_run_delay_s(void)
{
    unsigned long long cpu_ns, wait_ns;
    FILE *in = fopen("/proc/self/schedstat", "r");
    int got = in ? fscanf(in, "%llu %llu", &cpu_ns, &wait_ns) : 0;
    if (in)
        fclose(in);
    return got == 2 ? (double)wait_ns * 1e-9 : -1.0;
}

/* The larger of the ranks' shares of the span since (t_begin, wait_begin: MPI_Wtime and
 * cc_run_delay_s then) spent waiting for a CPU, on every rank of `comm`; negative where a rank
 * could not read its run delay. Collective. */
static inline double cc_cpu_wait(MPI_Comm comm, double t_begin, double wait_begin)
{
    double span = MPI_Wtime() - t_begin, wait = cc_run_delay_s();
    double share[2] = {wait < 0 || wait_begin < 0 ? -1.0 : (wait - wait_begin) / span, 0.0};
    share[1] = -share[0];
    CC_CHECK(MPI_Allreduce(MPI_IN_PLACE, share, 2, MPI_DOUBLE, MPI_MAX, comm));
    return share[1] > 0.0 ? -1.0 : share[0];     /* the smallest was negative: unknown */
}

/* META record on rank 0: kernel, language, ranks, MPI library, then `fmt` (key=value ...). */
static inline void cc_print_meta(const char *kernel, const char *fmt, ...)
{
    if (cc_rank() != 0)
        return;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    CC_CHECK(MPI_Get_library_version(lib, &len));
    lib[strcspn(lib, "\r\n")] = '\0';
    for (char *c = lib; *c; c++)
        if (*c == '"' || *c == '\t')
            *c = ' ';
    printf("META kernel=%s lang=c ranks=%d mpi=\"%s\" ", kernel, cc_size(), lib);
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
}

#endif
