/* aio.bpf.c: the AIO layer: asynchronous file I/O as I/O. One record per io_uring or
 * Linux native AIO (io_submit(2), libaio) operation, sent when the operation completes,
 * with its submission time, file, offset, bytes asked and moved (bpf/datacrumbs.h "Async
 * I/O" has the record's layout).
 *   io_uring: tracepoints io_uring:io_uring_submit_req (the request, prepared: its
 *     opcode, fd, io_rw/io_sync command) and io_uring:io_uring_complete (its CQE), paired
 *     by the struct io_kiocb's address (include/trace/events/io_uring.h,
 *     io_uring/io_uring.c io_submit_sqe and io_fill_cqe_req).
 *   Linux AIO: raw_syscalls sys_enter of io_submit reads the program's iocbs (struct iocb,
 *     include/uapi/linux/aio_abi.h), sys_exit of io_getevents/io_pgetevents reads the
 *     struct io_event array it filled, paired by (process, iocb address, aio_data):
 *     io_event.obj is the iocb's user address, io_event.data its aio_data (fs/aio.c
 *     aio_complete), so an iocb submitted again before its first submission was reaped
 *     (the kernel copies it at io_submit) pairs right when the program changed its
 *     aio_data; with the same aio_data too, the earlier operation is counted lost (no
 *     silent loss) and the first completion is written with the later one's args. The kernel has no AIO completion
 *     tracepoint, so a libaio operation ends when the program reaps it. */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Attach cookies, set by the loader (core/attach.c load_aio) before load; 0: not asked. */
const volatile __u64 uring_cookie[DC_AIO_URING_OPS] = {};  /* by IORING_OP_* */
const volatile __u64 uring_fdatasync_cookie = 0; /* IORING_OP_FSYNC with IORING_FSYNC_DATASYNC */
const volatile __u64 aio_cookie[DC_AIO_CMDS] = {};         /* by IOCB_CMD_* */

/* x86-64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl) */
#define NR_IO_GETEVENTS  208
#define NR_IO_SUBMIT     209
#define NR_IO_PGETEVENTS 333

/* include/uapi/linux/io_uring.h: the opcodes read here (by number, not vmlinux.h's enum
 * io_uring_op: the object must build on kernels without the newer ones), fsync_flags, and
 * a CQE that more will follow */
#define DC_IORING_OP_READV          1
#define DC_IORING_OP_WRITEV         2
#define DC_IORING_OP_FSYNC          3
#define DC_IORING_OP_READ_FIXED     4
#define DC_IORING_OP_WRITE_FIXED    5
#define DC_IORING_OP_SYNC_FILE_RANGE 8
#define DC_IORING_OP_FALLOCATE      17
#define DC_IORING_OP_READ           22
#define DC_IORING_OP_WRITE          23
#define DC_IORING_OP_READV_FIXED    60   /* Linux 6.15 */
#define DC_IORING_OP_WRITEV_FIXED   61
#define DC_IORING_FSYNC_DATASYNC 1U
#define DC_IORING_CQE_F_MORE     2U
/* include/uapi/linux/aio_abi.h */
#define DC_IOCB_CMD_FSYNC   2
#define DC_IOCB_CMD_FDSYNC  3
#define DC_IOCB_CMD_PREADV  7
#define DC_IOCB_CMD_PWRITEV 8

/* An operation submitted by a traced thread, until it completes. */
struct dc_aio_op {
	__u64 cookie;
	__u32 tgid, tid, level, pad;
	__u64 id, parent;
	__u64 ts;                    /* submission, ns */
	__u64 args[DC_MAX_ARGS];     /* the record's args (bpf/datacrumbs.h "Async I/O") */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* an operation never completed ages out */
	__uint(max_entries, 16384);
	__type(key, __u64);                   /* struct io_kiocb * */
	__type(value, struct dc_aio_op);
} uring_inflight SEC(".maps");

struct dc_iocb_key {
	__u32 tgid;
	__u32 pad;
	__u64 iocb;                           /* the iocb's user address (io_event.obj) */
	__u64 data;                           /* its aio_data (io_event.data) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct dc_iocb_key);
	__type(value, struct dc_aio_op);
} aio_inflight SEC(".maps");

/* Sends op's record: completed at `now` with result res (bytes or -errno); nested in the
 * call that submitted it only if that call is still open on its thread (an io_uring_enter
 * that also waited for it), else, if it had one, flagged DC_F_ASYNC (as block requests). */
static __always_inline void op_done(struct dc_aio_op *op, __u64 now, long res)
{
	__u64 parent = 0;
	__u32 level = 1, tid = op->tid;
	struct dc_stack *st = stack_of(tid);
	if (st && op->parent) {
		for (int i = 0; i < DC_MAX_DEPTH; i++) {
			if (i < st->depth && st->f[i].id == op->parent) {
				parent = op->parent;
				level = op->level;
			}
		}
	}
	if (profile_ns) {
		__u32 probe = DC_COOKIE_PROBE(op->cookie);
		if (profile_call(bpf_map_lookup_elem(&pinfo, &probe), probe, op->tgid, op->ts, now,
				 op->args, 0, 0, 0, res, 1, 0, 0))
			return;
	}
	struct dc_event *e = ring_reserve(sizeof(*e));
	if (!e) {
		count_stat(DC_STAT_LOST);
		return;
	}
	e->kind = DC_EV_CALL;
	e->probe = DC_COOKIE_PROBE(op->cookie);
	e->pid = op->tgid;
	e->tid = op->tid;
	e->ts = op->ts;
	e->dur = now - op->ts;
	e->id = op->id;
	e->parent = parent;
	e->level = level;
	e->path_len = 0;
	e->ret = res;
	e->iov_bytes = 0;
	e->flags = op->parent && !parent ? DC_F_ASYNC : 0;
	e->path2_len = 0;
	e->ino = 0;
	e->dev = 0;
	e->aux = 0;
	for (int i = 0; i < DC_MAX_ARGS; i++)
		e->args[i] = op->args[i];
	ring_submit(e, sizeof(*e), 1);
}

/* op_done as a global (non-static, noinline) function: the verifier checks it once per
 * program, with none of its caller's states (inlined, profile mode's aggregation made
 * dc_aio_exit and dc_uring_complete 0.2-1.2 s to check). op may be NULL (nothing done).
 * Returns 0. */
__noinline int dc_op_done(struct dc_aio_op *op, __u64 now, long res)
{
	if (op)
		op_done(op, now, res);
	return 0;
}

/* The inode and device of a struct file (0 when NULL), into args[3], args[4]. */
static __always_inline void file_inode_of(struct file *f, __u64 args[DC_MAX_ARGS])
{
	if (!f)
		return;
	struct inode *i = BPF_CORE_READ(f, f_inode);
	args[3] = BPF_CORE_READ(i, i_ino);
	args[4] = user_dev(BPF_CORE_READ(i, i_sb, s_dev));
}

/* --- io_uring --------------------------------------------------------------------------- */

/* A request was prepared (io_init_req ran the opcode's prep: the io_rw or io_sync command in
 * req->cmd is filled in; req->file is not assigned yet, req->cqe.fd holds the sqe's fd). */
SEC("tp_btf/io_uring_submit_req")
int BPF_PROG(dc_uring_submit, struct io_kiocb *req)
{
	__u64 key = (__u64)req;
	__u8 opcode = BPF_CORE_READ(req, opcode);
	__u64 cookie = opcode < DC_AIO_URING_OPS ? uring_cookie[opcode & (DC_AIO_URING_OPS - 1)] : 0;
	struct io_sync *sync = (struct io_sync *)&req->cmd;
	if (opcode == DC_IORING_OP_FSYNC && uring_fdatasync_cookie &&
	    (BPF_CORE_READ(sync, flags) & DC_IORING_FSYNC_DATASYNC))
		cookie = uring_fdatasync_cookie;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct dc_aio_op op = { .cookie = cookie, .tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid };
	if (!cookie || current_place(op.tgid, op.tid, &op.id, &op.parent, &op.level)) {
		/* not traced: a reused request must not inherit an old entry */
		bpf_map_delete_elem(&uring_inflight, &key);
		return 0;
	}
	__u64 flags = BPF_CORE_READ(req, flags);
	/* REQ_F_FIXED_FILE (io_uring/io_uring_types.h, = IOSQE_FIXED_FILE of the sqe): fd
	 * is a slot of the registered files, no descriptor */
	op.args[0] = flags & REQ_F_FIXED_FILE ? (__u64)-1 : (__u64)(long)BPF_CORE_READ(req, cqe.fd);
	op.args[5] = BPF_CORE_READ(req, cqe.user_data);
	struct io_rw *rw = (struct io_rw *)&req->cmd;
	switch (opcode) {
	case DC_IORING_OP_READ:
	case DC_IORING_OP_WRITE:
	case DC_IORING_OP_READ_FIXED:
	case DC_IORING_OP_WRITE_FIXED:
		op.args[1] = BPF_CORE_READ(rw, kiocb.ki_pos);
		op.args[2] = BPF_CORE_READ(rw, len);
		break;
	case DC_IORING_OP_READV:
	case DC_IORING_OP_WRITEV:
	case DC_IORING_OP_READV_FIXED:
	case DC_IORING_OP_WRITEV_FIXED: /* addr: a user struct iovec array, len: its entries */
		op.args[1] = BPF_CORE_READ(rw, kiocb.ki_pos);
		op.args[2] = dc_iov_sum(BPF_CORE_READ(rw, addr),
				     BPF_CORE_READ(rw, len));
		break;
	case DC_IORING_OP_FSYNC:
	case DC_IORING_OP_SYNC_FILE_RANGE:
	case DC_IORING_OP_FALLOCATE: /* io_uring/sync.c: a range (fsync: len 0 = the whole file) */
		op.args[1] = BPF_CORE_READ(sync, off);
		op.args[2] = BPF_CORE_READ(sync, len);
		break;
	}
	op.ts = bpf_ktime_get_ns();
	bpf_map_update_elem(&uring_inflight, &key, &op, BPF_ANY);
	return 0;
}

/* A CQE was posted for req (NULL for CQEs of no request) with result res and CQE flags
 * cflags. The file is read now: assigned when the request was issued (also a fixed
 * file's). */
static __always_inline void uring_complete(void *req, long res, __u32 cflags)
{
	__u64 key = (__u64)req, now = bpf_ktime_get_ns();
	if (!req)
		return;
	struct dc_aio_op *op = bpf_map_lookup_elem(&uring_inflight, &key);
	if (!op)
		return;
	struct io_kiocb *r = req;
	file_inode_of(BPF_CORE_READ(r, file), op->args);
	dc_op_done(op, now, res);
	if (!(cflags & DC_IORING_CQE_F_MORE))
		bpf_map_delete_elem(&uring_inflight, &key);
}

/* io_uring_complete as newer kernels have it (Linux 6.18 here): (ctx, req, cqe). */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(dc_uring_complete, struct io_ring_ctx *ring, void *req, struct io_uring_cqe *cqe)
{
	uring_complete(req, BPF_CORE_READ(cqe, res), BPF_CORE_READ(cqe, flags));
	return 0;
}

/* io_uring_complete as older kernels have it (Linux 6.1's): (ctx, req, user_data, res,
 * cflags, extra1, extra2). The loader picks one of the two by the tracepoint's prototype in the kernel's
 * BTF (core/attach.c uring_complete_args). */
SEC("tp_btf/io_uring_complete")
int BPF_PROG(dc_uring_complete_old, void *ring, void *req, __u64 user_data, int res,
	     unsigned cflags)
{
	uring_complete(req, res, cflags);
	return 0;
}

/* --- Linux native AIO (io_submit / io_getevents) ---------------------------------------- */

struct submit_ctx {
	__u64 iocbpp;   /* struct iocb ** of io_submit */
	__u64 now;
	__u32 tgid, tid;
	long from;      /* sys_exit: first iocb not submitted */
};

/* One iocb of an io_submit: remembered under (process, iocb address) with its args. */
static long submit_one(__u32 i, struct submit_ctx *c)
{
	__u64 p = 0;
	struct iocb cb;
	if (bpf_probe_read_user(&p, sizeof(p), (const void *)(c->iocbpp + 8 * (__u64)i)) || !p ||
	    bpf_probe_read_user(&cb, sizeof(cb), (const void *)p))
		return 0;
	__u32 cmd = cb.aio_lio_opcode;
	__u64 cookie = cmd < DC_AIO_CMDS ? aio_cookie[cmd & (DC_AIO_CMDS - 1)] : 0;
	if (!cookie)
		return 0;
	struct dc_aio_op op = { .cookie = cookie, .tgid = c->tgid, .tid = c->tid, .ts = c->now };
	if (current_place(op.tgid, op.tid, &op.id, &op.parent, &op.level))
		return 1;
	op.args[0] = (__u64)(long)(int)cb.aio_fildes;
	op.args[1] = cb.aio_offset;
	op.args[2] = cb.aio_nbytes;
	if (cmd == DC_IOCB_CMD_PREADV || cmd == DC_IOCB_CMD_PWRITEV) /* buf: iovecs, nbytes: entries */
		op.args[2] = dc_iov_sum(cb.aio_buf, cb.aio_nbytes);
	else if (cmd == DC_IOCB_CMD_FSYNC || cmd == DC_IOCB_CMD_FDSYNC)
		op.args[1] = op.args[2] = 0; /* no range: the whole file */
	fd_inode((long)(int)cb.aio_fildes, &op.args[3], &op.args[4], 0);
	op.args[5] = cb.aio_data;
	struct dc_iocb_key k = { .tgid = c->tgid, .iocb = p, .data = cb.aio_data };
	if (bpf_map_update_elem(&aio_inflight, &k, &op, BPF_NOEXIST)) {
		/* the same iocb with the same aio_data still in flight: it is replaced */
		count_stat(DC_STAT_LOST);
		bpf_map_update_elem(&aio_inflight, &k, &op, BPF_ANY);
	}
	return 0;
}

/* sys_exit of io_submit: iocbs from index `from` on were not submitted; forget them. */
static long unsubmit_one(__u32 i, struct submit_ctx *c)
{
	__u64 p = 0, data = 0;
	if (bpf_probe_read_user(&p, sizeof(p),
				(const void *)(c->iocbpp + 8 * (__u64)(c->from + i))) || !p ||
	    bpf_probe_read_user(&data, sizeof(data), (const void *)p)) /* aio_data: first */
		return 0;
	struct dc_iocb_key k = { .tgid = c->tgid, .iocb = p, .data = data };
	bpf_map_delete_elem(&aio_inflight, &k);
	return 0;
}

struct reap_ctx {
	__u64 events;   /* struct io_event * of io_getevents */
	__u64 now;
	__u32 tgid;
};

/* One io_event reaped: the record of its iocb's operation. */
static long reap_one(__u32 i, struct reap_ctx *c)
{
	struct io_event ev;
	if (bpf_probe_read_user(&ev, sizeof(ev), (const void *)(c->events + sizeof(ev) * (__u64)i)))
		return 1;
	struct dc_iocb_key k = { .tgid = c->tgid, .iocb = ev.obj, .data = ev.data };
	struct dc_aio_op *op = bpf_map_lookup_elem(&aio_inflight, &k);
	if (!op)
		return 0;
	dc_op_done(op, c->now, ev.res);
	bpf_map_delete_elem(&aio_inflight, &k);
	return 0;
}

/* raw_syscalls:sys_enter: io_submit(ctx_id, nr, iocbpp) (di, si, dx). Attached after
 * syscall.bpf.c's program (core/attach.c loads this object after it), so a traced
 * io_submit's frame is already on the thread's stack: its operations' parent. */
SEC("tp_btf/sys_enter")
int BPF_PROG(dc_aio_enter, struct pt_regs *regs, long id)
{
	if (id != NR_IO_SUBMIT)
		return 0;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct submit_ctx c = { .iocbpp = regs->dx, .now = bpf_ktime_get_ns(),
				.tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid };
	if (!bpf_map_lookup_elem(&traced, &c.tgid))
		return 0;
	long nr = regs->si;
	if (nr <= 0)
		return 0;
	bpf_loop(nr < DC_AIO_BATCH ? nr : DC_AIO_BATCH, submit_one, &c, 0);
	return 0;
}

/* raw_syscalls:sys_exit: io_submit returned how many iocbs it took (the rest are forgotten);
 * io_getevents(ctx_id, min_nr, nr, events, timeout) and io_pgetevents (events in r10)
 * returned how many io_events they stored. The user registers still hold the arguments. */
SEC("tp_btf/sys_exit")
int BPF_PROG(dc_aio_exit, struct pt_regs *regs, long ret)
{
	long nr = regs->orig_ax;
	if (nr != NR_IO_SUBMIT && nr != NR_IO_GETEVENTS && nr != NR_IO_PGETEVENTS)
		return 0;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	if (!bpf_map_lookup_elem(&traced, &tgid))
		return 0;
	if (nr == NR_IO_SUBMIT) {
		long asked = regs->si, from = ret > 0 ? ret : 0;
		if (ret > DC_AIO_BATCH) /* taken by the kernel, not read: their events are lost */
			count_stat_n(DC_STAT_LOST, ret - DC_AIO_BATCH);
		if (asked > DC_AIO_BATCH)
			asked = DC_AIO_BATCH;
		if (from >= asked)
			return 0;
		struct submit_ctx c = { .iocbpp = regs->dx, .tgid = tgid, .from = from };
		bpf_loop(asked - from, unsubmit_one, &c, 0);
		return 0;
	}
	if (ret <= 0)
		return 0;
	struct reap_ctx c = { .events = regs->r10, .now = bpf_ktime_get_ns(), .tgid = tgid };
	bpf_loop(ret < DC_AIO_BATCH ? ret : DC_AIO_BATCH, reap_one, &c, 0);
	if (ret > DC_AIO_BATCH) /* completions not read: lost */
		count_stat_n(DC_STAT_LOST, ret - DC_AIO_BATCH);
	return 0;
}
