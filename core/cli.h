/* cli.h: the command line: commands, options, help texts. Parsing only; running a
 * command is session.c's job. */
#ifndef DC_CLI_H
#define DC_CLI_H

#include <stddef.h>

struct dc_opts {
	const char *script;       /* SCRIPT as given */
	char **script_args;       /* args after SCRIPT that are not ours, NULL-terminated */
	char **cmd;               /* CMD ARGS after "--", NULL-terminated; NULL with -p */
	int pid;                  /* -p PID, 0: start CMD */
	const char *output;       /* -o PATH, NULL: current directory */
	int compress;             /* 1: .pfw.gz (default), 0: --no-compress */
	size_t ringbuf_bytes;     /* --buffer-size, bytes (power of two) */
	unsigned shards;          /* --shards, ring buffers (CPU groups); 0: one per CPU up
				     to 16 */
	int drain_threads;        /* --drain-threads, -1: by the CPU count */
	unsigned flush_ms;        /* --flush-interval, ms between gzip members */
	int quiet;                /* -q: no summary line */
	int mode;                 /* --mode: DC_MODE_*, 0: as the script says (trace) */
	unsigned long long interval_ns; /* --interval, ns; 0: as the script says (1 s) */
	int script_help;          /* SCRIPT --help: the script shows its options, nothing runs */
	int force;                /* --force: replace an existing trace file of the user's */
	int end_with_cmd;         /* --end-with-cmd: the run ends when CMD exits, not when the
				     last traced process does */
	int group_readable;       /* --group-readable: trace mode 0640 (default 0600) */
	const char *user;         /* -u USER: run CMD as USER (root only), NULL: as we are */
	int unsafe;               /* --unsafe: the script may start programs, load C code */
	int summary;              /* -c, --summary: pfw_summary's tables at the end, on stderr */
	int no_status;            /* --no-status: no live status line on a terminal */
	int no_spool;             /* --no-spool: trace mode decodes while CMD runs */
	unsigned long long spool_bytes; /* --spool-size, bytes; 0: no bound */
	int no_hold;              /* --no-hold: never ptrace-seize the traced processes to hold
				     a thread loading a library (core/hold.c); such libraries are
				     then attached late, with a warning */
	double auto_profile_pct;  /* --auto-profile PCT: trace mode switches to profile mode
				     once this % of calls is lost (0..100); -1: never */
};

enum { DC_MODE_TRACE = 1, DC_MODE_PROFILE = 2 };
/* The mode --mode or dc.mode names: "trace" or "profile". Returns DC_MODE_*, 0 for any
 * other text. */
int dc_mode_of(const char *name);
#define DC_INTERVAL_MIN_NS 10000000ULL        /* profile intervals: 10 ms ... */
#define DC_INTERVAL_MAX_NS 86400000000000ULL  /* ... to a day */

/* Parses `datacrumbs ARGS`. Returns 0 when o is ready for `run`; 1 when help or the
 * version was printed (exit 0); 2 after printing a one-line usage error (exit 2). */
int dc_cli_parse(int argc, char **argv, struct dc_opts *o);

/* Frees what dc_cli_parse allocated. */
void dc_cli_free(struct dc_opts *o);

#endif
