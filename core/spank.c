/* spank.c: the SLURM SPANK plugin (datacrumbs_spank.so): per job step per node, starts one
 * `datacrumbs step` tracer, hands it each task before the task's exec, ends it at the step's end.
 *
 * It runs inside SLURM's own processes (srun, sbatch, slurmstepd), so it owns no policy of what
 * is traced (the tracer reads the site's) and it never fails a job: every callback returns 0,
 * except the option's check at submit time. The protocol with the tracer (text lines on a
 * socketpair: ready/fail, task/ok, end/done) is described in docs/site.md. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

SPANK_PLUGIN(datacrumbs, 1);

#ifndef DC_SPANK_TRACER
#define DC_SPANK_TRACER "/usr/bin/datacrumbs" /* CMakeLists.txt sets the installed path */
#endif

#define OPT_MAX      1024  /* bytes of the --datacrumbs value (script and its arguments) */
#define OPT_WORDS    64    /* words of it */
#define ENV_MAX      65536 /* bytes of one job environment variable read (PATH, ...) */
#define REASON_MAX   400   /* bytes of the one-line reason shown to the user */
#define KILL_WAIT_MS 5000  /* ms the tracer may take to exit after `done` (or no `done`) */

/* What the step's tasks learn after they were forked: the failure, said once on the job's
 * stderr by local task 0 in slurm_spank_task_init. A MAP_SHARED page made before the tasks
 * are forked (mmap(2)), since the reason may be found after (slurm_spank_task_post_fork runs
 * in slurmstepd while the forked tasks wait: their memory is a copy made at fork). */
struct status {
	int failed;
	char reason[REASON_MAX];
};

static struct status status_fallback; /* before the page exists, or if mmap failed */
static struct status *st = &status_fallback;

static struct {
	/* the plugstack.conf line's arguments (slurmstepd) */
	char tracer[PATH_MAX];       /* the datacrumbs binary */
	char site[PATH_MAX];         /* --site FILE for the tracer; "" for its default */
	int timeout;                 /* seconds to wait for `ready` and each `ok` */
	int end_timeout;             /* seconds to wait for `done` */
	char conf_error[REASON_MAX]; /* a bad plugstack.conf argument, said when tracing is asked */
	/* the user's request */
	char opt[OPT_MAX]; /* --datacrumbs's value; "" when not given */
	/* the step (slurmstepd) */
	uint32_t job;
	char step[16]; /* the step id, "batch" or "interactive" */
	char node[256];
	/* the tracer */
	pid_t pid;      /* its pid, or 0 */
	int pidfd;      /* pidfd_open(2) of it (readable once it exited), or -1 */
	int sock;       /* our end of the socketpair, or -1 */
	int log;        /* memfd(2) holding its stdout and stderr, or -1 */
	off_t log_off;  /* bytes of log already relayed to slurmd's log */
	char buf[1024]; /* bytes read from sock not yet taken as a line */
	size_t buf_n;
	int ready; /* `ready` received and the tracer still trusted with tasks */
} g = { .tracer = DC_SPANK_TRACER,
	.timeout = 60,
	.end_timeout = 30,
	.pidfd = -1,
	.sock = -1,
	.log = -1 };

/* --- the option -------------------------------------------------------------------------- */

/* Splits s (the option's value or DATACRUMBS_SCRIPT) on blanks into at most OPT_WORDS words,
 * no shell, no quoting: words[] point into copy (OPT_MAX bytes). Returns the number of words
 * (>= 1), or -1 with why (a static text) when s is empty, too long, has too many words or a
 * control character. */
static int split_words(const char *s, char *copy, char **words, const char **why)
{
	size_t len = strlen(s);
	int n = 0;

	if (len >= OPT_MAX) {
		*why = "longer than 1023 bytes";
		return -1;
	}
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 && s[i] != '\t') {
			*why = "a control character in it";
			return -1;
		}
	memcpy(copy, s, len + 1);
	for (char *p = copy; *p;) {
		while (*p == ' ' || *p == '\t')
			*p++ = 0;
		if (!*p)
			break;
		if (n == OPT_WORDS) {
			*why = "more than 64 words";
			return -1;
		}
		words[n++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	if (n == 0) {
		*why = "no script named";
		return -1;
	}
	return n;
}

/* The option's callback (SPANK calls it where the option was given: srun/sbatch/salloc, and
 * again in slurmstepd with remote = 1). A value that cannot be split is refused at submit
 * time (return -1: the user's command fails with the message); remotely it is only noted. */
static int opt_datacrumbs(int val, const char *optarg, int remote)
{
	char copy[OPT_MAX], *words[OPT_WORDS];
	const char *why;

	(void)val;
	if (!optarg || split_words(optarg, copy, words, &why) < 0) {
		if (!optarg)
			why = "no script named";
		if (!remote) {
			slurm_error("datacrumbs: --datacrumbs=%s: %s (want SCRIPT[ ARGS...])",
				    optarg ? optarg : "", why);
			return -1;
		}
		snprintf(st->reason, sizeof(st->reason), "--datacrumbs: %s", why);
		st->failed = 1;
		return 0;
	}
	snprintf(g.opt, sizeof(g.opt), "%s", optarg);
	return 0;
}

static struct spank_option option = {
	"datacrumbs",
	"SCRIPT[ ARGS...]",
	"trace the job step's I/O on every node with the datacrumbs Lua script SCRIPT "
	"(a name from the site's scripts, or a path where the site allows), given ARGS "
	"(split on blanks); the trace is <jobid>.<stepid>-<node>.pfw.gz in DATACRUMBS_OUTPUT "
	"or the working directory",
	1,
	0,
	opt_datacrumbs
};

/* --- small tools --------------------------------------------------------------------------- */

/* Notes the step's failure (the first one counts): slurmd's log gets it now, the job's stderr
 * from local task 0 (slurm_spank_task_init). fmt: printf(3). */
static void fail_step(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail_step(const char *fmt, ...)
{
	char r[REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r, sizeof(r), fmt, ap);
	va_end(ap);
	for (char *p = r; *p; p++) /* one line */
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	slurm_error("datacrumbs: not tracing job %u step %s on %s: %s", g.job, g.step, g.node,
		    r);
	if (!st->failed) {
		snprintf(st->reason, sizeof(st->reason), "%s", r);
		st->failed = 1;
	}
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000;
}

/* Reads one line from the tracer's socket into line (len bytes, the "\n" dropped), waiting
 * at most timeout_ms. Returns 1, 0 on timeout, -1 on EOF or error (errno; 0 for EOF). */
static int read_line(char *line, size_t len, long timeout_ms)
{
	long end = now_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(g.buf, '\n', g.buf_n);

		if (nl) {
			size_t n = (size_t)(nl - g.buf);

			snprintf(line, len, "%.*s", (int)n, g.buf);
			memmove(g.buf, nl + 1, g.buf_n - n - 1);
			g.buf_n -= n + 1;
			return 1;
		}
		if (g.buf_n == sizeof(g.buf)) { /* a line longer than the buffer: cut */
			snprintf(line, len, "%.*s", (int)g.buf_n, g.buf);
			g.buf_n = 0;
			return 1;
		}
		long left = end - now_ms();
		if (left <= 0)
			return 0;
		struct pollfd p = { .fd = g.sock, .events = POLLIN };
		int r = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return 0;
		ssize_t k = read(g.sock, g.buf + g.buf_n, sizeof(g.buf) - g.buf_n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = 0;
			return -1;
		}
		g.buf_n += (size_t)k;
	}
}

/* Sends one protocol line (fmt: printf(3), without the "\n") to the tracer. MSG_NOSIGNAL:
 * a tracer gone is an error return, not SIGPIPE in slurmstepd (send(2)). Returns 0 or -1. */
static int send_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int send_line(const char *fmt, ...)
{
	char l[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(l, sizeof(l) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(l) - 1)
		return -1;
	l[n++] = '\n';
	for (int off = 0; off < n;) {
		ssize_t k = send(g.sock, l + off, (size_t)(n - off), MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -1;
		off += (int)k;
	}
	return 0;
}

/* Copies the tracer's new stdout/stderr lines (from the memfd, past log_off) to slurmd's log,
 * one slurm_info per line. */
static void relay_log(void)
{
	char b[4096];
	ssize_t k;
	size_t keep = 0;

	if (g.log < 0)
		return;
	while ((k = pread(g.log, b + keep, sizeof(b) - 1 - keep, g.log_off)) > 0) {
		size_t n = keep + (size_t)k, start = 0;

		g.log_off += k;
		b[n] = 0;
		for (size_t i = 0; i < n; i++)
			if (b[i] == '\n') {
				b[i] = 0;
				slurm_info("datacrumbs[%d]: %s", (int)g.pid, b + start);
				start = i + 1;
			}
		keep = n - start;
		if (keep == sizeof(b) - 1) { /* a line longer than b: cut */
			slurm_info("datacrumbs[%d]: %s", (int)g.pid, b);
			keep = 0;
		} else
			memmove(b, b + start, keep);
	}
	if (keep) {
		b[keep] = 0;
		slurm_info("datacrumbs[%d]: %s", (int)g.pid, b);
	}
}

/* Whether path is safe for root to run: absolute, a regular file, and it and every directory
 * above it (after realpath(3)) owned by root and not writable by group or others, so no other
 * user could have planted or swapped it. resolved: PATH_MAX bytes, the path to exec. Returns
 * 0, or -1 with why (REASON_MAX bytes). */
static int trusted_binary(const char *path, char *resolved, char *why)
{
	struct stat s;

	if (path[0] != '/') {
		snprintf(why, REASON_MAX, "tracer %.150s: not an absolute path", path);
		return -1;
	}
	if (!realpath(path, resolved)) {
		snprintf(why, REASON_MAX, "tracer %.150s: %s", path, strerror(errno));
		return -1;
	}
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", resolved);
	for (;;) {
		if (lstat(p, &s) < 0) {
			snprintf(why, REASON_MAX, "tracer %.150s: %.150s: %s", path, p,
				 strerror(errno));
			return -1;
		}
		if (p == resolved || strcmp(p, resolved) == 0) {
			if (!S_ISREG(s.st_mode)) {
				snprintf(why, REASON_MAX, "tracer %.150s: not a regular file",
					 path);
				return -1;
			}
		}
		if (s.st_uid != 0 || (s.st_mode & (S_IWGRP | S_IWOTH))) {
			snprintf(why, REASON_MAX,
				 "tracer %.150s: %.150s is not root's alone (owner %u, mode "
				 "%04o): refused",
				 path, p, (unsigned)s.st_uid, (unsigned)(s.st_mode & 07777));
			return -1;
		}
		char *slash = strrchr(p, '/');
		if (slash == p) {
			if (p[1] == 0)
				break;
			p[1] = 0; /* on to "/" */
		} else
			*slash = 0;
	}
	return 0;
}

/* A job environment variable (spank_getenv) into a malloc'd string, or NULL when unset or
 * unreadable. */
static char *job_env(spank_t sp, const char *name)
{
	char *b = malloc(ENV_MAX);

	if (b && spank_getenv(sp, name, b, ENV_MAX) == ESPANK_SUCCESS)
		return b;
	free(b);
	return NULL;
}

/* --- the tracer -------------------------------------------------------------------------- */

/* The tracer's argv (docs/site.md: `datacrumbs step ... --control FD -- SCRIPT [ARGS...]`);
 * words: the script and its arguments, fd: the tracer's end of the socketpair. Returns a
 * malloc'd NULL-terminated array of malloc'd strings, or NULL (out of memory, or a job fact
 * SLURM would not give: why says which). */
static char **tracer_argv(spank_t sp, char **words, int nwords, int fd, char *why)
{
	uid_t uid;
	gid_t gid;
	int argc = 0;
	char **argv = NULL, **jargv = NULL;
	char *v[40 + OPT_WORDS];
	int n = 0, ok = 1;
	char num[32];

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
		snprintf(why, REASON_MAX, "SLURM gave no job uid/gid (spank_get_item)");
		return NULL;
	}
	if (spank_get_item(sp, S_JOB_ARGV, &argc, &jargv) != ESPANK_SUCCESS || argc < 1) {
		argc = 0;
		jargv = NULL;
	}
	char *cwd = job_env(sp, "PWD");
	if (!cwd)
		cwd = job_env(sp, "SLURM_SUBMIT_DIR");
	if (!cwd) {
		snprintf(why, REASON_MAX,
			 "the job's environment has neither PWD nor SLURM_SUBMIT_DIR");
		return NULL;
	}
	char *path = job_env(sp, "PATH"), *ldp = job_env(sp, "LD_LIBRARY_PATH"),
	     *out = job_env(sp, "DATACRUMBS_OUTPUT");

#define ARG(s)                                                                                 \
	do {                                                                                   \
		v[n] = strdup(s);                                                              \
		ok &= v[n] != NULL;                                                            \
		n++;                                                                           \
	} while (0)
	ARG(g.tracer);
	ARG("step");
	ARG("--job");
	snprintf(num, sizeof(num), "%u", g.job);
	ARG(num);
	ARG("--step");
	ARG(g.step);
	ARG("--node");
	ARG(g.node);
	ARG("--uid");
	snprintf(num, sizeof(num), "%u", (unsigned)uid);
	ARG(num);
	ARG("--gid");
	snprintf(num, sizeof(num), "%u", (unsigned)gid);
	ARG(num);
	ARG("--cwd");
	ARG(cwd);
	if (jargv && jargv[0]) {
		ARG("--exe");
		ARG(jargv[0]);
	}
	if (path) {
		ARG("--path");
		ARG(path);
	}
	if (ldp) {
		ARG("--ld-library-path");
		ARG(ldp);
	}
	ARG("--output");
	ARG(out && out[0] ? out : cwd);
	if (g.site[0]) {
		ARG("--site");
		ARG(g.site);
	}
	ARG("--control");
	snprintf(num, sizeof(num), "%d", fd);
	ARG(num);
	ARG("--");
	for (int i = 0; i < nwords; i++)
		ARG(words[i]);
#undef ARG
	free(cwd);
	free(path);
	free(ldp);
	free(out);
	argv = calloc((size_t)n + 1, sizeof(*argv));
	if (!argv || !ok) {
		for (int i = 0; i < n; i++)
			free(v[i]);
		free(argv);
		snprintf(why, REASON_MAX, "out of memory");
		return NULL;
	}
	memcpy(argv, v, (size_t)n * sizeof(*argv));
	return argv;
}

/* Waits up to ms for the tracer to exit (its pidfd readable, pidfd_open(2)); SIGKILLs it
 * (pidfd_send_signal(2)) if it has not, and waits for that too. */
static void tracer_gone(long ms)
{
	struct pollfd p = { .fd = g.pidfd, .events = POLLIN };

	if (g.pidfd < 0)
		return;
	if (poll(&p, 1, (int)ms) != 1) {
		slurm_error("datacrumbs: tracer %d still running after %ld ms: SIGKILL",
			    (int)g.pid, ms);
		syscall(SYS_pidfd_send_signal, g.pidfd, SIGKILL, NULL, 0);
		poll(&p, 1, KILL_WAIT_MS);
	}
}

/* Ends the tracer: `end`, then its `done` (at most wait_ms), its exit (at most exit_ms, else
 * SIGKILL); its output to slurmd's log; every fd closed. wait_ms 0: no `end` (a tracer that
 * never became ready). */
static void tracer_end(long wait_ms, long exit_ms)
{
	char line[1024];

	if (!g.pid)
		return;
	g.ready = 0;
	if (g.sock >= 0 && wait_ms > 0 && send_line("end") < 0)
		slurm_error(
			"datacrumbs: job %u step %s on %s: cannot send end to tracer %d: %s",
			g.job, g.step, g.node, (int)g.pid, strerror(errno));
	else if (g.sock >= 0 && wait_ms > 0) {
		int r;

		while ((r = read_line(line, sizeof(line), wait_ms)) == 1 &&
		       strncmp(line, "done ", 5) != 0)
			slurm_info("datacrumbs[%d]: unexpected before done: %s", (int)g.pid,
				   line);
		if (r == 1)
			slurm_info("datacrumbs: job %u step %s on %s: trace finished: %s",
				   g.job, g.step, g.node, line + 5);
		else
			slurm_error("datacrumbs: job %u step %s on %s: no `done` from tracer "
				    "%d (%s)",
				    g.job, g.step, g.node, (int)g.pid,
				    r == 0 ? "timeout" : "it closed the socket");
	}
	if (g.sock >= 0)
		close(g.sock);
	g.sock = -1;
	tracer_gone(exit_ms);
	relay_log();
	if (g.pidfd >= 0)
		close(g.pidfd);
	if (g.log >= 0)
		close(g.log);
	g.pidfd = g.log = -1;
	g.pid = 0;
}

/* Starts the tracer (argv[0] the trusted binary) and waits for its `ready`. The tracer is a
 * grandchild in its own session: outside the step's process tree (proctrack/linuxproc and
 * pgid signal and wait for that tree; the tracer must outlive the tasks to finish the trace)
 * and not slurmstepd's child (slurmstepd reaps any child, wait3(2)). Its pidfd is opened
 * while its parent still lives, so the pid cannot have been reused. Returns 0, or -1 after
 * fail_step. */
static int tracer_start(char **argv, int *fdslot)
{
	int sv[2] = { -1, -1 }, pp[2] = { -1, -1 }, ack[2] = { -1, -1 };
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", NULL };
	char line[1024];
	pid_t mid, tpid = 0;
	int devnull = -1;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(pp, O_CLOEXEC) < 0 || pipe2(ack, O_CLOEXEC) < 0) {
		fail_step("socketpair/pipe: %s", strerror(errno));
		goto err;
	}
	g.log = memfd_create("datacrumbs-tracer-log", MFD_CLOEXEC);
	devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (g.log < 0 || devnull < 0) {
		fail_step("memfd_create or /dev/null: %s", strerror(errno));
		goto err;
	}
	/* the fd number the tracer gets (--control): sv[1] as is */
	*fdslot = sv[1];
	char num[32];
	snprintf(num, sizeof(num), "%d", sv[1]);
	for (int i = 0; argv[i]; i++)
		if (strcmp(argv[i], "--control") == 0 && argv[i + 1]) {
			free(argv[i + 1]);
			argv[i + 1] = strdup(num);
			if (!argv[i + 1]) {
				fail_step("out of memory");
				goto err;
			}
		}
	mid = fork();
	if (mid < 0) {
		fail_step("fork: %s", strerror(errno));
		goto err;
	}
	if (mid == 0) {
		/* async-signal-safe calls only from here (slurmstepd has threads: fork(2)) */
		sigset_t none;
		pid_t t;

		setsid();
		t = fork();
		if (t < 0)
			_exit(1);
		if (t > 0) {
			char c;

			(void)!write(pp[1], &t, sizeof(t));
			(void)!read(ack[0], &c, 1);
			_exit(0);
		}
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++) {
			struct sigaction sa = { .sa_handler = SIG_DFL };
			sigaction(s, &sa, NULL);
		}
		if (dup2(devnull, 0) < 0 || dup2(g.log, 1) < 0 || dup2(g.log, 2) < 0)
			_exit(127);
		/* nothing of slurmstepd's leaks into the tracer (close_range(2)) but the control fd */
		syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
		fcntl(sv[1], F_SETFD, 0);
		if (chdir("/") < 0)
			_exit(127);
		execve(argv[0], argv, envp);
		{
			static const char m[] = "fail cannot execute the tracer\n";
			(void)!write(sv[1], m, sizeof(m) - 1);
		}
		_exit(127);
	}
	close(sv[1]);
	sv[1] = -1;
	close(devnull);
	devnull = -1;
	g.sock = sv[0];
	sv[0] = -1;
	close(pp[1]);
	pp[1] = -1;
	ssize_t k = read(pp[0], &tpid, sizeof(tpid));
	if (k == (ssize_t)sizeof(tpid) && tpid > 0) {
		g.pid = tpid;
		g.pidfd = (int)syscall(SYS_pidfd_open, tpid, 0);
	}
	(void)!write(ack[1], "x", 1);
	waitpid(mid, NULL, 0);
	close(pp[0]);
	close(ack[0]);
	close(ack[1]);
	pp[0] = ack[0] = ack[1] = -1;
	if (!g.pid) {
		fail_step("fork of the tracer failed");
		goto err;
	}
	if (g.pidfd < 0)
		slurm_error("datacrumbs: pidfd_open(%d): %s: its exit is not watched",
			    (int)g.pid, strerror(errno));

	int r = read_line(line, sizeof(line), g.timeout * 1000L);
	relay_log();
	if (r == 1 && strncmp(line, "ready ", 6) == 0) {
		slurm_info("datacrumbs: job %u step %s on %s: tracer %d ready, %s probes",
			   g.job, g.step, g.node, (int)g.pid, line + 6);
		g.ready = 1;
		return 0;
	}
	long exit_ms = 0; /* one that did not answer is killed now */
	if (r == 1 && strncmp(line, "fail ", 5) == 0) {
		fail_step("%s", line + 5);
		exit_ms = KILL_WAIT_MS; /* it exits by itself */
	} else if (r == 1)
		fail_step("the tracer said \"%s\" (want ready or fail)", line);
	else if (r == 0)
		fail_step("the tracer was not ready after %d s", g.timeout);
	else {
		fail_step("the tracer exited before it was ready");
		exit_ms = KILL_WAIT_MS;
	}
	/* nothing traced yet: no `end`, the tracer is made to exit now (a link dies with its
	 * process: nothing stays attached) */
	tracer_end(0, exit_ms);
	return -1;
err:
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (pp[i] >= 0)
			close(pp[i]);
		if (ack[i] >= 0)
			close(ack[i]);
	}
	if (devnull >= 0)
		close(devnull);
	if (g.log >= 0)
		close(g.log);
	g.log = -1;
	return -1;
}

/* --- the SPANK callbacks ---------------------------------------------------------------- */

/* Registers --datacrumbs (every context that parses options: srun, sbatch/salloc,
 * slurmstepd) and, in slurmstepd, reads the plugstack.conf arguments: datacrumbs=PATH (the
 * tracer), site=FILE, timeout=S, end_timeout=S. A bad argument is logged and noted: tracing
 * is then refused with it as the reason. */
/* The tracer beside this plugin's own installation: <prefix>/bin/datacrumbs, found by
 * going up from the plugin's directory (<prefix>/lib/datacrumbs, or
 * <prefix>/lib/<multiarch>/datacrumbs) to the first directory with bin/datacrumbs, so a
 * `cmake --install --prefix P` anywhere finds P's tracer (dladdr(3)). Keeps g.tracer (the
 * configure-time path) when there is none. */
static void tracer_beside_plugin(void)
{
	Dl_info info;
	char dir[PATH_MAX], cand[PATH_MAX + 32];
	if (!dladdr((void *)tracer_beside_plugin, &info) || !info.dli_fname ||
	    snprintf(dir, sizeof(dir), "%s", info.dli_fname) >= (int)sizeof(dir))
		return;
	for (int up = 0; up < 4; up++) {
		char *slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			return;
		*slash = 0;
		snprintf(cand, sizeof(cand), "%s/bin/datacrumbs", dir);
		if (strlen(cand) < sizeof(g.tracer) && access(cand, X_OK) == 0) {
			memcpy(g.tracer, cand, strlen(cand) + 1);
			return;
		}
	}
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();

	if (ctx == S_CTX_LOCAL || ctx == S_CTX_REMOTE || ctx == S_CTX_ALLOCATOR)
		if (spank_option_register(sp, &option) != ESPANK_SUCCESS)
			slurm_error("datacrumbs: cannot register --datacrumbs");
	if (!spank_remote(sp))
		return 0;
	tracer_beside_plugin(); /* the default; datacrumbs= below overrides it */
	for (int i = 0; i < ac; i++) {
		const char *a = av[i];
		char *end;
		long v;

		if (strncmp(a, "datacrumbs=", 11) == 0 && a[11] == '/' &&
		    strlen(a + 11) < sizeof(g.tracer))
			snprintf(g.tracer, sizeof(g.tracer), "%s", a + 11);
		else if (strncmp(a, "site=", 5) == 0 && a[5] == '/' &&
			 strlen(a + 5) < sizeof(g.site))
			snprintf(g.site, sizeof(g.site), "%s", a + 5);
		else if (strncmp(a, "timeout=", 8) == 0 &&
			 (v = strtol(a + 8, &end, 10), *end == 0 && v > 0 && v <= 3600))
			g.timeout = (int)v;
		else if (strncmp(a, "end_timeout=", 12) == 0 &&
			 (v = strtol(a + 12, &end, 10), *end == 0 && v > 0 && v <= 3600))
			g.end_timeout = (int)v;
		else {
			slurm_error(
				"datacrumbs: plugstack.conf: argument %d \"%s\" not understood "
				"(datacrumbs=/PATH site=/FILE timeout=1..3600 "
				"end_timeout=1..3600)",
				i + 1, a);
			if (!g.conf_error[0])
				snprintf(g.conf_error, sizeof(g.conf_error),
					 "plugstack.conf: argument \"%s\" not understood", a);
		}
	}
	return 0;
}

/* slurmstepd, as root, once per step before any task is forked: when the user asked
 * (--datacrumbs, else DATACRUMBS_SCRIPT in the job's environment), starts the step's
 * tracer on this node and waits for its `ready` (the tasks' launch waits meanwhile). The
 * extern step is never traced. */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	uint32_t stepid;
	char *env_script = NULL, copy[OPT_MAX], *words[OPT_WORDS], why[REASON_MAX];
	char resolved[PATH_MAX];
	const char *req, *bad;
	char **argv = NULL;
	int nwords, fd = -1;

	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	if (spank_get_item(sp, S_JOB_ID, &g.job) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS)
		return 0; /* not a job step: nothing to trace */
	if (stepid == SLURM_EXTERN_CONT)
		return 0;
	if (stepid == SLURM_BATCH_SCRIPT)
		snprintf(g.step, sizeof(g.step), "batch");
	else if (stepid == SLURM_INTERACTIVE_STEP)
		snprintf(g.step, sizeof(g.step), "interactive");
	else
		snprintf(g.step, sizeof(g.step), "%u", stepid);
	const char *node = getenv("SLURMD_NODENAME"); /* slurmd sets it for slurmstepd */
	if (node && node[0])
		snprintf(g.node, sizeof(g.node), "%s", node);
	else if (spank_getenv(sp, "SLURMD_NODENAME", g.node, sizeof(g.node)) !=
			 ESPANK_SUCCESS &&
		 gethostname(g.node, sizeof(g.node)) < 0)
		snprintf(g.node, sizeof(g.node), "unknown");

	req = g.opt[0] ? g.opt : NULL;
	if (!req && !st->failed) {
		env_script = job_env(sp, "DATACRUMBS_SCRIPT");
		req = env_script && env_script[0] ? env_script : NULL;
	}
	if (!req && !st->failed)
		goto out; /* tracing not asked for */

	/* the status page, before the tasks are forked (they read it in task_init) */
	void *page = mmap(NULL, sizeof(struct status), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED) {
		memcpy(page, st, sizeof(struct status));
		st = page;
	}
	if (st->failed) { /* the option's value, seen by opt_datacrumbs */
		slurm_error("datacrumbs: not tracing job %u step %s on %s: %s", g.job, g.step,
			    g.node, st->reason);
		goto out;
	}
	if (g.conf_error[0]) {
		fail_step("%s", g.conf_error);
		goto out;
	}
	nwords = split_words(req, copy, words, &bad);
	if (nwords < 0) {
		fail_step("%s=%s: %s", g.opt[0] ? "--datacrumbs" : "DATACRUMBS_SCRIPT", req,
			  bad);
		goto out;
	}
	if (trusted_binary(g.tracer, resolved, why) < 0) {
		fail_step("%s", why);
		goto out;
	}
	snprintf(g.tracer, sizeof(g.tracer), "%s", resolved);
	argv = tracer_argv(sp, words, nwords, -1, why);
	if (!argv) {
		fail_step("%s", why);
		goto out;
	}
	tracer_start(argv, &fd);
out:
	if (argv)
		for (int i = 0; argv[i]; i++)
			free(argv[i]);
	free(argv);
	free(env_script);
	return 0;
}

/* slurmstepd, as root, for each task after its fork, while the task waits before its exec
 * (SLURM releases the tasks only after every task's task_post_fork): hands the task to the
 * tracer (`task PID RANK LOCALID`) and waits for its `ok`, so the task's first call is
 * traced. A `fail` or no answer ends the tracer: the step runs untraced. */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	pid_t pid;
	uint32_t rank;
	int local;
	char line[1024];

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !g.ready)
		return 0;
	if (spank_get_item(sp, S_TASK_PID, &pid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS) {
		fail_step("SLURM gave no task pid/rank (spank_get_item)");
		tracer_end(g.end_timeout * 1000L, KILL_WAIT_MS);
		return 0;
	}
	int r = -1;
	if (send_line("task %d %u %d", (int)pid, rank, local) == 0)
		r = read_line(line, sizeof(line), g.timeout * 1000L);
	if (r == 1 && strcmp(line, "ok") == 0)
		return 0;
	if (r == 1 && strncmp(line, "fail ", 5) == 0)
		fail_step("task %d (rank %u): %s", (int)pid, rank, line + 5);
	else if (r == 1)
		fail_step("task %d (rank %u): the tracer said \"%s\" (want ok or fail)",
			  (int)pid, rank, line);
	else if (r == 0)
		fail_step("task %d (rank %u): no answer from the tracer after %d s", (int)pid,
			  rank, g.timeout);
	else
		fail_step("task %d (rank %u): the tracer is gone", (int)pid, rank);
	tracer_end(g.end_timeout * 1000L, KILL_WAIT_MS);
	return 0;
}

/* In each task (as the user, its stdio the job's), before its exec: local task 0 says why
 * the step is not traced on this node, one line on the job's stderr. */
int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	int local;
	char l[REASON_MAX + 300];

	(void)ac;
	(void)av;
	if (!spank_remote(sp) || !st->failed)
		return 0;
	if (spank_get_item(sp, S_TASK_ID, &local) != ESPANK_SUCCESS || local != 0)
		return 0;
	int n = snprintf(l, sizeof(l), "datacrumbs: not tracing job %u step %s on %s: %s\n",
			 g.job, g.step, g.node, st->reason);
	if (n > 0)
		(void)!write(2, l, (size_t)n < sizeof(l) ? (size_t)n : sizeof(l) - 1);
	return 0;
}

/* slurmstepd at the step's end (also after scancel or a time limit: the tasks are gone):
 * `end` to the tracer, its `done` awaited (end_timeout), then it is made to exit. */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	if (!spank_remote(sp))
		return 0;
	tracer_end(g.end_timeout * 1000L, KILL_WAIT_MS);
	if (st != &status_fallback) {
		munmap(st, sizeof(struct status));
		st = &status_fallback;
	}
	return 0;
}
