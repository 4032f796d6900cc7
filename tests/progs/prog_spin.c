/* prog_spin.c: a busy process for -p tests: prints "ready PID", then writes one byte to
 * /dev/null in a tight loop until a byte arrives on stdin, then prints "calls N" (the
 * writes it made) and exits. No sleeps: it is as busy as it can be when attached to. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
	int fd = open("/dev/null", O_WRONLY);
	long n = 0;
	struct pollfd p = { .fd = 0, .events = POLLIN };
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		for (int i = 0; i < 100; i++, n++)
			if (write(fd, "x", 1) != 1)
				return 3;
		if (poll(&p, 1, 0) > 0)
			break;
	}
	printf("calls %ld\n", n);
	fflush(stdout);
	return 0;
}
