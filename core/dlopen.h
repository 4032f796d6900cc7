/* dlopen.h: libraries loaded at run time: the probe requests whose library no traced
 * process loaded at start, attached in each file a traced process maps later (dlopen). */
#ifndef DC_DLOPEN_H
#define DC_DLOPEN_H

#include "attach.h"
#include "lua_api.h"
#include "resolve.h"

struct dc_dlopen;

/* Creates the follower of run-time loads for the requests reqs[0..n) (the script's,
 * which outlive it) on BPF object b; claimed as for dc_resolve_req (copied). quiet: no
 * note per library attached. Returns NULL when out of memory. */
struct dc_dlopen *dc_dlopen_new(struct dc_bpf *b, const struct dc_probe_req *reqs, int n,
				const struct dc_sysset *claimed, int quiet);

/* Marks request index i (of reqs) as waiting for its library (dc_resolve_req said it is
 * missing). */
void dc_dlopen_wait_for(struct dc_dlopen *d, int i);

/* The number of requests waiting for a library. */
int dc_dlopen_waiting(const struct dc_dlopen *d);

/* Looks at what process pid has mapped (/proc/PID/maps): each file a waiting request
 * names (dc_resolve_matches) that has not been attached yet, by device and inode (one
 * attach serves every process, and a library dlclose'd and loaded again: uprobes belong
 * to the file, the kernel puts its breakpoints back when it is mapped again), is
 * resolved and attached (dc_bpf_attach). late: NULL when the loading thread is held
 * until now (its first function has not run), else the reason it was not, said in the
 * warning for each library attached ("attached late"). Failures are one warning each,
 * naming the library; the caller resumes the thread anyway. Returns the number of
 * probes added (0: nothing new). */
int dc_dlopen_scan(struct dc_dlopen *d, int pid, const char *late);

void dc_dlopen_free(struct dc_dlopen *d);

#endif
