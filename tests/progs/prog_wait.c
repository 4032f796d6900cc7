/* prog_wait.c: a test program doing known I/O around a wait that the test controls, so
 * signals and -p attach can be tested without sleeping:
 *   prog_wait before FILE N   writes N bytes to FILE, prints "ready PID", then blocks
 *                             reading stdin until EOF; exits 0
 *   prog_wait after FILE N    prints "ready PID", blocks until one read of stdin returns
 *                             (a byte or EOF), then writes N bytes to FILE; exits 0
 * Each write is a single open/write/close with raw system calls (no stdio buffering). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char buf[1 << 16];

static int write_file(const char *path, long n)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (fd < 0 || n > (long)sizeof(buf) || write(fd, buf, n) != n)
		return -1;
	return close(fd);
}

static int ready(void)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
	return write(1, line, len) == len ? 0 : -1;
}

int main(int argc, char **argv)
{
	if (argc != 4 || (strcmp(argv[1], "before") && strcmp(argv[1], "after"))) {
		fprintf(stderr, "usage: prog_wait before|after FILE BYTES\n");
		return 2;
	}
	long n = atol(argv[3]);
	memset(buf, 'w', sizeof(buf));
	char c;
	if (!strcmp(argv[1], "before")) {
		if (write_file(argv[2], n) || ready())
			return 3;
		while (read(0, &c, 1) > 0)
			;
		return 0;
	}
	if (ready() || read(0, &c, 1) < 0 || write_file(argv[2], n))
		return 3;
	return 0;
}
