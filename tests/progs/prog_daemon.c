/* prog_daemon.c: a command whose grandchild daemonizes (fork, setsid, fork) and outlives it.
 *   prog_daemon FILE   the grandchild prints "daemon PID" on stdout, then waits for EOF on
 *                      its stdin (the test holds the other end), then writes "abcde" 5
 *                      times to FILE and exits 0; the command itself exits 3 as soon as its
 *                      child (the session leader) has exited. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: prog_daemon FILE\n");
		return 2;
	}
	pid_t p = fork();
	if (p == 0) {
		setsid();
		if (fork() == 0) {
			char c;
			printf("daemon %d\n", (int)getpid());
			fflush(stdout);
			while (read(0, &c, 1) > 0)
				;
			int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
			for (int i = 0; i < 5; i++)
				if (write(fd, "abcde", 5) != 5)
					_exit(1);
			_exit(close(fd) ? 1 : 0);
		}
		_exit(0);
	}
	waitpid(p, NULL, 0);
	return 3;
}
