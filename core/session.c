/* session.c: runs one trace session: privileges, script, probe resolution, the child
 * held before exec until every probe is attached, the libuv loop, signals, the trace end. */
#define _GNU_SOURCE
#include "session.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <uv.h>

#include "attach.h"
#include "consumer.h"
#include "dc_features.h"
#include "kbtf.h"
#include "dlopen.h"
#include "hold.h"
#include "elfsym.h"
#include "kmech.h"
#include "lua_api.h"
#include "probeset.h"
#include "profile.h"
#include "resolve.h"
#include "spool.h"
#include "outfile.h"
#include "trust.h"
#include "util.h"
#include "writer.h"
#include "pytools.h"

/* The user CMD runs as (-u USER), resolved before the start. */
struct run_as {
	int set;                  /* -u given */
	uid_t uid;
	gid_t gid;
	char name[64];
};

struct session {
	const struct dc_opts *o;
	uv_loop_t loop;
	uv_poll_t rb_poll, pidfd_poll;
	uv_signal_t sigchld;
	uv_poll_t sig_poll;       /* signalfd of the signals ended by forwarding them */
	int sigfd;
	sigset_t oldmask;         /* the mask before we blocked them: the command's */
	uv_timer_t flush_timer;
	uv_timer_t drain_timer;   /* reads the ring buffer between wakeups */
	uv_timer_t profile_timer; /* profile mode: writes each ended interval's counters */
	struct dc_profile *prof;  /* the run's totals, and profile mode's aggregates */
	uint64_t interval_ns;     /* profile mode's interval, 0: trace mode */
	int standby;              /* --auto-profile: trace mode, profile mode on stand-by */
	uint64_t ov_lost, ov_seen; /* --auto-profile: lost and delivered records at the last
				      check (the loss is judged over the calls since then) */
	uint64_t st_written, st_lost, st_ns; /* the status line's last figures, its time */
	struct dc_bpf *bpf;
	struct dc_dlopen *dl;     /* requests waiting for a library loaded at run time */
	struct dc_hold *hold;     /* ptrace holds of loading threads (NULL: none) */
	char nohold[160];         /* why loading threads are not held, "" when they are */
	struct dc_script *script;
	struct dc_consumer *cons;
	struct dc_writer *w;
	int child;           /* the traced root process */
	int started;         /* we forked it (vs -p) */
	int status;          /* its wait status */
	int cmd_ended;       /* it has exited (status is set); the run may wait for the rest
			        of the traced tree */
	int done;
	int cut;             /* the writer failed: the trace is incomplete */
	int draining;        /* inside dc_consumer_drain */
	int cmd_bad;         /* CMD cannot run as given (not an ELF, bad #!, missing library) */
	int pidfd;
	struct dc_outspec out;    /* -o and how the trace file is created */
	char trace_path[PATH_MAX];
	int status_line;     /* a live status line is on stderr (a terminal) */
	/* what the steps of dc_session_run hand on to the next ones */
	int rc;                   /* the exit code so far (DC_EXIT_FAIL until the run ends) */
	struct run_as ra;         /* -u USER */
	int go, stfd;             /* the held child's start and exec-status pipes, -1: closed */
	int nattached;            /* probes attached */
	uint64_t t0;              /* the run's start, CLOCK_MONOTONIC ns */
	uint64_t stats[DC_STAT_NR];
	char by_shard[DC_MAX_SHARDS * 21]; /* lost records per ring buffer, "N,N,...": the end record's */
	char exec[PATH_MAX];      /* the traced executable */
	char script_path[PATH_MAX]; /* the script's file, as found (recover runs it again) */
	char name[256];           /* its name, as ps shows it (process_name, trace file) */
	char host[256];
	char err[PATH_MAX + 1024];
	const struct dc_consume *site; /* site mode's consumer (dc_session_consume), or NULL */
	uv_poll_t ctl_poll;       /* site mode: root's control socket */
	char ctl_buf[256];
	size_t ctl_len;
	uint64_t final_events;    /* close_trace: the events that reached the file */
	struct dc_spool *spool;   /* trace mode's spool (core/spool.h), NULL: decoded live */
	int spool_err;            /* what stopped the spooling (EFBIG: --spool-size), 0: none */
	int replayed;             /* the spool was read into the trace (replay) */
};


static void fail(const char *what)
{
	fprintf(stderr, "datacrumbs: %s\n", what);
}

/* Root, or CAP_BPF + CAP_PERFMON (kernel >= 5.8), or CAP_SYS_ADMIN. capget(2). */
static int check_privileges(char *err, size_t errlen)
{
	int admin = dc_cap_effective(CAP_SYS_ADMIN);
	if (admin < 0) {
		snprintf(err, errlen, "cannot read capabilities: %s", strerror(errno));
		return -1;
	}
	if (admin || (dc_cap_effective(CAP_BPF) == 1 && dc_cap_effective(CAP_PERFMON) == 1))
		return 0;
	snprintf(err, errlen, "permission denied: datacrumbs needs root, or CAP_BPF and "
		 "CAP_PERFMON (try sudo)");
	return -1;
}

/* dc_emit_fn: a script's dc.emit / dc.counter record goes to the consumer's writer. */
static void emit_record_cb(void *ctx, struct dc_record *r, int counter)
{
	dc_consumer_emit(ctx, r, counter);
}

/* dc_stats_fn: the counters dc.stats() shows, from the consumer and the BPF stats map. */
static void stats_cb(void *ctx, uint64_t out[DC_SS_NR])
{
	struct session *s = ctx;
	uint64_t st[DC_STAT_NR];
	dc_bpf_stats(s->bpf, st);
	out[DC_SS_EVENTS] = dc_consumer_written(s->cons) + dc_consumer_spooled(s->cons);
	out[DC_SS_DROPPED] = dc_consumer_dropped(s->cons) + dc_profile_dropped(s->prof);
	out[DC_SS_LOST] = st[DC_STAT_LOST];
	out[DC_SS_TOO_DEEP] = st[DC_STAT_DEEP];
	out[DC_SS_UNPAIRED] = st[DC_STAT_UNPAIRED];
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC, ns: shifts kernel timestamps to the epoch. */
static int64_t mono_to_real(void)
{
	struct timespec r, m, r2;
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_REALTIME, &r2);
	int64_t real = ((int64_t)r.tv_sec * 1000000000 + r.tv_nsec +
			(int64_t)r2.tv_sec * 1000000000 + r2.tv_nsec) / 2;
	return real - ((int64_t)m.tv_sec * 1000000000 + m.tv_nsec);
}

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/* The trace cannot be written (errno e): said once, in one line; the command goes on
 * untouched, what reached the file stays readable (writer.h dc_writer_on_disk). */
static void cut(struct session *s, int e)
{
	if (s->cut)
		return;
	s->cut = 1;
	fprintf(stderr, "datacrumbs: cannot write %s: %s: the trace is cut here (%s goes on, "
		"untraced from now)\n", s->trace_path, e == ENOENT
		? "the file was removed (or its directory)" : strerror(e),
		s->started ? s->o->cmd[0] : "the process");
}

static void check_overload(struct session *s);

/* Records read from the ring buffer before the event loop gets control back (its timers:
 * the flush, the status line, --auto-profile's check), when records keep arriving. */
#define DC_DRAIN_BUDGET 1024

/* Drains the ring buffer: every record (all), or up to DC_DRAIN_BUDGET of them (the rest
 * is read when the loop comes back: the ring buffer's fd stays readable); a failure cuts
 * the trace (reported once). Returns the records read. */
static long drain_some(struct session *s, int all)
{
	/* a script that runs the loop from its callback (luv's uv.run) must not make us
	 * read the records being handled a second time */
	if (s->draining)
		return 0;
	s->draining = 1;
	int n;
	long got = 0;
	do {
		if (s->standby && !s->done)
			check_overload(s); /* before each read: a slow read is what overloads */
		n = dc_consumer_drain(s->cons, DC_DRAIN_BUDGET);
		got += n > 0 ? n : 0;
	} while (n >= 0 && all && dc_consumer_yielded(s->cons));
	s->draining = 0;
	if (n < 0)
		cut(s, errno);
	return got;
}

/* Drains every record waiting. */
static void drain(struct session *s)
{
	drain_some(s, 1);
}

/* While the command runs, the events are formatted in the cores' idle time
 * (dc_consumer_defer; DATACRUMBS_DEFER=MiB for all queues; unset or 0: off, the default
 * until it is shown never to lose what the default keeps: docs/design.md). Not
 * with a Lua callback per event: it may be slow (a queue of 64 MiB could take it
 * minutes after the command ended), and --auto-profile must see its loss when it is. */
static void defer_merge(struct session *s)
{
	const char *e = getenv("DATACRUMBS_DEFER");
	if (!e || !*e)
		return;
	char *end;
	errno = 0;
	unsigned long long mib = strtoull(e, &end, 10);
	if (errno || *end || *e == '-' || mib > (SIZE_MAX >> 20)) {
		fprintf(stderr, "datacrumbs: DATACRUMBS_DEFER=%s: not a number of MiB (e.g. 64; 0: "
			"off): not deferred\n", e);
		return;
	}
	if (!mib || s->spool) /* spooling: nothing is formatted during the run anyway */
		return;
	if (dc_script_wants_events(s->script))
		fprintf(stderr, "datacrumbs: DATACRUMBS_DEFER: not deferred, the script has an "
			"event callback (dc.on_event)\n");
	else if (dc_consumer_defer(s->cons, (size_t)mib << 20))
		fprintf(stderr, "datacrumbs: DATACRUMBS_DEFER: not deferred (%s; it needs root "
			"and drain threads: --drain-threads 1 or more)\n", strerror(errno));
}

static void finish(struct session *s)
{
	if (s->done)
		return;
	s->done = 1;
	dc_consumer_lift(s->cons);
	drain(s);
	uv_stop(&s->loop);
}

/* After CMD exited: are processes it started still traced (a daemon that double-forked
 * and outlived it)? The run then goes on until the last one ends, as strace -f does
 * (--end-with-cmd: no). `say`: tell the user once which ones. */
static int tree_alive(struct session *s, int say)
{
	int pids[8];
	int n = s->o->end_with_cmd ? 0 : dc_bpf_traced(s->bpf, s->child, pids, 8);
	if (n <= 0)
		return 0;
	if (say) {
		char list[128];
		size_t k = 0;
		for (int i = 0; i < n && i < 8 && k < sizeof(list) - 16; i++)
			k += snprintf(list + k, sizeof(list) - k, "%s%d", i ? " " : "", pids[i]);
		fprintf(stderr, "datacrumbs: %s exited; %d process%s it started %s still traced "
			"(%s%s): the trace ends when %s (Ctrl-C ends it now; --end-with-cmd "
			"does not wait)\n", s->o->cmd[0], n, n > 1 ? "es" : "",
			n > 1 ? "are" : "is", list, n > 8 ? " ..." : "",
			n > 1 ? "they end" : "it ends");
	}
	return 1;
}

static void on_ringbuf(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	drain_some(h->data, 0);
}

/* BPF wakes us only when 1/8 of the ring buffer waits (bpf/uprobe.bpf.c wakeup_bytes);
 * smaller amounts are read on this timer: every DC_DRAIN_MS while records come, its
 * period doubling up to DC_DRAIN_IDLE_MS while none do (an idle tracer wakes ~6 times a
 * second, not 50: each wake-up is a timer interrupt, a VM exit here). */
#define DC_DRAIN_MS 20
#define DC_DRAIN_IDLE_MS 160

/* Profile mode: this long after an interval ends, its aggregates are complete (the
 * probes that ran at its end have finished; its records were drained). */
#define DC_PROFILE_LAG_MS 30

static void on_profile(uv_timer_t *t);
static uint64_t mono_ns(void);

/* --auto-profile: profile mode from now. BPF aggregates the calls (dc_bpf_profile_start),
 * the consumer aggregates the records still in the ring buffer and those that name a path,
 * the profile timer writes the intervals; the trace gets an `overload` record
 * (docs/trace-format.md) with the figures that decided it. */
static void go_profile(struct session *s, uint64_t lost, uint64_t seen, double pct)
{
	if (dc_bpf_profile_start(s->bpf) < 0) /* the records then aggregate here */
		fprintf(stderr, "datacrumbs: warning: --auto-profile: cannot fill the profile "
			"map: %s (calls keep coming as records, aggregated by the consumer)\n",
			strerror(errno));
	s->standby = 0;
	dc_consumer_set_profile(s->cons, s->prof, 1);
	dc_writer_begin(s->w, dc_consumer_own_id(s->cons), "overload", "datacrumbs", s->child,
			s->child, now_us(), 0);
	dc_writer_arg_str(s->w, "reason", "loss");
	dc_writer_arg_str(s->w, "mode", "profile");
	dc_writer_arg_double(s->w, "loss_pct", pct);
	dc_writer_arg_double(s->w, "threshold_pct", s->o->auto_profile_pct);
	dc_writer_arg_uint(s->w, "lost", lost);
	dc_writer_arg_uint(s->w, "calls", seen + lost);
	dc_writer_arg_uint(s->w, "interval_us", s->interval_ns / 1000);
	dc_writer_end(s->w);
	dc_consumer_count(s->cons, 1);
	if (!s->o->quiet)
		fprintf(stderr, "%sdatacrumbs: %.1f %% of the last %llu calls lost (--auto-profile "
			"%g): profile mode from now\n", s->status_line ? "\r\033[K" : "", pct,
			(unsigned long long)(seen + lost), s->o->auto_profile_pct);
	uint64_t iv = s->interval_ns / 1000000, since = (mono_ns() - s->t0) / 1000000;
	uint64_t next = iv - since % iv; /* to the end of the interval in progress */
	uv_timer_start(&s->profile_timer, on_profile, next + DC_PROFILE_LAG_MS, iv);
}

/* --auto-profile: the loss over the records since the last check (lost, and those the
 * consumer got); past the threshold, profile mode. */
static void check_overload(struct session *s)
{
	uint64_t st[DC_STAT_NR] = { 0 };
	dc_bpf_stats(s->bpf, st);
	uint64_t seen = dc_consumer_written(s->cons) + dc_consumer_dropped(s->cons);
	uint64_t dl = st[DC_STAT_LOST] - s->ov_lost, ds = seen - s->ov_seen;
	s->ov_lost = st[DC_STAT_LOST];
	s->ov_seen = seen;
	if (dl == 0)
		return;
	double pct = 100.0 * dl / (dl + ds);
	if (pct > s->o->auto_profile_pct)
		go_profile(s, dl, ds, pct);
}

static void on_drain(uv_timer_t *t)
{
	struct session *s = t->data;
	uint64_t rep = uv_timer_get_repeat(t);
	if (drain_some(s, 0) > 0)
		rep = DC_DRAIN_MS;
	else if (rep < DC_DRAIN_IDLE_MS)
		rep *= 2;
	uv_timer_set_repeat(t, rep); /* from its next expiry */
	if (s->cmd_ended && !s->done && !tree_alive(s, 0))
		finish(s); /* the last of the traced tree has ended */
	/* a script that ran the loop itself (luv's uv.run in a callback) may have been inside
	 * it when the command ended: libuv clears the stop request when that inner run
	 * returns, so ask again until the outer run ends */
	if (s->done)
		uv_stop(&s->loop);
}


static uint64_t mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + t.tv_nsec;
}

static void on_profile(uv_timer_t *t)
{
	struct session *s = t->data;
	if (dc_profile_flushing(s->prof)) /* a callback of the flush ran the loop (uv.run) */
		return;
	drain(s);
	dc_consumer_count(s->cons, dc_profile_flush(s->prof, mono_ns() - DC_PROFILE_LAG_MS *
						    1000000ULL, 0));
}

/* dc_read_fn: dc.aggregates() and dc.totals() read the run's profile. */
static void read_cb(void *ctx, int totals, void (*visit)(const struct dc_prow *row, void *arg),
		    void *arg)
{
	struct session *s = ctx;
	if (!dc_profile_flushing(s->prof)) /* not into the tables a flush is walking */
		drain(s);
	dc_profile_read(s->prof, totals, visit, arg);
}

static void on_flush(uv_timer_t *t)
{
	struct session *s = t->data;
	if (!s->cut && dc_writer_handoff(s->w) < 0)
		cut(s, errno);
	if (s->site && s->cons) { /* site mode: root keeps the status file */
		char line[48];
		int n = snprintf(line, sizeof(line), "events %llu\n",
				 (unsigned long long)dc_consumer_written(s->cons));
		if (write(s->site->ctl, line, (size_t)n) != n)
			finish(s);
	}
	if (s->status_line && s->cons) {
		uint64_t st[DC_STAT_NR] = { 0 };
		dc_bpf_stats(s->bpf, st);
		uint64_t wr = dc_consumer_written(s->cons) + dc_consumer_spooled(s->cons);
		uint64_t now = mono_ns();
		uint64_t dw = wr - s->st_written, dl = st[DC_STAT_LOST] - s->st_lost;
		double secs = s->st_ns && now > s->st_ns ? (now - s->st_ns) / 1e9 : 0;
		/* events/s and the loss over the last flush interval; the totals so far */
		fprintf(stderr, "\r\033[Kdatacrumbs: %.0f events/s, %.1f%% lost; %llu events, "
			"%llu lost%s\r", secs > 0 ? dw / secs : 0.0,
			dw + dl ? 100.0 * dl / (dw + dl) : 0.0, (unsigned long long)wr,
			(unsigned long long)st[DC_STAT_LOST],
			s->interval_ns && !s->standby ? " (profile mode)" : "");
		s->st_written = wr;
		s->st_lost = st[DC_STAT_LOST];
		s->st_ns = now;
	}
}

static void on_sigchld(uv_signal_t *h, int sig)
{
	struct session *s = h->data;
	int st;
	pid_t p;
	(void)sig;
	/* with holds, every seized thread's stops and exits come here too (__WALL) */
	while ((p = waitpid(-1, &st, WNOHANG | (s->hold ? __WALL : 0))) > 0) {
		if (WIFSTOPPED(st)) {
			if (s->hold)
				dc_hold_stopped(s->hold, p, st);
			continue;
		}
		if (s->hold)
			dc_hold_gone(s->hold, p);
		if (p == s->child && (WIFEXITED(st) || WIFSIGNALED(st))) {
			s->status = st;
			s->cmd_ended = 1;
			dc_consumer_lift(s->cons); /* what is queued is written at full speed */
			if (!tree_alive(s, 1))
				finish(s);
		}
	}
}

/* SIGINT, SIGTERM, SIGHUP, SIGQUIT come through a signalfd(2), which tells who sent them.
 * The command shares our process group, so a signal the terminal sent (Ctrl-C: si_code
 * SI_KERNEL) has reached it already, as under a shell; one sent to datacrumbs alone
 * (kill: SI_USER, SI_QUEUE) is passed on. With -p the process is left alone and the
 * trace ends. */
static void on_sigfd(uv_poll_t *h, int status, int events)
{
	struct session *s = h->data;
	struct signalfd_siginfo si;
	(void)status;
	(void)events;
	while (read(s->sigfd, &si, sizeof(si)) == sizeof(si)) {
		if (!s->started || s->cmd_ended)
			finish(s); /* -p, or CMD is gone and its descendants are waited for */
		else if (si.ssi_code != SI_KERNEL)
			kill(s->child, si.ssi_signo);
	}
}

/* The signals a run forwards to the command or ends on, read through the signalfd. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define NFORWARDED (sizeof(forwarded) / sizeof(forwarded[0]))

/* Blocks the forwarded signals and opens their signalfd (before anything else, so a
 * Ctrl-C during start-up is not lost). Returns 0, or -1 with errno. */
static int block_signals(struct session *s)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < NFORWARDED; i++)
		sigaddset(&set, forwarded[i]);
	if (sigprocmask(SIG_BLOCK, &set, &s->oldmask))
		return -1;
	s->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	return s->sigfd < 0 ? -1 : 0;
}

/* Signals that the traced program (a parent-notifying daemon) or a closed pipe (our
 * stderr) may send us: ignored, so they cannot end the tracer mid-trace. The command
 * gets the dispositions we had (restore_process). */
static const int ignored_signals[] = { SIGPIPE, SIGUSR1, SIGUSR2, SIGALRM };
#define NIGNORED (sizeof(ignored_signals) / sizeof(ignored_signals[0]))
static struct sigaction saved_actions[NIGNORED];
static int filled_std[3];   /* fds 0-2 we opened on /dev/null because they were closed */

static void guard_process(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	for (size_t i = 0; i < NIGNORED; i++)
		sigaction(ignored_signals[i], &ign, &saved_actions[i]);
	/* libuv and libbpf must not get fds 0-2 (libuv refuses to close them): fill the
	 * closed ones, and close them again in the command */
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) == fd)
			filled_std[fd] = 1;
}

/* In the held child, before exec: what the command should have had. */
static void restore_process(void)
{
	for (size_t i = 0; i < NIGNORED; i++)
		sigaction(ignored_signals[i], &saved_actions[i], NULL);
	for (int fd = 0; fd < 3; fd++)
		if (filled_std[fd])
			close(fd);
}

/* A forwarded signal that arrived before the command started: its number, or 0. */
static int early_signal(struct session *s)
{
	struct signalfd_siginfo si;
	return read(s->sigfd, &si, sizeof(si)) == sizeof(si) ? (int)si.ssi_signo : 0;
}

static void on_pidfd(uv_poll_t *h, int status, int events)
{
	(void)status;
	(void)events;
	finish(h->data);
}

static void close_handle(uv_handle_t *h, void *arg)
{
	(void)arg;
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* -u USER: a user name or a numeric uid, looked up in the passwd database (getpwnam(3)).
 * Only root may give it (setuid(2) needs CAP_SETUID). 0, or -1 with err. */
static int resolve_run_as(const char *user, struct run_as *ra, char *err, size_t errlen)
{
	struct passwd *pw = getpwnam(user);
	char *end;
	long n = strtol(user, &end, 10);
	if (!pw && !*end && n >= 0)
		pw = getpwuid((uid_t)n);
	if (!pw) {
		snprintf(err, errlen, "-u %s: no such user", user);
		return -1;
	}
	if (getuid() != 0 || geteuid() != 0) {
		snprintf(err, errlen, "-u %s: running CMD as another user needs root", user);
		return -1;
	}
	ra->set = 1;
	ra->uid = pw->pw_uid;
	ra->gid = pw->pw_gid;
	snprintf(ra->name, sizeof(ra->name), "%s", pw->pw_name);
	return 0;
}

/* In the held child: become ra's user, with its supplementary groups (initgroups(3)),
 * group then user, as strace -u and su do. Returns 0, or an errno value. */
static int become(const struct run_as *ra)
{
	if (!ra->set)
		return 0;
	if (initgroups(ra->name, ra->gid) || setgid(ra->gid) || setuid(ra->uid))
		return errno;
	return 0;
}

/* Forks the command's process, held before exec until *go is written to; it execs with
 * signal mask `mask`, as ra's user when -u was given. Returns its pid, or -1 with errno
 * (nothing left open); the child reports a failure's errno (of -u's setuid, or of exec)
 * through the close-on-exec status pipe. */
static int spawn_held(char *const argv[], const char *path, const sigset_t *mask,
		      const struct run_as *ra, int *go, int *status)
{
	int gop[2], stp[2];
	if (pipe2(gop, O_CLOEXEC))
		return -1;
	if (pipe2(stp, O_CLOEXEC)) {
		int e = errno;
		close(gop[0]);
		close(gop[1]);
		errno = e;
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(gop[0]);
		close(gop[1]);
		close(stp[0]);
		close(stp[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		char c;
		close(gop[1]);
		close(stp[0]);
		/* none of ours is released at its exec (util.h) */
		dc_close_fds((int[]){ gop[0], stp[1] }, 2, 1);
		ssize_t n;
		do
			n = read(gop[0], &c, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(DC_EXIT_FAIL); /* datacrumbs gave up before the start */
		restore_process();
		sigprocmask(SIG_SETMASK, mask, NULL); /* the command gets the mask we had */
		int e = become(ra);
		if (e) {
			e = -e; /* negative: -u's change of user failed, not the exec */
			if (write(stp[1], &e, sizeof(e)) < 0)
				_exit(DC_EXIT_FAIL);
			_exit(DC_EXIT_FAIL);
		}
		execv(path, argv);
		e = errno;
		if (e == ENOEXEC) { /* a script without #!: /bin/sh runs it, as execvp(3) does */
			int n = 0;
			while (argv[n])
				n++;
			char **sh = calloc(n + 2, sizeof(char *));
			if (sh) {
				sh[0] = "/bin/sh";
				sh[1] = (char *)path;
				for (int i = 1; i < n; i++)
					sh[i + 1] = argv[i];
				execv("/bin/sh", sh);
				e = errno;
			}
		}
		if (write(stp[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gop[0]);
	close(stp[1]);
	*go = gop[1];
	*status = stp[0];
	return pid;
}

/* The command line as one string, for the start record's cmd_hash. */
static void join_args(char **v, char *out, size_t outlen)
{
	size_t n = 0;
	out[0] = 0;
	for (int i = 0; v && v[i] && n + 1 < outlen; i++)
		n += snprintf(out + n, outlen - n, "%s%s", i ? " " : "", v[i]);
}

/* The `start` record of the trace (cat datacrumbs), format contract "tracer's own". */
/* What /proc says of process pid: its command line (args joined by spaces, into cmd),
 * the basename of argv[0] (into name), its cwd and its parent's pid. Returns the ppid,
 * or -1 when /proc/PID cannot be read. proc(5). */
static int proc_info(int pid, char *cmd, size_t cmdlen, char *name, size_t namelen,
		     char *cwd, size_t cwdlen)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	const char *arg0 = strrchr(buf, '/') && strrchr(buf, '/') < buf + strlen(buf)
		? strrchr(buf, '/') + 1 : buf;
	snprintf(name, namelen, "%s", arg0[0] ? arg0 : "?");
	for (size_t i = 0; i + 1 < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	snprintf(cmd, cmdlen, "%s", buf);
	snprintf(path, sizeof(path), "/proc/%d/cwd", pid);
	ssize_t k = readlink(path, cwd, cwdlen - 1);
	cwd[k > 0 ? k : 0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	int ppid = -1;
	if (f) {
		/* pid (comm) state ppid ...: comm may hold spaces and ')', so from the last ')' */
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = 0;
		char *e = strrchr(buf, ')');
		if (e)
			sscanf(e + 1, " %*c %d", &ppid);
		fclose(f);
	}
	return ppid;
}

/* The `start` record of the trace (cat datacrumbs), format contract "tracer's own":
 * cmd_hash, exec_hash, cwd of the traced root process and its parent's pid. */
/* The start record's facts: the command line, the cwd and the parent of the traced
 * process (ours, or for -p what /proc says). Returns the ppid. */
static int start_facts(struct session *s, char **cmdv, char *cmdline, size_t cmdlen, char *cwd,
		       size_t cwdlen)
{
	char name[256];
	int ppid;
	if (s->started) {
		join_args(cmdv, cmdline, cmdlen);
		if (!getcwd(cwd, cwdlen))
			snprintf(cwd, cwdlen, "/");
		ppid = getpid(); /* we are the command's parent */
	} else {
		ppid = proc_info(s->child, cmdline, cmdlen, name, sizeof(name), cwd, cwdlen);
		if (!cwd[0])
			snprintf(cwd, cwdlen, "/");
	}
	return ppid;
}

static void write_start(struct session *s, const char *exec, char **cmdv, uint64_t ts)
{
	char cmdline[4096], cwd[PATH_MAX];
	int ppid = start_facts(s, cmdv, cmdline, sizeof(cmdline), cwd, sizeof(cwd));
	dc_writer_start(s->w, dc_consumer_own_id(s->cons), s->child, ts, cmdline, exec, cwd, ppid,
			DC_VERSION);
}

/* Without root (capabilities only), -p PID is allowed on the caller's own processes only:
 * real, effective and saved uid and gid all the caller's, as ptrace(2) "Ptrace access
 * mode checking" demands without CAP_SYS_PTRACE. 0, or -1 with err. proc(5) Uid:/Gid:. */
static int check_pid_owner(int pid, char *err, size_t errlen)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	if (!f) {
		snprintf(err, errlen, "-p %d: %s", pid, errno == ENOENT
			 ? "no such process (give the PID of a running process, see ps)"
			 : strerror(errno));
		return -1;
	}
	unsigned long u[4] = { 0 }, g[4] = { 0 };
	int nu = 0, ng = 0;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Uid:", 4))
			nu = sscanf(line + 4, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]);
		else if (!strncmp(line, "Gid:", 4))
			ng = sscanf(line + 4, "%lu %lu %lu %lu", &g[0], &g[1], &g[2], &g[3]);
	}
	fclose(f);
	uid_t me = getuid();
	gid_t mg = getgid();
	int ok = nu >= 3 && ng >= 3;
	for (int i = 0; ok && i < 3; i++)
		ok = u[i] == me && g[i] == mg;
	if (!ok) {
		snprintf(err, errlen, "-p %d: refused: the process is not yours (uids %lu/%lu/%lu, "
			 "gids %lu/%lu/%lu; you are %u/%u): without root datacrumbs traces only "
			 "your own processes, as ptrace does", pid, u[0], u[1], u[2], g[0], g[1],
			 g[2], (unsigned)me, (unsigned)mg);
		return -1;
	}
	return 0;
}

/* A forwarded signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) pending, not yet read from the
 * signalfd: its number, or 0. Lets every set-up step end the run promptly. */
static int pending_signal(void)
{
	sigset_t p;
	if (sigpending(&p))
		return 0;
	for (size_t i = 0; i < NFORWARDED; i++)
		if (sigismember(&p, forwarded[i]))
			return forwarded[i];
	return 0;
}

/* Ends set-up when a signal is pending: says so (naming the step) and gives 128+N. */
static int interrupted(const char *step, int *rc)
{
	int sig = pending_signal();
	if (!sig)
		return 0;
	fprintf(stderr, "datacrumbs: %s while %s: stopped, nothing was traced\n",
		strsignal(sig), step);
	*rc = 128 + sig;
	return 1;
}

/* Step: runs the script (dc.probe requests, callbacks) in a new Lua state. Returns 0 when
 * there is something to trace, -1 when the run ends here (s->rc: the script's own end, or
 * the failure). */
static int run_script(struct session *s)
{
	const struct dc_opts *o = s->o;
	char script_path[PATH_MAX];
	struct dc_run_info info = { .output = o->output, .pid = o->pid,
				    .mode = o->mode == DC_MODE_PROFILE ? "profile"
					  : o->mode == DC_MODE_TRACE ? "trace" : NULL,
				    .interval_ns = o->interval_ns,
				    .cmd = o->cmd, .script_args = o->script_args,
				    .unsafe = o->unsafe };
	s->script = dc_script_new(&s->loop, &info);
	if (!s->script) {
		fail("cannot create the Lua state: out of memory");
		return -1;
	}
	int ran = dc_script_find(o->script, script_path, sizeof(script_path), s->err,
				 sizeof(s->err));
	snprintf(s->script_path, sizeof(s->script_path), "%s", script_path);
	if (!ran)
		ran = dc_script_run(s->script, script_path, s->err, sizeof(s->err));
	if (ran == 1) {         /* the script ended the run itself (dc.done: its --help) */
		s->rc = dc_script_done(s->script);
		return -1;
	}
	if (ran) {
		if (!interrupted("the script ran", &s->rc))
			fail(s->err);
		return -1;
	}
	if (!o->cmd && !o->pid && !s->site) {
		snprintf(s->err, sizeof(s->err), "%s --help did not end the run: nothing to trace "
			 "(give -- CMD [ARGS] or -p PID)", o->script);
		fail(s->err);
		return -1;
	}
	return 0;
}

/* Step: may this run trace at all: privileges, -u USER, -p PID's owner. 0, or -1. */
static int check_access(struct session *s)
{
	const struct dc_opts *o = s->o;
	if (check_privileges(s->err, sizeof(s->err))) { /* after the script: its --help needs none */
		fail(s->err);
		return -1;
	}
	if (o->user && resolve_run_as(o->user, &s->ra, s->err, sizeof(s->err))) {
		fail(s->err);
		return -1;
	}
	if (o->pid && !dc_invoker()->root && check_pid_owner(o->pid, s->err, sizeof(s->err))) {
		fail(s->err);
		return -1;
	}
	return 0;
}

/* Step: what is traced: CMD found as execvp(3) finds it, or -p PID's executable; the name
 * the trace file and process_name use; the host name. 0, or -1 (s->rc 127: no CMD). */
static int find_target(struct session *s)
{
	const struct dc_opts *o = s->o;
	/* what is traced: CMD resolved like execvp, or the running process */
	if (o->cmd) {
		if (dc_elf_which(o->cmd[0], s->exec, sizeof(s->exec), s->err, sizeof(s->err))) {
			fail(s->err);
			s->rc = 127;
			return -1;
		}
		s->started = 1;
	} else {
		char link[64];
		snprintf(link, sizeof(link), "/proc/%d/exe", o->pid);
		ssize_t n = readlink(link, s->exec, sizeof(s->exec) - 1);
		if (n < 0) {
			snprintf(s->err, sizeof(s->err), "-p %d: %s", o->pid, errno == ENOENT
				 ? "no such process (give the PID of a running process, see ps)"
				 : strerror(errno));
			fail(s->err);
			return -1;
		}
		s->exec[n] = 0;
		s->child = o->pid;
	}
	/* the name the trace file and process_name use: argv[0]'s basename, as ps shows */
	char scratch[PATH_MAX];
	if (s->started)
		snprintf(s->name, sizeof(s->name), "%.255s",
			 strrchr(s->exec, '/') ? strrchr(s->exec, '/') + 1 : s->exec);
	else
		proc_info(o->pid, scratch, sizeof(scratch), s->name, sizeof(s->name), scratch,
			  sizeof(scratch));
	if (gethostname(s->host, sizeof(s->host)))
		snprintf(s->host, sizeof(s->host), "localhost");
	s->host[sizeof(s->host) - 1] = 0;
	return 0;
}

/* Step: the mode and interval, and the trace's path (checked before anything is loaded).
 * 0, or -1. */
static int choose_output(struct session *s)
{
	const struct dc_opts *o = s->o;
	/* the mode: the command line's, else the script's (dc.mode), else trace */
	uint64_t script_iv = 0; /* set by dc_script_mode only: --mode skips it */
	int mode = o->mode ? o->mode : dc_script_mode(s->script, &script_iv);
	if (mode != DC_MODE_PROFILE && o->auto_profile_pct >= 0)
		s->standby = 1; /* trace mode, profile mode loaded on stand-by */
	else if (o->auto_profile_pct >= 0)
		fprintf(stderr, "datacrumbs: warning: --auto-profile is for trace mode: ignored in "
			"profile mode\n");
	if (mode == DC_MODE_PROFILE || s->standby)
		s->interval_ns = o->interval_ns ? o->interval_ns
			       : script_iv ? script_iv : 1000000000ULL;
	else if (o->interval_ns)
		fprintf(stderr, "datacrumbs: warning: --interval is for profile mode (--mode "
			"profile): ignored in trace mode\n");
	/* the output target, before anything is loaded: a FIFO, a device or an existing
	 * file is refused here, and nothing is opened that could block */
	if (dc_out_path(&s->out, s->name, s->host, s->started ? 0 : o->pid, s->trace_path,
			sizeof(s->trace_path), s->err, sizeof(s->err))) {
		fail(s->err);
		return -1;
	}
	if (o->cmd && dc_invoker()->sudo && !s->ra.set)
		fprintf(stderr, "datacrumbs: note: under sudo %s runs as root (give -u %s to run "
			"it as you)\n", o->cmd[0], dc_invoker()->name);
	return 0;
}

/* Step: opens the BPF side (uprobe.bpf.c and its maps) and resolves the script's requests
 * to probes. 0, or -1 (s->rc 127 when CMD cannot run). */
static int load_probes(struct session *s)
{
	const struct dc_opts *o = s->o;
	s->t0 = mono_ns();
	s->bpf = dc_bpf_open(o->ringbuf_bytes, o->shards, s->interval_ns, s->t0, !dc_invoker()->root,
			     s->err, sizeof(s->err));
	if (!s->bpf) {
		fail(s->err);
		return -1;
	}
	if (s->standby)
		dc_bpf_profile_standby(s->bpf);
	int nreq;
	const struct dc_probe_req *reqs = dc_script_reqs(s->script, &nreq);
	if (nreq == 0) {
		snprintf(s->err, sizeof(s->err), "%s asks for no probes (call datacrumbs.probe in "
			 "it)", o->script);
		fail(s->err);
		return -1;
	}
	struct dc_sysset claimed;
	dc_resolve_claimed(reqs, nreq, &claimed);
	s->dl = dc_dlopen_new(s->bpf, reqs, nreq, &claimed, o->quiet);
	unsigned char *missing = calloc((size_t)nreq, 1);
	if (!s->dl || !missing) {
		free(missing);
		fail("out of memory");
		return -1;
	}
	int bad = 0;
	int nprobes = dc_probeset_add(s->bpf, reqs, nreq, s->exec, o->cmd ? o->cmd + 1 : NULL,
				      s->started ? 0 : o->pid, &bad, missing, s->err,
				      sizeof(s->err));
	s->cmd_bad = bad && s->started;
	for (int i = 0; nprobes >= 0 && i < nreq; i++)
		if (missing[i]) /* its library may come with a dlopen: watched for */
			dc_dlopen_wait_for(s->dl, i);
	free(missing);
	if (nprobes < 0) {
		fail(s->err);
		if (s->cmd_bad)
			s->rc = 127; /* as a shell reports a command it cannot execute */
		return -1;
	}
	if (interrupted("the probes were resolved", &s->rc))
		return -1;
	return 0;
}

static int start_spool(struct session *s, int64_t m2r);

/* Trace mode spools (core/spool.h): during the run the drain threads only copy records
 * into TRACE.spool/, decoded, passed to the script and written after it (docs/design.md).
 * Not with --no-spool, profile mode or --auto-profile (they act on the records as they
 * come), a script that requires luv (it acts during the run), site mode, or without
 * drain threads. Returns why not (NULL: it spools), "" in site mode (nothing to say). */
static const char *no_spool(const struct session *s)
{
	const struct dc_opts *o = s->o;
	return s->site ? "" : o->no_spool ? "--no-spool" : s->interval_ns ? "profile mode"
	     : dc_script_live(s->script) ? "the script requires luv: it runs live"
	     : o->drain_threads == 0 ? "--drain-threads 0" : NULL;
}

/* Before the trace file is made: a spool of the same name is there (a killed run's, or
 * something planted): the run stops with one line and replaces no trace. 0, or -1. */
static int spool_name_free(struct session *s)
{
	const char *why = no_spool(s);
	struct stat st;
	char dir[PATH_MAX + 8];
	if (why && s->o->spool_bytes && *why)
		fprintf(stderr, "datacrumbs: warning: --spool-size is for trace mode's spool: "
			"ignored (%s)\n", why);
	snprintf(dir, sizeof(dir), "%s.spool", s->trace_path);
	if (why || lstat(dir, &st))
		return 0;
	if (S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		snprintf(s->err, sizeof(s->err), "%.1500s: a killed run's spool is there "
			 "(`datacrumbs recover %.1500s` writes its trace; or remove it)", dir, dir);
	else
		snprintf(s->err, sizeof(s->err), "%.1500s is in the way of this run's spool (not "
			 "one of yours): remove it, or give -o another name", dir);
	return -1;
}

/* After the trace file is made (its name and directory checked): the spool beside it,
 * its journal begun and the consumer spooling, bounded by --spool-size, else by half the
 * free disk. One that cannot be made is said, and the run decodes live. */
static void make_spool(struct session *s, int64_t m2r)
{
	if (no_spool(s))
		return;
	s->spool = dc_spool_create(s->trace_path, dc_bpf_nshards(s->bpf), s->err,
				   sizeof(s->err));
	if (!s->spool || start_spool(s, m2r)) {
		fprintf(stderr, "datacrumbs: warning: %s: the events are decoded while the "
			"command runs\n", s->err);
		if (s->spool)
			dc_spool_remove(s->spool);
		s->spool = NULL;
	}
}

/* The DC_J_SCRIPT entry: what recover runs the script again with (its callbacks decide
 * what the trace holds: drops, tags, summaries): u32 unsafe, u32 its args, u32 CMD's,
 * then the script's path, -o as given ("" none), the args and CMD, each NUL-terminated. */
static int note_script(struct session *s)
{
	const struct dc_opts *o = s->o;
	uint32_t head[3] = { (uint32_t)o->unsafe, 0, 0 };
	const void *ptr[7] = { head, s->script_path, o->output ? o->output : "" };
	size_t len[7] = { sizeof(head), strlen(s->script_path) + 1,
			  o->output ? strlen(o->output) + 1 : 1 };
	char *lists[2] = { NULL, NULL };
	size_t sizes[2] = { 0, 0 };
	char **v[2] = { o->script_args, o->cmd };
	for (int k = 0; k < 2; k++) {
		FILE *f = open_memstream(&lists[k], &sizes[k]);
		for (int i = 0; f && v[k] && v[k][i]; i++, head[k + 1]++)
			fwrite(v[k][i], 1, strlen(v[k][i]) + 1, f);
		if (f)
			fclose(f);
		ptr[3 + k] = lists[k] ? lists[k] : "";
		len[3 + k] = lists[k] ? sizes[k] : 0;
	}
	int rc = dc_spool_note(s->spool, DC_J_SCRIPT, 5, ptr, len);
	free(lists[0]);
	free(lists[1]);
	return rc;
}

/* The spool's journal begun (its start facts, the script) and the consumer spooling into
 * it, bounded by --spool-size, else by half the free disk. 0, or -1 with s->err. */
static int start_spool(struct session *s, int64_t m2r)
{
	const struct dc_opts *o = s->o;
	unsigned n = dc_bpf_nshards(s->bpf);
	char cmdline[4096], cwd[PATH_MAX];
	struct dc_jstart st = { .magic = "DCSPOOL1", .event_size = sizeof(struct dc_event),
				.probe_size = sizeof(struct dc_probe),
				.layer_size = sizeof(struct dc_layer),
				.func_size = sizeof(struct dc_func), .nshards = n, .pid = s->child,
				.compress = o->compress, .mono_to_real_ns = m2r,
				.start_us = now_us() };
	st.ppid = start_facts(s, o->cmd, cmdline, sizeof(cmdline), cwd, sizeof(cwd));
	snprintf(st.version, sizeof(st.version), "%s", DC_VERSION);
	const void *ptr[7] = { &st, s->host, s->trace_path, s->name, cmdline, s->exec, cwd };
	size_t len[7] = { sizeof(st) };
	for (int i = 1; i < 7; i++)
		len[i] = strlen(ptr[i]) + 1;
	uint64_t bound = o->spool_bytes ? o->spool_bytes : dc_spool_room(s->spool);
	if (dc_spool_note(s->spool, DC_J_HEAD, 7, ptr, len) || note_script(s) ||
	    dc_consumer_spool(s->cons, s->spool, bound ? bound : 1)) {
		snprintf(s->err, sizeof(s->err), "cannot start the spool %s: %s",
			 dc_spool_dir(s->spool), strerror(errno));
		return -1;
	}
	return 0;
}


/* Creates the trace file s->trace_path (the invoking user's: under sudo the caller, in
 * site mode's consumer the job's user), its writer, the ring buffer consumer and the
 * profile tables. 0, or -1 with s->err. run and site mode's consumer share it. */
static int create_trace(struct session *s)
{
	const struct dc_opts *o = s->o;
	if (spool_name_free(s))
		return -1;
	int tfd = dc_out_create(&s->out, s->trace_path, dc_invoker()->uid, dc_invoker()->gid,
				s->err, sizeof(s->err));
	if (tfd < 0)
		return -1;
	s->w = dc_writer_fdopen(tfd, s->trace_path, o->compress, s->host, s->child, s->child,
				s->err, sizeof(s->err));
	if (!s->w)
		return -1;
	int64_t m2r = mono_to_real();
	s->cons = dc_consumer_new(s->bpf, s->w, s->script, m2r, o->drain_threads, s->err,
				  sizeof(s->err));
	if (!s->cons)
		return -1;
	s->prof = dc_profile_new(s->bpf, s->w, s->script, s->interval_ns, s->t0, m2r);
	if (!s->prof) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	dc_consumer_set_profile(s->cons, s->prof, s->interval_ns > 0 && !s->standby);
	make_spool(s, m2r);
	return 0;
}

/* Step: forks CMD, held until every probe is attached; creates the trace file, its writer,
 * the ring buffer consumer and the profile tables. 0, or -1. */
static int open_trace(struct session *s)
{
	const struct dc_opts *o = s->o;
	if (s->started) {
		s->child = spawn_held(o->cmd, s->exec, &s->oldmask, &s->ra, &s->go, &s->stfd);
		if (s->child < 0) {
			snprintf(s->err, sizeof(s->err), "cannot fork: %s", strerror(errno));
			fail(s->err);
			return -1;
		}
		/* now the pid is known: name the file after it */
		if (dc_out_path(&s->out, s->name, s->host, s->child, s->trace_path,
				sizeof(s->trace_path), s->err, sizeof(s->err))) {
			fail(s->err);
			return -1;
		}
	}
	if (create_trace(s)) {
		fail(s->err);
		return -1;
	}
	return 0;
}

/* dc_dlstate_fn: a traced thread is at _dl_debug_state: what its process maps now is
 * looked at for the libraries requests wait for (attached late unless it is held). */
static void on_dlstate(void *arg, int pid, int tid, int held)
{
	struct session *s = arg;
	(void)tid;
	if (dc_dlopen_scan(s->dl, pid, held ? NULL : s->nohold[0] ? s->nohold :
			   "its thread was not held: not seized by ptrace") > 0)
		dc_consumer_probes_added(s->cons);
}

/* dc_hold_fn: a thread is held at _dl_debug_state: the records before its hold are read
 * (its DC_EV_DLSTATE attaches), then its process's maps once more (a record lost to a
 * full ring buffer), before it goes on. */
static void on_held(void *arg, int pid, int tid)
{
	struct session *s = arg;
	(void)tid;
	drain(s);
	if (dc_dlopen_scan(s->dl, pid, NULL) > 0)
		dc_consumer_probes_added(s->cons);
}

/* The dynamic loader of the traced programs: glibc's x86-64 one (its PT_INTERP, the
 * path the System V ABI fixes), through its symlink. */
#define DC_LDSO "/lib64/ld-linux-x86-64.so.2"

/* Step, when requests wait for a library (core/dlopen.c): the loader watched (an
 * entry-only uprobe on its _dl_debug_state, filtered in BPF by the traced map), and, as
 * root, the root process seized with ptrace so that loading threads are held until their
 * library is attached (core/hold.c). Failing that, libraries are attached late, each
 * with a warning. Never fails the run. */
static void follow_dlopen(struct session *s)
{
	if (!dc_dlopen_waiting(s->dl))
		return;
	char ldso[PATH_MAX], err[PATH_MAX + 256];
	if (!realpath(DC_LDSO, ldso) || dc_bpf_watch_loader(s->bpf, ldso, err, sizeof(err))) {
		if (!realpath(DC_LDSO, ldso))
			snprintf(err, sizeof(err), "%s: %s", DC_LDSO, strerror(errno));
		fprintf(stderr, "datacrumbs: warning: cannot watch the dynamic loader (%s): "
			"libraries loaded at run time are not traced\n", err);
		return;
	}
	dc_consumer_on_dlstate(s->cons, on_dlstate, s);
	if (s->o->no_hold) { /* the command debugs or traces others itself (gdb, strace) */
		snprintf(s->nohold, sizeof(s->nohold), "--no-hold: loading threads are not held");
		return;
	}
	if (dc_cap_effective(CAP_SYS_PTRACE) != 1) {
		snprintf(s->nohold, sizeof(s->nohold), "datacrumbs has no CAP_SYS_PTRACE (runs "
			 "without root): loading threads are not held");
		return;
	}
	s->hold = dc_hold_new(s->bpf, on_held, s);
	int n = s->hold ? dc_hold_seize(s->hold, s->child, err, sizeof(err)) : -1;
	if (n < 0) { /* nothing seized: no stop of ours to handle */
		snprintf(s->nohold, sizeof(s->nohold), "%.150s", s->hold ? err : "out of memory");
		fprintf(stderr, "datacrumbs: warning: %s: threads loading a library are not held "
			"until it is attached\n", s->nohold);
		dc_hold_free(s->hold);
		s->hold = NULL;
	} else if (!s->o->quiet) {
		fprintf(stderr, "datacrumbs: note: the traced processes are held by ptrace when "
			"they load a library a probe waits for: a debugger or strace among them "
			"cannot attach (give --no-hold)\n");
	}
	if (n >= 0 && err[0]) { /* some threads of -p's process: those are not held */
		fprintf(stderr, "datacrumbs: warning: %s: that thread is not held when it loads a "
			"library\n", err);
	}
}

/* Step: the traced root process into the `traced` map, every probe attached, the script's
 * hooks set, the start record written. 0, or -1. */
static int attach_probes(struct session *s)
{
	const struct dc_opts *o = s->o;
	if (dc_bpf_ready(s->bpf, s->err, sizeof(s->err))) { /* the load's own error first */
		fail(s->err);
		return -1;
	}
	if (dc_bpf_trace_pid(s->bpf, s->child)) {
		snprintf(s->err, sizeof(s->err), "cannot add pid %d to the traced map: %s (nothing "
			 "was traced; check `datacrumbs features`)", s->child, strerror(errno));
		fail(s->err);
		return -1;
	}
	s->nattached = dc_bpf_attach(s->bpf, s->err, sizeof(s->err));
	if (s->nattached < 0) {
		fail(s->err);
		return -1;
	}
	follow_dlopen(s);
	dc_consumer_add_process(s->cons, s->child, s->name);
	if (s->started) /* our forked child, not -p's process */
		dc_consumer_held(s->cons, s->child);
	dc_script_set_emitter(s->script, emit_record_cb, s->cons, s->child);
	dc_script_set_stats(s->script, stats_cb, s);
	dc_script_set_reader(s->script, read_cb, s);
	write_start(s, s->name, o->cmd, now_us());
	if (dc_writer_flush(s->w)) /* a run killed in its first second still leaves a trace */
		cut(s, errno);
	return 0;
}

/* Step: the event loop's sources: ring buffer, signals, the flush, drain and profile
 * timers. */
static void start_loop(struct session *s)
{
	const struct dc_opts *o = s->o;
	/* the loop: ring buffer, signals, the flush timer, the -p process's pidfd; its timers
	 * count from now, not from the loop's first (cached) time before attach */
	uv_update_time(&s->loop);
	uv_poll_init(&s->loop, &s->rb_poll, dc_consumer_fd(s->cons));
	s->rb_poll.data = s;
	uv_poll_start(&s->rb_poll, UV_READABLE, on_ringbuf);
	uv_signal_init(&s->loop, &s->sigchld);
	s->sigchld.data = s;
	uv_signal_start(&s->sigchld, on_sigchld, SIGCHLD);
	uv_poll_init(&s->loop, &s->sig_poll, s->sigfd);
	s->sig_poll.data = s;
	uv_poll_start(&s->sig_poll, UV_READABLE, on_sigfd);
	uv_timer_init(&s->loop, &s->flush_timer);
	s->flush_timer.data = s;
	uv_timer_start(&s->flush_timer, on_flush, o->flush_ms, o->flush_ms);
	s->status_line = !o->quiet && !o->no_status && isatty(2);
	s->st_ns = mono_ns(); /* the first line's rate: since the flush timer started */
	uv_timer_init(&s->loop, &s->drain_timer);
	s->drain_timer.data = s;
	uv_timer_start(&s->drain_timer, on_drain, DC_DRAIN_MS, DC_DRAIN_MS);
	uv_timer_init(&s->loop, &s->profile_timer);
	s->profile_timer.data = s;
	if (s->interval_ns && !s->standby) { /* fires DC_PROFILE_LAG_MS after each interval's end */
		uint64_t iv = s->interval_ns / 1000000, since = (mono_ns() - s->t0) / 1000000;
		uv_timer_start(&s->profile_timer, on_profile,
			       iv + DC_PROFILE_LAG_MS > since ? iv + DC_PROFILE_LAG_MS - since : 0, iv);
	}
}

/* Step: lets the traced command exec (or watches -p PID's exit through a pidfd), unless a
 * signal came while starting. Returns 0 when tracing runs, 1 when it never started (the
 * trace still gets its end record), -1 on failure. */
static int start_target(struct session *s)
{
	const struct dc_opts *o = s->o;
	int early = early_signal(s);
	if (early) {
		/* interrupted while starting: the command never runs; the trace says so */
		fprintf(stderr, "datacrumbs: %s before %s started: not started\n",
			strsignal(early), o->cmd ? o->cmd[0] : "tracing");
		s->done = 1;
		s->rc = 128 + early;
		return 1;
	}
	if (!s->started) {
		s->pidfd = syscall(SYS_pidfd_open, o->pid, 0);
		if (s->pidfd < 0) {
			snprintf(s->err, sizeof(s->err), "-p %d: %s", o->pid, strerror(errno));
			fail(s->err);
			return -1;
		}
		uv_poll_init(&s->loop, &s->pidfd_poll, s->pidfd);
		s->pidfd_poll.data = s;
		uv_poll_start(&s->pidfd_poll, UV_READABLE, on_pidfd);
		/* tells the user (and scripts waiting for it) that the calls are traced from now */
		if (!o->quiet)
			fprintf(stderr, "datacrumbs: tracing PID %d (%d probes attached)\n", o->pid,
				s->nattached);
	}

	if (s->started) {
		/* every probe is attached: let the command exec */
		char c = 1;
		if (write(s->go, &c, 1) != 1) {
			snprintf(s->err, sizeof(s->err), "cannot start %s: %s", o->cmd[0],
				 strerror(errno));
			fail(s->err);
			return -1;
		}
		close(s->go);
		s->go = -1;
		int e;
		ssize_t n;
		do
			n = read(s->stfd, &e, sizeof(e));
		while (n < 0 && errno == EINTR);
		if (n == sizeof(e) && e < 0) {
			snprintf(s->err, sizeof(s->err), "cannot run %s as user %s: %s", o->cmd[0],
				 s->ra.name, strerror(-e));
			fail(s->err);
		} else if (n == sizeof(e)) {
			snprintf(s->err, sizeof(s->err), "%s: cannot execute: %s", o->cmd[0],
				 strerror(e));
			fail(s->err);
		}
		close(s->stfd);
		s->stfd = -1;
		struct timespec ts; /* after the exec: a later call is the command's */
		clock_gettime(CLOCK_MONOTONIC, &ts);
		dc_consumer_held_execd_by(s->cons, (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec);
	}
	return 0;
}

/* After the run: the spooled records decoded, through the script, into the trace, by
 * the drain's own path (a full spool's leftovers in the ring buffers follow, drain). */
static void replay(struct session *s)
{
	if (!s->spool)
		return;
	char err[PATH_MAX + 64];
	s->draining = 1; /* a callback's uv.run must not drain meanwhile */
	long n = dc_consumer_replay(s->cons, &s->spool_err, err, sizeof(err));
	s->draining = 0;
	s->replayed = 1;
	if (n < 0) {
		fprintf(stderr, "datacrumbs: cannot read the spool: %s\n", err);
		cut(s, EIO);
	}
	if (s->spool_err && !dc_consumer_spool_switched(s->cons)) /* at its very end */
		fprintf(stderr, "datacrumbs: warning: the spool %s: %s: its last records are "
			"read from the ring buffers\n", dc_spool_dir(s->spool),
			dc_spool_stop_reason(s->spool_err));
	if (dc_writer_error(s->w))
		cut(s, dc_writer_error(s->w));
}

/* Step: runs the loop until the command ends, drains the ring buffer, writes the last
 * interval and runs the script's end; s->rc becomes the command's exit code. */
static void run_to_end(struct session *s)
{
	uv_run(&s->loop, UV_RUN_DEFAULT);
	replay(s);
	drain(s);
	/* the last, partial interval, through the callbacks, before on_end */
	dc_consumer_count(s->cons, dc_profile_flush(s->prof, 0, 1));
	dc_script_end(s->script); /* the script's summary, before the end record */
	if (s->started) {
		s->rc = WIFEXITED(s->status) ? WEXITSTATUS(s->status)
		      : WIFSIGNALED(s->status) ? 128 + WTERMSIG(s->status) : DC_EXIT_FAIL;
	} else {
		s->rc = 0;
	}
}

/* The records each ring buffer lost, "N,N,..." in shard order (s->by_shard). */
static const char *lost_by_shard(struct session *s)
{
	uint64_t lost[DC_MAX_SHARDS];
	unsigned n = dc_bpf_nshards(s->bpf);
	dc_bpf_lost_by_shard(s->bpf, lost);
	size_t k = 0;
	s->by_shard[0] = 0;
	for (unsigned i = 0; i < n && k < sizeof(s->by_shard) - 24; i++)
		k += snprintf(s->by_shard + k, sizeof(s->by_shard) - k, "%s%llu", i ? "," : "",
			      (unsigned long long)lost[i]);
	return s->by_shard;
}

/* Step: the end record, which tells a reader whether the trace is complete. */
static void write_end(struct session *s)
{
	dc_bpf_stats(s->bpf, s->stats);
	dc_writer_begin(s->w, dc_consumer_own_id(s->cons), "end", "datacrumbs", s->child,
			s->child, now_us(), 0);
	dc_writer_arg_uint(s->w, "num_events", dc_consumer_written(s->cons));
	dc_writer_arg_uint(s->w, "lost", s->stats[DC_STAT_LOST]);
	dc_writer_arg_uint(s->w, "dropped", dc_consumer_dropped(s->cons) +
			   dc_profile_dropped(s->prof));
	dc_writer_arg_uint(s->w, "script_errors", dc_script_errors(s->script));
	dc_writer_arg_uint(s->w, "too_deep", s->stats[DC_STAT_DEEP]);
	dc_writer_arg_uint(s->w, "unpaired", s->stats[DC_STAT_UNPAIRED]);
	dc_writer_arg_uint(s->w, "shards", dc_bpf_nshards(s->bpf));
	dc_writer_arg_str(s->w, "lost_by_shard", lost_by_shard(s));
	dc_writer_end(s->w);
}

/* Teardown: the spool goes once the trace holds it all; else it stays for recover. */
static void end_spool(struct session *s, int complete)
{
	if (!s->spool)
		return;
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", dc_spool_dir(s->spool));
	if (complete || !s->replayed || dc_consumer_spool_switched(s->cons)) {
		/* all in the trace (or in the part that went live), or a run never started */
		if (dc_spool_remove(s->spool))
			fprintf(stderr, "datacrumbs: warning: cannot remove the spool %s: %s\n", dir,
				strerror(errno));
	} else {
		dc_spool_free(s->spool);
		fprintf(stderr, "datacrumbs: the spool %s is kept: `datacrumbs recover %s` "
			"writes the trace from it\n", dir, dir);
	}
	s->spool = NULL;
}

/* Teardown: closes the trace (complete, or left without its "]"), says on stderr what was
 * written, and sets the exit code of a trace that could not be written. */
static void close_trace(struct session *s)
{
	const struct dc_opts *o = s->o;
	if (s->w) {
		int complete = !s->cut && s->done;
		if (dc_writer_finish(s->w, complete) < 0)
			cut(s, errno);
		uint64_t on_disk = dc_writer_on_disk(s->w);
		if (dc_writer_close(s->w, 0) < 0)
			cut(s, errno);
		complete = !s->cut && s->done;
		s->w = NULL;
		/* the events that reached the file: all the consumer wrote, unless the trace
		 * was cut; then those in its complete members, less the start record (the
		 * first event written and flushed, before any traced call: write_start) */
		uint64_t all = s->cons ? dc_consumer_written(s->cons) : 0;
		uint64_t n = !s->cut ? all : on_disk ? on_disk - 1 : 0;
		s->final_events = n;
		uint64_t dropped = (s->cons ? dc_consumer_dropped(s->cons) : 0) +
				   dc_profile_dropped(s->prof);
		unsigned long errs = dc_script_errors(s->script);
		char extra[256] = "", unwritten[128] = "", shards[sizeof(s->by_shard) + 32] = "";
		if (s->stats[DC_STAT_LOST] && s->by_shard[0] && strchr(s->by_shard, ','))
			snprintf(shards, sizeof(shards), " (by ring buffer: %s)", s->by_shard);
		if (dropped || errs)
			snprintf(extra, sizeof(extra), " (%llu dropped by the script, %lu script "
				 "errors)", (unsigned long long)dropped, errs);
		if (s->cut)
			snprintf(unwritten, sizeof(unwritten), ", %llu not written",
				 (unsigned long long)(all > n ? all - n : 0));
		if (s->stats[DC_STAT_DEEP])
			fprintf(stderr, "datacrumbs: warning: %llu calls nested deeper than %d on "
				"one thread were not recorded\n",
				(unsigned long long)s->stats[DC_STAT_DEEP], DC_MAX_DEPTH);
		if (s->status_line)
			fputs("\r\033[K", stderr); /* the status line gives way */
		if (!o->quiet || !complete)
			fprintf(stderr, "datacrumbs: %llu events written%s%s, %llu lost%s, trace %s%s\n",
				(unsigned long long)n, extra, unwritten,
				(unsigned long long)s->stats[DC_STAT_LOST], shards, s->trace_path,
				complete ? "" : " (INCOMPLETE: cut short)");
		end_spool(s, complete);
		if (o->summary && !s->cut)
			dc_pytool_summary(s->trace_path);
		if (s->cut)
			s->rc = DC_EXIT_FAIL; /* the trace could not be written: datacrumbs failed */
		else if (!complete && s->rc == 0)
			s->rc = DC_EXIT_FAIL;
	}
}

/* Teardown: releases the held child, the fds, every BPF link and object (nothing stays
 * attached), the trace (close_trace), the script and the loop. Returns s->rc. */
static int teardown(struct session *s)
{
	if (s->go >= 0) {
		/* we failed before the start: the held child exits without running CMD */
		close(s->go);
		waitpid(s->child, NULL, 0);
	}
	if (s->stfd >= 0)
		close(s->stfd);
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->sigfd >= 0)
		close(s->sigfd);
	if (!s->site) /* site mode: root's to detach; our copy only has map fds */
		dc_bpf_close(s->bpf); /* detach first: nothing stays attached past this point */
	dc_feature_settle(); /* the session check's thread (dc_feature_uprobe_prefetch) */
	dc_vmlinux_btf_release(); /* dc_vmlinux_btf_prefetch's thread, in a run that loaded nothing */
	dc_hold_free(s->hold);
	dc_dlopen_free(s->dl);
	close_trace(s);
	if (s->script) {
		dc_script_set_emitter(s->script, NULL, NULL, 0);
		dc_script_set_stats(s->script, NULL, NULL);
		dc_script_set_reader(s->script, NULL, NULL); /* luv callbacks may still run */
	}
	dc_spool_free(s->spool); /* a run that failed before its trace was closed */
	dc_consumer_free(s->cons);
	dc_profile_free(s->prof);
	/* close our handles and the script's (luv) while the Lua state still exists */
	uv_walk(&s->loop, close_handle, NULL);
	uv_run(&s->loop, UV_RUN_DEFAULT);
	dc_script_free(s->script);
	uv_loop_close(&s->loop);
	return s->rc;
}

int dc_session_run(const struct dc_opts *o)
{
	struct session S = { .o = o, .pidfd = -1, .child = -1, .sigfd = -1, .rc = DC_EXIT_FAIL,
			     .go = -1, .stfd = -1,
			     .out = { o->output, o->compress, o->force, o->group_readable } }, *s = &S;

	guard_process();
	if (block_signals(s)) {
		snprintf(s->err, sizeof(s->err), "cannot set up signal handling: %s",
			 strerror(errno));
		fail(s->err);
		return DC_EXIT_FAIL;
	}
	if (uv_loop_init(&s->loop)) {
		fail("cannot create the event loop");
		return DC_EXIT_FAIL;
	}
	dc_feature_uprobe_prefetch(); /* beside the script: dc_bpf_open takes its answer */
	if (geteuid() == 0) /* who loads BPF (a site-mode user does not): parsed beside the script */
		dc_vmlinux_btf_prefetch();
	if (run_script(s) || check_access(s) || find_target(s) || choose_output(s) ||
	    load_probes(s) || open_trace(s) || attach_probes(s))
		return teardown(s);
	start_loop(s);
	defer_merge(s); /* before the command's first instruction */
	int started = start_target(s);
	if (started < 0)
		return teardown(s);
	if (started == 0)
		run_to_end(s);
	write_end(s);
	return teardown(s);
}

/* Site mode: a line from root. "task PID RANK": a task of the step, traced from now
 * (root put it in the traced map), named and ranked before it runs; answered "ok".
 * "end": the step ended. Returns 0, or -1 for a line that is neither. */
static int ctl_line(struct session *s, const char *line)
{
	int pid, rank;
	char extra;
	if (sscanf(line, "task %d %d%c", &pid, &rank, &extra) == 2 && pid > 0 && rank >= -1) {
		dc_consumer_add_task(s->cons, pid, rank);
		if (dc_writer_flush(s->w) < 0)
			cut(s, errno);
		return write(s->site->ctl, "ok\n", 3) == 3 ? 0 : -1;
	}
	if (sscanf(line, "untraced %d %d%c", &pid, &rank, &extra) == 2 && pid > 0) {
		dc_consumer_untraced_task(s->cons, pid, rank, now_us());
		return 0;
	}
	if (!strcmp(line, "end")) {
		finish(s);
		return 0;
	}
	return -1;
}

static void on_ctl(uv_poll_t *h, int status, int events)
{
	struct session *s = h->data;
	(void)status;
	(void)events;
	ssize_t n = read(s->site->ctl, s->ctl_buf + s->ctl_len, sizeof(s->ctl_buf) - 1 -
			 s->ctl_len);
	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return;
		uv_poll_stop(h);
		finish(s); /* root is gone: end the trace complete with what was drained */
		return;
	}
	s->ctl_len += (size_t)n;
	s->ctl_buf[s->ctl_len] = 0;
	char *nl;
	while ((nl = strchr(s->ctl_buf, '\n'))) {
		*nl = 0;
		if (ctl_line(s, s->ctl_buf))
			fprintf(stderr, "datacrumbs: site mode: bad control line '%.64s' ignored\n",
				s->ctl_buf);
		size_t used = (size_t)(nl + 1 - s->ctl_buf);
		memmove(s->ctl_buf, nl + 1, s->ctl_len - used + 1);
		s->ctl_len -= used;
	}
	if (s->ctl_len == sizeof(s->ctl_buf) - 1)
		s->ctl_len = 0; /* a line this long is no line of ours */
}

/* The start record of a job step's trace and its job facts: PR records job_id, step_id,
 * node, user (docs/trace-format.md "Site mode"), pid the tracer's own. */
static void write_site_start(struct session *s, uint64_t ts)
{
	const struct dc_consume *c = s->site;
	int p = s->child;
	char cmd_h[17], exec_h[17], cwd_h[17];
	memcpy(cmd_h, dc_writer_string(s->w, p, p, c->exe), 17);
	memcpy(exec_h, dc_writer_string(s->w, p, p, c->exe), 17);
	memcpy(cwd_h, dc_writer_file(s->w, p, p, c->cwd), 17);
	dc_writer_meta(s->w, "PR", p, p, "job_id", c->job);
	dc_writer_meta(s->w, "PR", p, p, "step_id", c->step);
	dc_writer_meta(s->w, "PR", p, p, "node", c->node);
	dc_writer_meta(s->w, "PR", p, p, "user", c->user);
	dc_writer_begin(s->w, dc_consumer_own_id(s->cons), "start", "datacrumbs", p, p, ts, 0);
	dc_writer_arg_str(s->w, "cmd_hash", cmd_h);
	dc_writer_arg_str(s->w, "exec_hash", exec_h);
	dc_writer_arg_str(s->w, "cwd", cwd_h);
	dc_writer_arg_str(s->w, "version", DC_VERSION);
	dc_writer_arg_int(s->w, "ppid", 0);
	dc_writer_end(s->w);
}

/* Site mode: a failure before the consumer started, to root ("fail REASON"), which says
 * it to the plugin; also on our stderr (the user's log). Returns DC_EXIT_FAIL. */
static int consume_failed(struct session *s)
{
	char line[sizeof(s->err) + 8];
	int n = snprintf(line, sizeof(line), "fail %s", s->err);
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	line[n < (int)sizeof(line) - 1 ? n : (int)sizeof(line) - 2] = '\n';
	if (write(s->site->ctl, line, strlen(line)) < 0)
		fail("root is gone");
	return teardown(s);
}

int dc_session_consume(const struct dc_opts *o, const struct dc_consume *c)
{
	struct session S = { .o = o, .pidfd = -1, .sigfd = -1, .rc = DC_EXIT_FAIL, .go = -1,
			     .stfd = -1, .site = c,
			     .out = { c->trace_path, 1, 0, 0 } }, *s = &S;
	guard_process();
	if (block_signals(s) || uv_loop_init(&s->loop)) {
		fail("cannot set up the event loop and signal handling");
		return DC_EXIT_FAIL;
	}
	s->bpf = c->bpf;
	s->child = c->own_pid;
	s->interval_ns = c->interval_ns;
	s->t0 = c->t0;
	snprintf(s->host, sizeof(s->host), "%s", c->node);
	snprintf(s->name, sizeof(s->name), "%s", c->exe);
	if (run_script(s))
		return consume_failed(s);
	if (dc_out_path(&s->out, s->name, s->host, 0, s->trace_path, sizeof(s->trace_path),
			s->err, sizeof(s->err)))
		return consume_failed(s);
	if (create_trace(s)) /* as the job's user: become_user reset the invoker */
		return consume_failed(s);
	dc_script_set_emitter(s->script, emit_record_cb, s->cons, s->child);
	dc_script_set_stats(s->script, stats_cb, s);
	dc_script_set_reader(s->script, read_cb, s);
	write_site_start(s, now_us());
	if (dc_writer_flush(s->w))
		cut(s, errno);
	if (write(c->ctl, "started\n", 8) != 8)
		return teardown(s);
	start_loop(s);
	uv_poll_init(&s->loop, &s->ctl_poll, c->ctl);
	s->ctl_poll.data = s;
	uv_poll_start(&s->ctl_poll, UV_READABLE, on_ctl);
	run_to_end(s);
	write_end(s);
	s->rc = 0;
	uint64_t lost = s->stats[DC_STAT_LOST];
	int rc = teardown(s);
	char done[PATH_MAX + 64];
	int n = snprintf(done, sizeof(done), "done %llu %llu %s\n",
			 (unsigned long long)s->final_events, (unsigned long long)lost,
			 s->trace_path);
	if (write(c->ctl, done, (size_t)n) != n)
		return DC_EXIT_FAIL;
	return rc;
}
