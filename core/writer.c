/* writer.c: the DFTracer trace writer: JSON lines assembled in scratch buffers, text buffers
 * handed to the writer thread (wthread.h: gzip members), FH/SH dedup tables, MD5 hashes. */

#define _GNU_SOURCE

#include "writer.h"

#include "util.h"
#include "wthread.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include <openssl/evp.h>

/* Text buffered before it is handed to the writer thread, which compresses it as one gzip
 * member (or writes it plain). A line that does not fit in an empty buffer is handed over
 * as a member of its own. */
#define DC_TEXT_BUF DC_WT_BUF
/* First size of the scratch line buffers; they grow (doubling) for long strings. */
#define DC_LINE_BUF 4096
/* First number of slots of a dedup table (a power of two). */
#define DC_TAB_SLOTS 256

/* Short strings (keys, names, layers, hashes) are quoted in one pass when they are at most
 * this long and need no escaping (put_qz). */
#define DC_QFAST 64

/* A growable buffer in which one JSON line is assembled. The event line is built in place
 * at the end of the writer's text buffer when it has room (`borrowed`: p points there, so
 * dc_writer_end only counts it in, no copy); it moves to its own memory (`own`) when it
 * outgrows that room or other text must be appended first. */
struct dc_line {
	char *p;
	size_t len;
	size_t cap;
	int borrowed;
	char *own;     /* the line's own memory (p when not borrowed) */
	size_t owncap;
};

/* A distinct string of a dedup table, allocated once and never moved, so `hash` can be
 * handed out until the writer is closed. */
struct dc_strent {
	size_t len;
	char hash[17];
	char str[]; /* len bytes and a NUL */
};

/* A slot of a dedup table (util.h dc_htab): e == NULL is empty; h caches the FNV-1a hash. */
struct dc_slot {
	uint64_t h;
	struct dc_strent *e;
};

struct dc_strtab {
	struct dc_htab tab; /* of struct dc_slot, DC_TAB_SLOTS at first */
};

/* One writer belongs to one thread at a time: nothing here locks (the writer thread, `t`,
 * has its own locks; the error and the events on disk are its). */
struct dc_writer {
	int fd;
	int compress;
	int in_event; /* an event is being assembled in `ev` */
	uint64_t count;
	uint64_t pending; /* events in buf, not yet handed over */
	int finished;     /* the final "]" is written (dc_writer_finish) */
	struct dc_wthread *t;
	char hhash[17];
	char xtail[64]; /* ,"ph":"X","args":{"hhash":"HHHH" : a complete event's fixed middle */
	size_t xtail_len;
	uint64_t ts_hi;     /* the last ts / 10^6 (its seconds), and ts_text: it in decimal */
	size_t ts_len;
	char ts_text[24];
	int pt_pid, pt_tid; /* the last event's pid and tid, and pt: them as `,"pid":P,"tid":T` */
	size_t pt_len;
	char pt[48];
	char spare[17]; /* hash returned when a dedup entry cannot be allocated */

	char *buf; /* text not yet handed over: a buffer of t's */
	size_t len;
	size_t cap;

	struct dc_line ev;   /* the event being built */
	struct dc_line meta; /* a metadata record being built */
	struct dc_strtab fh;
	struct dc_strtab sh;
	/* hashed_string's last entries, by (length, last byte) % DC_RECENT: looked up without
	 * hashing the string (entries never move or go before dc_writer_close) */
#define DC_RECENT 8
	struct dc_strent *recent_fh[DC_RECENT], *recent_sh[DC_RECENT];
	/* dc_writer_file_run's paths by address (direct-mapped, DC_RUN_FH of them): the
	 * caller's string lives unchanged until dc_writer_close, so its address names it */
#define DC_RUN_FH 64
	struct {
		const char *src;
		const char *hash; /* its strent's hash: lives until dc_writer_close */
	} run_fh[DC_RUN_FH];
};

/* ---------------------------------------------------------------------------------------
 * Hashing
 * ------------------------------------------------------------------------------------- */

void dc_hash(const void *data, size_t len, char out[17])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int i;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_md5(), NULL) || mdlen != 16) {
		/* MD5 unavailable (e.g. an OpenSSL FIPS-only configuration). */
		memset(out, '0', 16);
		out[16] = '\0';
		return;
	}
	for (i = 0; i < 8; i++) {
		out[2 * i] = hex[md[2 * i] >> 4];
		out[2 * i + 1] = hex[md[2 * i] & 15];
	}
	out[16] = '\0';
}

/* FNV-1a, for the dedup tables only (cheap; MD5 is computed once per new string). */
static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

/* ---------------------------------------------------------------------------------------
 * Dedup tables
 * ------------------------------------------------------------------------------------- */

static uint64_t slot_hash(const void *slot)
{
	return ((const struct dc_slot *)slot)->h;
}

static int slot_used(const void *slot)
{
	return ((const struct dc_slot *)slot)->e != NULL;
}

static void strtab_init(struct dc_strtab *t)
{
	t->tab = (struct dc_htab){ .size = sizeof(struct dc_slot), .first = DC_TAB_SLOTS,
				   .hash = slot_hash, .used = slot_used };
}

struct strkey {
	const char *s;
	size_t n;
	uint64_t h;
};

static int slot_eq(const void *slot, const void *key)
{
	const struct dc_slot *sl = slot;
	const struct strkey *k = key;

	return sl->h == k->h && sl->e->len == k->n && memcmp(sl->e->str, k->s, k->n) == 0;
}

static struct dc_strent *strtab_find(const struct dc_strtab *t, const char *s, size_t n,
				     uint64_t h)
{
	struct strkey k = { s, n, h };
	struct dc_slot *sl = dc_htab_find(&t->tab, h, slot_eq, &k);

	return sl ? sl->e : NULL;
}

/* Adds e (not yet in the table). Keeps the load at most 1/2; if growing fails the table
 * takes entries until it has one free slot left. Returns 0, or -1 when it is full. */
static int strtab_add(struct dc_strtab *t, struct dc_strent *e, uint64_t h)
{
	struct strkey k = { e->str, e->len, h };
	struct dc_slot *sl;

	if (dc_htab_reserve(&t->tab) < 0 && t->tab.n + 1 >= t->tab.cap)
		return -1;
	sl = dc_htab_find(&t->tab, h, slot_eq, &k);
	sl->h = h;
	sl->e = e;
	t->tab.n++;
	return 0;
}

static void strtab_free(struct dc_strtab *t)
{
	struct dc_slot *slots = t->tab.slots;
	size_t i;

	for (i = 0; i < t->tab.cap; i++)
		free(slots[i].e);
	dc_htab_free(&t->tab);
}

/* ---------------------------------------------------------------------------------------
 * JSON escaping
 * ------------------------------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence starting at s[0] (a byte >= 0x80), per
 * Unicode table 3-7 (no overlongs, no surrogates, nothing above U+10FFFF); 0 if none. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
	size_t n, i;

	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (avail < n || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

/* 1 for the bytes that go into a JSON string as they are: printable ASCII but '"' '\\'. */
static const unsigned char dc_json_plain[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, /* 10 */
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 20 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 30 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 40 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, /* 50 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 60 */
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 70 */
	/* 80..ff: 0, UTF-8 is checked separately */
};

long dc_json_escape(char *buf, size_t cap, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0;

	while (i < len) {
		size_t end, n;
		unsigned char c;
		char e;

		/* Copy the run of bytes that need nothing, as far as buf has room. */
		end = len - i < cap - o ? len : i + (cap - o);
		while (i < end && dc_json_plain[u[i]])
			buf[o++] = s[i++];
		if (i == len)
			break;
		if (dc_json_plain[u[i]])
			return -1; /* stopped for want of room */

		c = u[i];
		if (c >= 0x80) {
			n = utf8_seq(u + i, len - i);
			if (n > 0) {
				if (cap - o < n)
					return -1;
				memcpy(buf + o, s + i, n);
				o += n;
				i += n;
			} else {
				if (cap - o < 6)
					return -1;
				memcpy(buf + o, "\\ufffd", 6);
				o += 6;
				i++;
			}
			continue;
		}

		/* '"', '\\' or a control character: a short form, or \u00XX. */
		switch (c) {
		case '"': e = '"'; break;
		case '\\': e = '\\'; break;
		case '\n': e = 'n'; break;
		case '\t': e = 't'; break;
		case '\r': e = 'r'; break;
		case '\b': e = 'b'; break;
		case '\f': e = 'f'; break;
		default: e = 0; break;
		}
		if (cap - o < (e ? 2u : 6u))
			return -1;
		buf[o++] = '\\';
		if (e) {
			buf[o++] = e;
		} else {
			buf[o++] = 'u';
			buf[o++] = '0';
			buf[o++] = '0';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
		i++;
	}
	return (long)o;
}

/* ---------------------------------------------------------------------------------------
 * Line assembly. line_reserve() is called once per record piece with an upper bound of
 * what it will append; the put_* helpers then write without checking.
 * ------------------------------------------------------------------------------------- */

/* Moves a borrowed line into its own memory, with room for `extra` more bytes. */
static int line_unborrow(struct dc_line *l, size_t extra)
{
	size_t need = l->len + extra, ncap;
	char *np;

	if (need < l->len)
		return -1; /* overflow */
	if (l->owncap < need) {
		ncap = l->owncap ? l->owncap : DC_LINE_BUF;
		while (ncap < need)
			ncap *= 2;
		np = realloc(l->own, ncap);
		if (np == NULL)
			return -1;
		l->own = np;
		l->owncap = ncap;
	}
	memcpy(l->own, l->p, l->len);
	l->p = l->own;
	l->cap = l->owncap;
	l->borrowed = 0;
	return 0;
}

static int line_grow(struct dc_line *l, size_t extra);

/* Makes room for `extra` more bytes in l. Returns 0, or -1 when out of memory. */
static inline int line_reserve(struct dc_line *l, size_t extra)
{
	return l->cap - l->len >= extra ? 0 : line_grow(l, extra);
}

static int line_grow(struct dc_line *l, size_t extra)
{
	size_t need, ncap;
	char *np;

	if (l->borrowed)
		return line_unborrow(l, extra);
	need = l->len + extra;
	if (need < l->len)
		return -1; /* overflow */
	ncap = l->cap ? l->cap : DC_LINE_BUF;
	while (ncap < need)
		ncap *= 2;
	np = realloc(l->p, ncap);
	if (np == NULL)
		return -1;
	l->p = np;
	l->cap = ncap;
	l->own = np;
	l->owncap = ncap;
	return 0;
}

static void put_raw(struct dc_line *l, const char *s, size_t n)
{
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

/* For literals: the strlen of a constant folds away once this is inlined. */
static inline void put_str(struct dc_line *l, const char *s)
{
	put_raw(l, s, strlen(s));
}

static const char dc_digits2[] =
	"00010203040506070809101112131415161718192021222324"
	"25262728293031323334353637383940414243444546474849"
	"50515253545556575859606162636465666768697071727374"
	"75767778798081828384858687888990919293949596979899";

/* dc_pow10[n] = 10^n: v has more than n digits when v >= dc_pow10[n]. */
static const uint64_t dc_pow10[20] = {
	1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL, 100000ULL, 1000000ULL, 10000000ULL,
	100000000ULL, 1000000000ULL, 10000000000ULL, 100000000000ULL, 1000000000000ULL,
	10000000000000ULL, 100000000000000ULL, 1000000000000000ULL, 10000000000000000ULL,
	100000000000000000ULL, 1000000000000000000ULL, 10000000000000000000ULL,
};

/* Appends v in decimal, written in place from the end two digits at a time. Needs 20
 * bytes reserved. */
static void put_u64(struct dc_line *l, uint64_t v)
{
	if (v < 100) { /* most args: fds, small counts, 0, 1 */
		if (v < 10) {
			l->p[l->len++] = (char)('0' + v);
		} else {
			l->p[l->len] = dc_digits2[v * 2];
			l->p[l->len + 1] = dc_digits2[v * 2 + 1];
			l->len += 2;
		}
		return;
	}
	/* digits: floor(log10(v)) + 1, from log2 (bit length x 1233 / 4096 is log10(2) x the
	 * bit length, rounded down; one comparison corrects it) */
	unsigned t = ((64u - (unsigned)__builtin_clzll(v | 1)) * 1233u) >> 12;
	size_t n = t + (v >= dc_pow10[t]);
	char *p;

	if (n == 0)
		n = 1;
	p = l->p + l->len + n;
	l->len += n;
	while (v >= 100) {
		unsigned d = (unsigned)(v % 100) * 2;

		v /= 100;
		p -= 2;
		p[0] = dc_digits2[d];
		p[1] = dc_digits2[d + 1];
	}
	if (v >= 10) {
		p[-2] = dc_digits2[v * 2];
		p[-1] = dc_digits2[v * 2 + 1];
	} else {
		p[-1] = (char)('0' + v);
	}
}

/* Needs 21 bytes reserved. */
static void put_i64(struct dc_line *l, int64_t v)
{
	if (v < 0) {
		l->p[l->len++] = '-';
		put_u64(l, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(l, (uint64_t)v);
	}
}

/* Appends s escaped (no quotes). Needs 6 * n bytes reserved. */
static void put_esc(struct dc_line *l, const char *s, size_t n)
{
	long o = dc_json_escape(l->p + l->len, l->cap - l->len, s, n);

	if (o > 0)
		l->len += (size_t)o;
}

/* Appends "s" quoted and escaped. Needs 6 * n + 2 bytes reserved. */
static void put_qstr(struct dc_line *l, const char *s, size_t n)
{
	l->p[l->len++] = '"';
	put_esc(l, s, n);
	l->p[l->len++] = '"';
}

/* Appends "s" quoted and escaped, s NUL-terminated, and keeps `after` bytes reserved
 * behind it. A string of at most DC_QFAST bytes that needs no escaping (keys, names,
 * layers, hashes) is copied in the same pass that finds its end (no strlen, no escape
 * call); any other goes through put_qstr. Needs DC_QFAST + 2 + after bytes reserved for
 * the short case; returns -1 when out of memory for a longer one. */
static int put_qz(struct dc_line *l, const char *s, size_t after)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	if (l->cap - l->len >= DC_QFAST + 2 + after) {
		char *p = l->p + l->len + 1;
		size_t i = 0;

		/* s[i] is read only while s[0..i-1] are plain bytes, none of them the NUL */
		while (i < DC_QFAST && dc_json_plain[u[i]]) {
			p[i] = (char)u[i];
			i++;
		}
		if (u[i] == 0) {
			p[-1] = '"';
			p[i] = '"';
			l->len += i + 2;
			return 0;
		}
	}
	n = strlen(s);
	if (line_reserve(l, 6 * n + 2 + after) < 0)
		return -1;
	put_qstr(l, s, n);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * Output: the text buffer, gzip members, write(2)
 * ------------------------------------------------------------------------------------- */

/* Remembers the first error (writer thread: the file ends on its last complete member,
 * nothing more is written). Returns -1 with errno set. */
static int fail(struct dc_writer *w, int e)
{
	if (w->t)
		dc_wthread_fail(w->t, e);
	errno = w->t ? dc_wthread_error(w->t) : e;
	return -1;
}

/* Hands p over (holding `events` events) as one member: a copy of it, for lines longer
 * than a buffer. The events count as on disk once the thread has written it. */
static int output(struct dc_writer *w, const char *p, size_t n, uint64_t events)
{
	char *c;

	if (dc_wthread_error(w->t))
		return fail(w, 0);
	c = malloc(n);
	if (c == NULL)
		return fail(w, ENOMEM);
	memcpy(c, p, n);
	dc_wthread_push(w->t, c, n, events, 1);
	return 0;
}

/* Hands the buffered text over and takes an empty buffer (waiting only when the thread
 * is DC_WT_NBUF - 1 buffers behind). A no-op when it is empty. */
static void keep_event(struct dc_writer *w);

static int flush_text(struct dc_writer *w)
{
	keep_event(w);
	if (w->len == 0)
		return dc_wthread_error(w->t) ? fail(w, 0) : 0;
	dc_wthread_push(w->t, w->buf, w->len, w->pending, 0);
	w->buf = dc_wthread_buf(w->t);
	w->len = 0;
	w->pending = 0;
	return dc_wthread_error(w->t) ? fail(w, 0) : 0;
}

/* Appends complete lines (holding `events` events) to the text buffer, flushing it first
 * if they do not fit. */
static void emit(struct dc_writer *w, const char *p, size_t n, uint64_t events)
{
	keep_event(w);
	if (n > w->cap - w->len) {
		flush_text(w);
		if (n > w->cap) {
			output(w, p, n, events);
			return;
		}
	}
	memcpy(w->buf + w->len, p, n);
	w->len += n;
	w->pending += events;
}

/* An event being built in place at the end of the text buffer moves to its own memory,
 * before other text is appended there or the buffer is handed over (it then comes after
 * that text, as it would have from a scratch line). Out of memory: the event is dropped. */
static void keep_event(struct dc_writer *w)
{
	struct dc_line *l = &w->ev;

	if (!l->borrowed || (w->in_event && line_unborrow(l, 0) == 0))
		return;
	l->p = l->own; /* no event in progress (or no memory for it: dropped) */
	l->cap = l->owncap;
	l->borrowed = 0;
	l->len = 0;
	w->in_event = 0;
}

/* ---------------------------------------------------------------------------------------
 * Records
 * ------------------------------------------------------------------------------------- */

/* Writes {"name":rec,"cat":"dftracer","pid":P,"tid":T,"ph":"M","args":{"hhash":H,
 * "name":name,"value":value}} at once, assembled in its own scratch line so that an
 * event being built meanwhile still comes after it. */
static void write_meta(struct dc_writer *w, const char *rec, int pid, int tid,
		       const char *name, size_t nlen, const char *value)
{
	struct dc_line *l = &w->meta;
	size_t rlen = strlen(rec), vlen = strlen(value);

	l->len = 0;
	if (line_reserve(l, 256 + 6 * (rlen + nlen + vlen)) < 0)
		return; /* out of memory: the record is lost */
	put_str(l, "{\"name\":");
	put_qstr(l, rec, rlen);
	put_str(l, ",\"cat\":\"dftracer\",\"pid\":");
	put_i64(l, pid);
	put_str(l, ",\"tid\":");
	put_i64(l, tid);
	put_str(l, ",\"ph\":\"M\",\"args\":{\"hhash\":\"");
	put_raw(l, w->hhash, 16);
	put_str(l, "\",\"name\":");
	put_qstr(l, name, nlen);
	put_str(l, ",\"value\":");
	put_qstr(l, value, vlen);
	put_str(l, "}}\n");
	emit(w, l->p, l->len, 0);
}

/* dc_writer_file / dc_writer_string: look s up in t, writing its `rec` record when new. */
static const char *hashed_string(struct dc_writer *w, struct dc_strtab *t, const char *rec,
				 int pid, int tid, const char *s)
{
	size_t n;
	uint64_t h;
	struct dc_strent *e;

	if (s == NULL)
		s = "";
	n = strlen(s);
	struct dc_strent **recent = t == &w->fh ? w->recent_fh : w->recent_sh;
	unsigned k = (unsigned)(n + (n ? (unsigned char)s[n - 1] : 0)) % DC_RECENT;
	if (recent[k] != NULL && recent[k]->len == n && memcmp(recent[k]->str, s, n) == 0)
		return recent[k]->hash;
	h = fnv1a(s, n);
	e = strtab_find(t, s, n, h);
	if (e != NULL) {
		recent[k] = e;
		return e->hash;
	}

	e = malloc(sizeof(*e) + n + 1);
	if (e == NULL) {
		/* Out of memory: still correct, but valid only until the next call. */
		dc_hash(s, n, w->spare);
		write_meta(w, rec, pid, tid, s, n, w->spare);
		return w->spare;
	}
	e->len = n;
	memcpy(e->str, s, n + 1);
	dc_hash(s, n, e->hash);
	write_meta(w, rec, pid, tid, s, n, e->hash);
	if (strtab_add(t, e, h) < 0) {
		memcpy(w->spare, e->hash, sizeof(w->spare));
		free(e);
		return w->spare;
	}
	recent[k] = e;
	return e->hash;
}

struct dc_writer *dc_writer_fdopen(int fd, const char *path, int compress,
				   const char *hostname, int pid, int tid, char *err, size_t errlen)
{
	struct dc_writer *w;
	const char *why;

	if (hostname == NULL)
		hostname = "";
	w = calloc(1, sizeof(*w));
	if (w == NULL) {
		why = "out of memory";
		goto fail_msg;
	}
	w->fd = -1;
	w->compress = compress ? 1 : 0;
	strtab_init(&w->fh);
	strtab_init(&w->sh);
	w->cap = DC_TEXT_BUF;
	if (line_reserve(&w->ev, DC_LINE_BUF) < 0 || line_reserve(&w->meta, DC_LINE_BUF) < 0) {
		why = "out of memory";
		goto fail_msg;
	}
	off_t good = lseek(fd, 0, SEEK_CUR);
	w->t = dc_wthread_start(fd, good < 0 ? 0 : good, w->compress);
	if (w->t == NULL) {
		why = errno == ENOMEM ? "out of memory" : "cannot start the writer thread";
		goto fail_msg;
	}
	w->buf = dc_wthread_buf(w->t);
	w->fd = fd;

	dc_hash(hostname, strlen(hostname), w->hhash);
	w->xtail_len = (size_t)snprintf(w->xtail, sizeof(w->xtail),
					",\"ph\":\"X\",\"args\":{\"hhash\":\"%s\"", w->hhash);
	memcpy(w->buf, "[\n", 2);
	w->len = 2;
	write_meta(w, "HH", pid, tid, hostname, strlen(hostname), w->hhash);
	return w;

fail_msg:
	if (err && errlen)
		snprintf(err, errlen, "cannot create %s: %s", path, why);
	if (w != NULL) {
		w->fd = -1;
		dc_writer_close(w, 0);
	}
	close(fd);
	errno = ENOMEM;
	return NULL;
}

struct dc_writer *dc_writer_open(const char *path, int compress, const char *hostname,
				 int pid, int tid, char *err, size_t errlen)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);

	if (fd < 0) {
		int e = errno;

		if (err && errlen)
			snprintf(err, errlen, "cannot create %s: %s", path, strerror(e));
		errno = e;
		return NULL;
	}
	return dc_writer_fdopen(fd, path, compress, hostname, pid, tid, err, errlen);
}

const char *dc_writer_file(struct dc_writer *w, int pid, int tid, const char *path)
{
	return hashed_string(w, &w->fh, "FH", pid, tid, path);
}

const char *dc_writer_file_run(struct dc_writer *w, int pid, int tid, const char *path)
{
	unsigned k = (unsigned)(((uintptr_t)path * 0x9E3779B97F4A7C15ULL) >> 58);
	_Static_assert(DC_RUN_FH == 1u << (64 - 58), "the index is the mix's top 6 bits");
	if (path && w->run_fh[k].src == path)
		return w->run_fh[k].hash;
	const char *h = hashed_string(w, &w->fh, "FH", pid, tid, path);
	if (path && h != w->spare) { /* (w->spare: out of memory, valid until the next call) */
		w->run_fh[k].src = path;
		w->run_fh[k].hash = h;
	}
	return h;
}

const char *dc_writer_string(struct dc_writer *w, int pid, int tid, const char *s)
{
	return hashed_string(w, &w->sh, "SH", pid, tid, s);
}

void dc_writer_meta(struct dc_writer *w, const char *kind, int pid, int tid,
		    const char *name, const char *value)
{
	if (name == NULL)
		name = "";
	if (strcmp(kind, "thread_name") == 0 || strcmp(kind, "process_name") == 0)
		value = kind;
	else if (value == NULL)
		value = "";
	write_meta(w, kind, pid, tid, name, strlen(name), value);
}

/* Starts an event line: `{` then whatever the caller puts, then the args with hhash. Built
 * in place at the end of the text buffer when DC_LINE_BUF bytes are free there. */
static int event_start(struct dc_writer *w)
{
	struct dc_line *l = &w->ev;

	l->len = 0;
	w->in_event = 0;
	if (w->buf != NULL && w->cap - w->len >= DC_LINE_BUF) {
		l->p = w->buf + w->len;
		l->cap = w->cap - w->len;
		l->borrowed = 1;
	} else {
		l->p = l->own;
		l->cap = l->owncap;
		l->borrowed = 0;
	}
	/* the fixed fields (< 256 bytes) and two short strings, put_name_cat's fast path */
	if (line_reserve(l, 512 + 2 * (DC_QFAST + 2)) < 0)
		return -1;
	w->in_event = 1;
	return 0;
}

/* `lead` (`{"name":` or `,"name":`), then the name and the layer of an event, quoted; -1
 * when out of memory (the event is dropped). */
static int put_name_cat(struct dc_writer *w, const char *lead, const char *name,
			const char *cat)
{
	struct dc_line *l = &w->ev;

	put_str(l, lead);
	if (put_qz(l, name, 8 + DC_QFAST + 2 + 256) < 0)
		return -1;
	put_str(l, ",\"cat\":");
	if (put_qz(l, cat, 256) < 0)
		return -1;
	return 0;
}

/* `,"pid":P,"tid":T`: the last event's text again when they are the same (they mostly are
 * for a run of events of one thread). Needs 48 bytes reserved. */
static void put_pid_tid(struct dc_writer *w, int pid, int tid)
{
	struct dc_line *l = &w->ev;

	if (w->pt_len == 0 || pid != w->pt_pid || tid != w->pt_tid) {
		size_t at = l->len;

		put_str(l, ",\"pid\":");
		put_i64(l, pid);
		put_str(l, ",\"tid\":");
		put_i64(l, tid);
		w->pt_len = l->len - at;
		memcpy(w->pt, l->p + at, w->pt_len);
		w->pt_pid = pid;
		w->pt_tid = tid;
		return;
	}
	memcpy(l->p + l->len, w->pt, sizeof(w->pt));
	l->len += w->pt_len;
}

/* A complete event's ts (us since the epoch: 16 digits for 300 years): the digits of its
 * seconds are those of the last event most of the time, then only the 6 of its us are
 * formatted. Needs 20 bytes reserved. */
static void put_ts(struct dc_writer *w, uint64_t ts_us)
{
	struct dc_line *l = &w->ev;
	uint64_t hi = ts_us / 1000000;
	unsigned lo = (unsigned)(ts_us % 1000000);

	if (hi == 0) {
		put_u64(l, ts_us);
		return;
	}
	if (hi != w->ts_hi || w->ts_len == 0) {
		struct dc_line t = { .p = w->ts_text, .cap = sizeof(w->ts_text) };

		put_u64(&t, hi);
		w->ts_len = t.len;
		w->ts_hi = hi;
	}
	char *p = l->p + l->len;
	memcpy(p, w->ts_text, 16); /* the digits, then what the next stores overwrite */
	p += w->ts_len;
	p[0] = dc_digits2[(lo / 10000) * 2];
	p[1] = dc_digits2[(lo / 10000) * 2 + 1];
	p[2] = dc_digits2[(lo / 100 % 100) * 2];
	p[3] = dc_digits2[(lo / 100 % 100) * 2 + 1];
	p[4] = dc_digits2[(lo % 100) * 2];
	p[5] = dc_digits2[(lo % 100) * 2 + 1];
	l->len += w->ts_len + 6;
}

/* The rest of a complete event's fixed fields: ts, dur, ph, and the args' hhash. */
static void put_ts_dur(struct dc_writer *w, uint64_t ts_us, uint64_t dur_us)
{
	struct dc_line *l = &w->ev;

	put_str(l, ",\"ts\":");
	put_ts(w, ts_us);
	put_str(l, ",\"dur\":");
	put_u64(l, dur_us);
	put_raw(l, w->xtail, w->xtail_len);
}

void dc_writer_begin(struct dc_writer *w, uint64_t id, const char *name, const char *cat,
		     int pid, int tid, uint64_t ts_us, uint64_t dur_us)
{
	struct dc_line *l = &w->ev;

	if (event_start(w) < 0)
		return;
	put_str(l, "{\"id\":");
	put_u64(l, id);
	if (put_name_cat(w, ",\"name\":", name, cat) < 0) {
		w->in_event = 0;
		return;
	}
	put_pid_tid(w, pid, tid);
	put_ts_dur(w, ts_us, dur_us);
}

void dc_writer_begin_q(struct dc_writer *w, uint64_t id, const struct dc_qname *nc, int pid,
		       int tid, uint64_t ts_us, uint64_t dur_us)
{
	struct dc_line *l = &w->ev;

	if (event_start(w) < 0)
		return;
	if (line_reserve(l, nc->len + 256) < 0) {
		w->in_event = 0;
		return;
	}
	put_str(l, "{\"id\":");
	put_u64(l, id);
	put_raw(l, nc->s, nc->len);
	put_pid_tid(w, pid, tid);
	put_ts_dur(w, ts_us, dur_us);
}

int dc_qkey_make(struct dc_qkey *q, const char *key)
{
	size_t n = strlen(key);
	long o;

	memset(q, 0, sizeof(*q));
	if (n > DC_QKEY_MAX)
		return -1;
	q->s[0] = ',';
	q->s[1] = '"';
	o = dc_json_escape(q->s + 2, DC_QKEY_MAX - 4, key, n);
	if (o < 0)
		return -1;
	q->s[2 + o] = '"';
	q->s[3 + o] = ':';
	q->len = (unsigned char)(4 + o);
	return 0;
}

int dc_qname_make(struct dc_qname *q, const char *name, const char *cat)
{
	size_t nl = strlen(name), cl = strlen(cat), cap = 32 + 6 * (nl + cl);
	struct dc_line l = { .p = malloc(cap), .cap = cap };

	q->s = NULL;
	q->len = 0;
	if (l.p == NULL)
		return -1;
	put_str(&l, ",\"name\":");
	put_qstr(&l, name, nl);
	put_str(&l, ",\"cat\":");
	put_qstr(&l, cat, cl);
	q->s = l.p;
	q->len = l.len;
	return 0;
}

void dc_writer_begin_counter(struct dc_writer *w, const char *name, const char *cat,
			     int pid, int tid, uint64_t ts_us)
{
	struct dc_line *l = &w->ev;

	if (event_start(w) < 0)
		return;
	if (put_name_cat(w, "{\"name\":", name, cat) < 0) {
		w->in_event = 0;
		return;
	}
	put_str(l, ",\"ts\":");
	put_u64(l, ts_us);
	put_str(l, ",\"ph\":\"C\",\"pid\":");
	put_i64(l, pid);
	put_str(l, ",\"tid\":");
	put_i64(l, tid);
	put_str(l, ",\"args\":{\"hhash\":\"");
	put_raw(l, w->hhash, 16);
	put_str(l, "\"");
}

/* Starts an argument: reserves room for the key and `extra` bytes of value and writes
 * `,"key":`. Returns -1 when no event is open, or when out of memory (the event is then
 * dropped). */
static int arg_key(struct dc_writer *w, const char *key, size_t extra)
{
	struct dc_line *l = &w->ev;

	if (!w->in_event)
		return -1;
	if (line_reserve(l, DC_QFAST + 4 + extra) < 0)
		goto oom;
	l->p[l->len++] = ',';
	if (put_qz(l, key, extra + 1) < 0)
		goto oom;
	l->p[l->len++] = ':';
	return 0;
oom:
	w->in_event = 0;
	return -1;
}

void dc_writer_arg_int(struct dc_writer *w, const char *key, int64_t v)
{
	if (arg_key(w, key, 21) == 0)
		put_i64(&w->ev, v);
}

void dc_writer_arg_uint(struct dc_writer *w, const char *key, uint64_t v)
{
	if (arg_key(w, key, 20) == 0)
		put_u64(&w->ev, v);
}

void dc_writer_arg_double(struct dc_writer *w, const char *key, double v)
{
	char tmp[40];
	int n, i;

	if (arg_key(w, key, sizeof(tmp)) < 0)
		return;
	if (!isfinite(v)) {
		put_str(&w->ev, "0"); /* JSON has no nan/inf */
		return;
	}
	/* The shortest of %.15g / %.17g that reads back as v. */
	n = snprintf(tmp, sizeof(tmp), "%.15g", v);
	if (strtod(tmp, NULL) != v)
		n = snprintf(tmp, sizeof(tmp), "%.17g", v);
	if (n <= 0 || (size_t)n >= sizeof(tmp)) {
		put_str(&w->ev, "0");
		return;
	}
	for (i = 0; i < n; i++)
		if (tmp[i] == ',')
			tmp[i] = '.'; /* a locale with a decimal comma */
	put_raw(&w->ev, tmp, (size_t)n);
}

void dc_writer_arg_str(struct dc_writer *w, const char *key, const char *s)
{
	if (s == NULL) {
		if (arg_key(w, key, 4) == 0)
			put_str(&w->ev, "null");
		return;
	}
	if (arg_key(w, key, DC_QFAST + 2) == 0 && put_qz(&w->ev, s, 0) < 0)
		w->in_event = 0;
}

/* Writes k (a fixed-size copy: its bytes past k->len are overwritten by what follows) with
 * `extra` bytes reserved behind it. Returns -1 when no event is open or out of memory. */
static inline int arg_qkey(struct dc_writer *w, const struct dc_qkey *k, size_t extra)
{
	struct dc_line *l = &w->ev;

	if (!w->in_event)
		return -1;
	if (line_reserve(l, DC_QKEY_MAX + extra) < 0) {
		w->in_event = 0;
		return -1;
	}
	/* three 16-byte copies: inlined, where one of 48 may be a call */
	memcpy(l->p + l->len, k->s, 16);
	memcpy(l->p + l->len + 16, k->s + 16, 16);
	memcpy(l->p + l->len + 32, k->s + 32, 16);
	l->len += k->len;
	return 0;
}

void dc_writer_arg_int_q(struct dc_writer *w, const struct dc_qkey *k, int64_t v)
{
	if (arg_qkey(w, k, 21) == 0)
		put_i64(&w->ev, v);
}

void dc_writer_arg_str_q(struct dc_writer *w, const struct dc_qkey *k, const char *s)
{
	if (s == NULL) {
		if (arg_qkey(w, k, 4) == 0)
			put_str(&w->ev, "null");
		return;
	}
	if (arg_qkey(w, k, DC_QFAST + 2) == 0 && put_qz(&w->ev, s, 0) < 0)
		w->in_event = 0;
}

void dc_writer_arg_hash_q(struct dc_writer *w, const struct dc_qkey *k, const char *hash)
{
	struct dc_line *l = &w->ev;

	if (arg_qkey(w, k, 18) < 0)
		return;
	l->p[l->len] = '"';
	memcpy(l->p + l->len + 1, hash, 16);
	l->p[l->len + 17] = '"';
	l->len += 18;
}

void dc_writer_end(struct dc_writer *w)
{
	struct dc_line *l = &w->ev;

	if (!w->in_event)
		return;
	w->in_event = 0;
	if (line_reserve(l, 3) < 0)
		return;
	put_str(l, "}}\n");
	if (l->borrowed) { /* built in place: it is in the text buffer already */
		w->len += l->len;
		w->pending++;
		l->borrowed = 0;
	} else {
		emit(w, l->p, l->len, 1);
	}
	l->len = 0;
	w->count++;
}

/* dc_writer_flush and dc_writer_handoff: hands the text over, waits for the thread when
 * `wait`, and checks that the file still has a name. */
static int flush(struct dc_writer *w, int wait)
{
	struct stat st;

	if (flush_text(w) < 0)
		return -1;
	if (wait && dc_wthread_sync(w->t) < 0)
		return fail(w, errno);
	/* a write to a file whose last name is gone succeeds and lands nowhere: the trace
	 * was removed (its directory deleted), which is an error like any other */
	if (fstat(w->fd, &st) == 0 && st.st_nlink == 0)
		return fail(w, ENOENT);
	return 0;
}

int dc_writer_flush(struct dc_writer *w)
{
	return flush(w, 1);
}

int dc_writer_handoff(struct dc_writer *w)
{
	return flush(w, 0);
}

uint64_t dc_writer_count(const struct dc_writer *w)
{
	return w->count;
}

int dc_writer_finish(struct dc_writer *w, int complete)
{
	if (complete && !w->finished) {
		emit(w, "]", 1, 0);
		w->finished = 1;
	}
	return dc_writer_flush(w);
}

uint64_t dc_writer_on_disk(const struct dc_writer *w)
{
	return dc_wthread_on_disk(w->t);
}

int dc_writer_error(const struct dc_writer *w)
{
	return dc_wthread_error(w->t);
}

int dc_writer_close(struct dc_writer *w, int complete)
{
	int e;

	if (w == NULL)
		return 0;
	/* An event begun but never ended is dropped. */
	e = 0;
	if (w->fd >= 0) {
		if (complete && !w->finished)
			emit(w, "]", 1, 0);
		flush_text(w);
		if (dc_wthread_stop(w->t) < 0)
			e = errno; /* the first error, from the thread */
		w->t = NULL;
		if (close(w->fd) < 0 && e == 0)
			e = errno;
	} else {
		dc_wthread_stop(w->t); /* failed in dc_writer_fdopen: nothing was written */
	}
	free(w->ev.own);
	free(w->meta.own);
	strtab_free(&w->fh);
	strtab_free(&w->sh);
	free(w);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

void dc_writer_start(struct dc_writer *w, uint64_t id, int pid, uint64_t ts_us,
		     const char *cmdline, const char *exec, const char *cwd, int ppid,
		     const char *version)
{
	char cmd_h[17], exec_h[17], cwd_h[17];
	memcpy(cmd_h, dc_writer_string(w, pid, pid, cmdline), 17);
	memcpy(exec_h, dc_writer_string(w, pid, pid, exec), 17);
	memcpy(cwd_h, dc_writer_file(w, pid, pid, cwd), 17);
	dc_writer_begin(w, id, "start", "datacrumbs", pid, pid, ts_us, 0);
	dc_writer_arg_str(w, "cmd_hash", cmd_h);
	dc_writer_arg_str(w, "exec_hash", exec_h);
	dc_writer_arg_str(w, "cwd", cwd_h);
	dc_writer_arg_str(w, "version", version);
	dc_writer_arg_int(w, "ppid", ppid);
	dc_writer_end(w);
}
