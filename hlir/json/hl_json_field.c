/* hl_json_field.c - typed field getters of the JSON graph reader, and its error door.
 *
 * Every getter checks the JSON type and range of one field and fails through hl__json_fail,
 * so a message always reads "source:line:col: node 'h': field 'f': reason" (the parts
 * that are known). Expressions are checked
 * here too: their text is scanned for names before it reaches the expression parser, so
 * an undeclared dim is reported by name and never interned into the graph's pool.
 */
#include "json/hl_json_int.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>

hl_status hl__json_fail(hl__json_reader *r, hl_status code, const char *field, const char *fmt, ...)
{
    char why[LM_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    hl__json_pos pos =
        r->part == HL__JSON_TOP ? hl__json_scan_pos(r, HL__JSON_TOP, 0, field) : r->pos;
    bool is_node = r->part >= HL__JSON_INPUTS && r->name;
    lm_loc loc = {.file = r->src,
                  .line = pos.line,
                  .col = pos.col,
                  .node = is_node ? r->name : NULL,
                  .node_id = HL_NONE,
                  .field = field};
    static const char *const PART[] = {"", "dims", "inputs", "nodes", "outputs"};
    if (r->part == HL__JSON_DIMS && r->name)
        return hl__fail(r->err, code, &loc, "dim '%.40s': %s", r->name, why);
    if (r->part != HL__JSON_TOP && !r->name)
        return hl__fail(r->err, code, &loc, "%s[%u]: %s", PART[r->part], r->index, why);
    return hl__fail(r->err, code, &loc, "%s", why);
}

void hl__json_where(hl__json_reader *r, int part, uint32_t index, const char *name)
{
    r->part = part;
    r->index = index;
    r->name = name;
    r->pos = hl__json_scan_pos(r, part, index, NULL);
}

static bool in_list(const char *key, const char *allowed)
{
    size_t n = strlen(key);
    const char *p = allowed;
    while (*p) {
        while (*p == ' ')
            p++;
        const char *q = p;
        while (*q && *q != ' ')
            q++;
        if ((size_t)(q - p) == n && n && memcmp(p, key, n) == 0) return true;
        p = q;
    }
    return false;
}

hl_status hl__json_check_keys(hl__json_reader *r, json_t *obj, const char *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        if (!in_list(key, allowed))
            return hl__json_fail(r, HL_ERR_PARSE, key, "unknown field (allowed here: %s)", allowed);
    }
    return HL_OK;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "?";
}

hl_status hl__json_get_string(hl__json_reader *r, json_t *obj, const char *f, const char **out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) return hl__json_fail(r, HL_ERR_PARSE, f, "missing (a string is required)");
    if (!json_is_string(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected a string, got %s", type_name(v));
    *out = json_string_value(v);
    return HL_OK;
}

hl_status hl__json_get_int(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                           int64_t def, int64_t lo, int64_t hi, int64_t *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) {
        if (!has_default)
            return hl__json_fail(r, HL_ERR_PARSE, f, "missing (an integer is required)");
        *out = def;
        return HL_OK;
    }
    if (!json_is_integer(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected an integer, got %s", type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi)
        return hl__json_fail(r, HL_ERR_PARSE, f, "%lld is out of range [%lld, %lld]", (long long)x,
                             (long long)lo, (long long)hi);
    *out = (int64_t)x;
    return HL_OK;
}

hl_status hl__json_get_float(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                             float def, float *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) {
        if (!has_default)
            return hl__json_fail(r, HL_ERR_PARSE, f, "missing (a number is required)");
        *out = def;
        return HL_OK;
    }
    if (json_is_number(v)) {
        double d = json_number_value(v);
        if (isfinite(d) && fabs(d) >= 0x1.ffffffp+127) /* rounds to inf as f32 */
            return hl__json_fail(r, HL_ERR_PARSE, f, "%g does not fit in f32 (write \"inf\")", d);
        *out = (float)d;
        return HL_OK;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        if (strcmp(s, "inf") == 0)
            *out = INFINITY;
        else if (strcmp(s, "-inf") == 0)
            *out = -INFINITY;
        else if (strcmp(s, "nan") == 0)
            *out = NAN;
        else
            return hl__json_fail(r, HL_ERR_PARSE, f,
                                 "expected a number, \"inf\", \"-inf\" or \"nan\", got \"%.40s\"",
                                 s);
        return HL_OK;
    }
    return hl__json_fail(r, HL_ERR_PARSE, f, "expected a number, got %s", type_name(v));
}

hl_status hl__json_get_bool(hl__json_reader *r, json_t *obj, const char *f, bool def, bool *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) {
        *out = def;
        return HL_OK;
    }
    if (!json_is_boolean(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected true or false, got %s", type_name(v));
    *out = json_is_true(v);
    return HL_OK;
}

hl_status hl__json_get_dtype(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                             hl_dtype def, hl_dtype *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) {
        if (!has_default) return hl__json_fail(r, HL_ERR_PARSE, f, "missing (a dtype is required)");
        *out = def;
        return HL_OK;
    }
    if (!json_is_string(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected a dtype name, got %s", type_name(v));
    if (hl_dtype_parse(json_string_value(v), out) != 0)
        return hl__json_fail(r, HL_ERR_DTYPE, f,
                             "unknown dtype \"%.40s\" (f32, f16, bf16, int, i64, bool, f8e4m3, "
                             "f8e5m2)",
                             json_string_value(v));
    return HL_OK;
}

/* Scans expression text before parsing: length, nesting, and every name is z (when
 * allowed), a function (min, max, cdiv) or a declared dim. */
static hl_status scan_expr_text(hl__json_reader *r, const char *label, const char *s, bool allow_z)
{
    size_t n = strlen(s);
    if (n == 0) return hl__json_fail(r, HL_ERR_PARSE, label, "empty expression");
    if (n > HL_JSON_MAX_EXPR_TEXT)
        return hl__json_fail(r, HL_ERR_PARSE, label, "expression longer than %d characters",
                             HL_JSON_MAX_EXPR_TEXT);
    int depth = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '(') {
            if (++depth > HL_JSON_MAX_EXPR_DEPTH)
                return hl__json_fail(r, HL_ERR_PARSE, label, "expression nested deeper than %d",
                                     HL_JSON_MAX_EXPR_DEPTH);
        } else if (c == ')') {
            depth--;
        }
        if (isalpha(c) || c == '_') {
            size_t j = i;
            while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_'))
                j++;
            char name[64];
            size_t len = j - i;
            if (len >= sizeof name)
                return hl__json_fail(r, HL_ERR_DIM, label,
                                     "name longer than 63 characters in \"%.40s\"", s);
            memcpy(name, s + i, len);
            name[len] = 0;
            bool fn =
                strcmp(name, "min") == 0 || strcmp(name, "max") == 0 || strcmp(name, "cdiv") == 0;
            if (strcmp(name, "z") == 0) {
                if (!allow_z)
                    return hl__json_fail(r, HL_ERR_PARSE, label,
                                         "the index variable z may only appear in strides and iota "
                                         "expressions");
            } else if (!fn && !hl_graph_dim_find(r->g, name)) {
                return hl__json_fail(r, HL_ERR_DIM, label,
                                     "unknown dim '%s' (declare it in \"dims\")", name);
            }
            i = j;
            continue;
        }
        if (isdigit(c)) {
            while (i < n && isalnum((unsigned char)s[i]))
                i++;
            continue;
        }
        i++;
    }
    return HL_OK;
}

hl_status hl__json_expr(hl__json_reader *r, json_t *v, const char *label, bool allow_z,
                        hl_expr *out)
{
    hl_expr_pool *p = hl_graph_exprs(r->g);
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < -HL_JSON_MAX_SIZE || x > HL_JSON_MAX_SIZE)
            return hl__json_fail(r, HL_ERR_PARSE, label, "%lld is out of range [-%lld, %lld]",
                                 (long long)x, (long long)HL_JSON_MAX_SIZE,
                                 (long long)HL_JSON_MAX_SIZE);
        *out = hl_e_num(p, (int64_t)x);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v);
        hl_status st = scan_expr_text(r, label, s, allow_z);
        if (st) return st;
        lm_err e;
        lm_err_clear(&e);
        st = hl_e_parse(p, s, out, &e);
        if (st) return hl__json_fail(r, st, label, "in \"%.80s\": %s", s, e.msg);
    } else {
        return hl__json_fail(r, HL_ERR_PARSE, label,
                             "expected an integer or an expression string, got %s", type_name(v));
    }
    if (*out == HL_NONE) return hl__json_fail(r, HL_ERR_NOMEM, label, "out of memory");
    return HL_OK;
}

hl_status hl__json_get_expr(hl__json_reader *r, json_t *obj, const char *f, bool has_default,
                            int64_t def, bool allow_z, hl_expr *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) {
        if (!has_default)
            return hl__json_fail(r, HL_ERR_PARSE, f,
                                 "missing (an integer or expression is required)");
        *out = hl_e_num(hl_graph_exprs(r->g), def);
        if (*out == HL_NONE) return hl__json_fail(r, HL_ERR_NOMEM, f, "out of memory");
        return HL_OK;
    }
    return hl__json_expr(r, v, f, allow_z, out);
}

hl_status hl__json_get_exprs(hl__json_reader *r, json_t *obj, const char *f, bool allow_z,
                             uint32_t *n, hl_expr *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) return hl__json_fail(r, HL_ERR_PARSE, f, "missing (an array is required)");
    if (!json_is_array(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected an array, got %s", type_name(v));
    size_t len = json_array_size(v);
    if (len > HL_MAX_DIMS)
        return hl__json_fail(r, HL_ERR_SHAPE, f, "%zu entries; at most %d dims are supported", len,
                             HL_MAX_DIMS);
    for (size_t i = 0; i < len; i++) {
        char label[48];
        snprintf(label, sizeof label, "%s[%zu]", f, i);
        hl_status st = hl__json_expr(r, json_array_get(v, i), label, allow_z, &out[i]);
        if (st) return st;
    }
    *n = (uint32_t)len;
    return HL_OK;
}

static hl_status one_axis(hl__json_reader *r, const char *label, json_t *v, int *out)
{
    if (!json_is_integer(v))
        return hl__json_fail(r, HL_ERR_PARSE, label, "expected an integer axis, got %s",
                             type_name(v));
    json_int_t x = json_integer_value(v);
    if (x < -HL_MAX_DIMS || x >= HL_MAX_DIMS)
        return hl__json_fail(r, HL_ERR_ARG, label, "axis %lld is out of range [-%d, %d]",
                             (long long)x, HL_MAX_DIMS, HL_MAX_DIMS - 1);
    *out = (int)x;
    return HL_OK;
}

hl_status hl__json_get_axes(hl__json_reader *r, json_t *obj, const char *f, uint32_t *n, int *out)
{
    json_t *v = json_object_get(obj, f);
    if (!v) return hl__json_fail(r, HL_ERR_PARSE, f, "missing (an axis or a list of axes)");
    if (json_is_integer(v)) {
        *n = 1;
        return one_axis(r, f, v, out);
    }
    if (!json_is_array(v))
        return hl__json_fail(r, HL_ERR_PARSE, f, "expected an axis or an array of axes, got %s",
                             type_name(v));
    size_t len = json_array_size(v);
    if (len > HL_MAX_DIMS)
        return hl__json_fail(r, HL_ERR_ARG, f, "%zu axes; at most %d", len, HL_MAX_DIMS);
    for (size_t i = 0; i < len; i++) {
        char label[48];
        snprintf(label, sizeof label, "%s[%zu]", f, i);
        hl_status st = one_axis(r, label, json_array_get(v, i), &out[i]);
        if (st) return st;
    }
    *n = (uint32_t)len;
    return HL_OK;
}

/* The dim settings a symbolic size is checked at. */
enum { AT_MIN = 0, AT_PROFILE, AT_MAX, N_SETTINGS };

/* An environment binding every declared dim at setting k (the reader's arrays, grown to
 * the pool's variable count); variables that are not dims stay unbound. False when out
 * of memory, with the error raised. */
static bool dim_env(hl__json_reader *r, int k, hl_env *env)
{
    const hl_graph *g = r->g;
    uint32_t nvar = hl_var_count(hl_graph_exprs_c(g));
    if (nvar > r->env_cap) {
        int64_t *v = hl__realloc(r->env_vals, nvar, sizeof *v);
        if (v) r->env_vals = v;
        bool *bd = v ? hl__realloc(r->env_bound, nvar, sizeof *bd) : NULL;
        if (bd) r->env_bound = bd;
        if (!v || !bd) {
            hl__json_fail(r, HL_ERR_NOMEM, NULL, "out of memory");
            return false;
        }
        r->env_cap = nvar;
    }
    for (uint32_t v = 0; v < nvar; v++)
        r->env_bound[v] = false;
    for (uint32_t i = 0; i < hl_graph_dim_count(g); i++) {
        const hl_dim *d = hl_graph_dim_at(g, i);
        r->env_vals[d->var] = k == AT_MIN ? d->lo : k == AT_PROFILE ? d->profile : d->hi;
        r->env_bound[d->var] = true;
    }
    *env = (hl_env){r->env_vals, r->env_bound, nvar};
    return true;
}

static const char *setting_name(int k)
{
    return k == AT_MIN ? "min" : k == AT_PROFILE ? "profile" : "max";
}

hl_status hl__json_check_dims(hl__json_reader *r, const char *field, uint32_t ndim,
                              const hl_expr *dims)
{
    const hl_expr_pool *p = hl_graph_exprs(r->g);
    for (int k = 0; k < N_SETTINGS; k++) {
        hl_env env;
        if (!dim_env(r, k, &env)) return HL_ERR_NOMEM;
        int64_t numel = 1;
        for (uint32_t d = 0; d < ndim; d++) {
            int64_t v;
            lm_err e = {0};
            char label[48];
            snprintf(label, sizeof label, "%s[%u]", field, d);
            if (hl_e_eval(p, dims[d], &env, 0, &v, &e) != HL_OK)
                return hl__json_fail(r, HL_ERR_SHAPE, label,
                                     "cannot be evaluated with dims at %s: %s", setting_name(k),
                                     e.msg);
            if (v < 1)
                return hl__json_fail(r, HL_ERR_SHAPE, label,
                                     "size %lld with dims at %s (sizes must be >= 1)", (long long)v,
                                     setting_name(k));
            if (v > HL_JSON_MAX_NUMEL || numel > HL_JSON_MAX_NUMEL / v)
                return hl__json_fail(r, HL_ERR_SHAPE, field,
                                     "more than 2^50 elements with dims at %s (too large)",
                                     setting_name(k));
            numel *= v;
        }
    }
    return HL_OK;
}

/* The element count of dims[0..ndim) at setting k, or -1 when it cannot be evaluated
 * or exceeds HL_JSON_MAX_NUMEL. */
static int64_t numel_at(hl__json_reader *r, int k, uint32_t ndim, const hl_expr *dims)
{
    const hl_expr_pool *p = hl_graph_exprs(r->g);
    hl_env env;
    if (!dim_env(r, k, &env)) return -1;
    int64_t n = 1;
    lm_err e = {0}; /* written only on a failure, which ends the loop */
    for (uint32_t d = 0; d < ndim; d++) {
        int64_t v;
        if (hl_e_eval(p, dims[d], &env, 0, &v, &e) != HL_OK) return -1;
        if (v < 0 || v > HL_JSON_MAX_NUMEL || (v && n > HL_JSON_MAX_NUMEL / v)) return -1;
        n *= v;
    }
    return n;
}

hl_status hl__json_check_same_numel(hl__json_reader *r, const char *field, const hl_view *v,
                                    uint32_t ndim, const hl_expr *dims)
{
    for (int k = 0; k < N_SETTINGS; k++) {
        int64_t a = numel_at(r, k, v->ndim, v->dims), b = numel_at(r, k, ndim, dims);
        if (lm_err_is_set(r->err)) return r->err->code; /* out of memory */
        if (a < 0 || b < 0) continue; /* hl__json_check_dims reports what cannot be evaluated */
        if (a != b)
            return hl__json_fail(
                r, HL_ERR_SHAPE, field,
                "%lld elements, but the tensor has %lld with dims at %s (a reshape keeps "
                "the element count)",
                (long long)b, (long long)a, setting_name(k));
    }
    return HL_OK;
}

hl_status hl__json_check_le(hl__json_reader *r, const char *field, hl_expr a, hl_expr b,
                            const char *what)
{
    for (int k = 0; k < N_SETTINGS; k++) {
        int64_t x = numel_at(r, k, 1, &a), y = numel_at(r, k, 1, &b);
        if (lm_err_is_set(r->err)) return r->err->code; /* out of memory */
        if (x < 0 || y < 0) {
            /* negative or not evaluable: evaluate the plain values */
            const hl_expr_pool *p = hl_graph_exprs(r->g);
            hl_env env;
            if (!dim_env(r, k, &env)) return HL_ERR_NOMEM;
            lm_err e = {0};
            if (hl_e_eval(p, a, &env, 0, &x, &e) != HL_OK ||
                hl_e_eval(p, b, &env, 0, &y, &e) != HL_OK)
                return hl__json_fail(r, HL_ERR_SHAPE, field,
                                     "cannot be evaluated with dims at %s: %s", setting_name(k),
                                     e.msg);
        }
        if (x > y)
            return hl__json_fail(r, HL_ERR_SHAPE, field, "%s (%lld > %lld with dims at %s)", what,
                                 (long long)x, (long long)y, setting_name(k));
    }
    return HL_OK;
}

/* True when e is affine in z: z-free, z itself, a sum of affine terms, or an affine term
 * times a z-free factor (a difference is a sum with a negated factor). Over z in [0, n)
 * such an expression takes its least and largest values at the ends, so the bounds check
 * evaluates two points instead of n (a view's strides are nearly always of this form). */
static bool affine_in_z(const hl_expr_pool *p, hl_expr e, int depth)
{
    if (depth > HL_E_MAX_PARSE_DEPTH) return false;
    if (!hl_e_has_z(p, e)) return true;
    hl_expr_node n = hl_e_get(p, e);
    switch (n.kind) {
    case HL_E_Z: return true;
    case HL_E_ADD:
    case HL_E_SUB: return affine_in_z(p, n.a, depth + 1) && affine_in_z(p, n.b, depth + 1);
    case HL_E_MUL:
        if (!hl_e_has_z(p, n.a)) return affine_in_z(p, n.b, depth + 1);
        if (!hl_e_has_z(p, n.b)) return affine_in_z(p, n.a, depth + 1);
        return false;
    default: return false;
    }
}

hl_status hl__json_check_view_bounds(hl__json_reader *r, const char *label, const hl_view *v,
                                     uint32_t src)
{
    const hl_expr_pool *p = hl_graph_exprs(r->g);
    const hl_node *n = hl_graph_node(r->g, src);
    for (int k = 0; k < N_SETTINGS; k++) {
        hl_env env;
        if (!dim_env(r, k, &env)) return HL_ERR_NOMEM;
        lm_err e = {0}; /* written only on a failure, which ends the check */
        int64_t numel = 1, work = 0;
        for (uint32_t d = 0; d < n->ndim; d++) {
            int64_t s;
            if (hl_e_eval(p, n->shape[d], &env, 0, &s, &e) != HL_OK) return HL_OK;
            if (s < 1 || s > HL_JSON_MAX_NUMEL || numel > HL_JSON_MAX_NUMEL / s) return HL_OK;
            numel *= s;
        }
        int64_t dimv[HL_MAX_DIMS];
        for (uint32_t d = 0; d < v->ndim; d++) {
            if (hl_e_eval(p, v->dims[d], &env, 0, &dimv[d], &e) != HL_OK) return HL_OK;
            if (dimv[d] < 1) return HL_OK; /* hl__json_check_dims reports it */
            work += dimv[d];
            if (work > HL__JSON_MAX_BOUNDS_WORK) return HL_OK; /* too costly here; hl_run checks */
        }
        int64_t lo = 0, hi = 0;
        for (uint32_t d = 0; d < v->ndim; d++) {
            int64_t mn = INT64_MAX, mx = INT64_MIN;
            bool ends = affine_in_z(p, v->strides[d], 0);
            for (int64_t z = 0; z < dimv[d]; z = ends && z < dimv[d] - 1 ? dimv[d] - 1 : z + 1) {
                int64_t x;
                if (hl_e_eval(p, v->strides[d], &env, z, &x, &e) != HL_OK)
                    return hl__json_fail(
                        r, HL_ERR_SHAPE, label,
                        "strides[%u] cannot be evaluated at z = %lld with dims at %s: %s", d,
                        (long long)z, setting_name(k), e.msg);
                if (x < mn) mn = x;
                if (x > mx) mx = x;
            }
            if (mn < -HL_JSON_MAX_NUMEL || mx > HL_JSON_MAX_NUMEL)
                return hl__json_fail(r, HL_ERR_SHAPE, label,
                                     "strides[%u] reaches %lld, outside the buffer", d,
                                     (long long)(mn < 0 ? mn : mx));
            lo += mn;
            hi += mx;
        }
        if (lo < 0 || hi >= numel)
            return hl__json_fail(
                r, HL_ERR_SHAPE, label,
                "the view reads flat positions %lld..%lld of a stored buffer of %lld "
                "elements with dims at %s (out of bounds)",
                (long long)lo, (long long)hi, (long long)numel, setting_name(k));
    }
    return HL_OK;
}

bool hl__json_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > HL_JSON_MAX_NAME) return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!(isalnum(c) || c == '_' || c == '.' || c == '-' || c == '%')) return false;
    }
    return true;
}
