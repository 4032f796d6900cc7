/* profile.c: profile mode (the BPF `aggs` map read per interval, batched, merged with the
 * records that still travel, written as counter events) and the run's per-file totals. */
#define _GNU_SOURCE
#include "profile.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>

#include "attach.h"
#include "fdtable.h"
#include "lua_api.h"
#include "record.h"
#include "util.h"
#include "writer.h"

#define BATCH 256  /* map entries read per bpf_map_lookup_batch call */

/* One aggregate in a user-side table: by process, probe, interval and path. */
struct entry {
	int used;
	int pid;
	unsigned probe;
	unsigned interval;   /* UINT32_MAX in the totals table */
	char *path;          /* NULL: no file */
	struct dc_agg a;
};

/* A table of struct entry (util.h dc_htab); its slots as entries: table_e(). */
struct table {
	struct dc_htab h;
};

struct open_e {
	int pid;
	uint64_t id;    /* 0: empty */
	char *path;
};

struct dc_profile {
	struct dc_bpf *bpf;
	struct dc_writer *w;
	struct dc_script *script;
	uint64_t interval_ns, t0;
	int64_t mono_to_real;
	struct table pending, totals;
	struct dc_htab opens; /* of struct open_e: (pid, id of the call that opened a
				 handle) -> its path */
	uint64_t dropped;    /* counter events the script's callbacks dropped */
	int flushing;        /* inside dc_profile_flush: pending holds pointers the script's
				callbacks must not move (dc_profile_flushing) */
	/* dc_profile_total's recent entries: DC_TC_SETS sets of two ways, the set chosen by a
	 * multiplicative mix of (pid, probe) (two ranks' pids often differ in one bit only),
	 * way 0 the most recent; src: the interned path it was found by (NULL: not one).
	 * Valid while the totals table keeps its capacity (a rehash moves entries; none is
	 * ever removed). */
#define DC_TC_SETS 32
	struct tc_way {
		struct entry *e;
		const char *src;
	} tc[DC_TC_SETS][2];
	size_t tc_cap;
	struct dc_record rec;
	char special[48];    /* key_path's pipe:[N] or socket:[N] */
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h;
}

static uint64_t key_hash(int pid, unsigned probe, unsigned interval, const char *path)
{
	uint64_t h = mix(mix(mix(1469598103934665603ULL, pid), probe), interval);
	for (const char *c = path; c && *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	return h;
}

static int same(const struct entry *e, int pid, unsigned probe, unsigned interval,
		const char *path)
{
	return e->pid == pid && e->probe == probe && e->interval == interval &&
	       (e->path == path || (e->path && path && !strcmp(e->path, path)));
}

static struct entry *table_e(const struct table *t)
{
	return t->h.slots;
}

static uint64_t entry_hash(const void *slot)
{
	const struct entry *e = slot;
	return key_hash(e->pid, e->probe, e->interval, e->path);
}

static int entry_used(const void *slot)
{
	return ((const struct entry *)slot)->used;
}

static struct table table_new(void)
{
	return (struct table){ { .size = sizeof(struct entry), .first = 1024,
				 .hash = entry_hash, .used = entry_used } };
}

static int entry_eq(const void *slot, const void *key)
{
	const struct entry *k = key;
	return same(slot, k->pid, k->probe, k->interval, k->path);
}

/* The entry for the key, added zeroed (min fields at their maximum) when absent. */
static struct entry *slot(struct table *t, int pid, unsigned probe, unsigned interval,
			  const char *path)
{
	if (dc_htab_reserve(&t->h))
		dc_oom();
	struct entry k = { .pid = pid, .probe = probe, .interval = interval,
			   .path = (char *)path };
	struct entry *e = dc_htab_find(&t->h, key_hash(pid, probe, interval, path), entry_eq, &k);
	if (!e->used) {
		e->used = 1;
		e->pid = pid;
		e->probe = probe;
		e->interval = interval;
		e->path = path ? dc_xstrdup(path) : NULL;
		memset(&e->a, 0, sizeof(e->a));
		e->a.dur_min = e->a.bytes_min = UINT64_MAX;
		t->h.n++;
	}
	return e;
}

static void merge(struct dc_agg *into, const struct dc_agg *a)
{
	into->count += a->count;
	into->dur_sum += a->dur_sum;
	if (a->count && a->dur_min < into->dur_min)
		into->dur_min = a->dur_min;
	if (a->count && a->dur_max > into->dur_max)
		into->dur_max = a->dur_max;
	into->bytes_n += a->bytes_n;
	into->bytes_sum += a->bytes_sum;
	if (a->bytes_n && a->bytes_min < into->bytes_min)
		into->bytes_min = a->bytes_min;
	if (a->bytes_n && a->bytes_max > into->bytes_max)
		into->bytes_max = a->bytes_max;
	into->moved_n += a->moved_n;
	into->moved_sum += a->moved_sum;
}

static void one_call(struct dc_agg *a, uint64_t dur, int64_t bytes, int64_t moved)
{
	struct dc_agg c = { 1, dur, dur, dur, 0, 0, 0, 0, 0, 0 };
	if (bytes >= 0) {
		c.bytes_n = 1;
		c.bytes_sum = c.bytes_min = c.bytes_max = bytes;
	}
	if (moved >= 0) {
		c.moved_n = 1;
		c.moved_sum = moved;
	}
	merge(a, &c);
}

static uint64_t open_hash(const void *slot)
{
	const struct open_e *e = slot;
	return mix(mix(7, e->pid), e->id);
}

static int open_used(const void *slot)
{
	return ((const struct open_e *)slot)->id != 0;
}

static int open_eq(const void *slot, const void *key)
{
	const struct open_e *e = slot, *k = key;
	return e->id == k->id && e->pid == k->pid;
}

struct dc_profile *dc_profile_new(struct dc_bpf *b, struct dc_writer *w,
				  struct dc_script *script, uint64_t interval_ns, uint64_t t0,
				  int64_t mono_to_real_ns)
{
	struct dc_profile *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->bpf = b;
	p->w = w;
	p->script = script;
	p->interval_ns = interval_ns;
	p->t0 = t0;
	p->mono_to_real = mono_to_real_ns;
	p->pending = table_new();
	p->totals = table_new();
	p->opens = (struct dc_htab){ .size = sizeof(struct open_e), .first = 256,
				     .hash = open_hash, .used = open_used };
	return p;
}

void dc_profile_add(struct dc_profile *p, int pid, unsigned probe, uint64_t end_ns,
		    uint64_t dur_ns, int64_t bytes, int64_t moved, const char *path)
{
	unsigned interval = end_ns > p->t0 ? (end_ns - p->t0) / p->interval_ns : 0;
	one_call(&slot(&p->pending, pid, probe, interval, path)->a, dur_ns, bytes, moved);
}

/* Is way w the totals entry of (pid, probe, path)? run: path is interned. */
static int way_hit(const struct tc_way *w, int pid, unsigned probe, const char *path, int run)
{
	if (!w->e || w->e->pid != pid || w->e->probe != probe)
		return 0;
	if (run && w->src) /* both interned: one address per string */
		return w->src == path;
	return same(w->e, pid, probe, UINT32_MAX, path);
}

void dc_profile_total(struct dc_profile *p, int pid, unsigned probe, uint64_t dur_ns,
		      int64_t bytes, int64_t moved, const char *path, int run)
{
	/* a run of calls mostly hits a few (pid, probe, file) entries: those are looked up
	 * without hashing the path, and an interned one without comparing it either */
	unsigned k = ((unsigned)pid * 0x9E3779B1u + probe * 0x85EBCA77u) >> 27;
	struct tc_way *set = p->tc[k], w;
	_Static_assert(DC_TC_SETS == 1u << (32 - 27), "the set index is the mix's top 5 bits");
	if (p->tc_cap != p->totals.h.cap) {
		memset(p->tc, 0, sizeof(p->tc));
		p->tc_cap = p->totals.h.cap;
	}
	if (way_hit(&set[0], pid, probe, path, run)) {
		w = set[0];
	} else if (way_hit(&set[1], pid, probe, path, run)) {
		w = set[1];
		set[1] = set[0];
	} else {
		w.e = slot(&p->totals, pid, probe, UINT32_MAX, path);
		if (p->tc_cap != p->totals.h.cap) { /* slot grew the table: every way is stale */
			memset(p->tc, 0, sizeof(p->tc));
			p->tc_cap = p->totals.h.cap;
		}
		set[1] = set[0];
	}
	w.src = run ? path : NULL;
	set[0] = w;
	one_call(&w.e->a, dur_ns, bytes, moved);
}

/* The slot of (pid, id) in the opens table: its entry, or the empty one to fill. */
static struct open_e *open_slot(struct dc_profile *p, int pid, uint64_t id)
{
	struct open_e k = { .pid = pid, .id = id };
	return dc_htab_find(&p->opens, mix(mix(7, pid), id), open_eq, &k);
}

void dc_profile_handle(struct dc_profile *p, int pid, uint64_t open_id, const char *path)
{
	if (!path || !open_id)
		return;
	if (dc_htab_reserve(&p->opens))
		dc_oom();
	struct open_e *e = open_slot(p, pid, open_id);
	if (e->id)
		return;
	e->pid = pid;
	e->id = open_id;
	e->path = dc_xstrdup(path);
	p->opens.n++;
}

/* The path a BPF aggregate's file key names (the inode table, the handles' opens, a
 * pipe's or socket's inode as the kernel names it: pipe:[N], socket:[N]), or NULL. */
static const char *key_path(struct dc_profile *p, const struct dc_agg_key *k)
{
	if (k->kind == DC_AGG_PIPE || k->kind == DC_AGG_SOCKET) {
		snprintf(p->special, sizeof(p->special), "%s:[%llu]",
			 k->kind == DC_AGG_PIPE ? "pipe" : "socket", (unsigned long long)k->fkey);
		return p->special;
	}
	if (k->kind == DC_AGG_INODE)
		return dc_files_inode_opened(k->fdev, k->fkey);
	if (k->kind == DC_AGG_HANDLE && p->opens.cap) {
		const struct open_e *e = open_slot(p, k->pid, k->fkey);
		return e->id ? e->path : NULL;
	}
	return NULL;
}

/* Reads the whole aggs map in batches: calls fn per entry (with the keys of one batch),
 * then, with del, deletes the entries fn accepted. */
static void read_map(struct dc_profile *p, int del,
		     int (*fn)(struct dc_profile *p, const struct dc_agg_key *k,
			       const struct dc_agg *a, void *arg), void *arg)
{
	int fd = dc_bpf_aggs_fd(p->bpf);
	struct dc_agg_key keys[BATCH], gone[BATCH];
	struct dc_agg vals[BATCH];
	struct dc_agg_key in, out;
	void *inp = NULL;
	for (;;) {
		__u32 n = BATCH, ngone = 0;
		int e = bpf_map_lookup_batch(fd, inp, &out, keys, vals, &n, NULL);
		if (e && errno != ENOENT)
			break;
		for (__u32 i = 0; i < n; i++)
			if (fn(p, &keys[i], &vals[i], arg))
				gone[ngone++] = keys[i];
		if (del && ngone) {
			__u32 c = ngone;
			bpf_map_delete_batch(fd, gone, &c, NULL);
		}
		if (e) /* ENOENT: that was the last batch */
			break;
		in = out;
		inp = &in;
	}
}

/* Holds way w for the consumer (DC_WAY_USER): waits while its thread holds it (one call's
 * add, or a put into aggs: a BPF program's run, not preempted under it). */
static void way_lock(struct dc_agg_way *w)
{
	unsigned long long want = DC_WAY_FREE;
	while (!__atomic_compare_exchange_n(&w->lock, &want, DC_WAY_USER, 0, __ATOMIC_ACQUIRE,
					    __ATOMIC_RELAXED)) {
		want = DC_WAY_FREE;
		sched_yield();
	}
}

static void way_unlock(struct dc_agg_way *w)
{
	__atomic_store_n(&w->lock, DC_WAY_FREE, __ATOMIC_RELEASE);
}

/* Takes the sums of every thread's aggregate ways (bpf/datacrumbs.h "Profile mode's
 * per-thread aggregates") of intervals before `limit` into pending, emptying them: before
 * each read of the aggs map, so that an idle thread's sums are in the read of their
 * interval, and a thread's put of a way into aggs (which holds the way) has ended before
 * the read. Ways of later intervals stay: their files' opens may still be in the ring
 * buffer (key_path could not name them yet). */
static void take_ways(struct dc_profile *p, unsigned limit)
{
	size_t n;
	struct dc_agg_ways *ws = dc_bpf_agg_ways(p->bpf, &n);
	for (size_t s = 0; s < n; s++) {
		for (int i = 0; i < DC_AGG_WAYS; i++) {
			struct dc_agg_way *w = &ws[s].w[i];
			if (!__atomic_load_n(&w->a.count, __ATOMIC_RELAXED) ||
			    __atomic_load_n(&w->key.interval, __ATOMIC_RELAXED) >= limit)
				continue;
			way_lock(w);
			if (w->a.count && w->key.interval < limit) {
				struct dc_agg_key k = w->key;
				merge(&slot(&p->pending, k.pid, k.probe, k.interval,
					    key_path(p, &k))->a, &w->a);
				w->a.count = 0;
			}
			way_unlock(w);
		}
	}
}

/* read_map callback of a flush: takes the entries of ended intervals into pending. */
static int take_ended(struct dc_profile *p, const struct dc_agg_key *k, const struct dc_agg *a,
		      void *arg)
{
	unsigned limit = *(unsigned *)arg;
	if (k->interval >= limit)
		return 0;
	merge(&slot(&p->pending, k->pid, k->probe, k->interval, key_path(p, k))->a, a);
	return 1;
}

static int by_interval(const void *x, const void *y)
{
	const struct entry *a = *(struct entry *const *)x, *b = *(struct entry *const *)y;
	if (a->interval != b->interval)
		return a->interval < b->interval ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->probe != b->probe)
		return a->probe < b->probe ? -1 : 1;
	return strcmp(a->path ? a->path : "", b->path ? b->path : "");
}

/* Writes one counter event (after the script's callbacks, which may drop or change it).
 * Returns 1 when written. */
static int write_counter(struct dc_profile *p, const struct entry *e)
{
	const struct dc_probe *pr = dc_bpf_probe(p->bpf, e->probe);
	if (!pr)
		return 0;
	struct dc_record *r = &p->rec;
	r->id = 0;
	r->name = pr->func->name;
	r->cat = pr->layer->name;
	r->pid = r->tid = e->pid;
	r->ts_us = (p->t0 + (uint64_t)e->interval * p->interval_ns + p->mono_to_real) / 1000;
	r->dur_us = 0;
	r->level = 0;
	r->p_idx = -1;
	r->path = e->path;
	r->counter = 1;
	r->nargs = 0;
	r->used = 0;
	dc_rec_int(r, "count", e->a.count);
	dc_rec_int(r, "dur_sum", e->a.dur_sum / 1000);
	dc_rec_int(r, "dur_min", e->a.dur_min / 1000);
	dc_rec_int(r, "dur_max", e->a.dur_max / 1000);
	if (e->a.bytes_n) {
		dc_rec_int(r, "size_sum", e->a.bytes_sum);
		dc_rec_int(r, "size_min", e->a.bytes_min);
		dc_rec_int(r, "size_max", e->a.bytes_max);
	}
	if (e->a.moved_n)
		dc_rec_int(r, "moved_sum", e->a.moved_sum);
	if (p->script && dc_script_wants_events(p->script) && !dc_script_event(p->script, r)) {
		p->dropped++;
		return 0;
	}
	const char *fh = r->path ? dc_writer_file(p->w, r->pid, r->tid, r->path) : NULL;
	dc_writer_begin_counter(p->w, r->name, r->cat, r->pid, r->tid, r->ts_us);
	if (fh)
		dc_writer_arg_str(p->w, "fhash", fh);
	for (int i = 0; i < r->nargs; i++)
		if (!r->args[i].is_str)
			dc_writer_arg_int(p->w, r->args[i].key, r->args[i].i);
	dc_writer_end(p->w);
	return 1;
}

int dc_profile_flushing(const struct dc_profile *p)
{
	return p && p->flushing;
}

uint64_t dc_profile_flush(struct dc_profile *p, uint64_t now_ns, int final)
{
	if (!p->interval_ns || p->flushing)
		return 0;
	p->flushing = 1;
	unsigned limit = final ? UINT32_MAX
		       : now_ns > p->t0 ? (now_ns - p->t0) / p->interval_ns : 0;
	take_ways(p, limit);
	read_map(p, 1, take_ended, &limit);

	/* the ended intervals' entries, in order */
	struct entry **out = dc_xcalloc(p->pending.h.n + 1, sizeof(*out));
	struct entry *pe = table_e(&p->pending);
	size_t n = 0;
	for (size_t i = 0; i < p->pending.h.cap; i++)
		if (pe[i].used && pe[i].interval < limit)
			out[n++] = &pe[i];
	qsort(out, n, sizeof(*out), by_interval);
	uint64_t written = 0;
	for (size_t i = 0; i < n; i++) {
		const struct dc_probe *pr = dc_bpf_probe(p->bpf, out[i]->probe);
		if (!pr || pr->hidden)
			continue;
		written += write_counter(p, out[i]);
		merge(&slot(&p->totals, out[i]->pid, out[i]->probe, UINT32_MAX, out[i]->path)->a,
		      &out[i]->a);
	}
	free(out);
	/* drop them: rebuild pending from what is left */
	struct table left = table_new();
	for (size_t i = 0; i < p->pending.h.cap; i++) {
		struct entry *e = &pe[i];
		if (!e->used)
			continue;
		if (e->interval >= limit)
			merge(&slot(&left, e->pid, e->probe, e->interval, e->path)->a, &e->a);
		free(e->path);
	}
	dc_htab_free(&p->pending.h);
	p->pending = left;
	p->flushing = 0;
	return written;
}

uint64_t dc_profile_dropped(const struct dc_profile *p)
{
	return p ? p->dropped : 0;
}

/* Hands out one aggregate as a dc_prow. */
static void visit(struct dc_profile *p, const struct entry *e,
		  void (*fn)(const struct dc_prow *row, void *arg), void *arg)
{
	const struct dc_probe *pr = dc_bpf_probe(p->bpf, e->probe);
	if (!pr || pr->hidden)
		return;
	struct dc_prow row = {
		e->pid, pr->func->name, pr->layer->name, e->path,
		e->interval == UINT32_MAX ? 0
		: (p->t0 + (uint64_t)e->interval * p->interval_ns + p->mono_to_real) / 1000,
		e->a.count, e->a.dur_sum, e->a.dur_min, e->a.dur_max,
		e->a.bytes_n, e->a.bytes_sum, e->a.bytes_n ? e->a.bytes_min : 0, e->a.bytes_max,
		e->a.moved_n, e->a.moved_sum,
	};
	fn(&row, arg);
}

struct read_ctx {
	void (*fn)(const struct dc_prow *row, void *arg);
	void *arg;
};

/* read_map callback of dc_profile_read: hands out each entry as it is, deletes nothing. */
static int show(struct dc_profile *p, const struct dc_agg_key *k, const struct dc_agg *a,
		void *arg)
{
	struct read_ctx *c = arg;
	struct entry e = { 1, k->pid, k->probe, k->interval, (char *)key_path(p, k), *a };
	visit(p, &e, c->fn, c->arg);
	return 0;
}

/* dc_profile_read's look at the threads' aggregate ways: each non-empty way's sums as they
 * are now (copied while held, left in place). */
static void show_ways(struct dc_profile *p, struct read_ctx *c)
{
	size_t n;
	struct dc_agg_ways *ws = dc_bpf_agg_ways(p->bpf, &n);
	for (size_t s = 0; s < n; s++) {
		for (int i = 0; i < DC_AGG_WAYS; i++) {
			struct dc_agg_way *w = &ws[s].w[i];
			if (!__atomic_load_n(&w->a.count, __ATOMIC_RELAXED))
				continue;
			way_lock(w);
			struct dc_agg_key k = w->key;
			struct dc_agg a = w->a;
			way_unlock(w);
			if (a.count)
				show(p, &k, &a, c);
		}
	}
}

void dc_profile_read(struct dc_profile *p, int totals,
		     void (*fn)(const struct dc_prow *row, void *arg), void *arg)
{
	struct table *t = totals ? &p->totals : &p->pending;
	for (size_t i = 0; i < t->h.cap; i++)
		if (table_e(t)[i].used)
			visit(p, &table_e(t)[i], fn, arg);
	if (!totals && p->interval_ns) {
		struct read_ctx c = { fn, arg };
		read_map(p, 0, show, &c);
		show_ways(p, &c);
	}
}

static void free_table(struct table *t)
{
	for (size_t i = 0; i < t->h.cap; i++)
		if (table_e(t)[i].used)
			free(table_e(t)[i].path);
	dc_htab_free(&t->h);
}

void dc_profile_free(struct dc_profile *p)
{
	if (!p)
		return;
	free_table(&p->pending);
	free_table(&p->totals);
	struct open_e *o = p->opens.slots;
	for (size_t i = 0; i < p->opens.cap; i++)
		free(o[i].path);
	dc_htab_free(&p->opens);
	free(p);
}
