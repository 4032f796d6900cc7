/* reqwire.c: a script's probe requests as bytes (dc.probe, dc.uprobe, dc.mode), from the
 * user's declare run to site mode's root side; decoding trusts nothing it reads. */
#include "reqwire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"

#define MAX_FIELD 4096      /* a path, a glob, a where: longer is an error */
#define MAX_LIST 65536      /* functions of one request, globs of one dc.uprobe */
#define MAX_REQS 4096

static void put(struct dc_wire *w, const char *field)
{
	size_t n = strlen(field) + 1;
	if (w->failed)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		while (cap < w->len + n)
			cap *= 2;
		char *d = realloc(w->data, cap);
		if (!d) {
			w->failed = 1;
			return;
		}
		w->data = d;
		w->cap = cap;
	}
	memcpy(w->data + w->len, field, n);
	w->len += n;
}

static void put_num(struct dc_wire *w, long long v)
{
	char b[32];
	snprintf(b, sizeof(b), "%lld", v);
	put(w, b);
}

int dc_reqwire_encode(struct dc_wire *w, const char *exe, int mode, uint64_t interval_ns,
		      const struct dc_probe_req *reqs, int n)
{
	put(w, "E");
	put(w, exe);
	put(w, "M");
	put_num(w, mode);
	put_num(w, (long long)interval_ns);
	for (int i = 0; i < n; i++) {
		const struct dc_probe_req *r = &reqs[i];
		const struct dc_layer *l = r->layer;
		if (!l->custom) {
			put(w, "P");
			put(w, l->path);
			put(w, r->where);
			put_num(w, r->uprobe);
			put_num(w, r->funcs ? r->nfuncs : -1);
			for (int k = 0; r->funcs && k < r->nfuncs; k++)
				put(w, r->funcs[k]);
			continue;
		}
		char arg[64], where[sizeof(l->path)];
		size_t wl = strlen(l->path), sl = strlen("dc.uprobe");
		snprintf(where, sizeof(where), "%.*s", (int)(wl >= sl ? wl - sl : wl), l->path);
		put(w, "U");
		put(w, l->name);
		put(w, l->library);
		put(w, where);   /* "script.lua:12: ", as dc_layer_custom_new takes it */
		put_num(w, l->tmpl.ret_kind);
		put_num(w, l->tmpl.returns);
		put_num(w, l->tmpl.nargs);
		for (int k = 0; k < l->tmpl.nargs; k++) {
			snprintf(arg, sizeof(arg), "%s%s%s", dc_arg_kind_name(l->tmpl.args[k].kind),
				 l->tmpl.args[k].name[0] ? " " : "", l->tmpl.args[k].name);
			put(w, arg);
		}
		put_num(w, l->nglobs);
		for (int k = 0; k < l->nglobs; k++)
			put(w, l->globs[k]);
	}
	return w->failed ? -1 : 0;
}

struct reader {
	const char *p, *end;
};

/* The next field, or NULL when the bytes end or it is too long (unterminated). */
static const char *get(struct reader *r)
{
	if (r->p >= r->end)
		return NULL;
	const char *z = memchr(r->p, 0, (size_t)(r->end - r->p));
	if (!z || z - r->p >= MAX_FIELD)
		return NULL;
	const char *f = r->p;
	r->p = z + 1;
	return f;
}

/* The next field as an integer in [lo, hi]; 0, or -1. */
static int get_num(struct reader *r, long long lo, long long hi, long long *v)
{
	const char *f = get(r);
	char *e;
	if (!f || !*f)
		return -1;
	errno = 0;
	*v = strtoll(f, &e, 10);
	return errno || *e || *v < lo || *v > hi ? -1 : 0;
}

static int add_layer(struct dc_wire_reqs *o, struct dc_layer *l)
{
	struct dc_layer **ls = realloc(o->layers, (o->nlayers + 1) * sizeof(*ls));
	if (!ls) {
		dc_layer_free(l);
		return -1;
	}
	o->layers = ls;
	o->layers[o->nlayers++] = l;
	return 0;
}

static int add_req(struct dc_wire_reqs *o, struct dc_probe_req *q)
{
	struct dc_probe_req *rs = realloc(o->reqs, (o->nreqs + 1) * sizeof(*rs));
	if (!rs)
		return -1;
	o->reqs = rs;
	o->reqs[o->nreqs++] = *q;
	return 0;
}

static void free_req_funcs(struct dc_probe_req *q)
{
	for (int k = 0; q->funcs && k < q->nfuncs; k++)
		free(q->funcs[k]);
	free(q->funcs);
	q->funcs = NULL;
}

#define BAD(...) do { snprintf(err, errlen, __VA_ARGS__); goto fail; } while (0)

/* A "P" record: a description root loads itself, from a path allow() accepts. */
static int read_probe(struct reader *r, struct dc_wire_reqs *o, dc_layer_allow_fn allow,
		      void *arg, char *err, size_t errlen)
{
	struct dc_probe_req q = { 0 };
	const char *path = get(r), *where = path ? get(r) : NULL;
	long long up, n;
	if (!where || get_num(r, 0, 1, &up) || get_num(r, -1, MAX_LIST, &n))
		BAD("site mode: the declare run's dc.probe record is malformed");
	snprintf(q.where, sizeof(q.where), "%s", where);
	char real[4096], lerr[1024];
	if (allow(path, arg, real, sizeof(real), lerr, sizeof(lerr)))
		BAD("%sprobe: %s", where, lerr);
	struct dc_layer *l = dc_layer_load(real, lerr, sizeof(lerr));
	if (!l)
		BAD("%sprobe: %s", where, lerr);
	if (add_layer(o, l))
		BAD("out of memory");
	q.layer = l;
	q.uprobe = (int)up;
	if (q.uprobe && l->mechanism != DC_MECH_UPROBE)
		BAD("%sprobe: mechanism = \"uprobe\": layer %s is not probed by uprobes", where,
		    l->name);
	if (n >= 0) {
		q.funcs = calloc((size_t)n + 1, sizeof(char *));
		if (!q.funcs)
			BAD("out of memory");
		for (long long k = 0; k < n; k++) {
			const char *f = get(r);
			if (!f)
				BAD("site mode: the declare run's function list is cut");
			if (!dc_layer_func(l, f))
				BAD("%sprobe: function '%s' is not in %s", where, f, l->path);
			if (!(q.funcs[q.nfuncs++] = strdup(f)))
				BAD("out of memory");
		}
	}
	if (add_req(o, &q))
		BAD("out of memory");
	return 0;
fail:
	free_req_funcs(&q);
	return -1;
}

/* A "U" record: a dc.uprobe layer, rebuilt field by field with the parsers dc.uprobe
 * itself uses. */
static int read_uprobe(struct reader *r, struct dc_wire_reqs *o, char *err, size_t errlen)
{
	const char *cat = get(r), *file = cat ? get(r) : NULL, *where = file ? get(r) : NULL;
	long long ret, returns, nargs, nglobs;
	char aerr[256];
	if (!where || get_num(r, DC_RET_INT, DC_RET_VOID, &ret) || get_num(r, 0, 3, &returns) ||
	    get_num(r, 0, DC_PROBE_ARGS, &nargs))
		BAD("site mode: the declare run's dc.uprobe record is malformed");
	struct dc_layer *l = dc_layer_custom_new(cat, file, where, aerr, sizeof(aerr));
	if (!l)
		BAD("%suprobe: spec.%s", where, aerr);
	if (add_layer(o, l))
		BAD("out of memory");
	l->tmpl.ret_kind = (enum dc_ret_kind)ret;
	l->tmpl.returns = (int)returns;
	for (long long k = 0; k < nargs; k++) {
		const char *a = get(r);
		if (!a || dc_arg_parse(a, &l->tmpl.args[k], aerr, sizeof(aerr)))
			BAD("%suprobe: %s", where, a ? aerr : "args cut");
	}
	l->tmpl.nargs = (int)nargs;
	if (get_num(r, 1, MAX_LIST, &nglobs))
		BAD("site mode: the declare run's dc.uprobe record is malformed");
	if (!(l->globs = calloc((size_t)nglobs, sizeof(char *))))
		BAD("out of memory");
	for (long long k = 0; k < nglobs; k++) {
		const char *g = get(r);
		if (!g || !*g)
			BAD("%suprobe: function #%lld is not a name", where, k + 1);
		if (!(l->globs[l->nglobs] = strdup(g)))
			BAD("out of memory");
		l->nglobs++;
	}
	struct dc_probe_req q = { .layer = l };
	snprintf(q.where, sizeof(q.where), "%.255s", l->path);
	if (add_req(o, &q))
		BAD("out of memory");
	return 0;
fail:
	return -1;
}

int dc_reqwire_decode(const char *buf, size_t len, dc_layer_allow_fn allow, void *arg,
		      int uprobes, struct dc_wire_reqs *out, char *err, size_t errlen)
{
	struct reader r = { buf, buf + len };
	memset(out, 0, sizeof(*out));
	const char *t;
	long long v;
	int seen_exe = 0;
	while ((t = get(&r))) {
		if (out->nreqs >= MAX_REQS)
			BAD("site mode: more than %d probe requests", MAX_REQS);
		if (!strcmp(t, "E")) {
			const char *e = get(&r);
			if (!e || e[0] != '/')
				BAD("site mode: the declare run gave no absolute executable");
			snprintf(out->exe, sizeof(out->exe), "%s", e);
			seen_exe = 1;
		} else if (!strcmp(t, "M")) {
			if (get_num(&r, 0, 2, &v))
				BAD("site mode: bad mode record");
			out->mode = (int)v;
			if (get_num(&r, 0, 86400000000000LL, &v))
				BAD("site mode: bad interval record");
			out->interval_ns = (uint64_t)v;
		} else if (!strcmp(t, "P")) {
			if (read_probe(&r, out, allow, arg, err, errlen))
				goto fail;
		} else if (!strcmp(t, "U")) {
			if (!uprobes) {
				const char *cat = get(&r), *file = cat ? get(&r) : NULL;
				const char *where = file ? get(&r) : NULL;
				BAD("%sdc.uprobe: refused: this site does not let users' scripts "
				    "probe files of their choosing (user_uprobes = no in site.conf)",
				    where ? where : "");
			}
			if (read_uprobe(&r, out, err, errlen))
				goto fail;
		} else {
			BAD("site mode: the declare run's record '%.8s' is unknown", t);
		}
	}
	if (r.p != r.end)
		BAD("site mode: the declare run's bytes are malformed");
	if (!seen_exe)
		BAD("site mode: the declare run gave no executable");
	return 0;
fail:
	dc_wire_reqs_free(out);
	return -1;
}

void dc_wire_reqs_free(struct dc_wire_reqs *r)
{
	for (int i = 0; i < r->nreqs; i++)
		free_req_funcs(&r->reqs[i]);
	free(r->reqs);
	for (int i = 0; i < r->nlayers; i++)
		dc_layer_free(r->layers[i]);
	free(r->layers);
	memset(r, 0, sizeof(*r));
}
