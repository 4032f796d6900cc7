/* prog_links.c: calls on two names, for tests/test_fidelity.py. In DIR (argv[1]): writes
 * 100 bytes to a, hard-links b to it and appends 200 bytes through b, renames b to c and
 * c to sub/d (renameat), symlinks sub/s -> ../a and sub/t -> DIR/a (symlinkat), hard-links
 * sub/e to a (linkat), then reads the 300 bytes back through sub/e. Exits 0, or 1 with a
 * message naming the call that failed. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void need(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	char buf[300], abs_a[PATH_MAX];
	memset(buf, 'x', sizeof(buf));
	need(argc == 2, "usage: prog_links DIR");
	need(chdir(argv[1]) == 0, "chdir");
	snprintf(abs_a, sizeof(abs_a), "%s/a", argv[1]);
	int a = open("a", O_CREAT | O_WRONLY | O_TRUNC, 0644);
	need(a >= 0, "open a");
	need(write(a, buf, 100) == 100, "write a");
	need(link("a", "b") == 0, "link");
	int b = open("b", O_WRONLY | O_APPEND);
	need(b >= 0, "open b");
	need(write(b, buf, 200) == 200, "write b");
	need(close(a) == 0 && close(b) == 0, "close");
	need(rename("b", "c") == 0, "rename");
	need(mkdir("sub", 0755) == 0, "mkdir");
	int dir = open(".", O_RDONLY | O_DIRECTORY), sub = open("sub", O_RDONLY | O_DIRECTORY);
	need(dir >= 0 && sub >= 0, "open dirs");
	need(renameat(dir, "c", sub, "d") == 0, "renameat");
	need(symlink("../a", "sub/s") == 0, "symlink");
	need(symlinkat(abs_a, sub, "t") == 0, "symlinkat");
	need(linkat(AT_FDCWD, "a", sub, "e", 0) == 0, "linkat");
	int e = open("sub/e", O_RDONLY);
	need(e >= 0, "open sub/e");
	need(read(e, buf, sizeof(buf)) == 300, "read sub/e");
	need(close(e) == 0 && close(dir) == 0 && close(sub) == 0, "close");
	return 0;
}
