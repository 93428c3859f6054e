/* A stand-in for libcuda.so.1, compiled by the probe's unit tests. It is not CUDA: it answers
 * cuDriverGetVersion with FAKE_VERSION, and exports a handful of other functions so that the
 * tests can see which table fields load, which stay empty, and how errors are named.
 * Build flags: -DFAKE_VERSION=12040 (required), -DFAKE_INIT_STATUS=100 (cuInit's answer),
 * -DFAKE_NO_VERSION (leave cuDriverGetVersion out), -DFAKE_CTX_STATUS=101 (cuCtxGetCurrent's
 * answer), -DFAKE_POP_STATUS=201 (cuCtxPopCurrent's answer). */
#include <stddef.h>

#ifndef FAKE_INIT_STATUS
#define FAKE_INIT_STATUS 0
#endif

#ifndef FAKE_CTX_STATUS
#define FAKE_CTX_STATUS 0
#endif

#ifndef FAKE_NO_VERSION
int cuDriverGetVersion(int *version) { *version = FAKE_VERSION; return 0; }
#endif

int cuInit(unsigned flags) { (void)flags; return FAKE_INIT_STATUS; }

int cuDeviceGetCount(int *count) { *count = 3; return 0; }

/* 101 is CUDA_ERROR_INVALID_DEVICE. */
int cuDeviceGet(int *device, int ordinal) {
    if (ordinal < 0 || ordinal >= 3) return 101;
    *device = ordinal;
    return 0;
}

int cuGetErrorName(int error, const char **name) {
    switch (error) {
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return 0;
    default: *name = NULL; return 1;
    }
}

int cuGetErrorString(int error, const char **text) {
    switch (error) {
    case 100: *text = "no CUDA-capable device is detected (stand-in)"; return 0;
    case 101: *text = "invalid device ordinal (stand-in)"; return 0;
    default: *text = NULL; return 1;
    }
}

/* Only the 12.9 header's variant: the 13 table's cuCtxCreate (cuCtxCreate_v4) stays empty. */
static int fake_context;
int cuCtxCreate_v2(void **ctx, unsigned flags, int device) {
    (void)flags; (void)device;
    *ctx = &fake_context;
    return 0;
}

/* The current context: always the stand-in's one context, or FAKE_CTX_STATUS's error. */
int cuCtxGetCurrent(void **ctx) {
    if (FAKE_CTX_STATUS != 0) return FAKE_CTX_STATUS;
    *ctx = &fake_context;
    return 0;
}

/* A context stack of one: push makes `pushed` current, pop answers FAKE_POP_STATUS (after
 * popping); fake_pops counts the pops, for the tests to read. */
#ifndef FAKE_POP_STATUS
#define FAKE_POP_STATUS 0
#endif
int fake_pops;
static int pushed;
int cuCtxPushCurrent_v2(void *ctx) { (void)ctx; pushed = 1; return 0; }
int cuCtxPopCurrent_v2(void **ctx) {
    *ctx = pushed ? &fake_context : NULL;
    pushed = 0;
    fake_pops++;
    return FAKE_POP_STATUS;
}
