/* gzlevel.c: the writer's compression measured on a real trace: its JSON cut into 1 MiB
 * buffers on line ends (as core/writer.c does), each compressed as one gzip member by zlib
 * (level 6, the first writer's), libdeflate at levels 1, 3, 6, 9 (the writer's before ISA-L)
 * and ISA-L igzip at levels 0..3 (the writer's: level 1); prints bytes per event and MB/s
 * of input for each. Usage: gzlevel TRACE.pfw.gz... (bench/README.md) */
#define _GNU_SOURCE
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#define BUF (1024 * 1024)

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The whole decompressed text of a (multi-member) .pfw.gz, or a plain file. */
static char *slurp(const char *path, size_t *len)
{
	gzFile f = gzopen(path, "rb");
	size_t cap = 1 << 24, n = 0;
	char *p = malloc(cap);
	int r;

	if (f == NULL || p == NULL) {
		fprintf(stderr, "gzlevel: cannot read %s\n", path);
		exit(1);
	}
	while ((r = gzread(f, p + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap && (p = realloc(p, cap *= 2)) == NULL)
			exit(1);
	}
	gzclose(f);
	*len = n;
	return p;
}

/* zlib level 6, windowBits 31: one member. Returns its size. */
static size_t zlib_member(const char *in, size_t n, unsigned char *out, size_t cap)
{
	z_stream zs = { 0 };
	size_t r;

	deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (unsigned)n;
	zs.next_out = out;
	zs.avail_out = (unsigned)cap;
	deflate(&zs, Z_FINISH);
	r = cap - zs.avail_out;
	deflateEnd(&zs);
	return r;
}

/* ISA-L igzip at level (0..3), one stateless gzip member, as core/wthread.c writes them. */
static size_t isal_member(int level, const char *in, size_t n, unsigned char *out, size_t cap)
{
	static const uint32_t need[] = { ISAL_DEF_LVL0_DEFAULT, ISAL_DEF_LVL1_DEFAULT,
					 ISAL_DEF_LVL2_DEFAULT, ISAL_DEF_LVL3_DEFAULT };
	static unsigned char *lb;
	struct isal_zstream z;

	if (lb == NULL && (lb = malloc(ISAL_DEF_LVL3_DEFAULT)) == NULL)
		exit(1);
	isal_deflate_stateless_init(&z);
	z.level = (uint32_t)level;
	z.level_buf = lb;
	z.level_buf_size = need[level];
	z.gzip_flag = IGZIP_GZIP;
	z.end_of_stream = 1;
	z.next_in = (uint8_t *)in;
	z.avail_in = (uint32_t)n;
	z.next_out = out;
	z.avail_out = (uint32_t)cap;
	if (isal_deflate_stateless(&z) != COMP_OK) {
		fprintf(stderr, "gzlevel: igzip level %d failed\n", level);
		exit(1);
	}
	return z.total_out;
}

int main(int argc, char **argv)
{
	/* 0: zlib 6; 1..9: libdeflate; 100 + L: igzip level L */
	static const int levels[] = { 0, 1, 3, 6, 9, 100, 101, 102, 103 };

	for (int a = 1; a < argc; a++) {
		size_t len, events = 0;
		char *text = slurp(argv[a], &len);
		unsigned char *out = malloc(2 * BUF + 65536);

		for (size_t i = 0; i + 8 < len; i++)
			if (text[i] == '\n' && text[i + 1] == '{' &&
			    (memmem(text + i, 200 < len - i ? 200 : len - i, "\"ph\":\"X\"", 8) ||
			     memmem(text + i, 200 < len - i ? 200 : len - i, "\"ph\":\"C\"", 8)))
				events++;
		printf("%s: %zu bytes of JSON, %zu events, %.1f bytes/event uncompressed\n",
		       argv[a], len, events, (double)len / (events ? events : 1));
		printf("  %-14s %12s %10s %10s\n", "compressor", "bytes", "B/event", "MB/s");
		for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
			struct libdeflate_compressor *c =
				levels[l] && levels[l] < 100 ? libdeflate_alloc_compressor(levels[l])
							     : NULL;
			size_t total = 0, off = 0;
			double t0 = now();

			while (off < len) {
				size_t n = len - off < BUF ? len - off : BUF;
				if (off + n < len) /* cut on a line end, as the writer does */
					while (n > 1 && text[off + n - 1] != '\n')
						n--;
				total += c ? libdeflate_gzip_compress(c, text + off, n, out, 2 * BUF)
					   : levels[l] >= 100
					   ? isal_member(levels[l] - 100, text + off, n, out, 2 * BUF)
					   : zlib_member(text + off, n, out, 2 * BUF);
				off += n;
			}
			double dt = now() - t0;
			char name[32];
			if (levels[l] >= 100)
				snprintf(name, sizeof(name), "igzip %d", levels[l] - 100);
			else
				snprintf(name, sizeof(name), c ? "libdeflate %d" : "zlib 6", levels[l]);
			printf("  %-14s %12zu %10.2f %10.1f\n", name, total,
			       (double)total / (events ? events : 1), len / dt / 1e6);
			if (c)
				libdeflate_free_compressor(c);
		}
		free(out);
		free(text);
	}
	return 0;
}
