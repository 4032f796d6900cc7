/* unit_writer.c: tests of core/writer.c: hashes, JSON escaping, and traces written gzip,
 * plain and cut (partial), read back and compared byte for byte. usage: unit_writer OUTDIR */

#include "writer.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

static int passed, failed;

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
	} else {
		failed++;
		fprintf(stderr, "FAIL: %s\n", what);
	}
}

/* ---------------------------------------------------------------------------------------
 * Hash and escaping
 * ------------------------------------------------------------------------------------- */

static void test_hash(void)
{
	char h[17];

	dc_hash("corona183", 9, h);
	check(strcmp(h, "2dbbcec2c820dc4c") == 0, "hash corona183");
	dc_hash("dlio_benchmark", 14, h);
	check(strcmp(h, "de04e44a7b1b2401") == 0, "hash dlio_benchmark");
	dc_hash("", 0, h);
	check(strcmp(h, "d48c8fb2e909ec42") == 0, "hash of the empty string");
}

/* Escapes `len` bytes of s and compares with `want`. */
static void esc_case(const char *s, size_t len, const char *want, const char *what)
{
	char buf[256];
	long n = dc_json_escape(buf, sizeof(buf), s, len);
	int ok = n >= 0 && (size_t)n == strlen(want) && memcmp(buf, want, (size_t)n) == 0;

	if (!ok && n >= 0)
		fprintf(stderr, "  escape(%s) gave [%.*s], want [%s]\n", what, (int)n, buf, want);
	check(ok, what);
}

static void test_escape(void)
{
	char buf[8];

	esc_case("plain/path.txt", 14, "plain/path.txt", "escape: nothing to do");
	esc_case("a\"b", 3, "a\\\"b", "escape: quote");
	esc_case("a\\b", 3, "a\\\\b", "escape: backslash");
	esc_case("line\n", 5, "line\\n", "escape: newline");
	esc_case("\t\r\b\f", 4, "\\t\\r\\b\\f", "escape: short forms");
	esc_case("\x01", 1, "\\u0001", "escape: control 0x01");
	esc_case("\x1f", 1, "\\u001f", "escape: control 0x1f");
	esc_case("a\0b", 3, "a\\u0000b", "escape: NUL inside len");
	esc_case("\x7f", 1, "\x7f", "escape: 0x7f kept raw");
	esc_case("h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf", 20,
		 "h\xc3\xa9llo \xe2\x82\xac \xf0\x9f\x98\x80 \xf4\x8f\xbf\xbf",
		 "escape: valid UTF-8 kept");
	esc_case("\xff", 1, "\\ufffd", "escape: 0xff");
	esc_case("a\xe2\x82", 3, "a\\ufffd\\ufffd", "escape: truncated e2 82");
	esc_case("\xe2\x82z", 3, "\\ufffd\\ufffdz", "escape: e2 82 cut by ASCII");
	esc_case("\xc0\xaf", 2, "\\ufffd\\ufffd", "escape: overlong c0 af");
	esc_case("\xe0\x80\xaf", 3, "\\ufffd\\ufffd\\ufffd", "escape: overlong e0 80 af");
	esc_case("\xed\xa0\x80", 3, "\\ufffd\\ufffd\\ufffd", "escape: surrogate ed a0 80");
	esc_case("\xf4\x90\x80\x80", 4, "\\ufffd\\ufffd\\ufffd\\ufffd",
		 "escape: above U+10FFFF");
	esc_case("\x80", 1, "\\ufffd", "escape: lone continuation byte");

	check(dc_json_escape(buf, 2, "abc", 3) == -1, "escape: cap too small (plain)");
	check(dc_json_escape(buf, 5, "\x01", 1) == -1, "escape: cap too small (\\u00XX)");
	check(dc_json_escape(buf, 5, "\xff", 1) == -1, "escape: cap too small (\\ufffd)");
	check(dc_json_escape(buf, 2, "\xc3\xa9", 2) == 2, "escape: exact fit (UTF-8)");
	check(dc_json_escape(buf, 2, "\n", 1) == 2, "escape: exact fit (\\n)");
	check(dc_json_escape(buf, 6, "\x01", 1) == 6, "escape: exact fit (\\u0001)");
	check(dc_json_escape(buf, 6, "\xff", 1) == 6, "escape: exact fit (\\ufffd)");
	check(dc_json_escape(buf, 3, "ab\"", 3) == -1, "escape: cap too small (quote)");
	check(dc_json_escape(buf, 1, "\xc3\xa9", 2) == -1, "escape: cap too small (UTF-8)");
	check(dc_json_escape(buf, 0, "", 0) == 0, "escape: empty string");
}

/* ---------------------------------------------------------------------------------------
 * Traces
 * ------------------------------------------------------------------------------------- */

#define TS 1760614064024181ULL

/* What write_sample() produces. */
static const char expected[] =
	"[\n"
	"{\"name\":\"HH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":100,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"corona183\",\"value\":\"2dbbcec2c820dc4c\"}}\n"
	"{\"name\":\"process_name\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":100,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"unit_writer\",\"value\":\"process_name\"}}\n"
	"{\"name\":\"thread_name\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":101,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"worker\",\"value\":\"thread_name\"}}\n"
	"{\"name\":\"PR\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":100,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"version\",\"value\":\"1.2\"}}\n"
	"{\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":101,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"/data/a.bin\",\"value\":\"c721397c362c32b4\"}}\n"
	"{\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":101,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"/data/we\\\"ird\\nname\\ufffd.dat\",\"value\":\"2e44cf2772fbf07c\"}}\n"
	"{\"name\":\"SH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":100,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"dlio_benchmark\",\"value\":\"de04e44a7b1b2401\"}}\n"
	"{\"name\":\"SH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":100,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"/data/a.bin\",\"value\":\"c721397c362c32b4\"}}\n"
	"{\"id\":1,\"name\":\"open64\",\"cat\":\"POSIX\",\"pid\":100,\"tid\":101,\"ts\":1760614064024181,\"dur\":12,\"ph\":\"X\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"level\":1,\"p_idx\":-1,\"fhash\":\"c721397c362c32b4\",\"ret\":3}}\n"
	"{\"id\":2,\"name\":\"pwrite\",\"cat\":\"POSIX\",\"pid\":100,\"tid\":101,\"ts\":1760614064024201,\"dur\":5,\"ph\":\"X\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"fhash\":\"2e44cf2772fbf07c\",\"count\":4096,\"offset\":0,\"ret\":4096,\"umax\":18446744073709551615,\"imin\":-9223372036854775808}}\n"
	"{\"name\":\"FH\",\"cat\":\"dftracer\",\"pid\":100,\"tid\":101,\"ph\":\"M\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"name\":\"/data/late.txt\",\"value\":\"4f78235771c61de8\"}}\n"
	"{\"id\":3,\"name\":\"close\",\"cat\":\"POSIX\",\"pid\":100,\"tid\":101,\"ts\":1760614064024221,\"dur\":1,\"ph\":\"X\",\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"exec_hash\":\"de04e44a7b1b2401\",\"fhash\":\"4f78235771c61de8\",\"nan\":0,\"inf\":0,\"frac\":0.25,\"third\":0.33333333333333331,\"big\":1e+300,\"note\":\"tab\\there\"}}\n"
	"{\"name\":\"pwrite\",\"cat\":\"POSIX\",\"ts\":1760614064024181,\"ph\":\"C\",\"pid\":100,\"tid\":101,\"args\":{\"hhash\":\"2dbbcec2c820dc4c\",\"count\":2,\"dur_sum\":17.5,\"size_max\":4096}}\n"
	"]";

/* Writes the sample trace (with a flush after the second event); closes it. */
static void write_sample(struct dc_writer *w, int complete, const char *what)
{
	const char *fa, *fw, *fl, *sh, *again;
	char msg[200];

	dc_writer_meta(w, "process_name", 100, 100, "unit_writer", NULL);
	dc_writer_meta(w, "thread_name", 100, 101, "worker", "ignored");
	dc_writer_meta(w, "PR", 100, 100, "version", "1.2");
	fa = dc_writer_file(w, 100, 101, "/data/a.bin");
	fw = dc_writer_file(w, 100, 101, "/data/we\"ird\nname\xff.dat");
	sh = dc_writer_string(w, 100, 100, "dlio_benchmark");
	again = dc_writer_file(w, 100, 101, "/data/a.bin");
	snprintf(msg, sizeof(msg), "%s: FH dedup returns the same pointer", what);
	check(again == fa, msg);
	/* by address: the same hash, no second FH record (the output below is exact) */
	static char run_path[] = "/data/a.bin";
	snprintf(msg, sizeof(msg), "%s: dc_writer_file_run finds a.bin's FH, twice", what);
	check(dc_writer_file_run(w, 100, 101, run_path) == fa &&
	      dc_writer_file_run(w, 100, 101, run_path) == fa, msg);
	dc_writer_string(w, 100, 100, "/data/a.bin"); /* own table: an SH record too */

	dc_writer_begin(w, 1, "open64", "POSIX", 100, 101, TS, 12);
	dc_writer_arg_int(w, "level", 1);
	dc_writer_arg_int(w, "p_idx", -1);
	dc_writer_arg_str(w, "fhash", fa);
	dc_writer_arg_int(w, "ret", 3);
	dc_writer_end(w);

	dc_writer_begin(w, 2, "pwrite", "POSIX", 100, 101, TS + 20, 5);
	dc_writer_arg_str(w, "fhash", fw);
	dc_writer_arg_uint(w, "count", 4096);
	dc_writer_arg_int(w, "offset", 0);
	dc_writer_arg_int(w, "ret", 4096);
	dc_writer_arg_uint(w, "umax", UINT64_MAX);
	dc_writer_arg_int(w, "imin", INT64_MIN);
	dc_writer_end(w);

	snprintf(msg, sizeof(msg), "%s: flush in the middle", what);
	check(dc_writer_flush(w) == 0, msg);
	check(dc_writer_flush(w) == 0, msg); /* nothing buffered: no empty member */

	/* A file first seen while the event is being built: its record lands before it. */
	dc_writer_begin(w, 3, "close", "POSIX", 100, 101, TS + 40, 1);
	dc_writer_arg_str(w, "exec_hash", sh);
	fl = dc_writer_file(w, 100, 101, "/data/late.txt");
	dc_writer_arg_str(w, "fhash", fl);
	dc_writer_arg_double(w, "nan", NAN);
	dc_writer_arg_double(w, "inf", -INFINITY);
	dc_writer_arg_double(w, "frac", 0.25);
	dc_writer_arg_double(w, "third", 1.0 / 3.0);
	dc_writer_arg_double(w, "big", 1e300);
	dc_writer_arg_str(w, "note", "tab\there");
	dc_writer_end(w);

	dc_writer_begin_counter(w, "pwrite", "POSIX", 100, 101, TS);
	dc_writer_arg_uint(w, "count", 2);
	dc_writer_arg_double(w, "dur_sum", 17.5);
	dc_writer_arg_uint(w, "size_max", 4096);
	dc_writer_end(w);

	snprintf(msg, sizeof(msg), "%s: count is 4", what);
	check(dc_writer_count(w) == 4, msg);
	snprintf(msg, sizeof(msg), "%s: close returns 0", what);
	check(dc_writer_close(w, complete) == 0, msg);
}

/* Reads a whole file; *len gets its size. NULL on error. */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t cap = 0, n = 0;

	if (f == NULL)
		return NULL;
	for (;;) {
		size_t r;

		if (n == cap) {
			char *np;

			cap = cap ? cap * 2 : 65536;
			np = realloc(p, cap);
			if (np == NULL) {
				free(p);
				fclose(f);
				return NULL;
			}
			p = np;
		}
		r = fread(p + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	fclose(f);
	*len = n;
	return p;
}

/* Inflates the gzip members of raw one by one. Returns the text (malloc'd, *tlen its
 * length), *members the member count, *unaligned the members other than the last that do
 * not end in '\n'. NULL when a member is cut or corrupt. */
static char *gunzip_members(const char *raw, size_t rlen, size_t *tlen, int *members,
			    int *unaligned)
{
	z_stream zs;
	char *out = NULL;
	size_t cap = 0, n = 0;
	int last_nl = 1;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 31) != Z_OK)
		return NULL;
	*members = 0;
	*unaligned = 0;
	zs.next_in = (Bytef *)raw;
	zs.avail_in = (uInt)rlen;
	while (zs.avail_in > 0) {
		size_t member_start = n;
		int rc;

		do {
			if (cap - n < 65536) {
				char *np;

				cap = cap ? cap * 2 : 1 << 20;
				np = realloc(out, cap);
				if (np == NULL)
					goto bad;
				out = np;
			}
			zs.next_out = (Bytef *)out + n;
			zs.avail_out = (uInt)(cap - n);
			rc = inflate(&zs, Z_NO_FLUSH);
			n = cap - zs.avail_out;
			if (rc != Z_OK && rc != Z_STREAM_END)
				goto bad;
			if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0)
				goto bad; /* member cut */
		} while (rc != Z_STREAM_END);
		if (*members > 0 && !last_nl)
			(*unaligned)++;
		last_nl = n > member_start && out[n - 1] == '\n';
		(*members)++;
		inflateReset(&zs);
	}
	inflateEnd(&zs);
	*tlen = n;
	return out;
bad:
	inflateEnd(&zs);
	free(out);
	return NULL;
}

/* Reads path with gzopen/gzread (which reads concatenated members) and compares. */
static int gzread_equals(const char *path, const char *want, size_t wlen)
{
	gzFile g = gzopen(path, "rb");
	char *buf;
	size_t n = 0;
	int r, ok;

	if (g == NULL)
		return 0;
	buf = malloc(wlen + 4096);
	if (buf == NULL) {
		gzclose(g);
		return 0;
	}
	while ((r = gzread(g, buf + n, (unsigned)(wlen + 4096 - n))) > 0)
		n += (size_t)r;
	ok = r == 0 && n == wlen && memcmp(buf, want, wlen) == 0;
	gzclose(g);
	free(buf);
	return ok;
}

/* Checks a gzip trace: its text is want, with at least min_members members, each but the
 * last ending on a line boundary. */
static void check_gz(const char *path, const char *want, size_t wlen, int min_members,
		     const char *what)
{
	char msg[300];
	size_t rlen = 0, tlen = 0;
	char *raw = slurp(path, &rlen);
	char *text = NULL;
	int members = 0, unaligned = 0;

	snprintf(msg, sizeof(msg), "%s: readable", what);
	check(raw != NULL, msg);
	if (raw == NULL)
		return;
	text = gunzip_members(raw, rlen, &tlen, &members, &unaligned);
	snprintf(msg, sizeof(msg), "%s: every gzip member complete", what);
	check(text != NULL, msg);
	if (text != NULL) {
		snprintf(msg, sizeof(msg), "%s: >= %d gzip members (has %d)", what, min_members,
			 members);
		check(members >= min_members, msg);
		snprintf(msg, sizeof(msg), "%s: members end on line boundaries", what);
		check(unaligned == 0, msg);
		snprintf(msg, sizeof(msg), "%s: text is exactly the expected one", what);
		check(tlen == wlen && memcmp(text, want, wlen) == 0, msg);
	}
	snprintf(msg, sizeof(msg), "%s: gzread reads the same text", what);
	check(gzread_equals(path, want, wlen), msg);
	free(raw);
	free(text);
}

static struct dc_writer *open_or_fail(const char *path, int compress)
{
	char err[512] = "";
	struct dc_writer *w = dc_writer_open(path, compress, "corona183", 100, 100, err,
					     sizeof(err));

	if (w == NULL)
		fprintf(stderr, "unit_writer: %s\n", err);
	check(w != NULL, path);
	return w;
}

static void test_sample_traces(const char *dir)
{
	char path[4096];
	struct dc_writer *w;
	size_t len = 0;
	char *raw;

	/* gzip, complete, flushed in the middle: >= 2 members. */
	snprintf(path, sizeof(path), "%s/writer.pfw.gz", dir);
	w = open_or_fail(path, 1);
	if (w != NULL) {
		write_sample(w, 1, "gz");
		check_gz(path, expected, sizeof(expected) - 1, 2, "gz");
		printf("unit_writer: wrote %s\n", path);
	}

	/* plain, complete: byte for byte. */
	snprintf(path, sizeof(path), "%s/writer.pfw", dir);
	w = open_or_fail(path, 0);
	if (w != NULL) {
		write_sample(w, 1, "plain");
		raw = slurp(path, &len);
		check(raw != NULL && len == sizeof(expected) - 1 &&
			      memcmp(raw, expected, len) == 0,
		      "plain: file is exactly the expected text");
		free(raw);
		printf("unit_writer: wrote %s\n", path);
	}

	/* gzip, cut (close complete=0): everything but the final "]". */
	snprintf(path, sizeof(path), "%s/writer-partial.pfw.gz", dir);
	w = open_or_fail(path, 1);
	if (w != NULL) {
		write_sample(w, 0, "partial");
		check_gz(path, expected, sizeof(expected) - 2, 2, "partial");
		printf("unit_writer: wrote %s (partial)\n", path);
	}
}

/* Many events and a string longer than the text buffer: members are cut automatically. */
static void test_big_trace(const char *dir)
{
	enum { EVENTS = 30000, LONG = 3 << 20 };
	char path[4096];
	struct dc_writer *w;
	char *longstr, *raw, *text;
	size_t rlen = 0, tlen = 0, i, lines = 0;
	int members = 0, unaligned = 0;
	const char *fh;

	snprintf(path, sizeof(path), "%s/writer-big.pfw.gz", dir);
	w = open_or_fail(path, 1);
	if (w == NULL)
		return;
	longstr = malloc(LONG + 1);
	if (longstr == NULL) {
		check(0, "big: malloc");
		dc_writer_close(w, 1);
		return;
	}
	memset(longstr, 'x', LONG);
	longstr[LONG] = '\0';

	fh = dc_writer_file(w, 100, 100, "/data/big.bin");
	for (i = 0; i < EVENTS; i++) {
		dc_writer_begin(w, i + 1, "pread64", "POSIX", 100, 100 + (int)(i % 4),
				TS + i * 3, 2);
		dc_writer_arg_int(w, "level", 1);
		dc_writer_arg_int(w, "p_idx", -1);
		dc_writer_arg_str(w, "fhash", fh);
		dc_writer_arg_int(w, "fd", 3);
		dc_writer_arg_uint(w, "count", 1 << 20);
		dc_writer_arg_int(w, "offset", (int64_t)i << 20);
		dc_writer_arg_int(w, "ret", 1 << 20);
		dc_writer_end(w);
		if (i == EVENTS / 2)
			dc_writer_string(w, 100, 100, longstr);
	}
	check(dc_writer_count(w) == EVENTS, "big: count");
	check(dc_writer_close(w, 1) == 0, "big: close returns 0");

	raw = slurp(path, &rlen);
	text = raw ? gunzip_members(raw, rlen, &tlen, &members, &unaligned) : NULL;
	check(text != NULL, "big: every gzip member complete");
	if (text != NULL) {
		for (i = 0; i < tlen; i++)
			if (text[i] == '\n')
				lines++;
		/* "[", HH, FH, SH, the events; "]" has no newline. */
		check(lines == EVENTS + 4, "big: line count");
		check(members >= 5, "big: buffer-full flushes made several members");
		check(unaligned == 0, "big: members end on line boundaries");
		check(tlen > 0 && text[tlen - 1] == ']', "big: ends with ]");
		/* the writer thread keeps the order: ids 1..EVENTS, one after the other */
		size_t want = 1, bad = 0;
		const char *q = text;
		while ((q = strstr(q, "{\"id\":")) != NULL) {
			q += 6;
			if (strtoull(q, NULL, 10) != want++)
				bad++;
		}
		check(bad == 0 && want == EVENTS + 1, "big: events in the order written");
	}
	free(raw);
	free(text);
	free(longstr);
	printf("unit_writer: wrote %s\n", path);
}

/* One event of test_quoted: ts across 12 seconds, every digit count (10^k - 1 and 10^k)
 * in its args, a name longer than the writer's one-pass quoting (64 bytes) and one that
 * needs escaping;
 * written with the plain calls (q NULL) or the pre-quoted ones, the same bytes wanted.
 * Every 7th event, an FH record comes while the event is being built. Appends the text
 * the event must give to want (snprintf, independent of the writer). */
static void quoted_event(struct dc_writer *w, size_t i, const struct dc_qname *qn,
			 const struct dc_qkey *qk, char **want, size_t *wlen)
{
	static const char *const names[] = {
		"pwrite64", "name-with-\"quote\"",
		"a_name_that_is_longer_than_sixty_four_bytes_so_the_writer_quotes_it_the_slow_way"
	};
	const char *name = names[i % 3];
	uint64_t p10 = 1, v[20];
	char esc[256], line[8192], path[64];
	const char *fh;
	size_t n = 0, k;
	int pid = 100 + (int)(i % 2), tid = pid + (int)(i % 3);

	for (k = 0; k < 20; k++, p10 *= 10)
		v[k] = (i + k) % 2 ? p10 : p10 - 1; /* 1e19 - 1 fits, 1e19 too */
	snprintf(path, sizeof(path), "/data/q%zu", i / 7);
	fh = i % 7 == 3 ? NULL : dc_writer_file(w, pid, tid, path);
	if (qn != NULL)
		dc_writer_begin_q(w, i + 1, &qn[i % 3], pid, tid, TS + i * 997, v[i % 7]);
	else
		dc_writer_begin(w, i + 1, name, "POSIX", pid, tid, TS + i * 997, v[i % 7]);
	if (fh == NULL) /* its FH record lands before the event */
		fh = dc_writer_file(w, pid, tid, path);
	long e = dc_json_escape(esc, sizeof(esc), name, strlen(name));
	n += (size_t)snprintf(line + n, sizeof(line) - n,
			      "{\"id\":%zu,\"name\":\"%.*s\",\"cat\":\"POSIX\",\"pid\":%d,\"tid\":%d,"
			      "\"ts\":%llu,\"dur\":%llu,\"ph\":\"X\",\"args\":{\"hhash\":"
			      "\"2dbbcec2c820dc4c\"", i + 1, (int)e, esc, pid, tid,
			      (unsigned long long)(TS + i * 997), (unsigned long long)v[i % 7]);
	if (qk != NULL) {
		dc_writer_arg_hash_q(w, &qk[0], fh);
		dc_writer_arg_int_q(w, &qk[1], (int64_t)v[i % 19]);
		dc_writer_arg_int_q(w, &qk[2], -(int64_t)v[(i + 3) % 19]);
		dc_writer_arg_str_q(w, &qk[3], name);
		dc_writer_arg_int_q(w, &qk[4], INT64_MIN);
	} else {
		dc_writer_arg_str(w, "fhash", fh);
		dc_writer_arg_int(w, "count", (int64_t)v[i % 19]);
		dc_writer_arg_int(w, "off\"set", -(int64_t)v[(i + 3) % 19]);
		dc_writer_arg_str(w, "what", name);
		dc_writer_arg_int(w, "imin", INT64_MIN);
	}
	dc_writer_arg_uint(w, "umax", v[19 - i % 2]); /* 10^19 (20 digits), 10^18 */
	static char longarg[6001];
	memset(longarg, 'y', 6000); /* more than the room an event is begun with */
	if (i % 1000 == 999)
		dc_writer_arg_str(w, "long", longarg);
	dc_writer_end(w);
	n += (size_t)snprintf(line + n, sizeof(line) - n,
			      ",\"fhash\":\"%s\",\"count\":%llu,\"off\\\"set\":%lld,\"what\":\"%.*s\","
			      "\"imin\":-9223372036854775808,\"umax\":%llu}}\n", fh,
			      (unsigned long long)v[i % 19], -(long long)v[(i + 3) % 19],
			      (int)e, esc, (unsigned long long)v[19 - i % 2]);
	if (i % 1000 == 999) {
		n -= 3; /* before the closing "}}\n" */
		n += (size_t)snprintf(line + n, sizeof(line) - n, ",\"long\":\"%s\"}}\n", longarg);
	}
	if (want != NULL) {
		memcpy(*want + *wlen, line, n);
		*wlen += n;
	}
}

/* The fast paths (one-pass quoting, events built in the text buffer, pre-quoted names and
 * keys, the pid/tid and FH lookups reused) write the bytes the plain path writes, across
 * several buffer hand-overs, with metadata records arriving mid-event. */
static void test_quoted(const char *dir)
{
	enum { EVENTS = 12000 };
	static const char *const names[] = {
		"pwrite64", "name-with-\"quote\"",
		"a_name_that_is_longer_than_sixty_four_bytes_so_the_writer_quotes_it_the_slow_way"
	};
	static const char *const keys[] = { "fhash", "count", "off\"set", "what", "imin" };
	struct dc_qname qn[3];
	struct dc_qkey qk[5], big;
	char path[2][4096], *text[2], *want, *events;
	size_t tlen[2], wlen = 0, elen = 0;
	int members = 0, unaligned = 0;

	check(dc_qkey_make(&big, "a_key_far_too_long_to_be_quoted_in_forty_eight_bytes") < 0,
	      "quoted: a key longer than DC_QKEY_MAX is refused");
	for (int k = 0; k < 5; k++)
		check(dc_qkey_make(&qk[k], keys[k]) == 0, "quoted: dc_qkey_make");
	check(qk[2].len == 12 && memcmp(qk[2].s, ",\"off\\\"set\":", 12) == 0,
	      "quoted: a key is escaped once");
	for (int k = 0; k < 3; k++)
		check(dc_qname_make(&qn[k], names[k], "POSIX") == 0, "quoted: dc_qname_make");
	want = malloc(EVENTS * 2048);
	events = malloc(EVENTS * 2048);
	if (want == NULL || events == NULL) {
		check(0, "quoted: malloc");
		return;
	}
	for (int q = 0; q < 2; q++) {
		snprintf(path[q], sizeof(path[q]), "%s/writer-%s.pfw.gz", dir, q ? "quoted" : "plain");
		struct dc_writer *w = open_or_fail(path[q], 1);
		if (w == NULL)
			return;
		for (size_t i = 0; i < EVENTS; i++)
			quoted_event(w, i, q ? qn : NULL, q ? qk : NULL, q ? NULL : &events,
				     q ? NULL : &elen);
		check(dc_writer_close(w, 1) == 0, "quoted: close returns 0");
		size_t rlen = 0;
		char *raw = slurp(path[q], &rlen);
		text[q] = raw ? gunzip_members(raw, rlen, &tlen[q], &members, &unaligned) : NULL;
		free(raw);
		check(text[q] != NULL && members >= 3 && unaligned == 0,
		      "quoted: several complete members, each ending on a line");
	}
	if (text[0] != NULL && text[1] != NULL) {
		check(tlen[0] == tlen[1] && memcmp(text[0], text[1], tlen[0]) == 0,
		      "quoted: the pre-quoted calls write the plain calls' bytes");
		/* the events, without the metadata lines, are exactly the expected text */
		const char *p = text[0];
		while ((p = strstr(p, "\n{\"id\":")) != NULL) {
			const char *end = strchr(p + 1, '\n');
			memcpy(want + wlen, p + 1, (size_t)(end - p));
			wlen += (size_t)(end - p);
			p = end;
		}
		check(wlen == elen && memcmp(want, events, elen) == 0,
		      "quoted: every number and string as snprintf writes it");
	}
	for (int k = 0; k < 3; k++)
		free(qn[k].s);
	free(text[0]);
	free(text[1]);
	free(want);
	free(events);
}

static void test_errors(const char *dir)
{
	char path[4096], err[512] = "", want[4200];
	struct dc_writer *w;

	snprintf(path, sizeof(path), "%s/no-such-dir/x.pfw.gz", dir);
	w = dc_writer_open(path, 1, "h", 1, 1, err, sizeof(err));
	check(w == NULL, "open in a missing directory fails");
	snprintf(want, sizeof(want), "cannot create %s: No such file or directory", path);
	check(strcmp(err, want) == 0, "open error message names path and reason");
	if (w != NULL)
		dc_writer_close(w, 0);

	/* /dev/full: every write fails with ENOSPC; flush and close report it. */
	if (access("/dev/full", W_OK) != 0)
		return;
	w = dc_writer_open("/dev/full", 1, "h", 1, 1, err, sizeof(err));
	check(w != NULL, "open /dev/full");
	if (w == NULL)
		return;
	dc_writer_begin(w, 1, "read", "POSIX", 1, 1, TS, 1);
	dc_writer_end(w);
	errno = 0;
	check(dc_writer_flush(w) == -1 && errno == ENOSPC, "flush to /dev/full fails ENOSPC");
	dc_writer_begin(w, 2, "read", "POSIX", 1, 1, TS, 1);
	dc_writer_end(w);
	check(dc_writer_close(w, 1) == -1, "close remembers the earlier write error");
}

/* A write that fails after some members (the file size limit, RLIMIT_FSIZE: EFBIG) cuts the
 * trace: the file ends on its last complete member, dc_writer_on_disk counts exactly the
 * events in it, and flush and close report the error. setrlimit(2), write(2) EFBIG. */
static void test_cut(const char *dir)
{
	enum { EVENTS = 200000, LIMIT = 256 << 10 };
	char path[4096];
	struct rlimit old, lim;
	struct dc_writer *w;
	size_t rlen = 0, tlen = 0, lines = 0, i;
	int members = 0, unaligned = 0;
	uint64_t on;
	char *raw, *text;

	snprintf(path, sizeof(path), "%s/writer-cut-partial.pfw.gz", dir);
	w = open_or_fail(path, 1);
	if (w == NULL)
		return;
	signal(SIGXFSZ, SIG_IGN); /* write(2) then fails with EFBIG instead */
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = LIMIT;
	check(setrlimit(RLIMIT_FSIZE, &lim) == 0, "cut: setrlimit");
	for (i = 0; i < EVENTS; i++) {
		dc_writer_begin(w, i + 1, "write", "POSIX", 100, 100, TS + i, 1);
		dc_writer_arg_uint(w, "count", i * 7919 % 100003); /* less compressible */
		dc_writer_arg_int(w, "offset", (int64_t)(i * 2654435761u % 1000003));
		dc_writer_end(w);
	}
	errno = 0;
	check(dc_writer_flush(w) == -1 && errno == EFBIG, "cut: flush reports EFBIG");
	on = dc_writer_on_disk(w);
	check(on > 0 && on < EVENTS, "cut: some events on disk, not all");
	check(dc_writer_close(w, 1) == -1 && errno == EFBIG, "cut: close reports EFBIG");
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, SIG_DFL);

	raw = slurp(path, &rlen);
	text = raw ? gunzip_members(raw, rlen, &tlen, &members, &unaligned) : NULL;
	check(rlen > 0 && rlen <= LIMIT, "cut: the file is within the limit");
	check(text != NULL && members > 0 && unaligned == 0, "cut: only complete members");
	for (i = 0; text && i < tlen; i++)
		if (text[i] == '\n')
			lines++;
	/* "[", HH, then exactly the events on disk; no "]" */
	check(lines == on + 2, "cut: the file holds exactly the events on disk");
	check(text && tlen > 0 && text[tlen - 1] == '\n', "cut: no closing ]");
	free(raw);
	free(text);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";

	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "unit_writer: cannot create %s: %s\n", dir, strerror(errno));
		return 2;
	}
	test_hash();
	test_escape();
	test_sample_traces(dir);
	test_big_trace(dir);
	test_quoted(dir);
	test_errors(dir);
	test_cut(dir);
	printf("unit_writer: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
