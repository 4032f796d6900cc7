/* unit_fdtable.c: core/fdtable.c's fd history on known orders of events: another thread's
 * close seen after the open that reused its fd, a nested close seen before its caller;
 * the interned paths (one address per string for the run). */
#include "fdtable.h"

#include <string.h>

#include "unit.h"

static int is(const char *got, const char *want)
{
	return got == want || (got && want && !strcmp(got, want));
}

#define WANT(p, fd, ts, want)                                                           \
	do {                                                                            \
		const char *g_ = dc_files_fd_at((p), (fd), (ts));                        \
		CHECK(is(g_, (want)), "fd %d at %d: '%s', want '%s'", (fd), (ts),         \
		      g_ ? g_ : "(null)", (want) ? (want) : "(null)");                     \
	} while (0)

int main(void)
{
	/* thread A: open /a (10-20) -> 3, write (30-40), close (50-90: the fd freed at ~60);
	 * thread B: open /b (55-70) -> 3, write (80-85). B's open is seen before A's close. */
	struct dc_proc_files *p = dc_files_get(100);
	dc_files_set_fd_at(p, 3, "/a", 20);
	WANT(p, 3, 30, "/a");
	dc_files_set_fd_at(p, 3, "/b", 70);   /* B's open returned */
	WANT(p, 3, 50, "/a");                 /* A's close, resolved before its effect */
	dc_files_set_fd_at(p, 3, NULL, 50);   /* A's close: ends /a, not /b */
	WANT(p, 3, 50, "/a");
	WANT(p, 3, 30, "/a");                 /* a late event of A's write */
	WANT(p, 3, 80, "/b");                 /* B's write */
	CHECK(is(dc_files_fd(p, 3), "/b"), "fd 3 now: '%s', want /b", dc_files_fd(p, 3));
	dc_files_set_fd_at(p, 3, NULL, 100);  /* B closes it */
	WANT(p, 3, 80, "/b");
	WANT(p, 3, 110, NULL);

	/* the same thread, in order: open /c (10-20) -> 4, close (30-40), open /d (50-60) -> 4 */
	struct dc_proc_files *q = dc_files_get(200);
	dc_files_set_fd_at(q, 4, "/c", 20);
	dc_files_set_fd_at(q, 4, NULL, 30);
	dc_files_set_fd_at(q, 4, "/d", 60);
	WANT(q, 4, 25, "/c");
	WANT(q, 4, 65, "/d");

	/* fclose (10-50) of /e on fd 5, its close(2) (20-30) seen first: fclose still names /e */
	struct dc_proc_files *r = dc_files_get(300);
	dc_files_set_fd_at(r, 5, "/e", 5);
	dc_files_set_fd_at(r, 5, NULL, 20);
	WANT(r, 5, 10, "/e");
	WANT(r, 5, 60, NULL);

	/* the tables' paths are interned: one address per string for the run, kept after the
	 * fd that held it was closed and its process gone */
	char buf[8];
	snprintf(buf, sizeof(buf), "/%s", "b");
	const char *ib = dc_files_intern(buf);
	CHECK(ib == dc_files_fd_at(p, 3, 80), "/b interned: %p, fd 3's %p", (void *)ib,
	      (void *)dc_files_fd_at(p, 3, 80));
	CHECK(ib != buf && !strcmp(ib, "/b"), "dc_files_intern keeps its own copy: '%s'", ib);
	dc_files_set_fd_at(q, 7, buf, 70);
	CHECK(dc_files_fd(q, 7) == ib, "another process's fd on /b: the same address");
	dc_files_exit(100);
	CHECK(dc_files_intern("/b") == ib && !strcmp(ib, "/b"), "/b outlives its processes");
	CHECK(dc_files_intern("/c") != ib && dc_files_intern(NULL) == NULL, "/c and NULL");
	dc_files_clear();
	return UNIT_DONE("unit_fdtable");
}
