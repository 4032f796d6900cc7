/* hold.c: holds a traced thread at the dynamic loader's _dl_debug_state until the probes
 * of the library it loads are attached: ptrace seizes and the resumption of every stop. */
#define _GNU_SOURCE
#include "hold.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

struct dc_hold {
	struct dc_bpf *b;
	dc_hold_fn on_held;
	void *arg;
};

struct dc_hold *dc_hold_new(struct dc_bpf *b, dc_hold_fn on_held, void *arg)
{
	struct dc_hold *h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->b = b;
	h->on_held = on_held;
	h->arg = arg;
	return h;
}

#define SEIZE_OPTS (PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)

int dc_hold_seize(struct dc_hold *h, int pid, char *err, size_t errlen)
{
	char dir[64];
	int seized = 0;
	err[0] = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	for (int round = 0, fresh = 1; fresh && round < 100; round++) {
		fresh = 0;
		DIR *d = opendir(dir);
		if (!d) {
			snprintf(err, errlen, "%s: %s", dir, strerror(errno));
			break;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			int tid = atoi(de->d_name);
			if (tid <= 0 || dc_bpf_holdable(h->b, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)SEIZE_OPTS)) {
				if (errno != ESRCH && !err[0]) /* ESRCH: it exited meanwhile */
					snprintf(err, errlen,
						 "cannot ptrace process %d (thread %d): %s",
						 pid, tid, strerror(errno));
				continue;
			}
			/* seized: from now on its stops are ours to resume (dc_hold_stopped) */
			dc_bpf_set_holdable(h->b, tid, DC_HOLD_SEIZED);
			seized++;
			fresh = 1;
		}
		closedir(d);
	}
	return seized ? seized : -1;
}

/* The process (tgid) of thread tid, from /proc/TID/status; tid itself when unreadable. */
static int tgid_of(int tid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	FILE *f = fopen(path, "r");
	int tgid = tid;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	if (f)
		fclose(f);
	return tgid;
}

void dc_hold_stopped(struct dc_hold *h, int tid, int st)
{
	int sig = WSTOPSIG(st), event = (unsigned)st >> 16;
	if (event == PTRACE_EVENT_STOP) {
		/* a new thread or child, seized by the kernel */
		if (!dc_bpf_holdable(h->b, tid))
			dc_bpf_set_holdable(h->b, tid, DC_HOLD_SEIZED);
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, tid, 0, 0); /* a group-stop: stays stopped */
		else
			ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	if (event) { /* PTRACE_EVENT_FORK, _VFORK, _CLONE: the new one reports on its own */
		ptrace(PTRACE_CONT, tid, 0, 0);
		return;
	}
	if (sig == DC_HOLD_SIGNAL && dc_bpf_holdable(h->b, tid) == DC_HOLD_HELD) {
		h->on_held(h->arg, tgid_of(tid), tid);
		dc_bpf_set_holdable(h->b, tid, DC_HOLD_SEIZED);
		ptrace(PTRACE_CONT, tid, 0, 0); /* our signal: suppressed */
		return;
	}
	ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig); /* the program's signal, delivered */
}

void dc_hold_gone(struct dc_hold *h, int tid)
{
	dc_bpf_set_holdable(h->b, tid, 0);
}

void dc_hold_free(struct dc_hold *h)
{
	free(h);
}
