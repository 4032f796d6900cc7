/* prog_stdio.c: known STDIO calls on known files, for tests/test_stdio.py.
 * Usage: prog_stdio DIR. In DIR:
 *   s1.txt: fopen "w+"; fwrite 10 x 100 bytes (1000); fprintf "n=%d\n" 42 (5 bytes);
 *           fputs "hello\n"; fputc 'x'; fflush; fseek 0 SEEK_SET; fread 4 x 250 (1000);
 *           fgets into 64 bytes; fgetc; ftell; rewind; fseeko 100 SEEK_CUR; ftello;
 *           fileno; fclose.
 *   s2.txt: fdopen(open(O_WRONLY|O_CREAT)) "w"; fwrite 1 x 4096; fclose.
 *   s3.txt: written by hand (3 lines), then getline 3 times and once more at EOF.
 *   freopen of s1.txt's stream onto s4.txt "a": fputs "tail\n", fclose.
 *   an open_memstream stream (no fd of its own): fprintf "m=%d\n" 7, fclose.
 * Prints nothing on success. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

int main(int argc, char **argv)
{
	char p1[4096], p2[4096], p3[4096], p4[4096], buf[4096], line[64];
	if (argc != 2)
		return 2;
	snprintf(p1, sizeof(p1), "%s/s1.txt", argv[1]);
	snprintf(p2, sizeof(p2), "%s/s2.txt", argv[1]);
	snprintf(p3, sizeof(p3), "%s/s3.txt", argv[1]);
	snprintf(p4, sizeof(p4), "%s/s4.txt", argv[1]);
	memset(buf, 'a', sizeof(buf));

	FILE *f = fopen(p1, "w+");
	if (!f)
		die("fopen");
	if (fwrite(buf, 10, 100, f) != 100)
		die("fwrite");
	fprintf(f, "n=%d\n", 42);
	fputs("hello\n", f);
	fputc('x', f);
	fflush(f);
	fseek(f, 0, SEEK_SET);
	if (fread(buf, 4, 250, f) != 250)
		die("fread");
	fgets(line, sizeof(line), f);
	fgetc(f);
	ftell(f);
	rewind(f);
	fseeko(f, 100, SEEK_CUR);
	ftello(f);
	fileno(f);

	FILE *g = freopen(p4, "a", f);
	if (!g)
		die("freopen");
	fputs("tail\n", g);
	fclose(g);

	int fd = open(p2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	FILE *h = fdopen(fd, "w");
	if (!h)
		die("fdopen");
	fwrite(buf, 1, 4096, h);
	fclose(h);

	FILE *t = fopen(p3, "w");
	fputs("one\ntwo\nthree\n", t);
	fclose(t);
	t = fopen(p3, "r");
	char *lp = NULL;
	size_t cap = 0;
	for (int i = 0; i < 4; i++)
		getline(&lp, &cap, t);
	free(lp);
	fclose(t);

	char *mem;
	size_t memlen;
	FILE *m = open_memstream(&mem, &memlen);
	fprintf(m, "m=%d\n", 7);
	fclose(m);
	free(mem);
	return 0;
}
