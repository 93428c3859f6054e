/* A stand-in NVTX tool, for cuda-core's `nvtx` tests (feature `nvtx`): what a profiler such as
 * Nsight Systems is to a program's NVTX calls. The test runs a child process with
 * NVTX_INJECTION64_PATH naming this library; the program's first NVTX call loads it and calls
 * InitializeInjectionNvtx2, which fetches the callbacks export table and puts a function of its
 * own into every slot of the core and CUDA modules. Each function writes one line into a log,
 * which the test reads back through nvtx_tool_log(). The types below are written from NVTX 3's
 * headers (nvToolsExt.h, nvtxDetail/nvtxTypes.h): enum values and structure layouts.
 *
 * Log lines (TID: the calling thread's id, from gettid):
 *   init version=V callbacks=BYTES version_info=BYTES    the export tables as the tool saw them
 *   module M size N                                        GetModuleFunctionTable's answers
 *   push TID MESSAGE / pushEx TID <attributes> MESSAGE     nvtxRangePushA / nvtxRangePushEx
 *   pop TID
 *   start TID ID MESSAGE / startEx TID ID <attributes> MESSAGE
 *   end TID ID
 *   mark TID MESSAGE / markEx TID <attributes> MESSAGE
 *   category N NAME
 *   thread ARG TID NAME                                    nvtxNameOsThreadA(ARG, NAME) on TID
 *   device N NAME / context 0xP NAME / stream 0xP NAME / event 0xP NAME
 *   domain 0xP NAME, and dpush/dpop/dstart/dend/dmark/dcategory with the domain first
 *   unexpected NAME                                        a slot this crate must not call
 * <attributes>: version=V size=S category=C colortype=T color=0xARGB payloadtype=P msgtype=M
 *
 * NVTX_TOOL_FAIL=1 makes InitializeInjectionNvtx2 fill the slots and then return 0 (failure):
 * the program must then empty every slot and call none of them. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef void (*nvtx_function)(void);
typedef const void *(*get_export_table_t)(uint32_t id);

typedef struct {
    size_t struct_size;
    int (*get_module_function_table)(int module, nvtx_function ***out_table,
                                     unsigned int *out_size);
} callbacks_t;

typedef struct {
    size_t struct_size;
    uint32_t version;
    uint32_t reserved0;
    void (*set_injection_nvtx_version)(uint32_t version);
} version_info_t;

/* nvtxEventAttributes_v2 */
typedef struct {
    uint16_t version;
    uint16_t size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type;
    int32_t reserved0;
    union { uint64_t u64; int64_t i64; double d; } payload;
    int32_t message_type;
    union { const char *ascii; const void *unicode; const void *registered; } message;
} attributes_t;

enum { MODULE_CORE = 1, MODULE_CUDA = 2, MODULE_CORE2 = 5 };

static char log_text[1 << 20];
static size_t log_len;
static int log_full;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

static void note(const char *format, ...) {
    char line[4096];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line, format, args);
    va_end(args);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    pthread_mutex_lock(&log_lock);
    if (log_len + (size_t)n + 2 < sizeof log_text) {
        memcpy(log_text + log_len, line, (size_t)n);
        log_len += (size_t)n;
        log_text[log_len++] = '\n';
        log_text[log_len] = 0;
    } else {
        log_full = 1;
    }
    pthread_mutex_unlock(&log_lock);
}

const char *nvtx_tool_log(void) { return log_text; }
int nvtx_tool_log_full(void) { return log_full; }
void nvtx_tool_log_clear(void) {
    pthread_mutex_lock(&log_lock);
    log_len = 0;
    log_text[0] = 0;
    pthread_mutex_unlock(&log_lock);
}

static long tid(void) { return (long)syscall(SYS_gettid); }

static const char *text(const char *message) { return message ? message : "(null)"; }

/* The attributes as one word list, then the ASCII message (or a note of another kind). */
static void note_attributes(const char *what, const char *prefix, const attributes_t *a) {
    if (!a) {
        note("%s %s(null attributes)", what, prefix);
        return;
    }
    note("%s %sversion=%u size=%u category=%u colortype=%d color=0x%08x payloadtype=%d "
         "msgtype=%d %s",
         what, prefix, a->version, a->size, a->category, a->color_type, a->color,
         a->payload_type, a->message_type,
         a->message_type == 1 ? text(a->message.ascii) : "(not ascii)");
}

/* ---- core ---- */

static __thread int depth;
static uint64_t next_id = 0x5500000000ull; /* above 32 bits: a truncated id shows */
static pthread_mutex_t id_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t new_id(void) {
    pthread_mutex_lock(&id_lock);
    uint64_t id = ++next_id;
    pthread_mutex_unlock(&id_lock);
    return id;
}

static void mark_ex(const attributes_t *a) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%ld ", tid());
    note_attributes("markEx", prefix, a);
}
static void mark_a(const char *m) { note("mark %ld %s", tid(), text(m)); }
static uint64_t range_start_ex(const attributes_t *a) {
    uint64_t id = new_id();
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%ld %llu ", tid(), (unsigned long long)id);
    note_attributes("startEx", prefix, a);
    return id;
}
static uint64_t range_start_a(const char *m) {
    uint64_t id = new_id();
    note("start %ld %llu %s", tid(), (unsigned long long)id, text(m));
    return id;
}
static void range_end(uint64_t id) { note("end %ld %llu", tid(), (unsigned long long)id); }
static int range_push_ex(const attributes_t *a) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%ld ", tid());
    note_attributes("pushEx", prefix, a);
    return depth++;
}
static int range_push_a(const char *m) {
    note("push %ld %s", tid(), text(m));
    return depth++;
}
static int range_pop(void) {
    note("pop %ld", tid());
    return --depth;
}
static void name_category_a(uint32_t category, const char *name) {
    note("category %u %s", category, text(name));
}
static void name_os_thread_a(uint32_t thread, const char *name) {
    note("thread %u %ld %s", thread, tid(), text(name));
}

/* The wide-string calls: this crate sends A strings only. */
static void mark_w(const void *m) { (void)m; note("unexpected nvtxMarkW"); }
static uint64_t range_start_w(const void *m) { (void)m; note("unexpected nvtxRangeStartW"); return 0; }
static int range_push_w(const void *m) { (void)m; note("unexpected nvtxRangePushW"); return -1; }
static void name_category_w(uint32_t c, const void *n) { (void)c; (void)n; note("unexpected nvtxNameCategoryW"); }
static void name_os_thread_w(uint32_t t, const void *n) { (void)t; (void)n; note("unexpected nvtxNameOsThreadW"); }

/* ---- CUDA ---- */

static void name_cu_device_a(int device, const char *name) { note("device %d %s", device, text(name)); }
static void name_cu_context_a(void *context, const char *name) { note("context %p %s", context, text(name)); }
static void name_cu_stream_a(void *stream, const char *name) { note("stream %p %s", stream, text(name)); }
static void name_cu_event_a(void *event, const char *name) { note("event %p %s", event, text(name)); }
static void name_cu_device_w(int d, const void *n) { (void)d; (void)n; note("unexpected nvtxNameCuDeviceW"); }
static void name_cu_context_w(void *c, const void *n) { (void)c; (void)n; note("unexpected nvtxNameCuContextW"); }
static void name_cu_stream_w(void *s, const void *n) { (void)s; (void)n; note("unexpected nvtxNameCuStreamW"); }
static void name_cu_event_w(void *e, const void *n) { (void)e; (void)n; note("unexpected nvtxNameCuEventW"); }

/* ---- core2: domains ---- */

static char domains[4][64]; /* a domain handle is the address of its name here */
static int domain_count;

static void *domain_create_a(const char *name) {
    pthread_mutex_lock(&log_lock);
    int i = domain_count < 4 ? domain_count++ : 3;
    pthread_mutex_unlock(&log_lock);
    snprintf(domains[i], sizeof domains[i], "%s", text(name));
    note("domain %p %s", (void *)domains[i], text(name));
    return domains[i];
}
static void domain_mark_ex(void *d, const attributes_t *a) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%p %ld ", d, tid());
    note_attributes("dmark", prefix, a);
}
static uint64_t domain_range_start_ex(void *d, const attributes_t *a) {
    uint64_t id = new_id();
    char prefix[96];
    snprintf(prefix, sizeof prefix, "%p %ld %llu ", d, tid(), (unsigned long long)id);
    note_attributes("dstart", prefix, a);
    return id;
}
static void domain_range_end(void *d, uint64_t id) { note("dend %p %ld %llu", d, tid(), (unsigned long long)id); }
static int domain_range_push_ex(void *d, const attributes_t *a) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%p %ld ", d, tid());
    note_attributes("dpush", prefix, a);
    return depth++;
}
static int domain_range_pop(void *d) {
    note("dpop %p %ld", d, tid());
    return --depth;
}
static void domain_name_category_a(void *d, uint32_t category, const char *name) {
    note("dcategory %p %u %s", d, category, text(name));
}
static void domain_unexpected(void) { note("unexpected core2 call"); }

/* ---- initialisation ---- */

#define F(f) ((nvtx_function)(f))

static nvtx_function core_functions[] = {
    0, F(mark_ex), F(mark_a), F(mark_w), F(range_start_ex), F(range_start_a), F(range_start_w),
    F(range_end), F(range_push_ex), F(range_push_a), F(range_push_w), F(range_pop),
    F(name_category_a), F(name_category_w), F(name_os_thread_a), F(name_os_thread_w),
};
static nvtx_function cuda_functions[] = {
    0, F(name_cu_device_a), F(name_cu_device_w), F(name_cu_context_a), F(name_cu_context_w),
    F(name_cu_stream_a), F(name_cu_stream_w), F(name_cu_event_a), F(name_cu_event_w),
};
static nvtx_function core2_functions[] = {
    0, F(domain_mark_ex), F(domain_range_start_ex), F(domain_range_end),
    F(domain_range_push_ex), F(domain_range_pop), F(domain_unexpected) /* ResourceCreate */,
    F(domain_unexpected) /* ResourceDestroy */, F(domain_name_category_a),
    F(domain_unexpected) /* NameCategoryW */, F(domain_unexpected) /* RegisterStringA */,
    F(domain_unexpected) /* RegisterStringW */, F(domain_create_a),
    F(domain_unexpected) /* CreateW */, F(domain_unexpected) /* Destroy */,
    F(domain_unexpected) /* Initialize */,
};

/* Puts `functions` into the module's slots; 0 when the module's table is not given. */
static int install(const callbacks_t *callbacks, int module, nvtx_function *functions,
                   unsigned int count) {
    nvtx_function **table = 0;
    unsigned int size = 0;
    if (!callbacks->get_module_function_table(module, &table, &size) || !table) {
        note("module %d refused", module);
        return 0;
    }
    note("module %d size %u", module, size);
    for (unsigned int i = 1; i < size && i < count; i++) {
        if (!table[i]) {
            note("module %d slot %u missing", module, i);
            return 0;
        }
        *table[i] = functions[i];
    }
    if (table[size]) note("module %d has no null after its last slot", module);
    return 1;
}

int InitializeInjectionNvtx2(get_export_table_t get_export_table) {
    const callbacks_t *callbacks = (const callbacks_t *)get_export_table(1);
    const version_info_t *version = (const version_info_t *)get_export_table(3);
    if (!callbacks || !version) {
        note("init without export tables");
        return 0;
    }
    note("init version=%u callbacks=%zu version_info=%zu", version->version,
         callbacks->struct_size, version->struct_size);
    if (get_export_table(2) || get_export_table(4)) note("export table 2 or 4 given");
    version->set_injection_nvtx_version(3);
    int ok = install(callbacks, MODULE_CORE, core_functions,
                     sizeof core_functions / sizeof core_functions[0]) &&
             install(callbacks, MODULE_CUDA, cuda_functions,
                     sizeof cuda_functions / sizeof cuda_functions[0]) &&
             install(callbacks, MODULE_CORE2, core2_functions,
                     sizeof core2_functions / sizeof core2_functions[0]);
    /* The modules this crate never calls: their tables only, as a tool asks for them. */
    for (int module = 3; module <= 7; module++) {
        if (module == MODULE_CORE2) continue;
        nvtx_function **table = 0;
        unsigned int size = 0;
        if (callbacks->get_module_function_table(module, &table, &size))
            note("module %d size %u", module, size);
        else
            note("module %d refused", module);
    }
    const char *fail = getenv("NVTX_TOOL_FAIL");
    if (fail && fail[0] == '1') {
        note("init fails on purpose");
        return 0;
    }
    return ok;
}
