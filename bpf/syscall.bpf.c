/* syscall.bpf.c: the syscall layer: sys_enter/sys_exit raw tracepoints (tp_btf) turned into
 * calls on the same per-thread stack as the uprobes, so a syscall nests under its libc call;
 * and the door to Linux AIO's programs (bpf/aio.bpf.c), tail-called for its syscalls only. */
#define DC_FD_BTF /* fd_facts_btf: the dc_sys_enter/dc_sys_exit pair reads fds through BTF */
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

/* Linux AIO's sys_enter and sys_exit programs (bpf/aio.bpf.c dc_aio_enter, dc_aio_exit),
 * put in slot 0 by the loader when the AIO layer is loaded (core/attach.c load_aio), not
 * attached themselves: a tail call runs them at the end of this object's programs, for
 * io_submit, io_getevents and io_pgetevents alone, so no other system call of any process
 * runs them. An empty slot: bpf_tail_call does nothing and the program goes on. One map
 * per tracepoint (the kernel ties a program array to the hook of its first user). */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} aio_enter_prog SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} aio_exit_prog SEC(".maps");

/* x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl), as bpf/aio.bpf.c */
#define NR_IO_GETEVENTS  208
#define NR_IO_SUBMIT     209
#define NR_IO_PGETEVENTS 333

static __always_inline __u64 cookie_of(long id)
{
	__u32 nr = id;
	if (id < 0 || nr >= DC_NR_SYSCALLS)
		return 0;
	__u64 *c = bpf_map_lookup_elem(&syscall_cookie, &nr);
	return c ? *c : 0;
}

/* raw_syscalls:sys_enter; x86-64 syscall arguments: di, si, dx, r10, r8, r9 (syscall(2)).
 * io_submit goes on to Linux AIO's program after its own frame is pushed (its operations'
 * parent). btf: as fd_special (bpf/common.bpf.h). */
static __always_inline void sys_enter(void *ctx, struct pt_regs *regs, long id, int btf)
{
	__u64 cookie = cookie_of(id);
	if (cookie)
		call_enter_fd(cookie, 0, btf, regs->di, regs->si, regs->dx, regs->r10, regs->r8,
			      regs->r9);
	if (id == NR_IO_SUBMIT)
		bpf_tail_call(ctx, &aio_enter_prog, 0);
}

/* raw_syscalls:sys_exit; the syscall number is orig_ax, ret is -errno on failure. Linux
 * AIO's program runs after the call's frame is popped, as when it was attached after this
 * object's. */
static __always_inline void sys_exit(void *ctx, struct pt_regs *regs, long ret, int btf)
{
	long nr = regs->orig_ax;
	__u64 cookie = cookie_of(nr);
	if (cookie)
		call_return_fd(cookie, ret, btf);
	if (nr == NR_IO_SUBMIT || nr == NR_IO_GETEVENTS || nr == NR_IO_PGETEVENTS)
		bpf_tail_call(ctx, &aio_exit_prog, 0);
}

/* Two pairs, one loaded (core/attach.c load_syscalls): these read an fd's file through
 * BTF (bpf_rdonly_cast, Linux 6.2); the _c pair by probe reads, for older kernels. */
SEC("tp_btf/sys_enter")
int BPF_PROG(dc_sys_enter, struct pt_regs *regs, long id)
{
	sys_enter(ctx, regs, id, 1);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(dc_sys_exit, struct pt_regs *regs, long ret)
{
	sys_exit(ctx, regs, ret, 1);
	return 0;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(dc_sys_enter_c, struct pt_regs *regs, long id)
{
	sys_enter(ctx, regs, id, 0);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(dc_sys_exit_c, struct pt_regs *regs, long ret)
{
	sys_exit(ctx, regs, ret, 0);
	return 0;
}
