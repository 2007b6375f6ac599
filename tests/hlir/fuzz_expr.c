/* fuzz_expr.c - libFuzzer harness for symbolic expressions: any text either fails to
 * parse with an error or gives an expression whose printed form parses back to an equal
 * value (the same id unless a product of sums was too large to multiply out, see
 * expr_simp.c; or a refusal by the 4096-node bound, or an int64 overflow when the text
 * holds numbers beyond +-2^31: hl_e_parse's contract), whose pool passes hl_expr_pool_check, and
 * whose z-bounded substitution evaluates like the expression itself wherever both evaluate. Never a
 * crash or hang. */
#include "hlir.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether text holds an integer literal beyond +-2^31 (see hl_e_parse's contract). */
static bool has_big_number(const char *text)
{
    for (const char *c = text; *c;) {
        bool letter = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_';
        if (letter) { /* a name, digits and all */
            while ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || *c == '_' ||
                   (*c >= '0' && *c <= '9'))
                c++;
            continue;
        }
        if (*c < '0' || *c > '9') {
            c++;
            continue;
        }
        uint64_t v = 0;
        for (; *c >= '0' && *c <= '9'; c++)
            if (v <= (1ull << 31)) v = v * 10 + (uint64_t)(*c - '0');
        if (v >= (1ull << 31)) return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    hl_expr_pool *p = hl_expr_pool_new();
    lm_err err;
    lm_err_clear(&err);
    hl_expr e;
    if (p && hl_e_parse(p, text, &e, &err) == HL_OK) {
        size_t n = hl_e_print(p, e, NULL, 0);
        char *printed = malloc(n + 1);
        if (printed) {
            hl_e_print(p, e, printed, n + 1);
            hl_expr back;
            lm_err_clear(&err);
            hl_status st = hl_e_parse(p, printed, &back, &err);
            /* parsing the multiplied-out text may build a bigger tree than the original
             * parse did; only the size bound may refuse it, or an overflow of int64 when
             * the expression holds numbers beyond +-2^31 (hl_e_parse's contract) */
            if (st != HL_OK && !strstr(err.msg, "exceeds 4096 nodes") &&
                !(strstr(err.msg, "overflows int64") && has_big_number(printed)))
                abort();
            free(printed);
            if (st == HL_OK &&
                back != e) { /* only a too-large product of sums may differ: values agree */
                int64_t vals[16];
                for (int i = 0; i < 16; i++)
                    vals[i] = 1 + i % 5;
                hl_env env = {vals, NULL, hl_var_count(p) < 16 ? hl_var_count(p) : 16};
                for (int64_t z = 0; z < 4; z++) {
                    int64_t x, y;
                    lm_err_clear(&err);
                    hl_status s1 = hl_e_eval(p, e, &env, z, &x, &err);
                    lm_err_clear(&err);
                    hl_status s2 = hl_e_eval(p, back, &env, z, &y, &err);
                    if (s1 == HL_OK && s2 == HL_OK && x != y) abort();
                }
            }
        }
        lm_err_clear(&err);
        if (hl_expr_pool_check(p, &err) != HL_OK) abort();
        int64_t vals[16];
        for (int i = 0; i < 16; i++)
            vals[i] = 1 + i % 5;
        hl_env env = {vals, NULL, hl_var_count(p) < 16 ? hl_var_count(p) : 16};
        hl_expr b = hl_e_subst_z(p, e, hl_e_z(p), 6);
        for (int64_t z = 0; z < 6 && b != HL_NONE; z++) {
            int64_t x, y;
            lm_err_clear(&err);
            hl_status s1 = hl_e_eval(p, e, &env, z, &x, &err);
            lm_err_clear(&err);
            hl_status s2 = hl_e_eval(p, b, &env, z, &y, &err);
            if (s1 == HL_OK && s2 == HL_OK && x != y) abort();
        }
    }
    hl_expr_pool_free(p);
    free(text);
    return 0;
}
