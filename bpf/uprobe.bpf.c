/* uprobe.bpf.c: the generic uprobe/uretprobe pair behind every user-space layer (POSIX,
 * STDIO, MPI-IO) and the sched tracepoints that tell which processes are traced. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "datacrumbs.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* libbpf 1.1's bpf_tracing.h stops at PARM5; the sixth integer argument of the x86-64
 * SysV ABI is in r9. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) ((x)->r9)
#endif

/* The traced processes, by tgid. The loader puts the first one in; forks of a traced
 * process are added here, exits removed. The value holds the process's call-id counter. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct dc_proc);
} traced SEC(".maps");

/* One in-flight probed call. */
struct dc_frame {
	__u64 cookie;
	__u64 ts;
	__u64 id;
	__u64 iov_bytes;
	__u64 args[DC_MAX_ARGS];
};

/* The calls in flight on one thread, innermost last. Deleted when the outermost call
 * returns and when the thread exits, so no entry state outlives its call. */
struct dc_stack {
	__u32 depth;
	__u32 pad;
	struct dc_frame f[DC_MAX_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct dc_stack);
} stacks SEC(".maps");

/* A zeroed dc_stack to insert from (BPF stacks are 512 bytes, dc_stack is larger). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_stack);
} zero_stack SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20); /* resized by the loader (--buffer-size) */
} events SEC(".maps");

/* Where a path string is read before it is copied into a record of the right size. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct dc_path_event);
} scratch SEC(".maps");

/* enum dc_stat counters, per CPU. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, DC_STAT_NR);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Wake the consumer only once this much data waits (set by the loader before load);
 * below it, the consumer's own timer drains the buffer. A wakeup per record costs the
 * traced thread an IPI and the tracer a context switch per event. */
const volatile __u64 wakeup_bytes = 0;

static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes
	       ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

static __always_inline void count_stat(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
}

/* Sums iov_len over up to DC_IOV_MAX entries of a user iovec array. */
static __always_inline __u64 iov_sum(const struct iovec *iov, __u64 cnt)
{
	__u64 sum = 0;
	for (int i = 0; i < DC_IOV_MAX; i++) {
		struct iovec v;
		if (i >= cnt)
			break;
		if (bpf_probe_read_user(&v, sizeof(v), &iov[i]))
			break;
		sum += v.iov_len;
	}
	return sum;
}

SEC("uprobe")
int dc_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct dc_proc *p = bpf_map_lookup_elem(&traced, &tgid);
	if (!p)
		return 0;

	struct dc_stack *st = bpf_map_lookup_elem(&stacks, &tid);
	if (!st) {
		__u32 zero = 0;
		struct dc_stack *z = bpf_map_lookup_elem(&zero_stack, &zero);
		if (!z)
			return 0;
		bpf_map_update_elem(&stacks, &tid, z, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&stacks, &tid);
		if (!st)
			return 0;
	}
	__u32 d = st->depth;
	if (d >= DC_MAX_DEPTH) {
		count_stat(DC_STAT_DEEP);
		st->depth = d + 1; /* keep counting so the returns pair up again */
		return 0;
	}
	struct dc_frame *f = &st->f[d & (DC_MAX_DEPTH - 1)];
	__u64 cookie = bpf_get_attach_cookie(ctx);
	f->cookie = cookie;
	f->id = __sync_fetch_and_add(&p->next_id, 1);
	f->args[0] = PT_REGS_PARM1(ctx);
	f->args[1] = PT_REGS_PARM2(ctx);
	f->args[2] = PT_REGS_PARM3(ctx);
	f->args[3] = PT_REGS_PARM4(ctx);
	f->args[4] = PT_REGS_PARM5(ctx);
	f->args[5] = PT_REGS_PARM6(ctx);
	f->iov_bytes = 0;
	__u32 iov = DC_COOKIE_IOV(cookie) - 1, cnt = DC_COOKIE_IOVCNT(cookie) - 1;
	if (iov < DC_MAX_ARGS && cnt < DC_MAX_ARGS)
		f->iov_bytes = iov_sum((const struct iovec *)f->args[iov], f->args[cnt]);
	st->depth = d + 1;
	f->ts = bpf_ktime_get_ns();
	return 0;
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
	for (int i = 0; i < DC_MAX_ARGS; i++)
		e->args[i] = f->args[i];
}

SEC("uretprobe")
int dc_return(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct dc_stack *st = bpf_map_lookup_elem(&stacks, &tid);
	if (!st || st->depth == 0) {
		/* attached while the call was in flight, or the process is not traced */
		if (bpf_map_lookup_elem(&traced, &tgid))
			count_stat(DC_STAT_UNPAIRED);
		return 0;
	}
	__u32 d = st->depth - 1;
	if (d >= DC_MAX_DEPTH) {
		st->depth = d;
		return 0;
	}
	/* A frame whose probe differs was left by a call that never returned (longjmp,
	 * exception): drop frames until this probe's own, up to the whole stack. */
	__u64 cookie = bpf_get_attach_cookie(ctx);
	for (int i = 0; i < DC_MAX_DEPTH; i++) {
		if (st->f[d & (DC_MAX_DEPTH - 1)].cookie == cookie || d == 0)
			break;
		d--;
	}
	struct dc_frame *f = &st->f[d & (DC_MAX_DEPTH - 1)];
	if (f->cookie != cookie) {
		count_stat(DC_STAT_UNPAIRED);
		return 0;
	}
	__u64 parent = d > 0 ? st->f[(d - 1) & (DC_MAX_DEPTH - 1)].id : 0;
	long ret = PT_REGS_RC(ctx);
	__u32 path = DC_COOKIE_PATH(cookie) - 1;

	__u32 zero = 0;
	struct dc_path_event *sc = path < DC_MAX_ARGS ? bpf_map_lookup_elem(&scratch, &zero) : NULL;
	if (sc) {
		/* read at return: the kernel has faulted the string's page in by now; then
		 * send it in the smallest record class it fits, to spare the ring buffer */
		long n = bpf_probe_read_user_str(sc->path, sizeof(sc->path),
						 (const void *)f->args[path]);
		struct dc_path_event *pe;
		if (n <= DC_PATH_SMALL) {
			pe = bpf_ringbuf_reserve(&events, sizeof(pe->e) + DC_PATH_SMALL, 0);
			if (pe)
				bpf_probe_read_kernel(pe->path, DC_PATH_SMALL, sc->path);
		} else {
			pe = bpf_ringbuf_reserve(&events, sizeof(*pe), 0);
			if (pe)
				bpf_probe_read_kernel(pe->path, DC_PATH_MAX, sc->path);
		}
		if (!pe) {
			count_stat(DC_STAT_LOST);
		} else {
			fill_call(&pe->e, f, tgid, tid, d, parent, now, ret);
			pe->e.path_len = n > 0 ? n : 0;
			bpf_ringbuf_submit(pe, submit_flags());
		}
	} else {
		struct dc_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
		if (!e) {
			count_stat(DC_STAT_LOST);
		} else {
			fill_call(e, f, tgid, tid, d, parent, now, ret);
			bpf_ringbuf_submit(e, submit_flags());
		}
	}
	st->depth = d;
	if (d == 0)
		bpf_map_delete_elem(&stacks, &tid);
	return 0;
}

/* Sends a process record (fork, exec, exit); path is the exec'd file name or NULL. */
static __always_inline void send_proc(__u32 kind, __u32 pid, __u32 tid, __u64 arg,
				      const char *path)
{
	struct dc_path_event *pe = bpf_ringbuf_reserve(&events, sizeof(*pe), 0);
	if (!pe) {
		count_stat(DC_STAT_LOST);
		return;
	}
	__builtin_memset(&pe->e, 0, sizeof(pe->e));
	pe->e.kind = kind;
	pe->e.pid = pid;
	pe->e.tid = tid;
	pe->e.ts = bpf_ktime_get_ns();
	pe->e.args[0] = arg;
	if (path) {
		long n = bpf_probe_read_kernel_str(pe->path, sizeof(pe->path), path);
		pe->e.path_len = n > 0 ? n : 0;
	}
	bpf_ringbuf_submit(pe, 0);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(dc_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	if (ctgid == ptgid) /* a new thread: same process */
		return 0;
	if (!bpf_map_lookup_elem(&traced, &ptgid))
		return 0;
	struct dc_proc fresh = { .next_id = 1 };
	bpf_map_update_elem(&traced, &ctgid, &fresh, BPF_ANY);
	send_proc(DC_EV_FORK, ctgid, ctgid, ptgid, 0);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(dc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid);
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	send_proc(DC_EV_EXEC, tgid, BPF_CORE_READ(p, pid), 0, BPF_CORE_READ(bprm, filename));
	return 0;
}

/* Fires for every exiting thread (task) of any process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(dc_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	bpf_map_delete_elem(&stacks, &tid);
	/* signal->live reached 0: this was the last thread of the process */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	send_proc(DC_EV_EXIT, tgid, tid, BPF_CORE_READ(task, exit_code), 0);
	bpf_map_delete_elem(&traced, &tgid);
	return 0;
}
