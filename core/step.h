/* step.h: `datacrumbs step`, site mode's tracer of one job step on one node (started as
 * root by the SPANK plugin, core/spank.c; protocol and threat model in docs/site.md). */
#ifndef DC_STEP_H
#define DC_STEP_H

/* Exit status of a step tracer that could not trace (it said "fail REASON" first). */
#define DC_STEP_FAIL 125

/* Runs `datacrumbs step ARGS` (argv[0] is "step"): checks it runs as root, reads the
 * site policy (core/siteconf.h), runs the script's declare run as the job's user,
 * attaches what it asked for (only from trusted descriptions, only in files the user can
 * read), says "ready NPROBES" on the control socket, forks the consumer as the user, then
 * traces each "task PID RANK LOCALID" the plugin sends (answering "ok") until "end" or
 * EOF, and answers "done EVENTS LOST PATH". Returns 0; 2 for bad usage; DC_STEP_FAIL when
 * it could not trace (after "fail REASON", one line, on the socket and stderr). */
int dc_step_main(int argc, char **argv);

#endif
