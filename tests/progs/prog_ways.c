/* prog_ways.c: profile mode's per-thread aggregates (bpf/datacrumbs.h struct dc_agg_ways):
 * threads writing more files than a thread keeps ways, and a pause while they hold sums.
 *   prog_ways DIR [HALF]
 *                   NTHREADS threads each open DIR/f0 .. f5 and, in two halves of HALF
 *                   rounds (default 30), pwrite(2) (t + 1) * (f + 1) bytes to file f per round (thread
 *                   t from 0); between the halves every thread waits while the main thread
 *                   sleeps 0.5 s, writes the 6 bytes "marker" to DIR/marker, and sleeps
 *                   0.5 s again. Exits 0 when every write wrote all its bytes. So per file
 *                   f: 2 * HALF * NTHREADS pwrites of 2 * HALF * (f + 1) * 10 bytes in all,
 *                   half of each before the marker's write. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 4
#define NFILES 6
static int HALF = 30;

static const char *dir;
static pthread_barrier_t pause_start, pause_end;
static int failed;

static void nap(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&t, &t))
		;
}

static void writes(int t, const int *fd)
{
	char buf[64];
	memset(buf, 'w', sizeof(buf));
	for (int r = 0; r < HALF; r++)
		for (int f = 0; f < NFILES; f++) {
			size_t n = (size_t)(t + 1) * (f + 1);
			if (pwrite(fd[f], buf, n, 0) != (ssize_t)n)
				__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
		}
}

static void *thread(void *arg)
{
	int t = (int)(long)arg, fd[NFILES];
	char p[4096];
	for (int f = 0; f < NFILES; f++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, f);
		fd[f] = open(p, O_WRONLY | O_CREAT, 0600);
		if (fd[f] < 0)
			__atomic_store_n(&failed, 1, __ATOMIC_RELAXED);
	}
	writes(t, fd);
	pthread_barrier_wait(&pause_start);
	pthread_barrier_wait(&pause_end);
	writes(t, fd);
	for (int f = 0; f < NFILES; f++)
		close(fd[f]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 3 || (argc == 3 && (HALF = atoi(argv[2])) <= 0))
		return 2;
	dir = argv[1];
	pthread_t th[NTHREADS];
	pthread_barrier_init(&pause_start, NULL, NTHREADS + 1);
	pthread_barrier_init(&pause_end, NULL, NTHREADS + 1);
	for (long t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, thread, (void *)t))
			return 1;
	pthread_barrier_wait(&pause_start);
	nap(500);
	char p[4096];
	snprintf(p, sizeof(p), "%s/marker", dir);
	int m = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (m < 0 || write(m, "marker", 6) != 6)
		failed = 1;
	close(m);
	nap(500);
	pthread_barrier_wait(&pause_end);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(th[t], NULL);
	return failed;
}
