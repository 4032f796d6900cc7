/* resolve.c: probe requests to attach points: libraries as the loader finds them, symbols
 * (core/elfsym.c), syscall numbers, built-in tracepoints; the warnings a user sees. */
#include "resolve.h"
#include "retsite.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "elfsym.h"
#include "syscalls.h"
#include "util.h"

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

/* mapped_library over the '|'-separated alternatives of `library` ("libmpi.so|libmpich.so"). */
static int mapped_any(int pid, const char *library, char *out, size_t outlen)
{
	char alt[64];
	for (const char *p = library; *p;) {
		size_t n = strcspn(p, "|");
		snprintf(alt, sizeof(alt), "%.*s", (int)n, p);
		if (!mapped_library(pid, alt, out, outlen))
			return 0;
		p += n + (p[n] == '|');
	}
	return -1;
}

/* dc_elf_find_library over the alternatives of `library`: 0 found, 1 none, -1 binary
 * unreadable (err set). */
static int find_any(const char *binary, const char *library, char *out, size_t outlen,
		    char *err, size_t errlen)
{
	char alt[64];
	int r = 1;
	for (const char *p = library; *p && r == 1;) {
		size_t n = strcspn(p, "|");
		snprintf(alt, sizeof(alt), "%.*s", (int)n, p);
		r = dc_elf_find_library(binary, alt, out, outlen, err, errlen);
		p += n + (p[n] == '|');
	}
	return r;
}

/* The library of `library` that binary loads; when it loads none (a launcher: mpirun,
 * mpiexec, srun), the one the first program among its arguments that loads one does
 * (`mpirun -np 4 ./app`: ./app, found as execvp(3) would). Returns as find_any, and
 * sets *from_arg to the argument used (NULL: binary itself). */
static int find_for_command(const char *binary, char *const *args, const char *library,
			    char *out, size_t outlen, const char **from_arg, char *err,
			    size_t errlen)
{
	*from_arg = NULL;
	int r = find_any(binary, library, out, outlen, err, errlen);
	for (int i = 0; r == 1 && args && args[i]; i++) {
		char prog[PATH_MAX], e2[256];
		if (args[i][0] == '-' || dc_elf_which(args[i], prog, sizeof(prog), e2, sizeof(e2)))
			continue;
		if (find_any(prog, library, out, outlen, e2, sizeof(e2)) == 0) {
			*from_arg = args[i];
			return 0;
		}
	}
	return r;
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

int dc_noret_name(const char *name)
{
	static const char *const names[] = {
		"setjmp", "_setjmp", "__setjmp", "sigsetjmp", "__sigsetjmp", "__sigsetjmp_cancel",
		"longjmp", "_longjmp", "siglongjmp", "__longjmp", "__longjmp_chk",
		"____longjmp_chk", "__libc_longjmp", "__libc_siglongjmp", "__longjmp_cancel",
		"getcontext", "setcontext", "swapcontext", "makecontext", "__start_context",
		"__push___start_context",
		"_start", "__libc_start_main", "__libc_start_call_main", "__restore_rt",
		"exit", "_exit", "_Exit", "quick_exit", "abort", "__assert_fail",
		"__assert_perror_fail", "__assert", "__stack_chk_fail", "__fortify_fail",
		"__chk_fail", "__libc_fatal", "__libc_message", "pthread_exit", "__pthread_exit",
		"__pthread_unwind", "__pthread_unwind_next", "__libc_unwind_longjmp",
		"__call_tls_dtors", "vfork", "__vfork", "clone", "__clone", "__clone3",
		"__clone_internal", "thrd_exit", "__cxa_throw", "__cxa_rethrow",
		"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Resume_or_Rethrow",
		"_Unwind_ForcedUnwind",
	};
	/* a first look at the first byte: all start with '_' or one of these letters (was 57
	 * strcmp per function: 2 million for libLLVM's 35,000) */
	if (!name[0] || (name[0] != '_' && !strchr("aceglmpqstv", name[0])))
		return 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (name[0] == names[i][0] && !strcmp(name, names[i]))
			return 1;
	return 0;
}

/* A match of a dc.uprobe glob, collected before the layer's functions are made. */
struct matches {
	struct dc_layer *l;
	int ok;                 /* 0: out of memory */
	int g;                  /* the glob matching now (its template: l->gtmpl[g]) */
	int cap;                /* l->funcs has room for this many */
	struct dc_index ix;     /* name -> l->funcs[]: tens of thousands of matches stay linear */
};

static uint64_t name_hash(const char *name)
{
	return dc_hash_bytes(14695981039346656037ULL, name, strlen(name));
}

static int name_match(size_t idx, const void *key, void *arg)
{
	const struct dc_layer *l = arg;
	return !strcmp(l->funcs[idx].name, key);
}

static int add_match(const char *name, uint64_t offset, void *arg)
{
	struct matches *m = arg;
	struct dc_layer *l = m->l;
	(void)offset;
	uint64_t h = name_hash(name);
	if (dc_index_find(&m->ix, h, name_match, name, l) >= 0)
		return 0;
	if (l->nfuncs == m->cap) {
		int cap = m->cap ? 2 * m->cap : 64;
		struct dc_func *f = realloc(l->funcs, cap * sizeof(*f));
		if (!f) {
			m->ok = 0;
			return 1;
		}
		l->funcs = f;
		m->cap = cap;
	}
	struct dc_func *f = l->funcs;
	f[l->nfuncs] = l->gtmpl ? l->gtmpl[m->g] : l->tmpl; /* args as that glob's entry says */
	if (!(f[l->nfuncs].name = strdup(name)) || dc_index_add(&m->ix, h, l->nfuncs)) {
		free((char *)f[l->nfuncs].name);
		m->ok = 0;
		return 1;
	}
	l->nfuncs++;
	return 0;
}

static int glob_match(size_t idx, const void *key, void *arg)
{
	const struct dc_layer *l = arg;
	return !strcmp(l->globs[idx], key);
}

/* Is `name` one of l's globs exactly (the script named it)? ix indexes l->globs. */
static int named_exactly(const struct dc_layer *l, const struct dc_index *ix, const char *name)
{
	return dc_index_find(ix, name_hash(name), glob_match, name, (void *)l) >= 0;
}

/* Makes the functions of dc.uprobe layer l from its globs over the symbols of file
 * (once, on the first resolution): every match, but the local symbols a glob (not an
 * exact name) matched, and with entry-only probes for the functions whose return is
 * unsafe to probe; a warning for each of those choices. Returns 0, or -1 with err (out of
 * memory: no function list, never a wider one). */
static int make_custom_funcs(struct dc_layer *l, struct dc_elf_syms *syms, const char *file,
			     char *err, size_t errlen)
{
	struct matches m = { l, 1, 0, l->nfuncs, { { 0 } } };
	for (int g = 0; g < l->nglobs && m.ok; g++) {
		int before = l->nfuncs;
		m.g = g;
		dc_elf_sym_glob(syms, l->globs[g], add_match, &m);
		if (l->nfuncs == before && m.ok)
			fprintf(stderr, "datacrumbs: warning: %s: no function of %s matches "
				"'%s': not traced\n", l->path, file, l->globs[g]);
	}
	dc_index_free(&m.ix);
	/* the globs by name, for the "named exactly" tests below (one lookup per
	 * function, not a pass over every glob) */
	struct dc_index named = { { 0 } };
	for (int g = 0; g < l->nglobs && m.ok; g++)
		if (!named_exactly(l, &named, l->globs[g]) &&
		    dc_index_add(&named, name_hash(l->globs[g]), g))
			m.ok = 0;
	if (!m.ok) {
		dc_index_free(&named);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* a glob over a library with debug symbols also matches its local symbols:
	 * internal labels (glibc's __GI_ aliases, its assembly routines' inner entry
	 * points) that are no function entry. Probing them all broke the untraced
	 * processes of this machine (`functions = "*"` on glibc: printf padding of
	 * NULs, format strings printed raw), while the global symbols alone did not:
	 * they are skipped unless the script names one exactly. */
	int nlocal = 0, j = 0;
	const char *firstlocal = NULL;
	for (int i = 0; i < l->nfuncs; i++) {
		if (!named_exactly(l, &named, l->funcs[i].name) && dc_elf_sym_local(syms, l->funcs[i].name)) {
			if (!nlocal++)
				firstlocal = l->funcs[i].name; /* said below, then freed */
			else
				free((char *)l->funcs[i].name);
			continue;
		}
		l->funcs[j++] = l->funcs[i];
	}
	l->nfuncs = j;
	if (nlocal)
		fprintf(stderr, "datacrumbs: warning: %s: %d local symbol%s of %s matched "
			"(%s%s), skipped: internal labels, not function entries (name one "
			"exactly to probe it)\n", l->path, nlocal, nlocal > 1 ? "s" : "",
			file, firstlocal, nlocal > 1 ? ", ..." : "");
	free((char *)firstlocal);
	/* functions whose return is unsafe to probe get entry-only probes, unless the
	 * script names them exactly (not through a glob): then it asked for it; or
	 * it said how their returns are seen (returns=, core/retsite.h) */
	int nnoret = 0;
	const char *first = NULL;
	for (int i = 0; i < l->nfuncs; i++) {
		struct dc_func *f = &l->funcs[i];
		if (!dc_noret_name(f->name) || f->returns)
			continue;
		f->noret = !named_exactly(l, &named, f->name);
		if (f->noret && !nnoret++)
			first = f->name;
	}
	if (nnoret)
		fprintf(stderr, "datacrumbs: warning: %s: %d function%s of %s (%s%s) cannot "
			"be probed safely at return (setjmp/longjmp, noreturn, start-up "
			"code): entry-only probes, events with dur 0 and no ret (name one "
			"exactly in functions= to force its return probe)\n", l->path,
			nnoret, nnoret > 1 ? "s" : "", file, first, nnoret > 1 ? ", ..." : "");
	dc_index_free(&named);
	return 0;
}

static int custom_in(struct dc_layer *l, const char *file, const char *shown, dc_resolve_fn fn,
		     void *arg, char *err, size_t errlen);

/* A dc.uprobe layer: its file (CMD, a path, or a library the command loads) and the
 * functions its globs match there, made into the layer's functions (once). *missing
 * (may be NULL: then the old message) is set when the command loads no such library. */
static int resolve_custom(const struct dc_probe_req *r, const char *binary,
			  char *const *args, int pid, int *missing,
			  dc_resolve_fn fn, void *arg, char *err, size_t errlen)
{
	struct dc_layer *l = (struct dc_layer *)r->layer;
	char file[PATH_MAX];
	if (!strcmp(l->library, "CMD")) {
		char link[64];
		ssize_t n = -1;
		if (pid > 0) {
			snprintf(link, sizeof(link), "/proc/%d/exe", pid);
			n = readlink(link, file, sizeof(file) - 1);
		}
		if (n > 0)
			file[n] = 0;
		else
			snprintf(file, sizeof(file), "%s", binary);
	} else if (strchr(l->library, '/')) {
		snprintf(file, sizeof(file), "%s", l->library);
	} else {
		const char *from_arg;
		int found = pid > 0 ? (mapped_any(pid, l->library, file, sizeof(file)) ? 1 : 0)
			: find_for_command(binary, args, l->library, file, sizeof(file),
					   &from_arg, err, errlen);
		if (found < 0)
			return -1;
		if (found == 1 && missing) {
			*missing = 1;
			fprintf(stderr, "datacrumbs: %s: %s does not load %s at start: its functions "
				"are probed in the traced processes that load it (dlopen)\n",
				l->path, binary, l->library);
			return 0;
		}
		if (found == 1) {
			fprintf(stderr, "datacrumbs: warning: %s: %s does not load %s: not traced\n",
				l->path, binary, l->library);
			return 0;
		}
	}
	return custom_in(l, file, file, fn, arg, err, errlen);
}

/* The functions of dc.uprobe layer l in `file` (said as `shown`), made once
 * (make_custom_funcs). */
static int custom_in(struct dc_layer *l, const char *file, const char *shown, dc_resolve_fn fn,
		     void *arg, char *err, size_t errlen)
{
	struct dc_elf_syms *syms = dc_elf_syms_open(file, err, errlen);
	if (!syms) { /* name the script's line that asked for it: "x.lua:3: dc.uprobe: ..." */
		char why[512];
		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "%s: %s", l->path, why);
		return -1;
	}
	if (!l->funcs && make_custom_funcs(l, syms, shown, err, errlen)) {
		dc_elf_syms_close(syms);
		return -1;
	}
	/* the offsets once, and the functions' return plans made ahead, side by side
	 * (core/retsite.h dc_retsite_prefetch): what dc_bpf_add_probe will ask */
	uint64_t *offs = malloc(((size_t)l->nfuncs + 1) * sizeof(*offs));
	struct dc_retsite_req *q = malloc(((size_t)l->nfuncs + 1) * sizeof(*q));
	size_t nq = 0;
	for (int i = 0; offs && i < l->nfuncs; i++) {
		const struct dc_func *f = &l->funcs[i];
		offs[i] = dc_elf_sym_offset(syms, f->name);
		if (q && offs[i])
			q[nq++] = (struct dc_retsite_req){ f->symbol[0] ? f->symbol : f->name,
							   offs[i], f->returns, f->noret,
							   l->custom };
	}
	if (offs && q && l->mechanism == DC_MECH_UPROBE)
		dc_retsite_prefetch(file, q, nq);
	int e = 0;
	for (int i = 0; i < l->nfuncs && !e; i++) {
		struct dc_resolved p = { l, &l->funcs[i], file,
					 offs ? offs[i] : dc_elf_sym_offset(syms, l->funcs[i].name),
					 0 };
		if (p.offset)
			e = fn(&p, arg);
	}
	dc_retsite_prefetch_drop();
	free(q);
	free(offs);
	dc_elf_syms_close(syms);
	return e;
}

static int sysset_has(const struct dc_sysset *s, int nr)
{
	return s && nr >= 0 && nr < DC_NR_SYSCALLS && (s->bits[nr / 64] >> (nr % 64)) & 1;
}

void dc_resolve_claimed(const struct dc_probe_req *reqs, int n, struct dc_sysset *claimed)
{
	memset(claimed, 0, sizeof(*claimed));
	for (int i = 0; i < n; i++) {
		if (reqs[i].layer->mechanism != DC_MECH_SYSCALL)
			continue;
		struct dc_req_iter it = { .r = &reqs[i] };
		const struct dc_func *f;
		int hidden;
		while ((f = dc_req_next(&it, &hidden))) {
			int nr = dc_syscall_nr(f->name);
			if (nr >= 0 && nr < DC_NR_SYSCALLS)
				claimed->bits[nr / 64] |= 1ULL << (nr % 64);
		}
	}
}

/* Is f of request r served by its system calls (none of them claimed)? */
static int served(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		  const struct dc_func *f)
{
	if (r->uprobe || !f->nsyscalls)
		return 0;
	for (int k = 0; k < f->nsyscalls; k++)
		if (sysset_has(claimed, dc_syscall_nr(f->syscall[k])))
			return 0;
	return 1;
}

/* The functions of request r served by system calls: each of their system calls once, as
 * the function the layer names after it. Returns as fn; *rest: functions left for
 * uprobes, *nserved: functions served. */
static int resolve_served(const struct dc_probe_req *r, const struct dc_sysset *claimed,
			  dc_resolve_fn fn, void *arg, int *rest, int *nserved)
{
	const struct dc_layer *l = r->layer;
	struct dc_req_iter it = { .r = r };
	const struct dc_func *f;
	int hidden, e = 0;
	*rest = *nserved = 0;
	while (!e && (f = dc_req_next(&it, &hidden))) {
		if (!served(r, claimed, f)) {
			(*rest)++;
			continue;
		}
		(*nserved)++;
		for (int k = 0; k < f->nsyscalls && !e; k++) {
			const struct dc_func *namer = dc_layer_syscall_namer(l, f->syscall[k]);
			struct dc_resolved p = { l, namer ? namer : f, "[syscall]",
						 (uint64_t)dc_syscall_nr(f->syscall[k]), hidden };
			e = fn(&p, arg);
		}
	}
	return e;
}

/* The first function of request r left for its uprobe, for messages. */
static const char *first_unserved(const struct dc_probe_req *r, const struct dc_sysset *claimed)
{
	struct dc_req_iter it = { .r = r };
	const struct dc_func *f;
	int hidden;
	while ((f = dc_req_next(&it, &hidden)))
		if (!served(r, claimed, f))
			return f->name;
	return "?";
}

static int uprobe_in(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		     const char *lib, const char *shown, dc_resolve_fn fn, void *arg, char *err,
		     size_t errlen);

/* Long on purpose: the library-finding cases in the order a user meets them (the
 * command's own, a launcher's program, a static binary's system library, none), each
 * with its own message, then the walk of the functions. */
int dc_resolve_req(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		   const char *binary, char *const *args, int pid, dc_resolve_fn fn, void *arg,
		   int *bad_binary, int *missing, char *err, size_t errlen)
{
	const struct dc_layer *l = r->layer;
	*bad_binary = 0;
	if (missing)
		*missing = 0;
	if (l->mechanism != DC_MECH_UPROBE)
		return resolve_kernel(r, fn, arg);
	if (l->custom)
		return resolve_custom(r, binary, args, pid, missing, fn, arg, err, errlen);
	int rest, nserved, e0 = resolve_served(r, claimed, fn, arg, &rest, &nserved);
	if (e0 || !rest)
		return e0;

	char lib[PATH_MAX];
	const char *from_arg = NULL;
	int found = pid > 0 ? (mapped_any(pid, l->library, lib, sizeof(lib)) ? 1 : 0)
		: find_for_command(binary, args, l->library, lib, sizeof(lib), &from_arg, err,
				   errlen);
	if (found < 0) {
		*bad_binary = 1; /* what stops us reading it stops the kernel or ld.so too */
		return -1;
	}
	char libs[128]; /* "libmpi.so|libmpich.so" said as "libmpi.so or libmpich.so" */
	size_t n = 0;
	for (const char *c = l->library; *c && n + 5 < sizeof(libs); c++)
		n += *c == '|' ? (size_t)snprintf(libs + n, sizeof(libs) - n, " or ")
			       : (size_t)snprintf(libs + n, sizeof(libs) - n, "%c", *c);
	libs[n] = 0;
	if (from_arg)
		fprintf(stderr, "datacrumbs: %s does not load %s: layer %s is traced in the "
			"library %s loads (%s)\n", binary, libs, l->name, from_arg, lib);
	if (found == 1 && pid <= 0) {
		/* a static command (a launcher) may still exec dynamic programs: probe the
		 * system's library, the one /bin/sh loads */
		char e2[256];
		found = find_any("/bin/sh", l->library, lib, sizeof(lib), e2, sizeof(e2));
		if (found == 0 && nserved)
			fprintf(stderr, "datacrumbs: warning: %s does not load %s (a static "
				"binary): layer %s is traced by its system calls; its %d function%s "
				"that %s no system call (%s%s) only in the programs it runs that "
				"load %s\n", binary, libs, l->name, rest, rest > 1 ? "s" : "",
				rest > 1 ? "are" : "is", first_unserved(r, claimed),
				rest > 1 ? ", ..." : "", lib);
		else if (found == 0)
			fprintf(stderr, "datacrumbs: warning: %s does not load %s (a static "
				"binary): layer %s is traced in the programs it runs that load %s\n",
				binary, libs, l->name, lib);
	}
	if (found != 0 && missing && !nserved) {
		*missing = 1;
		fprintf(stderr, "datacrumbs: %s does not load %s%s at start: layer %s is traced "
			"in the traced processes that load it (dlopen)\n", binary, libs,
			args && args[0] && pid <= 0 ? ", nor does a program among its arguments"
			: "", l->name);
		return 0;
	}
	if (found != 0) {
		if (nserved) /* a static binary: its system calls are still seen */
			fprintf(stderr, "datacrumbs: warning: %s does not load %s%s: layer %s is "
				"traced by its system calls only (%d function%s that %s no system call, "
				"such as %s, %s not traced)\n", binary, libs, args && args[0] &&
				pid <= 0 ? ", nor does a program among its arguments" : "", l->name,
				rest, rest > 1 ? "s" : "", rest > 1 ? "are" : "is",
				first_unserved(r, claimed), rest > 1 ? "are" : "is");
		else
			fprintf(stderr, "datacrumbs: warning: %s does not load %s%s: layer %s is "
				"not traced\n", binary, libs, args && args[0] && pid <= 0 ?
				", nor does a program among its arguments" : "", l->name);
		return 0;
	}
	return uprobe_in(r, claimed, lib, lib, fn, arg, err, errlen);
}

/* The functions of uprobe-layer request r left for uprobes (not served by system calls)
 * in library file lib (said as `shown`); a warning for those it lacks. Returns as fn, or
 * -1 with err. */
static int uprobe_in(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		     const char *lib, const char *shown, dc_resolve_fn fn, void *arg, char *err,
		     size_t errlen)
{
	const struct dc_layer *l = r->layer;
	struct dc_elf_syms *syms = dc_elf_syms_open(lib, err, errlen);
	if (!syms)
		return -1;
	int hidden, found_any = 0, e = 0;
	struct dc_req_iter it = { .r = r };
	const struct dc_func *f;
	while (!e && (f = dc_req_next(&it, &hidden))) {
		if (served(r, claimed, f))
			continue;
		const char *sym = f->symbol[0] ? f->symbol : f->name;
		uint64_t off = dc_elf_sym_offset(syms, sym);
		if (!off && f->symbol[0]) { /* `symbol:` first, then the name itself */
			sym = f->name;
			off = dc_elf_sym_offset(syms, sym);
		}
		if (!off) {
			if (!hidden && !l->hint[0])
				fprintf(stderr, "datacrumbs: warning: %s is not exported by %s "
					"(%s:%d): not traced\n", sym, shown, l->path, f->line);
			continue;
		}
		found_any = 1;
		struct dc_resolved p = { l, f, lib, off, hidden };
		e = fn(&p, arg);
	}
	if (!e && l->hint[0] && !found_any)
		fprintf(stderr, "datacrumbs: warning: none of %s's functions is in %s: %s\n",
			l->path, shown, l->hint);
	dc_elf_syms_close(syms);
	return e;
}

int dc_resolve_matches(const struct dc_probe_req *r, const char *path)
{
	const struct dc_layer *l = r->layer;
	if (l->mechanism != DC_MECH_UPROBE || strchr(l->library, '/') ||
	    (l->custom && !strcmp(l->library, "CMD")))
		return 0;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	char alt[64];
	for (const char *p = l->library; *p;) {
		size_t n = strcspn(p, "|");
		snprintf(alt, sizeof(alt), "%.*s", (int)n, p);
		if (n && !strncmp(base, alt, strlen(alt)))
			return 1;
		p += n + (p[n] == '|');
	}
	return 0;
}

int dc_resolve_file(const struct dc_probe_req *r, const struct dc_sysset *claimed,
		    const char *file, const char *shown, dc_resolve_fn fn, void *arg, char *err,
		    size_t errlen)
{
	if (r->layer->custom)
		return custom_in((struct dc_layer *)r->layer, file, shown, fn, arg, err, errlen);
	return uprobe_in(r, claimed, file, shown, fn, arg, err, errlen);
}
