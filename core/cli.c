/* cli.c: parses `datacrumbs [run] ...` into struct dc_opts and prints --help texts,
 * following perf/strace conventions (options, SCRIPT, then -- CMD ARGS). */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static const char main_help[] =
"usage: datacrumbs COMMAND [ARGS]\n"
"\n"
"An eBPF I/O tracer for HPC applications, scripted in Lua. It writes DFTracer traces\n"
"(.pfw.gz) that DFTracer's analyzers and Perfetto read.\n"
"\n"
"commands:\n"
"  run [OPTIONS] SCRIPT [SCRIPT-ARGS] -- CMD [ARGS...]   trace CMD and its children\n"
"  run [OPTIONS] SCRIPT [SCRIPT-ARGS] -p PID             trace a running process\n"
"  list                                                  the scripts on the search path\n"
"                                                        with their descriptions\n"
"  list --functions FILE[:GLOB]                          the functions a glob selects in\n"
"                                                        a library or binary, with offsets\n"
"  check SCRIPT [SCRIPT-ARGS] [-- CMD]                   validate SCRIPT and resolve its\n"
"                                                        probes; attaches nothing, no root\n"
"  features [--json]                                     what this kernel and these\n"
"                                                        privileges let the tracer use\n"
"  convert --chrome [-o OUT.json] TRACE...               a trace in the Chrome trace\n"
"                                                        format (Perfetto, DevTools)\n"
"  report [-o REPORT.html] TRACE|DIR...                  an HTML job report with plots\n"
"  summary [--top N] TRACE...                            calls, bytes, time per function,\n"
"                                                        file and process\n"
"  summary [--top N] --job JOBID [DIR] | DIR             a job's traces: also per node\n"
"                                                        and per rank\n"
"  status [--dir DIR] [--json]                           the job steps traced on this\n"
"                                                        node (site mode)\n"
"  validate [--partial] TRACE...                         check a trace's format\n"
"  recover [-o TRACE] SPOOL                              the trace of a killed run, from\n"
"                                                        the spool it left (TRACE.spool)\n"
"  step ... -- SCRIPT [SCRIPT-ARGS]                      site mode: one job step on this\n"
"                                                        node, started by the SLURM plugin\n"
"                                                        (docs/site.md)\n"
"  version                                               print the version\n"
"\n"
"  datacrumbs run --help      the options of run\n"
"  datacrumbs list --help     the options of list\n"
"  datacrumbs check --help    what check resolves\n"
"  datacrumbs features --help what features checks\n"
"  datacrumbs status --help   what status lists\n"
"  datacrumbs recover --help  what recover writes\n"
"\n"
"SCRIPT is a path when it holds a '/' (./my.lua), else a name looked up in\n"
"$DATACRUMBS_SCRIPT_PATH, then in the installed scripts directory (e.g. io_posix.lua),\n"
"never in the current directory. run needs root, or CAP_BPF and CAP_PERFMON.\n";

static const char run_help[] =
"usage: datacrumbs run [OPTIONS] SCRIPT [SCRIPT-ARGS] -- CMD [ARGS...]\n"
"       datacrumbs run [OPTIONS] SCRIPT [SCRIPT-ARGS] -p PID\n"
"\n"
"Runs SCRIPT (Lua 5.4), which declares the functions to probe, attaches the probes,\n"
"then starts CMD, so that none of its calls is missed. CMD and every process and thread\n"
"it creates are traced, nothing else. Ends when CMD ends, and exits with CMD's exit\n"
"status (128+N if it died of signal N, 127 if it could not be executed). Ctrl-C or\n"
"SIGTERM reach CMD as from a shell; the trace is still finished.\n"
"\n"
"options (anywhere before --):\n"
"  -o, --output PATH        a directory (the trace is <exec>-<host>-<pid>.pfw.gz in it)\n"
"                           or a file name; default: the current directory\n"
"  -p, --pid PID            trace running process PID (all its threads and future\n"
"                           children) until it exits or Ctrl-C; once the probes are\n"
"                           attached, says \"datacrumbs: tracing PID N\" on stderr\n"
"      --no-compress        write plain .pfw instead of .pfw.gz\n"
"      --buffer-size BYTES  ring buffer size, K/M/G suffixes, a power of two from 64K\n"
"                           (default 16M); a full buffer loses events and the trace\n"
"                           counts them; shared by the ring buffers\n"
"      --shards N           ring buffers, each written by a group of CPUs (1 to 64;\n"
"                           default one per CPU up to 16, CPU groups beyond)\n"
"      --drain-threads N    threads that empty the ring buffers into queues while the\n"
"                           main thread decodes, runs the script and writes (0 to 64,\n"
"                           at most one per ring buffer; 0: the main thread reads them;\n"
"                           default 1 per 16 CPUs, 1 to 8)\n"
"      --flush-interval MS  ms between gzip members written to disk (default 1000):\n"
"                           what a killed run decoding live can lose at most (in\n"
"                           profile mode, the interval in progress too)\n"
"      --no-spool           trace mode: decode and write the events while CMD runs\n"
"                           (default: the drain threads only copy the records into\n"
"                           TRACE.spool/, decoded and written once CMD ends, then\n"
"                           removed; a killed run's is written by 'datacrumbs recover';\n"
"                           a script that requires luv always runs live)\n"
"      --spool-size BYTES   the spool's bound, K/M/G suffixes (default: half the free\n"
"                           space of the trace's file system; ~160 bytes an event);\n"
"                           past it the rest is decoded while CMD runs\n"
"      --mode MODE          trace: a complete event per call (default); profile:\n"
"                           calls aggregated in the kernel per interval, process,\n"
"                           function and file, written as counter events (count,\n"
"                           dur_sum/min/max, size_sum/min/max); a script may set it\n"
"      --interval TIME      profile mode's interval, e.g. 1s, 250ms (a number alone is\n"
"                           seconds; default 1s, from 10ms to 1 day); a call counts\n"
"                           in the interval it ends in\n"
"      --auto-profile PCT   trace mode until the ring buffer loses more than PCT %\n"
"                           of the calls (0 to 100, e.g. 1 or 0.5; checked before\n"
"                           each read of the ring buffer, at least every 20 ms, over\n"
"                           the calls since the last check), then profile\n"
"                           mode (its --interval) to the end: the trace gets an\n"
"                           `overload` record saying when and why\n"
"      --end-with-cmd       end the run when CMD exits (default: when every process\n"
"                           it started has, as strace -f: a daemonized child too)\n"
"      --force              replace an existing trace file (only a regular file of\n"
"                           yours); without it an existing name is never overwritten\n"
"      --group-readable     create the trace with mode 0640 (default 0600: it holds\n"
"                           the paths and arguments of the traced run)\n"
"  -u, --user USER          run CMD as USER, with USER's groups (as strace -u; needs\n"
"                           root); under sudo without -u, CMD runs as root\n"
"      --unsafe             let the script start programs and load native code\n"
"                           (os.execute, io.popen, package.loadlib, C modules,\n"
"                           luv's spawn and threads): the shipped scripts need none\n"
"  -q, --quiet              no summary line at the end, no status line\n"
"  -c, --summary            at the end, calls, bytes and time per function, file and\n"
"                           process on stderr (as strace -c; 'datacrumbs summary')\n"
"      --no-status          no live status line (events, lost), which is shown only\n"
"                           when stderr is a terminal\n"
"      --no-hold            never ptrace the traced processes to hold a thread that\n"
"                           loads a library a probe waits for (needed when CMD is a\n"
"                           debugger or tracer itself: gdb, strace); such libraries\n"
"                           are then attached just after their load, with a warning\n"
"  -h, --help               this text\n"
"\n"
"Other arguments after SCRIPT are the script's own (the Lua global `arg`);\n"
"'datacrumbs run SCRIPT --help' shows the script's options.\n"
"exit status: CMD's; 125 when datacrumbs itself fails; 2 on a usage error.\n";

static int usage_error(const char *fmt, const char *what)
{
	fprintf(stderr, "datacrumbs: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, " (see 'datacrumbs run --help')\n");
	return 2;
}

int dc_mode_of(const char *name)
{
	return !strcmp(name, "trace") ? DC_MODE_TRACE
	       : !strcmp(name, "profile") ? DC_MODE_PROFILE : 0;
}

/* The value of option `name` at argv[*i] (as "--opt=V" or "--opt V"); NULL if missing. */
static const char *opt_value(int argc, char **argv, int *i, const char *eq)
{
	if (eq)
		return eq + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* Long on purpose: one branch per option, in the order `run --help` lists them, each with
 * its own usage message. */
int dc_cli_parse(int argc, char **argv, struct dc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->compress = 1;
	o->ringbuf_bytes = 16u << 20;
	o->drain_threads = -1;
	o->flush_ms = 1000;
	o->auto_profile_pct = -1;
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(main_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 1;
	}
	if (!strcmp(argv[1], "version") || !strcmp(argv[1], "--version")) {
		printf("datacrumbs %s\n", DC_VERSION);
		return 1;
	}
	if (strcmp(argv[1], "run")) {
		fprintf(stderr, "datacrumbs: unknown command '%s' (see 'datacrumbs --help')\n",
			argv[1]);
		return 2;
	}

	o->script_args = calloc(argc + 1, sizeof(char *));
	if (!o->script_args)
		return usage_error("%s", "out of memory");
	int nsargs = 0;
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		if (!strcmp(a, "--")) {
			if (i + 1 >= argc)
				return usage_error("%s", "no command after --");
			o->cmd = &argv[i + 1];
			break;
		}
		const char *eq = a[0] == '-' && a[1] == '-' ? strchr(a, '=') : NULL;
		size_t n = eq ? (size_t)(eq - a) : strlen(a);
#define IS(s) (strlen(s) == n && !strncmp(a, s, n))
		if ((IS("-h") || IS("--help")) && o->script) {
			o->script_args[nsargs++] = a; /* the script's own --help */
			o->script_help = 1;
		} else if (IS("-h") || IS("--help")) {
			fputs(run_help, stdout);
			return 1;
		} else if (IS("-o") || IS("--output")) {
			if (!(o->output = opt_value(argc, argv, &i, eq)) || !*o->output ||
			    !strcmp(o->output, "--"))
				return usage_error("%s needs a path", a);
		} else if (IS("-p") || IS("--pid")) {
			const char *v = opt_value(argc, argv, &i, eq);
			char *end;
			long pid = v ? strtol(v, &end, 10) : 0;
			if (!v || *end || pid <= 0 || pid > 0x3fffffff)
				return usage_error("-p needs a process id, got '%s'", v ? v : "");
			o->pid = pid;
		} else if (IS("--no-compress") && !eq) {
			o->compress = 0;
		} else if (IS("--buffer-size")) {
			const char *v = opt_value(argc, argv, &i, eq);
			size_t sz = v ? dc_parse_size(v) : 0;
			if (sz < (64u << 10) || (sz & (sz - 1)) || sz > (1ul << 30))
				return usage_error("--buffer-size must be a power of two from 64K "
						   "to 1G, got '%s'", v ? v : "");
			o->ringbuf_bytes = sz;
		} else if (IS("--shards") || IS("--drain-threads")) {
			int shards = IS("--shards");
			const char *v = opt_value(argc, argv, &i, eq);
			char *end;
			long k = v ? strtol(v, &end, 10) : -1;
			if (!v || *end || !*v || k < shards || k > 64)
				return usage_error(shards ? "--shards needs a number from 1 to 64, "
						   "got '%s'" : "--drain-threads needs a number from "
						   "0 to 64, got '%s'", v ? v : "");
			if (shards)
				o->shards = (unsigned)k;
			else
				o->drain_threads = (int)k;
		} else if (IS("--flush-interval")) {
			const char *v = opt_value(argc, argv, &i, eq);
			char *end;
			long ms = v ? strtol(v, &end, 10) : 0;
			if (!v || *end || ms < 10 || ms > 3600000)
				return usage_error("--flush-interval needs milliseconds (10 to "
						   "3600000), got '%s'", v ? v : "");
			o->flush_ms = ms;
		} else if (IS("--mode")) {
			const char *v = opt_value(argc, argv, &i, eq);
			o->mode = v ? dc_mode_of(v) : 0;
			if (!o->mode)
				return usage_error("--mode is trace or profile, got '%s'", v ? v : "");
		} else if (IS("--interval")) {
			const char *v = opt_value(argc, argv, &i, eq);
			o->interval_ns = v ? dc_parse_duration(v) : 0;
			if (o->interval_ns < DC_INTERVAL_MIN_NS || o->interval_ns > DC_INTERVAL_MAX_NS)
				return usage_error("--interval needs a duration from 10ms to 1 day "
						   "(e.g. 1s, 250ms), got '%s'", v ? v : "");
		} else if (IS("--auto-profile")) {
			const char *v = opt_value(argc, argv, &i, eq);
			char *end = NULL;
			double pct = v ? strtod(v, &end) : -1;
			if (!v || end == v || *end || !(pct >= 0 && pct <= 100))
				return usage_error("--auto-profile needs a loss percentage from 0 to "
						   "100 (e.g. 1, 0.5), got '%s'", v ? v : "");
			o->auto_profile_pct = pct;
		} else if (IS("--force") && !eq) {
			o->force = 1;
		} else if (IS("--end-with-cmd") && !eq) {
			o->end_with_cmd = 1;
		} else if (IS("--group-readable") && !eq) {
			o->group_readable = 1;
		} else if (IS("--unsafe") && !eq) {
			o->unsafe = 1;
		} else if (IS("-u") || IS("--user")) {
			if (!(o->user = opt_value(argc, argv, &i, eq)) || !*o->user ||
			    !strcmp(o->user, "--") || strchr(o->user, '/') ||
			    (strlen(o->user) > 4 && !strcmp(o->user + strlen(o->user) - 4, ".lua")))
				return usage_error("-u needs a user name or uid before SCRIPT, got "
						   "'%s'", o->user ? o->user : "");
		} else if ((IS("-q") || IS("--quiet")) && !eq) {
			o->quiet = 1;
		} else if ((IS("-c") || IS("--summary")) && !eq) {
			o->summary = 1;
		} else if (IS("--no-spool") && !eq) {
			o->no_spool = 1;
		} else if (IS("--spool-size")) {
			const char *v = opt_value(argc, argv, &i, eq);
			o->spool_bytes = v && *v != '-' ? dc_parse_size(v) : 0;
			if (o->spool_bytes < (64u << 10))
				return usage_error("--spool-size needs a size from 64K (e.g. 512M, "
						   "20G), got '%s'", v ? v : "");
		} else if (IS("--no-status") && !eq) {
			o->no_status = 1;
		} else if (IS("--no-hold") && !eq) {
			o->no_hold = 1;
		} else if (!o->script) {
			if (!a[0])
				return usage_error("%s", "an empty SCRIPT name");
			if (a[0] == '-')
				return usage_error("unknown option '%s'", a);
			o->script = a;
		} else {
			o->script_args[nsargs++] = a; /* the script's own */
		}
#undef IS
	}
	if (!o->script)
		return usage_error("%s", "no SCRIPT given (e.g. io_posix.lua)");
	if (!o->cmd && !o->pid && !o->script_help)
		return usage_error("%s", "nothing to trace: give -- CMD [ARGS] or -p PID");
	if (o->cmd && o->pid)
		return usage_error("%s", "give either -- CMD or -p PID, not both");
	if (o->user && o->pid)
		return usage_error("%s", "-u runs CMD as a user: it does not go with -p");
	return 0;
}

void dc_cli_free(struct dc_opts *o)
{
	free(o->script_args);
	o->script_args = NULL;
}
