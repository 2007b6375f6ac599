/* hl_json_read.c - the JSON graph reader: document, names, order, outputs.
 *
 * The format is docs/graph-json.md. Reading goes in phases, each complete before the
 * next, so a later phase may rely on what an earlier one checked:
 *
 *   1. parse      jansson, duplicate keys rejected; malformed text -> source:line:col
 *   2. top level  format, version, known fields
 *   3. dims       hl_graph_dim for each declared dynamic dimension
 *   4. inputs     hl_input for each, in order
 *   5. names      every node's name checked; inputs and nodes sorted into one table;
 *                 duplicates rejected; every reference resolved (dangling -> error)
 *   6. order      Kahn's algorithm, the earliest listed ready node first; a cycle is
 *                 reported with a path through it
 *   7. build      each node through the builder (hl_json_ops.c)
 *   8. outputs    hl_output, or an Output primitive with an explicit view
 *
 * Nothing here trusts the input: sizes, counts and depths are bounded (hl_json_int.h), and
 * the graph under construction is freed on every failure.
 */
#include "json/hl_json_int.h"

#include <stdio.h>

/* ---- names ---- */

static int name_cmp(const void *a, const void *b)
{
    const hl__json_name *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c) return c;
    /* equal names: inputs first, then by position, so duplicates report deterministically */
    if (x->is_input != y->is_input) return x->is_input ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* The index in r->names of name, or UINT32_MAX. */
static uint32_t name_find(const hl__json_reader *r, const char *name)
{
    uint32_t lo = 0, hi = r->n_names;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = strcmp(r->names[mid].name, name);
        if (c == 0) return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return UINT32_MAX;
}

hl_t hl__json_ref_handle(const hl__json_reader *r, const hl__json_ref *ref)
{
    const hl__json_name *n = &r->names[ref->name];
    if (n->is_input) return r->inputs[n->idx];
    return r->nodes[n->idx].t;
}

static const char *kind_label(const hl__json_name *n)
{
    return n->is_input ? "inputs" : "nodes";
}

/* ---- phases ---- */

static hl_status read_top(hl__json_reader *r)
{
    hl__json_where(r, HL__JSON_TOP, 0, NULL);
    if (!json_is_object(r->root))
        return hl__json_fail(r, HL_ERR_PARSE, NULL, "the document must be a JSON object");
    hl_status st =
        hl__json_check_keys(r, r->root, "format version name comment dims inputs nodes outputs");
    if (st) return st;
    const char *fmt;
    if ((st = hl__json_get_string(r, r->root, "format", &fmt))) return st;
    if (strcmp(fmt, "luminal-graph") != 0)
        return hl__json_fail(r, HL_ERR_PARSE, "format", "expected \"luminal-graph\", got \"%.40s\"",
                             fmt);
    int64_t version;
    if ((st = hl__json_get_int(r, r->root, "version", false, 0, INT64_MIN, INT64_MAX, &version)))
        return st;
    if (version != 1)
        return hl__json_fail(r, HL_ERR_PARSE, "version", "version %lld is not supported (only 1)",
                             (long long)version);
    json_t *name = json_object_get(r->root, "name");
    if (name && !json_is_string(name))
        return hl__json_fail(r, HL_ERR_PARSE, "name", "expected a string");
    static const char *const arrays[] = {"inputs", "nodes", "outputs"};
    for (int i = 0; i < 3; i++) {
        json_t *a = json_object_get(r->root, arrays[i]);
        if (!a) return hl__json_fail(r, HL_ERR_PARSE, arrays[i], "missing (an array is required)");
        if (!json_is_array(a))
            return hl__json_fail(r, HL_ERR_PARSE, arrays[i], "expected an array");
    }
    json_t *dims = json_object_get(r->root, "dims");
    if (dims && !json_is_array(dims))
        return hl__json_fail(r, HL_ERR_PARSE, "dims", "expected an array");
    if (json_array_size(json_object_get(r->root, "outputs")) == 0)
        return hl__json_fail(r, HL_ERR_PARSE, "outputs", "a graph needs at least one output");
    /* the scan refused a longer array before parsing; this holds if it could not count */
    if (json_array_size(json_object_get(r->root, "nodes")) > HL_JSON_MAX_NODES)
        return hl__json_fail(r, HL_ERR_LIMIT, "nodes", "more than %u nodes (the format's limit)",
                             HL_JSON_MAX_NODES);
    return HL_OK;
}

/* The start of entry i of a list (dims, inputs): an object of the known keys, with a
 * "name" that then locates every later message about it. */
static hl_status entry_name(hl__json_reader *r, int section, size_t i, json_t *o, const char *keys,
                            const char **name)
{
    hl__json_where(r, section, (uint32_t)i, NULL);
    if (!json_is_object(o)) return hl__json_fail(r, HL_ERR_PARSE, NULL, "expected an object");
    hl_status st = hl__json_check_keys(r, o, keys);
    if (st) return st;
    if ((st = hl__json_get_string(r, o, "name", name))) return st;
    hl__json_where(r, section, (uint32_t)i, *name);
    return HL_OK;
}

static hl_status read_dims(hl__json_reader *r)
{
    json_t *dims = json_object_get(r->root, "dims");
    size_t i;
    json_t *d;
    json_array_foreach(dims, i, d)
    {
        const char *name;
        hl_status st = entry_name(r, HL__JSON_DIMS, i, d, "name min max profile comment", &name);
        if (st) return st;
        if (!hl_var_name_valid(name))
            return hl__json_fail(
                r, HL_ERR_DIM, "name",
                "a dim name is 1-63 characters of [A-Za-z0-9_], not starting with a "
                "digit, and not z");
        if (hl_graph_dim_find(r->g, name))
            return hl__json_fail(r, HL_ERR_DIM, "name", "dim '%s' is declared twice", name);
        int64_t lo, hi, prof;
        if ((st = hl__json_get_int(r, d, "min", false, 0, 1, HL_JSON_MAX_SIZE, &lo))) return st;
        if ((st = hl__json_get_int(r, d, "max", false, 0, 1, HL_JSON_MAX_SIZE, &hi))) return st;
        if (hi < lo)
            return hl__json_fail(r, HL_ERR_DIM, "max", "max %lld is below min %lld", (long long)hi,
                                 (long long)lo);
        if ((st = hl__json_get_int(r, d, "profile", true, lo, lo, hi, &prof))) return st;
        if (hl_graph_dim(r->g, name, lo, hi, prof) == HL_NONE)
            return hl__json_from_builder(r, NULL);
    }
    return HL_OK;
}

/* One bound of an input's "init": {"uniform": [lo, hi]}: a JSON number (an integer for
 * int, i64 and bool inputs, of magnitude at most HL_INIT_MAX_INT so that it converts
 * exactly). */
static hl_status init_bound(hl__json_reader *r, json_t *v, hl_dtype dt, int k, double *out)
{
    char f[24];
    snprintf(f, sizeof f, "init.uniform[%d]", k);
    if (hl_dtype_is_float(dt)) {
        if (!json_is_number(v)) return hl__json_fail(r, HL_ERR_PARSE, f, "expected a number");
        *out = json_number_value(v);
        return HL_OK;
    }
    if (!json_is_integer(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected an integer (the input is %s)",
                             hl_dtype_name(dt));
    json_int_t x = json_integer_value(v);
    if (x < -HL_INIT_MAX_INT || x > HL_INIT_MAX_INT)
        return hl__json_fail(r, HL_ERR_PARSE, f,
                             "%lld is beyond 2^53 (the largest integer bound of an init)",
                             (long long)x);
    *out = (double)x;
    return HL_OK;
}

/* An input's optional "init" (docs/graph-json.md): {"uniform": [lo, hi]}. The JSON shape
 * is checked here; the range's rules (lo < hi, integers, within the dtype) by
 * hl_graph_set_input_init, whose error is raised again at the input with field
 * "init.uniform". */
static hl_status read_init(hl__json_reader *r, json_t *in, hl_dtype dt, uint32_t i)
{
    json_t *o = json_object_get(in, "init");
    if (!o) return HL_OK;
    if (!json_is_object(o))
        return hl__json_fail(r, HL_ERR_PARSE, "init", "expected an object {\"uniform\": [lo, hi]}");
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        if (strcmp(key, "uniform") != 0 && strcmp(key, "comment") != 0) {
            char f[80];
            snprintf(f, sizeof f, "init.%.60s", key);
            return hl__json_fail(r, HL_ERR_PARSE, f,
                                 "unknown field (allowed here: uniform comment)");
        }
    }
    json_t *u = json_object_get(o, "uniform");
    if (!u)
        return hl__json_fail(
            r, HL_ERR_PARSE, "init",
            "missing \"uniform\" (the only initialisation: {\"uniform\": [lo, hi]})");
    if (!json_is_array(u) || json_array_size(u) != 2)
        return hl__json_fail(r, HL_ERR_PARSE, "init.uniform",
                             "expected an array [lo, hi] of two numbers");
    hl_init init = {HL_INIT_UNIFORM, 0.0, 0.0};
    hl_status st = init_bound(r, json_array_get(u, 0), dt, 0, &init.lo);
    if (!st) st = init_bound(r, json_array_get(u, 1), dt, 1, &init.hi);
    if (st) return st;
    if (hl_graph_set_input_init(r->g, i, &init) != HL_OK)
        return hl__json_from_builder(r, "init.uniform");
    return HL_OK;
}

static hl_status read_inputs(hl__json_reader *r)
{
    json_t *inputs = json_object_get(r->root, "inputs");
    size_t n = json_array_size(inputs);
    r->inputs = hl__zalloc(n, sizeof *r->inputs);
    if (!r->inputs) return hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
    size_t i;
    json_t *in;
    json_array_foreach(inputs, i, in)
    {
        const char *name;
        hl_status st = entry_name(r, HL__JSON_INPUTS, i, in, "name dtype shape init comment", &name);
        if (st) return st;
        if (!hl__json_name_valid(name))
            return hl__json_fail(r, HL_ERR_PARSE, "name",
                                 "a tensor name is 1-63 characters of [A-Za-z0-9_.%%-]");
        if (name[0] == '%')
            return hl__json_fail(
                r, HL_ERR_PARSE, "name",
                "input names may not start with %% (reserved for canonical node names)");
        hl_dtype dt;
        if ((st = hl__json_get_dtype(r, in, "dtype", false, HL_F32, &dt))) return st;
        uint32_t nd = 0;
        hl_expr dims[HL_MAX_DIMS];
        if ((st = hl__json_get_exprs(r, in, "shape", false, &nd, dims))) return st;
        if ((st = hl__json_check_dims(r, "shape", nd, dims))) return st;
        if (hl_graph_begin_origin(r->g, name, "input", r->pos.line, r->pos.col) == HL_NONE)
            return hl__json_from_builder(r, NULL);
        hl_t t = hl_input(r->g, name, dt, nd, dims);
        if (t.node == HL_NONE) return hl__json_from_builder(r, NULL);
        r->inputs[i] = t;
        r->n_inputs = (uint32_t)(i + 1);
        if ((st = read_init(r, in, dt, (uint32_t)i))) return st;
    }
    return HL_OK;
}

/* Checks each node's object, name and op, and collects all tensor names. */
static hl_status collect_names(hl__json_reader *r)
{
    json_t *nodes = json_object_get(r->root, "nodes");
    json_t *inputs = json_object_get(r->root, "inputs");
    size_t nn = json_array_size(nodes), ni = json_array_size(inputs);
    r->nodes = hl__zalloc(nn, sizeof *r->nodes);
    r->names = hl__alloc(nn + ni, sizeof *r->names);
    if (!r->nodes || !r->names) return hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
    r->n_nodes = (uint32_t)nn;
    for (size_t i = 0; i < ni; i++) {
        r->names[i].name = json_string_value(json_object_get(json_array_get(inputs, i), "name"));
        r->names[i].idx = (uint32_t)i;
        r->names[i].is_input = true;
    }
    for (size_t i = 0; i < nn; i++) {
        json_t *o = json_array_get(nodes, i);
        hl__json_where(r, HL__JSON_NODES, (uint32_t)i, NULL);
        if (!json_is_object(o)) return hl__json_fail(r, HL_ERR_PARSE, NULL, "expected an object");
        const char *name, *op;
        hl_status st = hl__json_get_string(r, o, "name", &name);
        if (st) return st;
        hl__json_where(r, HL__JSON_NODES, (uint32_t)i, name);
        if (!hl__json_name_valid(name))
            return hl__json_fail(r, HL_ERR_PARSE, "name",
                                 "a tensor name is 1-63 characters of [A-Za-z0-9_.%%-]");
        if ((st = hl__json_get_string(r, o, "op", &op))) return st;
        r->nodes[i].obj = o;
        r->nodes[i].name = name;
        r->nodes[i].op = op;
        r->names[ni + i].name = name;
        r->names[ni + i].idx = (uint32_t)i;
        r->names[ni + i].is_input = false;
    }
    r->n_names = (uint32_t)(ni + nn);
    qsort(r->names, r->n_names, sizeof *r->names, name_cmp);
    /* Report the duplicate whose second occurrence comes first in the file. */
    const hl__json_name *dup = NULL;
    for (uint32_t i = 1; i < r->n_names; i++) {
        if (strcmp(r->names[i - 1].name, r->names[i].name) != 0) continue;
        const hl__json_name *b = &r->names[i];
        if (!dup || (b->is_input && !dup->is_input) ||
            (b->is_input == dup->is_input && b->idx < dup->idx))
            dup = b;
    }
    if (dup) {
        hl__json_where(r, dup->is_input ? HL__JSON_INPUTS : HL__JSON_NODES, dup->idx, dup->name);
        return hl__json_fail(r, HL_ERR_PARSE, "name",
                             "the tensor name '%.40s' is used twice (names of inputs and nodes are "
                             "unique; this is %s[%u])",
                             dup->name, kind_label(dup), dup->idx);
    }
    return HL_OK;
}

/* Resolves every node's "inputs" entries to names. */
static hl_status resolve_refs(hl__json_reader *r)
{
    for (uint32_t i = 0; i < r->n_nodes; i++) {
        hl__json_node *n = &r->nodes[i];
        hl__json_where(r, HL__JSON_NODES, i, n->name);
        json_t *ins = json_object_get(n->obj, "inputs");
        if (!ins) continue;
        if (!json_is_array(ins))
            return hl__json_fail(r, HL_ERR_PARSE, "inputs", "expected an array of tensor names");
        size_t k = json_array_size(ins);
        if (k > HL_MAX_INPUTS)
            return hl__json_fail(r, HL_ERR_ARG, "inputs", "%zu inputs; no op takes more than %d", k,
                                 HL_MAX_INPUTS);
        n->refs = hl__zalloc(k, sizeof *n->refs);
        if (!n->refs) return hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
        n->n_ref = (uint32_t)k;
        for (size_t j = 0; j < k; j++) {
            json_t *e = json_array_get(ins, j);
            char label[32];
            snprintf(label, sizeof label, "inputs[%zu]", j);
            const char *target;
            if (json_is_string(e)) {
                target = json_string_value(e);
            } else if (json_is_object(e)) {
                json_t *t = json_object_get(e, "tensor");
                if (!t || !json_is_string(t))
                    return hl__json_fail(
                        r, HL_ERR_PARSE, label,
                        "a view input needs \"tensor\" (a name), \"shape\" and \"strides\"");
                target = json_string_value(t);
                n->refs[j].view = e;
            } else {
                return hl__json_fail(
                    r, HL_ERR_PARSE, label,
                    "expected a tensor name or a view object {\"tensor\", \"shape\", "
                    "\"strides\"}");
            }
            uint32_t at = name_find(r, target);
            if (at == UINT32_MAX)
                return hl__json_fail(r, HL_ERR_PARSE, label,
                                     "no tensor named '%.40s' (dangling reference)", target);
            if (!r->names[at].is_input && r->names[at].idx == i)
                return hl__json_fail(r, HL_ERR_PARSE, label, "the node reads itself (a cycle)");
            n->refs[j].name = at;
        }
    }
    return HL_OK;
}

/* A min-heap of node positions: Kahn's algorithm takes the earliest ready node. */
typedef struct heap {
    uint32_t *a;
    uint32_t n;
} heap;

static void heap_push(heap *h, uint32_t x)
{
    uint32_t i = h->n++;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (h->a[p] <= x) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = x;
}

static uint32_t heap_pop(heap *h)
{
    uint32_t top = h->a[0], x = h->a[--h->n], i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->a[c + 1] < h->a[c]) c++;
        if (h->a[c] >= x) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n) h->a[i] = x;
    return top;
}

/* Reports a cycle among the nodes not yet ordered (done[i] false): walks from the
 * first such node along unordered producers until a node repeats. */
static hl_status report_cycle(hl__json_reader *r, const bool *done)
{
    uint32_t start = 0;
    while (start < r->n_nodes && done[start])
        start++;
    uint32_t *seen = hl__alloc(r->n_nodes, sizeof *seen);
    if (!seen) return hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
    for (uint32_t i = 0; i < r->n_nodes; i++)
        seen[i] = UINT32_MAX;
    uint32_t cur = start, step = 0;
    while (seen[cur] == UINT32_MAX) {
        seen[cur] = step++;
        uint32_t next = cur;
        for (uint32_t j = 0; j < r->nodes[cur].n_ref; j++) {
            const hl__json_name *nm = &r->names[r->nodes[cur].refs[j].name];
            if (!nm->is_input && !done[nm->idx]) {
                next = nm->idx;
                break;
            }
        }
        cur = next; /* every unordered node has an unordered producer */
    }
    /* cur is on the cycle: print it from there, following the same choices. */
    char path[256];
    size_t len = 0;
    uint32_t x = cur;
    do {
        int w = snprintf(path + len, sizeof path - len, "'%.24s' -> ", r->nodes[x].name);
        if (w < 0 || (size_t)w >= sizeof path - len) {
            len = sizeof path - 1;
            break;
        }
        len += (size_t)w;
        for (uint32_t j = 0; j < r->nodes[x].n_ref; j++) {
            const hl__json_name *nm = &r->names[r->nodes[x].refs[j].name];
            if (!nm->is_input && !done[nm->idx]) {
                x = nm->idx;
                break;
            }
        }
    } while (x != cur);
    if (len < sizeof path - 32)
        snprintf(path + len, sizeof path - len, "'%.24s'", r->nodes[cur].name);
    hl__free(seen);
    hl__json_where(r, HL__JSON_NODES, cur, r->nodes[cur].name);
    return hl__json_fail(r, HL_ERR_PARSE, "inputs", "cycle: %s (each reads the next)", path);
}

/* Orders the nodes (Kahn, earliest listed ready node first) and builds them in that
 * order; a cycle is reported before anything is built. */
static hl_status order_and_build(hl__json_reader *r)
{
    uint32_t n = r->n_nodes;
    uint32_t *indeg = hl__zalloc(n, sizeof *indeg);
    uint32_t *users_start = hl__zalloc((size_t)n + 1, sizeof *users_start);
    uint32_t *users = hl__alloc((size_t)n * HL_MAX_INPUTS, sizeof *users);
    bool *done = hl__zalloc(n, sizeof *done);
    uint32_t *order = hl__alloc(n, sizeof *order);
    heap h = {hl__alloc(n, sizeof(uint32_t)), 0};
    hl_status st = HL_OK;
    if (!indeg || !users_start || !users || !done || !order || !h.a) {
        st = hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
        goto out;
    }
    /* users of each node, in CSR form */
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < r->nodes[i].n_ref; j++) {
            const hl__json_name *nm = &r->names[r->nodes[i].refs[j].name];
            if (!nm->is_input) {
                users_start[nm->idx + 1]++;
                indeg[i]++;
            }
        }
    for (uint32_t i = 0; i < n; i++)
        users_start[i + 1] += users_start[i];
    {
        uint32_t *fill = hl__alloc(n ? n : 1, sizeof *fill);
        if (!fill) {
            st = hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
            goto out;
        }
        for (uint32_t i = 0; i < n; i++)
            fill[i] = users_start[i];
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t j = 0; j < r->nodes[i].n_ref; j++) {
                const hl__json_name *nm = &r->names[r->nodes[i].refs[j].name];
                if (!nm->is_input) users[fill[nm->idx]++] = i;
            }
        hl__free(fill);
    }
    for (uint32_t i = 0; i < n; i++)
        if (indeg[i] == 0) heap_push(&h, i);
    uint32_t ordered = 0;
    while (h.n) {
        uint32_t i = heap_pop(&h);
        done[i] = true;
        order[ordered++] = i;
        for (uint32_t u = users_start[i]; u < users_start[i + 1]; u++)
            if (--indeg[users[u]] == 0) heap_push(&h, users[u]);
    }
    if (ordered < n) {
        st = report_cycle(r, done);
        goto out;
    }
    for (uint32_t k = 0; k < n; k++) { /* build in that order */
        uint32_t i = order[k];
        hl__json_where(r, HL__JSON_NODES, i, r->nodes[i].name);
        if ((st = hl__json_build_node(r, i))) goto out;
        r->nodes[i].built = true;
    }
out:
    hl__free(indeg);
    hl__free(users_start);
    hl__free(users);
    hl__free(done);
    hl__free(order);
    hl__free(h.a);
    return st;
}

static hl_status read_outputs(hl__json_reader *r)
{
    json_t *outs = json_object_get(r->root, "outputs");
    size_t i;
    json_t *o;
    json_array_foreach(outs, i, o)
    {
        hl__json_where(r, HL__JSON_OUTPUTS, (uint32_t)i, NULL);
        const char *name, *tensor;
        json_t *view_obj = NULL;
        hl_status st;
        if (json_is_string(o)) {
            name = tensor = json_string_value(o);
        } else if (json_is_object(o)) {
            if ((st = hl__json_check_keys(r, o, "name tensor shape strides comment"))) return st;
            if ((st = hl__json_get_string(r, o, "name", &name))) return st;
            if ((st = hl__json_get_string(r, o, "tensor", &tensor))) return st;
            if (json_object_get(o, "shape") || json_object_get(o, "strides")) view_obj = o;
        } else {
            return hl__json_fail(r, HL_ERR_PARSE, NULL,
                                 "expected a tensor name or {\"name\", \"tensor\"[, \"shape\", "
                                 "\"strides\"]}");
        }
        hl__json_where(r, HL__JSON_OUTPUTS, (uint32_t)i, name);
        if (!hl__json_name_valid(name))
            return hl__json_fail(r, HL_ERR_PARSE, "name",
                                 "an output name is 1-63 characters of [A-Za-z0-9_.%%-]");
        for (size_t k = 0; k < i; k++) {
            json_t *p = json_array_get(outs, k);
            const char *pn = json_is_string(p) ? json_string_value(p)
                                               : json_string_value(json_object_get(p, "name"));
            if (pn && strcmp(pn, name) == 0)
                return hl__json_fail(r, HL_ERR_PARSE, "name", "output name '%.40s' is used twice",
                                     name);
        }
        uint32_t at = name_find(r, tensor);
        if (at == UINT32_MAX)
            return hl__json_fail(r, HL_ERR_PARSE, json_is_string(o) ? NULL : "tensor",
                                 "no tensor named '%.40s' (dangling reference)", tensor);
        hl__json_ref ref = {at, NULL};
        hl_t t = hl__json_ref_handle(r, &ref);
        if (hl_graph_begin_origin(r->g, name, "output", r->pos.line, r->pos.col) == HL_NONE)
            return hl__json_from_builder(r, NULL);
        uint32_t id;
        if (view_obj) {
            hl_node spec;
            memset(&spec, 0, sizeof spec);
            spec.op = HL_OP_OUTPUT;
            spec.n_in = 1;
            spec.in[0].node = t.node;
            spec.name = (char *)name;
            if ((st = hl__json_view(r, view_obj, "view", &spec.in[0].view))) return st;
            if ((st = hl__json_check_view_bounds(r, "view", &spec.in[0].view, t.node))) return st;
            id = hl_graph_add(r->g, &spec);
        } else {
            id = hl_output(r->g, name, t);
        }
        if (id == HL_NONE) return hl__json_from_builder(r, NULL);
        hl_view v = hl_graph_node(r->g, id)->in[0].view;
        if ((st = hl__json_check_view_bounds(r, view_obj ? "view" : "tensor", &v, t.node)))
            return st;
    }
    return HL_OK;
}

static void reader_fini(hl__json_reader *r)
{
    for (uint32_t i = 0; i < r->n_nodes; i++)
        hl__free(r->nodes[i].refs);
    hl__free(r->nodes);
    hl__free(r->names);
    hl__free(r->inputs);
    hl__json_scan_fini(&r->scan);
    hl__free(r->env_vals);
    hl__free(r->env_bound);
    json_decref(r->root);
}

hl_graph *hl_graph_read_json(const char *text, size_t len, const char *source, lm_err *err)
{
    hl__json_reader r;
    memset(&r, 0, sizeof r);
    r.src = source ? source : "<json>";
    r.err = err;
    if (!text) {
        lm_loc at = {.file = r.src, .node_id = HL_NONE};
        hl__fail(err, HL_ERR_ARG, &at, "no text given");
        return NULL;
    }
    /* the limits and positions first, before jansson builds anything */
    hl_status st = hl__json_scan_text(&r, text, len);
    if (st) {
        reader_fini(&r);
        return NULL;
    }
    json_error_t je;
    r.root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!r.root) {
        lm_loc at = {.file = r.src,
                     .line = je.line > 0 ? (uint32_t)je.line : 0,
                     .col = je.column > 0 ? (uint32_t)je.column : 0,
                     .node_id = HL_NONE};
        hl__fail(err, HL_ERR_PARSE, &at, "malformed JSON: %s", je.text);
        reader_fini(&r);
        return NULL;
    }
    r.g = hl_graph_new();
    if (!r.g) {
        lm_loc at = {.file = r.src, .node_id = HL_NONE};
        st = hl__fail(err, HL_ERR_NOMEM, &at, "out of memory");
    }
    if (!st && hl_graph_set_source(r.g, r.src)) st = hl__json_from_builder(&r, NULL);
    if (!st) st = read_top(&r);
    if (!st) st = read_dims(&r);
    if (!st) st = read_inputs(&r);
    if (!st) st = collect_names(&r);
    if (!st) st = resolve_refs(&r);
    if (!st) st = order_and_build(&r);
    if (!st) st = read_outputs(&r);
    hl_graph *g = r.g;
    if (g) hl_graph_end_origin(g);
    if (st) {
        hl_graph_free(g);
        g = NULL;
    }
    reader_fini(&r);
    return g;
}

hl_graph *hl_graph_load_json(const char *path, lm_err *err)
{
    size_t len = 0;
    char *buf = lm_read_text(path, HL_JSON_MAX_BYTES, &len, err); /* NUL bytes refused */
    if (!buf) return NULL;
    hl_graph *g = hl_graph_read_json(buf, len, strcmp(path, "-") == 0 ? "<stdin>" : path, err);
    free(buf); /* lm_read_text's buffer */
    return g;
}
