/* prog_io.c: a test program doing known POSIX I/O, so a trace of it can be checked
 * exactly: relative and absolute paths, offsets, a failing open, threads, fork, exec. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char buf[8192];

/* Each thread: open t<i>.bin, 3 writes of 512 bytes, close. */
static void *thread_io(void *arg)
{
	char name[32];
	int i = (int)(long)arg;
	snprintf(name, sizeof(name), "t%d.bin", i);
	int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	for (int k = 0; k < 3; k++)
		if (write(fd, buf, 512) != 512)
			exit(3);
	close(fd);
	return (void *)(long)gettid();
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: prog_io DIR\n");
		return 2;
	}
	if (chdir(argv[1]))
		return 2;
	if (argc > 2 && !strcmp(argv[2], "--exec-child")) {
		int fd = open("exec.bin", O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (write(fd, buf, 333) != 333)
			return 3;
		close(fd);
		return 0;
	}
	char abs[4096];
	memset(buf, 'x', sizeof(buf));

	/* relative path, write + pwrite at a known offset, fsync */
	int fd = open("data.bin", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	if (write(fd, buf, 4096) != 4096 || pwrite(fd, buf, 1000, 8192) != 1000)
		return 3;
	fsync(fd);
	close(fd);

	/* absolute path: reads, lseek, pread */
	snprintf(abs, sizeof(abs), "%s/data.bin", argv[1]);
	fd = open(abs, O_RDONLY);
	if (read(fd, buf, 100) != 100 || lseek(fd, 8192, SEEK_SET) != 8192 ||
	    read(fd, buf, 2000) != 1000 || pread(fd, buf, 10, 4000) != 10)
		return 3;
	close(fd);

	struct stat st;
	if (stat("data.bin", &st) || st.st_size != 9192)
		return 3;
	if (open("missing/nothere", O_RDONLY) != -1)
		return 3;
	unlink("data.bin");

	/* two threads */
	pthread_t t[2];
	void *tid[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, thread_io, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &tid[i]);

	/* a forked child that writes */
	pid_t child = fork();
	if (child == 0) {
		int cfd = open("child.bin", O_CREAT | O_WRONLY | O_TRUNC, 0600);
		if (write(cfd, buf, 777) != 777)
			_exit(3);
		close(cfd);
		_exit(0);
	}
	int status;
	waitpid(child, &status, 0);

	/* an exec'd child */
	pid_t ex = fork();
	if (ex == 0) {
		execl("/proc/self/exe", "prog_io", argv[1], "--exec-child", (char *)NULL);
		_exit(127);
	}
	waitpid(ex, &status, 0);

	printf("main=%d thread0=%ld thread1=%ld child=%d exec=%d\n", getpid(), (long)tid[0],
	       (long)tid[1], child, ex);
	return 7; /* a known exit status for the test */
}
