/* attach.c: loads bpf/uprobe.bpf.c (skeleton), attaches uprobes/uretprobes by file
 * offset with attach cookies, tracks traced tgids, and tears everything down. */
#include "attach.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "elfsym.h"
#include "syscall.skel.h"
#include "uprobe.skel.h"

#define DC_MAX_PROBES 65536

/* uprobe_multi links (kernel >= 6.6): one link attaches a program to many offsets of one
 * file, and detaches them all at once. Debian's libbpf 1.1 and uapi headers predate it,
 * so the attach type and the link_create attr are spelt out here from the kernel's
 * include/uapi/linux/bpf.h (enum bpf_attach_type, union bpf_attr.link_create). */
#define DC_BPF_TRACE_UPROBE_MULTI 48
#define DC_BPF_F_UPROBE_MULTI_RETURN 1U

struct dc_link_create_uprobe_multi {
	__u32 prog_fd;
	__u32 target_fd;
	__u32 attach_type;
	__u32 flags;
	__u64 path;            /* const char * */
	__u64 offsets;         /* __u64[cnt] file offsets */
	__u64 ref_ctr_offsets; /* NULL */
	__u64 cookies;         /* __u64[cnt] attach cookies */
	__u32 cnt;
	__u32 uflags;          /* DC_BPF_F_UPROBE_MULTI_RETURN for uretprobes */
	__u32 pid;             /* 0: every process */
	__u32 pad;
};

struct dc_bpf {
	struct uprobe_bpf *skel;
	struct syscall_bpf *sys;   /* loaded when a syscall layer is asked for */
	struct dc_probe *probes;
	struct bpf_link **links;   /* fallback: 2 per probe (entry, return) */
	unsigned nprobes, cap, nattached;
	int ncpus;
	int multi;                 /* 1: uprobe_multi links, 0: one perf_event link per probe */
	int *mlinks;               /* uprobe_multi link fds */
	unsigned nmlinks;
};

/* Creates a uprobe_multi link of prog_fd on cnt offsets of path; the link fd or -1. */
static int link_uprobe_multi(int prog_fd, const char *path, const __u64 *offsets,
			     const __u64 *cookies, unsigned cnt, int ret)
{
	struct dc_link_create_uprobe_multi a;
	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = DC_BPF_TRACE_UPROBE_MULTI;
	a.path = (unsigned long)path;
	a.offsets = (unsigned long)offsets;
	a.cookies = (unsigned long)cookies;
	a.cnt = cnt;
	a.uflags = ret ? DC_BPF_F_UPROBE_MULTI_RETURN : 0;
	return syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
}

/* Does this kernel attach uprobe_multi links? Tries the real thing: a two-instruction
 * program of that attach type on getpid in the libc this process has mapped. */
static int probe_uprobe_multi(void)
{
	if (getenv("DATACRUMBS_NO_UPROBE_MULTI"))
		return 0;
	char line[4096], libc[4096] = "";
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && !libc[0] && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(libc, sizeof(libc), "%s", p);
		}
	}
	if (f)
		fclose(f);
	char err[256];
	struct dc_elf_syms *syms = libc[0] ? dc_elf_syms_open(libc, err, sizeof(err)) : NULL;
	__u64 off = syms ? dc_elf_sym_offset(syms, "getpid") : 0, cookie = 0;
	dc_elf_syms_close(syms);
	if (!off)
		return 0;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = DC_BPF_TRACE_UPROBE_MULTI);
	int prog = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "dc_feature", "GPL", insns, 2, &o);
	if (prog < 0)
		return 0;
	int link = link_uprobe_multi(prog, libc, &off, &cookie, 1, 0);
	if (link >= 0)
		close(link);
	close(prog);
	return link >= 0;
}

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
	b->multi = probe_uprobe_multi();
	if (b->multi) {
		bpf_program__set_expected_attach_type(b->skel->progs.dc_entry,
						      DC_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(b->skel->progs.dc_return,
						      DC_BPF_TRACE_UPROBE_MULTI);
	}
	b->skel->rodata->wakeup_bytes = ringbuf_bytes / 8;
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

/* Attaches probes [from, to) that live in one library with two uprobe_multi links.
 * Returns the number of functions attached (0 on failure, reported on stderr). */
static unsigned attach_multi(struct dc_bpf *b, unsigned from, unsigned to)
{
	unsigned n = 0, cnt = to - from;
	__u64 *offs = calloc(cnt, sizeof(__u64)), *cookies = calloc(cnt, sizeof(__u64));
	int *ml = realloc(b->mlinks, (b->nmlinks + 2) * sizeof(int));
	if (ml)
		b->mlinks = ml;
	if (!offs || !cookies || !ml) {
		fprintf(stderr, "datacrumbs: warning: out of memory attaching to %s\n",
			b->probes[from].library);
		goto out;
	}
	for (unsigned i = from; i < to; i++) {
		offs[i - from] = b->probes[i].offset;
		cookies[i - from] = cookie_of(&b->probes[i], i);
	}
	const char *lib = b->probes[from].library;
	int in = link_uprobe_multi(bpf_program__fd(b->skel->progs.dc_entry), lib, offs, cookies,
				   cnt, 0);
	int out = in < 0 ? -1 : link_uprobe_multi(bpf_program__fd(b->skel->progs.dc_return),
						 lib, offs, cookies, cnt, 1);
	if (in < 0 || out < 0) {
		fprintf(stderr, "datacrumbs: warning: cannot attach %u uprobes in %s: %s\n", cnt,
			lib, strerror(errno));
		if (in >= 0)
			close(in);
		goto out;
	}
	b->mlinks[b->nmlinks++] = in;
	b->mlinks[b->nmlinks++] = out;
	n = cnt;
out:
	free(offs);
	free(cookies);
	return n;
}

/* Loads syscall.bpf.c on the maps of uprobe.bpf.c (one ring buffer, one call stack per
 * thread, so syscalls nest under libc calls) and attaches its two tracepoints.
 * Returns 0, or -1 with err. */
static int load_syscalls(struct dc_bpf *b, char *err, size_t errlen)
{
	b->sys = syscall_bpf__open();
	if (!b->sys) {
		snprintf(err, errlen, "cannot open the syscall BPF object: %s", strerror(errno));
		return -1;
	}
	struct { struct bpf_map *mine, *shared; } maps[] = {
		{ b->sys->maps.traced, b->skel->maps.traced },
		{ b->sys->maps.stacks, b->skel->maps.stacks },
		{ b->sys->maps.zero_stack, b->skel->maps.zero_stack },
		{ b->sys->maps.events, b->skel->maps.events },
		{ b->sys->maps.scratch, b->skel->maps.scratch },
		{ b->sys->maps.stats, b->skel->maps.stats },
	};
	int e = 0;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]) && !e; i++)
		e = bpf_map__reuse_fd(maps[i].mine, bpf_map__fd(maps[i].shared));
	b->sys->rodata->wakeup_bytes = b->skel->rodata->wakeup_bytes;
	if (!e)
		e = syscall_bpf__load(b->sys);
	if (!e)
		e = syscall_bpf__attach(b->sys);
	if (e) {
		snprintf(err, errlen, "cannot load or attach the syscall tracepoints "
			 "(raw_syscalls:sys_enter/sys_exit, tp_btf): %s", strerror(-e));
		syscall_bpf__destroy(b->sys);
		b->sys = NULL;
		return -1;
	}
	return 0;
}

int dc_bpf_attach(struct dc_bpf *b, char *err, size_t errlen)
{
	unsigned ok = 0, nsys = 0;
	/* syscall probes: a cookie per syscall number in the syscall_cookie map */
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		if (b->probes[i].layer->mechanism != DC_MECH_SYSCALL)
			continue;
		if (!b->sys && load_syscalls(b, err, errlen))
			return -1;
		__u32 nr = b->probes[i].offset;
		__u64 cookie = cookie_of(&b->probes[i], i);
		if (bpf_map__update_elem(b->sys->maps.syscall_cookie, &nr, sizeof(nr), &cookie,
					 sizeof(cookie), BPF_ANY)) {
			fprintf(stderr, "datacrumbs: warning: cannot trace syscall %s (nr %u): %s\n",
				b->probes[i].func->name, nr, strerror(errno));
			continue;
		}
		nsys++;
	}
	ok += nsys;
	if (b->multi) {
		/* probes of one library are added together: attach each run at once */
		unsigned i = b->nattached;
		while (i < b->nprobes) {
			if (b->probes[i].layer->mechanism == DC_MECH_SYSCALL) {
				i++;
				continue;
			}
			unsigned j = i + 1;
			while (j < b->nprobes && !strcmp(b->probes[j].library, b->probes[i].library) &&
			       b->probes[j].layer->mechanism != DC_MECH_SYSCALL)
				j++;
			ok += attach_multi(b, i, j);
			i = j;
		}
		b->nattached = b->nprobes;
		if (!ok && b->nprobes) {
			snprintf(err, errlen, "no probe could be attached (see the warnings above)");
			return -1;
		}
		return ok;
	}
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		struct dc_probe *p = &b->probes[i];
		if (p->layer->mechanism == DC_MECH_SYSCALL)
			continue;
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
	for (unsigned i = 0; i < b->nmlinks; i++)
		close(b->mlinks[i]);
	free(b->mlinks);
	syscall_bpf__destroy(b->sys);
	uprobe_bpf__destroy(b->skel);
	free(b->probes);
	free(b->links);
	free(b);
}
