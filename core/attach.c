/* attach.c: loads bpf/uprobe.bpf.c (skeleton), attaches uprobes/uretprobes by file
 * offset with attach cookies, tracks traced tgids, and tears everything down. */
#include "attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "uprobe.skel.h"

#define DC_MAX_PROBES 65536

struct dc_bpf {
	struct uprobe_bpf *skel;
	struct dc_probe *probes;
	struct bpf_link **links;   /* 2 per probe: entry, return */
	unsigned nprobes, cap, nattached;
	int ncpus;
};

/* libbpf prints its own diagnostics; keep only warnings and errors, prefixed. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || getenv("DATACRUMBS_LIBBPF_QUIET"))
		return 0;
	if (level == LIBBPF_INFO && !getenv("DATACRUMBS_DEBUG"))
		return 0;
	fprintf(stderr, "datacrumbs: libbpf: ");
	return vfprintf(stderr, fmt, ap);
}

struct dc_bpf *dc_bpf_open(size_t ringbuf_bytes, char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux missing): "
			 "datacrumbs needs CONFIG_DEBUG_INFO_BTF=y");
		return NULL;
	}
	libbpf_set_print(libbpf_print);
	struct dc_bpf *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	b->ncpus = libbpf_num_possible_cpus();
	b->skel = uprobe_bpf__open();
	if (!b->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		free(b);
		return NULL;
	}
	int e = bpf_map__set_max_entries(b->skel->maps.events, ringbuf_bytes);
	if (!e)
		e = uprobe_bpf__load(b->skel);
	if (e) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-e),
			 e == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		uprobe_bpf__destroy(b->skel);
		free(b);
		return NULL;
	}
	e = uprobe_bpf__attach(b->skel); /* the tp_btf programs; uprobes are attached by hand */
	if (e) {
		snprintf(err, errlen, "cannot attach the sched tracepoints: %s", strerror(-e));
		uprobe_bpf__destroy(b->skel);
		free(b);
		return NULL;
	}
	return b;
}

int dc_bpf_trace_pid(struct dc_bpf *b, int tgid)
{
	struct dc_proc p = { .next_id = 1 };
	__u32 key = tgid;
	return bpf_map__update_elem(b->skel->maps.traced, &key, sizeof(key), &p, sizeof(p), BPF_ANY);
}

int dc_bpf_add_probe(struct dc_bpf *b, const struct dc_layer *layer,
		     const struct dc_func *func, const char *library, uint64_t offset,
		     int hidden)
{
	for (unsigned i = 0; i < b->nprobes; i++) {
		struct dc_probe *p = &b->probes[i];
		if (p->offset != offset || strcmp(p->library, library))
			continue;
		if (p->hidden && !hidden) { /* asked for after all: it names the events */
			p->hidden = 0;
			p->func = func;
			p->layer = layer;
		}
		return i;
	}
	if (b->nprobes == DC_MAX_PROBES)
		return -1;
	if (b->nprobes == b->cap) {
		unsigned cap = b->cap ? b->cap * 2 : 64;
		struct dc_probe *p = realloc(b->probes, cap * sizeof(*p));
		struct bpf_link **l = realloc(b->links, 2 * cap * sizeof(*l));
		if (p)
			b->probes = p;
		if (l)
			b->links = l;
		if (!p || !l)
			return -1;
		memset(b->links + 2 * b->cap, 0, 2 * (cap - b->cap) * sizeof(*l));
		b->cap = cap;
	}
	struct dc_probe *p = &b->probes[b->nprobes];
	p->layer = layer;
	p->func = func;
	snprintf(p->library, sizeof(p->library), "%s", library);
	p->offset = offset;
	p->hidden = hidden;
	return b->nprobes++;
}

/* The attach cookie of probe idx: its index and which arguments need reading in BPF. */
static uint64_t cookie_of(const struct dc_probe *p, unsigned idx)
{
	unsigned path = 0, iov = 0, iovcnt = 0;
	for (int i = 0; i < p->func->nargs; i++) {
		switch (p->func->args[i].kind) {
		case DC_ARG_PATH:
			if (!path)
				path = i + 1;
			break;
		case DC_ARG_IOV:
			iov = i + 1;
			break;
		case DC_ARG_IOVCNT:
			iovcnt = i + 1;
			break;
		default:
			break;
		}
	}
	return DC_COOKIE(idx, path, iov, iovcnt);
}

int dc_bpf_attach(struct dc_bpf *b, char *err, size_t errlen)
{
	unsigned ok = 0;
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		struct dc_probe *p = &b->probes[i];
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie_of(p, i));
		o.retprobe = false;
		b->links[2 * i] = bpf_program__attach_uprobe_opts(b->skel->progs.dc_entry, -1,
								   p->library, p->offset, &o);
		if (!b->links[2 * i]) {
			fprintf(stderr, "datacrumbs: warning: cannot attach a uprobe to %s in %s: %s\n",
				p->func->name, p->library, strerror(errno));
			continue;
		}
		o.retprobe = true;
		b->links[2 * i + 1] = bpf_program__attach_uprobe_opts(b->skel->progs.dc_return, -1,
								       p->library, p->offset, &o);
		if (!b->links[2 * i + 1]) {
			fprintf(stderr, "datacrumbs: warning: cannot attach a uretprobe to %s in %s: %s\n",
				p->func->name, p->library, strerror(errno));
			bpf_link__destroy(b->links[2 * i]);
			b->links[2 * i] = NULL;
			continue;
		}
		ok++;
	}
	b->nattached = b->nprobes;
	if (!ok && b->nprobes) {
		snprintf(err, errlen, "no probe could be attached (see the warnings above)");
		return -1;
	}
	return ok;
}

const struct dc_probe *dc_bpf_probe(const struct dc_bpf *b, unsigned idx)
{
	return idx < b->nprobes ? &b->probes[idx] : NULL;
}

unsigned dc_bpf_nprobes(const struct dc_bpf *b)
{
	return b->nprobes;
}

int dc_bpf_ringbuf_fd(const struct dc_bpf *b)
{
	return bpf_map__fd(b->skel->maps.events);
}

void dc_bpf_stats(const struct dc_bpf *b, uint64_t out[DC_STAT_NR])
{
	__u64 vals[b->ncpus > 0 ? b->ncpus : 1];
	for (__u32 k = 0; k < DC_STAT_NR; k++) {
		out[k] = 0;
		if (bpf_map__lookup_elem(b->skel->maps.stats, &k, sizeof(k), vals,
					 sizeof(vals), 0))
			continue;
		for (int c = 0; c < b->ncpus; c++)
			out[k] += vals[c];
	}
}

void dc_bpf_close(struct dc_bpf *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < 2 * b->nprobes; i++)
		bpf_link__destroy(b->links[i]);
	uprobe_bpf__destroy(b->skel);
	free(b->probes);
	free(b->links);
	free(b);
}
