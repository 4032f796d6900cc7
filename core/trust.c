/* trust.c: the invoking user (real ids, sudo's SUDO_UID/SUDO_GID) and the owner/mode checks
 * a root run makes before it reads a script, a Lua module or a probe description. */
#include "trust.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <sys/fsuid.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>

/* A decimal id from the environment, or -1 when missing or not a number. */
static long env_id(const char *name)
{
	const char *v = getenv(name);
	char *end;
	if (!v || !*v)
		return -1;
	errno = 0;
	long n = strtol(v, &end, 10);
	return errno || *end || n < 0 || n > 0x7fffffffL ? -1 : n;
}

static struct dc_invoker iv;
static int done;

void dc_invoker_reset(void)
{
	done = 0;
	memset(&iv, 0, sizeof(iv));
}

const struct dc_invoker *dc_invoker(void)
{
	if (done)
		return &iv;
	done = 1;
	iv.uid = getuid();
	iv.gid = getgid();
	iv.root = geteuid() == 0;
	long su = env_id("SUDO_UID"), sg = env_id("SUDO_GID");
	if (iv.uid == 0 && su >= 0) {
		iv.sudo = 1;
		iv.uid = (uid_t)su;
		if (sg >= 0)
			iv.gid = (gid_t)sg;
	}
	const char *sn = iv.sudo ? getenv("SUDO_USER") : NULL;
	struct passwd *pw = sn && *sn ? NULL : getpwuid(iv.uid);
	snprintf(iv.name, sizeof(iv.name), "%s", sn && *sn ? sn : pw ? pw->pw_name : "?");
	return &iv;
}

static int owner_ok(const struct stat *st)
{
	return st->st_uid == 0 || st->st_uid == dc_invoker()->uid;
}

/* Checks one directory of a resolved path; strict: no sticky exception. */
static int check_dir(const char *dir, const char *what, const char *file, int strict,
		     char *err, size_t errlen)
{
	struct stat st;
	if (stat(dir, &st)) {
		snprintf(err, errlen, "%s %s: cannot check %s: %s", what, file, dir,
			 strerror(errno));
		return -1;
	}
	if (!owner_ok(&st)) {
		snprintf(err, errlen, "%s %s: refused as root: directory %s is owned by uid %u, "
			 "not by root%s%s", what, file, dir, (unsigned)st.st_uid,
			 dc_invoker()->uid ? " or " : "", dc_invoker()->uid ? dc_invoker()->name : "");
		return -1;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) && (strict || !(st.st_mode & S_ISVTX))) {
		snprintf(err, errlen, "%s %s: refused as root: directory %s is writable by %s "
			 "(chmod go-w %s)", what, file, dir,
			 st.st_mode & S_IWOTH ? "others" : "its group", dir);
		return -1;
	}
	return 0;
}

/* Checks every directory above resolved path p ("/a/b/c": /a/b, /a, /). */
static int check_parents(const char *p, const char *what, const char *file, char *err,
			 size_t errlen)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", p);
	for (;;) {
		char *s = strrchr(dir, '/');
		if (!s)
			return 0;
		if (s == dir) {
			return check_dir("/", what, file, 0, err, errlen);
		}
		*s = 0;
		if (check_dir(dir, what, file, 0, err, errlen))
			return -1;
	}
}

int dc_trust_file(const char *path, const char *what, char *real, size_t reallen,
		  char *err, size_t errlen)
{
	char r[PATH_MAX];
	if (!realpath(path, r)) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	if (real)
		snprintf(real, reallen, "%s", r);
	if (!dc_invoker()->root)
		return 0;
	struct stat st;
	if (stat(r, &st)) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s %s: not a regular file", what, path);
		return -1;
	}
	if (!owner_ok(&st)) {
		snprintf(err, errlen, "%s %s: refused as root: owned by uid %u, not by root%s%s "
			 "(another user could have planted it)", what, path, (unsigned)st.st_uid,
			 dc_invoker()->uid ? " or " : "", dc_invoker()->uid ? dc_invoker()->name : "");
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(err, errlen, "%s %s: refused as root: writable by %s (chmod go-w %s)",
			 what, path, st.st_mode & S_IWOTH ? "others" : "its group", path);
		return -1;
	}
	return check_parents(r, what, path, err, errlen);
}

int dc_trust_search_dir(const char *dir, const char *what, char *err, size_t errlen)
{
	char r[PATH_MAX];
	if (!dc_invoker()->root)
		return 0;
	if (!realpath(dir, r))
		return 0; /* missing: nothing can be found there */
	char label[PATH_MAX + 32];
	snprintf(label, sizeof(label), "directory %s", dir);
	if (check_dir(r, what, label, 1, err, errlen))
		return -1;
	return check_parents(r, what, label, err, errlen);
}

/* Main-thread state of the fs ids (setfsuid(2) is per thread, glibc does not broadcast
 * it): script code running (nesting depth), a batch open (dc_trust_batch_begin), and
 * whether the fs ids are the invoking user's now. Invariant: as_user is 1 whenever
 * script_depth > 0 (under sudo); outside a batch it is 0 whenever script_depth is 0. */
static int script_depth, batch, as_user;
static void (*on_switch)(int as_user, void *arg); /* dc_trust_on_switch */
static void *on_switch_arg;

void dc_trust_on_switch(void (*fn)(int as_user, void *arg), void *arg)
{
	on_switch = fn;
	on_switch_arg = arg;
}

static int switching(void)
{
	const struct dc_invoker *iv = dc_invoker();
	return iv->sudo && iv->root && iv->uid != 0;
}

int dc_trust_switches(void)
{
	return switching();
}

static void to_root(void)
{
	setfsuid(0);
	setfsgid(0);
	as_user = 0;
	if (on_switch)
		on_switch(0, on_switch_arg);
}

void dc_trust_enter_script(void)
{
	if (script_depth++ == 0 && !as_user && switching()) {
		const struct dc_invoker *iv = dc_invoker();
		setfsgid(iv->gid);
		setfsuid(iv->uid);
		as_user = 1;
		if (on_switch)
			on_switch(1, on_switch_arg);
	}
}

void dc_trust_leave_script(void)
{
	if (--script_depth == 0 && as_user && !batch)
		to_root();
}

void dc_trust_batch_begin(void)
{
	batch = 1;
}

void dc_trust_release(void)
{
	if (script_depth == 0 && as_user)
		to_root();
}

void dc_trust_batch_end(void)
{
	batch = 0;
	dc_trust_release();
}

/* The chunk names loaded so far, for dc_trust_full_name (Lua shortens long ones). */
static char *chunk_names[64];
static unsigned nchunk_names;

static void remember_chunk(const char *name)
{
	for (unsigned i = 0; i < nchunk_names; i++)
		if (!strcmp(chunk_names[i], name))
			return;
	if (nchunk_names < sizeof(chunk_names) / sizeof(chunk_names[0]) && strlen(name) > 40) {
		char *c = strdup(name);
		if (c)
			chunk_names[nchunk_names++] = c;
	}
}

const char *dc_trust_full_name(const char *msg, char *buf, size_t len)
{
	if (strncmp(msg, "...", 3))
		return msg;
	const char *tail = msg + 3, *colon = strchr(tail, ':');
	if (!colon)
		return msg;
	size_t tn = (size_t)(colon - tail);
	for (unsigned i = 0; i < nchunk_names; i++) {
		size_t cn = strlen(chunk_names[i]);
		if (cn > tn && !strncmp(chunk_names[i] + cn - tn, tail, tn)) {
			snprintf(buf, len, "%s%s", chunk_names[i], colon);
			return buf;
		}
	}
	return msg;
}

int dc_trust_load(lua_State *L, const char *path, const char *name)
{
	remember_chunk(name);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		lua_pushfstring(L, "cannot open %s: %s", name, strerror(errno));
		return LUA_ERRFILE;
	}
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	char chunk[8192];
	ssize_t n;
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		luaL_addlstring(&b, chunk, (size_t)n);
	int e = errno;
	close(fd);
	luaL_pushresult(&b);
	if (n < 0) {
		lua_pop(L, 1);
		lua_pushfstring(L, "cannot read %s: %s", name, strerror(e));
		return LUA_ERRFILE;
	}
	size_t len;
	const char *text = lua_tolstring(L, -1, &len);
	size_t skip = 0;
	if (len > 0 && text[0] == '#') /* a #! line: skipped, its newline kept for line numbers */
		while (skip < len && text[skip] != '\n')
			skip++;
	lua_pushfstring(L, "@%s", name);
	int st = luaL_loadbufferx(L, text + skip, len - skip, lua_tostring(L, -1), "t");
	/* stack: text, chunkname, chunk-or-message: keep the last only */
	lua_insert(L, -3);
	lua_pop(L, 2);
	if (st != LUA_OK && lua_type(L, -1) == LUA_TSTRING) { /* a syntax error: full name */
		char full[PATH_MAX + 1024];
		const char *m = dc_trust_full_name(lua_tostring(L, -1), full, sizeof(full));
		if (m == full) {
			lua_pop(L, 1);
			lua_pushstring(L, full);
		}
	}
	return st;
}
