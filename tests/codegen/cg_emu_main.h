/* cg_emu_main.h - the emulator program's main: runs a job (buffers and steps) written
 * by the harness (cg_emu.c) and writes every buffer back.
 *
 * The translation unit that includes this defines, before it, the kernel table:
 *   static const lm_emu_kernel_fn lm_emu_kernels[] = {...};  (one per kernel source)
 *
 * Job file (little-endian 64-bit words unless said):
 *   "LMEMUJ01"
 *   nbuf; per buffer: bytes, then the bytes
 *   nsteps; per step: kind
 *     0 kernel: index, grid x y z, block x y z, nparams, per param: kind (0 buffer,
 *       1 int64), value
 *     1 blas: m n k batch lda ldb stride_a stride_b order_a order_b, alpha beta (f64
 *       bits), epilogue, type_a type_b type_c type_d type_bias (hl_dtype values),
 *       buffers a b c d bias (-1 when absent)
 * Result file: nbuf; per buffer: bytes, then the bytes.
 *
 * Every buffer is its own heap block of exactly its size followed by a guard zone; a
 * step that writes into a guard zone is reported (built with AddressSanitizer, reads
 * outside are caught too). Exit status 0, or 1 with a message on stderr. */
#ifndef LUMINAL_CG_EMU_MAIN_H
#define LUMINAL_CG_EMU_MAIN_H

#include <chrono>
#include <string>

namespace lm_emu {

static const unsigned GUARD = 256;

struct job_reader {
    FILE *f;
    uint64_t u()
    {
        uint64_t v = 0;
        if (std::fread(&v, 8, 1, f) != 1) {
            std::fprintf(stderr, "lm_emu: truncated job\n");
            std::exit(1);
        }
        return v;
    }
};

/* The storage of hlir's dtypes (hl_dtype's order: f32 f16 bf16 int i64 bool e4m3 e5m2). */
static float ld(const unsigned char *p, uint64_t t, int64_t i)
{
    switch (t) {
    case 0: {
        float f;
        std::memcpy(&f, p + 4 * i, 4);
        return f;
    }
    case 1: {
        unsigned short h;
        std::memcpy(&h, p + 2 * i, 2);
        return lm_h2f(h);
    }
    case 2: {
        unsigned short h;
        std::memcpy(&h, p + 2 * i, 2);
        return lm_bf2f(h);
    }
    case 6:
        return lm_e4m3_2f(p[i]);
    case 7:
        return lm_e5m2_2f(p[i]);
    default:
        return 0.0f;
    }
}

static void st(unsigned char *p, uint64_t t, int64_t i, float v)
{
    switch (t) {
    case 0:
        std::memcpy(p + 4 * i, &v, 4);
        break;
    case 1: {
        unsigned short h = lm_f2h(v);
        std::memcpy(p + 2 * i, &h, 2);
        break;
    }
    case 2: {
        unsigned short h = lm_f2bf(v);
        std::memcpy(p + 2 * i, &h, 2);
        break;
    }
    case 6:
        p[i] = lm_f2e4m3(v);
        break;
    case 7:
        p[i] = lm_f2e5m2(v);
        break;
    default:
        break;
    }
}

/* The library matmul as llir's executor defines it: exact products summed in f32 in k
 * order, alpha, beta * C, bias, gelu (tanh form), one rounding. */
static void blas(job_reader &r, std::vector<unsigned char *> &bufs)
{
    int64_t m = r.u(), n = r.u(), k = r.u(), batch = r.u(), lda = r.u(), ldb = r.u();
    int64_t sa = r.u(), sb = r.u();
    uint64_t oa = r.u(), ob = r.u();
    uint64_t ab = r.u(), bb = r.u();
    double alpha, beta;
    std::memcpy(&alpha, &ab, 8);
    std::memcpy(&beta, &bb, 8);
    uint64_t epi = r.u();
    uint64_t ta = r.u(), tb = r.u(), tc = r.u(), td = r.u(), tbias = r.u();
    int64_t ia = r.u(), ib = r.u(), ic = r.u(), id = r.u(), ibias = r.u();
    const unsigned char *A = bufs[ia], *B = bufs[ib];
    const unsigned char *C = ic >= 0 ? bufs[ic] : nullptr, *Bi = ibias >= 0 ? bufs[ibias] : nullptr;
    unsigned char *D = bufs[id];
    float al = (float)alpha;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                float acc = 0.0f;
                for (int64_t q = 0; q < k; q++) {
                    float x = ld(A, ta, b * sa + (oa == 0 ? i * lda + q : i + q * lda));
                    float y = ld(B, tb, b * sb + (ob == 0 ? q * ldb + j : q + j * ldb));
                    acc = fmaf(x, y, acc);
                }
                float v = acc * al;
                int64_t o = (b * m + i) * n + j;
                if (beta != 0.0 && C) v = v + (float)beta * ld(C, tc, o);
                if ((epi == 1 || epi == 3) && Bi) v = v + ld(Bi, tbias, j);
                if (epi == 2 || epi == 3)
                    v = 0.5f * v * (1.0f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v)));
                st(D, td, o, v);
            }
}

static int run(int argc, char **argv, const lm_emu_kernel_fn *kernels, size_t nk)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s JOB RESULT\n", argv[0]);
        return 1;
    }
    FILE *f = std::fopen(argv[1], "rb");
    if (!f) {
        std::fprintf(stderr, "lm_emu: cannot open %s\n", argv[1]);
        return 1;
    }
    job_reader r{f};
    char magic[8];
    if (std::fread(magic, 1, 8, f) != 8 || std::memcmp(magic, "LMEMUJ01", 8) != 0) {
        std::fprintf(stderr, "lm_emu: not a job file\n");
        return 1;
    }
    uint64_t nb = r.u();
    std::vector<unsigned char *> bufs(nb);
    std::vector<uint64_t> sizes(nb);
    for (uint64_t i = 0; i < nb; i++) {
        sizes[i] = r.u();
        bufs[i] = static_cast<unsigned char *>(std::malloc(sizes[i] + GUARD));
        if (!bufs[i]) {
            std::fprintf(stderr, "lm_emu: out of memory\n");
            return 1;
        }
        if (sizes[i] && std::fread(bufs[i], 1, sizes[i], f) != sizes[i]) {
            std::fprintf(stderr, "lm_emu: truncated job\n");
            return 1;
        }
        std::memset(bufs[i] + sizes[i], 0xA5, GUARD);
    }
    uint64_t ns = r.u();
    for (uint64_t s = 0; s < ns; s++) {
        uint64_t kind = r.u();
        if (kind == 1) {
            blas(r, bufs);
        } else {
            uint64_t ki = r.u();
            lm_dim3 grid, block;
            grid.x = (unsigned)r.u();
            grid.y = (unsigned)r.u();
            grid.z = (unsigned)r.u();
            block.x = (unsigned)r.u();
            block.y = (unsigned)r.u();
            block.z = (unsigned)r.u();
            uint64_t np = r.u();
            std::vector<void *> ptrs(np);
            std::vector<long long> vals(np);
            std::vector<void *> args(np);
            for (uint64_t i = 0; i < np; i++) {
                uint64_t pk = r.u(), v = r.u();
                if (pk == 0) {
                    if (v >= nb) {
                        std::fprintf(stderr, "lm_emu: step %llu: buffer %llu of %llu\n",
                                     (unsigned long long)s, (unsigned long long)v,
                                     (unsigned long long)nb);
                        return 1;
                    }
                    ptrs[i] = bufs[v];
                    args[i] = &ptrs[i];
                } else {
                    vals[i] = (long long)v;
                    args[i] = &vals[i];
                }
            }
            if (ki >= nk) {
                std::fprintf(stderr, "lm_emu: kernel %llu of %zu\n", (unsigned long long)ki, nk);
                return 1;
            }
            if (grid.x < 1 || grid.y < 1 || grid.z < 1 || grid.y > 65535 || grid.z > 65535 ||
                grid.x > 2147483647u) {
                std::fprintf(stderr, "lm_emu: step %llu: grid (%u, %u, %u) outside CUDA's limits\n",
                             (unsigned long long)s, grid.x, grid.y, grid.z);
                return 1;
            }
            const lm_emu_kernel_fn &fn = kernels[ki];
            void **a = args.data();
            auto t0 = std::chrono::steady_clock::now();
            launch(grid, block, [&] { fn(a); });
            if (std::getenv("LM_EMU_TRACE"))
                std::fprintf(stderr, "step %llu kernel %llu grid (%u, %u, %u) block %u: %.3f s\n",
                             (unsigned long long)s, (unsigned long long)ki, grid.x, grid.y, grid.z,
                             block.x,
                             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                                 .count());
        }
        for (uint64_t i = 0; i < nb; i++)
            for (unsigned k = 0; k < GUARD; k++)
                if (bufs[i][sizes[i] + k] != 0xA5) {
                    std::fprintf(stderr,
                                 "lm_emu: step %llu wrote past the end of buffer %llu (%llu bytes), "
                                 "at byte %llu\n",
                                 (unsigned long long)s, (unsigned long long)i,
                                 (unsigned long long)sizes[i],
                                 (unsigned long long)(sizes[i] + k));
                    return 1;
                }
    }
    std::fclose(f);
    FILE *o = std::fopen(argv[2], "wb");
    if (!o) return 1;
    std::fwrite(&nb, 8, 1, o);
    for (uint64_t i = 0; i < nb; i++) {
        std::fwrite(&sizes[i], 8, 1, o);
        if (sizes[i]) std::fwrite(bufs[i], 1, sizes[i], o);
        std::free(bufs[i]);
    }
    return std::fclose(o) == 0 ? 0 : 1;
}

} // namespace lm_emu

#endif /* LUMINAL_CG_EMU_MAIN_H */
