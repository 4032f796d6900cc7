/* prog_dlopen.c: loads the library argv[1] at run time (dlopen), calls its dlt_fn(1),
 * prints "loaded TRACERPID" (its /proc/self/status TracerPid), and with argv[2] "wait"
 * reads a line from stdin; then dlcloses it, loads it again, calls dlt_fn(2) and
 * dlcloses it. With argv[2] "thread" the first load and call are made by a second
 * thread; with "before", it prints "ready" and reads a line before the first load, then
 * goes on as with "wait". Prints "ret A B" (dlt_fn's results) and exits 0; 2 on a dlopen error. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static long call(void *h, long x)
{
	long (*fn)(long) = (long (*)(long))dlsym(h, "dlt_fn");
	return fn ? fn(x) : -999;
}

static int tracer_pid(void)
{
	char line[256];
	int pid = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &pid) == 1)
			break;
	if (f)
		fclose(f);
	return pid;
}

static void *load(void *path)
{
	return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	void *h = NULL;
	int before = argc > 2 && !strcmp(argv[2], "before");
	if (before) {
		char buf[16];
		printf("ready\n");
		fflush(stdout);
		if (!fgets(buf, sizeof(buf), stdin))
			return 3;
	}
	if (argc > 2 && !strcmp(argv[2], "thread")) {
		pthread_t t;
		if (pthread_create(&t, NULL, load, argv[1]) || pthread_join(t, &h))
			return 2;
	} else {
		h = load(argv[1]);
	}
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	long a = call(h, 1);
	printf("loaded %d\n", tracer_pid());
	fflush(stdout);
	if (before || (argc > 2 && !strcmp(argv[2], "wait"))) {
		char buf[16];
		if (!fgets(buf, sizeof(buf), stdin))
			return 3;
	}
	dlclose(h);
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return 2;
	long b = call(h, 2);
	dlclose(h);
	printf("ret %ld %ld\n", a, b);
	return 0;
}
