/* prog_stdout.c: writes to stdout through the STDIO functions that take no FILE * and
 * through fputs, putc and dprintf, for tests/test_fidelity.py: printf "%d\n" 12345 (6
 * bytes), puts "hello" (6, the newline), putchar 'x' (1), fputs "abc" to stdout (3),
 * vprintf "v=%s\n" "yy" (5), putc '\n' to stdout (1), fflush, dprintf(1, "d%d\n", 7) (3):
 * 25 bytes. Exits 0, or 1 when a call fails. */
#include <stdarg.h>
#include <stdio.h>

static int vp(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vprintf(fmt, ap);
	va_end(ap);
	return n;
}

int main(void)
{
	int ok = printf("%d\n", 12345) == 6;
	ok &= puts("hello") >= 0;
	ok &= putchar('x') == 'x';
	ok &= fputs("abc", stdout) >= 0;
	ok &= vp("v=%s\n", "yy") == 5;
	ok &= putc('\n', stdout) == '\n';
	ok &= fflush(stdout) == 0;
	ok &= dprintf(1, "d%d\n", 7) == 3;
	return ok ? 0 : 1;
}
