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

#include "core/hl_graph_int.h"
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

/* The parts of a document an entry can be in. */
enum {
    HL__JSON_TOP = 0, /* a top-level field */
    HL__JSON_DIMS,
    HL__JSON_INPUTS,
    HL__JSON_NODES,
    HL__JSON_OUTPUTS,
};
#define HL__JSON_N_ARRAYS 4 /* dims, inputs, nodes, outputs */
#define HL__JSON_TOP_KEYS 8 /* format version name comment dims inputs nodes outputs */
/* A view's bounds are checked while reading when its dims sum to at most this (the check
 * evaluates every stride at every index); larger views are checked by the runtime. */
#define HL__JSON_MAX_BOUNDS_WORK ((int64_t)1 << 16)

typedef struct hl__json_pos {
    uint32_t line, col; /* 1-based; 0 when unknown */
} hl__json_pos;

/* What hl__json_scan_text found: where each kept top-level field's value and each element
 * of the four arrays begins. */
typedef struct hl__json_scan {
    hl__json_pos top[HL__JSON_TOP_KEYS];
    hl__json_pos *elem[HL__JSON_N_ARRAYS]; /* owned */
    uint32_t n_elem[HL__JSON_N_ARRAYS], cap[HL__JSON_N_ARRAYS];
    bool opened[HL__JSON_N_ARRAYS];
} hl__json_scan;

typedef struct hl__json_reader {
    const char *src; /* source name for messages */
    hl_graph *g;     /* the graph being built (owned until returned) */
    lm_err *err;     /* the caller's error record */
    json_t *root;
    hl__json_scan scan;
    int64_t *env_vals; /* owned: dim values by pool variable, for the symbolic checks */
    bool *env_bound;   /* owned */
    uint32_t env_cap;
    /* the entry being read (hl__json_where): its part, index, the user's name of it (for
       inputs, nodes and outputs, the node name errors carry), and its position */
    int part;
    uint32_t index;
    const char *name;
    hl__json_pos pos;

    uint32_t n_inputs;
    hl_t *inputs; /* owned: handles of the graph inputs, in order */
    uint32_t n_nodes;
    hl__json_node *nodes; /* owned */
    uint32_t n_names;
    hl__json_name *names; /* owned, sorted by name (strcmp) */
} hl__json_reader;

/* The reader's error door: raises code with the location of the entry being read (the
 * source, its line and column, the node's name) and the field (may be NULL); dims and
 * entries whose name is not known yet are named in the message ("dim 'T': ...",
 * "nodes[3]: ..."). The first error wins. */
hl_status hl__json_fail(hl__json_reader *r, hl_status code, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Makes entry index of part (HL__JSON_DIMS ...) the one being read; name is its name once
 * known (NULL before). HL__JSON_TOP: the top-level fields. */
void hl__json_where(hl__json_reader *r, int part, uint32_t index, const char *name);

/* The first pass over the text (hl_json_scan.c): checks nesting depth and the number of
 * nodes as it goes and records the positions; HL_OK, or HL_ERR_LIMIT (located) for a
 * limit exceeded, HL_ERR_NOMEM. Malformed text is left to jansson. */
hl_status hl__json_scan_text(hl__json_reader *r, const char *text, size_t len);
/* Where entry index of part begins, or where top-level field begins (part HL__JSON_TOP);
 * {0, 0} when unknown. */
hl__json_pos hl__json_scan_pos(const hl__json_reader *r, int part, uint32_t index,
                               const char *field);
void hl__json_scan_fini(hl__json_scan *scan);

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

/* Raises the builder's sticky error again as the reader's (located at the entry being
 * read, with field), or out of memory when the builder holds none. */
hl_status hl__json_from_builder(hl__json_reader *r, const char *field);

/* Builds document node i (its inputs are built), as the origin of every node it adds.
 * Sets r->nodes[i].t. */
hl_status hl__json_build_node(hl__json_reader *r, uint32_t i);
/* Reads a view object {"tensor", "shape", "strides"} into *v (label names it). */
hl_status hl__json_view(hl__json_reader *r, json_t *obj, const char *label, hl_view *v);
/* The handle a reference resolves to (an input or an already built node). */
hl_t hl__json_ref_handle(const hl__json_reader *r, const hl__json_ref *ref);
/* Checks that view v reads inside the stored buffer of node src (when cheap to check). */
hl_status hl__json_check_view_bounds(hl__json_reader *r, const char *label, const hl_view *v,
                                     uint32_t src);

#endif /* LUMINAL_HL_JSON_INT_H */
