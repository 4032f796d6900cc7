/* hold.h: holding a traced thread in the dynamic loader until the probes of what it loads
 * are attached: ptrace seizes, every ptrace-stop resumed as without a tracer. */
#ifndef DC_HOLD_H
#define DC_HOLD_H

#include "attach.h"

struct dc_hold;

/* Called for a thread held at _dl_debug_state (bpf/datacrumbs.h DC_HOLD_SIGNAL): pid its
 * process, tid the thread. The thread is resumed when it returns. */
typedef void (*dc_hold_fn)(void *arg, int pid, int tid);

/* Creates the holder over BPF object b (its `holdable` map). Returns NULL when out of
 * memory. */
struct dc_hold *dc_hold_new(struct dc_bpf *b, dc_hold_fn on_held, void *arg);

/* Seizes every thread of process pid (PTRACE_SEIZE, ptrace(2): no stop, the process does
 * not see it but in /proc/PID/status TracerPid) with PTRACE_O_TRACECLONE, _TRACEFORK and
 * _TRACEVFORK, so that its new threads and children are seized by the kernel before they
 * run; marks them holdable. Threads created while /proc/PID/task is read are caught by
 * reading it again until no new one appears. Returns the number of threads seized (their
 * stops must then be handled, dc_hold_stopped), with err set ("" when none failed) to the
 * first refusal (EPERM: another tracer, a debugger, Yama's ptrace_scope); -1 with err
 * when none could be. */
int dc_hold_seize(struct dc_hold *h, int pid, char *err, size_t errlen);

/* Handles one ptrace-stop that waitpid(2) (with __WALL) reported for tid, status st
 * (WIFSTOPPED): a new thread's or child's first stop (PTRACE_EVENT_STOP: made holdable,
 * resumed), a group-stop (PTRACE_EVENT_STOP with a stop signal: PTRACE_LISTEN, so it
 * stays stopped as it would untraced and its parent sees it as usual), a fork/vfork/
 * clone event (resumed), the hold signal of a held thread (on_held, then resumed with the
 * signal suppressed), any other signal (resumed with it: delivered as without a tracer).
 * ptrace(2) "Stopped states". */
void dc_hold_stopped(struct dc_hold *h, int tid, int st);

/* Thread tid has exited (waitpid reported it): forgets it. */
void dc_hold_gone(struct dc_hold *h, int tid);

/* Frees h. The tracees stay seized until datacrumbs exits: the kernel then detaches them
 * and resumes the stopped ones (ptrace(2): "If the tracer dies, all tracees are
 * automatically detached and restarted, unless they were in group-stop"), with any
 * signal they were stopped for still delivered. */
void dc_hold_free(struct dc_hold *h);

#endif
