/* cg_attn.c - the fused attention template (cg_attn.h): flash-style attention on the
 * tensor cores (mma.sync m16n8k16, bf16/f16 operands, f32 accumulation), sm_80 and later.
 *
 * One block owns a tile of block_q query rows of one (batch, head) bh; each of its warps
 * owns 16 of those rows (block_q = 16 * warps). The block's Q tile is copied to shared
 * memory once and each warp keeps its A fragments in registers (ldmatrix); the K and V
 * tiles (block_k keys) stream through `stages` shared-memory buffers filled by cp.async
 * (stages 2: the next tile's copy overlaps this tile's arithmetic). Per K/V tile a warp
 * computes S = Q K^T (16 x block_k, f32), scales it into the log2 domain, adds the mask,
 * masks keys past skv and, causal, keys past the (bottom-right aligned) diagonal, then
 * updates the running row max m and sum l online (O and l rescaled by 2^(m_old - m_new)),
 * rounds P = 2^(s - m) to the storage type and accumulates O += P V. O is divided by l
 * once at the end; a row whose every key is masked (l = 0) writes 0.
 *
 * Shared memory rows are 16-byte chunks XOR-swizzled by the row (chunk c of row r lives
 * at chunk c ^ (r & 7)), so ldmatrix's eight row reads of one 8x8 matrix hit distinct
 * banks. Key tiles past the diagonal are never loaded (the loop ends at the last tile the
 * q tile's last row sees); inside the diagonal tile a warp whose rows see none of the
 * tile's keys skips its arithmetic. Work items (q tile, bh, split) are taken in a
 * grid-stride loop, the q tiles with the most keys first, so any grid of >= 1 block is
 * correct and the longest items start earliest.
 *
 * Operands are addressed through the spec's base and row expressions (printed with
 * cg__expr_c, dynamic dims as kernel parameters). When every base and row stride is a
 * multiple of 8 elements (checked per work item, at run time) tiles move as 16-byte
 * cp.async copies; otherwise element by element (any view stays correct).
 *
 * kv_splits > 1 (flash-decoding): the q tile's key tiles are split into kv_splits equal
 * runs, each a work item; a split writes its unnormalised O, its m and its l in f32 to
 * the workspace, and the combine kernel (one warp per query row) merges the splits:
 * o = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s, M = max_s m_s.
 *
 * Precision: S and O accumulate in f32 (the tensor cores' products of bf16/f16 are exact,
 * their sums f32); the softmax is f32 (exp2 by ex2.approx, relative error about 2^-22);
 * P is rounded to the storage type (relative 2^-9 bf16, 2^-12 f16) before P V, as every
 * flash kernel does, while l sums the unrounded P. The output's error against an exact
 * reference is then dominated by the rounding of P and of the output itself: about
 * 2^-8 of the output's magnitude for bf16 (docs/codegen.md, "Fused attention").
 *
 * The cost model's counts (ops, strided, divs) are HL_NONE, as for the matmul kernel:
 * the work is tensor-core FLOPs, 4 * n_bh * sq * skv * head_dim (about half of it causal),
 * and the traffic is q, k, v read once per q tile and o written once (docs/codegen.md). */
#include "cg_attn.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* The device functions every attention module shares (after the prelude). */
static const char ATTN_PRE[] =
    "LM_DI unsigned lm_sw(unsigned r, unsigned c) { return (r * LM_CH + (c ^ (r & 7u))) * 8u; }\n"
    "LM_DI unsigned lm_saddr(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }\n"
    "LM_DI void lm_cp16(unsigned dst, const void *src, unsigned n) {\n"
    "  asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\\n\" :: \"r\"(dst), "
    "\"l\"(src), \"r\"(n));\n"
    "}\n"
    "LM_DI void lm_cp_commit() { asm volatile(\"cp.async.commit_group;\\n\" ::); }\n"
    "LM_DI void lm_cp_wait0() { asm volatile(\"cp.async.wait_group 0;\\n\" ::: \"memory\"); }\n"
    "LM_DI void lm_cp_wait1() { asm volatile(\"cp.async.wait_group 1;\\n\" ::: \"memory\"); }\n"
    "LM_DI void lm_ldsm4(unsigned a, unsigned *r) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : "
    "\"memory\");\n"
    "}\n"
    "LM_DI void lm_ldsm4t(unsigned a, unsigned *r) {\n"
    "  asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\\n\"\n"
    "               : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(a) : "
    "\"memory\");\n"
    "}\n"
    "LM_DI void lm_mma(float *c, const unsigned *a, unsigned b0, unsigned b1) {\n"
    "  asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.\" LM_MMA_T \".\" LM_MMA_T "
    "\".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\\n\"\n"
    "               : \"+f\"(c[0]), \"+f\"(c[1]), \"+f\"(c[2]), \"+f\"(c[3])\n"
    "               : \"r\"(a[0]), \"r\"(a[1]), \"r\"(a[2]), \"r\"(a[3]), \"r\"(b0), "
    "\"r\"(b1));\n"
    "}\n"
    /* two f32 to one register of the storage type (lo in the low half), round to nearest */
    "LM_DI unsigned lm_pack2(float lo, float hi) {\n"
    "  unsigned r;\n"
    "  asm(\"cvt.rn.\" LM_MMA_T \"x2.f32 %0, %1, %2;\\n\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo));\n"
    "  return r;\n"
    "}\n"
    "LM_DI float lm_ex2(float x) { float y; asm(\"ex2.approx.ftz.f32 %0, %1;\\n\" : \"=f\"(y) : "
    "\"f\"(x)); return y; }\n";

static const char *to_f32(hl_dtype t)
{
    switch (t) {
    case HL_BF16:
        return "lm_bf2f";
    case HL_F16:
        return "lm_h2f";
    default:
        return "(float)";
    }
}

static const char *from_f32(hl_dtype t)
{
    return t == HL_F16 ? "lm_f2h" : "lm_f2bf";
}

/* ---- the tiles -------------------------------------------------------------------- */

static bool tile_ok(uint32_t d, const cg_attn_tile *t)
{
    if (t->warps != 4 && t->warps != 8) return false;
    /* each warp owns 16 or 32 query rows (one or two m tiles) */
    if (t->block_q != 16 * t->warps && t->block_q != 32 * t->warps) return false;
    if (t->block_q != 64 && t->block_q != 128) return false;
    if (t->block_k != 32 && t->block_k != 64 && t->block_k != 128) return false;
    /* registers: S and O together */
    if (t->block_k == 128 && (d != 64 || t->block_q != 16 * t->warps)) return false;
    if (t->stages != 1 && t->stages != 2) return false;
    if (t->kv_splits < 1 || t->kv_splits > 64) return false;
    return true;
}

uint32_t cg__attn_tiles(uint32_t head_dim, hl_dtype dtype, cg_attn_tile *out, uint32_t cap)
{
    if ((head_dim != 64 && head_dim != 128) || (dtype != HL_BF16 && dtype != HL_F16)) return 0;
    /* (block_q, warps): 16 rows a warp, 16, and 32 */
    static const uint32_t bq[3] = {64, 128, 128}, nw[3] = {4, 8, 4}, bk[3] = {32, 64, 128},
                          splits[2] = {4, 16};
    uint32_t n = 0;
    cg_attn_tile t;
    for (uint32_t i = 0; i < 3; i++)
        for (uint32_t j = 0; j < 3; j++)
            for (uint32_t s = 1; s <= 2; s++) {
                t = (cg_attn_tile){bq[i], bk[j], nw[i], s, 1};
                if (!tile_ok(head_dim, &t)) continue;
                if (n < cap) out[n] = t;
                n++;
            }
    /* flash-decoding: a short q tile (64 rows, 4 warps), two stages */
    for (uint32_t j = 0; j < 2; j++)
        for (uint32_t s = 0; s < 2; s++) {
            t = (cg_attn_tile){64, bk[j], 4, 2, splits[s]};
            if (n < cap) out[n] = t;
            n++;
        }
    return n;
}

hl_expr cg__attn_workspace(cg_ctx *c, const cg_attn_spec *s)
{
    if (s->tile.kv_splits <= 1) return HL_NONE;
    hl_expr_pool *p = c->plan->exprs;
    hl_expr per = hl_e_mul(p, s->sq, hl_e_num(p, (int64_t)s->head_dim + 2));
    return hl_e_mul(p, hl_e_mul(p, s->n_bh, hl_e_num(p, s->tile.kv_splits)), per);
}

/* ---- writing ----------------------------------------------------------------------- */

typedef struct aw {
    cg_ctx *c;
    const cg_attn_spec *s;
    cg_kw *kw;
    cg_str *b;
    int64_t zmax; /* largest bh */
} aw;

/* "  const long long NAME = (long long)(e);\n", e printed in z = bh (zname) */
static bool put_expr(aw *w, const char *name, hl_expr e, bool zfree, const char *what)
{
    const hl_expr_pool *p = w->c->plan->exprs;
    cg_ity t;
    if (e == HL_NONE || (zfree && hl_e_has_z(p, e)) ||
        !cg__expr_ity(p, w->c->d, e, zfree ? 0 : w->zmax, &t)) {
        cg__fail(w->c->err, LM_EUNSUPPORTED, cg__at(w->s->llir_node),
                 "attention: %s is not an expression of the dims%s bounded in int64", what,
                 zfree ? "" : " and bh");
        return false;
    }
    cg__str_addf(w->b, "  const long long %s = (long long)(", name);
    cg__expr_c(w->b, p, w->c->d, e, t, zfree ? "0" : "bh", zfree ? 0 : w->zmax, w->kw->used_dim);
    cg__str_add(w->b, ");\n");
    return true;
}

static void put_defs(cg_str *b, const cg_attn_spec *s, float scale_log2)
{
    const cg_attn_tile *t = &s->tile;
    uint32_t sb;
    memcpy(&sb, &scale_log2, 4);
    cg__str_addf(b,
                 "#define LM_BQ %u\n#define LM_BK %u\n#define LM_D %u\n#define LM_NW %u\n"
                 "#define LM_ST %u\n#define LM_SPLITS %u\n#define LM_CAUSAL %d\n"
                 "#define LM_MT %u\n#define LM_QREG %d\n"
                 "#define LM_MASK %d\n#define LM_MMA_T \"%s\"\n#define LM_CH (LM_D / 8)\n"
                 "#define LM_NT (LM_NW * 32)\n#define LM_SCALE2 __uint_as_float(0x%08" PRIx32
                 "u)\n#define LM_LOG2E 1.4426950408889634f\n#define LM_NINF __int_as_float(0xff800000)\n",
                 t->block_q, t->block_k, s->head_dim, t->warps, t->stages, t->kv_splits,
                 s->causal ? 1 : 0, t->block_q / (16u * t->warps),
                 /* Q's A fragments stay in registers unless that would spill (two m tiles
                    at head dim 128: reloaded from shared memory per k step) */
                 (t->block_q == 16u * t->warps || s->head_dim == 64) ? 1 : 0, s->has_mask ? 1 : 0, s->dtype == HL_F16 ? "f16" : "bf16", sb);
}

/* The split pass / single pass kernel. */
/* Finishes kernel k's text from the body in b and the preamble in pre (both emptied):
 * cg__kw_finish_ex with `threads` threads per block. */
static int attn_text(cg_ctx *c, const cg_attn_spec *s, cg_kw *kw, cg_str *b, cg_str *pre,
                     uint32_t threads, cg_kernel *k)
{
    char *body = cg__str_take(b);
    char *pretxt = cg__str_take(pre);
    int rc = body && pretxt ? cg__kw_finish_ex(kw, pretxt, NULL, body, threads, k)
                            : cg__fail(c->err, LM_ENOMEM, cg__at(s->llir_node), "out of memory");
    cg__free(body);
    cg__free(pretxt);
    return rc;
}

/* Kernel k's launch: `blocks` blocks in x (at most INT32_MAX), smem bytes of shared
 * memory, its template's name; no op counts. */
static int attn_grid(cg_ctx *c, const cg_attn_spec *s, cg_kernel *k, hl_expr blocks,
                     uint32_t smem, const char *name)
{
    hl_expr_pool *p = c->plan->exprs;
    k->shared_bytes = smem;
    k->grid[0] = cg__grid_expr(p, blocks, INT32_MAX);
    k->grid[1] = k->grid[2] = hl_e_num(p, 1);
    k->template_name = name;
    k->ops = k->strided = k->divs32 = k->divs64 = HL_NONE;
    if (k->grid[0] == HL_NONE || k->grid[1] == HL_NONE)
        return cg__fail(c->err, LM_ENOMEM, cg__at(s->llir_node), "out of memory");
    return 0;
}

static int attn_main(cg_ctx *c, const cg_attn_spec *s, cg_kernel *k)
{
    const cg_attn_tile *t = &s->tile;
    cg_kw kw;
    if (cg__kw_init(&kw, c, s->llir_node)) return c->err->code;
    cg_str b, pre;
    cg__str_init(&b);
    cg__str_init(&pre);
    aw w = {c, s, &kw, &b, 0};
    int rc = 0;
    bool split = t->kv_splits > 1;
    hl_expr_pool *p = c->plan->exprs;
    int64_t nbh_max = cg__expr_max(p, c->d, s->n_bh, 0);
    if (nbh_max < 1 || nbh_max == INT64_MAX) {
        rc = cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                      "attention: the number of (batch, head) pairs has no finite bound");
        goto done;
    }
    w.zmax = nbh_max - 1;
    int po = split ? cg__kw_buf(&kw, s->ws_buf, HL_F32, true) : cg__kw_buf(&kw, s->o_buf, s->dtype, true);
    int pq = cg__kw_buf(&kw, s->q_buf, s->dtype, false);
    int pk = cg__kw_buf(&kw, s->k_buf, s->dtype, false);
    int pv = cg__kw_buf(&kw, s->v_buf, s->dtype, false);
    int pm = s->has_mask ? cg__kw_buf(&kw, s->m_buf, s->mask_dtype, false) : 0;
    if (po < 0 || pq < 0 || pk < 0 || pv < 0 || pm < 0) {
        rc = c->err->code;
        goto done;
    }
    float scale_log2 = (float)((double)s->scale * 1.4426950408889634);
    put_defs(&pre, s, scale_log2);
    cg__str_add(&pre, ATTN_PRE);

    cg__str_add(&b, "  extern __shared__ __align__(128) unsigned char lm_smem[];\n"
                    "  unsigned short *sQ = (unsigned short *)lm_smem;\n"
                    "  unsigned short *sK = sQ + LM_BQ * LM_D;\n"
                    "  unsigned short *sV = sK + LM_ST * LM_BK * LM_D;\n"
                    "  const unsigned tid = threadIdx.x, warp = tid >> 5, lane = tid & 31u;\n");
    if (!put_expr(&w, "NBH", s->n_bh, true, "n_bh") || !put_expr(&w, "SQ", s->sq, true, "sq") ||
        !put_expr(&w, "SKV", s->skv, true, "skv") || !put_expr(&w, "QR", s->q_row, true, "q_row") ||
        !put_expr(&w, "KR", s->k_row, true, "k_row") || !put_expr(&w, "VR", s->v_row, true, "v_row") ||
        (!split && !put_expr(&w, "OR", s->o_row, true, "o_row")) ||
        (s->has_mask && (!put_expr(&w, "MR", s->m_row, true, "m_row") ||
                         !put_expr(&w, "MC", s->m_col, true, "m_col")))) {
        rc = c->err->code;
        goto done;
    }
    cg__str_add(&b, "  const long long NQT = (SQ + LM_BQ - 1) / LM_BQ, OFF = SKV - SQ;\n"
                    "  const long long WORK = NQT * NBH * LM_SPLITS;\n"
                    "  for (long long wi = blockIdx.x; wi < WORK; wi += gridDim.x) {\n"
                    "    const long long qt = NQT - 1 - wi / (NBH * LM_SPLITS);\n"
                    "    const long long rem = wi % (NBH * LM_SPLITS);\n"
                    "    const long long bh = rem / LM_SPLITS;\n"
                    "    const long long split = rem % LM_SPLITS; (void)split;\n"
                    "    const long long q0 = qt * LM_BQ;\n");
    /* the bases, in bh */
    {
        cg_str *save = w.b;
        cg_str inner;
        cg__str_init(&inner);
        w.b = &inner;
        bool ok = put_expr(&w, "QB", s->q_base, false, "q_base") &&
                  put_expr(&w, "KB", s->k_base, false, "k_base") &&
                  put_expr(&w, "VB", s->v_base, false, "v_base") &&
                  (split || put_expr(&w, "OB", s->o_base, false, "o_base")) &&
                  (!s->has_mask || put_expr(&w, "MB", s->m_base, false, "m_base"));
        w.b = save;
        char *txt = cg__str_take(&inner);
        cg__str_fini(&inner);
        if (!ok || !txt) {
            cg__free(txt);
            rc = ok ? cg__fail(c->err, LM_ENOMEM, cg__at(s->llir_node), "out of memory") : c->err->code;
            goto done;
        }
        /* indent */
        for (char *line = txt; *line;) {
            char *nl = strchr(line, '\n');
            cg__str_add(&b, "  ");
            if (nl) *nl = '\0';
            cg__str_add(&b, line);
            cg__str_add(&b, "\n");
            if (!nl) break;
            line = nl + 1;
        }
        cg__free(txt);
    }
    cg__str_addf(&b,
        /* the key tiles this q tile sees; causal: up to its last row's diagonal */
        "    long long kend = SKV;\n"
        "    if (LM_CAUSAL) kend = lm_minl(SKV, q0 + LM_BQ + OFF);\n"
        "    if (kend < 0) kend = 0;\n"
        "    const long long ntile = (kend + LM_BK - 1) / LM_BK;\n"
        "    long long t0 = 0, t1 = ntile;\n"
        "    if (LM_SPLITS > 1) {\n"
        "      const long long per = (ntile + LM_SPLITS - 1) / LM_SPLITS;\n"
        "      t0 = lm_minl(ntile, split * per);\n"
        "      t1 = lm_minl(ntile, t0 + per);\n"
        "    }\n"
        "    const bool vec = ((QB | KB | VB | QR | KR | VR) & 7) == 0;\n"
        "    const %s *__restrict__ gq = b%d + QB;\n"
        "    const %s *__restrict__ gk = b%d + KB;\n"
        "    const %s *__restrict__ gv = b%d + VB;\n",
        cg__store_c(s->dtype), pq, cg__store_c(s->dtype), pk, cg__store_c(s->dtype), pv);
    /* tile loads: rows [r0, r0 + n) of a tensor into swizzled smem; rows past lim read 0 */
    cg__str_add(&b,
        "    auto load_rows = [&](unsigned short *dst, const unsigned short *__restrict__ src,\n"
        "                         long long r0, long long lim, long long rs, unsigned nrows) {\n"
        "      for (unsigned e = tid; e < nrows * LM_CH; e += LM_NT) {\n"
        "        const unsigned r = e / LM_CH, ch = e % LM_CH;\n"
        "        const long long gr = r0 + r;\n"
        "        const bool ok = gr < lim;\n"
        "        unsigned short *d = dst + lm_sw(r, ch);\n"
        "        if (vec) {\n"
        "          const unsigned short *sp = ok ? src + gr * rs + ch * 8u : src;\n"
        "          lm_cp16(lm_saddr(d), sp, ok ? 16u : 0u);\n"
        "        } else {\n"
        "          unsigned short x[8];\n"
        "          #pragma unroll\n"
        "          for (int i = 0; i < 8; i++) x[i] = ok ? src[gr * rs + ch * 8u + i] : (unsigned short)0;\n"
        "          uint4 u;\n"
        "          u.x = x[0] | ((unsigned)x[1] << 16); u.y = x[2] | ((unsigned)x[3] << 16);\n"
        "          u.z = x[4] | ((unsigned)x[5] << 16); u.w = x[6] | ((unsigned)x[7] << 16);\n"
        "          *(uint4 *)d = u;\n"
        "        }\n"
        "      }\n"
        "    };\n"
        "    const unsigned wr = warp * 16u * LM_MT;        /* the warp's first row in the tile */\n"
        "    const bool wact = q0 + wr < SQ;                /* the warp has a row to compute */\n"
        "    float oacc[LM_MT][LM_D / 8][4];\n"
        "    float mx[LM_MT][2], ls[LM_MT][2];\n"
        "    #pragma unroll\n"
        "    for (int m = 0; m < LM_MT; m++) {\n"
        "      #pragma unroll\n"
        "      for (int i = 0; i < LM_D / 8; i++) oacc[m][i][0] = oacc[m][i][1] = oacc[m][i][2] = oacc[m][i][3] = 0.0f;\n"
        "      mx[m][0] = mx[m][1] = LM_NINF;\n"
        "      ls[m][0] = ls[m][1] = 0.0f;\n"
        "    }\n"
        "#if LM_QREG\n"
        "    unsigned qf[LM_MT][LM_D / 16][4];\n"
        "#endif\n"
        "    if (t0 < t1) {\n"
        "      load_rows(sQ, gq, q0, SQ, QR, LM_BQ);\n"
        "      load_rows(sK, gk, t0 * LM_BK, SKV, KR, LM_BK);\n"
        "      load_rows(sV, gv, t0 * LM_BK, SKV, VR, LM_BK);\n"
        "      lm_cp_commit();\n"
        "    }\n"
        "    for (long long tt = t0; tt < t1; tt++) {\n"
        "      const unsigned st = LM_ST == 1 ? 0u : (unsigned)((tt - t0) & 1);\n"
        "      if (LM_ST == 1) {\n"
        "        if (tt > t0) {\n"
        "          load_rows(sK, gk, tt * LM_BK, SKV, KR, LM_BK);\n"
        "          load_rows(sV, gv, tt * LM_BK, SKV, VR, LM_BK);\n"
        "          lm_cp_commit();\n"
        "        }\n"
        "        lm_cp_wait0();\n"
        "      } else if (tt + 1 < t1) {\n"
        "        const unsigned ns = st ^ 1u;\n"
        "        load_rows(sK + ns * LM_BK * LM_D, gk, (tt + 1) * LM_BK, SKV, KR, LM_BK);\n"
        "        load_rows(sV + ns * LM_BK * LM_D, gv, (tt + 1) * LM_BK, SKV, VR, LM_BK);\n"
        "        lm_cp_commit();\n"
        "        lm_cp_wait1();\n"
        "      } else {\n"
        "        lm_cp_wait0();\n"
        "      }\n"
        "      __syncthreads();\n"
        "      const unsigned short *cK = sK + st * LM_BK * LM_D, *cV = sV + st * LM_BK * LM_D;\n"
        "#if LM_QREG\n"
        "      if (tt == t0 && wact) {\n"
        "        #pragma unroll\n"
        "        for (int m = 0; m < LM_MT; m++) {\n"
        "          #pragma unroll\n"
        "          for (int kd = 0; kd < LM_D / 16; kd++)\n"
        "            lm_ldsm4(lm_saddr(sQ + lm_sw(wr + m * 16u + (lane & 15u), 2u * kd + (lane >> 4))), qf[m][kd]);\n"
        "        }\n"
        "      }\n"
        "#endif\n"
        );
    cg__str_add(&b,
        "      const long long j0 = tt * LM_BK;\n"
        /* the warp's rows see a key of this tile (causal), and exist */
        "      const bool wsee = wact && (!LM_CAUSAL || j0 <= q0 + wr + 16 * LM_MT - 1 + OFF);\n"
        "      if (wsee) {\n"
        "        float sacc[LM_MT][LM_BK / 8][4];\n"
        "        #pragma unroll\n"
        "        for (int m = 0; m < LM_MT; m++) {\n"
        "          #pragma unroll\n"
        "          for (int i = 0; i < LM_BK / 8; i++) sacc[m][i][0] = sacc[m][i][1] = sacc[m][i][2] = sacc[m][i][3] = 0.0f;\n"
        "        }\n"
        "        #pragma unroll\n"
        "        for (int kd = 0; kd < LM_D / 16; kd++) {\n"
        "#if LM_QREG\n"
        "          #define LM_QA(m) qf[m][kd]\n"
        "#else\n"
        "          unsigned qa[LM_MT][4];\n"
        "          #pragma unroll\n"
        "          for (int m = 0; m < LM_MT; m++)\n"
        "            lm_ldsm4(lm_saddr(sQ + lm_sw(wr + m * 16u + (lane & 15u), 2u * kd + (lane >> 4))), qa[m]);\n"
        "          #define LM_QA(m) qa[m]\n"
        "#endif\n"
        "          #pragma unroll\n"
        "          for (int n2 = 0; n2 < LM_BK / 16; n2++) {\n"
        "            unsigned kb[4];\n"
        "            lm_ldsm4(lm_saddr(cK + lm_sw(n2 * 16u + (lane & 7u) + ((lane >> 4) << 3),\n"
        "                                         2u * kd + ((lane >> 3) & 1u))), kb);\n"
        "            #pragma unroll\n"
        "            for (int m = 0; m < LM_MT; m++) {\n"
        "              lm_mma(sacc[m][2 * n2], LM_QA(m), kb[0], kb[1]);\n"
        "              lm_mma(sacc[m][2 * n2 + 1], LM_QA(m), kb[2], kb[3]);\n"
        "            }\n"
        "          }\n"
        "          #undef LM_QA\n"
        "        }\n"
        /* scale (log2 domain), mask, bounds */
        "        const bool edge = j0 + LM_BK > SKV || (LM_CAUSAL && j0 + LM_BK - 1 > q0 + wr + OFF) || LM_MASK;\n"
        /* in 32 bits, relative to the tile: key jj is valid when jj < lim, and seen by the
           warp's row ii when jj <= ii + dg (both clamped: only their sign matters) */
        "        const int lim = (int)lm_minl(SKV - j0, LM_BK);\n"
        "        const int dg = (int)lm_maxl(lm_minl(q0 + wr + OFF - j0, 1 << 20), -(1 << 20));\n"
        "        #pragma unroll\n"
        "        for (int m = 0; m < LM_MT; m++) {\n"
        "          const int i0 = m * 16 + (int)(lane >> 2);\n"
        "          #pragma unroll\n"
        "          for (int n = 0; n < LM_BK / 8; n++) {\n"
        "            #pragma unroll\n"
        "            for (int e = 0; e < 4; e++) {\n"
        "              float x = sacc[m][n][e] * LM_SCALE2;\n"
        "              if (edge) {\n"
        "                const int ii = i0 + (e >> 1) * 8;\n"
        "                const int jj = n * 8 + (int)(lane & 3u) * 2 + (e & 1);\n"
        "                bool keep = jj < lim && (!LM_CAUSAL || jj <= ii + dg);\n");
    if (s->has_mask)
        cg__str_addf(&b,
                     "                const long long i = q0 + wr + ii, j = j0 + jj;\n"
                     "                if (keep && i < SQ) x += %s(b%d[MB + i * MR + j * MC]) * LM_LOG2E;\n",
                     to_f32(s->mask_dtype), pm);
    cg__str_add(&b,
        "                if (!keep) x = LM_NINF;\n"
        "              }\n"
        "              sacc[m][n][e] = x;\n"
        "            }\n"
        "          }\n"
        "        }\n"
        /* online softmax: rows lane/4 (h 0) and lane/4 + 8 (h 1) of each m tile; P in place */
        "        #pragma unroll\n"
        "        for (int m = 0; m < LM_MT; m++) {\n"
        "          float mt[2] = {mx[m][0], mx[m][1]};\n"
        "          #pragma unroll\n"
        "          for (int n = 0; n < LM_BK / 8; n++) {\n"
        "            mt[0] = fmaxf(mt[0], fmaxf(sacc[m][n][0], sacc[m][n][1]));\n"
        "            mt[1] = fmaxf(mt[1], fmaxf(sacc[m][n][2], sacc[m][n][3]));\n"
        "          }\n"
        "          float al[2], base[2];\n"
        "          #pragma unroll\n"
        "          for (int h = 0; h < 2; h++) {\n"
        "            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 1));\n"
        "            mt[h] = fmaxf(mt[h], __shfl_xor_sync(0xffffffffu, mt[h], 2));\n"
        "            base[h] = mt[h] == LM_NINF ? 0.0f : mt[h];\n"
        "            al[h] = lm_ex2(mx[m][h] - base[h]);\n"
        "            mx[m][h] = mt[h];\n"
        "          }\n"
        "          float rs[2] = {0.0f, 0.0f};\n"
        "          #pragma unroll\n"
        "          for (int n = 0; n < LM_BK / 8; n++) {\n"
        "            sacc[m][n][0] = lm_ex2(sacc[m][n][0] - base[0]);\n"
        "            sacc[m][n][1] = lm_ex2(sacc[m][n][1] - base[0]);\n"
        "            sacc[m][n][2] = lm_ex2(sacc[m][n][2] - base[1]);\n"
        "            sacc[m][n][3] = lm_ex2(sacc[m][n][3] - base[1]);\n"
        "            rs[0] += sacc[m][n][0] + sacc[m][n][1];\n"
        "            rs[1] += sacc[m][n][2] + sacc[m][n][3];\n"
        "          }\n"
        "          ls[m][0] = ls[m][0] * al[0] + rs[0];\n"
        "          ls[m][1] = ls[m][1] * al[1] + rs[1];\n"
        "          #pragma unroll\n"
        "          for (int i = 0; i < LM_D / 8; i++) {\n"
        "            oacc[m][i][0] *= al[0]; oacc[m][i][1] *= al[0];\n"
        "            oacc[m][i][2] *= al[1]; oacc[m][i][3] *= al[1];\n"
        "          }\n"
        "        }\n"
        /* O += P V; P rounded to the storage type as A fragments (the S layout is the A
           layout) */
        );
    cg__str_add(&b,
        "        #pragma unroll\n"
        "        for (int kk = 0; kk < LM_BK / 16; kk++) {\n"
        "          unsigned pa[LM_MT][4];\n"
        "          #pragma unroll\n"
        "          for (int m = 0; m < LM_MT; m++) {\n"
        "            pa[m][0] = lm_pack2(sacc[m][2 * kk][0], sacc[m][2 * kk][1]);\n"
        "            pa[m][1] = lm_pack2(sacc[m][2 * kk][2], sacc[m][2 * kk][3]);\n"
        "            pa[m][2] = lm_pack2(sacc[m][2 * kk + 1][0], sacc[m][2 * kk + 1][1]);\n"
        "            pa[m][3] = lm_pack2(sacc[m][2 * kk + 1][2], sacc[m][2 * kk + 1][3]);\n"
        "          }\n"
        "          #pragma unroll\n"
        "          for (int nd = 0; nd < LM_D / 8; nd += 2) {\n"
        "            unsigned vb[4];\n"
        "            lm_ldsm4t(lm_saddr(cV + lm_sw(kk * 16u + (lane & 15u), (unsigned)nd + (lane >> 4))), vb);\n"
        "            #pragma unroll\n"
        "            for (int m = 0; m < LM_MT; m++) {\n"
        "              lm_mma(oacc[m][nd], pa[m], vb[0], vb[1]);\n"
        "              lm_mma(oacc[m][nd + 1], pa[m], vb[2], vb[3]);\n"
        "            }\n"
        "          }\n"
        "        }\n"
        "      }\n"
        "      __syncthreads();\n"
        "    }\n"
        /* the end: the row sums over the quad, then the output */
        "    #pragma unroll\n"
        "    for (int m = 0; m < LM_MT; m++) {\n"
        "      #pragma unroll\n"
        "      for (int h = 0; h < 2; h++) {\n"
        "        ls[m][h] += __shfl_xor_sync(0xffffffffu, ls[m][h], 1);\n"
        "        ls[m][h] += __shfl_xor_sync(0xffffffffu, ls[m][h], 2);\n"
        "      }\n"
        "    }\n"
        "    if (wact) {\n"
        "      #pragma unroll\n"
        "      for (int m = 0; m < LM_MT; m++) {\n"
        "      #pragma unroll\n"
        "      for (int h = 0; h < 2; h++) {\n"
        "        const long long i = q0 + wr + m * 16 + (lane >> 2) + h * 8;\n"
        "        if (i >= SQ) continue;\n");
    if (split) {
        cg__str_addf(&b,
            "        const long long part = (bh * LM_SPLITS + split) * SQ + i;\n"
            "        float *wo = b%d + part * LM_D;\n"
            "        #pragma unroll\n"
            "        for (int nd = 0; nd < LM_D / 8; nd++) {\n"
            "          const unsigned col = nd * 8u + (lane & 3u) * 2u;\n"
            "          *(float2 *)(wo + col) = make_float2(oacc[m][nd][h * 2], oacc[m][nd][h * 2 + 1]);\n"
            "        }\n"
            "        if ((lane & 3u) == 0u) {\n"
            "          float *ml = b%d + NBH * LM_SPLITS * SQ * LM_D + part * 2;\n"
            "          ml[0] = mx[m][h];\n"
            "          ml[1] = ls[m][h];\n"
            "        }\n",
            po, po);
    } else {
        cg__str_addf(&b,
            "        const float inv = ls[m][h] > 0.0f ? 1.0f / ls[m][h] : 0.0f;\n"
            "        %s *__restrict__ go = b%d + OB + i * OR;\n"
            "        #pragma unroll\n"
            "        for (int nd = 0; nd < LM_D / 8; nd++) {\n"
            "          const unsigned col = nd * 8u + (lane & 3u) * 2u;\n"
            "          const float a = oacc[m][nd][h * 2] * inv, c2 = oacc[m][nd][h * 2 + 1] * inv;\n"
            "          if (((OB | OR) & 1) == 0) {\n"
            "            *(unsigned *)(go + col) = lm_pack2(a, c2);\n"
            "          } else {\n"
            "            go[col] = %s(a);\n"
            "            go[col + 1] = %s(c2);\n"
            "          }\n"
            "        }\n",
            cg__store_c(s->dtype), po, from_f32(s->dtype), from_f32(s->dtype));
    }
    cg__str_add(&b, "      }\n      }\n    }\n  }\n");
    rc = attn_text(c, s, &kw, &b, &pre, t->warps * 32u, k);
    if (rc) goto done;
    uint32_t smem = (t->block_q + 2u * t->stages * t->block_k) * s->head_dim * 2u;
    hl_expr nqt = hl_e_cdiv(p, s->sq, hl_e_num(p, t->block_q));
    hl_expr work = hl_e_mul(p, hl_e_mul(p, nqt, s->n_bh), hl_e_num(p, t->kv_splits));
    rc = attn_grid(c, s, k, work, smem, "attention");
done:
    cg__str_fini(&b);
    cg__str_fini(&pre);
    cg__kw_fini(&kw);
    return rc;
}

/* The combine kernel of a split spec: one warp per query row. */
static int attn_combine(cg_ctx *c, const cg_attn_spec *s, cg_kernel *k)
{
    cg_kw kw;
    if (cg__kw_init(&kw, c, s->llir_node)) return c->err->code;
    cg_str b, pre;
    cg__str_init(&b);
    cg__str_init(&pre);
    aw w = {c, s, &kw, &b, 0};
    int rc = 0;
    hl_expr_pool *p = c->plan->exprs;
    int64_t nbh_max = cg__expr_max(p, c->d, s->n_bh, 0);
    if (nbh_max < 1 || nbh_max == INT64_MAX) {
        rc = cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                      "attention: the number of (batch, head) pairs has no finite bound");
        goto done;
    }
    w.zmax = nbh_max - 1;
    int po = cg__kw_buf(&kw, s->o_buf, s->dtype, true);
    int pw = cg__kw_buf(&kw, s->ws_buf, HL_F32, false);
    if (po < 0 || pw < 0) {
        rc = c->err->code;
        goto done;
    }
    put_defs(&pre, s, 1.0f);
    if (!put_expr(&w, "NBH", s->n_bh, true, "n_bh") || !put_expr(&w, "SQ", s->sq, true, "sq") ||
        !put_expr(&w, "OR", s->o_row, true, "o_row")) {
        rc = c->err->code;
        goto done;
    }
    cg__str_add(&b, "  const unsigned lane = threadIdx.x & 31u;\n"
                    "  const long long ROWS = NBH * SQ;\n"
                    "  for (long long r = (long long)blockIdx.x * 4 + (threadIdx.x >> 5); r < ROWS;\n"
                    "       r += (long long)gridDim.x * 4) {\n"
                    "    const long long bh = r / SQ, i = r % SQ;\n");
    {
        cg_str inner;
        cg__str_init(&inner);
        w.b = &inner;
        bool ok = put_expr(&w, "OB", s->o_base, false, "o_base");
        w.b = &b;
        char *txt = cg__str_take(&inner);
        cg__str_fini(&inner);
        if (!ok || !txt) {
            cg__free(txt);
            rc = ok ? cg__fail(c->err, LM_ENOMEM, cg__at(s->llir_node), "out of memory") : c->err->code;
            goto done;
        }
        cg__str_add(&b, "  ");
        cg__str_add(&b, txt);
        cg__free(txt);
    }
    cg__str_addf(&b,
        "    const float *ml = b%d + NBH * LM_SPLITS * SQ * LM_D + (bh * LM_SPLITS * SQ + i) * 2;\n"
        "    float M = LM_NINF;\n"
        "    for (int sp = 0; sp < LM_SPLITS; sp++) M = fmaxf(M, ml[(long long)sp * SQ * 2]);\n"
        "    const float base = M == LM_NINF ? 0.0f : M;\n"
        "    float L = 0.0f, acc[LM_D / 32];\n"
        "    #pragma unroll\n"
        "    for (int d = 0; d < LM_D / 32; d++) acc[d] = 0.0f;\n"
        "    for (int sp = 0; sp < LM_SPLITS; sp++) {\n"
        "      const float wgt = exp2f(ml[(long long)sp * SQ * 2] - base);\n"
        "      L += wgt * ml[(long long)sp * SQ * 2 + 1];\n"
        "      const float *o = b%d + ((bh * LM_SPLITS + sp) * SQ + i) * LM_D;\n"
        "      #pragma unroll\n"
        "      for (int d = 0; d < LM_D / 32; d++) acc[d] += wgt * o[d * 32 + lane];\n"
        "    }\n"
        "    const float inv = L > 0.0f ? 1.0f / L : 0.0f;\n"
        "    #pragma unroll\n"
        "    for (int d = 0; d < LM_D / 32; d++) b%d[OB + i * OR + d * 32 + lane] = %s(acc[d] * inv);\n"
        "  }\n",
        pw, pw, po, from_f32(s->dtype));
    rc = attn_text(c, s, &kw, &b, &pre, 128, k);
    if (rc) goto done;
    hl_expr rows = hl_e_mul(p, s->n_bh, s->sq);
    rc = attn_grid(c, s, k, hl_e_cdiv(p, rows, hl_e_num(p, 4)), 0, "attention-combine");
done:
    cg__str_fini(&b);
    cg__str_fini(&pre);
    cg__kw_fini(&kw);
    return rc;
}

int cg__attn_kernels(cg_ctx *c, const cg_attn_spec *s, cg_kernel k[2], uint32_t *n)
{
    *n = 0;
    if (s->dtype != HL_BF16 && s->dtype != HL_F16)
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                        "attention: the fused kernel takes bf16 or f16 operands, not %s "
                        "(the unfused path computes it)",
                        hl_dtype_name(s->dtype));
    if (s->head_dim != 64 && s->head_dim != 128)
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                        "attention: the fused kernel takes head dims 64 and 128, not %u "
                        "(the unfused path computes it)",
                        s->head_dim);
    if (!tile_ok(s->head_dim, &s->tile))
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                        "attention: no kernel for the tile block_q %u block_k %u warps %u "
                        "stages %u kv_splits %u at head dim %u (cg__attn_tiles lists them)",
                        s->tile.block_q, s->tile.block_k, s->tile.warps, s->tile.stages,
                        s->tile.kv_splits, s->head_dim);
    if (s->has_mask && s->mask_dtype != HL_BF16 && s->mask_dtype != HL_F16 &&
        s->mask_dtype != HL_F32)
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node),
                        "attention: an additive mask of %s (bf16, f16 or f32 expected)",
                        hl_dtype_name(s->mask_dtype));
    if (!isfinite(s->scale))
        return cg__fail(c->err, LM_EUNSUPPORTED, cg__at(s->llir_node), "attention: scale %g is not finite",
                        (double)s->scale);
    if (s->tile.kv_splits > 1 && s->ws_buf == LM_NONE)
        return cg__fail(c->err, LM_EVERIFY, cg__at(s->llir_node),
                        "attention: kv_splits %u needs a workspace buffer (ws_buf)",
                        s->tile.kv_splits);
    memset(k, 0, 2 * sizeof *k);
    int rc = attn_main(c, s, &k[0]);
    if (rc) return rc;
    *n = 1;
    if (s->tile.kv_splits > 1) {
        rc = attn_combine(c, s, &k[1]);
        if (rc) {
            cg__free(k[0].source);
            k[0].source = NULL;
            *n = 0;
            return rc;
        }
        *n = 2;
    }
    return 0;
}
