/* consumer.h: the ring buffer consumer: turns BPF records into trace records (paths from
 * the fd tables, args by the probe description), runs the script callback, writes them. */
#ifndef DC_CONSUMER_H
#define DC_CONSUMER_H

#include <stdint.h>
#include "attach.h"
#include "lua_api.h"
#include "writer.h"

struct dc_consumer;

/* Creates the consumer of b's ring buffers, read by `nthreads` drain threads (-1: one per
 * 16 online CPUs, 1 to 8; 0: none, the caller's thread reads them at each drain; at most
 * one per ring buffer), core/shards.h. mono_to_real_ns is added to the kernel's
 * CLOCK_MONOTONIC timestamps to get CLOCK_REALTIME. script may be NULL. Returns NULL
 * with err on failure. */
struct dc_consumer *dc_consumer_new(struct dc_bpf *b, struct dc_writer *w,
				    struct dc_script *script, int64_t mono_to_real_ns,
				    int nthreads, char *err, size_t errlen);

/* Probes were added to b after the consumer was made (a library loaded at run time,
 * core/dlopen.c): learns their descriptions. Returns 0, or -1 when out of memory. */
int dc_consumer_probes_added(struct dc_consumer *c);

/* Called for each DC_EV_DLSTATE record (bpf/datacrumbs.h): process pid's thread tid is
 * in the dynamic loader's _dl_debug_state; held: 1 when the thread is held for it. */
typedef void (*dc_dlstate_fn)(void *arg, int pid, int tid, int held);

/* Sets where DC_EV_DLSTATE records go (fn NULL: they are ignored). */
void dc_consumer_on_dlstate(struct dc_consumer *c, dc_dlstate_fn fn, void *arg);

/* The file descriptor that is readable when records wait (dc_shards_fd). */
int dc_consumer_fd(const struct dc_consumer *c);

/* The number of drain threads reading the ring buffers. */
unsigned dc_consumer_threads(const struct dc_consumer *c);

/* dc_shards_defer of the consumer's ring buffers (core/shards.h), from the thread that
 * drains them (dc_consumer_drain's); bytes: the queues' cap in all while deferred. 0, or -1. */
int dc_consumer_defer(struct dc_consumer *c, size_t bytes);

/* dc_shards_lift: the merge back to its nice value (NULL c: nothing). */
void dc_consumer_lift(struct dc_consumer *c);

/* Consumes the waiting records, at most max of them (0: every one committed before the
 * call), so that a caller under a steady stream gets control back. Returns the number
 * consumed, or -1 when the writer failed (errno set; the trace is cut from here on). */
int dc_consumer_drain(struct dc_consumer *c, unsigned max);

/* 1 when the last dc_consumer_drain stopped at its max (records may still wait). */
int dc_consumer_yielded(const struct dc_consumer *c);

/* A process traced from the start of the run (the command, or -p PID): names it
 * (process_name record) and seeds its fd table from /proc (inherited fds, cwd). */
void dc_consumer_add_process(struct dc_consumer *c, int pid, const char *name);

/* pid is the child datacrumbs forked for the command, traced before it execs: its calls
 * until its exec (DC_EV_EXEC) are datacrumbs' own (the wait for the start byte, the fds
 * it closes: core/session.c spawn_held), not the command's, and are not written. They can
 * be seen at all when the child reaches them after the probes are attached. */
void dc_consumer_held(struct dc_consumer *c, int pid);

/* The held child has exec'd by exec_ns (CLOCK_MONOTONIC ns: datacrumbs saw its exec
 * status pipe close): a call of it entering later is the command's even if the exec
 * record was lost. */
void dc_consumer_held_execd_by(struct dc_consumer *c, uint64_t exec_ns);

/* Call events written, and dropped by the script, so far. */
uint64_t dc_consumer_written(const struct dc_consumer *c);
uint64_t dc_consumer_dropped(const struct dc_consumer *c);

/* Gives the consumer the run's profile (core/profile.h): written events feed its totals;
 * with profiling (profile mode), the records it gets are aggregated there instead of
 * being written. */
/* Site mode: pid is a task of the job step with global rank `rank` (-1: none, the batch
 * step's script), as the launcher
 * (slurmstepd's S_TASK_GLOBAL_ID) says, not its environment: named "Rank N" (process_name,
 * kept across its exec) with a PR rank record (docs/trace-format.md), known before it runs. */
void dc_consumer_add_task(struct dc_consumer *c, int pid, int rank);

/* Site mode: the task pid of global rank `rank` could not be traced (root could not hand
 * it over in time): an `untraced` record (cat datacrumbs, reason "task not handed over",
 * docs/trace-format.md) at ts_us (us since the epoch), so the trace says what it misses. */
void dc_consumer_untraced_task(struct dc_consumer *c, int pid, int rank, uint64_t ts_us);

struct dc_profile;
void dc_consumer_set_profile(struct dc_consumer *c, struct dc_profile *p, int profiling);

/* Adds n events written elsewhere (profile mode's counters) to the written count. */
void dc_consumer_count(struct dc_consumer *c, uint64_t n);

/* Writes a record a script made (dc.emit, dc.counter): a complete event with a new id of
 * the tracer's range, or with counter=1 a counter event (its integer args). */
void dc_consumer_emit(struct dc_consumer *c, struct dc_record *r, int counter);

/* An id for a record of the tracer's own (start, end): unique within any pid, as BPF
 * ids count from 1 and these from 2^40. */
uint64_t dc_consumer_own_id(struct dc_consumer *c);

struct dc_spool;

/* Trace mode at the cost of moving bytes: from now the drain threads copy the records into
 * sp's shard files (core/shards.h dc_shards_spool, at most limit bytes, 0: no bound) and
 * dc_consumer_drain hands on only loads (DC_EV_DLSTATE) and execs (an MPI rank is read
 * from the environment then); the rest is decoded by dc_consumer_replay after the run.
 * The probes known now and later, and the processes added, are journaled in sp, which
 * stays the caller's. Returns 0, or -1 with errno (EPERM: no drain threads). */
int dc_consumer_spool(struct dc_consumer *c, struct dc_spool *sp, uint64_t limit);

/* The error that ended the spooling during the run (EFBIG: its bound; ENOSPC ...), 0:
 * none. Then the spool was replayed at once and the rest decoded live (said on stderr):
 * the trace holds what the spool did. */
int dc_consumer_spool_switched(const struct dc_consumer *c);

/* Records spooled so far (0 when not spooling). */
uint64_t dc_consumer_spooled(const struct dc_consumer *c);

/* After the run: ends the spooling (*spool_err: the error that stopped it, EFBIG the
 * bound, 0: none) and decodes and writes every spooled record in `sent` order, as
 * dc_consumer_drain does live, the script's callbacks included. Records left in the ring
 * buffers by a full spool are read by the next dc_consumer_drain. Returns the records
 * replayed, or -1 with err (the spool cannot be mapped). */
long dc_consumer_replay(struct dc_consumer *c, int *spool_err, char *err, size_t errlen);

/* recover: the state a run journaled at its start (processes, their cwd and fds, the held
 * child, ranks) set from sp's journal, which replays into this consumer next
 * (dc_consumer_replay). 0, or -1 with err (a journal cut short: what came before is set). */
int dc_consumer_restore(struct dc_consumer *c, struct dc_spool *sp, char *err, size_t errlen);

void dc_consumer_free(struct dc_consumer *c);

#endif
