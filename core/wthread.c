/* wthread.c: the trace writer's thread: a bounded FIFO of text buffers, each compressed as
 * one whole gzip member with ISA-L's igzip (or written plain) and written in order. */

#define _GNU_SOURCE

#include "wthread.h"

#include <errno.h>
#include <isa-l/igzip_lib.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

/* Queue slots: every pool buffer, and as many more for heap buffers (long lines). */
#define DC_WT_SLOTS (2 * DC_WT_NBUF)

struct dc_wbuf {
	char *p;
	size_t len;
	uint64_t events;
	int own_heap;
};

struct dc_wthread {
	int fd;
	int level;
	pthread_t th;
	int started;

	pthread_mutex_t m;   /* queue, free list, stop */
	pthread_cond_t work; /* something queued, or stop */
	pthread_cond_t done; /* a buffer came back: free list or pending changed */
	struct dc_wbuf q[DC_WT_SLOTS];
	unsigned head, nq; /* FIFO of nq entries from head */
	unsigned busy;     /* taken from the queue, being written */
	int stop;
	char *pool[DC_WT_NBUF];
	char *freel[DC_WT_NBUF];
	unsigned nfree;

	pthread_mutex_t io; /* the fd's offset, `good`, the error */
	off_t good;         /* file size after the last complete member */
	int err;            /* first error, sticky; read with __atomic_load_n */
	uint64_t on_disk;   /* read with __atomic_load_n */

	unsigned char *lvlbuf; /* igzip's working memory for level DC_WT_LEVEL */
	char *out;
	size_t outcap;
};

/* write(2) until all of p is out, retrying on EINTR and short writes. */
static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t r = write(fd, p, n);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0) {
			errno = EIO;
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* With t->io held: the first error; what reached the file ends on the last complete
 * member, so a reader never meets a cut one (on ENOSPC, truncating frees the room). */
static void set_error(struct dc_wthread *t, int e)
{
	if (t->err)
		return;
	__atomic_store_n(&t->err, e ? e : EIO, __ATOMIC_RELEASE);
	if (ftruncate(t->fd, t->good) == 0)
		lseek(t->fd, t->good, SEEK_SET);
}

/* Room for one member of n bytes of text: igzip's stateless output is at most the input
 * plus stored-block headers (igzip_lib.h, isal_deflate_stateless), and the gzip header and
 * trailer; an eighth more is far above that. */
static size_t member_bound(size_t n)
{
	return n + n / 8 + ISAL_DEF_MAX_HDR_SIZE + 64;
}

/* n bytes of p as one whole gzip member (RFC 1952: igzip's generic header, its CRC-32 and
 * size trailer) at level DC_WT_LEVEL into out (cap bytes). Returns its size, 0 when it
 * does not fit or igzip fails. Source: igzip_lib.h, isal_deflate_stateless. */
static size_t gzip_member(struct dc_wthread *t, const char *p, size_t n, char *out, size_t cap)
{
	struct isal_zstream z;

	isal_deflate_stateless_init(&z);
	z.level = DC_WT_LEVEL;
	z.level_buf = t->lvlbuf;
	z.level_buf_size = ISAL_DEF_LVL1_DEFAULT;
	z.gzip_flag = IGZIP_GZIP;
	z.flush = NO_FLUSH;
	z.end_of_stream = 1;
	z.next_in = (uint8_t *)p;
	z.avail_in = (uint32_t)n;
	z.next_out = (uint8_t *)out;
	z.avail_out = cap > UINT32_MAX ? UINT32_MAX : (uint32_t)cap;
	if (n > UINT32_MAX || isal_deflate_stateless(&z) != COMP_OK)
		return 0;
	return z.total_out;
}

/* Compresses (or not) and writes one buffer; skipped after an error. */
static void write_buf(struct dc_wthread *t, const struct dc_wbuf *b)
{
	const char *p = b->p;
	size_t n = b->len;

	pthread_mutex_lock(&t->io);
	if (t->err)
		goto out;
	if (t->level) {
		size_t need = member_bound(n);

		if (need > t->outcap) {
			char *np = realloc(t->out, need);

			if (np == NULL) {
				set_error(t, ENOMEM);
				goto out;
			}
			t->out = np;
			t->outcap = need;
		}
		n = gzip_member(t, b->p, b->len, t->out, t->outcap);
		if (n == 0) { /* cannot happen with the bound's room */
			set_error(t, EIO);
			goto out;
		}
		p = t->out;
	}
	if (write_all(t->fd, p, n) < 0) {
		set_error(t, errno);
		goto out;
	}
	off_t end = lseek(t->fd, 0, SEEK_CUR);
	if (end >= 0)
		t->good = end;
	__atomic_add_fetch(&t->on_disk, b->events, __ATOMIC_RELEASE);
out:
	pthread_mutex_unlock(&t->io);
}

static void *run(void *arg)
{
	struct dc_wthread *t = arg;

	pthread_mutex_lock(&t->m);
	for (;;) {
		while (t->nq == 0 && !t->stop)
			pthread_cond_wait(&t->work, &t->m);
		if (t->nq == 0)
			break; /* stopped, and everything is written */
		struct dc_wbuf b = t->q[t->head];
		t->head = (t->head + 1) % DC_WT_SLOTS;
		t->nq--;
		t->busy++;
		pthread_mutex_unlock(&t->m);

		write_buf(t, &b);

		pthread_mutex_lock(&t->m);
		if (b.own_heap)
			free(b.p);
		else
			t->freel[t->nfree++] = b.p;
		t->busy--;
		pthread_cond_broadcast(&t->done);
	}
	pthread_mutex_unlock(&t->m);
	return NULL;
}

static void destroy(struct dc_wthread *t)
{
	for (int i = 0; i < DC_WT_NBUF; i++)
		free(t->pool[i]);
	free(t->out);
	free(t->lvlbuf);
	pthread_mutex_destroy(&t->m);
	pthread_mutex_destroy(&t->io);
	pthread_cond_destroy(&t->work);
	pthread_cond_destroy(&t->done);
	free(t);
}

struct dc_wthread *dc_wthread_start(int fd, off_t good, int compress)
{
	struct dc_wthread *t = calloc(1, sizeof(*t));
	int e;

	if (t == NULL)
		return NULL;
	t->fd = fd;
	t->good = good;
	t->level = compress ? 1 : 0;
	pthread_mutex_init(&t->m, NULL);
	pthread_mutex_init(&t->io, NULL);
	pthread_cond_init(&t->work, NULL);
	pthread_cond_init(&t->done, NULL);
	for (int i = 0; i < DC_WT_NBUF; i++) {
		t->pool[i] = malloc(DC_WT_BUF);
		if (t->pool[i] == NULL)
			goto nomem;
		t->freel[t->nfree++] = t->pool[i];
	}
	if (compress) {
		t->lvlbuf = malloc(ISAL_DEF_LVL1_DEFAULT);
		if (t->lvlbuf == NULL)
			goto nomem;
		t->outcap = member_bound(DC_WT_BUF);
		t->out = malloc(t->outcap);
		if (t->out == NULL)
			goto nomem;
	}
	e = dc_thread_start(&t->th, run, t); /* it takes no signal: the session's signalfd does */
	if (e == 0) /* its name in top -H and /proc/PID/task/TID/comm (bench/loop.c) */
		pthread_setname_np(t->th, "dc-writer");
	if (e) {
		destroy(t);
		errno = e;
		return NULL;
	}
	t->started = 1;
	return t;
nomem:
	destroy(t);
	errno = ENOMEM;
	return NULL;
}

char *dc_wthread_buf(struct dc_wthread *t)
{
	char *p;

	pthread_mutex_lock(&t->m);
	while (t->nfree == 0)
		pthread_cond_wait(&t->done, &t->m);
	p = t->freel[--t->nfree];
	pthread_mutex_unlock(&t->m);
	return p;
}

void dc_wthread_push(struct dc_wthread *t, char *buf, size_t len, uint64_t events, int own_heap)
{
	pthread_mutex_lock(&t->m);
	while (t->nq == DC_WT_SLOTS)
		pthread_cond_wait(&t->done, &t->m);
	t->q[(t->head + t->nq) % DC_WT_SLOTS] = (struct dc_wbuf){
		.p = buf, .len = len, .events = events, .own_heap = own_heap
	};
	t->nq++;
	pthread_cond_signal(&t->work);
	pthread_mutex_unlock(&t->m);
}

int dc_wthread_sync(struct dc_wthread *t)
{
	int e;

	pthread_mutex_lock(&t->m);
	while (t->nq > 0 || t->busy > 0)
		pthread_cond_wait(&t->done, &t->m);
	pthread_mutex_unlock(&t->m);
	e = dc_wthread_error(t);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

void dc_wthread_fail(struct dc_wthread *t, int e)
{
	pthread_mutex_lock(&t->io);
	set_error(t, e);
	pthread_mutex_unlock(&t->io);
}

int dc_wthread_error(struct dc_wthread *t)
{
	return __atomic_load_n(&t->err, __ATOMIC_ACQUIRE);
}

uint64_t dc_wthread_on_disk(struct dc_wthread *t)
{
	return __atomic_load_n(&t->on_disk, __ATOMIC_ACQUIRE);
}

int dc_wthread_stop(struct dc_wthread *t)
{
	int e;

	if (t == NULL)
		return 0;
	pthread_mutex_lock(&t->m);
	t->stop = 1;
	pthread_cond_signal(&t->work);
	pthread_mutex_unlock(&t->m);
	pthread_join(t->th, NULL);
	e = t->err;
	destroy(t);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}
