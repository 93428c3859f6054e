/* A DLPack consumer in C for cuda-core's tests (tests/dlpack.rs): it declares DLPack 1.x's
 * structs from the specification, reads an exported tensor's fields and data, and releases
 * it through its deleter, as a framework written in C would. Built with the C compiler at
 * run time, loaded with dlopen. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef enum { kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13 } DLDeviceType;
typedef struct { DLDeviceType device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

/* The structs' layout as this compiler lays them out: sizes and offsets, in order. */
size_t consumer_layout(size_t *out, size_t cap) {
    size_t values[] = {
        sizeof(DLPackVersion), sizeof(DLDevice), sizeof(DLDataType), sizeof(DLTensor),
        offsetof(DLTensor, device), offsetof(DLTensor, ndim), offsetof(DLTensor, dtype),
        offsetof(DLTensor, shape), offsetof(DLTensor, strides), offsetof(DLTensor, byte_offset),
        sizeof(DLManagedTensorVersioned), offsetof(DLManagedTensorVersioned, manager_ctx),
        offsetof(DLManagedTensorVersioned, deleter), offsetof(DLManagedTensorVersioned, flags),
        offsetof(DLManagedTensorVersioned, dl_tensor),
    };
    size_t n = sizeof values / sizeof values[0];
    for (size_t i = 0; i < n && i < cap; i++) out[i] = values[i];
    return n;
}

/* Writes the tensor's fields as text:
 * "v1.1 device=2:0 ndim=2 dtype=2:32:1 shape=4,3 strides=1,4 offset=0 flags=0 data=0x..." */
int consumer_describe(const DLManagedTensorVersioned *t, char *out, size_t cap) {
    const DLTensor *d = &t->dl_tensor;
    size_t at = 0;
    at += (size_t)snprintf(out + at, cap - at, "v%u.%u device=%d:%d ndim=%d dtype=%u:%u:%u shape=",
                           t->version.major, t->version.minor, (int)d->device.device_type,
                           d->device.device_id, d->ndim, d->dtype.code, d->dtype.bits,
                           d->dtype.lanes);
    for (int i = 0; i < d->ndim && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%lld", i ? "," : "", (long long)d->shape[i]);
    if (at < cap) at += (size_t)snprintf(out + at, cap - at, " strides=");
    if (d->strides == NULL) {
        if (at < cap) at += (size_t)snprintf(out + at, cap - at, "null");
    } else {
        for (int i = 0; i < d->ndim && at < cap; i++)
            at += (size_t)snprintf(out + at, cap - at, "%s%lld", i ? "," : "",
                                   (long long)d->strides[i]);
    }
    if (at < cap)
        snprintf(out + at, cap - at, " offset=%llu flags=%llu data=%#llx",
                 (unsigned long long)d->byte_offset, (unsigned long long)t->flags,
                 (unsigned long long)(uintptr_t)d->data);
    return 0;
}

/* The element offsets of a tensor's lowest and highest element, from its first. */
static void reach(const DLTensor *d, int64_t *low, int64_t *high) {
    *low = 0;
    *high = 0;
    for (int i = 0; i < d->ndim; i++) {
        int64_t stride = d->strides ? d->strides[i] : 1;
        if (!d->strides)
            for (int j = i + 1; j < d->ndim; j++) stride *= d->shape[j];
        int64_t r = (d->shape[i] - 1) * stride;
        if (r < 0) *low += r; else *high += r;
    }
}

/* Sum over the elements in row-major index order of value * (1 + linear index), for a float32
 * tensor whose first element is at `first` (host-readable). */
static double weighted(const DLTensor *d, const float *first) {
    int64_t count = 1, index[16] = {0};
    for (int i = 0; i < d->ndim; i++) count *= d->shape[i];
    double sum = 0;
    for (int64_t n = 0; n < count; n++) {
        int64_t offset = 0, rest = n;
        for (int i = d->ndim - 1; i >= 0; i--) {
            index[i] = rest % d->shape[i];
            rest /= d->shape[i];
        }
        for (int i = 0; i < d->ndim; i++) {
            int64_t stride = d->strides ? d->strides[i] : 1;
            if (!d->strides)
                for (int j = i + 1; j < d->ndim; j++) stride *= d->shape[j];
            offset += index[i] * stride;
        }
        sum += (double)first[offset] * (double)(n + 1);
    }
    return sum;
}

static int is_f32(const DLTensor *d) {
    return d->dtype.code == 2 && d->dtype.bits == 32 && d->dtype.lanes == 1 && d->ndim <= 16;
}

/* The weighted sum of a float32 tensor of host-readable memory (kDLCPU, kDLCUDAHost,
 * kDLCUDAManaged). Returns 0, or -1 for another tensor. */
int consumer_sum_host(const DLManagedTensorVersioned *t, double *sum) {
    const DLTensor *d = &t->dl_tensor;
    if (!is_f32(d) || d->device.device_type == kDLCUDA) return -1;
    *sum = weighted(d, (const float *)((const char *)d->data + d->byte_offset));
    return 0;
}

/* The weighted sum of a float32 kDLCUDA tensor, copied to the host with the driver this
 * process has loaded (cuMemcpyDtoH_v2, in the calling thread's current context). Returns 0, -1
 * for another tensor, -2 without the driver's function, or the driver's error. */
int consumer_sum_device(const DLManagedTensorVersioned *t, double *sum) {
    const DLTensor *d = &t->dl_tensor;
    if (!is_f32(d) || d->device.device_type != kDLCUDA) return -1;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!cuda) return -2;
    typedef int (*copy_fn)(void *, unsigned long long, size_t);
    copy_fn copy = (copy_fn)dlsym(cuda, "cuMemcpyDtoH_v2");
    if (!copy) { dlclose(cuda); return -2; }
    int64_t low, high;
    reach(d, &low, &high);
    size_t bytes = (size_t)(high - low + 1) * sizeof(float);
    float *host = malloc(bytes);
    unsigned long long first = (unsigned long long)(uintptr_t)d->data + d->byte_offset;
    int status = copy(host, first + (unsigned long long)(low * (int64_t)sizeof(float)), bytes);
    if (status == 0) *sum = weighted(d, host - low);
    free(host);
    dlclose(cuda);
    return status;
}

/* Releases the tensor, as a consumer does when done with it. */
void consumer_release(DLManagedTensorVersioned *t) {
    if (t->deleter) t->deleter(t);
}
