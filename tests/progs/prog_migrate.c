/* prog_migrate.c: two threads that hop between CPUs while they write, so that one
 * thread's records go to different ring buffers (shards) and the merge must keep their
 * order: thread t (0, 1) makes N write(2)s of 1 + i bytes (i = 0 .. N-1) to /dev/null,
 * moving itself to CPU (i + t) % CPUS (sched_setaffinity(2)) before each; then the main
 * thread makes one write of 4096 bytes. usage: prog_migrate N. Exit 0, or 1 on a failed
 * call (named on stderr). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>

static long n;
static int fd;
static char buf[4096];

static void *writer(void *arg)
{
	long t = (long)arg, cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (long i = 0; i < n; i++) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)((i + t) % cpus), &set);
		sched_setaffinity(0, sizeof(set), &set); /* a CPU we may not use: stay */
		if (write(fd, buf, 1 + i % 4000) != 1 + i % 4000) {
			perror("prog_migrate: write");
			exit(1);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 0;
	fd = open("/dev/null", O_WRONLY);
	if (n <= 0 || fd < 0) {
		fprintf(stderr, "usage: prog_migrate N (N > 0)\n");
		return 1;
	}
	pthread_t th[2];
	for (long t = 0; t < 2; t++)
		if (pthread_create(&th[t], NULL, writer, (void *)t)) {
			fprintf(stderr, "prog_migrate: pthread_create failed\n");
			return 1;
		}
	for (int t = 0; t < 2; t++)
		pthread_join(th[t], NULL);
	if (write(fd, buf, sizeof(buf)) != sizeof(buf)) {
		perror("prog_migrate: write");
		return 1;
	}
	return 0;
}
