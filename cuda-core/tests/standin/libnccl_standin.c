/* The stand-in for libnccl.so.2, for cuda-core's nccl tests without a GPU (tests/nccl.rs):
 * compiled at run time by tests/common/standin.rs and loaded through CUDA_CORE_NCCL_PATH in a
 * child process that runs against the stand-in driver (libcuda_standin.c). It is not NCCL: it
 * moves no data. It keeps each communicator's rank, size, device and state, and writes every
 * call, one line each, into the stand-in driver's log (through its standin_mark, as "## ..."),
 * so that a test sees NCCL's calls in order with the driver's (a stream's wait before a
 * collective, a synchronisation before a free). Streams are named as the driver's log names
 * them ("s3"). A call on a communicator that was destroyed or aborted, and a group left open,
 * are logged as MISUSE.
 *
 * Run-time settings (environment):
 *   STANDIN_NCCL_VERSION=CODE      what ncclGetVersion answers (default 23203, 2.32.3)
 *   STANDIN_NCCL_INIT_POLLS=N      a non-blocking communicator (config blocking = 0) stays in
 *                                  progress for N calls of ncclCommGetAsyncError (default 2)
 *   STANDIN_NCCL_ASYNC_ERROR=CODE  ncclCommGetAsyncError answers CODE once the communicator is
 *                                  made (6: ncclRemoteError, a peer that failed)
 *   STANDIN_NCCL_SPLIT_RANK=R      the rank ncclCommSplit gives the new communicator (default:
 *                                  the key), of as many ranks as the parent
 * Build-time: -DSTANDIN_NCCL_NO_SPLIT leaves ncclCommSplit out (an NCCL that lacks it). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int result;
enum { SUCCESS = 0, INVALID_ARGUMENT = 4, INVALID_USAGE = 5, IN_PROGRESS = 7 };

struct comm {
    int rank, nranks, device;
    int polls_left; /* non-blocking: in progress until this reaches 0 */
    int gone;       /* destroyed or aborted: any later call is a misuse */
    int finalized;
    int ops;        /* custom operations made */
};

struct unique_id { unsigned char b[128]; };

struct config { /* ncclConfig_t's leading fields, as nccl.h lays them out */
    size_t size;
    unsigned magic, version;
    int blocking, cgaClusterSize, minCTAs, maxCTAs;
    const char *netName;
    int splitShare, trafficClass;
    const char *commName;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Per thread, as NCCL keeps it. */
static __thread int group_depth;
static unsigned long long next_alloc = 0x7e0000000000ULL;

static long setting(const char *name, long fallback) {
    const char *value = getenv(name);
    return value && *value ? strtol(value, NULL, 0) : fallback;
}

/* The stand-in driver's functions, found in the loaded libcuda.so.1. */
static void *driver(const char *symbol) {
    void *lib = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    return lib ? dlsym(lib, symbol) : NULL;
}

static void note(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *format, ...) {
    char line[300];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    void (*mark)(const char *) = (void (*)(const char *))driver("standin_mark");
    if (mark) mark(line);
}

static const char *stream_name(void *stream) {
    const char *(*name)(const void *) = (const char *(*)(const void *))driver("standin_handle_name");
    return name ? name(stream) : "?";
}

/* The device of the context current on this thread, as the runtime inside NCCL would see it. */
static int current_device(void) {
    int (*get)(int *) = (int (*)(int *))driver("cuCtxGetDevice");
    int device = -1;
    if (!get || get(&device) != 0) return -1;
    return device;
}

static int check(struct comm *c, const char *call) {
    if (!c) { note("MISUSE %s on a null communicator", call); return INVALID_ARGUMENT; }
    if (c->gone) { note("MISUSE %s on a communicator destroyed or aborted", call); return INVALID_USAGE; }
    if (c->polls_left > 0) { note("MISUSE %s on a communicator still being made", call); return INVALID_USAGE; }
    return SUCCESS;
}

int ncclGetVersion(int *version) {
    *version = (int)setting("STANDIN_NCCL_VERSION", 23203);
    return SUCCESS;
}

const char *ncclGetErrorString(result code) {
    switch (code) {
    case 0: return "no error";
    case 6: return "remote process exited or there was a network error";
    case 7: return "NCCL operation in progress";
    default: return "stand-in error";
    }
}

const char *ncclGetLastError(void *comm) {
    (void)comm;
    return setting("STANDIN_NCCL_ASYNC_ERROR", 0) ? "stand-in: peer rank 1 is gone" : "";
}

int ncclGetUniqueId(unsigned char *id) {
    static unsigned char serial;
    for (int i = 0; i < 128; i++) id[i] = (unsigned char)(i * 3 + serial);
    serial++;
    note("ncclGetUniqueId");
    return SUCCESS;
}

static struct comm *make(int nranks, int rank, int device, int polls) {
    struct comm *c = calloc(1, sizeof *c);
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->polls_left = polls;
    return c;
}

int ncclCommInitRank(struct comm **out, int nranks, struct unique_id id, int rank) {
    note("ncclCommInitRank nranks=%d rank=%d dev=%d id=%02x%02x", nranks, rank, current_device(),
         id.b[0], id.b[1]);
    *out = make(nranks, rank, current_device(), 0);
    return SUCCESS;
}

int ncclCommInitRankConfig(struct comm **out, int nranks, struct unique_id id, int rank,
                           struct config *config) {
    note("ncclCommInitRankConfig nranks=%d rank=%d dev=%d id=%02x%02x blocking=%d maxCTAs=%d "
         "netName=%s commName=%s size=%zu magic=%#x version=%u",
         nranks, rank, current_device(), id.b[0], id.b[1], config->blocking, config->maxCTAs,
         config->netName ? config->netName : "(null)", config->commName ? config->commName : "(null)",
         config->size, config->magic, config->version);
    int polls = config->blocking == 0 ? (int)setting("STANDIN_NCCL_INIT_POLLS", 2) : 0;
    *out = make(nranks, rank, current_device(), polls);
    return polls > 0 ? IN_PROGRESS : SUCCESS;
}

int ncclCommInitAll(struct comm **out, int ndev, const int *devices) {
    char list[128] = "";
    for (int i = 0; i < ndev && strlen(list) < 100; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", devices[i]);
    note("ncclCommInitAll ndev=%d devices=%s dev=%d", ndev, list, current_device());
    for (int i = 0; i < ndev; i++) out[i] = make(ndev, i, devices[i], 0);
    return SUCCESS;
}

#ifndef STANDIN_NCCL_NO_SPLIT
int ncclCommSplit(struct comm *c, int color, int key, struct comm **out, struct config *config) {
    int r = check(c, "ncclCommSplit");
    if (r) return r;
    note("ncclCommSplit rank=%d color=%d key=%d config=%s", c->rank, color, key, config ? "set" : "null");
    if (color < 0) { *out = NULL; return SUCCESS; }
    *out = make(c->nranks, (int)setting("STANDIN_NCCL_SPLIT_RANK", key), c->device, 0);
    return SUCCESS;
}
#endif

int ncclCommFinalize(struct comm *c) {
    int r = check(c, "ncclCommFinalize");
    if (r) return r;
    note("ncclCommFinalize rank=%d", c->rank);
    c->finalized = 1;
    return SUCCESS;
}

int ncclCommDestroy(struct comm *c) {
    if (!c || c->gone) { note("MISUSE ncclCommDestroy of a communicator already gone"); return INVALID_USAGE; }
    note("ncclCommDestroy rank=%d finalized=%d dev=%d", c->rank, c->finalized, current_device());
    c->gone = 1; /* kept, so that a later use is seen */
    return SUCCESS;
}

int ncclCommAbort(struct comm *c) {
    if (!c || c->gone) { note("MISUSE ncclCommAbort of a communicator already gone"); return INVALID_USAGE; }
    note("ncclCommAbort rank=%d", c->rank);
    c->gone = 1;
    return SUCCESS;
}

int ncclCommGetAsyncError(struct comm *c, result *state) {
    if (!c || c->gone) { note("MISUSE ncclCommGetAsyncError on a communicator gone"); return INVALID_USAGE; }
    pthread_mutex_lock(&lock);
    if (c->polls_left > 0) {
        c->polls_left--;
        *state = IN_PROGRESS;
    } else {
        *state = (result)setting("STANDIN_NCCL_ASYNC_ERROR", 0);
    }
    pthread_mutex_unlock(&lock);
    return SUCCESS;
}

int ncclCommCount(struct comm *c, int *count) {
    int r = check(c, "ncclCommCount");
    if (!r) *count = c->nranks;
    return r;
}
int ncclCommCuDevice(struct comm *c, int *device) {
    int r = check(c, "ncclCommCuDevice");
    if (!r) *device = c->device;
    return r;
}
int ncclCommUserRank(struct comm *c, int *rank) {
    int r = check(c, "ncclCommUserRank");
    if (!r) *rank = c->rank;
    return r;
}

int ncclCommRegister(struct comm *c, void *buffer, size_t size, void **handle) {
    int r = check(c, "ncclCommRegister");
    if (r) return r;
    note("ncclCommRegister rank=%d %p size=%zu dev=%d", c->rank, buffer, size, current_device());
    *handle = buffer;
    return SUCCESS;
}

int ncclCommDeregister(struct comm *c, void *handle) {
    int r = check(c, "ncclCommDeregister");
    if (r) return r;
    note("ncclCommDeregister rank=%d %p", c->rank, handle);
    return SUCCESS;
}

int ncclMemAlloc(void **ptr, size_t size) {
    pthread_mutex_lock(&lock);
    *ptr = (void *)(uintptr_t)next_alloc;
    next_alloc += (size + 0x1fffff) & ~(unsigned long long)0x1fffff;
    pthread_mutex_unlock(&lock);
    note("ncclMemAlloc %p size=%zu dev=%d", *ptr, size, current_device());
    return SUCCESS;
}

int ncclMemFree(void *ptr) {
    note("ncclMemFree %p dev=%d", ptr, current_device());
    return SUCCESS;
}

int ncclRedOpCreatePreMulSum(int *op, void *scalar, int type, int residence, struct comm *c) {
    int r = check(c, "ncclRedOpCreatePreMulSum");
    if (r) return r;
    const unsigned char *bytes = scalar;
    size_t width = type == 0 || type == 1 || type == 10 || type == 11 ? 1 : type == 6 || type == 9 ? 2 : type == 2 || type == 3 || type == 7 ? 4 : 8;
    char hex[20] = "";
    for (size_t i = 0; i < width; i++) snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
    *op = 5 + c->ops++;
    note("ncclRedOpCreatePreMulSum op=%d scalar=%s type=%d residence=%d rank=%d", *op, hex, type,
         residence, c->rank);
    return SUCCESS;
}

int ncclRedOpDestroy(int op, struct comm *c) {
    int r = check(c, "ncclRedOpDestroy");
    if (r) return r;
    note("ncclRedOpDestroy op=%d rank=%d", op, c->rank);
    return SUCCESS;
}

/* One line for each collective: what it reads and writes, and where. */
static int collective(const char *call, const void *send, const void *recv, size_t count, int type,
                      int op, int root, struct comm *c, void *stream) {
    int r = check(c, call);
    if (r) return r;
    note("%s send=%p recv=%p count=%zu type=%d op=%d root=%d rank=%d stream=%s dev=%d group=%d",
         call, send, recv, count, type, op, root, c->rank, stream_name(stream), current_device(),
         group_depth);
    return SUCCESS;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op, struct comm *c,
                  void *stream) {
    return collective("ncclAllReduce", send, recv, count, type, op, -1, c, stream);
}
int ncclBroadcast(const void *send, void *recv, size_t count, int type, int root, struct comm *c,
                  void *stream) {
    return collective("ncclBroadcast", send, recv, count, type, -1, root, c, stream);
}
int ncclReduce(const void *send, void *recv, size_t count, int type, int op, int root,
               struct comm *c, void *stream) {
    return collective("ncclReduce", send, recv, count, type, op, root, c, stream);
}
int ncclAllGather(const void *send, void *recv, size_t count, int type, struct comm *c,
                  void *stream) {
    return collective("ncclAllGather", send, recv, count, type, -1, -1, c, stream);
}
int ncclReduceScatter(const void *send, void *recv, size_t count, int type, int op,
                      struct comm *c, void *stream) {
    return collective("ncclReduceScatter", send, recv, count, type, op, -1, c, stream);
}
int ncclAlltoAll(const void *send, void *recv, size_t count, int type, struct comm *c, void *stream) {
    return collective("ncclAlltoAll", send, recv, count, type, -1, -1, c, stream);
}
int ncclGather(const void *send, void *recv, size_t count, int type, int root, struct comm *c,
               void *stream) {
    return collective("ncclGather", send, recv, count, type, -1, root, c, stream);
}
int ncclScatter(const void *send, void *recv, size_t count, int type, int root, struct comm *c,
                void *stream) {
    return collective("ncclScatter", send, recv, count, type, -1, root, c, stream);
}
int ncclSend(const void *send, size_t count, int type, int peer, struct comm *c, void *stream) {
    return collective("ncclSend", send, NULL, count, type, -1, peer, c, stream);
}
int ncclRecv(void *recv, size_t count, int type, int peer, struct comm *c, void *stream) {
    return collective("ncclRecv", NULL, recv, count, type, -1, peer, c, stream);
}

int ncclGroupStart(void) {
    group_depth++;
    note("ncclGroupStart depth=%d", group_depth);
    return SUCCESS;
}

int ncclGroupEnd(void) {
    if (group_depth == 0) { note("MISUSE ncclGroupEnd without a group"); return INVALID_USAGE; }
    note("ncclGroupEnd depth=%d dev=%d", group_depth, current_device());
    group_depth--;
    return SUCCESS;
}

/* For the tests: whether a group is open (a scope left open would leave it so). */
int standin_nccl_group_depth(void) { return group_depth; }
