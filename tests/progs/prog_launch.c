/* prog_launch.c: a static launcher (as job launchers and wrappers are): execs its
 * arguments. The programs it runs load libc even though it does not. */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: prog_launch PROGRAM [ARGS...]\n");
		return 2;
	}
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 127;
}
