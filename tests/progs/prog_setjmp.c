/* prog_setjmp.c: a program that leaves functions by longjmp, for the harm test: a return
 * probe there (on setjmp itself, or on a libc function longjmp'd out of) breaks it.
 *   prog_setjmp N   N rounds of: sigsetjmp, then siglongjmp from a nested function;
 *                   then sigsetjmp, then fwrite on an unbuffered fopencookie stream whose
 *                   write callback siglongjmps out of fwrite (through libc's frames).
 *                   Prints "jumped J" (J counts the returns by longjmp, 2N when nothing
 *                   broke); exits 0 when J == 2N, 1 otherwise.
 *   prog_setjmp mix N   N calls of dc_maybe_jump(i), which siglongjmps back when i is
 *                   odd and returns i * 2 when even; prints "jumped J returned R" (R:
 *                   the sum returned); exits 0 when J is the count of odd i < N. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sigjmp_buf env;

static __attribute__((noinline)) void jump_back(int v)
{
	siglongjmp(env, v);
}

__attribute__((noinline)) long dc_maybe_jump(long i)
{
	if (i % 2)
		siglongjmp(env, 1);
	return i * 2;
}

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	(void)c;
	(void)buf;
	(void)n;
	siglongjmp(env, 2);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "mix")) {
		long n = atol(argv[2]);
		volatile long jumped = 0, returned = 0;
		for (volatile long i = 0; i < n; i++) {
			if (sigsetjmp(env, 0) == 0)
				returned += dc_maybe_jump(i);
			else
				jumped++;
		}
		printf("jumped %ld returned %ld\n", (long)jumped, (long)returned);
		return jumped == n / 2 ? 0 : 1;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: prog_setjmp N | mix N\n");
		return 2;
	}
	long n = atol(argv[1]);
	volatile long jumped = 0;
	cookie_io_functions_t io = { .write = cookie_write };
	for (long i = 0; i < n; i++) {
		if (sigsetjmp(env, 0) == 0)
			jump_back(1);
		else
			jumped++;
		/* a new stream each round: the old one is left mid-call (never closed, its
		 * close would write again) */
		FILE *f = fopencookie(NULL, "w", io);
		if (!f)
			return 3;
		setvbuf(f, NULL, _IONBF, 0);
		if (sigsetjmp(env, 0) == 0)
			fwrite("x", 1, 1, f);
		else
			jumped++;
	}
	printf("jumped %ld\n", (long)jumped);
	return jumped == 2 * n ? 0 : 1;
}
