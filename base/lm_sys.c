/* lm_sys.c - reading whole files, the clock, the memory the process may use, byte counts.
 *
 * The small pieces of the operating system that more than one module or tool needs. */
#include "base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *lm_read_file(const char *path, size_t max_bytes, size_t *len, lm_err *err)
{
    lm_loc at = {.file = path, .node_id = LM_NONE};
    if (len) *len = 0;
    if (!path || !*path) {
        lm_err_set(err, LM_EARG, NULL, "no file name given");
        return NULL;
    }
    bool is_stdin = strcmp(path, "-") == 0;
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        lm_err_set(err, LM_EIO, &at, "cannot open: %s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        if (!is_stdin) fclose(f);
        lm_err_set(err, LM_EIO, &at, "is a directory, not a file");
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        if (!is_stdin) fclose(f);
        lm_err_set(err, LM_ENOMEM, &at, "out of memory reading the file");
        return NULL;
    }
    for (;;) {
        if (n + 1 >= cap) {
            char *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                if (!is_stdin) fclose(f);
                lm_err_set(err, LM_ENOMEM, &at, "out of memory reading %zu bytes", n);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + n, 1, cap - n - 1, f);
        n += k;
        if (max_bytes && n > max_bytes) {
            free(buf);
            if (!is_stdin) fclose(f);
            lm_err_set(err, LM_EIO, &at, "larger than the limit of %zu bytes", max_bytes);
            return NULL;
        }
        if (k == 0) break;
    }
    int failed = ferror(f);
    int saved = errno;
    if (!is_stdin) fclose(f);
    if (failed) {
        free(buf);
        lm_err_set(err, LM_EIO, &at, "read failed: %s", strerror(saved));
        return NULL;
    }
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

double lm_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A cgroup v2 (memory.max) or v1 (memory.limit_in_bytes) limit, or 0. */
static uint64_t cgroup_limit(void)
{
    static const char *const files[] = {"/sys/fs/cgroup/memory.max",
                                        "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        FILE *f = fopen(files[i], "r");
        if (!f) continue;
        char line[64] = {0};
        bool ok = fgets(line, sizeof line, f) != NULL;
        fclose(f);
        if (!ok || strncmp(line, "max", 3) == 0) continue;
        char *end;
        unsigned long long v = strtoull(line, &end, 10);
        if (end != line && v > 0 && v < (1ULL << 62)) return v;
    }
    return 0;
}

uint64_t lm_mem_available(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t cg = cgroup_limit();
    if (cg && (!phys || cg < phys)) return cg;
    return phys;
}

bool lm_parse_bytes(const char *text, uint64_t *out)
{
    if (!text || *text < '0' || *text > '9') return false;
    uint64_t v = 0;
    const char *p = text;
    for (; *p >= '0' && *p <= '9'; p++) {
        if (v > (UINT64_MAX - 9) / 10) return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    unsigned shift = 0;
    if (*p == 'K' || *p == 'k') shift = 10;
    else if (*p == 'M' || *p == 'm') shift = 20;
    else if (*p == 'G' || *p == 'g') shift = 30;
    if (shift) p++;
    if (*p) return false;
    if (shift && v > (UINT64_MAX >> shift)) return false;
    *out = v << shift;
    return true;
}
