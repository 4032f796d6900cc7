/* unit_elfsym.c: tests of core/elfsym.c on this machine's own binaries and libc, checked
 * against readelf/ldd output; builds a tiny library + program with gcc for the path rules. */
#define _GNU_SOURCE
#include "elfsym.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"

static char tmpdir[512];      /* short enough that tmpdir + a file name fits PATH_MAX */


/* Runs a shell command, returns its exit status (or -1). */
static int sh(const char *fmt, ...)
{
	char cmd[4 * PATH_MAX];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

/* Writes a file with the given mode. */
static void write_file(const char *path, const char *text, mode_t mode)
{
	FILE *fp = fopen(path, "w");

	if (!fp) {
		perror(path);
		exit(2);
	}
	fputs(text, fp);
	fclose(fp);
	chmod(path, mode);
}

static char libc_path[PATH_MAX];

/* ------------------------------------------------------------------------------------- */

static void test_which(void)
{
	char out[PATH_MAX], err[256], path[PATH_MAX], *old;
	int rc;

	rc = dc_elf_which("dd", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && out[0] == '/' && strstr(out, "/dd"), "which dd: %d %s", rc,
	      rc ? err : out);

	rc = dc_elf_which("dc-no-such-command", out, sizeof out, err, sizeof err);
	CHECK(rc == -1 && strcmp(err, "dc-no-such-command: command not found") == 0,
	      "which missing: %d '%s'", rc, err);

	snprintf(path, sizeof path, "%s/noexec", tmpdir);
	write_file(path, "#!/bin/sh\n", 0644);
	rc = dc_elf_which(path, out, sizeof out, err, sizeof err);
	{
		char want[PATH_MAX + 64];

		snprintf(want, sizeof want, "%s: Permission denied (not executable)", path);
		CHECK(rc == -1 && strcmp(err, want) == 0, "which noexec: %d '%s'", rc, err);
	}

	/* Through PATH: a non-executable match is EACCES, like execvp. */
	old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", tmpdir, 1);
	rc = dc_elf_which("noexec", out, sizeof out, err, sizeof err);
	CHECK(rc == -1 && strcmp(err, "noexec: Permission denied (not executable)") == 0,
	      "which noexec via PATH: %d '%s'", rc, err);
	if (old) {
		setenv("PATH", old, 1);
		free(old);
	} else {
		unsetenv("PATH");
	}
}

static void test_find_library(void)
{
	char out[PATH_MAX], err[512], path[PATH_MAX], want[PATH_MAX];
	int rc;

	if (!realpath("/usr/lib/x86_64-linux-gnu/libc.so.6", want)) {
		CHECK(0, "no /usr/lib/x86_64-linux-gnu/libc.so.6");
		return;
	}
	rc = dc_elf_find_library("/bin/dd", "libc.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "/bin/dd libc: %d '%s'", rc, rc ? err : out);
	snprintf(libc_path, sizeof libc_path, "%s", want);

	rc = dc_elf_find_library("dd", "libc.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "dd libc: %d '%s'", rc, rc ? err : out);

	/* A script runs through its interpreter. */
	snprintf(path, sizeof path, "%s/script.sh", tmpdir);
	write_file(path, "#!/bin/sh\necho hi\n", 0755);
	rc = dc_elf_find_library(path, "libc.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "#!/bin/sh: %d '%s'", rc, rc ? err : out);

	snprintf(path, sizeof path, "%s/script-env", tmpdir);
	write_file(path, "#! /usr/bin/env  sh -e\necho hi\n", 0755);
	rc = dc_elf_find_library(path, "libc.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "#!/usr/bin/env sh: %d '%s'", rc,
	      rc ? err : out);

	snprintf(path, sizeof path, "%s/script-bad", tmpdir);
	write_file(path, "#!/usr/bin/env dc-no-such-interp\n", 0755);
	rc = dc_elf_find_library(path, "libc.so", out, sizeof out, err, sizeof err);
	{
		char want[PATH_MAX + 128];

		snprintf(want, sizeof want, "%s: #! interpreter dc-no-such-interp: command not "
			 "found", path);
		CHECK(rc == -1 && strcmp(err, want) == 0, "#! missing interpreter: %d '%s'", rc,
		      err);
	}

	/* Breadth first into the libraries' own DT_NEEDED: ls -> libselinux -> libpcre2-8. */
	{
		FILE *p = popen("ldd /bin/ls 2>/dev/null", "r");
		char line[1024], ldd_path[PATH_MAX] = "";

		while (p && fgets(line, sizeof line, p)) {
			char name[256], file[PATH_MAX];

			if (sscanf(line, " %255s => %4095s", name, file) == 2 &&
			    strncmp(name, "libpcre2-8.so", 13) == 0 && !realpath(file, ldd_path))
				ldd_path[0] = '\0';
		}
		if (p)
			pclose(p);
		if (!ldd_path[0]) {
			printf("SKIP: /bin/ls does not load libpcre2-8 here (ldd), indirect case\n");
		} else {
			rc = dc_elf_find_library("ls", "libpcre2-8.so", out, sizeof out, err,
						 sizeof err);
			CHECK(rc == 0 && strcmp(out, ldd_path) == 0, "ls libpcre2-8: %d '%s' (ldd %s)",
			      rc, rc ? err : out, ldd_path);
			/* It is no DT_NEEDED of ls itself, only of a library. */
			CHECK(sh("readelf -d /bin/ls | grep -q 'NEEDED.*libpcre2'") == 1,
			      "libpcre2 is a direct DT_NEEDED of ls: test assumption wrong");
		}
	}

	rc = dc_elf_find_library("/bin/dd", "libnotthere.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 1, "libnotthere: %d '%s'", rc, err);

	rc = dc_elf_find_library("/dc/no/such/binary", "libc.so", out, sizeof out, err,
				 sizeof err);
	CHECK(rc == -1 && strcmp(err, "/dc/no/such/binary: No such file or directory") == 0,
	      "missing binary: %d '%s'", rc, err);

	/* A static binary: Debian's ldconfig is static-pie (PT_DYNAMIC, no DT_NEEDED). */
	{
		const char *cands[] = { "/sbin/ldconfig", "/bin/busybox-static", "/bin/busybox",
					NULL };
		const char *stat_bin = NULL;
		int i;

		for (i = 0; cands[i] && !stat_bin; i++)
			if (access(cands[i], X_OK) == 0 &&
			    sh("readelf -d %s 2>/dev/null | grep -q NEEDED", cands[i]) == 1 &&
			    sh("readelf -h %s >/dev/null 2>&1", cands[i]) == 0)
				stat_bin = cands[i];
		if (!stat_bin) {
			printf("SKIP: no static binary on this machine (tried /sbin/ldconfig, "
			       "/bin/busybox-static, /bin/busybox)\n");
		} else {
			rc = dc_elf_find_library(stat_bin, "libc.so", out, sizeof out, err,
						 sizeof err);
			CHECK(rc == 1, "static %s: %d '%s'", stat_bin, rc, err);
			printf("static binary %s: %s\n", stat_bin, err);
		}
	}
}

/* DT_RUNPATH/DT_RPATH with $ORIGIN, LD_LIBRARY_PATH order, machine mismatch: a small
 * library and program built with gcc into the temp dir. */
static void test_search_order(void)
{
	char src[PATH_MAX], out[PATH_MAX], err[512], want[PATH_MAX], p[PATH_MAX];
	int rc;

	if (sh("command -v gcc >/dev/null 2>&1") != 0) {
		printf("SKIP: no gcc, RUNPATH/RPATH/$ORIGIN cases\n");
		return;
	}
	snprintf(src, sizeof src, "%s/lib.c", tmpdir);
	write_file(src, "int dctest(void) { return 1; }\n", 0644);
	snprintf(p, sizeof p, "%s/main.c", tmpdir);
	write_file(p, "int dctest(void);\nint main(void) { return dctest(); }\n", 0644);
	rc = sh("cd %s && mkdir -p lib lib2 junk && "
		"gcc -shared -fPIC -Wl,-soname,libdctest.so.1 -o lib/libdctest.so.1 lib.c && "
		"cp lib/libdctest.so.1 lib2/ && echo 'not elf' > junk/libdctest.so.1 && "
		"gcc -o app_runpath main.c lib/libdctest.so.1 -Wl,--enable-new-dtags "
		"-Wl,-rpath,'$ORIGIN/lib' && "
		"gcc -o app_rpath main.c lib/libdctest.so.1 -Wl,--disable-new-dtags "
		"-Wl,-rpath,'${ORIGIN}/lib' && "
		"readelf -d app_runpath | grep -q RUNPATH && readelf -d app_rpath | grep -q RPATH",
		tmpdir);
	if (rc != 0) {
		printf("SKIP: could not build the RUNPATH test programs\n");
		return;
	}

	snprintf(p, sizeof p, "%s/lib/libdctest.so.1", tmpdir);
	if (!realpath(p, want)) {
		CHECK(0, "realpath %s", p);
		return;
	}
	unsetenv("LD_LIBRARY_PATH");
	snprintf(p, sizeof p, "%s/app_runpath", tmpdir);
	rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "RUNPATH $ORIGIN: %d '%s'", rc, rc ? err : out);
	snprintf(p, sizeof p, "%s/app_rpath", tmpdir);
	rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "RPATH ${ORIGIN}: %d '%s'", rc, rc ? err : out);

	/* LD_LIBRARY_PATH comes before DT_RUNPATH but after DT_RPATH; a non-ELF file and a
	 * file for another machine in it are passed over. */
	snprintf(p, sizeof p, "%s/junk:%s/lib2", tmpdir, tmpdir);
	setenv("LD_LIBRARY_PATH", p, 1);
	snprintf(p, sizeof p, "%s/app_runpath", tmpdir);
	rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strstr(out, "/lib2/libdctest.so.1") != NULL,
	      "LD_LIBRARY_PATH before RUNPATH: %d '%s'", rc, rc ? err : out);
	snprintf(p, sizeof p, "%s/app_rpath", tmpdir);
	rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err, sizeof err);
	CHECK(rc == 0 && strcmp(out, want) == 0, "RPATH before LD_LIBRARY_PATH: %d '%s'", rc,
	      rc ? err : out);

	/* Make lib2's copy an AArch64 file (e_machine at offset 18): must be skipped. */
	{
		int fd;
		unsigned char em[2] = { 183, 0 };

		snprintf(p, sizeof p, "%s/lib2/libdctest.so.1", tmpdir);
		fd = open(p, O_WRONLY);
		if (fd >= 0 && pwrite(fd, em, 2, 18) == 2) {
			close(fd);
			snprintf(p, sizeof p, "%s/app_runpath", tmpdir);
			rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err,
						 sizeof err);
			CHECK(rc == 0 && strcmp(out, want) == 0, "machine mismatch skipped: %d '%s'",
			      rc, rc ? err : out);
		} else {
			CHECK(0, "could not patch %s", p);
			if (fd >= 0)
				close(fd);
		}
	}
	unsetenv("LD_LIBRARY_PATH");

	/* Library missing from every directory: an error naming it. */
	snprintf(p, sizeof p, "%s/lib/libdctest.so.1", tmpdir);
	unlink(p);
	snprintf(p, sizeof p, "%s/app_runpath", tmpdir);
	rc = dc_elf_find_library(p, "libdctest.so", out, sizeof out, err, sizeof err);
	CHECK(rc == -1 && strstr(err, "needs libdctest.so.1") != NULL, "missing lib: %d '%s'",
	      rc, err);
}

/* ------------------------------------------------------------------------------------- */

struct load { uint64_t off, vaddr, filesz; };

/* The PT_LOAD segments of path, from `readelf -lW`. */
static int readelf_loads(const char *path, struct load *l, int max)
{
	char cmd[PATH_MAX + 32], line[512];
	FILE *p;
	int n = 0;

	snprintf(cmd, sizeof cmd, "readelf -lW %s", path);
	if (!(p = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof line, p) && n < max) {
		unsigned long long off, va, pa, fs;

		if (sscanf(line, " LOAD 0x%llx 0x%llx 0x%llx 0x%llx", &off, &va, &pa, &fs) == 4) {
			l[n].off = off;
			l[n].vaddr = va;
			l[n].filesz = fs;
			n++;
		}
	}
	pclose(p);
	return n;
}

/* The st_value of `name` in `readelf -Ws --dyn-syms` (want_default: name@@VER or
 * unversioned; else name@VER). 0 when absent; *type gets FUNC/IFUNC. */
static uint64_t readelf_value(const char *path, const char *name, int want_default,
			      char *type, size_t typelen)
{
	char cmd[PATH_MAX + 64], line[1024];
	FILE *p;
	uint64_t v = 0;

	snprintf(cmd, sizeof cmd, "readelf -Ws --dyn-syms %s", path);
	if (!(p = popen(cmd, "r")))
		return 0;
	while (fgets(line, sizeof line, p)) {
		unsigned long long val;
		char ty[32], sym[512];
		size_t n = strlen(name);

		if (sscanf(line, " %*[0-9]: %llx %*s %31s %*s %*s %*s %511s", &val, ty, sym) != 3)
			continue;
		if (strncmp(sym, name, n) != 0)
			continue;
		if (want_default ? !(sym[n] == '\0' || strncmp(sym + n, "@@", 2) == 0)
				 : !(sym[n] == '@' && sym[n + 1] != '@'))
			continue;
		v = val;
		if (type)
			snprintf(type, typelen, "%s", ty);
		break;
	}
	pclose(p);
	return v;
}

/* File offset of a value through the readelf PT_LOAD list. */
static uint64_t map_value(const struct load *l, int n, uint64_t v)
{
	int i;

	for (i = 0; i < n; i++)
		if (v >= l[i].vaddr && v < l[i].vaddr + l[i].filesz)
			return v - l[i].vaddr + l[i].off;
	return 0;
}

struct globacc { int n, pread, pread64; };

static int glob_cb(const char *name, uint64_t off, void *arg)
{
	struct globacc *g = arg;

	g->n++;
	if (strcmp(name, "pread") == 0 && off)
		g->pread = 1;
	if (strcmp(name, "pread64") == 0 && off)
		g->pread64 = 1;
	return 0;
}

static int glob_stop(const char *name, uint64_t off, void *arg)
{
	(void)name;
	(void)off;
	(void)arg;
	return 1;
}

/* Copies file from to to (created, or truncated and rewritten in place: same inode). */
static int copy_file(const char *from, const char *to)
{
	char buf[65536];
	size_t n;
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	int ok = in && out;

	while (ok && (n = fread(buf, 1, sizeof buf, in)) > 0)
		ok = fwrite(buf, 1, n, out) == n;
	if (in)
		fclose(in);
	if (out && fclose(out))
		ok = 0;
	return ok ? 0 : -1;
}

/* The tables are shared by file identity: libc's again is the same table; a copy of it
 * (another inode) is another with the same offsets; the copy rewritten in place with
 * another program (a new size and mtime) is read again. read_off: libc's read. */
static void test_shared(uint64_t read_off)
{
	char err[512], copy[PATH_MAX];
	struct dc_elf_syms *a = dc_elf_syms_open(libc_path, err, sizeof err);
	struct dc_elf_syms *b = dc_elf_syms_open(libc_path, err, sizeof err);

	CHECK(a && a == b, "libc opened twice: one shared table (%p, %p)", (void *)a, (void *)b);
	dc_elf_syms_close(a);
	CHECK(dc_elf_sym_offset(b, "read") == read_off, "the table outlives one holder's close");
	dc_elf_syms_close(b);
	snprintf(copy, sizeof copy, "%s/libcopy.so", tmpdir);
	CHECK(copy_file(libc_path, copy) == 0, "copy libc to %s", copy);
	struct dc_elf_syms *c = dc_elf_syms_open(copy, err, sizeof err);
	CHECK(c && c != b && dc_elf_sym_offset(c, "read") == read_off,
	      "the copy: its own table, the same offsets");
	dc_elf_syms_close(c);
	CHECK(copy_file("/bin/true", copy) == 0, "rewrite %s with /bin/true", copy);
	c = dc_elf_syms_open(copy, err, sizeof err);
	CHECK(c && dc_elf_sym_offset(c, "read") == 0,
	      "rewritten in place: read again (no read of its own)");
	dc_elf_syms_close(c);
	unlink(copy);
}

static void test_syms(void)
{
	struct dc_elf_syms *s;
	char err[512], type[32];
	struct load loads[16];
	int nl;
	uint64_t r, v;

	if (!libc_path[0]) {
		CHECK(0, "libc not found, symbol tests not run");
		return;
	}
	s = dc_elf_syms_open(libc_path, err, sizeof err);
	CHECK(s != NULL, "syms_open %s: %s", libc_path, err);
	if (!s)
		return;

	/* Aliases share their address. */
	r = dc_elf_sym_offset(s, "read");
	CHECK(r != 0, "read offset 0");
	CHECK(dc_elf_sym_offset(s, "__read") == r, "__read != read");
	if (dc_elf_sym_offset(s, "__libc_read"))
		CHECK(dc_elf_sym_offset(s, "__libc_read") == r, "__libc_read != read");
	else
		printf("SKIP: __libc_read is not exported by %s\n", libc_path);
	CHECK(dc_elf_sym_offset(s, "open") != 0 &&
	      dc_elf_sym_offset(s, "open") == dc_elf_sym_offset(s, "open64"), "open != open64");
	CHECK(dc_elf_sym_offset(s, "dc_no_such_function") == 0, "absent symbol not 0");

	/* The offset is st_value mapped through the PT_LOAD that holds it (readelf's view). */
	nl = readelf_loads(libc_path, loads, 16);
	v = readelf_value(libc_path, "read", 1, NULL, 0);
	CHECK(nl > 0 && v != 0, "readelf gave no LOAD/read (%d, %llx)", nl,
	      (unsigned long long)v);
	CHECK(map_value(loads, nl, v) == r, "read: ours %llx, readelf %llx",
	      (unsigned long long)r, (unsigned long long)map_value(loads, nl, v));
	v = readelf_value(libc_path, "pwrite64", 1, NULL, 0);
	CHECK(v && map_value(loads, nl, v) == dc_elf_sym_offset(s, "pwrite64"),
	      "pwrite64 offset differs from readelf");

	/* name@@VER beats name@VER: realpath has both in glibc (2.2.5 and 2.3). */
	v = readelf_value(libc_path, "realpath", 1, NULL, 0);
	if (v && readelf_value(libc_path, "realpath", 0, NULL, 0) &&
	    readelf_value(libc_path, "realpath", 0, NULL, 0) != v)
		CHECK(dc_elf_sym_offset(s, "realpath") == map_value(loads, nl, v),
		      "realpath: the default version did not win");
	else
		printf("SKIP: no realpath@VER / realpath@@VER pair in %s\n", libc_path);

	/* IFUNC: the address is the resolver; reported as 0. */
	v = readelf_value(libc_path, "strcpy", 1, type, sizeof type);
	if (v && strcmp(type, "IFUNC") == 0)
		CHECK(dc_elf_sym_offset(s, "strcpy") == 0, "IFUNC strcpy not 0");
	else
		printf("SKIP: strcpy is not an IFUNC in %s\n", libc_path);

	{
		struct globacc g = { 0, 0, 0 };
		int n = dc_elf_sym_glob(s, "pread*", glob_cb, &g);

		CHECK(n == g.n && n >= 2 && g.pread && g.pread64, "glob pread*: %d", n);
		CHECK(dc_elf_sym_glob(s, "pread*", glob_stop, NULL) == 1, "glob did not stop");
		CHECK(dc_elf_sym_glob(s, "strcpy", glob_cb, &g) == 0 ||
		      strcmp(type, "IFUNC") != 0, "glob gave an IFUNC");
	}
	dc_elf_syms_close(s);
	test_shared(r);

	s = dc_elf_syms_open("/etc/passwd", err, sizeof err);
	CHECK(!s && strcmp(err, "/etc/passwd: not an ELF file") == 0, "non-ELF: '%s'", err);
	dc_elf_syms_close(s);
	s = dc_elf_syms_open("/dc/nothere.so", err, sizeof err);
	CHECK(!s && strcmp(err, "/dc/nothere.so: No such file or directory") == 0,
	      "missing: '%s'", err);
}

int main(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/unit_elfsym.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	test_which();
	test_find_library();
	test_search_order();
	test_syms();
	sh("rm -rf '%s'", tmpdir);
	printf("unit_elfsym: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
