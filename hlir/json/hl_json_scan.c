/* hl_json_scan.c - one pass over the JSON text before jansson parses it.
 *
 * jansson builds the whole tree before the reader sees any of it and keeps no positions.
 * This scan runs first, in one pass without building anything, and does two things:
 *
 *   limits     the nesting depth (HL_JSON_MAX_DEPTH) and the length of the top-level
 *              "nodes" array (HL_JSON_MAX_NODES) are checked as the text goes by, so a
 *              document of ten million nodes is refused at its 1,000,001st node, with its
 *              line and column, before any tree is built;
 *   positions  where each top-level field's value and each element of "dims", "inputs",
 *              "nodes" and "outputs" begins (line and column, counted as jansson counts
 *              them: 1-based, one column per character), so every error about an entry
 *              names the line it is on.
 *
 * The scan only tokenizes: strings (with escapes), brackets, commas and colons. Text it
 * does not understand ends the scan quietly; jansson then reports the malformed JSON with
 * its own position. A scan that ends early records no positions (the reader reports
 * entries without them), so nothing here can make a valid document fail except the two
 * limits.
 */
#include "json/hl_json_int.h"

/* The top-level keys whose positions are kept, in hl__json_part order after TOP. */
static const char *const TOP_KEYS[HL__JSON_TOP_KEYS] = {"format", "version", "name",  "comment",
                                                        "dims",   "inputs",  "nodes", "outputs"};

typedef struct scanner {
    const char *s;
    size_t n, i;
    uint32_t line, col; /* of s[i] */
} scanner;

/* Advances one byte, keeping line and column (UTF-8 continuation bytes take no column). */
static void step(scanner *sc)
{
    unsigned char c = (unsigned char)sc->s[sc->i++];
    if (c == '\n') {
        sc->line++;
        sc->col = 1;
    } else if (c < 0x80 || c >= 0xC0) {
        sc->col++;
    }
}

static void skip_ws(scanner *sc)
{
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        step(sc);
    }
}

/* Skips a string starting at its opening quote; copies up to cap-1 bytes of its raw
 * contents into key when key is not NULL. False when the text ends inside it. */
static bool skip_string(scanner *sc, char *key, size_t cap)
{
    size_t k = 0;
    step(sc); /* the opening quote */
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c == '"') {
            step(sc);
            if (key) key[k] = '\0';
            return true;
        }
        if (c == '\\') {
            if (key && k + 1 < cap) key[k++] = c;
            step(sc);
            if (sc->i >= sc->n) return false;
            c = sc->s[sc->i];
        }
        if (key && k + 1 < cap) key[k++] = c;
        step(sc);
    }
    return false;
}

void hl__json_scan_fini(hl__json_scan *scan)
{
    for (int p = 0; p < HL__JSON_N_ARRAYS; p++)
        hl__free(scan->elem[p]);
    memset(scan, 0, sizeof *scan);
}

/* Records the position of element index of array part (HL__JSON_DIMS ...). */
static bool record(hl__json_scan *scan, int part, const scanner *sc)
{
    int a = part - HL__JSON_DIMS;
    void *arr = scan->elem[a];
    if (hl__grow(&arr, &scan->cap[a], scan->n_elem[a] + 1, sizeof(hl__json_pos))) return false;
    scan->elem[a] = arr;
    scan->elem[a][scan->n_elem[a]++] = (hl__json_pos){sc->line, sc->col};
    return true;
}

hl_status hl__json_scan_text(hl__json_reader *r, const char *text, size_t len)
{
    hl__json_scan *scan = &r->scan;
    scanner sc = {text, len, 0, 1, 1};
    char stack[HL_JSON_MAX_DEPTH]; /* the open containers, '{' or '[' per level */
    int depth = 0;
    bool want_value = true;  /* the next token begins a value */
    bool expect_key = false; /* in the top object, the next token is a key (or its end) */
    int top_key = -1;        /* the kept top-level key whose value comes next, or -1 */
    int array_part = 0;      /* the hl__json_part of the open level-2 array, or 0 */
    while (sc.i < sc.n) {
        skip_ws(&sc);
        if (sc.i >= sc.n) break;
        char c = text[sc.i];
        if (expect_key && c != '}') {
            char key[16];
            if (c != '"' || !skip_string(&sc, key, sizeof key)) goto quiet;
            top_key = -1;
            for (int k = 0; k < HL__JSON_TOP_KEYS; k++)
                if (strcmp(key, TOP_KEYS[k]) == 0) top_key = k;
            expect_key = false;
            continue;
        }
        if (want_value && c != ']' && c != '}') { /* a value begins here */
            if (depth == 2 && array_part) {
                uint32_t *count = &scan->n_elem[array_part - HL__JSON_DIMS];
                if (array_part == HL__JSON_NODES && *count == HL_JSON_MAX_NODES) {
                    lm_loc at = {.file = r->src,
                                 .line = sc.line,
                                 .col = sc.col,
                                 .node_id = HL_NONE,
                                 .field = "nodes"};
                    return hl__fail(r->err, HL_ERR_LIMIT, &at,
                                    "more than %u nodes (the format's limit; the reader stops "
                                    "here, before parsing the rest)",
                                    HL_JSON_MAX_NODES);
                }
                if (!record(scan, array_part, &sc))
                    return hl__fail(r->err, HL_ERR_NOMEM, NULL, "%s: out of memory", r->src);
            } else if (depth == 1 && top_key >= 0 && !scan->top[top_key].line) {
                scan->top[top_key] = (hl__json_pos){sc.line, sc.col};
            }
            want_value = false;
        }
        switch (c) {
        case '{':
        case '[':
            if (depth == HL_JSON_MAX_DEPTH) {
                lm_loc at = {.file = r->src, .line = sc.line, .col = sc.col, .node_id = HL_NONE};
                return hl__fail(r->err, HL_ERR_LIMIT, &at,
                                "JSON nested deeper than %d levels (the format's limit)",
                                HL_JSON_MAX_DEPTH);
            }
            if (depth == 1) {
                int a = top_key - (HL__JSON_TOP_KEYS - HL__JSON_N_ARRAYS);
                array_part = 0;
                if (c == '[' && a >= 0 && !scan->opened[a]) {
                    scan->opened[a] = true; /* a repeated key is jansson's to reject */
                    array_part = HL__JSON_DIMS + a;
                }
            }
            stack[depth++] = c;
            want_value = c == '[';
            expect_key = depth == 1 && c == '{';
            step(&sc);
            break;
        case '}':
        case ']':
            if (depth == 0 || stack[depth - 1] != (c == '}' ? '{' : '[')) goto quiet;
            depth--;
            if (depth == 1) array_part = 0;
            want_value = expect_key = false;
            step(&sc);
            break;
        case ',':
            if (depth == 0) goto quiet;
            want_value = stack[depth - 1] == '[';
            expect_key = depth == 1 && stack[0] == '{';
            step(&sc);
            break;
        case ':':
            want_value = true;
            step(&sc);
            break;
        case '"':
            if (!skip_string(&sc, NULL, 0)) goto quiet;
            break;
        default: /* numbers, true, false, null (or junk): up to the next delimiter */
            do
                step(&sc);
            while (sc.i < sc.n && text[sc.i] && !strchr(",:]} \t\r\n\"{[", text[sc.i]));
            break;
        }
    }
    return HL_OK;
quiet: /* jansson reports this text; the positions are not trusted */
    hl__json_scan_fini(scan);
    return HL_OK;
}

hl__json_pos hl__json_scan_pos(const hl__json_reader *r, int part, uint32_t index,
                               const char *field)
{
    const hl__json_scan *scan = &r->scan;
    hl__json_pos none = {0, 0};
    if (part == HL__JSON_TOP) {
        if (!field) return none;
        for (int k = 0; k < HL__JSON_TOP_KEYS; k++)
            if (strcmp(field, TOP_KEYS[k]) == 0) return scan->top[k];
        return none;
    }
    int a = part - HL__JSON_DIMS;
    if (a < 0 || a >= HL__JSON_N_ARRAYS || index >= scan->n_elem[a]) return none;
    return scan->elem[a][index];
}
