/* lua_api.h: the embedded Lua 5.4 state: the `datacrumbs` module scripts require, the
 * probe requests a script makes, and the per-event callback. Documented in docs/lua-api.md. */
#ifndef DC_LUA_API_H
#define DC_LUA_API_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>
#include "probes.h"
#include "record.h"

/* A script's request to probe functions of one layer (dc.probe). */
struct dc_probe_req {
	struct dc_layer *layer;   /* owned by the script state */
	char **funcs;             /* NULL: every function of the layer */
	int nfuncs;
	char where[256];          /* "script.lua:12", for messages */
	int uprobe;               /* mechanism = "uprobe": every function by its uprobe, none
				     served by the system calls its `syscall:` names */
};

struct dc_script;

/* What the script sees of the run in dc.options. */
struct dc_run_info {
	const char *output;       /* -o as given, or "." */
	const char *mode;         /* "trace" or "profile" from the command line, NULL: not given */
	uint64_t interval_ns;     /* --interval, 0: not given */
	int pid;                  /* -p PID, 0 when datacrumbs starts the command */
	char **cmd;               /* NULL-terminated command, or NULL with -p */
	char **script_args;       /* arguments after the script name, NULL-terminated */
	int unsafe;               /* --unsafe: keep os.execute, io.popen, C modules, ... */
};

/* Creates the Lua state with the standard libraries, `datacrumbs` and `luv` (on `loop`)
 * preloaded, package.path our lua/ directories, then LUA_PATH's entries that are not
 * relative ("./?.lua" would read code from the current directory). Unless info->unsafe,
 * the script cannot start programs or load native code: os.execute, io.popen,
 * package.loadlib, the C module searchers, luv's spawn/new_thread/new_work raise an error
 * naming --unsafe; load/loadfile/dofile/require take text chunks only (bytecode can break
 * out of the VM); debug keeps only traceback. As root, every Lua file require loads must
 * pass dc_trust_file. docs/lua-api.md "What a script can do". NULL on out of memory. */
struct dc_script *dc_script_new(uv_loop_t *loop, const struct dc_run_info *info);

/* Finds a script: `name` holding a '/' is a path; a bare name is looked up in each
 * directory of $DATACRUMBS_SCRIPT_PATH (':'-separated), then the installed scripts
 * directory, then the source tree's scripts/, never in the current directory (as PATH
 * without "."). As root each directory consulted must pass dc_trust_search_dir and the
 * script dc_trust_file. Returns 0 with the path in out, -1 when not found or refused (err
 * says where it looked, or which file or directory was refused and why). */
int dc_script_find(const char *name, char *out, size_t outlen, char *err, size_t errlen);

/* Loads and runs the script file. Returns 0; 1 when the script ended the run with
 * dc.done (its exit status: dc_script_done); or -1 with "file:line: message" in err
 * (syntax error, run-time error, a bad dc.probe call). */
int dc_script_run(struct dc_script *s, const char *path, char *err, size_t errlen);

/* The exit status the script gave dc.done. */
int dc_script_done(const struct dc_script *s);

/* The probe requests made while the script ran; from here on dc.probe raises an error
 * (the probes are attached once). */
const struct dc_probe_req *dc_script_reqs(struct dc_script *s, int *n);

/* Walks the functions probe request r attaches: the asked ones (all of the layer's when it
 * names none), then, hidden, the layer's other functions that change fds or the cwd, so
 * paths stay right whatever subset a script asks for (the DIR-stream ones, opendir and
 * closedir, only when an asked function takes a DIR *). Start with { .r = r }. */
struct dc_req_iter {
	const struct dc_probe_req *r;
	int pass, k;
};

/* The next function of the walk (*hidden: attach it only to keep the fd tables), or NULL
 * at the end. */
const struct dc_func *dc_req_next(struct dc_req_iter *it, int *hidden);

/* 1 when the script required luv (`require "luv"`): it acts while the command runs
 * (timers, its own I/O), so its events are decoded live, never spooled. s may be NULL. */
int dc_script_live(const struct dc_script *s);

/* 1 when the script registered an event callback (dc.on_event). */
int dc_script_wants_events(const struct dc_script *s);

/* 1 when path (may be NULL: 0) starts with a prefix the script gave dc.drop_paths. */
int dc_script_drops_path(const struct dc_script *s, const char *path);
/* The same for a path that lives, unchanged, for the run (fdtable.h dc_files_intern): the
 * answer is remembered by the path's address (64 of them, direct-mapped), and forgotten
 * when dc.drop_paths adds prefixes. */
int dc_script_drops_path_run(struct dc_script *s, const char *path);

/* Offers r to the event callback: the callback may drop it (returns false) or change
 * name, cat, path, ts, dur and args (strings are copied into r's arena). Returns 1 to
 * keep, 0 to drop. A Lua error keeps the event unchanged, is counted and reported on
 * stderr the first time with file:line. r must stay valid until it returns: the
 * callbacks' ev reads its fields as they are asked for (docs/lua-api.md). May be called
 * from inside another event's callbacks (a callback that runs the loop). */
int dc_script_event(struct dc_script *s, struct dc_record *r);

/* Where dc.emit / dc.counter records go once tracing has begun: fn(ctx, r, counter);
 * root_pid is their default pid. fn NULL: no more (the writer is gone). */
typedef void (*dc_emit_fn)(void *ctx, struct dc_record *r, int counter);
void dc_script_set_emitter(struct dc_script *s, dc_emit_fn fn, void *ctx, int root_pid);

/* What dc.stats() reads: fn(ctx, out) fills out[] as enum dc_script_stat. */
enum dc_script_stat {
	DC_SS_EVENTS, DC_SS_LOST, DC_SS_DROPPED, DC_SS_TOO_DEEP, DC_SS_UNPAIRED, DC_SS_NR
};
typedef void (*dc_stats_fn)(void *ctx, uint64_t out[DC_SS_NR]);
void dc_script_set_stats(struct dc_script *s, dc_stats_fn fn, void *ctx);

/* What dc.aggregates() and dc.totals() read: calls visit(row, arg) per aggregate
 * (core/profile.h dc_profile_read; totals != 0: the run's totals). */
struct dc_prow;
typedef void (*dc_read_fn)(void *ctx, int totals,
			   void (*visit)(const struct dc_prow *row, void *arg), void *arg);
void dc_script_set_reader(struct dc_script *s, dc_read_fn fn, void *ctx);

/* The mode the script asked for with dc.mode (DC_MODE_* of cli.h, 0: none) and its
 * interval (ns, 0: none). */
int dc_script_mode(const struct dc_script *s, uint64_t *interval_ns);

/* A traced process started (fork), changed image (exec), ended (exit) or became an MPI
 * rank (rank; status is then the rank): calls the script's dc.on_process function with
 * { event, pid, ppid, name, status | rank }. */
void dc_script_process(struct dc_script *s, const char *event, int pid, int ppid,
		       const char *name, int status);

/* Calls the script's dc.on_end function, if any (errors reported and counted). */
void dc_script_end(struct dc_script *s);

/* Number of callback errors so far. */
unsigned long dc_script_errors(const struct dc_script *s);

/* Closes the Lua state and frees the requests. */
void dc_script_free(struct dc_script *s);

#endif
