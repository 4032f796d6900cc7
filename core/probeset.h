/* probeset.h: a script's probe requests turned into the probe table of a BPF object:
 * uprobe layers resolved in the libraries a binary loads, kernel layers by mechanism. */
#ifndef DC_PROBESET_H
#define DC_PROBESET_H

#include <stddef.h>
#include "attach.h"
#include "lua_api.h"

/* Adds to b the probes of the nreq requests reqs (nreq >= 1): uprobe layers at (library,
 * offset) in the library `binary` loads, or the first program among `args` (the
 * command's arguments, NULL-terminated, may be NULL) loads, or -p's process `pid` (> 0)
 * has mapped (core/resolve.h dc_resolve_req); functions that are one system call by the
 * raw_syscalls tracepoints; kernel-function layers by fentry or kprobe where this kernel
 * allows (datacrumbs features), with a warning per function neither reaches. Returns the
 * number of visible probes (hidden fd-table ones not counted), or -1 with a one-line
 * err; *bad_binary is set when binary itself cannot be read. */
int dc_probeset_add(struct dc_bpf *b, const struct dc_probe_req *reqs, int nreq,
		    const char *binary, char *const *args, int pid, int *bad_binary, char *err,
		    size_t errlen);

#endif
