/* shards.c: the readers of the sharded ring buffers: drain threads copy records out of the
 * CPU groups' ring buffers into queues, and one merge by `sent` time hands them on in order. */
#include "shards.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include "util.h"
#include "../bpf/datacrumbs.h"

/* How long a drain thread sleeps between reads when BPF has not woken it (it wakes it once
 * an eighth of a ring buffer waits, bpf/common.bpf.h submit_flags), and when its queue is
 * full (the consumer lags: the ring buffer then fills and BPF counts what it loses). */
#define DC_THREAD_MS 10
#define DC_FULL_NS 1000000L
/* While its ring buffers stay empty a drain thread's sleep doubles up to this (the merge
 * reads them too, and BPF still wakes it at an eighth): fewer idle wake-ups. */
#define DC_THREAD_IDLE_MS 160
/* A deferred merge's nice value (dc_shards_defer): on cores the traced program keeps busy
 * it runs in their idle time; EEVDF still gives it a share (setpriority(2), sched(7)). */
#define DC_DEFER_NICE 19

/* A queued record: its merge key, its size, then its bytes, padded to 8. */
struct qhead {
	uint64_t key;
	uint32_t size;
	uint32_t copy; /* 1: a live kind's copy of a spooled record (dc_shards_spool) */
};

struct queue {
	char *buf;
	size_t off, len, cap; /* bytes [off, len) are queued records */
};

/* Queues taken from a drain thread that the merge holds, in order (take swaps buffers, so
 * records are copied once, from the ring buffer); past this many the last one grows. */
#define DC_PEND_MAX 8
/* Emptied queue buffers kept for the drain thread to fill next (the others are freed). */
#define DC_SPARE_MAX 4

struct shard {
	pthread_mutex_t mu;       /* the ring's consumer position and `in` */
	int fd;
	size_t size, mask;
	_Atomic unsigned long *cons_pos; /* our page, read-write */
	const _Atomic unsigned long *prod_pos;
	const char *data;         /* mapped twice in a row: a record never wraps */
	struct queue in;          /* filled by the drain thread or the merge (under mu) */
	/* the merge's own (no lock): queues taken, not yet handed on, npend from pend[ph];
	 * and emptied ones to fill next (nspare) */
	struct queue pend[DC_PEND_MAX];
	unsigned ph, npend;
	struct queue spare[DC_SPARE_MAX];
	unsigned nspare;
	size_t cap;               /* `in` stops growing here: the ring buffer then fills */
	/* spooling (dc_shards_spool): the file the ring's bytes go to, -1: none; its
	 * length; the first error that stopped it (0: none); records in it */
	int spool_fd;
	uint64_t spool_off;
	int spool_err;
	_Atomic uint64_t spooled;
};

struct dc_shards {
	struct shard *s;
	unsigned n, nthreads;
	unsigned nepfds;          /* epfds' length (nthreads is 0 once they are stopped) */
	pthread_t *threads;
	int *epfds;               /* one per drain thread */
	/* dc_shards_defer: while `deferred` (1; stored last, release), the merge's thread
	 * defer_tid is at nice DC_DEFER_NICE; a queue past lift_bytes lifts it (0) */
	pid_t defer_tid;
	int nice0;                /* its nice value before: what a lift restores */
	size_t lift_bytes;
	atomic_int deferred;
	int notify;               /* eventfd: a drain thread has queued much (the fd polled) */
	int stop;                 /* eventfd: the drain threads end */
	int epall;                /* without drain threads: every ring buffer's, polled */
	size_t notify_bytes;
	int started;
	/* spooling: the kinds also queued for the merge (bit k: enum dc_kind k), the bytes
	 * the files may take in all (0: no bound) and have taken */
	unsigned live_kinds;
	uint64_t spool_limit;
	_Atomic uint64_t spool_bytes;
	atomic_int spool_failed;  /* the first error that stopped a shard's spooling: from
				     then every shard queues its records (read_ring) */
	int skip_copies;          /* the spool was replayed: the copies are not handed on */
};

static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

/* Makes room for `more` bytes at the end of q (drops what was handed on before it). */
static void q_room(struct queue *q, size_t more)
{
	if (q->off && q->off == q->len)
		q->off = q->len = 0;
	if (q->len + more <= q->cap)
		return;
	if (q->off) {
		memmove(q->buf, q->buf + q->off, q->len - q->off);
		q->len -= q->off;
		q->off = 0;
		if (q->len + more <= q->cap)
			return;
	}
	size_t cap = q->cap ? q->cap : 1 << 16;
	while (cap < q->len + more)
		cap *= 2;
	char *b = realloc(q->buf, cap);
	if (!b)
		dc_oom();
	q->buf = b;
	q->cap = cap;
}

/* Appends record rec (n bytes) to s->in with its merge key. Returns -1, copying nothing,
 * when s->in would pass s->cap, else 0. Caller holds s->mu. */
static int enqueue(struct shard *s, const char *rec, uint32_t n, int copy)
{
	size_t need = sizeof(struct qhead) + ((n + 7) & ~7U);
	if (s->in.len - s->in.off + need > s->cap)
		return -1;
	q_room(&s->in, need);
	struct qhead *h = (void *)(s->in.buf + s->in.len);
	h->key = 0;
	if (n >= sizeof(struct dc_event))
		memcpy(&h->key, rec + offsetof(struct dc_event, sent), sizeof(h->key));
	h->size = n;
	h->copy = (uint32_t)copy;
	memcpy(h + 1, rec, n);
	s->in.len += need;
	return 0;
}

/* Copies the records waiting in shard s's ring buffer into s->in, until it holds s->cap
 * bytes (the rest stays in the ring). The layout and the memory order are the kernel's
 * (kernel/bpf/ringbuf.c: 8-byte headers, len with the busy and discard bits, records
 * rounded up to 8). Returns 1 when records were left for want of room, else 0. Caller
 * holds s->mu. */
static int read_ring(struct shard *s)
{
	unsigned long cons = atomic_load_explicit(s->cons_pos, memory_order_relaxed);
	unsigned long prod = atomic_load_explicit(s->prod_pos, memory_order_acquire);
	int full = 0;
	while (cons < prod) {
		const _Atomic uint32_t *lenp = (const void *)(s->data + (cons & s->mask));
		uint32_t len = atomic_load_explicit(lenp, memory_order_acquire);
		if (len & BPF_RINGBUF_BUSY_BIT)
			break; /* reserved, not yet submitted: the records after it wait too */
		uint32_t n = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		if (!(len & BPF_RINGBUF_DISCARD_BIT) &&
		    enqueue(s, (const char *)lenp + BPF_RINGBUF_HDR_SZ, n, 0)) {
			full = 1;
			break;
		}
		cons += (n + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
		if (cons >= prod) /* caught up: see what came meanwhile */
			prod = atomic_load_explicit(s->prod_pos, memory_order_acquire);
		atomic_store_explicit(s->cons_pos, cons, memory_order_release);
	}
	return full;
}

/* The ring's committed records from cons on, up to the first still busy one and at most
 * one ring's worth (the data pages are mapped twice, so these bytes are contiguous): their
 * byte length; *live_seen: 1 when one of them is of a kind in `live` (bit k: kind k);
 * *nrec: how many are not discarded. */
static size_t ring_span(const struct shard *s, unsigned long cons, unsigned live, int *live_seen,
			uint64_t *nrec)
{
	unsigned long end = cons;
	unsigned long prod = atomic_load_explicit(s->prod_pos, memory_order_acquire);
	while (end < prod && end - cons < s->size) {
		const _Atomic uint32_t *lenp = (const void *)(s->data + (end & s->mask));
		/* the headers lie a record apart, in lines another CPU wrote: ask for those
		 * ahead (the mapping is twice the ring: in bounds) */
		__builtin_prefetch((const char *)lenp + 1024);
		uint32_t len = atomic_load_explicit(lenp, memory_order_acquire);
		if (len & BPF_RINGBUF_BUSY_BIT)
			break;
		uint32_t n = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		size_t step = (n + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
		if (end + step - cons > s->size)
			break;
		if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
			uint32_t kind = 0;
			if (n >= sizeof(kind))
				memcpy(&kind, (const char *)lenp + BPF_RINGBUF_HDR_SZ, sizeof(kind));
			*live_seen |= kind < 32 && (live >> kind & 1);
			++*nrec;
		}
		end += step;
		if (end >= prod)
			prod = atomic_load_explicit(s->prod_pos, memory_order_acquire);
	}
	return end - cons;
}

/* Walks the records of [p, p + len) (ring layout: 8-byte headers, records padded to 8):
 * queues those of the live kinds into s->in (when `live`), and returns the bytes of the
 * whole records among the first `keep` bytes (keep = len: all of them). */
static size_t span_walk(struct shard *s, const char *p, size_t len, unsigned live, size_t keep,
			uint64_t *nrec)
{
	size_t off = 0;
	while (off + BPF_RINGBUF_HDR_SZ <= len) {
		uint32_t hdr;
		memcpy(&hdr, p + off, sizeof(hdr));
		uint32_t n = hdr & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
		size_t step = (n + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
		if (off + step > keep)
			break;
		const char *rec = p + off + BPF_RINGBUF_HDR_SZ;
		uint32_t kind = 0;
		if (n >= sizeof(kind))
			memcpy(&kind, rec, sizeof(kind));
		if (live && !(hdr & BPF_RINGBUF_DISCARD_BIT) && kind < 32 && (live >> kind & 1))
			enqueue(s, rec, n, 1); /* a few (loads, execs): past the cap, dropped */
		*nrec += !(hdr & BPF_RINGBUF_DISCARD_BIT);
		off += step;
	}
	return off;
}

/* Spooling: appends the records waiting in s's ring buffer to its spool file as the ring
 * holds them (one copy, into the page cache: no record is decoded), queues those of the
 * live kinds for the merge too, and frees their room in the ring. Stops for good at the
 * spool's bound or a write error, s->spool_err saying which (read_shard then queues what
 * is left, as without a spool); a short write is cut back to its last whole record.
 * Returns 1 when records were left in the ring for want of time (read again at once),
 * else 0 (also once stopped). Caller holds s->mu. */
static int spool_ring(struct dc_shards *sh, struct shard *s)
{
	if (s->spool_err)
		return 0;
	unsigned long cons = atomic_load_explicit(s->cons_pos, memory_order_relaxed);
	int live = 0;
	uint64_t nrec = 0;
	size_t span = ring_span(s, cons, sh->live_kinds, &live, &nrec);
	if (!span)
		return 0;
	if (sh->spool_limit && atomic_load(&sh->spool_bytes) + span > sh->spool_limit) {
		s->spool_err = EFBIG;
		return 0;
	}
	const char *p = s->data + (cons & s->mask);
	size_t done = 0;
	while (done < span) {
		ssize_t w = write(s->spool_fd, p + done, span - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			s->spool_err = w < 0 ? errno : ENOSPC;
			break;
		}
		done += (size_t)w;
	}
	size_t whole = span;
	if (live || done < span) { /* a second walk: rare kinds to queue, or a cut record */
		nrec = 0;
		whole = span_walk(s, p, span, live ? sh->live_kinds : 0, done, &nrec);
	}
	if (whole != done) { /* a record cut by a short write: not in the spool */
		if (ftruncate(s->spool_fd, (off_t)(s->spool_off + whole)) ||
		    lseek(s->spool_fd, (off_t)(s->spool_off + whole), SEEK_SET) < 0)
			s->spool_err = errno;
	}
	s->spool_off += whole;
	atomic_fetch_add(&sh->spool_bytes, whole);
	atomic_fetch_add(&s->spooled, nrec);
	atomic_store_explicit(s->cons_pos, cons + whole, memory_order_release);
	return !s->spool_err && whole < span;
}

/* Reads shard s's ring buffer into its spool, or else (none, or once a shard's spooling
 * failed) into s->in (read_ring). */
static int read_shard(struct dc_shards *sh, struct shard *s)
{
	if (s->spool_fd < 0 || atomic_load_explicit(&sh->spool_failed, memory_order_relaxed))
		return read_ring(s);
	int left = spool_ring(sh, s);
	if (s->spool_err) {
		int zero = 0;
		atomic_compare_exchange_strong(&sh->spool_failed, &zero, s->spool_err);
		return read_ring(s); /* what the spool did not take */
	}
	return left;
}

/* The first of s's taken queues with records left, NULL when none: emptied ones go to the
 * spares (or are freed). */
static struct queue *pend_head(struct shard *s)
{
	while (s->npend) {
		struct queue *q = &s->pend[s->ph];
		if (q->off < q->len)
			return q;
		if (s->nspare < DC_SPARE_MAX)
			s->spare[s->nspare++] = (struct queue){ q->buf, 0, 0, q->cap };
		else
			free(q->buf);
		*q = (struct queue){ 0 };
		s->ph = (s->ph + 1) % DC_PEND_MAX;
		s->npend--;
	}
	return NULL;
}

/* Moves s->in's records behind s->pend's: its buffer becomes the last taken queue and the
 * drain thread gets a spare one (no copy); when DC_PEND_MAX are taken, they are appended
 * to the last. Caller holds s->mu. */
static void take(struct shard *s)
{
	size_t n = s->in.len - s->in.off;
	if (!n)
		return;
	if (s->npend < DC_PEND_MAX) {
		s->pend[(s->ph + s->npend++) % DC_PEND_MAX] = s->in;
		s->in = s->nspare ? s->spare[--s->nspare] : (struct queue){ 0 };
		return;
	}
	struct queue *last = &s->pend[(s->ph + s->npend - 1) % DC_PEND_MAX];
	q_room(last, n);
	memcpy(last->buf + last->len, s->in.buf + s->in.off, n);
	last->len += n;
	s->in.off = s->in.len = 0;
}

/* Bytes of records the merge has taken from the drain threads and not handed on yet (its
 * own queues: no lock). */
static size_t merge_backlog(const struct dc_shards *sh)
{
	size_t n = 0;
	for (unsigned k = 0; k < sh->n; k++) {
		const struct shard *s = &sh->s[k];
		for (unsigned i = 0; i < s->npend; i++) {
			const struct queue *q = &s->pend[(s->ph + i) % DC_PEND_MAX];
			n += q->len - q->off;
		}
	}
	return n;
}

struct thread_arg {
	struct dc_shards *sh;
	unsigned t;
};

/* A drain thread: reads its shards (k % nthreads == t) when BPF wakes it or every
 * DC_THREAD_MS, and tells the merge (notify) once a queue holds notify_bytes. */
static void *drain_thread(void *arg)
{
	struct thread_arg ta = *(struct thread_arg *)arg;
	free(arg);
	struct dc_shards *sh = ta.sh;
	int wait_ms = DC_THREAD_MS;
	for (;;) {
		struct epoll_event ev[8];
		int n = epoll_wait(sh->epfds[ta.t], ev, 8, wait_ms);
		for (int i = 0; i < n; i++)
			if (ev[i].data.u32 == UINT32_MAX)
				return NULL;
		int full = 0, tell = 0, got = 0;
		size_t most = 0; /* the longest of its queues */
		for (unsigned k = ta.t; k < sh->n; k += sh->nthreads) {
			struct shard *s = &sh->s[k];
			pthread_mutex_lock(&s->mu);
			size_t before = s->in.len - s->in.off;
			full |= read_shard(sh, s);
			size_t now = s->in.len - s->in.off;
			got |= now != before;
			/* spooling: `in` holds the live kinds' records alone, each worth a look */
			tell |= now >= sh->notify_bytes || (s->spool_fd >= 0 && now != before);
			most = now > most ? now : most;
			pthread_mutex_unlock(&s->mu);
		}
		wait_ms = got || n > 0 ? DC_THREAD_MS
			  : wait_ms * 2 > DC_THREAD_IDLE_MS ? DC_THREAD_IDLE_MS : wait_ms * 2;
		if (tell) {
			uint64_t one = 1;
			if (write(sh->notify, &one, sizeof(one)) < 0) {
				/* the counter is only a doorbell: a full one already rings */
			}
		}
		/* a deferred merge must catch up: lift it (lift_bytes is read after `deferred`) */
		if (atomic_load_explicit(&sh->deferred, memory_order_acquire) &&
		    (full || most >= sh->lift_bytes))
			dc_shards_lift(sh);
		if (full) { /* the merge lags: let the ring buffer hold what comes */
			struct timespec d = { 0, DC_FULL_NS };
			nanosleep(&d, NULL);
		}
	}
}

static int map_shard(struct shard *s, int fd, size_t size)
{
	long page = sysconf(_SC_PAGESIZE);
	s->fd = fd;
	s->size = size;
	s->mask = size - 1;
	void *c = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (c == MAP_FAILED)
		return -1;
	void *p = mmap(NULL, page + 2 * size, PROT_READ, MAP_SHARED, fd, page);
	if (p == MAP_FAILED) {
		munmap(c, page);
		return -1;
	}
	s->cons_pos = c;
	s->prod_pos = p;
	s->data = (const char *)p + page;
	s->cap = size > (1u << 20) ? size : (1u << 20);
	return 0;
}

struct dc_shards *dc_shards_new(const int *fds, unsigned n, size_t size, unsigned nthreads,
				char *err, size_t errlen)
{
	struct dc_shards *sh = calloc(1, sizeof(*sh));
	if (!sh || !(sh->s = calloc(n, sizeof(*sh->s)))) {
		free(sh);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	sh->n = n;
	sh->nthreads = nthreads > n ? n : nthreads;
	sh->notify = sh->stop = sh->epall = -1;
	sh->notify_bytes = size / 8;
	for (unsigned k = 0; k < n; k++) {
		sh->s[k].spool_fd = -1;
		pthread_mutex_init(&sh->s[k].mu, NULL);
		if (map_shard(&sh->s[k], fds[k], size)) {
			snprintf(err, errlen, "cannot map ring buffer %u: %s", k, strerror(errno));
			sh->n = k;
			dc_shards_free(sh);
			return NULL;
		}
	}
	if (!sh->nthreads) {
		sh->epall = epoll_create1(EPOLL_CLOEXEC);
		for (unsigned k = 0; sh->epall >= 0 && k < n; k++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = k };
			if (epoll_ctl(sh->epall, EPOLL_CTL_ADD, fds[k], &ev)) {
				close(sh->epall);
				sh->epall = -1;
			}
		}
		if (sh->epall < 0) {
			snprintf(err, errlen, "cannot poll the ring buffers: %s", strerror(errno));
			dc_shards_free(sh);
			return NULL;
		}
		return sh;
	}
	sh->notify = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sh->stop = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	sh->threads = calloc(sh->nthreads, sizeof(*sh->threads));
	sh->epfds = calloc(sh->nthreads, sizeof(*sh->epfds));
	if (sh->notify < 0 || sh->stop < 0 || !sh->threads || !sh->epfds) {
		snprintf(err, errlen, "cannot set up the drain threads: %s", strerror(errno));
		sh->nthreads = 0; /* none started */
		dc_shards_free(sh);
		return NULL;
	}
	sh->nepfds = sh->nthreads;
	for (unsigned t = 0; t < sh->nthreads; t++)
		sh->epfds[t] = -1;
	for (unsigned t = 0; t < sh->nthreads; t++) {
		int ep = epoll_create1(EPOLL_CLOEXEC);
		sh->epfds[t] = ep;
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = UINT32_MAX };
		int bad = ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, sh->stop, &ev);
		for (unsigned k = t; !bad && k < n; k += sh->nthreads) {
			/* edge-triggered: woken when BPF wakes the ring's waiters (an eighth
			 * waits: bpf/common.bpf.h submit_flags), not whenever a record waits,
			 * which made a busy thread spin on one record at a time */
			struct epoll_event rv = { .events = EPOLLIN | EPOLLET, .data.u32 = k };
			bad = epoll_ctl(ep, EPOLL_CTL_ADD, fds[k], &rv) != 0;
		}
		struct thread_arg *ta = bad ? NULL : malloc(sizeof(*ta));
		if (ta) {
			*ta = (struct thread_arg){ sh, t };
			if (pthread_create(&sh->threads[t], NULL, drain_thread, ta)) {
				free(ta);
				ta = NULL;
			}
		}
		if (!ta) {
			snprintf(err, errlen, "cannot start drain thread %u: %s", t,
				 strerror(errno));
			if (ep >= 0)
				close(ep);
			sh->nthreads = t; /* those started are stopped and joined */
			dc_shards_free(sh);
			return NULL;
		}
	}
	sh->started = 1;
	return sh;
}

int dc_shards_fd(const struct dc_shards *sh)
{
	return sh->nthreads ? sh->notify : sh->epall;
}

unsigned dc_shards_threads(const struct dc_shards *sh)
{
	return sh->nthreads;
}

/* Records stay queued after a drain that stopped at its budget: the doorbell rings again,
 * so that the fd stays readable and the caller's loop comes back at once (not on its
 * timer, which made a backlog drain at one budget per timer tick). */
static void ring_again(struct dc_shards *sh)
{
	uint64_t one = 1;
	if (sh->notify >= 0 && write(sh->notify, &one, sizeof(one)) < 0) {
		/* a counter far from its maximum: cannot fail */
	}
}

long dc_shards_drain(struct dc_shards *sh, long max, dc_shard_fn fn, void *ctx)
{
	long done = 0;
	if (sh->notify >= 0) {
		uint64_t v;
		if (read(sh->notify, &v, sizeof(v)) < 0) {
			/* EAGAIN: no drain thread rang since the last drain */
		}
	}
	for (int pass = 0; pass < 64; pass++) {
		/* every record committed before w is read below (each ring after w); a
		 * record of a thread is committed before the thread's next one stamps its
		 * `sent`, so handing on only keys < w, smallest head first, keeps each
		 * thread's order whichever CPUs it ran on */
		uint64_t w = mono_ns();
		int full = 0;
		/* a deferred merge holds the shards' locks at its own nice value: preempted there at nice
		 * 19 it would stop the drain threads (priority inversion) and the rings fill */
		int low = atomic_load(&sh->deferred);
		if (low)
			setpriority(PRIO_PROCESS, (id_t)sh->defer_tid, sh->nice0);
		for (unsigned k = 0; k < sh->n; k++) {
			struct shard *s = &sh->s[k];
			pthread_mutex_lock(&s->mu);
			take(s);
			full |= read_shard(sh, s);
			take(s);
			pthread_mutex_unlock(&s->mu);
		}
		if (low && merge_backlog(sh) >= sh->lift_bytes * sh->n)
			dc_shards_lift(sh); /* it falls behind: the queues taken hold half the budget */
		if (low && atomic_load(&sh->deferred)) {
			setpriority(PRIO_PROCESS, (id_t)sh->defer_tid, DC_DEFER_NICE);
			if (!atomic_load(&sh->deferred)) /* lifted meanwhile: that stands */
				setpriority(PRIO_PROCESS, (id_t)sh->defer_tid, sh->nice0);
		}
		for (;;) {
			if (max > 0 && done >= max) {
				ring_again(sh);
				return done; /* the rest stays in the queues, merged first next time */
			}
			struct shard *best = NULL;
			uint64_t bk = w;
			struct queue *bq = NULL;
			for (unsigned k = 0; k < sh->n; k++) {
				struct queue *q = pend_head(&sh->s[k]);
				if (!q)
					continue;
				const struct qhead *h = (const void *)(q->buf + q->off);
				if (sh->live_kinds && !sh->skip_copies && !h->copy)
					continue; /* queued after the spooling failed: its records
						     wait for the spool's replay (the caller's) */
				if (h->key < bk) {
					bk = h->key;
					best = &sh->s[k];
					bq = q;
				}
			}
			if (!best)
				break;
			struct queue *q = bq;
			const struct qhead *h = (const void *)(q->buf + q->off);
			q->off += sizeof(*h) + ((h->size + 7) & ~7U);
			if (h->copy && sh->skip_copies)
				continue; /* handed on by the spool's replay */
			fn(ctx, h + 1, h->size);
			done++;
		}
		if (!full)
			break;
	}
	return done;
}

int dc_shards_defer(struct dc_shards *sh, size_t bytes)
{
	if (!sh->nthreads || geteuid() != 0) {
		errno = EPERM; /* no drain thread to lift it, or no CAP_SYS_NICE to lift */
		return -1;
	}
	pid_t tid = (pid_t)syscall(SYS_gettid);
	errno = 0;
	int nice0 = getpriority(PRIO_PROCESS, (id_t)tid);
	if ((nice0 == -1 && errno) || setpriority(PRIO_PROCESS, (id_t)tid, DC_DEFER_NICE))
		return -1;
	sh->nice0 = nice0;
	size_t each = bytes / sh->n; /* the budget shared by the shards' queues */
	for (unsigned k = 0; k < sh->n; k++) {
		pthread_mutex_lock(&sh->s[k].mu);
		if (sh->s[k].cap < each)
			sh->s[k].cap = each;
		pthread_mutex_unlock(&sh->s[k].mu);
	}
	sh->lift_bytes = each / 2;
	sh->defer_tid = tid;
	atomic_store_explicit(&sh->deferred, 1, memory_order_release);
	return 0;
}

void dc_shards_lift(struct dc_shards *sh)
{
	if (!atomic_exchange(&sh->deferred, 0))
		return; /* not deferred, or lifted already */
	if (setpriority(PRIO_PROCESS, (id_t)sh->defer_tid, sh->nice0))
		fprintf(stderr, "datacrumbs: cannot lift the consumer's priority: %s\n",
			strerror(errno));
}


int dc_shards_spool(struct dc_shards *sh, const int *fds, uint64_t limit, unsigned live_kinds)
{
	if (!sh->nthreads) {
		errno = EPERM; /* the caller's thread would copy the records: no gain */
		return -1;
	}
	sh->live_kinds = live_kinds;
	sh->spool_limit = limit;
	for (unsigned k = 0; k < sh->n; k++) {
		pthread_mutex_lock(&sh->s[k].mu);
		sh->s[k].spool_fd = fds[k];
		pthread_mutex_unlock(&sh->s[k].mu);
	}
	return 0;
}

/* Stops and joins the drain threads (the stop eventfd; they end at their next wake-up). */
static void stop_threads(struct dc_shards *sh)
{
	if (sh->stop >= 0) {
		uint64_t one = 1;
		if (write(sh->stop, &one, sizeof(one)) < 0) {
			/* cannot fail for a counter far from its maximum */
		}
	}
	for (unsigned t = 0; sh->threads && t < sh->nthreads; t++)
		pthread_join(sh->threads[t], NULL);
	sh->nthreads = 0;
}

int dc_shards_spool_end(struct dc_shards *sh)
{
	stop_threads(sh);
	int err = 0;
	for (unsigned k = 0; k < sh->n; k++) {
		struct shard *s = &sh->s[k];
		pthread_mutex_lock(&s->mu);
		if (s->spool_fd >= 0) {
			while (!atomic_load(&sh->spool_failed) && spool_ring(sh, s))
				;
			err = err ? err : s->spool_err;
			s->spool_fd = -1;
		}
		pthread_mutex_unlock(&s->mu);
	}
	sh->skip_copies = 1; /* the replay hands on what they copied */
	sh->epall = epoll_create1(EPOLL_CLOEXEC); /* from now the caller's thread reads */
	for (unsigned k = 0; sh->epall >= 0 && k < sh->n; k++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = k };
		epoll_ctl(sh->epall, EPOLL_CTL_ADD, sh->s[k].fd, &ev);
	}
	return err;
}

int dc_shards_spool_failed(struct dc_shards *sh)
{
	return atomic_load(&sh->spool_failed);
}

void dc_shards_spool_settle(struct dc_shards *sh)
{
	/* spool_ring runs under its shard's lock: once each lock was taken after the flag
	 * was set, no drain thread writes to a spool file again (read_shard sees the flag) */
	for (unsigned k = 0; k < sh->n; k++) {
		pthread_mutex_lock(&sh->s[k].mu);
		pthread_mutex_unlock(&sh->s[k].mu);
	}
}

void dc_shards_spool_replayed(struct dc_shards *sh)
{
	sh->skip_copies = 1;
}

uint64_t dc_shards_spooled(struct dc_shards *sh)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < sh->n; k++)
		n += atomic_load(&sh->s[k].spooled);
	return n;
}

void dc_shards_free(struct dc_shards *sh)
{
	if (!sh)
		return;
	stop_threads(sh);
	for (unsigned t = 0; sh->epfds && t < sh->nepfds; t++)
		if (sh->epfds[t] >= 0)
			close(sh->epfds[t]);
	long page = sysconf(_SC_PAGESIZE);
	for (unsigned k = 0; k < sh->n; k++) {
		struct shard *s = &sh->s[k];
		if (s->cons_pos)
			munmap((void *)s->cons_pos, page);
		if (s->prod_pos)
			munmap((void *)s->prod_pos, page + 2 * s->size);
		free(s->in.buf);
		for (unsigned i = 0; i < DC_PEND_MAX; i++)
			free(s->pend[i].buf);
		for (unsigned i = 0; i < DC_SPARE_MAX; i++)
			free(s->spare[i].buf);
		pthread_mutex_destroy(&s->mu);
	}
	if (sh->notify >= 0)
		close(sh->notify);
	if (sh->stop >= 0)
		close(sh->stop);
	if (sh->epall >= 0)
		close(sh->epall);
	free(sh->threads);
	free(sh->epfds);
	free(sh->s);
	free(sh);
}
