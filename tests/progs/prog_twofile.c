/* prog_twofile.c: system calls that move bytes between two files, for the two-file test.
 *   prog_twofile DIR   DIR/src must hold 12288 bytes; sendfile(2) copies it to DIR/a
 *                      (one call), splice(2) to DIR/b through a pipe (two calls of 12288
 *                      bytes: src -> pipe, pipe -> b; the pipe holds 16 pages); exits 0
 *                      when every call moved 12288 bytes. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/sendfile.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char p[4096];
	if (argc != 2)
		return 2;
	snprintf(p, sizeof(p), "%s/src", argv[1]);
	int src = open(p, O_RDONLY);
	snprintf(p, sizeof(p), "%s/a", argv[1]);
	int a = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (src < 0 || a < 0 || sendfile(a, src, NULL, 12288) != 12288)
		return 1;
	close(a);
	close(src);
	int pfd[2];
	src = open(argv[1][0] ? (snprintf(p, sizeof(p), "%s/src", argv[1]), p) : p, O_RDONLY);
	snprintf(p, sizeof(p), "%s/b", argv[1]);
	int b = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (src < 0 || b < 0 || pipe(pfd) || splice(src, NULL, pfd[1], NULL, 12288, 0) != 12288 ||
	    splice(pfd[0], NULL, b, NULL, 12288, 0) != 12288)
		return 1;
	close(b);
	close(src);
	return 0;
}
