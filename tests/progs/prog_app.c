/* prog_app.c: an application with functions of its own to probe by glob (dc.uprobe):
 * write_checkpoint_a/b(step, path) write files; other_work() must not be traced. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) long write_checkpoint_a(int step, const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "step %d\n", step);
	long w = write(fd, buf, n);
	close(fd);
	return w;
}

__attribute__((noinline)) long write_checkpoint_b(int step, const char *path)
{
	return write_checkpoint_a(step * 10, path);
}

__attribute__((noinline)) int other_work(int x)
{
	return x * 2;
}

int main(int argc, char **argv)
{
	char a[4096], b[4096];
	if (argc < 2)
		return 2;
	snprintf(a, sizeof(a), "%s/ck_a", argv[1]);
	snprintf(b, sizeof(b), "%s/ck_b", argv[1]);
	long t = 0;
	for (int step = 1; step <= 3; step++)
		t += write_checkpoint_a(step, a) + other_work(step);
	t += write_checkpoint_b(4, b);
	return t > 0 ? 0 : 1;
}
