/* util.h: the small tools every module shares: the out-of-memory policy, one open-addressing
 * hash table, the ':'-separated list walker, the size and duration parsers, the capability test,
 * the helper threads' start. */
#ifndef DC_UTIL_H
#define DC_UTIL_H

#include <linux/capability.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38 /* Linux 5.8; older headers lack it */
#endif
#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8 */
#endif

/* --- out of memory ---------------------------------------------------------------------
 * One policy. Setup code (options, script, probe descriptions, resolution, attach) returns
 * an error that names what was being done ("probe: out of memory"): the run stops before
 * the command starts, and a list that could not be built is never taken as "no filter",
 * so out of memory never widens a probe set (attaching, a library whose link arrays cannot
 * be allocated is skipped with a warning: narrower, never wider). The event path (consumer, fd tables,
 * profile aggregates) cannot stop half-way through a record without lying in the trace:
 * it allocates through dc_xmalloc and friends, which say "datacrumbs: out of memory" on
 * stderr (with the errno text, perror(3)) and abort(3). */

/* The event path's answer to a failed allocation: says so on stderr and aborts. */
_Noreturn void dc_oom(void);
/* malloc(3) of n bytes; never returns NULL (the policy above). */
void *dc_xmalloc(size_t n);
/* calloc(3) of n elements of size bytes, zeroed; never returns NULL. */
void *dc_xcalloc(size_t n, size_t size);
/* realloc(3) of p to n bytes; never returns NULL. */
void *dc_xrealloc(void *p, size_t n);
/* strdup(3) of the NUL-terminated s; never returns NULL. */
char *dc_xstrdup(const char *s);

/* --- one hash table --------------------------------------------------------------------
 * Open addressing with linear probing over an array of fixed-size slots the caller
 * defines (an all-zero slot is empty), at most half full. The caller keeps its own slot
 * type, and says how to hash a used slot (to move it when the array grows) and how to
 * tell a used slot from an empty one. Entries are never removed one by one. */
struct dc_htab {
	void *slots;  /* cap slots of `size` bytes; NULL until the first dc_htab_reserve */
	size_t cap;   /* a power of two, or 0 */
	size_t n;     /* used slots: the caller counts a slot it fills */
	size_t size;  /* bytes of one slot */
	size_t first; /* slots of the first array (a power of two) */
	uint64_t (*hash)(const void *slot); /* of a used slot: the h it was found by */
	int (*used)(const void *slot);      /* 1 for a used slot */
};

/* The slot for the key hashed to h: the used slot for which eq(slot, key) is 1, else the
 * empty slot where it goes (test with t->used). NULL when the table has no array yet.
 * eq is called on used slots only. */
void *dc_htab_find(const struct dc_htab *t, uint64_t h,
		   int (*eq)(const void *slot, const void *key), const void *key);

/* Makes room for one more entry: doubles the array (or makes the first one, t->first
 * slots) when a new entry would fill more than half. Returns 0, or -1 when out of memory,
 * the table as it was (it may still have room: t->n + 1 < t->cap). */
int dc_htab_reserve(struct dc_htab *t);

/* Frees the slot array (not what slots point to) and empties the table. */
void dc_htab_free(struct dc_htab *t);

/* --- an index over an array kept elsewhere ----------------------------------------------
 * Finds an element of the caller's array by a key in O(1) (the probe tables, glob matches:
 * tens of thousands of functions): slots hold the key's 64-bit hash and the element's
 * index; `match(idx, key, arg)` tells whether element idx has the key. Zero-initialize. */
struct dc_index {
	struct dc_htab t;
};

/* The index of the element that has key (hashed to h), or -1. */
long dc_index_find(const struct dc_index *ix, uint64_t h,
		   int (*match)(size_t idx, const void *key, void *arg), const void *key,
		   void *arg);

/* Records that element idx has the key hashed to h (after dc_index_find said -1).
 * Returns 0, or -1 when out of memory (the index is as it was). */
int dc_index_add(struct dc_index *ix, uint64_t h, size_t idx);

void dc_index_free(struct dc_index *ix);

/* FNV-1a over n bytes of s, continuing from h (start with 14695981039346656037). */
uint64_t dc_hash_bytes(uint64_t h, const void *s, size_t n);

/* --- ':'-separated lists ($PATH, $LD_LIBRARY_PATH, $DATACRUMBS_SCRIPT_PATH) --------------
 * Returns the next element of the list *cur (NULL: none left) and its length in *len (0
 * for an empty element: "a::b", a trailing ':'); *cur moves past it and its separator, to
 * NULL after the last one. seps: the separator characters (":" or ":;" for ld.so's
 * lists). An empty list ("") has one empty element; a NULL one has none. Usage:
 *     for (const char *cur = list, *d; (d = dc_list_next(&cur, ":", &len));) ... */
const char *dc_list_next(const char **cur, const char *seps, size_t *len);

/* --- parsers shared by the command line and the Lua API -------------------------------- */

/* A byte count: decimal digits, then an optional K/M/G (binary: 2^10, 2^20, 2^30, either
 * case) and an optional B/b ("64K", "4MB", "1048576"). Returns the bytes, or 0 when s is
 * not one (0 itself is no valid size). */
size_t dc_parse_size(const char *s);

/* A duration ("250ms", "1.5s", "2m"; units ns us ms s m h, none: seconds) in nanoseconds;
 * 0 when s is not a positive duration below about 317 years. */
unsigned long long dc_parse_duration(const char *s);

/* --- privileges ------------------------------------------------------------------------ */

/* Whether the calling thread has capability cap (CAP_SYS_ADMIN, CAP_BPF, ...: a number of
 * linux/capability.h) in its effective set, by capget(2).
 * Returns 1 or 0, or -1 with errno when capget fails. */
int dc_cap_effective(int cap);

/* --- helper threads -------------------------------------------------------------------- */

/* pthread_create(3) of fn(arg) into *t with every signal blocked in the new thread (the
 * mask is the caller's again on return): signals stay the main thread's, which reads them
 * through its signalfd (core/session.c). Returns 0, or pthread_create's error number. */
int dc_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* --- a child before exec ---------------------------------------------------------------- */

/* Closes every fd of this process but 0-2 and keep[0..nkeep), only the close-on-exec ones
 * when cloexec_only: what /proc/self/fd lists. Async-signal-safe (for a child just
 * forked from a threaded process): getdents64(2), fcntl, close. 0, or -1 with errno when
 * /proc/self/fd cannot be read (nothing closed).
 * With cloexec_only, in a child about to exec a command: the fds its execve(2) would close
 * anyway, so that the command inherits exactly what it did; closed there, while the
 * parent still holds its copies, none is the last reference when the command execs: the
 * last close of a uprobe link detaches it, waiting for RCU grace periods
 * (kernel/trace/bpf_trace.c bpf_uprobe_multi_link_release), and that had made a
 * command's exec wait ~20 ms for a link the parent closed meanwhile. */
int dc_close_fds(const int *keep, int nkeep, int cloexec_only);

#endif
