/* The green_contexts example's driver calls, made directly, to tell whether compute-sanitizer's
 * initcheck stops on green contexts themselves or on cuda-core: two threads each make a green
 * context on half of the SMs, a stream in it, copy 64 MiB in and out through the default memory
 * pool, synchronise and tear down. No kernel: a kernel needs a compiler, and the split and the
 * contexts are what the example does before initcheck stopped.
 *
 *   gcc -O2 -I/usr/local/cuda/include green_contexts_raw.c -o green_contexts_raw \
 *       -L/usr/local/cuda/lib64/stubs -lcuda -lpthread
 *   compute-sanitizer --tool initcheck --error-exitcode 9 ./green_contexts_raw [threads]
 *
 * With an argument of 0 the two halves run one after the other on the main thread. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                  \
    do {                                                                             \
        CUresult status_ = (call);                                                   \
        if (status_ != CUDA_SUCCESS) {                                               \
            const char *name_ = NULL;                                                \
            cuGetErrorName(status_, &name_);                                         \
            fprintf(stderr, "%s failed: %s (%d)\n", #call, name_ ? name_ : "?", status_); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

static CUdevice device;
static CUcontext primary;
static CUdevResource groups[2];

static void *half(void *arg) {
    int i = (int)(long)arg;
    CHECK(cuCtxSetCurrent(primary));
    CUdevResourceDesc desc;
    CHECK(cuDevResourceGenerateDesc(&desc, &groups[i], 1));
    CUgreenCtx green;
    CHECK(cuGreenCtxCreate(&green, desc, device, CU_GREEN_CTX_DEFAULT_STREAM));
    CUcontext context;
    CHECK(cuCtxFromGreenCtx(&context, green));
    CUstream stream;
    CHECK(cuGreenCtxStreamCreate(&stream, green, CU_STREAM_NON_BLOCKING, 0));
    CUmemoryPool pool;
    CHECK(cuDeviceGetDefaultMemPool(&pool, device));
    size_t bytes = (size_t)64 << 20;
    char *host = malloc(bytes);
    memset(host, i + 1, bytes);
    CUdeviceptr buffer;
    CHECK(cuCtxPushCurrent(context));
    CHECK(cuMemAllocFromPoolAsync(&buffer, bytes, pool, stream));
    CHECK(cuMemcpyHtoDAsync(buffer, host, bytes, stream));
    CHECK(cuMemcpyDtoHAsync(host, buffer, bytes, stream));
    CHECK(cuMemFreeAsync(buffer, stream));
    CHECK(cuStreamSynchronize(stream));
    CUcontext popped;
    CHECK(cuCtxPopCurrent(&popped));
    int wrong = 0;
    for (size_t b = 0; b < bytes; b++) wrong += host[b] != (char)(i + 1);
    printf("half %d: green context on %u SMs, 64 MiB round trip: %s\n", i, groups[i].sm.smCount,
           wrong ? "WRONG" : "correct");
    free(host);
    CHECK(cuStreamDestroy(stream));
    CHECK(cuGreenCtxDestroy(green));
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc < 2 || atoi(argv[1]) != 0;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&primary, device));
    CHECK(cuCtxSetCurrent(primary));
    CUdevResource sms, remaining;
    CHECK(cuDeviceGetDevResource(device, &sms, CU_DEV_RESOURCE_TYPE_SM));
    unsigned count = 2, half_sms = sms.sm.smCount / 2 / 8 * 8;
    CHECK(cuDevSmResourceSplitByCount(groups, &count, &sms, &remaining, 0, half_sms));
    printf("%u SMs split into %u groups of %u and %u\n", sms.sm.smCount, count,
           groups[0].sm.smCount, groups[1].sm.smCount);
    if (threads) {
        pthread_t t[2];
        for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, half, (void *)i);
        for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    } else {
        half((void *)0);
        half((void *)1);
    }
    CHECK(cuDevicePrimaryCtxRelease(device));
    printf("done\n");
    return 0;
}
