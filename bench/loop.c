/* loop.c: the benchmark's workload: N iterations of write(fd, buf, 64) to /dev/null and
 * pread(fd, buf, 64, 0) on a small file, so 2N traced calls per process; or, with -f, N
 * iterations of fwrite(buf, 64, 1, f) on a fully buffered stream to /dev/null (N traced
 * calls, and N/64 write(2)s underneath).
 *
 * usage: loop [-f] [-H] [-r RATE] N FILE [PROCS]
 *   PROCS processes (default 1, forked after the files are open) each run the N
 *   iterations; the parent waits for them.
 *   -H: before the timed part, print "ready ppid=PPID" and wait for a line on stdin; after
 *   the result line, print "hold ppid=PPID" and block reading stdin until EOF: so that
 *   run.sh reads the run-time statistics of the tracer's (our parent's) BPF programs just
 *   before and just after the timed part, while they are loaded, without sleeps.
 *   -r RATE: each process makes at most RATE traced calls per second (paced every 64
 *   iterations against its start time: a steady offered load, for the loss-free rate).
 * Prints one line of key=value pairs on stdout:
 *   kind         io (write + pread) or fwrite
 *   calls        2 * N * PROCS (io), N * PROCS (fwrite)
 *   elapsed_ns   wall time of the timed part (all processes), CLOCK_MONOTONIC
 *   start_ns end_ns  CLOCK_REALTIME at its start and end (to see a tracer's attach and
 *                detach time around it)
 *   cpu_ns       CPU time of the loop processes (user + system, the uprobe traps included)
 *   parent_cpu_ns CPU time our parent (the tracer, when it started us) spent meanwhile,
 *                summed over its threads from /proc/PPID/task/TID/schedstat; -1 if unknown
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Run time of every thread of process pid, ns; -1 if /proc does not say. */
static long long proc_cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	long long sum = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[300];
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		FILE *f = fopen(p, "r");
		long long ns = 0;
		if (f && fscanf(f, "%lld", &ns) == 1)
			sum += ns;
		if (f)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static long long tv_ns(struct timeval tv)
{
	return tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
}

int main(int argc, char **argv)
{
	int use_fwrite = 0, hold = 0, opt;
	double rate = 0;
	while ((opt = getopt(argc, argv, "fHr:")) != -1) {
		if (opt == 'f')
			use_fwrite = 1;
		else if (opt == 'H')
			hold = 1;
		else if (opt == 'r')
			rate = atof(optarg);
		else
			return 2;
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (argc < 3) {
		fprintf(stderr, "usage: loop [-f] [-H] [-r RATE] N FILE [PROCS]\n");
		return 2;
	}
	long n = atol(argv[1]);
	int procs = argc > 3 ? atoi(argv[3]) : 1;
	static char buf[64];
	int out = open("/dev/null", O_WRONLY);
	int in = open(argv[2], O_RDONLY);
	FILE *f = use_fwrite ? fdopen(out, "w") : NULL;
	if (out < 0 || in < 0 || procs < 1 || (use_fwrite && !f)) {
		perror("loop: open");
		return 1;
	}
	pid_t parent = getppid();
	if (hold) {
		printf("ready ppid=%d\n", (int)parent);
		fflush(stdout);
		char c;
		while (read(0, &c, 1) == 1 && c != '\n')
			;
	}
	long long pcpu0 = proc_cpu_ns(parent);
	long long rt0 = now(CLOCK_REALTIME), t0 = now(CLOCK_MONOTONIC);
	for (int p = 0; p < procs; p++) {
		pid_t pid = procs == 1 ? 0 : fork();
		if (pid < 0) {
			perror("loop: fork");
			return 1;
		}
		if (pid > 0)
			continue;
		for (long i = 0; i < n && f; i++) {
			if (fwrite(buf, sizeof(buf), 1, f) != 1) {
				perror("loop: fwrite");
				_exit(1);
			}
		}
		long long p0 = now(CLOCK_MONOTONIC);
		for (long i = 0; i < n && !f; i++) {
			if (rate > 0 && !(i & 63)) { /* 2 calls an iteration */
				long long due = p0 + (long long)(2e9 * i / rate), t = now(CLOCK_MONOTONIC);
				if (due > t) {
					struct timespec d = { (due - t) / 1000000000LL,
							      (due - t) % 1000000000LL };
					nanosleep(&d, NULL);
				}
			}
			if (write(out, buf, sizeof(buf)) != sizeof(buf) ||
			    pread(in, buf, sizeof(buf), 0) < 0) {
				perror("loop: I/O");
				_exit(1);
			}
		}
		if (f && fflush(f)) {
			perror("loop: fflush");
			_exit(1);
		}
		if (procs > 1)
			_exit(0);
	}
	int failed = 0, st;
	while (procs > 1 && wait(&st) > 0)
		failed |= !WIFEXITED(st) || WEXITSTATUS(st);
	long long t1 = now(CLOCK_MONOTONIC), rt1 = now(CLOCK_REALTIME);
	long long pcpu1 = proc_cpu_ns(parent);
	struct rusage self, kids;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	long long cpu = tv_ns(self.ru_utime) + tv_ns(self.ru_stime) + tv_ns(kids.ru_utime) +
			tv_ns(kids.ru_stime);
	printf("calls=%ld elapsed_ns=%lld start_ns=%lld end_ns=%lld cpu_ns=%lld parent_cpu_ns=%lld"
	       " kind=%s\n",
	       (f ? 1 : 2) * n * procs, t1 - t0, rt0, rt1, cpu,
	       pcpu0 < 0 || pcpu1 < 0 ? -1 : pcpu1 - pcpu0, f ? "fwrite" : "io");
	if (hold) {
		/* the tracer's programs stay loaded until whoever runs us closes our stdin */
		printf("hold ppid=%d\n", (int)parent);
		fflush(stdout);
		while (read(0, buf, sizeof(buf)) > 0)
			;
	}
	return failed;
}
