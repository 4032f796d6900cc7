/* dc_features.h: `datacrumbs features` (which BPF mechanisms work here, found by trying each)
 * and the uprobe_multi link helpers. Not "features.h": that would shadow glibc's <features.h>. */
#ifndef DC_FEATURES_H
#define DC_FEATURES_H

#include <stddef.h>
#include <linux/types.h>

/* uprobe_multi links (kernel >= 6.6): one link attaches a program to many offsets of one
 * file. Debian's libbpf 1.1 and uapi headers predate them, so the attach type and the
 * link_create attr are spelt out from the kernel's include/uapi/linux/bpf.h (enum
 * bpf_attach_type, union bpf_attr.link_create.uprobe_multi). */
#define DC_BPF_TRACE_UPROBE_MULTI 48
#define DC_BPF_F_UPROBE_MULTI_RETURN 1U
/* Session uprobes (kernel >= 6.13, commit "bpf: Add support for uprobe multi session
 * attach"): a uprobe_multi link of this attach type runs one program at entry and, when
 * the entry run returned 0, at return. The value is enum bpf_attach_type's
 * BPF_TRACE_UPROBE_SESSION in the kernel's include/uapi/linux/bpf.h (checked against this
 * kernel's BTF: `bpftool btf dump file /sys/kernel/btf/vmlinux | grep UPROBE_SESSION`);
 * Debian 12's 6.1 uapi headers and libbpf 1.1 predate it. The only place it is spelt. */
#define DC_BPF_TRACE_UPROBE_SESSION 57

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

/* The mechanisms `datacrumbs features` reports, in its output order. */
enum dc_feature_id {
	DC_FEAT_UPROBE,         /* perf_event uprobe + uretprobe, linked with BPF_PERF_EVENT */
	DC_FEAT_ATTACH_COOKIE,  /* bpf_get_attach_cookie() in a uprobe program */
	DC_FEAT_UPROBE_MULTI,   /* BPF_LINK_CREATE with BPF_TRACE_UPROBE_MULTI */
	DC_FEAT_UPROBE_SESSION, /* BPF_LINK_CREATE with BPF_TRACE_UPROBE_SESSION, kfuncs */
	DC_FEAT_TRACEPOINT,     /* perf_event tracepoint syscalls:sys_enter_openat */
	DC_FEAT_RAW_TRACEPOINT, /* BPF_RAW_TRACEPOINT_OPEN of sys_enter */
	DC_FEAT_TP_BTF,         /* tracing program, BPF_TRACE_RAW_TP, sched_process_exit */
	DC_FEAT_FENTRY,         /* tracing programs BPF_TRACE_FENTRY/FEXIT on vfs_read */
	DC_FEAT_KPROBE,         /* perf_event kprobe + kretprobe on vfs_read */
	DC_FEAT_KPROBE_MULTI,   /* BPF_LINK_CREATE with BPF_TRACE_KPROBE_MULTI */
	DC_FEAT_RINGBUF,        /* BPF_MAP_TYPE_RINGBUF map, mmapped by libbpf */
	DC_FEAT_BTF,            /* /sys/kernel/btf/vmlinux parsed by libbpf */
	DC_FEAT_TRACEFS,        /* tracefs mounted at /sys/kernel/tracing or debugfs/tracing */
	DC_FEAT_NR
};

/* The capabilities reported, in output order. */
enum dc_cap_id { DC_CAP_BPF, DC_CAP_PERFMON, DC_CAP_SYS_ADMIN, DC_CAP_SYS_RESOURCE, DC_CAP_NR };

#define DC_FEAT_YES 1
#define DC_FEAT_NO 0
#define DC_FEAT_UNKNOWN (-1) /* not checked: needs privileges this process lacks */

struct dc_feature_result {
	int ok;                  /* DC_FEAT_YES, DC_FEAT_NO or DC_FEAT_UNKNOWN */
	char reason[320];        /* why not (NO, UNKNOWN), or a detail (YES); may be "" */
};

struct dc_features {
	char kernel[65];                 /* uname(2) release */
	const char *libbpf;              /* libbpf_version_string(), e.g. "v1.1" */
	int caps[DC_CAP_NR];             /* 1: in the effective set (capget(2)) */
	int privileged;                  /* 1: CAP_BPF or CAP_SYS_ADMIN: BPF checks were run */
	struct dc_feature_result r[DC_FEAT_NR];
};

/* Fills f by trying every mechanism for real: minimal programs of raw instructions loaded
 * with bpf_prog_load(), a map from bpf_map_create(), perf events from perf_event_open(2)
 * linked with bpf_link_create(), raw tracepoints with bpf_raw_tracepoint_open(); where a
 * probe can be fired from here (a uprobe on this process's libc getpid, a tracepoint on
 * its own syscalls, a process exit), it is fired and the program must have run. Every fd
 * is closed before returning: nothing stays loaded or attached. Without CAP_BPF or
 * CAP_SYS_ADMIN only what needs no privilege is checked (BTF, tracefs, the kprobe PMU's
 * absence); the rest is DC_FEAT_UNKNOWN. Never fails: each failure is a result with its
 * errno and meaning (bpf(2), perf_event_open(2), Documentation/bpf/ and
 * Documentation/trace/ of the kernel). */
void dc_features_check(struct dc_features *f);

/* Creates a uprobe_multi link (raw bpf(2) BPF_LINK_CREATE: libbpf 1.1 has no wrapper) of
 * prog_fd on cnt file offsets of path, with one cookie per offset (cookies may be NULL);
 * ret: uretprobes; pid: only that process (0: all). prog_fd must be a
 * BPF_PROG_TYPE_KPROBE program loaded with expected_attach_type DC_BPF_TRACE_UPROBE_MULTI.
 * Returns the link fd, or -1 with errno (EINVAL: the kernel has no uprobe_multi, < 6.6). */
int dc_link_uprobe_multi(int prog_fd, const char *path, const __u64 *offsets,
			 const __u64 *cookies, unsigned cnt, int ret, int pid);

/* Creates a session uprobe link: a uprobe_multi link (as dc_link_uprobe_multi) of attach
 * type DC_BPF_TRACE_UPROBE_SESSION, no return flag. prog_fd must be a
 * BPF_PROG_TYPE_KPROBE program loaded with that expected_attach_type. Returns the link fd,
 * or -1 with errno: EINVAL (kernel < 6.13, or an offset the kernel refuses), ENOENT (no
 * such path), and the uprobe errnos (ENOTSUPP 524: an instruction uprobes cannot step
 * over, such as a lock prefix; kernel/events/uprobes.c, arch/x86/kernel/uprobes.c). */
int dc_link_uprobe_session(int prog_fd, const char *path, const __u64 *offsets,
			   const __u64 *cookies, unsigned cnt, int pid);

/* Does this kernel have session uprobes? Tries the real thing: two programs of that
 * attach type linked on getpid of this process's libc, this process only, one asking for
 * the return (entry returns 0), one not (returns 1); getpid is called once: the first must
 * have run twice, the second once; and the kfuncs bpf_session_is_return and
 * bpf_session_cookie must be in the kernel's BTF. Returns 1 yes, 0 no (why in reason,
 * when not NULL). The environment variable DATACRUMBS_NO_UPROBE_SESSION forces 0. */
int dc_feature_uprobe_session(char *reason, size_t reasonlen);

/* Starts dc_feature_uprobe_session's check on a thread, so that its links' waits in the
 * kernel (tens of ms here) pass while the caller goes on (the script, the kernel's BTF,
 * the objects); the first dc_feature_uprobe_session or dc_feature_uprobe_multi of this
 * process joins it and takes its answer. Nothing when it already runs. */
void dc_feature_uprobe_prefetch(void);

/* Waits until the links, programs and map of the last dc_feature_uprobe_session or
 * dc_feature_uprobe_multi are closed and freed by the kernel. Those two answer as soon as
 * the probe has fired and leave that teardown to a thread: closing a uprobe link waits
 * for the kernel's RCU grace periods (uprobe_unregister_sync, tens of ms each here), which
 * was a third of `datacrumbs run`'s start-up. The links only ever fire for this process's
 * getpid, and the kernel closes them with the process at any exit. No-op when nothing is
 * pending, or in a child forked since (it has no such thread); dc_bpf_close calls it.
 * A dc_feature_uprobe_prefetch not yet joined is joined first. */
void dc_feature_settle(void);

/* Does this kernel attach uprobe_multi links? Tries the real thing: a program of that
 * attach type linked on getpid of the libc this process has mapped, limited to this
 * process, fired once, closed. Returns 1 yes, 0 no (why in reason, when reason is not
 * NULL). The environment variable DATACRUMBS_NO_UPROBE_MULTI forces 0. */
int dc_feature_uprobe_multi(char *reason, size_t reasonlen);

/* Runs `datacrumbs features [--json]` (argv[0] is "features"): prints each mechanism and
 * whether it works, as aligned text or one JSON object. Returns the exit status: 0 when the
 * checks ran (some may say no; without root the unchecked ones say so), 2 on a usage error
 * (one line on stderr), 1 if stdout could not be written. */
int dc_features_main(int argc, char **argv);

#endif
