/* shards.h: the readers of the sharded ring buffers (bpf/common.bpf.h rings): drain
 * threads empty them into queues; dc_shards_drain merges the queues in `sent` order. */
#ifndef DC_SHARDS_H
#define DC_SHARDS_H

#include <stddef.h>
#include <stdint.h>

struct dc_shards;

/* Called once per record, in merge order: data is the record (a struct dc_event, maybe
 * with its path, bpf/datacrumbs.h), size its bytes; valid during the call only. */
typedef void (*dc_shard_fn)(void *ctx, const void *data, size_t size);

/* Maps the n ring buffers fds[] (each `size` bytes, a power of two) and starts
 * `nthreads` drain threads (at most n; 0: none, dc_shards_drain reads the ring buffers
 * itself), thread t reading ring buffers t, t + nthreads, ...: woken by BPF once an eighth
 * of one waits, else every 10 ms (up to 160 ms while they stay empty); each queues up to
 * max(size, 1 MiB) bytes per ring buffer, then leaves records in it (a lagging consumer
 * makes the ring buffer fill, and BPF counts what it loses). Returns NULL with a one-line reason in err (mmap(2),
 * pthread_create(3)). */
struct dc_shards *dc_shards_new(const int *fds, unsigned n, size_t size, unsigned nthreads,
				char *err, size_t errlen);

/* The file descriptor to poll for readability: the drain threads' doorbell (an eventfd
 * they ring when a queue holds an eighth of a ring buffer), or without drain threads an
 * epoll fd of the ring buffers. */
int dc_shards_fd(const struct dc_shards *sh);

/* The number of drain threads running. */
unsigned dc_shards_threads(const struct dc_shards *sh);

/* Reads every ring buffer and hands fn every record committed before the call, merged
 * across the shards by `sent` (each thread's records in the order it submitted them,
 * whichever CPUs it ran on), at most max of them (0: no limit); later ones, and those
 * past max, wait for the next call (they stay queued, first in the next merge, and
 * dc_shards_fd stays readable). Returns the number handed on. */
long dc_shards_drain(struct dc_shards *sh, long max, dc_shard_fn fn, void *ctx);

/* Defers the merge while the traced program runs: the calling thread (the merge's, which
 * formats the events) goes to nice 19, so on cores the program keeps busy it takes their
 * idle time, while the drain threads (normal priority) keep copying records out of the
 * ring buffers into queues of up to `bytes` in all (bytes / shards each, or the ring
 * buffer's size when more: memory instead of loss). It is lifted back to its nice value
 * before (dc_shards_lift), for the rest of the run, by a drain thread whose queue passes
 * half of its share or whose ring buffer fills, or by itself when the queues it took hold
 * half of the budget. Returns 0, or -1 with errno: EPERM without drain threads or as
 * non-root (lifting needs CAP_SYS_NICE: setpriority(2)), or setpriority's. */
int dc_shards_defer(struct dc_shards *sh, size_t bytes);

/* Lifts a deferred merge back to its nice value before (once; any thread; nothing when
 * not deferred). */
void dc_shards_lift(struct dc_shards *sh);

/* Spools the records while the traced program runs: from now each drain thread appends
 * its shards' records to fds[k] (shard k's file) exactly as the ring buffer holds them
 * (8-byte headers: kernel/bpf/ringbuf.c; records padded to 8): one copy, into the page
 * cache, nothing decoded. Records of the kinds in live_kinds (bit k: enum dc_kind k,
 * bpf/datacrumbs.h) are also queued for dc_shards_drain, which hands on nothing else.
 * limit: the files' bytes in all (0: no bound). Past it, or after a write error, no
 * shard spools any more: from then they queue every record as without a spool
 * (dc_shards_spool_failed says so; the caller replays the spool, dc_shards_spool_replayed,
 * then takes the queues). Returns 0, or -1 with errno EPERM without drain threads. The fds
 * stay the caller's. */
int dc_shards_spool(struct dc_shards *sh, const int *fds, uint64_t limit, unsigned live_kinds);

/* Ends the spooling: stops and joins the drain threads, spools what the ring buffers hold
 * (no more comes once the traced processes are gone), and from then dc_shards_drain
 * reads the ring buffers itself; the live kinds' copies are not handed on again. Returns
 * 0, or the first error that stopped a shard's spooling (EFBIG: the bound; ENOSPC, EIO:
 * write(2)): what came after it is queued, not spooled. */
int dc_shards_spool_end(struct dc_shards *sh);

/* The error that ended the spooling during the run (EFBIG: the bound; ENOSPC, EIO:
 * write(2)), 0: none. */
int dc_shards_spool_failed(struct dc_shards *sh);

/* After dc_shards_spool_failed said so: waits until no drain thread is still appending
 * to a spool file (one was inside its write when the flag was set), so that the files
 * hold all they will. */
void dc_shards_spool_settle(struct dc_shards *sh);

/* The spool was replayed: the live kinds' copies still queued are not handed on again. */
void dc_shards_spool_replayed(struct dc_shards *sh);

/* The records spooled so far (any thread). */
uint64_t dc_shards_spooled(struct dc_shards *sh);

/* Stops and joins the drain threads, unmaps the ring buffers (their fds stay open:
 * core/attach.c owns them) and frees sh; NULL is fine. */
void dc_shards_free(struct dc_shards *sh);

#endif
