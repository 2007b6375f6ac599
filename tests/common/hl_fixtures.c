/* hl_fixtures.c - the shared hlir test fixtures (hl_fixtures.h). */
#include "hl_fixtures.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hl_graph *hl_fixture_every_op(void)
{
    hl_graph *g = hl_graph_new();
    if (!g) return NULL;
    hl_expr_pool *p = hl_graph_exprs(g);
    hl_expr n = hl_graph_dim(g, "n", 1, 64, 4);
    hl_expr d[2] = {n, hl_n(g, 3)};
    hl_t x = hl_input(g, "x", HL_F32, 2, d);
    hl_t y = hl_input(g, "y", HL_F32, 2, d);
    hl_t a = hl_exp2(g, hl_log2(g, hl_sqrt(g, hl_recip(g, hl_sin(g, x)))));
    hl_t b = hl_add(g, hl_mul(g, a, y), hl_mod(g, x, y));
    hl_t m = hl_cast(g, hl_lt(g, b, x), HL_F32);
    hl_t t = hl_transpose(g, hl_add(g, m, hl_full(g, 0.5f, HL_F32, 2, d)), 0, 1);
    hl_t s = hl_sum_reduce(g, hl_contiguous(g, t), 1);
    hl_t mx = hl_max_reduce(g, t, 1);
    hl_t ga = hl_gather(g, hl_iota(g, hl_e_mod(p, hl_e_z(p), hl_n(g, 3)), hl_n(g, 5)), mx);
    hl_t sc = hl_scatter(g, s, hl_iota(g, hl_e_z(p), hl_n(g, 2)),
                         hl_slice(g, ga, 0, hl_n(g, 0), hl_n(g, 2)));
    hl_output(g, "sc", sc);
    hl_output(g, "b", hl_cast(g, b, HL_BF16));
    return g;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **hl_fixture_examples(const char *src, size_t *n)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/examples/graphs", src);
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    size_t cap = 16, k = 0;
    char **list = malloc(cap * sizeof *list);
    struct dirent *e;
    while (list && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
        if (k == cap) {
            char **grown = realloc(list, (cap *= 2) * sizeof *list);
            if (!grown) break;
            list = grown;
        }
        size_t plen = strlen(dir) + len + 2;
        if (!(list[k] = malloc(plen))) break;
        snprintf(list[k++], plen, "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (!list) return NULL;
    qsort(list, k, sizeof *list, cmp_names);
    *n = k;
    return list;
}

size_t hl_fixture_examples_expected(const char *src)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/examples/graphs/README.md", src);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    size_t rows = 0;
    while (fgets(line, sizeof line, f)) /* "| `name.json` | ..." */
        if (strncmp(line, "| `", 3) == 0 && strstr(line, ".json` |")) rows++;
    fclose(f);
    return rows;
}

void hl_fixture_free_list(char **list, size_t n)
{
    for (size_t i = 0; list && i < n; i++)
        free(list[i]);
    free(list);
}
