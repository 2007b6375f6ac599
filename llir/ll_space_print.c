/* ll_space_print.c - what `luminal_search --emit space` and `--emit space-json` print:
 * the space's summary, and the whole e-graph as egraph-serialize JSON with the dtype of
 * every IR class added to its class data; and the space's fingerprint, hashed from the
 * serialization's arrays (no text). */
#include "ll_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: no allocation */
#include <xxhash.h>

static const char *DIALECT[LL_D_COUNT] = {"io",     "hlir", "kernel",  "region",
                                          "fused",  "load", "inline",  "library"};

void ll_space_fprint_summary(const ll_space *s, FILE *f)
{
    const ll_space_stats *st = &s->stats;
    fprintf(f, "space: %u classes, %u searchable (%u reachable, %u with a decision), %" PRIu64
               " choices, log2(programs) %.2f\n",
            st->classes, st->searchable, st->reachable, st->decisions, st->choices,
            st->log2_programs);
    fprintf(f, "  left out: %u subsumed, %u of HLIR kinds, %u pruned (a child with no program)\n",
            st->subsumed, st->hlir_only, st->pruned);
    fprintf(f, "  dims:");
    for (uint32_t i = 0; i < s->n_dims; i++)
        fprintf(f, " %s [%lld, %lld] at %lld%s", s->dims[i].name, (long long)s->dims[i].lo,
                (long long)s->dims[i].hi, (long long)s->dims[i].profile,
                s->dims[i].declared ? "" : " (undeclared)");
    fprintf(f, "%s\n", s->n_dims ? "" : " none");
    fprintf(f, "  choices per dialect:");
    for (int d = 0; d < LL_D_COUNT; d++)
        if (st->per_dialect[d]) fprintf(f, " %s %u", DIALECT[d], st->per_dialect[d]);
    fprintf(f, "\n  alternatives per op:");
    for (uint32_t op = 0; op < ll_op_count(); op++)
        if (s->op_counts[op]) fprintf(f, " %s %u", ll_op_get((ll_op)op)->name, s->op_counts[op]);
    fprintf(f, "\n");
    /* the decisions by the ops that choose among themselves: "KAdd|FStore 13" */
    typedef struct row {
        char key[160];
        uint32_t n;
    } row;
    row rows[64];
    uint32_t nr = 0;
    for (uint32_t c = 0; c < s->ns; c++) {
        uint32_t nch = s->cstart[c + 1] - s->cstart[c];
        if (!s->reach[c] || nch < 2) continue;
        char key[160];
        size_t o = 0;
        key[0] = 0;
        for (uint32_t j = s->cstart[c]; j < s->cstart[c + 1] && o < sizeof key - 24; j++)
            o += (size_t)snprintf(key + o, sizeof key - o, "%s%s", o ? "|" : "",
                                  s->cop[j] == LL_OP_NONE ? "list" : ll_op_get(s->cop[j])->name);
        uint32_t r = 0;
        while (r < nr && strcmp(rows[r].key, key) != 0)
            r++;
        if (r == nr) {
            if (nr == 64) continue;
            memcpy(rows[nr].key, key, sizeof key);
            rows[nr++].n = 0;
        }
        rows[r].n++;
    }
    fprintf(f, "  decisions:");
    for (uint32_t r = 0; r < nr; r++)
        fprintf(f, " %s %u%s", rows[r].key, rows[r].n, r + 1 < nr ? "," : "");
    fprintf(f, "%s\n", nr ? "" : " none");
}

int ll_space_write_json(const ll_space *s, FILE *f, lm_err *err)
{
    char *text = ll__eg_json(s->e, &s->ser, err);
    if (!text) return err ? err->code : LM_EIO;
    json_error_t je;
    json_t *root = json_loads(text, 0, &je);
    free(text);
    json_t *cd = root ? json_object_get(root, "class_data") : NULL;
    if (!cd) {
        json_decref(root);
        return ll__fail(err, LM_EIO, NULL, "space json: the engine's JSON did not read back: %s",
                        je.text);
    }
    int rc = LM_OK;
    for (uint32_t c = 0; c < s->nc && !rc; c++) {
        if (s->ckind[c] != LL__K_IR || s->dtype[c] < 0) continue;
        char key[24];
        snprintf(key, sizeof key, "c%u", c);
        json_t *obj = json_object_get(cd, key);
        if (!obj || json_object_set_new(obj, "dtype", json_string(hl_dtype_name((hl_dtype)s->dtype[c]))))
            rc = ll__oom(err, "space json");
    }
    if (!rc && json_dumpf(root, f, JSON_COMPACT) != 0)
        rc = ll__fail(err, LM_EIO, NULL, "space json: writing failed");
    if (!rc && fputc('\n', f) == EOF) rc = ll__fail(err, LM_EIO, NULL, "space json: writing failed");
    json_decref(root);
    return rc;
}

/* Feeds v to the hash as 8 little-endian bytes, so the fingerprint does not depend on the
 * host's byte order. */
static void feed(XXH3_state_t *h, uint64_t v)
{
    uint8_t b[8];
    for (uint32_t i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    XXH3_128bits_update(h, b, sizeof b);
}

static void feed_str(XXH3_state_t *h, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    feed(h, n);
    if (n) XXH3_128bits_update(h, s, n);
}

int ll_space_fingerprint(const ll_space *s, char out[33], lm_err *err)
{
    XXH3_state_t st, *h = &st;
    if (!s || !out) return ll__fail(err, LM_EARG, NULL, "ll_space_fingerprint: no space given");
    XXH3_128bits_reset(h);
    const eg_serialized *ser = &s->ser;
    feed(h, ser->n_classes);
    for (uint32_t c = 0; c < ser->n_classes; c++) {
        feed_str(h, eg_sort_name(s->e, (int)ser->class_sort[c]));
        feed(h, (uint64_t)(int64_t)s->dtype[c]);
    }
    feed(h, ser->n_nodes);
    for (uint32_t i = 0; i < ser->n_nodes; i++) {
        const eg_snode *n = &ser->nodes[i];
        feed_str(h, n->op);
        feed(h, n->eclass);
        feed(h, n->subsumed);
        feed(h, n->table == UINT32_MAX ? n->literal : 0);
        feed(h, n->nchildren);
        for (uint32_t k = 0; k < n->nchildren; k++)
            feed(h, ser->children[n->child_start + k]);
    }
    feed(h, ser->n_roots);
    for (uint32_t r = 0; r < ser->n_roots; r++)
        feed(h, ser->roots[r]);
    XXH128_hash_t x = XXH3_128bits_digest(h);
    snprintf(out, 33, "%016" PRIx64 "%016" PRIx64, (uint64_t)x.high64, (uint64_t)x.low64);
    return LM_OK;
}
