/* pg_json.c - plan.json, the plan file of a saved program, written and read.
 *
 * Format PG_FORMAT ("luminal-program"), version PG_FORMAT_VERSION (1). Every key, in the
 * order written (docs/codegen.md shows an example):
 *
 *   format, version      "luminal-program", 1
 *   compiler             "luminal-c <version>": a plan from another version is refused
 *   name                 the program's name
 *   arch                 the compute capability the kernels were written for (90)
 *   provenance           {"egraph": "...", "genome": "..."}: the fingerprints of the
 *                        e-graph and the genome that produced it, as the caller gave them
 *   llir                 {"file": "llir.json", "xxh3_128": "<32 hex digits>"}: the LLIR
 *                        for the CPU path; the hash is checked on loading
 *   dims                 [{"name", "lo", "hi", "profile", "buckets": [[lo, hi], ...]}]
 *   buffers              [{"kind": "input" | "output" | "temp" | "workspace",
 *                          "index" (inputs and outputs), "dtype", "numel": "<expr>",
 *                          "first_step", "last_step", "llir_node"}]
 *   kernels              [{"source": "kernels/k0000.cu", "template", "llir_node",
 *                          "grid": ["<expr>" x 3], "block": [x, y, z], "shared_bytes",
 *                          "params": [{"buffer": b, "written": bool} | {"dim": d}]}]
 *   blas                 [{"llir_node", "a", "b", "c", "d", "bias", "workspace" (buffer
 *                          ids, null when absent), "m", "n", "k", "batch", "lda", "ldb",
 *                          "stride_a", "stride_b" (expressions), "order_a", "order_b"
 *                          ("row" | "col"), "alpha", "beta", "epilogue" ("none" | "bias" |
 *                          "gelu" | "bias_gelu"), "type_a", "type_b", "type_c", "type_d",
 *                          "type_bias"}]
 *   steps                [{"kernel": k} | {"blas": i}], in execution order
 *   inputs, outputs      [{"name", "dtype", "shape": ["<expr>", ...], "buffer"}]
 *
 * Expressions are hlir's text form of expressions of the dims. Nothing in the file is
 * trusted: every value is checked for its type and range, and the whole plan by
 * pg__plan_check, before anything uses it; a source file must lie under kernels/.
 */
#include "pg_int.h"
#include "lm_json.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

#ifndef LUMINAL_VERSION
#define LUMINAL_VERSION "0.0.0"
#endif
#define PG_COMPILER "luminal-c " LUMINAL_VERSION

static const char *const BUF_KINDS[] = {"input", "output", "temp", "workspace"};
static const char *const ORDERS[] = {"row", "col"};
static const char *const EPIS[] = {"none", "bias", "gelu", "bias_gelu"};

void pg__hash_hex(const void *data, size_t len, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(data, len);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

/* ==================================================================================
 * Writing
 * ================================================================================== */

typedef struct writer {
    const cg_plan *p;
    lm_json *j;
} writer;

/* An id, or null for LM_NONE. */
static void w_id(writer *w, const char *key, uint32_t id)
{
    lm_json_key(w->j, key);
    if (id == LM_NONE)
        lm_json_null(w->j);
    else
        lm_json_int(w->j, id);
}

static void w_expr(writer *w, hl_expr e)
{
    char small[256];
    size_t n = hl_e_print(w->p->exprs, e, small, sizeof small);
    if (n < sizeof small) {
        lm_json_str(w->j, small);
        return;
    }
    char *big = pg__alloc(n + 1, 1);
    if (!big) {
        lm_json_fail(w->j, LM_ENOMEM, "out of memory printing an expression");
        return;
    }
    hl_e_print(w->p->exprs, e, big, n + 1);
    lm_json_str(w->j, big);
    pg__free(big);
}

static void w_kexpr(writer *w, const char *key, hl_expr e)
{
    lm_json_key(w->j, key);
    w_expr(w, e);
}

/* A string, "" for NULL. */
static void w_str(writer *w, const char *key, const char *s)
{
    lm_json_kstr(w->j, key, s ? s : "");
}

static void w_io(writer *w, const pg_io *io)
{
    lm_json *j = w->j;
    lm_json_obj(j);
    w_str(w, "name", io->name);
    w_str(w, "dtype", hl_dtype_name(io->dtype));
    lm_json_key(j, "shape");
    lm_json_arr(j);
    for (uint32_t d = 0; d < io->ndim; d++)
        w_expr(w, io->shape[d]);
    lm_json_arr_end(j);
    lm_json_kint(j, "buffer", io->buf);
    lm_json_obj_end(j);
}

static void w_dims(writer *w, const pg_program *pr)
{
    const cg_plan *p = w->p;
    lm_json *j = w->j;
    lm_json_key(j, "dims");
    lm_json_arr(j);
    for (uint32_t i = 0; i < p->n_dims; i++) {
        lm_json_obj(j);
        w_str(w, "name", p->dim_names[i]);
        lm_json_kint(j, "lo", p->dims[i].lo);
        lm_json_kint(j, "hi", p->dims[i].hi);
        lm_json_kint(j, "profile", p->dims[i].profile);
        lm_json_key(j, "buckets");
        lm_json_arr(j);
        for (uint32_t b = 0; b < pr->dims[i].n; b++) {
            lm_json_arr(j);
            lm_json_int(j, pr->dims[i].b[b].lo);
            lm_json_int(j, pr->dims[i].b[b].hi);
            lm_json_arr_end(j);
        }
        lm_json_arr_end(j);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
}

static void w_buffers(writer *w)
{
    const cg_plan *p = w->p;
    lm_json *j = w->j;
    lm_json_key(j, "buffers");
    lm_json_arr(j);
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        const cg_buffer *x = &p->buffers[b];
        lm_json_obj(j);
        w_str(w, "kind", BUF_KINDS[x->kind]);
        if (x->kind == CG_BUF_INPUT || x->kind == CG_BUF_OUTPUT) lm_json_kint(j, "index", x->index);
        w_str(w, "dtype", hl_dtype_name(x->dtype));
        w_kexpr(w, "numel", x->numel);
        lm_json_kint(j, "first_step", x->first_step);
        lm_json_kint(j, "last_step", x->last_step);
        w_id(w, "llir_node", x->llir_node);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
}

static void w_kernels(writer *w, char *const *files)
{
    const cg_plan *p = w->p;
    lm_json *j = w->j;
    lm_json_key(j, "kernels");
    lm_json_arr(j);
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        const cg_kernel *x = &p->kernels[k];
        lm_json_obj(j);
        w_str(w, "source", files[k]);
        w_str(w, "template", x->template_name);
        w_id(w, "llir_node", x->llir_node);
        lm_json_key(j, "grid");
        lm_json_arr(j);
        for (int d = 0; d < 3; d++)
            w_expr(w, x->grid[d]);
        lm_json_arr_end(j);
        lm_json_key(j, "block");
        lm_json_arr(j);
        for (int d = 0; d < 3; d++)
            lm_json_int(j, x->block[d]);
        lm_json_arr_end(j);
        lm_json_kint(j, "shared_bytes", x->shared_bytes);
        lm_json_key(j, "params");
        lm_json_arr(j);
        for (uint32_t i = 0; i < x->n_params; i++) {
            lm_json_obj(j);
            if (x->params[i].kind == CG_P_BUFFER) {
                lm_json_kint(j, "buffer", x->params[i].buf);
                lm_json_kbool(j, "written", x->params[i].written);
            } else {
                lm_json_kint(j, "dim", x->params[i].dim);
            }
            lm_json_obj_end(j);
        }
        lm_json_arr_end(j);
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
}

static void w_blas(writer *w)
{
    const cg_plan *p = w->p;
    lm_json *j = w->j;
    lm_json_key(j, "blas");
    lm_json_arr(j);
    for (uint32_t i = 0; i < p->n_blas; i++) {
        const cg_blas *x = &p->blas[i];
        const ll_matmul *m = &x->mm;
        lm_json_obj(j);
        w_id(w, "llir_node", x->llir_node);
        w_id(w, "a", x->a);
        w_id(w, "b", x->b);
        w_id(w, "c", x->c);
        w_id(w, "d", x->d);
        w_id(w, "bias", x->bias);
        w_id(w, "workspace", x->workspace);
        w_kexpr(w, "m", m->m);
        w_kexpr(w, "n", m->n);
        w_kexpr(w, "k", m->k);
        w_kexpr(w, "batch", m->batch);
        w_kexpr(w, "lda", m->lda);
        w_kexpr(w, "ldb", m->ldb);
        w_kexpr(w, "stride_a", m->stride_a);
        w_kexpr(w, "stride_b", m->stride_b);
        w_str(w, "order_a", ORDERS[m->order_a == LL_COL_MAJOR]);
        w_str(w, "order_b", ORDERS[m->order_b == LL_COL_MAJOR]);
        lm_json_kf64(j, "alpha", m->alpha);
        lm_json_kf64(j, "beta", m->beta);
        w_str(w, "epilogue", EPIS[m->epilogue]);
        w_str(w, "type_a", hl_dtype_name(m->type_a));
        w_str(w, "type_b", hl_dtype_name(m->type_b));
        w_str(w, "type_c", hl_dtype_name(m->type_c));
        w_str(w, "type_d", hl_dtype_name(m->type_d));
        w_str(w, "type_bias", hl_dtype_name(m->type_bias));
        lm_json_obj_end(j);
    }
    lm_json_arr_end(j);
}

char *pg__plan_write(const pg_program *pr, char *const *files, const char *llir_hash, lm_err *err)
{
    const cg_plan *p = &pr->plan;
    lm_json j;
    lm_json_init_buf(&j, 1, UINT32_MAX);
    writer w = {p, &j};
    lm_json_obj(&j);
    w_str(&w, "format", PG_FORMAT);
    lm_json_kint(&j, "version", PG_FORMAT_VERSION);
    w_str(&w, "compiler", PG_COMPILER);
    w_str(&w, "name", pr->title);
    lm_json_kint(&j, "arch", pr->arch);
    lm_json_key(&j, "provenance");
    lm_json_obj(&j);
    w_str(&w, "egraph", pr->egraph_fp);
    w_str(&w, "genome", pr->genome_fp);
    lm_json_obj_end(&j);
    lm_json_key(&j, "llir");
    lm_json_obj(&j);
    w_str(&w, "file", "llir.json");
    w_str(&w, "xxh3_128", llir_hash);
    lm_json_obj_end(&j);
    w_dims(&w, pr);
    w_buffers(&w);
    w_kernels(&w, files);
    w_blas(&w);
    lm_json_key(&j, "steps");
    lm_json_arr(&j);
    for (uint32_t s = 0; s < p->n_steps; s++) {
        lm_json_obj(&j);
        lm_json_kint(&j, p->steps[s].kind == CG_STEP_KERNEL ? "kernel" : "blas", p->steps[s].index);
        lm_json_obj_end(&j);
    }
    lm_json_arr_end(&j);
    lm_json_key(&j, "inputs");
    lm_json_arr(&j);
    for (uint32_t i = 0; i < p->n_inputs; i++)
        w_io(&w, &pr->inputs[i]);
    lm_json_arr_end(&j);
    lm_json_key(&j, "outputs");
    lm_json_arr(&j);
    for (uint32_t i = 0; i < p->n_outputs; i++)
        w_io(&w, &pr->outputs[i]);
    lm_json_arr_end(&j);
    lm_json_obj_end(&j);
    lm_err je = {0};
    char *text = lm_json_take(&j, NULL, &je);
    if (!text && je.code == LM_ENOMEM)
        pg__fail(err, LM_ENOMEM, pg__at(pr->name), "out of memory writing plan.json");
    else if (!text)
        pg__fail(err, je.code, pg__at(pr->name), "plan.json: %s", je.msg);
    return text;
}

/* ==================================================================================
 * Reading
 * ================================================================================== */

typedef struct reader {
    const char *file; /* "<dir>/plan.json" */
    const char *name; /* the program's */
    cg_plan *p;
    lm_err *err;
    char path[160];
} reader;

static int r_fail(reader *r, int code, const char *key, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int r_fail(reader *r, int code, const char *key, const char *fmt, ...)
{
    char msg[LM_ERR_MSG / 2];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return pg__fail(r->err, code, pg__at(r->name), "%s: %s%s%s: %s", r->file, r->path,
                    r->path[0] && key ? "." : "", key ? key : "", msg);
}

static void at(reader *r, const char *fmt, uint32_t i)
{
    snprintf(r->path, sizeof r->path, fmt, i);
}

static int keys(reader *r, json_t *o, const char *known)
{
    if (!json_is_object(o)) return r_fail(r, LM_EPARSE, NULL, "expected an object");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        (void)v;
        size_t kl = strlen(key);
        bool ok = false;
        for (const char *k = known; *k && !ok;) {
            const char *e = strchr(k, ' ');
            size_t l = e ? (size_t)(e - k) : strlen(k);
            ok = l == kl && strncmp(k, key, l) == 0;
            k += l + (e ? 1 : 0);
        }
        if (!ok) return r_fail(r, LM_EPARSE, key, "unknown key (known: %s)", known);
    }
    return 0;
}

static json_t *need(reader *r, json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!v) r_fail(r, LM_EPARSE, key, "missing");
    return v;
}

static int r_int(reader *r, json_t *o, const char *key, int64_t lo, int64_t hi, int64_t *out)
{
    *out = 0;
    json_t *v = need(r, o, key);
    if (!v) return r->err->code;
    if (!json_is_integer(v)) return r_fail(r, LM_EPARSE, key, "expected an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return r_fail(r, LM_EPARSE, key, "%lld is out of range [%lld, %lld]", (long long)x,
                      (long long)lo, (long long)hi);
    *out = x;
    return 0;
}

static int r_u32(reader *r, json_t *o, const char *key, uint32_t *out)
{
    *out = 0;
    int64_t x;
    if (r_int(r, o, key, 0, (int64_t)UINT32_MAX - 1, &x)) return r->err->code;
    *out = (uint32_t)x;
    return 0;
}

/* A buffer or node id, or null for LM_NONE. */
static int r_id(reader *r, json_t *o, const char *key, uint32_t *out)
{
    json_t *v = need(r, o, key);
    if (!v) return r->err->code;
    if (json_is_null(v)) {
        *out = LM_NONE;
        return 0;
    }
    return r_u32(r, o, key, out);
}

static int r_str(reader *r, json_t *o, const char *key, const char **out)
{
    *out = "";
    json_t *v = need(r, o, key);
    if (!v) return r->err->code;
    if (!json_is_string(v)) return r_fail(r, LM_EPARSE, key, "expected a string");
    *out = json_string_value(v);
    return 0;
}

static int r_pick(reader *r, json_t *o, const char *key, const char *const *names, uint32_t n,
                  uint32_t *out)
{
    *out = 0;
    const char *s;
    if (r_str(r, o, key, &s)) return r->err->code;
    for (uint32_t i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = i;
            return 0;
        }
    return r_fail(r, LM_EPARSE, key, "\"%.40s\" is not one of the names allowed", s);
}

static int r_dtype(reader *r, json_t *o, const char *key, hl_dtype *out)
{
    *out = HL_F32;
    const char *s;
    if (r_str(r, o, key, &s)) return r->err->code;
    if (hl_dtype_parse(s, out) != 0)
        return r_fail(r, LM_EPARSE, key, "\"%.40s\" is not a dtype (f32, f16, bf16, ...)", s);
    return 0;
}

static int r_expr_v(reader *r, json_t *v, const char *key, hl_expr *out)
{
    *out = HL_NONE;
    if (!v || !json_is_string(v)) return r_fail(r, LM_EPARSE, key, "expected an expression string");
    uint32_t nv = hl_var_count(r->p->exprs);
    lm_err he = {0};
    if (hl_e_parse(r->p->exprs, json_string_value(v), out, &he) != HL_OK)
        return r_fail(r, he.code == HL_ERR_NOMEM ? LM_ENOMEM : LM_EPARSE, key,
                      "expression \"%.60s\": %s", json_string_value(v), he.msg);
    if (hl_var_count(r->p->exprs) != nv)
        return r_fail(r, LM_EPARSE, key, "expression \"%.60s\" names '%s', which is not a dim",
                      json_string_value(v), hl_var_name(r->p->exprs, nv));
    if (hl_e_has_z(r->p->exprs, *out))
        return r_fail(r, LM_EPARSE, key, "expression \"%.60s\" uses z", json_string_value(v));
    return 0;
}

static int r_expr(reader *r, json_t *o, const char *key, hl_expr *out)
{
    *out = HL_NONE;
    json_t *v = need(r, o, key);
    if (!v) return r->err->code;
    return r_expr_v(r, v, key, out);
}

static json_t *r_array(reader *r, json_t *o, const char *key, size_t max)
{
    json_t *a = need(r, o, key);
    if (!a) return NULL;
    if (!json_is_array(a) || json_array_size(a) > max) {
        r_fail(r, LM_EPARSE, key, "expected an array of at most %zu entries", max);
        return NULL;
    }
    return a;
}

static int r_f64(reader *r, json_t *o, const char *key, double *out)
{
    *out = 0;
    json_t *v = need(r, o, key);
    if (!v) return r->err->code;
    if (!json_is_number(v)) return r_fail(r, LM_EPARSE, key, "expected a number");
    *out = json_number_value(v);
    return 0;
}

/* Reads dir/rel (rel a plain path under kernels/, or llir.json) into a new string. */
static char *read_rel(reader *r, const char *dir, const char *rel, const char *key, size_t *len)
{
    bool ok = rel[0] && rel[0] != '/' && !strstr(rel, "..") && !strchr(rel, '\\');
    if (!ok) {
        r_fail(r, LM_EPARSE, key, "\"%.80s\" is not a file name inside the program's directory",
               rel);
        return NULL;
    }
    size_t n = strlen(dir) + strlen(rel) + 2;
    char *path = pg__alloc(n, 1);
    if (!path) {
        pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
        return NULL;
    }
    snprintf(path, n, "%s/%s", dir, rel);
    lm_err fe = {0};
    char *text = lm_read_text(path, PG_MAX_FILE_BYTES, len, &fe);
    pg__free(path);
    if (!text) {
        lm_err_copy(r->err, &fe);
        pg__wrap(r->err, r->name, "%s: %s%s%s", r->file, r->path, r->path[0] ? "." : "", key);
    }
    return text;
}

static int r_io(reader *r, json_t *o, pg_io *io)
{
    if (keys(r, o, "name dtype shape buffer")) return r->err->code;
    const char *name;
    if (r_str(r, o, "name", &name) || r_dtype(r, o, "dtype", &io->dtype) ||
        r_u32(r, o, "buffer", &io->buf))
        return r->err->code;
    if (!(io->name = pg__strdup(name)))
        return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    json_t *sh = r_array(r, o, "shape", HL_MAX_DIMS);
    if (!sh) return r->err->code;
    io->ndim = (uint32_t)json_array_size(sh);
    for (uint32_t d = 0; d < io->ndim; d++) {
        char k[24];
        snprintf(k, sizeof k, "shape[%u]", d);
        if (r_expr_v(r, json_array_get(sh, d), k, &io->shape[d])) return r->err->code;
    }
    return 0;
}

static int r_dims(reader *r, pg_program *pr, json_t *dims)
{
    cg_plan *p = r->p;
    p->n_dims = (uint32_t)json_array_size(dims);
    p->dims = pg__alloc(p->n_dims, sizeof *p->dims);
    p->dim_names = pg__alloc(p->n_dims, sizeof *p->dim_names);
    pr->dims = pg__alloc(p->n_dims, sizeof *pr->dims);
    if (!p->dims || !p->dim_names || !pr->dims)
        return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t i = 0; i < p->n_dims; i++) {
        json_t *o = json_array_get(dims, i);
        at(r, "dims[%u]", i);
        const char *name;
        hl_dim *d = &p->dims[i];
        if (keys(r, o, "name lo hi profile buckets") || r_str(r, o, "name", &name) ||
            r_int(r, o, "lo", 1, INT64_MAX, &d->lo) || r_int(r, o, "hi", 1, INT64_MAX, &d->hi) ||
            r_int(r, o, "profile", 1, INT64_MAX, &d->profile))
            return r->err->code;
        if (!hl_var_name_valid(name) || hl_var_find(p->exprs, name) != HL_NONE)
            return r_fail(r, LM_EPARSE, "name", "\"%.40s\" is not a new valid dim name", name);
        if (!(p->dim_names[i] = pg__strdup(name)))
            return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
        d->expr = hl_e_var(p->exprs, name);
        if (d->expr == HL_NONE) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
        d->var = hl_e_get(p->exprs, d->expr).var;
        json_t *bk = r_array(r, o, "buckets", PG_MAX_BUCKETS);
        if (!bk) return r->err->code;
        pr->dims[i].n = (uint32_t)json_array_size(bk);
        for (uint32_t b = 0; b < pr->dims[i].n; b++) {
            json_t *pair = json_array_get(bk, b);
            if (!json_is_array(pair) || json_array_size(pair) != 2 ||
                !json_is_integer(json_array_get(pair, 0)) ||
                !json_is_integer(json_array_get(pair, 1)))
                return r_fail(r, LM_EPARSE, "buckets", "bucket %u is not [lo, hi]", b);
            pr->dims[i].b[b].lo = json_integer_value(json_array_get(pair, 0));
            pr->dims[i].b[b].hi = json_integer_value(json_array_get(pair, 1));
        }
    }
    return 0;
}

static int r_buffers(reader *r, json_t *a)
{
    cg_plan *p = r->p;
    p->n_buffers = (uint32_t)json_array_size(a);
    p->buffers = pg__alloc(p->n_buffers, sizeof *p->buffers);
    if (!p->buffers) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t b = 0; b < p->n_buffers; b++) {
        json_t *o = json_array_get(a, b);
        cg_buffer *x = &p->buffers[b];
        at(r, "buffers[%u]", b);
        uint32_t kind = 0;
        if (keys(r, o, "kind index dtype numel first_step last_step llir_node") ||
            r_pick(r, o, "kind", BUF_KINDS, 4, &kind) || r_dtype(r, o, "dtype", &x->dtype) ||
            r_expr(r, o, "numel", &x->numel) || r_u32(r, o, "first_step", &x->first_step) ||
            r_u32(r, o, "last_step", &x->last_step) || r_id(r, o, "llir_node", &x->llir_node))
            return r->err->code;
        x->kind = (cg_buf_kind)kind;
        x->index = LM_NONE;
        x->bytes =
            hl_e_mul(p->exprs, x->numel, hl_e_num(p->exprs, (int64_t)hl_dtype_size(x->dtype)));
        if (x->bytes == HL_NONE) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
        if ((x->kind == CG_BUF_INPUT || x->kind == CG_BUF_OUTPUT) &&
            r_u32(r, o, "index", &x->index))
            return r->err->code;
    }
    return 0;
}

static int r_kernels(reader *r, json_t *a, const char *dir)
{
    cg_plan *p = r->p;
    p->n_kernels = (uint32_t)json_array_size(a);
    p->kernels = pg__alloc(p->n_kernels, sizeof *p->kernels);
    if (!p->kernels) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t k = 0; k < p->n_kernels; k++) {
        json_t *o = json_array_get(a, k);
        cg_kernel *x = &p->kernels[k];
        x->ops = x->strided = x->divs32 = x->divs64 = HL_NONE; /* the cost model's */
        at(r, "kernels[%u]", k);
        const char *src, *tmpl;
        uint32_t sh = 0;
        if (keys(r, o, "source template llir_node grid block shared_bytes params") ||
            r_str(r, o, "source", &src) || r_str(r, o, "template", &tmpl) ||
            r_id(r, o, "llir_node", &x->llir_node) || r_u32(r, o, "shared_bytes", &sh))
            return r->err->code;
        x->shared_bytes = sh;
        if (!(x->template_name = pg__strdup(tmpl)))
            return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
        json_t *grid = r_array(r, o, "grid", 3), *block = r_array(r, o, "block", 3);
        if (!grid || !block) return r->err->code;
        if (json_array_size(grid) != 3 || json_array_size(block) != 3)
            return r_fail(r, LM_EPARSE, "grid", "grid and block have three entries each");
        for (uint32_t d = 0; d < 3; d++) {
            char kk[16];
            snprintf(kk, sizeof kk, "grid[%u]", d);
            if (r_expr_v(r, json_array_get(grid, d), kk, &x->grid[d])) return r->err->code;
            json_t *bv = json_array_get(block, d);
            if (!json_is_integer(bv) || json_integer_value(bv) < 1 || json_integer_value(bv) > 1024)
                return r_fail(r, LM_EPARSE, "block", "entry %u is not in 1 .. 1024", d);
            x->block[d] = (uint32_t)json_integer_value(bv);
        }
        json_t *params = r_array(r, o, "params", CG_MAX_PARAMS);
        if (!params) return r->err->code;
        x->n_params = (uint32_t)json_array_size(params);
        for (uint32_t j = 0; j < x->n_params; j++) {
            json_t *q = json_array_get(params, j);
            char pp[160];
            snprintf(pp, sizeof pp, "kernels[%u].params[%u]", k, j);
            snprintf(r->path, sizeof r->path, "%s", pp);
            if (keys(r, q, "buffer written dim")) return r->err->code;
            if (json_object_get(q, "dim")) {
                x->params[j].kind = CG_P_DIM;
                if (r_u32(r, q, "dim", &x->params[j].dim)) return r->err->code;
            } else {
                x->params[j].kind = CG_P_BUFFER;
                json_t *wr = json_object_get(q, "written");
                if (r_u32(r, q, "buffer", &x->params[j].buf)) return r->err->code;
                if (wr && !json_is_boolean(wr))
                    return r_fail(r, LM_EPARSE, "written", "expected true or false");
                x->params[j].written = wr && json_is_true(wr);
            }
        }
        at(r, "kernels[%u]", k);
        if (!(x->source = read_rel(r, dir, src, "source", NULL))) return r->err->code;
    }
    return 0;
}

static int r_blas(reader *r, json_t *a)
{
    cg_plan *p = r->p;
    p->n_blas = (uint32_t)json_array_size(a);
    p->blas = pg__alloc(p->n_blas, sizeof *p->blas);
    if (!p->blas) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t i = 0; i < p->n_blas; i++) {
        json_t *o = json_array_get(a, i);
        cg_blas *x = &p->blas[i];
        ll_matmul *m = &x->mm;
        at(r, "blas[%u]", i);
        uint32_t oa = 0, ob = 0, epi = 0;
        if (keys(r, o,
                 "llir_node a b c d bias workspace m n k batch lda ldb stride_a stride_b "
                 "order_a order_b alpha beta epilogue type_a type_b type_c type_d type_bias") ||
            r_id(r, o, "llir_node", &x->llir_node) || r_id(r, o, "a", &x->a) ||
            r_id(r, o, "b", &x->b) || r_id(r, o, "c", &x->c) || r_id(r, o, "d", &x->d) ||
            r_id(r, o, "bias", &x->bias) || r_id(r, o, "workspace", &x->workspace) ||
            r_expr(r, o, "m", &m->m) || r_expr(r, o, "n", &m->n) || r_expr(r, o, "k", &m->k) ||
            r_expr(r, o, "batch", &m->batch) || r_expr(r, o, "lda", &m->lda) ||
            r_expr(r, o, "ldb", &m->ldb) || r_expr(r, o, "stride_a", &m->stride_a) ||
            r_expr(r, o, "stride_b", &m->stride_b) || r_pick(r, o, "order_a", ORDERS, 2, &oa) ||
            r_pick(r, o, "order_b", ORDERS, 2, &ob) || r_f64(r, o, "alpha", &m->alpha) ||
            r_f64(r, o, "beta", &m->beta) || r_pick(r, o, "epilogue", EPIS, 4, &epi) ||
            r_dtype(r, o, "type_a", &m->type_a) || r_dtype(r, o, "type_b", &m->type_b) ||
            r_dtype(r, o, "type_c", &m->type_c) || r_dtype(r, o, "type_d", &m->type_d) ||
            r_dtype(r, o, "type_bias", &m->type_bias))
            return r->err->code;
        m->order_a = oa ? LL_COL_MAJOR : LL_ROW_MAJOR;
        m->order_b = ob ? LL_COL_MAJOR : LL_ROW_MAJOR;
        m->epilogue = (ll_epilogue)epi;
    }
    return 0;
}

static int r_steps(reader *r, json_t *a)
{
    cg_plan *p = r->p;
    p->n_steps = (uint32_t)json_array_size(a);
    p->steps = pg__alloc(p->n_steps, sizeof *p->steps);
    if (!p->steps) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t s = 0; s < p->n_steps; s++) {
        json_t *o = json_array_get(a, s);
        at(r, "steps[%u]", s);
        if (keys(r, o, "kernel blas")) return r->err->code;
        bool k = json_object_get(o, "kernel") != NULL;
        if (k == (json_object_get(o, "blas") != NULL))
            return r_fail(r, LM_EPARSE, NULL, "a step names one kernel or one blas call");
        p->steps[s].kind = k ? CG_STEP_KERNEL : CG_STEP_BLAS;
        if (r_u32(r, o, k ? "kernel" : "blas", &p->steps[s].index)) return r->err->code;
    }
    return 0;
}

static int r_ios(reader *r, json_t *a, pg_io **out, uint32_t *n, uint32_t **bufs, const char *what)
{
    *n = (uint32_t)json_array_size(a);
    *out = pg__alloc(*n, sizeof **out);
    *bufs = pg__alloc(*n, sizeof **bufs);
    if (!*out || !*bufs) return pg__fail(r->err, LM_ENOMEM, pg__at(r->name), "out of memory");
    for (uint32_t i = 0; i < *n; i++) {
        char fmt[32];
        snprintf(fmt, sizeof fmt, "%s[%%u]", what);
        at(r, fmt, i);
        if (r_io(r, json_array_get(a, i), &(*out)[i])) return r->err->code;
        (*bufs)[i] = (*out)[i].buf;
    }
    return 0;
}

int pg__plan_read(pg_program *pr, const char *dir, char **llir_file, char **llir_hash, lm_err *err)
{
    *llir_file = *llir_hash = NULL;
    size_t n = strlen(dir) + 16;
    char *file = pg__alloc(n, 1);
    if (!file) return pg__fail(err, LM_ENOMEM, pg__at(pr->name), "out of memory");
    snprintf(file, n, "%s/plan.json", dir);
    reader r = {file, pr->name, &pr->plan, err, ""};
    json_t *root = NULL;
    size_t len;
    lm_err fe = {0};
    char *text = lm_read_text(file, PG_MAX_FILE_BYTES, &len, &fe);
    if (!text) {
        lm_err_copy(err, &fe);
        pg__wrap(err, pr->name, "loading");
        goto done;
    }
    json_error_t je;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root) {
        lm_loc loc = {.file = file,
                      .line = je.line > 0 ? (uint32_t)je.line : 0,
                      .col = je.column > 0 ? (uint32_t)je.column : 0,
                      .node_id = LM_NONE};
        lm_err_set(err, LM_EPARSE, &loc, "malformed JSON: %s", je.text);
        lm_err_prefix(err, "program '%s'", pr->name);
        goto done;
    }
    if (!json_is_object(root)) {
        r_fail(&r, LM_EPARSE, NULL, "the document must be a JSON object");
        goto done;
    }
    const char *s;
    int64_t v;
    if (keys(&r, root,
             "format version compiler name arch provenance llir dims buffers kernels blas "
             "steps inputs outputs") ||
        r_str(&r, root, "format", &s))
        goto done;
    if (strcmp(s, PG_FORMAT) != 0) {
        r_fail(&r, LM_EPARSE, "format", "expected \"%s\", got \"%.40s\"", PG_FORMAT, s);
        goto done;
    }
    if (r_int(&r, root, "version", INT64_MIN, INT64_MAX, &v)) goto done;
    if (v != PG_FORMAT_VERSION) {
        r_fail(&r, LM_EUNSUPPORTED, "version",
               "the plan is format version %lld; this build reads version %d: compile the "
               "program again",
               (long long)v, PG_FORMAT_VERSION);
        goto done;
    }
    if (r_str(&r, root, "compiler", &s)) goto done;
    if (strcmp(s, PG_COMPILER) != 0) {
        r_fail(&r, LM_EUNSUPPORTED, "compiler",
               "the plan was compiled by \"%.60s\"; this is \"%s\", which runs only its own "
               "plans: compile the program again with it",
               s, PG_COMPILER);
        goto done;
    }
    if (r_str(&r, root, "name", &s)) goto done;
    if (!(pr->title = pg__strdup(s))) goto oom;
    if (r_int(&r, root, "arch", 10, 1000, &v)) goto done;
    pr->arch = (int)v;
    json_t *prov = need(&r, root, "provenance"), *ll = need(&r, root, "llir");
    if (!prov || !ll) goto done;
    r.path[0] = '\0';
    snprintf(r.path, sizeof r.path, "provenance");
    const char *eg, *ge, *lf, *lh;
    if (keys(&r, prov, "egraph genome") || r_str(&r, prov, "egraph", &eg) ||
        r_str(&r, prov, "genome", &ge))
        goto done;
    snprintf(r.path, sizeof r.path, "llir");
    if (keys(&r, ll, "file xxh3_128") || r_str(&r, ll, "file", &lf) ||
        r_str(&r, ll, "xxh3_128", &lh))
        goto done;
    r.path[0] = '\0';
    if (!(pr->egraph_fp = pg__strdup(eg)) || !(pr->genome_fp = pg__strdup(ge)) ||
        !(*llir_file = pg__strdup(lf)) || !(*llir_hash = pg__strdup(lh)))
        goto oom;
    if (!(pr->plan.exprs = hl_expr_pool_new())) goto oom;
    json_t *a;
    if (!(a = r_array(&r, root, "dims", 4096)) || r_dims(&r, pr, a)) goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "buffers", (size_t)1 << 24)) || r_buffers(&r, a)) goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "kernels", (size_t)1 << 24)) || r_kernels(&r, a, dir)) goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "blas", (size_t)1 << 24)) || r_blas(&r, a)) goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "steps", (size_t)1 << 24)) || r_steps(&r, a)) goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "inputs", (size_t)1 << 20)) ||
        r_ios(&r, a, &pr->inputs, &pr->plan.n_inputs, &pr->plan.input_buf, "inputs"))
        goto done;
    r.path[0] = '\0';
    if (!(a = r_array(&r, root, "outputs", (size_t)1 << 20)) ||
        r_ios(&r, a, &pr->outputs, &pr->plan.n_outputs, &pr->plan.output_buf, "outputs"))
        goto done;
    goto done;
oom:
    pg__fail(err, LM_ENOMEM, pg__at(pr->name), "out of memory reading %s", file);
done:
    json_decref(root);
    pg__free(file);
    return err->code;
}
