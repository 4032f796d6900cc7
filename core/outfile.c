/* outfile.c: names the trace file from -o and creates it exclusively (no symlink followed,
 * nothing truncated unless --force on the user's own file), with its mode and owner. */
#define _GNU_SOURCE
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trust.h"

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && !strcmp(s + n - t, tail);
}

static const char *kind_of(mode_t m)
{
	return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m)
	       ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISLNK(m) ? "a symbolic link"
	       : S_ISDIR(m) ? "a directory" : "not a regular file";
}

/* An existing name at path: refused unless --force on the invoking user's regular file. */
static int check_existing(const struct dc_outspec *o, const char *path, const struct stat *st,
			  char *err, size_t errlen)
{
	if (!S_ISREG(st->st_mode)) {
		snprintf(err, errlen, "-o %s: is %s, not a trace file (give a directory or a new "
			 "file name)", path, kind_of(st->st_mode));
		return -1;
	}
	if (!o->force) {
		snprintf(err, errlen, "%s exists: not overwritten (give --force to replace it, "
			 "or another -o)", path);
		return -1;
	}
	if (st->st_uid != dc_invoker()->uid || st->st_nlink != 1) {
		snprintf(err, errlen, "%s exists and %s: --force replaces only your own trace "
			 "files", path, st->st_uid != dc_invoker()->uid ? "is another user's"
			 : "has other hard links");
		return -1;
	}
	return 0;
}

int dc_out_path(const struct dc_outspec *o, const char *exec, const char *host, int pid,
		char *out, size_t outlen, char *err, size_t errlen)
{
	const char *dir = o->output ? o->output : ".";
	struct stat st, lst;
	int isdir = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	const char *slash = strrchr(exec, '/');
	const char *base = slash ? slash + 1 : exec;
	int isfile = !isdir && (ends_with(dir, ".pfw.gz") || ends_with(dir, ".pfw"));
	if (isfile && o->compress != ends_with(dir, ".gz")) {
		snprintf(err, errlen, "-o %s: %s", dir, o->compress
			 ? "a .pfw file is plain JSON: name it .pfw.gz, or add --no-compress"
			 : "--no-compress writes plain JSON: name the file .pfw, not .gz");
		return -1;
	}
	if (!isfile) {
		if (!isdir) {
			if (lstat(dir, &lst) == 0)
				snprintf(err, errlen, "-o %s: exists and is %s (give a directory, or "
					 "a trace file name ending in .pfw.gz)", dir,
					 S_ISREG(lst.st_mode) ? "a file" : kind_of(lst.st_mode));
			else
				snprintf(err, errlen, "output directory %s does not exist (create it, "
					 "or give -o a file name ending in .pfw.gz)", dir);
			return -1;
		}
		size_t dl = strlen(dir);
		while (dl > 1 && dir[dl - 1] == '/')
			dl--;
		snprintf(out, outlen, "%.*s/%s-%s-%d.pfw%s", (int)dl, dir, base, host, pid,
			 o->compress ? ".gz" : "");
	} else {
		snprintf(out, outlen, "%s", o->output);
	}
	if (lstat(out, &lst) == 0 && check_existing(o, out, &lst, err, errlen))
		return -1;
	char parent[PATH_MAX];
	snprintf(parent, sizeof(parent), "%s", out);
	char *s = strrchr(parent, '/');
	if (s)
		*s = 0;
	else
		snprintf(parent, sizeof(parent), ".");
	if (access(parent[0] ? parent : "/", W_OK) != 0) {
		snprintf(err, errlen, "cannot write to output directory %s: %s (give -o a "
			 "writable directory)", parent[0] ? parent : "/", strerror(errno));
		return -1;
	}
	return 0;
}

/* As root: the first symbolic link among the components of directory dir (as written,
 * each prefix lstat'ed) that neither root nor the invoking user owns, in link (len
 * bytes), and its owner; 0 when there is none. Root does not follow another user's link
 * to where it creates a file (as fs.protected_symlinks would in a sticky directory;
 * symlinks(7)), which is off here. Links inside a trusted link's target are not walked. */
static int foreign_link(const char *dir, char *link, size_t len, uid_t *owner)
{
	const struct dc_invoker *iv = dc_invoker();
	if (!iv->root)
		return 0;
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		struct stat st;
		if (!lstat(buf, &st) && S_ISLNK(st.st_mode) && st.st_uid != 0 &&
		    st.st_uid != iv->uid) {
			snprintf(link, len, "%s", buf);
			*owner = st.st_uid;
			return 1;
		}
		*p = c;
		if (!c)
			return 0;
	}
}

int dc_out_create(const struct dc_outspec *o, const char *path, uid_t uid, gid_t gid,
		  char *err, size_t errlen)
{
	mode_t mode = o->group_readable ? 0640 : 0600;
	/* every step on one directory descriptor: a directory of the path swapped meanwhile
	 * cannot redirect the unlink of --force or the creation elsewhere */
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : path;
	if (slash == dir)
		dir[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	char link[PATH_MAX];
	uid_t owner;
	if (foreign_link(dir, link, sizeof(link), &owner)) {
		snprintf(err, errlen, "-o %s: %s is a symbolic link of uid %u (neither root nor "
			 "you): not followed as root (give the directory it points to)", path, link,
			 (unsigned)owner);
		return -1;
	}
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		snprintf(err, errlen, "cannot create %s: %s: %s", path, dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (check_existing(o, path, &st, err, errlen))
			goto fail;
		if (unlinkat(dfd, base, 0) && errno != ENOENT) {
			snprintf(err, errlen, "cannot replace %s: %s", path, strerror(errno));
			goto fail;
		}
	}
	int fd = openat(dfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s%s", path, strerror(errno),
			 errno == EEXIST ? " (a file of that name appeared meanwhile: not "
			 "overwritten)" : "");
		goto fail;
	}
	/* the umask may have taken bits away; the mode is the one documented */
	if (fchmod(fd, mode) || (geteuid() == 0 && fchown(fd, uid, gid))) {
		snprintf(err, errlen, "cannot set the owner or mode of %s: %s", path,
			 strerror(errno));
		close(fd);
		unlinkat(dfd, base, 0);
		goto fail;
	}
	close(dfd);
	return fd;
fail:
	close(dfd);
	return -1;
}
