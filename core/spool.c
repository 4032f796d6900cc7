/* spool.c: a trace-mode run's spool: its directory and files, the journal's entries, and
 * the replay that merges the spooled records by `sent` after the run (or in recover). */
#define _GNU_SOURCE /* fallocate(2) */
#include "spool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <unistd.h>
#include <linux/bpf.h>

#include "attach.h"
#include "probes.h"
#include "util.h"
#include "../bpf/datacrumbs.h"

#define DC_JOURNAL "journal"

struct dc_spool {
	char dir[PATH_MAX];
	int dirfd;
	unsigned n;
	int fds[DC_MAX_SHARDS];
	int journal;
};

static void shard_name(char *buf, size_t len, unsigned k)
{
	snprintf(buf, len, "shard-%u", k);
}

/* Opens file `name` in sp's directory: created (O_EXCL), or an existing regular file
 * (O_NONBLOCK: a FIFO planted there cannot block the open). fd, or -1 with errno
 * (EINVAL: not a regular file). */
static int spool_file(struct dc_spool *sp, const char *name, int create)
{
	int fd = openat(sp->dirfd, name, create ? O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
			O_CLOEXEC : O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	struct stat st;
	if (fd >= 0 && !create && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

/* One line for a file of the spool that cannot be opened. */
static void file_err(char *err, size_t errlen, const char *dir, const char *name)
{
	snprintf(err, errlen, "%s/%s: %s", dir, name, errno == EINVAL || errno == ELOOP ?
		 "not a regular file (a symbolic link is not followed)" : strerror(errno));
}

static struct dc_spool *spool_alloc(const char *dir)
{
	struct dc_spool *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return NULL;
	snprintf(sp->dir, sizeof(sp->dir), "%s", dir);
	sp->dirfd = sp->journal = -1;
	for (unsigned k = 0; k < DC_MAX_SHARDS; k++)
		sp->fds[k] = -1;
	return sp;
}

struct dc_spool *dc_spool_create(const char *trace, unsigned nshards, char *err,
				 size_t errlen)
{
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s.spool", trace) >= sizeof(dir) ||
	    nshards > DC_MAX_SHARDS) {
		snprintf(err, errlen, "%s.spool: name too long", trace);
		return NULL;
	}
	struct dc_spool *sp = spool_alloc(dir);
	if (!sp) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (mkdir(dir, 0700)) {
		snprintf(err, errlen, "cannot create the spool %s: %s", dir, strerror(errno));
		free(sp);
		return NULL;
	}
	sp->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sp->dirfd < 0) {
		snprintf(err, errlen, "cannot open the spool %s: %s", dir, strerror(errno));
		dc_spool_remove(sp);
		return NULL;
	}
	sp->n = nshards;
	char name[32];
	for (unsigned k = 0; k < nshards; k++) {
		shard_name(name, sizeof(name), k);
		if ((sp->fds[k] = spool_file(sp, name, 1)) < 0)
			break;
	}
	if (sp->n && sp->fds[sp->n - 1] < 0)
		snprintf(name, sizeof(name), "shard files");
	else if ((sp->journal = spool_file(sp, DC_JOURNAL, 1)) < 0)
		snprintf(name, sizeof(name), DC_JOURNAL);
	if (sp->journal < 0) {
		snprintf(err, errlen, "cannot create the spool's %s in %s: %s", name, dir,
			 strerror(errno));
		dc_spool_remove(sp);
		return NULL;
	}
	return sp;
}

/* Reads the journal's first entry into *st. 0, or -1 with err. */
static int read_start(struct dc_spool *sp, struct dc_jstart *st, char *err, size_t errlen)
{
	struct dc_jhead h;
	if (pread(sp->journal, &h, sizeof(h), 0) != sizeof(h) || h.tag != DC_J_HEAD ||
	    h.len < sizeof(*st) || pread(sp->journal, st, sizeof(*st), sizeof(h)) != sizeof(*st) ||
	    memcmp(st->magic, "DCSPOOL1", 8)) {
		snprintf(err, errlen, "%s/%s: not a datacrumbs spool journal", sp->dir, DC_JOURNAL);
		return -1;
	}
	if (st->nshards > DC_MAX_SHARDS) {
		snprintf(err, errlen, "%s/%s: damaged (%u shards: at most %d)", sp->dir, DC_JOURNAL,
			 st->nshards, DC_MAX_SHARDS);
		return -1;
	}
	if (st->event_size != sizeof(struct dc_event) || st->probe_size != sizeof(struct dc_probe) ||
	    st->layer_size != sizeof(struct dc_layer) || st->func_size != sizeof(struct dc_func)) {
		snprintf(err, errlen, "%s: written by datacrumbs %.31s, whose records this build "
			 "(%s) does not read: recover it with that version", sp->dir, st->version,
			 DC_VERSION);
		return -1;
	}
	return 0;
}

struct dc_spool *dc_spool_open(const char *dir, char *err, size_t errlen)
{
	struct dc_spool *sp = spool_alloc(dir);
	if (!sp) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	struct stat ds;
	uid_t me = geteuid();
	sp->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sp->dirfd < 0) {
		snprintf(err, errlen, "%s: %s", dir, errno == ELOOP || errno == ENOTDIR ?
			 "not a directory (a symbolic link is not followed)" : strerror(errno));
	} else if (fstat(sp->dirfd, &ds) || ds.st_uid != me) {
		snprintf(err, errlen, "%s is owned by uid %u, not by you (uid %u): the user its "
			 "tracer ran as recovers it", dir, (unsigned)ds.st_uid, (unsigned)me);
	} else if ((sp->journal = spool_file(sp, DC_JOURNAL, 0)) < 0) {
		file_err(err, errlen, dir, DC_JOURNAL);
	}
	struct dc_jstart st;
	if (sp->journal < 0 || read_start(sp, &st, err, errlen)) {
		dc_spool_free(sp);
		return NULL;
	}
	sp->n = st.nshards;
	char name[32];
	for (unsigned k = 0; k < sp->n; k++) {
		shard_name(name, sizeof(name), k);
		if ((sp->fds[k] = spool_file(sp, name, 0)) < 0) {
			file_err(err, errlen, dir, name);
			dc_spool_free(sp);
			return NULL;
		}
	}
	return sp;
}

const int *dc_spool_fds(const struct dc_spool *sp)
{
	return sp->fds;
}

const char *dc_spool_dir(const struct dc_spool *sp)
{
	return sp->dir;
}

int dc_spool_note(struct dc_spool *sp, enum dc_jtag tag, int n, const void *const *ptr,
		  const size_t *len)
{
	struct dc_jhead h = { (uint32_t)tag, 0 };
	struct iovec iov[8];
	if (n > 7) {
		errno = EINVAL;
		return -1;
	}
	iov[0] = (struct iovec){ &h, sizeof(h) };
	for (int i = 0; i < n; i++) {
		iov[i + 1] = (struct iovec){ (void *)ptr[i], len[i] };
		h.len += (uint32_t)len[i];
	}
	ssize_t want = (ssize_t)(sizeof(h) + h.len);
	ssize_t w = writev(sp->journal, iov, n + 1); /* O_APPEND not needed: one writer */
	if (w == want)
		return 0;
	if (w >= 0)
		errno = ENOSPC;
	return -1;
}

int dc_spool_note_probe(struct dc_spool *sp, unsigned index, const struct dc_probe *pr)
{
	const void *ptr[5] = { &index, pr, pr->layer, pr->func, pr->func->name };
	size_t len[5] = { sizeof(index), sizeof(*pr), sizeof(*pr->layer), sizeof(*pr->func),
			  strlen(pr->func->name) + 1 };
	return dc_spool_note(sp, DC_J_PROBE, 5, ptr, len);
}

/* Terminates every string of a probe entry's structs (a journal is a file: anyone who
 * could write it could leave them open) and checks what indexes tables. 1 when sane. */
static int probe_sane(struct dc_probe *pr, struct dc_layer *l, struct dc_func *f)
{
#define DC_TERM(a) ((a)[sizeof(a) - 1] = 0)
	DC_TERM(pr->library);
	DC_TERM(pr->why);
	DC_TERM(l->path);
	DC_TERM(l->name);
	DC_TERM(l->library);
	DC_TERM(l->hint);
	DC_TERM(f->symbol);
	for (int i = 0; i < DC_FUNC_SYSCALLS; i++)
		DC_TERM(f->syscall[i]);
	for (int i = 0; i < DC_PROBE_ARGS; i++) {
		DC_TERM(f->args[i].name);
		if ((unsigned)f->args[i].kind >= DC_ARG_NKINDS)
			return 0;
	}
#undef DC_TERM
	return f->nargs >= 0 && f->nargs <= DC_PROBE_ARGS && f->nsyscalls >= 0 &&
	       f->nsyscalls <= DC_FUNC_SYSCALLS && (unsigned)f->effect < 64 &&
	       (unsigned)f->ret_kind <= DC_RET_VOID && (unsigned)l->mechanism <= DC_MECH_KERNEL;
}

struct dc_probe *dc_spool_probe(const void *p, uint32_t len, unsigned *index)
{
	size_t fixed = sizeof(unsigned) + sizeof(struct dc_probe) + sizeof(struct dc_layer) +
		       sizeof(struct dc_func);
	const char *b = p;
	if (len <= fixed || b[len - 1])
		return NULL;
	struct dc_probe *pr = calloc(1, sizeof(*pr));
	struct dc_layer *l = calloc(1, sizeof(*l));
	struct dc_func *f = calloc(1, sizeof(*f));
	char *name = strdup(b + fixed);
	if (!pr || !l || !f || !name) {
		free(pr);
		free(l);
		free(f);
		free(name);
		return NULL;
	}
	memcpy(index, b, sizeof(*index));
	b += sizeof(*index);
	memcpy(pr, b, sizeof(*pr));
	memcpy(l, b + sizeof(*pr), sizeof(*l));
	memcpy(f, b + sizeof(*pr) + sizeof(*l), sizeof(*f));
	if (!probe_sane(pr, l, f)) {
		free(pr);
		free(l);
		free(f);
		free(name);
		return NULL;
	}
	/* the copies' pointers were the run's: only the name is needed again */
	l->globs = NULL;
	l->nglobs = 0;
	l->gtmpl = NULL;
	l->funcs = NULL;
	l->nfuncs = 0;
	l->tmpl.name = NULL;
	f->name = name;
	pr->layer = l;
	pr->func = f;
	return pr;
}

void dc_spool_probe_free(struct dc_probe *pr)
{
	if (!pr)
		return;
	free((void *)pr->func->name);
	free((void *)pr->func);
	free((void *)pr->layer);
	free(pr);
}

int dc_spool_journal(struct dc_spool *sp, void (*fn)(void *arg, uint32_t tag, const void *p,
						     uint32_t len), void *arg,
		     char *err, size_t errlen)
{
	struct stat st;
	if (fstat(sp->journal, &st)) {
		snprintf(err, errlen, "%s/%s: %s", sp->dir, DC_JOURNAL, strerror(errno));
		return -1;
	}
	size_t size = (size_t)st.st_size, off = 0;
	char *buf = size ? malloc(size) : NULL;
	if (size && (!buf || pread(sp->journal, buf, size, 0) != (ssize_t)size)) {
		free(buf);
		snprintf(err, errlen, "%s/%s: cannot read it", sp->dir, DC_JOURNAL);
		return -1;
	}
	while (off + sizeof(struct dc_jhead) <= size) {
		struct dc_jhead h;
		memcpy(&h, buf + off, sizeof(h));
		if (h.len > size - off - sizeof(h))
			break;
		fn(arg, h.tag, buf + off + sizeof(h), h.len);
		off += sizeof(h) + h.len;
	}
	free(buf);
	if (off != size) {
		snprintf(err, errlen, "%s/%s: cut short after byte %zu (of %zu)", sp->dir,
			 DC_JOURNAL, off, size);
		return -1;
	}
	return 0;
}

/* The replay reads each shard file through a buffer of this many bytes (pread(2): a file
 * truncated meanwhile ends it, where a mapping would fault), and, when it consumes the
 * spool, frees its read blocks every DC_REPLAY_STEP. */
#define DC_REPLAY_BUF (1u << 20)
#define DC_REPLAY_STEP (8u << 20)

/* A shard file during the replay: its buffer and its next record. */
struct cursor {
	int fd, consume;   /* consume: the read part's disk blocks are freed (a full disk) */
	char *buf;
	size_t off, len;   /* buf[off, len) is read, not yet handed on */
	uint64_t pos;      /* the file offset of buf[len] */
	uint64_t freed;    /* the file's bytes freed so far (consume) */
	uint64_t key;      /* the head record's `sent` */
	const char *rec;   /* the head record, NULL: none left */
	uint32_t n;
	int bad;           /* a damaged record ended the file */
};

/* Reads more of c's file behind what is left in its buffer. Returns the bytes read, 0 at
 * its end, -1 on a read error. */
static ssize_t refill(struct cursor *c)
{
	memmove(c->buf, c->buf + c->off, c->len - c->off);
	c->len -= c->off;
	c->off = 0;
	ssize_t r;
	do
		r = pread(c->fd, c->buf + c->len, DC_REPLAY_BUF - c->len, (off_t)c->pos);
	while (r < 0 && errno == EINTR);
	if (r > 0) {
		c->len += (size_t)r;
		c->pos += (uint64_t)r;
	}
	if (c->consume) { /* tmpfs, ext4, xfs: room for the trace, at once */
		uint64_t done = c->pos - (c->len - c->off);
		if (done - c->freed >= DC_REPLAY_STEP) {
			uint64_t to = done & ~(uint64_t)(DC_REPLAY_STEP - 1);
			fallocate(c->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)c->freed, (off_t)(to - c->freed));
			c->freed = to;
		}
	}
	return r;
}

/* Moves c to its next record not discarded (ring layout: 8-byte header, padded to 8). A
 * record cut short at the file's end (a killed run) ends it; a damaged one (busy, empty,
 * larger than any record) ends it too, marked bad. */
static void next_record(struct cursor *c)
{
	c->rec = NULL;
	for (;;) {
		if (c->len - c->off < BPF_RINGBUF_HDR_SZ) {
			if (refill(c) <= 0)
				return;
			continue;
		}
		uint32_t hdr;
		memcpy(&hdr, c->buf + c->off, sizeof(hdr));
		uint32_t n = hdr & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		size_t step = (n + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
		if ((hdr & BPF_RINGBUF_BUSY_BIT) || !n || step > DC_REPLAY_BUF / 2) {
			c->bad = 1;
			return;
		}
		if (c->len - c->off < step) {
			if (refill(c) <= 0)
				return; /* cut short */
			continue;
		}
		const char *rec = c->buf + c->off + BPF_RINGBUF_HDR_SZ;
		c->off += step;
		if (hdr & BPF_RINGBUF_DISCARD_BIT)
			continue;
		c->rec = rec;
		c->n = n;
		c->key = 0;
		if (n >= sizeof(struct dc_event))
			memcpy(&c->key, rec + offsetof(struct dc_event, sent), sizeof(c->key));
		return;
	}
}

long dc_spool_replay(struct dc_spool *sp, void (*fn)(void *ctx, const void *data, size_t size),
		     void *ctx, int consume, char *err, size_t errlen)
{
	struct cursor cur[DC_MAX_SHARDS];
	memset(cur, 0, sizeof(cur));
	long done = -1;
	unsigned k;
	for (k = 0; k < sp->n; k++) {
		cur[k] = (struct cursor){ .fd = sp->fds[k], .consume = consume,
					  .buf = malloc(DC_REPLAY_BUF) };
		if (!cur[k].buf)
			break;
		posix_fadvise(cur[k].fd, 0, 0, POSIX_FADV_SEQUENTIAL);
		next_record(&cur[k]);
	}
	if (k < sp->n) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	for (done = 0;; done++) {
		struct cursor *best = NULL;
		for (k = 0; k < sp->n; k++)
			if (cur[k].rec && (!best || cur[k].key < best->key))
				best = &cur[k];
		if (!best)
			break;
		fn(ctx, best->rec, best->n);
		next_record(best);
	}
	for (k = 0; k < sp->n; k++)
		if (cur[k].bad)
			fprintf(stderr, "datacrumbs: warning: %s/shard-%u: a damaged record at byte "
				"%llu: the rest of that file is skipped\n", sp->dir, k,
				(unsigned long long)(cur[k].pos - (cur[k].len - cur[k].off)));
out:
	for (k = 0; k < sp->n; k++)
		free(cur[k].buf);
	return done;
}

uint64_t dc_spool_room(const struct dc_spool *sp)
{
	struct statvfs v;
	if (fstatvfs(sp->dirfd, &v))
		return 0;
	return (uint64_t)v.f_bavail * v.f_frsize / 2;
}

int dc_spool_remove(struct dc_spool *sp)
{
	int e = 0; /* the first failure's errno */
	char name[32];
	for (unsigned k = 0; k < sp->n; k++) {
		shard_name(name, sizeof(name), k);
		if (sp->fds[k] >= 0 && unlinkat(sp->dirfd, name, 0) && !e)
			e = errno;
	}
	if (sp->journal >= 0 && unlinkat(sp->dirfd, DC_JOURNAL, 0) && !e)
		e = errno;
	if (rmdir(sp->dir) && !e)
		e = errno;
	dc_spool_free(sp);
	errno = e;
	return e ? -1 : 0;
}

const char *dc_spool_stop_reason(int err)
{
	return err == EFBIG ? "its bound is reached (--spool-size; default half the free disk)"
			    : strerror(err);
}

void dc_spool_free(struct dc_spool *sp)
{
	if (!sp)
		return;
	for (unsigned k = 0; k < DC_MAX_SHARDS; k++)
		if (sp->fds[k] >= 0)
			close(sp->fds[k]);
	if (sp->journal >= 0)
		close(sp->journal);
	if (sp->dirfd >= 0)
		close(sp->dirfd);
	free(sp);
}
