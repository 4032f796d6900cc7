/* fdtable.c: per-process fd, DIR-stream and cwd tables of the traced processes.
 * Fed by the consumer in event order; knows nothing of BPF or the trace format. */
#include "fdtable.h"
#include "trust.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/* The run's file names: every path the tables below hold is one of these, stored once and
 * kept until dc_files_clear (dc_files_intern), so that a path's address names it for the
 * whole run. Memory: one copy of each distinct path seen (the writer keeps one too, for
 * its FH record). */
struct intern_slot {
	uint64_t h;
	char *s; /* NULL: empty slot */
	uint64_t dev, ino; /* the inode this path was last given in the inode table (both 0:
			      none); that entry may name another path since */
};

static uint64_t intern_hash(const void *slot)
{
	return ((const struct intern_slot *)slot)->h;
}

static int intern_used(const void *slot)
{
	return ((const struct intern_slot *)slot)->s != NULL;
}

static struct dc_htab interned = { .size = sizeof(struct intern_slot), .first = 1024,
				   .hash = intern_hash, .used = intern_used };

static int intern_eq(const void *slot, const void *key)
{
	return !strcmp(((const struct intern_slot *)slot)->s, key);
}

/* The interned slot of s, made when it is new (dc_files_intern). Valid until the next
 * interning. */
static struct intern_slot *intern_slot(const char *s)
{
	uint64_t h = dc_hash_bytes(14695981039346656037ULL, s, strlen(s));
	if (dc_htab_reserve(&interned))
		dc_oom();
	struct intern_slot *e = dc_htab_find(&interned, h, intern_eq, s);
	if (!e->s) {
		*e = (struct intern_slot){ .h = h, .s = dc_xstrdup(s) };
		interned.n++;
	}
	return e;
}

const char *dc_files_intern(const char *s)
{
	return s ? intern_slot(s)->s : NULL;
}

struct dir_entry {
	uint64_t dirp;
	const char *path; /* interned */
};

/* One fd: its path now, and the path it had before its last close, so that an event
 * that started before that close (fclose, whose nested close(2) returns first) still
 * finds it. Times are the calls' entry times, ns (CLOCK_MONOTONIC). */
struct fd_slot {
	const char *path; /* interned; NULL: unknown or closed */
	uint64_t opened; /* when the call that opened it returned (0: before we looked) */
	const char *old; /* the path before the last close (interned), NULL none */
	uint64_t closed; /* when the call that closed it started */
};

/* One file mapping, [start, end). */
struct map_entry {
	uint64_t start, end;
	const char *path; /* interned */
};

struct dc_proc_files {
	int pid;
	char *cwd;
	struct map_entry *maps; /* unordered; a process maps few files */
	int nmaps, capmaps;
	struct fd_slot *fds; /* indexed by fd */
	long nfds;
	struct dir_entry *dirs;
	int ndirs, capdirs;
	struct dc_proc_files *next; /* hash chain */
};

#define NBUCKETS 1024
static struct dc_proc_files *buckets[NBUCKETS];

/* The inode table: open addressing on (dev, ino), grown at half full. */
struct inode_entry {
	uint64_t dev, ino;
	const char *path;   /* interned; NULL: empty slot */
	const char *opened; /* interned: the name its last open reached it by (renames and
			       unlinks since leave it) */
	int gone;           /* its name was unlinked or renamed over: no name known */
};
static uint64_t inode_hash(const void *slot)
{
	const struct inode_entry *e = slot;
	return (e->ino * 0x9e3779b97f4a7c15ULL) ^ e->dev;
}

static int inode_used(const void *slot)
{
	return ((const struct inode_entry *)slot)->path != NULL;
}

static struct dc_htab inodes = { .size = sizeof(struct inode_entry), .first = 1024,
				 .hash = inode_hash, .used = inode_used };

static struct dc_proc_files **slot_of(int pid)
{
	struct dc_proc_files **pp = &buckets[(unsigned)pid % NBUCKETS];
	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

struct dc_proc_files *dc_files_find(int pid)
{
	return *slot_of(pid);
}

struct dc_proc_files *dc_files_get(int pid)
{
	struct dc_proc_files **pp = slot_of(pid);
	if (!*pp) {
		struct dc_proc_files *p = dc_xcalloc(1, sizeof(*p));
		p->pid = pid;
		p->cwd = dc_xstrdup("/");
		*pp = p;
	}
	return *pp;
}

static void free_proc(struct dc_proc_files *p)
{
	dc_files_exec(p);
	free(p->maps);
	free(p->fds);
	free(p->dirs);
	free(p->cwd);
	free(p);
}

void dc_files_exit(int pid)
{
	struct dc_proc_files **pp = slot_of(pid);
	struct dc_proc_files *p = *pp;
	if (!p)
		return;
	*pp = p->next;
	free_proc(p);
}

static int inode_eq(const void *slot, const void *key)
{
	const struct inode_entry *e = slot, *k = key;
	return e->dev == k->dev && e->ino == k->ino;
}

/* The slot of (dev, ino): its entry, or the empty one to fill (the table has slots). */
static struct inode_entry *inode_slot(uint64_t dev, uint64_t ino)
{
	struct inode_entry k = { .dev = dev, .ino = ino };
	return dc_htab_find(&inodes, inode_hash(&k), inode_eq, &k);
}

void dc_files_note_inode(const char *abs)
{
	struct stat st;
	if (abs[0] == '/' && stat(abs, &st) == 0)
		dc_files_set_inode(st.st_dev, st.st_ino, abs);
}

/* Names inode (dev, ino) abs, and also its open's name when `open`. */
static void name_inode(uint64_t dev, uint64_t ino, const char *abs, int open)
{
	if (dc_htab_reserve(&inodes))
		dc_oom();
	struct inode_entry *e = inode_slot(dev, ino);
	struct intern_slot *s = intern_slot(abs);
	s->dev = dev;
	s->ino = ino;
	if (!e->path)
		inodes.n++;
	const char *opened = open || !e->path ? s->s : e->opened;
	*e = (struct inode_entry){ .dev = dev, .ino = ino, .path = s->s, .opened = opened };
}

void dc_files_set_inode(uint64_t dev, uint64_t ino, const char *abs)
{
	name_inode(dev, ino, abs, 1);
}

const char *dc_files_inode_opened(uint64_t dev, uint64_t ino)
{
	if (!inodes.cap)
		return NULL;
	return inode_slot(dev, ino)->opened;
}

const char *dc_files_inode(uint64_t dev, uint64_t ino)
{
	if (!inodes.cap)
		return NULL;
	const struct inode_entry *e = inode_slot(dev, ino);
	return e->gone ? NULL : e->path;
}

/* The inode table's live entry that names abs, NULL when none does. */
static struct inode_entry *named_by(const char *abs)
{
	if (!inodes.cap)
		return NULL;
	const struct intern_slot *s = intern_slot(abs);
	if (!s->dev && !s->ino)
		return NULL;
	struct inode_entry *e = inode_slot(s->dev, s->ino);
	return e->path == s->s && !e->gone ? e : NULL;
}

void dc_files_unlinked(const char *abs)
{
	struct inode_entry *e = abs ? named_by(abs) : NULL;
	if (e)
		e->gone = 1;
}

void dc_files_renamed(const char *from, const char *to, int exchange)
{
	if (!from || !to)
		return;
	struct inode_entry *a = named_by(from), *b = named_by(to);
	if (b && !exchange)
		b->gone = 1; /* the file `to` named is replaced: unlinked, or named elsewhere */
	uint64_t bdev = b ? b->dev : 0, bino = b ? b->ino : 0; /* a's naming may move b */
	if (a)
		name_inode(a->dev, a->ino, to, 0);
	if (b && exchange)
		name_inode(bdev, bino, from, 0);
}

void dc_files_clear(void)
{
	dc_htab_free(&inodes);
	for (int b = 0; b < NBUCKETS; b++) {
		while (buckets[b]) {
			struct dc_proc_files *p = buckets[b];
			buckets[b] = p->next;
			free_proc(p);
		}
	}
	struct intern_slot *is = interned.slots; /* last: the tables above point into it */
	for (size_t i = 0; i < interned.cap; i++)
		free(is[i].s);
	dc_htab_free(&interned);
}

void dc_files_fork(int parent, int child)
{
	struct dc_proc_files *pp = dc_files_find(parent);
	dc_files_exit(child); /* a recycled pid starts clean */
	struct dc_proc_files *c = dc_files_get(child);
	if (!pp)
		return;
	dc_files_set_cwd(c, pp->cwd);
	for (long i = 0; i < pp->nfds; i++)
		if (pp->fds[i].path)
			dc_files_set_fd(c, i, pp->fds[i].path);
	for (int i = 0; i < pp->ndirs; i++)
		dc_files_set_dir(c, pp->dirs[i].dirp, pp->dirs[i].path);
	for (int i = 0; i < pp->nmaps; i++)
		dc_files_map(c, pp->maps[i].start, pp->maps[i].end - pp->maps[i].start,
			     pp->maps[i].path);
}

/* Adds [start, end) -> path (interned). */
static void map_add(struct dc_proc_files *p, uint64_t start, uint64_t end, const char *path)
{
	if (p->nmaps == p->capmaps) {
		p->capmaps = p->capmaps ? 2 * p->capmaps : 8;
		p->maps = realloc(p->maps, p->capmaps * sizeof(*p->maps));
		if (!p->maps)
			dc_oom();
	}
	p->maps[p->nmaps++] = (struct map_entry){ start, end, path };
}

void dc_files_unmap(struct dc_proc_files *p, uint64_t start, uint64_t len)
{
	uint64_t end = start + len < start ? UINT64_MAX : start + len;
	for (int i = 0; i < p->nmaps;) {
		struct map_entry *m = &p->maps[i];
		if (m->end <= start || m->start >= end) {
			i++;
			continue;
		}
		if (m->start < start && m->end > end) /* a hole in the middle: keep both sides */
			map_add(p, end, p->maps[i].end, p->maps[i].path);
		m = &p->maps[i];
		if (m->start < start) {
			m->end = start;
			i++;
		} else if (m->end > end) {
			m->start = end;
			i++;
		} else {
			p->maps[i] = p->maps[--p->nmaps];
		}
	}
}

void dc_files_map(struct dc_proc_files *p, uint64_t start, uint64_t len, const char *path)
{
	dc_files_unmap(p, start, len); /* MAP_FIXED replaces what was there */
	if (path && len)
		map_add(p, start, start + len < start ? UINT64_MAX : start + len,
			dc_files_intern(path));
}

const char *dc_files_mapped(const struct dc_proc_files *p, uint64_t addr)
{
	for (int i = 0; i < p->nmaps; i++)
		if (addr >= p->maps[i].start && addr < p->maps[i].end)
			return p->maps[i].path;
	return NULL;
}

void dc_files_exec(struct dc_proc_files *p)
{
	p->nmaps = 0;
}

/* Is fd (a name under /proc/PID/fd) close-on-exec? /proc/PID/fdinfo/FD "flags:" (octal,
 * proc(5)). */
static int fd_cloexec(int pid, const char *fd)
{
	char path[300], line[128];
	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", pid, fd);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int cloexec = 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags:", 6))
			cloexec = (strtoul(line + 6, NULL, 8) & O_CLOEXEC) != 0;
	fclose(f);
	return cloexec;
}

int dc_files_from_proc(int pid)
{
	char dir[64], link[PATH_MAX + 1], target[PATH_MAX + 1];
	snprintf(dir, sizeof(dir), "/proc/%d/cwd", pid);
	ssize_t n = readlink(dir, target, PATH_MAX);
	if (n < 0)
		return -1;
	target[n] = 0;
	struct dc_proc_files *p = dc_files_get(pid);
	dc_files_set_cwd(p, target);

	snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (fd_cloexec(pid, de->d_name))
			continue; /* gone once the held child execs */
		snprintf(link, sizeof(link), "%s/%s", dir, de->d_name);
		n = readlink(link, target, PATH_MAX);
		if (n < 0)
			continue;
		target[n] = 0;
		dc_files_set_fd(p, strtol(de->d_name, NULL, 10), target);
		/* the inode too (the open file itself, through the /proc link): profile mode
		 * keys an inherited fd's calls (stdout to a file) by it */
		struct stat st;
		if (target[0] == '/' && !stat(link, &st))
			dc_files_set_inode(st.st_dev, st.st_ino, target);
	}
	closedir(d);
	return 0;
}

const char *dc_files_each_fd(int pid, void (*fn)(void *arg, long fd, const char *path),
			     void *arg)
{
	const struct dc_proc_files *p = dc_files_find(pid);
	if (!p)
		return NULL;
	for (long fd = 0; fd < p->nfds; fd++)
		if (p->fds[fd].path)
			fn(arg, fd, p->fds[fd].path);
	return p->cwd;
}

void dc_files_set_cwd(struct dc_proc_files *p, const char *abs)
{
	char *c = dc_xstrdup(abs);
	free(p->cwd);
	p->cwd = c;
}

/* The highest fd a process can have: fs.nr_open (proc(5) /proc/sys/fs/nr_open, 1048576
 * by default), read once. An fd above it is no real fd (a damaged spool's record): not
 * kept, so that no table grows for it. */
static long fd_limit(void)
{
	static long limit;
	if (!limit) {
		FILE *f = fopen("/proc/sys/fs/nr_open", "r");
		if (!f || fscanf(f, "%ld", &limit) != 1 || limit <= 0 || limit > (1L << 30))
			limit = 1L << 20;
		if (f)
			fclose(f);
	}
	return limit;
}

void dc_files_set_fd_at(struct dc_proc_files *p, long fd, const char *abs, uint64_t ts)
{
	if (fd < 0 || fd >= fd_limit())
		return;
	if (fd >= p->nfds) {
		if (!abs)
			return;
		long n = p->nfds ? p->nfds : 16;
		while (n <= fd)
			n *= 2;
		p->fds = dc_xrealloc(p->fds, n * sizeof(*p->fds));
		memset(p->fds + p->nfds, 0, (n - p->nfds) * sizeof(*p->fds));
		p->nfds = n;
	}
	struct fd_slot *s = &p->fds[fd];
	if (!abs && s->path && ts < s->opened) {
		/* a close that started before the fd's current file was opened (its open
		 * returned): another thread's close of the file the fd held before, whose
		 * event comes after the open's (close(2) freed the fd, another thread's open
		 * got it, and that open's return was seen first). It ends the old file. */
		if (s->old)
			s->closed = ts;
		return;
	}
	const char *c = dc_files_intern(abs);
	if (s->path) { /* closed, or replaced (dup2): remember what it was */
		s->old = s->path;
		s->closed = ts;
	}
	s->path = c;
	s->opened = ts;
}

void dc_files_set_fd(struct dc_proc_files *p, long fd, const char *abs)
{
	dc_files_set_fd_at(p, fd, abs, 0);
}

const char *dc_files_fd_at(const struct dc_proc_files *p, long fd, uint64_t ts)
{
	if (fd < 0 || fd >= p->nfds)
		return NULL;
	const struct fd_slot *s = &p->fds[fd];
	if (s->path && s->opened <= ts)
		return s->path;
	if (s->old && s->closed >= ts)
		return s->old;
	return s->path;
}

const char *dc_files_fd(const struct dc_proc_files *p, long fd)
{
	if (fd < 0 || fd >= p->nfds)
		return NULL;
	return p->fds[fd].path;
}

void dc_files_set_dir(struct dc_proc_files *p, uint64_t dirp, const char *abs)
{
	for (int i = 0; i < p->ndirs; i++) {
		if (p->dirs[i].dirp != dirp)
			continue;
		if (abs) {
			p->dirs[i].path = dc_files_intern(abs);
		} else {
			p->dirs[i] = p->dirs[--p->ndirs];
		}
		return;
	}
	if (!abs)
		return;
	if (p->ndirs == p->capdirs) {
		p->capdirs = p->capdirs ? p->capdirs * 2 : 8;
		p->dirs = dc_xrealloc(p->dirs, p->capdirs * sizeof(*p->dirs));
	}
	p->dirs[p->ndirs].dirp = dirp;
	p->dirs[p->ndirs].path = dc_files_intern(abs);
	p->ndirs++;
}

const char *dc_files_dir(const struct dc_proc_files *p, uint64_t dirp)
{
	for (int i = 0; i < p->ndirs; i++)
		if (p->dirs[i].dirp == dirp)
			return p->dirs[i].path;
	return NULL;
}

/* Folds "." "..", and repeated '/' of an absolute path in place; a name that is not a
 * path (pipe:[12], anon_inode:...) is left as it is. */
static void fold_path(char *s)
{
	char *out = s, *in = s;
	if (s[0] != '/')
		return;
	while (*in) {
		while (*in == '/')
			in++;
		char *seg = in;
		while (*in && *in != '/')
			in++;
		size_t len = in - seg;
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (out > s && *--out != '/')
				;
			continue;
		}
		*out++ = '/';
		memmove(out, seg, len);
		out += len;
	}
	if (out == s)
		*out++ = '/';
	*out = 0;
}

char *dc_files_resolve(const struct dc_proc_files *p, int use_dirfd, long dirfd,
		       const char *path, char *out, unsigned cap)
{
	if (path[0] == '/') {
		snprintf(out, cap, "%s", path);
	} else {
		const char *base = p->cwd;
		if (use_dirfd && (int)dirfd != AT_FDCWD) {
			base = dc_files_fd(p, (int)dirfd);
			if (!base || base[0] != '/')
				return NULL;
		}
		snprintf(out, cap, "%s/%s", base, path);
	}
	fold_path(out);
	return out;
}

#define DC_REAL_TTL_NS 100000000ULL
#define NREALDIRS 16

/* A few directories' real paths: lexical -> real, when found (CLOCK_MONOTONIC ns). */
static struct {
	char dir[PATH_MAX], real[PATH_MAX];
	uint64_t when;
} realdirs[NREALDIRS];
static unsigned realdir_next;

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

/* The real path of directory `dir` (cached), or NULL. */
static const char *real_dir(const char *dir)
{
	uint64_t now = now_ns();
	for (unsigned i = 0; i < NREALDIRS; i++)
		if (realdirs[i].when && now - realdirs[i].when < DC_REAL_TTL_NS &&
		    !strcmp(realdirs[i].dir, dir))
			return realdirs[i].real;
	char buf[PATH_MAX];
	if (strlen(dir) >= PATH_MAX)
		return NULL;
	dc_trust_enter_script(); /* see dc_files_real */
	char *ok = realpath(dir, buf);
	dc_trust_leave_script();
	if (!ok)
		return NULL;
	unsigned k = realdir_next++ % NREALDIRS;
	snprintf(realdirs[k].dir, sizeof(realdirs[k].dir), "%s", dir);
	snprintf(realdirs[k].real, sizeof(realdirs[k].real), "%s", buf);
	realdirs[k].when = now;
	return realdirs[k].real;
}

const char *dc_files_real(int pid, long fd, uint64_t dev, uint64_t ino, const char *lexical,
			  char *out, unsigned cap)
{
	if (lexical[0] != '/')
		return lexical;
	if (!strncmp(lexical, "/proc/self", 10) && (lexical[10] == '/' || !lexical[10])) {
		/* the caller's own /proc directory, not the tracer's (which realpath would
		 * give, here and in a process long gone) */
		snprintf(out, cap, "/proc/%d%s", pid, lexical + 10);
		return out;
	}
	char buf[PATH_MAX];
	if (fd >= 0 && ino) {
		char link[64];
		struct stat st;
		snprintf(link, sizeof(link), "/proc/%d/fd/%ld", pid, fd);
		dc_trust_enter_script();
		ssize_t n = readlink(link, out, cap - 1);
		int same = n > 0 && (size_t)n < cap - 1 && out[0] == '/' && !stat(link, &st) &&
			   (uint64_t)st.st_ino == ino && (uint64_t)st.st_dev == dev;
		dc_trust_leave_script();
		if (same) {
			out[n] = 0;
			if (!strstr(out, " (deleted)"))
				return out;
		}
		struct stat rs;
		dc_trust_enter_script();
		same = realpath(lexical, buf) && !stat(buf, &rs) && (uint64_t)rs.st_ino == ino &&
		       (uint64_t)rs.st_dev == dev && strlen(buf) < cap;
		dc_trust_leave_script();
		if (same) {
			memcpy(out, buf, strlen(buf) + 1);
			return out;
		}
	}
	const char *slash = strrchr(lexical, '/');
	char dir[PATH_MAX];
	if (slash == lexical)
		return lexical; /* in / itself */
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - lexical), lexical);
	const char *real = real_dir(dir);
	if (!real)
		return lexical;
	snprintf(out, cap, "%s%s", strcmp(real, "/") ? real : "", slash);
	return out;
}
