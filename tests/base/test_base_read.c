/* test_base_read.c - the bounded reader of base.h: every file and stream read is held to
 * a limit, checked against a regular file's real size before allocating. */
#include "base.h"
#include "lm_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

static void make_tmp(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/lm_base_read_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static const char *write_tmp(const char *name, const void *data, size_t n)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    return path;
}

START_TEST(reads_a_file_whole)
{
    make_tmp();
    const char *p = write_tmp("a.txt", "hello\nworld", 11);
    lm_err e = {0};
    size_t len = 0;
    char *t = lm_read_file(p, 100, &len, &e);
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(len, 11);
    ck_assert_str_eq(t, "hello\nworld");
    free(t);
    /* exactly at the limit is allowed, one byte over is not */
    t = lm_read_file(p, 11, &len, &e);
    ck_assert_ptr_nonnull(t);
    free(t);
    t = lm_read_file(p, 10, &len, &e);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(e.code, LM_ELIMIT);
    ck_assert_ptr_nonnull(strstr(e.msg, "a.txt"));
    ck_assert_ptr_nonnull(strstr(e.msg, "11 bytes"));
    ck_assert_ptr_nonnull(strstr(e.msg, "limit of 10 bytes"));
    unlink(p);
    rmdir(tmpdir);
}
END_TEST

/* A regular file larger than the limit is refused from its size: under an address-space
 * limit below the file's size, reading it would fail with "out of memory", so the
 * refusal proves nothing was allocated for it. */
START_TEST(a_large_file_is_refused_before_allocating)
{
    make_tmp();
    char path[512];
    snprintf(path, sizeof path, "%s/big", tmpdir);
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(ftruncate(fileno(f), (off_t)3 << 30), 0); /* 3 GiB, sparse */
    fclose(f);
    lm_err e = {0};
    char *t = lm_read_file(path, 0, NULL, &e); /* 0: LM_READ_MAX, 1 GiB */
    ck_assert_ptr_null(t);
    ck_assert_int_eq(e.code, LM_ELIMIT);
    ck_assert_ptr_nonnull(strstr(e.msg, "3221225472 bytes"));
    unlink(path);
    rmdir(tmpdir);
}
END_TEST

/* /dev/zero has no size and no end: the read stops at the limit. */
START_TEST(an_endless_stream_stops_at_the_limit)
{
    lm_err e = {0};
    char *t = lm_read_file("/dev/zero", (size_t)4 << 20, NULL, &e);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(e.code, LM_ELIMIT);
    ck_assert_ptr_nonnull(strstr(e.msg, "/dev/zero"));
    ck_assert_ptr_nonnull(strstr(e.msg, "stream holds more than the limit of 4194304 bytes"));
}
END_TEST

/* Standard input is "<stdin>" in messages, and a pipe is bounded like any stream. */
START_TEST(stdin_is_named_and_bounded)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    char chunk[4096];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 8; i++) /* 32 KiB: fits the pipe's buffer */
        ck_assert_int_eq(write(fds[1], chunk, sizeof chunk), (ssize_t)sizeof chunk);
    close(fds[1]);
    ck_assert_int_ne(dup2(fds[0], STDIN_FILENO), -1);
    close(fds[0]);
    lm_err e = {0};
    char *t = lm_read_file("-", 1000, NULL, &e);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(e.code, LM_ELIMIT);
    ck_assert_ptr_nonnull(strstr(e.msg, "<stdin>"));
    ck_assert_str_eq(e.file, "<stdin>");
}
END_TEST

/* A stream longer than one chunk (the reader's first is 64 KiB) is read whole through a
 * pipe fed by a child; in text mode a NUL past the first chunk is located exactly. */
static void feed_stdin(size_t n, size_t nul_at)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        for (size_t i = 0; i < n; i++) {
            char c = i == nul_at ? 0 : i % 100 == 99 ? '\n' : 'a';
            if (write(fds[1], &c, 1) != 1) _exit(1);
        }
        _exit(0);
    }
    close(fds[1]);
    ck_assert_int_ne(dup2(fds[0], STDIN_FILENO), -1);
    close(fds[0]);
}

START_TEST(a_long_stream_is_read_whole)
{
    feed_stdin(300000, (size_t)-1);
    lm_err e = {0};
    size_t len = 0;
    char *t = lm_read_text("-", 1 << 20, &len, &e);
    ck_assert_msg(t != NULL, "%s", e.msg);
    ck_assert_uint_eq(len, 300000);
    ck_assert_uint_eq(strlen(t), 300000);
    ck_assert(t[99] == '\n' && t[299999] == '\n' && t[150000] == 'a');
    free(t);
}
END_TEST

START_TEST(a_nul_past_the_first_chunk_is_located)
{
    feed_stdin(300000, 200050); /* line 2001 (lines of 100), column 51 */
    lm_err e = {0};
    ck_assert_ptr_null(lm_read_text("-", 1 << 20, NULL, &e));
    ck_assert_int_eq(e.code, LM_EPARSE);
    ck_assert_uint_eq(e.line, 2001);
    ck_assert_uint_eq(e.col, 51);
    ck_assert_ptr_nonnull(strstr(e.msg, "<stdin>:2001:51: a NUL byte"));
}
END_TEST

START_TEST(missing_and_directories_are_named)
{
    make_tmp();
    lm_err e = {0};
    ck_assert_ptr_null(lm_read_file(tmpdir, 0, NULL, &e));
    ck_assert_int_eq(e.code, LM_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "is a directory"));
    lm_err_clear(&e);
    ck_assert_ptr_null(lm_read_file("/nonexistent/x", 0, NULL, &e));
    ck_assert_int_eq(e.code, LM_EIO);
    ck_assert_ptr_nonnull(strstr(e.msg, "/nonexistent/x"));
    rmdir(tmpdir);
}
END_TEST

START_TEST(exact_reads_say_where_the_file_ends)
{
    make_tmp();
    const char *p = write_tmp("h.bin", "12345678abc", 11);
    lm_reader r;
    lm_err e = {0};
    ck_assert_int_eq(lm_reader_open(&r, p, &e), 0);
    ck_assert(r.regular);
    ck_assert_uint_eq(r.size, 11);
    char buf[16];
    ck_assert_int_eq(lm_reader_read_exact(&r, buf, 8, "its header length", &e), 0);
    ck_assert_int_eq(lm_reader_read_exact(&r, buf, 5, "its header", &e), LM_EPARSE);
    ck_assert_ptr_nonnull(strstr(e.msg, "ends after 11 bytes, inside its header"));
    ck_assert(lm_reader_at_end(&r, &e));
    lm_reader_close(&r);
    unlink(p);
    rmdir(tmpdir);
}
END_TEST

START_TEST(nul_bytes_are_located)
{
    uint32_t line = 0, col = 0;
    ck_assert(!lm_find_nul("abc\ndef", 7, &line, &col));
    ck_assert(lm_find_nul("abc\nde\0f", 8, &line, &col));
    ck_assert_uint_eq(line, 2);
    ck_assert_uint_eq(col, 3);
}
END_TEST

static Suite *read_suite(void)
{
    Suite *s = suite_create("base_read");
    TCase *tc = tcase_create("read");
    tcase_add_test(tc, reads_a_file_whole);
    tcase_add_test(tc, a_large_file_is_refused_before_allocating);
    tcase_add_test(tc, an_endless_stream_stops_at_the_limit);
    tcase_add_test(tc, stdin_is_named_and_bounded);
    tcase_add_test(tc, a_long_stream_is_read_whole);
    tcase_add_test(tc, a_nul_past_the_first_chunk_is_located);
    tcase_add_test(tc, missing_and_directories_are_named);
    tcase_add_test(tc, exact_reads_say_where_the_file_ends);
    tcase_add_test(tc, nul_bytes_are_located);
    suite_add_tcase(s, tc);
    return s;
}

const lm_suite_fn lm_check_suites[] = {read_suite, NULL};
