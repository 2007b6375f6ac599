/* base.h - what every module of luminal-c shares: the one public header of base/.
 *
 * What more than one module needs, kept once:
 *
 *   errors    one error record (lm_err) and one numbering of error codes (lm_code) for
 *             every module, so an error raised in cuda_rt reaches the search and the
 *             command line without translation; lm_err_set is the door every error of
 *             every module finally goes through (a breakpoint there catches them all)
 *   random    PCG32, the generator behind every random choice (graphs, inputs, genomes)
 *   memory    the one counted allocation door (every module's own door calls it) and its
 *             test hooks: one lm_mem_fail_after fails the n-th allocation of a whole
 *             compile, whichever module makes it
 *   files     the one bounded reader of files and streams (standard input is "-"), and
 *             lm_mkdir_p
 *
 * The conventions these serve are written in docs/architecture.md. In short:
 *
 * - A fallible function returns an lm_code (0 is success, every error is positive) or a
 *   pointer (NULL on failure), and fills a caller-supplied lm_err.
 * - The caller owns the record and is the only one who clears it (lm_err_clear, or
 *   zero-initialising it: `lm_err err = {0};` is an empty record). Callees never clear.
 * - Records are sticky: the first error wins. Raising into a record that already holds an
 *   error keeps the first and returns its code, so a chain of calls is checked once.
 * - Each module raises its errors through one function of its own (hl__fail, eg__throw,
 *   rt__fail, ...), which ends in lm_err_set or lm_err_setv.
 *
 * Nothing here allocates except the memory door, lm_read_file and lm_mkdir_p; the only
 * global state is the door's thread-local test hook and counters.
 */
#ifndef LUMINAL_BASE_H
#define LUMINAL_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================
 * Errors
 * ================================================================================== */

/* Every error code of every module: 0 is success, every error is positive. Modules name
 * the codes they raise in their own enums (HL_ERR_SHAPE, RT_EFAULT, EG_ERR_TYPE, ...)
 * whose values are these, so a code means the same thing wherever it arrives. */
typedef enum lm_code {
    LM_OK = 0,
    /* any module */
    LM_ENOMEM,  /* an allocation failed or a size overflowed; the structure is as before */
    LM_EARG,    /* a bad argument to an API function (a caller's bug, or misuse) */
    LM_EPARSE,  /* malformed text: JSON, s-expressions, expressions, plan files */
    LM_EIO,     /* a file could not be read or written */
    LM_ELIMIT,  /* a limit was reached (nodes, memory, time, candidates) and it is fatal */
    LM_EUNSUPPORTED, /* valid input that this build, device or library cannot do */
    /* the rules language and the engine */
    LM_ETYPE,    /* a type error, unbound name, wrong arity, ungrounded variable */
    LM_ERUNTIME, /* a failed check, panic, primitive failure, merge conflict, bad data */
    /* tensors */
    LM_ESHAPE, /* shapes do not agree */
    LM_EDTYPE, /* a dtype is not accepted, or two dtypes differ */
    LM_EDIM,   /* an unknown or unbound dynamic dimension */
    LM_EEVAL,  /* an expression could not be evaluated (division by zero, overflow) */
    LM_EVIEW,  /* a view change cannot be expressed as strides (the caller may copy) */
    /* the compiler's middle */
    LM_EVERIFY,   /* an LLIR graph, genome or e-graph breaks an invariant (names the rule) */
    LM_EMISMATCH, /* a candidate's outputs disagree with the reference runtime */
    /* the GPU */
    LM_ENODEV,   /* no CUDA driver or no device */
    LM_EDRIVER,  /* a driver call failed */
    LM_EFAULT,   /* a kernel faulted, or isolated work died */
    LM_ENVRTC,   /* NVRTC could not be loaded, or failed outside compilation */
    LM_ECOMPILE, /* NVRTC rejected generated source */
    LM_EBLAS,    /* a cuBLASLt call failed or found no algorithm */
    LM_ETIMEOUT, /* work did not finish within its timeout */
    LM_ESTALE,   /* an object made before a context reset was used after it */
    LM_CODE_COUNT
} lm_code;

/* A short lower-case name of a code ("shape mismatch", "kernel fault", ...); never NULL
 * ("unknown error" for a value outside the enum). */
const char *lm_code_name(int code);
/* The enum's identifier ("LM_ESHAPE"); never NULL. */
const char *lm_code_ident(int code);

#define LM_NONE UINT32_MAX /* "no node", "no id" */
#define LM_ERR_MSG 2048    /* NVRTC logs with their source lines fit */
#define LM_ERR_NAME 128

/* Where in the user's input an error is: any field may be empty. */
typedef struct lm_loc {
    const char *file;  /* input file (or "<json>", "<input>"); NULL when none */
    uint32_t line;     /* 1-based; 0 when unknown */
    uint32_t col;      /* 1-based; 0 when unknown */
    const char *node;  /* the user's name of the node, rule, kernel ...; NULL when none */
    uint32_t node_id;  /* the node's id in its graph, or LM_NONE */
    const char *field; /* the field (JSON key, operand, argument); NULL when none */
} lm_loc;

/* The error record. The caller owns it; `lm_err err = {0};` or lm_err_clear make it
 * empty. code is LM_OK while empty. msg is the whole message a user reads, beginning
 * with the location ("file:line:col: node 'h1': field 'eps': expected a number"); the
 * location is also kept field by field for programs (tests, the search's log). */
typedef struct lm_err {
    int code;                   /* LM_OK, or a positive lm_code */
    uint32_t line, col;         /* 0 when unknown */
    uint32_t node_id;           /* LM_NONE when unknown; 0 in a zeroed record means node 0
                                   only when node[0] or the message says so */
    char file[LM_ERR_NAME];     /* "" when unknown */
    char node[LM_ERR_NAME];     /* "" when unknown */
    char field[LM_ERR_NAME];    /* "" when unknown */
    char msg[LM_ERR_MSG];       /* NUL-terminated; "" while empty */
} lm_err;

/* Empties the record. Accepts NULL. Cannot fail. */
void lm_err_clear(lm_err *err);
/* True when err holds an error (false for NULL). */
static inline bool lm_err_is_set(const lm_err *err)
{
    return err && err->code != LM_OK;
}

/* The door: records code (> 0), the location (loc may be NULL) and the printf-formatted
 * message, prefixed with the location as "file:line:col: node 'N': field 'F': " (the
 * parts that are known), and returns code. When err already holds an error it is kept
 * (the first error wins) and its code is returned. err may be NULL: then only code is
 * returned. The message is truncated to fit (ending in "..."). */
int lm_err_set(lm_err *err, int code, const lm_loc *loc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
int lm_err_setv(lm_err *err, int code, const lm_loc *loc, const char *fmt, va_list ap);

/* Prefixes the message of a held error with "what: " (e.g. the candidate or program that
 * the error happened in), keeping the code and location. Does nothing on an empty record.
 * The message is truncated to fit. */
void lm_err_prefix(lm_err *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Copies src into dst unless dst already holds an error (the first error wins). */
void lm_err_copy(lm_err *dst, const lm_err *src);

/* ==================================================================================
 * Random numbers: PCG32
 * ==================================================================================
 *
 * O'Neill's permuted congruential generator, XSH RR variant: 64-bit state, a stream
 * selector, 32-bit outputs. Seeded only from (seed, stream), so the same pair gives the
 * same numbers on every machine; different streams give independent sequences. */

typedef struct lm_pcg32 {
    uint64_t state, inc;
} lm_pcg32;

void lm_pcg_seed(lm_pcg32 *r, uint64_t seed, uint64_t stream);
uint32_t lm_pcg_next(lm_pcg32 *r);
/* Uniform in [0, n) without modulo bias; n > 0. */
uint32_t lm_pcg_below(lm_pcg32 *r, uint32_t n);
/* Uniform in [0, 1) in steps of 2^-32. */
double lm_pcg_unit(lm_pcg32 *r);

/* ==================================================================================
 * Memory
 * ==================================================================================
 *
 * The one allocation door. Every module has a door of its own (hl__alloc, ll__alloc,
 * eg__alloc, cg__alloc, rt__alloc, pg__alloc, sr__alloc, ...) that calls these, so sizes
 * are checked for overflow in one place, every request is counted, and one test hook
 * fails the n-th request of a whole compile whichever module makes it. Blocks come from
 * malloc: a block from lm_alloc may be given back with free(), and one from malloc with
 * lm_free. A request for 0 bytes returns a valid block (never NULL on success).
 *
 * Out of memory is an error, never an abort: these return NULL (and lm_grow -1) leaving
 * what the caller had untouched, and the caller raises LM_ENOMEM through its error door. */

/* n * size bytes, uninitialised; NULL on overflow or failure. */
void *lm_alloc(size_t n, size_t size);
/* n * size bytes, zero-filled; NULL on overflow or failure. */
void *lm_zalloc(size_t n, size_t size);
/* Resizes p (NULL: a new block) to n * size bytes; NULL on overflow or failure, and then
 * p is untouched and still the caller's. */
void *lm_realloc(void *p, size_t n, size_t size);
/* Gives back a block of this door (or of malloc). Accepts NULL. */
void lm_free(void *p);
/* A copy of s (NULL for NULL), or of its first n bytes, NUL-terminated; NULL on failure. */
char *lm_strdup(const char *s);
char *lm_strndup(const char *s, size_t n);

/* The first capacity lm_grow gives an empty array. */
#define LM_GROW_FIRST 8
/* Grows *arr (*cap elements of size bytes each) to hold at least need elements, doubling
 * from LM_GROW_FIRST (capped at UINT32_MAX). 0, or -1 with *arr and *cap untouched. New
 * elements are not initialised. */
int lm_grow(void **arr, uint32_t *cap, uint32_t need, size_t size);

/* A module's door over these, for a module with nothing to add: LM_MEM_DOOR(hl) defines
 * hl__alloc, hl__zalloc, hl__realloc, hl__free, hl__strdup and hl__grow as static inline
 * forwards, in the module's private header, so the door stays the module's own name
 * (one place to break on, one to change) without a file of one-line functions. */
#define LM_MEM_DOOR(p)                                                                       \
    static inline void *p##__alloc(size_t n, size_t size) { return lm_alloc(n, size); }     \
    static inline void *p##__zalloc(size_t n, size_t size) { return lm_zalloc(n, size); }   \
    static inline void *p##__realloc(void *q, size_t n, size_t size)                         \
    {                                                                                        \
        return lm_realloc(q, n, size);                                                       \
    }                                                                                        \
    static inline void p##__free(void *q) { lm_free(q); }                                    \
    static inline char *p##__strdup(const char *s) { return lm_strdup(s); }                  \
    static inline int p##__grow(void **arr, uint32_t *cap, uint32_t need, size_t size)       \
    {                                                                                        \
        return lm_grow(arr, cap, need, size);                                                \
    }

/* Counts a request of n * size bytes and decides whether it may go ahead: false when the
 * size overflows or the test hook fails this request. For a door that must use another
 * allocator (the engine's, which accounts for blocks by their usable size) but still
 * counts and fails with everyone else; lm_alloc and friends call it. */
bool lm_mem_admit(size_t n, size_t size);

/* Tests only (thread-local, shared by every module): the request after the next n fails
 * (n = 0: the very next one), once; later ones succeed again. -1 disables the hook.
 * lm_mem_fail_fired tells whether that failure has happened since lm_mem_fail_after. A
 * test that runs an operation with n = 0, 1, 2, ... until the hook no longer fires has
 * failed each of its allocations in turn. */
void lm_mem_fail_after(long n);
bool lm_mem_fail_fired(void);
/* Tests only: how many requests this thread made of the door since lm_mem_stats_reset,
 * and the largest in bytes (SIZE_MAX for an overflowing one); either pointer may be NULL. */
void lm_mem_stats(uint64_t *calls, size_t *largest);
void lm_mem_stats_reset(void);

/* ==================================================================================
 * Files
 * ================================================================================== */

/* Every file and stream the project reads goes through this one bounded reader: a size
 * limit always holds, and a regular file's real size is checked against it before
 * anything is allocated, so a huge file, a link to /dev/zero or an endless pipe is
 * refused with a message, never read until memory runs out.
 *
 * The limit a caller gives is the most the input can usefully hold (a .npy of a known
 * shape, a format's largest header, the engine's memory limit); 0 means LM_READ_MAX. A
 * stream of unknown size (standard input, a pipe, a character device) is read in chunks
 * (64 KiB doubling to 64 MiB) that are never copied while reading and together never
 * hold more than limit + 2 bytes, so refusing an input costs at most the limit; a stream
 * read whole is copied into one block at the end (twice its size for that moment, unless
 * it fit the first chunk). Messages name the path, or "<stdin>" for "-". */
#define LM_READ_MAX ((size_t)1 << 30) /* the limit when a caller gives 0: 1 GiB */

/* A file or stream open for bounded reading (lm_reader_open). */
typedef struct lm_reader {
    void *f;                /* the FILE (void: no stdio in the header's users) */
    bool is_stdin;          /* "-": not closed by lm_reader_close */
    bool regular;           /* a regular file: size is its size when opened */
    uint64_t size;          /* a regular file's size in bytes; 0 otherwise */
    uint64_t pos;           /* bytes read so far */
    char name[LM_ERR_NAME]; /* for messages: the path, or "<stdin>" */
} lm_reader;

/* Opens path ("-": standard input) and finds what it is. LM_EARG without a path, LM_EIO
 * naming it when it cannot be opened or is a directory. */
int lm_reader_open(lm_reader *r, const char *path, lm_err *err);
/* Reads up to n bytes into buf; *got (may be NULL) receives how many (fewer only at the
 * end). LM_EIO on a read error. */
int lm_reader_read(lm_reader *r, void *buf, size_t n, size_t *got, lm_err *err);
/* Reads exactly n bytes into buf, or fails: LM_EPARSE "ends after B bytes; W were
 * expected" (what names the part: "its header"), LM_EIO on a read error. */
int lm_reader_read_exact(lm_reader *r, void *buf, size_t n, const char *what, lm_err *err);
/* True when nothing is left to read. It reads one byte ahead to know, so a false answer
 * means the input holds more than the caller expected (that byte is consumed). */
bool lm_reader_at_end(lm_reader *r, lm_err *err);
/* Reads the rest into a new NUL-terminated buffer (free()) of at most max_bytes bytes
 * (0: LM_READ_MAX). LM_ELIMIT naming the file, its size where known and the limit when
 * there is more (for a regular file, before allocating), LM_ENOMEM, LM_EIO; NULL then. */
char *lm_reader_rest(lm_reader *r, size_t max_bytes, size_t *len, lm_err *err);
/* Closes the file (never standard input). Accepts a reader that failed to open. */
void lm_reader_close(lm_reader *r);

/* Reads the whole file at path (lm_reader_open, lm_reader_rest) into a NUL-terminated
 * buffer that the caller frees with free(); "-" reads standard input. *len (may be NULL)
 * receives the length without the NUL. max_bytes as lm_reader_rest (0: LM_READ_MAX).
 * Fails with LM_EIO naming the path and the reason (missing, a directory, unreadable),
 * LM_ELIMIT (larger than the limit) or LM_ENOMEM; then returns NULL. */
char *lm_read_file(const char *path, size_t max_bytes, size_t *len, lm_err *err);

/* As lm_read_file, for text formats (programs, JSON): a NUL byte is refused as soon as
 * it is read, LM_EPARSE located at its line and column, so /dev/zero costs one step. */
char *lm_read_text(const char *path, size_t max_bytes, size_t *len, lm_err *err);

/* Where the first NUL byte of text[0 .. len) is, as a 1-based line and column; false
 * when there is none. For text formats, which refuse NUL bytes with their location. */
bool lm_find_nul(const char *text, size_t len, uint32_t *line, uint32_t *col);

/* Makes the directory path and any missing parents (mkdir -p, mode 0777 less the umask).
 * An existing directory is success. LM_EIO naming the path and the part that could not be
 * made, and why (a file of that name is in the way, permission, ...); LM_EARG for an
 * empty path; LM_ENOMEM. */
int lm_mkdir_p(const char *path, lm_err *err);

/* ==================================================================================
 * Small shared helpers
 * ================================================================================== */

/* Wall-clock seconds from a monotonic clock (for limits and progress, never results). */
double lm_now_s(void);

/* Bytes of physical memory this process may use (the machine's memory, lowered by a
 * cgroup limit where one applies); 0 when unknown. */
uint64_t lm_mem_available(void);

/* Parses a byte count with an optional K, M or G suffix (powers of 1024) into *out.
 * false for anything else (empty, a sign, a fraction, trailing text, overflow). */
bool lm_parse_bytes(const char *text, uint64_t *out);

#ifdef __cplusplus
}
#endif
#endif /* LUMINAL_BASE_H */
