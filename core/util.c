/* util.c: the small tools every module shares (util.h): out-of-memory policy, hash table,
 * list walker, parsers, capability test, helper threads' start, a child's fds before exec.
 * No module state, no knowledge of probes or traces. */
#define _GNU_SOURCE /* getdents64, struct dirent64 */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* --- out of memory -------------------------------------------------------------------- */

void dc_oom(void)
{
	perror("datacrumbs: out of memory");
	abort();
}

static void *oom_check(void *p)
{
	if (!p)
		dc_oom();
	return p;
}

void *dc_xmalloc(size_t n)
{
	return oom_check(malloc(n));
}

void *dc_xcalloc(size_t n, size_t size)
{
	return oom_check(calloc(n, size));
}

void *dc_xrealloc(void *p, size_t n)
{
	return oom_check(realloc(p, n));
}

char *dc_xstrdup(const char *s)
{
	return oom_check(strdup(s));
}

/* --- hash table ----------------------------------------------------------------------- */

#define SLOT(t, slots, i) ((char *)(slots) + (i) * (t)->size)

void *dc_htab_find(const struct dc_htab *t, uint64_t h,
		   int (*eq)(const void *slot, const void *key), const void *key)
{
	size_t mask, i;

	if (t->cap == 0)
		return NULL;
	mask = t->cap - 1;
	for (i = h & mask; t->used(SLOT(t, t->slots, i)); i = (i + 1) & mask)
		if (eq(SLOT(t, t->slots, i), key))
			break;
	return SLOT(t, t->slots, i);
}

int dc_htab_reserve(struct dc_htab *t)
{
	size_t ncap, i, j;
	void *ns;

	if ((t->n + 1) * 2 <= t->cap)
		return 0;
	ncap = t->cap ? t->cap * 2 : t->first;
	ns = calloc(ncap, t->size);
	if (ns == NULL)
		return -1;
	for (i = 0; i < t->cap; i++) {
		const void *s = SLOT(t, t->slots, i);

		if (!t->used(s))
			continue;
		for (j = t->hash(s) & (ncap - 1); t->used(SLOT(t, ns, j));
		     j = (j + 1) & (ncap - 1))
			;
		memcpy(SLOT(t, ns, j), s, t->size);
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

void dc_htab_free(struct dc_htab *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}

/* --- lists ---------------------------------------------------------------------------- */

const char *dc_list_next(const char **cur, const char *seps, size_t *len)
{
	const char *p = *cur;

	if (p == NULL)
		return NULL;
	*len = strcspn(p, seps);
	*cur = p[*len] ? p + *len + 1 : NULL;
	return p;
}

/* --- parsers -------------------------------------------------------------------------- */

size_t dc_parse_size(const char *s)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return 0;
	switch (*end) {
	case 'k':
	case 'K':
		v <<= 10;
		end++;
		break;
	case 'm':
	case 'M':
		v <<= 20;
		end++;
		break;
	case 'g':
	case 'G':
		v <<= 30;
		end++;
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	return *end ? 0 : (size_t)v;
}

unsigned long long dc_parse_duration(const char *s)
{
	static const struct {
		const char *unit;
		double ns;
	} units[] = {
		{ "ns", 1 },   { "us", 1e3 },   { "ms", 1e6 }, { "s", 1e9 },
		{ "m", 60e9 }, { "h", 3600e9 }, { "", 1e9 },
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0) || v > 1e7)
		return 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			double ns = v * units[i].ns;
			return ns >= 1 && ns < 1e19 ? (unsigned long long)ns : 0;
		}
	return 0;
}

/* --- privileges ----------------------------------------------------------------------- */

int dc_cap_effective(int cap)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (cap < 0 || cap >= 64) {
		errno = EINVAL;
		return -1;
	}
	if (syscall(SYS_capget, &h, d) != 0)
		return -1;
	return (d[cap / 32].effective >> (cap % 32)) & 1;
}

/* --- dc_index --------------------------------------------------------------------------- */

struct index_slot {
	uint64_t h;
	size_t idx1; /* index + 1, 0: empty */
};

struct index_key {
	uint64_t h;
	int (*match)(size_t idx, const void *key, void *arg);
	const void *key;
	void *arg;
};

static uint64_t index_hash(const void *slot)
{
	return ((const struct index_slot *)slot)->h;
}

static int index_used(const void *slot)
{
	return ((const struct index_slot *)slot)->idx1 != 0;
}

static int index_eq(const void *slot, const void *key)
{
	const struct index_slot *s = slot;
	const struct index_key *k = key;

	return s->h == k->h && k->match(s->idx1 - 1, k->key, k->arg);
}

static void index_init(struct dc_index *ix)
{
	if (ix->t.size == 0)
		ix->t = (struct dc_htab){ .size = sizeof(struct index_slot), .first = 256,
					  .hash = index_hash, .used = index_used };
}

long dc_index_find(const struct dc_index *ix, uint64_t h,
		   int (*match)(size_t idx, const void *key, void *arg), const void *key,
		   void *arg)
{
	struct index_key k = { h, match, key, arg };
	const struct index_slot *s;

	if (ix->t.size == 0 || ix->t.cap == 0)
		return -1;
	s = dc_htab_find(&ix->t, h, index_eq, &k);
	return s && s->idx1 ? (long)(s->idx1 - 1) : -1;
}

/* never equal: dc_htab_find then returns the first empty slot of h's run */
static int index_none(size_t idx, const void *key, void *arg)
{
	(void)idx;
	(void)key;
	(void)arg;
	return 0;
}

int dc_index_add(struct dc_index *ix, uint64_t h, size_t idx)
{
	struct index_key k = { h, index_none, NULL, NULL };
	struct index_slot *s;

	index_init(ix);
	if (dc_htab_reserve(&ix->t))
		return -1;
	s = dc_htab_find(&ix->t, h, index_eq, &k);
	s->h = h;
	s->idx1 = idx + 1;
	ix->t.n++;
	return 0;
}

void dc_index_free(struct dc_index *ix)
{
	dc_htab_free(&ix->t);
}

uint64_t dc_hash_bytes(uint64_t h, const void *s, size_t n)
{
	const unsigned char *p = s;

	while (n--) {
		h ^= *p++;
		h *= 1099511628211ULL;
	}
	return h;
}

int dc_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int e = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return e;
}

/* --- a child before exec ---------------------------------------------------------------- */

int dc_close_fds(const int *keep, int nkeep, int cloexec_only)
{
	int d = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return -1;
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n;
	/* closing an fd already listed is safe: the listing's position is the fd number
	 * (fs/proc/fd.c proc_readfd_common) */
	while ((n = getdents64(d, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			off += e->d_reclen;
			int fd = 0, keepit;
			const char *c = e->d_name;
			if (*c < '0' || *c > '9')
				continue; /* "." and ".." */
			while (*c >= '0' && *c <= '9')
				fd = fd * 10 + (*c++ - '0');
			keepit = fd <= 2 || fd == d;
			for (int i = 0; i < nkeep && !keepit; i++)
				keepit = fd == keep[i];
			if (!keepit && cloexec_only) {
				int fl = fcntl(fd, F_GETFD);
				keepit = fl < 0 || !(fl & FD_CLOEXEC);
			}
			if (!keepit)
				close(fd);
		}
	}
	close(d);
	return 0;
}
