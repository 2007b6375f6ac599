/* pf_dir.h - the program tests' helpers for saved program directories: a temporary
 * folder, reading and writing whole files, comparing two saved directories byte for byte,
 * and the fixture's program on the CPU backend made and loaded. Header-only. */
#ifndef LUMINAL_TESTS_PROGRAM_PF_DIR_H
#define LUMINAL_TESTS_PROGRAM_PF_DIR_H

#include "pf.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static inline void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            size_t n = strlen(path) + strlen(e->d_name) + 2;
            char *sub = malloc(n);
            snprintf(sub, n, "%s/%s", path, e->d_name);
            rm_tree(sub);
            free(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static inline char *slurp(const char *path, size_t *len)
{
    lm_err e = {0};
    char *t = lm_read_file(path, 0, len, &e);
    ck_assert_msg(t != NULL, "%s", e.msg);
    return t;
}

static inline void spit(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(text, 1, len, f), len);
    fclose(f);
}

/* Compares every file of a saved program directory. */
static inline void same_dirs(const char *a, const char *b)
{
    const char *files[] = {"plan.json", "llir.json", NULL};
    for (int i = 0; files[i]; i++) {
        char pa[512], pb[512];
        snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
        size_t la, lb;
        char *ta = slurp(pa, &la), *tb = slurp(pb, &lb);
        ck_assert_msg(la == lb && memcmp(ta, tb, la) == 0, "%s differs", files[i]);
        free(ta), free(tb);
    }
    char ka[512];
    snprintf(ka, sizeof ka, "%s/kernels", a);
    DIR *d = opendir(ka);
    ck_assert_ptr_nonnull(d);
    struct dirent *e;
    uint32_t n = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char pa[1024], pb[1024];
        int wa = snprintf(pa, sizeof pa, "%s/kernels/%.255s", a, e->d_name);
        int wb = snprintf(pb, sizeof pb, "%s/kernels/%.255s", b, e->d_name);
        ck_assert(wa > 0 && wb > 0 && (size_t)wa < sizeof pa && (size_t)wb < sizeof pb);
        size_t la, lb;
        char *ta = slurp(pa, &la), *tb = slurp(pb, &lb);
        ck_assert_msg(la == lb && memcmp(ta, tb, la) == 0, "%s differs", e->d_name);
        free(ta), free(tb);
        n++;
    }
    closedir(d);
    ck_assert_uint_gt(n, 0);
}

typedef struct tmp {
    char root[256], a[300], b[300];
} tmp;

static inline void tmp_make(tmp *t)
{
    const char *base = getenv("TMPDIR");
    snprintf(t->root, sizeof t->root, "%s/pg_saved_XXXXXX", base && base[0] ? base : "/tmp");
    ck_assert_ptr_nonnull(mkdtemp(t->root));
    snprintf(t->a, sizeof t->a, "%s/prog_a", t->root);
    snprintf(t->b, sizeof t->b, "%s/prog_b", t->root);
}

static inline pg_program *cpu_new(pf *f, const char *name, bool buckets)
{
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    o.name = name;
    o.egraph_fingerprint = "eg:0123456789abcdef";
    o.genome_fingerprint = "genome:fedcba9876543210";
    pg_bucket b[2] = {{1, 16}, {17, 256}};
    pg_dim_buckets db = {"n", 2, b};
    if (buckets) {
        o.n_buckets = 1;
        o.buckets = &db;
    }
    lm_err e = {0};
    pg_program *p = pg_program_new(&f->plan, f->g, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    return p;
}

static inline pg_program *cpu_load(const char *dir)
{
    pg_options o;
    pg_options_default(&o);
    o.backend = PG_BACKEND_CPU;
    lm_err e = {0};
    pg_program *p = pg_program_load(dir, &o, &e);
    ck_assert_msg(p, "%s", e.msg);
    return p;
}

#endif /* LUMINAL_TESTS_PROGRAM_PF_DIR_H */
