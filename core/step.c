/* step.c: `datacrumbs step`, site mode's tracer of one job step on one node: root loads
 * and attaches, the script runs only as the job's user (declare run, then the consumer). */
#define _GNU_SOURCE
#include "step.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "attach.h"
#include "cli.h"
#include "elfsym.h"
#include "lua_api.h"
#include "paths.h"
#include "pinfile.h"
#include "probeset.h"
#include "reqwire.h"
#include "session.h"
#include "siteconf.h"
#include "trust.h"
#include "writer.h"

#define STATUS_DIR "/run/datacrumbs"
#define DECLARE_MAX (64u << 20)   /* a declare run's bytes: more is surely no script of ours */
#define CONSUMER_ACK_MS 10000     /* the consumer answers "task" within this */
#define CONSUMER_END_MS 20000     /* ... and "end" within this: less than the plugin's 30 s */
#define DECLARE_MS 45000          /* the declare run (the message says 45 s): less than the
				     plugin's 60 s for ready */

/* The step's facts, from the command line the plugin gave (slurmstepd's, trusted). */
struct step {
	const char *job, *stepid, *node, *cwd, *argv0, *path, *ldpath, *output, *site_file;
	const char *status_dir;
	int ctl;                  /* the plugin's socket */
	uid_t uid;
	gid_t gid;
	char user[64], home[PATH_MAX];
	char **script_argv;       /* SCRIPT ARGS... */
	struct dc_site site;
	char script[PATH_MAX];    /* the script's path: a trusted site file, or the user's */
	char trace[PATH_MAX];
	char status[PATH_MAX];    /* the status file, "" when none is kept */
	struct dc_wire_reqs reqs;
	struct dc_bpf *bpf;
	int nprobes;
	int cons_pid, cons_fd;    /* the consumer and our socket to it */
	int tasks[256];
	int ntasks;
	unsigned long long events, lost;
	time_t started;
	char err[PATH_MAX + 1024];
};

/* Tells the plugin a line (newline added). Returns 0, or -1 when the socket is gone. */
static int say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(int fd, const char *fmt, ...)
{
	char line[PATH_MAX + 1200];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' '; /* one line, whatever the reason held */
	line[n++] = '\n';
	return write(fd, line, (size_t)n) == n ? 0 : -1;
}

/* A failure before tracing: "fail REASON" to the plugin (the job runs untraced) and our
 * log. Returns DC_STEP_FAIL. */
static int refuse(struct step *st)
{
	fprintf(stderr, "datacrumbs: step %s.%s: %s\n", st->job, st->stepid, st->err);
	say(st->ctl, "fail %s", st->err);
	return DC_STEP_FAIL;
}

/* Closes every fd but 0-2 and `keep` (>= 3, or -1): nothing of root's (the plugin's
 * socket, the signalfd, BPF objects) stays open where a user's script runs. */
static void close_all_but(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		_exit(DC_STEP_FAIL); /* cannot know what is open: run nothing */
	struct dirent *e;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);
		if (e->d_name[0] != '.' && fd > 2 && fd != keep && fd != dirfd(d))
			close(fd);
	}
	closedir(d);
}

/* Points fds 0-2 at `path` (NULL: /dev/null for all three), created as the current user
 * (O_EXCL, O_NOFOLLOW, 0600) for 1 and 2; /dev/null when it cannot be. */
static void stdio_to(const char *path)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	int out = path ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
		       : -1;
	if (null < 0)
		_exit(DC_STEP_FAIL);
	dup2(null, 0);
	dup2(out >= 0 ? out : null, 1);
	dup2(out >= 0 ? out : null, 2);
	if (out > 2)
		close(out);
	if (null > 2)
		close(null);
}

/* Becomes the job's user for good: its groups (initgroups(3)), gid, uid, all three of
 * each (setresuid(2)), no way back (checked: setuid(0) fails), no privilege gained by
 * exec (PR_SET_NO_NEW_PRIVS), and not dumpable, so the user cannot ptrace this process
 * nor open its /proc/PID/fd (proc(5) "PR_SET_DUMPABLE"). Then its cwd and a clean
 * environment. 0, or an errno value. */
static int become_user(const struct step *st)
{
	if (initgroups(st->user, st->gid) || setresgid(st->gid, st->gid, st->gid) ||
	    setresuid(st->uid, st->uid, st->uid))
		return errno;
	if (st->uid != 0 && setuid(0) == 0)
		return EPERM;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0))
		return errno;
	dc_invoker_reset();
	clearenv();
	setenv("PATH", st->path ? st->path : "/usr/local/bin:/usr/bin:/bin", 1);
	setenv("HOME", st->home, 1);
	setenv("USER", st->user, 1);
	setenv("LOGNAME", st->user, 1);
	setenv("SLURM_JOB_ID", st->job, 1);
	setenv("SLURM_STEP_ID", st->stepid, 1);
	setenv("SLURMD_NODENAME", st->node, 1);
	if (st->site.probes[0])
		setenv("DATACRUMBS_PROBE_PATH", st->site.probes, 1);
	if (chdir(st->cwd))
		return errno;
	return 0;
}

/* The script: a bare name from the site's scripts directory, then the installed and
 * source-tree ones (each directory and the file must pass the trust checks: root's); a
 * path only where the site lets users bring scripts (user_scripts = yes), relative to
 * the job's cwd, and never opened by root: the user's runs read it. 0, or -1 with err. */
static int find_script(struct step *st)
{
	const char *name = st->script_argv[0];
	if (strchr(name, '/')) {
		if (!st->site.user_scripts) {
			snprintf(st->err, sizeof(st->err), "script %s: refused: this site runs only "
				 "its own scripts (%s %s); give a script name from `datacrumbs "
				 "list`", name, st->site.found ? "user_scripts = no in"
				 : "no user_scripts = yes: there is no", st->site.path);
			return -1;
		}
		snprintf(st->script, sizeof(st->script), "%s%s%s", name[0] == '/' ? "" : st->cwd,
			 name[0] == '/' ? "" : "/", name);
		return 0;
	}
	const char *dirs[] = { st->site.scripts, dc_data_dir(DC_DIR_SCRIPTS),
			       dc_source_dir(DC_DIR_SCRIPTS) };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char p[PATH_MAX];
		if (!dirs[i][0])
			continue;
		snprintf(p, sizeof(p), "%s/%s", dirs[i], name);
		if (access(p, F_OK))
			continue;
		if (dc_trust_search_dir(dirs[i], "scripts directory", st->err, sizeof(st->err)) ||
		    dc_trust_file(p, "script", st->script, sizeof(st->script), st->err,
				  sizeof(st->err)))
			return -1;
		return 0;
	}
	snprintf(st->err, sizeof(st->err), "script %s: not found in the site's scripts (%s), "
		 "the installed ones (%s) or the source tree's (%s)", name,
		 st->site.scripts[0] ? st->site.scripts : "none set", dc_data_dir(DC_DIR_SCRIPTS),
		 dc_source_dir(DC_DIR_SCRIPTS));
	return -1;
}

/* In the declare child, as the user: finds the step's program as execvp would (the job's
 * PATH, its cwd), runs the script in a fresh Lua state (no unsafe features) and writes
 * 'K' and the requests (core/reqwire.h) to fd, or 'F' and the one-line reason. */
static void declare(struct step *st, int fd)
{
	char exe[PATH_MAX], err[PATH_MAX + 1024];
	struct dc_wire w = { 0 };
	uv_loop_t loop;
	close_all_but(fd); /* the script must not reach the plugin's socket (it could speak
			      for us) nor any other fd of root's */
	stdio_to(NULL);
	int e = become_user(st);
	if (e) {
		snprintf(err, sizeof(err), "cannot become user %s (uid %u) in %s: %s", st->user,
			 (unsigned)st->uid, st->cwd, strerror(e));
		goto fail;
	}
	char found[PATH_MAX];
	if (dc_elf_which(st->argv0, found, sizeof(found), err, sizeof(err)))
		goto fail;
	if (!realpath(found, exe)) {
		snprintf(err, sizeof(err), "%s: %s", found, strerror(errno));
		goto fail;
	}
	if (uv_loop_init(&loop)) {
		snprintf(err, sizeof(err), "cannot create an event loop");
		goto fail;
	}
	char *cmd[] = { (char *)st->argv0, NULL };
	struct dc_run_info info = { .output = st->output ? st->output : st->cwd, .cmd = cmd,
				    .script_args = st->script_argv + 1 };
	struct dc_script *s = dc_script_new(&loop, &info);
	if (!s) {
		snprintf(err, sizeof(err), "cannot create the Lua state: out of memory");
		goto fail;
	}
	int ran = dc_script_run(s, st->script, err, sizeof(err));
	if (ran == 1) {
		snprintf(err, sizeof(err), "%s ended the run itself (dc.done, e.g. its --help): "
			 "nothing to trace", st->script);
		goto fail;
	}
	if (ran)
		goto fail;
	int n;
	const struct dc_probe_req *reqs = dc_script_reqs(s, &n);
	if (n == 0) {
		snprintf(err, sizeof(err), "%s asks for no probes", st->script);
		goto fail;
	}
	uint64_t iv;
	int mode = dc_script_mode(s, &iv);
	if (dc_reqwire_encode(&w, exe, mode, iv, reqs, n)) {
		snprintf(err, sizeof(err), "out of memory");
		goto fail;
	}
	if (write(fd, "K", 1) != 1)
		_exit(1);
	for (size_t off = 0; off < w.len;) {
		ssize_t k = write(fd, w.data + off, w.len - off);
		if (k <= 0)
			_exit(1);
		off += (size_t)k;
	}
	_exit(0);
fail:
	if (write(fd, "F", 1) == 1 && write(fd, err, strlen(err)) < 0)
		_exit(1);
	_exit(1);
}

/* dc_layer_allow_fn: root loads a probe description only from the site's probes
 * directory, the installed one or the source tree's, and only when it passes the trust
 * checks (no user can have written it). */
static int allow_layer(const char *path, void *arg, char *real, size_t reallen, char *err,
		       size_t errlen)
{
	struct step *st = arg;
	char dir[PATH_MAX];
	if (reallen < PATH_MAX || !realpath(path, real)) {
		snprintf(err, errlen, "probe description %s: %s", path, strerror(errno));
		return -1;
	}
	const char *dirs[] = { st->site.probes, dc_data_dir(DC_DIR_PROBES),
			       dc_source_dir(DC_DIR_PROBES) };
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		size_t n;
		if (!dirs[i][0] || !realpath(dirs[i], dir))
			continue;
		n = strlen(dir);
		if (!strncmp(real, dir, n) && real[n] == '/' && !strchr(real + n + 1, '/'))
			return dc_trust_file(real, "probe description", NULL, 0, err, errlen);
		/* the file is in a trusted directory: nobody but root can swap it now */
	}
	snprintf(err, errlen, "probe description %s: refused: site mode loads descriptions "
		 "only from the site's (%s) and the installed probes directories", path,
		 st->site.probes[0] ? st->site.probes : "none set");
	return -1;
}

/* Runs the declare child and reads what it made of the script into st->reqs. 0, or -1
 * with err (the script's own error, as the user would see it). */
static int run_declare(struct step *st, int sigfd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(st->err, sizeof(st->err), "pipe: %s", strerror(errno));
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(st->err, sizeof(st->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		declare(st, p[1]);
	}
	close(p[1]);
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap);
	ssize_t k;
	const char *cut = NULL;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (buf) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = DECLARE_MS - ((t.tv_sec - t0.tv_sec) * 1000 +
					  (t.tv_nsec - t0.tv_nsec) / 1000000);
		struct pollfd pf[3] = { { p[0], POLLIN, 0 }, { st->ctl, POLLRDHUP, 0 },
					{ sigfd, POLLIN, 0 } };
		if (left <= 0) {
			cut = "the script's declare run did not end within 45 s (its top level "
			      "should only declare probes; start long work from callbacks or "
			      "timers)";
			break;
		}
		if (poll(pf, 3, (int)left) < 0 && errno != EINTR)
			break;
		if (pf[1].revents & (POLLRDHUP | POLLHUP | POLLERR)) {
			cut = "the plugin went away during the script's declare run";
			break;
		}
		if (pf[2].revents) {
			cut = "a signal ended the tracer during the script's declare run";
			break;
		}
		if (!pf[0].revents)
			continue;
		k = read(p[0], buf + len, cap - len);
		if (k == 0)
			break;
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		len += (size_t)k;
		if (len == cap && cap < DECLARE_MAX) {
			char *nb = realloc(buf, cap * 2);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		} else if (len == cap) {
			break;
		}
	}
	close(p[0]);
	if (cut)
		kill(pid, SIGKILL);
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int rc = -1;
	if (cut) {
		snprintf(st->err, sizeof(st->err), "%s", cut);
	} else if (!buf || len == 0) {
		snprintf(st->err, sizeof(st->err), "the script's declare run (as %s) ended with "
			 "status %d and said nothing", st->user, WIFEXITED(status)
			 ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	} else if (buf[0] == 'F') {
		snprintf(st->err, sizeof(st->err), "%.*s", (int)(len - 1), buf + 1);
	} else if (buf[0] != 'K' || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(st->err, sizeof(st->err), "the script's declare run failed");
	} else {
		rc = dc_reqwire_decode(buf + 1, len - 1, allow_layer, st, st->site.user_uprobes,
				       &st->reqs, st->err, sizeof(st->err));
	}
	free(buf);
	return rc;
}

/* Opens the BPF side, resolves the requests in the step's program and attaches. Every
 * ELF file is opened once, with the user's file rights, and read and attached only
 * through that open file (core/pinfile.h): a file the user cannot read fails as it would
 * for them, before root reads a byte of it, and a path the user swaps meanwhile changes
 * nothing. 0, or -1 with err. */
static int attach(struct step *st, uint64_t t0)
{
	struct dc_wire_reqs *r = &st->reqs;
	uint64_t interval = r->mode == DC_MODE_PROFILE ? (r->interval_ns ? r->interval_ns
							 : 1000000000ULL) : 0;
	st->bpf = dc_bpf_open(16u << 20, 0, interval, t0, 1, st->err, sizeof(st->err));
	if (!st->bpf)
		return -1;
	if (st->ldpath)
		setenv("LD_LIBRARY_PATH", st->ldpath, 1); /* the libraries as the job finds them */
	else
		unsetenv("LD_LIBRARY_PATH");
	int bad = 0;
	char pinned[64];
	if (dc_pin_enable(st->uid, st->gid, st->user)) {
		snprintf(st->err, sizeof(st->err), "the groups of %s: %s", st->user, strerror(errno));
		return -1;
	}
	if (!dc_pin(r->exe, pinned, sizeof(pinned))) {
		snprintf(st->err, sizeof(st->err), "%s: %s (as %s)", r->exe, strerror(errno),
			 st->user);
		return -1;
	}
	st->nprobes = dc_probeset_add(st->bpf, r->reqs, r->nreqs, r->exe, NULL, 0, &bad, NULL,
				      st->err, sizeof(st->err));
	if (st->nprobes < 0 && bad) /* a script run by its #! line: the shell's libraries */
		st->nprobes = dc_probeset_add(st->bpf, r->reqs, r->nreqs, "/bin/sh", NULL, 0,
					      &bad, NULL, st->err, sizeof(st->err));
	if (st->nprobes < 0)
		return -1;
	const char *last = "";
	for (unsigned i = 0; i < dc_bpf_nprobes(st->bpf); i++) {
		const char *lib = dc_bpf_probe(st->bpf, i)->library;
		if (lib[0] != '/' || !strcmp(lib, last))
			continue;
		last = lib;
		if (!dc_pin(lib, pinned, sizeof(pinned))) { /* resolution opened it: as the user */
			snprintf(st->err, sizeof(st->err), "%s: %s (as %s: users probe only files "
				 "they can read)", lib, strerror(errno), st->user);
			return -1;
		}
	}
	int n = dc_bpf_attach(st->bpf, st->err, sizeof(st->err));
	if (n < 0)
		return -1;
	st->nprobes = n;
	st->reqs.interval_ns = interval;
	st->started = time(NULL);
	return 0;
}

/* Forks the consumer: only the map fds it reads and its socket kept, then the job's user
 * for good; it creates the trace and runs the script's callbacks (dc_session_consume). */
static int start_consumer(struct step *st, uint64_t t0)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		snprintf(st->err, sizeof(st->err), "socketpair: %s", strerror(errno));
		return -1;
	}
	int own = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(st->err, sizeof(st->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		int e = dc_bpf_consumer_only(st->bpf, sv[1]) ? errno : become_user(st);
		/* after the change of user, which clears it (prctl(2) PR_SET_PDEATHSIG) */
		if (!e && (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) || getppid() != own))
			e = ESRCH;
		if (e) {
			say(sv[1], "fail the consumer could not start: %s", strerror(e));
			_exit(DC_STEP_FAIL);
		}
		/* the script's output and ours go to the user's log beside the trace, not to
		 * the plugin (slurmd's log) */
		char log[PATH_MAX];
		snprintf(log, sizeof(log), "%.*s.log", (int)(strlen(st->trace) - 7), st->trace);
		stdio_to(log);
		struct dc_opts o = { .script = st->script, .script_args = st->script_argv + 1,
				     .compress = 1, .flush_ms = 1000, .quiet = 0, .no_status = 1,
				     .drain_threads = -1,
				     .output = st->trace };
		struct dc_consume c = { .bpf = st->bpf, .ctl = sv[1], .trace_path = st->trace,
					.job = st->job, .step = st->stepid, .node = st->node,
					.user = st->user, .exe = st->reqs.exe, .cwd = st->cwd,
					.own_pid = own, .interval_ns = st->reqs.interval_ns,
					.t0 = t0 };
		_exit(dc_session_consume(&o, &c));
	}
	close(sv[1]);
	st->cons_pid = pid;
	st->cons_fd = sv[0];
	/* it says "started" once the trace file exists and its start record is written, or
	 * "fail REASON" */
	char line[PATH_MAX + 1100];
	size_t n = 0;
	struct pollfd pf = { sv[0], POLLIN, 0 };
	while (n < sizeof(line) - 1 && poll(&pf, 1, CONSUMER_ACK_MS) > 0) {
		ssize_t k = read(sv[0], line + n, 1);
		if (k <= 0 || line[n] == '\n')
			break;
		n++;
	}
	line[n] = 0;
	if (!strcmp(line, "started"))
		return 0;
	snprintf(st->err, sizeof(st->err), "%.4000s", !strncmp(line, "fail ", 5) ? line + 5
		 : "the trace's consumer did not start");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(sv[0]);
	st->cons_pid = 0;
	st->cons_fd = -1;
	return -1;
}

/* s as a JSON string's contents, escaped as the trace's strings are (writer.h
 * dc_json_escape: quote, backslash, controls, bytes not UTF-8 as \ufffd): a user's path or
 * name cannot add fields to the status file, nor make it unreadable. */
static void json_str(FILE *f, const char *s)
{
	char buf[6 * PATH_MAX + 8];
	long n = dc_json_escape(buf, sizeof(buf), s, strlen(s));
	if (n > 0)
		fwrite(buf, 1, (size_t)n, f);
}

/* Writes the status file `datacrumbs status` lists (temp file + rename: readers never
 * see half of one). Quietly nothing when the directory is not ours. */
static void write_status(struct step *st)
{
	if (!st->status[0])
		return;
	char tmp[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s.tmp", st->status);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return;
	}
	const char *keys[] = { "job", "step", "node", "user" };
	const char *vals[] = { st->job, st->stepid, st->node, st->user };
	for (int i = 0; i < 4; i++) {
		fprintf(f, "%s\"%s\":\"", i ? "," : "{", keys[i]);
		json_str(f, vals[i]);
		fputc('"', f);
	}
	fprintf(f, ",\"uid\":%u,\"tracer_pid\":%d,\"consumer_pid\":%d,\"tasks\":[",
		(unsigned)st->uid, (int)getpid(), st->cons_pid);
	for (int i = 0; i < st->ntasks; i++)
		fprintf(f, "%s%d", i ? "," : "", st->tasks[i]);
	fprintf(f, "],\"probes\":%d,\"events\":%llu,\"lost\":%llu,\"trace\":\"", st->nprobes,
		st->events, st->lost);
	json_str(f, st->trace);
	fprintf(f, "\",\"started\":%lld}\n", (long long)st->started);
	if (fclose(f) == 0)
		rename(tmp, st->status);
	else
		unlink(tmp);
}

/* A status directory root owns and nobody else can write, made if missing. */
static void open_status(struct step *st)
{
	struct stat sb;
	mkdir(st->status_dir, 0755);
	if (lstat(st->status_dir, &sb) || !S_ISDIR(sb.st_mode) || sb.st_uid != 0 ||
	    (sb.st_mode & 022))
		return;
	for (const char *p = st->job; *p; p++)
		if (*p == '/')
			return;
	snprintf(st->status, sizeof(st->status), "%s/%s.%s-%s.json", st->status_dir, st->job,
		 st->stepid, st->node);
	write_status(st);
}

/* A line from the consumer: "events N" (its count so far), "ok" (a task noted) or
 * "done ..." (the trace is finished). Returns the line's kind: 'e', 'o', 'd', or 0. */
static int read_consumer(struct step *st, char *buf, size_t *len, size_t cap, char *done,
			 size_t donelen)
{
	ssize_t n = read(st->cons_fd, buf + *len, cap - 1 - *len);
	if (n <= 0)
		return n == 0 || errno != EINTR ? -1 : 0;
	*len += (size_t)n;
	buf[*len] = 0;
	int kind = 0;
	char *nl;
	while ((nl = strchr(buf, '\n'))) {
		*nl = 0;
		unsigned long long v;
		if (sscanf(buf, "events %llu", &v) == 1) {
			st->events = v;
			kind = kind ? kind : 'e';
		} else if (!strcmp(buf, "ok")) {
			kind = 'o';
		} else if (!strncmp(buf, "done ", 5)) {
			snprintf(done, donelen, "%s", buf);
			kind = 'd';
		}
		size_t used = (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, *len - used + 1);
		*len -= used;
	}
	if (*len == cap - 1)
		*len = 0;
	return kind;
}

/* Waits for the consumer's line of kind `want` ('o' or 'd'), up to ms. 1 seen, 0 not. */
static int wait_consumer(struct step *st, int want, int ms, char *buf, size_t *len,
			 size_t cap, char *done, size_t donelen)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		long left = ms - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
		if (left <= 0)
			return 0;
		struct pollfd p = { st->cons_fd, POLLIN, 0 };
		if (poll(&p, 1, (int)left) <= 0)
			continue;
		int k = read_consumer(st, buf, len, cap, done, donelen);
		if (k < 0)
			return 0;
		if (k == want)
			return 1;
	}
}

/* A task of the step, held before its exec by slurmstepd: traced from now, then told to
 * the consumer (named and ranked), then "ok" to the plugin, which lets it exec. */
static void add_task(struct step *st, int pid, int rank, char *cbuf, size_t *clen, size_t cap)
{
	char done[16];
	if (dc_bpf_trace_pid(st->bpf, pid)) {
		say(st->cons_fd, "untraced %d %d", pid, rank); /* the trace says it misses it */
		say(st->ctl, "fail cannot trace pid %d: %s", pid, strerror(errno));
		return;
	}
	if (st->ntasks < (int)(sizeof(st->tasks) / sizeof(st->tasks[0])))
		st->tasks[st->ntasks++] = pid;
	/* the batch step's task is the job's script, no rank of the job: no "Rank 0" beside
	 * step 0's real rank 0 in the job's tables */
	if (!strcmp(st->stepid, "batch"))
		rank = -1;
	if (say(st->cons_fd, "task %d %d", pid, rank) ||
	    !wait_consumer(st, 'o', CONSUMER_ACK_MS, cbuf, clen, cap, done, sizeof(done))) {
		dc_bpf_untrace_pid(st->bpf, pid);
		say(st->cons_fd, "untraced %d %d", pid, rank); /* if it still reads: say so */
		say(st->ctl, "fail the trace's consumer did not answer for pid %d", pid);
		return;
	}
	write_status(st); /* before "ok": whoever learns of the task sees it listed */
	say(st->ctl, "ok");
}

/* The step's life: plugin lines in, consumer counts, the status file each second, until
 * "end" (or EOF, or SIGTERM). Then the consumer finishes the trace; we detach. */
static int serve(struct step *st, int sigfd)
{
	char pbuf[512], cbuf[PATH_MAX + 256], done[PATH_MAX + 128] = "";
	size_t plen = 0, clen = 0;
	int ending = 0;
	while (!ending) {
		struct pollfd p[3] = { { st->ctl, POLLIN, 0 }, { st->cons_fd, POLLIN, 0 },
				       { sigfd, POLLIN, 0 } };
		int n = poll(p, 3, 1000);
		if (n < 0 && errno != EINTR)
			break;
		if (p[2].revents) {
			struct signalfd_siginfo si;
			if (read(sigfd, &si, sizeof(si)) > 0)
				ending = 1;
		}
		if (p[1].revents) {
			int k = read_consumer(st, cbuf, &clen, sizeof(cbuf), done, sizeof(done));
			if (k == 'd') { /* a "done" before our "end" is no done: ignored */
				fprintf(stderr, "datacrumbs: step %s.%s: the consumer said done "
					"before the end: ignored\n", st->job, st->stepid);
				done[0] = 0;
			} else if (k < 0) {
				fprintf(stderr, "datacrumbs: step %s.%s: the consumer ended early: the "
					"trace is cut\n", st->job, st->stepid);
				ending = 2;
			}
		}
		if (p[0].revents) {
			ssize_t k = read(st->ctl, pbuf + plen, sizeof(pbuf) - 1 - plen);
			if (k <= 0) {
				ending = k < 0 && errno == EINTR ? 0 : 1; /* EOF: the step is over */
				continue;
			}
			plen += (size_t)k;
			pbuf[plen] = 0;
			char *nl;
			while ((nl = strchr(pbuf, '\n'))) {
				*nl = 0;
				int pid, rank, local;
				char x;
				if (sscanf(pbuf, "task %d %d %d%c", &pid, &rank, &local, &x) == 3 &&
				    pid > 1 && rank >= 0)
					add_task(st, pid, rank, cbuf, &clen, sizeof(cbuf));
				else if (!strcmp(pbuf, "end"))
					ending = 1;
				else
					say(st->ctl, "fail bad line");
				size_t used = (size_t)(nl + 1 - pbuf);
				memmove(pbuf, nl + 1, plen - used + 1);
				plen -= used;
			}
			if (plen == sizeof(pbuf) - 1)
				plen = 0;
		}
		uint64_t stt[DC_STAT_NR];
		dc_bpf_stats(st->bpf, stt);
		st->lost = stt[DC_STAT_LOST];
		write_status(st);
	}
	if (ending != 2 && (say(st->cons_fd, "end") ||
			    !wait_consumer(st, 'd', CONSUMER_END_MS, cbuf, &clen, sizeof(cbuf), done,
					   sizeof(done)))) {
		fprintf(stderr, "datacrumbs: step %s.%s: the consumer did not finish the trace "
			"(a script callback that never returns?): killed\n", st->job, st->stepid);
		kill(st->cons_pid, SIGKILL);
	}
	dc_bpf_close(st->bpf); /* nothing stays attached past this point */
	st->bpf = NULL;
	close(st->cons_fd);
	int status = 0;
	while (waitpid(st->cons_pid, &status, 0) < 0 && errno == EINTR)
		;
	if (st->status[0])
		unlink(st->status);
	/* the consumer is the user's: believe its "done" only as far as root can check it:
	 * after our "end", a clean exit, and the trace root named */
	unsigned long long ev, lo;
	int at = 0;
	int ok = done[0] && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
		 sscanf(done, "done %llu %llu %n", &ev, &lo, &at) == 2 && at > 0 &&
		 !strcmp(done + at, st->trace);
	if (ok)
		say(st->ctl, "done %llu %llu %s", ev, st->lost, st->trace);
	else
		say(st->ctl, "done 0 %llu -", st->lost);
	return ok ? 0 : DC_STEP_FAIL;
}

static const char step_help[] =
	"usage: datacrumbs step --job ID --step ID --node NAME --uid UID --gid GID --cwd DIR\n"
	"                       --exe ARGV0 --control FD [--path LIST] [--ld-library-path LIST]\n"
	"                       [--output DIR] [--site FILE] [--status-dir DIR]\n"
	"                       -- SCRIPT [SCRIPT ARGS]\n"
	"Site mode's tracer of one job step on this node, started as root by the SPANK plugin\n"
	"(docs/site.md): attaches the script's probes as root, runs the script, the consumer and\n"
	"the writer as the job's user, traces the tasks the plugin names on FD, and writes\n"
	"DIR/<job>.<step>-<node>.pfw.gz (mode 0600, the user's).\n";

int dc_step_main(int argc, char **argv)
{
	struct step S = { .ctl = -1, .cons_fd = -1, .status_dir = STATUS_DIR }, *st = &S;
	long uid = -1, gid = -1;
	/* first: a SIGTERM from now on ends the step in order (its trace finished) */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(step_help, stdout);
			return 0;
		}
		if (!strcmp(a, "--")) {
			st->script_argv = &argv[i + 1];
			break;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "datacrumbs step: %s needs a value\n%s", a, step_help);
			return 2;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "--job")) st->job = v;
		else if (!strcmp(a, "--step")) st->stepid = v;
		else if (!strcmp(a, "--node")) st->node = v;
		else if (!strcmp(a, "--cwd")) st->cwd = v;
		else if (!strcmp(a, "--exe")) st->argv0 = v;
		else if (!strcmp(a, "--path")) st->path = v;
		else if (!strcmp(a, "--ld-library-path")) st->ldpath = v;
		else if (!strcmp(a, "--output")) st->output = v;
		else if (!strcmp(a, "--site")) st->site_file = v;
		else if (!strcmp(a, "--status-dir")) st->status_dir = v;
		else if (!strcmp(a, "--uid")) uid = strtol(v, NULL, 10);
		else if (!strcmp(a, "--gid")) gid = strtol(v, NULL, 10);
		else if (!strcmp(a, "--control")) st->ctl = (int)strtol(v, NULL, 10);
		else {
			fprintf(stderr, "datacrumbs step: unknown option %s\n%s", a, step_help);
			return 2;
		}
	}
	if (!st->job || !st->stepid || !st->node || !st->cwd || !st->argv0 || uid < 0 ||
	    gid < 0 || st->ctl < 0 || !st->script_argv || !st->script_argv[0]) {
		fprintf(stderr, "datacrumbs step: --job, --step, --node, --uid, --gid, --cwd, "
			"--exe, --control and -- SCRIPT are required\n%s", step_help);
		return 2;
	}
	for (const char *p = st->job; *p; p++) /* they name files: no '/' */
		if (*p == '/' || strchr(st->stepid, '/') || strchr(st->node, '/')) {
			fprintf(stderr, "datacrumbs step: --job, --step, --node: no '/'\n");
			return 2;
		}
	if (fcntl(st->ctl, F_SETFD, FD_CLOEXEC)) {
		fprintf(stderr, "datacrumbs step: --control %d: %s\n", st->ctl, strerror(errno));
		return 2;
	}
	if (getuid() != 0 || geteuid() != 0) {
		snprintf(st->err, sizeof(st->err), "datacrumbs step runs as root (started by the "
			 "SPANK plugin); use `datacrumbs run` as a user");
		return refuse(st);
	}
	st->uid = (uid_t)uid;
	st->gid = (gid_t)gid;
	struct passwd *pw = getpwuid(st->uid);
	if (!pw || st->uid == 0) {
		snprintf(st->err, sizeof(st->err), pw ? "site mode does not trace root's jobs "
			 "(use datacrumbs run)" : "uid %ld: no such user", uid);
		return refuse(st);
	}
	snprintf(st->user, sizeof(st->user), "%s", pw->pw_name);
	snprintf(st->home, sizeof(st->home), "%s", pw->pw_dir);
	if (dc_site_load(st->site_file, &st->site, st->err, sizeof(st->err)) || find_script(st))
		return refuse(st);
	snprintf(st->trace, sizeof(st->trace), "%s/%s.%s-%s.pfw.gz",
		 st->output ? st->output : st->cwd, st->job, st->stepid, st->node);

	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	uint64_t t0 = (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
	if (sigfd < 0 || run_declare(st, sigfd) || attach(st, t0) || start_consumer(st, t0)) {
		int rc = refuse(st);
		dc_bpf_close(st->bpf);
		dc_wire_reqs_free(&st->reqs);
		return rc;
	}
	open_status(st);
	say(st->ctl, "ready %d", st->nprobes);
	int rc = serve(st, sigfd);
	dc_wire_reqs_free(&st->reqs);
	return rc;
}
