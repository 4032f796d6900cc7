/* prog_raw.c: a static test program doing its file I/O with raw syscall(2), bypassing
 * any libc function a uprobe could see: only the syscall layer can trace it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static char buf[4096];

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: prog_raw DIR\n");
		return 2;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/raw.bin", argv[1]);
	memset(buf, 'r', sizeof(buf));
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, 0640);
	if (syscall(SYS_write, fd, buf, 100) != 100 ||
	    syscall(SYS_pwrite64, fd, buf, 200, 1000) != 200)
		return 3;
	syscall(SYS_close, fd);
	snprintf(path, sizeof(path), "%s/missing/none", argv[1]);
	if (syscall(SYS_openat, AT_FDCWD, path, O_RDONLY) != -1)
		return 3;
	return 0;
}
