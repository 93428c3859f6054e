/* The stand-in driver (cuda-core/tests/standin/libcuda_standin.c) with green contexts added,
 * for test_context.py: built as libcuda.so.1 and loaded in a child process.
 *
 * Device resources are 132 SMs per device; a split rounds each group up to 8 SMs (2 with the
 * ignore-co-scheduling flag, cuda.core's `backfill`); a green context's resources are the sum
 * of the groups it was made from. Every call is logged, as the stand-in logs its own. The
 * CUdevResource struct is 144 bytes in the 12 and 13 headers, its SM member at byte 96. */

#include "../../cuda-core/tests/standin/libcuda_standin.c"

#define GREEN_SMS 132
#define RESOURCE_BYTES 144
#define SM_AT 96

struct green {
    struct object ctx; /* first: the context cuCtxFromGreenCtx gives is the green context */
    int id;
    unsigned sm;
    int destroyed;
};
struct desc { unsigned sm; };
static int green_ids;

static void put_sm(unsigned char *r, unsigned count, unsigned flags) {
    memset(r, 0, RESOURCE_BYTES);
    *(int *)r = 1; /* CU_DEV_RESOURCE_TYPE_SM */
    unsigned *sm = (unsigned *)(r + SM_AT);
    sm[0] = count;
    sm[1] = 8; /* minSmPartitionSize */
    sm[2] = 8; /* smCoscheduledAlignment */
    sm[3] = flags;
}
static unsigned get_sm(const unsigned char *r) { return *(const unsigned *)(r + SM_AT); }
static int is_primary(const void *ctx) {
    return (const struct object *)ctx >= primaries && (const struct object *)ctx < primaries + MAX_DEVICES;
}

int cuDeviceGetDevResource(int device, void *res, int type) {
    note("cuDeviceGetDevResource device=%d", device);
    if (device < 0 || device >= devices()) return 101;
    if (type != 1) return 1;
    put_sm(res, GREEN_SMS, 0);
    return 0;
}
int cuCtxGetDevResource(void *ctx, void *res, int type) {
    note("cuCtxGetDevResource");
    if (!ctx) return 201;
    if (type != 1) return 1;
    put_sm(res, is_primary(ctx) ? GREEN_SMS : ((struct green *)ctx)->sm, 0);
    return 0;
}
int cuDevSmResourceSplitByCount(void *result, unsigned *nb, const void *input, void *remaining,
                                unsigned flags, unsigned min_count) {
    note("cuDevSmResourceSplitByCount groups=%u min=%u flags=%u", *nb, min_count, flags);
    unsigned granularity = (flags & 1) ? 2 : 8;
    if (min_count == 0) return 1;
    unsigned size = (min_count + granularity - 1) / granularity * granularity;
    unsigned available = get_sm(input);
    unsigned n = available / size;
    if (result && n > *nb) n = *nb;
    if (n == 0) return 1;
    for (unsigned i = 0; result && i < n; i++) put_sm((unsigned char *)result + i * RESOURCE_BYTES, size, 0);
    if (remaining) put_sm(remaining, available - n * size, 0);
    *nb = n;
    return 0;
}
int cuDevResourceGenerateDesc(void **desc, void *resources, unsigned n) {
    struct desc *d = calloc(1, sizeof *d);
    for (unsigned i = 0; i < n; i++) d->sm += get_sm((unsigned char *)resources + i * RESOURCE_BYTES);
    note("cuDevResourceGenerateDesc n=%u sm=%u", n, d->sm);
    *desc = d;
    return 0;
}
int cuGreenCtxCreate(void **out, void *desc, int device, unsigned flags) {
    if (device < 0 || device >= devices()) return 101;
    struct green *g = calloc(1, sizeof *g);
    g->ctx.kind = CONTEXT;
    g->ctx.device = device;
    g->ctx.live = 1;
    g->sm = ((struct desc *)desc)->sm;
    g->id = __atomic_add_fetch(&green_ids, 1, __ATOMIC_SEQ_CST);
    note("cuGreenCtxCreate green%d device=%d sm=%u flags=%u", g->id, device, g->sm, flags);
    *out = g;
    return 0;
}
int cuCtxFromGreenCtx(void **ctx, void *green) {
    *ctx = &((struct green *)green)->ctx;
    return 0;
}
int cuGreenCtxDestroy(void *green) {
    struct green *g = green;
    note("cuGreenCtxDestroy green%d", g->id);
    g->destroyed = 1; /* kept: a test may still read what it was */
    return 0;
}
int cuGreenCtxStreamCreate(void **s, void *green, unsigned flags, int priority) {
    struct green *g = green;
    (void)priority;
    if (g->destroyed) return 201;
    struct object *o = make(STREAM, &g->ctx);
    char b[16];
    note("cuGreenCtxStreamCreate %s in green%d flags=%u", name(o, b), g->id, flags);
    *s = o;
    return 0;
}
