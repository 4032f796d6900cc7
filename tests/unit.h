/* unit.h: the check counter the C unit tests share: CHECK(cond, fmt, ...) counts one
 * assertion and prints the failing ones with file:line; UNIT_DONE prints the totals. */
#ifndef DC_UNIT_H
#define DC_UNIT_H

#include <stdarg.h>
#include <stdio.h>

static int passed, failed;

#define CHECK(cond, ...) check((cond), __FILE__, __LINE__, __VA_ARGS__)
static void check(int ok, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		passed++;
		return;
	}
	failed++;
	fprintf(stderr, "%s:%d: FAIL: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Prints "NAME: N passed, M failed" and gives main's return value. */
#define UNIT_DONE(name) \
	(printf("%s: %d passed, %d failed\n", (name), passed, failed), failed ? 1 : 0)

#endif
