/* session.h: one `datacrumbs run`: script, probes, the traced command's life (start
 * before its first instruction, signals, exit status), the event loop, the trace's end. */
#ifndef DC_SESSION_H
#define DC_SESSION_H

#include <stdint.h>
#include "cli.h"

struct dc_bpf;

/* What site mode's root side (core/step.c) hands the consumer it forks, already running
 * as the job's user: the BPF side root loaded and attached (inherited across fork; only
 * its map fds are still open: the ring buffer, aggs, stats and a read-only traced map),
 * the control socket to root, and the trusted facts of the job step. */
struct dc_consume {
	struct dc_bpf *bpf;
	int ctl;                  /* root -> us: "task PID RANK\n" (answered "ok\n"), "end\n";
				     us -> root at the end: "done EVENTS LOST PATH\n" */
	const char *trace_path;   /* DIR/<jobid>.<stepid>-<node>.pfw.gz, created here */
	const char *job, *step, *node, *user; /* from slurmstepd, via the plugin */
	const char *exe, *cwd;    /* the step's program and working directory */
	int own_pid;              /* root's pid: the pid of the tracer's own records */
	uint64_t interval_ns;     /* profile mode's interval as root opened the BPF side, 0 */
	uint64_t t0;              /* CLOCK_MONOTONIC ns the profile intervals count from */
};

/* Site mode's consumer: runs the script (its callbacks; its probe requests were root's
 * to attach) as the current, unprivileged user, creates the trace file, and consumes the
 * ring buffer until root says "end" (or its socket closes, or SIGTERM), then writes the
 * end record and answers "done". Returns 0, or DC_EXIT_FAIL (the reason on stderr). */
int dc_session_consume(const struct dc_opts *o, const struct dc_consume *c);

/* Exit status of datacrumbs itself failing before or while tracing (as timeout(1)). */
#define DC_EXIT_FAIL 125

/* Runs `datacrumbs run` with the parsed options. Returns the exit status: CMD's (128+N for signal N, 127 if it could not be
 * executed), 0 for a -p run, DC_EXIT_FAIL when datacrumbs itself failed. */
int dc_session_run(const struct dc_opts *o);

#endif
