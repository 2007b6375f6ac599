/* pg_io.c - a program's inputs and outputs: the IO table made from its LLIR
 * (pg_program_new), and the checks that a plan, its LLIR and its IO table agree (every
 * program, and a loaded one's llir.json against its plan.json). */
#include "pg_int.h"

#include <stdio.h>
#include <string.h>

/* Input and output counts agree between the plan and its LLIR. */
static int check_io_counts(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (ll_graph_input_count(p->llir) == pl->n_inputs &&
        ll_graph_output_count(p->llir) == pl->n_outputs)
        return 0;
    return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                    "the plan has %u inputs and %u outputs, its LLIR %u and %u", pl->n_inputs,
                    pl->n_outputs, ll_graph_input_count(p->llir), ll_graph_output_count(p->llir));
}

/* A memo for hl_expr_copy from src, every entry HL_NONE; NULL when out of memory. */
static hl_expr *memo_new(const hl_expr_pool *src)
{
    uint32_t n = hl_expr_count(src);
    hl_expr *memo = pg__alloc(n + 1, sizeof *memo);
    for (uint32_t i = 0; memo && i < n; i++)
        memo[i] = HL_NONE;
    return memo;
}

/* The name of LLIR input or output node nd (side 1: an output), its i-th: the node's
 * own, else "input<i>" / "output<i>" written into dflt (32 bytes). nd may be NULL. */
static const char *llir_io_name(const ll_node *nd, uint32_t side, uint32_t i, char dflt[32])
{
    snprintf(dflt, 32, "%s%u", side ? "output" : "input", i);
    return nd && nd->prim.name ? nd->prim.name : dflt;
}

/* The IO table from the LLIR's Input and Output nodes (pg_program_new). */
int pg__io_from_llir(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (check_io_counts(p, err)) return err->code;
    const hl_expr_pool *src = ll_graph_exprs(p->llir);
    hl_expr *memo = memo_new(src);
    p->inputs = pg__alloc(pl->n_inputs, sizeof *p->inputs);
    p->outputs = pg__alloc(pl->n_outputs, sizeof *p->outputs);
    if (!memo || !p->inputs || !p->outputs) {
        pg__free(memo);
        return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    }
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        for (uint32_t i = 0; i < n; i++) {
            uint32_t id = side ? ll_graph_output(p->llir, i) : ll_graph_input(p->llir, i);
            const ll_node *nd = ll_graph_node(p->llir, id);
            pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            char dflt[32];
            io->name = pg__strdup(llir_io_name(nd, side, i, dflt));
            io->dtype = nd->dtype;
            io->ndim = nd->ndim;
            io->buf = side ? pl->output_buf[i] : pl->input_buf[i];
            if (!io->name) {
                pg__free(memo);
                return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
            }
            if (nd->ndim > HL_MAX_DIMS) {
                pg__free(memo);
                return pg__fail(err, LM_EVERIFY, pg__at(p->name), "LLIR node %u has %u dims", id, nd->ndim);
            }
            for (uint32_t d = 0; d < nd->ndim; d++) {
                io->shape[d] = hl_expr_copy(p->plan.exprs, src, nd->shape[d], memo, HL_COPY_KNOWN_VARS);
                if (io->shape[d] == HL_NONE) {
                    pg__free(memo);
                    return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                                    "%s '%s': its shape names something that is not a dim of "
                                    "the plan",
                                    side ? "output" : "input", io->name);
                }
            }
        }
    }
    pg__free(memo);
    return 0;
}

/* An input or output name is a tensor name of the graph format (docs/graph-json.md): 1
 * to 63 characters of A-Z a-z 0-9 _ . - %, and not "." or "..". So it is a plain file
 * name: luminal_run writes DIR/NAME.npy and never outside DIR. */
static bool io_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > 63 || !strcmp(s, ".") || !strcmp(s, "..")) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '.' || c == '-' || c == '%';
        if (!ok) return false;
    }
    return true;
}

/* Every name is valid and unique on its side: two inputs of one name would be fed from
 * one file or one tensor, two outputs of one name written over each other. A program
 * has at least one output. */
static int check_io_names(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (pl->n_outputs == 0)
        return pg__fail(err, LM_EVERIFY, pg__at(p->name), "the program has no outputs: nothing to run");
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        const pg_io *io = side ? p->outputs : p->inputs;
        const char *what = side ? "output" : "input";
        for (uint32_t i = 0; i < n; i++) {
            if (!io_name_ok(io[i].name))
                return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                                "%s %u is named \"%.80s\", which is not a tensor name (1 to 63 "
                                "characters of A-Z a-z 0-9 _ . - %%, not \".\" or \"..\"): "
                                "names become file names",
                                what, i, io[i].name);
            for (uint32_t j = 0; j < i; j++)
                if (!strcmp(io[j].name, io[i].name))
                    return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                                    "%ss %u and %u are both named '%s'; names must be unique",
                                    what, j, i, io[i].name);
        }
    }
    return 0;
}

/* A loaded program's LLIR is its plan's program: the same inputs and outputs in the same
 * order, with the same names, dtypes and shapes (the CPU backend runs the LLIR on the
 * plan's inputs and reads its outputs by position), so an empty or foreign llir.json is
 * refused here, never run. */
int pg__check_llir_io(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (ll_graph_node_count(p->llir) == 0)
        return pg__fail(err, LM_EVERIFY, pg__at(p->name), "its LLIR graph has no nodes");
    if (check_io_counts(p, err)) return err->code;
    const hl_expr_pool *src = ll_graph_exprs(p->llir);
    hl_expr *memo = memo_new(src);
    if (!memo) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    int rc = 0;
    for (uint32_t side = 0; side < 2 && !rc; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        const char *what = side ? "output" : "input";
        for (uint32_t i = 0; i < n && !rc; i++) {
            uint32_t id = side ? ll_graph_output(p->llir, i) : ll_graph_input(p->llir, i);
            const ll_node *nd = ll_graph_node(p->llir, id);
            const pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            char dflt[32];
            const char *lname = llir_io_name(nd, side, i, dflt);
            bool same = nd && !strcmp(lname, io->name) && nd->dtype == io->dtype &&
                        nd->ndim == io->ndim;
            for (uint32_t d = 0; same && d < io->ndim; d++)
                same = hl_expr_copy(p->plan.exprs, src, nd->shape[d], memo, HL_COPY_KNOWN_VARS) == io->shape[d];
            if (!same)
                rc = pg__fail(err, LM_EVERIFY, pg__at(p->name),
                              "%s %u is '%s' (%s, rank %u) in the plan, but '%s' (%s, rank %u) "
                              "or of another shape in its LLIR: llir.json is not this plan's",
                              what, i, io->name, hl_dtype_name(io->dtype), io->ndim, lname,
                              nd ? hl_dtype_name(nd->dtype) : "?", nd ? nd->ndim : 0);
        }
    }
    for (uint32_t b = 0; b < pl->n_buffers && !rc; b++)
        if (pl->buffers[b].llir_node != LM_NONE &&
            pl->buffers[b].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, pg__at(p->name), "buffer %u names LLIR node %u of %u", b,
                          pl->buffers[b].llir_node, ll_graph_node_count(p->llir));
    for (uint32_t k = 0; k < pl->n_kernels && !rc; k++)
        if (pl->kernels[k].llir_node != LM_NONE &&
            pl->kernels[k].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, pg__at(p->name), "kernel %u names LLIR node %u of %u", k,
                          pl->kernels[k].llir_node, ll_graph_node_count(p->llir));
    for (uint32_t k = 0; k < pl->n_blas && !rc; k++)
        if (pl->blas[k].llir_node != LM_NONE &&
            pl->blas[k].llir_node >= ll_graph_node_count(p->llir))
            rc = pg__fail(err, LM_EVERIFY, pg__at(p->name), "library call %u names LLIR node %u of %u", k,
                          pl->blas[k].llir_node, ll_graph_node_count(p->llir));
    pg__free(memo);
    return rc;
}

/* The LLIR's dims are the plan's (by name, with the same ranges); the IO table agrees
 * with the buffers it names. */
int pg__check_consistency(pg_program *p, lm_err *err)
{
    const cg_plan *pl = &p->plan;
    if (check_io_names(p, err)) return err->code;
    if (ll_graph_dim_count(p->llir) != pl->n_dims)
        return pg__fail(err, LM_EVERIFY, pg__at(p->name), "the plan has %u dims, its LLIR %u", pl->n_dims,
                        ll_graph_dim_count(p->llir));
    p->llir_dim = pg__alloc(pl->n_dims, sizeof *p->llir_dim);
    if (!p->llir_dim) return pg__fail(err, LM_ENOMEM, pg__at(p->name), "out of memory");
    for (uint32_t i = 0; i < pl->n_dims; i++) {
        p->llir_dim[i] = LM_NONE;
        for (uint32_t j = 0; j < pl->n_dims; j++)
            if (strcmp(ll_graph_dim_name(p->llir, j), pl->dim_names[i]) == 0) p->llir_dim[i] = j;
        if (p->llir_dim[i] == LM_NONE)
            return pg__fail(err, LM_EVERIFY, pg__at(p->name), "dim '%s' of the plan is not in its LLIR",
                            pl->dim_names[i]);
        const hl_dim *a = &pl->dims[i], *b = ll_graph_dim_at(p->llir, p->llir_dim[i]);
        if (a->lo != b->lo || a->hi != b->hi)
            return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                            "dim '%s' is [%lld, %lld] in the plan, [%lld, %lld] in its LLIR",
                            pl->dim_names[i], (long long)a->lo, (long long)a->hi, (long long)b->lo,
                            (long long)b->hi);
    }
    int64_t prof[64];
    if (pl->n_dims > 64) return pg__fail(err, LM_ELIMIT, pg__at(p->name), "more than 64 dims");
    for (uint32_t i = 0; i < pl->n_dims; i++)
        prof[i] = pl->dims[i].profile;
    for (uint32_t side = 0; side < 2; side++) {
        uint32_t n = side ? pl->n_outputs : pl->n_inputs;
        for (uint32_t i = 0; i < n; i++) {
            const pg_io *io = side ? &p->outputs[i] : &p->inputs[i];
            const char *what = side ? "output" : "input";
            uint32_t want = side ? pl->output_buf[i] : pl->input_buf[i];
            if (io->buf != want || io->buf >= pl->n_buffers)
                return pg__fail(err, LM_EVERIFY, pg__at(p->name), "%s '%s' names buffer %u, the plan %u",
                                what, io->name, io->buf, want);
            if ((unsigned)io->dtype >= HL_DTYPE_COUNT || io->ndim > PG_MAX_RANK)
                return pg__fail(err, LM_EVERIFY, pg__at(p->name), "%s '%s' has a bad dtype or rank", what,
                                io->name);
            if (io->dtype != pl->buffers[io->buf].dtype)
                return pg__fail(err, LM_EVERIFY, pg__at(p->name), "%s '%s' is %s, its buffer %s", what,
                                io->name, hl_dtype_name(io->dtype),
                                hl_dtype_name(pl->buffers[io->buf].dtype));
            int64_t numel = 1, bn;
            for (uint32_t d = 0; d < io->ndim; d++) {
                int64_t v;
                if (pg__eval(pl, io->shape[d], prof, &v, p->name, what, err)) return err->code;
                numel *= v;
            }
            if (pg__eval(pl, pl->buffers[io->buf].numel, prof, &bn, p->name, what, err))
                return err->code;
            if (numel != bn)
                return pg__fail(err, LM_EVERIFY, pg__at(p->name),
                                "%s '%s' has %lld elements at the profile dims, its buffer %u "
                                "%lld",
                                what, io->name, (long long)numel, io->buf, (long long)bn);
        }
    }
    return 0;
}

