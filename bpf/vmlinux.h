/* vmlinux.h: the kernel types the BPF programs use, and only the fields they read: a
 * hand-kept subset of the kernel's BTF (bpftool btf dump file /sys/kernel/btf/vmlinux
 * format c, Linux 6.18, trimmed). Every kernel struct has preserve_access_index, so
 * libbpf relocates each field access against the running kernel's BTF at load (CO-RE):
 * the offsets here need not match any kernel, only the field names and kinds do (the
 * user ABI's pt_regs and iovec, and AIO's, are laid out as the ABI says). The build
 * reads no kernel BTF. Add a field here when a program reads a new one. */
#ifndef __VMLINUX_H__
#define __VMLINUX_H__ /* also tells bpf_tracing.h to use the kernel's pt_regs names */

/* --- base types (include/uapi/asm-generic/int-ll64.h, include/linux/types.h) ------------ */
typedef signed char __s8;
typedef unsigned char __u8;
typedef short __s16;
typedef unsigned short __u16;
typedef int __s32;
typedef unsigned int __u32;
typedef long long __s64;
typedef unsigned long long __u64;
typedef __u8 u8;
typedef __u16 u16;
typedef __u32 u32;
typedef __u64 u64;
typedef __s64 s64;
typedef __u16 __be16;
typedef __u32 __be32;
typedef __u32 __wsum;
typedef _Bool bool;
enum { false = 0, true = 1 };
typedef unsigned long size_t;
typedef long ssize_t;
typedef long long loff_t;
typedef unsigned short umode_t;
typedef int pid_t;
typedef __u32 dev_t;
typedef u64 sector_t;
typedef __u32 blk_opf_t;
typedef u8 blk_status_t;

typedef struct {
	int counter;
} atomic_t;

/* --- the BPF UAPI values the programs name (include/uapi/linux/bpf.h) ----------------- */
enum bpf_map_type {
	BPF_MAP_TYPE_HASH = 1,
	BPF_MAP_TYPE_ARRAY = 2,
	BPF_MAP_TYPE_PROG_ARRAY = 3,
	BPF_MAP_TYPE_PERCPU_ARRAY = 6,
	BPF_MAP_TYPE_LRU_HASH = 9,
	BPF_MAP_TYPE_ARRAY_OF_MAPS = 12,
	BPF_MAP_TYPE_RINGBUF = 27,
};
enum {
	BPF_ANY = 0,
	BPF_NOEXIST = 1,
	BPF_EXIST = 2,
};
enum {
	BPF_RB_NO_WAKEUP = 1,
	BPF_RB_FORCE_WAKEUP = 2,
};
enum {
	BPF_RB_AVAIL_DATA = 0,
};

/* Two layouts of the user ABI, the same in every kernel, so no CO-RE relocation (each
 * relocated type costs libbpf a pass over the kernel's ~127,000 BTF types per object):
 * x86-64's registers at a probe, in kernel names (arch/x86/include/asm/ptrace.h, the
 * layout of the uapi's user_regs_struct), and readv's iovec (include/uapi/linux/uio.h). */
struct pt_regs {
	unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di;
	unsigned long orig_ax, ip, cs, flags, sp, ss;
};

struct iovec {
	void *iov_base;
	size_t iov_len;
};

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

/* --- processes, files ------------------------------------------------------------------ */
struct fdtable {
	unsigned int max_fds;
	struct file **fd;
};

struct files_struct {
	struct fdtable *fdt;
};

struct signal_struct {
	atomic_t live;
};

/* the uprobe XOL area: its start is the uretprobe trampoline (kernel/events/uprobes.c) */
struct xol_area {
	unsigned long vaddr;
};

struct uprobes_state {
	struct xol_area *xol_area;
};

struct mm_struct {
	struct uprobes_state uprobes_state;
};

struct task_struct {
	int exit_code;
	pid_t pid;
	pid_t tgid;
	struct mm_struct *mm;
	struct files_struct *files;
	struct signal_struct *signal;
};

struct super_block {
	dev_t s_dev;
	unsigned long s_magic;
};

struct inode {
	struct super_block *i_sb;
	unsigned long i_ino;
};

struct qstr {
	const unsigned char *name;
};

struct dentry {
	struct qstr d_name;
	struct inode *d_inode;
};

struct path {
	struct dentry *dentry;
};

struct file {
	struct path f_path;
	struct inode *f_inode;
};

struct linux_binprm {
	unsigned int secureexec : 1;
	struct file *file;
};

struct iov_iter {
	size_t count;
};

/* Only named in the VFS functions' prototypes. */
struct kstat;
struct filename;
struct mnt_idmap;

/* --- page cache, block ------------------------------------------------------------------ */
typedef struct {
	unsigned long f;
} memdesc_flags_t; /* folio.flags (Linux 6.18: a struct of one unsigned long) */

struct address_space {
	struct inode *host;
};

struct folio {
	memdesc_flags_t flags;
	struct address_space *mapping;
	unsigned long index;
	unsigned long _flags_1;
};

enum pageflags {
	PG_head = 6, /* relocated by name (bpf_core_enum_value) */
};

struct gendisk {
	int major;
	int first_minor;
};

struct request_queue {
	struct gendisk *disk;
};

struct request {
	struct request_queue *q;
	blk_opf_t cmd_flags;
	sector_t __sector;
};

/* --- io_uring (io_uring/io_uring_types.h, io_uring/rw.h, io_uring/sync.h) ------------- */
typedef u64 io_req_flags_t;
typedef int rwf_t;

enum {
	REQ_F_FIXED_FILE = 1ULL, /* io_req_flags: = IOSQE_FIXED_FILE of the sqe */
};

struct io_cmd_data {
	struct file *file;
	__u8 data[56];
};

struct io_cqe {
	__u64 user_data;
	__s32 res;
	union {
		__u32 flags;
		int fd;
	};
};

struct io_kiocb {
	union {
		struct file *file;
		struct io_cmd_data cmd;
	};
	u8 opcode;
	io_req_flags_t flags;
	struct io_cqe cqe;
};

struct io_ring_ctx;

struct io_uring_cqe {
	__u64 user_data;
	__s32 res;
	__u32 flags;
};

struct kiocb {
	struct file *ki_filp;
	loff_t ki_pos;
};

struct io_rw {
	struct kiocb kiocb;
	u64 addr;
	u32 len;
	rwf_t flags;
};

struct io_sync {
	struct file *file;
	loff_t len;
	loff_t off;
	int flags;
	int mode;
};

#pragma clang attribute pop

/* --- Linux native AIO: the user ABI, read whole from user memory (no relocation) ------- */
struct iocb { /* include/uapi/linux/aio_abi.h */
	__u64 aio_data;
	__u32 aio_key;
	int aio_rw_flags;
	__u16 aio_lio_opcode;
	__s16 aio_reqprio;
	__u32 aio_fildes;
	__u64 aio_buf;
	__u64 aio_nbytes;
	__s64 aio_offset;
	__u64 aio_reserved2;
	__u32 aio_flags;
	__u32 aio_resfd;
};

struct io_event {
	__u64 data;
	__u64 obj;
	__s64 res;
	__s64 res2;
};

#endif /* __VMLINUX_H__ */
