/* resolve.c: probe requests to attach points: libraries as the loader finds them, symbols
 * (core/elfsym.c), syscall numbers, built-in tracepoints; the warnings a user sees. */
#include "resolve.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "attach.h"
#include "elfsym.h"
#include "syscalls.h"

/* The file of the library named by prefix that process pid has mapped (/proc/PID/maps),
 * through /proc/PID/root. Returns 0 with its path, -1 when none is mapped. */
static int mapped_library(int pid, const char *prefix, char *out, size_t outlen)
{
	char path[64], line[PATH_MAX + 128];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	int found = -1;
	while (found && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/');
		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		const char *base = strrchr(file, '/') + 1;
		if (!strncmp(base, prefix, strlen(prefix))) {
			snprintf(out, outlen, "/proc/%d/root%s", pid, file);
			found = 0;
		}
	}
	fclose(f);
	return found;
}

/* Syscall and tracepoint layers: numbers and built-in programs by name. */
static int resolve_kernel(const struct dc_probe_req *r, dc_resolve_fn fn, void *arg)
{
	const struct dc_layer *l = r->layer;
	int hidden, sys = l->mechanism == DC_MECH_SYSCALL;
	struct dc_req_iter it = { .r = r };
	const struct dc_func *f;
	while ((f = dc_req_next(&it, &hidden))) {
		int nr = sys ? dc_syscall_nr(f->name) : dc_bpf_tracepoint(f->name);
		if (nr < 0) {
			if (!hidden)
				fprintf(stderr, "datacrumbs: warning: %s is not %s (%s:%d): not "
					"traced\n", f->name, sys ? "a syscall on this architecture"
					: "a tracepoint probe datacrumbs has", l->path, f->line);
			continue;
		}
		struct dc_resolved p = { l, f, sys ? "[syscall]" : "[tracepoint]", nr, hidden };
		int e = fn(&p, arg);
		if (e)
			return e;
	}
	return 0;
}

int dc_resolve_req(const struct dc_probe_req *r, const char *binary, int pid,
		   dc_resolve_fn fn, void *arg, int *bad_binary, char *err, size_t errlen)
{
	const struct dc_layer *l = r->layer;
	*bad_binary = 0;
	if (l->mechanism != DC_MECH_UPROBE)
		return resolve_kernel(r, fn, arg);

	char lib[PATH_MAX];
	int found = pid > 0 ? (mapped_library(pid, l->library, lib, sizeof(lib)) ? 1 : 0)
		: dc_elf_find_library(binary, l->library, lib, sizeof(lib), err, errlen);
	if (found < 0) {
		*bad_binary = 1; /* what stops us reading it stops the kernel or ld.so too */
		return -1;
	}
	if (found == 1 && pid <= 0) {
		/* a static command (a launcher) may still exec dynamic programs: probe the
		 * system's library, the one /bin/sh loads */
		char e2[256];
		found = dc_elf_find_library("/bin/sh", l->library, lib, sizeof(lib), e2, sizeof(e2));
		if (found == 0)
			fprintf(stderr, "datacrumbs: warning: %s does not load %s (a static "
				"binary): layer %s is traced in the programs it runs that load %s\n",
				binary, l->library, l->name, lib);
	}
	if (found != 0) {
		fprintf(stderr, "datacrumbs: warning: %s does not load %s (a static binary?): "
			"layer %s is not traced\n", binary, l->library, l->name);
		return 0;
	}
	struct dc_elf_syms *syms = dc_elf_syms_open(lib, err, errlen);
	if (!syms)
		return -1;
	int hidden, found_any = 0, e = 0;
	struct dc_req_iter it = { .r = r };
	const struct dc_func *f;
	while (!e && (f = dc_req_next(&it, &hidden))) {
		const char *sym = f->symbol[0] ? f->symbol : f->name;
		uint64_t off = dc_elf_sym_offset(syms, sym);
		if (!off) {
			if (!hidden && !l->hint[0])
				fprintf(stderr, "datacrumbs: warning: %s is not exported by %s "
					"(%s:%d): not traced\n", sym, lib, l->path, f->line);
			continue;
		}
		found_any = 1;
		struct dc_resolved p = { l, f, lib, off, hidden };
		e = fn(&p, arg);
	}
	if (!e && l->hint[0] && !found_any)
		fprintf(stderr, "datacrumbs: warning: none of %s's functions is in %s: %s\n",
			l->path, lib, l->hint);
	dc_elf_syms_close(syms);
	return e;
}
