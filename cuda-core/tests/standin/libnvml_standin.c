/* The stand-in for libnvidia-ml.so.1, for cuda-core's system tests without a GPU
 * (tests/system.rs): compiled at run time by tests/common/standin.rs and loaded through
 * CUDA_CORE_NVML_PATH in a child process. It is not NVML: it answers fixed values, as nvml.h
 * lays them out, for two GPUs. GPU 0 answers every query below; GPU 1 answers
 * NVML_ERROR_NOT_SUPPORTED to each but its UUID and its events, as a GPU that lacks them does.
 *
 * GPU 0: persistence mode on; CPU affinity {2, 3, 64, 191} within its node and
 * {0, 1, 2, 3, 64, 65, 191} within its socket; memory affinity nodes {1, 65}, socket {0};
 * InfoROM image G520.0200.00.05, OEM object 1.1, ECC object 7.0, no power object; addressing
 * mode ATS (NVML_ERROR_ARGUMENT_VERSION_MISMATCH unless the struct's version is
 * nvmlDeviceAddressingMode_v1); C2C on; a display connected, none active; MIG on now, off after
 * a reset, at most 3 MIG devices of which slot 1 holds one; events XID, clock and single-bit
 * ECC storm (a kind nvml-wrapper does not name). GPU 1: events XID only.
 *
 * Events: a set records what it is registered for on each GPU (a kind a GPU does not support
 * refuses the registration). A wait answers an event posted with standin_nvml_post whose GPU
 * and kind the set is registered for, else sleeps its timeout and answers
 * NVML_ERROR_TIMEOUT; standin_nvml_early(n) makes the next n waits answer NVML_ERROR_TIMEOUT at
 * once, as a wait a signal interrupts does.
 *
 * Build-time: -DSTANDIN_NVML_MINIMAL exports only what loading and naming GPUs takes (init,
 * shutdown, count, handles, UUIDs): an NVML that lacks every other function. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned int nvmlReturn_t;
enum {
    SUCCESS = 0,
    INVALID_ARGUMENT = 2,
    NOT_SUPPORTED = 3,
    NOT_FOUND = 6,
    TIMEOUT = 10,
    ARGUMENT_VERSION_MISMATCH = 25,
};

struct device {
    int index; /* 0 and 1: the GPUs; 2: GPU 0's MIG device */
};
static struct device devices[3] = {{0}, {1}, {2}};

nvmlReturn_t nvmlInit_v2(void) { return SUCCESS; }
nvmlReturn_t nvmlShutdown(void) { return SUCCESS; }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count) {
    *count = 2;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, struct device **device) {
    if (index >= 2) return INVALID_ARGUMENT;
    *device = &devices[index];
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(struct device *device, char *uuid, unsigned length) {
    if (device->index == 2)
        snprintf(uuid, length, "MIG-standin-0");
    else
        snprintf(uuid, length, "GPU-standin-%d", device->index);
    return SUCCESS;
}

#ifndef STANDIN_NVML_MINIMAL

/* Where GPU 1 answers that it does not support the query. */
#define ONLY_GPU_0(device) \
    do { \
        if ((device)->index != 0) return NOT_SUPPORTED; \
    } while (0)

nvmlReturn_t nvmlDeviceGetPersistenceMode(struct device *device, int *mode) {
    ONLY_GPU_0(device);
    *mode = 1; /* NVML_FEATURE_ENABLED */
    return SUCCESS;
}

/* Sets the bits of `ids` (ended by -1) in `set`, of `words` unsigned longs. */
static void set_bits(unsigned long *set, unsigned words, const int *ids) {
    memset(set, 0, words * sizeof *set);
    for (; *ids >= 0; ids++) {
        unsigned word = (unsigned)*ids / (8 * sizeof *set);
        if (word < words) set[word] |= 1UL << ((unsigned)*ids % (8 * sizeof *set));
    }
}

nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(struct device *device, unsigned words,
                                                 unsigned long *set, unsigned scope) {
    static const int node[] = {2, 3, 64, 191, -1};
    static const int socket[] = {0, 1, 2, 3, 64, 65, 191, -1};
    ONLY_GPU_0(device);
    if (scope > 1 || words == 0) return INVALID_ARGUMENT;
    set_bits(set, words, scope == 0 ? node : socket);
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCpuAffinity(struct device *device, unsigned words, unsigned long *set) {
    return nvmlDeviceGetCpuAffinityWithinScope(device, words, set, 0);
}

nvmlReturn_t nvmlDeviceGetMemoryAffinity(struct device *device, unsigned words,
                                         unsigned long *set, unsigned scope) {
    static const int node[] = {1, 65, -1};
    static const int socket[] = {0, -1};
    ONLY_GPU_0(device);
    if (scope > 1 || words == 0) return INVALID_ARGUMENT;
    set_bits(set, words, scope == 0 ? node : socket);
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetInforomImageVersion(struct device *device, char *version,
                                              unsigned length) {
    ONLY_GPU_0(device);
    snprintf(version, length, "G520.0200.00.05");
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetInforomVersion(struct device *device, int object, char *version,
                                         unsigned length) {
    ONLY_GPU_0(device);
    switch (object) {
    case 0: snprintf(version, length, "1.1"); return SUCCESS;   /* NVML_INFOROM_OEM */
    case 1: snprintf(version, length, "7.0"); return SUCCESS;   /* NVML_INFOROM_ECC */
    case 2: return NOT_SUPPORTED;                               /* NVML_INFOROM_POWER */
    default: return INVALID_ARGUMENT;
    }
}

struct addressing_mode { /* nvmlDeviceAddressingMode_v1_t */
    unsigned version, value;
};

nvmlReturn_t nvmlDeviceGetAddressingMode(struct device *device, struct addressing_mode *mode) {
    ONLY_GPU_0(device);
    /* NVML_STRUCT_VERSION(DeviceAddressingMode, 1) */
    if (mode->version != (unsigned)(sizeof *mode | 1u << 24)) return ARGUMENT_VERSION_MISMATCH;
    mode->value = 2; /* NVML_DEVICE_ADDRESSING_MODE_ATS */
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetC2cModeInfoV(struct device *device, unsigned *is_c2c_enabled) {
    ONLY_GPU_0(device);
    *is_c2c_enabled = 1;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDisplayMode(struct device *device, int *mode) {
    ONLY_GPU_0(device);
    *mode = 1;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetDisplayActive(struct device *device, int *active) {
    ONLY_GPU_0(device);
    *active = 0;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(struct device *device, unsigned *current, unsigned *pending) {
    ONLY_GPU_0(device);
    *current = 1;
    *pending = 0;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(struct device *device, unsigned *count) {
    ONLY_GPU_0(device);
    *count = 3;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(struct device *device, unsigned index,
                                                 struct device **mig) {
    ONLY_GPU_0(device);
    if (index >= 3) return INVALID_ARGUMENT;
    if (index != 1) return NOT_FOUND;
    *mig = &devices[2];
    return SUCCESS;
}

/* nvmlEventTypeXidCriticalError, nvmlEventTypeClock, nvmlEventTypeSingleBitEccErrorStorm */
enum { XID = 0x8, CLOCK = 0x10, ECC_STORM = 0x200 };

static unsigned long long supported(const struct device *device) {
    return device->index == 0 ? XID | CLOCK | ECC_STORM : XID;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(struct device *device, unsigned long long *types) {
    if (device->index > 1) return NOT_SUPPORTED;
    *types = supported(device);
    return SUCCESS;
}

struct set {
    unsigned long long registered[2]; /* per GPU */
};

struct event_data { /* nvmlEventData_t */
    struct device *device;
    unsigned long long eventType, eventData;
    unsigned gpuInstanceId, computeInstanceId;
};

static int live_sets, early, waits;
static unsigned last_timeout;
static struct {
    int device;
    unsigned long long type, data;
} posted[8];
static int posted_count;

nvmlReturn_t nvmlEventSetCreate(struct set **set) {
    *set = calloc(1, sizeof **set);
    if (!*set) return 999; /* NVML_ERROR_UNKNOWN */
    live_sets++;
    return SUCCESS;
}

nvmlReturn_t nvmlEventSetFree(struct set *set) {
    free(set);
    live_sets--;
    return SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(struct device *device, unsigned long long types,
                                      struct set *set) {
    if (device->index > 1 || types & ~supported(device)) return NOT_SUPPORTED;
    set->registered[device->index] |= types;
    return SUCCESS;
}

nvmlReturn_t nvmlEventSetWait_v2(struct set *set, struct event_data *data, unsigned timeout_ms) {
    waits++;
    last_timeout = timeout_ms;
    for (int i = 0; i < posted_count; i++) {
        if (!(set->registered[posted[i].device] & posted[i].type)) continue;
        memset(data, 0, sizeof *data);
        data->device = &devices[posted[i].device];
        data->eventType = posted[i].type;
        data->eventData = posted[i].data;
        memmove(&posted[i], &posted[i + 1], (size_t)(posted_count - i - 1) * sizeof posted[0]);
        posted_count--;
        return SUCCESS;
    }
    if (early > 0) {
        early--;
        return TIMEOUT;
    }
    struct timespec pause = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    while (nanosleep(&pause, &pause) != 0) {
    }
    return TIMEOUT;
}

/* The tests' hooks. */

/* An event of `type` with `data` on GPU `device`, for the next wait of a set registered for it. */
void standin_nvml_post(int device, unsigned long long type, unsigned long long data) {
    if (posted_count < (int)(sizeof posted / sizeof posted[0]) && device >= 0 && device < 2) {
        posted[posted_count].device = device;
        posted[posted_count].type = type;
        posted[posted_count].data = data;
        posted_count++;
    }
}

/* The next `n` waits answer NVML_ERROR_TIMEOUT at once. */
void standin_nvml_early(int n) { early = n; }

/* Event sets made and not freed. */
int standin_nvml_live_sets(void) { return live_sets; }

/* Waits so far. */
int standin_nvml_waits(void) { return waits; }

/* The timeout, in milliseconds, the last wait was given. */
unsigned standin_nvml_last_timeout(void) { return last_timeout; }

#endif
