/* cg_emu.h - the CUDA built-ins the generated kernels use, for running them on the CPU.
 *
 * A test compiles kernel sources exactly as codegen wrote them, as C++17, after this
 * header (tests/codegen/cg_emu.c writes the translation unit). Execution model:
 *
 *   - a launch runs its blocks one after another; each of a block's blockDim threads is a
 *     fiber (ucontext) with its own stack, all on one OS thread, scheduled round robin:
 *     a thread runs until it finishes or waits at a barrier. __syncthreads is a barrier
 *     of the block's threads, a warp shuffle an exchange through per-warp slots between
 *     two barriers of the warp's 32 threads. Code that relies on a missing barrier reads
 *     stale data; a barrier some threads never reach (a divergent __syncthreads or
 *     shuffle) is a deadlock, reported and aborted. Fibers rather than OS threads: on a
 *     machine of two cores a barrier of 256 OS threads costs milliseconds, which made
 *     emulating the example graphs take tens of minutes; a fiber switch costs a
 *     microsecond, and the schedule is deterministic;
 *   - __shared__ is `static`: one copy, shared by the block's threads (blocks do not run
 *     at the same time);
 *   - the schedule can be reversed (LM_EMU_REVERSE=1 in the environment): threads run
 *     last first, so a race that one order hides shows as a different result in the
 *     other (the harness runs both and compares every buffer byte for byte);
 *   - float arithmetic is the host's IEEE single precision without contraction (build with
 *     -ffp-contract=off): __fadd_rn, __fmul_rn, __frcp_rn, __fsqrt_rn and fmaf are exact
 *     as on the GPU; exp2f, log2f and sinf are the host's libm, which is what the
 *     reference runtime uses (the GPU's are within 2 ulp: docs/codegen.md).
 *
 * Not emulated: the memory model beyond barriers (the emulator's barriers are full
 * fences), timing, occupancy, register limits, and __launch_bounds__. */
#ifndef LUMINAL_CG_EMU_H
#define LUMINAL_CG_EMU_H

#include <math.h>

#include <ucontext.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>
#include <vector>

struct uint4 {
    unsigned x, y, z, w;
};
struct uint2 {
    unsigned x, y;
};
struct lm_dim3 {
    unsigned x, y, z;
};

namespace lm_emu {

/* One CUDA thread: a fiber with its own stack. */
struct fiber {
    ucontext_t ctx;
    char *stack;
    lm_dim3 tidx;
    unsigned tid;
    bool done;
    int waiting; /* -1 runnable; else the barrier it waits at */
};

struct state {
    lm_dim3 grid, block, bidx;
    unsigned nthreads;
    std::vector<fiber> f;
    fiber *cur;
    ucontext_t sched;
    /* barriers: 0 the block's, 1 + w warp w's */
    std::vector<unsigned> arrived, gen;
    std::vector<unsigned long long> slots; /* [warp][lane] */
    const std::function<void()> *fn;
    uint64_t nblocks, block_no;
    unsigned end_bar;
    size_t stack_size;
#if defined(__SANITIZE_ADDRESS__)
    const void *sched_bottom; /* the scheduler's stack, for AddressSanitizer's fiber API */
    size_t sched_size;
#endif
    ~state()
    {
        for (auto &x : f)
            std::free(x.stack);
    }
};

static state g;

#if defined(__SANITIZE_ADDRESS__)
extern "C" void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom,
                                               size_t size);
extern "C" void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                                size_t *size_old);
#endif

/* From a fiber back to the scheduler. */
static void to_sched()
{
#if defined(__SANITIZE_ADDRESS__)
    void *save = nullptr;
    __sanitizer_start_switch_fiber(g.cur->done ? nullptr : &save, g.sched_bottom, g.sched_size);
    swapcontext(&g.cur->ctx, &g.sched);
    __sanitizer_finish_switch_fiber(save, &g.sched_bottom, &g.sched_size);
#else
    swapcontext(&g.cur->ctx, &g.sched);
#endif
}

static void wait_at(unsigned b);

/* A fiber runs the kernel for every block in turn; the block's threads meet at the end
 * of each block (the last to arrive moves blockIdx on), so a block's __shared__ data is
 * never touched by the next block early. */
static void trampoline()
{
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(nullptr, &g.sched_bottom, &g.sched_size);
#endif
    for (uint64_t b = 0; b < g.nblocks; b++) {
        (*g.fn)();
        wait_at(g.end_bar);
    }
    g.cur->done = true;
    to_sched();
}

/* A barrier of the block (b = 0) or of warp b - 1. */
static void wait_at(unsigned b)
{
    unsigned need = (b == 0 || b == g.end_bar) ? g.nthreads : 32u;
    if (++g.arrived[b] == need) {
        g.arrived[b] = 0;
        g.gen[b]++;
        if (b == g.end_bar) {
            uint64_t k = ++g.block_no;
            g.bidx = lm_dim3{(unsigned)(k % g.grid.x), (unsigned)((k / g.grid.x) % g.grid.y),
                             (unsigned)(k / ((uint64_t)g.grid.x * g.grid.y))};
        }
        for (auto &x : g.f)
            if (x.waiting == (int)b) x.waiting = -1;
        return;
    }
    g.cur->waiting = (int)b;
    to_sched();
}

inline void syncthreads()
{
    wait_at(0);
}

template <class T> inline T shfl_xor(unsigned mask, T v, int m)
{
    static_assert(sizeof(T) <= 8, "shuffle of more than 8 bytes");
    if (mask != 0xffffffffu) {
        std::fprintf(stderr, "lm_emu: a shuffle with a partial mask is not emulated\n");
        std::abort();
    }
    unsigned lane = g.cur->tid & 31u, w = g.cur->tid >> 5;
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof v);
    g.slots[w * 32 + lane] = bits;
    wait_at(1 + w);
    unsigned long long other = g.slots[w * 32 + (lane ^ (unsigned)m)];
    wait_at(1 + w);
    T r;
    std::memcpy(&r, &other, sizeof r);
    return r;
}

/* Runs fn for every block of grid with block threads each; fibers are scheduled round
 * robin (in reverse with LM_EMU_REVERSE=1), each until it finishes or waits. */
inline void launch(lm_dim3 grid, lm_dim3 block, const std::function<void()> &fn)
{
    unsigned n = block.x * block.y * block.z;
    if (n == 0 || n > 1024 || (n % 32) != 0) {
        std::fprintf(stderr, "lm_emu: block of %u threads (a multiple of 32, at most 1024)\n", n);
        std::abort();
    }
    g.grid = grid;
    g.block = block;
    g.nthreads = n;
    g.fn = &fn;
    if (!g.stack_size) g.stack_size = 256 * 1024;
    if (g.f.size() < n) {
        size_t old = g.f.size();
        g.f.resize(n);
        for (size_t i = old; i < n; i++)
            g.f[i].stack = static_cast<char *>(std::malloc(g.stack_size));
    }
    g.end_bar = 1 + n / 32;
    g.arrived.assign(2 + n / 32, 0);
    g.gen.assign(2 + n / 32, 0);
    g.slots.assign(n, 0);
    g.nblocks = (uint64_t)grid.x * grid.y * grid.z;
    g.block_no = 0;
    g.bidx = lm_dim3{0, 0, 0};
    bool reverse = std::getenv("LM_EMU_REVERSE") && std::atoi(std::getenv("LM_EMU_REVERSE"));
    for (unsigned i = 0; i < n; i++) {
        fiber &x = g.f[i];
        x.tid = i;
        x.tidx = lm_dim3{i % block.x, (i / block.x) % block.y, i / (block.x * block.y)};
        x.done = false;
        x.waiting = -1;
        getcontext(&x.ctx);
        x.ctx.uc_stack.ss_sp = x.stack;
        x.ctx.uc_stack.ss_size = g.stack_size;
        x.ctx.uc_link = nullptr;
        makecontext(&x.ctx, trampoline, 0);
    }
    unsigned left = n;
    while (left) {
        bool ran = false;
        for (unsigned k = 0; k < n; k++) {
            fiber &x = g.f[reverse ? n - 1 - k : k];
            if (x.done || x.waiting >= 0) continue;
            g.cur = &x;
            ran = true;
#if defined(__SANITIZE_ADDRESS__)
            void *save = nullptr;
            __sanitizer_start_switch_fiber(&save, x.stack, g.stack_size);
            swapcontext(&g.sched, &x.ctx);
            __sanitizer_finish_switch_fiber(save, nullptr, nullptr);
#else
            swapcontext(&g.sched, &x.ctx);
#endif
            if (x.done) left--;
        }
        if (!ran && left) {
            unsigned at = 0;
            for (auto &x : g.f)
                if (!x.done && x.waiting >= 0) at = (unsigned)x.waiting;
            std::fprintf(stderr,
                         "lm_emu: deadlock in block (%u, %u, %u): %u threads wait at %s that the "
                         "others never reach\n",
                         g.bidx.x, g.bidx.y, g.bidx.z, left,
                         at == 0 ? "__syncthreads" : at == g.end_bar ? "the end of the block"
                                                                     : "a warp shuffle");
            std::abort();
        }
    }
}

/* A kernel of any signature called with CUDA's kernelParams convention: args[i] points at
 * the value of parameter i. */
template <class... A, std::size_t... I>
inline void call_with(void (*f)(A...), void **args, std::index_sequence<I...>)
{
    f(*static_cast<A *>(args[I])...);
}
template <class... A> inline std::function<void(void **)> wrap(void (*f)(A...))
{
    return [f](void **args) { call_with(f, args, std::index_sequence_for<A...>{}); };
}

} // namespace lm_emu

typedef std::function<void(void **)> lm_emu_kernel_fn;

#define threadIdx (lm_emu::g.cur->tidx)
#define blockIdx (lm_emu::g.bidx)
#define blockDim (lm_emu::g.block)
#define gridDim (lm_emu::g.grid)
#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __shared__ static

static inline float __uint_as_float(unsigned u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
static inline unsigned __float_as_uint(float f)
{
    unsigned u;
    std::memcpy(&u, &f, 4);
    return u;
}
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __frcp_rn(float a)
{
    return 1.0f / a;
}
static inline float __fsqrt_rn(float a)
{
    return sqrtf(a);
}
template <class T> static inline T __ldg(const T *p)
{
    return *p;
}
static inline void __syncthreads()
{
    lm_emu::syncthreads();
}
template <class T> static inline T __shfl_xor_sync(unsigned mask, T v, int m)
{
    return lm_emu::shfl_xor(mask, v, m);
}
template <class T> static inline T lm_emu_atomic_max(T *p, T v)
{
    T old = __atomic_load_n(p, __ATOMIC_SEQ_CST);
    while (old < v && !__atomic_compare_exchange_n(p, &old, v, false, __ATOMIC_SEQ_CST,
                                                   __ATOMIC_SEQ_CST)) {
    }
    return old;
}
static inline int atomicMax(int *p, int v)
{
    return lm_emu_atomic_max(p, v);
}
static inline long long atomicMax(long long *p, long long v)
{
    return lm_emu_atomic_max(p, v);
}

#endif /* LUMINAL_CG_EMU_H */
