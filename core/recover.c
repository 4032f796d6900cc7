/* recover.c: `datacrumbs recover SPOOL`: the trace of a run whose tracer was killed,
 * written from the spool it left behind (core/spool.h), and marked incomplete. */
#include "recover.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <uv.h>

#include "attach.h"
#include "consumer.h"
#include "lua_api.h"
#include "outfile.h"
#include "spool.h"
#include "trust.h"
#include "writer.h"

static const char usage[] =
"usage: datacrumbs recover SPOOL [-o TRACE] [--force] [--keep] [--no-script] [-q]\n"
"\n"
"Writes the trace of a run whose tracer was killed (kill -9, out of memory, a node\n"
"failure) from the spool it left beside its trace (TRACE.spool/): every call the drain\n"
"threads had copied, decoded as the run would have, through the run's script again\n"
"(its drops, tags and summaries). The trace is marked incomplete (no final ']' and no\n"
"end record: what the ring buffers still held is missing). SPOOL must be yours: the\n"
"user the tracer ran as recovers it (root for a run under sudo; else no privileges).\n"
"\n"
"  -o, --output PATH   a file (.pfw.gz, or .pfw: uncompressed) or a directory\n"
"                      (default: SPOOL's name without .spool, the run's own trace,\n"
"                      which replaces the cut trace it left)\n"
"      --force         replace an existing -o file of yours\n"
"      --keep          keep the spool afterwards (default: removed once written)\n"
"      --no-script     write every call, without running the run's script\n"
"  -q, --quiet         no summary line\n";

/* What the journal's first pass gives: the run's facts, its script and its probe table. */
struct jfacts {
	const char *script;        /* the DC_J_SCRIPT payload (in sbuf), NULL: none */
	char *sbuf;
	uint32_t slen;
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
	struct jfacts *f = arg;
	if (tag == DC_J_SCRIPT && !f->sbuf && len > 3 * sizeof(uint32_t) &&
	    ((const char *)p)[len - 1] == 0 && (f->sbuf = malloc(len))) {
		memcpy(f->sbuf, p, len);
		f->slen = len;
		f->script = f->sbuf;
	} else if (tag == DC_J_HEAD)
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
	free(f->sbuf);
}

struct ropts {
	const char *spool, *output;
	int keep, quiet, force, no_script;
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
		} else if (!strcmp(a, "--force")) {
			o->force = 1;
		} else if (!strcmp(a, "--no-script")) {
			o->no_script = 1;
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

/* The run's script, run again from its DC_J_SCRIPT entry: its callbacks decide what the
 * trace holds (dc.drop_paths, on_event's drops and tags, on_end's summaries). */
struct rscript {
	uv_loop_t loop;
	struct dc_run_info info;   /* the script keeps a pointer to it */
	char **args, **cmd;
	struct dc_script *s;
	int loop_ok;               /* loop was initialized */
};

/* Splits n NUL-terminated strings from *p (below end) into a new NULL-terminated array.
 * NULL when out of memory or they overrun end. */
static char **take_words(const char **p, const char *end, uint32_t n)
{
	char **v = n < 65536 ? calloc(n + 1, sizeof(*v)) : NULL;
	for (uint32_t i = 0; v && i < n; i++) {
		if (*p >= end) {
			free(v);
			return NULL;
		}
		v[i] = (char *)*p;
		*p += strlen(*p) + 1;
	}
	return v;
}

/* Loads and runs f's script into r (r->s NULL when the run had none). 0, or -1 with err. */
static int load_script(struct rscript *r, const struct jfacts *f, char *err, size_t errlen)
{
	if (!f->script)
		return 0;
	uint32_t h[3];
	memcpy(h, f->script, sizeof(h));
	const char *end = f->script + f->slen, *p = f->script + sizeof(h);
	const char *path = p;
	p += strlen(p) + 1;
	const char *output = p < end ? p : "";
	p += p < end ? strlen(p) + 1 : 0;
	r->args = take_words(&p, end, h[1]);
	r->cmd = r->args ? take_words(&p, end, h[2]) : NULL;
	if (!r->cmd || uv_loop_init(&r->loop)) {
		snprintf(err, errlen, "the spool's script entry is damaged (give --no-script)");
		return -1;
	}
	r->loop_ok = 1;
	r->info = (struct dc_run_info){ .output = *output ? output : NULL,
					.cmd = h[2] ? r->cmd : NULL, .script_args = r->args,
					.unsafe = h[0] != 0 };
	char found[PATH_MAX];
	r->s = dc_script_new(&r->loop, &r->info);
	int ran = !r->s ? -1 : dc_script_find(path, found, sizeof(found), err, errlen);
	if (!r->s)
		snprintf(err, errlen, "out of memory");
	else if (!ran)
		ran = dc_script_run(r->s, found, err, errlen);
	if (ran == 1)
		snprintf(err, errlen, "%s ended at its start (dc.done)", path);
	if (ran)
		snprintf(err + strlen(err), errlen - strlen(err), " (give --no-script to write "
			 "every call without it)");
	return ran ? -1 : 0;
}

static void close_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* Closes r's script and its loop (its handles first), as a run's teardown does. */
static void unload_script(struct rscript *r)
{
	if (r->loop_ok) { /* the script's handles closed while its Lua state exists */
		uv_walk(&r->loop, close_handle, NULL);
		uv_run(&r->loop, UV_RUN_DEFAULT);
	}
	dc_script_free(r->s);
	if (r->loop_ok)
		uv_loop_close(&r->loop);
	free(r->args);
	free(r->cmd);
}

/* dc_emit_fn, dc_stats_fn: the script's dc.emit and dc.stats, on the recovering consumer. */
static void emit_cb(void *ctx, struct dc_record *rec, int counter)
{
	dc_consumer_emit(ctx, rec, counter);
}

static void stats_cb(void *ctx, uint64_t out[DC_SS_NR])
{
	memset(out, 0, DC_SS_NR * sizeof(out[0]));
	out[DC_SS_EVENTS] = dc_consumer_written(ctx);
	out[DC_SS_DROPPED] = dc_consumer_dropped(ctx);
}

/* Replays spool sp into writer w through a consumer of f's probes and the script of r.
 * Returns the events written, or -1 with err. */
static long replay_into(struct dc_spool *sp, struct jfacts *f, struct rscript *r,
			struct dc_writer *w, char *err, size_t errlen)
{
	const struct dc_jstart *st = &f->st;
	struct dc_bpf *b = dc_bpf_offline(f->probes, f->nprobes);
	struct dc_consumer *c = b ? dc_consumer_new(b, w, r->s, st->mono_to_real_ns, 0, err,
						    errlen) : NULL;
	long n = -1;
	int serr;
	if (!b)
		snprintf(err, errlen, "out of memory");
	if (c && r->s) {
		dc_script_set_emitter(r->s, emit_cb, c, st->pid);
		dc_script_set_stats(r->s, stats_cb, c);
	}
	if (c) {
		/* a journal cut short (said by the first pass): the entries before the cut */
		char cut[256];
		dc_consumer_restore(c, sp, cut, sizeof(cut));
		dc_writer_start(w, dc_consumer_own_id(c), st->pid, st->start_us, f->str[3],
				f->str[4], f->str[5], st->ppid, st->version);
		n = dc_consumer_replay(c, &serr, err, errlen);
		if (n >= 0 && r->s)
			dc_script_end(r->s); /* its summary, as at a run's end */
		if (n >= 0)
			n = (long)dc_consumer_written(c);
	}
	if (r->s) {
		dc_script_set_emitter(r->s, NULL, NULL, 0);
		dc_script_set_stats(r->s, NULL, NULL);
	}
	dc_consumer_free(c);
	dc_bpf_offline_free(b);
	return n;
}

/* Writes the trace from spool sp by the facts f into `path` (replacing an existing file
 * of the user's only with force). Returns the events written (err: the trace's path), or
 * -1 with err. */
static long write_trace(struct dc_spool *sp, struct jfacts *f, const char *path, int force,
			int no_script, char *err, size_t errlen)
{
	size_t pl = strlen(path);
	int compress = pl > 4 && !strcmp(path + pl - 4, ".pfw") ? 0
		     : pl > 7 && !strcmp(path + pl - 7, ".pfw.gz") ? 1 : f->st.compress;
	struct dc_outspec os = { path, compress, force, 0 };
	char out[PATH_MAX];
	struct rscript r = { 0 };
	if ((!no_script && load_script(&r, f, err, errlen)) ||
	    dc_out_path(&os, f->str[2], f->str[0], f->st.pid, out, sizeof(out), err, errlen)) {
		unload_script(&r);
		return -1;
	}
	int fd = dc_out_create(&os, out, dc_invoker()->uid, dc_invoker()->gid, err, errlen);
	struct dc_writer *w = fd < 0 ? NULL : dc_writer_fdopen(fd, out, compress, f->str[0],
							      f->st.pid, f->st.pid, err, errlen);
	long n = w ? replay_into(sp, f, &r, w, err, errlen) : -1;
	if (w && dc_writer_close(w, 0) < 0 && n >= 0) {
		snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
		n = -1;
	}
	unload_script(&r);
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

/* A hint for a SPOOL that could not be opened: the trace named instead of its spool, or a
 * directory that is no spool. */
static const char *hint(const char *spool)
{
	static char buf[PATH_MAX + 64];
	struct stat st;
	snprintf(buf, sizeof(buf), "%s.spool", spool);
	if (!lstat(buf, &st) && S_ISDIR(st.st_mode)) {
		snprintf(buf, sizeof(buf), " (did you mean %s.spool?)", spool);
		return buf;
	}
	snprintf(buf, sizeof(buf), "%s/journal", spool);
	if (!lstat(spool, &st) && S_ISDIR(st.st_mode) && lstat(buf, &st))
		return " (not a datacrumbs spool: a run's is TRACE.spool, beside its trace)";
	return "";
}

int dc_recover_main(int argc, char **argv)
{
	struct ropts o = { 0 };
	int r = parse(argc, argv, &o);
	if (r)
		return r == 1 ? 0 : 2;
	char err[PATH_MAX + 256];
	struct dc_spool *sp = dc_spool_open(o.spool, err, sizeof(err));
	if (!sp) {
		fprintf(stderr, "datacrumbs recover: %s%s\n", err, hint(o.spool));
		return 1;
	}
	struct jfacts f = { 0 };
	char out[PATH_MAX];
	struct stat ost;
	if (dc_spool_journal(sp, on_fact, &f, err, sizeof(err)) && f.buf && !f.bad)
		fprintf(stderr, "datacrumbs recover: warning: %s: the entries before it are "
			"used\n", err); /* a journal cut by the kill: what is there */
	long n = -1;
	if (!f.buf || f.bad)
		snprintf(err, sizeof(err), "%s: its journal is damaged (no start, or a bad probe "
			 "entry)", o.spool);
	else if (!o.output && !beside(o.spool, out, sizeof(out), f.st.compress))
		snprintf(err, sizeof(err), "%s: not a name ending in .spool (give -o TRACE)",
			 o.spool);
	else if (!o.output && !lstat(out, &ost) && !S_ISREG(ost.st_mode))
		snprintf(err, sizeof(err), "%s is not a regular file, so not this spool's trace: "
			 "give -o TRACE", out);
	else
		n = write_trace(sp, &f, o.output ? o.output : out, !o.output || o.force,
				o.no_script, err, sizeof(err));
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
