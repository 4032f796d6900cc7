/* vfs.bpf.c: the VFS layer: the kernel's vfs_* functions, each as an fentry/fexit pair and
 * as a kprobe/kretprobe pair; the loader enables, per function, whichever this kernel allows. */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "GPL"; /* fentry/kprobe programs use GPL-only helpers */

/* Attach cookies (DC_COOKIE of each function's probe), by datacrumbs.h DC_VFS_FUNCS order,
 * set by the loader before load. */
const volatile __u64 vfs_cookie[DC_VFS_NR] = {};

static __always_inline __u64 inode_ino(struct inode *i)
{
	return BPF_CORE_READ(i, i_ino);
}

static __always_inline __u64 inode_dev(struct inode *i)
{
	return user_dev(BPF_CORE_READ(i, i_sb, s_dev));
}

static __always_inline __u64 pos_of(loff_t *pos)
{
	loff_t v = 0;
	if (pos)
		bpf_probe_read_kernel(&v, sizeof(v), pos);
	return v;
}

/* Each function's entry (args: ino, dev of its file, then its own) and return, four ways:
 * fentry/fexit and kprobe/kretprobe. */
#define DC_VFS(fn, idx, enter, ...)							\
	SEC("fentry/" #fn)								\
	int BPF_PROG(dc_fe_##fn, __VA_ARGS__) { enter; return 0; }			\
	SEC("fexit/" #fn)								\
	int BPF_PROG(dc_fx_##fn, __VA_ARGS__, long ret)					\
	{ dc_call_return(vfs_cookie[idx], ret); return 0; }				\
	SEC("kprobe/" #fn)								\
	int BPF_KPROBE(dc_kp_##fn, __VA_ARGS__) { enter; return 0; }			\
	SEC("kretprobe/" #fn)								\
	int BPF_KRETPROBE(dc_kr_##fn, long ret) { dc_call_return(vfs_cookie[idx], ret); return 0; }

#define FILE_ENTER(idx, file, a2, a3, a4)						\
	call_enter(vfs_cookie[idx], inode_ino(BPF_CORE_READ(file, f_inode)),		\
		   inode_dev(BPF_CORE_READ(file, f_inode)), (a2), (a3), (a4), 0)

DC_VFS(vfs_read, DC_VFS_READ, FILE_ENTER(DC_VFS_READ, file, count, pos_of(pos), 0),
       struct file *file, char *buf, size_t count, loff_t *pos)
DC_VFS(vfs_write, DC_VFS_WRITE, FILE_ENTER(DC_VFS_WRITE, file, count, pos_of(pos), 0),
       struct file *file, const char *buf, size_t count, loff_t *pos)
DC_VFS(vfs_readv, DC_VFS_READV, FILE_ENTER(DC_VFS_READV, file, vlen, pos_of(pos), 0),
       struct file *file, const struct iovec *vec, unsigned long vlen, loff_t *pos, int flags)
DC_VFS(vfs_writev, DC_VFS_WRITEV, FILE_ENTER(DC_VFS_WRITEV, file, vlen, pos_of(pos), 0),
       struct file *file, const struct iovec *vec, unsigned long vlen, loff_t *pos, int flags)
DC_VFS(vfs_iter_read, DC_VFS_ITER_READ,
       FILE_ENTER(DC_VFS_ITER_READ, file, BPF_CORE_READ(iter, count), pos_of(ppos), 0),
       struct file *file, struct iov_iter *iter, loff_t *ppos, int flags)
DC_VFS(vfs_iter_write, DC_VFS_ITER_WRITE,
       FILE_ENTER(DC_VFS_ITER_WRITE, file, BPF_CORE_READ(iter, count), pos_of(ppos), 0),
       struct file *file, struct iov_iter *iter, loff_t *ppos, int flags)
DC_VFS(vfs_open, DC_VFS_OPEN,
       call_enter(vfs_cookie[DC_VFS_OPEN], inode_ino(BPF_CORE_READ(path, dentry, d_inode)),
		  inode_dev(BPF_CORE_READ(path, dentry, d_inode)), 0, 0, 0, 0),
       const struct path *path, struct file *file)
DC_VFS(vfs_fsync_range, DC_VFS_FSYNC_RANGE,
       FILE_ENTER(DC_VFS_FSYNC_RANGE, file, start, end - start, datasync),
       struct file *file, loff_t start, loff_t end, int datasync)
DC_VFS(vfs_getattr, DC_VFS_GETATTR,
       call_enter(vfs_cookie[DC_VFS_GETATTR], inode_ino(BPF_CORE_READ(path, dentry, d_inode)),
		  inode_dev(BPF_CORE_READ(path, dentry, d_inode)), request_mask, 0, 0, 0),
       const struct path *path, struct kstat *stat, u32 request_mask, unsigned int query_flags)
DC_VFS(vfs_statx, DC_VFS_STATX,
       call_enter(vfs_cookie[DC_VFS_STATX], 0, 0, dfd, flags, request_mask, 0),
       int dfd, struct filename *filename, int flags, struct kstat *stat, u32 request_mask)
DC_VFS(do_truncate, DC_VFS_DO_TRUNCATE,
       call_enter(vfs_cookie[DC_VFS_DO_TRUNCATE], inode_ino(BPF_CORE_READ(dentry, d_inode)),
		  inode_dev(BPF_CORE_READ(dentry, d_inode)), length, 0, 0, 0),
       struct mnt_idmap *idmap, struct dentry *dentry, loff_t length, unsigned int time_attrs,
       struct file *filp)
DC_VFS(vfs_fallocate, DC_VFS_FALLOCATE, FILE_ENTER(DC_VFS_FALLOCATE, file, mode, offset, len),
       struct file *file, int mode, loff_t offset, loff_t len)
