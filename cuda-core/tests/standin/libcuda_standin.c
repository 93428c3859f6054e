/* The stand-in for libcuda.so.1: one source, three builds, chosen by a preprocessor flag.
 *
 *   (neither)        cuda-core's tests (cuda-core/tests/common/standin.rs): the full
 *                    stand-in, with state, a call log and the strict model.
 *   -DSTANDIN_BENCH  the `standin_overhead` example (benches/examples/standin_overhead.rs):
 *                    the functions on its hot paths and the few it needs to get there, with
 *                    the log, the model, the run-time settings and the state switched off, so
 *                    that every call costs next to nothing.
 *   -DSTANDIN_PROBE  the probe's unit tests (cuda-core/src/driver/tests.rs): ten functions and
 *                    no more, so that the tests see which table fields load and which stay
 *                    empty, and how errors are named.
 *
 * The bench and probe builds are subsets of the full one: each function has one body, and the
 * flags only leave functions out (each build exports exactly what its consumer expects) or
 * switch off what a build must not have. Every function that is in a build is in the full one,
 * but for one: cuEventElapsedTime (the bench's only). cuCtxCreate_v2 has two bodies: the
 * probe's (the 12.9 header's name alone, so that its 13 table's cuCtxCreate stays empty,
 * answering the primary context) and the full one's (with cuCtxCreate_v4: a new context).
 *
 * Build-time settings, of every build:
 *   -DFAKE_VERSION=V         what cuDriverGetVersion answers where STANDIN_VERSION is not set
 *                            (default 13000)
 *   -DFAKE_NO_VERSION        leaves cuDriverGetVersion out (a library that is no driver)
 *   -DFAKE_INIT_STATUS=CODE  what cuInit answers (default 0)
 *   -DFAKE_CTX_STATUS=CODE   what cuCtxGetCurrent answers (default 0)
 *   -DFAKE_POP_STATUS=CODE   what cuCtxPopCurrent answers, after popping, where
 *                            STANDIN_POP_STATUS is not set (default 0)
 * and of the full one: -DSTANDIN_NO_PARAM_COUNT, -DSTANDIN_NO_LOCATION_V2,
 * -DSTANDIN_NO_DISCARD, -DSTANDIN_NO_GREEN and -DSTANDIN_NO_COREDUMP, described with its
 * run-time settings below. */

#if defined(STANDIN_PROBE) && defined(STANDIN_BENCH)
#error "STANDIN_PROBE and STANDIN_BENCH are different builds: define one at most"
#endif
#if !defined(STANDIN_PROBE) && !defined(STANDIN_BENCH)
#define STANDIN_FULL 1
#endif

/* The full stand-in, for cuda-core's tests, is compiled by them at run time and loaded in a
 * child process (tests/common/standin.rs). It is not CUDA: it keeps a little state (devices,
 * contexts, streams, events, pool addresses, queued host functions) so that cuda-core runs
 * against it as against a driver, and it logs every call, in order, one line each, which the
 * tests read back through standin_log().
 *
 * Run-time settings (environment; the bench and probe builds read none of them, and take each
 * one's default):
 *   STANDIN_DEVICES=N        devices (default 2; the bench has 1, the probe 3)
 *   STANDIN_POP_STATUS=CODE  what cuCtxPopCurrent answers (after popping)
 *   STANDIN_ELAPSED=X        what cuEventElapsedTime answers, in ms: a number, nan or inf
 *   STANDIN_QUERY_STATUS=CODE what cuStreamQuery and cuEventQuery answer (600: not ready)
 *   STANDIN_ATTRIBUTE_BITS=1 cuDeviceGetAttribute answers bit D of the attribute's code on
 *                            device D (so 8 devices spell out the code an accessor asked for)
 *   STANDIN_DEVICE1_CC=MAJOR device 1's compute capability major (default 9; device 0 is 9.0)
 *   STANDIN_DEVICE1_THREADS=N the most threads per block a kernel allows on device 1 (default
 *                            1024, as on device 0)
 *   STANDIN_PARAM_SIZE=BYTES the size of every kernel parameter but ints (default 8)
 *   STANDIN_LOG_ARGS=1       cuLaunchKernel logs its parameters first, on a line of their own
 *                            ("cuLaunchKernel-args KERNEL args=A,B,...")
 *   STANDIN_VERSION=V        what cuDriverGetVersion answers (default FAKE_VERSION, 13000)
 *   STANDIN_COND_FILL=1      cuGraphAddNode writes a conditional node's bodies into the array
 *                            given (by default it points phGraph_out at an array of its own, as
 *                            the CUDA headers describe)
 *   STANDIN_BATCH_FAIL=I     cuMemcpyBatchAsync fails (CUDA_ERROR_INVALID_VALUE) naming copy I
 *   STANDIN_CONCURRENT_MANAGED=0 devices do not access managed memory concurrently
 *   STANDIN_JIT_FAIL=1       cuLibraryLoadData writes its error log and fails as on bad PTX
 *   STANDIN_LEGACY_ANSWER_MS=N whether the legacy stream captures is answered N ms late (the
 *                            strict model's answer), so a race after the question shows
 *   STANDIN_JIT_FAIL=2       cuLibraryLoadData writes its error log and succeeds, as the 580
 *                            driver does on bad PTX: the library lists no kernel, and asking
 *                            it for one fails as on bad PTX
 * And at run time: standin_set_sync_status(CODE) makes cuStreamSynchronize answer CODE, and
 * standin_fail_node_sets(N) makes the next N cuGraphExecKernelNodeSetParams calls fail.
 * Arrays (and their copies to and from host memory), texture and surface objects and tensor
 * maps are at the end: their calls are logged with their arguments.
 * Build-time settings: -DSTANDIN_NO_PARAM_COUNT leaves cuKernelGetParamCount out (as the 13.0
 * driver does); -DSTANDIN_NO_LOCATION_V2 leaves out cuMemPrefetchAsync_v2 and cuMemAdvise_v2
 * (as drivers before 12.2 do); -DSTANDIN_NO_DISCARD leaves out the batched discard and
 * prefetch calls (as drivers before 13.x's own do); -DSTANDIN_NO_GREEN leaves out device
 * resources and green contexts (as drivers before 12.4 do); -DSTANDIN_NO_COREDUMP leaves out
 * the core-dump settings (as drivers before 12.1 do).
 *   STANDIN_SMS=N            SMs per device, for device resources and green contexts (132)
 *   STANDIN_WQ_LIMIT=N       the work-queue concurrency limit devices report (32)
 *
 * The bench build (-DSTANDIN_BENCH) is a stand-in whose calls cost next to nothing: with the
 * driver's own work taken out, what is left of a call through cuda-core is cuda-core's. It has
 * one device, one context, and the kernels empty0, empty4 and empty16 (the benches' empty
 * kernels); its handles are one object of each kind, made once, and it takes no lock.
 * CUDA_CORE_STANDIN_EVICT=BYTES makes each call that stands for real driver work (event,
 * stream synchronisation, memory, copy and launch calls; not the context reads) first write
 * one byte in every 64 of a BYTES-long array, as a real driver's call pushes the caller's data
 * out of the nearest caches: what a wrapper then pays for its own memory accesses shows.
 *
 * The probe build (-DSTANDIN_PROBE) answers cuDriverGetVersion with FAKE_VERSION and has three
 * devices, a context current from the start on every thread, and fake_pops, the count of
 * cuCtxPopCurrent's calls, for its tests to read. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned long long devptr;

#ifndef FAKE_VERSION
#define FAKE_VERSION 13000
#endif
#ifndef FAKE_INIT_STATUS
#define FAKE_INIT_STATUS 0
#endif
#ifndef FAKE_CTX_STATUS
#define FAKE_CTX_STATUS 0
#endif
#ifndef FAKE_POP_STATUS
#define FAKE_POP_STATUS 0
#endif

/* What differs by build, besides the functions each exports:
 *   LOGGING          whether calls are logged (note() below) and their lines built
 *   DEFAULT_DEVICES  the devices where STANDIN_DEVICES is not set
 *   FIRST_CURRENT    the context current on each thread before any call makes one
 *   PER_THREAD       the storage of the current context and its stack: thread-local, but in
 *                    the bench, which calls from one thread: there a thread-local variable of
 *                    a shared library costs a call to __tls_get_addr at each use. */
#if defined(STANDIN_FULL)
#define LOGGING 1
#define DEFAULT_DEVICES 2
#define FIRST_CURRENT NULL
#define PER_THREAD __thread
#elif defined(STANDIN_BENCH)
#define LOGGING 0
#define DEFAULT_DEVICES 1
#define FIRST_CURRENT NULL
#define PER_THREAD
#else
#define LOGGING 0
#define DEFAULT_DEVICES 3
#define FIRST_CURRENT (&primaries[0])
#define PER_THREAD __thread
#endif

/* ---- run-time settings -------------------------------------------------------------------- */

/* A setting's text (NULL where unset), and its number; the bench and probe builds have none,
 * every setting taking its default (in the bench, a constant the compiler folds). */
#ifdef STANDIN_FULL
static const char *setting_text(const char *name) { return getenv(name); }
static long setting(const char *name, long fallback) {
    const char *v = getenv(name);
    return v ? atol(v) : fallback;
}
#else
#define setting_text(name) ((void)(name), (const char *)NULL)
#define setting(name, fallback) ((void)(name), (long)(fallback))
#endif

/* CUDA_CORE_STANDIN_EVICT (the bench's only; a no-op elsewhere). */
#ifdef STANDIN_BENCH
static volatile char scratch[16 << 20];
static long evict_bytes = -1;

static void evict(void) {
    if (evict_bytes < 0) {
        const char *v = getenv("CUDA_CORE_STANDIN_EVICT");
        evict_bytes = v ? atol(v) : 0;
        if (evict_bytes > (long)sizeof scratch) evict_bytes = sizeof scratch;
    }
    for (long i = 0; i < evict_bytes; i += 64) scratch[i]++;
}
#else
#define evict() ((void)0)
#endif

/* ---- the log ------------------------------------------------------------------------------ */

#ifdef STANDIN_FULL
/* The driver's own error log (cuLogs*), below with its calls. */
static void driver_log(const char *call, int code, const char *code_name, const char *why);
#endif

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[1 << 20];
static size_t log_len;
/* Set once a line did not fit (the model's test fails then rather than check half a log). */
static int log_full;

/* Whether the strict model is on (STANDIN_MODEL=1, see "the strict model" below; the full
 * build's only). */
#ifdef STANDIN_FULL
static int model_on = -1;
static int modeled(void) {
    if (model_on < 0) model_on = setting("STANDIN_MODEL", 0) != 0;
    return model_on;
}
/* Where the model is on, its side of a call answers it (the bench and probe have no model). */
#define MODEL_ANSWERS(call) do { if (modeled()) return (call); } while (0)
#else
#define modeled() 0
#define MODEL_ANSWERS(call) do { } while (0)
#endif
/* The calling thread's number, from 1 in the order threads first call (the model's logs). */
static int thread_count;
static __thread int thread_no;
static int me(void) {
    if (!thread_no) thread_no = __atomic_add_fetch(&thread_count, 1, __ATOMIC_SEQ_CST);
    return thread_no;
}

static void note_line(const char *format, ...) {
    char line[320];
    int at = modeled() ? snprintf(line, 16, "t%d ", me()) : 0;
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line + at, sizeof line - 1 - (size_t)at, format, args);
    va_end(args);
    if (n < 0) return;
    n += at;
    if (n > (int)sizeof line - 2) n = (int)sizeof line - 2;
    line[n++] = '\n';
    pthread_mutex_lock(&lock);
    if (log_len + (size_t)n < sizeof log_text) {
        memcpy(log_text + log_len, line, (size_t)n);
        log_len += (size_t)n;
        log_text[log_len] = 0;
    } else {
        log_full = 1;
    }
    pthread_mutex_unlock(&lock);
}
/* Logs a line; where there is no log, its arguments are not even evaluated. */
#define note(...) do { if (LOGGING) note_line(__VA_ARGS__); } while (0)

#ifdef STANDIN_FULL
/* The calls so far, one per line; standin_log_clear() starts afresh. */
const char *standin_log(void) { return log_text; }
void standin_log_clear(void) {
    pthread_mutex_lock(&lock);
    log_len = 0;
    log_text[0] = 0;
    log_full = 0;
    pthread_mutex_unlock(&lock);
}
/* Whether a line was left out since the last clear, the log being full. */
int standin_log_full(void) { return log_full; }
/* Writes a line of the caller's into the log (the model's test marks its operations). */
void standin_mark(const char *text) { note("## %s", text); }
#endif

/* ---- objects: each handle points at one of these, named in the log by kind and number ----- */

enum kind { CONTEXT = 1, STREAM, EVENT, POOL, LIBRARY, KERNEL, GRAPH, NODE, EXEC };

/* The model's (see "the strict model" below): what a graph node does, the streams one capture
 * holds, a user object. */
#define IN_CAPTURE 8
enum node_type { G_EMPTY, G_FILL, G_COPY, G_HOST, G_RECORD, G_WAIT, G_KERNEL };
typedef void (*host_fn)(void *);
struct gnode {
    int type;
    int id;                /* the node's number, for the log */
    devptr dst, src;       /* fills and copies (src: copies) */
    size_t bytes;
    host_fn fn;            /* host nodes */
    void *data;
    struct object *event;  /* record and wait nodes */
};
struct capture;
struct uobj;
struct coredump;

struct object {
    int kind;
    int id;
    int device;            /* contexts, streams, events, pools */
    struct object *context; /* streams, events */
    int params;            /* kernels: the parameter count */
    int ints;              /* kernels: how many of the last are 4-byte ints */
    int pool_props[4];     /* pools made by cuMemPoolCreate: allocation type, handle types,
                            * location type and id */
    size_t pool_max;       /* and their maximum size */
    const char *label;     /* kernels: the name */
    /* The model's state, all zero outside it. */
    int live;                    /* made and not destroyed since */
    struct object *next_free;    /* its kind's free list, once destroyed */
    unsigned flags;              /* streams and events: their creation flags */
    struct capture *capture;     /* streams: the capture they take part in */
    int slot;                    /* streams: their index in that capture */
    int clock[IN_CAPTURE];       /* streams: how much of each capture stream's captured work
                                  * they follow; events: that of their stream at the record */
    struct capture *recorded_in; /* events: the capture their last record went into */
    int recorded;                /* events: recorded since made */
    unsigned long long pending;  /* streams: the last host function their work waits for;
                                  * events: their stream's at the record */
    struct object *owner;        /* nodes: their graph */
    struct gnode g;              /* nodes: what they do */
    struct object **members;     /* graphs: their nodes */
    int member_count, member_cap;
    struct gnode *snap;          /* executable graphs: their graph's nodes when instantiated */
    int snap_count;
    struct uobj **uobjs;         /* graphs and executable graphs: the user object references
                                  * they hold, one entry per reference */
    int uobj_count, uobj_cap;
    /* Outside the model too: */
    int created;                 /* contexts: made by cuCtxCreate (destroyed: live is 0) */
    unsigned ctx_flags;          /* contexts: cuCtxSetFlags / cuCtxCreate's flags */
    unsigned cache_config;       /* contexts: cuCtxSetCacheConfig's; kernels: per device, 2
                                  * bits each (cuKernelSetCacheConfig) */
    struct object *module;       /* contexts: the library's module in it (cuLibraryGetModule) */
    struct object *disabled[16]; /* executable graphs: their disabled nodes */
    int disabled_count;
    int green;                   /* contexts: a green context's number (gc<N>), 0 otherwise */
    struct coredump *coredump;   /* contexts: their core-dump settings, once asked */
};

#ifdef STANDIN_FULL
/* Defined with the calls of issue 59 below. */
static int ctx_dead(const char *call, const void *ctx);
static int node_disabled_id(const struct object *x, int id);
static const char *disabled_list(const struct object *x, char *out, size_t size);
#endif

#define MAX_DEVICES 8
static struct object primaries[MAX_DEVICES];
static struct object pools[MAX_DEVICES];
static PER_THREAD struct object *current = FIRST_CURRENT;

static int devices(void) {
    long n = setting("STANDIN_DEVICES", DEFAULT_DEVICES);
    return n < 1 ? 1 : n > MAX_DEVICES ? MAX_DEVICES : (int)n;
}

/* A handle's name in the log: s3 (stream 3), e4, c0 (device 0's primary context), legacy. */
static const char *name(const void *handle, char *buf) {
    const struct object *o = handle;
    if (handle == NULL) return "null";
    if ((uintptr_t)handle == 1) return "legacy";
    if ((uintptr_t)handle == 2) return "per-thread";
    if (o->kind == KERNEL) return o->label;
    /* A context of cuCtxCreate: cc and its number (a primary or foreign one: c and its device). */
    if (o->kind == CONTEXT && o->created) { sprintf(buf, "cc%d", o->id); return buf; }
    if (o->kind == CONTEXT && o->green) { sprintf(buf, "gc%d", o->green); return buf; }
    const char *prefix = o->kind == CONTEXT ? "c" : o->kind == STREAM ? "s" : o->kind == EVENT ? "e"
        : o->kind == POOL ? "p" : o->kind == GRAPH ? "g"
        : o->kind == NODE ? "n" : o->kind == EXEC ? "ge" : "x";
    sprintf(buf, "%s%d", prefix, o->kind == CONTEXT || o->kind == POOL ? o->device : o->id);
    return buf;
}

#ifdef STANDIN_FULL
/* A handle's name in the log ("s3"), for the NCCL stand-in's lines (libnccl_standin.c). */
const char *standin_handle_name(const void *handle) {
    static __thread char b[16];
    return name(handle, b);
}
#endif

#ifndef STANDIN_PROBE
static struct object library = {.kind = LIBRARY, .id = 1};
/* k0, k1, k4 and k16: 0, 1, 4 and 16 parameters of STANDIN_PARAM_SIZE bytes; empty0, empty4
 * and empty16 (the benches' kernels): pointers (8 bytes) then ints (4 bytes), 0, 3 + 1 and
 * 4 + 12. */
#define KERNELS 7
static struct object kernels[KERNELS] = {
    {.kind = KERNEL, .label = "k0", .params = 0}, {.kind = KERNEL, .label = "k1", .params = 1},
    {.kind = KERNEL, .label = "k4", .params = 4}, {.kind = KERNEL, .label = "k16", .params = 16},
    {.kind = KERNEL, .label = "empty0", .params = 0},
    {.kind = KERNEL, .label = "empty4", .params = 4, .ints = 1},
    {.kind = KERNEL, .label = "empty16", .params = 16, .ints = 12}};
#ifdef STANDIN_BENCH
/* The bench's allocations are all at one address, as its stand-in's were before the builds
 * merged: its launch rows pass four buffers, and cuda-core's launch_16 costs some 3 ns more
 * when their addresses differ (measured), which would move the bench's figures. */
static devptr fresh_address(size_t size) {
    (void)size;
    return 0x100000;
}
#else
/* A new range of device addresses, of `size` bytes rounded up to 4 KiB. */
static devptr next_address = 0x10000000;
static devptr fresh_address(size_t size) {
    pthread_mutex_lock(&lock);
    devptr p = next_address;
    next_address += (size + 0xfff) & ~(size_t)0xfff;
    pthread_mutex_unlock(&lock);
    return p;
}
#endif
/* This thread's stream capture mode (cuThreadExchangeStreamCaptureMode; 0 global by default). */
static __thread int capture_mode;
#endif

#ifdef STANDIN_FULL
static int next_id = 1;

/* With STANDIN_REUSE=1 (outside the model), destroyed graphs and nodes go to a free list and
 * the next one made of their kind gets the same address (and name), as the real driver's
 * allocator may give it. */
#define FREED_MAX 256
static struct object *freed[FREED_MAX];
static int freed_count;
static void reuse_later(struct object *o) {
    if (!setting("STANDIN_REUSE", 0)) return;
    pthread_mutex_lock(&lock);
    if (freed_count < FREED_MAX) freed[freed_count++] = o;
    pthread_mutex_unlock(&lock);
}
static struct object *reused(int kind, struct object *context) {
    struct object *o = NULL;
    pthread_mutex_lock(&lock);
    for (int i = freed_count - 1; i >= 0; i--) {
        if (freed[i]->kind == kind) {
            o = freed[i];
            freed[i] = freed[--freed_count];
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    if (o) {
        o->context = context;
        o->device = context ? context->device : 0;
    }
    return o;
}

/* The model's free lists, by kind: a destroyed object is the next one made of its kind. */
static struct object *free_objects[16];

static struct object *make(int kind, struct object *context) {
    struct object *o = reused(kind, context);
    if (o) return o;
    pthread_mutex_lock(&lock);
    if (modeled() && kind < 16 && free_objects[kind]) {
        o = free_objects[kind];
        free_objects[kind] = o->next_free;
        int id = o->id;
        memset(o, 0, sizeof *o);
        o->id = id;
    } else {
        o = calloc(1, sizeof *o);
        o->id = next_id++;
    }
    pthread_mutex_unlock(&lock);
    o->kind = kind;
    o->context = context;
    o->device = context ? context->device : 0;
    o->live = 1;
    return o;
}
#elif defined(STANDIN_BENCH)
/* The bench's handles: one object of each kind, made once and never changed (its loops make
 * and destroy millions, and nothing in the bench build reads what an object holds). */
static struct object *make(int kind, struct object *context) {
    static struct object one[16];
    (void)context;
    return &one[kind];
}
#endif

#ifdef STANDIN_FULL
/* ---- the strict model (STANDIN_MODEL=1) ----------------------------------------------------
 * For the model-based test (tests/model.rs): with STANDIN_MODEL=1 the stand-in models what the
 * driver itself checks, refuses and reuses, and logs in a stricter form. Without it nothing
 * here runs, and every other test sees the stand-in as it was.
 *
 * The log: every line starts with the calling thread ("t3 ", numbered in the order threads
 * first call). A call that succeeds logs its line; one that fails logs one line saying why:
 *   "!stale CALL NAME"           a handle that is not live (destroyed, or never made), or a
 *                                device address outside every live allocation ("!stale use",
 *                                "!stale free"); the call fails with CUDA_ERROR_INVALID_HANDLE
 *                                (a use is still made, as the driver would not notice);
 *   "!refused CODE CALL ...: WHY" a call an open stream capture forbids (see below);
 *   "!captured CALL ...: WHY"    work that cuda-core promises never to put into a capture (a
 *                                host function, a buffer's allocation or free), refused;
 *   "CALL ... -> CODE"           any other failure.
 * Work queued on a capturing stream is logged with " captured=ID" (the capture's id).
 *
 * Reuse: destroyed streams, events, graphs, nodes and executable graphs go on free lists, and
 * the next one made of their kind is the same object, at the same address and with the same
 * name, as the driver hands addresses out again; freed device memory is handed out again to
 * the next allocation of its size. So a handle or address used after its destruction is seen
 * (while not yet reused), and one used after its reuse acts on its new owner.
 *
 * Streams and events: work completes at once, except host functions (cuLaunchHostFunc, and a
 * launched graph's host nodes), which run only when a synchronisation runs them, in the order
 * they were queued on any stream: a stream's or an event's runs those up to the last one its
 * work follows, the context's all of them. A stream whose work (or an event whose record)
 * follows a host function not yet run is not ready: cuStreamQuery and cuEventQuery answer
 * CUDA_ERROR_NOT_READY. STANDIN_QUERY_STATUS and standin_set_sync_status do not apply.
 *
 * Stream capture, per stream, as the CUDA programming guide describes it:
 *   - cuStreamBeginCapture starts a capture (an id, a mode, the thread that began it) on a
 *     stream; a stream that waits on an event recorded in a capture joins that capture; work
 *     queued on a stream of a capture is recorded into its graph, not run;
 *   - cuStreamEndCapture on the stream that began it ends it: refused with
 *     CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD (908) from another thread than the one that began
 *     a global or thread-local capture (and the capture is ended all the same, as the H200's
 *     580 driver does), with _INVALIDATED (901) for an invalidated capture and _UNJOINED (904)
 *     where a stream that joined it was not joined back (the origin did not wait for an event
 *     recorded after that stream's last captured work); each ends the capture, and every
 *     stream of it leaves it. On another stream than the origin it is _UNMATCHED (903);
 *   - a synchronisation or query of a capturing stream, or a query or synchronisation of an
 *     event whose last record is in an open capture, is refused (_UNSUPPORTED, 900) and
 *     invalidates that capture; a context synchronisation while any capture is open is refused
 *     and invalidates them all;
 *   - "potentially unsafe" calls (cuStreamSynchronize, cuStreamQuery, cuEventSynchronize,
 *     cuEventQuery, cuCtxSynchronize, cuMemAlloc, cuMemFree, and an uncaptured
 *     cuMemAllocAsync or cuMemAllocFromPoolAsync) are refused (900), invalidating
 *     the captures that forbid them, by the rules of cuThreadExchangeStreamCaptureMode: in a
 *     thread whose mode is global (the default), while that thread began a capture that is not
 *     relaxed or another thread began a global one; in a thread-local thread, while it began
 *     one that is not relaxed; never in a relaxed thread;
 *   - work on the legacy default stream while a blocking stream captures is refused
 *     (_IMPLICIT, 906) and invalidates that capture; asking whether the legacy stream
 *     captures then fails with _IMPLICIT too, invalidating nothing;
 *   - a capturing stream waiting on an event recorded outside its capture (or in a capture
 *     since ended) is refused (_ISOLATION, 905) and invalidates its capture; a stream waiting
 *     on an event recorded in a capture since ended is refused likewise (an assumption: the
 *     guide says a dependency between captured and uncaptured work is an error); a stream of
 *     one capture waiting on an event of another is refused (_MERGE, 902), invalidating both;
 *     a wait on an event never recorded does nothing;
 *   - any other work on a stream of an invalidated capture is refused (901) until it ends;
 *   - cuStreamDestroy of a stream that takes part in a capture is refused (900) and
 *     invalidates it (an assumption: the driver's behaviour there is not documented).
 *
 * Graphs: empty, fill (memset), copy and host nodes, node removal, instantiation (a copy of
 * the nodes), launches (a fill or copy is a use of its ranges at the launch, logged
 * "graph-use ... kind=K"; a host node is queued as a host function), and user objects: counted
 * references held by graphs, their executable graphs and each launch until it completes (after
 * its host nodes ran); the destructor runs in the call that releases the last reference.
 *
 * Pools' access: memory of a pool made by cuMemPoolCreate (a pinned pool's) used by a fill or
 * a copy on a stream of a device the pool does not grant access to (cuMemPoolSetAccess),
 * directly or by a graph's launch, is logged "!noaccess CALL ADDRESS on STREAM: ..." (the
 * driver faults there; kernels' uses are not checked).
 *
 * Run-time functions for the test: standin_mark(TEXT) writes "## TEXT"; standin_model_live(W)
 * counts what lives (0 streams, 1 events, 2 graphs, 3 executable graphs, 4 allocations, 5 user
 * objects, 6 queued host work, 7 open captures); standin_model_count(W) counts what ran (0 host
 * functions, 1 host nodes, 2 user object destructors; 3 host functions and 4 destructors that
 * returned) and 5 the captures begun; standin_model_busy(HANDLE) says whether a stream or an
 * event has work pending or is in a capture, standin_model_capture(HANDLE) the capture a
 * stream is in (0: none); standin_set_yield(HOOK) has HOOK(CALL) called at the entry of each
 * modelled call, before the stand-in takes a lock, so that the test can interleave its threads
 * between driver calls. */

static pthread_mutex_t model_lock = PTHREAD_MUTEX_INITIALIZER;
/* The yield hook (standin_set_yield): called at the entry of each modelled call, before the
 * stand-in takes any lock of its own, with the call's name (its model function's), so that
 * the model's test can hand the CPU to another of its threads between driver calls. */
typedef void (*yield_fn)(const char *call);
static yield_fn yield_hook;
void standin_set_yield(yield_fn hook) { __atomic_store_n(&yield_hook, hook, __ATOMIC_RELEASE); }
static void yield_point(const char *call) {
    yield_fn hook = __atomic_load_n(&yield_hook, __ATOMIC_ACQUIRE);
    if (hook) hook(call);
}
/* M_LOCK at a modelled call's entry (a yield point); M_LOCK_QUIET elsewhere (the test's own
 * questions, and the model's bookkeeping inside a call). */
#define M_LOCK (yield_point(__func__), pthread_mutex_lock(&model_lock))
#define M_LOCK_QUIET pthread_mutex_lock(&model_lock)
#define M_UNLOCK pthread_mutex_unlock(&model_lock)

struct capture {
    int id;
    int mode;                /* 0 global, 1 thread-local, 2 relaxed */
    int thread;              /* the thread that began it */
    int open, invalidated;
    struct object *origin;
    struct object *streams[IN_CAPTURE]; /* by slot; the origin's is 0 */
    int count;
    struct object *graph;    /* what its work is recorded into */
};
#define MAX_OPEN 64
static struct capture *open_captures[MAX_OPEN];
static int open_count;
static int next_capture = 1;

struct uobj { int id; void *data; host_fn destroy; int refs; };
static int next_uobj = 1, uobjs_live;
static int live_count[16];

/* Queued host work: host functions and host nodes (fn set), and a launch's release of its
 * user object references (fn NULL), by id, run in order at a synchronisation. */
struct work { unsigned long long id; host_fn fn; void *data; int node; struct uobj **refs; int nrefs; };
static struct work *queue_;
static int queue_count, queue_cap;
static unsigned long long host_seq, host_ran;

/* What runs once the model's lock is let go: host functions ('h'), host nodes ('n') and user
 * object destructors ('u'), on the thread whose call made them due (a synchronisation runs
 * the host functions it waits for; another thread's call does not run them). */
struct due { int kind; unsigned long long id; host_fn fn; void *data; };
static __thread struct due *dues;
static __thread int due_count, due_cap;
static unsigned long long ran_counts[5];

/* Device memory: every range handed out, live or free. */
/* `host`: registered host memory, whose address is the host's: never handed out again by a
 * pool once unregistered (the host may register it again). */
struct range { devptr ptr; size_t size; int live; unsigned long long freed_at; struct object *pool; int host; };
static struct range *ranges;
static int range_count, range_cap, ranges_live;
static unsigned long long frees;

#define GROW(array, count, cap) \
    do { if ((count) == (cap)) { (cap) = (cap) ? 2 * (cap) : 16; \
         (array) = realloc((array), sizeof *(array) * (size_t)(cap)); } } while (0)

static void retire(struct object *o) {
    o->live = 0;
    free(o->members); o->members = NULL; o->member_count = o->member_cap = 0;
    free(o->snap); o->snap = NULL; o->snap_count = 0;
    free(o->uobjs); o->uobjs = NULL; o->uobj_count = o->uobj_cap = 0;
    pthread_mutex_lock(&lock);
    if (o->kind < 16) {
        live_count[o->kind]--;
        o->next_free = free_objects[o->kind];
        free_objects[o->kind] = o;
    }
    pthread_mutex_unlock(&lock);
}
static struct object *m_make(int kind, struct object *context) {
    struct object *o = make(kind, context);
    pthread_mutex_lock(&lock);
    live_count[kind]++;
    pthread_mutex_unlock(&lock);
    return o;
}

static void due(int kind, unsigned long long id, host_fn fn, void *data) {
    GROW(dues, due_count, due_cap);
    dues[due_count++] = (struct due){kind, id, fn, data};
}
/* Runs what came due, without the model's lock (a destructor may make the release thread call
 * the driver, a host function may block). */
static void run_dues(void) {
    for (;;) {
        M_LOCK_QUIET;
        if (due_count == 0) { M_UNLOCK; return; }
        struct due d = dues[0];
        memmove(dues, dues + 1, sizeof *dues * (size_t)--due_count);
        int kind = d.kind == 'h' ? 0 : d.kind == 'n' ? 1 : 2;
        ran_counts[kind]++;
        M_UNLOCK;
        if (d.kind == 'u') note("user object u%llu destroyed", d.id);
        else note("host %s h%llu runs", d.kind == 'h' ? "function" : "node", d.id);
        d.fn(d.data);
        /* Counted once it returned: host functions 3, destructors 4 (a node's is not). */
        if (kind != 1) {
            M_LOCK_QUIET;
            ran_counts[kind == 0 ? 3 : 4]++;
            M_UNLOCK;
        }
    }
}

static void release(struct uobj *u, int n) {
    u->refs -= n;
    if (u->refs < 0) note("!stale user object u%d released once too often", u->id);
    if (u->refs == 0) {
        uobjs_live--;
        due('u', (unsigned long long)u->id, u->destroy, u->data);
    }
}
static void hold(struct object *o, struct uobj *u) {
    GROW(o->uobjs, o->uobj_count, o->uobj_cap);
    o->uobjs[o->uobj_count++] = u;
}
static void release_all(struct object *o) {
    for (int i = 0; i < o->uobj_count; i++) release(o->uobjs[i], 1);
    o->uobj_count = 0;
}

/* The queued host work up to `upto` (by id; all of it where `upto` is host_seq) comes due, in
 * order (a synchronisation: all work in the stand-in is done but for host functions). One
 * queue for every stream: a stream's synchronisation runs the host work queued before its
 * last (`pending`), of any stream, as a driver that ran host functions in order would. */
static void drain_upto(unsigned long long upto) {
    int n = 0;
    while (n < queue_count && queue_[n].id <= upto) {
        struct work *w = &queue_[n++];
        if (w->fn) due(w->node ? 'n' : 'h', w->id, w->fn, w->data);
        for (int r = 0; r < w->nrefs; r++) release(w->refs[r], 1);
        free(w->refs);
        host_ran = w->id;
    }
    memmove(queue_, queue_ + n, sizeof *queue_ * (size_t)(queue_count - n));
    queue_count -= n;
}
static void drain(void) { drain_upto(host_seq); }
static unsigned long long enqueue_work(host_fn fn, void *data, int node, struct uobj **refs, int nrefs) {
    GROW(queue_, queue_count, queue_cap);
    queue_[queue_count++] = (struct work){++host_seq, fn, data, node, refs, nrefs};
    return host_seq;
}

/* Whether `h` is a live object of `kind`; logs "!stale" where it is not. The default streams
 * (NULL, legacy and per-thread) always are. */
static int stale(const char *call, const void *h, int kind) {
    const struct object *o = h;
    char b[16];
    if (kind == STREAM && (uintptr_t)h <= 2) return 0;
    if (h && o->live && o->kind == kind) return 0;
    note("!stale %s %s", call, h ? name(h, b) : "null");
    return 1;
}
static struct capture *capture_of(const void *s) {
    return (uintptr_t)s <= 2 ? NULL : ((const struct object *)s)->capture;
}
/* " captured=ID" for work on a capturing stream, else "". */
static const char *tag(const void *s) {
    static __thread char text[32];
    struct capture *c = capture_of(s);
    if (!c) return "";
    snprintf(text, sizeof text, " captured=%d", c->id);
    return text;
}
static void invalidate(struct capture *c, const char *why) {
    if (c && c->open && !c->invalidated) {
        c->invalidated = 1;
        note("capture %d invalidated by %s", c->id, why);
    }
}
static int refuse(int code, const char *call, const char *what, const char *why) {
    note("!refused %d %s %s: %s", code, call, what, why);
    return code;
}
static void close_capture(struct capture *c) {
    for (int i = 0; i < c->count; i++)
        if (c->streams[i]->capture == c) c->streams[i]->capture = NULL;
    c->open = 0;
    for (int i = 0; i < open_count; i++)
        if (open_captures[i] == c) { open_captures[i] = open_captures[--open_count]; break; }
}

/* cuThreadExchangeStreamCaptureMode's rules for a potentially unsafe call. */
static int unsafe_call(const char *call, const char *what) {
    int t = me(), refused = 0;
    if (capture_mode == 2) return 0;
    for (int i = 0; i < open_count; i++) {
        struct capture *c = open_captures[i];
        int own = c->thread == t && c->mode != 2;
        int global = capture_mode == 0 && c->thread != t && c->mode == 0;
        if (own || global) { refused = 1; invalidate(c, call); }
    }
    return refused ? refuse(900, call, what, "a potentially unsafe call while a capture forbids it") : 0;
}
/* Work on the legacy default stream while a blocking stream captures. */
static int legacy_use(const char *call, const void *s) {
    int refused = 0;
    if (s != NULL && (uintptr_t)s != 1) return 0;
    for (int i = 0; i < open_count; i++) {
        struct capture *c = open_captures[i];
        for (int j = 0; j < c->count; j++)
            if (c->streams[j]->capture == c && !(c->streams[j]->flags & 1)) {
                refused = 1;
                invalidate(c, call);
                break;
            }
    }
    return refused ? refuse(906, call, "legacy", "the legacy stream while a blocking stream captures") : 0;
}
/* Before work is queued on `s`: 0 to run it, 1 when it is captured (into `*c`, its clock
 * counted), or the failure. */
static int queue_on(const char *call, void *s, struct capture **c) {
    char b[16];
    if (stale(call, s, STREAM)) return 400;
    int r = legacy_use(call, s);
    if (r) return r;
    *c = capture_of(s);
    if (!*c) return 0;
    if ((*c)->invalidated) return refuse(901, call, name(s, b), "work on a stream of an invalidated capture");
    struct object *o = s;
    o->clock[o->slot]++;
    return 1;
}
static struct object *add_member(struct object *g, struct gnode n) {
    struct object *o = m_make(NODE, NULL);
    o->owner = g;
    o->g = n;
    o->g.id = o->id;
    GROW(g->members, g->member_count, g->member_cap);
    g->members[g->member_count++] = o;
    return o;
}
static void destroy_graph(struct object *g) {
    release_all(g);
    for (int i = 0; i < g->member_count; i++) retire(g->members[i]);
    retire(g);
}

static struct range *live_range(devptr p, size_t n) {
    for (int i = 0; i < range_count; i++)
        if (ranges[i].live && p >= ranges[i].ptr && p + n <= ranges[i].ptr + ranges[i].size)
            return &ranges[i];
    return NULL;
}
/* Whether `p` is in the model's device window, where every address is one it handed out.
 * Other addresses are host memory of the process: a vector a copy reads or writes (which
 * cuMemcpyAsync takes under unified addressing), or host memory registered, whose pages the
 * process's heap reuses once it is unregistered; the order of their registered uses is
 * checked against the unregistration instead (tests/model.rs). */
static int known_memory(devptr p) {
    return p < next_address;
}
static void check_use(const char *call, devptr p, size_t n) {
    if (n && !live_range(p, n) && known_memory(p)) note("!stale use %s %#llx size=%zu", call, p, n);
}
/* Whether `p` is memory of a pool made by cuMemPoolCreate (a pinned pool's, say) whose access
 * the device of stream `s` lacks (cuMemPoolSetAccess): such a use is logged
 * "!noaccess CALL ADDRESS on STREAM: ..." (the driver would fault on it, not refuse it). The
 * default pools' own device always has access. */
static void check_access(const char *call, devptr p, void *s) {
    char b[16];
    struct range *r = p ? live_range(p, 1) : NULL;
    if (!r || !r->pool || (r->pool >= pools && r->pool < pools + MAX_DEVICES)) return;
    int device = (uintptr_t)s <= 2 ? (current ? current->device : 0) : ((struct object *)s)->device;
    int mask = __atomic_load_n(&r->pool->params, __ATOMIC_ACQUIRE);
    if (!((mask >> device) & 1))
        note("!noaccess %s %#llx on %s: device %d has no access to the memory's pool", call, p,
             name(s, b), device);
}
/* A new allocation of `size` bytes: the range of that size freed last, else a new one. */
static devptr alloc_range(size_t size, struct object *pool) {
    struct range *best = NULL;
    size = (size + 0xff) & ~(size_t)0xff;
    for (int i = 0; i < range_count; i++)
        if (!ranges[i].live && !ranges[i].host && ranges[i].size == size
            && (!best || ranges[i].freed_at > best->freed_at))
            best = &ranges[i];
    if (!best) {
        GROW(ranges, range_count, range_cap);
        best = &ranges[range_count++];
        best->ptr = fresh_address(size);
        best->size = size;
    }
    best->live = 1;
    best->pool = pool;
    ranges_live++;
    return best->ptr;
}
/* A live range at a given address: host memory registered (cuMemHostRegister). */
static void add_range(devptr p, size_t size) {
    GROW(ranges, range_count, range_cap);
    ranges[range_count++] = (struct range){.ptr = p, .size = size, .live = 1, .host = 1};
    ranges_live++;
}
static int free_range(const char *call, devptr p) {
    for (int i = 0; i < range_count; i++)
        if (ranges[i].live && ranges[i].ptr == p) {
            ranges[i].live = 0;
            ranges[i].freed_at = ++frees;
            ranges_live--;
            return 0;
        }
    note("!stale free %s %#llx", call, p);
    return 1;
}

int standin_model_live(int what) {
    M_LOCK_QUIET;
    int n = what == 0 ? live_count[STREAM] : what == 1 ? live_count[EVENT] : what == 2 ? live_count[GRAPH]
        : what == 3 ? live_count[EXEC] : what == 4 ? ranges_live : what == 5 ? uobjs_live
        : what == 6 ? queue_count : what == 7 ? open_count : -1;
    M_UNLOCK;
    return n;
}
unsigned long long standin_model_count(int what) {
    M_LOCK_QUIET;
    unsigned long long n = what >= 0 && what < 5 ? ran_counts[what]
        : what == 5 ? (unsigned long long)(next_capture - 1) : 0;
    M_UNLOCK;
    return n;
}
/* The capture a stream takes part in (its id; 0: none, and for the default streams, which
 * never capture). */
int standin_model_capture(void *handle) {
    M_LOCK_QUIET;
    struct capture *c = (uintptr_t)handle <= 2 ? NULL : ((struct object *)handle)->capture;
    int id = c ? c->id : 0;
    M_UNLOCK;
    return id;
}
int standin_model_busy(void *handle) {
    struct object *o = handle;
    M_LOCK_QUIET;
    int busy = o->kind == STREAM ? o->pending > host_ran || o->capture != NULL
        : o->kind == EVENT ? o->pending > host_ran || (o->recorded_in && o->recorded_in->open) : -1;
    M_UNLOCK;
    return busy;
}

/* The model's side of each driver function the stand-in has (called in place of its plain side
 * when the model is on). */

static int m_stream_create(void **s, unsigned flags) {
    char b[16], c[16];
    if (!current) return 201;
    M_LOCK;
    struct object *o = m_make(STREAM, current);
    o->flags = flags;
    note("cuStreamCreate %s in %s flags=%u", name(o, b), name(current, c), flags);
    M_UNLOCK;
    *s = o;
    return 0;
}
static int m_stream_destroy(void *s) {
    char b[16];
    int r = 0;
    M_LOCK;
    if ((uintptr_t)s <= 2 || stale("cuStreamDestroy", s, STREAM)) r = 400;
    else if (capture_of(s)) {
        invalidate(capture_of(s), "cuStreamDestroy");
        r = refuse(900, "cuStreamDestroy", name(s, b), "a stream that takes part in a capture");
    } else {
        note("cuStreamDestroy %s", name(s, b));
        retire(s);
    }
    M_UNLOCK;
    return r;
}
static int m_stream_sync(void *s, int query) {
    char b[16];
    const char *call = query ? "cuStreamQuery" : "cuStreamSynchronize";
    int r = 0;
    M_LOCK;
    if (stale(call, s, STREAM)) r = 400;
    else if (capture_of(s)) {
        invalidate(capture_of(s), call);
        r = refuse(900, call, name(s, b), "a capturing stream");
    } else if (!(r = unsafe_call(call, name(s, b)))) {
        unsigned long long pending = (uintptr_t)s <= 2 ? host_seq : ((struct object *)s)->pending;
        if (query) {
            r = pending > host_ran ? 600 : 0;
            note("%s %s%s", call, name(s, b), r ? " -> 600" : "");
        } else {
            note("%s %s", call, name(s, b));
            drain_upto(pending);
        }
    }
    M_UNLOCK;
    run_dues();
    return r;
}
static int m_stream_wait(void *s, void *e) {
    char b[16], c[16];
    int r = 0;
    M_LOCK;
    if (stale("cuStreamWaitEvent", s, STREAM) || stale("cuStreamWaitEvent", e, EVENT)) { M_UNLOCK; return 400; }
    struct object *ev = e, *st = s;
    struct capture *sc = capture_of(s), *ec = ev->recorded_in;
    const char *sn = name(s, b), *en = name(e, c);
    if ((r = legacy_use("cuStreamWaitEvent", s))) {
    } else if (sc && sc->invalidated) {
        r = refuse(901, "cuStreamWaitEvent", sn, "a stream of an invalidated capture");
    } else if (ec && ec->open) {
        if (ec->invalidated) {
            r = refuse(901, "cuStreamWaitEvent", en, "an event of an invalidated capture");
        } else if (!sc) {
            if ((uintptr_t)s <= 2) {
                r = refuse(906, "cuStreamWaitEvent", sn, "a default stream cannot join a capture");
            } else if (ec->count == IN_CAPTURE) {
                r = refuse(900, "cuStreamWaitEvent", sn, "more streams than the model holds in one capture");
            } else {
                st->capture = ec;
                st->slot = ec->count;
                ec->streams[ec->count++] = st;
                memcpy(st->clock, ev->clock, sizeof st->clock);
                note("cuStreamWaitEvent %s waits for %s captured=%d (joins)", sn, en, ec->id);
            }
        } else if (sc == ec) {
            for (int i = 0; i < IN_CAPTURE; i++)
                if (ev->clock[i] > st->clock[i]) st->clock[i] = ev->clock[i];
            note("cuStreamWaitEvent %s waits for %s captured=%d", sn, en, ec->id);
        } else {
            invalidate(sc, "cuStreamWaitEvent");
            invalidate(ec, "cuStreamWaitEvent");
            r = refuse(902, "cuStreamWaitEvent", sn, "an event of another capture");
        }
    } else if (!ev->recorded) {
        note("cuStreamWaitEvent %s waits for %s%s (never recorded)", sn, en, tag(s));
    } else if (sc) {
        invalidate(sc, "cuStreamWaitEvent");
        r = refuse(905, "cuStreamWaitEvent", sn, "a capturing stream waiting for an event recorded outside its capture");
    } else if (ec) {
        r = refuse(905, "cuStreamWaitEvent", sn, "an event whose last record was captured, after its capture ended");
    } else {
        if ((uintptr_t)s > 2 && ev->pending > st->pending) st->pending = ev->pending;
        note("cuStreamWaitEvent %s waits for %s", sn, en);
    }
    M_UNLOCK;
    return r;
}
static int m_event_create(void **e, unsigned flags) {
    char b[16];
    if (!current) return 201;
    M_LOCK;
    struct object *o = m_make(EVENT, current);
    o->flags = flags;
    note("cuEventCreate %s flags=%u", name(o, b), flags);
    M_UNLOCK;
    *e = o;
    return 0;
}
static int m_event_destroy(void *e) {
    char b[16];
    int r = 0;
    M_LOCK;
    if (stale("cuEventDestroy", e, EVENT)) r = 400;
    else {
        note("cuEventDestroy %s", name(e, b));
        retire(e);
    }
    M_UNLOCK;
    return r;
}
static int m_event_record(void *e, void *s) {
    char b[16], c[16];
    struct capture *cap = NULL;
    int r;
    M_LOCK;
    if (stale("cuEventRecord", e, EVENT)) { M_UNLOCK; return 400; }
    const char *t = tag(s);
    r = queue_on("cuEventRecord", s, &cap);
    struct object *ev = e;
    if (r == 1) {
        struct object *st = s;
        ev->recorded_in = cap;
        memcpy(ev->clock, st->clock, sizeof ev->clock);
        ev->recorded = 1;
        add_member(cap->graph, (struct gnode){.type = G_RECORD, .event = ev});
        note("cuEventRecord %s on %s%s", name(e, b), name(s, c), t);
        r = 0;
    } else if (r == 0) {
        ev->recorded_in = NULL;
        ev->recorded = 1;
        ev->pending = (uintptr_t)s <= 2 ? host_seq : ((struct object *)s)->pending;
        note("cuEventRecord %s on %s", name(e, b), name(s, c));
    }
    M_UNLOCK;
    return r;
}
static int m_event_sync(void *e, int query) {
    char b[16];
    const char *call = query ? "cuEventQuery" : "cuEventSynchronize";
    int r = 0;
    M_LOCK;
    struct object *ev = e;
    if (stale(call, e, EVENT)) r = 400;
    else if (ev->recorded_in && ev->recorded_in->open) {
        invalidate(ev->recorded_in, call);
        r = refuse(900, call, name(e, b), "an event recorded in an open capture");
    } else if (!(r = unsafe_call(call, name(e, b)))) {
        if (query) {
            r = !ev->recorded_in && ev->pending > host_ran ? 600 : 0;
            note("%s %s%s", call, name(e, b), r ? " -> 600" : "");
        } else {
            note("%s %s", call, name(e, b));
            drain_upto(ev->pending);
        }
    }
    M_UNLOCK;
    run_dues();
    return r;
}
static int m_ctx_sync(void) {
    int r = 0;
    M_LOCK;
    if (open_count) {
        for (int i = 0; i < open_count; i++) invalidate(open_captures[i], "cuCtxSynchronize");
        r = refuse(900, "cuCtxSynchronize", "", "a context synchronisation while a capture is open");
    } else if (!(r = unsafe_call("cuCtxSynchronize", ""))) {
        note("cuCtxSynchronize");
        drain();
    }
    M_UNLOCK;
    run_dues();
    return r;
}
static int m_begin_capture(void *s, int mode) {
    char b[16];
    int r = 0;
    M_LOCK;
    if (stale("cuStreamBeginCapture", s, STREAM)) r = 400;
    else if ((uintptr_t)s <= 2) r = refuse(900, "cuStreamBeginCapture", name(s, b), "a default stream cannot capture");
    else if (capture_of(s) || open_count == MAX_OPEN) {
        note("cuStreamBeginCapture %s mode=%d -> 401", name(s, b), mode);
        r = 401;
    } else {
        struct object *st = s;
        struct capture *c = calloc(1, sizeof *c);
        c->id = next_capture++;
        c->mode = mode;
        c->thread = me();
        c->open = 1;
        c->origin = st;
        c->streams[0] = st;
        c->count = 1;
        c->graph = m_make(GRAPH, st->context);
        st->capture = c;
        st->slot = 0;
        memset(st->clock, 0, sizeof st->clock);
        open_captures[open_count++] = c;
        note("cuStreamBeginCapture %s mode=%d captured=%d", name(s, b), mode, c->id);
    }
    M_UNLOCK;
    return r;
}
static int m_end_capture(void *s, void **graph) {
    char b[16], g[16];
    int r = 0;
    *graph = NULL;
    M_LOCK;
    struct capture *c = capture_of(s);
    if (stale("cuStreamEndCapture", s, STREAM)) r = 400;
    else if (!c || c->origin != s) {
        note("cuStreamEndCapture %s -> 903", name(s, b));
        r = 903;
    } else {
        if (c->mode != 2 && c->thread != me()) r = 908;
        else if (c->invalidated) r = 901;
        else
            for (int i = 1; i < c->count; i++)
                if (c->streams[i]->capture == c && c->origin->clock[i] < c->streams[i]->clock[i]) r = 904;
        close_capture(c);
        if (r) {
            note("cuStreamEndCapture %s -> %d (capture %d ended, from t%d)", name(s, b), r, c->id, c->thread);
            destroy_graph(c->graph);
        } else {
            *graph = c->graph;
            note("cuStreamEndCapture %s captured=%d -> %s", name(s, b), c->id, name(c->graph, g));
        }
    }
    M_UNLOCK;
    run_dues();
    return r;
}
/* Whether a blocking stream takes part in an open capture (the legacy stream then may not be
 * used, nor asked whether it captures). */
static int blocking_captures(void) {
    for (int i = 0; i < open_count; i++)
        for (int j = 0; j < open_captures[i]->count; j++)
            if (open_captures[i]->streams[j]->capture == open_captures[i]
                && !(open_captures[i]->streams[j]->flags & 1))
                return 1;
    return 0;
}
/* cuStreamIsCapturing and cuStreamGetCaptureInfo: on the legacy stream while a blocking stream
 * captures, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (as the runtime's documentation of
 * cudaStreamIsCapturing says), without invalidating anything. */
static int m_capture_info(void *s, int *status, unsigned long long *id, void **graph) {
    M_LOCK;
    if (stale("cuStreamGetCaptureInfo", s, STREAM)) { M_UNLOCK; return 400; }
    if ((s == NULL || (uintptr_t)s == 1) && blocking_captures()) { M_UNLOCK; return 906; }
    struct capture *c = capture_of(s);
    if (status) *status = !c ? 0 : c->invalidated ? 2 : 1;
    if (id) *id = c ? (unsigned long long)c->id : 0;
    if (graph) *graph = c && !c->invalidated ? (void *)c->graph : NULL;
    M_UNLOCK;
    /* STANDIN_LEGACY_ANSWER_MS=N: the answer about the legacy stream returns N ms late, so
     * that what another thread does between the question and the caller's next call shows. */
    long late = setting("STANDIN_LEGACY_ANSWER_MS", 0);
    if (late > 0 && (s == NULL || (uintptr_t)s == 1)) {
        struct timespec pause = {late / 1000, (late % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    return 0;
}
static int m_alloc(devptr *ptr, size_t size, void *p, void *s, const char *call) {
    char b[16], c[16];
    struct capture *cap;
    M_LOCK;
    int r = queue_on(call, s, &cap);
    if (r == 1) {
        r = 900;
        note("!captured %s size=%zu on %s: a buffer's allocation captured", call, size, name(s, b));
    } else if (r == 0 && !(r = unsafe_call(call, name(s, b)))) {
        /* Uncaptured, a stream-ordered allocation is a potentially unsafe call (another
         * thread's global capture refuses it, as the driver does). */
        *ptr = alloc_range(size, p);
        note("%s %#llx size=%zu from %s on %s", call, *ptr, size, name(p, c), name(s, b));
    }
    M_UNLOCK;
    return r;
}
static int m_free(devptr ptr, void *s, const char *call) {
    char b[16];
    struct capture *cap;
    M_LOCK;
    const char *t = tag(s);
    int r = queue_on(call, s, &cap);
    if (r == 1) {
        r = 900;
        note("!captured %s %#llx on %s%s: a free of memory allocated outside the capture", call, ptr, name(s, b), t);
    } else if (r == 0) {
        if (free_range(call, ptr)) r = 1;
        else note("%s %#llx on %s", call, ptr, name(s, b));
    }
    M_UNLOCK;
    return r;
}
/* A fill or copy on `s`: its line, or its refusal. */
static int m_use(const char *line, void *s, int type, devptr dst, devptr src, size_t bytes) {
    char b[16];
    struct capture *cap;
    M_LOCK;
    const char *t = tag(s);
    int r = queue_on(line, s, &cap);
    if (r == 1) {
        add_member(cap->graph, (struct gnode){.type = type, .dst = dst, .src = src, .bytes = bytes});
        r = 0;
    } else if (r == 0) {
        /* (A kernel's access is its launch's caller's to check: the launch is unsafe.) */
        check_use(line, dst, bytes);
        if (type != G_KERNEL) check_access(line, dst, s);
        if (src) {
            check_use(line, src, bytes);
            check_access(line, src, s);
        }
    }
    if (r == 0) note("%s on %s%s", line, name(s, b), t);
    M_UNLOCK;
    return r;
}
static int m_launch_host(void *s, host_fn fn, void *data) {
    char b[16];
    struct capture *cap;
    M_LOCK;
    int r = queue_on("cuLaunchHostFunc", s, &cap);
    if (r == 1) {
        /* As the driver does: a host node of the graph, run on each of its launches. */
        add_member(cap->graph, (struct gnode){.type = G_HOST, .fn = fn, .data = data});
        note("cuLaunchHostFunc on %s%s captured as a host node", name(s, b), tag(s));
        r = 0;
    } else if (r == 0) {
        unsigned long long id = enqueue_work(fn, data, 0, NULL, 0);
        if ((uintptr_t)s > 2) ((struct object *)s)->pending = id;
        note("cuLaunchHostFunc %s -> h%llu", name(s, b), id);
    }
    M_UNLOCK;
    return r;
}
static int m_graph_create(void **graph) {
    char b[16];
    M_LOCK;
    struct object *g = m_make(GRAPH, current);
    note("cuGraphCreate %s", name(g, b));
    M_UNLOCK;
    *graph = g;
    return 0;
}
static int m_graph_destroy(void *graph) {
    char b[16];
    int r = 0;
    M_LOCK;
    if (stale("cuGraphDestroy", graph, GRAPH)) r = 400;
    else {
        note("cuGraphDestroy %s", name(graph, b));
        destroy_graph(graph);
    }
    M_UNLOCK;
    run_dues();
    return r;
}
static int m_add_node(void **node, void *graph, struct gnode n, const char *what) {
    char b[16], c[16];
    M_LOCK;
    if (stale(what, graph, GRAPH)) { M_UNLOCK; return 400; }
    if (n.type == G_FILL || n.type == G_COPY) check_use(what, n.dst, n.bytes);
    if (n.type == G_COPY && n.src) check_use(what, n.src, n.bytes);
    struct object *o = add_member(graph, n);
    note("%s %s -> %s", what, name(graph, b), name(o, c));
    M_UNLOCK;
    *node = o;
    return 0;
}
/* A child graph node: a copy of the child's nodes, added to the graph as its own (what a
 * launch of the graph does with them is what it does with the child's). */
static int m_add_child(void **node, void *graph, void *child) {
    char b[16], c[16], d[16];
    M_LOCK;
    if (stale("cuGraphAddChildGraphNode", graph, GRAPH)
        || stale("cuGraphAddChildGraphNode", child, GRAPH)) { M_UNLOCK; return 400; }
    struct object *from = child;
    for (int i = 0; i < from->member_count; i++) add_member(graph, from->members[i]->g);
    struct object *o = add_member(graph, (struct gnode){.type = G_EMPTY});
    note("cuGraphAddChildGraphNode %s child=%s -> %s", name(graph, b), name(child, c), name(o, d));
    M_UNLOCK;
    *node = o;
    return 0;
}
static int m_destroy_node(void *node) {
    char b[16];
    M_LOCK;
    if (stale("cuGraphDestroyNode", node, NODE)) { M_UNLOCK; return 400; }
    struct object *o = node, *g = o->owner;
    for (int i = 0; i < g->member_count; i++)
        if (g->members[i] == o) { g->members[i] = g->members[--g->member_count]; break; }
    note("cuGraphDestroyNode %s", name(node, b));
    retire(o);
    M_UNLOCK;
    return 0;
}
static int m_graph_nodes(void *graph, void **nodes, size_t *count) {
    M_LOCK;
    if (stale("cuGraphGetNodes", graph, GRAPH)) { M_UNLOCK; return 400; }
    struct object *g = graph;
    if (nodes)
        for (size_t i = 0; i < *count && i < (size_t)g->member_count; i++) nodes[i] = g->members[i];
    *count = (size_t)g->member_count;
    M_UNLOCK;
    return 0;
}
static int m_instantiate(void **exec, void *graph) {
    char b[16], c[16];
    M_LOCK;
    if (stale("cuGraphInstantiateWithFlags", graph, GRAPH)) { M_UNLOCK; return 400; }
    struct object *g = graph, *x = m_make(EXEC, current);
    x->snap = calloc((size_t)g->member_count + 1, sizeof *x->snap);
    for (int i = 0; i < g->member_count; i++) x->snap[i] = g->members[i]->g;
    x->snap_count = g->member_count;
    for (int i = 0; i < g->uobj_count; i++) {
        g->uobjs[i]->refs++;
        hold(x, g->uobjs[i]);
    }
    note("cuGraphInstantiateWithFlags %s -> %s", name(g, b), name(x, c));
    M_UNLOCK;
    *exec = x;
    return 0;
}
static int m_exec_destroy(void *exec) {
    char b[16];
    int r = 0;
    M_LOCK;
    if (stale("cuGraphExecDestroy", exec, EXEC)) r = 400;
    else {
        note("cuGraphExecDestroy %s", name(exec, b));
        release_all(exec);
        retire(exec);
    }
    M_UNLOCK;
    run_dues();
    return r;
}
static int m_graph_launch(void *exec, void *s) {
    char b[16], c[16];
    struct capture *cap;
    M_LOCK;
    if (stale("cuGraphLaunch", exec, EXEC)) { M_UNLOCK; return 400; }
    struct object *x = exec;
    const char *t = tag(s);
    int r = queue_on("cuGraphLaunch", s, &cap);
    if (r == 1) {
        for (int i = 0; i < x->snap_count; i++) add_member(cap->graph, x->snap[i]);
        note("cuGraphLaunch %s on %s%s", name(x, b), name(s, c), t);
        r = 0;
    } else if (r == 0) {
        char off[256];
        note("cuGraphLaunch %s on %s%s", name(x, b), name(s, c), disabled_list(x, off, sizeof off));
        unsigned long long last = 0;
        for (int i = 0; i < x->snap_count; i++) {
            struct gnode *n = &x->snap[i];
            /* A disabled node does nothing (only kernels, copies and fills can be). */
            if (node_disabled_id(x, n->id)) continue;
            if (n->type == G_FILL || n->type == G_COPY || (n->type == G_KERNEL && n->bytes)) {
                /* The node's kind: "fill" and "copy-to" write, "copy-from" reads, "kernel" is
                 * a kernel's first argument. */
                const char *kind = n->type == G_FILL ? "fill" : n->type == G_COPY ? "copy-to" : "kernel";
                check_use("cuGraphLaunch", n->dst, n->bytes);
                if (n->type != G_KERNEL) check_access("cuGraphLaunch", n->dst, s);
                note("graph-use %#llx size=%zu on %s kind=%s", n->dst, n->bytes, name(s, c), kind);
                if (n->type == G_COPY && n->src) {
                    check_use("cuGraphLaunch", n->src, n->bytes);
                    check_access("cuGraphLaunch", n->src, s);
                    note("graph-use %#llx size=%zu on %s kind=copy-from", n->src, n->bytes, name(s, c));
                }
            } else if (n->type == G_HOST) {
                last = enqueue_work(n->fn, n->data, 1, NULL, 0);
                note("graph %s queues host node h%llu on %s", name(x, b), last, name(s, c));
            } else if (n->type == G_RECORD && n->event && n->event->live) {
                n->event->recorded_in = NULL;
                n->event->recorded = 1;
                n->event->pending = last;
            }
        }
        struct uobj **refs = calloc((size_t)x->uobj_count + 1, sizeof *refs);
        for (int i = 0; i < x->uobj_count; i++) {
            refs[i] = x->uobjs[i];
            refs[i]->refs++;
        }
        last = enqueue_work(NULL, NULL, 0, refs, x->uobj_count);
        if ((uintptr_t)s > 2) ((struct object *)s)->pending = last;
    }
    M_UNLOCK;
    return r;
}
static int m_uobj_create(void **object, void *data, host_fn destroy, unsigned refs) {
    M_LOCK;
    struct uobj *u = calloc(1, sizeof *u);
    u->id = next_uobj++;
    u->data = data;
    u->destroy = destroy;
    u->refs = (int)refs;
    uobjs_live++;
    note("cuUserObjectCreate -> u%d", u->id);
    M_UNLOCK;
    *object = u;
    return 0;
}
static int m_uobj_change(void *object, unsigned count, int retain) {
    struct uobj *u = object;
    M_LOCK;
    if (u->refs <= 0) {
        note("!stale %s u%d", retain ? "cuUserObjectRetain" : "cuUserObjectRelease", u->id);
        M_UNLOCK;
        return 400;
    }
    if (retain) u->refs += (int)count;
    else release(u, (int)count);
    M_UNLOCK;
    run_dues();
    return 0;
}
static int m_graph_retain_uobj(void *graph, void *object, unsigned count, unsigned flags) {
    char b[16];
    struct uobj *u = object;
    M_LOCK;
    if (stale("cuGraphRetainUserObject", graph, GRAPH)) { M_UNLOCK; return 400; }
    for (unsigned i = 0; i < count; i++) hold(graph, u);
    if (!(flags & 1)) u->refs += (int)count; /* without CU_GRAPH_USER_OBJECT_MOVE */
    note("cuGraphRetainUserObject %s u%d count=%u", name(graph, b), u->id, count);
    M_UNLOCK;
    return 0;
}
/* The model's side of a host-to-device copy and of a launch. */
static int m_htod(devptr dst, size_t n, void *s) {
    char line[96];
    snprintf(line, sizeof line, "cuMemcpyHtoDAsync %#llx size=%zu", dst, n);
    return m_use(line, s, G_COPY, dst, 0, n);
}
static int m_launch(void *f, void *s, void **params) {
    /* The first argument, where it is a device address, is used (a byte of it). */
    const struct object *k = f;
    devptr arg = 0;
    char line[96], c[16];
    if (k->params > 0 && params && params[0]) memcpy(&arg, params[0], sizeof arg);
    if (arg < 0x10000000 || arg >= 0x100000000000ull) arg = 0;
    snprintf(line, sizeof line, "cuLaunchKernel %s arg0=%#llx", name(f, c), arg);
    return m_use(line, s, G_KERNEL, arg, 0, arg ? 1 : 0);
}
/* Kernel nodes: the first argument, where it is a device address, is used (a byte of it) by
 * each launch of the graph, as a launch uses it. */
static devptr kernel_arg0(void *kernel, const char *params) {
    const struct object *k = kernel;
    void **args;
    devptr arg = 0;
    memcpy(&args, params + 40, sizeof args);
    if (k && k->params > 0 && args && args[0]) memcpy(&arg, args[0], sizeof arg);
    if (arg < 0x10000000 || arg >= 0x100000000000ull) arg = 0;
    return arg;
}
static int m_add_kernel_node(void **node, void *graph, const char *params) {
    void *kernel;
    memcpy(&kernel, params + 56, sizeof kernel);
    devptr arg = kernel_arg0(kernel, params);
    return m_add_node(node, graph, (struct gnode){.type = G_KERNEL, .dst = arg, .bytes = arg ? 1 : 0},
                      "cuGraphAddKernelNode");
}
static int m_exec_kernel_node_set(void *exec, void *node, const char *params) {
    char b[16], c[16];
    void *kernel;
    memcpy(&kernel, params + 56, sizeof kernel);
    devptr arg = kernel_arg0(kernel, params);
    M_LOCK;
    if (stale("cuGraphExecKernelNodeSetParams", exec, EXEC)) { M_UNLOCK; return 400; }
    if (stale("cuGraphExecKernelNodeSetParams", node, NODE)) { M_UNLOCK; return 400; }
    struct object *x = exec, *n = node;
    int found = 0;
    for (int i = 0; i < x->snap_count; i++)
        if (x->snap[i].id == n->id && x->snap[i].type == G_KERNEL) {
            x->snap[i].dst = arg;
            x->snap[i].bytes = arg ? 1 : 0;
            found = 1;
        }
    note("cuGraphExecKernelNodeSetParams %s %s arg0=%#llx%s", name(x, b), name(n, c), arg,
         found ? "" : " (no such kernel node)");
    M_UNLOCK;
    return found ? 0 : 1;
}
#endif /* STANDIN_FULL: the strict model */

/* Host functions (cuLaunchHostFunc, outside the model) wait in a queue until a
 * synchronisation runs them; the bench has no cuLaunchHostFunc, so nothing is ever queued. */
#ifdef STANDIN_FULL
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
#elif defined(STANDIN_BENCH)
static void run_host_functions(void) {}
#endif

/* ---- the driver's functions ---------------------------------------------------------------
 * In four groups: those of every build; the probe's own (and the tests'); the bench's (and the
 * tests'); the tests' only. Tensor maps, at the end, are grouped likewise. */

/* -- every build: the version, initialisation, devices and the current context ---------- */

#ifndef FAKE_NO_VERSION
int cuDriverGetVersion(int *v) { *v = (int)setting("STANDIN_VERSION", FAKE_VERSION); return 0; }
#endif
int cuInit(unsigned flags) {
    (void)flags;
    for (int d = 0; d < MAX_DEVICES; d++) {
        primaries[d] = (struct object){.kind = CONTEXT, .device = d};
        pools[d] = (struct object){.kind = POOL, .device = d};
    }
    return FAKE_INIT_STATUS;
}
/* 101 is CUDA_ERROR_INVALID_DEVICE. */
int cuDeviceGetCount(int *count) { *count = devices(); return 0; }
int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return 101;
    *device = ordinal;
    return 0;
}
/* The current context, or FAKE_CTX_STATUS's error. */
int cuCtxGetCurrent(void **ctx) {
    if (FAKE_CTX_STATUS != 0) return FAKE_CTX_STATUS;
    *ctx = current;
    return 0;
}
/* A stack per thread; a pop answers STANDIN_POP_STATUS (FAKE_POP_STATUS unless set) after
 * popping. fake_pops counts the pops, exported for the probe's tests to read. */
static PER_THREAD struct object *stack[16];
static PER_THREAD int depth;
#ifndef STANDIN_PROBE
static
#endif
int fake_pops;
int cuCtxPushCurrent_v2(void *ctx) {
    char b[16];
#ifdef STANDIN_FULL
    if (ctx_dead("cuCtxPushCurrent", ctx)) return 201;
#endif
    note("cuCtxPushCurrent %s", name(ctx, b));
    if (depth < 16) stack[depth++] = current;
    current = ctx;
    return 0;
}
int cuCtxPopCurrent_v2(void **ctx) {
    note("cuCtxPopCurrent");
    *ctx = current;
    current = depth > 0 ? stack[--depth] : NULL;
    fake_pops++;
    return (int)setting("STANDIN_POP_STATUS", FAKE_POP_STATUS);
}

/* -- the probe and the tests: error names and descriptions; the probe only: cuCtxCreate -- */

#ifndef STANDIN_BENCH
int cuGetErrorName(int error, const char **text) {
    switch (error) {
    case 1: *text = "CUDA_ERROR_INVALID_VALUE"; return 0;
    case 100: *text = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *text = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    case 201: *text = "CUDA_ERROR_INVALID_CONTEXT"; return 0;
    case 400: *text = "CUDA_ERROR_INVALID_HANDLE"; return 0;
    default: *text = NULL; return 1;
    }
}
int cuGetErrorString(int error, const char **text) {
    switch (error) {
    case 100: *text = "no CUDA-capable device is detected (stand-in)"; return 0;
    case 101: *text = "invalid device ordinal (stand-in)"; return 0;
    default: *text = "stand-in error"; return 0;
    }
}
#endif
#ifdef STANDIN_PROBE
/* The 12.9 header's name only: the 13 table's cuCtxCreate (cuCtxCreate_v4) stays empty. The
 * new context is the device's primary one. */
int cuCtxCreate_v2(void **ctx, unsigned flags, int device) {
    (void)flags;
    if (device < 0 || device >= devices()) return 101;
    *ctx = &primaries[device];
    return 0;
}
#endif

/* -- the bench and the tests: what the bench times, and what it needs to get there ------- */

#ifndef STANDIN_PROBE
/* Every device has the name the bench checks for, as identical GPUs have one name. */
int cuDeviceGetName(char *out, int len, int device) {
    (void)device;
    if (len > 0) snprintf(out, (size_t)len, "cuda-core stand-in driver");
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
    case 11: *value = 2147483647; break; /* max pitch */
    case 89: *value = (int)setting("STANDIN_CONCURRENT_MANAGED", 1); break; /* concurrent managed access */
    default: *value = 1; break;
    }
    return 0;
}
/* STANDIN_TOTAL_MEM_FAILS=1: it answers CUDA_ERROR_INVALID_VALUE. */
int cuDeviceTotalMem_v2(size_t *bytes, int device) {
    (void)device;
    if (setting("STANDIN_TOTAL_MEM_FAILS", 0)) return 1;
    *bytes = (size_t)1 << 34;
    return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int device) {
    note("cuDevicePrimaryCtxRetain device=%d", device);
    *ctx = &primaries[device];
    return 0;
}
int cuDevicePrimaryCtxRelease_v2(int device) { note("cuDevicePrimaryCtxRelease device=%d", device); return 0; }
int cuCtxSetCurrent(void *ctx) {
    char b[16];
#ifdef STANDIN_FULL
    if (ctx_dead("cuCtxSetCurrent", ctx)) return 201;
#endif
    note("cuCtxSetCurrent %s", name(ctx, b));
    current = ctx;
    return 0;
}
int cuCtxGetDevice(int *device) {
    /* Logged when it fails: compute-sanitizer reports such a call as the caller's error. */
    if (!current) { note("cuCtxGetDevice -> 201 (no context current)"); return 201; }
    *device = current->device;
    return 0;
}
int cuCtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }
/* Limits of the current context, kept per limit; the stack rounded up to 16 bytes, as a
 * driver may round. */
static size_t limits[16] = {1024, 1 << 20, 8 << 20, 2, 2048, 64, 0};
int cuCtxSetLimit(unsigned limit, size_t value) {
    char b[16];
    if (!current) return 201;
    if (limit >= 16) return 1;
    limits[limit] = limit == 0 ? (value + 15) & ~(size_t)15 : value;
    note("cuCtxSetLimit %u %zu in %s", limit, value, name(current, b));
    return 0;
}
int cuCtxGetLimit(size_t *value, unsigned limit) {
    if (!current) return 201;
    if (limit >= 16) return 1;
    *value = limits[limit];
    return 0;
}
int cuStreamCreate(void **s, unsigned flags) {
    MODEL_ANSWERS(m_stream_create(s, flags));
    if (!current) return 201;
    struct object *o = make(STREAM, current);
    char b[16], c[16];
    note("cuStreamCreate %s in %s flags=%u", name(o, b), name(current, c), flags);
    *s = o;
    return 0;
}
int cuStreamCreateWithPriority(void **s, unsigned flags, int priority) { (void)priority; return cuStreamCreate(s, flags); }
int cuStreamDestroy_v2(void *s) {
    char b[16];
    MODEL_ANSWERS(m_stream_destroy(s));
    note("cuStreamDestroy %s", name(s, b));
    return 0;
}
/* What cuStreamSynchronize answers from now on (0 by default): standin_set_sync_status(CODE),
 * called by a test once what it sets up is made, stands for work that failed on the device. */
static int sync_status;
/* What a query answers: STANDIN_QUERY_STATUS where set (600: not ready); otherwise the work
 * is done, as a real driver says only once it has run, host functions included, and with the
 * failure a wait would report (standin_set_sync_status). */
static int query_answer(void) {
    int status = (int)setting("STANDIN_QUERY_STATUS", 0);
    if (status) return status;
    if (sync_status) return sync_status;
    run_host_functions();
    return 0;
}
int cuStreamSynchronize(void *s) {
    evict();
    MODEL_ANSWERS(m_stream_sync(s, 0));
    char b[16];
    note("cuStreamSynchronize %s", name(s, b));
    if (sync_status >= 900 && sync_status <= 906 && capture_mode == 2 &&
        setting("STANDIN_RELAXED_SYNCS", 0))
        return 0;
    if (sync_status) return sync_status;
    run_host_functions();
    return 0;
}
int cuEventCreate(void **e, unsigned flags) {
    evict();
    MODEL_ANSWERS(m_event_create(e, flags));
    if (!current) return 201;
    struct object *o = make(EVENT, current);
    char b[16];
    note("cuEventCreate %s flags=%u", name(o, b), flags);
    *e = o;
    return 0;
}
int cuEventDestroy_v2(void *e) {
    char b[16];
    evict();
    MODEL_ANSWERS(m_event_destroy(e));
    note("cuEventDestroy %s", name(e, b));
    return 0;
}
int cuEventRecord(void *e, void *s) {
    evict();
    MODEL_ANSWERS(m_event_record(e, s));
    char b[16], c[16];
    note("cuEventRecord %s on %s", name(e, b), name(s, c));
    return 0;
}
int cuEventQuery(void *e) {
    evict();
    MODEL_ANSWERS(m_event_sync(e, 1));
    char b[16];
    note("cuEventQuery %s", name(e, b));
    return query_answer();
}
int cuEventSynchronize(void *e) {
    char b[16];
    evict();
    MODEL_ANSWERS(m_event_sync(e, 0));
    note("cuEventSynchronize %s", name(e, b));
    run_host_functions();
    return 0;
}
int cuEventElapsedTime_v2(float *ms, void *start, void *end) {
    (void)start; (void)end;
    evict();
    const char *v = setting_text("STANDIN_ELAPSED");
    if (!v) *ms = 1.0f;
    else if (strcmp(v, "nan") == 0) *ms = NAN;
    else if (strcmp(v, "inf") == 0) *ms = INFINITY;
    else *ms = (float)atof(v);
    return 0;
}
#ifdef STANDIN_BENCH
/* The 12 header's name, the bench's only. */
int cuEventElapsedTime(float *ms, void *a, void *b) { return cuEventElapsedTime_v2(ms, a, b); }
#endif
int cuDeviceGetDefaultMemPool(void **p, int device) { *p = &pools[device]; return 0; }
int cuMemAllocFromPoolAsync(devptr *ptr, size_t size, void *p, void *s) {
    evict();
    MODEL_ANSWERS(m_alloc(ptr, size, p, s, "cuMemAllocFromPoolAsync"));
    char b[16], c[16];
    *ptr = fresh_address(size);
    note("cuMemAllocFromPoolAsync %#llx size=%zu from %s on %s", *ptr, size, name(p, c), name(s, b));
    return 0;
}
int cuMemFreeAsync(devptr ptr, void *s) {
    char b[16];
    evict();
    MODEL_ANSWERS(m_free(ptr, s, "cuMemFreeAsync"));
    note("cuMemFreeAsync %#llx on %s", ptr, name(s, b));
    return 0;
}
int cuMemcpyHtoDAsync_v2(devptr dst, const void *src, size_t n, void *s) {
    evict();
    MODEL_ANSWERS(m_htod(dst, n, s));
    char b[16];
    (void)src;
    note("cuMemcpyHtoDAsync %#llx size=%zu on %s", dst, n, name(s, b));
    return 0;
}
/* Logs how many JIT options a load takes and their codes; writes a line to the info log
   buffer (CU_JIT_INFO_LOG_BUFFER 3, of CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES 4) where given, and
   with STANDIN_JIT_FAIL=1, a line to the error log buffer (5, of size 6) and fails as the JIT
   does on bad PTX (CUDA_ERROR_INVALID_PTX 218); with STANDIN_JIT_FAIL=2 it writes the line
   and succeeds, as the 580 driver does, its library broken (no kernel listed, each asked for
   refused with 218) until unloaded. */
static int broken_library;
int cuLibraryLoadData(void **lib, const void *code, int *options, void **values, unsigned n1,
                      void *o3, void *o4, unsigned n2) {
    (void)code; (void)o3; (void)o4; (void)n2;
    char codes[128] = "";
    char *info = NULL, *error = NULL;
    size_t info_size = 0, error_size = 0;
    for (unsigned i = 0; i < n1 && i < 16; i++) {
        size_t at = strlen(codes);
        snprintf(codes + at, sizeof codes - at, "%s%d", i ? "," : "", options[i]);
        if (options[i] == 3) info = values[i];
        if (options[i] == 4) info_size = (size_t)values[i];
        if (options[i] == 5) error = values[i];
        if (options[i] == 6) error_size = (size_t)values[i];
    }
    note("cuLibraryLoadData jit_options=%u codes=%s", n1, codes);
    if (info && info_size) snprintf(info, info_size, "stand-in JIT: %u options", n1);
    if (setting("STANDIN_JIT_FAIL", 0)) {
        if (error && error_size) snprintf(error, error_size, "stand-in JIT: ptxas fatal error");
        if (setting("STANDIN_JIT_FAIL", 0) == 1) return 218;
        broken_library = 1;
    }
    *lib = &library;
    return 0;
}
int cuLibraryUnload(void *lib) { (void)lib; broken_library = 0; note("cuLibraryUnload"); return 0; }
int cuLibraryGetKernel(void **kernel, void *lib, const char *kernel_name) {
    (void)lib;
    note("cuLibraryGetKernel %s", kernel_name);
    if (broken_library) return 218;
    for (int i = 0; i < KERNELS; i++)
        if (strcmp(kernel_name, kernels[i].label) == 0) { *kernel = &kernels[i]; return 0; }
    return 500; /* CUDA_ERROR_NOT_FOUND */
}
/* Every library holds every kernel of the table. */
int cuLibraryGetKernelCount(unsigned *count, void *lib) {
    (void)lib;
    note("cuLibraryGetKernelCount");
    *count = broken_library ? 0 : KERNELS;
    return 0;
}
int cuLibraryEnumerateKernels(void **out, unsigned count, void *lib) {
    (void)lib;
    note("cuLibraryEnumerateKernels %u", count);
    if (count > KERNELS) return 1; /* CUDA_ERROR_INVALID_VALUE */
    for (unsigned i = 0; i < count; i++) out[i] = &kernels[i];
    return 0;
}
/* Kernels allow 1024 threads per block and 48 KiB of dynamic shared memory. */
int cuKernelGetAttribute(int *value, int attribute, void *kernel, int device) {
    char b[16];
    note("cuKernelGetAttribute %s attribute=%d device=%d", name(kernel, b), attribute, device);
    int threads = device == 1 ? (int)setting("STANDIN_DEVICE1_THREADS", 1024) : 1024;
    *value = attribute == 0 ? threads : attribute == 8 ? 48 * 1024 : 0;
    return 0;
}
/* Every parameter but the trailing ints is STANDIN_PARAM_SIZE bytes (8 unless set). */
int cuKernelGetParamInfo(void *kernel, size_t index, size_t *offset, size_t *size) {
    const struct object *k = kernel;
    char b[16];
    size_t each = (size_t)setting("STANDIN_PARAM_SIZE", 8), wide = (size_t)(k->params - k->ints);
    note("cuKernelGetParamInfo %s index=%zu", name(kernel, b), index);
    if (index >= (size_t)k->params) return 1; /* CUDA_ERROR_INVALID_VALUE: past the last */
    *offset = index < wide ? index * each : wide * each + (index - wide) * 4;
    *size = index < wide ? each : 4;
    return 0;
}
/* STANDIN_LOG_ARGS=1: a launch logs "cuLaunchKernel-args KERNEL args=A,B,..." first, each
 * parameter but the trailing ints read as 8 bytes (the default STANDIN_PARAM_SIZE). */
static void note_args(void *f, void **params) {
    const struct object *k = f;
    char c[16], args[256] = "";
    for (int i = 0; params && i < k->params - k->ints && strlen(args) < 200; i++) {
        unsigned long long value = 0;
        char one[24];
        if (params[i]) memcpy(&value, params[i], sizeof value);
        snprintf(one, sizeof one, "%s%#llx", i ? "," : "", value);
        strcat(args, one);
    }
    note("cuLaunchKernel-args %s args=%s", name(f, c), args);
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *s, void **params, void **extra) {
    char b[16], c[16];
    (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)params; (void)extra;
    evict();
    if (setting("STANDIN_LOG_ARGS", 0)) note_args(f, params);
    MODEL_ANSWERS(m_launch(f, s, params));
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
    evict();
    for (unsigned i = 0; LOGGING && i < config->count && strlen(attrs) < 200; i++) {
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
/* Graphs of kernel nodes (the bench's replay row, and the tests'). */
/* Whether a kernel node's argument pointers may be read: not for a CUkernel of no parameters,
 * whose node's pointer the driver never reads (cuda-core passes a dangling one then). */
static int reads_args(const void *kernel) {
    const struct object *k = kernel;
    return !k || k->params > 0;
}
int cuGraphCreate(void **graph, unsigned flags) {
    MODEL_ANSWERS(m_graph_create(graph));
    char b[16];
    struct object *g = make(GRAPH, current);
    *graph = g;
    note("cuGraphCreate %s flags=%u", name(g, b), flags);
    return 0;
}
#ifdef STANDIN_FULL
static void note_node(void *graph, void *node, void **deps, size_t count);
#endif
int cuGraphAddKernelNode_v2(void **node, void *graph, void **deps, size_t count, const char *params) {
    MODEL_ANSWERS(m_add_kernel_node(node, graph, params));
    char b[16], c[16];
    void *kernel, **args;
    unsigned long long first = 0;
    (void)deps;
    memcpy(&args, params + 40, sizeof args);
    memcpy(&kernel, params + 56, sizeof kernel);
    if (args && reads_args(kernel) && args[0]) memcpy(&first, args[0], sizeof first);
    *node = make(NODE, NULL);
#ifdef STANDIN_FULL
    note_node(graph, *node, deps, count);
#endif
    note("cuGraphAddKernelNode %s deps=%zu %s arg0=%llu", name(graph, b), count, name(kernel, c), first);
    return 0;
}
int cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long flags) {
    MODEL_ANSWERS(m_instantiate(exec, graph));
    char b[16], c[16];
    struct object *e = make(EXEC, current);
    *exec = e;
    note("cuGraphInstantiateWithFlags %s flags=%llu -> %s", name(graph, b), flags, name(e, c));
    return 0;
}
int cuGraphLaunch(void *exec, void *s) {
    char b[16], c[16];
    evict();
    MODEL_ANSWERS(m_graph_launch(exec, s));
#ifdef STANDIN_FULL
    char off[256];
    note("cuGraphLaunch %s on %s%s", name(exec, b), name(s, c), disabled_list(exec, off, sizeof off));
#else
    note("cuGraphLaunch %s on %s", name(exec, b), name(s, c));
#endif
    return 0;
}
/* A kernel node of an executable graph given new arguments: the exec, the node, the first
 * argument's first 8 bytes. */
/* standin_fail_node_sets(N): the next N of these calls fail (CUDA_ERROR_INVALID_VALUE), as
 * the driver's may for a change it cannot make in place. */
static int node_set_fails;
int cuGraphExecKernelNodeSetParams_v2(void *exec, void *node, const char *params) {
    evict();
    if (node_set_fails > 0) {
        node_set_fails--;
        note("cuGraphExecKernelNodeSetParams -> 1 (failed as asked)");
#ifdef STANDIN_FULL
        driver_log("cuGraphExecKernelNodeSetParams", 1, "CUDA_ERROR_INVALID_VALUE",
                   "the node's new parameters failed as asked (standin_fail_node_sets)");
#endif
        return 1;
    }
    MODEL_ANSWERS(m_exec_kernel_node_set(exec, node, params));
    char b[16], c[16], d[16];
    void *kernel, **args;
    unsigned long long first = 0;
    memcpy(&args, params + 40, sizeof args);
    memcpy(&kernel, params + 56, sizeof kernel);
    if (args && reads_args(kernel) && args[0]) memcpy(&first, args[0], sizeof first);
    note("cuGraphExecKernelNodeSetParams %s %s %s arg0=%llu", name(exec, b), name(node, c),
         name(kernel, d), first);
    return 0;
}
/* User objects (graphs keep what they use through them): kept and counted in the model only
 * (elsewhere, and in the bench, their destructors never run). */
static char user_object_token;
int cuUserObjectCreate(void **object, void *data, host_fn destroy, unsigned refs, unsigned flags) {
    (void)data, (void)destroy, (void)refs, (void)flags;
    MODEL_ANSWERS(m_uobj_create(object, data, destroy, refs));
    *object = &user_object_token;
    return 0;
}
int cuUserObjectRetain(void *object, unsigned count) {
    (void)object, (void)count;
    MODEL_ANSWERS(m_uobj_change(object, count, 1));
    return 0;
}
int cuUserObjectRelease(void *object, unsigned count) {
    (void)object, (void)count;
    MODEL_ANSWERS(m_uobj_change(object, count, 0));
    return 0;
}
int cuGraphRetainUserObject(void *graph, void *object, unsigned count, unsigned flags) {
    (void)graph, (void)object, (void)count, (void)flags;
    MODEL_ANSWERS(m_graph_retain_uobj(graph, object, count, flags));
    return 0;
}
#endif /* the bench and the tests */

/* -- the tests only: the rest ---------------------------------------------------------- */

#ifdef STANDIN_FULL
int cuCtxSynchronize(void) {
    MODEL_ANSWERS(m_ctx_sync());
    note("cuCtxSynchronize");
    return 0;
}
void standin_set_sync_status(int code) { sync_status = code; }
void standin_fail_node_sets(int n) { node_set_fails = n; }
/* With STANDIN_RELAXED_SYNCS=1, a capture refusal set above (900 to 906) does not apply to a
 * thread whose mode is relaxed (2; `capture_mode`, cuThreadExchangeStreamCaptureMode's), as
 * the driver lets such a thread make unsafe calls. */
int cuThreadExchangeStreamCaptureMode(int *mode) {
    note("cuThreadExchangeStreamCaptureMode %d (was %d)", *mode, capture_mode);
    int previous = capture_mode;
    capture_mode = *mode;
    *mode = previous;
    return 0;
}
int cuStreamQuery(void *s) {
    MODEL_ANSWERS(m_stream_sync(s, 1));
    char b[16];
    note("cuStreamQuery %s", name(s, b));
    return query_answer();
}
int cuStreamWaitEvent(void *s, void *e, unsigned flags) {
    MODEL_ANSWERS(m_stream_wait(s, e));
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
    MODEL_ANSWERS(m_begin_capture(s, mode));
    char b[16];
    note("cuStreamBeginCapture %s mode=%d", name(s, b), mode);
    capturing = s;
    return 0;
}
int cuStreamEndCapture(void *s, void **graph) {
    MODEL_ANSWERS(m_end_capture(s, graph));
    char b[16];
    note("cuStreamEndCapture %s", name(s, b));
    if (capturing != s) { *graph = NULL; return 903; } /* CUDA_ERROR_STREAM_CAPTURE_UNMATCHED */
    capturing = NULL;
    *graph = &graph_token;
    return 0;
}
int cuStreamIsCapturing(void *s, int *status) {
    MODEL_ANSWERS(m_capture_info(s, status, NULL, NULL));
    *status = capturing == s ? 1 : 0;
    return 0;
}
/* The 12 header's cuStreamGetCaptureInfo (status, id, graph, dependencies, their count) and
 * the 13 header's (with edge data too): the status, the id and the graph are answered. */
static int capture_info(void *s, int *status, unsigned long long *id, void **graph) {
    MODEL_ANSWERS(m_capture_info(s, status, id, graph));
    if (status) *status = capturing == s ? 1 : 0;
    if (id) *id = capturing == s ? 1 : 0;
    if (graph) *graph = capturing == s ? (void *)&graph_token : NULL;
    return 0;
}
int cuStreamGetCaptureInfo_v2(void *s, int *status, unsigned long long *id, void **graph,
                              const void **deps, size_t *count) {
    if (deps) *deps = NULL;
    if (count) *count = 0;
    return capture_info(s, status, id, graph);
}
int cuStreamGetCaptureInfo_v3(void *s, int *status, unsigned long long *id, void **graph,
                              const void **deps, const void **edges, size_t *count) {
    if (edges) *edges = NULL;
    return cuStreamGetCaptureInfo_v2(s, status, id, graph, deps, count);
}
int cuGraphDestroy(void *graph) {
    MODEL_ANSWERS(m_graph_destroy(graph));
    char b[16];
    note("cuGraphDestroy %s", graph == &graph_token ? "g" : name(graph, b));
    if (graph != &graph_token) reuse_later(graph);
    return 0;
}
int cuStreamGetPriority(void *s, int *priority) { (void)s; *priority = 0; return 0; }
int cuStreamGetFlags(void *s, unsigned *flags) { (void)s; *flags = 1; return 0; }
int cuLaunchHostFunc(void *s, host_fn fn, void *data) {
    MODEL_ANSWERS(m_launch_host(s, fn, data));
    char b[16];
    note("cuLaunchHostFunc %s", name(s, b));
    pthread_mutex_lock(&lock);
    int full = queued_count == 64;
    if (!full) { queued[queued_count].fn = fn; queued[queued_count].data = data; queued_count++; }
    pthread_mutex_unlock(&lock);
    return full ? 1 : 0;
}
/* The pool attributes of drivers 13.2 and newer (9 to 13: allocation type, export handle
 * types, location id and type, maximum size) answer what the pool was made with (a device's
 * default pool: pinned, no handles, the device, no limit), where STANDIN_POOL_PROPS is set;
 * without it, as a 13.0 driver, they are CUDA_ERROR_INVALID_VALUE. Others read 0. */
int cuMemPoolGetAttribute(void *p, int attribute, void *value) {
    const struct object *o = p;
    unsigned long long v = 0;
    if (attribute >= 9 && attribute <= 13) {
        if (!setting("STANDIN_POOL_PROPS", 0)) return 1;
        int is_default = o >= pools && o < pools + MAX_DEVICES;
        int props[4] = {1, 0, 1, o->device};
        if (!is_default) memcpy(props, o->pool_props, sizeof props);
        switch (attribute) {
        case 9: v = (unsigned)props[0]; break;
        case 10: v = (unsigned)props[1]; break;
        case 11: v = (unsigned)props[3]; break;
        case 12: v = (unsigned)props[2]; break;
        default: v = is_default ? 0 : o->pool_max; break;
        }
        if (attribute == 13) *(unsigned long long *)value = v;
        else *(int *)value = (int)v;
        return 0;
    }
    *(unsigned long long *)value = v;
    return 0;
}
int cuMemAlloc_v2(devptr *ptr, size_t size) {
    if (modeled()) {
        M_LOCK;
        int r = unsafe_call("cuMemAlloc", "");
        M_UNLOCK;
        if (r) return r;
    }
    return cuMemAllocFromPoolAsync(ptr, size, &pools[0], NULL);
}
/* cuMemAllocAsync (a captured one is a graph allocation: an address of graph memory). */
static devptr next_graph_address = 0x500000000000ull;
int cuMemAllocAsync(devptr *ptr, size_t size, void *s) {
    char b[16];
    if (modeled() && capture_of(s)) {
        M_LOCK;
        struct capture *cap;
        const char *t = tag(s);
        int r = queue_on("cuMemAllocAsync", s, &cap);
        if (r == 1) {
            *ptr = next_graph_address;
            next_graph_address += (size + 0xfff) & ~(size_t)0xfff;
            add_member(cap->graph, (struct gnode){.type = G_EMPTY});
            note("cuMemAllocAsync %#llx size=%zu on %s%s", *ptr, size, name(s, b), t);
            r = 0;
        }
        M_UNLOCK;
        return r;
    }
    return cuMemAllocFromPoolAsync(ptr, size, &pools[0], s);
}
int cuMemFree_v2(devptr ptr) {
    if (modeled()) {
        M_LOCK;
        int r = unsafe_call("cuMemFree", "");
        if (!r && free_range("cuMemFree", ptr)) r = 1;
        if (!r) note("cuMemFree %#llx", ptr);
        M_UNLOCK;
        return r;
    }
    note("cuMemFree %#llx", ptr);
    return 0;
}
int cuMemcpyAsync(devptr dst, devptr src, size_t n, void *s) {
    if (modeled()) {
        char line[96];
        snprintf(line, sizeof line, "cuMemcpyAsync %#llx <- %#llx size=%zu", dst, src, n);
        return m_use(line, s, G_COPY, dst, src, n);
    }
    char b[16];
    note("cuMemcpyAsync %#llx <- %#llx size=%zu on %s", dst, src, n, name(s, b));
    return 0;
}
int cuMemcpyDtoHAsync_v2(void *dst, devptr src, size_t n, void *s) {
    if (modeled()) {
        char line[96];
        memset(dst, 0, n);
        snprintf(line, sizeof line, "cuMemcpyDtoHAsync %#llx size=%zu", src, n);
        return m_use(line, s, G_COPY, src, 0, n);
    }
    char b[16];
    memset(dst, 0, n);
    note("cuMemcpyDtoHAsync %#llx size=%zu on %s", src, n, name(s, b));
    return 0;
}
int cuMemsetD8Async(devptr dst, unsigned char v, size_t n, void *s) {
    if (modeled()) {
        char line[96];
        snprintf(line, sizeof line, "cuMemsetD8Async %#llx value=%u count=%zu", dst, (unsigned)v, n);
        return m_use(line, s, G_FILL, dst, 0, n * 1);
    }
    char b[16];
    note("cuMemsetD8Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}
int cuMemsetD16Async(devptr dst, unsigned short v, size_t n, void *s) {
    if (modeled()) {
        char line[96];
        snprintf(line, sizeof line, "cuMemsetD16Async %#llx value=%u count=%zu", dst, (unsigned)v, n);
        return m_use(line, s, G_FILL, dst, 0, n * 2);
    }
    char b[16];
    note("cuMemsetD16Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}
int cuMemsetD32Async(devptr dst, unsigned v, size_t n, void *s) {
    if (modeled()) {
        char line[96];
        snprintf(line, sizeof line, "cuMemsetD32Async %#llx value=%u count=%zu", dst, (unsigned)v, n);
        return m_use(line, s, G_FILL, dst, 0, n * 4);
    }
    char b[16];
    note("cuMemsetD32Async %#llx value=%u count=%zu on %s", dst, v, n, name(s, b));
    return 0;
}
/* Every name is one 16-byte variable, at a fixed address. */
static unsigned char standin_global[16];
int cuLibraryGetGlobal(devptr *ptr, size_t *bytes, void *lib, const char *n) {
    (void)lib;
    note("cuLibraryGetGlobal %s", n);
    *ptr = (devptr)(uintptr_t)standin_global;
    *bytes = sizeof standin_global;
    return 0;
}
int cuKernelGetName(const char **out, void *kernel) {
    for (int i = 0; i < KERNELS; i++) if (kernel == &kernels[i]) { *out = kernels[i].label; return 0; }
    return 400;
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

/* ---- graphs built node by node: graphs, empty and kernel nodes, conditional nodes --------- */

int cuGraphAddEmptyNode(void **node, void *graph, void **deps, size_t count) {
    MODEL_ANSWERS(m_add_node(node, graph, (struct gnode){.type = G_EMPTY}, "cuGraphAddEmptyNode"));
    char b[16], c[16];
    struct object *n = make(NODE, NULL);
    *node = n;
    note_node(graph, n, deps, count);
    note("cuGraphAddEmptyNode %s deps=%zu -> %s", name(graph, b), count, name(n, c));
    return 0;
}
int cuGraphAddChildGraphNode(void **node, void *graph, void **deps, size_t count, void *child) {
    MODEL_ANSWERS(m_add_child(node, graph, child));
    char b[16], c[16], d[16];
    struct object *n = make(NODE, NULL);
    *node = n;
    note_node(graph, n, deps, count);
    note("cuGraphAddChildGraphNode %s deps=%zu child=%s -> %s", name(graph, b), count,
         name(child, c), name(n, d));
    return 0;
}
/* CUDA_KERNEL_NODE_PARAMS_v2's layout: the kernel at 56, its parameters' pointers at 40. */
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
int cuGraphExecDestroy(void *exec) {
    MODEL_ANSWERS(m_exec_destroy(exec));
    char b[16];
    note("cuGraphExecDestroy %s", name(exec, b));
    return 0;
}
static void forget_node(void *node);
int cuGraphDestroyNode(void *node) {
    MODEL_ANSWERS(m_destroy_node(node));
    char b[16];
    forget_node(node);
    note("cuGraphDestroyNode %s", name(node, b));
    reuse_later(node);
    return 0;
}
/* CUDA_MEMSET_NODE_PARAMS' and CUDA_HOST_NODE_PARAMS' layouts. */
struct memset_params { devptr dst; size_t pitch; unsigned value, element; size_t width, height; };
struct host_params { host_fn fn; void *data; };
int cuGraphAddMemsetNode(void **node, void *graph, void **deps, size_t count,
                         const struct memset_params *p, void *ctx) {
    char b[16], c[16];
    (void)deps; (void)ctx;
    size_t bytes = (size_t)p->element * p->width * (p->height ? p->height : 1);
    if (modeled()) {
        char what[96];
        snprintf(what, sizeof what, "cuGraphAddMemsetNode %#llx size=%zu", p->dst, bytes);
        return m_add_node(node, graph, (struct gnode){.type = G_FILL, .dst = p->dst, .bytes = bytes}, what);
    }
    *node = make(NODE, NULL);
    note_node(graph, *node, deps, count);
    note("cuGraphAddMemsetNode %s deps=%zu %#llx size=%zu -> %s", name(graph, b), count, p->dst,
         bytes, name(*node, c));
    return 0;
}
int cuGraphAddHostNode(void **node, void *graph, void **deps, size_t count, const struct host_params *p) {
    char b[16], c[16];
    (void)deps;
    if (modeled())
        return m_add_node(node, graph, (struct gnode){.type = G_HOST, .fn = p->fn, .data = p->data}, "cuGraphAddHostNode");
    *node = make(NODE, NULL);
    note_node(graph, *node, deps, count);
    note("cuGraphAddHostNode %s deps=%zu -> %s", name(graph, b), count, name(*node, c));
    return 0;
}
/* The nodes and edges of graphs built node by node, outside the model: each node that a
 * cuGraphAdd*Node call makes is noted with its graph and its dependencies, so that the edge
 * calls (cuGraphGetEdges, cuGraphAddDependencies, cuGraphRemoveDependencies, in their 12 and
 * 13 forms), node removal and clones (cuGraphClone, cuGraphNodeFindInClone) answer as the
 * driver does: removing an edge that is not there is refused (1), as is finding a node in a
 * graph that is not its clone. */
struct snode { void *graph, *node, *origin; int live; };
struct sedge { void *graph, *from, *to; int live; };
static struct snode *snodes;
static int snode_count, snode_cap;
static struct sedge *sedges;
static int sedge_count, sedge_cap;
static pthread_mutex_t graph_lock = PTHREAD_MUTEX_INITIALIZER;
static void add_edge_locked(void *graph, void *from, void *to) {
    GROW(sedges, sedge_count, sedge_cap);
    sedges[sedge_count++] = (struct sedge){graph, from, to, 1};
}
static void note_node_from(void *graph, void *node, void *origin) {
    GROW(snodes, snode_count, snode_cap);
    snodes[snode_count++] = (struct snode){graph, node, origin, 1};
}
static void note_node(void *graph, void *node, void **deps, size_t count) {
    pthread_mutex_lock(&graph_lock);
    note_node_from(graph, node, NULL);
    for (size_t i = 0; i < count; i++) add_edge_locked(graph, deps[i], node);
    pthread_mutex_unlock(&graph_lock);
}
static void forget_node(void *node) {
    pthread_mutex_lock(&graph_lock);
    for (int i = 0; i < snode_count; i++)
        if (snodes[i].node == node) snodes[i].live = 0;
    for (int i = 0; i < sedge_count; i++)
        if (sedges[i].from == node || sedges[i].to == node) sedges[i].live = 0;
    pthread_mutex_unlock(&graph_lock);
}
static int graph_edges(void *graph, void **from, void **to, size_t *count) {
    size_t n = 0;
    pthread_mutex_lock(&graph_lock);
    for (int i = 0; i < sedge_count; i++) {
        if (!sedges[i].live || sedges[i].graph != graph) continue;
        if (from && n < *count) { from[n] = sedges[i].from; to[n] = sedges[i].to; }
        n++;
    }
    pthread_mutex_unlock(&graph_lock);
    *count = n;
    note("cuGraphGetEdges -> %zu", n);
    return 0;
}
int cuGraphGetEdges(void *graph, void **from, void **to, size_t *count) {
    return graph_edges(graph, from, to, count);
}
int cuGraphGetEdges_v2(void *graph, void **from, void **to, void *data, size_t *count) {
    if (data && from) memset(data, 0, 8 * *count);
    return graph_edges(graph, from, to, count);
}
static int change_edges(const char *call, void *graph, void **from, void **to, size_t n, int add) {
    int r = 0;
    pthread_mutex_lock(&graph_lock);
    for (size_t k = 0; k < n; k++) {
        if (add) { add_edge_locked(graph, from[k], to[k]); continue; }
        int found = 0;
        for (int i = 0; i < sedge_count && !found; i++)
            if (sedges[i].live && sedges[i].graph == graph && sedges[i].from == from[k] && sedges[i].to == to[k])
                sedges[i].live = 0, found = 1;
        if (!found) r = 1;
    }
    pthread_mutex_unlock(&graph_lock);
    note("%s %zu -> %d", call, n, r);
    return r;
}
int cuGraphAddDependencies(void *graph, void **from, void **to, size_t n) {
    return change_edges("cuGraphAddDependencies", graph, from, to, n, 1);
}
int cuGraphAddDependencies_v2(void *graph, void **from, void **to, const void *data, size_t n) {
    (void)data;
    return change_edges("cuGraphAddDependencies", graph, from, to, n, 1);
}
int cuGraphRemoveDependencies(void *graph, void **from, void **to, size_t n) {
    return change_edges("cuGraphRemoveDependencies", graph, from, to, n, 0);
}
int cuGraphRemoveDependencies_v2(void *graph, void **from, void **to, const void *data, size_t n) {
    (void)data;
    return change_edges("cuGraphRemoveDependencies", graph, from, to, n, 0);
}
int cuGraphClone(void **clone, void *graph) {
    char b[16], c[16];
    struct object *g = make(GRAPH, current);
    pthread_mutex_lock(&graph_lock);
    int nodes = snode_count, edges = sedge_count;
    for (int i = 0; i < nodes; i++)
        if (snodes[i].live && snodes[i].graph == graph) note_node_from(g, make(NODE, NULL), snodes[i].node);
    for (int i = 0; i < edges; i++) {
        if (!sedges[i].live || sedges[i].graph != graph) continue;
        void *from = NULL, *to = NULL;
        for (int k = nodes; k < snode_count; k++) {
            if (snodes[k].graph != g) continue;
            if (snodes[k].origin == sedges[i].from) from = snodes[k].node;
            if (snodes[k].origin == sedges[i].to) to = snodes[k].node;
        }
        if (from && to) add_edge_locked(g, from, to);
    }
    pthread_mutex_unlock(&graph_lock);
    *clone = g;
    note("cuGraphClone %s -> %s", name(graph, b), name(g, c));
    return 0;
}
int cuGraphNodeFindInClone(void **node, void *original, void *clone) {
    int r = 1;
    pthread_mutex_lock(&graph_lock);
    for (int i = 0; i < snode_count; i++)
        if (snodes[i].live && snodes[i].graph == clone && snodes[i].origin == original) {
            *node = snodes[i].node;
            r = 0;
        }
    pthread_mutex_unlock(&graph_lock);
    return r;
}
/* CUDA_MEM_ALLOC_NODE_PARAMS: bytesize at 104, dptr (set) at 112, in both headers. The
 * allocation's address is graph memory, as a captured allocation's. */
int cuGraphAddMemAllocNode(void **node, void *graph, void **deps, size_t count, char *params) {
    char b[16], c[16];
    size_t bytes;
    memcpy(&bytes, params + 104, sizeof bytes);
    pthread_mutex_lock(&lock);
    devptr p = next_graph_address;
    next_graph_address += (bytes + 0xfff) & ~(size_t)0xfff;
    pthread_mutex_unlock(&lock);
    memcpy(params + 112, &p, sizeof p);
    *node = make(NODE, NULL);
    note_node(graph, *node, deps, count);
    note("cuGraphAddMemAllocNode %s deps=%zu size=%zu -> %s %#llx", name(graph, b), count, bytes,
         name(*node, c), p);
    return 0;
}
int cuGraphAddMemFreeNode(void **node, void *graph, void **deps, size_t count, devptr p) {
    char b[16], c[16];
    *node = make(NODE, NULL);
    note_node(graph, *node, deps, count);
    note("cuGraphAddMemFreeNode %s deps=%zu %#llx -> %s", name(graph, b), count, p, name(*node, c));
    return 0;
}
/* CUDA_MEMCPY3D: srcHost at 40, srcDevice at 48, dstDevice at 136, WidthInBytes at 176; a
 * source of host memory (srcMemoryType 1, at 32) is logged as "host". */
int cuGraphAddMemcpyNode(void **node, void *graph, void **deps, size_t count, const char *copy, void *ctx) {
    char b[16], c[16];
    unsigned src_type;
    devptr src, dst;
    size_t width;
    (void)ctx;
    memcpy(&src_type, copy + 32, sizeof src_type);
    memcpy(&src, copy + 48, sizeof src);
    memcpy(&dst, copy + 136, sizeof dst);
    memcpy(&width, copy + 176, sizeof width);
#ifdef STANDIN_FULL
    if (modeled()) {
        /* A copy node of the model (from host memory: only its destination is device memory
         * the model knows). */
        char what[96];
        devptr from = src_type == 1 ? 0 : src;
        snprintf(what, sizeof what, "cuGraphAddMemcpyNode %#llx <- %#llx size=%zu", dst, from, width);
        return m_add_node(node, graph, (struct gnode){.type = G_COPY, .dst = dst, .src = from, .bytes = width}, what);
    }
#endif
    *node = make(NODE, NULL);
    note_node(graph, *node, deps, count);
    if (src_type == 1)
        note("cuGraphAddMemcpyNode %s deps=%zu %#llx <- host size=%zu -> %s", name(graph, b), count, dst,
             width, name(*node, c));
    else
        note("cuGraphAddMemcpyNode %s deps=%zu %#llx <- %#llx size=%zu -> %s", name(graph, b), count, dst,
             src, width, name(*node, c));
    return 0;
}
int cuGraphGetNodes(void *graph, void **nodes, size_t *count) {
    MODEL_ANSWERS(m_graph_nodes(graph, nodes, count));
    (void)graph; (void)nodes;
    *count = 0;
    return 0;
}
/* CUgraphNodeType: kernel 0, memcpy 1, memset 2, host 3, empty 5, wait 6, record 7. */
int cuGraphNodeGetType(void *node, int *type) {
    static const int types[] = {5, 2, 1, 3, 7, 6, 0};
    const struct object *o = node;
    *type = modeled() && o->g.type >= 0 && o->g.type <= G_KERNEL ? types[o->g.type] : 0;
    return 0;
}

/* ---- virtual memory management (tests/virtual_memory.rs) ----------------------------------
 * Run-time settings:
 *   STANDIN_VMM_GRANULARITY=BYTES the minimum allocation granularity (default 2 MiB); the
 *                                 recommended one is twice it
 *   STANDIN_PEER_ACCESS=0|1       what cuDeviceCanAccessPeer answers for two devices (default 1)
 * Each physical allocation is a handle hN (a retained or imported handle names the allocation
 * it refers to); exported file descriptors are of /dev/null, remembered with their handle. */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

struct vmm_location { int type; int id; };
struct vmm_prop {
    int type;
    int handle_types;
    struct vmm_location location;
    void *win32;
    unsigned char compression, rdma;
    unsigned short usage;
    unsigned char reserved[4];
};
struct vmm_access { struct vmm_location location; int flags; };

#define VMM_MAX 256
static struct { unsigned long long of; size_t size; struct vmm_prop prop; } vmm_handles[VMM_MAX];
static unsigned long long vmm_next_handle = 1;
static struct { devptr ptr; size_t size; unsigned long long handle; } vmm_maps[VMM_MAX];
static struct { devptr ptr; size_t size; int device, flags; } vmm_rights[VMM_MAX];
/* Exported descriptors by inode (a pipe's read end each), so that a duplicate imports too. */
static struct { unsigned long long ino; unsigned long long handle; } vmm_fds[VMM_MAX];
static devptr vmm_next_address = 0x7f0000000000ull;

static size_t vmm_granularity(void) { return (size_t)setting("STANDIN_VMM_GRANULARITY", 2 << 20); }
static int vmm_known(unsigned long long h) { return h > 0 && h < vmm_next_handle && h < VMM_MAX; }
/* A new handle of allocation `of` (itself when 0). */
static unsigned long long vmm_handle(unsigned long long of, size_t size, const struct vmm_prop *prop) {
    pthread_mutex_lock(&lock);
    unsigned long long h = vmm_next_handle < VMM_MAX ? vmm_next_handle++ : 0;
    if (h) {
        vmm_handles[h].of = of ? of : h;
        vmm_handles[h].size = size;
        vmm_handles[h].prop = *prop;
    }
    pthread_mutex_unlock(&lock);
    return h;
}

int cuDeviceCanAccessPeer(int *can, int device, int peer) {
    *can = device == peer ? 1 : (int)setting("STANDIN_PEER_ACCESS", 1);
    return 0;
}
int cuMemGetAllocationGranularity(size_t *granularity, const struct vmm_prop *prop, int option) {
    *granularity = option == 1 ? 2 * vmm_granularity() : vmm_granularity();
    note("cuMemGetAllocationGranularity device=%d handle-types=%d option=%d", prop->location.id,
         prop->handle_types, option);
    return 0;
}
int cuMemAddressReserve(devptr *ptr, size_t size, size_t alignment, devptr addr, unsigned long long flags) {
    (void)addr;
    if (flags) return 1;
    pthread_mutex_lock(&lock);
    if (alignment) vmm_next_address = (vmm_next_address + alignment - 1) / alignment * alignment;
    *ptr = vmm_next_address;
    vmm_next_address += size + vmm_granularity();
    pthread_mutex_unlock(&lock);
    note("cuMemAddressReserve %#llx size=%zu alignment=%zu", *ptr, size, alignment);
    return 0;
}
int cuMemAddressFree(devptr ptr, size_t size) { note("cuMemAddressFree %#llx size=%zu", ptr, size); return 0; }
int cuMemCreate(unsigned long long *handle, size_t size, const struct vmm_prop *prop, unsigned long long flags) {
    if (flags || size == 0 || size % vmm_granularity()) return 1;
    *handle = vmm_handle(0, size, prop);
    if (!*handle) return 2;
    note("cuMemCreate h%llu size=%zu device=%d handle-types=%d rdma=%d compression=%d", *handle, size,
         prop->location.id, prop->handle_types, prop->rdma, prop->compression);
    return 0;
}
int cuMemRelease(unsigned long long handle) {
    if (!vmm_known(handle)) return 1;
    note("cuMemRelease h%llu", handle);
    return 0;
}
int cuMemMap(devptr ptr, size_t size, size_t offset, unsigned long long handle, unsigned long long flags) {
    if (flags || offset || !vmm_known(handle)) return 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++) {
        if (vmm_maps[i].size == 0) {
            vmm_maps[i].ptr = ptr;
            vmm_maps[i].size = size;
            vmm_maps[i].handle = handle;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    note("cuMemMap %#llx size=%zu offset=%zu h%llu", ptr, size, offset, handle);
    return 0;
}
int cuMemUnmap(devptr ptr, size_t size) {
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++) {
        if (vmm_maps[i].size && vmm_maps[i].ptr == ptr) vmm_maps[i].size = 0;
        if (vmm_rights[i].size && vmm_rights[i].ptr >= ptr && vmm_rights[i].ptr < ptr + size) vmm_rights[i].size = 0;
    }
    pthread_mutex_unlock(&lock);
    note("cuMemUnmap %#llx size=%zu", ptr, size);
    return 0;
}
int cuMemSetAccess(devptr ptr, size_t size, const struct vmm_access *desc, size_t count) {
    char line[200];
    int n = snprintf(line, sizeof line, "cuMemSetAccess %#llx size=%zu", ptr, size);
    pthread_mutex_lock(&lock);
    for (size_t d = 0; d < count; d++) {
        if (n < (int)sizeof line) n += snprintf(line + n, sizeof line - (size_t)n, " device%d=%d", desc[d].location.id, desc[d].flags);
        for (int i = 0; i < VMM_MAX; i++) {
            if (vmm_rights[i].size == 0) {
                vmm_rights[i].ptr = ptr;
                vmm_rights[i].size = size;
                vmm_rights[i].device = desc[d].location.id;
                vmm_rights[i].flags = desc[d].flags;
                break;
            }
        }
    }
    pthread_mutex_unlock(&lock);
    note("%s", line);
    return count ? 0 : 1;
}
int cuMemGetAccess(unsigned long long *flags, const struct vmm_location *location, devptr ptr) {
    *flags = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++) {
        if (vmm_rights[i].size && vmm_rights[i].device == location->id && ptr >= vmm_rights[i].ptr &&
            ptr < vmm_rights[i].ptr + vmm_rights[i].size)
            *flags = (unsigned long long)vmm_rights[i].flags;
    }
    pthread_mutex_unlock(&lock);
    return 0;
}
int cuMemExportToShareableHandle(void *out, unsigned long long handle, int type, unsigned long long flags) {
    if (type != 1 || flags || !vmm_known(handle) || !(vmm_handles[handle].prop.handle_types & 1)) return 1;
    /* Without O_CLOEXEC, as the driver does not promise it. */
    int pipe_fds[2];
    struct stat st;
    if (pipe(pipe_fds)) return 2;
    close(pipe_fds[1]);
    int fd = pipe_fds[0];
    if (fstat(fd, &st)) return 2;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++) {
        if (vmm_fds[i].handle == 0) {
            vmm_fds[i].ino = (unsigned long long)st.st_ino;
            vmm_fds[i].handle = vmm_handles[handle].of;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    *(int *)out = fd;
    note("cuMemExportToShareableHandle h%llu", handle);
    return 0;
}
int cuMemImportFromShareableHandle(unsigned long long *handle, void *os_handle, int type) {
    int fd = (int)(intptr_t)os_handle;
    unsigned long long of = 0;
    struct stat st;
    if (fstat(fd, &st)) return 1;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++)
        if (vmm_fds[i].handle && vmm_fds[i].ino == (unsigned long long)st.st_ino) of = vmm_fds[i].handle;
    pthread_mutex_unlock(&lock);
    if (type != 1 || !of) return 1;
    *handle = vmm_handle(of, vmm_handles[of].size, &vmm_handles[of].prop);
    note("cuMemImportFromShareableHandle -> h%llu of h%llu", *handle, of);
    return 0;
}
int cuMemGetAllocationPropertiesFromHandle(struct vmm_prop *prop, unsigned long long handle) {
    if (!vmm_known(handle)) return 1;
    *prop = vmm_handles[handle].prop;
    return 0;
}
int cuMemRetainAllocationHandle(unsigned long long *handle, void *addr) {
    devptr a = (devptr)(uintptr_t)addr;
    unsigned long long of = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < VMM_MAX; i++)
        if (vmm_maps[i].size && a >= vmm_maps[i].ptr && a < vmm_maps[i].ptr + vmm_maps[i].size) of = vmm_maps[i].handle;
    pthread_mutex_unlock(&lock);
    if (!of) return 1;
    /* The driver hands back the handle the memory was mapped with. */
    *handle = of;
    note("cuMemRetainAllocationHandle %#llx -> h%llu", a, of);
    return 0;
}

/* ---- batched and pitched copies, managed memory (tests/copies.rs, tests/managed.rs) ------- */

struct location { int type; int id; };
struct memcpy_attributes { int order; struct location src, dst; unsigned flags; };

static void note_batch(const char *call, devptr *dsts, devptr *srcs, size_t *sizes, size_t count,
                       struct memcpy_attributes *attrs, size_t *starts, size_t runs, void *s) {
    char b[16];
    note("%s count=%zu runs=%zu on %s", call, count, runs, name(s, b));
    for (size_t i = 0; i < runs; i++)
        note("  run from %zu: order=%d src=%d:%d dst=%d:%d flags=%u", starts[i], attrs[i].order,
             attrs[i].src.type, attrs[i].src.id, attrs[i].dst.type, attrs[i].dst.id, attrs[i].flags);
    for (size_t i = 0; i < count && i < 16; i++)
        note("  copy %zu: %#llx <- %#llx size=%zu", i, dsts[i], srcs[i], sizes[i]);
}
/* ---- the driver's error log (cuLogs*, drivers 12.9 and newer) ----------------------------
 * A failure injected below (STANDIN_BATCH_FAIL, standin_fail_node_sets) logs why, as the real
 * driver logs its failures: a line "[CALL] why", then "Returning CODE (NAME) from CALL", each
 * kept for cuLogsDumpToMemory and handed to the registered callback on the calling thread.
 * One callback at a time (the crate registers one); registering is not in the call log, as
 * the crate registers when it loads the driver, before every test's first call. */
typedef void (*log_callback_fn)(void *data, unsigned level, char *message, size_t length);
static log_callback_fn log_callback;
static void *log_callback_data;
static char driver_log_text[4096];
static size_t driver_log_len;
static void driver_log(const char *call, int code, const char *code_name, const char *why) {
    char lines[2][256];
    snprintf(lines[0], sizeof lines[0], "[%s] %s", call, why);
    snprintf(lines[1], sizeof lines[1], "Returning %d (%s) from %s", code, code_name, call);
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(lines[i]);
        pthread_mutex_lock(&lock);
        if (driver_log_len + n + 2 > sizeof driver_log_text) driver_log_len = 0;
        memcpy(driver_log_text + driver_log_len, lines[i], n);
        driver_log_len += n;
        driver_log_text[driver_log_len++] = '\n';
        driver_log_text[driver_log_len] = 0;
        log_callback_fn f = log_callback;
        void *data = log_callback_data;
        pthread_mutex_unlock(&lock);
        if (f) f(data, 0 /* CU_LOG_LEVEL_ERROR */, lines[i], n);
    }
}
int cuLogsRegisterCallback(log_callback_fn f, void *data, void **handle_out) {
    if (!f || !handle_out) return 1;
    pthread_mutex_lock(&lock);
    int taken = log_callback != NULL;
    if (!taken) log_callback = f, log_callback_data = data;
    pthread_mutex_unlock(&lock);
    if (taken) return 1;
    *handle_out = (void *)&log_callback;
    return 0;
}
int cuLogsUnregisterCallback(void *handle) {
    pthread_mutex_lock(&lock);
    int ok = handle == (void *)&log_callback && log_callback;
    if (ok) log_callback = NULL;
    pthread_mutex_unlock(&lock);
    return ok ? 0 : 1;
}
/* The whole log (the iterator is not modelled: every dump starts at the beginning). */
int cuLogsDumpToMemory(unsigned *iterator, char *buffer, size_t *size, unsigned flags) {
    (void)iterator;
    if (!buffer || !size || flags) return 1;
    pthread_mutex_lock(&lock);
    size_t n = driver_log_len < *size ? driver_log_len : 0;
    memcpy(buffer, driver_log_text, n);
    if (*size) buffer[n] = 0;
    pthread_mutex_unlock(&lock);
    *size = n;
    return n || !driver_log_len ? 0 : 1;
}

/* ---- the profiler (cudaProfiler.h) -------------------------------------------------------
 * Each needs a current context (201 without), and logs which. */
int cuProfilerStart(void) {
    char b[16];
    if (!current) return 201;
    note("cuProfilerStart in %s", name(current, b));
    return 0;
}
int cuProfilerStop(void) {
    char b[16];
    if (!current) return 201;
    note("cuProfilerStop in %s", name(current, b));
    return 0;
}

int cuMemcpyBatchAsync(devptr *dsts, devptr *srcs, size_t *sizes, size_t count,
                       struct memcpy_attributes *attrs, size_t *starts, size_t runs, size_t *fail,
                       void *s) {
    note_batch("cuMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, starts, runs, s);
    long failing = setting("STANDIN_BATCH_FAIL", -1);
    if (failing >= 0) {
        *fail = (size_t)failing;
        char why[64];
        snprintf(why, sizeof why, "copy %ld failed as asked (STANDIN_BATCH_FAIL)", failing);
        driver_log("cuMemcpyBatchAsync", 1, "CUDA_ERROR_INVALID_VALUE", why);
        return 1;
    }
    return 0;
}
int cuMemcpyBatchAsync_v2(devptr *dsts, devptr *srcs, size_t *sizes, size_t count,
                          struct memcpy_attributes *attrs, size_t *starts, size_t runs, void *s) {
    note_batch("cuMemcpyBatchAsync_v2", dsts, srcs, sizes, count, attrs, starts, runs, s);
    if (setting("STANDIN_BATCH_FAIL", -1) < 0) return 0;
    driver_log("cuMemcpyBatchAsync_v2", 1, "CUDA_ERROR_INVALID_VALUE",
               "a copy failed as asked (STANDIN_BATCH_FAIL)");
    return 1;
}

/* A context of `device` that is not its primary one, as another library makes it (for
 * Stream::from_raw of its streams). */
void *standin_make_context(int device) {
    struct object *c = make(CONTEXT, NULL);
    c->device = device;
    return c;
}

/* ---- contexts of their own, cache and scheduling configuration, node switches (issue 59) ----
 * cuCtxCreate makes a context cc<N> and pushes it current, as the driver does; cuCtxDestroy
 * marks it destroyed (pushing or setting it current then answers CUDA_ERROR_INVALID_CONTEXT,
 * 201, logged) and pops it where it is the calling thread's current context. Each context
 * keeps its flags and cache preference (read back as set; refused without a current context,
 * 201, and for values the header does not name, 1). cuLibraryGetModule answers one module per
 * context (m<N>, made on first ask). An executable graph keeps its disabled nodes: its launch
 * logs them (" disabled=n3,n5") and, in the model, does not run them; in the model, nodes that
 * are not kernels, copies or fills cannot be disabled (1). */
static int ctx_created, ctx_destroyed;
int standin_contexts_created(void) { return ctx_created; }
int standin_contexts_destroyed(void) { return ctx_destroyed; }
static int ctx_create(void **ctx, unsigned flags, int device) {
    char b[16];
    if (device < 0 || device >= devices()) return 101;
    if ((flags & ~0xffu) || ((flags & 7) != 0 && (flags & 7) != 1 && (flags & 7) != 2 && (flags & 7) != 4)) {
        note("cuCtxCreate flags=%#x -> 1", flags);
        return 1;
    }
    struct object *c = make(CONTEXT, NULL);
    c->device = device;
    c->created = 1;
    c->ctx_flags = flags;
    __atomic_add_fetch(&ctx_created, 1, __ATOMIC_SEQ_CST);
    if (depth < 16) stack[depth++] = current;
    current = c;
    note("cuCtxCreate flags=%#x device=%d -> %s", flags, device, name(c, b));
    *ctx = c;
    return 0;
}
int cuCtxCreate_v2(void **ctx, unsigned flags, int device) { return ctx_create(ctx, flags, device); }
int cuCtxCreate_v4(void **ctx, void *params, unsigned flags, int device) {
    if (params) return 1; /* cuda-core passes none */
    return ctx_create(ctx, flags, device);
}
int cuCtxDestroy_v2(void *ctx) {
    char b[16];
    struct object *c = ctx;
    if (!c || c->kind != CONTEXT || !c->created || !c->live) {
        note("cuCtxDestroy %s -> 201", c ? name(c, b) : "null");
        return 201;
    }
    c->live = 0;
    __atomic_add_fetch(&ctx_destroyed, 1, __ATOMIC_SEQ_CST);
    if (current == c) current = depth > 0 ? stack[--depth] : NULL;
    note("cuCtxDestroy %s", name(c, b));
    return 0;
}
/* A destroyed context of cuCtxCreate, named in the log when the caller tries to use it. */
static int ctx_dead(const char *call, const void *ctx) {
    const struct object *c = ctx;
    char b[16];
    if (!c || c->kind != CONTEXT || !c->created || c->live) return 0;
    note("%s %s -> 201 (destroyed)", call, name(c, b));
    return 1;
}
int cuCtxSetCacheConfig(unsigned config) {
    char b[16];
    if (!current) return 201;
    if (config > 3) return 1;
    current->cache_config = config;
    note("cuCtxSetCacheConfig %u in %s", config, name(current, b));
    return 0;
}
int cuCtxGetCacheConfig(unsigned *config) {
    if (!current) return 201;
    *config = current->cache_config;
    return 0;
}
int cuCtxSetFlags(unsigned flags) {
    char b[16];
    if (!current) return 201;
    if ((flags & ~0xffu) || ((flags & 7) != 0 && (flags & 7) != 1 && (flags & 7) != 2 && (flags & 7) != 4)) return 1;
    current->ctx_flags = flags;
    note("cuCtxSetFlags %#x in %s", flags, name(current, b));
    return 0;
}
int cuCtxGetFlags(unsigned *flags) {
    if (!current) return 201;
    *flags = current->ctx_flags;
    return 0;
}
int cuLibraryGetModule(void **module, void *lib) {
    char b[16];
    (void)lib;
    if (!current) return 201;
    if (!current->module) {
        current->module = make(LIBRARY, NULL);
    }
    note("cuLibraryGetModule in %s -> m%d", name(current, b), current->module->id);
    *module = current->module;
    return 0;
}
int cuKernelSetCacheConfig(void *kernel, unsigned config, int device) {
    char b[16];
    struct object *k = kernel;
    if (config > 3) return 1;
    if (device < 0 || device >= devices()) return 101;
    k->cache_config = (k->cache_config & ~(3u << (2 * device))) | (config << (2 * device));
    note("cuKernelSetCacheConfig %s %u device=%d", name(k, b), config, device);
    return 0;
}
/* The kernel's preference on `device`, for the tests. */
int standin_kernel_cache_config(void *kernel, int device) {
    return (int)((((struct object *)kernel)->cache_config >> (2 * device)) & 3);
}
static int node_disabled(const struct object *x, const void *node) {
    for (int i = 0; i < x->disabled_count; i++) if (x->disabled[i] == node) return 1;
    return 0;
}
static int node_disabled_id(const struct object *x, int id) {
    for (int i = 0; i < x->disabled_count; i++) if (x->disabled[i]->g.id == id) return 1;
    return 0;
}
int cuGraphNodeSetEnabled(void *exec, void *node, unsigned enabled) {
    char b[16], c[16];
    struct object *x = exec, *n = node;
    if (modeled() && n->g.type != G_KERNEL && n->g.type != G_FILL && n->g.type != G_COPY) {
        note("cuGraphNodeSetEnabled %s %s -> 1 (not a kernel, copy or fill node)", name(x, b), name(n, c));
        return 1;
    }
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < x->disabled_count && x->disabled[i] != node) i++;
    if (!enabled && i == x->disabled_count && i < 16) x->disabled[x->disabled_count++] = n;
    if (enabled && i < x->disabled_count) x->disabled[i] = x->disabled[--x->disabled_count];
    pthread_mutex_unlock(&lock);
    note("cuGraphNodeSetEnabled %s %s %u", name(x, b), name(n, c), enabled);
    return 0;
}
int cuGraphNodeGetEnabled(void *exec, void *node, unsigned *enabled) {
    struct object *x = exec, *n = node;
    if (modeled() && n->g.type != G_KERNEL && n->g.type != G_FILL && n->g.type != G_COPY) return 1;
    pthread_mutex_lock(&lock);
    *enabled = !node_disabled(x, node);
    pthread_mutex_unlock(&lock);
    return 0;
}
/* " disabled=n3,n5": an executable graph's disabled nodes, for its launch's line. */
static const char *disabled_list(const struct object *x, char *out, size_t size) {
    char b[16];
    out[0] = 0;
    for (int i = 0; i < x->disabled_count; i++) {
        size_t at = strlen(out);
        snprintf(out + at, size - at, "%s%s", i ? "," : " disabled=", name(x->disabled[i], b));
    }
    return out;
}
/* The node's number (the 13 header's cuGraphNodeGetLocalId). */
int cuGraphNodeGetLocalId(void *node, unsigned *id) {
    *id = (unsigned)((struct object *)node)->id;
    return 0;
}

/* Registered host memory (cuMemHostRegister): the devices' address of a registered byte is
 * its host address, as under unified addressing. A range that overlaps one registered
 * already is refused (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, 712), and an address not
 * registered is refused by the unregister (713) and the device-pointer query (1), as the
 * driver refuses them. */
struct host_range { uintptr_t at; size_t size; };
static struct host_range host_registered[64];
static int host_registered_count;
static pthread_mutex_t host_register_lock = PTHREAD_MUTEX_INITIALIZER;
int cuMemHostRegister_v2(void *p, size_t size, unsigned flags) {
    uintptr_t at = (uintptr_t)p;
    int r = 0;
    pthread_mutex_lock(&host_register_lock);
    for (int i = 0; i < host_registered_count; i++)
        if (at < host_registered[i].at + host_registered[i].size && host_registered[i].at < at + size) r = 712;
    if (!r && (p == NULL || size == 0 || host_registered_count == 64)) r = 1;
    if (!r) host_registered[host_registered_count++] = (struct host_range){at, size};
    pthread_mutex_unlock(&host_register_lock);
    if (modeled()) {
        /* In the model: a synchronous call (refused where a capture forbids one), and a live
         * range the uses are checked against, logged as the model's lines are. */
        M_LOCK;
        if (!r) r = unsafe_call("cuMemHostRegister", "");
        if (!r) {
            add_range((devptr)at, size);
            note("cuMemHostRegister %#llx size=%zu", (devptr)at, size);
        }
        M_UNLOCK;
        return r;
    }
    note("cuMemHostRegister size=%zu flags=%u -> %d", size, flags, r);
    return r;
}
int cuMemHostUnregister(void *p) {
    int r = 713;
    pthread_mutex_lock(&host_register_lock);
    for (int i = 0; i < host_registered_count; i++)
        if (host_registered[i].at == (uintptr_t)p) {
            host_registered[i] = host_registered[--host_registered_count];
            r = 0;
            break;
        }
    pthread_mutex_unlock(&host_register_lock);
    if (modeled()) {
        M_LOCK;
        if (!r) r = unsafe_call("cuMemHostUnregister", "");
        if (!r && free_range("cuMemHostUnregister", (devptr)(uintptr_t)p)) r = 1;
        if (!r) note("cuMemHostUnregister %#llx", (devptr)(uintptr_t)p);
        M_UNLOCK;
        return r;
    }
    note("cuMemHostUnregister -> %d", r);
    return r;
}
int cuMemHostGetDevicePointer_v2(devptr *d, void *p, unsigned flags) {
    int r = 1;
    pthread_mutex_lock(&host_register_lock);
    for (int i = 0; i < host_registered_count; i++)
        if ((uintptr_t)p - host_registered[i].at < host_registered[i].size) r = 0;
    pthread_mutex_unlock(&host_register_lock);
    if (flags) r = 1;
    if (!r) *d = (devptr)(uintptr_t)p;
    if (!modeled()) note("cuMemHostGetDevicePointer -> %d", r);
    return r;
}

int cuMemAllocManaged(devptr *ptr, size_t size, unsigned flags) {
    *ptr = fresh_address(size);
    note("cuMemAllocManaged %#llx size=%zu flags=%u", *ptr, size, flags);
    return 0;
}

/* The advice and prefetches of every range, kept as one state: the tests use one range. */
static int read_mostly;
static struct location preferred, last_prefetch;
static struct location accessed[8];
static int accessed_count;

/* A location as the first forms name it: a device, CU_DEVICE_CPU (-1) or none (-2). */
static int legacy_id(struct location l) { return l.type == 1 ? l.id : l.type == 2 || l.type == 3 ? -1 : -2; }
static struct location from_legacy(int device) {
    struct location l = {device == -1 ? 2 : 1, device == -1 ? 0 : device};
    return l;
}

static int prefetch(const char *call, devptr p, size_t n, struct location l, unsigned flags, void *s) {
    char b[16];
    note("%s %#llx size=%zu to %d:%d flags=%u on %s", call, p, n, l.type, l.id, flags, name(s, b));
    last_prefetch = l;
    return 0;
}
int cuMemPrefetchAsync(devptr p, size_t n, int device, void *s) {
    return prefetch("cuMemPrefetchAsync", p, n, from_legacy(device), 0, s);
}
static int advise(const char *call, devptr p, size_t n, int advice, struct location l) {
    note("%s %#llx size=%zu advice=%d at %d:%d", call, p, n, advice, l.type, l.id);
    switch (advice) {
    case 1: read_mostly = 1; break;
    case 2: read_mostly = 0; break;
    case 3: preferred = l; break;
    case 4: preferred.type = 0; preferred.id = 0; break;
    case 5:
        if (accessed_count < 8) accessed[accessed_count++] = l;
        break;
    case 6:
        for (int i = 0; i < accessed_count; i++)
            if (accessed[i].type == l.type && accessed[i].id == l.id) {
                accessed[i] = accessed[--accessed_count];
                break;
            }
        break;
    default: return 1;
    }
    return 0;
}
int cuMemAdvise(devptr p, size_t n, int advice, int device) {
    return advise("cuMemAdvise", p, n, advice, from_legacy(device));
}
#ifndef STANDIN_NO_LOCATION_V2
int cuMemPrefetchAsync_v2(devptr p, size_t n, struct location l, unsigned flags, void *s) {
    return prefetch("cuMemPrefetchAsync_v2", p, n, l, flags, s);
}
int cuMemAdvise_v2(devptr p, size_t n, int advice, struct location l) {
    return advise("cuMemAdvise_v2", p, n, advice, l);
}
#endif
int cuMemRangeGetAttribute(void *data, size_t size, int attribute, devptr p, size_t n) {
    note("cuMemRangeGetAttribute %d size=%zu of %#llx size=%zu", attribute, size, p, n);
    int *out = data;
    if (size < 4 || size % 4 != 0) return 1;
    /* The typed attributes are 12.2's. */
    if (attribute >= 5 && setting("STANDIN_VERSION", 13000) < 12020) return 1;
    switch (attribute) {
    case 1: *out = read_mostly; break;
    case 2: *out = legacy_id(preferred); break;
    case 3:
        for (size_t i = 0; i < size / 4; i++)
            out[i] = (int)i < accessed_count ? legacy_id(accessed[i]) : -2;
        break;
    case 4: *out = legacy_id(last_prefetch); break;
    case 5: *out = preferred.type; break;
    case 6: *out = preferred.id; break;
    case 7: *out = last_prefetch.type; break;
    case 8: *out = last_prefetch.id; break;
    default: return 1;
    }
    return 0;
}

#ifndef STANDIN_NO_DISCARD
static void note_ranges(const char *call, devptr *ptrs, size_t *sizes, size_t count,
                        struct location *locs, size_t *starts, size_t nlocs, void *s) {
    char b[16];
    note("%s count=%zu locations=%zu on %s", call, count, nlocs, name(s, b));
    for (size_t i = 0; i < nlocs; i++)
        note("  location from %zu: %d:%d", starts[i], locs[i].type, locs[i].id);
    for (size_t i = 0; i < count && i < 16; i++) note("  range %zu: %#llx size=%zu", i, ptrs[i], sizes[i]);
}
int cuMemDiscardBatchAsync(devptr *ptrs, size_t *sizes, size_t count, unsigned long long flags, void *s) {
    (void)flags;
    note_ranges("cuMemDiscardBatchAsync", ptrs, sizes, count, NULL, NULL, 0, s);
    return 0;
}
int cuMemPrefetchBatchAsync(devptr *ptrs, size_t *sizes, size_t count, struct location *locs,
                            size_t *starts, size_t nlocs, unsigned long long flags, void *s) {
    (void)flags;
    note_ranges("cuMemPrefetchBatchAsync", ptrs, sizes, count, locs, starts, nlocs, s);
    if (nlocs > 0) last_prefetch = locs[nlocs - 1];
    return 0;
}
int cuMemDiscardAndPrefetchBatchAsync(devptr *ptrs, size_t *sizes, size_t count,
                                      struct location *locs, size_t *starts, size_t nlocs,
                                      unsigned long long flags, void *s) {
    (void)flags;
    note_ranges("cuMemDiscardAndPrefetchBatchAsync", ptrs, sizes, count, locs, starts, nlocs, s);
    if (nlocs > 0) last_prefetch = locs[nlocs - 1];
    return 0;
}
#endif

int cuMemAllocPitch_v2(devptr *ptr, size_t *pitch, size_t width, size_t height, unsigned element) {
    *pitch = (width + 511) & ~(size_t)511;
    *ptr = fresh_address(*pitch * height);
    note("cuMemAllocPitch %#llx width=%zu height=%zu element=%u pitch=%zu", *ptr, width, height,
         element, *pitch);
    return 0;
}

struct memcpy3d {
    size_t srcXInBytes, srcY, srcZ, srcLOD;
    int srcMemoryType;
    const void *srcHost;
    devptr srcDevice;
    void *srcArray, *reserved0;
    size_t srcPitch, srcHeight;
    size_t dstXInBytes, dstY, dstZ, dstLOD;
    int dstMemoryType;
    void *dstHost;
    devptr dstDevice;
    void *dstArray, *reserved1;
    size_t dstPitch, dstHeight;
    size_t WidthInBytes, Height, Depth;
};
struct memcpy2d {
    size_t srcXInBytes, srcY;
    int srcMemoryType;
    const void *srcHost;
    devptr srcDevice;
    void *srcArray;
    size_t srcPitch;
    size_t dstXInBytes, dstY;
    int dstMemoryType;
    void *dstHost;
    devptr dstDevice;
    void *dstArray;
    size_t dstPitch;
    size_t WidthInBytes, Height;
};
/* A side of a pitched copy: "host" (type 1) or the unified address (type 4). */
static const char *side(int type, const void *host, devptr device, char *buf) {
    if (type == 1) sprintf(buf, "host%s", host ? "" : "(null)");
    else if (type == 4) sprintf(buf, "%#llx", device);
    else sprintf(buf, "type%d", type);
    return buf;
}
int cuMemcpy2DAsync_v2(const struct memcpy2d *c, void *s) {
    char a[32], b[32], d[16];
    note("cuMemcpy2DAsync %s x=%zu y=%zu pitch=%zu -> %s x=%zu y=%zu pitch=%zu: %zu x %zu on %s",
         side(c->srcMemoryType, c->srcHost, c->srcDevice, a), c->srcXInBytes, c->srcY, c->srcPitch,
         side(c->dstMemoryType, c->dstHost, c->dstDevice, b), c->dstXInBytes, c->dstY, c->dstPitch,
         c->WidthInBytes, c->Height, name(s, d));
    return 0;
}
static int copy3d_arrays(const struct memcpy3d *c, void *s);
int cuMemcpy3DAsync_v2(const struct memcpy3d *c, void *s) {
    if (c->srcMemoryType == 3 || c->dstMemoryType == 3) return copy3d_arrays(c, s);
    char a[32], b[32], d[16];
    note("cuMemcpy3DAsync %s at %zu,%zu,%zu pitch=%zu height=%zu -> %s at %zu,%zu,%zu pitch=%zu "
         "height=%zu: %zu x %zu x %zu on %s",
         side(c->srcMemoryType, c->srcHost, c->srcDevice, a), c->srcXInBytes, c->srcY, c->srcZ,
         c->srcPitch, c->srcHeight, side(c->dstMemoryType, c->dstHost, c->dstDevice, b),
         c->dstXInBytes, c->dstY, c->dstZ, c->dstPitch, c->dstHeight, c->WidthInBytes, c->Height,
         c->Depth, name(s, d));
    return 0;
}

/* ---- pools of every kind and interprocess sharing (tests/pools.rs, tests/ipc.rs) ----------
 * Pools made here log as P<n>; an imported pool's buffers are at the exporter's address plus
 * 1 << 32, opened legacy memory at its address plus 2 << 32. Settings:
 *   STANDIN_RANGE_SIZE=BYTES what cuPointerGetAttributes answers as an allocation's size
 *                            (default 1 MiB)
 *   STANDIN_POINTER_TYPE=T   the memory type it answers (default 2: device memory)
 *   STANDIN_POINTER_DEVICE=D the device ordinal it answers (default: the current context's)
 *   STANDIN_POINTER_MANAGED=1 it answers managed memory (default: not)
 *   STANDIN_POINTER_POOL_EXPORTED=1 the pool it answers is the one exported last (default:
 *                            none), as for a process's own allocation
 *   STANDIN_UUID_SAME=1      every device has device 0's UUID
 *   STANDIN_IMPORT_OWN=1     an import of a pool is answered with the pool exported last (as a
 *                            driver might answer a process importing its own pool) */
#include <fcntl.h>
#include <unistd.h>

typedef struct { char reserved[64]; } ipc64;
struct access_desc { struct location location; int flags; };
struct pool_props {
    int alloc_type;
    int handle_types;
    struct location location;
    void *win32;
    size_t max_size;
};

static const char *pool_name(const void *p, char *buf) {
    const struct object *o = p;
    if (o >= pools && o < pools + MAX_DEVICES) return name(p, buf);
    sprintf(buf, "P%d", o->id);
    return buf;
}

int cuMemPoolCreate(void **pool, const struct pool_props *props) {
    struct object *o = make(POOL, current);
    o->pool_props[0] = props->alloc_type;
    o->pool_props[1] = props->handle_types;
    o->pool_props[2] = props->location.type;
    o->pool_props[3] = props->location.id;
    o->pool_max = props->max_size;
    char b[16];
    note("cuMemPoolCreate %s alloc=%d handles=%d location=%d:%d max=%zu", pool_name(o, b),
         props->alloc_type, props->handle_types, props->location.type, props->location.id,
         props->max_size);
    *pool = o;
    return 0;
}
/* The current pool of each location and kind: a device's pinned memory by ordinal, the
 * others by kind (1 pinned, 2 managed) and location; one never set is the location's default
 * pool (a device's `pools[d]`, else an address of its own per location type). */
static void *current_device_pool[MAX_DEVICES];
static struct { int kind, type, id; void *pool; } current_pools[32];
static int current_pool_count;
static char location_default_pools[2][8];
int cuDeviceGetMemPool(void **p, int device) {
    char b[16];
    if (device < 0 || device >= MAX_DEVICES) return 101; /* CUDA_ERROR_INVALID_DEVICE */
    *p = current_device_pool[device] ? current_device_pool[device] : &pools[device];
    note("cuDeviceGetMemPool %d -> %s", device, pool_name(*p, b));
    return 0;
}
int cuDeviceSetMemPool(int device, void *pool) {
    char b[16];
    if (device < 0 || device >= MAX_DEVICES) return 101;
    current_device_pool[device] = pool;
    note("cuDeviceSetMemPool %d %s", device, pool_name(pool, b));
    return 0;
}
int cuMemGetMemPool(void **p, const struct location *location, int kind) {
    char b[16];
    *p = NULL;
    for (int i = 0; i < current_pool_count; i++)
        if (current_pools[i].kind == kind && current_pools[i].type == location->type
            && current_pools[i].id == location->id)
            *p = current_pools[i].pool;
    if (!*p) *p = &location_default_pools[kind == 2][location->type & 7];
    note("cuMemGetMemPool location=%d:%d type=%d -> %s", location->type, location->id, kind,
         *p == &location_default_pools[kind == 2][location->type & 7] ? "default" : pool_name(*p, b));
    return 0;
}
int cuMemSetMemPool(const struct location *location, int kind, void *pool) {
    char b[16];
    if (current_pool_count == 32) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
    current_pools[current_pool_count].kind = kind;
    current_pools[current_pool_count].type = location->type;
    current_pools[current_pool_count].id = location->id;
    current_pools[current_pool_count++].pool = pool;
    note("cuMemSetMemPool location=%d:%d type=%d %s", location->type, location->id, kind,
         pool_name(pool, b));
    return 0;
}
int cuMemPoolDestroy(void *pool) { char b[16]; note("cuMemPoolDestroy %s", pool_name(pool, b)); return 0; }
int cuMemPoolSetAttribute(void *pool, int attribute, void *value) {
    char b[16];
    unsigned long long v = attribute <= 3 ? (unsigned long long)*(int *)value : *(unsigned long long *)value;
    note("cuMemPoolSetAttribute %s attr=%d value=%llu", pool_name(pool, b), attribute, v);
    return 0;
}
int cuMemPoolTrimTo(void *pool, size_t keep) { char b[16]; note("cuMemPoolTrimTo %s keep=%zu", pool_name(pool, b), keep); return 0; }
/* A pool's access mask lives in its `params` (bit d: device d); the default pools' own device
 * always has access. */
int cuMemPoolSetAccess(void *pool, const struct access_desc *desc, size_t count) {
    struct object *o = pool;
    char b[16];
    for (size_t i = 0; i < count; i++) {
        note("cuMemPoolSetAccess %s location=%d:%d flags=%d", pool_name(pool, b),
             desc[i].location.type, desc[i].location.id, desc[i].flags);
        /* Atomic: the model reads it in its calls (check_access). */
        if (desc[i].flags) __atomic_fetch_or(&o->params, 1 << desc[i].location.id, __ATOMIC_ACQ_REL);
        else __atomic_fetch_and(&o->params, ~(1 << desc[i].location.id), __ATOMIC_ACQ_REL);
    }
    return 0;
}
int cuMemPoolGetAccess(int *flags, void *pool, struct location *location) {
    struct object *o = pool;
    int own = o >= pools && o < pools + MAX_DEVICES && o->device == location->id;
    *flags = own || (__atomic_load_n(&o->params, __ATOMIC_ACQUIRE) >> location->id) & 1 ? 3 : 0;
    return 0;
}
static void *exported_last;
int cuMemPoolExportToShareableHandle(void *out, void *pool, int type, unsigned long long flags) {
    char b[16];
    exported_last = pool;
    /* Without O_CLOEXEC: the driver does not promise it, and cuda-core must not rely on it. */
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) return 2;
    *(int *)out = fd;
    note("cuMemPoolExportToShareableHandle %s type=%d flags=%llu", pool_name(pool, b), type, flags);
    return 0;
}
int cuMemPoolImportFromShareableHandle(void **pool, void *handle, int type, unsigned long long flags) {
    int fd = (int)(intptr_t)handle;
    char b[16];
    if (fcntl(fd, F_GETFD) < 0) return 1;
    struct object *o = setting("STANDIN_IMPORT_OWN", 0) && exported_last ? exported_last : make(POOL, current);
    *pool = o;
    note("cuMemPoolImportFromShareableHandle %s type=%d flags=%llu", pool_name(o, b), type, flags);
    return 0;
}
/* Export data: the address, then 0x5a bytes; an import of data whose byte 8 is not 0x5a is
 * refused as the driver refuses freed memory. Refused, as the 580 driver refuses it, while no
 * pool was exported to a shareable handle yet. */
int cuMemPoolExportPointer(unsigned char *data, devptr ptr) {
    if (!exported_last) return 1;
    memcpy(data, &ptr, sizeof ptr);
    memset(data + 8, 0x5a, 56);
    note("cuMemPoolExportPointer %#llx", ptr);
    return 0;
}
int cuMemPoolImportPointer(devptr *ptr, void *pool, unsigned char *data) {
    char b[16];
    devptr exported;
    memcpy(&exported, data, sizeof exported);
    if (data[8] != 0x5a) return 1;
    *ptr = exported + (1ull << 32);
    note("cuMemPoolImportPointer %#llx from %s", *ptr, pool_name(pool, b));
    return 0;
}
int cuPointerGetAttributes(unsigned n, int *attributes, void **data, devptr ptr) {
    for (unsigned i = 0; i < n; i++) {
        if (attributes[i] == 11) *(devptr *)data[i] = setting("STANDIN_RANGE_START_ZERO", 0) ? 0 : ptr;
        else if (attributes[i] == 12) *(size_t *)data[i] = (size_t)setting("STANDIN_RANGE_SIZE", 1 << 20);
        else if (attributes[i] == 2) *(unsigned *)data[i] = (unsigned)setting("STANDIN_POINTER_TYPE", 2);
        else if (attributes[i] == 9) *(int *)data[i] = (int)setting("STANDIN_POINTER_DEVICE", current ? current->device : 0);
        else if (attributes[i] == 17) *(void **)data[i] = setting("STANDIN_POINTER_POOL_EXPORTED", 0) ? exported_last : NULL;
        else if (attributes[i] == 8) *(unsigned *)data[i] = (unsigned)setting("STANDIN_POINTER_MANAGED", 0);
        else return 1;
    }
    note("cuPointerGetAttributes %#llx", ptr);
    return 0;
}
int cuIpcGetEventHandle(ipc64 *handle, void *event) {
    char b[16];
    if (!current) return 201; /* as the 580 driver: the event's context must be current */
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &event, sizeof event);
    note("cuIpcGetEventHandle %s", name(event, b));
    return 0;
}
int cuIpcOpenEventHandle(void **event, ipc64 handle) {
    char b[16];
    (void)handle;
    if (!current) return 201;
    struct object *o = make(EVENT, current);
    *event = o;
    note("cuIpcOpenEventHandle -> %s", name(o, b));
    return 0;
}
int cuIpcGetMemHandle(ipc64 *handle, devptr ptr) {
    memset(handle, 0, sizeof *handle);
    memcpy(handle->reserved, &ptr, sizeof ptr);
    note("cuIpcGetMemHandle %#llx", ptr);
    return 0;
}
int cuIpcOpenMemHandle_v2(devptr *ptr, ipc64 handle, unsigned flags) {
    devptr exported;
    memcpy(&exported, handle.reserved, sizeof exported);
    *ptr = exported + (2ull << 32);
    note("cuIpcOpenMemHandle %#llx flags=%u", *ptr, flags);
    return 0;
}
int cuIpcCloseMemHandle(devptr ptr) { note("cuIpcCloseMemHandle %#llx", ptr); return 0; }
int cuDeviceGetUuid(unsigned char *uuid, int device) {
    memset(uuid, (setting("STANDIN_UUID_SAME", 0) ? 0 : device) + 0x10, 16);
    return 0;
}
int cuDeviceGetUuid_v2(unsigned char *uuid, int device) { return cuDeviceGetUuid(uuid, device); }

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
/* A 3D copy with an array on either side: logged by its ends, and its bytes moved. */
static int copy3d_arrays(const struct memcpy3d *c, void *s) {
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
#endif /* STANDIN_FULL: the tests only */

/* Tensor maps: the descriptor's first words are the address, the rank and the data type, so
 * that a test can tell which encoding reached a kernel argument, and the rest zero (a fill of
 * zeros, as the bench's encode always wrote: another fill changes what the bench's raw encode
 * costs by some 5 ns). cuTensorMapEncodeTiled is the bench's and the tests', the rest the
 * tests' only. */
#ifndef STANDIN_PROBE
static void list_u64(char *out, const unsigned long long *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%llu", i ? "," : "", v[i]);
}
static void list_u32(char *out, const unsigned *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%u", i ? "," : "", v[i]);
}
static void encode(unsigned long long *map, unsigned type, unsigned rank, void *address) {
    map[0] = (unsigned long long)(uintptr_t)address;
    map[1] = rank;
    map[2] = type;
    for (int i = 3; i < 16; i++) map[i] = 0;
}
int cuTensorMapEncodeTiled(unsigned long long *map, unsigned type, unsigned rank, void *address,
                           const unsigned long long *dims, const unsigned long long *strides,
                           const unsigned *box, const unsigned *estrides, unsigned interleave,
                           unsigned swizzle, unsigned l2, unsigned oob) {
    evict();
    if (LOGGING) {
        char d[128], s[128], bx[128], e[128], c[16];
        list_u64(d, dims, rank);
        list_u64(s, strides, rank - 1);
        list_u32(bx, box, rank);
        list_u32(e, estrides, rank);
        note("cuTensorMapEncodeTiled type=%u rank=%u address=%#llx dims=%s strides=%s box=%s "
             "element_strides=%s interleave=%u swizzle=%u l2=%u oob=%u aligned64=%d in %s", type,
             rank, (unsigned long long)(uintptr_t)address, d, s, bx, e, interleave, swizzle, l2,
             oob, (uintptr_t)map % 64 == 0, name(current, c));
    }
    encode(map, type, rank, address);
    return 0;
}
#endif
#ifdef STANDIN_FULL
static void list_int(char *out, const int *v, unsigned n) {
    out[0] = 0;
    for (unsigned i = 0; i < n && strlen(out) < 100; i++) sprintf(out + strlen(out), "%s%d", i ? "," : "", v[i]);
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
#endif

#if defined(STANDIN_FULL) && !defined(STANDIN_NO_GREEN)
/* ---- device resources, green contexts and work queues ---------------------------------------
 * Every device has STANDIN_SMS SMs (default 132). A split rounds each group up to 8 SMs (2 with
 * CU_DEV_SM_RESOURCE_SPLIT_IGNORE_SM_COSCHEDULING); SM resources report a smallest partition
 * and a co-scheduling alignment of 8. A green context's SMs are the sum of the SM groups it was
 * made from; its number is gc<N> in the log.
 * Work queues (drivers 13.1 and newer: with STANDIN_VERSION below 13010 both resource types are
 * refused with CUDA_ERROR_INVALID_VALUE, 1, as a 13.0 driver refuses a type it does not know):
 * a device's work-queue configuration resource reports a concurrency limit of
 * STANDIN_WQ_LIMIT (default 32) and the device-context sharing scope; a context's work-queue
 * resource is an opaque 40 bytes whose first int is the context's work queue (w<N>: 0 for a
 * primary context, the green context's own otherwise). A description takes at most one
 * work-queue resource (a second: 1); a green context made with a configuration gets a work
 * queue of its own and logs "wq=LIMIT/SCOPE", one made with a context's work queue shares it
 * and logs "wq=w<N>".
 * CUdevResource is 144 bytes in the 12 and 13 headers: its type first, its union at byte 96. */
#define RESOURCE_BYTES 144
#define UNION_AT 96
#define TYPE_SM 1
#define TYPE_WQ_CONFIG 1000
#define TYPE_WQ 10000

struct green {
    struct object ctx; /* first: the context cuCtxFromGreenCtx gives is the green context */
    unsigned sm;
    int wq;            /* its work queue's number */
    int destroyed;
};
struct desc { unsigned sm; int wq_kind; unsigned wq_limit, wq_scope; int wq; };
static int green_ids, wq_ids;

static int device_sms(void) { return (int)setting("STANDIN_SMS", 132); }
static int has_workqueues(void) { return setting("STANDIN_VERSION", FAKE_VERSION) >= 13010; }
static unsigned *res_union(void *r) { return (unsigned *)((unsigned char *)r + UNION_AT); }
static int res_type(const void *r) { return *(const int *)r; }
static void put_sm(void *r, unsigned count) {
    memset(r, 0, RESOURCE_BYTES);
    *(int *)r = TYPE_SM;
    unsigned *sm = res_union(r);
    sm[0] = count; /* smCount */
    sm[1] = 8;     /* minSmPartitionSize */
    sm[2] = 8;     /* smCoscheduledAlignment */
}
static unsigned get_sm(const void *r) { return res_union((void *)r)[0]; }
static struct green *green_of(void *ctx) {
    return ctx && ((struct object *)ctx)->green ? (struct green *)ctx : NULL;
}
/* Writes a resource of `type` for `device` (or for context `ctx`), as both Get calls do. */
static int put_resource(const char *call, void *res, int type, int device, void *ctx) {
    struct green *g = green_of(ctx);
    if (type == TYPE_SM) {
        put_sm(res, g ? g->sm : (unsigned)device_sms());
        return 0;
    }
    if ((type != TYPE_WQ_CONFIG && type != TYPE_WQ) || !has_workqueues()) {
        note("%s type=%d -> 1", call, type);
        return 1;
    }
    memset(res, 0, RESOURCE_BYTES);
    *(int *)res = type;
    unsigned *u = res_union(res);
    if (type == TYPE_WQ_CONFIG) {
        u[0] = (unsigned)device;
        u[1] = (unsigned)setting("STANDIN_WQ_LIMIT", 32);
        u[2] = 0; /* CU_WORKQUEUE_SCOPE_DEVICE_CTX */
    } else {
        if (!ctx) return 1; /* a context's own only */
        u[0] = (unsigned)(g ? g->wq : 0);
    }
    return 0;
}
int cuDeviceGetDevResource(int device, void *res, int type) {
    note("cuDeviceGetDevResource device=%d type=%d", device, type);
    if (device < 0 || device >= devices()) return 101;
    return put_resource("cuDeviceGetDevResource", res, type, device, NULL);
}
int cuCtxGetDevResource(void *ctx, void *res, int type) {
    char b[16];
    if (!ctx) return 201;
    note("cuCtxGetDevResource %s type=%d", name(ctx, b), type);
    return put_resource("cuCtxGetDevResource", res, type, ((struct object *)ctx)->device, ctx);
}
int cuDevSmResourceSplitByCount(void *result, unsigned *nb, const void *input, void *remaining,
                                unsigned flags, unsigned min_count) {
    note("cuDevSmResourceSplitByCount groups=%u min=%u flags=%u", *nb, min_count, flags);
    unsigned granularity = (flags & 1) ? 2 : 8;
    if (min_count == 0 || res_type(input) != TYPE_SM) return 1;
    unsigned size = (min_count + granularity - 1) / granularity * granularity;
    unsigned available = get_sm(input);
    unsigned n = available / size;
    if (result && n > *nb) n = *nb;
    if (n == 0) return 1;
    for (unsigned i = 0; result && i < n; i++) put_sm((unsigned char *)result + i * RESOURCE_BYTES, size);
    if (remaining) put_sm(remaining, available - n * size);
    *nb = n;
    return 0;
}
int cuDevResourceGenerateDesc(void **desc, void *resources, unsigned n) {
    struct desc *d = calloc(1, sizeof *d);
    for (unsigned i = 0; i < n; i++) {
        void *r = (unsigned char *)resources + i * RESOURCE_BYTES;
        int type = res_type(r);
        if (type == TYPE_SM) { d->sm += get_sm(r); continue; }
        if ((type != TYPE_WQ_CONFIG && type != TYPE_WQ) || d->wq_kind || !has_workqueues()) {
            note("cuDevResourceGenerateDesc n=%u: resource %u of type %d -> 1", n, i, type);
            free(d);
            return 1;
        }
        d->wq_kind = type;
        if (type == TYPE_WQ_CONFIG) { d->wq_limit = res_union(r)[1]; d->wq_scope = res_union(r)[2]; }
        else d->wq = (int)res_union(r)[0];
    }
    note("cuDevResourceGenerateDesc n=%u sm=%u", n, d->sm);
    *desc = d;
    return 0;
}
int cuGreenCtxCreate(void **out, void *desc, int device, unsigned flags) {
    struct desc *d = desc;
    char wq[48] = "";
    if (device < 0 || device >= devices()) return 101;
    struct green *g = calloc(1, sizeof *g);
    g->ctx.kind = CONTEXT;
    g->ctx.device = device;
    g->ctx.live = 1;
    g->ctx.green = __atomic_add_fetch(&green_ids, 1, __ATOMIC_SEQ_CST);
    g->sm = d->sm;
    if (d->wq_kind == TYPE_WQ) {
        g->wq = d->wq;
        snprintf(wq, sizeof wq, " wq=w%d", d->wq);
    } else {
        g->wq = __atomic_add_fetch(&wq_ids, 1, __ATOMIC_SEQ_CST);
        if (d->wq_kind == TYPE_WQ_CONFIG) snprintf(wq, sizeof wq, " wq=%u/%u", d->wq_limit, d->wq_scope);
    }
    note("cuGreenCtxCreate gc%d device=%d sm=%u flags=%u%s", g->ctx.green, device, g->sm, flags, wq);
    *out = g;
    return 0;
}
int cuCtxFromGreenCtx(void **ctx, void *green) {
    *ctx = &((struct green *)green)->ctx;
    return 0;
}
int cuGreenCtxDestroy(void *green) {
    struct green *g = green;
    note("cuGreenCtxDestroy gc%d", g->ctx.green);
    g->destroyed = 1; /* kept: a test may still read what it was */
    return 0;
}
int cuGreenCtxStreamCreate(void **s, void *green, unsigned flags, int priority) {
    struct green *g = green;
    (void)priority;
    if (g->destroyed) return 201;
    struct object *o = make(STREAM, &g->ctx);
    char b[16];
    note("cuGreenCtxStreamCreate %s in gc%d flags=%u", name(o, b), g->ctx.green, flags);
    *s = o;
    return 0;
}
#endif

#if defined(STANDIN_FULL) && !defined(STANDIN_NO_COREDUMP)
/* ---- core dumps (cuCoredump*Attribute*, drivers 12.1 and newer) ----------------------------
 * The settings are kept for the process and for each context (a context takes the process's
 * when first asked, as a context takes them when made), and each call logs its setting, its
 * value and, for a context's, which context:
 *   "cuCoredumpSetAttribute file=/tmp/x in c0", "cuCoredumpGetAttributeGlobal lightweight -> 1".
 * Sizes are checked as the driver documents them, a wrong one answering
 * CUDA_ERROR_INVALID_VALUE (1, logged " -> 1 (size N)"): a C bool (1 byte, 0 or 1) for the
 * booleans, an int (4 bytes) for the generation flags; for the file and the pipe, when set, a
 * string whose NUL is the region's last byte (1024 bytes at most), and when read, a region that
 * holds the string and its NUL (the size written back is the string's length with its NUL). A
 * NULL value answers the size. The pipe and the user trigger cannot be set for a context (1),
 * nor the generation flags read or set before driver 12.5 (STANDIN_VERSION below 12050: 1),
 * nor flags the 13 header does not name (1). Without a current context a context's calls
 * answer 201. */
struct coredump {
    unsigned char on_exception, trigger_host, lightweight, user_trigger;
    unsigned flags;
    char file[1024], pipe[1024];
};
static struct coredump cd_process = {0, 1, 0, 0, 0, "core.cuda.standin", "corepipe.cuda.standin"};
static const char *const cd_names[] = {
    "?", "enable_on_exception", "trigger_host", "lightweight", "enable_user_trigger", "file",
    "pipe", "generation_flags",
};
#define CD_FLAGS_NAMED (0x1ffu | 1u << 30 | 1u << 31)

static struct coredump *cd_of(struct object *c) {
    if (!c->coredump) {
        c->coredump = malloc(sizeof *c->coredump);
        *c->coredump = cd_process;
    }
    return c->coredump;
}
static unsigned char *cd_bool(struct coredump *cd, int attrib) {
    return attrib == 1 ? &cd->on_exception : attrib == 2 ? &cd->trigger_host
         : attrib == 3 ? &cd->lightweight : &cd->user_trigger;
}
static size_t cd_size(int attrib) { return attrib <= 4 ? 1 : attrib == 7 ? 4 : 1024; }
/* What no driver takes: an unknown setting, the generation flags before 12.5. */
static int cd_refused(const char *call, int attrib, const char *in) {
    if (attrib < 1 || attrib > 7) {
        note("%s %d%s -> 1", call, attrib, in);
        return 1;
    }
    if (attrib == 7 && setting("STANDIN_VERSION", FAKE_VERSION) < 12050) {
        note("%s %s%s -> 1 (before 12.5)", call, cd_names[attrib], in);
        return 1;
    }
    return 0;
}
static int cd_get(const char *call, struct coredump *cd, const char *in, int attrib, void *value,
                  size_t *size) {
    if (cd_refused(call, attrib, in) || !size) return 1;
    if (!value) {
        *size = cd_size(attrib);
        note("%s %s%s size -> %zu", call, cd_names[attrib], in, *size);
        return 0;
    }
    if (attrib == 5 || attrib == 6) {
        const char *text = attrib == 5 ? cd->file : cd->pipe;
        size_t n = strlen(text) + 1;
        if (*size < n) {
            note("%s %s%s -> 1 (size %zu)", call, cd_names[attrib], in, *size);
            return 1;
        }
        memcpy(value, text, n);
        *size = n;
        note("%s %s%s -> %s", call, cd_names[attrib], in, text);
        return 0;
    }
    if (*size != cd_size(attrib)) {
        note("%s %s%s -> 1 (size %zu)", call, cd_names[attrib], in, *size);
        return 1;
    }
    if (attrib == 7) {
        memcpy(value, &cd->flags, 4);
        note("%s %s%s -> %#x", call, cd_names[attrib], in, cd->flags);
    } else {
        *(unsigned char *)value = *cd_bool(cd, attrib);
        note("%s %s%s -> %d", call, cd_names[attrib], in, *cd_bool(cd, attrib));
    }
    return 0;
}
static int cd_set(const char *call, struct coredump *cd, const char *in, int for_context,
                  int attrib, void *value, size_t *size) {
    if (cd_refused(call, attrib, in) || !size) return 1;
    if (for_context && (attrib == 4 || attrib == 6)) {
        note("%s %s%s -> 1 (not for a context)", call, cd_names[attrib], in);
        return 1;
    }
    if (!value) {
        *size = cd_size(attrib);
        note("%s %s%s size -> %zu", call, cd_names[attrib], in, *size);
        return 0;
    }
    if (attrib == 5 || attrib == 6) {
        const char *text = value;
        if (*size < 1 || *size > 1024 || memchr(text, 0, *size) != text + *size - 1) {
            note("%s %s%s -> 1 (size %zu)", call, cd_names[attrib], in, *size);
            return 1;
        }
        memcpy(attrib == 5 ? cd->file : cd->pipe, text, *size);
        note("%s %s=%s%s", call, cd_names[attrib], text, in);
        return 0;
    }
    if (*size != cd_size(attrib)) {
        note("%s %s%s -> 1 (size %zu)", call, cd_names[attrib], in, *size);
        return 1;
    }
    if (attrib == 7) {
        unsigned flags;
        memcpy(&flags, value, 4);
        if (flags & ~CD_FLAGS_NAMED) {
            note("%s %s=%#x%s -> 1", call, cd_names[attrib], flags, in);
            return 1;
        }
        cd->flags = flags;
        note("%s %s=%#x%s", call, cd_names[attrib], flags, in);
        return 0;
    }
    unsigned char on = *(unsigned char *)value;
    if (on > 1) {
        note("%s %s=%d%s -> 1 (not a bool)", call, cd_names[attrib], on, in);
        return 1;
    }
    *cd_bool(cd, attrib) = on;
    note("%s %s=%d%s", call, cd_names[attrib], on, in);
    return 0;
}
int cuCoredumpGetAttribute(int attrib, void *value, size_t *size) {
    char b[16], in[32];
    if (!current) {
        note("cuCoredumpGetAttribute -> 201");
        return 201;
    }
    snprintf(in, sizeof in, " in %s", name(current, b));
    return cd_get("cuCoredumpGetAttribute", cd_of(current), in, attrib, value, size);
}
int cuCoredumpGetAttributeGlobal(int attrib, void *value, size_t *size) {
    return cd_get("cuCoredumpGetAttributeGlobal", &cd_process, "", attrib, value, size);
}
int cuCoredumpSetAttribute(int attrib, void *value, size_t *size) {
    char b[16], in[32];
    if (!current) {
        note("cuCoredumpSetAttribute -> 201");
        return 201;
    }
    snprintf(in, sizeof in, " in %s", name(current, b));
    return cd_set("cuCoredumpSetAttribute", cd_of(current), in, 1, attrib, value, size);
}
int cuCoredumpSetAttributeGlobal(int attrib, void *value, size_t *size) {
    return cd_set("cuCoredumpSetAttributeGlobal", &cd_process, "", 0, attrib, value, size);
}
#endif

#ifdef STANDIN_FULL
/* ---- external memory and semaphores, OpenGL registrations --------------------------------- */

/* An import (cuImportExternalMemory: x<id>; cuImportExternalSemaphore: y<id>) owns its file
 * descriptor from its import to its destruction, which closes it, as the driver does. A memory
 * import of a regular file or memfd is refused (CUDA_ERROR_INVALID_VALUE) when the file is
 * smaller than the size asked, as the driver refuses a size past the allocation's. A mapped
 * buffer is a device address (a live range of the model's window where the model is on, so a
 * use after its cuMemFree is stale). Signals and waits are stream work: captured, each is a
 * node of the capture's graph; their lines name the semaphore and the value. OpenGL
 * registrations (g<id>) are of a buffer of STANDIN_GL_BYTES bytes (default 4096) or an image
 * of 16 x 8 u32 (an array holding bytes); mapping one twice is CUDA_ERROR_ALREADY_MAPPED (208),
 * asking a mapping of one that is not mapped CUDA_ERROR_NOT_MAPPED (211), and unregistering a
 * mapped one is logged "!unregister-mapped". */
struct ext_import {
    int id, live, fd, semaphore;
    unsigned type, flags;
    unsigned long long size;
};
struct ext_memory_desc {
    int type;
    union { int fd; struct { void *handle; const void *name; } win32; const void *sci; } handle;
    unsigned long long size;
    unsigned flags, reserved[16];
};
struct ext_semaphore_desc {
    int type;
    union { int fd; struct { void *handle; const void *name; } win32; const void *sci; } handle;
    unsigned flags, reserved[16];
};
struct gl_resource {
    int id, live, mapped, image;
    unsigned object, flags;
    devptr ptr;
    struct array *array;
};
static devptr next_ext_address = 0x600000000000ull;
static const char *ext_name(const struct ext_import *x, char *buf) {
    sprintf(buf, "%c%d", x->semaphore ? 'y' : 'x', x->id);
    return buf;
}
static int ext_stale(const char *call, const struct ext_import *x, int semaphore) {
    if (x && x->live && x->semaphore == semaphore) return 0;
    note("!stale %s %p", call, (const void *)x);
    return 1;
}
static struct ext_import *ext_new(int fd, unsigned type, int semaphore) {
    struct ext_import *x = calloc(1, sizeof *x);
    pthread_mutex_lock(&lock);
    x->id = next_id++;
    pthread_mutex_unlock(&lock);
    x->live = 1;
    x->fd = fd;
    x->type = type;
    x->semaphore = semaphore;
    return x;
}
int cuImportExternalMemory(void **out, const struct ext_memory_desc *d) {
    char b[16];
    struct stat st;
    if (!current) return 201;
    if (fcntl(d->handle.fd, F_GETFD) == -1) {
        note("cuImportExternalMemory fd=%d -> 1 (not an open descriptor)", d->handle.fd);
        return 1;
    }
    if (fstat(d->handle.fd, &st) == 0 && S_ISREG(st.st_mode)
        && (unsigned long long)st.st_size < d->size) {
        note("cuImportExternalMemory fd=%d size=%llu -> 1 (the file has %lld bytes)", d->handle.fd,
             d->size, (long long)st.st_size);
        return 1;
    }
    struct ext_import *x = ext_new(d->handle.fd, (unsigned)d->type, 0);
    x->size = d->size;
    x->flags = d->flags;
    *out = x;
    note("cuImportExternalMemory type=%d fd=%d size=%llu flags=%u -> %s", d->type, d->handle.fd,
         d->size, d->flags, ext_name(x, b));
    return 0;
}
int cuExternalMemoryGetMappedBuffer(devptr *ptr, void *memory, const unsigned long long *desc) {
    char b[16];
    struct ext_import *x = memory;
    unsigned long long offset = desc[0], size = desc[1];
    if (ext_stale("cuExternalMemoryGetMappedBuffer", x, 0)) return 400;
    if (offset + size > x->size || size == 0) {
        note("cuExternalMemoryGetMappedBuffer %s offset=%llu size=%llu -> 1", ext_name(x, b),
             offset, size);
        return 1;
    }
    if (modeled()) {
        M_LOCK;
        *ptr = alloc_range(size, NULL);
        M_UNLOCK;
    } else {
        pthread_mutex_lock(&lock);
        *ptr = next_ext_address;
        next_ext_address += (size + 0xfff) & ~0xfffull;
        pthread_mutex_unlock(&lock);
    }
    note("cuExternalMemoryGetMappedBuffer %s offset=%llu size=%llu -> %#llx", ext_name(x, b),
         offset, size, *ptr);
    return 0;
}
static int ext_destroy(const char *call, struct ext_import *x, int semaphore) {
    char b[16];
    if (ext_stale(call, x, semaphore)) return 400;
    x->live = 0;
    close(x->fd);
    note("%s %s", call, ext_name(x, b));
    return 0;
}
int cuDestroyExternalMemory(void *memory) {
    return ext_destroy("cuDestroyExternalMemory", memory, 0);
}
int cuImportExternalSemaphore(void **out, const struct ext_semaphore_desc *d) {
    char b[16];
    if (!current) return 201;
    if (fcntl(d->handle.fd, F_GETFD) == -1) {
        note("cuImportExternalSemaphore fd=%d -> 1 (not an open descriptor)", d->handle.fd);
        return 1;
    }
    struct ext_import *x = ext_new(d->handle.fd, (unsigned)d->type, 1);
    x->flags = d->flags;
    *out = x;
    note("cuImportExternalSemaphore type=%d fd=%d -> %s", d->type, d->handle.fd, ext_name(x, b));
    return 0;
}
/* A signal or a wait of one semaphore: the parameters' first field is the fence value. */
static int ext_semaphore_op(const char *call, void *const *semaphores, const void *params,
                            unsigned count, void *s) {
    char b[16], c[16], line[128];
    if (count != 1) return 1;
    struct ext_import *x = semaphores[0];
    if (ext_stale(call, x, 1)) return 400;
    unsigned long long value = *(const unsigned long long *)params;
    snprintf(line, sizeof line, "%s %s value=%llu", call, ext_name(x, b), value);
    if (modeled()) return m_use(line, s, G_EMPTY, 0, 0, 0);
    note("%s on %s", line, name(s, c));
    return 0;
}
int cuSignalExternalSemaphoresAsync(void *const *semaphores, const void *params, unsigned count,
                                    void *s) {
    return ext_semaphore_op("cuSignalExternalSemaphoresAsync", semaphores, params, count, s);
}
int cuWaitExternalSemaphoresAsync(void *const *semaphores, const void *params, unsigned count,
                                  void *s) {
    return ext_semaphore_op("cuWaitExternalSemaphoresAsync", semaphores, params, count, s);
}
int cuDestroyExternalSemaphore(void *semaphore) {
    return ext_destroy("cuDestroyExternalSemaphore", semaphore, 1);
}

static struct gl_resource *gl_new(unsigned object, unsigned flags, int image) {
    struct gl_resource *g = calloc(1, sizeof *g);
    pthread_mutex_lock(&lock);
    g->id = next_id++;
    pthread_mutex_unlock(&lock);
    g->live = 1;
    g->object = object;
    g->flags = flags;
    g->image = image;
    return g;
}
int cuGraphicsGLRegisterBuffer(void **out, unsigned buffer, unsigned flags) {
    if (!current) return 201;
    struct gl_resource *g = gl_new(buffer, flags, 0);
    *out = g;
    note("cuGraphicsGLRegisterBuffer buffer=%u flags=%u -> g%d", buffer, flags, g->id);
    return 0;
}
int cuGraphicsGLRegisterImage(void **out, unsigned image, unsigned target, unsigned flags) {
    if (!current) return 201;
    struct gl_resource *g = gl_new(image, flags, 1);
    struct array3d_desc d = {.width = 16, .height = 8, .format = 0x03, .channels = 1};
    g->array = new_array(&d, ARRAY);
    *out = g;
    note("cuGraphicsGLRegisterImage image=%u target=%#x flags=%u -> g%d", image, target, flags,
         g->id);
    return 0;
}
static int gl_stale(const char *call, const struct gl_resource *g) {
    if (g && g->live) return 0;
    note("!stale %s %p", call, (const void *)g);
    return 1;
}
int cuGraphicsUnregisterResource(void *resource) {
    struct gl_resource *g = resource;
    if (gl_stale("cuGraphicsUnregisterResource", g)) return 400;
    if (g->mapped) note("!unregister-mapped g%d", g->id);
    g->live = 0;
    note("cuGraphicsUnregisterResource g%d", g->id);
    return 0;
}
static int gl_map(const char *call, unsigned count, void **resources, void *s, int map) {
    char b[16], line[96];
    if (count != 1) return 1;
    struct gl_resource *g = resources[0];
    if (gl_stale(call, g)) return 400;
    if (g->mapped == map) {
        int r = map ? 208 : 211;
        note("%s g%d -> %d", call, g->id, r);
        return r;
    }
    snprintf(line, sizeof line, "%s g%d", call, g->id);
    if (modeled()) {
        int r = m_use(line, s, G_EMPTY, 0, 0, 0);
        if (r) return r;
    } else {
        note("%s on %s", line, name(s, b));
    }
    g->mapped = map;
    if (!g->image) {
        size_t bytes = setting("STANDIN_GL_BYTES", 4096);
        if (map && modeled()) {
            M_LOCK;
            g->ptr = alloc_range(bytes, NULL);
            M_UNLOCK;
        } else if (map) {
            pthread_mutex_lock(&lock);
            g->ptr = next_ext_address;
            next_ext_address += (bytes + 0xfff) & ~(size_t)0xfff;
            pthread_mutex_unlock(&lock);
        } else if (modeled()) {
            M_LOCK;
            free_range(call, g->ptr);
            M_UNLOCK;
        }
    }
    return 0;
}
int cuGraphicsMapResources(unsigned count, void **resources, void *s) {
    return gl_map("cuGraphicsMapResources", count, resources, s, 1);
}
int cuGraphicsUnmapResources(unsigned count, void **resources, void *s) {
    return gl_map("cuGraphicsUnmapResources", count, resources, s, 0);
}
int cuGraphicsResourceGetMappedPointer_v2(devptr *ptr, size_t *size, void *resource) {
    struct gl_resource *g = resource;
    if (gl_stale("cuGraphicsResourceGetMappedPointer", g)) return 400;
    if (!g->mapped || g->image) return g->image ? 1 : 211;
    *ptr = g->ptr;
    *size = setting("STANDIN_GL_BYTES", 4096);
    note("cuGraphicsResourceGetMappedPointer g%d -> %#llx size=%zu", g->id, *ptr, *size);
    return 0;
}
int cuGraphicsSubResourceGetMappedArray(void **array, void *resource, unsigned index,
                                        unsigned level) {
    char b[16];
    struct gl_resource *g = resource;
    if (gl_stale("cuGraphicsSubResourceGetMappedArray", g)) return 400;
    if (!g->mapped || !g->image) return g->image ? 211 : 1;
    if (index || level) return 1;
    *array = g->array;
    note("cuGraphicsSubResourceGetMappedArray g%d -> %s", g->id, tex_name(g->array, b));
    return 0;
}
#endif
