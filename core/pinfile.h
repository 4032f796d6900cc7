/* pinfile.h: site mode's ELF files, each opened once with the job user's rights and from
 * then on meant by its path: what root reads offsets from is what the uprobes attach to. */
#ifndef DC_PINFILE_H
#define DC_PINFILE_H

#include <stddef.h>
#include <sys/types.h>

/* From now on, dc_pin opens files as `user` (uid, gid and its groups: setfsuid(2),
 * setfsgid(2), setgroups(2) around each open, which also drops CAP_DAC_OVERRIDE and
 * CAP_DAC_READ_SEARCH from the effective set, capabilities(7)), so a file the user cannot
 * read fails as it would for them, before root has read a byte of it. Returns 0, or -1
 * with errno (the user's groups cannot be read). Single-threaded callers only: setgroups
 * is per process. */
int dc_pin_enable(uid_t uid, gid_t gid, const char *user);

/* The path to read or attach `path` through: path itself while pinning is off (datacrumbs
 * run); else "/proc/self/fd/N" (in buf, len bytes) of the one open file `path` means for
 * the rest of the process, opened on first use (O_RDONLY, a regular file only: a FIFO or
 * device is refused unopened-for-reading with EINVAL). The kernel resolves such a path to
 * the open file itself (proc(5) /proc/pid/fd), so a user who renames or swaps `path`
 * afterwards changes neither what is read nor what a uprobe attaches to. Returns NULL with
 * errno when it cannot be opened (EACCES: the user may not read it). */
const char *dc_pin(const char *path, char *buf, size_t len);

#endif
