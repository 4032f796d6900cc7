/* prog_forkmany.c: many short-lived children, one after another, for the pid-reuse test.
 *   prog_forkmany N DIR   N children; child i writes 1 byte ("x") to DIR/c<i> and exits;
 *                         the parent waits for each before the next; exits 0 when all
 *                         children exited 0, 1 otherwise. With N > pid_max pids recur. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: prog_forkmany N DIR\n");
		return 2;
	}
	long n = atol(argv[1]);
	int bad = 0;
	for (long i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			char path[4096];
			snprintf(path, sizeof(path), "%s/c%ld", argv[2], i);
			int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			_exit(fd < 0 || write(fd, "x", 1) != 1 || close(fd) ? 1 : 0);
		}
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			bad = 1;
	}
	return bad;
}
