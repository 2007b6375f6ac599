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

/* ---- the bounded reader ----
 *
 * Why a reader and not only lm_read_file: formats with a length in their header
 * (safetensors) read the header first and then exactly the bytes it claims, checked
 * against the file's size, so that a lying header costs nothing. */

int lm_reader_open(lm_reader *r, const char *path, lm_err *err)
{
    memset(r, 0, sizeof *r);
    if (!path || !*path) return lm_err_set(err, LM_EARG, NULL, "no file name given");
    r->is_stdin = strcmp(path, "-") == 0;
    snprintf(r->name, sizeof r->name, "%s", r->is_stdin ? "<stdin>" : path);
    lm_loc at = {.file = r->name, .node_id = LM_NONE};
    FILE *f = r->is_stdin ? stdin : fopen(path, "rb");
    if (!f) return lm_err_set(err, LM_EIO, &at, "cannot open: %s", strerror(errno));
    r->f = f;
    struct stat st;
    if (fstat(fileno(f), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            lm_reader_close(r);
            return lm_err_set(err, LM_EIO, &at, "is a directory, not a file");
        }
        r->regular = S_ISREG(st.st_mode) && st.st_size >= 0;
        r->size = r->regular ? (uint64_t)st.st_size : 0;
    }
    return 0;
}

int lm_reader_read(lm_reader *r, void *buf, size_t n, size_t *got, lm_err *err)
{
    size_t k = n ? fread(buf, 1, n, (FILE *)r->f) : 0;
    r->pos += k;
    if (got) *got = k;
    if (k < n && ferror((FILE *)r->f)) {
        lm_loc at = {.file = r->name, .node_id = LM_NONE};
        return lm_err_set(err, LM_EIO, &at, "read failed: %s", strerror(errno));
    }
    return 0;
}

int lm_reader_read_exact(lm_reader *r, void *buf, size_t n, const char *what, lm_err *err)
{
    size_t got = 0;
    if (lm_reader_read(r, buf, n, &got, err)) return err ? err->code : LM_EIO;
    if (got == n) return 0;
    lm_loc at = {.file = r->name, .node_id = LM_NONE};
    return lm_err_set(err, LM_EPARSE, &at,
                      "the file is truncated: it ends after %llu bytes, inside %s (%zu more bytes "
                      "were expected)",
                      (unsigned long long)r->pos, what ? what : "its data", n - got);
}

bool lm_reader_at_end(lm_reader *r, lm_err *err)
{
    unsigned char c;
    size_t got = 0;
    if (lm_reader_read(r, &c, 1, &got, err)) return false;
    return got == 0;
}

/* The chunks of a stream being read (from the counted door, base.h "Memory"): no chunk is ever copied while reading (a realloc
 * would hold the old and the new block at once), so refusing a stream costs at most the
 * limit. A read that fits its first chunk is returned as it is; a longer one is copied
 * into one block at the end (the chunks are freed as they are copied). */
#define CHUNK_FIRST ((size_t)64 << 10)
#define CHUNK_MAX ((size_t)64 << 20)

typedef struct chunks {
    char **p;
    size_t *len;
    size_t n, cap;
} chunks;

static void chunks_free(chunks *c)
{
    for (size_t i = 0; i < c->n; i++)
        lm_free(c->p[i]);
    lm_free(c->p);
    lm_free(c->len);
}

/* lm_reader_rest; text: a NUL byte is refused, located, as soon as it is read (so an
 * endless stream of zeros costs one step). */
static char *rest(lm_reader *r, size_t max_bytes, bool text, size_t *len, lm_err *err)
{
    lm_loc at = {.file = r->name, .node_id = LM_NONE};
    if (len) *len = 0;
    if (!max_bytes) max_bytes = LM_READ_MAX;
    if (max_bytes >= SIZE_MAX / 2) max_bytes = SIZE_MAX / 2;
    /* a regular file says its size: refuse before allocating anything */
    uint64_t left = r->regular && r->size > r->pos ? r->size - r->pos : 0;
    if (r->regular && left > max_bytes) {
        lm_err_set(err, LM_ELIMIT, &at,
                   "the file is %llu bytes, more than the limit of %zu bytes for it",
                   (unsigned long long)r->size, max_bytes);
        return NULL;
    }
    /* the first chunk holds a regular file whole (and one byte more, to see that it did
     * not grow) and its NUL; a stream's chunks double up to CHUNK_MAX; all of them
     * together never hold more than max_bytes + 2 */
    size_t want = r->regular ? (size_t)left + 2 : CHUNK_FIRST;
    chunks c = {0};
    size_t total = 0, line = 1, col = 1;
    int rc = 0;
    for (;;) {
        size_t room = max_bytes + 2 - total; /* >= 1: total <= max_bytes + 1 */
        if (room < 2) break;                 /* total == max_bytes + 1: more than the limit */
        size_t size = want < room ? want : room;
        if (c.n == c.cap) {
            size_t ncap = c.cap ? c.cap * 2 : 8;
            char **np = lm_realloc(c.p, ncap, sizeof *np);
            if (np) c.p = np;
            size_t *nl = np ? lm_realloc(c.len, ncap, sizeof *nl) : NULL;
            if (nl) c.len = nl;
            if (!np || !nl) {
                rc = lm_err_set(err, LM_ENOMEM, &at, "out of memory reading the file");
                break;
            }
            c.cap = ncap;
        }
        char *b = lm_alloc(size, 1);
        if (!b) {
            rc = lm_err_set(err, LM_ENOMEM, &at,
                            "out of memory: %zu bytes more to read the file (%zu read so far)",
                            size, total);
            break;
        }
        c.p[c.n] = b;
        c.len[c.n++] = 0;
        size_t k = 0, got = 0;
        /* fill the chunk but for one byte (the NUL, when it is the only one) */
        while (got < size - 1) {
            if ((rc = lm_reader_read(r, b + got, size - 1 - got, &k, err))) break;
            if (k == 0) break;
            if (text && memchr(b + got, 0, k)) {
                const char *z = memchr(b + got, 0, k);
                for (size_t i = 0; i < c.n; i++) { /* the line and column of the NUL */
                    const char *q = c.p[i], *e = i + 1 < c.n ? q + c.len[i] : z;
                    if (i + 1 == c.n) e = z;
                    for (; q < e; q++) {
                        if (*q == '\n') line++, col = 1;
                        else col++;
                    }
                }
                lm_loc nul = {.file = r->name, .line = (uint32_t)line, .col = (uint32_t)col,
                              .node_id = LM_NONE};
                rc = lm_err_set(err, LM_EPARSE, &nul,
                                "a NUL byte: the file must be text, and nothing after it would "
                                "be read");
                break;
            }
            got += k;
            c.len[c.n - 1] = got;
        }
        total += got;
        if (rc || got < size - 1) break; /* an error, or the end */
        want = want < CHUNK_MAX ? want * 2 : CHUNK_MAX;
    }
    if (!rc && total > max_bytes)
        rc = lm_err_set(err, LM_ELIMIT, &at, "the %s holds more than the limit of %zu bytes for it",
                        r->regular ? "file" : "stream", max_bytes);
    char *out = NULL;
    if (!rc && c.n == 1) { /* it fit the first chunk: no copy */
        out = c.p[0];
        c.n = 0;
    } else if (!rc) {
        out = lm_alloc(total + 1, 1);
        if (!out)
            rc = lm_err_set(err, LM_ENOMEM, &at, "out of memory: %zu bytes to hold the file",
                            total + 1);
        for (size_t i = 0, o = 0; out && i < c.n; i++) {
            memcpy(out + o, c.p[i], c.len[i]);
            o += c.len[i];
            lm_free(c.p[i]);
            c.p[i] = NULL;
        }
    }
    chunks_free(&c);
    if (rc) {
        lm_free(out);
        return NULL;
    }
    out[total] = '\0';
    if (len) *len = total;
    return out;
}

char *lm_reader_rest(lm_reader *r, size_t max_bytes, size_t *len, lm_err *err)
{
    return rest(r, max_bytes, false, len, err);
}

void lm_reader_close(lm_reader *r)
{
    if (r && r->f && !r->is_stdin) fclose((FILE *)r->f);
    if (r) r->f = NULL;
}

char *lm_read_file(const char *path, size_t max_bytes, size_t *len, lm_err *err)
{
    if (len) *len = 0;
    lm_reader r;
    if (lm_reader_open(&r, path, err)) return NULL;
    char *buf = lm_reader_rest(&r, max_bytes, len, err);
    lm_reader_close(&r);
    return buf;
}

char *lm_read_text(const char *path, size_t max_bytes, size_t *len, lm_err *err)
{
    if (len) *len = 0;
    lm_reader r;
    if (lm_reader_open(&r, path, err)) return NULL;
    char *buf = rest(&r, max_bytes, true, len, err);
    lm_reader_close(&r);
    return buf;
}

bool lm_find_nul(const char *text, size_t len, uint32_t *line, uint32_t *col)
{
    const char *z = memchr(text, 0, len);
    if (!z) return false;
    uint32_t ln = 1, c = 1;
    for (const char *p = text; p < z; p++) {
        if (*p == '\n') {
            ln++;
            c = 1;
        } else {
            c++;
        }
    }
    if (line) *line = ln;
    if (col) *col = c;
    return true;
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

/* ---- directories ---- */

int lm_mkdir_p(const char *path, lm_err *err)
{
    if (!path || !*path) return lm_err_set(err, LM_EARG, NULL, "no directory name given");
    lm_loc at = {.file = path, .node_id = LM_NONE};
    char *buf = lm_strdup(path);
    if (!buf) return lm_err_set(err, LM_ENOMEM, &at, "out of memory making the directory");
    /* each prefix ending before a '/' (and the whole path), the root left alone */
    int rc = 0;
    for (size_t i = 1;; i++) {
        char c = buf[i];
        if (c != '/' && c != '\0') continue;
        if (buf[i - 1] != '/') { /* "a//b": the empty part is not a directory of its own */
            buf[i] = '\0';
            int e = mkdir(buf, 0777) == 0 ? 0 : errno;
            struct stat st;
            if (e == 0 || e == EEXIST) {
                bool dir = stat(buf, &st) == 0 && S_ISDIR(st.st_mode);
                e = dir ? 0 : ENOTDIR;
            }
            if (e) {
                rc = lm_err_set(err, LM_EIO, &at, "cannot make the directory %s: %s", buf,
                                e == ENOTDIR ? "a file of that name is in the way" : strerror(e));
                break;
            }
            buf[i] = c;
        }
        if (c == '\0') break;
    }
    lm_free(buf);
    return rc;
}
