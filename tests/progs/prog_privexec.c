/* prog_privexec.c: the program of the privileged-exec test (test_security.py), in two roles:
 *   prog_privexec exec OUT HELPER SECRET   writes "hello\n" (6 bytes) to OUT with one
 *                                          open/write/close, then execs HELPER read SECRET
 *   prog_privexec read SECRET              opens SECRET, reads it, prints "read N euid E" */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "exec")) {
		int fd = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
		if (fd < 0 || write(fd, "hello\n", 6) != 6 || close(fd))
			return 1;
		char *args[] = { argv[3], "read", argv[4], NULL };
		execv(argv[3], args);
		perror("execv");
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "read")) {
		char buf[256];
		int fd = open(argv[2], O_RDONLY);
		ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
		printf("read %zd euid %d\n", n, (int)geteuid());
		return n < 0;
	}
	fprintf(stderr, "usage: prog_privexec exec OUT HELPER SECRET | read SECRET\n");
	return 2;
}
