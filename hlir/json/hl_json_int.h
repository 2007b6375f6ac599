/* hl_json_int.h - internals shared by the JSON graph reader's files (not public).
 *
 * The reader (hl_json_read.c) parses the text with jansson, checks the document's shape,
 * resolves tensor names, sorts the nodes topologically and then builds each node
 * (hl_json_ops.c) through the builder. hl_json_field.c holds the typed field getters; each
 * reports a failure through hl__json_fail, which names the source, the object being read
 * (r->where, e.g. "nodes[3] 'h'"), the field and the reason, so every rejection says
 * where and why. The format itself is documented in docs/graph-json.md.
 */
#ifndef LUMINAL_HL_JSON_INT_H
#define LUMINAL_HL_JSON_INT_H

#include "hl_int.h"
#include "hl_build.h"
#include "hl_json.h"

#include <jansson.h>

/* One tensor name: a graph input or a node of the document. */
typedef struct hl__json_name {
    const char *name; /* borrowed from the JSON tree */
    uint32_t idx;     /* position in "inputs" or "nodes" */
    bool is_input;
} hl__json_name;

/* One input reference of a document node, resolved to an entry of names. */
typedef struct hl__json_ref {
    uint32_t name; /* index into hl__json_reader.names (sorted order) */
    json_t *view;  /* the reference's object when it gives a view, else NULL */
} hl__json_ref;

/* A document node: its JSON object and its resolved references. */
typedef struct hl__json_node {
    json_t *obj;
    const char *name;
    const char *op;
    uint32_t n_ref;
    hl__json_ref *refs; /* owned */
    hl_t t;             /* the built tensor, once built */
    bool built;
} hl__json_node;

typedef struct hl__json_reader {
    const char *src; /* source name for messages */
    hl_graph *g;     /* the graph being built (owned until returned) */
    hl_error *err;   /* the caller's error record */
    json_t *root;
    char where[160]; /* the object being read, e.g. "nodes[3] 'h'" */

    uint32_t n_inputs;
    hl_t *inputs; /* owned: handles of the graph inputs, in order */
    uint32_t n_nodes;
    hl__json_node *nodes; /* owned */
    uint32_t n_names;
    hl__json_name *names; /* owned, sorted by name (strcmp) */
} hl__json_reader;

/* Records an error "src: where: field 'f': message" (field may be NULL) and returns
 * code. The first error wins (hl_error_set). */
hl_status hl__json_fail(hl__json_reader *r, hl_status code, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Sets r->where (printf-style). */
void hl__json_where(hl__json_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Checks that every key of obj is one of the space-separated names in allowed. */
hl_status hl__json_check_keys(hl__json_reader *r, json_t *obj, const char *allowed);

/* Typed getters. Each reads field f of obj; when the field is absent it uses the
 * default if the getter has one (has_default) and otherwise fails "missing". */
hl_status hl__json_get_string(hl__json_reader *r, json_t *obj, const char *f, const char **out);
hl_status hl__json_get_int(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                           int64_t def, int64_t lo, int64_t hi, int64_t *out);
hl_status hl__json_get_float(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                             float def, float *out);
hl_status hl__json_get_bool(hl__json_reader *r, json_t *obj, const char *f, bool def, bool *out);
hl_status hl__json_get_dtype(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                             hl_dtype def, hl_dtype *out);
/* An expression: a JSON integer or a string in the text form. allow_z says whether the
 * index variable may occur; every other name must be a declared dim. label names the
 * field in messages (e.g. "shape[1]"). */
hl_status hl__json_expr(hl__json_reader *r, json_t *v, const char *label, bool allow_z,
                        hl_expr *out);
hl_status hl__json_get_expr(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                            int64_t def, bool allow_z, hl_expr *out);
/* A list of at most HL_MAX_DIMS expressions (field f, an array). */
hl_status hl__json_get_exprs(hl__json_reader *r, json_t *obj, const char *f, bool allow_z,
                             uint32_t *n, hl_expr *out);
/* An axis list: an integer or an array of at most HL_MAX_DIMS integers. */
hl_status hl__json_get_axes(hl__json_reader *r, json_t *obj, const char *f, uint32_t *n, int *out);

/* Checks that every dim of dims[0..ndim) is at least 1 and that their product is at most
 * HL_JSON_MAX_NUMEL, with all dims at min, at profile and at max. */
hl_status hl__json_check_dims(hl__json_reader *r, const char *field, uint32_t ndim,
                              const hl_expr *dims);

/* Checks that view v and dims[0..ndim) hold the same number of elements with all dims
 * at min, at profile and at max (a reshape must keep the element count). */
hl_status hl__json_check_same_numel(hl__json_reader *r, const char *field, const hl_view *v,
                                    uint32_t ndim, const hl_expr *dims);

/* Checks a <= b with all dims at min, at profile and at max; what says what is wrong
 * otherwise (e.g. "end is past the dim's size"). */
hl_status hl__json_check_le(hl__json_reader *r, const char *field, hl_expr a, hl_expr b,
                            const char *what);

/* True when name is a valid tensor name (docs/graph-json.md). */
bool hl__json_name_valid(const char *name);

/* Builds document node i (its inputs are built). Sets r->nodes[i].t. */
hl_status hl__json_build_node(hl__json_reader *r, uint32_t i);
/* Reads a view object {"tensor", "shape", "strides"} into *v (label names it). */
hl_status hl__json_view(hl__json_reader *r, json_t *obj, const char *label, hl_view *v);
/* The handle a reference resolves to (an input or an already built node). */
hl_t hl__json_ref_handle(const hl__json_reader *r, const hl__json_ref *ref);
/* Checks that view v reads inside the stored buffer of node src (when cheap to check). */
hl_status hl__json_check_view_bounds(hl__json_reader *r, const char *label, const hl_view *v,
                                     uint32_t src);

#endif /* LUMINAL_HL_JSON_INT_H */
