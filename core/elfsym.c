/* elfsym.c: ELF reading with libelf (gelf): which shared library a binary loads (the ld.so(8)
 * search, done by hand) and function symbols mapped to uprobe file offsets. No BPF, no probes. */
#define _GNU_SOURCE
#include "elfsym.h"
#include "pinfile.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <glob.h>
#include <libelf.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define SCRIPT_DEPTH 4          /* #! interpreters followed, as binfmt_script allows */
#define CONF_DEPTH 8            /* nested `include` levels in /etc/ld.so.conf */
#define VERSYM_HIDDEN 0x8000    /* .gnu.version: non-default (name@VER) symbol */

static const char *default_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL,
};

/* ---------------------------------------------------------------------------------------
 * Small helpers
 * ------------------------------------------------------------------------------------- */

/* Formats a one-line message into err (when given). */
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Copies s into out; -1 when it does not fit. */
static int copy_str(char *out, size_t outlen, const char *s)
{
	size_t n = strlen(s);

	if (n >= outlen)
		return -1;
	memcpy(out, s, n + 1);
	return 0;
}

/* libelf needs elf_version() once before any elf_begin(); cheap to repeat. */
static int elf_ready(void)
{
	static int ok;

	if (!ok && elf_version(EV_CURRENT) != EV_NONE)
		ok = 1;
	return ok;
}

/* An ELF file opened for reading. */
struct elf_file {
	int fd;
	Elf *e;
};

/* Opens path as an ELF file. Returns 0, or -1 with err naming the path. */
static int elf_file_open(struct elf_file *f, const char *path, char *err, size_t errlen)
{
	f->e = NULL;
	f->fd = -1;
	if (!elf_ready()) {
		set_err(err, errlen, "%s: libelf: %s", path, elf_errmsg(-1));
		return -1;
	}
	char pinned[64];
	const char *p = dc_pin(path, pinned, sizeof(pinned)); /* site mode: as the user, once */
	f->fd = p ? open(p, O_RDONLY | O_CLOEXEC) : -1;
	if (f->fd < 0) {
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	f->e = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->e || elf_kind(f->e) != ELF_K_ELF) {
		set_err(err, errlen, "%s: not an ELF file", path);
		if (f->e)
			elf_end(f->e);
		close(f->fd);
		f->e = NULL;
		f->fd = -1;
		return -1;
	}
	return 0;
}

/* Closes a file elf_file_open opened. */
static void elf_file_close(struct elf_file *f)
{
	elf_end(f->e);
	close(f->fd);
	f->e = NULL;
	f->fd = -1;
}

/* Maps a virtual address to a file offset through the PT_LOAD segment holding it.
 * Executable segments are tried first. Returns 0 when no segment holds addr. */
static uint64_t vaddr_to_offset(Elf *e, uint64_t addr, int want_exec)
{
	size_t n, i;
	GElf_Phdr ph;
	int pass;

	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (pass = want_exec ? 0 : 1; pass < 2; pass++) {
		for (i = 0; i < n; i++) {
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (pass == 0 && !(ph.p_flags & PF_X))
				continue;
			if (addr >= ph.p_vaddr && addr < ph.p_vaddr + ph.p_filesz)
				return addr - ph.p_vaddr + ph.p_offset;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * dc_elf_which: execvp(3)-style lookup
 * ------------------------------------------------------------------------------------- */

/* 0: path is an executable regular file; else the errno execve would report. */
static int check_exec(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
		return EACCES;
	return 0;
}

/* Makes path absolute against the cwd (no symlink resolution). */
static int make_absolute(const char *path, char *out, size_t outlen)
{
	char cwd[PATH_MAX];

	if (path[0] == '/')
		return copy_str(out, outlen, path);
	if (!getcwd(cwd, sizeof cwd))
		return -1;
	if ((size_t)snprintf(out, outlen, "%s/%s", cwd, path) >= outlen)
		return -1;
	return 0;
}

int dc_elf_which(const char *binary, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *path, *p;
	char cand[PATH_MAX];
	size_t dlen;
	int rc, saw_eacces = 0;

	if (!binary || !*binary) {
		set_err(err, errlen, "'': command not found");
		return -1;
	}
	if (strchr(binary, '/')) {
		rc = check_exec(binary);
		if (rc == EACCES) {
			set_err(err, errlen, "%s: Permission denied (not executable)", binary);
			return -1;
		}
		if (rc) {
			set_err(err, errlen, "%s: %s", binary, strerror(rc));
			return -1;
		}
		if (make_absolute(binary, out, outlen) != 0) {
			set_err(err, errlen, "%s: path too long", binary);
			return -1;
		}
		return 0;
	}

	/* execvp: PATH, or confstr(_CS_PATH) when unset; an empty element is the cwd. */
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	while ((p = dc_list_next(&path, ":", &dlen))) {
		if (dlen == 0)
			rc = snprintf(cand, sizeof cand, "%s", binary);
		else
			rc = snprintf(cand, sizeof cand, "%.*s/%s", (int)dlen, p, binary);
		if (rc > 0 && (size_t)rc < sizeof cand) {
			rc = check_exec(cand);
			if (rc == 0) {
				if (make_absolute(cand, out, outlen) != 0) {
					set_err(err, errlen, "%s: path too long", cand);
					return -1;
				}
				return 0;
			}
			if (rc == EACCES)
				saw_eacces = 1;
		}
	}
	if (saw_eacces)
		set_err(err, errlen, "%s: Permission denied (not executable)", binary);
	else
		set_err(err, errlen, "%s: command not found", binary);
	return -1;
}

/* ---------------------------------------------------------------------------------------
 * dc_elf_find_library: the ld.so(8) search
 * ------------------------------------------------------------------------------------- */

/* What the search needs from one loaded object. */
struct dynobj {
	char path[PATH_MAX];    /* as found (realpath for the executable) */
	char origin[PATH_MAX];  /* $ORIGIN: the directory of path */
	char *rpath, *runpath;  /* DT_RPATH / DT_RUNPATH strings, NULL when absent */
	char **needed;          /* DT_NEEDED names */
	int nneeded;
	int has_interp;         /* PT_INTERP present */
	int loader;             /* index of the object whose DT_NEEDED loaded this, -1: none */
};

/* The state of one search. */
struct search {
	int elfclass, machine;  /* of the executable: candidates must match */
	struct dynobj *objs;
	int nobjs, capobjs;
	char **conf_dirs;       /* /etc/ld.so.conf directories, read on first need */
	int nconf, capconf, conf_read;
};

static void dynobj_free(struct dynobj *o)
{
	int i;

	free(o->rpath);
	free(o->runpath);
	for (i = 0; i < o->nneeded; i++)
		free(o->needed[i]);
	free(o->needed);
}

/* Reads PT_INTERP and the PT_DYNAMIC entries (DT_NEEDED, DT_RPATH, DT_RUNPATH) through
 * the program headers, as the loader sees them. Returns 0, or -1 (out of memory). */
static int read_dynamic(Elf *e, struct dynobj *o)
{
	size_t n, i, nd;
	GElf_Phdr ph, dyn_ph;
	GElf_Dyn d;
	Elf_Data *dyn, *str;
	uint64_t strtab = 0, strsz = 0, stroff;
	int have_dyn = 0;

	if (elf_getphdrnum(e, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			continue;
		if (ph.p_type == PT_INTERP)
			o->has_interp = 1;
		if (ph.p_type == PT_DYNAMIC) {
			dyn_ph = ph;
			have_dyn = 1;
		}
	}
	if (!have_dyn || dyn_ph.p_filesz == 0)
		return 0;
	dyn = elf_getdata_rawchunk(e, (int64_t)dyn_ph.p_offset, dyn_ph.p_filesz, ELF_T_DYN);
	if (!dyn)
		return 0;
	nd = dyn_ph.p_filesz / gelf_fsize(e, ELF_T_DYN, 1, EV_CURRENT);
	for (i = 0; i < nd && gelf_getdyn(dyn, (int)i, &d); i++) {
		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag == DT_STRTAB)
			strtab = d.d_un.d_ptr;
		else if (d.d_tag == DT_STRSZ)
			strsz = d.d_un.d_val;
	}
	stroff = strtab ? vaddr_to_offset(e, strtab, 0) : 0;
	if (!stroff || !strsz)
		return 0;
	str = elf_getdata_rawchunk(e, (int64_t)stroff, strsz, ELF_T_BYTE);
	if (!str)
		return 0;

	for (i = 0; i < nd && gelf_getdyn(dyn, (int)i, &d); i++) {
		const char *s;
		char *copy;

		if (d.d_tag == DT_NULL)
			break;
		if (d.d_tag != DT_NEEDED && d.d_tag != DT_RPATH && d.d_tag != DT_RUNPATH)
			continue;
		if (d.d_un.d_val >= strsz)
			continue;
		s = (const char *)str->d_buf + d.d_un.d_val;
		if (!memchr(s, '\0', strsz - d.d_un.d_val))
			continue;
		if (!(copy = strdup(s)))
			return -1;
		if (d.d_tag == DT_NEEDED) {
			char **nn = realloc(o->needed, (size_t)(o->nneeded + 1) * sizeof *nn);

			if (!nn) {
				free(copy);
				return -1;
			}
			o->needed = nn;
			o->needed[o->nneeded++] = copy;
		} else if (d.d_tag == DT_RPATH && !o->rpath) {
			o->rpath = copy;
		} else if (d.d_tag == DT_RUNPATH && !o->runpath) {
			o->runpath = copy;
		} else {
			free(copy);
		}
	}
	return 0;
}

/* Sets o->origin to the directory part of o->path. */
static void set_origin(struct dynobj *o)
{
	char *slash;

	copy_str(o->origin, sizeof o->origin, o->path);
	slash = strrchr(o->origin, '/');
	if (slash == o->origin)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		copy_str(o->origin, sizeof o->origin, ".");
}

/* Expands $ORIGIN and ${ORIGIN} in s (the token must end at a non-identifier character,
 * as in ld.so). Other tokens ($LIB, $PLATFORM) are left as written. Returns 0, -1 if too
 * long. */
static int expand_origin(const char *s, const char *origin, char *out, size_t outlen)
{
	size_t o = 0, olen = strlen(origin);

	while (*s) {
		size_t tok = 0;

		if (strncmp(s, "${ORIGIN}", 9) == 0)
			tok = 9;
		else if (strncmp(s, "$ORIGIN", 7) == 0 &&
			 !(s[7] == '_' || (s[7] >= 'a' && s[7] <= 'z') ||
			   (s[7] >= 'A' && s[7] <= 'Z') || (s[7] >= '0' && s[7] <= '9')))
			tok = 7;
		if (tok) {
			if (o + olen >= outlen)
				return -1;
			memcpy(out + o, origin, olen);
			o += olen;
			s += tok;
			continue;
		}
		if (o + 1 >= outlen)
			return -1;
		out[o++] = *s++;
	}
	out[o] = '\0';
	return 0;
}

/* 1 when path is an ELF shared object of the executable's class and machine. */
static int candidate_ok(const struct search *sr, const char *path)
{
	struct elf_file f;
	GElf_Ehdr eh;
	int ok = 0;

	if (access(path, F_OK) != 0)
		return 0;
	if (elf_file_open(&f, path, NULL, 0) != 0)
		return 0;
	if (gelf_getehdr(f.e, &eh) && gelf_getclass(f.e) == sr->elfclass &&
	    eh.e_machine == sr->machine && eh.e_type == ET_DYN)
		ok = 1;
	elf_file_close(&f);
	return ok;
}

/* Looks for `name` in each directory of a ':'- (or ';'-) separated list, $ORIGIN expanded
 * against origin (the executable's for LD_LIBRARY_PATH). An empty element is the cwd.
 * Returns 1 with the path in out, 0 when not there. */
static int search_list(const struct search *sr, const char *list, const char *origin,
		       const char *name, char *out, size_t outlen)
{
	const char *p;
	char dir[PATH_MAX], exp[PATH_MAX];
	size_t dlen;

	while ((p = dc_list_next(&list, ":;", &dlen))) {
		if (dlen < sizeof dir) {
			memcpy(dir, p, dlen);
			dir[dlen] = '\0';
			if (dlen == 0)
				copy_str(dir, sizeof dir, ".");
			if (expand_origin(dir, origin, exp, sizeof exp) == 0 &&
			    (size_t)snprintf(out, outlen, "%s/%s", exp, name) < outlen &&
			    candidate_ok(sr, out))
				return 1;
		}
	}
	return 0;
}

/* Adds a directory from ld.so.conf (kept once). Returns 0, or -1 (out of memory). */
static int conf_add(struct search *sr, const char *dir)
{
	int i;
	char *copy;

	for (i = 0; i < sr->nconf; i++)
		if (strcmp(sr->conf_dirs[i], dir) == 0)
			return 0;
	if (sr->nconf == sr->capconf) {
		int cap = sr->capconf ? sr->capconf * 2 : 16;
		char **nd = realloc(sr->conf_dirs, (size_t)cap * sizeof *nd);

		if (!nd)
			return -1;
		sr->conf_dirs = nd;
		sr->capconf = cap;
	}
	if (!(copy = strdup(dir)))
		return -1;
	sr->conf_dirs[sr->nconf++] = copy;
	return 0;
}

/* Reads one ld.so.conf-format file: a directory per line, `#` comments, `include GLOB`
 * (relative globs are relative to the file's directory), `hwcap` lines ignored. A file
 * that cannot be read is skipped, as ldconfig does. */
static int conf_read(struct search *sr, const char *file, int depth)
{
	FILE *fp;
	char line[PATH_MAX];
	int rc = 0;

	if (depth > CONF_DEPTH || !(fp = fopen(file, "re")))
		return 0;
	while (rc == 0 && fgets(line, sizeof line, fp)) {
		char *s = line, *e;

		s[strcspn(s, "#\n")] = '\0';
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*s)
			continue;
		if (strncmp(s, "include", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
			char pat[PATH_MAX], fdir[PATH_MAX];
			glob_t g;
			size_t i;

			s += 8;
			while (*s == ' ' || *s == '\t')
				s++;
			if (*s == '/') {
				if (copy_str(pat, sizeof pat, s) != 0)
					continue;
			} else {
				char *slash;
				int n;

				copy_str(fdir, sizeof fdir, file);
				slash = strrchr(fdir, '/');
				if (slash)
					*slash = '\0';
				n = snprintf(pat, sizeof pat, "%s/%s", slash ? fdir : ".", s);
				if (n < 0 || (size_t)n >= sizeof pat)
					continue;
			}
			if (glob(pat, 0, NULL, &g) == 0) {
				for (i = 0; rc == 0 && i < g.gl_pathc; i++)
					rc = conf_read(sr, g.gl_pathv[i], depth + 1);
				globfree(&g);
			}
		} else if (strncmp(s, "hwcap", 5) == 0 && (s[5] == ' ' || s[5] == '\t')) {
			continue;
		} else {
			rc = conf_add(sr, s);
		}
	}
	fclose(fp);
	return rc;
}

/* Finds the file for DT_NEEDED `name` asked for by object `req`, in ld.so(8) order.
 * Returns 1 with the path in out, 0 when not found, -1 out of memory. */
static int search_needed(struct search *sr, int req, const char *name, char *out,
			 size_t outlen)
{
	const struct dynobj *r = &sr->objs[req];
	int i;

	/* A name with a slash is a path (relative to the cwd), not searched. */
	if (strchr(name, '/')) {
		if (expand_origin(name, r->origin, out, outlen) != 0)
			return 0;
		return candidate_ok(sr, out);
	}

	/* DT_RPATH of the requester, then of its loaders up to the executable, unless the
	 * requester has DT_RUNPATH (an object with DT_RUNPATH never offers its DT_RPATH). */
	if (!r->runpath) {
		for (i = req; i >= 0; i = sr->objs[i].loader) {
			const struct dynobj *o = &sr->objs[i];

			if (!o->runpath && o->rpath &&
			    search_list(sr, o->rpath, o->origin, name, out, outlen))
				return 1;
		}
	}
	if (search_list(sr, getenv("LD_LIBRARY_PATH"), sr->objs[0].origin, name, out, outlen))
		return 1;
	if (r->runpath && search_list(sr, r->runpath, r->origin, name, out, outlen))
		return 1;

	/* ld.so uses /etc/ld.so.cache; the directories it was built from stand in for it. */
	if (!sr->conf_read) {
		sr->conf_read = 1;
		if (conf_read(sr, "/etc/ld.so.conf", 0) != 0)
			return -1;
	}
	for (i = 0; i < sr->nconf; i++)
		if ((size_t)snprintf(out, outlen, "%s/%s", sr->conf_dirs[i], name) < outlen &&
		    candidate_ok(sr, out))
			return 1;
	for (i = 0; default_dirs[i]; i++)
		if ((size_t)snprintf(out, outlen, "%s/%s", default_dirs[i], name) < outlen &&
		    candidate_ok(sr, out))
			return 1;
	return 0;
}

/* Appends an object read from path (loaded by `loader`). Returns its index, -1 on error
 * (err set). For the executable, also records class and machine. */
static int add_object(struct search *sr, const char *path, int loader, char *err,
		      size_t errlen)
{
	struct elf_file f;
	struct dynobj *o;
	GElf_Ehdr eh;

	if (sr->nobjs == sr->capobjs) {
		int cap = sr->capobjs ? sr->capobjs * 2 : 8;
		struct dynobj *no = realloc(sr->objs, (size_t)cap * sizeof *no);

		if (!no) {
			set_err(err, errlen, "%s: out of memory", path);
			return -1;
		}
		sr->objs = no;
		sr->capobjs = cap;
	}
	if (elf_file_open(&f, path, err, errlen) != 0)
		return -1;
	if (!gelf_getehdr(f.e, &eh)) {
		set_err(err, errlen, "%s: bad ELF header: %s", path, elf_errmsg(-1));
		elf_file_close(&f);
		return -1;
	}
	if (loader < 0) {
		sr->elfclass = gelf_getclass(f.e);
		sr->machine = eh.e_machine;
	}
	o = &sr->objs[sr->nobjs];
	memset(o, 0, sizeof *o);
	o->loader = loader;
	copy_str(o->path, sizeof o->path, path);
	set_origin(o);
	if (read_dynamic(f.e, o) != 0) {
		set_err(err, errlen, "%s: out of memory", path);
		dynobj_free(o);
		elf_file_close(&f);
		return -1;
	}
	elf_file_close(&f);
	return sr->nobjs++;
}

/* Follows `#!` lines from path (already absolute) to the ELF file that runs it, written
 * to out. `#!/usr/bin/env [-opts] [VAR=val] prog` resolves prog in PATH. Returns 0, or -1
 * with err. */
static int resolve_script(const char *path, char *out, size_t outlen, char *err,
			  size_t errlen)
{
	char cur[PATH_MAX], buf[256], why[PATH_MAX + 64];
	int depth;

	if (copy_str(cur, sizeof cur, path) != 0) {
		set_err(err, errlen, "%s: path too long", path);
		return -1;
	}
	for (depth = 0; depth <= SCRIPT_DEPTH; depth++) {
		FILE *fp = fopen(cur, "re");
		char *interp, *arg, *s;
		size_t n;

		if (!fp) {
			set_err(err, errlen, "%s: %s", cur, strerror(errno));
			return -1;
		}
		n = fread(buf, 1, sizeof buf - 1, fp);
		fclose(fp);
		buf[n] = '\0';
		if (n < 2 || buf[0] != '#' || buf[1] != '!') {
			/* neither ELF nor #!: execvp(3) and shells run it with /bin/sh (ENOEXEC) */
			const char *runs = n >= 4 && !memcmp(buf, "\177ELF", 4) ? cur : "/bin/sh";
			if (copy_str(out, outlen, runs) == 0)
				return 0;
			set_err(err, errlen, "%s: path too long", cur);
			return -1;
		}

		/* Kernel rules: interpreter is the first word, the rest of the line one arg. */
		buf[strcspn(buf, "\n")] = '\0';
		for (interp = buf + 2; *interp == ' ' || *interp == '\t'; interp++)
			;
		arg = interp + strcspn(interp, " \t");
		if (*arg)
			*arg++ = '\0';
		if (!*interp) {
			set_err(err, errlen, "%s: empty #! line", cur);
			return -1;
		}
		s = strrchr(interp, '/');
		if (strcmp(s ? s + 1 : interp, "env") == 0) {
			char *word = NULL, *save = NULL, *w;

			for (w = strtok_r(arg, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
				if (w[0] == '-' || strchr(w, '='))
					continue;
				word = w;
				break;
			}
			if (!word) {
				set_err(err, errlen, "%s: #!%s names no program", cur, interp);
				return -1;
			}
			interp = word;
		}
		if (dc_elf_which(interp, cur, sizeof cur, why, sizeof why) != 0) {
			set_err(err, errlen, "%s: #! interpreter %s", path, why);
			return -1;
		}
	}
	set_err(err, errlen, "%s: more than %d levels of #! interpreters", path, SCRIPT_DEPTH);
	return -1;
}

/* 1 when the basename of a DT_NEEDED name starts with prefix. */
static int needed_matches(const char *needed, const char *prefix)
{
	const char *base = strrchr(needed, '/');

	base = base ? base + 1 : needed;
	return strncmp(base, prefix, strlen(prefix)) == 0;
}

/* 1 when a library with this real path is already among the objects. */
static int object_loaded(const struct search *sr, const char *real)
{
	int i;
	char r[PATH_MAX];

	for (i = 0; i < sr->nobjs; i++)
		if (realpath(sr->objs[i].path, r) && strcmp(r, real) == 0)
			return 1;
	return 0;
}

/* Long on purpose: ld.so(8)'s breadth-first walk of DT_NEEDED (search_needed finds each
 * name), with its error exits written out and one cleanup path, read top to bottom. */
int dc_elf_find_library(const char *binary, const char *prefix, char *out, size_t outlen,
			char *err, size_t errlen)
{
	struct search sr;
	char abs[PATH_MAX], elf[PATH_MAX], real[PATH_MAX], found[PATH_MAX];
	char **seen = NULL;
	int nseen = 0, i, j, rc = -1;

	memset(&sr, 0, sizeof sr);
	if (dc_elf_which(binary, abs, sizeof abs, err, errlen) != 0)
		return -1;
	if (resolve_script(abs, elf, sizeof elf, err, errlen) != 0)
		return -1;
	if (!realpath(elf, real)) {
		set_err(err, errlen, "%s: %s", elf, strerror(errno));
		return -1;
	}
	if (add_object(&sr, real, -1, err, errlen) < 0)
		goto done;
	if (sr.objs[0].nneeded == 0) {
		set_err(err, errlen, "%s: %s, no %s", real, sr.objs[0].has_interp ?
			"loads no libraries (no DT_NEEDED)" : "statically linked", prefix);
		rc = 1;
		goto done;
	}

	/* Breadth first: objs[] is the queue; each object's DT_NEEDED in order. */
	for (i = 0; i < sr.nobjs; i++) {
		for (j = 0; j < sr.objs[i].nneeded; j++) {
			const char *name = sr.objs[i].needed[j];
			char **ns;
			int k, dup = 0, r;

			for (k = 0; k < nseen && !dup; k++)
				dup = strcmp(seen[k], name) == 0;
			if (dup)
				continue;
			if (!(ns = realloc(seen, (size_t)(nseen + 1) * sizeof *ns))) {
				set_err(err, errlen, "%s: out of memory", real);
				goto done;
			}
			seen = ns;
			seen[nseen++] = (char *)name;

			r = search_needed(&sr, i, name, found, sizeof found);
			if (r < 0) {
				set_err(err, errlen, "%s: out of memory", real);
				goto done;
			}
			if (needed_matches(name, prefix)) {
				char rp[PATH_MAX];

				if (r == 0) {
					set_err(err, errlen, "%s: needs %s (via %s) but it is not found",
						real, name, sr.objs[i].path);
					goto done;
				}
				if (!realpath(found, rp) || copy_str(out, outlen, rp) != 0) {
					set_err(err, errlen, "%s: cannot resolve %s", real, found);
					goto done;
				}
				rc = 0;
				goto done;
			}
			/* A dependency ld.so could not find would stop the program; here it only
			 * means its own dependencies are not searched. */
			if (r == 1) {
				char rp[PATH_MAX];

				if (realpath(found, rp) && object_loaded(&sr, rp))
					continue;
				if (add_object(&sr, found, i, err, errlen) < 0)
					goto done;
			}
		}
	}
	set_err(err, errlen, "%s: loads no library matching '%s*'", real, prefix);
	rc = 1;
done:
	/* seen[] borrowed the names from objs[]; free those last. */
	free(seen);
	for (i = 0; i < sr.nobjs; i++)
		dynobj_free(&sr.objs[i]);
	free(sr.objs);
	for (i = 0; i < sr.nconf; i++)
		free(sr.conf_dirs[i]);
	free(sr.conf_dirs);
	return rc;
}

/* ---------------------------------------------------------------------------------------
 * Function symbols
 * ------------------------------------------------------------------------------------- */

/* Rank of a definition when a name is defined more than once; lowest wins. */
enum {
	RANK_DEFAULT = 0,       /* global/weak, unversioned or name@@VER */
	RANK_LOCAL = 1,         /* a local (static) function in .symtab */
	RANK_HIDDEN = 2,        /* name@VER, an old version kept for old binaries */
};

struct sym {
	char *name;
	uint64_t offset;        /* file offset of the entry point */
	int ifunc;              /* STT_GNU_IFUNC: offset is the resolver, not the function */
	int rank;
	int order;              /* reading order, keeps the sort stable */
};

struct dc_elf_syms {
	struct sym *syms;       /* sorted by name, one entry per name; read-only once built */
	int n;
	int refs;               /* holders: callers and syms_cache (under syms_lock) */
};

/* dc_elf_syms_open's recent files, shared: the feature checks, the resolver and the
 * loader watch open libc's symbols several times a run (each a read and a sort of some
 * 10^4 names: ~20M instructions), now once. Keyed by the opened file's identity (fstat(2):
 * device, inode, size, mtime, ctime), so that a file replaced or rewritten is read again;
 * the least recently used of SYMS_CACHE goes. A built table is never written again, so
 * threads share it; refs and the cache change under syms_lock. */
#define SYMS_CACHE 4
static struct syms_slot {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
	unsigned long used; /* syms_clock when last handed out; 0: empty */
	struct dc_elf_syms *s;
} syms_cache[SYMS_CACHE];
static unsigned long syms_clock;
static pthread_mutex_t syms_lock = PTHREAD_MUTEX_INITIALIZER;

static int same_file(const struct syms_slot *c, const struct stat *st)
{
	return c->used && c->dev == st->st_dev && c->ino == st->st_ino &&
	       c->size == st->st_size && c->mtim.tv_sec == st->st_mtim.tv_sec &&
	       c->mtim.tv_nsec == st->st_mtim.tv_nsec && c->ctim.tv_sec == st->st_ctim.tv_sec &&
	       c->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static void syms_free(struct dc_elf_syms *s)
{
	for (int i = 0; i < s->n; i++)
		free(s->syms[i].name);
	free(s->syms);
	free(s);
}

/* The cached table of the file st describes, with a reference for the caller, or NULL. */
static struct dc_elf_syms *cache_get(const struct stat *st)
{
	struct dc_elf_syms *s = NULL;
	pthread_mutex_lock(&syms_lock);
	for (int i = 0; i < SYMS_CACHE && !s; i++) {
		if (same_file(&syms_cache[i], st)) {
			s = syms_cache[i].s;
			s->refs++;
			syms_cache[i].used = ++syms_clock;
		}
	}
	pthread_mutex_unlock(&syms_lock);
	return s;
}

/* Keeps s (just built, s->refs 1: the caller's) for the file st describes, in place of
 * the least recently used entry. */
static void cache_put(const struct stat *st, struct dc_elf_syms *s)
{
	struct dc_elf_syms *gone = NULL;
	pthread_mutex_lock(&syms_lock);
	struct syms_slot *c = &syms_cache[0];
	for (int i = 0; i < SYMS_CACHE; i++) {
		if (same_file(&syms_cache[i], st)) { /* another thread built it meanwhile */
			pthread_mutex_unlock(&syms_lock);
			return;
		}
		if (syms_cache[i].used < c->used)
			c = &syms_cache[i];
	}
	if (c->used && --c->s->refs == 0)
		gone = c->s;
	*c = (struct syms_slot){ .dev = st->st_dev, .ino = st->st_ino, .size = st->st_size,
				 .mtim = st->st_mtim, .ctim = st->st_ctim, .used = ++syms_clock,
				 .s = s };
	s->refs++;
	pthread_mutex_unlock(&syms_lock);
	if (gone)
		syms_free(gone);
}

/* Orders by name, then rank, then reading order (.dynsym before .symtab). */
static int sym_cmp(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->order - y->order;
}

/* Adds the defined functions of one symbol table section of e; addresses are mapped to
 * file offsets through the program headers of `loads` (e itself, or the stripped file a
 * separate debug file describes). Returns 0, -1 out of memory. */
static int read_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, Elf_Data *versym,
		       struct dc_elf_syms *s, int *cap, Elf *loads)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n;

	if (!data || sh->sh_entsize == 0)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Versym vs = 0;
		const char *name;
		int type;
		uint64_t off;
		struct sym *d;

		if (!gelf_getsym(data, (int)i, &sym))
			continue;
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		off = vaddr_to_offset(loads, sym.st_value, 1);
		if (!off)
			continue;
		if (versym)
			gelf_getversym(versym, (int)i, &vs);

		if (s->n == *cap) {
			int nc = *cap ? *cap * 2 : 1024;
			struct sym *ns = realloc(s->syms, (size_t)nc * sizeof *ns);

			if (!ns)
				return -1;
			s->syms = ns;
			*cap = nc;
		}
		d = &s->syms[s->n];
		if (!(d->name = strdup(name)))
			return -1;
		d->offset = off;
		d->ifunc = type == STT_GNU_IFUNC;
		d->rank = (vs & VERSYM_HIDDEN) ? RANK_HIDDEN :
			  GELF_ST_BIND(sym.st_info) == STB_LOCAL ? RANK_LOCAL : RANK_DEFAULT;
		d->order = s->n;
		s->n++;
	}
	return 0;
}

int dc_elf_debug_file(Elf *e, char *out, size_t len)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		while ((off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			const unsigned char *id = (const unsigned char *)data->d_buf + desc_off;
			char hex[2 * 64 + 1];

			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 || nh.n_descsz < 2 ||
			    nh.n_descsz > 64 || memcmp((char *)data->d_buf + name_off, "GNU", 4))
				continue;
			for (size_t i = 0; i < nh.n_descsz; i++)
				snprintf(hex + 2 * i, 3, "%02x", id[i]);
			snprintf(out, len, "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
			return access(out, R_OK) == 0 ? 0 : -1;
		}
	}
	return -1;
}

/* Long on purpose: one pass over the ELF sections with its error exits written out (one
 * cleanup path), as elf_file_open's callers expect. */
struct dc_elf_syms *dc_elf_syms_open(const char *path, char *err, size_t errlen)
{
	struct elf_file f;
	struct dc_elf_syms *s;
	Elf_Scn *scn = NULL;
	Elf_Data *versym = NULL;
	size_t dynsym_ndx = 0;
	int cap = 0, i, j;

	if (elf_file_open(&f, path, err, errlen) != 0)
		return NULL;
	struct stat st;
	int keyed = fstat(f.fd, &st) == 0;
	if (keyed && (s = cache_get(&st))) {
		elf_file_close(&f);
		return s;
	}
	if (!(s = calloc(1, sizeof *s))) {
		set_err(err, errlen, "%s: out of memory", path);
		elf_file_close(&f);
		return NULL;
	}

	/* .gnu.version first: its sh_link names the .dynsym it annotates. */
	while ((scn = elf_nextscn(f.e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_GNU_versym) {
			versym = elf_getdata(scn, NULL);
			dynsym_ndx = sh.sh_link;
		}
	}
	for (scn = NULL; (scn = elf_nextscn(f.e, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM &&
		    read_symtab(f.e, scn, &sh, elf_ndxscn(scn) == dynsym_ndx ? versym : NULL,
				s, &cap, f.e) != 0)
			goto oom;
	}
	/* .symtab after .dynsym, so the dynamic (versioned) definitions come first. */
	int has_symtab = 0;
	for (scn = NULL; (scn = elf_nextscn(f.e, scn));) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			has_symtab = 1;
			if (read_symtab(f.e, scn, &sh, NULL, s, &cap, f.e) != 0)
				goto oom;
		}
	}
	/* A stripped file: its full symbol table may be in a separate debug file found by
	 * build-id, as gdb and perf look for it (Debian's -dbg / -dbgsym packages, e.g.
	 * libc6-dbg for ld.so's internal functions). */
	char dbgpath[PATH_MAX];
	struct elf_file dbg;
	if (!has_symtab && dc_elf_debug_file(f.e, dbgpath, sizeof(dbgpath)) == 0 &&
	    elf_file_open(&dbg, dbgpath, err, errlen) == 0) {
		for (scn = NULL; (scn = elf_nextscn(dbg.e, scn));) {
			GElf_Shdr sh;

			if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB &&
			    read_symtab(dbg.e, scn, &sh, NULL, s, &cap, f.e) != 0) {
				elf_file_close(&dbg);
				goto oom;
			}
		}
		elf_file_close(&dbg);
	}
	elf_file_close(&f);

	/* Sort, then keep the best definition of each name. */
	if (s->n)
		qsort(s->syms, (size_t)s->n, sizeof *s->syms, sym_cmp);
	for (i = 0, j = 0; i < s->n; i++) {
		if (j > 0 && strcmp(s->syms[j - 1].name, s->syms[i].name) == 0) {
			free(s->syms[i].name);
			continue;
		}
		s->syms[j++] = s->syms[i];
	}
	s->n = j;
	s->refs = 1;
	if (keyed)
		cache_put(&st, s);
	return s;

oom:
	set_err(err, errlen, "%s: out of memory", path);
	elf_file_close(&f);
	syms_free(s); /* (not shared yet) */
	return NULL;
}

/* Binary search by name; NULL when absent. */
static const struct sym *sym_find(const struct dc_elf_syms *s, const char *name)
{
	int lo = 0, hi = s->n - 1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strcmp(name, s->syms[mid].name);

		if (c == 0)
			return &s->syms[mid];
		if (c < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* An IFUNC symbol's address is its resolver, which runs once at relocation time: a uprobe
 * there would not see the calls. So IFUNCs are reported as absent (offset 0) here and
 * skipped by dc_elf_sym_glob; tracing one needs the implementation the resolver picks. */
uint64_t dc_elf_sym_offset(const struct dc_elf_syms *s, const char *name)
{
	const struct sym *y;

	if (!s || !name)
		return 0;
	y = sym_find(s, name);
	if (!y || y->ifunc)
		return 0;
	return y->offset;
}

int dc_elf_sym_local(const struct dc_elf_syms *s, const char *name)
{
	const struct sym *y = s && name ? sym_find(s, name) : NULL;
	return y && y->rank == RANK_LOCAL;
}

int dc_elf_sym_glob(const struct dc_elf_syms *s, const char *glob,
		    int (*fn)(const char *name, uint64_t offset, void *arg), void *arg)
{
	int i, calls = 0;

	if (!s || !glob || !fn)
		return 0;
	/* the names are sorted (strcmp): only those starting with the glob's literal
	 * prefix can match, a range found by binary search; a glob of no special
	 * character (fnmatch(3): * ? [ and \) is one name. Thousands of exact names
	 * cost a lookup each, not a pass over every symbol. */
	size_t plen = strcspn(glob, "*?[\\");
	if (!glob[plen]) {
		const struct sym *y = sym_find(s, glob);
		if (!y || y->ifunc)
			return 0;
		return fn(y->name, y->offset, arg), 1;
	}
	int lo = 0, hi = s->n;
	while (lo < hi) { /* the first name >= the prefix */
		int mid = lo + (hi - lo) / 2;
		if (strncmp(s->syms[mid].name, glob, plen) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < s->n && !strncmp(s->syms[i].name, glob, plen); i++) {
		const struct sym *y = &s->syms[i];

		if (y->ifunc || fnmatch(glob, y->name, 0) != 0)
			continue;
		calls++;
		if (fn(y->name, y->offset, arg) != 0)
			break;
	}
	return calls;
}

void dc_elf_syms_close(struct dc_elf_syms *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&syms_lock);
	int last = --s->refs == 0;
	pthread_mutex_unlock(&syms_lock);
	if (last)
		syms_free(s);
}

int dc_elf_dynsym_value(const char *path, const char *name, uint64_t *value)
{
	struct elf_file f;
	char err[64];
	int found = -1;
	if (elf_file_open(&f, path, err, sizeof(err)))
		return -1;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	while (found && (scn = elf_nextscn(f.e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && found && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;
			if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			n = elf_strptr(f.e, sh.sh_link, sym.st_name);
			if (n && !strcmp(n, name)) {
				*value = sym.st_value;
				found = 0;
			}
		}
	}
	elf_file_close(&f);
	return found;
}
