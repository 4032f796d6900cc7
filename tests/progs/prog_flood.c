/* prog_flood.c: N write(2)s of 64 bytes to /dev/null as fast as it can, so a tracer whose
 * consumer is slower than that loses records: the overload test's program. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[64];
	long n = argc > 1 ? atol(argv[1]) : 0;
	int fd = open("/dev/null", O_WRONLY);

	if (argc != 2 || n <= 0 || fd < 0) {
		fprintf(stderr, "usage: prog_flood N (N > 0 writes to /dev/null)\n");
		return 2;
	}
	for (long i = 0; i < n; i++)
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			return 1;
	return 0;
}
