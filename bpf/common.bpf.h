/* common.bpf.h: what every datacrumbs BPF program shares: the maps (one instance, the
 * loader reuses them across objects), the per-thread call stack and the record emitter. */
#ifndef DC_COMMON_BPF_H
#define DC_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs.h"

/* The traced processes, by tgid. The loader puts the first one in; forks of a traced
 * process are added here, exits removed. The value holds the process's call-id counter. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct dc_proc);
} traced SEC(".maps");

/* A filter in front of `traced` (bpf/datacrumbs.h DC_TRACED_SLOTS): 1 in slot tgid %
 * DC_TRACED_SLOTS when a process of that slot may be traced, 0: none is. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DC_TRACED_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} traced_hint SEC(".maps");

/* 0 when process tgid is surely not traced (its slot of traced_hint is 0: an array load,
 * which the verifier inlines, in place of a hash lookup), else 1 (`traced` decides). */
static __always_inline int maybe_traced(__u32 tgid)
{
	__u32 k = tgid & (DC_TRACED_SLOTS - 1);
	__u32 *v = bpf_map_lookup_elem(&traced_hint, &k);
	return v && *v;
}

/* Marks tgid's slot of traced_hint before tgid goes in `traced`. */
static __always_inline void hint_traced(__u32 tgid)
{
	__u32 k = tgid & (DC_TRACED_SLOTS - 1);
	__u32 *v = bpf_map_lookup_elem(&traced_hint, &k);
	if (v && !*v)
		*v = 1;
}

/* One in-flight probed call. */
struct dc_frame {
	__u64 cookie;
	__u64 ts;
	__u64 id;
	__u64 iov_bytes;
	__u64 aux;      /* cookie's aux value, read at entry or return */
	__u32 aux_ok;   /* DC_F_AUX when aux was read */
	__u16 moves;    /* 1: its stack moves (dc_pinfo.moves): sp is not compared */
	__u16 tails;    /* 1: its function tail-calls (dc_pinfo.tails): a call entered at
			   this frame's rsp may be that tail call, not a sign it is over */
	__u64 args[DC_MAX_ARGS];
	__u64 sp;       /* user rsp at entry (the return address's slot), 0: not known
			   (kernel-side frames); bpf/datacrumbs.h "Return instructions" */
	__u64 fino;     /* the fd's inode when it is a pipe or socket (fkind), read at entry */
	__u64 fino2;    /* the same for the second fd (DC_F_PIPE2, DC_F_SOCKET2) */
	__u32 fkind;    /* DC_F_PIPE, DC_F_SOCKET, DC_F_PIPE2, DC_F_SOCKET2 or 0 */
	__u32 way_slot1; /* profile mode: the thread's agg_ways slot + 1, set at return */
};

/* The calls in flight on one thread, innermost last, in the thread's slot of `stacks`
 * (owner: its tid, 0: a free slot). Kept while the thread lives (depth 0 between calls:
 * making a zeroed 2 KB stack at every outermost call and dropping it at its return cost
 * more than the rest of the call's BPF work together, bench/stdio.sh), freed when the
 * thread exits (sched_process_exit, flush_stack). */
struct dc_stack {
	__u32 depth;
	__u32 slot;    /* its own index in `stacks` (stack_take): its agg_ways slot too */
	__u64 owner;   /* 64 bits: BPF's compare-and-swap before -mcpu=v3 is 64-bit only */
	__u64 id_next; /* the thread's block of call ids, [id_next, id_end): taken from its */
	__u64 id_end;  /* process's counter DC_ID_BLOCK at a time (bpf/datacrumbs.h) */
	struct dc_frame f[DC_MAX_DEPTH];
};

/* The stacks, an open-addressed table: thread tid's is in one of the DC_STACK_PROBES
 * slots from tid % DC_STACK_SLOTS on (bpf/datacrumbs.h). An array, not a hash keyed by
 * tid: its lookup is inlined by the verifier as an address computation, where a hash
 * lookup hashed the key and walked a bucket (~45 ns a lookup here, two per traced call;
 * bench/HISTORY.md). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DC_STACK_SLOTS);
	__type(key, __u32);
	__type(value, struct dc_stack);
} stacks SEC(".maps");

/* Thread tid's stack, NULL when it has none (no probed call of it seen yet, or it exited).
 * Any thread's: op_done and the block layer look up the thread that submitted. */
static __always_inline struct dc_stack *stack_of(__u32 tid)
{
	for (__u32 i = 0; i < DC_STACK_PROBES; i++) {
		__u32 k = (tid + i) & (DC_STACK_SLOTS - 1);
		struct dc_stack *st = bpf_map_lookup_elem(&stacks, &k);
		if (st && st->owner == tid)
			return st;
	}
	return NULL;
}

/* A free slot of `stacks` for the current thread tid, which has none (stack_of: NULL),
 * taken for it (depth 0, no ids); NULL when all DC_STACK_PROBES of its slots belong to
 * other live threads. The slot is taken with a compare-and-swap of its owner (two threads
 * may want the same one); only the thread itself takes one for itself, so never two. */
static __always_inline struct dc_stack *stack_take(__u32 tid)
{
	struct dc_stack *st;
	for (__u32 i = 0; i < DC_STACK_PROBES; i++) {
		__u32 k = (tid + i) & (DC_STACK_SLOTS - 1);
		st = bpf_map_lookup_elem(&stacks, &k);
		if (st && !st->owner && !__sync_val_compare_and_swap(&st->owner, 0, (__u64)tid)) {
			st->depth = 0;
			st->slot = k;
			st->id_next = st->id_end = 0;
			return st;
		}
	}
	return NULL;
}

/* Frees thread tid's slot st (its own, at its exit). */
static __always_inline void stack_free(struct dc_stack *st, __u32 tid)
{
	st->depth = 0;
	__sync_val_compare_and_swap(&st->owner, (__u64)tid, 0);
}

/* The ring buffers, one per shard: a CPU group of shard_cpus CPUs writes to shard
 * cpu / shard_cpus (the loader sets both before load, and puts nshards ring buffers of
 * --buffer-size / nshards bytes each in; core/consumer.c drains them). Sharding keeps
 * CPUs from contending for one ring buffer's spinlock and lets drain threads share the
 * reading; a thread's records stay in submission order by their `sent` time
 * (bpf/datacrumbs.h struct dc_event). */
struct dc_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by the loader */
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, DC_MAX_SHARDS);
	__type(key, __u32);
	__array(values, struct dc_ring);
} rings SEC(".maps");

const volatile __u32 shard_cpus = 1;

/* What each CPU works out once and keeps: its shard (cpu / shard_cpus, + 1; 0: not yet
 * worked out) and, in profile mode, the interval its last call fell in ([ival_lo,
 * ival_hi) in CLOCK_MONOTONIC ns, number ival), so that a call pays a load and a compare
 * where it paid a division (two 32-bit ones per record for the shard, a 64-bit one per
 * aggregated call for the interval: a BPF division is a hardware one, the verifier folds
 * none, even by a frozen constant). */
struct dc_cpu_memo {
	__u32 shard1;
	__u32 ival;
	__u64 ival_lo;
	__u64 ival_hi;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_cpu_memo);
} cpu_memo SEC(".maps");

/* This CPU's memo (a per-CPU array: the lookup is inlined, no helper call); NULL never in
 * practice (the verifier wants the test). */
static __always_inline struct dc_cpu_memo *my_memo(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&cpu_memo, &zero);
}

/* This CPU's ring buffer (NULL only if the loader left its shard empty: counted lost). */
static __always_inline void *my_ring(void)
{
	struct dc_cpu_memo *m = my_memo();
	__u32 k;
	if (m && m->shard1) {
		k = m->shard1 - 1;
	} else {
		k = bpf_get_smp_processor_id() / shard_cpus;
		if (m)
			m->shard1 = k + 1;
	}
	return bpf_map_lookup_elem(&rings, &k);
}

/* Reserves `bytes` in this CPU's ring buffer; NULL when it is full (the caller counts
 * DC_STAT_LOST). */
static __always_inline void *ring_reserve(__u64 bytes)
{
	void *rb = my_ring();
	return rb ? bpf_ringbuf_reserve(rb, bytes, 0) : NULL;
}

/* Where a call's path strings (two at most: dc_pinfo.path2) are read before they are
 * copied into a record of the right size. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_path2_event);
} scratch SEC(".maps");

/* bpf_probe_read_user_str into dst (size bytes), with one answer on every kernel: the
 * string's length with its NUL, or < 0 when it faults. Older kernels (Debian 12's 6.1;
 * falcosecurity/libs#866) read an empty string as 0 and write no NUL, newer ones as 1:
 * a 0 would drop fstatat(fd, "", AT_EMPTY_PATH)'s path, and with it its file. */
static __always_inline long read_user_str(char *dst, __u32 size, const void *src)
{
	long n = bpf_probe_read_user_str(dst, size, src);
	if (n == 0) {
		dst[0] = 0;
		n = 1;
	}
	return n;
}

/* enum dc_stat counters, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Profile mode (--mode profile): the aggregates, and how each probe's calls go in. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct dc_agg_key);
	__type(value, struct dc_agg);
} aggs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct dc_pinfo);
} pinfo SEC(".maps");

/* Profile mode: which call opened each live handle (MPI_File, DIR *) of a process, so
 * that aggregates name the open (whose record has the path), not a pointer that a later
 * open may reuse. */
struct dc_handle_key {
	__u32 tgid;
	__u32 pad;
	__u64 handle;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct dc_handle_key);
	__type(value, __u64);
} handles SEC(".maps");

/* 0: trace mode (a record per call); else profile mode's interval, ns, counted from
 * profile_t0 (CLOCK_MONOTONIC ns), both set by the loader before load. */
const volatile __u64 profile_ns = 0;
const volatile __u64 profile_t0 = 0;

/* Wake the consumer only once this much data waits (set by the loader before load);
 * below it, the consumer's own timer drains the buffer. A wakeup per record costs the
 * traced thread an IPI and the tracer a context switch per event. */
const volatile __u64 wakeup_bytes = 0;

/* The wakeup flag for submitting a reserved record of `bytes` bytes: BPF_RB_FORCE_WAKEUP
 * only for the record that takes the waiting data across wakeup_bytes, never for the
 * ones after it while the consumer has not drained (a forced wakeup is an irq_work
 * self-IPI in the traced thread, a VM exit here: one per record once the consumer lagged
 * made every traced call twice as slow). A crossing that two CPUs both miss, or a
 * consumer that went back to sleep with data still waiting, is caught by the consumer's
 * drain timer (core/session.c DC_DRAIN_MS) and by epoll's level-triggered readiness of
 * the ring buffer (kernel/bpf/ringbuf.c ringbuf_map_poll). Each record takes its size
 * plus an 8-byte header, rounded up to 8 (BPF_RINGBUF_HDR_SZ). */
static __always_inline __u64 submit_flags(__u64 bytes)
{
	void *rb = my_ring();
	if (!rb)
		return BPF_RB_NO_WAKEUP;
	__u64 avail = bpf_ringbuf_query(rb, BPF_RB_AVAIL_DATA);
	__u64 mine = ((bytes + 8) + 7) & ~7ULL;
	return avail >= wakeup_bytes && avail < wakeup_bytes + mine
	       ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/* Submits a record reserved by ring_reserve, stamped with `sent` (CLOCK_MONOTONIC ns),
 * the merge key of core/shards.c: a time read after every earlier record of this thread
 * was committed and before this one is; waking the consumer as submit_flags says when
 * `wake`. */
static __always_inline void ring_submit_at(void *rec, __u64 bytes, int wake, __u64 sent)
{
	((struct dc_event *)rec)->sent = sent;
	bpf_ringbuf_submit(rec, wake ? submit_flags(bytes) : 0);
}

/* ring_submit_at stamped now. */
static __always_inline void ring_submit(void *rec, __u64 bytes, int wake)
{
	ring_submit_at(rec, bytes, wake, bpf_ktime_get_ns());
}

static __always_inline void count_stat_n(__u32 which, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += n;
}

static __always_inline void count_stat(__u32 which)
{
	count_stat_n(which, 1);
}

/* Sums iov_len over up to DC_IOV_MAX entries of the user iovec array at address iov
 * (cnt entries; bytes). A global function: the verifier walks its loop's DC_IOV_MAX
 * rounds once per program, not at every caller in every state that reaches it (the
 * address is a number, as a user pointer is to BPF). */
__noinline __u64 dc_iov_sum(__u64 iov, __u64 cnt)
{
	__u64 sum = 0;
	for (int i = 0; i < DC_IOV_MAX; i++) {
		struct iovec v;
		if (i >= cnt)
			break;
		if (bpf_probe_read_user(&v, sizeof(v), (const void *)(iov + i * sizeof(v))))
			break;
		sum += v.iov_len;
	}
	return sum;
}

/* The kernel's dev_t (major << 20 | minor) in the user's encoding (new_encode_dev(),
 * include/linux/kdev_t.h), so it compares with stat(2)'s st_dev. */
static __always_inline __u64 user_dev(__u32 kdev)
{
	__u32 major = kdev >> 20, minor = kdev & 0xfffff;
	return (minor & 0xff) | (major << 8) | ((minor & ~0xffU) << 12);
}

/* bpf_rdonly_cast (kfunc, Linux 6.2, kernel/bpf/helpers.c): obj as a read-only pointer to
 * the kernel type btf_id, whose fields a program then loads directly (a faulting load
 * reads 0). Weak: an object that calls it loads only where the kernel has it, and only
 * programs that do not call it are loaded elsewhere (the loader picks, core/attach.c
 * load_syscalls). The verifier turns the call into a register move. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

/* The struct file of fd in the current task's fd table (current->files->fdt->fd[fd]),
 * NULL when there is none. The task, its files_struct and fdtable are read by direct loads
 * through the task's BTF (bpf_get_current_task_btf, Linux 5.11: no helper call, a
 * faulting load reads 0); the slot, a pointer to pointer the verifier types as a number,
 * by one bpf_probe_read_kernel. */
static __always_inline struct file *fd_file(long fd)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct fdtable *fdt = t->files->fdt;
	struct file **fds = fdt->fd;
	struct file *f = NULL;
	if (fd < 0 || fd >= fdt->max_fds || bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return NULL;
	return f;
}

/* The inode number (*ino), device (*dev, user encoding) and DC_F_PIPE / DC_F_SOCKET / 0
 * (the return) of fd of the current task, all 0 when there is no such fd: the file's
 * super block's s_magic tells a pipe or socket (include/uapi/linux/magic.h; the kernel
 * names such an fd pipe:[INO] or socket:[INO], fs/pipe.c pipefs_dname, net/socket.c
 * sockfs_dname). Two bodies: _btf loads the slot and the file's fields straight
 * through BTF (bpf_rdonly_cast: no helper call at all), for programs loaded only where the
 * kernel has the kfunc; _rd reads the slot and them with six bpf_probe_read_kernel calls. Subprograms
 * (noinline): clang 14 takes minutes over the programs that inline many copies of these
 * direct loads. */
#ifdef DC_FD_BTF
/* The kernel's BTF ids of struct task_struct, kiocb and file, bpf_rdonly_cast's targets:
 * set by the loader from the kernel's BTF before the load (core/attach.c sys_btf_ids),
 * constants to the verifier (a frozen read-only map). Not bpf_core_type_id_kernel: libbpf
 * relocates this object against a small BTF of its own (core/corebtf.h), whose ids are
 * not the kernel's. */
const volatile __u32 btf_id_task_struct = 0, btf_id_kiocb = 0, btf_id_file = 0;

__noinline __u32 fd_facts_btf(long fd, __u64 *ino, __u64 *dev)
{
	if (!ino || !dev) /* a global function's pointers may be NULL to the verifier */
		return 0;
	/* untrusted from the start (read-only cast of current): the verifier then checks no
	 * walked field for trust, each of which was up to four searches of the kernel's BTF
	 * by name (kernel/bpf/btf.c btf_nested_type_is_trusted; ~7 % of start-up's CPU). The
	 * loads are the same faulting loads either way. */
	struct task_struct *t = bpf_rdonly_cast(bpf_get_current_task_btf(), btf_id_task_struct);
	struct fdtable *fdt = t->files->fdt;
	struct file **fds = fdt->fd;
	struct file *bf;
	*ino = 0;
	*dev = 0;
	if (fd < 0 || fd >= fdt->max_fds)
		return 0;
	if (bpf_core_field_offset(struct kiocb, ki_filp) == 0) {
		/* the slot fd[fd] read as the first member of a struct kiocb (ki_filp, a
		 * struct file *, at offset 0 in every kernel: include/linux/fs.h), the one
		 * kernel type whose field is a BTF-typed file pointer at the start: a direct
		 * load, no helper call */
		struct kiocb *slot = bpf_rdonly_cast(&fds[fd], btf_id_kiocb);
		bf = slot->ki_filp;
	} else {
		struct file *f = NULL;
		if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
			return 0;
		bf = bpf_rdonly_cast(f, btf_id_file);
	}
	if (!bf)
		return 0;
	struct inode *i = bf->f_inode;
	struct super_block *sb = i->i_sb;
	unsigned long magic = sb->s_magic;
	*ino = i->i_ino;
	*dev = user_dev(sb->s_dev);
	return magic == DC_PIPEFS_MAGIC ? DC_F_PIPE : magic == DC_SOCKFS_MAGIC ? DC_F_SOCKET : 0;
}
#else
/* Objects that never read an fd through BTF (btf 0 at every call: all but syscall.bpf.c,
 * which defines DC_FD_BTF) compile no fd_facts_btf: its relocations (kiocb's field)
 * would cost libbpf a search of the CO-RE target each. */
#define fd_facts_btf fd_facts_rd
#endif

__noinline __u32 fd_facts_rd(long fd, __u64 *ino, __u64 *dev)
{
	if (!ino || !dev) /* a global function's pointers may be NULL to the verifier */
		return 0;
	struct file *f = fd_file(fd);
	*ino = 0;
	*dev = 0;
	if (!f)
		return 0;
	struct inode *i = BPF_CORE_READ(f, f_inode);
	struct super_block *sb = BPF_CORE_READ(i, i_sb);
	unsigned long magic = BPF_CORE_READ(sb, s_magic);
	*ino = BPF_CORE_READ(i, i_ino);
	*dev = user_dev(BPF_CORE_READ(sb, s_dev));
	return magic == DC_PIPEFS_MAGIC ? DC_F_PIPE : magic == DC_SOCKFS_MAGIC ? DC_F_SOCKET : 0;
}

/* The inode and device of fd of the current task (0 and 0: no such fd), and what it is
 * when it is no file of a file system: DC_F_PIPE or DC_F_SOCKET (then named by its inode
 * alone, *dev 0), else 0. Runs at every fd call's entry (trace mode) or return (profile
 * mode's key). btf, a constant at each call site: 1 in programs loaded only where the
 * kernel has bpf_rdonly_cast (Linux 6.2; core/attach.c load_syscalls picks them): no
 * helper call; 0: six (there were ten before fd_file's direct loads). */
static __always_inline __u32 fd_special(long fd, __u64 *ino, __u64 *dev, int btf)
{
	__u32 k = btf ? fd_facts_btf(fd, ino, dev) : fd_facts_rd(fd, ino, dev);
	if (k) /* named by its inode alone */
		*dev = 0;
	return k;
}

/* The inode and device of file descriptor fd of the current task (current->files->fdt->
 * fd[fd]->f_inode), read when an open returns, so short-lived files (written, renamed,
 * unlinked before the tracer reads the event) keep their path for page cache events.
 * btf: as fd_special. */
static __always_inline void fd_inode(long fd, __u64 *ino, __u64 *dev, int btf)
{
	if (btf)
		fd_facts_btf(fd, ino, dev);
	else
		fd_facts_rd(fd, ino, dev);
}

/* Reads the cookie's aux value through pointer p (+ the cookie's offset): 4 or 8 bytes.
 * Returns DC_F_AUX with *out set, or 0 when p is NULL or the read faults. */
static __always_inline __u32 read_aux(__u64 cookie, __u64 p, __u64 *out)
{
	*out = 0;
	if (!p)
		return 0;
	if (cookie & DC_COOKIE_FILE) {
		int flags;
		if (bpf_probe_read_user(&flags, 4, (const void *)p) || !(flags & DC_IO_IS_FILEBUF))
			return 0;
	}
	p += DC_COOKIE_AUX_OFF(cookie);
	if (DC_COOKIE_AUX_WIDE(cookie))
		return bpf_probe_read_user(out, 8, (const void *)p) ? 0 : DC_F_AUX;
	int v;
	if (bpf_probe_read_user(&v, 4, (const void *)p))
		return 0;
	*out = (__u64)(long)v;
	return DC_F_AUX;
}

/* f->args[idx] for an index the verifier cannot bound itself; 0 when out of range. */
static __always_inline __u64 arg_at(const struct dc_frame *f, __u32 idx)
{
	__u64 v = 0;
	for (int i = 0; i < DC_MAX_ARGS; i++)
		if (i == idx)
			v = f->args[i];
	return v;
}

/* Sets f->args[idx] (idx < DC_MAX_ARGS, else nothing). */
static __always_inline void arg_set(struct dc_frame *f, __u32 idx, __u64 v)
{
	for (int i = 0; i < DC_MAX_ARGS; i++)
		if (i == idx)
			f->args[i] = v;
}

/* The entry-time read a cookie asks for: the aux value when it is read at entry (a
 * FILE *'s fd, which fclose frees). */
static __always_inline void entry_reads(__u64 cookie, struct dc_frame *f)
{
	__u32 a = DC_COOKIE_AUX_SRC(cookie) - 1;
	f->aux = 0;
	f->aux_ok = 0;
	if (a < DC_MAX_ARGS && !DC_COOKIE_AUX_LATE(cookie))
		f->aux_ok = read_aux(cookie, arg_at(f, a), &f->aux);
}

/* The return-time reads: an argument's short string or pointed-to value in place of the
 * pointer (read at return: the call has touched them, so their pages are resident; at
 * entry a string literal's page may not be yet, and the read would fail), and the aux
 * value through the returned pointer or an out-pointer argument (whose target the call
 * has filled in by now). */
static __always_inline void return_reads(__u64 cookie, struct dc_frame *f, long ret)
{
	__u32 s = DC_COOKIE_STR_ARG(cookie) - 1, d = DC_COOKIE_DEREF_ARG(cookie) - 1;
	__u32 a = DC_COOKIE_AUX_SRC(cookie);
	if (a == DC_AUX_RET)
		f->aux_ok = read_aux(cookie, ret, &f->aux);
	else if (a >= 1 && a <= DC_MAX_ARGS && DC_COOKIE_AUX_LATE(cookie))
		f->aux_ok = read_aux(cookie, arg_at(f, a - 1), &f->aux);
	if (s < DC_MAX_ARGS) {
		__u64 v = 0;
		bpf_probe_read_user_str(&v, sizeof(v), (const void *)arg_at(f, s));
		arg_set(f, s, v);
	}
	if (d < DC_MAX_ARGS) {
		__u64 v = 0;
		if (bpf_probe_read_user(&v, sizeof(v),
					(const void *)(arg_at(f, d) + DC_COOKIE_DEREF_OFF(cookie))))
			v = 0;
		arg_set(f, d, v);
	}
}

/* *p = min(*p, v) and the max twin, safe against other CPUs (BPF_ATOMIC cmpxchg, 5.12). */
static __always_inline void atomic_min(__u64 *p, __u64 v)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *p;
		if (v >= old || __sync_val_compare_and_swap(p, old, v) == old)
			return;
	}
}

static __always_inline void atomic_max(__u64 *p, __u64 v)
{
	for (int i = 0; i < 4; i++) {
		__u64 old = *p;
		if (v <= old || __sync_val_compare_and_swap(p, old, v) == old)
			return;
	}
}

/* An aggregate with no calls yet, in .rodata rather than on the stack: the stack of a
 * chain of calls is 512 bytes in all (6.1's verifier counts global functions in it). */
static const struct dc_agg agg_empty = { .dur_min = ~0ULL, .bytes_min = ~0ULL };

/* Adds the sums v (one call's, or a way's: struct dc_agg_ways) to the aggregate of key k
 * in `aggs`, made when absent. A global function: the verifier checks its compare-and-swap
 * loops once per program, not at every caller in every state (profile mode's dc_sys_exit
 * took 63 ms to load, dc_uring_complete 46). Returns 0. */
__noinline int dc_agg_merge(struct dc_agg_key *k, struct dc_agg *v)
{
	if (!k || !v) /* a global function's pointers may be NULL to the verifier */
		return 0;
	/* the key on the stack: 6.1's verifier (Debian 12) takes a map key only from the stack,
	 * a packet or a map value, not a global function's memory argument */
	struct dc_agg_key key = *k;
	struct dc_agg *a = bpf_map_lookup_elem(&aggs, &key);
	if (!a) {
		bpf_map_update_elem(&aggs, &key, &agg_empty, BPF_NOEXIST);
		a = bpf_map_lookup_elem(&aggs, &key);
		if (!a) { /* the map is full: the calls are lost to the profile */
			count_stat_n(DC_STAT_LOST, v->count);
			return 0;
		}
	}
	__sync_fetch_and_add(&a->count, v->count);
	__sync_fetch_and_add(&a->dur_sum, v->dur_sum);
	atomic_min(&a->dur_min, v->dur_min);
	atomic_max(&a->dur_max, v->dur_max);
	if (v->bytes_n) {
		__sync_fetch_and_add(&a->bytes_n, v->bytes_n);
		__sync_fetch_and_add(&a->bytes_sum, v->bytes_sum);
		atomic_min(&a->bytes_min, v->bytes_min);
		atomic_max(&a->bytes_max, v->bytes_max);
	}
	if (v->moved_n) {
		__sync_fetch_and_add(&a->moved_n, v->moved_n);
		__sync_fetch_and_add(&a->moved_sum, v->moved_sum);
	}
	return 0;
}

/* include/uapi/linux/bpf.h: an array user space may mmap (Linux 5.5); this tree's
 * vmlinux.h has none of the uapi map flags */
#define DC_BPF_F_MMAPABLE (1U << 10)

/* Profile mode's per-thread aggregates, slot s of `stacks` owning slot s here
 * (bpf/datacrumbs.h "Profile mode's per-thread aggregates"). Mappable: the consumer takes
 * the ways' sums with its own compare-and-swap. Sized by the loader (1 entry outside
 * profile mode). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, DC_BPF_F_MMAPABLE);
	__uint(max_entries, DC_STACK_SLOTS);
	__type(key, __u32);
	__type(value, struct dc_agg_ways);
} agg_ways SEC(".maps");

/* Is way key a the same as key b (their 32 bytes as four words)? */
static __always_inline int agg_key_eq(const struct dc_agg_key *a, const struct dc_agg_key *b)
{
	const __u64 *x = (const void *)a, *y = (const void *)b;
	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2] && x[3] == y[3];
}

/* Adds one call's sums v (count 1) to way sums a, by plain loads and stores (the way is
 * held, bpf/datacrumbs.h); a->count 0: a is empty, v becomes it. */
static __always_inline void way_add(struct dc_agg *a, const struct dc_agg *v)
{
	if (!a->count) {
		*a = *v;
		return;
	}
	a->count += v->count;
	a->dur_sum += v->dur_sum;
	if (v->dur_min < a->dur_min)
		a->dur_min = v->dur_min;
	if (v->dur_max > a->dur_max)
		a->dur_max = v->dur_max;
	if (v->bytes_n) {
		if (!a->bytes_n || v->bytes_min < a->bytes_min)
			a->bytes_min = v->bytes_min;
		if (!a->bytes_n || v->bytes_max > a->bytes_max)
			a->bytes_max = v->bytes_max;
		a->bytes_n += v->bytes_n;
		a->bytes_sum += v->bytes_sum;
	}
	a->moved_n += v->moved_n;
	a->moved_sum += v->moved_sum;
}

/* Adds one call's sums v, returned at now (CLOCK_MONOTONIC ns), to the aggregate of key k
 * through the calling thread's ways ws (its agg_ways slot; NULL: straight into `aggs`):
 * the way holding k, else an empty one, else the least recently used, whose sums go to
 * `aggs` first. A way the consumer holds sends the call to `aggs`. A global function
 * (checked once per program). Returns 0. */
__noinline int dc_agg_put(struct dc_agg_ways *ws, struct dc_agg_key *k, struct dc_agg *v,
			  __u64 now)
{
	if (!k || !v)
		return 0;
	if (!ws)
		return dc_agg_merge(k, v);
	__u32 pick = DC_AGG_WAYS, empty = DC_AGG_WAYS, old = 0;
	__u64 oldest = ~0ULL;
	for (__u32 i = 0; i < DC_AGG_WAYS; i++) {
		struct dc_agg_way *w = &ws->w[i];
		if (!w->a.count) {
			if (empty == DC_AGG_WAYS)
				empty = i;
		} else if (agg_key_eq(&w->key, k)) {
			pick = i;
			break;
		} else if (w->used < oldest) {
			oldest = w->used;
			old = i;
		}
	}
	if (pick == DC_AGG_WAYS)
		pick = empty < DC_AGG_WAYS ? empty : old;
	struct dc_agg_way *w = &ws->w[pick & (DC_AGG_WAYS - 1)];
	if (__sync_val_compare_and_swap(&w->lock, DC_WAY_FREE, DC_WAY_BPF) != DC_WAY_FREE)
		return dc_agg_merge(k, v); /* the consumer is taking it */
	/* held: read again (the consumer may have emptied it since the look above) */
	if (w->a.count && !agg_key_eq(&w->key, k)) {
		dc_agg_merge(&w->key, &w->a); /* another key's sums: to `aggs`, the way reused */
		w->a.count = 0;
	}
	if (!w->a.count)
		w->key = *k;
	way_add(&w->a, v);
	w->used = now;
	barrier(); /* the sums' stores before the release (x86-64 keeps stores in order) */
	w->lock = DC_WAY_FREE;
	return 0;
}

/* The bytes a call moved by rule pi->moved (enum dc_pmoved), from its return value ret,
 * the bytes asked (when has_bytes) and args; 0 for a failed call. */
static __always_inline __s64 moved_of(const struct dc_pinfo *pi, long ret, __s64 bytes,
				      int has_bytes, const __u64 args[DC_MAX_ARGS])
{
	__s64 r = pi->ret32 ? (__s64)(int)ret : (__s64)ret, size = 0;
	if (pi->b1 < DC_MAX_ARGS)
		size = (__s64)args[pi->b1];
	switch (pi->moved) {
	case DC_PM_RET:
		return has_bytes && r >= 0 && r <= bytes ? r : 0;
	case DC_PM_RETANY:
		return r > 0 ? r : 0;
	case DC_PM_ITEMS:
		return r > 0 && size > 0 ? r * size : 0;
	case DC_PM_ERRCODE:
		return has_bytes && (int)ret == 0 && bytes > 0 ? bytes : 0;
	case DC_PM_ASKED:
		return has_bytes && (int)ret >= 0 && bytes > 0 ? bytes : 0;
	case DC_PM_ONE:
		return (int)ret >= 0 ? 1 : 0;
	}
	return 0;
}

/* The file key and bytes of a call described by pi, from its (argument) values; btf: as
 * fd_special. */
static __always_inline void agg_key_bytes(const struct dc_pinfo *pi, const __u64 args[DC_MAX_ARGS],
					  __u64 aux, __u32 aux_ok, __u64 iov_bytes,
					  struct dc_agg_key *k, __s64 *bytes, int *has_bytes,
					  int btf)
{
	__u64 a1 = 0, a2 = 0, v1 = 0, v2 = 0;
	/* indexed, not a loop comparing each index with i: the loop's 24 branches on
	 * unknown indexes made the verifier check 2.5-5 times the instructions */
	if (pi->k1 < DC_MAX_ARGS)
		a1 = args[pi->k1];
	if (pi->k2 < DC_MAX_ARGS)
		a2 = args[pi->k2];
	if (pi->b1 < DC_MAX_ARGS)
		v1 = args[pi->b1];
	if (pi->b2 < DC_MAX_ARGS)
		v2 = args[pi->b2];
	k->kind = DC_AGG_NOFILE;
	k->fkey = 0;
	k->fdev = 0;
	switch (pi->key) {
	case DC_PK_FD:
	case DC_PK_AUXFD:
	case DC_PK_STREAM: {
		long fd = pi->key == DC_PK_FD ? (long)(int)a1 : pi->key == DC_PK_STREAM ? pi->k1 :
			  (aux_ok ? (long)(int)aux : -1);
		__u32 special = fd_special(fd, &k->fkey, &k->fdev, btf);
		if (special) { /* a pipe or socket: named by its inode alone */
			k->kind = special == DC_F_PIPE ? DC_AGG_PIPE : DC_AGG_SOCKET;
			k->fdev = 0;
			break;
		}
		k->kind = k->fkey ? DC_AGG_INODE : DC_AGG_NOFILE;
		break;
	}
	case DC_PK_HANDLE:
	case DC_PK_AUXHANDLE: {
		struct dc_handle_key hk = { .tgid = k->pid,
					    .handle = pi->key == DC_PK_HANDLE ? a1 : aux };
		__u64 *open_id = pi->key == DC_PK_HANDLE || aux_ok ?
				 bpf_map_lookup_elem(&handles, &hk) : NULL;
		if (open_id) {
			k->kind = DC_AGG_HANDLE;
			k->fkey = *open_id;
		}
		break;
	}
	case DC_PK_INODE:
		k->kind = DC_AGG_INODE;
		k->fkey = a1;
		k->fdev = a2;
		break;
	}
	*has_bytes = 1;
	switch (pi->bytes) {
	case DC_PB_ARG64:
		*bytes = (__s64)v1;
		break;
	case DC_PB_ARG32:
		*bytes = (int)v1;
		break;
	case DC_PB_IOV:
		*bytes = iov_bytes;
		break;
	case DC_PB_MUL:
		*bytes = (__s64)(v1 * v2);
		break;
	case DC_PB_MUL32:
		*bytes = (__s64)(int)v1 * (__s64)v2;
		*has_bytes = v2 > 0;
		break;
	case DC_PB_MPICH:
		*bytes = (__s64)(int)v1 * (((__u32)v2 >> 8) & 0xff);
		*has_bytes = ((__u32)v2 >> 30) == 1 && (((__u32)v2 >> 8) & 0xff);
		break;
	default:
		*has_bytes = 0;
	}
}

/* Profile mode: the interval number of return time now ((now - profile_t0) / profile_ns,
 * dc_agg_key.interval), from this CPU's memo while now stays in the interval of its last
 * call, else by the division (then remembered). */
static __always_inline __u32 interval_of(__u64 now)
{
	struct dc_cpu_memo *m = my_memo();
	if (m && now >= m->ival_lo && now < m->ival_hi)
		return m->ival;
	__u64 n = (now - profile_t0) / profile_ns;
	if (m && now >= profile_t0) {
		m->ival = n;
		m->ival_lo = profile_t0 + n * profile_ns;
		m->ival_hi = m->ival_lo + profile_ns;
	}
	return n;
}

/* Profile mode: aggregates a finished call of probe `probe`, described by pi, instead of
 * recording it; ret is its return value when has_ret (not for kernel events and
 * entry-only calls); btf: as fd_special. Returns 1 when it did, 0 when the call must be
 * sent as a record. */
static __always_inline int profile_call(const struct dc_pinfo *pi, __u32 probe, __u32 tgid,
					__u64 ts, __u64 now, const __u64 args[DC_MAX_ARGS],
					__u64 aux, __u32 aux_ok, __u64 iov_bytes, long ret,
					int has_ret, int btf, __u32 way_slot1)
{
	if (!pi || pi->record)
		return 0;
	struct dc_agg_key k = { .pid = tgid, .probe = probe, .interval = interval_of(now) };
	__s64 bytes = 0;
	int has_bytes = 0;
	agg_key_bytes(pi, args, aux, aux_ok, iov_bytes, &k, &bytes, &has_bytes, btf);
	int has_moved = has_ret && pi->moved != DC_PM_NONE;
	__s64 moved = has_moved ? moved_of(pi, ret, bytes, has_bytes, args) : 0;
	__u64 dur = now - ts;
	struct dc_agg v = { .count = 1, .dur_sum = dur, .dur_min = dur, .dur_max = dur };
	if (has_bytes && bytes >= 0) {
		v.bytes_n = 1;
		v.bytes_sum = v.bytes_min = v.bytes_max = bytes;
	}
	if (has_moved) {
		v.moved_n = 1;
		v.moved_sum = moved > 0 ? moved : 0;
	}
	__u32 slot = way_slot1 - 1;
	dc_agg_put(way_slot1 ? bpf_map_lookup_elem(&agg_ways, &slot) : NULL, &k, &v, now);
	return 1;
}

/* Profile mode: a call that opens a handle (pi->hopen) returned: remember its id as the
 * handle's opener. */
static __always_inline void note_handle(const struct dc_pinfo *pi, __u32 tgid,
					const struct dc_frame *f, long ret)
{
	if (!pi || !pi->hopen)
		return;
	struct dc_handle_key hk = { .tgid = tgid };
	if (pi->hopen == 1 && (int)ret == 0 && f->aux_ok)
		hk.handle = f->aux;
	else if (pi->hopen == 2 && ret != 0 && ret != -1)
		hk.handle = ret;
	else
		return;
	__u64 id = f->id;
	bpf_map_update_elem(&handles, &hk, &id, BPF_ANY);
}

/* Profile mode, a call returned: note_handle, then profile_call of its frame f (its
 * probe from f->cookie, its start f->ts, its arguments), pi its probe's description or
 * NULL, now the return's time (ns), ret its return value. Global (non-static, noinline)
 * functions, one per btf value (as fd_special): the verifier checks each once per program
 * that calls it, with none of its caller's states (inlined, the aggregation multiplied
 * the states of every return path: profile-mode start-up 1.2 s). Returns profile_call's
 * answer: 1 when the call was aggregated, 0 when it must be sent as a record. */
static __always_inline int profile_ret(const struct dc_pinfo *pi, const struct dc_frame *f,
				       __u32 tgid, __u64 now, long ret, int btf)
{
	if (!f)
		return 0;
	note_handle(pi, tgid, f, ret);
	return profile_call(pi, DC_COOKIE_PROBE(f->cookie), tgid, f->ts, now, f->args, f->aux,
			    f->aux_ok, f->iov_bytes, ret, 1, btf, f->way_slot1);
}

__noinline int dc_profile_ret0(const struct dc_pinfo *pi, const struct dc_frame *f, __u32 tgid,
			       __u64 now, long ret)
{
	return profile_ret(pi, f, tgid, now, ret, 0);
}

__noinline int dc_profile_ret1(const struct dc_pinfo *pi, const struct dc_frame *f, __u32 tgid,
			       __u64 now, long ret)
{
	return profile_ret(pi, f, tgid, now, ret, 1);
}

/* How dc_unwind judges the frames on top of a thread's stack (bpf/datacrumbs.h "Return
 * instructions"): a frame is over when its entry rsp is below the hit's rsp, and also,
 * when equal, at an entry (for a return-instruction frame, or a hijacked one that did not
 * tail-call this one) and at a catch point; DC_UW_POP pops down to `keep` frames. */
enum { DC_UW_RETURN = 0, DC_UW_ENTRY = 1, DC_UW_CATCH = 2, DC_UW_POP = 3 };
__noinline int dc_unwind(struct dc_stack *st, __u64 sp, int mode, __u32 keep);

/* A probe hit at user rsp sp on a thread counting calls too deep to keep (depth above
 * DC_MAX_DEPTH): those calls were all deeper than the last kept frame, so when sp is at
 * or above that frame's entry rsp they are over (an exception or a longjmp left them):
 * the count comes down to the kept frames, lest the thread stay too deep for good. */
static __always_inline void deep_over(struct dc_stack *st, __u64 sp)
{
	struct dc_frame *last = &st->f[DC_MAX_DEPTH - 1];
	if (st->depth > DC_MAX_DEPTH && sp && last->sp && !last->moves && last->sp <= sp)
		st->depth = DC_MAX_DEPTH;
}

/* A probed call starts on the current thread: push a frame with its attach cookie,
 * id, argument registers and (for iovec calls) the bytes asked. Untraced processes
 * return at once. Returns 1 when the call's return must be seen (a frame was pushed, or
 * the too-deep counter was raised and must come down again), 0 when not (untraced
 * process, no room for the thread's stack): a session uprobe then asks the kernel for
 * no return probe (bpf/datacrumbs.h, "Session uprobes"). sp: the user rsp at entry
 * (0: a kernel-side call); frames it shows dead are sent as unwound first. btf: as
 * fd_special (the fd's pipe or socket test). */
static __always_inline int call_enter_fd(__u64 cookie, __u64 sp, int btf, __u64 a0, __u64 a1,
					  __u64 a2, __u64 a3, __u64 a4, __u64 a5)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	if (!maybe_traced(tgid))
		return 0;
	/* a thread with a stack is traced (it took it in a traced process, gives it back at
	 * its exit, and at an exec that its process is untraced at: bpf/uprobe.bpf.c), so
	 * only a thread's first call, and each DC_ID_BLOCK-th, looks its process up in
	 * `traced` (one untraced while it runs is seen there) */
	struct dc_proc *p = NULL;
	struct dc_stack *st = stack_of(tid);
	if (!st) {
		p = bpf_map_lookup_elem(&traced, &tgid);
		if (!p)
			return 0;
		st = stack_take(tid);
		if (!st) { /* no free slot of the thread's in `stacks`: a lost call */
			count_stat(DC_STAT_LOST);
			return 0;
		}
	}
	if (st->id_next >= st->id_end) {
		if (!p)
			p = bpf_map_lookup_elem(&traced, &tgid);
		if (!p) { /* its process was untraced under it: nothing more of it */
			if (!st->depth)
				stack_free(st, tid);
			return 0;
		}
		st->id_next = __sync_fetch_and_add(&p->next_id, DC_ID_BLOCK);
		st->id_end = st->id_next + DC_ID_BLOCK;
	}
	__u32 moves = 0, tails = 0, probe = DC_COOKIE_PROBE(cookie);
	struct dc_pinfo *pi = bpf_map_lookup_elem(&pinfo, &probe);
	if (cookie & DC_COOKIE_INSN) { /* a Go function's stack moves: no sp judgement */
		moves = pi && pi->moves;
		tails = pi && pi->tails;
	}
	if (sp && !moves) {
		deep_over(st, sp);
		dc_unwind(st, sp, DC_UW_ENTRY, 0);
	}
	__u32 d = st->depth;
	if (d >= DC_MAX_DEPTH) {
		count_stat(DC_STAT_DEEP);
		st->depth = d + 1; /* keep counting so the returns pair up again */
		return 1;
	}
	barrier_var(d); /* keep the mask below: the verifier needs it after dc_unwind */
	struct dc_frame *f = &st->f[d & (DC_MAX_DEPTH - 1)];
	f->cookie = cookie;
	f->id = st->id_next++;
	f->args[0] = a0;
	f->args[1] = a1;
	f->args[2] = a2;
	f->args[3] = a3;
	f->args[4] = a4;
	f->args[5] = a5;
	f->iov_bytes = 0;
	__u32 iov = DC_COOKIE_IOV(cookie) - 1, cnt = DC_COOKIE_IOVCNT(cookie) - 1;
	if (iov < DC_MAX_ARGS && cnt < DC_MAX_ARGS)
		f->iov_bytes = dc_iov_sum(f->args[iov], f->args[cnt]);
	if (cookie >> 32)
		entry_reads(cookie, f);
	else
		f->aux_ok = 0;
	/* a pipe's or socket's fd: its inode, read now (close(2) has none at its return);
	 * in profile mode only for calls that travel as records (the rest are keyed by
	 * agg_key_bytes) */
	f->fkind = 0;
	if (pi && (pi->key == DC_PK_FD || pi->key == DC_PK_AUXFD || pi->key == DC_PK_STREAM) &&
	    (!profile_ns || pi->record)) {
		long fd = pi->key == DC_PK_FD ? (long)(int)arg_at(f, pi->k1)
			: pi->key == DC_PK_STREAM ? (long)pi->k1
			: f->aux_ok ? (long)(int)f->aux : -1;
		__u64 dev;
		f->fkind = fd_special(fd, &f->fino, &dev, btf);
		if (pi->key == DC_PK_FD && pi->k2) {
			__u32 k = fd_special((long)(int)arg_at(f, pi->k2 - 1), &f->fino2, &dev,
					     btf);
			f->fkind |= k == DC_F_PIPE ? DC_F_PIPE2 : k == DC_F_SOCKET ? DC_F_SOCKET2 : 0;
		}
	}
	f->sp = sp;
	f->moves = moves;
	f->tails = tails;
	st->depth = d + 1;
	f->ts = bpf_ktime_get_ns();
	return 1;
}

/* call_enter_fd of a user-space probe (btf 0: uprobe programs run on every kernel). */
static __always_inline int call_enter_at(__u64 cookie, __u64 sp, __u64 a0, __u64 a1,
					  __u64 a2, __u64 a3, __u64 a4, __u64 a5)
{
	return call_enter_fd(cookie, sp, 0, a0, a1, a2, a3, a4, a5);
}

/* call_enter_at for a call whose stack pointer is not known (kernel-side probes). */
static __always_inline int call_enter(__u64 cookie, __u64 a0, __u64 a1, __u64 a2,
				       __u64 a3, __u64 a4, __u64 a5)
{
	return call_enter_fd(cookie, 0, 0, a0, a1, a2, a3, a4, a5);
}


/* Fills the common part of a call record from its frame. */
static __always_inline void fill_call(struct dc_event *e, struct dc_frame *f, __u32 tgid,
				      __u32 tid, __u32 depth, __u64 parent, __u64 now, long ret)
{
	e->kind = DC_EV_CALL;
	e->probe = DC_COOKIE_PROBE(f->cookie);
	e->pid = tgid;
	e->tid = tid;
	e->ts = f->ts;
	e->dur = now - f->ts;
	e->id = f->id;
	e->parent = parent;
	e->level = depth + 1;
	e->path_len = 0;
	e->ret = ret;
	e->iov_bytes = f->iov_bytes;
	e->flags = f->aux_ok;
	e->path2_len = 0;
	e->ino = 0;
	e->dev = 0;
	if (f->fkind) { /* a pipe's or socket's fd (call_enter_at) */
		e->flags |= f->fkind;
		e->ino = f->fkind & (DC_F_PIPE | DC_F_SOCKET) ? f->fino : 0;
		e->dev = f->fkind & (DC_F_PIPE2 | DC_F_SOCKET2) ? f->fino2 : 0;
	}
	e->aux = f->aux_ok ? f->aux : 0;
	for (int i = 0; i < DC_MAX_ARGS; i++)
		e->args[i] = f->args[i];
}

/* Sends frame i (0: the outermost) of stack st, owned by thread `owner` (tgid << 32 |
 * tid), as a record of a call that ended at now (CLOCK_MONOTONIC ns) without its return
 * being seen: `how`'s low 32 bits are its DC_F_* flag (DC_F_UNWOUND, DC_F_UNFINISHED);
 * DC_SEND_WAKE in it lets the record wake the consumer (submit_flags). A global function,
 * so that the verifier checks it once per program, not in each of the DC_MAX_DEPTH
 * rounds of its callers' loops: inlined, flush_stack alone was ~11,000 instructions and
 * 12 ms to load in each of dc_exec and dc_exit. Returns 0, or -1 when the ring buffer
 * was full (counted as lost). */
#define DC_SEND_WAKE (1ULL << 32)
__noinline int dc_send_frame(struct dc_stack *st, __u32 i, __u64 owner, __u64 now, __u64 how)
{
	if (!st)
		return 0;
	i &= DC_MAX_DEPTH - 1;
	struct dc_event *e = ring_reserve(sizeof(*e));
	if (!e) {
		count_stat(DC_STAT_LOST);
		return -1;
	}
	fill_call(e, &st->f[i], owner >> 32, (__u32)owner, i,
		  i > 0 ? st->f[(i - 1) & (DC_MAX_DEPTH - 1)].id : 0, now, 0);
	e->flags |= (__u32)how;
	ring_submit(e, sizeof(*e), !!(how & DC_SEND_WAKE));
	return 0;
}

/* The thread tid of tgid is exiting at user rsp sp (0: not known): send the calls still
 * open on its stack as unfinished records (a process killed inside write(2) still shows
 * that write), or as unwound when their entry rsp is below sp (an exception or longjmp
 * left them before the exit: bpf/datacrumbs.h "Return instructions"), then forget the
 * stack. A global function: the verifier checks it once per program, not at each of its
 * callers (dc_exec has three; inlined, they were most of its 20 ms to load). Returns 0. */
__noinline int flush_stack(__u32 tgid, __u32 tid, __u64 sp)
{
	struct dc_stack *st = stack_of(tid);
	if (!st)
		return 0;
	__u64 now = bpf_ktime_get_ns(), owner = (__u64)tgid << 32 | tid;
	__u32 depth = st->depth < DC_MAX_DEPTH ? st->depth : DC_MAX_DEPTH;
	for (__u32 d = 0; d < DC_MAX_DEPTH; d++) {
		if (d >= depth)
			break;
		struct dc_frame *f = &st->f[d];
		dc_send_frame(st, d, owner, now,
			      f->sp && !f->moves && f->sp < sp ? DC_F_UNWOUND : DC_F_UNFINISHED);
	}
	stack_free(st, tid);
	return 0;
}

/* A new call starts at user rsp sp where a call whose return the kernel hijacked (a
 * session return or uretprobe) also started: is that older call over? It is alive only
 * if it tail-called this one, and then the return address at sp is still the kernel's
 * uretprobe trampoline (the start of the process's uprobe XOL area: kernel/events/
 * uprobes.c uprobe_get_trampoline_vaddr; the kernel itself tells chained calls so, in
 * prepare_uretprobe). Returns 1 when it is over. */
#ifdef DC_USER_STACKS
static __always_inline int hijack_dead(__u64 sp)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();
	__u64 tramp = BPF_CORE_READ(t, mm, uprobes_state.xol_area, vaddr), ra = 0;
	if (!tramp || bpf_probe_read_user(&ra, sizeof(ra), (const void *)sp))
		return 0;
	return ra != tramp;
}
#else
/* Only uprobe.bpf.c (which defines DC_USER_STACKS) pushes frames with a user rsp, so
 * only its dc_unwind can ask (DC_UW_ENTRY with sp); the other objects compile none of
 * it, and libbpf searches the kernel's BTF for none of its types (mm_struct, xol_area). */
static __always_inline int hijack_dead(__u64 sp)
{
	return 0;
}
#endif

/* Sends the frames on top of stack st (the current thread's) that a probe hit at user
 * rsp sp shows over (mode: enum above; DC_UW_POP: all down to `keep` frames), each as a
 * call left without a return (DC_F_UNWOUND: an exception or a longjmp went past it), dur
 * up to now, no ret; profile mode sends nothing (not a call to count). Stops at the first
 * live frame, a kernel-side frame (sp 0), a frame whose stack moves, or `keep` frames.
 * A global function: the verifier checks it once, not at each caller's every path.
 * Returns the number of frames popped. */
__noinline int dc_unwind(struct dc_stack *st, __u64 sp, int mode, __u32 keep)
{
	if (!st)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	int n = 0;
	for (int i = 0; i < DC_MAX_DEPTH; i++) {
		__u32 d = st->depth;
		if (d == 0 || d > DC_MAX_DEPTH || d <= keep)
			break;
		barrier_var(d); /* keep the masks: the verifier loses d's range otherwise */
		struct dc_frame *f = &st->f[(d - 1) & (DC_MAX_DEPTH - 1)];
		if (mode != DC_UW_POP) {
			if (!f->sp || f->moves || f->sp > sp || (f->sp == sp && mode == DC_UW_RETURN))
				break;
			if (f->sp == sp && mode == DC_UW_ENTRY && !(f->cookie & DC_COOKIE_INSN) &&
			    !hijack_dead(sp))
				break; /* a tail call from a call whose return the kernel hijacked */
			if (f->sp == sp && mode == DC_UW_ENTRY && f->tails)
				break; /* a tail call from a call returning at return sites */
		}
		/* profile mode sends the unwound frames only of probes that still travel as
		 * records (pinfo `record`: every probe while on stand-by, --auto-profile) */
		__u32 uprobe_nr = DC_COOKIE_PROBE(f->cookie);
		struct dc_pinfo *upi = profile_ns ? bpf_map_lookup_elem(&pinfo, &uprobe_nr) : NULL;
		if (!profile_ns || !upi || upi->record)
			dc_send_frame(st, d - 1, pid_tgid, now, DC_F_UNWOUND | DC_SEND_WAKE);
		st->depth = d - 1;
		n++;
	}
	return n;
}

/* The probed call with this cookie returns `ret` on the current thread: pop its frame
 * (and those of calls that never returned above it) and send one DC_EV_CALL record,
 * with the path argument's string when the cookie names one. Long on purpose: one
 * verifier-checked sequence (frame pop, record reservation, argument replacement, path
 * copy) whose bounds checks must stay next to the accesses they guard. btf: as
 * fd_special (profile mode's file key, an open's inode). */
static __always_inline void call_return_fd(__u64 cookie, long ret, int btf)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	if (!maybe_traced(tgid)) /* no traced process has its slot: no frame of it either */
		return;
	struct dc_stack *st = stack_of(tid);
	if (!st || st->depth == 0) {
		/* attached while the call was in flight, or the process is not traced */
		if (bpf_map_lookup_elem(&traced, &tgid))
			count_stat(DC_STAT_UNPAIRED);
		return;
	}
	/* the return time, read once the thread is known to have a call open, so that an
	 * untraced thread's syscall exit reads no clock (the stack's hash lookup, ~20 ns,
	 * now counts in the call's dur) */
	__u64 now = bpf_ktime_get_ns();
	__u32 d = st->depth - 1;
	if (d >= DC_MAX_DEPTH) {
		st->depth = d;
		return;
	}
	/* A frame whose probe differs was left by a call that never returned (longjmp,
	 * exception): find this probe's own, up to the whole stack; those above it are
	 * sent as unwound. */
	__u32 top = d;
	for (int i = 0; i < DC_MAX_DEPTH; i++) {
		if (st->f[d & (DC_MAX_DEPTH - 1)].cookie == cookie || d == 0)
			break;
		d--;
	}
	struct dc_frame *f = &st->f[d & (DC_MAX_DEPTH - 1)];
	if (f->cookie != cookie) {
		count_stat(DC_STAT_UNPAIRED);
		return;
	}
	/* the record's `sent` (ring_submit_at): the return time, unless records of frames
	 * above this one go first (a clock read fewer per call) */
	__u64 sent = now;
	if (top > d) { /* the frames above this probe's own */
		dc_unwind(st, 0, DC_UW_POP, d + 1);
		sent = bpf_ktime_get_ns();
	}
	__u64 parent = d > 0 ? st->f[(d - 1) & (DC_MAX_DEPTH - 1)].id : 0;
	__u32 path = DC_COOKIE_PATH(cookie) - 1, probe = DC_COOKIE_PROBE(cookie), zero = 0;
	if (cookie >> 32)
		return_reads(cookie, f, ret);
	/* one lookup of the probe's description per call: profile mode, a second string, a
	 * string's length as the bytes asked */
	struct dc_pinfo *pi = bpf_map_lookup_elem(&pinfo, &probe);
	struct dc_path2_event *sc = NULL;
	if (pi && pi->slen >= 1 && pi->slen <= DC_MAX_ARGS) {
		/* fputs: the string's length, read at return (the call has read it, so its
		 * page is resident; at entry a literal's page may not be yet) */
		sc = bpf_map_lookup_elem(&scratch, &zero);
		long n = sc ? read_user_str(sc->path2, sizeof(sc->path2),
						       (const void *)arg_at(f, pi->slen - 1)) : 0;
		f->iov_bytes = n > 0 ? n - 1 + pi->slen_add : 0;
	}
	if (profile_ns)
		f->way_slot1 = st->slot + 1;
	if (profile_ns &&
	    (btf ? dc_profile_ret1(pi, f, tgid, now, ret) : dc_profile_ret0(pi, f, tgid, now, ret))) {
		st->depth = d;
		return;
	}

	sc = path < DC_MAX_ARGS ? bpf_map_lookup_elem(&scratch, &zero) : NULL;
	/* a second string (rename's newpath): the probe's description says which */
	__u32 p2 = sc && pi ? pi->path2 : 0;
	if (sc && p2 >= 1 && p2 <= DC_MAX_ARGS) {
		long n = read_user_str(sc->path, sizeof(sc->path),
						 (const void *)f->args[path]);
		long n2 = read_user_str(sc->path2, sizeof(sc->path2),
						  (const void *)arg_at(f, p2 - 1));
		struct dc_path2_event *pe;
		__u64 bytes;
		if (n <= DC_PATH_SMALL && n2 <= DC_PATH_SMALL) {
			bytes = sizeof(pe->e) + 2 * DC_PATH_SMALL;
			pe = ring_reserve(sizeof(pe->e) + 2 * DC_PATH_SMALL);
			if (pe) {
				bpf_probe_read_kernel(pe->path, DC_PATH_SMALL, sc->path);
				bpf_probe_read_kernel(pe->path + DC_PATH_SMALL, DC_PATH_SMALL,
						      sc->path2);
			}
		} else {
			bytes = sizeof(*pe);
			pe = ring_reserve(sizeof(*pe));
			if (pe) {
				bpf_probe_read_kernel(pe->path, DC_PATH_MAX, sc->path);
				bpf_probe_read_kernel(pe->path2, DC_PATH_MAX, sc->path2);
			}
		}
		if (!pe) {
			count_stat(DC_STAT_LOST);
		} else {
			fill_call(&pe->e, f, tgid, tid, d, parent, now, ret);
			pe->e.path_len = n > 0 ? n : 0;
			pe->e.path2_len = n2 > 0 ? n2 : 0;
			ring_submit_at(pe, bytes, 1, sent);
		}
	} else if (sc) {
		/* read at return: the kernel has faulted the string's page in by now; then
		 * send it in the smallest record class it fits, to spare the ring buffer */
		long n = read_user_str(sc->path, sizeof(sc->path),
						 (const void *)f->args[path]);
		struct dc_path_event *pe;
		__u64 bytes;
		if (n <= DC_PATH_SMALL) {
			bytes = sizeof(pe->e) + DC_PATH_SMALL;
			pe = ring_reserve(sizeof(pe->e) + DC_PATH_SMALL);
			if (pe)
				bpf_probe_read_kernel(pe->path, DC_PATH_SMALL, sc->path);
		} else {
			bytes = sizeof(*pe);
			pe = ring_reserve(sizeof(*pe));
			if (pe)
				bpf_probe_read_kernel(pe->path, DC_PATH_MAX, sc->path);
		}
		if (!pe) {
			count_stat(DC_STAT_LOST);
		} else {
			fill_call(&pe->e, f, tgid, tid, d, parent, now, ret);
			pe->e.path_len = n > 0 ? n : 0;
			/* the new fd: the return value, or a returned FILE's (aux) */
			long fd = DC_COOKIE_AUX_SRC(cookie) == DC_AUX_RET ?
				  (pe->e.flags & DC_F_AUX ? (long)pe->e.aux : -1) : ret;
			if ((cookie & DC_COOKIE_OPENS) && fd >= 0)
				fd_inode(fd, &pe->e.ino, &pe->e.dev, btf);
			ring_submit_at(pe, bytes, 1, sent);
		}
	} else {
		struct dc_event *e = ring_reserve(sizeof(*e));
		if (!e) {
			count_stat(DC_STAT_LOST);
		} else {
			fill_call(e, f, tgid, tid, d, parent, now, ret);
			ring_submit_at(e, sizeof(*e), 1, sent);
		}
	}
	st->depth = d;
}

/* call_return_fd with btf 0 (programs that run on every kernel), as a global function:
 * the verifier checks it once per program, not at each of its callers (a session uprobe's
 * return and call_retsite). Returns 0. */
__noinline int dc_call_return(__u64 cookie, long ret)
{
	call_return_fd(cookie, ret, 0);
	return 0;
}

/* The calls a return site returns at once, at most: one and those it tail-called. */
#define DC_TAIL_RUN 4

/* A return site (cookie bit DC_COOKIE_RETSITE) of a return-instruction probe was hit:
 * the `ret` of the call whose frame has the probe's cookie and entry rsp == sp is about
 * to run, returning `ret` (rax). Frames above it shown dead by sp are sent as unwound
 * first; then the call returns as at a uretprobe (dc_call_return), with the calls it
 * tail-called, whose frames have its rsp. No frame of this probe at this sp: an unpaired
 * return (the entry was missed), the stack is left alone; at a shared site (the `ret` of
 * a tail-called function, DC_COOKIE_INSN clear) the call of another caller. */
static __always_inline void call_retsite(__u64 cookie, __u64 sp, long ret)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	/* a shared site (no DC_COOKIE_INSN): a tail-called function's `ret`, which its other
	 * callers' calls reach too; its owner, as every owner of sites, has the bit */
	int shared = !(cookie & DC_COOKIE_INSN);
	__u64 own = (cookie & ~DC_COOKIE_RETSITE) | DC_COOKIE_INSN;
	struct dc_stack *st = stack_of(tid);
	if (!st || st->depth == 0) {
		if (!shared && bpf_map_lookup_elem(&traced, &tgid))
			count_stat(DC_STAT_UNPAIRED);
		return;
	}
	deep_over(st, sp);
	if (st->depth > DC_MAX_DEPTH) { /* a too-deep call returns */
		if (!shared)
			st->depth--;
		return;
	}
	struct dc_frame *top = &st->f[(st->depth - 1) & (DC_MAX_DEPTH - 1)];
	if (top->moves) { /* a moving stack (Go) is paired by probe alone */
		dc_call_return(own, ret);
		return;
	}
	dc_unwind(st, sp, DC_UW_RETURN, 0);
	/* the frames on top entered at this rsp: a call and the calls it tail-called (a
	 * tail call enters at its caller's rsp), all returning now; one must be this
	 * probe's, else the `ret` is another call's */
	int mine = 0;
	for (__u32 k = 0; k < DC_TAIL_RUN; k++) {
		__u32 d = st->depth;
		if (k >= d || d > DC_MAX_DEPTH)
			break;
		struct dc_frame *f = &st->f[(d - 1 - k) & (DC_MAX_DEPTH - 1)];
		if (f->sp != sp || !(f->cookie & DC_COOKIE_INSN))
			break;
		mine |= f->cookie == own;
	}
	if (!mine) {
		if (!shared)
			count_stat(DC_STAT_UNPAIRED);
		return;
	}
	for (__u32 k = 0; k < DC_TAIL_RUN; k++) {
		__u32 d = st->depth;
		if (d == 0 || d > DC_MAX_DEPTH)
			break;
		struct dc_frame *f = &st->f[(d - 1) & (DC_MAX_DEPTH - 1)];
		if (f->sp != sp || !(f->cookie & DC_COOKIE_INSN))
			break;
		dc_call_return(f->cookie, ret);
	}
}

/* A catch point (DC_COOKIE_CATCH) was hit at user rsp sp: send the calls the caught
 * exception unwound. Nothing else is recorded. */
static __always_inline void call_caught(__u64 sp)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct dc_stack *st = stack_of(tid);
	if (st) {
		deep_over(st, sp);
		dc_unwind(st, sp, DC_UW_CATCH, 0);
	}
}

/* Sends a record made outside an entry/return pair (a kernel event), given its owner,
 * times, args and DC_F_* flags. Returns 0, or -1 when the ring buffer was full (counted as lost). */
static __always_inline int emit_record(__u64 cookie, __u32 tgid, __u32 tid, __u64 id,
				       __u64 parent, __u32 level, __u64 ts, __u64 dur,
				       const __u64 args[DC_MAX_ARGS], __u32 flags)
{
	if (profile_ns) {
		__u32 probe = DC_COOKIE_PROBE(cookie);
		if (profile_call(bpf_map_lookup_elem(&pinfo, &probe), probe, tgid, ts, ts + dur,
				 args, 0, 0, 0, 0, 0, 0, 0))
			return 0;
	}
	struct dc_event *e = ring_reserve(sizeof(*e));
	if (!e) {
		count_stat(DC_STAT_LOST);
		return -1;
	}
	e->kind = DC_EV_CALL;
	e->probe = DC_COOKIE_PROBE(cookie);
	e->pid = tgid;
	e->tid = tid;
	e->ts = ts;
	e->dur = dur;
	e->id = id;
	e->parent = parent;
	e->level = level;
	e->path_len = 0;
	e->ret = 0;
	e->iov_bytes = 0;
	e->flags = flags;
	e->path2_len = 0;
	e->ino = 0;
	e->dev = 0;
	e->aux = 0;
	for (int i = 0; i < DC_MAX_ARGS; i++)
		e->args[i] = args[i];
	ring_submit(e, sizeof(*e), 1);
	return 0;
}

/* Where an event that happens inside the current thread's probed calls belongs: a new
 * id of process tgid, the innermost open call's id as parent, and the level below it.
 * Returns 0, or -1 when the current process is not traced. */
static __always_inline int current_place(__u32 tgid, __u32 tid, __u64 *id, __u64 *parent,
					 __u32 *level)
{
	struct dc_proc *p = bpf_map_lookup_elem(&traced, &tgid);
	if (!p)
		return -1;
	*id = __sync_fetch_and_add(&p->next_id, 1);
	*parent = 0;
	*level = 1;
	struct dc_stack *st = stack_of(tid);
	if (st && st->depth > 0) {
		__u32 d = st->depth - 1;
		if (d < DC_MAX_DEPTH) {
			*parent = st->f[d].id;
			*level = d + 2;
		}
	}
	return 0;
}

/* An entry-only probe (cookie bit DC_COOKIE_NORET) was hit: one record now, dur 0, no
 * return value, nested in the thread's innermost open call; no frame is pushed, since
 * no return will pop it. Untraced processes return at once. */
static __always_inline void call_instant(__u64 cookie, __u64 a0, __u64 a1, __u64 a2,
					 __u64 a3, __u64 a4, __u64 a5)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), id, parent;
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid, level;
	if (current_place(tgid, tid, &id, &parent, &level))
		return;
	__u64 args[DC_MAX_ARGS] = { a0, a1, a2, a3, a4, a5 };
	emit_record(cookie, tgid, tid, id, parent, level, bpf_ktime_get_ns(), 0, args,
		    DC_F_ENTRY);
}

/* An instant event (dur 0) of the current thread, nested in its innermost probed call. */
static __always_inline void emit_now(__u64 cookie, const __u64 args[DC_MAX_ARGS])
{
	__u64 pid_tgid = bpf_get_current_pid_tgid(), id, parent;
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid, level;
	if (current_place(tgid, tid, &id, &parent, &level))
		return;
	emit_record(cookie, tgid, tid, id, parent, level, bpf_ktime_get_ns(), 0, args, 0);
}

#endif
