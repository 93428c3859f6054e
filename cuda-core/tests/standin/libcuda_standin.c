/* A stand-in for libcuda.so.1 for cuda-core's tests, compiled by them at run time and loaded
 * in a child process (tests/common/standin.rs). It is not CUDA: it keeps a little state (devices,
 * contexts, streams, events, pool addresses, queued host functions) so that cuda-core runs
 * against it as against a driver, and it logs every call, in order, one line each, which the
 * tests read back through standin_log().
 *
 * Run-time settings (environment):
 *   STANDIN_DEVICES=N        devices (default 2)
 *   STANDIN_POP_STATUS=CODE  what cuCtxPopCurrent answers (after popping)
 *   STANDIN_ELAPSED=X        what cuEventElapsedTime answers, in ms: a number, nan or inf
 *   STANDIN_QUERY_STATUS=CODE what cuStreamQuery and cuEventQuery answer (600: not ready)
 *   STANDIN_ATTRIBUTE_BITS=1 cuDeviceGetAttribute answers bit D of the attribute's code on
 *                            device D (so 8 devices spell out the code an accessor asked for)
 *   STANDIN_DEVICE1_CC=MAJOR device 1's compute capability major (default 9; device 0 is 9.0)
 *   STANDIN_PARAM_SIZE=BYTES the size of every kernel parameter (default 8)
 *   STANDIN_VERSION=V        what cuDriverGetVersion answers (default 13000)
 *   STANDIN_COND_FILL=1      cuGraphAddNode writes a conditional node's bodies into the array
 *                            given (by default it points phGraph_out at an array of its own, as
 *                            the CUDA headers describe)
 * Arrays (and their copies to and from host memory), texture and surface objects and tensor
 * maps are at the end: their calls are logged with their arguments.
 * Build-time settings: -DSTANDIN_NO_PARAM_COUNT leaves cuKernelGetParamCount out (as the 13.0
 * driver does). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long devptr;

/* ---- the log ------------------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 20];
static size_t log_len;

static void note(const char *format, ...) {
    char line[256];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line - 1, format, args);
    va_end(args);
    if (n < 0) return;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    pthread_mutex_lock(&lock);
    if (log_len + (size_t)n < sizeof log_text) {
        memcpy(log_text + log_len, line, (size_t)n);
        log_len += (size_t)n;
        log_text[log_len] = 0;
    }
    pthread_mutex_unlock(&lock);
}

/* The calls so far, one per line; standin_log_clear() starts afresh. */
const char *standin_log(void) { return log_text; }
void standin_log_clear(void) {
    pthread_mutex_lock(&lock);
    log_len = 0;
    log_text[0] = 0;
    pthread_mutex_unlock(&lock);
}

static long setting(const char *name, long fallback) {
    const char *v = getenv(name);
    return v ? atol(v) : fallback;
}

/* ---- objects: each handle points at one of these, named in the log by kind and number ----- */

enum kind { CONTEXT = 1, STREAM, EVENT, POOL, LIBRARY, KERNEL, GRAPH, NODE, EXEC };

struct object {
    int kind;
    int id;
    int device;            /* contexts, streams, events, pools */
    struct object *context; /* streams, events */
    int params;            /* kernels: the parameter count */
};

#define MAX_DEVICES 8
static struct object primaries[MAX_DEVICES];
static struct object pools[MAX_DEVICES];
static struct object library = {LIBRARY, 1, 0, NULL, 0};
/* k0, k1, k4 and k16: 0, 1, 4 and 16 parameters. */
static struct object kernels[4] = {
    {KERNEL, 0, 0, NULL, 0}, {KERNEL, 1, 0, NULL, 1}, {KERNEL, 4, 0, NULL, 4}, {KERNEL, 16, 0, NULL, 16}};
static int next_id = 1;
static __thread struct object *current;

static int devices(void) {
    long n = setting("STANDIN_DEVICES", 2);
    return n < 1 ? 1 : n > MAX_DEVICES ? MAX_DEVICES : (int)n;
}

static struct object *make(int kind, struct object *context) {
    struct object *o = calloc(1, sizeof *o);
    pthread_mutex_lock(&lock);
    o->id = next_id++;
    pthread_mutex_unlock(&lock);
    o->kind = kind;
    o->context = context;
    o->device = context ? context->device : 0;
    return o;
}

/* A handle's name in the log: s3 (stream 3), e4, c0 (device 0's primary context), legacy. */
static const char *name(const void *handle, char *buf) {
    const struct object *o = handle;
    if (handle == NULL) return "null";
    if ((uintptr_t)handle == 1) return "legacy";
    if ((uintptr_t)handle == 2) return "per-thread";
    const char *prefix = o->kind == CONTEXT ? "c" : o->kind == STREAM ? "s" : o->kind == EVENT ? "e"
        : o->kind == POOL ? "p" : o->kind == KERNEL ? "k" : o->kind == GRAPH ? "g"
        : o->kind == NODE ? "n" : o->kind == EXEC ? "ge" : "x";
    sprintf(buf, "%s%d", prefix, o->kind == CONTEXT || o->kind == POOL ? o->device : o->id);
    return buf;
}

/* ---- the driver's functions --------------------------------------------------------------- */

int cuDriverGetVersion(int *v) { *v = (int)setting("STANDIN_VERSION", 13000); return 0; }
int cuInit(unsigned flags) {
    (void)flags;
    for (int d = 0; d < MAX_DEVICES; d++) {
        primaries[d] = (struct object){CONTEXT, 0, d, NULL, 0};
        pools[d] = (struct object){POOL, 0, d, NULL, 0};
    }
    return 0;
}

int cuGetErrorName(int error, const char **text) {
    switch (error) {
    case 1: *text = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 201: *text = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
    case 400: *text = "CUDA_ERROR_INVALID_HANDLE"; return 0;
    default: *text = NULL; return 1;
    }
}
int cuGetErrorString(int error, const char **text) {
    (void)error;
    *text = "stand-in error";
    return 0;
}

int cuDeviceGetCount(int *count) { *count = devices(); return 0; }
int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return 101;
    *device = ordinal;
    return 0;
}
int cuDeviceGetName(char *out, int len, int device) {
    snprintf(out, (size_t)len, "cuda-core test stand-in %d", device);
    return 0;
}
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    if (setting("STANDIN_ATTRIBUTE_BITS", 0)) {
        *value = (attribute >> device) & 1;
        return 0;
    }
    /* Texture and surface limits: 4096 each; texture alignment 512 and pitch alignment 32. */
    if (attribute == 14 || attribute == 51) { *value = attribute == 14 ? 512 : 32; return 0; }
    if ((attribute >= 21 && attribute <= 29) || attribute == 77
        || (attribute >= 42 && attribute <= 74 && attribute != 44 && attribute != 50)) {
        *value = 4096;
        return 0;
    }
    switch (attribute) {
    case 1: *value = 1024; break;   /* max threads per block */
    case 16: *value = 132; break;   /* multiprocessors */
    case 75: *value = device == 1 ? (int)setting("STANDIN_DEVICE1_CC", 9) : 9; break; /* 9.0 */
    case 76: *value = 0; break;
    case 109: *value = 134213632; break; /* largest access-policy window, as on an H200 */
    case 115: *value = 1; break;    /* memory pools */
    default: *value = 1; break;
    }
    return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) { (void)device; *bytes = (size_t)1 << 34; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    note("cuDevicePrimaryCtxRetain device=%d", device);
    *ctx = &primaries[device];
    return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device) { note("cuDevicePrimaryCtxRelease device=%d", device); return 0; }

int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxSetCurrent(void *ctx) { char b[16]; note("cuCtxSetCurrent %s", name(ctx, b)); current = ctx; return 0; }
static __thread struct object *stack[16];
static __thread int depth;
int cuCtxPushCurrent_v2(void *ctx) {
    char b[16];
    note("cuCtxPushCurrent %s", name(ctx, b));
    if (depth < 16) stack[depth++] = current;
    current = ctx;
    return 0;
}
int cuCtxPopCurrent_v2(void **ctx) {
    note("cuCtxPopCurrent");
    *ctx = current;
    current = depth > 0 ? stack[--depth] : NULL;
    return (int)setting("STANDIN_POP_STATUS", 0);
}
int cuCtxGetDevice(int *device) {
    if (!current) return 201;
    *device = current->device;
    return 0;
}
int cuCtxSynchronize(void) { note("cuCtxSynchronize"); return 0; }
int cuCtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }

/* Host functions wait in a queue until a synchronisation runs them. */
typedef void (*host_fn)(void *);
static struct { host_fn fn; void *data; } queued[64];
static int queued_count;
static void run_host_functions(void) {
    for (;;) {
        pthread_mutex_lock(&lock);
        if (queued_count == 0) { pthread_mutex_unlock(&lock); return; }
        host_fn fn = queued[0].fn;
        void *data = queued[0].data;
        memmove(queued, queued + 1, sizeof queued[0] * (size_t)--queued_count);
        pthread_mutex_unlock(&lock);
        note("host function runs");
        fn(data);
    }
}

int cuStreamCreate(void **s, unsigned flags) {
    if (!current) return 201;
    struct object *o = make(STREAM, current);
    char b[16], c[16];
    note("cuStreamCreate %s in %s flags=%u", name(o, b), name(current, c), flags);
    *s = o;
    return 0;
}
int cuStreamCreateWithPriority(void **s, unsigned flags, int priority) { (void)priority; return cuStreamCreate(s, flags); }
int cuStreamDestroy_v2(void *s) { char b[16]; note("cuStreamDestroy %s", name(s, b)); return 0; }
int cuStreamSynchronize(void *s) { char b[16]; note("cuStreamSynchronize %s", name(s, b)); run_host_functions(); return 0; }
int cuStreamQuery(void *s) {
    char b[16];
    note("cuStreamQuery %s", name(s, b));
    return (int)setting("STANDIN_QUERY_STATUS", 0);
}
int cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    char b[16], c[16];
    (void)flags;
    note("cuStreamWaitEvent %s waits for %s", name(s, b), name(e, c));
    return 0;
}
int cuStreamGetCtx(void *s, void **ctx) {
    struct object *o = s;
    if ((uintptr_t)s <= 2) { *ctx = current; return current ? 0 : 201; }
    *ctx = o->context;
    return 0;
}
/* Stream capture: one capturing stream at a time; ending gives a graph (a static token). */
static void *capturing;
static char graph_token;
int cuStreamBeginCapture_v2(void *s, int mode) {
    char b[16];
    note("cuStreamBeginCapture %s mode=%d", name(s, b), mode);
    capturing = s;
    return 0;
}
int cuStreamEndCapture(void *s, void **graph) {
    char b[16];
    note("cuStreamEndCapture %s", name(s, b));
    if (capturing != s) { *graph = NULL; return 903; } /* CUDA_ERROR_STREAM_CAPTURE_UNMATCHED */
    capturing = NULL;
    *graph = &graph_token;
    return 0;
}
int cuStreamIsCapturing(void *s, int *status) { *status = capturing == s ? 1 : 0; return 0; }
int cuGraphDestroy(void *graph) {
    char b[16];
    note("cuGraphDestroy %s", graph == &graph_token ? "g" : name(graph, b));
    return 0;
}
int cuStreamGetPriority(void *s, int *priority) { (void)s; *priority = 0; return 0; }
int cuStreamGetFlags(void *s, unsigned *flags) { (void)s; *flags = 1; return 0; }
int cuLaunchHostFunc(void *s, host_fn fn, void *data) {
    char b[16];
    note("cuLaunchHostFunc %s", name(s, b));
    pthread_mutex_lock(&lock);
    int full = queued_count == 64;
    if (!full) { queued[queued_count].fn = fn; queued[queued_count].data = data; queued_count++; }
    pthread_mutex_unlock(&lock);
    return full ? 1 : 0;
}

int cuEventCreate(void **e, unsigned flags) {
    if (!current) return 201;
    struct object *o = make(EVENT, current);
    char b[16];
    note("cuEventCreate %s flags=%u", name(o, b), flags);
    *e = o;
    return 0;
}
int cuEventDestroy_v2(void *e) { char b[16]; note("cuEventDestroy %s", name(e, b)); return 0; }
int cuEventRecord(void *e, void *s) {
    char b[16], c[16];
    note("cuEventRecord %s on %s", name(e, b), name(s, c));
    return 0;
}
int cuEventQuery(void *e) {
    char b[16];
    note("cuEventQuery %s", name(e, b));
    return (int)setting("STANDIN_QUERY_STATUS", 0);
}
int cuEventSynchronize(void *e) { char b[16]; note("cuEventSynchronize %s", name(e, b)); run_host_functions(); return 0; }
int cuEventElapsedTime_v2(float *ms, void *start, void *end) {
    (void)start; (void)end;
    const char *v = getenv("STANDIN_ELAPSED");
    if (!v) *ms = 1.0f;
    else if (strcmp(v, "nan") == 0) *ms = NAN;
    else if (strcmp(v, "inf") == 0) *ms = INFINITY;
    else *ms = (float)atof(v);
    return 0;
}

static devptr next_address = 0x10000000;
int cuDeviceGetDefaultMemPool(void **p, int device) { *p = &pools[device]; return 0; }
int cuMemPoolGetAttribute(void *p, int attribute, void *value) { (void)p; (void)attribute; *(unsigned long long *)value = 0; return 0; }
int cuMemAllocFromPoolAsync(devptr *ptr, size_t size, void *p, void *s) {
    char b[16], c[16];
    pthread_mutex_lock(&lock);
    *ptr = next_address;
    next_address += (size + 0xfff) & ~(size_t)0xfff;
    pthread_mutex_unlock(&lock);
    note("cuMemAllocFromPoolAsync %#llx size=%zu from %s on %s", *ptr, size, name(p, c), name(s, b));
    return 0;
}
int cuMemFreeAsync(devptr ptr, void *s) { char b[16]; note("cuMemFreeAsync %#llx on %s", ptr, name(s, b)); return 0; }
int cuMemAlloc_v2(devptr *ptr, size_t size) { return cuMemAllocFromPoolAsync(ptr, size, &pools[0], NULL); }
int cuMemFree_v2(devptr ptr) { note("cuMemFree %#llx", ptr); return 0; }
int cuMemcpyAsync(devptr dst, devptr src, size_t n, void *s) {
    char b[16];
    note("cuMemcpyAsync %#llx <- %#llx size=%zu on %s", dst, src, n, name(s, b));
    return 0;
}
int cuMemcpyHtoDAsync_v2(devptr dst, const void *src, size_t n, void *s) {
    char b[16];
    (void)src;
    note("cuMemcpyHtoDAsync %#llx size=%zu on %s", dst, n, name(s, b));
    return 0;
}
int cuMemcpyDtoHAsync_v2(void *dst, devptr src, size_t n, void *s) {
    char b[16];
    memset(dst, 0, n);
    note("cuMemcpyDtoHAsync %#llx size=%zu on %s", src, n, name(s, b));
    return 0;
}
int cuMemsetD8Async(devptr dst, unsigned char v, size_t n, void *s) {
    char b[16];
    note("cuMemsetD8Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}
int cuMemsetD16Async(devptr dst, unsigned short v, size_t n, void *s) {
    char b[16];
    note("cuMemsetD16Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}
int cuMemsetD32Async(devptr dst, unsigned v, size_t n, void *s) {
    char b[16];
    note("cuMemsetD32Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}

int cuLibraryLoadData(void **lib, const void *code, void *o1, void *o2, unsigned n1, void *o3,
                      void *o4, unsigned n2) {
    (void)code; (void)o1; (void)o2; (void)n1; (void)o3; (void)o4; (void)n2;
    note("cuLibraryLoadData");
    *lib = &library;
    return 0;
}
int cuLibraryUnload(void *lib) { (void)lib; note("cuLibraryUnload"); return 0; }
int cuLibraryGetKernel(void **kernel, void *lib, const char *kernel_name) {
    (void)lib;
    for (int i = 0; i < 4; i++) {
        char want[8];
        sprintf(want, "k%d", kernels[i].params);
        if (strcmp(kernel_name, want) == 0) { *kernel = &kernels[i]; return 0; }
    }
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
int cuKernelGetName(const char **out, void *kernel) {
    static const char *names[] = {"k0", "k1", "k4", "k16"};
    for (int i = 0; i < 4; i++) if (kernel == &kernels[i]) { *out = names[i]; return 0; }
    return 400;
}
/* Kernels allow 1024 threads per block and 48 KiB of dynamic shared memory. */
int cuKernelGetAttribute(int *value, int attribute, void *kernel, int device) {
    char b[16];
    note("cuKernelGetAttribute %s attribute=%d device=%d", name(kernel, b), attribute, device);
    *value = attribute == 0 ? 1024 : attribute == 8 ? 48 * 1024 : 0;
    return 0;
}
/* Every parameter is STANDIN_PARAM_SIZE bytes (8 unless set). */
int cuKernelGetParamInfo(void *kernel, size_t index, size_t *offset, size_t *size) {
    const struct object *k = kernel;
    char b[16];
    size_t each = (size_t)setting("STANDIN_PARAM_SIZE", 8);
    note("cuKernelGetParamInfo %s index=%zu", name(kernel, b), index);
    if (index >= (size_t)k->params) return 1; /* CUDA_ERROR_INVALID_VALUE: past the last */
    *offset = index * each;
    *size = each;
    return 0;
}
#ifndef STANDIN_NO_PARAM_COUNT
int cuKernelGetParamCount(void *kernel, size_t *count) {
    const struct object *k = kernel;
    char b[16];
    note("cuKernelGetParamCount %s", name(kernel, b));
    *count = (size_t)k->params;
    return 0;
}
#endif
int cuKernelGetFunction(void **function, void *kernel) { *function = kernel; return 0; }
/* Two blocks of any kernel per SM (132 SMs: 264 resident at once). */
int cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *f, int block, size_t smem) {
    (void)f; (void)block; (void)smem;
    *blocks = 2;
    return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *s, void **params, void **extra) {
    char b[16], c[16];
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)params; (void)extra;
    note("cuLaunchKernel %s on %s", name(f, c), name(s, b));
    return 0;
}

/* CUlaunchAttribute's and CUlaunchConfig's layouts. */
struct launch_attribute {
    unsigned id;
    char pad[4];
    union { int value; char bytes[64]; } value;
};
struct launch_config {
    unsigned grid[3], block[3], shared;
    void *stream;
    struct launch_attribute *attrs;
    unsigned count;
};
/* Logs the attributes as id:first-int-of-value, in order. */
int cuLaunchKernelEx(const struct launch_config *config, void *f, void **params, void **extra) {
    char b[16], c[16], attrs[256] = "";
    (void)params; (void)extra;
    for (unsigned i = 0; i < config->count && strlen(attrs) < 200; i++) {
        char one[48];
        const struct launch_attribute *a = &config->attrs[i];
        if (a->id == 1) {
            /* Access-policy window: bytes/hit ratio in percent/hit property/miss property. */
            size_t bytes; float ratio; int hit, miss;
            memcpy(&bytes, a->value.bytes + 8, sizeof bytes);
            memcpy(&ratio, a->value.bytes + 16, sizeof ratio);
            memcpy(&hit, a->value.bytes + 20, sizeof hit);
            memcpy(&miss, a->value.bytes + 24, sizeof miss);
            snprintf(one, sizeof one, "%s1:%zu/%d/%d/%d", i ? "," : "", bytes,
                     (int)(ratio * 100.0f + 0.5f), hit, miss);
        } else if (a->id == 7) {
            /* Programmatic event: the event's name/trigger at block start. */
            void *event; int start;
            char e[16];
            memcpy(&event, a->value.bytes, sizeof event);
            memcpy(&start, a->value.bytes + 12, sizeof start);
            snprintf(one, sizeof one, "%s7:%s/%d", i ? "," : "", name(event, e), start);
        } else if (a->id == 4 || a->id == 11) {
            /* Cluster shapes: x.y.z. */
            unsigned d[3];
            memcpy(d, a->value.bytes, sizeof d);
            snprintf(one, sizeof one, "%s%u:%u.%u.%u", i ? "," : "", a->id, d[0], d[1], d[2]);
        } else {
            snprintf(one, sizeof one, "%s%u:%d", i ? "," : "", a->id, a->value.value);
        }
        strcat(attrs, one);
    }
    note("cuLaunchKernelEx %s on %s grid=%u attrs=%s", name(f, c), name(config->stream, b),
         config->grid[0], attrs);
    return 0;
}

/* ---- graphs built node by node: graphs, empty and kernel nodes, conditional nodes --------- */

int cuGraphCreate(void **graph, unsigned flags) {
    char b[16];
    struct object *g = make(GRAPH, current);
    *graph = g;
    note("cuGraphCreate %s flags=%u", name(g, b), flags);
    return 0;
}
int cuGraphAddEmptyNode(void **node, void *graph, void **deps, size_t count) {
    char b[16], c[16];
    (void)deps;
    struct object *n = make(NODE, NULL);
    *node = n;
    note("cuGraphAddEmptyNode %s deps=%zu -> %s", name(graph, b), count, name(n, c));
    return 0;
}
/* CUDA_KERNEL_NODE_PARAMS_v2's layout: the kernel at 56, its parameters' pointers at 40. */
int cuGraphAddKernelNode_v2(void **node, void *graph, void **deps, size_t count, const char *params) {
    char b[16], c[16];
    void *kernel, **args;
    unsigned long long first = 0;
    (void)deps;
    memcpy(&args, params + 40, sizeof args);
    memcpy(&kernel, params + 56, sizeof kernel);
    if (args && args[0]) memcpy(&first, args[0], sizeof first);
    *node = make(NODE, NULL);
    note("cuGraphAddKernelNode %s deps=%zu %s arg0=%llu", name(graph, b), count, name(kernel, c), first);
    return 0;
}
static unsigned long long next_condition = 40;
int cuGraphConditionalHandleCreate(unsigned long long *handle, void *graph, void *ctx,
                                   unsigned value, unsigned flags) {
    char b[16], c[16];
    *handle = next_condition++;
    note("cuGraphConditionalHandleCreate %s %s default=%u flags=%u -> %llu", name(graph, b),
         name(ctx, c), value, flags, *handle);
    return 0;
}
/* CUgraphNodeParams' layout: the type at 0, the conditional member at 16 (handle, type, size,
 * phGraph_out, ctx). */
struct conditional_params {
    int type;
    int reserved0[3];
    unsigned long long handle;
    unsigned kind;
    unsigned size;
    void **bodies;
    void *ctx;
};
static void *driver_bodies[64];
static int add_node(const char *call, void **node, void *graph, size_t count, const char *edges,
                    struct conditional_params *params) {
    char b[16], c[16], list[200] = "";
    if (params->type != 13) {
        note("%s %s type=%d (not conditional)", call, name(graph, b), params->type);
        return 1;
    }
    if (params->size == 0 || params->size > 64) return 1; /* CUDA_ERROR_INVALID_VALUE */
    void **out = params->bodies;
    if (!setting("STANDIN_COND_FILL", 0)) { out = driver_bodies; params->bodies = out; }
    for (unsigned i = 0; i < params->size; i++) {
        char one[16];
        out[i] = make(GRAPH, current);
        if (strlen(list) < 180) {
            strcat(list, i ? "," : "");
            strcat(list, name(out[i], one));
        }
    }
    *node = make(NODE, NULL);
    note("%s %s deps=%zu%s type=%d cond=%u size=%u handle=%llu ctx=%s -> bodies=%s", call,
         name(graph, b), count, edges, params->type, params->kind, params->size, params->handle,
         name(params->ctx, c), list);
    return 0;
}
/* The 12.9 header's plain cuGraphAddNode, without edge data. */
int cuGraphAddNode(void **node, void *graph, void **deps, size_t count,
                   struct conditional_params *params) {
    (void)deps;
    return add_node("cuGraphAddNode", node, graph, count, "", params);
}
/* The 13 header's cuGraphAddNode (exported as _v2), with edge data. */
int cuGraphAddNode_v2(void **node, void *graph, void **deps, const void *edges, size_t count,
                      struct conditional_params *params) {
    (void)deps;
    return add_node("cuGraphAddNode_v2", node, graph, count,
                    edges ? " edge-data=set" : " edge-data=null", params);
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    char b[16], c[16];
    struct object *e = make(EXEC, current);
    *exec = e;
    note("cuGraphInstantiateWithFlags %s flags=%llu -> %s", name(graph, b), flags, name(e, c));
    return 0;
}
int cuGraphExecDestroy(void *exec) {
    char b[16];
    note("cuGraphExecDestroy %s", name(exec, b));
    return 0;
}
int cuGraphDestroyNode(void *node) {
    char b[16];
    note("cuGraphDestroyNode %s", name(node, b));
    return 0;
}

/* ---- arrays, their copies, texture and surface objects, tensor maps ----------------------- */

/* Arrays hold their bytes, so that copies between them and host memory really move data;
 * device addresses hold none (copies with them are only logged). Arrays are named a<id>,
 * mipmapped arrays m<id>. */
#define ARRAY 100
#define MIPMAP 101
struct array3d_desc { size_t width, height, depth; unsigned format, channels, flags; };
struct array {
    struct object base;
    struct array3d_desc desc;
    size_t element;
    unsigned char *data;
    struct array *levels[16];
    unsigned level_count;
};
static const char *tex_name(const void *handle, char *buf) {
    const struct object *o = handle;
    if (handle && (o->kind == ARRAY || o->kind == MIPMAP)) {
        sprintf(buf, "%s%d", o->kind == ARRAY ? "a" : "m", o->id);
        return buf;
    }
    return name(handle, buf);
}
static size_t format_bytes(unsigned format) {
    switch (format) {
    case 0x01: case 0x08: return 1;
    case 0x02: case 0x09: case 0x10: return 2;
    default: return 4;
    }
}
static size_t extent(size_t v) { return v ? v : 1; }
static struct array *new_array(const struct array3d_desc *d, int kind) {
    struct array *a = calloc(1, sizeof *a);
    pthread_mutex_lock(&lock);
    a->base.id = next_id++;
    pthread_mutex_unlock(&lock);
    a->base.kind = kind;
    a->base.context = current;
    a->desc = *d;
    a->element = format_bytes(d->format) * d->channels;
    if (kind == ARRAY)
        a->data = calloc(extent(d->width) * extent(d->height) * extent(d->depth), a->element);
    return a;
}
int cuArray3DCreate_v2(void **handle, const struct array3d_desc *d) {
    char b[16], c[16];
    if (!current) return 201;
    struct array *a = new_array(d, ARRAY);
    *handle = a;
    note("cuArray3DCreate %s w=%zu h=%zu d=%zu format=%u channels=%u flags=%u in %s",
         tex_name(a, b), d->width, d->height, d->depth, d->format, d->channels, d->flags,
         name(current, c));
    return 0;
}
int cuArray3DGetDescriptor_v2(struct array3d_desc *d, void *handle) {
    *d = ((struct array *)handle)->desc;
    return 0;
}
int cuArrayDestroy(void *handle) { char b[16]; note("cuArrayDestroy %s", tex_name(handle, b)); return 0; }
int cuMipmappedArrayCreate(void **handle, const struct array3d_desc *d, unsigned levels) {
    char b[16], c[16];
    if (!current) return 201;
    if (levels == 0 || levels > 16) return 1;
    struct array *m = new_array(d, MIPMAP);
    for (unsigned i = 0; i < levels; i++) {
        struct array3d_desc level = *d;
        level.width = d->width ? (d->width >> i ? d->width >> i : 1) : 0;
        level.height = d->height ? (d->height >> i ? d->height >> i : 1) : 0;
        if (!(d->flags & 5) && d->height) level.depth = d->depth ? (d->depth >> i ? d->depth >> i : 1) : 0;
        m->levels[i] = new_array(&level, ARRAY);
    }
    m->level_count = levels;
    *handle = m;
    note("cuMipmappedArrayCreate %s w=%zu h=%zu d=%zu levels=%u in %s", tex_name(m, b), d->width,
         d->height, d->depth, levels, name(current, c));
    return 0;
}
int cuMipmappedArrayGetLevel(void **level, void *handle, unsigned i) {
    char b[16], c[16];
    struct array *m = handle;
    if (i >= m->level_count) return 1;
    *level = m->levels[i];
    note("cuMipmappedArrayGetLevel %s level=%u -> %s", tex_name(m, b), i, tex_name(m->levels[i], c));
    return 0;
}
int cuMipmappedArrayDestroy(void *handle) { char b[16]; note("cuMipmappedArrayDestroy %s", tex_name(handle, b)); return 0; }

/* CUDA_MEMCPY3D's layout (the same in both headers). */
struct memcpy3d {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    unsigned srcMemoryType;
    const void *srcHost;
    devptr srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    unsigned dstMemoryType;
    void *dstHost;
    devptr dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
};
/* One side's name: array:a3@x,y,z, host@x,y,z/pitch,height or unified:0x...@x,y,z/pitch,height. */
static void copy_end(char *out, unsigned type, const void *host, devptr device, void *array,
                     size_t x, size_t y, size_t z, size_t pitch, size_t height) {
    char b[16];
    if (type == 3) sprintf(out, "array:%s@%zu,%zu,%zu", tex_name(array, b), x, y, z);
    else if (type == 1) sprintf(out, "host@%zu,%zu,%zu/%zu,%zu", x, y, z, pitch, height);
    else sprintf(out, "type%u:%#llx@%zu,%zu,%zu/%zu,%zu", type, device, x, y, z, pitch, height);
    (void)host;
}
/* The byte at row y, slice z, column x of one side, or NULL where it holds no bytes here or
 * the copy reaches past an array. */
static unsigned char *copy_at(unsigned type, const void *host, void *array, size_t x, size_t y,
                              size_t z, size_t pitch, size_t height, size_t width_bytes) {
    if (type == 1) return (unsigned char *)host + (z * height + y) * pitch + x;
    if (type != 3) return NULL;
    struct array *a = array;
    size_t row = extent(a->desc.width) * a->element;
    if (x + width_bytes > row || y >= extent(a->desc.height) || z >= extent(a->desc.depth)) return NULL;
    return a->data + (z * extent(a->desc.height) + y) * row + x;
}
int cuMemcpy3DAsync_v2(const struct memcpy3d *c, void *s) {
    char src[96], dst[96], b[16];
    copy_end(src, c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes,
             c->srcY, c->srcZ, c->srcPitch, c->srcHeight);
    copy_end(dst, c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes,
             c->dstY, c->dstZ, c->dstPitch, c->dstHeight);
    note("cuMemcpy3DAsync %s <- %s w=%zu h=%zu d=%zu on %s", dst, src, c->WidthInBytes,
         c->Height, c->Depth, name(s, b));
    for (size_t z = 0; z < c->Depth; z++)
        for (size_t y = 0; y < c->Height; y++) {
            unsigned char *from = copy_at(c->srcMemoryType, c->srcHost, c->srcArray,
                                          c->srcXInBytes, c->srcY + y, c->srcZ + z, c->srcPitch,
                                          c->srcHeight, c->WidthInBytes);
            unsigned char *to = copy_at(c->dstMemoryType, c->dstHost, c->dstArray, c->dstXInBytes,
                                        c->dstY + y, c->dstZ + z, c->dstPitch, c->dstHeight,
                                        c->WidthInBytes);
            if ((c->srcMemoryType == 3 && !from) || (c->dstMemoryType == 3 && !to)) return 1;
            if (from && to) memcpy(to, from, c->WidthInBytes);
        }
    return 0;
}

/* CUDA_RESOURCE_DESC's and CUDA_TEXTURE_DESC's layouts. */
struct resource_desc {
    unsigned type;
    unsigned pad;
    union {
        void *array;
        struct { devptr ptr; unsigned format, channels; size_t bytes; } linear;
        struct { devptr ptr; unsigned format, channels; size_t width, height, pitch; } pitch2d;
        int reserved[32];
    } res;
    unsigned flags;
};
struct texture_desc {
    unsigned address[3], filter, flags, anisotropy, mipmap_filter;
    float bias, min_clamp, max_clamp, border[4];
    int reserved[12];
};
static unsigned long long next_object = 0x7000;
static void resource_name(char *out, const struct resource_desc *r) {
    char b[16];
    switch (r->type) {
    case 0: sprintf(out, "array:%s", tex_name(r->res.array, b)); break;
    case 1: sprintf(out, "mipmapped:%s", tex_name(r->res.array, b)); break;
    case 2: sprintf(out, "linear:%#llx format=%u channels=%u bytes=%zu", r->res.linear.ptr,
                    r->res.linear.format, r->res.linear.channels, r->res.linear.bytes); break;
    default: sprintf(out, "pitch2d:%#llx format=%u channels=%u %zux%zu pitch=%zu",
                     r->res.pitch2d.ptr, r->res.pitch2d.format, r->res.pitch2d.channels,
                     r->res.pitch2d.width, r->res.pitch2d.height, r->res.pitch2d.pitch);
    }
}
int cuTexObjectCreate(unsigned long long *object, const struct resource_desc *r,
                      const struct texture_desc *t, const void *view) {
    char res[128], c[16];
    if (!current) return 201;
    resource_name(res, r);
    *object = next_object++;
    note("cuTexObjectCreate %s address=%u,%u,%u filter=%u flags=%u border=%g view=%s in %s -> %llu",
         res, t->address[0], t->address[1], t->address[2], t->filter, t->flags,
         (double)t->border[0], view ? "set" : "null", name(current, c), *object);
    return 0;
}
int cuTexObjectDestroy(unsigned long long object) { note("cuTexObjectDestroy %llu", object); return 0; }
int cuSurfObjectCreate(unsigned long long *object, const struct resource_desc *r) {
    char res[128], c[16];
    if (!current) return 201;
    resource_name(res, r);
    *object = next_object++;
    note("cuSurfObjectCreate %s in %s -> %llu", res, name(current, c), *object);
    return 0;
}
int cuSurfObjectDestroy(unsigned long long object) { note("cuSurfObjectDestroy %llu", object); return 0; }

/* Tensor maps: the descriptor's first words are the address, the rank and the data type, so
 * that a test can tell which encoding reached a kernel argument. */
static void list_u64(char *out, const unsigned long long *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%llu", i ? "," : "", v[i]);
}
static void list_u32(char *out, const unsigned *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%u", i ? "," : "", v[i]);
}
static void list_int(char *out, const int *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%d", i ? "," : "", v[i]);
}
static void encode(unsigned long long *map, unsigned type, unsigned rank, void *address) {
    map[0] = (unsigned long long)(uintptr_t)address;
    map[1] = rank;
    map[2] = type;
    for (int i = 3; i < 16; i++) map[i] = 0xC0DE;
}
int cuTensorMapEncodeTiled(unsigned long long *map, unsigned type, unsigned rank, void *address,
                           const unsigned long long *dims, const unsigned long long *strides,
                           const unsigned *box, const unsigned *estrides, unsigned interleave,
                           unsigned swizzle, unsigned l2, unsigned oob) {
    char d[128], s[128], bx[128], e[128], c[16];
    list_u64(d, dims, rank);
    list_u64(s, strides, rank - 1);
    list_u32(bx, box, rank);
    list_u32(e, estrides, rank);
    note("cuTensorMapEncodeTiled type=%u rank=%u address=%#llx dims=%s strides=%s box=%s "
         "element_strides=%s interleave=%u swizzle=%u l2=%u oob=%u aligned64=%d in %s", type,
         rank, (unsigned long long)(uintptr_t)address, d, s, bx, e, interleave, swizzle, l2, oob,
         (uintptr_t)map % 64 == 0, name(current, c));
    encode(map, type, rank, address);
    return 0;
}
int cuTensorMapEncodeIm2col(unsigned long long *map, unsigned type, unsigned rank, void *address,
                            const unsigned long long *dims, const unsigned long long *strides,
                            const int *lower, const int *upper, unsigned channels,
                            unsigned pixels, const unsigned *estrides, unsigned interleave,
                            unsigned swizzle, unsigned l2, unsigned oob) {
    char d[128], s[128], lo[128], up[128], e[128];
    list_u64(d, dims, rank);
    list_u64(s, strides, rank - 1);
    list_int(lo, lower, rank - 2);
    list_int(up, upper, rank - 2);
    list_u32(e, estrides, rank);
    note("cuTensorMapEncodeIm2col type=%u rank=%u address=%#llx dims=%s strides=%s lower=%s "
         "upper=%s channels=%u pixels=%u element_strides=%s interleave=%u swizzle=%u l2=%u "
         "oob=%u", type, rank, (unsigned long long)(uintptr_t)address, d, s, lo, up, channels,
         pixels, e, interleave, swizzle, l2, oob);
    encode(map, type, rank, address);
    return 0;
}
int cuTensorMapEncodeIm2colWide(unsigned long long *map, unsigned type, unsigned rank,
                                void *address, const unsigned long long *dims,
                                const unsigned long long *strides, int lower, int upper,
                                unsigned channels, unsigned pixels, const unsigned *estrides,
                                unsigned interleave, unsigned mode, unsigned swizzle,
                                unsigned l2, unsigned oob) {
    char d[128], s[128];
    (void)estrides;
    list_u64(d, dims, rank);
    list_u64(s, strides, rank - 1);
    note("cuTensorMapEncodeIm2colWide type=%u rank=%u dims=%s strides=%s lower=%d upper=%d "
         "channels=%u pixels=%u interleave=%u mode=%u swizzle=%u l2=%u oob=%u", type, rank, d,
         s, lower, upper, channels, pixels, interleave, mode, swizzle, l2, oob);
    encode(map, type, rank, address);
    return 0;
}
int cuTensorMapReplaceAddress(unsigned long long *map, void *address) {
    note("cuTensorMapReplaceAddress %#llx -> %#llx", map[0], (unsigned long long)(uintptr_t)address);
    map[0] = (unsigned long long)(uintptr_t)address;
    return 0;
}
