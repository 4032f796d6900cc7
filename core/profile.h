/* profile.h: profile mode's aggregates (per interval, process, function and file) read
 * from the BPF `aggs` map and from the records that still travel, written as counter
 * events; and the run's totals per process, function and file, in either mode. */
#ifndef DC_PROFILE_H
#define DC_PROFILE_H

#include <stdint.h>

struct dc_bpf;
struct dc_writer;
struct dc_script;

/* One aggregate, as dc_profile_read hands it out (times in ns, bytes in bytes). */
struct dc_prow {
	int pid;
	const char *name, *cat;  /* function and layer */
	const char *path;        /* the file, NULL: none known */
	uint64_t interval_ts_us; /* start of its interval, us since the epoch; 0 for totals */
	uint64_t count, dur_sum, dur_min, dur_max;
	uint64_t bytes_n, bytes_sum, bytes_min, bytes_max; /* bytes_n: calls with a count */
	uint64_t moved_n, moved_sum; /* bytes moved (from ret), moved_n: calls with that figure */
};

struct dc_profile;

/* A profile of interval_ns (0: trace mode, only totals are kept) counted from t0
 * (CLOCK_MONOTONIC ns); mono_to_real_ns shifts interval starts to the epoch. The BPF
 * object gives the aggs map and the probe names; counters go to w, each offered first
 * to the script's callbacks (script may be NULL). NULL when out of memory. */
struct dc_profile *dc_profile_new(struct dc_bpf *b, struct dc_writer *w,
				  struct dc_script *script, uint64_t interval_ns, uint64_t t0,
				  int64_t mono_to_real_ns);

/* A call that arrived as a record (profile mode: it names a path or changes the fd
 * tables): aggregated here as BPF does the others. end_ns: its return time
 * (CLOCK_MONOTONIC); bytes: asked, moved: moved (bpf/datacrumbs.h enum dc_pmoved);
 * < 0: none. */
void dc_profile_add(struct dc_profile *p, int pid, unsigned probe, uint64_t end_ns,
		    uint64_t dur_ns, int64_t bytes, int64_t moved, const char *path);

/* A handle (MPI_File, DIR *) was opened on path by call open_id of pid: BPF keys the
 * aggregates of calls on that handle by open_id (bpf/common.bpf.h `handles`). */
void dc_profile_handle(struct dc_profile *p, int pid, uint64_t open_id, const char *path);

/* A written complete event (trace mode), for the totals: as dc_profile_add; run: 1 when
 * path is interned (fdtable.h dc_files_intern: its address names it for the run). */
void dc_profile_total(struct dc_profile *p, int pid, unsigned probe, uint64_t dur_ns,
		      int64_t bytes, int64_t moved, const char *path, int run);

/* 1 while p is inside dc_profile_flush (its counters go through the script's callbacks,
 * which must not drain records into it, nor flush again: a callback's dc.aggregates() or
 * uv.run), else 0; 0 for NULL. */
int dc_profile_flushing(const struct dc_profile *p);

/* Reads the BPF aggregates of the intervals that have ended by now_ns (all when final),
 * deletes them from the map, and writes one counter event per (interval, process,
 * function, file) in interval order. Returns the counters written. */
uint64_t dc_profile_flush(struct dc_profile *p, uint64_t now_ns, int final);

/* Calls fn for each aggregate not yet written (the BPF map read now, without deleting,
 * plus the records' pending ones), or with totals != 0 for each run total so far. */
void dc_profile_read(struct dc_profile *p, int totals,
		     void (*fn)(const struct dc_prow *row, void *arg), void *arg);

/* Counter events the script's callbacks dropped so far (0 for NULL). */
uint64_t dc_profile_dropped(const struct dc_profile *p);

void dc_profile_free(struct dc_profile *p);

#endif
