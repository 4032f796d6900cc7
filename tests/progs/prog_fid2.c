/* prog_fid2.c: the calls of the fidelity test, part 2 (tests/test_fidelity2.py), one case
 * per run, in directory DIR:
 *   prog_fid2 lock DIR    6 rounds: DIR/a.lock made with O_CREAT|O_EXCL, written
 *                         (10 + round bytes, then 3), renamed over DIR/a; prints each
 *                         round's inode number (fstat), one line
 *   prog_fid2 tmpfile DIR an O_TMPFILE file in DIR written 4096 + 100 bytes, then named
 *                         DIR/named by linkat of /proc/self/fd/N, then written 50 more
 *   prog_fid2 v2 DIR      DIR/v written with pwritev2 (2 x 1000 bytes at offset 0; at
 *                         offset -1, the file position, 500 + 1000), read back with
 *                         preadv2 (offset 0: 2 x 1000; offset -1 from the position
 *                         lseek left at 1000: 2 x 1500)
 *   prog_fid2 copy DIR    DIR/src (20000 bytes) copied to DIR/dst by copy_file_range
 * Exits 0 when every call did what it should. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static char buf[8192];

static int lock_rounds(const char *dir)
{
	char lock[4096], dst[4096];
	snprintf(lock, sizeof(lock), "%s/a.lock", dir);
	snprintf(dst, sizeof(dst), "%s/a", dir);
	for (int r = 0; r < 6; r++) {
		struct stat st;
		int fd = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0600);
		if (fd < 0 || fstat(fd, &st) || write(fd, buf, 10 + r) != 10 + r ||
		    write(fd, buf, 3) != 3 || close(fd) || rename(lock, dst))
			return 1;
		printf("%llu%c", (unsigned long long)st.st_ino, r < 5 ? ' ' : '\n');
	}
	return 0;
}

static int tmpfile_named(const char *dir)
{
	char proc[64], name[4096];
	int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
	if (fd < 0 || write(fd, buf, 4096) != 4096 || write(fd, buf, 100) != 100)
		return 1;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	snprintf(name, sizeof(name), "%s/named", dir);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) ||
	    write(fd, buf, 50) != 50)
		return 1;
	return close(fd);
}

static int v2(const char *dir)
{
	char p[4096];
	struct iovec two[2] = { { buf, 1000 }, { buf + 1000, 1000 } };
	struct iovec odd[2] = { { buf, 500 }, { buf + 500, 1000 } };
	struct iovec big[2] = { { buf, 1500 }, { buf + 1500, 1500 } };
	snprintf(p, sizeof(p), "%s/v", dir);
	int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || pwritev2(fd, two, 2, 0, 0) != 2000 || lseek(fd, 2000, SEEK_SET) != 2000 ||
	    pwritev2(fd, odd, 2, -1, 0) != 1500 || preadv2(fd, two, 2, 0, 0) != 2000 ||
	    lseek(fd, 1000, SEEK_SET) != 1000 || preadv2(fd, big, 2, -1, 0) != 2500)
		return 1;
	return close(fd);
}

static int copy(const char *dir)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s/src", dir);
	int src = open(p, O_RDWR | O_CREAT | O_TRUNC, 0600);
	for (int i = 0; src >= 0 && i < 4; i++)
		if (write(src, buf, 5000) != 5000)
			return 1;
	snprintf(p, sizeof(p), "%s/dst", dir);
	int dst = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	loff_t in = 0;
	if (src < 0 || dst < 0 || copy_file_range(src, &in, dst, NULL, 20000, 0) != 20000)
		return 1;
	return close(src) || close(dst);
}

int main(int argc, char **argv)
{
	memset(buf, 'x', sizeof(buf));
	if (argc != 3)
		return 2;
	if (!strcmp(argv[1], "lock"))
		return lock_rounds(argv[2]);
	if (!strcmp(argv[1], "tmpfile"))
		return tmpfile_named(argv[2]);
	if (!strcmp(argv[1], "v2"))
		return v2(argv[2]);
	if (!strcmp(argv[1], "copy"))
		return copy(argv[2]);
	return 2;
}
