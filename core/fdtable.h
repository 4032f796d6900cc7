/* fdtable.h: what each traced process's file descriptors, DIR streams and cwd refer to,
 * rebuilt on the user side from the calls we see (open, dup, close, chdir, fork). */
#ifndef DC_FDTABLE_H
#define DC_FDTABLE_H

#include <stdint.h>

struct dc_proc_files;

/* The run's copy of path s (NUL-terminated; NULL gives NULL): one per distinct string, kept
 * until dc_files_clear, so that two paths are the same file name exactly when their
 * addresses are equal. Every path the getters below return (dc_files_fd, _fd_at, _dir,
 * _mapped, _inode) is one: callers may keep it, and key caches by its address, for the
 * run. Memory: one copy of each distinct path seen; never fails (dc_oom). */
const char *dc_files_intern(const char *s);

/* Returns the state of process `pid`, creating it empty (cwd "/") when absent. */
struct dc_proc_files *dc_files_get(int pid);
/* Returns the state of `pid` or NULL when we hold none. */
struct dc_proc_files *dc_files_find(int pid);
/* A fork: child gets copies of the parent's cwd, fds and DIR streams (fork(2)). */
void dc_files_fork(int parent, int child);
/* The process exited: forget it. */
void dc_files_exit(int pid);
/* Fills the state from /proc/PID/cwd and /proc/PID/fd (a process we did not see start),
 * and the inode table from the files its fds hold.
 * Returns 0, or -1 when /proc/PID cannot be read. */
int dc_files_from_proc(int pid);
/* What dc_files_from_proc found for pid, to be set again elsewhere (a spool's journal,
 * core/spool.h): calls fn once per fd that has a path, in fd order. Returns the cwd, NULL
 * when pid has no state. */
const char *dc_files_each_fd(int pid, void (*fn)(void *arg, long fd, const char *path),
			     void *arg);
/* Forgets everything, the interned paths too (end of run). */
void dc_files_clear(void);

void dc_files_set_cwd(struct dc_proc_files *p, const char *abs);
/* fd -> absolute path; path NULL forgets the fd. */
void dc_files_set_fd(struct dc_proc_files *p, long fd, const char *abs);
/* The path of fd, or NULL when unknown. */
const char *dc_files_fd(const struct dc_proc_files *p, long fd);
/* The same for events, at time ts (ns, any clock, the same for all calls): for a call
 * that opened fd (abs), when it returned (the kernel gave the fd out before); for one
 * that closed it (NULL), when it started (the kernel frees the fd after: close(2)). A close
 * that started before the current file's open returned ends the file before it (another
 * thread's close, seen after the open that reused its fd). */
void dc_files_set_fd_at(struct dc_proc_files *p, long fd, const char *abs, uint64_t ts);
/* The path fd had for a call that started at ts: the path before the fd's last close
 * when that close came from a call that started later (a call nested in this one, whose
 * event arrives first: fclose's close(2)). NULL when unknown. */
const char *dc_files_fd_at(const struct dc_proc_files *p, long fd, uint64_t ts);
/* DIR * (a user address) -> path; path NULL forgets it. */
void dc_files_set_dir(struct dc_proc_files *p, uint64_t dirp, const char *abs);
const char *dc_files_dir(const struct dc_proc_files *p, uint64_t dirp);

/* Memory mappings of files: [start, start + len) maps path (mmap(2) of a file; path NULL:
 * an anonymous mapping, which only replaces what was there); dc_files_unmap forgets the
 * range (munmap(2)), dc_files_mapped gives the file mapped at addr, or NULL. A fork copies
 * them; dc_files_exec forgets them all (execve(2) replaces the address space). */
void dc_files_map(struct dc_proc_files *p, uint64_t start, uint64_t len, const char *path);
void dc_files_unmap(struct dc_proc_files *p, uint64_t start, uint64_t len);
const char *dc_files_mapped(const struct dc_proc_files *p, uint64_t addr);
void dc_files_exec(struct dc_proc_files *p);

/* (st_dev, st_ino) -> the path it was last opened by (any process), for kernel events
 * that only know the inode (page cache). dc_files_note_inode stat(2)s abs now. */
void dc_files_note_inode(const char *abs);
/* The same with the inode known (read by BPF when the open returned). */
void dc_files_set_inode(uint64_t dev, uint64_t ino, const char *abs);
const char *dc_files_inode(uint64_t dev, uint64_t ino);
/* The name the last open of inode (dev, ino) reached it by, kept through its renames and
 * unlinks since (profile mode names an inode's sums so: the calls were made on the file
 * as opened); NULL when no open of it was seen. */
const char *dc_files_inode_opened(uint64_t dev, uint64_t ino);
/* A successful unlink of abs (an absolute path): the inode table forgets the file it
 * named, so that a new file that gets its inode number later is not named after it. */
void dc_files_unlinked(const char *abs);
/* A successful rename of `from` to `to` (absolute paths): the file `from` named is now
 * named `to`, and the file `to` named before is forgotten; exchange (renameat2's
 * RENAME_EXCHANGE, include/uapi/linux/fs.h) swaps the two names instead. */
void dc_files_renamed(const char *from, const char *to, int exchange);

/* Makes `path` absolute: relative paths are joined to the path of dirfd (AT_FDCWD = -100
 * or use_dirfd=0: the cwd), then "." and ".." and repeated '/' are folded lexically (no
 * symlinks followed, as the call may have created or removed the file). Writes into out
 * (cap bytes). Returns out, or NULL when dirfd's path is unknown. */
char *dc_files_resolve(const struct dc_proc_files *p, int use_dirfd, long dirfd,
		       const char *path, char *out, unsigned cap);

/* The kernel's path of a file a call named by `lexical` (an absolute path made by
 * dc_files_resolve): for a call that opened it (fd >= 0, and ino/dev the inode BPF read
 * from the new fd), what /proc/PID/fd/FD links to, when that fd still holds the same inode,
 * else realpath(3) of lexical when that names the same inode (a symlink to the file: the
 * process is gone, or closed the fd, by the time a spooled call is decoded);
 * otherwise the real path of its directory (realpath(3): symlinks resolved, bind mounts as
 * the tracer sees them) and its last component. Writes into out (cap bytes) and returns
 * out, or returns `lexical` itself when neither works (a process gone and a directory
 * removed since the call). Directories' real paths are kept for 100 ms (DC_REAL_TTL_NS):
 * a loop over one directory's files costs one realpath. Under sudo the resolution runs
 * with the invoking user's rights (dc_trust_enter_script): root's would show what lies
 * behind directories the user cannot search. /proc/self/... is the calling process's
 * /proc/PID/... (not the tracer's). */
const char *dc_files_real(int pid, long fd, uint64_t dev, uint64_t ino, const char *lexical,
			  char *out, unsigned cap);

#endif
