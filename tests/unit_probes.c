/* unit_probes.c: tests of core/probes.c: facts of probes/posix.yaml and the exact error of
 * each bad description in tests/data/probes_bad_*.yaml. Usage: unit_probes SOURCE_DIR */
#define _GNU_SOURCE
#include "probes.h"
#include "retsite.h"

#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unit.h"



/* Line `n` (1-based) of a file into buf; "" when there is no such line. */
static void file_line(const char *path, int n, char *buf, size_t len)
{
	FILE *fp = fopen(path, "r");
	int i;

	buf[0] = '\0';
	if (!fp)
		return;
	for (i = 1; fgets(buf, (int)len, fp); i++)
		if (i == n)
			break;
	if (i != n)
		buf[0] = '\0';
	fclose(fp);
}

/* Checks one argument of a function. */
static void check_arg(const struct dc_func *f, int i, const char *name, enum dc_arg_kind k)
{
	CHECK(f && i < f->nargs && strcmp(f->args[i].name, name) == 0 && f->args[i].kind == k,
	      "%s arg %d: want %s kind %d, got %s kind %d", f ? f->name : "?", i, name, (int)k,
	      f && i < f->nargs ? f->args[i].name : "-", f && i < f->nargs ?
	      (int)f->args[i].kind : -1);
}

/* Index of a function in file order, -1 when absent. */
static int func_index(const struct dc_layer *l, const char *name)
{
	const struct dc_func *f = dc_layer_func(l, name);

	return f ? (int)(f - l->funcs) : -1;
}

static const char *required[] = {
	"open", "open64", "openat", "openat64", "creat", "creat64", "close", "read", "write",
	"pread", "pread64", "pwrite", "pwrite64", "readv", "writev", "preadv", "preadv64",
	"pwritev", "pwritev64", "lseek", "lseek64", "fsync", "fdatasync", "ftruncate",
	"ftruncate64", "stat", "stat64", "lstat", "lstat64", "fstat", "fstat64", "fstatat",
	"fstatat64", "__xstat", "__xstat64", "__lxstat", "__lxstat64", "__fxstat",
	"__fxstat64", "__fxstatat", "__fxstatat64", "statx", "access", "faccessat", "unlink",
	"unlinkat", "rename", "renameat", "mkdir", "mkdirat", "rmdir", "chdir", "fchdir",
	"opendir", "fdopendir", "readdir", "readdir64", "closedir",
	"dup", "dup2", "dup3", "fcntl", "fcntl64", "copy_file_range", NULL,
};

/* Pairs (plain, alias) whose plain name must come first: glibc gives them one address. */
static const char *alias_order[][2] = {
	{ "open", "open64" }, { "openat", "openat64" }, { "creat", "creat64" },
	{ "pread", "pread64" }, { "pwrite", "pwrite64" }, { "preadv", "preadv64" },
	{ "pwritev", "pwritev64" }, { "lseek", "lseek64" }, { "ftruncate", "ftruncate64" },
	{ "stat", "stat64" }, { "lstat", "lstat64" }, { "fstat", "fstat64" },
	{ "fstatat", "fstatat64" }, { "stat", "__xstat" }, { "lstat", "__lxstat" },
	{ "fstat", "__fxstat" }, { "fstatat", "__fxstatat" }, { "__xstat", "__xstat64" },
	{ "readdir", "readdir64" }, { "fcntl", "fcntl64" },
};

static void test_posix(const char *src)
{
	char path[PATH_MAX], err[512], line[512];
	struct dc_layer *l;
	const struct dc_func *f;
	int i;

	snprintf(path, sizeof path, "%s/probes/posix.yaml", src);
	l = dc_layer_load(path, err, sizeof err);
	CHECK(l != NULL, "load %s: %s", path, err);
	if (!l)
		return;
	CHECK(strcmp(l->name, "POSIX") == 0, "layer '%s'", l->name);
	CHECK(strcmp(l->library, "libc.so") == 0, "library '%s'", l->library);
	CHECK(strcmp(l->path, path) == 0, "path '%s'", l->path);

	f = dc_layer_func(l, "open");
	CHECK(f && f->nargs == 3 && f->effect == DC_FX_OPEN && f->ret_kind == DC_RET_INT, "open");
	check_arg(f, 0, "pathname", DC_ARG_PATH);
	check_arg(f, 1, "flags", DC_ARG_UINT);
	check_arg(f, 2, "mode", DC_ARG_MODE);

	f = dc_layer_func(l, "pread64");
	CHECK(f && f->nargs == 4 && f->effect == DC_FX_NONE, "pread64");
	check_arg(f, 0, "fd", DC_ARG_FD);
	check_arg(f, 1, "buf", DC_ARG_NONE);     /* `_ buf`: not recorded, name kept */
	check_arg(f, 2, "count", DC_ARG_LONG);
	check_arg(f, 3, "offset", DC_ARG_LONG);

	f = dc_layer_func(l, "openat");
	check_arg(f, 0, "dirfd", DC_ARG_DIRFD);
	check_arg(f, 1, "pathname", DC_ARG_PATH);
	f = dc_layer_func(l, "readv");
	check_arg(f, 1, "iov", DC_ARG_IOV);
	check_arg(f, 2, "iovcnt", DC_ARG_IOVCNT);
	f = dc_layer_func(l, "lseek");
	check_arg(f, 2, "whence", DC_ARG_INT);
	/* mmap and munmap: UCX rewrites them, a uprobe breaks its hooks; posix.yaml has them
	 * only as system calls (tracepoints), mmap.yaml with uprobes */
	f = dc_layer_func(l, "mmap");
	CHECK(f && f->nsyscalls == 1 && !strcmp(f->syscall[0], "sys_mmap") &&
	      f->effect == DC_FX_MMAP, "posix.yaml's mmap is sys_mmap, effect mmap");
	f = dc_layer_func(l, "munmap");
	CHECK(f && f->nsyscalls == 1 && !strcmp(f->syscall[0], "sys_munmap") &&
	      f->effect == DC_FX_MUNMAP, "posix.yaml's munmap is sys_munmap, effect munmap");
	{
		char mpath[PATH_MAX];
		snprintf(mpath, sizeof mpath, "%s/probes/mmap.yaml", src);
		struct dc_layer *m = dc_layer_load(mpath, err, sizeof err);
		CHECK(m != NULL, "load %s: %s", mpath, err);
		f = m ? dc_layer_func(m, "mmap") : NULL;
		CHECK(f && f->ret_kind == DC_RET_POINTER && f->nargs == 6, "mmap ret pointer, 6 args");
		check_arg(f, 1, "size", DC_ARG_LONG);
		check_arg(f, 5, "offset", DC_ARG_LONG);
		f = m ? dc_layer_func(m, "munmap") : NULL;
		check_arg(f, 1, "size", DC_ARG_LONG);
		CHECK(m && func_index(m, "mmap") < func_index(m, "mmap64"), "mmap before mmap64");
		if (m)
			dc_layer_free(m);
	}
	f = dc_layer_func(l, "readdir");
	CHECK(f && f->ret_kind == DC_RET_POINTER && f->effect == DC_FX_NONE, "readdir");
	check_arg(f, 0, "dirp", DC_ARG_DIR);
	f = dc_layer_func(l, "closedir");
	CHECK(f && f->effect == DC_FX_CLOSEDIR, "closedir effect");
	f = dc_layer_func(l, "opendir");
	CHECK(f && f->effect == DC_FX_OPENDIR && f->ret_kind == DC_RET_POINTER, "opendir");
	f = dc_layer_func(l, "fdopendir");
	CHECK(f && f->effect == DC_FX_FDOPENDIR && f->ret_kind == DC_RET_POINTER, "fdopendir");
	f = dc_layer_func(l, "dup3");
	CHECK(f && f->effect == DC_FX_DUP2, "dup3 effect dup2");
	f = dc_layer_func(l, "fcntl64");
	CHECK(f && f->effect == DC_FX_FCNTL, "fcntl64 effect");
	f = dc_layer_func(l, "close");
	CHECK(f && f->effect == DC_FX_CLOSE && f->nargs == 1, "close");
	f = dc_layer_func(l, "__xstat");
	CHECK(f && f->nargs == 3 && f->args[0].kind == DC_ARG_NONE, "__xstat");
	check_arg(f, 1, "pathname", DC_ARG_PATH);
	f = dc_layer_func(l, "copy_file_range");
	check_arg(f, 0, "fd_in", DC_ARG_FD);
	check_arg(f, 2, "fd_out", DC_ARG_FD);
	check_arg(f, 4, "count", DC_ARG_LONG);
	CHECK(dc_layer_func(l, "fopen") == NULL, "fopen found in POSIX");
	CHECK(dc_layer_func(l, NULL) == NULL && dc_layer_func(NULL, "open") == NULL, "NULLs");

	for (i = 0; required[i]; i++)
		CHECK(dc_layer_func(l, required[i]) != NULL, "posix.yaml lacks %s", required[i]);
	for (i = 0; i < (int)(sizeof alias_order / sizeof alias_order[0]); i++)
		CHECK(func_index(l, alias_order[i][0]) >= 0 &&
		      func_index(l, alias_order[i][0]) < func_index(l, alias_order[i][1]),
		      "%s must come before %s", alias_order[i][0], alias_order[i][1]);

	/* Each function's recorded line is the one with its name. */
	for (i = 0; i < l->nfuncs; i++) {
		char want[128];

		file_line(path, l->funcs[i].line, line, sizeof line);
		snprintf(want, sizeof want, "name: %s ", l->funcs[i].name);
		CHECK(strstr(line, want) != NULL, "%s: line %d is '%s'", l->funcs[i].name,
		      l->funcs[i].line, line);
	}
	dc_layer_free(l);
}

/* Block style, quoted scalars, a bare `_`, defaults: written to a temp file. */
static void test_block_style(void)
{
	char path[] = "/tmp/unit_probes.XXXXXX", err[512];
	const char *text =
		"# comment\n"
		"layer: \"STDIO\"\n"
		"library: 'libc.so'\n"
		"functions:\n"
		"  - name: fread   # fread(3)\n"
		"    args:\n"
		"      - _ ptr\n"
		"      - int size\n"
		"      - int nmemb\n"
		"      - _\n"
		"  -\n"
		"    ret: int\n"
		"    name: fileno\n"
		"    args: []\n"
		"    returns: instructions\n";
	struct dc_layer *l;
	const struct dc_func *f;
	int fd = mkstemp(path);

	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
		CHECK(0, "cannot write %s", path);
		return;
	}
	close(fd);
	l = dc_layer_load(path, err, sizeof err);
	CHECK(l != NULL, "block style: %s", err);
	if (l) {
		CHECK(strcmp(l->name, "STDIO") == 0 && l->nfuncs == 2, "block style layer");
		f = dc_layer_func(l, "fread");
		CHECK(f && f->nargs == 4 && f->line == 5 && f->ret_kind == DC_RET_INT &&
		      f->effect == DC_FX_NONE, "fread");
		check_arg(f, 3, "", DC_ARG_NONE);
		check_arg(f, 1, "size", DC_ARG_INT);
		f = dc_layer_func(l, "fileno");
		/* A block mapping starts at its first key, the line after the bare `-`. */
		CHECK(f && f->nargs == 0 && f->line == 12, "fileno line %d", f ? f->line : -1);
		CHECK(f && f->returns == DC_RETURNS_INSN, "fileno returns: instructions");
		CHECK(dc_layer_func(l, "fread")->returns == DC_RETURNS_AUTO, "fread returns: auto");
		dc_layer_free(l);
	}
	unlink(path);

	l = dc_layer_load("/dc/no/such.yaml", err, sizeof err);
	CHECK(!l && strcmp(err, "/dc/no/such.yaml: No such file or directory") == 0,
	      "missing file: '%s'", err);
}

/* The exact error (after "PATH") of each bad fixture. */
static const struct { const char *file, *error; } bad[] = {
	{ "probes_bad_syntax.yaml", ":7: YAML syntax error: did not find expected ',' or ']' "
	  "(while parsing a flow sequence that started at line 6)" },
	{ "probes_bad_unknown_key.yaml", ":8: unknown field 'argz'" },
	{ "probes_bad_reserved.yaml", ":6: argument name 'ret' is the tracer's own (reserved: "
	  "hhash, fhash, level, p_idx, ret, errno, unfinished, unwound)" },
	{ "probes_bad_setjmp.yaml", ":7: '_setjmp' returns twice: a uretprobe on it breaks the "
	  "program or never fires, so it cannot be probed" },
	{ "probes_bad_top_key.yaml", ":3: unknown field 'libary'" },
	{ "probes_bad_kind.yaml", ":9: unknown argument kind 'short' in 'short count' "
	  "(kinds: int, uint, long, mode, fd, dirfd, path, target, text, line, addr, iov, iovcnt, "
	  "dir, ino, dev, file, str, size, nmemb, handle, handle_in, handle_out, long_out, elems, "
	  "datatype, status, _)" },
	{ "probes_bad_too_many_args.yaml", ":16: function 'seven' has more than 6 arguments" },
	{ "probes_bad_duplicate.yaml", ":12: duplicate function 'open' (first at line 5)" },
	{ "probes_bad_effect.yaml", ":7: unknown effect 'reopen' (effects: open, close, dup, "
	  "dup2, fcntl, chdir, fchdir, opendir, fdopendir, closedir, fopen, fclose, hopen, hclose, "
	  "rank, mmap, munmap, rename, unlink)" },
	{ "probes_bad_effect_arg.yaml", ":7: effect 'close' of 'myclose' needs an argument "
	  "of kind 'fd'" },
	{ "probes_bad_no_layer.yaml", ":2: missing 'layer'" },
	{ "probes_bad_library_alt.yaml", ":3: empty alternative in 'library' "
	  "('libmpi.so||libmpich.so')" },
	{ "probes_bad_effect_ret.yaml", ":8: effect 'open' of 'MPI_File_open' takes the return "
	  "value, which 'ret: errcode' says is not an fd or pointer" },
	{ "probes_bad_two_aux.yaml", ":6: more than one argument of kinds file, handle_in, "
	  "handle_out, long_out, status (one is read per call)" },
	{ "probes_bad_no_name.yaml", ":7: function has no 'name'" },
	{ "probes_bad_ret.yaml", ":7: unknown ret 'short' (int, long, pointer, errcode or void)" },
	{ "probes_bad_returns.yaml", ":7: unknown returns 'uretprobe' (auto, hijack, "
	  "instructions or none)" },
	{ "probes_bad_syscall.yaml", ":7: syscall 'sys_reed' is not sys_<name> of a system "
	  "call of this architecture (asm/unistd_64.h)" },
	{ "probes_bad_syscall_twice.yaml", ":7: syscall 'sys_open' named twice" },
	{ "probes_bad_syscall_many.yaml", ":7: function 'stat' names more than 3 system calls" },
	{ "probes_bad_three_paths.yaml", ":6: more than two string arguments (kinds path, "
	  "target: at most two are recorded per call)" },
};

static void test_bad(const char *src)
{
	char pat[PATH_MAX], err[512], want[PATH_MAX + 256];
	glob_t g;
	size_t i, j, nbad = sizeof bad / sizeof bad[0];
	int seen[sizeof bad / sizeof bad[0]] = { 0 };

	snprintf(pat, sizeof pat, "%s/tests/data/probes_bad_*.yaml", src);
	if (glob(pat, 0, NULL, &g) != 0) {
		CHECK(0, "no fixtures match %s", pat);
		return;
	}
	for (i = 0; i < g.gl_pathc; i++) {
		const char *file = g.gl_pathv[i], *base = strrchr(file, '/') + 1;
		struct dc_layer *l;

		for (j = 0; j < nbad && strcmp(bad[j].file, base) != 0; j++)
			;
		if (j == nbad) {
			CHECK(0, "%s: no expected error in unit_probes.c", file);
			continue;
		}
		seen[j] = 1;
		err[0] = '\0';
		l = dc_layer_load(file, err, sizeof err);
		snprintf(want, sizeof want, "%s%s", file, bad[j].error);
		CHECK(l == NULL && strcmp(err, want) == 0, "%s:\n  want '%s'\n  got  '%s'", base,
		      want, l ? "(loaded)" : err);
		dc_layer_free(l);
	}
	globfree(&g);
	for (j = 0; j < nbad; j++)
		CHECK(seen[j], "fixture %s is missing", bad[j].file);
}

/* probes/posix.yaml's `syscall:` fields: exact for a few functions (an alias names what its
 * function names, a compat symbol too; none on what no system call serves one for one),
 * and for each system call the function its events are named after: where
 * probes/syscalls.yaml describes the call, the same arguments (names; int and uint alike)
 * in the same order. */
static void test_posix_syscalls(const char *src)
{
	char path[PATH_MAX], err[512];
	struct dc_layer *px, *sy;
	static const char *const want[][3] = {
		{ "write", "sys_write", "" }, { "pread", "sys_pread64", "" },
		{ "pread64", "sys_pread64", "" }, { "fstat", "sys_fstat", "sys_newfstatat" },
		{ "fstatat", "sys_newfstatat", "" }, { "stat64", "sys_stat", "sys_newfstatat" },
		{ "__fxstat", "sys_fstat", "sys_newfstatat" }, { "openat", "sys_openat", "" },
		{ "open", "sys_open", "sys_openat" }, { "__open_nocancel", "sys_openat", "" },
		{ "faccessat", "sys_faccessat2", "sys_faccessat" },
		{ "readdir", "", "" }, { "opendir", "", "" }, { "lseek", "sys_lseek", "" },
	};
	static const char *const namers[][2] = {
		{ "sys_newfstatat", "fstatat" }, { "sys_openat", "openat" },
		{ "sys_stat", "stat" }, { "sys_pread64", "pread" }, { "sys_getdents64", NULL },
	};
	int n = 0, nnamers = 0;

	snprintf(path, sizeof path, "%s/probes/posix.yaml", src);
	px = dc_layer_load(path, err, sizeof err);
	snprintf(path, sizeof path, "%s/probes/syscalls.yaml", src);
	sy = dc_layer_load(path, err, sizeof err);
	CHECK(px && sy, "load: %s", err);
	if (!px || !sy)
		goto out;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct dc_func *f = dc_layer_func(px, want[i][0]);
		int nwant = !!want[i][1][0] + !!want[i][2][0];
		CHECK(f && f->nsyscalls == nwant, "%s: want %d system calls, got %d", want[i][0],
		      nwant, f ? f->nsyscalls : -1);
		for (int k = 0; f && k < nwant && k < f->nsyscalls; k++)
			CHECK(strcmp(f->syscall[k], want[i][1 + k]) == 0, "%s: syscall %d want "
			      "'%s' got '%s'", want[i][0], k, want[i][1 + k], f->syscall[k]);
	}
	for (size_t i = 0; i < sizeof namers / sizeof namers[0]; i++) {
		const struct dc_func *f = dc_layer_syscall_namer(px, namers[i][0]);
		CHECK(namers[i][1] ? f && !strcmp(f->name, namers[i][1]) : !f,
		      "%s: named after %s, got %s", namers[i][0], namers[i][1] ? namers[i][1]
		      : "(none)", f ? f->name : "(none)");
	}
	for (int i = 0; i < px->nfuncs; i++) {
		const struct dc_func *f = &px->funcs[i], *s;
		if (!f->nsyscalls)
			continue;
		n++;
		if (dc_layer_syscall_namer(px, f->syscall[0]) != f)
			continue;
		nnamers++;
		if (!(s = dc_layer_func(sy, f->syscall[0])))
			continue;
		int same = f->nargs == s->nargs;
		for (int a = 0; same && a < f->nargs; a++) {
			enum dc_arg_kind x = f->args[a].kind, y = s->args[a].kind;
			if (x == DC_ARG_UINT)
				x = DC_ARG_INT;
			if (y == DC_ARG_UINT)
				y = DC_ARG_INT;
			same = x == y && !strcmp(f->args[a].name, s->args[a].name);
		}
		CHECK(same, "%s (line %d) and %s (syscalls.yaml line %d): arguments differ",
		      f->name, f->line, s->name, s->line);
	}
	CHECK(n == 92, "functions with a syscall: want 92, got %d", n);
	CHECK(nnamers == 57, "system calls named: want 57, got %d", nnamers);
out:
	dc_layer_free(px);
	dc_layer_free(sy);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: unit_probes SOURCE_DIR\n");
		return 2;
	}
	test_posix(argv[1]);
	test_block_style();
	test_bad(argv[1]);
	test_posix_syscalls(argv[1]);
	printf("unit_probes: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
