/* fwrite.c: the STDIO benchmark's workload: N x fwrite(buf, 64, 1, f) on a fully buffered
 * stream to /dev/null, so N traced fwrite calls (and N/64 write(2)s underneath).
 * usage: fwrite N   prints "calls=N elapsed_ns=T" (CLOCK_MONOTONIC around the loop) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	static char buf[64];
	FILE *f = fopen("/dev/null", "w");
	if (!f)
		return 1;
	long long t0 = now();
	for (long i = 0; i < n; i++)
		if (fwrite(buf, sizeof(buf), 1, f) != 1)
			return 2;
	long long t1 = now();
	fclose(f);
	printf("calls=%ld elapsed_ns=%lld\n", n, t1 - t0);
	return 0;
}
