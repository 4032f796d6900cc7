/* attach.h: the BPF side's lifetime: load the programs, attach uprobes with their attach
 * cookies and the process-tracking tracepoints, mark tgids traced, detach everything. */
#ifndef DC_ATTACH_H
#define DC_ATTACH_H

#include <stddef.h>
#include <stdint.h>
#include "datacrumbs.h"
#include "probes.h"

/* One attached function: what the attach cookie's probe index stands for. */
struct dc_probe {
	const struct dc_layer *layer;
	const struct dc_func *func;
	char library[512];   /* the file the uprobe sits in */
	uint64_t offset;     /* file offset of the function */
	int hidden;          /* attached only to keep the fd tables right: no event written */
	enum dc_mechanism mech; /* how it is attached: the layer's mechanism, or
				   DC_MECH_SYSCALL for a uprobe layer's function served by its
				   system call (library "[syscall]", offset the number) */
	int mpi;             /* enum dc_mpi_flavor of the library, for MPI datatype/status args */
	int returns;         /* how its returns are seen, enum dc_returns (core/retsite.h):
				HIJACK, INSN (return-site probes) or NONE (entry-only) */
	int fellback;        /* returns INSN was chosen or asked, but cannot be: NONE */
	int go;              /* a Go binary's function: its stack moves (dc_pinfo.moves) */
	int catcher;         /* 1: the catch point of a C++ runtime (__cxa_begin_catch of
				the libstdc++ a C++ probe's file loads): its hits send the calls
				a caught exception unwound (bpf/datacrumbs.h DC_COOKIE_CATCH);
				2: one given up (a script probes __cxa_begin_catch itself) */
	unsigned site_of;    /* a return site (a `ret` of a function): 1 + its probe's index;
				0 for a function's entry */
	int shared;          /* a return site in a function its owner tail-calls, which
				others call too (core/retsite.h DC_RETSITE_SHARED) */
	int tails;           /* a function with such sites (dc_pinfo.tails) */
	uint64_t at;         /* file offset the uprobe sits at: offset, a Go function's past
				its stack check, or a return site's */
	char why[96];        /* why `returns` is what it is (core/retsite.c) */
};

struct dc_bpf;

/* Opens and loads the BPF object with ring buffers of `ringbuf_bytes` in all (a power of
 * two, >= 4096): `nshards` of them (0: one per CPU up to 16, CPU groups beyond; at most
 * DC_MAX_SHARDS and the CPU count), CPU group k writing to ring buffer k; profile_ns > 0 selects profile mode: calls are aggregated in the `aggs` map
 * per interval of profile_ns counted from profile_t0 (CLOCK_MONOTONIC ns) and attaches the sched_process_{fork,exec,exit} tracepoints (tp_btf).
 * untrace_secureexec=1 (a run without root) stops tracing a process at an exec that
 * gains privileges (setuid, setgid, file capabilities), as ptrace would not let it gain
 * them; the exec record says so (bpf/datacrumbs.h DC_EV_EXEC).
 * The maps are made here; the programs load on threads (core/attach.c up_load_start,
 * sys_prefetch_start) until dc_bpf_attach, dc_bpf_watch_loader or another call that needs
 * them waits for the load: a verifier's refusal is that call's error (the same one-line
 * "cannot load the BPF programs: ..."), and dc_bpf_close may always be called.
 * Returns NULL with a one-line reason in err (no BTF, missing privileges, the maps). */
struct dc_bpf *dc_bpf_open(size_t ringbuf_bytes, unsigned nshards, uint64_t profile_ns,
			   uint64_t profile_t0,
			   int untrace_secureexec, char *err, size_t errlen);

/* The traced processes (tgids in the `traced` map) other than `except`: their number, the
 * first `max` of them in pids[] (may be NULL with max 0). Returns -1 with errno when the
 * map cannot be read. */
int dc_bpf_traced(struct dc_bpf *b, int except, int *pids, int max);

/* Waits for the BPF programs that dc_bpf_open began to load on a thread. Returns 0 when
 * they loaded and their sched tracepoints are attached, else -1 with the load's error in
 * err (errlen bytes; e.g. "cannot load the BPF programs: Permission denied"). */
int dc_bpf_ready(struct dc_bpf *b, char *err, size_t errlen);

/* Marks tgid as traced: its calls are recorded and its future children are followed
 * (its `traced_hint` slot first, bpf/datacrumbs.h DC_TRACED_SLOTS, then the `traced`
 * entry). Returns 0, or -1 with errno. */
int dc_bpf_trace_pid(struct dc_bpf *b, int tgid);

/* Stops tracing tgid (takes it out of the `traced` map; its children forked already stay
 * traced). Returns 0, or -1 with errno. */
int dc_bpf_untrace_pid(struct dc_bpf *b, int tgid);

/* Adds a probe for func of layer at `offset` in `library` to the probe table, unless
 * that (library, offset) already has one (glibc aliases: read/__read share an address;
 * the first added names the events). hidden=1: the calls only update the fd tables (a
 * later non-hidden add of the same address makes it visible). A user-space function's
 * returns are planned here (core/retsite.c dc_retsite_plan: C++ and Go functions are
 * seen at their return instructions, which get probes of their own, entered in the
 * table before the function's). Returns the probe index, or -1 when the table is full
 * (65536 probes). */
int dc_bpf_add_probe(struct dc_bpf *b, const struct dc_layer *layer,
		     const struct dc_func *func, const char *library, uint64_t offset,
		     int hidden);

/* The index of a built-in tracepoint probe of bpf/kernel.bpf.c by name
 * ("mm_filemap_add_to_page_cache", "block_rq", ...), or DC_AIO_PROBE_BASE + the index of
 * an AIO function served by bpf/aio.bpf.c ("io_uring_read", "aio_pwrite": core/aio.h),
 * the offset to give dc_bpf_add_probe; -1 when there is none of that name. */
int dc_bpf_tracepoint(const char *name);

/* The index of a kernel function bpf/vfs.bpf.c can probe ("vfs_read", ...), the offset
 * to give dc_bpf_add_probe (library "[fentry]" or "[kprobe]"); -1 when it has none. */
int dc_bpf_kfunc(const char *name);

/* Attaches every probe added and not yet attached: session uprobes where the kernel has
 * them (Linux 6.13+, checked at dc_bpf_open: no return probe in untraced processes), else
 * a uprobe and a uretprobe each (entry only for func->noret; no return probe at all for
 * functions seen at their return instructions). Functions the kernel refuses
 * (ENOTSUPP 524 for instructions uprobes cannot step over, EINVAL) are skipped with one
 * warning per library on stderr naming the first five, the count and the reason; with
 * uprobe_multi links the refused offsets are found exactly by splitting the links' groups
 * of 64 offsets. Functions whose first instruction is EVEX-encoded (AVX-512) are never
 * probed (one warning): the kernel accepts those uprobes but its out-of-line step lost
 * the instruction's result here (core/attach.c evex_first). Returns the number of
 * functions attached, or -1 with err when none could be or the BPF programs did not load
 * (dc_bpf_open). */
int dc_bpf_attach(struct dc_bpf *b, char *err, size_t errlen);

/* Profile mode on stand-by (--auto-profile): for a dc_bpf opened with profile_ns > 0, the
 * probes attached from now on send a record per call, as in trace mode (their `pinfo`
 * entries say `record`, bpf/datacrumbs.h struct dc_pinfo), until dc_bpf_profile_start. */
void dc_bpf_profile_standby(struct dc_bpf *b);

/* Profile mode from now: every attached probe's `pinfo` entry is rewritten as profile mode
 * has it, so BPF aggregates its calls in `aggs` (those naming a path still travel as
 * records). Returns 0, or -1 with errno from bpf_map_update_elem(2). */
int dc_bpf_profile_start(struct dc_bpf *b);

/* The bytes of a call of probe p: one rule for profile mode's BPF sums (dc_pinfo bytes, b1,
 * b2) and the `count` the trace event carries (core/consumer.c). In argument order, the
 * last that applies wins: an iovec argument (DC_PB_IOV, the sum of its iov_len); an int or
 * long argument named `count`, for tracepoints `size` (DC_PB_ARG32/ARG64, *b1 its index);
 * then `size` x `nmemb` arguments (DC_PB_MUL, fread); then, in an MPI library, `elems` x
 * the `datatype`'s size (DC_PB_MPICH from the handle's bits, DC_PB_MUL32 with Open MPI's
 * size read in BPF, DC_PB_NONE when this Open MPI's layout is unknown). Sets *b1 and *b2
 * (argument indexes, 0 when unused) and returns the enum dc_pbytes. */
enum dc_pbytes dc_probe_bytes(const struct dc_probe *p, unsigned char *b1, unsigned char *b2);

/* Watches the dynamic loader `ldso` (a path: the traced programs' PT_INTERP): an
 * entry-only uprobe on its _dl_debug_state (glibc elf/dl-debug.c, the r_debug.r_brk
 * debuggers use, link.h) whose program (bpf/uprobe.bpf.c dc_dlstate) sends a DC_EV_DLSTATE
 * record for traced processes only, and holds the seized ones (DC_HOLD_SIGNAL). At most 4
 * loaders. Returns 0, or -1 with err (no such symbol: not glibc's ld.so). */
int dc_bpf_watch_loader(struct dc_bpf *b, const char *ldso, char *err, size_t errlen);

/* Thread tid's entry in the `holdable` map: state DC_HOLD_SEIZED (may be held),
 * DC_HOLD_HELD, or 0 to remove it. Returns 0, or -1 with errno. */
int dc_bpf_set_holdable(struct dc_bpf *b, int tid, int state);

/* Thread tid's state in the `holdable` map: DC_HOLD_SEIZED, DC_HOLD_HELD, or 0 (none). */
int dc_bpf_holdable(const struct dc_bpf *b, int tid);

/* The bytes a call of probe p moved, from its return value: one rule (enum dc_pmoved,
 * bpf/datacrumbs.h) for profile mode's BPF sums, the consumer's totals and
 * python/datacrumbs/analysis.py moved_bytes. bytes is dc_probe_bytes(p): ITEMS for size x
 * nmemb (fread: ret items), ERRCODE for an MPI count with `ret: errcode` (MPI_SUCCESS: all
 * asked moved), RET for any other count when the function returns one (`ret: int` or
 * `long`; a tracepoint only with `ret: long`), RETANY for fprintf, vfprintf, getline,
 * getdelim, printf, vprintf, dprintf, vdprintf (ret is the bytes, fprintf(3), getline(3)),
 * ASKED for a `text` or `line` argument (fputs, puts: all asked on a nonnegative ret),
 * ONE for fputc, putc, putchar, fgetc, getc, getchar (a byte, or EOF), else NONE. */
enum dc_pmoved dc_probe_moved(const struct dc_probe *p, enum dc_pbytes bytes);

/* The probe table, indexed by DC_COOKIE_PROBE of an event. */
const struct dc_probe *dc_bpf_probe(const struct dc_bpf *b, unsigned idx);
unsigned dc_bpf_nprobes(const struct dc_bpf *b);

/* A dc_bpf with no BPF side, only the probe table probes[0..n) (copied; their layer and
 * func stay the caller's): what `datacrumbs recover` decodes a spool by (core/spool.h).
 * dc_bpf_probe and dc_bpf_nprobes answer from it, dc_bpf_nshards is 0; nothing else may
 * be asked of it. NULL when out of memory. Freed by dc_bpf_offline_free. */
struct dc_bpf *dc_bpf_offline(const struct dc_probe *probes, unsigned n);
void dc_bpf_offline_free(struct dc_bpf *b);

/* File descriptor of profile mode's `aggs` map (struct dc_agg_key -> struct dc_agg). */
int dc_bpf_aggs_fd(const struct dc_bpf *b);

/* Profile mode's per-thread aggregates (bpf/datacrumbs.h struct dc_agg_ways), mapped
 * read-write for the consumer to take (core/profile.c): *n slots, NULL (*n 0) outside
 * profile mode. Valid until dc_bpf_close. */
struct dc_agg_ways *dc_bpf_agg_ways(const struct dc_bpf *b, size_t *n);

/* The number of ring buffers (shards), each one CPU group's (bpf/common.bpf.h rings). */
unsigned dc_bpf_nshards(const struct dc_bpf *b);

/* File descriptor of ring buffer `shard` (< dc_bpf_nshards; mmap(2) it as
 * kernel/bpf/ringbuf.c lays it out), -1 for no such shard. */
int dc_bpf_ring_fd(const struct dc_bpf *b, unsigned shard);

/* Each ring buffer's size, bytes (a power of two). */
size_t dc_bpf_ring_bytes(const struct dc_bpf *b);

/* The records each shard's ring buffer had no room for (DC_STAT_LOST of its CPUs), into
 * out[0 .. dc_bpf_nshards - 1]. */
void dc_bpf_lost_by_shard(const struct dc_bpf *b, uint64_t *out);

/* Sums the per-CPU enum dc_stat counters into out. */
void dc_bpf_stats(const struct dc_bpf *b, uint64_t out[DC_STAT_NR]);

/* Site mode, in the consumer root forks (still root): closes every fd but 0-2, `keep`
 * and the map fds the consumer reads (the ring buffers, aggs, and, turned read-only with
 * BPF_F_RDONLY, stats and traced), so that no link or program fd, and no writable traced
 * map, reaches the user's script. Never call dc_bpf_close on that copy. 0, or -1. */
int dc_bpf_consumer_only(struct dc_bpf *b, int keep);

/* Detaches every program and frees the object; no link or uprobe is left behind. */
void dc_bpf_close(struct dc_bpf *b);

#endif
