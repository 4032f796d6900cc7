/* recover.c: `datacrumbs recover SPOOL`: the trace of a run whose tracer was killed,
 * written from the spool it left behind (core/spool.h), and marked incomplete. */
#include "recover.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attach.h"
#include "consumer.h"
#include "outfile.h"
#include "spool.h"
#include "trust.h"
#include "writer.h"

static const char usage[] =
"usage: datacrumbs recover SPOOL [-o TRACE] [--keep] [-q]\n"
"\n"
"Writes the trace of a run whose tracer was killed (kill -9, out of memory, a node\n"
"failure) from the spool it left beside its trace (TRACE.spool/): every call the drain\n"
"threads had copied, decoded as the run would have. The trace is marked incomplete\n"
"(no final ']' and no end record: what the ring buffers still held is missing).\n"
"SPOOL must be yours (recover as its owner; no privileges are needed).\n"
"\n"
"  -o, --output TRACE  where to write it (default: SPOOL's name without .spool, the\n"
"                      run's own trace, which replaces the cut trace it left)\n"
"      --keep          keep the spool afterwards (default: removed once written)\n"
"  -q, --quiet         no summary line\n";

/* What the journal's first pass gives: the run's facts and its probe table. */
struct jfacts {
	struct dc_jstart st;
	const char *str[6];        /* host, trace, name, cmd, exec, cwd (in buf) */
	char *buf;
	struct dc_probe *probes;   /* by index; their layer and func in owned */
	struct dc_probe **owned;
	unsigned nprobes, nowned, cap;
	int bad;                   /* a malformed entry */
};

/* The HEAD entry: struct dc_jstart, then six NUL-terminated strings. */
static void take_head(struct jfacts *f, const void *p, uint32_t len)
{
	if (len < sizeof(f->st) || f->buf || !(f->buf = malloc(len - sizeof(f->st) + 1))) {
		f->bad = 1;
		return;
	}
	memcpy(&f->st, p, sizeof(f->st));
	size_t n = len - sizeof(f->st);
	memcpy(f->buf, (const char *)p + sizeof(f->st), n);
	f->buf[n] = 0;
	size_t off = 0;
	for (int i = 0; i < 6; i++) {
		f->str[i] = off < n ? f->buf + off : "";
		off += strlen(f->str[i]) + 1;
	}
}

/* Makes room for index idx and one more owned probe. 0, or -1 when out of memory. */
static int probe_room(struct jfacts *f, unsigned idx)
{
	if (idx < f->cap && f->nowned < f->cap)
		return 0;
	unsigned cap = f->cap ? f->cap : 64;
	while (cap <= idx || cap <= f->nowned)
		cap *= 2;
	struct dc_probe *np = realloc(f->probes, cap * sizeof(*np));
	if (np)
		f->probes = np;
	struct dc_probe **no = np ? realloc(f->owned, cap * sizeof(*no)) : NULL;
	if (!no)
		return -1;
	memset(np + f->cap, 0, (cap - f->cap) * sizeof(*np));
	f->owned = no;
	f->cap = cap;
	return 0;
}

/* A PROBE entry: its probe at its index (the run adds them in index order). */
static void take_probe(struct jfacts *f, const void *p, uint32_t len)
{
	unsigned idx;
	struct dc_probe *pr = dc_spool_probe(p, len, &idx);
	if (!pr || idx != f->nprobes || probe_room(f, idx)) { /* the run adds them in order */
		dc_spool_probe_free(pr);
		f->bad = 1;
		return;
	}
	f->probes[idx] = *pr;
	f->owned[f->nowned++] = pr;
	if (idx + 1 > f->nprobes)
		f->nprobes = idx + 1;
}

static void on_fact(void *arg, uint32_t tag, const void *p, uint32_t len)
{
	if (tag == DC_J_HEAD)
		take_head(arg, p, len);
	else if (tag == DC_J_PROBE)
		take_probe(arg, p, len);
}

static void facts_free(struct jfacts *f)
{
	for (unsigned i = 0; i < f->nowned; i++)
		dc_spool_probe_free(f->owned[i]);
	free(f->owned);
	free(f->probes);
	free(f->buf);
}

struct ropts {
	const char *spool, *output;
	int keep, quiet;
};

/* Parses `recover`'s arguments. 0, 1 after --help, 2 after a usage error. */
static int parse(int argc, char **argv, struct ropts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(usage, stdout);
			return 1;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			if (++i >= argc || !argv[i][0]) {
				fprintf(stderr, "datacrumbs recover: %s needs a path\n", a);
				return 2;
			}
			o->output = argv[i];
		} else if (!strcmp(a, "--keep")) {
			o->keep = 1;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			o->quiet = 1;
		} else if (a[0] == '-' || o->spool) {
			fprintf(stderr, "datacrumbs recover: unexpected '%s'\n%s", a, usage);
			return 2;
		} else {
			o->spool = a;
		}
	}
	if (!o->spool) {
		fprintf(stderr, "datacrumbs recover: no SPOOL given\n%s", usage);
		return 2;
	}
	return 0;
}

/* Writes the trace from spool sp by the facts f into `path`. Returns the events written,
 * or -1 with err. */
static long write_trace(struct dc_spool *sp, struct jfacts *f, const char *path, char *err,
			size_t errlen)
{
	const struct dc_jstart *st = &f->st;
	struct dc_outspec os = { path, st->compress, 1, 0 };
	char out[PATH_MAX];
	if (dc_out_path(&os, f->str[2], f->str[0], st->pid, out, sizeof(out), err, errlen))
		return -1;
	int fd = dc_out_create(&os, out, dc_invoker()->uid, dc_invoker()->gid, err, errlen);
	struct dc_writer *w = fd < 0 ? NULL : dc_writer_fdopen(fd, out, st->compress, f->str[0],
							      st->pid, st->pid, err, errlen);
	struct dc_bpf *b = w ? dc_bpf_offline(f->probes, f->nprobes) : NULL;
	struct dc_consumer *c = b ? dc_consumer_new(b, w, NULL, st->mono_to_real_ns, 0, err,
						    errlen) : NULL;
	long n = -1;
	int serr;
	if (w && !b)
		snprintf(err, errlen, "out of memory");
	if (c && !dc_consumer_restore(c, sp, err, errlen)) {
		dc_writer_start(w, dc_consumer_own_id(c), st->pid, st->start_us, f->str[3],
				f->str[4], f->str[5], st->ppid, st->version);
		n = dc_consumer_replay(c, &serr, err, errlen);
	}
	if (w && dc_writer_close(w, 0) < 0 && n >= 0) {
		snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		n = -1;
	}
	if (n >= 0)
		n = (long)dc_consumer_written(c);
	dc_consumer_free(c);
	dc_bpf_offline_free(b);
	if (n >= 0)
		snprintf(err, errlen, "%s", out); /* the caller says where it went */
	return n;
}

/* The trace a spool belongs to: its directory's name without ".spool" (the journal's own
 * name for it is not trusted: a file, anyone who could write it could point it anywhere).
 * 1 when spool ends in .pfw.gz.spool (.pfw.spool uncompressed), else 0. */
static int beside(const char *spool, char *out, size_t len, int compress)
{
	size_t n = strlen(spool);
	while (n > 1 && spool[n - 1] == '/')
		n--;
	const char *want = compress ? ".pfw.gz.spool" : ".pfw.spool";
	size_t w = strlen(want);
	if (n <= w || n - 6 >= len || strncmp(spool + n - w, want, w))
		return 0;
	snprintf(out, len, "%.*s", (int)(n - 6), spool);
	return 1;
}

int dc_recover_main(int argc, char **argv)
{
	struct ropts o = { 0 };
	int r = parse(argc, argv, &o);
	if (r)
		return r == 1 ? 0 : 2;
	char err[PATH_MAX + 256];
	struct dc_spool *sp = dc_spool_open(o.spool, dc_invoker()->uid, err, sizeof(err));
	if (!sp) {
		fprintf(stderr, "datacrumbs recover: %s\n", err);
		return 1;
	}
	struct jfacts f = { 0 };
	char out[PATH_MAX];
	dc_spool_journal(sp, on_fact, &f, err, sizeof(err)); /* a cut journal: what is there */
	long n = -1;
	if (!f.buf || f.bad)
		snprintf(err, sizeof(err), "%s: its journal is damaged (no start, or a bad probe "
			 "entry)", o.spool);
	else if (!o.output && !beside(o.spool, out, sizeof(out), f.st.compress))
		snprintf(err, sizeof(err), "%s: not a name ending in .spool (give -o TRACE)",
			 o.spool);
	else
		n = write_trace(sp, &f, o.output ? o.output : out, err, sizeof(err));
	facts_free(&f);
	if (n < 0) {
		dc_spool_free(sp);
		fprintf(stderr, "datacrumbs recover: %s\n", err);
		return 1;
	}
	if (!o.quiet)
		fprintf(stderr, "datacrumbs: %ld events written, trace %s (INCOMPLETE: recovered "
			"from %s; the calls not yet spooled when the tracer died are missing)\n",
			n, err, o.spool);
	if (o.keep)
		dc_spool_free(sp);
	else if (dc_spool_remove(sp))
		fprintf(stderr, "datacrumbs recover: warning: cannot remove %s: %s\n", o.spool,
			strerror(errno));
	return 0;
}
