/* fault_probe.c: can a process use the GPU again after a kernel fault?
 *
 * docs/cuda_rt.md rests on this: after CUDA_ERROR_ILLEGAL_ADDRESS, is there an order of
 * cuCtxSetCurrent(NULL), cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxReset and
 * cuDevicePrimaryCtxRetain after which allocation, memset and synchronize succeed? Each
 * variant runs in a child process of its own (a fresh CUDA state), faults with a PTX
 * kernel that stores to address 16, tries its recovery order, and reports every result.
 * Talks to the driver directly (dlopen + cuGetProcAddress), not through cuda_rt, so the
 * runtime's own reset logic plays no part. Prints one line per variant; exits 2 without
 * a GPU.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef CUresult (*get_proc_t)(const char *, void **, int, cuuint64_t,
                               CUdriverProcAddressQueryResult *);
static get_proc_t get_proc;

static void sym(const char *name, void *slot)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (get_proc(name, &p, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p) {
        printf("fault_probe: no %s\n", name);
        exit(3);
    }
    memcpy(slot, &p, sizeof p);
}

static struct {
    CUresult (*init)(unsigned);
    CUresult (*device_get)(CUdevice *, int);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*release)(CUdevice);
    CUresult (*reset)(CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*sync)(void);
    CUresult (*load)(CUmodule *, const void *);
    CUresult (*get_fn)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       unsigned, CUstream, void **, void **);
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream);
} cu;

static const char *poke_ptx = ".version 8.0\n.target sm_90\n.address_size 64\n"
                              ".visible .entry poke(.param .u64 p) {\n"
                              " .reg .u64 %rd<2>;\n .reg .f32 %f<2>;\n"
                              " ld.param.u64 %rd1, [p];\n mov.f32 %f1, 0f3F800000;\n"
                              " st.global.f32 [%rd1], %f1;\n ret;\n}\n";

static const char *variant_name[4] = {
    "reset, retain, set current",
    "set current NULL, reset, retain, set current",
    "reset, set current NULL, retain, set current",
    "release, set current NULL, reset, retain, set current",
};

static void run_variant(int v)
{
    CUdevice dev;
    CUcontext c, c2 = NULL;
    CUmodule m;
    CUfunction f;
    if (cu.init(0) || cu.device_get(&dev, 0) || cu.retain(&c, dev) || cu.set_current(c) ||
        cu.load(&m, poke_ptx) || cu.get_fn(&f, m, "poke")) {
        printf("variant %d: setup failed\n", v);
        return;
    }
    unsigned long long bad = 16;
    void *args[1] = {&bad};
    CUresult launched = cu.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    CUresult fault = cu.sync();
    CUresult r1 = CUDA_SUCCESS, r2, r3;
    switch (v) {
    case 0:
        r1 = cu.reset(dev);
        break;
    case 1:
        cu.set_current(NULL), r1 = cu.reset(dev);
        break;
    case 2:
        r1 = cu.reset(dev), cu.set_current(NULL);
        break;
    default:
        cu.release(dev), cu.set_current(NULL), r1 = cu.reset(dev);
        break;
    }
    r2 = cu.retain(&c2, dev);
    r3 = cu.set_current(c2);
    CUdeviceptr p = 0;
    CUresult a = cu.alloc(&p, 1 << 20);
    CUresult s = a ? a : cu.memset8(p, 1, 1 << 20, NULL);
    CUresult y = cu.sync();
    printf("variant %d (%s): launch %d, fault %d; reset %d, retain %d, set current %d; alloc %d, "
           "memset %d, sync %d -> %s\n",
           v, variant_name[v], launched, fault, r1, r2, r3, a, s, y,
           a == 0 && s == 0 && y == 0 ? "RECOVERED" : "not recovered");
}

int main(void)
{
    void *dl = dlopen("libcuda.so.1", RTLD_NOW);
    void *gp = dl ? dlsym(dl, "cuGetProcAddress_v2") : NULL;
    if (!gp) {
        printf("fault_probe: no CUDA driver (libcuda.so.1 with cuGetProcAddress_v2)\n");
        return 2;
    }
    memcpy(&get_proc, &gp, sizeof gp);
    sym("cuInit", &cu.init);
    sym("cuDeviceGet", &cu.device_get);
    sym("cuDevicePrimaryCtxRetain", &cu.retain);
    sym("cuDevicePrimaryCtxRelease", &cu.release);
    sym("cuDevicePrimaryCtxReset", &cu.reset);
    sym("cuCtxSetCurrent", &cu.set_current);
    sym("cuCtxSynchronize", &cu.sync);
    sym("cuModuleLoadData", &cu.load);
    sym("cuModuleGetFunction", &cu.get_fn);
    sym("cuLaunchKernel", &cu.launch);
    sym("cuMemAlloc", &cu.alloc);
    sym("cuMemsetD8Async", &cu.memset8);
    for (int v = 0; v < 4; v++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            run_variant(v);
            fflush(stdout);
            _exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
    }
    return 0;
}
