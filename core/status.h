/* status.h: `datacrumbs status`: the job steps traced on this node, read from the status
 * files the site tracers keep (one JSON object a file in /run/datacrumbs). */
#ifndef DC_STATUS_H
#define DC_STATUS_H

#include <stddef.h>
#include <sys/types.h>

#define DC_STATUS_DIR "/run/datacrumbs" /* root's, 0755; a file <jobid>.<stepid>.json */

/* One status file's object, as a step tracer writes it (docs/site.md, docs/status.md). */
struct dc_status {
	char job[64], step[32], node[256], user[64];
	char trace[4096];
	long long uid, tracer_pid, consumer_pid, probes, events, lost, started;
	long long *tasks; /* the traced tasks' pids, ntasks of them (malloc'd) */
	size_t ntasks;
	int stale;        /* the tracer is gone, or is not the one that wrote the file */
};

/* Parses one status file's text (len bytes; `name` for messages) into *s with libyaml
 * (JSON is YAML 1.2 flow syntax; every key of the format must be there, strings quoted,
 * numbers plain integers; other keys are ignored). Returns 0, or -1 with one line in err
 * "NAME:LINE: message". On success free s->tasks. */
int dc_status_parse(const char *name, const char *text, size_t len, struct dc_status *s,
		    char *err, size_t errlen);

/* Whether the tracer of *s is alive and is the one that wrote the file: its real and
 * effective uid are 0 (/proc/PID/status), its executable is named datacrumbs, and it
 * started (proc(5): /proc/PID/stat starttime, /proc/stat btime) no later than
 * s->started + 1 s (a reused pid started later). Returns 1 or 0. */
int dc_status_tracer_alive(const struct dc_status *s);

/* `datacrumbs status [--dir DIR] [--json]`: argv[0] is "status". Returns the exit status:
 * 0 (also with "no traced jobs"), 1 when a status file could not be read or parsed or
 * the directory is not trusted (one line each; the other files are still listed), 2 on
 * a usage error. */
int dc_status_main(int argc, char **argv);

#endif
