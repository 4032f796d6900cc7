/* pinfile.c: site mode's ELF files, each opened once with the job user's rights (fs ids),
 * then read and attached only through that open file (/proc/self/fd/N). */
#define _GNU_SOURCE
#include "pinfile.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

struct pin {
	char *path;
	int fd;
};

static struct {
	int on;
	uid_t uid;
	gid_t gid;
	gid_t groups[256];
	int ngroups;
	struct pin *pins;   /* a few dozen files at most: a linear walk */
	size_t n, cap;
} P;

int dc_pin_enable(uid_t uid, gid_t gid, const char *user)
{
	int ng = (int)(sizeof(P.groups) / sizeof(P.groups[0]));
	if (getgrouplist(user, gid, P.groups, &ng) < 0) {
		errno = E2BIG;
		return -1;
	}
	P.ngroups = ng;
	P.uid = uid;
	P.gid = gid;
	P.on = 1;
	return 0;
}

/* Opens path with the user's file rights; root's again after. fd, or -1 with errno. */
static int open_as_user(const char *path)
{
	if (setgroups((size_t)P.ngroups, P.groups))
		return -1;
	setfsgid(P.gid);
	setfsuid(P.uid);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int e = errno;
	setfsuid(0);
	setfsgid(0);
	if (setgroups(0, NULL) || setfsuid((uid_t)-1) != 0 || setfsgid((gid_t)-1) != 0)
		abort(); /* root's rights did not come back: nothing is safe to do */
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
		e = EINVAL;
	}
	if (fd >= 0)
		fcntl(fd, F_SETFL, 0);
	errno = e;
	return fd;
}

const char *dc_pin(const char *path, char *buf, size_t len)
{
	if (!P.on)
		return path;
	size_t i;
	for (i = 0; i < P.n && strcmp(P.pins[i].path, path); i++)
		;
	if (i == P.n) {
		int fd = open_as_user(path);
		if (fd < 0)
			return NULL;
		if (P.n == P.cap) {
			size_t cap = P.cap ? P.cap * 2 : 32;
			struct pin *p = realloc(P.pins, cap * sizeof(*p));
			if (!p) {
				close(fd);
				errno = ENOMEM;
				return NULL;
			}
			P.pins = p;
			P.cap = cap;
		}
		P.pins[P.n].path = strdup(path);
		if (!P.pins[P.n].path) {
			close(fd);
			errno = ENOMEM;
			return NULL;
		}
		P.pins[P.n++].fd = fd;
	}
	snprintf(buf, len, "/proc/self/fd/%d", P.pins[i].fd);
	return buf;
}
