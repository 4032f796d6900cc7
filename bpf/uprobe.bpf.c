/* uprobe.bpf.c: the generic session uprobe (or, on kernels without, uprobe/uretprobe pair)
 * behind every user-space layer (POSIX, STDIO, MPI-IO, dc.uprobe) and the sched
 * tracepoints that tell which processes are traced. */
#define DC_USER_STACKS /* frames with a user rsp: the hijack test of dc_unwind (common.bpf.h) */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* libbpf 1.1's bpf_tracing.h stops at PARM5; the sixth integer argument of the x86-64
 * SysV ABI is in r9. */
#ifndef PT_REGS_PARM6
#define PT_REGS_PARM6(x) ((x)->r9)
#endif

/* A return instruction of a probed function (cookie bit DC_COOKIE_RETSITE, not a catch
 * point) was hit at user rsp sp, returning ret (rax): call_retsite. Returns 0. Global,
 * as are the two below and dc_call_return: the verifier checks each once, not at every
 * caller (dc_session inlined them all, call_return twice: 50-86 ms to load); and apart,
 * so that no chain of calls holds all their stack frames (512 bytes in all). */
__noinline int dc_uprobe_retsite(__u64 cookie, __u64 sp, long ret)
{
	call_retsite(cookie, sp, ret);
	return 0;
}

/* An entry-only probe (DC_COOKIE_NORET, not a catch point) was hit with ctx's
 * argument registers (x86-64 SysV: rdi, rsi, rdx, rcx, r8, r9): call_instant. Returns 0. */
__noinline int dc_uprobe_instant(struct pt_regs *ctx, __u64 cookie)
{
	call_instant(cookie, PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
		     PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx), PT_REGS_PARM6(ctx));
	return 0;
}

/* A call to push (call_enter_at) at a uprobe, from ctx's registers. Returns 1 when the
 * call's return must be seen, else 0. */
__noinline int dc_uprobe_push(struct pt_regs *ctx, __u64 cookie)
{
	int pushed = call_enter_at(cookie, PT_REGS_SP(ctx), PT_REGS_PARM1(ctx),
				   PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), PT_REGS_PARM4(ctx),
				   PT_REGS_PARM5(ctx), PT_REGS_PARM6(ctx));
	/* return-instruction probes (bit 39): their return sites pop the frame */
	return pushed && !(cookie & DC_COOKIE_INSN);
}

/* A probed function's entry at a uprobe whose attach cookie is `cookie`, from its
 * registers ctx (the arguments as above; rsp): a catch point, an entry-only probe, a
 * return instruction, or a call to push. Returns 1 when the call's return must be seen
 * (call_enter_at), else 0. */
static __always_inline int uprobe_enter(struct pt_regs *ctx, __u64 cookie)
{
	if ((cookie & DC_COOKIE_CATCH) == DC_COOKIE_CATCH) { /* a C++ handler caught */
		call_caught(PT_REGS_SP(ctx));
		return 0;
	}
	if (cookie & DC_COOKIE_NORET) /* entry-only probe: no return is seen */
		return dc_uprobe_instant(ctx, cookie);
	if (cookie & DC_COOKIE_RETSITE) /* a return instruction of a probed function */
		return dc_uprobe_retsite(cookie, PT_REGS_SP(ctx), PT_REGS_RC(ctx));
	return dc_uprobe_push(ctx, cookie);
}

SEC("uprobe")
int dc_entry(struct pt_regs *ctx)
{
	uprobe_enter(ctx, bpf_get_attach_cookie(ctx));
	return 0;
}

SEC("uretprobe")
int dc_return(struct pt_regs *ctx)
{
	dc_call_return(bpf_get_attach_cookie(ctx), PT_REGS_RC(ctx));
	return 0;
}

/* Session uprobe kfuncs (kernel/trace/bpf_trace.c, Linux 6.13: "bpf: Add support for
 * uprobe multi session attach"); weak, so that the object still loads where they are
 * missing and dc_session is not loaded (the loader falls back to the pair above). */
extern bool bpf_session_is_return(void) __ksym __weak;

/* One program for both ends of a call, attached through a uprobe_multi link of attach
 * type BPF_TRACE_UPROBE_SESSION (the loader sets it: libbpf 1.1 has no "uprobe.session").
 * At entry it returns 0 when the call's return must be seen, 1 when not (the process is
 * not traced): the kernel then hijacks no return address, so untraced processes run with
 * nothing but the entry breakpoint (bpf/datacrumbs.h, "Session uprobes"). Functions
 * probed at their return instructions never ask for the return ("Return instructions"). */
SEC("uprobe")
int dc_session(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	if (bpf_session_is_return()) {
		dc_call_return(cookie, PT_REGS_RC(ctx));
		return 0;
	}
	return uprobe_enter(ctx, cookie) ? 0 : 1;
}

/* Sends a process record (fork, exec, exit, dlstate); path is the exec'd file name or
 * NULL. The record is as small as its path allows (no path: just the dc_event). */
static __always_inline void send_proc_flags(__u32 kind, __u32 pid, __u32 tid, __u64 arg,
					    const char *path, __u64 flags)
{
	__u32 zero = 0;
	struct dc_path_event *sc = path ? bpf_map_lookup_elem(&scratch, &zero) : NULL;
	long n = sc ? bpf_probe_read_kernel_str(sc->path, sizeof(sc->path), path) : 0;
	struct dc_path_event *pe;
	/* each record class copies its path in its own branch: 6.1's verifier loses which
	 * size was reserved when one copy follows the three reserves */
	if (n <= 0) {
		pe = ring_reserve(sizeof(pe->e));
	} else if (n <= DC_PATH_SMALL) {
		pe = ring_reserve(sizeof(pe->e) + DC_PATH_SMALL);
		if (pe)
			bpf_probe_read_kernel(pe->path, DC_PATH_SMALL, sc->path);
	} else {
		pe = ring_reserve(sizeof(*pe));
		if (pe)
			bpf_probe_read_kernel(pe->path, DC_PATH_MAX, sc->path);
	}
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
	if (n > 0)
		pe->e.path_len = n;
	pe->e.sent = bpf_ktime_get_ns(); /* the merge key (ring_submit) */
	bpf_ringbuf_submit(pe, flags);
}

static __always_inline void send_proc(__u32 kind, __u32 pid, __u32 tid, __u64 arg,
				      const char *path)
{
	send_proc_flags(kind, pid, tid, arg, path, 0);
}

/* The threads of traced processes the tracer has seized with ptrace (core/hold.c), by
 * tid: DC_HOLD_SEIZED, or DC_HOLD_HELD while one is held at _dl_debug_state. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u32);
} holdable SEC(".maps");

/* Entry of the dynamic loader's _dl_debug_state (glibc elf/dl-debug.c: the function whose
 * address is r_debug.r_brk, called when the list of loaded objects is about to change
 * (RT_ADD, RT_DELETE) and when it is consistent again (RT_CONSISTENT): at start-up, in
 * dlopen after the new objects are mapped and before any of their code (relocation, then
 * constructors) runs, and in dlclose). It fires in every process that loads a library;
 * only traced ones are looked at, and nothing but this entry is ever probed (no return
 * probe). A seized thread of a traced process is held (DC_HOLD_SIGNAL); the record,
 * woken at once, tells the tracer to look at the process's mappings. */
SEC("uprobe")
int dc_dlstate(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32, tid = (__u32)id;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	/* the cookie: r_debug.r_state's distance from this function (core/attach.c); only
	 * RT_CONSISTENT (0, <link.h>) can show a new object mapped: RT_ADD comes before the
	 * mapping, RT_DELETE before an unmapping */
	__s64 delta = (__s64)bpf_get_attach_cookie(ctx);
	int state = 0;
	if (delta &&
	    !bpf_probe_read_user(&state, sizeof(state), (void *)(PT_REGS_IP(ctx) + delta)) &&
	    state != 0)
		return 0;
	__u32 *h = bpf_map_lookup_elem(&holdable, &tid);
	__u64 held = 0;
	if (h && *h == DC_HOLD_SEIZED && !bpf_send_signal_thread(DC_HOLD_SIGNAL)) {
		*h = DC_HOLD_HELD;
		held = 1;
	}
	send_proc_flags(DC_EV_DLSTATE, tgid, tid, held, 0, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* The next call id of each tgid whose traced process has ended, so that a process that
 * later gets the same pid (pid reuse: pid_max wraps) goes on counting from there: call
 * ids stay unique per pid in the trace, and no p_idx can name a call of an earlier
 * process. An LRU map: the oldest pids age out first (by then pid_max has wrapped many
 * times over and their ids are long written). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} ended_ids SEC(".maps");

/* Stops tracing tgid, keeping its id counter for a later process of the same pid. */
static __always_inline void untrace(__u32 tgid)
{
	struct dc_proc *p = bpf_map_lookup_elem(&traced, &tgid);
	if (p) {
		__u64 next = p->next_id;
		bpf_map_update_elem(&ended_ids, &tgid, &next, BPF_ANY);
	}
	bpf_map_delete_elem(&traced, &tgid);
}

/* The user rsp in a task's saved registers (bpf_task_pt_regs; NULL: 0). pt_regs is the
 * ABI's layout (bpf/vmlinux.h): a plain read, no relocation. */
static __always_inline __u64 user_sp(struct pt_regs *regs)
{
	__u64 sp = 0;
	if (regs)
		bpf_probe_read_kernel(&sp, sizeof(sp), &regs->sp);
	return sp;
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
	/* a pid traced before goes on with its ids (pid reuse: ended_ids) */
	__u64 *next = bpf_map_lookup_elem(&ended_ids, &ctgid);
	struct dc_proc fresh = { .next_id = next ? *next : 1 };
	hint_traced(ctgid);
	bpf_map_update_elem(&traced, &ctgid, &fresh, BPF_ANY);
	send_proc(DC_EV_FORK, ctgid, ctgid, ptgid, 0);
	return 0;
}

/* 1 when the tracer runs without root (capabilities only, set by the loader before
 * load): a traced process that execs a program gaining privileges stops being traced. */
const volatile __u32 untrace_secureexec = 0;

SEC("tp_btf/sched_process_exec")
int BPF_PROG(dc_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), tid = BPF_CORE_READ(p, pid);
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(p);
	__u64 sp = user_sp(regs);
	/* a thread with a stack counts as traced (call_enter_fd): a thread other than the
	 * leader that execs takes the leader's tid (old_pid was its own), so its old slot
	 * goes; in a process untraced before it execs (core/step.c: a task root could not
	 * hand over), its stack goes too, and nothing of the new program is traced. Their
	 * open calls (the execve) are sent unfinished. */
	if (!maybe_traced(tgid)) /* no thread of it can hold a stack */
		return 0;
	if ((__u32)old_pid != tid)
		flush_stack(tgid, (__u32)old_pid, sp);
	if (!bpf_map_lookup_elem(&traced, &tgid)) {
		flush_stack(tgid, tid, sp);
		return 0;
	}
	/* bprm->secureexec: this exec changes ids or raises capabilities (setuid, setgid,
	 * file capabilities, an LSM transition), the kernel's AT_SECURE (fs/exec.c,
	 * security/commoncap.c cap_bprm_creds_from_file). ptrace does not let such an exec
	 * gain privileges under a tracer that lacks them; we stop tracing the process. */
	__u64 secure = untrace_secureexec && BPF_CORE_READ_BITFIELD_PROBED(bprm, secureexec);
	/* the name of the file that runs (not the path execve was given: /proc/self/exe,
	 * a relative path, a symlink) */
	send_proc(DC_EV_EXEC, tgid, BPF_CORE_READ(p, pid), secure,
		  (const char *)BPF_CORE_READ(bprm, file, f_path.dentry, d_name.name));
	if (secure) {
		/* the exec'ing thread's stack goes too (its execve shows unfinished) */
		flush_stack(tgid, tid, sp);
		untrace(tgid);
	}
	return 0;
}

/* Fires for every exiting thread (task) of any process. */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(dc_exit, struct task_struct *task)
{
	__u32 tgid = BPF_CORE_READ(task, tgid), tid = BPF_CORE_READ(task, pid);
	/* the user rsp the thread exits at (exit_group(2), or where a signal killed it):
	 * frames below it were left before, by an exception or a longjmp. Every thread
	 * with a stack gives it back, traced or not: its process may have been untraced
	 * (its leader exited first), and a stack's owner counts as traced */
	if (!maybe_traced(tgid)) /* no thread of it can hold a stack, nor it be traced */
		return 0;
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	flush_stack(tgid, tid, user_sp(regs));
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	/* signal->live reached 0: this was the last thread of the process */
	if (BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	send_proc(DC_EV_EXIT, tgid, tid, BPF_CORE_READ(task, exit_code), 0);
	untrace(tgid);
	return 0;
}
