/* A stand-in for libcuda.so.1 whose calls cost next to nothing, for the `standin_overhead`
 * example: with the driver's own work taken out, what is left of a call through cuda-core is
 * cuda-core's. It is not CUDA: every call succeeds at once and does nothing, with one device,
 * one context, and three kernels named as the benches' empty kernels.
 *
 * CUDA_CORE_STANDIN_EVICT=BYTES makes each call that stands for real driver work (event,
 * stream, memory, copy and launch calls; not the context reads) first write one byte in every
 * 64 of a BYTES-long array, as a real driver's call pushes the caller's data out of the
 * nearest caches: what a wrapper then pays for its own memory accesses shows. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

static int context, stream, event, pool, library, kernels[3];
static void *current = NULL;

int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDeviceGetCount(int *count) { *count = 1; return 0; }
int cuDeviceGet(int *device, int ordinal) { if (ordinal != 0) return 101; *device = 0; return 0; }
int cuDeviceGetName(char *name, int len, int device) {
    (void)device;
    strncpy(name, "cuda-core stand-in driver", (size_t)len);
    if (len > 0) name[len - 1] = 0;
    return 0;
}
int cuDeviceGetAttribute(int *value, int attribute, int device) {
    (void)device;
    *value = attribute == 75 ? 9 : attribute == 76 ? 0 : 1024; /* compute capability 9.0 */
    return 0;
}
int cuDeviceTotalMem_v2(size_t *bytes, int device) { (void)device; *bytes = (size_t)1 << 34; return 0; }
int cuDevicePrimaryCtxRetain(void **ctx, int device) { (void)device; *ctx = &context; return 0; }
int cuDevicePrimaryCtxRelease_v2(int device) { (void)device; return 0; }
int cuCtxGetCurrent(void **ctx) { *ctx = current; return 0; }
int cuCtxSetCurrent(void *ctx) { current = ctx; return 0; }
int cuCtxPushCurrent_v2(void *ctx) { current = ctx; return 0; }
int cuCtxPopCurrent_v2(void **ctx) { *ctx = current; return 0; }
int cuCtxGetDevice(int *device) { if (!current) return 201; *device = 0; return 0; }
int cuCtxGetStreamPriorityRange(int *least, int *greatest) { *least = 0; *greatest = -5; return 0; }
int cuStreamCreate(void **s, unsigned flags) { (void)flags; *s = &stream; return 0; }
int cuStreamCreateWithPriority(void **s, unsigned flags, int priority) {
    (void)flags; (void)priority; *s = &stream; return 0;
}
int cuStreamDestroy_v2(void *s) { (void)s; return 0; }
int cuStreamSynchronize(void *s) { evict(); (void)s; return 0; }
int cuEventCreate(void **e, unsigned flags) { evict(); (void)flags; *e = &event; return 0; }
int cuEventDestroy_v2(void *e) { evict(); (void)e; return 0; }
int cuEventRecord(void *e, void *s) { evict(); (void)e; (void)s; return 0; }
int cuEventQuery(void *e) { evict(); (void)e; return 0; }
int cuEventSynchronize(void *e) { evict(); (void)e; return 0; }
int cuEventElapsedTime_v2(float *ms, void *a, void *b) { evict(); (void)a; (void)b; *ms = 1.0f; return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { return cuEventElapsedTime_v2(ms, a, b); }
int cuDeviceGetDefaultMemPool(void **p, int device) { (void)device; *p = &pool; return 0; }
int cuMemAllocFromPoolAsync(unsigned long long *ptr, size_t size, void *p, void *s) { evict();
    (void)size; (void)p; (void)s; *ptr = 0x100000; return 0;
}
int cuMemFreeAsync(unsigned long long ptr, void *s) { evict(); (void)ptr; (void)s; return 0; }
int cuMemcpyHtoDAsync_v2(unsigned long long dst, const void *src, size_t n, void *s) { evict();
    (void)dst; (void)src; (void)n; (void)s; return 0;
}
int cuLibraryLoadData(void **lib, const void *code, void *o1, void *o2, unsigned n1, void *o3,
                      void *o4, unsigned n2) {
    (void)code; (void)o1; (void)o2; (void)n1; (void)o3; (void)o4; (void)n2;
    *lib = &library; return 0;
}
int cuLibraryUnload(void *lib) { (void)lib; return 0; }
/* empty0, empty4 and empty16: 0, 4 and 16 parameters. */
int cuLibraryGetKernel(void **kernel, void *lib, const char *name) {
    (void)lib;
    if (strcmp(name, "empty0") == 0) *kernel = &kernels[0];
    else if (strcmp(name, "empty4") == 0) *kernel = &kernels[1];
    else if (strcmp(name, "empty16") == 0) *kernel = &kernels[2];
    else return 500; /* CUDA_ERROR_NOT_FOUND */
    return 0;
}
int cuKernelGetAttribute(int *value, int attribute, void *kernel, int device) {
    (void)attribute; (void)kernel; (void)device; *value = 1024; return 0;
}
/* Pointers first (8 bytes), then ints (4 bytes): 3 + 1 for empty4, 4 + 12 for empty16. */
int cuKernelGetParamInfo(void *kernel, size_t index, size_t *offset, size_t *size) {
    size_t count = kernel == &kernels[0] ? 0 : kernel == &kernels[1] ? 4 : 16;
    size_t pointers = kernel == &kernels[1] ? 3 : 4;
    if (index >= count) return 1; /* CUDA_ERROR_INVALID_VALUE: past the last */
    *size = index < pointers ? 8 : 4;
    *offset = index < pointers ? index * 8 : pointers * 8 + (index - pointers) * 4;
    return 0;
}
int cuLaunchKernelEx(const void *config, void *f, void **params, void **extra) { evict();
    (void)config; (void)f; (void)params; (void)extra;
    return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                   unsigned bz, unsigned shared, void *s, void **params, void **extra) { evict();
    (void)f; (void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)shared; (void)s;
    (void)params; (void)extra;
    return 0;
}
/* Tensor maps: the encode fills the descriptor, as the driver's does (the driver's own work,
 * checks and bit packing, is not done here). */
int cuTensorMapEncodeTiled(unsigned long long *map, unsigned type, unsigned rank, void *address,
                           const unsigned long long *dims, const unsigned long long *strides,
                           const unsigned *box, const unsigned *estrides, unsigned interleave,
                           unsigned swizzle, unsigned l2, unsigned oob) {
    evict();
    (void)dims; (void)strides; (void)box; (void)estrides;
    map[0] = (unsigned long long)(size_t)address;
    map[1] = rank | type << 8 | interleave << 16 | swizzle << 20 | l2 << 24 | oob << 28;
    for (int i = 2; i < 16; i++) map[i] = 0;
    return 0;
}
