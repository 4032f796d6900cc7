/* datacrumbs.h: the event layout, the attach-cookie encoding and every list shared by the
 * BPF programs (bpf/NAME.bpf.c) and the user side (core/). Plain fixed-size types and
 * X-macro lists only; no logic. */
#ifndef DATACRUMBS_H
#define DATACRUMBS_H

#define DC_MAX_ARGS   6     /* integer/pointer arguments kept per call (x86-64 SysV regs) */
#define DC_PATH_MAX   4096  /* bytes of a path string captured per call (PATH_MAX) */
#define DC_PATH_SMALL 256   /* paths up to this long travel in a small record */
#define DC_MAX_DEPTH  16    /* nested probed calls per thread kept in the entry stack */
#define DC_IOV_MAX    64    /* iovec entries summed for readv/writev-style calls */
#define DC_MAX_SHARDS 64    /* ring buffers (CPU groups) at most, bpf/common.bpf.h rings */
#define DC_NR_SYSCALLS 512  /* system call numbers the syscall_cookie map covers (x86-64
			     * asm/unistd_64.h numbers are below 512 but the x32 ones) */

/* The kernel functions of the VFS layer, in one order for both sides: bpf/vfs.bpf.c has an
 * fentry/fexit and a kprobe/kretprobe pair for each (programs dc_fe_FN, dc_fx_FN, dc_kp_FN,
 * dc_kr_FN) and a cookie slot vfs_cookie[DC_VFS_ID]; a probe's offset (core/attach.c) is its
 * index here. X(ID, fn). */
#define DC_VFS_FUNCS(X)                                                                    \
	X(READ, vfs_read) X(WRITE, vfs_write) X(READV, vfs_readv) X(WRITEV, vfs_writev)      \
	X(ITER_READ, vfs_iter_read) X(ITER_WRITE, vfs_iter_write) X(OPEN, vfs_open)          \
	X(FSYNC_RANGE, vfs_fsync_range) X(GETATTR, vfs_getattr) X(STATX, vfs_statx)          \
	X(DO_TRUNCATE, do_truncate) X(FALLOCATE, vfs_fallocate)
#define DC_VFS_ENUM_(id, fn) DC_VFS_##id,
enum dc_vfs_func { DC_VFS_FUNCS(DC_VFS_ENUM_) DC_VFS_NR };

/* The tracepoint probes of bpf/kernel.bpf.c (mechanism: tracepoint), in one order for both
 * sides: the name a probe description gives it (a probe's offset is its index here), and
 * the name, or with a trailing '_' the name prefix, of the BPF programs serving it (the
 * loader enables those of the probes asked for); the cookie is tp_cookie[DC_TP_ID].
 * X(ID, "probe name", "programs"). */
#define DC_TRACEPOINTS(X)                                                                  \
	X(PC_ADD, "mm_filemap_add_to_page_cache", "dc_pc_add")                               \
	X(PC_DELETE, "mm_filemap_delete_from_page_cache", "dc_pc_delete")                    \
	X(PC_LOOKUP, "mm_filemap_get_pages", "dc_pc_lookup")                                 \
	X(BLOCK, "block_rq", "dc_blk_") /* block_rq_insert/issue/merge -> block_rq_complete */
#define DC_TP_ENUM_(id, name, progs) DC_TP_##id,
enum dc_tracepoint { DC_TRACEPOINTS(DC_TP_ENUM_) DC_TP_NR };

/* Record kinds on the ring buffer. */
enum dc_kind {
	DC_EV_CALL = 1, /* a probed call returned: one complete event */
	DC_EV_FORK = 2, /* a traced process created a process: pid = child tgid, args[0] = parent tgid */
	DC_EV_EXEC = 3, /* a traced process exec'd: path = new image's file name; args[0] = 1
			 * when the exec gained privileges (bprm->secureexec) in a run without
			 * root: the process is no longer traced from here on, else 0 */
	DC_EV_EXIT = 4, /* the last thread of a traced process exited: args[0] = exit_code (wait status) */
	DC_EV_DLSTATE = 5, /* a traced thread is in the dynamic loader's _dl_debug_state (its
			    * r_brk) with the list of loaded objects consistent (RT_CONSISTENT:
			    * after start-up, a dlopen's mapping, a dlclose); args[0] = 1 when
			    * the thread is held for the attach (DC_HOLD_SIGNAL sent,
			    * core/hold.c), else 0 */
};

/* Holding a thread at _dl_debug_state (core/hold.c): a thread the tracer has seized with
 * ptrace is sent this signal there (bpf_send_signal_thread); its signal-delivery-stop is
 * reported to the tracer alone (ptrace(2)), which attaches the new library's probes and
 * resumes it with the signal suppressed. SIGURG: ignored by default, so a delivery the
 * tracer could not intercept (it died) does nothing. The `holdable` map says which
 * threads may be held (value DC_HOLD_SEIZED), and which are (DC_HOLD_HELD). */
#define DC_HOLD_SIGNAL 23 /* SIGURG, asm/signal.h */
#define DC_HOLD_SEIZED 1
#define DC_HOLD_HELD   2

/* Attach cookie (bpf_get_attach_cookie, kernel >= 5.15) given to each uprobe/uretprobe:
 *   bits  0..15  probe index in the user-side probe table
 *   bits 16..19  1 + index of the argument that is a path string (0: none)
 *   bits 20..23  1 + index of the argument that is a struct iovec * (0: none)
 *   bits 24..27  1 + index of the argument that is the iovec count
 *   bit  28      always set, so that no cookie is 0
 *   bit  29      the call returns a new fd (open effect): its inode is read at return
 *   bit  30      entry-only probe (DC_COOKIE_NORET): the function is not safe to see
 *                return (setjmp/longjmp family, noreturn exits, _start, __restore_rt: its
 *                return address is not a plain return), so no return probe exists for it;
 *                its entry sends one record at once, dur 0, flag DC_F_ENTRY, no ret
 *   bit  31      return site (DC_COOKIE_RETSITE): this uprobe sits on a return instruction
 *                (`ret`) of the probe the other bits describe, not on its entry; it runs
 *                as an entry (no return of its own is asked): rax is the return value,
 *                rsp the entry's (it points at the return address), so it pairs with the
 *                frame its entry pushed ("Return instructions" below); with bit 30 too,
 *                a catch point (DC_COOKIE_CATCH): the entry of the C++ runtime's
 *                __cxa_begin_catch, called by the handler that caught an exception:
 *                no record of its own, the frames the exception unwound are sent *   bits 32..35  aux source: 1 + index of the argument the aux value is read through,
 *                DC_AUX_RET: through the return value (a returned pointer); 0: none
 *   bit  36      the aux value is 8 bytes (else a 4-byte C int, sign-extended)
 *   bit  37      read the aux value when the call returns (an out-pointer argument)
 *   bit  38      the pointer is a glibc FILE *: its fd is valid only when its _flags (the
 *                first int) has _IO_IS_FILEBUF (0x2000, glibc libio/libio.h; a stream of
 *                open_memstream or fopencookie has no fd of its own)
 *   bit  39      returns at return instructions (DC_COOKIE_INSN): the entry pushes its
 *                frame but asks for no return (session entry returns 1; no uretprobe in
 *                the fallback pair); the probe's return-site uprobes (bit 31) pop it;
 *                a return site without it is shared: the `ret` of a function the probe's
 *                function tail-calls, which that function's other callers reach too
 *                (core/retsite.h DC_RETSITE_SHARED): no frame of the probe there is no
 *                unpaired return
 *   bits 40..47  byte offset added to the pointer before reading the aux value
 *   bits 48..55  byte offset for the in-place read (bits 60..63)
 *   bits 56..59  1 + index of a short string argument: its first 7 bytes (and a NUL)
 *                replace the pointer in args[] at return (fopen's mode "r+")
 *   bits 60..63  1 + index of a pointer argument replaced in args[] at return by the 8
 *                bytes it points to (+ offset bits 48..55): an MPI datatype's size
 */
#define DC_COOKIE(probe, path1, iov1, iovcnt1) \
	((unsigned long long)(probe) | ((unsigned long long)(path1) << 16) | \
	 ((unsigned long long)(iov1) << 20) | ((unsigned long long)(iovcnt1) << 24) | \
	 DC_COOKIE_SET)
#define DC_COOKIE_SET (1ULL << 28) /* never 0: maps of cookies use 0 for "not traced" */
#define DC_COOKIE_OPENS (1ULL << 29)
#define DC_COOKIE_NORET (1ULL << 30)
#define DC_COOKIE_RETSITE (1ULL << 31)
#define DC_COOKIE_INSN    (1ULL << 39)
#define DC_COOKIE_CATCH   (DC_COOKIE_NORET | DC_COOKIE_RETSITE)
#define DC_COOKIE_PROBE(c)  ((unsigned int)((c) & 0xffff))
#define DC_COOKIE_PATH(c)   ((unsigned int)(((c) >> 16) & 0xf))
#define DC_COOKIE_IOV(c)    ((unsigned int)(((c) >> 20) & 0xf))
#define DC_COOKIE_IOVCNT(c) ((unsigned int)(((c) >> 24) & 0xf))
#define DC_AUX_RET 7
#define DC_COOKIE_AUX(src, wide, at_return, off) \
	(((unsigned long long)(src) << 32) | ((unsigned long long)!!(wide) << 36) | \
	 ((unsigned long long)!!(at_return) << 37) | ((unsigned long long)((off) & 0xff) << 40))
#define DC_COOKIE_FILE     (1ULL << 38)
#define DC_IO_IS_FILEBUF   0x2000
#define DC_COOKIE_STR(idx1)         ((unsigned long long)(idx1) << 56)
#define DC_COOKIE_DEREF(idx1, off)  (((unsigned long long)(idx1) << 60) | \
				     ((unsigned long long)((off) & 0xff) << 48))
#define DC_COOKIE_AUX_SRC(c)   ((unsigned int)(((c) >> 32) & 0xf))
#define DC_COOKIE_AUX_WIDE(c)  ((unsigned int)(((c) >> 36) & 1))
#define DC_COOKIE_AUX_LATE(c)  ((unsigned int)(((c) >> 37) & 1))
#define DC_COOKIE_AUX_OFF(c)   ((unsigned int)(((c) >> 40) & 0xff))
#define DC_COOKIE_DEREF_OFF(c) ((unsigned int)(((c) >> 48) & 0xff))
#define DC_COOKIE_STR_ARG(c)   ((unsigned int)(((c) >> 56) & 0xf))
#define DC_COOKIE_DEREF_ARG(c) ((unsigned int)(((c) >> 60) & 0xf))

/* Session uprobes (Linux 6.13+, attach type BPF_TRACE_UPROBE_SESSION, the value is in
 * core/dc_features.h): every user-space probe is one program, dc_session, on one
 * uprobe_multi link per library, run at a call's entry and, only when the entry asked
 * for it, at its return (bpf_session_is_return() tells which; kernel
 * Documentation/bpf/ and kernel/trace/bpf_trace.c uprobe_multi_link_handler):
 *   entry returns 0   the call's return is wanted: the kernel hijacks this call's
 *                     return address, in this process only, and runs dc_session again
 *                     when it returns (a frame was pushed, or the too-deep counter rose)
 *   entry returns 1   no return: untraced processes, entry-only probes (cookie bit 30),
 *                     a thread whose stack found no room, return-instruction probes
 *                     (bit 39), return sites and catch points (bit 31); nothing is left
 *                     in the process but the breakpoints (int3s the kernel steps over)
 *   return run        its return value is ignored (0)
 * The per-call session cookie (bpf_session_cookie()) is not used: the thread's stack in
 * the `stacks` map pairs entry and return, as with the uprobe/uretprobe pair, which is
 * used only where the kernel has no session uprobes (`datacrumbs features` says which,
 * and the risk: a uretprobe is installed in every process calling the function). */

/* Return instructions (no return address hijack), for functions that callers may leave
 * other than by a plain return: C++ (exceptions unwind through them), Go (its runtime
 * walks and copies goroutine stacks, and a hijacked return address is "unexpected
 * return pc"); chosen per function by core/retsite.c. The entry (cookie bit 39) pushes a
 * frame with the user stack pointer at entry (rsp: the address of the return address)
 * and asks for no return; each `ret` of the function has a plain uprobe (bit 31) whose
 * hit pops it. Calls left without a return (an exception, a longjmp) are found by the
 * stack pointer, as the kernel finds its own dead uretprobe instances
 * (kernel/events/uprobes.c cleanup_return_instances): the stack grows down, so a frame
 * whose entry rsp is below the current rsp belongs to a call that is over
 *   at a return site  frames above the probe's own whose entry rsp is below this rsp are
 *                     sent with DC_F_UNWOUND, then the probe's frame (same cookie, same
 *                     rsp) returns; no such frame: an unpaired return
 *   at an entry       frames whose entry rsp is below this rsp, or equal to it for a
 *                     return-instruction frame (it has no tail call: core/retsite.c
 *                     refuses those), are sent with DC_F_UNWOUND
 *   at a catch point  (DC_COOKIE_CATCH) frames whose entry rsp is at or below this rsp:
 *                     the handler calling __cxa_begin_catch is the thrown call's caller
 *                     or further out, so an exception is written unwound when caught
 *   at thread exit    frames whose entry rsp is below the exit's rsp are unwound, the
 *                     others unfinished (DC_F_UNFINISHED)
 * Frames of functions whose stack moves (Go: dc_pinfo.moves) skip these rules: their
 * return site pops the innermost frame of the same probe, frames above it unwound.
 * Kernel-side frames (syscalls, VFS) record rsp 0 and are never judged by it. */

/* One ring buffer record. Calls with a path argument are followed in the same record by
 * path_len bytes of the string (NUL included): the record is then a struct dc_path_event
 * cut to sizeof(struct dc_event) + DC_PATH_SMALL bytes when the path fits in that. A call
 * with a second string (dc_pinfo.path2: rename, link, symlink) whose string was read
 * (path2_len > 0) is a struct dc_path2_event, the second string at path2; cut to
 * sizeof(struct dc_event) + 2 * DC_PATH_SMALL bytes, the second string at path +
 * DC_PATH_SMALL, when both fit in DC_PATH_SMALL. */
struct dc_event {
	unsigned int kind;        /* enum dc_kind */
	unsigned int probe;       /* probe index (DC_COOKIE_PROBE) */
	unsigned int pid;         /* tgid of the process */
	unsigned int tid;         /* thread id */
	unsigned long long ts;    /* call entry (or record time), CLOCK_MONOTONIC ns */
	unsigned long long dur;   /* call duration, ns */
	unsigned long long id;    /* call id, unique per tgid, counts from 1; a later process
				     with the same pid goes on counting (pid reuse). A thread
				     takes its ids DC_ID_BLOCK at a time: in one thread they
				     grow with each call, across threads they interleave */
	unsigned long long parent;/* id of the enclosing probed call on this thread, 0: none */
	unsigned int level;       /* nesting depth, 1 = outermost probed call on the thread */
	unsigned int path_len;    /* bytes of path that follow, 0: none */
	long long ret;            /* return value (rax) */
	unsigned long long iov_bytes; /* sum of iov_len over the iovec argument, if any */
	unsigned int flags;       /* DC_F_* */
	unsigned int path2_len;   /* bytes of the second string (NUL included), 0: none */
	unsigned long long ino;   /* open calls: the inode of the returned fd (0: unknown) */
	unsigned long long dev;   /* and its device, st_dev encoding */
	unsigned long long aux;   /* the value read through a pointer (cookie bits 32..47): a
				     FILE's fd, an out-pointer's handle or size; valid with
				     DC_F_AUX */
	unsigned long long args[DC_MAX_ARGS]; /* raw argument registers at entry */
	unsigned long long sent;  /* CLOCK_MONOTONIC ns when the record was submitted: taken
				     after the thread's earlier records were committed, so the
				     consumer's merge of the shards by it keeps each thread's
				     order (and every happens-before order) */
};

/* dc_event.flags */
#define DC_F_UNFINISHED 1   /* the thread exited inside the call (killed, exit()): no ret */
#define DC_F_ASYNC      2   /* a block request that completed after the call that issued
			       it returned (readahead, writeback): not nested in it */
#define DC_F_AUX        4   /* aux holds a value read (the read did not fault) */
#define DC_F_ENTRY      8   /* an entry-only probe's record (DC_COOKIE_NORET): dur 0, ret
			       meaningless (written without ret, with "entry_only": 1) */
#define DC_F_UNWOUND    16  /* the call was left without a return (an exception or a
			       longjmp unwound it), found when a later probe hit of the
			       thread saw its frame dead: dur up to then, no ret (written
			       with "unwound": 1); "Return instructions" above */
#define DC_F_PIPE       32  /* the call's fd (dc_pinfo key: args[k1] or a FILE's) is a pipe
			       (pipefs, PIPEFS_MAGIC): ino is its inode, read at entry */
#define DC_F_SOCKET     64  /* the same for a socket (sockfs, SOCKFS_MAGIC) */
#define DC_F_PIPE2      128 /* its second fd (dc_pinfo k2: splice's fd_out) is a pipe: dev
			       holds that pipe's inode (a pipe needs no device to be named) */
#define DC_F_SOCKET2    256 /* the same for a socket */
#define DC_PIPEFS_MAGIC 0x50495045 /* include/uapi/linux/magic.h */
#define DC_SOCKFS_MAGIC 0x534F434B

struct dc_path_event {
	struct dc_event e;
	char path[DC_PATH_MAX];
};

struct dc_path2_event {
	struct dc_event e;
	char path[DC_PATH_MAX];
	char path2[DC_PATH_MAX];
};

/* Async I/O (bpf/aio.bpf.c, probes/aio.yaml, layer AIO): one DC_EV_CALL record per
 * io_uring or Linux native AIO (io_submit(2), libaio) operation, sent when it completes:
 *   probe    the function of its opcode (IORING_OP_*, include/uapi/linux/io_uring.h;
 *            IOCB_CMD_*, include/uapi/linux/aio_abi.h), by the cookie tables below
 *   pid/tid  the thread that submitted it
 *   ts       submission: the io_uring_submit_req tracepoint / io_submit's entry
 *   dur      to completion: the io_uring_complete tracepoint (the CQE is posted) / the
 *            return of the io_getevents or io_pgetevents that reaped it (the kernel has
 *            no AIO completion tracepoint: that is when the program learns of it)
 *   ret      io_uring_cqe.res / io_event.res: bytes moved, or -errno
 *   parent   the submitting call (io_uring_enter, io_submit) when it is still open at
 *            completion, else 0 with DC_F_ASYNC if there was one
 *   args[0]  fd (-1: an io_uring fixed file, IOSQE_FIXED_FILE: a slot, no descriptor)
 *   args[1]  offset: the file position (-1: the file's current position)
 *   args[2]  bytes asked (read/write; the iovec sum for the vectored ops), or the range
 *            length of fsync (0: the whole file), sync_file_range, fallocate
 *   args[3]  the file's inode, args[4] its device (st_dev encoding): read at completion
 *            (io_uring: req->file, assigned at issue) or at io_submit (the fd's file)
 *   args[5]  the program's tag: io_uring_sqe.user_data / iocb.aio_data
 * Linux AIO's programs (dc_aio_enter, dc_aio_exit) have no link of their own: the loader
 * puts them in syscall.bpf.c's program arrays aio_enter_prog / aio_exit_prog (slot 0), and
 * the sys_enter / sys_exit programs tail-call them at their end for io_submit, io_getevents
 * and io_pgetevents only, with the tracepoint's own context (regs, id / ret). */
#define DC_AIO_URING_OPS 64   /* io_uring cookies, by IORING_OP_* (IORING_OP_LAST is 63 in 6.18) */
#define DC_AIO_CMDS      16   /* Linux AIO cookies, by IOCB_CMD_* (0..8 defined) */
#define DC_AIO_BATCH     8192 /* iocbs read per io_submit, io_events per io_getevents;
				* beyond, the operations are counted lost (DC_STAT_LOST) */

/* Profile mode: how a probe's calls are aggregated in BPF (the `pinfo` map, by probe
 * index; filled by the loader from the probe description). */
enum dc_pkey {          /* what names the file of a call */
	DC_PK_NONE = 0,     /* nothing: one aggregate per function */
	DC_PK_FD,           /* args[k1] is an fd: its inode at return */
	DC_PK_AUXFD,        /* aux is an fd (a FILE *'s): its inode at return */
	DC_PK_HANDLE,       /* args[k1] is a handle (DIR *, MPI_File) */
	DC_PK_AUXHANDLE,    /* aux is a handle */
	DC_PK_INODE,        /* args[k1] is an inode number, args[k2] its device */
	DC_PK_STREAM,       /* the fd is k1 itself: a standard stream's (printf: stdout, 1) */
};
enum dc_pbytes {        /* the call's bytes: the `count` its trace event carries */
	DC_PB_NONE = 0,
	DC_PB_ARG64,        /* args[b1] */
	DC_PB_ARG32,        /* (int)args[b1] */
	DC_PB_IOV,          /* the iovec sum */
	DC_PB_MUL,          /* args[b1] * args[b2] (fread: size x nmemb) */
	DC_PB_MUL32,        /* (int)args[b1] * args[b2] (Open MPI: elements x datatype size) */
	DC_PB_MPICH,        /* (int)args[b1] x the size in MPICH builtin handle args[b2] */
};
enum dc_pmoved {        /* the bytes a call moved, from its return value (the rule of
			   python/datacrumbs/analysis.py moved_bytes and core/consumer.c
			   record_moved); 0 for a failed call */
	DC_PM_NONE = 0,     /* no such figure (no byte count, or ret is no byte count) */
	DC_PM_RET,          /* ret when 0 <= ret <= the bytes asked (read, write, AIO ops);
			       a larger ret is no byte count (fgets' buffer pointer) */
	DC_PM_RETANY,       /* ret when >= 0, no count to bound it (fprintf, getline) */
	DC_PM_ITEMS,        /* ret (items) x args[b1] (fread, fwrite: the size) */
	DC_PM_ERRCODE,      /* the bytes asked when ret is 0 (MPI_SUCCESS: all moved) */
	DC_PM_ASKED,        /* the bytes asked when (int)ret >= 0 (fputs, puts: nonnegative on
			       success, EOF on error; glibc's fputs returns 1) */
	DC_PM_ONE,          /* 1 when (int)ret >= 0 (fputc, fgetc: the byte, or EOF) */
};
struct dc_pinfo {
	unsigned char record;  /* 1: sent as a record even in profile mode (it names a path
				  or changes the fd tables: the user side needs it) */
	unsigned char key, k1, k2;  /* enum dc_pkey and its argument indexes; for DC_PK_FD, k2
				       is 1 + the index of a second fd argument (0: none) */
	unsigned char bytes, b1, b2; /* enum dc_pbytes and its argument indexes */
	unsigned char hopen;   /* the call opens a handle: 1 the aux value (MPI_File_open's,
				  when it returns 0), 2 the return value (opendir, non-NULL) */
	unsigned char moves;   /* 1: the function runs on stacks that move (Go goroutines):
				  its frames are paired by probe, not by stack pointer */
	unsigned char moved;   /* enum dc_pmoved: the bytes moved, from ret */
	unsigned char ret32;   /* 1: ret is a C int (only its low 32 bits are defined) */
	unsigned char path2;   /* 1 + index of a second string argument (rename's newpath,
				  symlink's target), read at return after the cookie's path
				  into a struct dc_path2_event; 0: none */
	unsigned char slen;    /* 1 + index of a string argument whose length (+ slen_add)
				  is the bytes asked, read at entry into dc_frame.iov_bytes
				  (fputs, puts); 0: none */
	unsigned char slen_add;
	unsigned char tails;   /* 1: returns at return instructions, some of them another
				  function's that it tail-calls (core/retsite.h
				  DC_RETSITE_SHARED): that function's entry comes at the
				  caller's rsp while the caller's call goes on */
};

/* What names the file of an aggregate (dc_agg_key.kind). */
enum dc_agg_kind {
	DC_AGG_NOFILE = 0,  /* no file: one aggregate per function */
	DC_AGG_INODE = 1,   /* fkey the inode, fdev its device */
	DC_AGG_HANDLE = 2,  /* fkey the id of the call that opened the handle (its record
			       names the file) */
	DC_AGG_PIPE = 3,    /* fkey a pipe's inode (pipefs): named pipe:[fkey] */
	DC_AGG_SOCKET = 4,  /* fkey a socket's inode (sockfs): named socket:[fkey] */
};

/* An aggregate of profile mode: one per process, probe, interval and file. */
struct dc_agg_key {
	unsigned int pid;       /* tgid */
	unsigned int probe;     /* probe index */
	unsigned int interval;  /* (return time - profile_t0) / profile_ns */
	unsigned int kind;      /* enum dc_agg_kind */
	unsigned long long fkey;
	unsigned long long fdev;
};
struct dc_agg {
	unsigned long long count;   /* calls */
	unsigned long long dur_sum, dur_min, dur_max;       /* ns */
	unsigned long long bytes_n; /* calls with a byte count */
	unsigned long long bytes_sum, bytes_min, bytes_max; /* bytes asked */
	unsigned long long moved_n;   /* calls with a bytes-moved figure (enum dc_pmoved) */
	unsigned long long moved_sum; /* bytes moved */
};

/* Per-process state kept in the `traced` map, keyed by tgid. */
struct dc_proc {
	unsigned long long next_id; /* next call id of this process */
};

/* The `traced_hint` array (bpf/common.bpf.h): slot tgid % DC_TRACED_SLOTS is 1 once a
 * process of that slot has been put in `traced` (set before the insert, by BPF at a fork
 * and by the loader, core/attach.c dc_bpf_trace_pid; never cleared), so a 0 says "not
 * traced" with one array load, no hash lookup; a 1 says "maybe" (then `traced` decides). */
#define DC_TRACED_SLOTS 16384

/* The `stacks` table (bpf/common.bpf.h): thread tid's call stack is in one of the
 * DC_STACK_PROBES slots from tid % DC_STACK_SLOTS on, the first free one its first probed
 * call found (open addressing, linear probing); its exit frees it. A thread that finds
 * all of them taken by other live threads is not traced (DC_STAT_LOST per call). */
#define DC_STACK_SLOTS  16384
#define DC_STACK_PROBES 8

/* Profile mode's per-thread aggregates (the `agg_ways` array, bpf/common.bpf.h): the
 * thread in slot s of `stacks` adds its calls to agg_ways[s], DC_AGG_WAYS aggregates of
 * its latest keys, with plain loads and stores, where a call into the shared `aggs` hash
 * cost a hash lookup and ten atomic adds on a line other CPUs write too (IOR 4 KiB:
 * 0.15 of the bare run's time; bench/HISTORY.md 2026-12-06). A way whose a.count is 0
 * is empty. Who may touch a way says its `lock`:
 *   DC_WAY_FREE  anyone may take it (compare-and-swap from DC_WAY_FREE);
 *   DC_WAY_BPF   its thread's BPF program holds it (for one call's add: ns);
 *   DC_WAY_USER  the consumer holds it (core/profile.c take_ways).
 * The thread puts a way's sums into `aggs` (holding it) only to reuse the way for
 * another key; a way it cannot take (the consumer holds it) sends the call to `aggs`
 * directly; the way reused is an empty one, else the least recently used. The
 * consumer, before each read of `aggs`, takes the sums of every non-empty
 * way into its own tables and empties it, waiting while a thread holds it: so a thread
 * that went idle holds nothing back past the next read, and a thread's put into `aggs`
 * has ended before the read that must see it begins. The consumer maps the array
 * (BPF_F_MMAPABLE) and takes ways with the CPU's own compare-and-swap; a thread's
 * release is a plain store after its sums' stores (x86-64 keeps stores in order). */
#define DC_AGG_WAYS 4
enum dc_way_lock { DC_WAY_FREE = 0, DC_WAY_BPF = 1, DC_WAY_USER = 2 };
struct dc_agg_way {
	unsigned long long lock; /* enum dc_way_lock (64 bits: BPF's compare-and-swap
				    before -mcpu=v3 is 64-bit only) */
	unsigned long long used; /* its thread's last add (CLOCK_MONOTONIC ns): the least
				    recently used way is the one reused */
	struct dc_agg_key key;
	struct dc_agg a;
};
struct dc_agg_ways {
	struct dc_agg_way w[DC_AGG_WAYS];
};

/* Call ids a thread takes from its process's counter (struct dc_proc next_id) at once,
 * so that its calls do not look the process up in `traced` each (a hash lookup). */
#define DC_ID_BLOCK 64

/* Counters in the `stats` per-CPU array (user side sums them over CPUs). */
enum dc_stat {
	DC_STAT_LOST = 0,      /* records the ring buffer had no room for */
	DC_STAT_DEEP = 1,      /* calls nested deeper than DC_MAX_DEPTH (not recorded) */
	DC_STAT_UNPAIRED = 2,  /* returns with no matching entry (attached mid-call) */
	DC_STAT_NR = 3,
};

#endif
