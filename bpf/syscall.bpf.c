/* syscall.bpf.c: the syscall layer: sys_enter/sys_exit raw tracepoints (tp_btf) turned into
 * calls on the same per-thread stack as the uprobes, so a syscall nests under its libc call. */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Syscall number -> attach cookie (DC_COOKIE of its probe), 0: not traced. Written by
 * the loader; the number space is the x86-64 table (asm/unistd_64.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DC_NR_SYSCALLS);
	__type(key, __u32);
	__type(value, __u64);
} syscall_cookie SEC(".maps");

static __always_inline __u64 cookie_of(long id)
{
	__u32 nr = id;
	if (id < 0 || nr >= DC_NR_SYSCALLS)
		return 0;
	__u64 *c = bpf_map_lookup_elem(&syscall_cookie, &nr);
	return c ? *c : 0;
}

/* raw_syscalls:sys_enter; x86-64 syscall arguments: di, si, dx, r10, r8, r9 (syscall(2)). */
SEC("tp_btf/sys_enter")
int BPF_PROG(dc_sys_enter, struct pt_regs *regs, long id)
{
	__u64 cookie = cookie_of(id);
	if (!cookie)
		return 0;
	call_enter(cookie, regs->di, regs->si, regs->dx, regs->r10, regs->r8, regs->r9);
	return 0;
}

/* raw_syscalls:sys_exit; the syscall number is orig_ax, ret is -errno on failure. */
SEC("tp_btf/sys_exit")
int BPF_PROG(dc_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 cookie = cookie_of(regs->orig_ax);
	if (!cookie)
		return 0;
	call_return(cookie, ret);
	return 0;
}
