// A looping WHILE node beside other work faults (CUDA_ERROR_LAUNCH_FAILED, 719).
//
// Build: nvcc -O2 -arch=sm_90 -rdc=true while_beside_other_work.cu -lcudadevrt -o while_beside
// Run:   ./while_beside W D SECONDS [HIGH]
//   W threads each launch, on a stream of their own, a graph whose WHILE node runs its body
//   LIMIT times (default 37), and check the count; D threads launch a graph from a kernel
//   (fire-and-forget and tail launches) and check it ran; HIGH: one more thread sets the
//   stack limit to HIGH and back, again and again. Environment: LIMIT; ONCE=1 one graph per
//   thread for the whole run (else a new one every 20 launches); SAME=1 every WHILE thread on
//   one stream; KIND=if an IF node set by a kernel instead; PLAIN_KERNEL=N and PLAIN_GRAPH=N
//   threads launching a one-thread kernel, or a one-kernel graph, on streams of their own.
//
// On an H100 80GB HBM3 with driver 580.159.04 (CUDA 13.0), each run of 5-8 s:
//   faulted (719 in the WHILE thread's copy back, then every thread):
//     W=2; W=4; W=2 ONCE=1; W=2 LIMIT=2; W=1 D=1; W=1 PLAIN_KERNEL=1; W=1 PLAIN_GRAPH=1;
//     W=1 ONCE=1 PLAIN_GRAPH=1; W=2 D=2 with or without the stack-limit thread
//   ran clean:
//     W=1 alone (30,600 launches), also with the stack-limit thread; D=1, 2, 4 alone
//     (108,000-136,000 device launches); W=2 SAME=1; W=2 LIMIT=1; W=2 KIND=if (with and
//     without ONCE); W=1 KIND=if PLAIN_GRAPH=1; W=1 D=1 and W=2 under compute-sanitizer's
//     memcheck (which runs one kernel at a time), 0 errors.
// On an H200 with the same driver: W=2 faulted; W=1 PLAIN_KERNEL=1 ran clean for its 5 s.
// So: a WHILE node whose body runs more than once, while other work of the process runs on
// the device from another stream.

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#include <atomic>
#include <chrono>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  printf("FAIL %s:%d %s -> %d %s\n", __FILE__, __LINE__, #x, (int)e_, cudaGetErrorName(e_)); fflush(stdout); exit(2);} } while (0)

__global__ void count(cudaGraphConditionalHandle again, unsigned* n, unsigned limit) {
  if (threadIdx.x == 0 && blockIdx.x == 0) { unsigned now = ++*n; cudaGraphSetConditional(again, now < limit); }
}
__global__ void bump(unsigned* x) { if (threadIdx.x == 0) atomicAdd(x, 1u); }
__global__ void launch_graph(cudaGraphExec_t exec, int tail, int* status) {
  if (threadIdx.x == 0) *status = (int)cudaGraphLaunch(exec, tail ? cudaStreamGraphTailLaunch : cudaStreamGraphFireAndForget);
}

static cudaError_t add_node(cudaGraphNode_t* n, cudaGraph_t g, cudaGraphNodeParams* p) {
#if CUDART_VERSION >= 13000
  return cudaGraphAddNode(n, g, nullptr, nullptr, 0, p);
#else
  return cudaGraphAddNode(n, g, nullptr, 0, p);
#endif
}

std::atomic<bool> stop{false};
std::atomic<long> whiles{0}, devlaunches{0}, toggles{0};

static int envi(const char* k, int d) { const char* v = getenv(k); return v ? atoi(v) : d; }
__global__ void set_if(cudaGraphConditionalHandle h, unsigned v) { if (threadIdx.x == 0) cudaGraphSetConditional(h, v); }
__global__ void mark(unsigned* n) { if (threadIdx.x == 0) atomicAdd(n, 1u); }
cudaStream_t shared_stream;

// ONCE=1: one graph for the whole run; SAME=1: all threads on one stream; KIND=if: an IF node
// whose condition a kernel sets to 1 (body adds one: count 1); LIMIT: the WHILE's count.
void while_loop() {
  bool once = envi("ONCE", 0), same = envi("SAME", 0), is_if = getenv("KIND") && !strcmp(getenv("KIND"), "if");
  unsigned limit = is_if ? 1 : envi("LIMIT", 37);
  cudaStream_t s;
  if (same) s = shared_stream; else CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned* n; CK(cudaMalloc(&n, 4));
  while (!stop) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    cudaGraphConditionalHandle h; CK(cudaGraphConditionalHandleCreate(&h, g, is_if ? 0 : 1, cudaGraphCondAssignDefault));
    cudaGraphNode_t setter = nullptr;
    unsigned one = 1;
    void* sargs[] = {&h, &one};
    if (is_if) {
      cudaKernelNodeParams kp = {}; kp.func = (void*)set_if; kp.gridDim = dim3(1); kp.blockDim = dim3(1); kp.kernelParams = sargs;
      CK(cudaGraphAddKernelNode(&setter, g, nullptr, 0, &kp));
    }
    cudaGraphNodeParams cp = {}; cp.type = cudaGraphNodeTypeConditional;
    cp.conditional.handle = h; cp.conditional.type = is_if ? cudaGraphCondTypeIf : cudaGraphCondTypeWhile; cp.conditional.size = 1;
    cudaGraphNode_t node;
#if CUDART_VERSION >= 13000
    CK(cudaGraphAddNode(&node, g, setter ? &setter : nullptr, nullptr, setter ? 1 : 0, &cp));
#else
    CK(cudaGraphAddNode(&node, g, setter ? &setter : nullptr, setter ? 1 : 0, &cp));
#endif
    cudaGraph_t body = cp.conditional.phGraph_out[0];
    void* args[] = {&h, &n, &limit};
    void* margs[] = {&n};
    cudaKernelNodeParams kp = {}; kp.gridDim = dim3(1); kp.blockDim = dim3(1);
    if (is_if) { kp.func = (void*)mark; kp.kernelParams = margs; } else { kp.func = (void*)count; kp.kernelParams = args; }
    cudaGraphNode_t k; CK(cudaGraphAddKernelNode(&k, body, nullptr, 0, &kp));
    cudaGraphExec_t e; CK(cudaGraphInstantiate(&e, g, 0));
    do {
      for (int i = 0; i < 20; i++) {
        CK(cudaMemsetAsync(n, 0, 4, s)); CK(cudaGraphLaunch(e, s));
        unsigned got; CK(cudaMemcpyAsync(&got, n, 4, cudaMemcpyDeviceToHost, s)); CK(cudaStreamSynchronize(s));
        if (got != limit) { printf("WRONG count %u, expected %u\n", got, limit); exit(3); }
        whiles++;
      }
    } while (once && !stop);
    CK(cudaGraphExecDestroy(e)); CK(cudaGraphDestroy(g));
  }
}

void device_launch_loop() {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned* c; int* status; CK(cudaMalloc(&c, 4)); CK(cudaMalloc(&status, 4));
  while (!stop) {
    cudaGraph_t w; CK(cudaGraphCreate(&w, 0));
    void* wa[] = {&c};
    cudaKernelNodeParams kp = {}; kp.func = (void*)bump; kp.gridDim = dim3(1); kp.blockDim = dim3(1); kp.kernelParams = wa;
    cudaGraphNode_t k; CK(cudaGraphAddKernelNode(&k, w, nullptr, 0, &kp));
    cudaGraphExec_t we; CK(cudaGraphInstantiate(&we, w, cudaGraphInstantiateFlagDeviceLaunch));
    CK(cudaGraphUpload(we, s));
    cudaGraphExec_t le[2];
    int tails[2] = {0, 1};
    for (int t = 0; t < 2; t++) {
      cudaGraph_t l; CK(cudaGraphCreate(&l, 0));
      void* la[] = {&we, &tails[t], &status};
      cudaKernelNodeParams lp = {}; lp.func = (void*)launch_graph; lp.gridDim = dim3(1); lp.blockDim = dim3(1); lp.kernelParams = la;
      cudaGraphNode_t ln; CK(cudaGraphAddKernelNode(&ln, l, nullptr, 0, &lp));
      CK(cudaGraphInstantiate(&le[t], l, 0)); CK(cudaGraphDestroy(l));
    }
    CK(cudaMemsetAsync(c, 0, 4, s));
    for (int i = 0; i < 10; i++) {
      CK(cudaGraphLaunch(le[i % 2], s)); CK(cudaStreamSynchronize(s));
      int st; unsigned got;
      CK(cudaMemcpy(&st, status, 4, cudaMemcpyDeviceToHost)); CK(cudaMemcpy(&got, c, 4, cudaMemcpyDeviceToHost));
      if (st != 0 || got != (unsigned)i + 1) { printf("WRONG device launch status %d count %u at %d\n", st, got, i); exit(3); }
      devlaunches++;
    }
    CK(cudaGraphExecDestroy(le[0])); CK(cudaGraphExecDestroy(le[1])); CK(cudaGraphExecDestroy(we)); CK(cudaGraphDestroy(w));
  }
}

void toggler(size_t high) {
  size_t before; CK(cudaDeviceGetLimit(&before, cudaLimitStackSize));
  while (!stop) {
    CK(cudaDeviceSetLimit(cudaLimitStackSize, high));
    CK(cudaDeviceSetLimit(cudaLimitStackSize, before));
    toggles++;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::atomic<long> plains{0};
// A plain kernel on a stream of its own (graph=0), or a one-kernel graph (graph=1), in a loop.
void plain_loop(int graph) {
  cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  unsigned* c; CK(cudaMalloc(&c, 4)); CK(cudaMemset(c, 0, 4));
  cudaGraphExec_t e = nullptr;
  if (graph) {
    cudaGraph_t g; CK(cudaGraphCreate(&g, 0));
    void* a[] = {&c};
    cudaKernelNodeParams kp = {}; kp.func = (void*)bump; kp.gridDim = dim3(1); kp.blockDim = dim3(1); kp.kernelParams = a;
    cudaGraphNode_t k; CK(cudaGraphAddKernelNode(&k, g, nullptr, 0, &kp));
    CK(cudaGraphInstantiate(&e, g, 0));
  }
  while (!stop) {
    for (int i = 0; i < 50; i++) { if (graph) CK(cudaGraphLaunch(e, s)); else bump<<<1, 1, 0, s>>>(c); }
    CK(cudaStreamSynchronize(s)); plains += 50;
  }
}

int main(int argc, char** argv) {
  // stack W D SECONDS [HIGH]: W WHILE-graph threads, D device-launch threads; HIGH: a thread
  // toggles the stack limit between its value and HIGH.
  int W = atoi(argv[1]), D = atoi(argv[2]);
  double seconds = atof(argv[3]);
  size_t high = argc > 4 ? atol(argv[4]) : 0;
  CK(cudaFree(0));
  CK(cudaStreamCreateWithFlags(&shared_stream, cudaStreamNonBlocking));
  std::vector<std::thread> ts;
  for (int i = 0; i < W; i++) ts.emplace_back(while_loop);
  for (int i = 0; i < D; i++) ts.emplace_back(device_launch_loop);
  for (int i = 0; i < envi("PLAIN_KERNEL", 0); i++) ts.emplace_back(plain_loop, 0);
  for (int i = 0; i < envi("PLAIN_GRAPH", 0); i++) ts.emplace_back(plain_loop, 1);
  if (high) ts.emplace_back(toggler, high);
  std::this_thread::sleep_for(std::chrono::milliseconds((long)(seconds * 1000)));
  stop = true;
  for (auto& t : ts) t.join();
  CK(cudaDeviceSynchronize());
  printf("OK W=%d D=%d high=%zu: %ld while launches, %ld device launches, %ld toggles, %ld plain\n", W, D, high, (long)whiles, (long)devlaunches, (long)toggles, (long)plains);
  return 0;
}
