/* Two threads, each on a green context of half the SMs: pool allocations, copies and a
   saxpy launch, as cuda-core's green_contexts example does, in plain driver calls. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#define CK(x) do { CUresult r = (x); if (r) { const char* s; cuGetErrorName(r, &s); \
  fprintf(stderr, "%s:%d %s -> %s\n", __FILE__, __LINE__, #x, s); exit(1); } } while (0)
static CUdevice dev; static CUdevResource groups[2];
static void* work(void* arg) {
  int i = (int)(long)arg; CUdevResourceDesc desc; CUgreenCtx g; CUcontext ctx; CUstream s;
  CUmodule m; CUfunction f; CUmemoryPool pool; CUdeviceptr dx, dy;
  CK(cuDevResourceGenerateDesc(&desc, &groups[i], 1));
  CK(cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
  CK(cuCtxFromGreenCtx(&ctx, g)); CK(cuCtxSetCurrent(ctx));
  CK(cuGreenCtxStreamCreate(&s, g, CU_STREAM_NON_BLOCKING, 0));
  CK(cuModuleLoad(&m, "k.cubin")); CK(cuModuleGetFunction(&f, m, "saxpy"));
  unsigned n = 1u << 24; size_t b = 4ull * n; float a = 1.0f + i;
  float *x = malloc(b), *y = malloc(b), *out = malloc(b);
  for (unsigned k = 0; k < n; k++) { x[k] = k % 7; y[k] = k % 5; }
  CK(cuDeviceGetDefaultMemPool(&pool, dev));
  CK(cuMemAllocFromPoolAsync(&dx, b, pool, s)); CK(cuMemAllocFromPoolAsync(&dy, b, pool, s));
  CK(cuMemcpyHtoDAsync(dx, x, b, s)); CK(cuMemcpyHtoDAsync(dy, y, b, s));
  void* args[] = {&a, &dx, &dy, &n};
  CK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, args, NULL));
  CK(cuMemcpyDtoHAsync(out, dy, b, s)); CK(cuMemFreeAsync(dx, s)); CK(cuMemFreeAsync(dy, s));
  CK(cuStreamSynchronize(s));
  for (unsigned k = 0; k < n; k++) if (out[k] != a * x[k] + y[k]) { fprintf(stderr, "wrong at %u\n", k); exit(2); }
  printf("context %d: saxpy correct\n", i);
  CK(cuStreamDestroy(s)); CK(cuModuleUnload(m)); CK(cuGreenCtxDestroy(g));
  return NULL;
}
int main(int argc, char** argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2; CUdevResource sm, rest; CUcontext primary;
  unsigned count = 2;
  CK(cuInit(0)); CK(cuDeviceGet(&dev, 0)); CK(cuDevicePrimaryCtxRetain(&primary, dev));
  CK(cuCtxSetCurrent(primary));
  CK(cuDeviceGetDevResource(dev, &sm, CU_DEV_RESOURCE_TYPE_SM));
  CK(cuDevSmResourceSplitByCount(groups, &count, &sm, &rest, 0, 64));
  printf("split into %u groups of %u SMs\n", count, groups[0].sm.smCount);
  pthread_t t[2];
  if (threads == 2) {
    for (long i = 0; i < 2; i++) pthread_create(&t[i], NULL, work, (void*)i);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  } else { work((void*)0); work((void*)1); }
  puts("done"); return 0;
}
