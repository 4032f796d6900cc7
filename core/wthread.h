/* wthread.h: the trace writer's thread: text buffers handed over in order through a bounded
 * queue, each compressed as one whole gzip member (ISA-L igzip) or written plain, off the consumer. */
#ifndef DC_WTHREAD_H
#define DC_WTHREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Text buffers of a writer thread: this many, each DC_WT_BUF bytes, so at most
 * DC_WT_NBUF - 1 are queued while one is being filled. */
#define DC_WT_NBUF 4
#define DC_WT_BUF  (1024 * 1024)
/* ISA-L igzip's compression level of the members (0..3). Chosen by measurement on traces
 * of io_posix.lua (bench/HISTORY.md "Compression level": 1 is 3-5x faster than
 * libdeflate's level 1, for 1-6 % more bytes). */
#define DC_WT_LEVEL 1

struct dc_wthread;

/* Starts the thread that writes to fd, whose trace starts at offset `good` (the file size
 * a reader may see as complete). compress: 0 writes the text plain, 1 compresses every
 * buffer as one gzip member (RFC 1952) at igzip level DC_WT_LEVEL. The caller keeps fd (and
 * closes it after dc_wthread_stop). Returns NULL with errno (ENOMEM, EAGAIN from
 * pthread_create(3)). The thread blocks every signal. */
struct dc_wthread *dc_wthread_start(int fd, off_t good, int compress);

/* An empty buffer of DC_WT_BUF bytes to fill; waits while all of them are queued (the
 * only wait of the caller: the writer is DC_WT_NBUF - 1 buffers behind). */
char *dc_wthread_buf(struct dc_wthread *t);

/* Hands over buf (from dc_wthread_buf, or a malloc(3)ed one when own_heap: the thread
 * frees it) holding len bytes of complete lines with `events` events; written after
 * everything handed over before it. After an error it is dropped. */
void dc_wthread_push(struct dc_wthread *t, char *buf, size_t len, uint64_t events,
		     int own_heap);

/* Waits until everything handed over is written (or dropped after an error). Returns 0,
 * or -1 with errno = the first error. */
int dc_wthread_sync(struct dc_wthread *t);

/* Records error e (an errno value) as if a write had failed, unless one came first: the
 * file is truncated back to its last complete member and nothing more is written. */
void dc_wthread_fail(struct dc_wthread *t, int e);

/* The first error (errno value) or 0; events in members written out completely. Both
 * may be read at any time from the thread that hands buffers over. */
int dc_wthread_error(struct dc_wthread *t);
uint64_t dc_wthread_on_disk(struct dc_wthread *t);

/* Writes what is queued, ends the thread, frees everything (not fd). Returns 0, or -1 with
 * errno = the first error. NULL is a no-op returning 0. */
int dc_wthread_stop(struct dc_wthread *t);

#endif
