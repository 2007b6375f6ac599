/* cg_matmul.c - KMatmul: the generic matmul kernel.
 *
 * D[b, m, n] = alpha * sum_k A[b, m, k] B[b, k, n], A and B at any leading dimensions,
 * batch strides (0: broadcast) and orders (ll_matmul), D contiguous [batch, M, N].
 *
 * A tiled shared-memory GEMM: 64 x 64 output tiles, 256 threads each computing 4 x 4,
 * K in steps of 16. Tiles are staged in shared memory as f32 (bf16/f16/fp8 converted once
 * on the way in), loaded so that consecutive threads read consecutive addresses of the
 * operand's contiguous axis; outside the matrix reads 0. Every output accumulates its
 * products with fmaf in k order (exact products summed in f32, docs/llir.md), then is
 * scaled by alpha and rounded once to D's dtype. Correct for any size (partial tiles,
 * dims of 1); grid-stride over m tiles and batches, so grid limits never bind. */
#include "cg_int.h"

#include <inttypes.h>
#include <stdio.h>

#define BM 64
#define BN 64
#define BK 16

static const char *load_fn(hl_dtype t)
{
    switch (t) {
    case HL_F16:
        return "lm_h2f";
    case HL_BF16:
        return "lm_bf2f";
    case HL_F8E4M3:
        return "lm_e4m3_2f";
    case HL_F8E5M2:
        return "lm_e5m2_2f";
    default:
        return "(float)";
    }
}

static const char *store_fn(hl_dtype t)
{
    switch (t) {
    case HL_F16:
        return "lm_f2h";
    case HL_BF16:
        return "lm_f2bf";
    case HL_F8E4M3:
        return "lm_f2e4m3";
    case HL_F8E5M2:
        return "lm_f2e5m2";
    default:
        return "";
    }
}

static bool is_mm_dtype(hl_dtype t)
{
    return hl_dtype_is_float(t);
}

int cg__matmul_kernel(cg_ctx *c, uint32_t node, uint32_t out_buf, cg_kernel *k)
{
    const ll_node *n = ll_graph_node(c->g, node);
    const ll_matmul *mm = &n->mm;
    if (!is_mm_dtype(mm->type_a) || !is_mm_dtype(mm->type_b) || !is_mm_dtype(mm->type_d))
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(node),
                        "KMatmul of %s x %s -> %s: the generic matmul kernel takes float types",
                        hl_dtype_name(mm->type_a), hl_dtype_name(mm->type_b),
                        hl_dtype_name(mm->type_d));
    if (mm->beta != 0.0 || mm->epilogue != LL_EPI_NONE)
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(node),
                        "KMatmul with beta %g or epilogue %d: the generic kernel has neither "
                        "(a Blas node does)",
                        mm->beta, (int)mm->epilogue);
    if (n->n_in < 2) return cg__fail(c->err, LM_EVERIFY, cg__at(node), "KMatmul with %u inputs", n->n_in);
    cg_vg tmp = {0};
    tmp.p = c->plan->exprs;
    tmp.g = c->g;
    tmp.memo = c->memo;
    hl_expr f[8] = {mm->m, mm->n, mm->k, mm->batch, mm->lda, mm->ldb, mm->stride_a, mm->stride_b};
    static const char *names[8] = {"M", "N", "K", "NB", "LDA", "LDB", "SA", "SB"};
    cg_kw kw;
    if (cg__kw_init(&kw, c, node)) return c->err->code;
    cg_str b;
    cg__str_init(&b);
    int po = cg__kw_buf(&kw, out_buf, mm->type_d, true);
    int pa = cg__kw_buf(&kw, c->buf_of[n->in[0]], mm->type_a, false);
    int pb = cg__kw_buf(&kw, c->buf_of[n->in[1]], mm->type_b, false);
    int rc = 0;
    if (po < 0 || pa < 0 || pb < 0) {
        rc = c->err->code;
        goto done;
    }
    for (int i = 0; i < 8; i++) {
        hl_expr x = cg__x(&tmp, f[i]);
        cg_ity t;
        if (x == HL_NONE || hl_e_has_z(tmp.p, x) || !cg__expr_ity(tmp.p, c->d, x, 0, &t)) {
            rc = cg__fail(c->err, LM_EUNSUPPORTED, cg__at(node),
                          "KMatmul's %s is not an expression of the dims bounded in int64",
                          names[i]);
            goto done;
        }
        cg__str_addf(&b, "  const long long %s = (long long)(", names[i]);
        cg__expr_c(&b, tmp.p, c->d, x, t, "0", 0, kw.used_dim);
        cg__str_add(&b, ");\n");
        f[i] = x;
    }
    bool ar = mm->order_a == LL_ROW_MAJOR, br = mm->order_b == LL_ROW_MAJOR;
    float alpha = (float)mm->alpha;
    uint32_t au;
    memcpy(&au, &alpha, 4);
    cg__str_addf(&b,
                 "  __shared__ float As[%d][%d + 4];\n"
                 "  __shared__ float Bs[%d][%d + 4];\n"
                 "  const unsigned t = threadIdx.x, tx = t & 15u, ty = t >> 4;\n"
                 "  const long long MT = (M + %d) / %d, NT = (N + %d) / %d;\n"
                 "  const long long nt = blockIdx.x;\n"
                 "  if (nt >= NT) return;\n"
                 "  for (long long bb = blockIdx.z; bb < NB; bb += gridDim.z) {\n"
                 "  for (long long mt = blockIdx.y; mt < MT; mt += gridDim.y) {\n"
                 "    const long long m0 = mt * %d, n0 = nt * %d;\n"
                 "    float acc[4][4];\n"
                 "    #pragma unroll\n"
                 "    for (int i = 0; i < 4; i++) {\n"
                 "      #pragma unroll\n"
                 "      for (int j = 0; j < 4; j++) acc[i][j] = 0.0f;\n"
                 "    }\n"
                 "    for (long long k0 = 0; k0 < K; k0 += %d) {\n",
                 BK, BM, BK, BN, BM - 1, BM, BN - 1, BN, BM, BN, BK);
    /* A tile: As[kk][mm] = A[m0 + mm, k0 + kk] */
    cg__str_addf(&b,
                 "      #pragma unroll\n"
                 "      for (int i = 0; i < 4; i++) {\n"
                 "        const unsigned e = t + 256u * (unsigned)i;\n"
                 "        const unsigned mm = %s, kk = %s;\n"
                 "        const long long gm = m0 + mm, gk = k0 + kk;\n"
                 "        float v = 0.0f;\n"
                 "        if (gm < M && gk < K) v = %s(b%d[bb * SA + %s]);\n"
                 "        As[kk][mm] = v;\n"
                 "      }\n",
                 ar ? "e / 16u" : "e % 64u", ar ? "e % 16u" : "e / 64u", load_fn(mm->type_a), pa,
                 ar ? "gm * LDA + gk" : "gm + gk * LDA");
    /* B tile: Bs[kk][nn] = B[k0 + kk, n0 + nn] */
    cg__str_addf(&b,
                 "      #pragma unroll\n"
                 "      for (int i = 0; i < 4; i++) {\n"
                 "        const unsigned e = t + 256u * (unsigned)i;\n"
                 "        const unsigned nn = %s, kk = %s;\n"
                 "        const long long gn = n0 + nn, gk = k0 + kk;\n"
                 "        float v = 0.0f;\n"
                 "        if (gn < N && gk < K) v = %s(b%d[bb * SB + %s]);\n"
                 "        Bs[kk][nn] = v;\n"
                 "      }\n"
                 "      __syncthreads();\n",
                 br ? "e % 64u" : "e / 16u", br ? "e / 64u" : "e % 16u", load_fn(mm->type_b), pb,
                 br ? "gk * LDB + gn" : "gk + gn * LDB");
    cg__str_addf(&b,
                 "      #pragma unroll\n"
                 "      for (int kk = 0; kk < %d; kk++) {\n"
                 "        float a[4], c[4];\n"
                 "        #pragma unroll\n"
                 "        for (int i = 0; i < 4; i++) { a[i] = As[kk][ty * 4u + i]; c[i] = Bs[kk][tx * "
                 "4u + i]; }\n"
                 "        #pragma unroll\n"
                 "        for (int i = 0; i < 4; i++) {\n"
                 "          #pragma unroll\n"
                 "          for (int j = 0; j < 4; j++) acc[i][j] = fmaf(a[i], c[j], acc[i][j]);\n"
                 "        }\n"
                 "      }\n"
                 "      __syncthreads();\n"
                 "    }\n",
                 BK);
    cg__str_addf(&b,
                 "    #pragma unroll\n"
                 "    for (int i = 0; i < 4; i++) {\n"
                 "      const long long gm = m0 + ty * 4u + i;\n"
                 "      if (gm >= M) continue;\n"
                 "      #pragma unroll\n"
                 "      for (int j = 0; j < 4; j++) {\n"
                 "        const long long gn = n0 + tx * 4u + j;\n"
                 "        if (gn < N) b%d[(bb * M + gm) * N + gn] = %s(%s);\n"
                 "      }\n"
                 "    }\n"
                 "  }\n"
                 "  }\n",
                 po, store_fn(mm->type_d),
                 au == 0x3f800000u ? "acc[i][j]" : "__fmul_rn(acc[i][j], __uint_as_float(ALPHA))");
    char *body = cg__str_take(&b);
    if (!body) {
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
        goto done;
    }
    if (au != 0x3f800000u) {
        /* substitute the alpha bits */
        char *pos = strstr(body, "ALPHA");
        if (pos) {
            char hex[16];
            snprintf(hex, sizeof hex, "0x%08" PRIx32 "u", au);
            cg_str t;
            cg__str_init(&t);
            *pos = '\0';
            cg__str_add(&t, body);
            cg__str_add(&t, hex);
            cg__str_add(&t, pos + 5);
            cg__free(body);
            body = cg__str_take(&t);
            if (!body) {
                rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
                goto done;
            }
        }
    }
    rc = cg__kw_finish(&kw, NULL, body, 256, k);
    cg__free(body);
    if (rc) goto done;
    hl_expr_pool *p = tmp.p;
    k->grid[0] = cg__grid_expr(p, hl_e_cdiv(p, f[1], hl_e_num(p, BN)), INT32_MAX);
    k->grid[1] = cg__grid_expr(p, hl_e_cdiv(p, f[0], hl_e_num(p, BM)), 65535);
    k->grid[2] = cg__grid_expr(p, f[3], 65535);
    if (k->grid[0] == HL_NONE || k->grid[1] == HL_NONE || k->grid[2] == HL_NONE)
        rc = cg__fail(c->err, LM_ENOMEM, cg__at(node), "out of memory");
    k->template_name = "matmul";
done:
    cg__str_fini(&b);
    cg__kw_fini(&kw);
    return rc;
}
