/* list.c: `datacrumbs list`: the scripts on the search path (description, directory,
 * shadowing as in PATH) and `list --functions LIB:GLOB` (functions and file offsets). */
#include "list.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "paths.h"
#include "util.h"

static const char list_help[] =
"usage: datacrumbs list\n"
"       datacrumbs list --functions FILE[:GLOB]\n"
"\n"
"Without options: the scripts datacrumbs run finds by name, with the first line of each\n"
"(its description), grouped by the directory they come from, in search order: each\n"
"directory of $DATACRUMBS_SCRIPT_PATH, the installed scripts directory, the source\n"
"tree's scripts/. A script shadows the scripts of the same name in later directories,\n"
"as PATH does; those are listed marked \"shadowed by DIR\".\n"
"\n"
"options:\n"
"  -f, --functions FILE[:GLOB]  the functions of FILE whose names match the fnmatch(3)\n"
"                               GLOB (all when none), sorted, with the file offset a\n"
"                               uprobe attaches at. FILE: a path, a library name as\n"
"                               /bin/sh loads it or as found in the library directories\n"
"                               (libc.so.6, libz.so), or a command in $PATH.\n"
"                               e.g. datacrumbs list --functions 'libc.so.6:f*'\n"
"  -h, --help                   this text\n"
"\n"
"exit status: 0; 1 when FILE is not found or no function matches; 2 on a usage error.\n";

/* --- the script search path --- */

struct seen_dirs {
	char real[16][PATH_MAX];
	int n;
	void (*fn)(const char *dir, const char *origin, void *arg);
	void *arg;
};

/* dc_script_path_each callback: offers one directory, once (by its real path). */
static int offer_dir(const char *dir, size_t len, const char *origin, void *arg)
{
	struct seen_dirs *s = arg;
	char d[PATH_MAX], real[PATH_MAX];
	if (!len || len >= sizeof(d))
		return 0;
	snprintf(d, sizeof(d), "%.*s", (int)len, dir);
	if (!realpath(d, real))
		snprintf(real, sizeof(real), "%s", d); /* missing: still shown by name */
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->real[i], real))
			return 0;
	if (s->n < 16)
		snprintf(s->real[s->n++], PATH_MAX, "%s", real);
	s->fn(d, origin, s->arg);
	return 0;
}

void dc_script_dirs(void (*fn)(const char *dir, const char *origin, void *arg), void *arg)
{
	struct seen_dirs *s = calloc(1, sizeof(*s));
	if (!s)
		return;
	s->fn = fn;
	s->arg = arg;
	dc_script_path_each(offer_dir, s);
	free(s);
}

int dc_script_description(const char *path, char *out, size_t outlen)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	out[0] = 0;
	if (fgets(line, sizeof(line), f) && !strncmp(line, "--", 2)) {
		char *p = line + 2, *e;
		p += strspn(p, " \t-");
		/* "name.lua: description": drop the name */
		char *colon = strstr(p, ".lua:");
		if (colon && !memchr(p, ' ', colon - p))
			p = colon + 5 + strspn(colon + 5, " \t");
		for (e = p + strlen(p); e > p && strchr(" \t\r\n", e[-1]); e--)
			;
		*e = 0;
		snprintf(out, outlen, "%s", p);
	}
	fclose(f);
	return 0;
}

struct script_ent {
	char name[256];
	char dir[PATH_MAX];
	char desc[512];
	const char *shadowed_by; /* the directory of the script that wins, or NULL */
};

struct script_list {
	struct script_ent *v;
	int n, cap;
	char (*dirs)[PATH_MAX];
	const char **origins;
	int ndirs;
};

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct script_ent *)a)->name, ((const struct script_ent *)b)->name);
}

static void collect_dir(const char *dir, const char *origin, void *arg)
{
	struct script_list *l = arg;
	char (*dirs)[PATH_MAX] = realloc(l->dirs, (l->ndirs + 1) * sizeof(*dirs));
	const char **origins = realloc(l->origins, (l->ndirs + 1) * sizeof(*origins));
	if (dirs)
		l->dirs = dirs;
	if (origins)
		l->origins = origins;
	if (!dirs || !origins)
		return;
	snprintf(l->dirs[l->ndirs], PATH_MAX, "%s", dir);
	l->origins[l->ndirs++] = origin;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t k = strlen(de->d_name);
		if (k <= 4 || strcmp(de->d_name + k - 4, ".lua") || de->d_name[0] == '.' ||
		    k >= sizeof(l->v[0].name))
			continue;
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (access(path, R_OK))
			continue; /* dc_script_find skips it too */
		if (l->n == l->cap) {
			int cap = l->cap ? 2 * l->cap : 32;
			struct script_ent *v = realloc(l->v, cap * sizeof(*v));
			if (!v)
				break;
			l->v = v;
			l->cap = cap;
		}
		struct script_ent *e = &l->v[l->n++];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		snprintf(e->dir, sizeof(e->dir), "%s", dir);
		dc_script_description(path, e->desc, sizeof(e->desc));
	}
	if (d)
		closedir(d);
}

/* Prints the scripts of the search path, grouped by directory in search order. */
static int list_scripts(FILE *out)
{
	struct script_list l = { 0 };
	dc_script_dirs(collect_dir, &l);
	/* shadowing: the first directory (in search order) that has a name wins */
	for (int i = 0; i < l.n; i++)
		for (int j = 0; j < i; j++)
			if (!strcmp(l.v[i].name, l.v[j].name) && !l.v[j].shadowed_by) {
				l.v[i].shadowed_by = l.v[j].dir;
				break;
			}
	int width = 12;
	for (int i = 0; i < l.n; i++)
		if ((int)strlen(l.v[i].name) > width)
			width = strlen(l.v[i].name);
	int shown = 0;
	for (int d = 0; d < l.ndirs; d++) {
		int first = -1, count = 0;
		for (int i = 0; i < l.n; i++)
			if (!strcmp(l.v[i].dir, l.dirs[d])) {
				if (first < 0)
					first = i;
				count++;
			}
		struct stat st;
		if (count == 0 && stat(l.dirs[d], &st) != 0)
			continue; /* a directory that does not exist (e.g. not installed) */
		fprintf(out, "%s%s (%s):\n", shown++ ? "\n" : "", l.dirs[d], l.origins[d]);
		if (count == 0) {
			fprintf(out, "  (no scripts)\n");
			continue;
		}
		qsort(l.v + first, count, sizeof(l.v[0]), by_name);
		for (int i = first; i < first + count; i++) {
			fprintf(out, "  %-*s  %s", width, l.v[i].name,
				l.v[i].desc[0] ? l.v[i].desc : "(no description)");
			if (l.v[i].shadowed_by)
				fprintf(out, "  [shadowed by %s/%s]", l.v[i].shadowed_by, l.v[i].name);
			fputc('\n', out);
		}
	}
	if (!shown)
		fprintf(out, "no scripts directory found (set DATACRUMBS_SCRIPT_PATH)\n");
	free(l.v);
	free(l.dirs);
	free(l.origins);
	return 0;
}

/* --- functions of an ELF file --- */

/* The standard library directories of x86-64 Debian, after $LD_LIBRARY_PATH. */
static const char *const lib_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/usr/local/lib",
	"/lib64", "/usr/lib64", "/lib", "/usr/lib", NULL,
};

/* Looks for `name` in dir: the exact file, else the first (by name) starting with it. */
static int find_in_libdir(const char *dir, size_t len, const char *name, char *out,
			  size_t outlen)
{
	char d[PATH_MAX], p[PATH_MAX + 256];
	if (!len || len >= sizeof(d))
		return -1;
	snprintf(d, sizeof(d), "%.*s", (int)len, dir);
	snprintf(p, sizeof(p), "%s/%s", d, name);
	if (access(p, R_OK) == 0 && realpath(p, out))
		return 0;
	struct dirent **ents;
	int n = scandir(d, &ents, NULL, alphasort), found = -1;
	for (int i = 0; i < n; i++) {
		if (found && !strncmp(ents[i]->d_name, name, strlen(name))) {
			snprintf(p, sizeof(p), "%s/%s", d, ents[i]->d_name);
			struct stat st;
			if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && realpath(p, out))
				found = 0;
		}
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
	(void)outlen;
	return found;
}

int dc_find_elf(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	char real[PATH_MAX], e2[512];
	if (!*name) {
		snprintf(err, errlen, "an empty file name");
		return -1;
	}
	if (strchr(name, '/')) {
		if (!realpath(name, real)) {
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
			return -1;
		}
		snprintf(out, outlen, "%s", real);
		return 0;
	}
	if (dc_elf_find_library("/bin/sh", name, real, sizeof(real), e2, sizeof(e2)) == 0) {
		snprintf(out, outlen, "%s", real);
		return 0;
	}
	const char *dirs = getenv("LD_LIBRARY_PATH"), *d;
	size_t len;
	while (dirs && *dirs && (d = dc_list_next(&dirs, ":", &len)))
		if (find_in_libdir(d, len, name, real, sizeof(real)) == 0)
			goto found;
	for (int i = 0; lib_dirs[i]; i++)
		if (find_in_libdir(lib_dirs[i], strlen(lib_dirs[i]), name, real, sizeof(real)) == 0)
			goto found;
	if (dc_elf_which(name, real, sizeof(real), e2, sizeof(e2)) == 0)
		goto found;
	snprintf(err, errlen, "'%s' not found: not a library /bin/sh loads, not in "
		 "$LD_LIBRARY_PATH or the library directories (/lib/x86_64-linux-gnu, "
		 "/usr/lib/x86_64-linux-gnu, ...), not a command in $PATH", name);
	return -1;
found:
	snprintf(out, outlen, "%s", real);
	return 0;
}

struct fn_ent {
	char *name;
	uint64_t offset;
};

struct fn_list {
	struct fn_ent *v;
	int n, cap;
};

static int add_fn(const char *name, uint64_t offset, void *arg)
{
	struct fn_list *l = arg;
	if (l->n == l->cap) {
		int cap = l->cap ? 2 * l->cap : 256;
		struct fn_ent *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	/* "fopen@@GLIBC_2.2.5" is fopen: versions are not part of what a user types */
	l->v[l->n].name = strndup(name, strcspn(name, "@"));
	l->v[l->n].offset = offset;
	if (l->v[l->n].name)
		l->n++;
	return 0;
}

static int fn_cmp(const void *a, const void *b)
{
	const struct fn_ent *x = a, *y = b;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->offset > y->offset) - (x->offset < y->offset);
}

int dc_list_functions(const char *spec, FILE *out)
{
	char file[PATH_MAX], path[PATH_MAX], err[PATH_MAX + 512];
	const char *glob = "*";
	const char *colon = strrchr(spec, ':');
	struct stat st;
	if (colon && colon > spec && stat(spec, &st) != 0) {
		snprintf(file, sizeof(file), "%.*s", (int)(colon - spec), spec);
		glob = colon + 1;
		if (!*glob)
			glob = "*";
	} else {
		snprintf(file, sizeof(file), "%s", spec);
	}
	if (dc_find_elf(file, path, sizeof(path), err, sizeof(err))) {
		fprintf(stderr, "datacrumbs: %s\n", err);
		return 1;
	}
	struct dc_elf_syms *syms = dc_elf_syms_open(path, err, sizeof(err));
	if (!syms) {
		fprintf(stderr, "datacrumbs: %s\n", err);
		return 1;
	}
	struct fn_list l = { 0 };
	dc_elf_sym_glob(syms, glob, add_fn, &l);
	dc_elf_syms_close(syms);
	qsort(l.v, l.n, sizeof(l.v[0]), fn_cmp);
	int n = 0, width = 8;
	for (int i = 0; i < l.n; i++) {
		if (i && !strcmp(l.v[i].name, l.v[n - 1].name) && l.v[i].offset == l.v[n - 1].offset) {
			free(l.v[i].name);
			continue;
		}
		l.v[n++] = l.v[i];
		if ((int)strlen(l.v[i].name) > width)
			width = strlen(l.v[i].name);
	}
	if (n == 0)
		fprintf(stderr, "datacrumbs: no function of %s matches '%s'%s\n", path, glob,
			strcmp(glob, "*") ? "" : " (a stripped binary: no symbol table, no "
			"debug file found by build-id)");
	else
		fprintf(out, "# %s: %d function%s matching '%s' (name, file offset)\n", path, n,
			n == 1 ? "" : "s", glob);
	for (int i = 0; i < n; i++) {
		fprintf(out, "%-*s  0x%" PRIx64 "\n", width > 60 ? 60 : width, l.v[i].name,
			l.v[i].offset);
		free(l.v[i].name);
	}
	free(l.v);
	return n ? 0 : 1;
}

int dc_list_main(int argc, char **argv)
{
	const char *spec = NULL;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(list_help, stdout);
			return 0;
		} else if (!strcmp(a, "-f") || !strcmp(a, "--functions")) {
			if (i + 1 >= argc || !*argv[i + 1]) {
				fprintf(stderr, "datacrumbs: %s needs FILE[:GLOB] (see 'datacrumbs "
					"list --help')\n", a);
				return 2;
			}
			spec = argv[++i];
		} else if (!strncmp(a, "--functions=", 12)) {
			spec = a + 12;
		} else {
			fprintf(stderr, "datacrumbs: list: unexpected argument '%s' (see "
				"'datacrumbs list --help')\n", a);
			return 2;
		}
	}
	if (spec)
		return dc_list_functions(spec, stdout);
	return list_scripts(stdout);
}
