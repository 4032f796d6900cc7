/* spool.h: a trace-mode run's spool: a directory beside the trace with each ring buffer's
 * records as the drain threads copied them, and a journal of what decoding them needs. */
#ifndef DC_SPOOL_H
#define DC_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct dc_spool;
struct dc_probe;

/* The journal's entries (file `journal`): each a struct dc_jhead, then `len` bytes. */
enum dc_jtag {
	DC_J_HEAD = 1,  /* struct dc_jstart, then host, trace path, name, cmd, exec, cwd: each
			   NUL-terminated */
	DC_J_PROBE,     /* u32 index, struct dc_probe, dc_layer, dc_func as this build lays
			   them out (their pointers meaningless), then the function's name */
	DC_J_PROC,      /* i32 pid, then its name: a process traced from the start */
	DC_J_CWD,       /* i32 pid, then the cwd it had then */
	DC_J_FD,        /* i32 pid, i32 fd, then the file the fd held then */
	DC_J_HELD,      /* i32 pid: datacrumbs' held child (core/consumer.h dc_consumer_held) */
	DC_J_RANK,      /* i32 pid, i32 rank: its MPI rank, read from its environment at exec */
	DC_J_SCRIPT,    /* u32 unsafe, u32 nargs, u32 ncmd, then the script's path, -o as given,
			   its nargs arguments and CMD's ncmd words, each NUL-terminated */
};

struct dc_jhead {
	uint32_t tag, len;
};

/* The run's facts, first in the journal. The sizes tie a spool to the build that wrote it. */
struct dc_jstart {
	char magic[8];          /* "DCSPOOL1" */
	uint32_t event_size, probe_size, layer_size, func_size; /* sizeof each, this build */
	uint32_t nshards;
	int32_t pid, ppid;      /* the traced root process, its parent */
	int32_t compress;       /* the trace: 1 .pfw.gz, 0 .pfw */
	int64_t mono_to_real_ns;
	uint64_t start_us;      /* the start record's time */
	char version[32];       /* DC_VERSION */
};

/* Creates the spool of trace `trace` (a .pfw or .pfw.gz path): the directory
 * TRACE.spool (mkdir mode 0700, so never one planted before), its files shard-K for
 * K < nshards and `journal` (O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), owned by the tracer
 * (under sudo root: no other user can write records it then reads). Returns NULL with one
 * line in err (errno: mkdir(2)'s, EEXIST for a name already there). */
struct dc_spool *dc_spool_create(const char *trace, unsigned nshards, char *err,
				 size_t errlen);

/* Opens the spool directory `dir` for reading (datacrumbs recover): never through a
 * symbolic link, only when the caller's effective user owns it (a spool is read only by
 * the user who wrote it: root reads root's), its files only when they are regular ones,
 * and only when this build wrote it (struct dc_jstart's sizes). Returns NULL with one line
 * in err. */
struct dc_spool *dc_spool_open(const char *dir, char *err, size_t errlen);

/* The shard files' fds, one per shard (for core/shards.h dc_shards_spool). */
const int *dc_spool_fds(const struct dc_spool *sp);

/* The directory's path. */
const char *dc_spool_dir(const struct dc_spool *sp);

/* Appends one journal entry: tag, then the n parts (ptr[i], len[i] bytes) as one payload.
 * Returns 0, or -1 with errno (write(2)). */
int dc_spool_note(struct dc_spool *sp, enum dc_jtag tag, int n, const void *const *ptr,
		  const size_t *len);

/* Appends the DC_J_PROBE entry of probe `index`. 0, or -1 with errno. */
int dc_spool_note_probe(struct dc_spool *sp, unsigned index, const struct dc_probe *pr);

/* Calls fn for each journal entry in order (payload valid during the call). Returns 0,
 * or -1 with err when the journal is cut short or malformed (a killed run's last entry
 * may be: the entries before it are still given). */
int dc_spool_journal(struct dc_spool *sp, void (*fn)(void *arg, uint32_t tag, const void *p,
						     uint32_t len), void *arg,
		     char *err, size_t errlen);

/* A DC_J_PROBE payload made a probe again (recover): a struct dc_probe whose layer and
 * function are copies owned by it (dc_spool_probe_free), their strings terminated. NULL
 * when malformed (a kind, effect or count out of range). */
struct dc_probe *dc_spool_probe(const void *p, uint32_t len, unsigned *index);
void dc_spool_probe_free(struct dc_probe *pr);

/* Hands fn every record of the shard files, merged across them by `sent` (as
 * core/shards.c's merge: each shard's records in ring order, the smallest head first),
 * read through a buffer of 1 MiB a shard. A record cut short at a file's end (a killed
 * run) ends that file; a damaged one ends it with a warning on stderr. consume: the read
 * parts' disk blocks are freed as it goes (fallocate(2) punching holes: a full disk gets
 * room for the trace; the spool cannot be replayed again). Returns the records handed
 * on, or -1 with err (out of memory). */
long dc_spool_replay(struct dc_spool *sp, void (*fn)(void *ctx, const void *data, size_t size),
		     void *ctx, int consume, char *err, size_t errlen);

/* Half the free room of the spool's file system (statvfs(3) f_bavail): its bound when the
 * user gives none, so that a spool leaves room for the trace. 0 when unknown. */
uint64_t dc_spool_room(const struct dc_spool *sp);

/* Removes the spool's files and its directory (a trace written whole), and frees sp.
 * Returns 0, or -1 with errno (unlinkat(2), rmdir). */
int dc_spool_remove(struct dc_spool *sp);

/* Why a spool stopped taking records, for a message: err EFBIG is its bound, else
 * strerror(err). A static string. */
const char *dc_spool_stop_reason(int err);

/* Closes the files and frees sp, leaving them on disk (NULL is fine). */
void dc_spool_free(struct dc_spool *sp);

#endif
