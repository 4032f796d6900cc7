/* attach.c: loads bpf/uprobe.bpf.c (skeleton), attaches session uprobes (or, on kernels
 * without, uprobe/uretprobe pairs) by file offset with attach cookies, skipping the
 * offsets the kernel refuses, tracks traced tgids, and tears everything down. */
#include "attach.h"
#include "util.h"
#include "mpi.h"

#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "aio.h"
#include "aio.skel.h"
#include "corebtf.h"
#include "dc_features.h"
#include "elfsym.h"
#include "kernel.skel.h"
#include "kmech.h"
#include "pinfile.h"
#include "retsite.h"
#include "vfs.skel.h"
#include "syscall.skel.h"
#include "uprobe.skel.h"

#define DC_MAX_PROBES 65536

/* The maps every BPF object shares (bpf/common.bpf.h): one ring buffer set, one traced
 * set, one call stack per thread. dc_bpf_open makes them (own_shared) and keeps their fds
 * in b->share_fd, in this order. */
static const char *const shared_maps[] = { "traced", "traced_hint", "stacks", "rings",
					   "scratch", "stats", "aggs", "pinfo", "handles",
					   "agg_ways" };
#define DC_NSHARED (sizeof(shared_maps) / sizeof(shared_maps[0]))
#define DC_SHARE_RINGS 3 /* shared_maps[3]: the outer map, made by dc_bpf_open itself */
#define DC_SHARE_WAYS 9  /* shared_maps[9]: agg_ways, mapped by dc_bpf_open (map_ways) */

/* A small CO-RE target for one object's load (core/corebtf.h): uprobe.bpf.c, syscall.bpf.c
 * and aio.bpf.c relocate against the kernel's types they name only (their types are all
 * vmlinux's); vfs.bpf.c and kernel.bpf.c against the kernel's whole BTF, which libbpf
 * extends with the modules' BTFs, as it does not for a custom one.
 * DATACRUMBS_CORE_BTF=kernel: every object against the whole BTF (the same relocations,
 * libbpf's full searches). */
struct core_btf {
	int fd;        /* the memfd, -1: none */
	char path[32]; /* its /proc/self/fd path, the object's btf_custom_path */
};

struct dc_bpf {
	struct uprobe_bpf *skel;
	struct core_btf up_core;   /* uprobe.bpf.c's CO-RE target, from open to load */
	struct syscall_bpf *sys;   /* loaded when a syscall layer is asked for */
	struct kernel_bpf *kern;   /* loaded when a tracepoint layer is asked for */
	struct vfs_bpf *vfs;       /* loaded when a kernel-function layer is asked for */
	struct aio_bpf *aio;       /* loaded when an AIO function is asked for */
	int sys_btf;               /* syscall.bpf.c's pair loaded: 1 dc_sys_enter/exit (an fd's
				      file read through BTF, bpf_rdonly_cast), 0 the _c pair */
	struct sys_prefetch *spre; /* syscall.bpf.c loading beside uprobe.bpf.c (sys_prefetch) */
	struct up_load *upl;       /* uprobe.bpf.c loading on a thread until up_ready */
	char up_err[256];          /* why uprobe.bpf.c did not load ("": it did, or is loading) */
	struct {                   /* the rodata every object shares (bpf/common.bpf.h),
				      as dc_bpf_open set it: read by the other objects' loads
				      while uprobe.bpf.c's load remaps its own */
		__u64 wakeup_bytes, profile_ns, profile_t0;
		__u32 shard_cpus;
	} common;
	int share_fd[DC_NSHARED];  /* the shared maps, as shared_maps names them (own_shared) */
	struct dc_agg_ways *ways;  /* agg_ways mapped (profile mode; NULL: not), nways slots */
	size_t nways, ways_bytes;
	struct dc_probe *probes;
	struct bpf_link **links;   /* fallback: 2 per probe (entry, return) */
	unsigned nprobes, cap, nattached;
	int ncpus;
	unsigned nshards;          /* ring buffers (bpf/common.bpf.h rings), one per CPU group */
	unsigned shard_cpus;       /* CPUs per group: CPU c writes to shard c / shard_cpus */
	size_t shard_bytes;        /* each ring buffer's size */
	int ring_fds[DC_MAX_SHARDS];
	int session;               /* 1: session uprobes (dc_session on uprobe_multi links) */
	int multi;                 /* no session: 1 uprobe_multi links, 0 perf_event links */
	int standby;               /* profile mode on stand-by (dc_bpf_profile_standby): every
				      probe's pinfo says `record` until dc_bpf_profile_start */
	int *mlinks;               /* uprobe_multi link fds */
	unsigned nmlinks;
	struct dc_index ix;        /* (library, offset) -> the probe of that address (neither
				      a return site nor a catch point): linear attach */
	struct bpf_link *dl_links[4]; /* dc_dlstate on each dynamic loader watched */
	unsigned ndl;
	int dl_fds[4];             /* or its uprobe_multi link fds (dl_multi) */
	int dl_multi;              /* dc_dlstate is attached by uprobe_multi links */
	unsigned catchers[8];      /* the catch-point probes (one per libstdc++) */
	unsigned ncatchers;
	char catch_done[512];      /* the last library add_catcher was asked for */
};

struct addr_key {
	const char *library;
	uint64_t offset;
};

static uint64_t addr_hash(const char *library, uint64_t offset)
{
	return dc_hash_bytes(dc_hash_bytes(14695981039346656037ULL, library, strlen(library)),
			     &offset, sizeof(offset));
}

static int addr_match(size_t idx, const void *key, void *arg)
{
	const struct addr_key *k = key;
	const struct dc_bpf *b = arg;
	return b->probes[idx].offset == k->offset && !strcmp(b->probes[idx].library, k->library);
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

/* Before an object's open: a memfd for its CO-RE target, its path put in *o; or none
 * (c->fd -1, *o unchanged) when DATACRUMBS_CORE_BTF=kernel or no memfd can be made. */
static void core_btf_begin(struct core_btf *c, struct bpf_object_open_opts *o)
{
	const char *env = getenv("DATACRUMBS_CORE_BTF");
	c->fd = env && !strcmp(env, "kernel") ? -1 : dc_corebtf_open(c->path, sizeof(c->path));
	if (c->fd >= 0)
		o->btf_custom_path = c->path;
}

/* Before the object's load: its CO-RE target written from its own BTF and the kernel's
 * (dc_corebtf_fill: the whole kernel BTF when the small one cannot be made). */
static void core_btf_fill(struct core_btf *c, const struct bpf_object *obj)
{
	if (c->fd >= 0 && dc_corebtf_fill(c->fd, obj, dc_vmlinux_btf()))
		fprintf(stderr, "datacrumbs: warning: %s: no small CO-RE target (%s): relocated "
			"against the kernel's whole BTF\n", bpf_object__name(obj), strerror(errno));
}

/* After the load (libbpf has read the file), or when the object is dropped unloaded. */
static void core_btf_end(struct core_btf *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* The number of ring buffers when none is asked for: one per CPU up to 16, CPU groups
 * beyond (each ring buffer is one spinlock its CPUs share, bpf_ringbuf_reserve). */
#define DC_AUTO_SHARDS 16

static void close_rings(struct dc_bpf *b)
{
	for (unsigned i = 0; i < b->nshards; i++)
		if (b->ring_fds[i] >= 0)
			close(b->ring_fds[i]);
}

/* Points the shared maps of obj at b's (b->share_fd), before obj is loaded. Reads only
 * b->share_fd: safe on a thread while uprobe.bpf.c loads. Returns 0 or a negative errno. */
static int share_maps(struct dc_bpf *b, struct bpf_object *obj)
{
	for (size_t i = 0; i < DC_NSHARED; i++) {
		struct bpf_map *mine = bpf_object__find_map_by_name(obj, shared_maps[i]);
		int e = mine && b->share_fd[i] >= 0 ? bpf_map__reuse_fd(mine, b->share_fd[i])
						    : -ENOENT;
		if (e)
			return e;
	}
	return 0;
}

/* Makes uprobe.bpf.c's shared maps (all but `rings`, made before) from their definitions
 * in the opened skeleton, and points the skeleton at them: made here, not by its load,
 * they exist before it loads, so syscall.bpf.c can load beside it (sys_prefetch). No
 * BTF is given: the verifier needs a map's BTF only for special fields (spin locks,
 * timers, kptrs; kernel/bpf/syscall.c map_check_btf), which these have none of.
 * Returns 0 or a negative errno. */
static int own_shared(struct dc_bpf *b)
{
	for (size_t i = 0; i < DC_NSHARED; i++) {
		if (i == DC_SHARE_RINGS)
			continue;
		struct bpf_map *m = bpf_object__find_map_by_name(b->skel->obj, shared_maps[i]);
		if (!m)
			return -ENOENT;
		LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = bpf_map__map_flags(m),
			    .map_extra = bpf_map__map_extra(m));
		b->share_fd[i] = bpf_map_create(bpf_map__type(m), shared_maps[i],
						bpf_map__key_size(m), bpf_map__value_size(m),
						bpf_map__max_entries(m), &o);
		if (b->share_fd[i] < 0)
			return -errno;
		int e = bpf_map__reuse_fd(m, b->share_fd[i]);
		if (e)
			return e;
	}
	return 0;
}

/* Maps agg_ways read-write (profile mode's per-thread aggregates, which the consumer takes:
 * core/profile.c take_ways): mapped here, while the fd is ours, the mapping outlives
 * dc_bpf_consumer_only's close of it. Returns 0 or a negative errno. */
static int map_ways(struct dc_bpf *b)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	b->nways = bpf_map__max_entries(b->skel->maps.agg_ways);
	b->ways_bytes = (b->nways * sizeof(struct dc_agg_ways) + page - 1) / page * page;
	void *m = mmap(NULL, b->ways_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
		       b->share_fd[DC_SHARE_WAYS], 0);
	if (m == MAP_FAILED)
		return -errno;
	b->ways = m;
	return 0;
}

static void close_shared(struct dc_bpf *b)
{
	if (b->ways)
		munmap(b->ways, b->ways_bytes);
	b->ways = NULL;
	for (size_t i = 0; i < DC_NSHARED; i++)
		if (b->share_fd[i] >= 0)
			close(b->share_fd[i]);
}

struct sys_prefetch;
static void sys_prefetch_start(struct dc_bpf *b);
static void sys_prefetch_drop(struct dc_bpf *b);

/* 1 when syscall.bpf.c's BTF pair should load: the kernel has bpf_rdonly_cast (Linux
 * 6.2) and DATACRUMBS_NO_RDONLY_CAST (to test the other pair) is unset. */
static int sys_btf_wanted(void)
{
	return dc_kfunc_in_btf("bpf_rdonly_cast") && !getenv("DATACRUMBS_NO_RDONLY_CAST");
}

/* The ring buffers put in the outer map `rings` (bpf/common.bpf.h): one batch, the
 * kernel's RCU wait once per batch (bpf_map_do_batch); element by element where batches
 * are refused. err: 0 or a negative errno. */
struct rings_fill {
	int outer;
	const int *fds;
	unsigned n;
	int err;
};

static void *rings_fill_main(void *arg)
{
	struct rings_fill *f = arg;
	__u32 keys[DC_MAX_SHARDS];
	for (unsigned i = 0; i < f->n; i++)
		keys[i] = i;
	__u32 count = f->n;
	if (bpf_map_update_batch(f->outer, keys, f->fds, &count, NULL))
		for (unsigned i = 0; !f->err && i < f->n; i++)
			if (bpf_map_update_elem(f->outer, &i, &f->fds[i], BPF_ANY))
				f->err = -errno;
	return NULL;
}

/* uprobe.bpf.c's load, on a thread from dc_bpf_open to up_ready: its verification (dc_session
 * ~50 ms, dc_exec, dc_exit: ~70 ms here, more in profile mode) runs while the script's
 * requests are resolved and the other objects load (syscall.bpf.c from dc_bpf_open on,
 * aio.bpf.c from dc_bpf_attach on), on the other CPU. Beside it, rings_fill_main fills
 * the outer map (its RCU wait overlaps the verifier too). The thread owns b->skel's
 * programs, links and rodata until up_ready joins it; other threads meanwhile use only
 * the shared maps, made before it starts (own_shared), and b->common. */
struct up_load {
	pthread_t thread, filler;
	int filling;            /* the filler thread runs */
	struct rings_fill fill;
	struct dc_bpf *b;
	int e;                  /* 0, or the load's negative errno */
	int attach_e;           /* 0, or the sched tracepoints' attach's negative errno */
};

static void *up_load_main(void *arg)
{
	struct up_load *u = arg;
	core_btf_fill(&u->b->up_core, u->b->skel->obj);
	u->e = uprobe_bpf__load(u->b->skel);
	core_btf_end(&u->b->up_core);
	if (!u->e) /* the tp_btf programs; uprobes are attached by hand */
		u->attach_e = uprobe_bpf__attach(u->b->skel);
	return NULL;
}

/* Starts the fill of `outer` and uprobe.bpf.c's load, each on a thread (on the calling
 * one when a thread cannot start). 0, or a negative errno when neither could run. */
static int up_load_start(struct dc_bpf *b, int outer)
{
	struct up_load *u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->b = b;
	u->fill = (struct rings_fill){ outer, b->ring_fds, b->nshards, 0 };
	u->filling = !dc_thread_start(&u->filler, rings_fill_main, &u->fill);
	if (!u->filling)
		rings_fill_main(&u->fill);
	int threaded = !dc_thread_start(&u->thread, up_load_main, u);
	b->upl = u;
	if (!threaded) {
		up_load_main(u);
		u->thread = pthread_self(); /* up_ready: nothing to join */
	}
	sys_prefetch_start(b); /* after: it may wait for the kernel's BTF (sys_btf_wanted) */
	return 0;
}

/* Waits for uprobe.bpf.c's load (up_load_start): 0 when it loaded and its sched
 * tracepoints are attached, else -1 with err (every later call says the same). Called
 * first by every function that uses b->skel's programs, links, or maps other than the
 * shared ones. */
static int up_ready(struct dc_bpf *b, char *err, size_t errlen)
{
	struct up_load *u = b->upl;
	if (u) {
		b->upl = NULL;
		if (!pthread_equal(u->thread, pthread_self()))
			pthread_join(u->thread, NULL);
		if (u->filling)
			pthread_join(u->filler, NULL);
		int e = u->e ? u->e : u->fill.err;
		if (e)
			snprintf(b->up_err, sizeof(b->up_err), "cannot load the BPF programs: %s%s",
				 strerror(-e), e == -EPERM ? " (needs root, or CAP_BPF and "
				 "CAP_PERFMON)" : "");
		else if (u->attach_e)
			snprintf(b->up_err, sizeof(b->up_err), "cannot attach the sched "
				 "tracepoints: %s", strerror(-u->attach_e));
		free(u);
	}
	if (b->up_err[0] && err && errlen)
		snprintf(err, errlen, "%s", b->up_err);
	return b->up_err[0] ? -1 : 0;
}

int dc_bpf_ready(struct dc_bpf *b, char *err, size_t errlen)
{
	return up_ready(b, err, errlen);
}

/* Picks the user-space probes' programs before uprobe.bpf.c loads: the session uprobe
 * where the kernel has them (dc_feature_uprobe_session's check, begun on a thread by
 * dc_feature_uprobe_prefetch: taken as late as this, so that its links' waits pass while
 * dc_bpf_open makes the maps), else the uprobe/uretprobe pair, as uprobe_multi links
 * where the kernel has those. */
static void choose_uprobe_progs(struct dc_bpf *b)
{
	b->session = dc_feature_uprobe_session(NULL, 0);
	if (b->session) {
		bpf_program__set_expected_attach_type(b->skel->progs.dc_session,
						      DC_BPF_TRACE_UPROBE_SESSION);
		bpf_program__set_autoload(b->skel->progs.dc_entry, false);
		bpf_program__set_autoload(b->skel->progs.dc_return, false);
	} else {
		bpf_program__set_autoload(b->skel->progs.dc_session, false);
	}
	/* without session uprobes a return hijack would be a uretprobe in every process:
	 * returns are then seen at return instructions, as for C++ (core/retsite.h) */
	dc_retsite_allow_hijack(b->session);
	b->multi = !b->session && dc_feature_uprobe_multi(NULL, 0);
	if (b->multi) {
		bpf_program__set_expected_attach_type(b->skel->progs.dc_entry,
						      DC_BPF_TRACE_UPROBE_MULTI);
		bpf_program__set_expected_attach_type(b->skel->progs.dc_return,
						      DC_BPF_TRACE_UPROBE_MULTI);
	}
	/* the loader watch (dc_bpf_watch_loader): a uprobe_multi link where the kernel has
	 * them, which CAP_BPF + CAP_PERFMON may create (a perf-event uprobe may not) */
	b->dl_multi = b->session || b->multi || dc_feature_uprobe_multi(NULL, 0);
	if (b->dl_multi)
		bpf_program__set_expected_attach_type(b->skel->progs.dc_dlstate,
						      DC_BPF_TRACE_UPROBE_MULTI);
}

struct dc_bpf *dc_bpf_open(size_t ringbuf_bytes, unsigned nshards, uint64_t profile_ns,
			   uint64_t profile_t0, int untrace_secureexec, char *err, size_t errlen)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
		snprintf(err, errlen, "this kernel has no BTF (/sys/kernel/btf/vmlinux missing): "
			 "datacrumbs needs CONFIG_DEBUG_INFO_BTF=y");
		return NULL;
	}
	libbpf_set_print(libbpf_print);
	/* the kernel's BTF: a run's session began its parse beside the script, else it
	 * begins here, beside the maps' creation (the loads wait for it, kbtf.c) */
	dc_vmlinux_btf_prefetch();
	struct dc_bpf *b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(err, errlen, "out of memory");
		dc_vmlinux_btf_release();
		return NULL;
	}
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus < 1)
		b->ncpus = 1;
	for (int i = 0; i < DC_MAX_SHARDS; i++)
		b->ring_fds[i] = -1;
	for (size_t i = 0; i < DC_NSHARED; i++)
		b->share_fd[i] = -1;
	/* CPU groups of equal size covering every possible CPU, then as many ring buffers as
	 * that takes, each a power of two of the total (at least 4 pages) */
	if (!nshards)
		nshards = b->ncpus < DC_AUTO_SHARDS ? (unsigned)b->ncpus : DC_AUTO_SHARDS;
	if (nshards > DC_MAX_SHARDS)
		nshards = DC_MAX_SHARDS;
	if (nshards > (unsigned)b->ncpus)
		nshards = b->ncpus;
	b->shard_cpus = (b->ncpus + nshards - 1) / nshards;
	b->nshards = (b->ncpus + b->shard_cpus - 1) / b->shard_cpus;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	b->shard_bytes = page * 4;
	while (b->shard_bytes * 2 * b->nshards <= ringbuf_bytes)
		b->shard_bytes *= 2;
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	core_btf_begin(&b->up_core, &oo);
	b->skel = uprobe_bpf__open_opts(&oo);
	if (!b->skel) {
		snprintf(err, errlen, "cannot open the BPF object: %s", strerror(errno));
		core_btf_end(&b->up_core);
		free(b);
		dc_vmlinux_btf_release();
		return NULL;
	}
	b->skel->rodata->wakeup_bytes = b->shard_bytes / 8;
	b->skel->rodata->shard_cpus = b->shard_cpus;
	b->skel->rodata->profile_ns = profile_ns;
	b->skel->rodata->profile_t0 = profile_t0;
	b->skel->rodata->untrace_secureexec = untrace_secureexec ? 1 : 0;
	b->common.wakeup_bytes = b->skel->rodata->wakeup_bytes;
	b->common.shard_cpus = b->skel->rodata->shard_cpus;
	b->common.profile_ns = profile_ns;
	b->common.profile_t0 = profile_t0;
	/* the ring buffers first: the first is the outer map's inner-map template (its
	 * size is part of the type the verifier checks, kernel/bpf/map_in_map.c) */
	int e = 0;
	for (unsigned i = 0; !e && i < b->nshards; i++) {
		b->ring_fds[i] = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "dc_ring", 0, 0,
						b->shard_bytes, NULL);
		if (b->ring_fds[i] < 0)
			e = -errno;
	}
	/* the outer map made here and filled by a thread while the programs load: the
	 * kernel waits for an RCU grace period after an update of a map-in-map from user
	 * space (kernel/bpf/syscall.c maybe_wait_bpf_programs), 12-13 ms here (strace -T),
	 * which so overlaps the verifier instead of adding to start-up */
	int outer = -1;
	if (!e) {
		LIBBPF_OPTS(bpf_map_create_opts, mo, .inner_map_fd = b->ring_fds[0]);
		outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "rings", sizeof(__u32),
				       sizeof(__u32), DC_MAX_SHARDS, &mo);
		e = outer < 0 ? -errno : bpf_map__reuse_fd(b->skel->maps.rings, outer);
		b->share_fd[DC_SHARE_RINGS] = outer;
	}
	/* profile mode's per-thread aggregates: a slot per `stacks` slot, else one (unused) */
	if (!e)
		e = bpf_map__set_max_entries(b->skel->maps.agg_ways,
					     profile_ns ? DC_STACK_SLOTS : 1);
	if (!e)
		e = own_shared(b);
	if (!e && profile_ns)
		e = map_ways(b);
	if (!e) {
		choose_uprobe_progs(b);
		e = up_load_start(b, outer);
	}
	if (e) {
		snprintf(err, errlen, "cannot load the BPF programs: %s%s", strerror(-e),
			 e == -EPERM ? " (needs root, or CAP_BPF and CAP_PERFMON)" : "");
		close_shared(b);
		uprobe_bpf__destroy(b->skel);
		core_btf_end(&b->up_core);
		close_rings(b);
		free(b);
		dc_vmlinux_btf_release();
		return NULL;
	}
	return b;
}

int dc_bpf_traced(struct dc_bpf *b, int except, int *pids, int max)
{
	int fd = bpf_map__fd(b->skel->maps.traced), n = 0;
	__u32 key, next, *prev = NULL;
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		if ((int)next != except) {
			if (n < max)
				pids[n] = (int)next;
			n++;
		}
		key = next;
		prev = &key;
	}
	return errno == ENOENT ? n : -1;
}

int dc_bpf_untrace_pid(struct dc_bpf *b, int tgid)
{
	__u32 key = tgid;
	return bpf_map__delete_elem(b->skel->maps.traced, &key, sizeof(key), 0);
}

int dc_bpf_trace_pid(struct dc_bpf *b, int tgid)
{
	struct dc_proc p = { .next_id = 1 };
	__u32 key = tgid, slot = (__u32)tgid % DC_TRACED_SLOTS, one = 1;
	/* the hint first (bpf/datacrumbs.h DC_TRACED_SLOTS): BPF skips a tgid whose slot is 0;
	 * a whole-value write of 1, as BPF's, so no update of either is lost */
	int e = bpf_map__update_elem(b->skel->maps.traced_hint, &slot, sizeof(slot), &one,
				     sizeof(one), BPF_ANY);
	if (e)
		return e;
	return bpf_map__update_elem(b->skel->maps.traced, &key, sizeof(key), &p, sizeof(p), BPF_ANY);
}

/* src into dst (size bytes, size > 0), cut to fit and NUL-terminated: snprintf's "%s"
 * without its format parsing, which was a tenth of a warm 35,000-function start. */
static void copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

/* Appends a probe to the table (room checked by the caller). Returns its index. */
static int new_probe(struct dc_bpf *b, const struct dc_layer *layer, const struct dc_func *func,
		     const char *library, uint64_t offset, int hidden)
{
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
	memset(p, 0, sizeof(*p));
	p->layer = layer;
	p->func = func;
	copy_str(p->library, sizeof(p->library), library);
	p->offset = offset;
	p->at = offset;
	p->hidden = hidden;
	p->mech = strcmp(library, "[syscall]") ? layer->mechanism : DC_MECH_SYSCALL;
	p->mpi = DC_MPI_NONE;
	p->returns = func->noret ? DC_RETURNS_NONE : DC_RETURNS_HIJACK;
	for (int i = 0; i < func->nargs; i++)
		if (func->args[i].kind == DC_ARG_DATATYPE || func->args[i].kind == DC_ARG_STATUS) {
			struct dc_mpi_abi abi;
			p->mpi = dc_mpi_abi(library, &abi);
		}
	return b->nprobes++;
}

/* The catch point of the C++ runtime that `library` (a C++ program or library) uses:
 * a hidden entry probe on __cxa_begin_catch of the libstdc++ it loads (or is), added
 * once per libstdc++, so that a call an exception left is written unwound when the
 * exception is caught, not only at the thread's next probe hit. Nothing when there is
 * no libstdc++ (a warning-free no-op: the next hit still finds the call). */
static void add_catcher(struct dc_bpf *b, const struct dc_layer *layer, const char *library)
{
	static const struct dc_func catch_func = { .name = "__cxa_begin_catch", .noret = 1 };
	char lib[512], err[256];
	if (!strcmp(b->catch_done, library)) /* called for each of a file's functions */
		return;
	snprintf(b->catch_done, sizeof(b->catch_done), "%s", library);
	const char *base = strrchr(library, '/');
	base = base ? base + 1 : library;
	if (!strncmp(base, "libstdc++.so", 12))
		snprintf(lib, sizeof(lib), "%s", library);
	else if (dc_elf_find_library(library, "libstdc++.so", lib, sizeof(lib), err,
				     sizeof(err)))
		return;
	for (unsigned i = 0; i < b->nprobes; i++)
		if (b->probes[i].catcher && !strcmp(b->probes[i].library, lib))
			return;
	struct dc_elf_syms *syms = dc_elf_syms_open(lib, err, sizeof(err));
	uint64_t off = syms ? dc_elf_sym_offset(syms, catch_func.name) : 0;
	dc_elf_syms_close(syms);
	if (!off || b->nprobes + 1 > DC_MAX_PROBES)
		return;
	/* a script's own probe on __cxa_begin_catch pushes a frame at the rsp the catch
	 * point sees, which would take it for a dead one: then there is no catch point */
	for (unsigned i = 0; i < b->nprobes; i++)
		if (!b->probes[i].site_of && b->probes[i].offset == off &&
		    !strcmp(b->probes[i].library, lib))
			return;
	if (b->ncatchers == sizeof(b->catchers) / sizeof(b->catchers[0]))
		return;
	int c = new_probe(b, layer, &catch_func, lib, off, 1);
	if (c >= 0) {
		b->probes[c].catcher = 1;
		b->catchers[b->ncatchers++] = c;
	}
}

int dc_bpf_add_probe(struct dc_bpf *b, const struct dc_layer *layer,
		     const struct dc_func *func, const char *library, uint64_t offset,
		     int hidden)
{
	for (unsigned k = 0; k < b->ncatchers; k++) {
		struct dc_probe *p = &b->probes[b->catchers[k]];
		if (p->catcher == 1 && p->offset == offset && !strcmp(p->library, library))
			p->catcher = 2; /* a probe of the script's own at the catch point */
	}
	struct addr_key key = { library, offset };
	uint64_t h = addr_hash(library, offset);
	long found = dc_index_find(&b->ix, h, addr_match, &key, b);
	if (found >= 0) {
		unsigned i = found;
		struct dc_probe *p = &b->probes[i];
		if ((p->hidden && !hidden) || (p->func->noret && !func->noret && !hidden)) {
			/* asked for after all: it names the events; or an alias whose return
			 * is safe to probe (an exported name of a local label's address) */
			if (p->func->noret && !func->noret && p->returns == DC_RETURNS_NONE &&
			    !p->fellback && (b->session || func->returns == DC_RETURNS_HIJACK))
				p->returns = DC_RETURNS_HIJACK;
			p->hidden = 0;
			p->func = func;
			p->layer = layer;
		}
		return i;
	}
	struct dc_retplan plan = { .mode = func->noret ? DC_RETURNS_NONE : DC_RETURNS_HIJACK,
				   .entry = offset };
	if (layer->mechanism == DC_MECH_UPROBE && strcmp(library, "[syscall]"))
		dc_retsite_plan(library, func->symbol[0] ? func->symbol : func->name, offset,
				func->returns, func->noret, layer->custom, &plan);
	if (b->nprobes + plan.nsites + 1 > DC_MAX_PROBES)
		return -1;
	/* the return sites first: attached before the entry, so no call that enters is
	 * left without them */
	unsigned owner = b->nprobes + plan.nsites;
	int tails = 0; /* some site is shared: the function tail-calls */
	for (unsigned k = 0; k < plan.nsites; k++) {
		uint64_t at = plan.sites[k] & ~DC_RETSITE_SHARED;
		int s = new_probe(b, layer, func, library, at, hidden);
		if (s < 0)
			return -1;
		b->probes[s].site_of = owner + 1;
		b->probes[s].at = at;
		b->probes[s].shared = !!(plan.sites[k] & DC_RETSITE_SHARED);
		tails |= b->probes[s].shared;
		b->probes[s].returns = DC_RETURNS_INSN;
		b->probes[s].go = plan.go;
	}
	int i = new_probe(b, layer, func, library, offset, hidden);
	if (i < 0 || dc_index_add(&b->ix, h, i))
		return -1;
	if (plan.mode == DC_RETURNS_HIJACK && !b->session && !func->noret &&
	    layer->mechanism == DC_MECH_UPROBE && strcmp(library, "[syscall]"))
		fprintf(stderr, "datacrumbs: warning: %s: returns = \"hijack\" on a kernel "
			"without session uprobes is a uretprobe: it rewrites the return address "
			"of every call in EVERY process on the node, traced or not (leave returns "
			"to auto to see them at its return instructions)\n", func->name);
	struct dc_probe *p = &b->probes[i];
	p->returns = plan.mode;
	p->fellback = plan.mode == DC_RETURNS_NONE && !func->noret &&
		      func->returns != DC_RETURNS_NONE;
	p->go = plan.go;
	p->tails = tails;
	p->at = plan.entry;
	copy_str(p->why, sizeof(p->why), plan.why);
	if (plan.mode == DC_RETURNS_INSN && !plan.go)
		add_catcher(b, layer, library);
	return i;
}

/* Is probe p entry-only (no return is seen: dc_noret_name, returns none, or return
 * instructions that cannot be used)? */
static int entry_only(const struct dc_probe *p)
{
	return p->func->noret || p->returns == DC_RETURNS_NONE;
}

/* Does probe p need a return probe of the kernel's (a session return or uretprobe)? */
static int hijacks(const struct dc_probe *p)
{
	return !p->site_of && !entry_only(p) && p->returns != DC_RETURNS_INSN;
}

/* One warning per library for its functions whose return instructions cannot be used
 * (entry-only instead): the first three with their reasons, and how many. */
static void fallback_report(struct dc_bpf *b, unsigned from, unsigned to)
{
	char list[400];
	size_t k = 0;
	unsigned n = 0;
	for (unsigned i = from; i < to; i++) {
		const struct dc_probe *p = &b->probes[i];
		if (!p->fellback || p->hidden)
			continue;
		if (n++ < 3 && k < sizeof(list))
			k += snprintf(list + k, sizeof(list) - k, "%s%s (%s)", n > 1 ? ", " : "",
				      p->func->name, p->why);
	}
	if (n)
		fprintf(stderr, "datacrumbs: warning: %s: %u function%s cannot be probed at "
			"%s return instructions, so %s entry-only (events with dur 0, no ret): "
			"%s%s\n", b->probes[from].library, n, n > 1 ? "s" : "",
			n > 1 ? "their" : "its", n > 1 ? "they are" : "it is", list,
			n > 3 ? ", ..." : "");
}

/* The attach cookie of probe idx: its index and which arguments need reading in BPF
 * (bpf/datacrumbs.h). A FILE *'s fd is glibc's struct _IO_FILE._fileno (<stdio.h>). */
static uint64_t cookie_of(const struct dc_probe *p, unsigned idx)
{
	unsigned path = 0, iov = 0, iovcnt = 0;
	uint64_t more = 0;
	struct dc_mpi_abi abi = { DC_MPI_NONE, 0, -1 };
	if (p->mpi)
		dc_mpi_abi(p->library, &abi);
	for (int i = 0; i < p->func->nargs; i++) {
		switch (p->func->args[i].kind) {
		case DC_ARG_FILE:
			more |= DC_COOKIE_AUX(i + 1, 0, 0, offsetof(FILE, _fileno)) | DC_COOKIE_FILE;
			break;
		case DC_ARG_HANDLE_IN:
			more |= DC_COOKIE_AUX(i + 1, 1, 0, 0);
			break;
		case DC_ARG_HANDLE_OUT:
		case DC_ARG_LONG_OUT:
			more |= DC_COOKIE_AUX(i + 1, 1, 1, 0);
			break;
		case DC_ARG_STATUS:
			if (abi.flavor)
				more |= DC_COOKIE_AUX(i + 1, 1, 1, abi.status_off);
			break;
		case DC_ARG_STR:
			more |= DC_COOKIE_STR(i + 1);
			break;
		case DC_ARG_DATATYPE:
			if (abi.flavor == DC_MPI_OPENMPI && abi.dtype_off >= 0)
				more |= DC_COOKIE_DEREF(i + 1, abi.dtype_off);
			break;
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
	if (p->func->effect == DC_FX_FOPEN) /* the fd inside the FILE * it returns */
		more = (more & ~DC_COOKIE_AUX(0xf, 1, 1, 0xff)) |
		       DC_COOKIE_AUX(DC_AUX_RET, 0, 0, offsetof(FILE, _fileno)) | DC_COOKIE_FILE;
	if (entry_only(p))
		more |= DC_COOKIE_NORET;
	if (p->returns == DC_RETURNS_INSN && !entry_only(p)) /* a return site: its owner's */
		more |= DC_COOKIE_INSN | (p->site_of ? DC_COOKIE_RETSITE : 0);
	if (p->shared) /* a tail-called function's return site (bpf/datacrumbs.h) */
		more &= ~DC_COOKIE_INSN;
	if (p->site_of)
		idx = p->site_of - 1;
	if (p->catcher)
		more |= DC_COOKIE_CATCH;
	return DC_COOKIE(idx, path, iov, iovcnt) | more |
	       (p->func->effect == DC_FX_OPEN || p->func->effect == DC_FX_FOPEN ?
		DC_COOKIE_OPENS : 0);
}

/* The functions of one library the kernel refused, for one warning: the first few
 * names, how many, and why (the errno of the first). */
struct skips {
	const char *names[5];
	unsigned n;
	int err;
};

static void skip_add(struct skips *sk, const char *name, int err)
{
	if (sk->n < 5)
		sk->names[sk->n] = name;
	if (!sk->n)
		sk->err = err;
	sk->n++;
}

/* Prints the one warning for the functions of lib that could not be probed. */
static void skip_report(const struct skips *sk, const char *lib, unsigned of)
{
	if (!sk->n)
		return;
	char names[400];
	size_t k = 0;
	for (unsigned i = 0; i < sk->n && i < 5 && k < sizeof(names); i++)
		k += snprintf(names + k, sizeof(names) - k, "%s%s", i ? ", " : "", sk->names[i]);
	const char *why = sk->err == 524 ?
		"ENOTSUPP (524): uprobes cannot step over their first instruction, e.g. a lock "
		"prefix or some AVX2/AVX-512 encodings (arch/x86/kernel/uprobes.c)" :
		sk->err == EINVAL ? "EINVAL: offset refused (not an instruction start?)" :
		strerror(sk->err);
	fprintf(stderr, "datacrumbs: warning: %s: %u of %u functions cannot be probed and are "
		"skipped (%s): %s%s\n", lib, sk->n, of, why, names, sk->n > 5 ? ", ..." : "");
}

/* Does the function at file offset off of lib start with an EVEX-encoded (AVX-512)
 * instruction (first byte 0x62: in 64-bit mode always the EVEX prefix, Intel SDM vol. 2,
 * 2.7)? The kernel accepts a uprobe there, but here (kernel 6.18) its out-of-line step
 * lost the result: a uprobe on glibc's __memset_avx512_unaligned_erms, whose first
 * instruction is `vpbroadcastb %esi,%zmm16`, made memset write zeros in every process
 * (printf's padding came out as NULs). fd: lib opened (through dc_pin) by the caller, or
 * -1. Returns 1 if so, 0 if not or unreadable. */
static int evex_first(int fd, uint64_t off)
{
	unsigned char c = 0;
	return fd >= 0 && pread(fd, &c, 1, (off_t)off) == 1 && c == 0x62;
}

/* lib opened for reading through dc_pin (site mode: its pinned file), or -1. */
static int open_pinned(const char *lib)
{
	char pinned[64];
	const char *p = dc_pin(lib, pinned, sizeof(pinned));
	return p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
}

/* Reports, and marks unattachable, the probes of [from, to) whose first instruction is
 * EVEX (evex_first): one warning for the library. Returns how many. */
static unsigned skip_evex(struct dc_bpf *b, unsigned from, unsigned to, unsigned char *bad)
{
	const char *names[5];
	unsigned n = 0, nfuncs = 0;
	const char *open_lib = NULL; /* each library opened once, not once per probe */
	int fd = -1;
	for (unsigned i = from; i < to; i++) {
		if (!open_lib || strcmp(open_lib, b->probes[i].library)) {
			if (fd >= 0)
				close(fd);
			open_lib = b->probes[i].library;
			fd = open_pinned(open_lib);
		}
		/* a return site is a near `ret` core/retsite.c decoded (0xc3 or 0xc2, after a
		 * rep or bnd prefix at most): never EVEX, no read */
		bad[i - from] = !b->probes[i].site_of && evex_first(fd, b->probes[i].at);
		nfuncs += !b->probes[i].site_of && !b->probes[i].catcher;
		if (bad[i - from] && n < 5)
			names[n] = b->probes[i].func->name;
		n += bad[i - from];
	}
	if (fd >= 0)
		close(fd);
	if (n) {
		char list[400];
		size_t k = 0;
		for (unsigned i = 0; i < n && i < 5 && k < sizeof(list); i++)
			k += snprintf(list + k, sizeof(list) - k, "%s%s", i ? ", " : "", names[i]);
		fprintf(stderr, "datacrumbs: warning: %s: %u of %u functions start with an "
			"AVX-512 (EVEX) instruction and are skipped (a uprobe there corrupts the "
			"instruction's result in every process): %s%s\n", b->probes[from].library,
			n, nfuncs, list, n > 5 ? ", ..." : "");
	}
	return n;
}

/* Errors of a uprobe_multi link that one bad offset among good ones can cause: the group
 * is split to find it. Others (EPERM, ENOENT, ENOMEM, EBADF) refuse every offset. */
static int per_offset_error(int e)
{
	return e == 524 || e == EINVAL || e == EOPNOTSUPP || e == EFAULT || e == EEXIST ||
	       e == EBUSY || e == E2BIG;
}

enum { LK_SESSION, LK_ENTRY, LK_RETURN };

/* Links the probes idx[0..n) of library lib with one link of kind (session, uprobe_multi
 * entries or returns); when the kernel refuses the link for an error one offset can
 * cause, splits the set in halves until each refused offset is alone: those are added to
 * sk and, in ok[] (indexed by position in the whole group, base), marked 0. Returns the
 * number of probes linked. */
static unsigned link_split(struct dc_bpf *b, int kind, const char *lib, const unsigned *idx,
			   unsigned n, unsigned char *ok, struct skips *sk)
{
	if (!n)
		return 0;
	__u64 *offs = calloc(n, sizeof(__u64)), *cookies = calloc(n, sizeof(__u64));
	int *ml = realloc(b->mlinks, (b->nmlinks + 1) * sizeof(int));
	if (ml)
		b->mlinks = ml;
	if (!offs || !cookies || !ml) {
		free(offs);
		free(cookies);
		for (unsigned i = 0; i < n; i++) {
			skip_add(sk, b->probes[idx[i]].func->name, ENOMEM);
			ok[i] = 0;
		}
		return 0;
	}
	for (unsigned i = 0; i < n; i++) {
		offs[i] = b->probes[idx[i]].at;
		cookies[i] = cookie_of(&b->probes[idx[i]], idx[i]);
	}
	/* site mode: the very file the offsets were read from (core/pinfile.h) */
	char pinned[64];
	const char *path = dc_pin(lib, pinned, sizeof(pinned));
	int fd = !path ? -1 : kind == LK_SESSION ?
		 dc_link_uprobe_session(bpf_program__fd(b->skel->progs.dc_session), path, offs,
					cookies, n, 0) :
		 dc_link_uprobe_multi(bpf_program__fd(kind == LK_RETURN ? b->skel->progs.dc_return
							: b->skel->progs.dc_entry),
				      path, offs, cookies, n, kind == LK_RETURN, 0);
	int e = errno;
	free(offs);
	free(cookies);
	if (fd >= 0) {
		b->mlinks[b->nmlinks++] = fd;
		return n;
	}
	if (n == 1 || !per_offset_error(e)) {
		for (unsigned i = 0; i < n; i++) {
			skip_add(sk, b->probes[idx[i]].func->name, e);
			ok[i] = 0;
		}
		return 0;
	}
	unsigned h = n / 2;
	return link_split(b, kind, lib, idx, h, ok, sk) +
	       link_split(b, kind, lib, idx + h, n - h, ok + h, sk);
}

/* Probes per link: as many as the kernel takes in one (kernel/trace/bpf_trace.c
 * MAX_UPROBE_MULTI_CNT, 1 << 20; more is E2BIG, which link_split would halve), so one
 * library is one link. Detaching costs one SRCU grace period per link (30-100 ms here,
 * bpf_uprobe_multi_link_release -> uprobe_unregister_sync), whatever its size (links of 64
 * took 28 s to detach 34,000 uprobes), and links closed in parallel (close_links) contend
 * for the kernel's dup_mmap_sem once per uprobe (register_for_each_vma,
 * percpu_down_write; perf: the closing threads asleep in percpu_rwsem_wait): libLLVM's
 * first 35,000 functions took 370-1470 ms to detach in 16 links of 4096 uprobes, 84-133
 * ms in one link. A refused offset costs re-trying halves of its group, each level
 * re-linking the whole group: ~16 x 62,000 registrations for libLLVM instead of 12 x 4096
 * (the price of the rare refusal, for a detach that is fast every time). */
#define DC_LINK_GROUP (1u << 20)

/* Links probes idx[0..n) in groups of DC_LINK_GROUP with link_split. */
static unsigned link_groups(struct dc_bpf *b, int kind, const char *lib, const unsigned *idx,
			    unsigned n, unsigned char *ok, struct skips *sk)
{
	unsigned done = 0;
	for (unsigned i = 0; i < n; i += DC_LINK_GROUP)
		done += link_split(b, kind, lib, idx + i, n - i < DC_LINK_GROUP ? n - i :
				   DC_LINK_GROUP, ok + i, sk);
	return done;
}

/* Attaches probes [from, to), all in one library, with uprobe_multi links: session links,
 * or (no session uprobes) return links then entry links (returns first: a call that
 * starts between the two attaches then only shows a return without entry, counted
 * unpaired, never an entry whose return is missed, which would stay on the thread's
 * stack with -p). Entry-only probes get no return link. Offsets the kernel refuses are
 * skipped with one warning. Returns the number of functions attached. */
static unsigned attach_multi(struct dc_bpf *b, unsigned from, unsigned to)
{
	unsigned cnt = to - from, n = 0;
	const char *lib = b->probes[from].library;
	unsigned *idx = calloc(cnt, sizeof(*idx));
	unsigned char *ok = calloc(cnt, 1), *rok = calloc(cnt, 1), *evex = calloc(cnt, 1);
	struct skips sk = { .n = 0 };
	if (!idx || !ok || !rok || !evex) {
		fprintf(stderr, "datacrumbs: warning: out of memory attaching to %s\n", lib);
		goto out;
	}
	skip_evex(b, from, to, evex);
	unsigned c = 0;
	for (unsigned i = 0; i < cnt; i++) {
		if (evex[i] || b->probes[from + i].catcher == 2)
			continue;
		idx[c] = from + i;
		ok[c++] = 1;
	}
	fallback_report(b, from, to);
	if (b->session) {
		n = link_groups(b, LK_SESSION, lib, idx, c, ok, &sk);
	} else {
		/* the returns of the probes that have one, then the entries of those linked */
		unsigned m = 0;
		for (unsigned i = 0; i < cnt; i++)
			if (!evex[i] && hijacks(&b->probes[from + i]) &&
			    b->probes[from + i].catcher != 2)
				idx[m++] = from + i;
		memset(rok, 1, cnt);
		link_groups(b, LK_RETURN, lib, idx, m, rok, &sk);
		unsigned k = 0;
		for (unsigned i = 0, j = 0; i < cnt; i++) {
			if (evex[i] || b->probes[from + i].catcher == 2)
				continue;
			int has_ret = hijacks(&b->probes[from + i]);
			int linked = !has_ret || rok[j];
			j += has_ret;
			if (linked)
				idx[k++] = from + i;
		}
		n = link_groups(b, LK_ENTRY, lib, idx, k, ok, &sk);
		c = k;
	}
	for (unsigned q = 0; q < c; q++) /* functions count, not return sites, catch points */
		n -= ok[q] && (b->probes[idx[q]].site_of || b->probes[idx[q]].catcher);
	skip_report(&sk, lib, cnt);
out:
	free(idx);
	free(ok);
	free(rok);
	free(evex);
	return n;
}

/* The built-in tracepoint probes of bpf/kernel.bpf.c (datacrumbs.h DC_TRACEPOINTS), by
 * the name a probe description gives them (mechanism: tracepoint), and the programs that
 * serve each. A probe's offset is its index here. */
static const struct {
	const char *name, *progs;
} tracepoints[DC_TP_NR] = {
#define DC_TP_ROW_(id, name, progs) [DC_TP_##id] = { name, progs },
	DC_TRACEPOINTS(DC_TP_ROW_)
#undef DC_TP_ROW_
};

int dc_bpf_tracepoint(const char *name)
{
	for (unsigned i = 0; i < DC_TP_NR; i++)
		if (!strcmp(tracepoints[i].name, name))
			return i;
	int k = dc_aio_index(name); /* the AIO layer's, served by bpf/aio.bpf.c */
	return k < 0 ? -1 : DC_AIO_PROBE_BASE + k;
}

/* Is probe p one of the AIO layer's (bpf/aio.bpf.c), not of bpf/kernel.bpf.c? */
static int is_aio(const struct dc_probe *p)
{
	return p->mech == DC_MECH_TRACEPOINT && p->offset >= DC_AIO_PROBE_BASE;
}

/* The kernel functions bpf/vfs.bpf.c has programs for, in its enum order; a probe's offset
 * is its index here, its library "[fentry]" or "[kprobe]" (the mechanism chosen). */
static const char *const vfs_funcs[DC_VFS_NR] = {
#define DC_VFS_NAME_(id, fn) [DC_VFS_##id] = #fn,
	DC_VFS_FUNCS(DC_VFS_NAME_)
#undef DC_VFS_NAME_
};
#define NVFS DC_VFS_NR

int dc_bpf_kfunc(const char *name)
{
	for (unsigned i = 0; i < NVFS; i++)
		if (!strcmp(vfs_funcs[i], name))
			return i;
	return -1;
}

/* Enables the entry and return programs of vfs function idx for mechanism m. */
static int vfs_enable(struct vfs_bpf *v, unsigned idx, int kprobe)
{
	const char *kinds[2][2] = { { "fe", "fx" }, { "kp", "kr" } };
	for (int k = 0; k < 2; k++) {
		char name[64];
		snprintf(name, sizeof(name), "dc_%s_%s", kinds[kprobe][k], vfs_funcs[idx]);
		struct bpf_program *p = bpf_object__find_program_by_name(v->obj, name);
		if (!p)
			return -1;
		bpf_program__set_autoload(p, true);
	}
	return 0;
}

/* Picks kernel.bpf.c's programs of the asked tracepoint probes (datacrumbs.h
 * DC_TRACEPOINTS) and puts their attach cookies in its rodata. */
static void choose_kernel(struct dc_bpf *b, void *skel)
{
	struct kernel_bpf *k = skel;
	struct bpf_program *prog;
	for (unsigned i = 0; i < b->nprobes; i++) {
		const struct dc_probe *p = &b->probes[i];
		if (p->mech != DC_MECH_TRACEPOINT || p->offset >= DC_TP_NR)
			continue;
		const char *progs = tracepoints[p->offset].progs;
		size_t n = strlen(progs);
		k->rodata->tp_cookie[p->offset] = cookie_of(p, i);
		bpf_object__for_each_program(prog, k->obj) {
			const char *name = bpf_program__name(prog);
			if (progs[n - 1] == '_' ? !strncmp(name, progs, n) : !strcmp(name, progs))
				bpf_program__set_autoload(prog, true);
		}
	}
}

/* Picks vfs.bpf.c's fentry/fexit or kprobe/kretprobe pair of each asked function (the
 * mechanism its probe chose) and puts their attach cookies in its rodata. */
static void choose_vfs(struct dc_bpf *b, void *skel)
{
	struct vfs_bpf *v = skel;
	for (unsigned i = 0; i < b->nprobes; i++) {
		const struct dc_probe *p = &b->probes[i];
		if (p->mech != DC_MECH_KERNEL || p->offset >= NVFS)
			continue;
		v->rodata->vfs_cookie[p->offset] = cookie_of(p, i);
		vfs_enable(v, p->offset, !strcmp(p->library, "[kprobe]"));
	}
}

/* One kernel-side BPF object (bpf/NAME.bpf.c) run on uprobe.bpf.c's maps: its skeleton's
 * functions (KOBJ_SKEL), the rodata every object has, how its programs are picked, and
 * what the messages call it. */
struct kobj {
	const char *open_what; /* "cannot open the %s BPF object" */
	const char *load_what; /* "cannot load or attach the %s" */
	void *(*open)(const struct bpf_object_open_opts *o);
	struct bpf_object *(*object)(void *skel);
	void (*common)(void *skel, const struct dc_bpf *b); /* wakeup, profile rodata */
	int (*load)(void *skel);
	int (*attach)(void *skel);
	void (*destroy)(void *skel);
	void (*choose)(struct dc_bpf *b, void *skel); /* NULL: every program */
	int core; /* 1: relocated against a small CO-RE target (struct core_btf) */
};

#define KOBJ_SKEL(name)                                                                    \
	static void *name##_open_(const struct bpf_object_open_opts *o)                    \
	{                                                                                  \
		return name##_bpf__open_opts(o);                                            \
	}                                                                                  \
	static struct bpf_object *name##_object_(void *s) { return ((struct name##_bpf *)s)->obj; } \
	static void name##_common_(void *s, const struct dc_bpf *b)                         \
	{                                                                                  \
		struct name##_bpf *k = s;                                                  \
		k->rodata->wakeup_bytes = b->common.wakeup_bytes;                          \
		k->rodata->shard_cpus = b->common.shard_cpus;                              \
		k->rodata->profile_ns = b->common.profile_ns;                              \
		k->rodata->profile_t0 = b->common.profile_t0;                              \
	}                                                                                  \
	static int name##_load_(void *s) { return name##_bpf__load(s); }                    \
	static int name##_attach_(void *s) { return name##_bpf__attach(s); }                \
	static void name##_destroy_(void *s) { name##_bpf__destroy(s); }
#define KOBJ_OPS(name) name##_open_, name##_object_, name##_common_, name##_load_,         \
	name##_attach_, name##_destroy_
KOBJ_SKEL(syscall)
KOBJ_SKEL(kernel)
KOBJ_SKEL(vfs)

/* Picks syscall.bpf.c's pair: btf 1 dc_sys_enter/exit, 0 the _c pair. */
static void pick_sys_pair(struct syscall_bpf *s, int btf)
{
	bpf_program__set_autoload(s->progs.dc_sys_enter, btf);
	bpf_program__set_autoload(s->progs.dc_sys_exit, btf);
	bpf_program__set_autoload(s->progs.dc_sys_enter_c, !btf);
	bpf_program__set_autoload(s->progs.dc_sys_exit_c, !btf);
}

/* bpf_rdonly_cast's type ids for syscall.bpf.c's BTF pair (bpf/common.bpf.h
 * btf_id_task_struct), from the kernel's BTF: 0, or -1 when one is not there (then the
 * pair cannot load). */
static int sys_btf_ids(struct syscall_bpf *s)
{
	const struct btf *k = dc_vmlinux_btf();
	int task = k ? btf__find_by_name_kind(k, "task_struct", BTF_KIND_STRUCT) : -1;
	int kiocb = k ? btf__find_by_name_kind(k, "kiocb", BTF_KIND_STRUCT) : -1;
	int file = k ? btf__find_by_name_kind(k, "file", BTF_KIND_STRUCT) : -1;
	if (task <= 0 || kiocb <= 0 || file <= 0)
		return -1;
	s->rodata->btf_id_task_struct = task;
	s->rodata->btf_id_kiocb = kiocb;
	s->rodata->btf_id_file = file;
	return 0;
}

/* Picks syscall.bpf.c's pair that b->sys_btf says (the _c pair, and b->sys_btf 0, when
 * the BTF pair's type ids are not found). */
static void choose_syscall(struct dc_bpf *b, void *skel)
{
	if (b->sys_btf && sys_btf_ids(skel))
		b->sys_btf = 0;
	pick_sys_pair(skel, b->sys_btf);
}

static const struct kobj kobj_syscall = {
	"syscall", "syscall tracepoints (raw_syscalls:sys_enter/sys_exit, tp_btf)",
	KOBJ_OPS(syscall), choose_syscall, 1,
};
static const struct kobj kobj_kernel = {
	"kernel-layer", "page cache / block tracepoints (tp_btf)", KOBJ_OPS(kernel),
	choose_kernel, 0,
};
static const struct kobj kobj_vfs = {
	"VFS", "VFS probes (fentry/kprobe)", KOBJ_OPS(vfs), choose_vfs, 0,
};

/* Opens the object o describes, picks its programs (all, or those o->choose enables),
 * points its shared maps at uprobe.bpf.c's (share_maps), copies the common rodata, loads
 * and attaches it. Returns the skeleton, or NULL with err. */
static void *load_kobj(struct dc_bpf *b, const struct kobj *o, char *err, size_t errlen)
{
	struct core_btf core = { .fd = -1 };
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	if (o->core)
		core_btf_begin(&core, &oo);
	void *skel = o->open(&oo);
	if (!skel) {
		snprintf(err, errlen, "cannot open the %s BPF object: %s", o->open_what,
			 strerror(errno));
		core_btf_end(&core);
		return NULL;
	}
	struct bpf_object *obj = o->object(skel);
	if (o->choose) {
		struct bpf_program *prog;
		bpf_object__for_each_program(prog, obj)
			bpf_program__set_autoload(prog, false);
		o->choose(b, skel);
	}
	o->common(skel, b);
	int e = share_maps(b, obj);
	if (!e) {
		core_btf_fill(&core, obj);
		e = o->load(skel);
	}
	core_btf_end(&core);
	if (!e)
		e = o->attach(skel);
	if (e) {
		snprintf(err, errlen, "cannot load or attach the %s: %s", o->load_what, strerror(-e));
		o->destroy(skel);
		return NULL;
	}
	return skel;
}

/* Loads kernel.bpf.c with the programs of the asked tracepoint probes only. 0, or -1
 * with err. */
static int load_kernel(struct dc_bpf *b, char *err, size_t errlen)
{
	b->kern = load_kobj(b, &kobj_kernel, err, errlen);
	return b->kern ? 0 : -1;
}

/* Loads vfs.bpf.c with, per asked function, the pair its probe chose. 0, or -1 with err. */
static int load_vfs(struct dc_bpf *b, char *err, size_t errlen)
{
	b->vfs = load_kobj(b, &kobj_vfs, err, errlen);
	return b->vfs ? 0 : -1;
}

/* Loads syscall.bpf.c on the maps of uprobe.bpf.c (one ring buffer, one call stack per
 * thread, so syscalls nest under libc calls) and attaches its two tracepoints: the pair
 * that reads an fd's file through BTF where the kernel's BTF has the kfunc
 * bpf_rdonly_cast (Linux 6.2), else, or when that pair does not load, or when the
 * environment has DATACRUMBS_NO_RDONLY_CAST (to test it), the pair of probe reads (the
 * same records, ~5 helper calls more per fd call). Returns 0, or -1 with err. */
static int take_sys_prefetch(struct dc_bpf *b);

static int load_syscalls(struct dc_bpf *b, char *err, size_t errlen)
{
	if (!take_sys_prefetch(b))
		return 0;
	b->sys_btf = sys_btf_wanted();
	b->sys = load_kobj(b, &kobj_syscall, err, errlen);
	if (!b->sys && b->sys_btf) {
		b->sys_btf = 0;
		b->sys = load_kobj(b, &kobj_syscall, err, errlen);
	}
	return b->sys ? 0 : -1;
}

/* syscall.bpf.c loaded ahead, on a thread, beside uprobe.bpf.c's load (up_load_start): the two
 * verifications (uprobe.bpf.c ~85 ms, syscall.bpf.c ~35 ms here, perf trace) run on two
 * CPUs. Nearly every script traces system calls (the POSIX layer is on the syscall
 * tracepoints); one that does not drops the object unattached at dc_bpf_attach. Nothing
 * is attached by the thread. The thread touches only its own skeleton and b->share_fd;
 * the skeleton is opened, its pair chosen and its rodata copied on the calling thread,
 * before uprobe.bpf.c's load remaps that object's rodata. */
struct sys_prefetch {
	pthread_t thread;
	struct syscall_bpf *skel;
	struct core_btf core; /* its CO-RE target, from open to load */
	struct dc_bpf *b;
	int btf; /* the pair it loads: as b->sys_btf */
	int e;   /* 0, or the load's negative errno */
};

static void *sys_prefetch_main(void *arg)
{
	struct sys_prefetch *p = arg;
	if (p->btf && sys_btf_ids(p->skel)) { /* before the load: the ids are rodata */
		p->btf = 0;
		pick_sys_pair(p->skel, 0);
	}
	p->e = share_maps(p->b, p->skel->obj);
	if (!p->e) {
		core_btf_fill(&p->core, p->skel->obj);
		p->e = syscall_bpf__load(p->skel);
	}
	core_btf_end(&p->core);
	return NULL;
}

static void sys_prefetch_start(struct dc_bpf *b)
{
	struct sys_prefetch *p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->b = b;
	p->btf = sys_btf_wanted();
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	core_btf_begin(&p->core, &oo);
	p->skel = syscall_bpf__open_opts(&oo);
	if (!p->skel) {
		core_btf_end(&p->core);
		free(p);
		return;
	}
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, p->skel->obj)
		bpf_program__set_autoload(prog, false);
	pick_sys_pair(p->skel, p->btf);
	syscall_common_(p->skel, b);
	if (dc_thread_start(&p->thread, sys_prefetch_main, p)) {
		syscall_bpf__destroy(p->skel);
		core_btf_end(&p->core);
		free(p);
		return;
	}
	b->spre = p;
}

/* Joins the prefetch; attaches what it loaded as b->sys. 0 when b->sys is so set, -1
 * when there was none or it failed (load_syscalls then loads as without one). */
static int take_sys_prefetch(struct dc_bpf *b)
{
	struct sys_prefetch *p = b->spre;
	if (!p)
		return -1;
	b->spre = NULL;
	pthread_join(p->thread, NULL);
	int e = p->e ? p->e : syscall_bpf__attach(p->skel);
	if (!e) {
		b->sys = p->skel;
		b->sys_btf = p->btf;
	} else {
		syscall_bpf__destroy(p->skel);
	}
	free(p);
	return e ? -1 : 0;
}

/* Joins the prefetch and destroys what it loaded, unattached (nothing asked for it). */
static void sys_prefetch_drop(struct dc_bpf *b)
{
	struct sys_prefetch *p = b->spre;
	if (!p)
		return;
	b->spre = NULL;
	pthread_join(p->thread, NULL);
	syscall_bpf__destroy(p->skel);
	free(p);
}

enum dc_pbytes dc_probe_bytes(const struct dc_probe *p, unsigned char *b1, unsigned char *b2)
{
	const struct dc_func *f = p->func;
	enum dc_pbytes kind = DC_PB_NONE;
	int size = -1, nmemb = -1, elems = -1, dtype = -1;
	*b1 = *b2 = 0;
	for (int i = 0; i < f->nargs; i++) {
		const struct dc_arg *a = &f->args[i];
		switch (a->kind) {
		case DC_ARG_IOV:
		case DC_ARG_TEXT:
		case DC_ARG_LINE:
			kind = DC_PB_IOV; /* the iovec sum, or the string's length: iov_bytes */
			break;
		case DC_ARG_LONG:
		case DC_ARG_INT:
			if (!strcmp(a->name, "count") || (p->mech == DC_MECH_TRACEPOINT &&
							   !strcmp(a->name, "size"))) {
				kind = a->kind == DC_ARG_LONG ? DC_PB_ARG64 : DC_PB_ARG32;
				*b1 = i;
			}
			break;
		case DC_ARG_SIZE:
			size = i;
			break;
		case DC_ARG_NMEMB:
			nmemb = i;
			break;
		case DC_ARG_ELEMS:
			elems = i;
			break;
		case DC_ARG_DATATYPE:
			dtype = i;
			break;
		default:
			break;
		}
	}
	if (size >= 0 && nmemb >= 0) {
		kind = DC_PB_MUL;
		*b1 = size;
		*b2 = nmemb;
	}
	if (elems >= 0 && dtype >= 0 && p->mpi) {
		struct dc_mpi_abi abi;
		dc_mpi_abi(p->library, &abi);
		kind = p->mpi == DC_MPI_MPICH ? DC_PB_MPICH
		     : abi.dtype_off >= 0 ? DC_PB_MUL32 : DC_PB_NONE;
		*b1 = elems;
		*b2 = dtype;
	}
	return kind;
}

enum dc_pmoved dc_probe_moved(const struct dc_probe *p, enum dc_pbytes bytes)
{
	static const char *const ret_is_bytes[] = { "fprintf", "vfprintf", "getline", "getdelim",
						    "printf", "vprintf", "dprintf", "vdprintf" };
	static const char *const one_byte[] = { "fputc", "putc", "putchar", "fgetc", "getc",
						"getchar" };
	const struct dc_func *f = p->func;
	for (int i = 0; i < f->nargs; i++)
		if (f->args[i].kind == DC_ARG_TEXT || f->args[i].kind == DC_ARG_LINE)
			return DC_PM_ASKED; /* fputs, puts: nonnegative on success */
	for (size_t i = 0; i < sizeof(one_byte) / sizeof(one_byte[0]); i++)
		if (f->ret_kind == DC_RET_INT && !strcmp(f->name, one_byte[i]))
			return DC_PM_ONE;
	int returns = f->ret_kind == DC_RET_INT || f->ret_kind == DC_RET_LONG;
	if (p->mech == DC_MECH_TRACEPOINT && f->ret_kind != DC_RET_LONG)
		return DC_PM_NONE; /* a kernel event (page cache, block): no return value */
	if (bytes == DC_PB_MUL)
		return returns ? DC_PM_ITEMS : DC_PM_NONE;
	if (bytes == DC_PB_MUL32 || bytes == DC_PB_MPICH)
		return f->ret_kind == DC_RET_ERRCODE ? DC_PM_ERRCODE : DC_PM_NONE;
	if (bytes != DC_PB_NONE)
		return returns ? DC_PM_RET : DC_PM_NONE;
	for (size_t i = 0; i < sizeof(ret_is_bytes) / sizeof(ret_is_bytes[0]); i++)
		if (returns && !strcmp(f->name, ret_is_bytes[i]))
			return DC_PM_RETANY;
	return DC_PM_NONE;
}

/* The arguments of the kernel's io_uring_complete tracepoint, from its prototype in the
 * kernel's BTF (typedef btf_trace_io_uring_complete: a pointer to a function of a void *
 * then the tracepoint's arguments): 3 (ctx, req, cqe) in newer kernels, 7 (ctx, req,
 * user_data, res, cflags, extra1, extra2) in older ones; -1 when the kernel has none. */
static int uring_complete_args(void)
{
	const struct btf *btf = dc_vmlinux_btf();
	if (!btf)
		return -1;
	int n = -1;
	__s32 id = btf__find_by_name_kind(btf, "btf_trace_io_uring_complete", BTF_KIND_TYPEDEF);
	const struct btf_type *t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	t = t ? btf__type_by_id(btf, t->type) : NULL;            /* the pointer */
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	if (t && btf_is_func_proto(t))
		n = btf_vlen(t) - 1;
	return n;
}

/* Loads aio.bpf.c on the shared maps with the programs of the engines asked for (io_uring's
 * two tracepoints, Linux AIO's sys_enter/sys_exit pair), each asked function's cookie at its
 * opcode in the object's tables (core/aio.c), and attaches io_uring's. Linux AIO's pair is
 * not attached: it goes into syscall.bpf.c's program arrays (loaded first when no
 * syscall probe loaded it), whose programs tail-call it for io_submit, io_getevents and
 * io_pgetevents only, after their own work: at io_submit's entry the call's frame is
 * pushed when aio.bpf.c looks for the parent, and no other system call runs it. A kernel
 * without io_uring's tracepoints (CONFIG_IO_URING off) keeps Linux AIO, with a warning;
 * one where nothing of it loads (no bpf_loop before Linux 5.17) runs on without the
 * layer, with a warning: the default scripts probe it. Returns 1 when it is loaded, 0
 * when not (said on stderr), -1 with err when the object cannot be opened. */
/* Does b have a new AIO probe of Linux AIO's (whose programs syscall.bpf.c tail-calls)? */
static int aio_native_asked(const struct dc_bpf *b)
{
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		const struct dc_probe *p = &b->probes[i];
		const struct dc_aio_fn *fn = is_aio(p) ?
			dc_aio_fn_at((int)(p->offset - DC_AIO_PROBE_BASE)) : NULL;
		if (fn && fn->engine == DC_AIO_NATIVE && fn->op < DC_AIO_CMDS)
			return 1;
	}
	return 0;
}

/* One load of aio.bpf.c (load_aio): opened, its programs and rodata chosen for the AIO
 * probes of b, on the shared maps, loaded, not attached. Run by load_aio, or ahead by a
 * thread while syscall.bpf.c loads (aio_prefetch): it reads b's probes and uprobe.bpf.c's
 * maps only. old_uring: io_uring_complete has the 7 arguments of Linux before 6.0
 * (uring_complete_args, asked on the calling thread).
 * Out: a (NULL when the object cannot be opened, errno in e), uring, native, e (0 or a
 * negative errno of the load). */
struct aio_load {
	struct dc_bpf *b;
	int with_uring, old_uring;
	struct aio_bpf *a;
	int uring, native, e;
	pthread_t thread;
	int started; /* aio_prefetch: 1 while its thread runs, 2 once joined, else 0 */
};

static void *aio_load_main(void *arg)
{
	struct aio_load *l = arg;
	struct core_btf core;
	LIBBPF_OPTS(bpf_object_open_opts, oo);
	core_btf_begin(&core, &oo);
	struct aio_bpf *a = aio_bpf__open_opts(&oo);
	l->a = a;
	if (!a) {
		l->e = -errno;
		core_btf_end(&core);
		return NULL;
	}
	int uring = 0, native = 0;
	for (unsigned i = 0; i < l->b->nprobes; i++) {
		const struct dc_probe *p = &l->b->probes[i];
		const struct dc_aio_fn *fn = is_aio(p) ?
			dc_aio_fn_at((int)(p->offset - DC_AIO_PROBE_BASE)) : NULL;
		if (!fn)
			continue;
		__u64 c = cookie_of(p, i);
		if (fn->engine == DC_AIO_URING && fn->datasync) {
			a->rodata->uring_fdatasync_cookie = c;
			uring = 1;
		} else if (fn->engine == DC_AIO_URING && fn->op < DC_AIO_URING_OPS) {
			a->rodata->uring_cookie[fn->op] = c;
			uring = 1;
		} else if (fn->engine == DC_AIO_NATIVE && fn->op < DC_AIO_CMDS) {
			a->rodata->aio_cookie[fn->op] = c;
			native = 1;
		}
	}
	uring &= l->with_uring;
	int old = uring && l->old_uring;
	bpf_program__set_autoload(a->progs.dc_uring_submit, uring);
	bpf_program__set_autoload(a->progs.dc_uring_complete, uring && !old);
	bpf_program__set_autoload(a->progs.dc_uring_complete_old, old);
	bpf_program__set_autoload(a->progs.dc_aio_enter, native);
	bpf_program__set_autoload(a->progs.dc_aio_exit, native);
	bpf_program__set_autoattach(a->progs.dc_aio_enter, false); /* tail-called */
	bpf_program__set_autoattach(a->progs.dc_aio_exit, false);
	a->rodata->wakeup_bytes = l->b->common.wakeup_bytes;
	a->rodata->shard_cpus = l->b->common.shard_cpus;
	a->rodata->profile_ns = l->b->common.profile_ns;
	a->rodata->profile_t0 = l->b->common.profile_t0;
	l->uring = uring;
	l->native = native;
	l->e = share_maps(l->b, a->obj);
	if (!l->e) {
		core_btf_fill(&core, a->obj);
		l->e = aio_bpf__load(a);
	}
	core_btf_end(&core);
	return NULL;
}

/* Starts loading aio.bpf.c (aio_load_main, with io_uring) on a thread, for load_aio to
 * take: the kernel's verifier and libbpf's parse of the kernel's BTF for it run on the
 * other CPU while syscall.bpf.c loads (with the rings' fill, io_all.lua's start-up went
 * from 289 to 209 ms here: bench/HISTORY.md). Nothing is attached by it. Returns 1 when the thread runs (aio_prefetch_join before any return). */
static int aio_prefetch(struct dc_bpf *b, struct aio_load *l)
{
	*l = (struct aio_load){ .b = b, .with_uring = 1, .old_uring = uring_complete_args() == 7 };
	l->started = !dc_thread_start(&l->thread, aio_load_main, l);
	return l->started;
}

/* Waits for aio_prefetch's thread (started 1 -> 2); with drop, destroys what it loaded
 * (started 0: nothing left for load_aio). */
static void aio_prefetch_join(struct aio_load *l, int drop)
{
	if (l->started == 1)
		pthread_join(l->thread, NULL);
	if (l->started)
		l->started = 2;
	if (drop && l->started) {
		aio_bpf__destroy(l->a);
		l->a = NULL;
		l->started = 0;
	}
}

static int load_aio(struct dc_bpf *b, struct aio_load *pre, char *err, size_t errlen)
{
	/* syscall.bpf.c first, while a prefetch still runs: the two loads overlap */
	if (pre && pre->started == 1 && !b->sys && aio_native_asked(b) &&
	    load_syscalls(b, err, errlen)) {
		aio_prefetch_join(pre, 1);
		return -1;
	}
	for (int with_uring = 1; with_uring >= 0; with_uring--) {
		struct aio_load l;
		if (with_uring && pre && pre->started) {
			aio_prefetch_join(pre, 0);
			l = *pre;
			pre->started = 0; /* taken */
		} else {
			l = (struct aio_load){ .b = b, .with_uring = with_uring,
					       .old_uring = uring_complete_args() == 7 };
			aio_load_main(&l);
		}
		struct aio_bpf *a = l.a;
		if (!a) {
			snprintf(err, errlen, "cannot open the AIO BPF object: %s", strerror(-l.e));
			return -1;
		}
		int uring = l.uring, native = l.native;
		if (native && !b->sys && load_syscalls(b, err, errlen)) {
			aio_bpf__destroy(a);
			return -1;
		}
		int e = l.e;
		if (!e)
			e = aio_bpf__attach(a);
		__u32 slot = 0;
		int fd;
		if (!e && native) {
			fd = bpf_program__fd(a->progs.dc_aio_enter);
			e = bpf_map__update_elem(b->sys->maps.aio_enter_prog, &slot, sizeof(slot), &fd,
						 sizeof(fd), BPF_ANY);
		}
		if (!e && native) {
			fd = bpf_program__fd(a->progs.dc_aio_exit);
			e = bpf_map__update_elem(b->sys->maps.aio_exit_prog, &slot, sizeof(slot), &fd,
						 sizeof(fd), BPF_ANY);
			if (e) /* no half: the enter program without the exit's reaping */
				bpf_map__delete_elem(b->sys->maps.aio_enter_prog, &slot,
						     sizeof(slot), 0);
		}
		if (!e) {
			b->aio = a;
			return 1;
		}
		aio_bpf__destroy(a);
		if (!uring || !native) {
			fprintf(stderr, "datacrumbs: warning: cannot load or attach the AIO layer's "
				"programs (bpf/aio.bpf.c, %s: %s): asynchronous I/O operations are not "
				"traced\n", uring ? "tracepoints io_uring_submit_req, io_uring_complete"
				: "raw_syscalls sys_enter/sys_exit, bpf_loop", strerror(-e));
			return 0;
		}
		fprintf(stderr, "datacrumbs: warning: cannot load or attach io_uring's tracepoints "
			"(io_uring_submit_req, io_uring_complete: %s): io_uring operations are not "
			"traced, Linux AIO's are\n", strerror(-e));
	}
	return 0;
}

/* How profile mode aggregates probe p's calls (bpf/datacrumbs.h struct dc_pinfo): by
 * what file, with which bytes (dc_probe_bytes: the `count` core/consumer.c writes). */
static struct dc_pinfo pinfo_of(const struct dc_probe *p)
{
	const struct dc_func *f = p->func;
	struct dc_pinfo pi = { 0 };
	int ino = -1, dev = -1, paths = 0;
	pi.record = f->effect != DC_FX_NONE;
	pi.moves = p->go;
	pi.tails = p->tails;
	pi.hopen = f->effect == DC_FX_HOPEN ? 1
		 : f->effect == DC_FX_OPENDIR || f->effect == DC_FX_FDOPENDIR ? 2 : 0;
	for (int i = 0; i < f->nargs; i++) {
		const struct dc_arg *a = &f->args[i];
		switch (a->kind) {
		case DC_ARG_PATH: /* the cookie has the first; a second one is path2 */
			if (paths++ == 1 && !pi.path2)
				pi.path2 = i + 1;
			pi.record = 1;
			break;
		case DC_ARG_ADDR: /* msync: the consumer's mappings name its file */
			pi.record = 1;
			break;
		case DC_ARG_TARGET:
			pi.path2 = i + 1;
			break;
		case DC_ARG_TEXT:
		case DC_ARG_LINE:
			pi.slen = i + 1;
			pi.slen_add = a->kind == DC_ARG_LINE;
			break;
		case DC_ARG_FD:
			if (!pi.key) {
				pi.key = DC_PK_FD;
				pi.k1 = i;
			} else if (pi.key == DC_PK_FD && !pi.k2) {
				pi.k2 = i + 1; /* splice's fd_out: a pipe of it is named too */
			}
			break;
		case DC_ARG_FILE:
			pi.key = DC_PK_AUXFD;
			break;
		case DC_ARG_DIR:
		case DC_ARG_HANDLE:
			pi.key = DC_PK_HANDLE;
			pi.k1 = i;
			break;
		case DC_ARG_HANDLE_IN:
			pi.key = DC_PK_AUXHANDLE;
			break;
		case DC_ARG_INO:
			ino = i;
			break;
		case DC_ARG_DEV:
			dev = i;
			break;
		default:
			break;
		}
	}
	if (ino >= 0 && dev >= 0) {
		pi.key = DC_PK_INODE;
		pi.k1 = ino;
		pi.k2 = dev;
	}
	if (f->stream && !pi.key) { /* printf: stdout's fd */
		pi.key = DC_PK_STREAM;
		pi.k1 = f->stream - 1;
	}
	pi.bytes = dc_probe_bytes(p, &pi.b1, &pi.b2);
	pi.moved = dc_probe_moved(p, pi.bytes);
	pi.ret32 = f->ret_kind != DC_RET_LONG;
	return pi;
}

/* The uprobes added since the last attach, one uprobe_multi (or session) link group per
 * run of probes of one library (attach_multi). Returns the number attached. */
static unsigned attach_uprobe_runs(struct dc_bpf *b)
{
	unsigned ok = 0;
	/* probes of one library are added together: attach each run at once */
	unsigned i = b->nattached;
	while (i < b->nprobes) {
		if (b->probes[i].mech != DC_MECH_UPROBE) {
			i++;
			continue;
		}
		unsigned j = i + 1;
		while (j < b->nprobes && !strcmp(b->probes[j].library, b->probes[i].library) &&
		       b->probes[j].mech == DC_MECH_UPROBE)
			j++;
		ok += attach_multi(b, i, j);
		i = j;
	}
	return ok;
}

/* Kernels without uprobe_multi: the uprobes added since the last attach as one perf-event
 * uprobe + uretprobe pair each, refusals reported per library (skip_report). Returns the
 * number attached. */
/* Raises this process's open-file limit: without uprobe_multi each uprobe is a perf event
 * and a link, two fds (`functions = "*"` on libc: ~20,000), as bpftrace raises it. Up to
 * the kernel's cap (fs.nr_open, proc(5)) where the process may raise its hard limit
 * (CAP_SYS_RESOURCE), else to the hard limit. Failing leaves the limit, and attach
 * reports what it refuses. */
static void raise_nofile(void)
{
	struct rlimit r;
	unsigned long cap = 0;
	FILE *f = fopen("/proc/sys/fs/nr_open", "re");
	if (f) {
		if (fscanf(f, "%lu", &cap) != 1)
			cap = 0;
		fclose(f);
	}
	if (getrlimit(RLIMIT_NOFILE, &r))
		return;
	if (cap > r.rlim_max) {
		struct rlimit up = { cap, cap };
		if (setrlimit(RLIMIT_NOFILE, &up) == 0)
			return;
	}
	if (r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

static unsigned attach_uprobe_pairs(struct dc_bpf *b)
{
	unsigned ok = 0;
	struct skips sk = { .n = 0 };
	unsigned of = 0, run = 0;
	unsigned char *evex = NULL; /* of the library run that starts at probe `run` */
	const char *lastlib = NULL;
	raise_nofile();
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		struct dc_probe *p = &b->probes[i];
		if (p->mech != DC_MECH_UPROBE)
			continue;
		if (lastlib && strcmp(p->library, lastlib)) {
			skip_report(&sk, lastlib, of);
			memset(&sk, 0, sizeof(sk));
			of = 0;
		}
		if (!lastlib || strcmp(p->library, lastlib)) {
			unsigned j = i + 1;
			while (j < b->nprobes && !strcmp(b->probes[j].library, p->library))
				j++;
			fallback_report(b, i, j);
			/* the library's EVEX-first functions, in one warning (as attach_multi) */
			free(evex);
			if ((evex = calloc(j - i, 1)))
				skip_evex(b, i, j, evex);
			run = i;
		}
		lastlib = p->library;
		of++;
		if (p->catcher == 2 || !evex || evex[i - run])
			continue;
		LIBBPF_OPTS(bpf_uprobe_opts, o, .bpf_cookie = cookie_of(p, i));
		char pinned[64];
		const char *path = dc_pin(p->library, pinned, sizeof(pinned));
		if (!path) {
			skip_add(&sk, p->func->name, errno);
			continue;
		}
		o.retprobe = true; /* the return first, as in attach_multi */
		if (hijacks(p)) {
			b->links[2 * i + 1] = bpf_program__attach_uprobe_opts(b->skel->progs.dc_return,
									       -1, path, p->at,
									       &o);
			if (!b->links[2 * i + 1]) {
				skip_add(&sk, p->func->name, errno);
				continue;
			}
		}
		o.retprobe = false;
		b->links[2 * i] = bpf_program__attach_uprobe_opts(b->skel->progs.dc_entry, -1,
								   path, p->at, &o);
		if (!b->links[2 * i]) {
			skip_add(&sk, p->func->name, errno);
			bpf_link__destroy(b->links[2 * i + 1]);
			b->links[2 * i + 1] = NULL;
			continue;
		}
		ok += !p->site_of && !p->catcher; /* functions count, not their return sites */
	}
	if (lastlib)
		skip_report(&sk, lastlib, of);
	free(evex);
	return ok;
}

/* Which BPF object serves a probe, besides uprobe.bpf.c and syscall.bpf.c: vfs.bpf.c,
 * kernel.bpf.c, aio.bpf.c (is_aio above). */
static int is_kfunc(const struct dc_probe *p)
{
	return p->mech == DC_MECH_KERNEL;
}

static int is_syscall(const struct dc_probe *p)
{
	return p->mech == DC_MECH_SYSCALL;
}

static int is_kernel_tp(const struct dc_probe *p)
{
	return p->mech == DC_MECH_TRACEPOINT && !is_aio(p);
}

/* The probes added since the last attach that is() accepts. */
static int count_new(const struct dc_bpf *b, int (*is)(const struct dc_probe *p))
{
	int n = 0;
	for (unsigned i = b->nattached; i < b->nprobes; i++)
		n += is(&b->probes[i]);
	return n;
}

/* Loads, once, the BPF object that serves the probes is() accepts among those added since
 * the last attach (load: load_vfs or load_kernel; loaded: it is loaded already, and cannot
 * take more). Returns how many such probes there are (0: nothing loaded), or -1 with err
 * ("WHAT probes can be added only once", or load's). */
static int attach_once(struct dc_bpf *b, int (*is)(const struct dc_probe *p), int loaded,
		       int (*load)(struct dc_bpf *b, char *err, size_t errlen), const char *what,
		       char *err, size_t errlen)
{
	int n = count_new(b, is);
	if (!n)
		return 0;
	if (loaded) {
		snprintf(err, errlen, "%s probes can be added only once", what);
		return -1;
	}
	return load(b, err, errlen) ? -1 : n;
}

void dc_bpf_profile_standby(struct dc_bpf *b)
{
	b->standby = 1;
}

int dc_bpf_profile_start(struct dc_bpf *b)
{
	if (up_ready(b, NULL, 0))
		return -1;
	b->standby = 0;
	for (unsigned i = 0; i < b->nattached; i++) {
		struct dc_pinfo pi = pinfo_of(&b->probes[i]);
		__u32 k = i;
		if (bpf_map__update_elem(b->skel->maps.pinfo, &k, sizeof(k), &pi, sizeof(pi), 0))
			return -1;
	}
	return 0;
}

/* The mechanisms in the order they are attached: profile map, syscall cookies, VFS object,
 * tracepoint object, AIO object, then the uprobes (attach_uprobe_runs, or
 * attach_uprobe_pairs). */
int dc_bpf_attach(struct dc_bpf *b, char *err, size_t errlen)
{
	unsigned ok = 0, nsys = 0;
	/* the profile map in one batch (one bpf(2) call, not one per probe: 35,000 of them
	 * for a large library), element by element where batches are refused */
	unsigned nnew = b->nprobes - b->nattached;
	__u32 *keys = nnew ? malloc(nnew * sizeof(*keys)) : NULL;
	struct dc_pinfo *vals = nnew ? malloc(nnew * sizeof(*vals)) : NULL;
	__u32 count = nnew;
	for (unsigned i = 0; keys && vals && i < nnew; i++) {
		keys[i] = b->nattached + i;
		vals[i] = pinfo_of(&b->probes[b->nattached + i]);
		if (b->standby)
			vals[i].record = 1; /* a record per call, as in trace mode */
	}
	int batched = keys && vals &&
		      !bpf_map_update_batch(bpf_map__fd(b->skel->maps.pinfo), keys, vals, &count, NULL);
	free(keys);
	free(vals);
	for (unsigned i = b->nattached; !batched && i < b->nprobes; i++) {
		struct dc_pinfo pi = pinfo_of(&b->probes[i]);
		__u32 k = i;
		if (b->standby)
			pi.record = 1; /* a record per call, as in trace mode */
		if (bpf_map__update_elem(b->skel->maps.pinfo, &k, sizeof(k), &pi, sizeof(pi), 0)) {
			snprintf(err, errlen, "cannot fill the profile map: %s", strerror(errno));
			return -1;
		}
	}
	/* aio.bpf.c loads on a thread (aio_prefetch) beside syscall.bpf.c here, or what is
	 * left of its load ahead (sys_prefetch_start) */
	struct aio_load pre = { .started = 0 };
	if (!b->aio && !b->sys && count_new(b, is_aio) &&
	    (count_new(b, is_syscall) || aio_native_asked(b)))
		aio_prefetch(b, &pre);
	/* uprobe.bpf.c loaded, the ring buffers in `rings`, the sched tracepoints attached
	 * before anything that records is: with -p the process runs meanwhile, and its
	 * records, forks and execs from the first attached probe on must all be seen */
	if (up_ready(b, err, errlen)) {
		aio_prefetch_join(&pre, 1);
		return -1;
	}
	/* the uprobes first, while syscall.bpf.c's and aio.bpf.c's loads may still run on
	 * their threads: a uprobe link's LINK_CREATE can wait ~10-15 ms for a grace period
	 * (uprobe_register's dup_mmap_sem), which so overlaps them instead of following */
	ok += b->session || b->multi ? attach_uprobe_runs(b) : attach_uprobe_pairs(b);
	/* syscall probes: a cookie per syscall number in the syscall_cookie map */
	for (unsigned i = b->nattached; i < b->nprobes; i++) {
		if (b->probes[i].mech != DC_MECH_SYSCALL)
			continue;
		if (!b->sys && load_syscalls(b, err, errlen)) {
			aio_prefetch_join(&pre, 1);
			return -1;
		}
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
	/* kernel-function probes: one load of vfs.bpf.c with the chosen programs */
	int nk = attach_once(b, is_kfunc, b->vfs != NULL, load_vfs, "kernel-function", err,
			     errlen);
	if (nk < 0) {
		aio_prefetch_join(&pre, 1);
		return -1;
	}
	ok += nk;
	/* tracepoint probes: one load of kernel.bpf.c with the asked programs */
	int ntp = attach_once(b, is_kernel_tp, b->kern != NULL, load_kernel, "tracepoint", err,
			      errlen);
	if (ntp < 0) {
		aio_prefetch_join(&pre, 1);
		return -1;
	}
	ok += ntp;
	/* AIO probes: one load of aio.bpf.c, after syscall.bpf.c (load_aio says why) */
	int naio = count_new(b, is_aio);
	if (naio) {
		if (b->aio) {
			snprintf(err, errlen, "AIO probes can be added only once");
			return -1;
		}
		int loaded = load_aio(b, &pre, err, errlen);
		if (loaded < 0)
			return -1;
		ok += loaded ? naio : 0;
	}
	sys_prefetch_drop(b); /* loaded ahead for nothing: no syscall probe was asked */
	dc_vmlinux_btf_release(); /* every object that looks at the kernel's BTF is loaded */
	b->nattached = b->nprobes;
	if (!ok && b->nprobes) {
		snprintf(err, errlen, "no probe could be attached (see the warnings above)");
		return -1;
	}
	return ok;
}

int dc_bpf_watch_loader(struct dc_bpf *b, const char *ldso, char *err, size_t errlen)
{
	if (up_ready(b, err, errlen))
		return -1;
	if (b->ndl == sizeof(b->dl_links) / sizeof(b->dl_links[0])) {
		snprintf(err, errlen, "%s: too many dynamic loaders watched", ldso);
		return -1;
	}
	struct dc_elf_syms *syms = dc_elf_syms_open(ldso, err, errlen);
	if (!syms)
		return -1;
	uint64_t off = dc_elf_sym_offset(syms, "_dl_debug_state");
	dc_elf_syms_close(syms);
	if (!off) {
		snprintf(err, errlen, "%s has no _dl_debug_state (not glibc's ld.so?)", ldso);
		return -1;
	}
	/* the cookie: where r_debug.r_state lies from _dl_debug_state's address, both in the
	 * loader's own image (<link.h> struct r_debug), so that BPF holds only when the list
	 * is consistent (RT_CONSISTENT: new objects mapped, none of their code run); 0 when
	 * unknown: every call is looked at */
	uint64_t rdebug = 0, dbgstate = 0;
	__u64 cookie = 0;
	if (!dc_elf_dynsym_value(ldso, "_r_debug", &rdebug) &&
	    !dc_elf_dynsym_value(ldso, "_dl_debug_state", &dbgstate))
		cookie = (__u64)(rdebug + offsetof(struct r_debug, r_state) - dbgstate);
	struct bpf_link *l = NULL;
	int fd = -1;
	if (b->dl_multi) {
		__u64 o64 = off;
		fd = dc_link_uprobe_multi(bpf_program__fd(b->skel->progs.dc_dlstate), ldso, &o64,
					  &cookie, 1, 0, 0);
	} else {
		LIBBPF_OPTS(bpf_uprobe_opts, o, .retprobe = false, .bpf_cookie = cookie);
		l = bpf_program__attach_uprobe_opts(b->skel->progs.dc_dlstate, -1, ldso, off, &o);
	}
	if (!l && fd < 0) {
		snprintf(err, errlen, "cannot attach a uprobe to %s's _dl_debug_state: %s", ldso,
			 strerror(errno));
		return -1;
	}
	b->dl_links[b->ndl] = l;
	b->dl_fds[b->ndl++] = fd;
	return 0;
}

int dc_bpf_set_holdable(struct dc_bpf *b, int tid, int state)
{
	if (up_ready(b, NULL, 0))
		return -1;
	__u32 key = tid, v = state;
	if (!state)
		return bpf_map__delete_elem(b->skel->maps.holdable, &key, sizeof(key), 0);
	return bpf_map__update_elem(b->skel->maps.holdable, &key, sizeof(key), &v, sizeof(v),
				    BPF_ANY);
}

int dc_bpf_holdable(const struct dc_bpf *b, int tid)
{
	if (up_ready((struct dc_bpf *)b, NULL, 0)) /* a join, once: b is not otherwise changed */
		return 0;
	__u32 key = tid, v = 0;
	if (bpf_map__lookup_elem(b->skel->maps.holdable, &key, sizeof(key), &v, sizeof(v), 0))
		return 0;
	return (int)v;
}

const struct dc_probe *dc_bpf_probe(const struct dc_bpf *b, unsigned idx)
{
	return idx < b->nprobes ? &b->probes[idx] : NULL;
}

unsigned dc_bpf_nprobes(const struct dc_bpf *b)
{
	return b->nprobes;
}

struct dc_bpf *dc_bpf_offline(const struct dc_probe *probes, unsigned n)
{
	struct dc_bpf *b = calloc(1, sizeof(*b));
	if (!b || !(b->probes = calloc(n ? n : 1, sizeof(*probes)))) {
		free(b);
		return NULL;
	}
	memcpy(b->probes, probes, n * sizeof(*probes));
	b->nprobes = b->cap = n;
	return b;
}

void dc_bpf_offline_free(struct dc_bpf *b)
{
	if (!b)
		return;
	free(b->probes);
	free(b);
}

int dc_bpf_aggs_fd(const struct dc_bpf *b)
{
	return bpf_map__fd(b->skel->maps.aggs);
}

struct dc_agg_ways *dc_bpf_agg_ways(const struct dc_bpf *b, size_t *n)
{
	*n = b->ways ? b->nways : 0;
	return b->ways;
}

unsigned dc_bpf_nshards(const struct dc_bpf *b)
{
	return b->nshards;
}

int dc_bpf_ring_fd(const struct dc_bpf *b, unsigned shard)
{
	return shard < b->nshards ? b->ring_fds[shard] : -1;
}

size_t dc_bpf_ring_bytes(const struct dc_bpf *b)
{
	return b->shard_bytes;
}

void dc_bpf_lost_by_shard(const struct dc_bpf *b, uint64_t *out)
{
	__u64 vals[b->ncpus];
	__u32 k = DC_STAT_LOST;
	for (unsigned i = 0; i < b->nshards; i++)
		out[i] = 0;
	if (bpf_map__lookup_elem(b->skel->maps.stats, &k, sizeof(k), vals, sizeof(vals), 0))
		return;
	for (int c = 0; c < b->ncpus; c++)
		if ((unsigned)c / b->shard_cpus < b->nshards)
			out[c / b->shard_cpus] += vals[c];
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

int dc_bpf_consumer_only(struct dc_bpf *b, int keep)
{
	if (up_ready(b, NULL, 0))
		return -1;
	int fds[DC_MAX_SHARDS + 4];
	int nfds = 0;
	fds[nfds++] = bpf_map__fd(b->skel->maps.stats);
	fds[nfds++] = bpf_map__fd(b->skel->maps.traced);
	fds[nfds++] = bpf_map__fd(b->skel->maps.aggs);
	fds[nfds++] = keep;
	for (unsigned i = 0; i < b->nshards; i++)
		fds[nfds++] = b->ring_fds[i];
	/* the read-only copies first (stats, traced): opening a map by id needs root */
	for (int i = 0; i < 2; i++) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);
		LIBBPF_OPTS(bpf_get_fd_by_id_opts, o, .open_flags = BPF_F_RDONLY);
		if (bpf_obj_get_info_by_fd(fds[i], &info, &len))
			return -1;
		int fd = bpf_map_get_fd_by_id_opts(info.id, &o);
		if (fd < 0 || dup2(fd, fds[i]) < 0)
			return -1;
		close(fd);
	}
	return dc_close_fds(fds, nfds, 0);
}

/* Closes fds[0..n) of uprobe links, striped over up to 8 threads. The close of
 * such a link waits for the kernel's RCU grace periods before it returns
 * (kernel/events/uprobes.c uprobe_unregister_sync: synchronize_rcu_tasks_trace), 25-85 ms
 * each here; closed one after another, 9 links of a large library took 450 ms, while
 * closes in parallel share their grace periods. The links are gone when this returns. */
struct close_stripe {
	const int *fds;
	unsigned n, from, step;
};

static void *close_stripe_main(void *arg)
{
	const struct close_stripe *c = arg;
	for (unsigned i = c->from; i < c->n; i += c->step)
		close(c->fds[i]);
	return NULL;
}

static void close_links(const int *fds, unsigned n)
{
	enum { MAXT = 8 };
	pthread_t t[MAXT];
	struct close_stripe c[MAXT];
	unsigned nt = n < MAXT ? n : MAXT, started = 0;
	sigset_t all, old;
	sigfillset(&all); /* signals stay the main thread's */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (unsigned k = 1; k < nt; k++) {
		c[k] = (struct close_stripe){ fds, n, k, nt };
		if (pthread_create(&t[k], NULL, close_stripe_main, &c[k]))
			break;
		started = k;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* this thread: stripe 0, and the stripes of the threads that did not start */
	for (unsigned i = 0; i < n; i++)
		if (i % (nt ? nt : 1) == 0 || i % nt > started)
			close(fds[i]);
	for (unsigned k = 1; k <= started; k++)
		pthread_join(t[k], NULL);
}

void dc_bpf_close(struct dc_bpf *b)
{
	if (!b)
		return;
	up_ready(b, NULL, 0); /* its thread joined: nothing loads while it is destroyed */
	/* every uprobe link closed side by side (close_links): a libbpf link's fd is dup'ed
	 * into the list before the link is destroyed, so that its destroy drops no last
	 * reference (one after another, the loader watch's link had waited ~50 ms alone
	 * before the others' closes began). Without memory for the list, one by one. */
	unsigned nl = b->nmlinks;
	int *fds = malloc((b->nmlinks + 2 * b->ndl + 2 * b->nprobes + 1) * sizeof(int));
	for (unsigned i = 0; fds && i < b->nmlinks; i++)
		fds[i] = b->mlinks[i];
	for (unsigned i = 0; i < b->ndl + 2 * b->nprobes; i++) {
		struct bpf_link *l = i < b->ndl ? b->dl_links[i] : b->links[i - b->ndl];
		int lfd = l && fds ? bpf_link__fd(l) : -1;
		int dup_fd = lfd >= 0 ? fcntl(lfd, F_DUPFD_CLOEXEC, 0) : -1;
		if (dup_fd >= 0)
			fds[nl++] = dup_fd;
		bpf_link__destroy(l);
		if (i < b->ndl && b->dl_fds[i] >= 0) {
			if (fds)
				fds[nl++] = b->dl_fds[i];
			else
				close(b->dl_fds[i]);
		}
	}
	if (fds) {
		close_links(fds, nl);
		free(fds);
	} else {
		close_links(b->mlinks, b->nmlinks);
	}
	free(b->mlinks);
	aio_bpf__destroy(b->aio);
	vfs_bpf__destroy(b->vfs);
	kernel_bpf__destroy(b->kern);
	syscall_bpf__destroy(b->sys);
	sys_prefetch_drop(b);
	uprobe_bpf__destroy(b->skel);
	close_shared(b);
	close_rings(b);
	free(b->probes);
	dc_index_free(&b->ix);
	free(b->links);
	free(b);
	dc_vmlinux_btf_release();
	dc_feature_settle();
}
