/* resolve.h: what each function of a probe request stands for on this machine: a (library
 * file, offset) for uprobe layers, a syscall number or built-in tracepoint for the others. */
#ifndef DC_RESOLVE_H
#define DC_RESOLVE_H

#include <stddef.h>
#include <stdint.h>
#include "datacrumbs.h"
#include "lua_api.h"

/* One resolved function, handed to the caller (run attaches it, check counts it). */
struct dc_resolved {
	const struct dc_layer *layer;
	const struct dc_func *func;
	const char *where;   /* the library's path, or "[syscall]", "[tracepoint]" */
	uint64_t offset;     /* file offset, syscall number or tracepoint index */
	int hidden;          /* only kept for the fd tables (dc_req_next) */
};

/* Is a function of this name unsafe to probe for its return? Those that do not return
 * to their caller through a plain `ret` (setjmp/longjmp and the ucontext family: they
 * return twice or never; noreturn exits and aborts; _start, __libc_start_main,
 * __restore_rt, the signal return trampoline; vfork, whose child shares the parent's
 * stack; the C++ unwinder's throw/resume entry points): a return probe there rewrites a
 * return address the function itself may never use, and the kernel's uretprobe
 * bookkeeping can send SIGILL ("failed to handle uretprobe", kernel/events/uprobes.c).
 * glibc's names, include/setjmp.h, stdlib/exit.c, sysdeps/unix/sysv/linux/x86_64/.
 * Returns 1 for them (exact names; glibc's internal __ aliases included), else 0. */
int dc_noret_name(const char *name);

/* System calls, as a bit set over their numbers (x86-64, asm/unistd_64.h). */
struct dc_sysset {
	uint64_t bits[DC_NR_SYSCALLS / 64];
};

/* Fills *claimed with the system calls that requests of a `mechanism: syscall` layer (the
 * SYSCALL layer) ask for, hidden ones included: a function served by one of those is
 * probed with its uprobe instead (dc_resolve_req), so that both layers' events exist,
 * the library call and, nested in it, the system call. reqs: n requests. */
void dc_resolve_claimed(const struct dc_probe_req *reqs, int n, struct dc_sysset *claimed);

/* Called per resolved function; non-zero stops the walk and is returned. */
typedef int (*dc_resolve_fn)(const struct dc_resolved *p, void *arg);

/* Resolves request r (not a `mechanism: kernel` layer) and calls fn for each function
 * found. Uprobe layers: the library `binary` loads, found as ld.so(8) does (the layer's
 * `library` may list soname prefixes separated by '|'); when binary loads none, the one
 * the first program among `args` (the command's arguments, NULL-terminated, may be NULL)
 * loads, for launchers (mpirun -np 4 ./app); a static binary gets the system's (the one
 * /bin/sh loads), for the programs it runs; with pid > 0 the library that process has
 * mapped (/proc/PID/maps). Functions that cannot be found
 * get a one-line warning on stderr (one for the whole layer when it has a `hint:`).
 * A function whose description names the system calls it is (`syscall:`, docs/probes.md)
 * resolves to those system calls instead ("[syscall]", offset the number; the event's
 * function is the one the layer names after each call, dc_layer_syscall_namer), unless
 * the request asks for uprobes (dc.probe's mechanism = "uprobe") or `claimed` (may be
 * NULL) holds one of them: then to its uprobe.
 * missing (may be NULL): set to 1 when no file of the layer's library (or dc.uprobe's
 * soname) is found and no function is served by system calls: the caller follows dlopen
 * (core/dlopen.c), and the note says so instead of "not traced".
 * Returns 0; or -1 with err, and *bad_binary set when binary itself cannot be read (the
 * command could not run either). */
int dc_resolve_req(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		   const char *binary, char *const *args, int pid, dc_resolve_fn fn, void *arg,
		   int *bad_binary, int *missing, char *err, size_t errlen);

/* Is `path` (a mapped file) a library that request r names: a uprobe layer's `library`
 * soname prefixes ('|'-separated) or dc.uprobe's file= soname, against its basename (a
 * path or CMD never matches: those are resolved at start)? Returns 1 or 0. */
int dc_resolve_matches(const struct dc_probe_req *r, const char *path);

/* Resolves uprobe request r in the library file `file` (one a process has loaded, found
 * by dc_resolve_matches; the name it is opened and attached by, /proc/PID/map_files/...)
 * and calls fn for each function found there, as dc_resolve_req does once the library is
 * known (warnings, naming it as `shown`, for the functions it lacks; dc.uprobe's globs
 * matched once, on the first file). Returns 0, fn's non-zero, or -1 with err (the file
 * cannot be read as ELF). */
int dc_resolve_file(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		    const char *file, const char *shown, dc_resolve_fn fn, void *arg, char *err,
		    size_t errlen);

#endif
