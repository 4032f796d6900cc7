/* lua_api.c: the Lua 5.4 state a script runs in and the `datacrumbs` module (dc.probe,
 * dc.on_event, dc.options: docs/lua-api.md); an event's way to the callbacks: lua_event.c. */
#include "lua_script.h"
#include "cli.h"
#include "profile.h"

#include <ctype.h>
#include <time.h>
#include <signal.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>
#include <luv/luv.h>

#include "paths.h"
#include "retsite.h"
#include "trust.h"
#include "util.h"









/* Where a file is looked for: its name, what it is (for the trust checks' messages), the
 * path found and the error. */
struct find_ctx {
	const char *file, *what;
	char *out, *err;
	size_t outlen, errlen;
};

/* Looks for the file in one directory (len bytes of d; 0: none). As root, each directory
 * consulted must pass dc_trust_search_dir and the file found dc_trust_file. Returns 0 to
 * go on (not there), 1 when found (out set), -2 when refused (err set). */
static int find_in_dir(const char *d, size_t len, const char *origin, void *arg)
{
	struct find_ctx *fc = arg;
	char dir[PATH_MAX];

	(void)origin;
	if (!len)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)len, d);
	if (dc_trust_search_dir(dir, fc->what, fc->err, fc->errlen))
		return -2;
	snprintf(fc->out, fc->outlen, "%s/%s", dir, fc->file);
	if (access(fc->out, R_OK) == 0)
		return dc_trust_file(fc->out, fc->what, NULL, 0, fc->err, fc->errlen) ? -2 : 1;
	return 0;
}

/* Looks for `file` in a ':'-separated directory list (find_in_dir on each). Returns 0
 * with out set when found, -1 when not found, -2 when refused (err set). */
static int find_in_dirs(const char *dirs, const char *file, char *out, size_t outlen,
			const char *what, char *err, size_t errlen)
{
	struct find_ctx fc = { file, what, out, err, outlen, errlen };
	const char *d;
	size_t len;
	while (dirs && *dirs && (d = dc_list_next(&dirs, ":", &len))) {
		int r = find_in_dir(d, len, NULL, &fc);
		if (r)
			return r < 0 ? r : 0;
	}
	return -1;
}

int dc_script_find(const char *name, char *out, size_t outlen, char *err, size_t errlen)
{
	if (strchr(name, '/')) { /* a path: ./x.lua, /opt/site/x.lua */
		if (access(name, R_OK) == 0) {
			snprintf(out, outlen, "%s", name);
			return dc_trust_file(name, "script", NULL, 0, err, errlen);
		}
		snprintf(err, errlen, "script %s: %s", name, strerror(errno));
		return -1;
	}
	struct find_ctx fc = { name, "script", out, err, outlen, errlen };
	int e = dc_script_path_each(find_in_dir, &fc);
	if (e)
		return e < 0 ? -1 : 0;
	snprintf(err, errlen, "script '%s' not found (looked in $DATACRUMBS_SCRIPT_PATH, %s, "
		 "%s; never in the current directory: for a file there, say ./%s)", name,
		 dc_data_dir(DC_DIR_SCRIPTS), dc_source_dir(DC_DIR_SCRIPTS), name);
	return -1;
}

/* Appends to buf (", "-separated) the names of the *.yaml files in each directory of the
 * ':'-separated list, without ".yaml": the layers a script can ask for. */
static void list_layers(const char *dirs, char *buf, size_t len)
{
	const char *p;
	size_t n;
	while (dirs && *dirs && (p = dc_list_next(&dirs, ":", &n))) {
		char dir[1024];
		snprintf(dir, sizeof(dir), "%.*s", (int)n, p);
		DIR *d = n ? opendir(dir) : NULL;
		struct dirent *de;
		while (d && (de = readdir(d))) {
			size_t k = strlen(de->d_name);
			if (k <= 5 || strcmp(de->d_name + k - 5, ".yaml"))
				continue;
			char name[256];
			snprintf(name, sizeof(name), "%.*s", (int)(k - 5), de->d_name);
			if (strstr(buf, name)) /* shadowed by an earlier directory */
				continue;
			size_t used = strlen(buf);
			snprintf(buf + used, len - used, "%s%s", used ? ", " : "", name);
		}
		if (d)
			closedir(d);
	}
}

/* Finds and loads the probe description of `layer` ("posix" -> posix.yaml), once. */
static struct dc_layer *load_layer(struct dc_script *s, const char *layer, char *err,
				   size_t errlen)
{
	char file[128], path[PATH_MAX];
	size_t n = strlen(layer);
	int is_path = strchr(layer, '/') != NULL;
	if (n == 0 || (!is_path && n > 64) || n >= PATH_MAX) {
		snprintf(err, errlen, "bad layer name '%.200s' (%s)", layer, n == 0 ? "empty" :
			 is_path ? "a path longer than PATH_MAX" : "a name longer than 64 "
			 "characters; give a path to a .yaml file for a description elsewhere");
		return NULL;
	}
	for (size_t i = 0; i <= n && !is_path; i++)
		file[i] = tolower((unsigned char)layer[i]);
	if (!is_path && !strstr(file, ".yaml"))
		strcat(file, ".yaml");
	char dirs[2 * PATH_MAX];
	snprintf(dirs, sizeof(dirs), "%s:%s", dc_data_dir(DC_DIR_PROBES),
		 dc_source_dir(DC_DIR_PROBES));
	int found = -1;
	if (strchr(layer, '/')) {
		snprintf(path, sizeof(path), "%s", layer);
		/* a missing file is dc_layer_load's to report */
		found = access(path, F_OK) == 0 &&
			dc_trust_file(path, "probe description", NULL, 0, err, errlen) ? -2 : 0;
	} else {
		found = find_in_dirs(getenv("DATACRUMBS_PROBE_PATH"), file, path, sizeof(path),
				     "probe description", err, errlen);
		if (found == -1)
			found = find_in_dirs(dirs, file, path, sizeof(path), "probe description",
					     err, errlen);
	}
	if (found == -2)
		return NULL;
	char real[PATH_MAX];
	if (found == 0 && dc_invoker()->root && realpath(path, real))
		snprintf(path, sizeof(path), "%s", real); /* read what was checked */
	if (found == -1) {
		char known[512] = "";
		list_layers(getenv("DATACRUMBS_PROBE_PATH"), known, sizeof(known));
		list_layers(dirs, known, sizeof(known));
		snprintf(err, errlen, "no probe description for layer '%s' (no %s in "
			 "$DATACRUMBS_PROBE_PATH, %s or %s; layers: %s)", layer, file,
			 dc_data_dir(DC_DIR_PROBES), dc_source_dir(DC_DIR_PROBES),
			 known[0] ? known : "none");
		return NULL;
	}
	for (int i = 0; i < s->nlayers; i++)
		if (!strcmp(s->layers[i]->path, path))
			return s->layers[i];
	struct dc_layer *l = dc_layer_load(path, err, errlen);
	if (!l)
		return NULL;
	struct dc_layer **ls = realloc(s->layers, (s->nlayers + 1) * sizeof(*ls));
	if (!ls) {
		dc_layer_free(l);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	s->layers = ls;
	s->layers[s->nlayers++] = l;
	return l;
}


/* Under sudo Lua's collector runs only while the fs ids are the invoking user's
 * (dc_trust_on_switch; stopped at dc_script_new, lua_gc LUA_GCSTOP, Lua 5.4 manual 4.6):
 * a finalizer (__gc) is script code, and a collection step runs in whatever allocates,
 * so one the tracer's own Lua calls made (an event's table, a process's) ran with root's
 * fs ids. Switched at the fs ids' switches, not at each callback: a restart makes the
 * next allocation take a step (cb.lua under sudo 0.86 -> 4.3 us per event when it was). */
static void gc_on_switch(int as_user, void *arg)
{
	struct dc_script *s = arg;
	lua_gc(s->L, as_user ? LUA_GCRESTART : LUA_GCSTOP);
}


/* Raises "FN: unknown field 'K' in spec (fields: ...)" for a key of the spec table at idx
 * that is not in `known` (NULL-terminated): a typo (function= for functions=) must not
 * quietly trace something else. */
static void check_fields(lua_State *L, int idx, const char *fn, const char *const *known)
{
	lua_pushnil(L);
	while (lua_next(L, idx)) {
		lua_pop(L, 1);
		const char *k = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		int ok = 0;
		for (int i = 0; k && known[i]; i++)
			ok |= !strcmp(k, known[i]);
		if (!ok) {
			luaL_Buffer b;
			luaL_buffinit(L, &b);
			for (int i = 0; known[i]; i++) {
				luaL_addstring(&b, i ? ", " : "");
				luaL_addstring(&b, known[i]);
			}
			luaL_pushresult(&b);
			luaL_error(L, "%s: unknown field '%s' in its spec (fields: %s)", fn,
				   k ? k : luaL_typename(L, -2), lua_tostring(L, -1));
		}
	}
}

/* Frees a request's function list (the names and the list) and sets it back to none. */
static void free_funcs(struct dc_probe_req *req)
{
	for (int k = 0; k < req->nfuncs; k++)
		free(req->funcs[k]);
	free(req->funcs);
	req->funcs = NULL;
	req->nfuncs = 0;
}

/* dc.probe(spec): asks for the functions of a layer's probe description: uprobes, or the
 * system call tracepoints for those that are one system call.
 *   spec: a layer name ("posix"), or a table
 *     { layer = "posix", functions = { "open", "read" } (optional: all when absent),
 *       fds_only = true (optional: no events, only the calls that open, close or dup
 *       fds, attached to keep the fd-to-path tables right for other layers),
 *       mechanism = "syscall" (default) or "uprobe" (optional: "uprobe" probes every
 *       function by its uprobe, also those the description says are one system call,
 *       `syscall:` in docs/probes.md, which by default are served by the raw_syscalls
 *       tracepoints) }
 * The functions are attached once the script has run, in the library the command loads.
 * Errors (with the caller's file:line): unknown layer, a bad description file, a function
 * the description does not have. Returns nothing. Long on purpose: the table's fields
 * are checked in the order the reference gives them, each with its own luaL_error. */
static int l_probe(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	if (s->started)
		return luaL_error(L, "probe: the probes are attached once the script has run; "
				  "call dc.probe at the script's top level");
	const char *layer;
	if (lua_type(L, 1) == LUA_TSTRING) {
		layer = lua_tostring(L, 1);
	} else {
		static const char *const known[] = { "layer", "functions", "fds_only", "mechanism",
						     NULL };
		luaL_checktype(L, 1, LUA_TTABLE);
		check_fields(L, 1, "probe", known);
		lua_getfield(L, 1, "layer");
		layer = lua_tostring(L, -1);
		if (!layer)
			return luaL_error(L, "probe: spec.layer must be a string (e.g. \"posix\")");
	}
	char err[1024];
	struct dc_layer *l = load_layer(s, layer, err, sizeof(err));
	if (!l)
		return luaL_error(L, "probe: %s", err);

	struct dc_probe_req req = { .layer = l };
	luaL_where(L, 1);
	snprintf(req.where, sizeof(req.where), "%s", lua_tostring(L, -1));
	lua_pop(L, 1);
	if (lua_type(L, 1) == LUA_TTABLE) {
		lua_getfield(L, 1, "mechanism");
		const char *mech = lua_tostring(L, -1);
		if (!lua_isnil(L, -1) && (!mech || (strcmp(mech, "uprobe") &&
						    strcmp(mech, "syscall"))))
			return luaL_error(L, "probe: spec.mechanism must be \"syscall\" (the "
					  "default: functions that are one system call are served "
					  "by the syscall tracepoints) or \"uprobe\"");
		req.uprobe = mech && !strcmp(mech, "uprobe");
		if (req.uprobe && l->mechanism != DC_MECH_UPROBE)
			return luaL_error(L, "probe: mechanism = \"uprobe\": layer %s is not "
					  "probed by uprobes (%s)", l->name, l->path);
		lua_pop(L, 1);
		lua_getfield(L, 1, "fds_only");
		int fds_only = lua_toboolean(L, -1);
		lua_pop(L, 1);
		lua_getfield(L, 1, "functions");
		if (fds_only && !lua_isnil(L, -1))
			return luaL_error(L, "probe: spec.fds_only and spec.functions exclude each "
					  "other");
		if (fds_only) {
			req.funcs = calloc(1, sizeof(char *)); /* none shown; the rest hidden */
			if (!req.funcs)
				return luaL_error(L, "probe: out of memory");
		} else if (!lua_isnil(L, -1)) {
			if (!lua_istable(L, -1))
				return luaL_error(L, "probe: spec.functions must be a list of function "
						  "names, e.g. { \"open\", \"read\" }");
			lua_Integer n = luaL_len(L, -1);
			if (n == 0)
				return luaL_error(L, "probe: spec.functions is empty (leave it out to "
						  "probe all of the layer's functions)");
			/* a NULL list means "every function": out of memory is an error, never
			 * a wider probe set than the script asked for */
			req.funcs = calloc(n + 1, sizeof(char *));
			if (!req.funcs)
				return luaL_error(L, "probe: out of memory");
			for (lua_Integer i = 1; i <= n; i++) {
				lua_geti(L, -1, i);
				const char *f = lua_tostring(L, -1);
				int known = f && dc_layer_func(l, f);
				char *copy = known ? strdup(f) : NULL;
				if (!copy) {
					free_funcs(&req);
					if (known)
						return luaL_error(L, "probe: out of memory");
					return luaL_error(L, "probe: function '%s' is not in %s",
							  f ? f : "?", l->path);
				}
				req.funcs[req.nfuncs++] = copy;
				lua_pop(L, 1);
			}
		}
		lua_pop(L, 1);
	}
	struct dc_probe_req *r = realloc(s->reqs, (s->nreqs + 1) * sizeof(*r));
	if (!r) {
		free_funcs(&req);
		return luaL_error(L, "probe: out of memory");
	}
	s->reqs = r;
	s->reqs[s->nreqs++] = req;
	return 0;
}

/* dc.uprobe's args given per entry of spec.functions (spec at stack index 1): fills
 * l->gtmpl, one template per glob, with no args where the table names none. Returns 0,
 * or 1 with the error message pushed (a key that is no entry of functions, a value that
 * is no list of "KIND NAME" strings, more than DC_PROBE_ARGS of them). */
static int uprobe_args_by_entry(lua_State *L, struct dc_layer *l)
{
	char err[256];
	l->gtmpl = calloc(l->nglobs, sizeof(*l->gtmpl));
	if (!l->gtmpl) {
		lua_pushstring(L, "uprobe: out of memory");
		return 1;
	}
	for (int g = 0; g < l->nglobs; g++)
		l->gtmpl[g] = l->tmpl; /* tmpl has no args in this form */
	lua_getfield(L, 1, "args");
	lua_pushnil(L);
	while (lua_next(L, -2)) {
		const char *key = lua_type(L, -2) == LUA_TSTRING ? lua_tostring(L, -2) : NULL;
		int g = 0;
		while (key && g < l->nglobs && strcmp(l->globs[g], key))
			g++;
		if (!key || g == l->nglobs) {
			luaL_where(L, 1);
			lua_pushfstring(L, "%suprobe: spec.args: key %s is not an entry of spec.functions "
					"(give a list of \"KIND NAME\" for every function, or a table from "
					"entries of functions to such lists)", lua_tostring(L, -1),
					key ? key : "(not a string)");
			return 1;
		}
		lua_Integer n = lua_istable(L, -1) ? luaL_len(L, -1) : -1;
		if (n < 0 || n > DC_PROBE_ARGS) {
			luaL_where(L, 1);
			lua_pushfstring(L, "%suprobe: spec.args[\"%s\"] must be a list of at most %d "
					"\"KIND NAME\" strings", lua_tostring(L, -1), key, DC_PROBE_ARGS);
			return 1;
		}
		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			const char *a = lua_tostring(L, -1);
			if (!a || dc_arg_parse(a, &l->gtmpl[g].args[i - 1], err, sizeof(err))) {
				luaL_where(L, 1);
				lua_pushfstring(L, "%suprobe: %s", lua_tostring(L, -1),
						a ? err : "args must be strings");
				return 1;
			}
			lua_pop(L, 1);
		}
		l->gtmpl[g].nargs = (int)n;
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	return 0;
}

/* dc.uprobe(spec): probes functions of any ELF file by name or glob.
 *   spec: { functions = "write_checkpoint*" or { "H5Dwrite", "nc_*" } (fnmatch(3) globs),
 *           file = "CMD" (default: the traced command's binary), a path, or a library's
 *                  soname prefix as the command loads it ("libhdf5.so"),
 *           args = { "int step", "path name", ... } (KIND NAME, as in docs/probes.md,
 *                  the same for every function matched), or a table from entries of
 *                  `functions` to such lists (args = { ["write_checkpoint*"] =
 *                  { "int step" } }): each function gets the list of the first entry
 *                  that matched it, none when that entry has none (no register is
 *                  recorded as an argument the function may not have),
 *           ret = "int" | "long" | "pointer" | "errcode" | "void" (default "long"),
 *           layer = "APP" (the events' cat),
 *           returns = "auto" | "hijack" | "instructions" | "none" (how the calls' returns
 *                  are seen, core/retsite.h; default auto: per function) }
 * The globs are matched against the file's symbols once the run starts; a glob that
 * matches nothing gets a warning. Errors (caller's file:line): a bad arg, kind or ret.
 * Long on purpose: the table's fields are checked in the order the reference gives them,
 * each with its own luaL_error. */
static int l_uprobe(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	char err[256];
	if (s->started)
		return luaL_error(L, "uprobe: call it at the script's top level");
	luaL_checktype(L, 1, LUA_TTABLE);
	static const char *const known[] = { "functions", "file", "args", "ret", "layer",
					     "returns", NULL };
	check_fields(L, 1, "uprobe", known);
	lua_getfield(L, 1, "layer");
	const char *lname = luaL_optstring(L, -1, "APP");
	lua_getfield(L, 1, "file");
	const char *file = luaL_optstring(L, -1, "CMD");
	luaL_where(L, 1);
	struct dc_layer *l = dc_layer_custom_new(lname, file, lua_tostring(L, -1), err,
						 sizeof(err));
	if (!l)
		return luaL_error(L, "uprobe: spec.%s", err);
	lua_pop(L, 3);
	/* register first, so every error below leaves nothing to free by hand */
	struct dc_layer **ls = realloc(s->layers, (s->nlayers + 1) * sizeof(*ls));
	if (!ls) {
		free(l);
		return luaL_error(L, "uprobe: out of memory");
	}
	s->layers = ls;
	s->layers[s->nlayers++] = l;

	lua_getfield(L, 1, "ret");
	const char *ret = luaL_optstring(L, -1, "long");
	int rk = dc_ret_kind_of(ret);
	if (rk < 0)
		return luaL_error(L, "uprobe: unknown ret '%s' (" DC_RET_NAMES ")", ret);
	l->tmpl.ret_kind = rk;
	lua_pop(L, 1);
	lua_getfield(L, 1, "returns"); /* how returns are seen: core/retsite.h */
	const char *rs = luaL_optstring(L, -1, "auto");
	if ((l->tmpl.returns = dc_returns_parse(rs)) < 0)
		return luaL_error(L, "uprobe: unknown returns '%s' (auto, hijack, instructions "
				  "or none)", rs);
	lua_pop(L, 1);
	lua_getfield(L, 1, "args");
	int by_entry = 0; /* args keyed by the entries of functions: read after them */
	if (!lua_isnil(L, -1)) {
		luaL_checktype(L, -1, LUA_TTABLE);
		lua_pushnil(L);
		while (!by_entry && lua_next(L, -2)) {
			by_entry = lua_type(L, -2) == LUA_TSTRING;
			lua_pop(L, by_entry ? 2 : 1);
		}
	}
	if (!lua_isnil(L, -1) && !by_entry) {
		lua_Integer n = luaL_len(L, -1);
		if (n > DC_PROBE_ARGS)
			return luaL_error(L, "uprobe: more than %d args", DC_PROBE_ARGS);
		for (lua_Integer i = 1; i <= n; i++) {
			lua_geti(L, -1, i);
			const char *a = lua_tostring(L, -1);
			if (!a || dc_arg_parse(a, &l->tmpl.args[i - 1], err, sizeof(err)))
				return luaL_error(L, "uprobe: %s", a ? err : "args must be strings");
			lua_pop(L, 1);
		}
		l->tmpl.nargs = (int)n;
	}
	lua_pop(L, 1);
	lua_getfield(L, 1, "functions");
	int nf = lua_istable(L, -1) ? (int)luaL_len(L, -1) : lua_isstring(L, -1) ? 1 : 0;
	if (nf == 0)
		return luaL_error(L, "uprobe: spec.functions must be a name or glob, or a list of "
				  "them (e.g. \"write_checkpoint*\")");
	l->globs = calloc(nf, sizeof(char *));
	if (!l->globs)
		return luaL_error(L, "uprobe: out of memory");
	for (int i = 1; i <= nf; i++) {
		if (lua_istable(L, -1))
			lua_geti(L, -1, i);
		else
			lua_pushvalue(L, -1);
		const char *g = lua_tostring(L, -1);
		if (!g || !*g)
			return luaL_error(L, "uprobe: function #%d is not a name", i);
		l->globs[l->nglobs++] = strdup(g);
		if (!l->globs[l->nglobs - 1])
			return luaL_error(L, "uprobe: out of memory");
		lua_pop(L, 1);
	}
	lua_pop(L, 1);
	if (by_entry && uprobe_args_by_entry(L, l))
		return lua_error(L);

	struct dc_probe_req req = { .layer = l };
	snprintf(req.where, sizeof(req.where), "%.255s", l->path);
	struct dc_probe_req *r = realloc(s->reqs, (s->nreqs + 1) * sizeof(*r));
	if (!r)
		return luaL_error(L, "uprobe: out of memory");
	s->reqs = r;
	s->reqs[s->nreqs++] = req;
	return 0;
}

/* dc.drop_paths(prefixes): drops every event whose file's path starts with one of the
 * prefixes (a list of at most 64 non-empty strings, e.g. { "/proc/", "/sys/" }; byte
 * prefixes, not globs), in C, before the event becomes a Lua table: a callback never sees
 * them and a script with no callback runs no Lua per event. Dropped events count as
 * dropped by the script. Each call adds prefixes. Errors: not a list of strings, an empty
 * string, more than 64 in all. Returns nothing. */
static int l_drop_paths(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	if (lua_type(L, 1) == LUA_TSTRING) { /* dc.drop_paths "/proc/", as dc.probe "posix" */
		lua_createtable(L, 1, 0);
		lua_pushvalue(L, 1);
		lua_rawseti(L, -2, 1);
		lua_replace(L, 1);
	}
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_Integer n = luaL_len(L, 1);
	if (s->ndrops + n > 64)
		return luaL_error(L, "drop_paths: at most 64 prefixes in all");
	char **d = realloc(s->drops, (s->ndrops + n + 1) * sizeof(*d));
	if (!d)
		return luaL_error(L, "drop_paths: out of memory");
	s->drops = d;
	for (lua_Integer i = 1; i <= n; i++) {
		lua_geti(L, 1, i);
		const char *p = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
		if (!p || !*p)
			return luaL_error(L, "drop_paths: prefix #%d is not a non-empty string",
					  (int)i);
		/* an event's path is absolute, or a pseudo file's name (pipe:[N], socket:[N],
		 * anon_inode:[...]): a relative prefix or a glob would drop nothing */
		if (strpbrk(p, "*?"))
			return luaL_error(L, "drop_paths: prefix #%d '%s' is a glob; drop_paths takes "
					  "byte prefixes of absolute paths ('/usr/' drops every file "
					  "under /usr)", (int)i, p);
		if (p[0] != '/' && !strchr(p, ':'))
			return luaL_error(L, "drop_paths: prefix #%d '%s' is not absolute: event paths "
					  "are (or a pseudo file's pipe:, socket:, anon_inode:), so it "
					  "would drop nothing", (int)i, p);
		if (!(s->drops[s->ndrops] = strdup(p)))
			return luaL_error(L, "drop_paths: out of memory");
		s->droplen[s->ndrops++] = strlen(p);
		lua_pop(L, 1);
	}
	memset(s->dmemo, 0, sizeof(s->dmemo));
	return 0;
}

int dc_script_drops_path_run(struct dc_script *s, const char *path)
{
	unsigned k = (unsigned)(((uintptr_t)path * 0x9E3779B97F4A7C15ULL) >> 58);
	_Static_assert(sizeof(s->dmemo) / sizeof(s->dmemo[0]) == 1u << (64 - 58),
		       "the memo index is the mix's top 6 bits");
	if (!path || s->dmemo[k].path != path) {
		int drop = dc_script_drops_path(s, path);
		if (!path)
			return drop;
		s->dmemo[k].path = path;
		s->dmemo[k].drop = drop;
	}
	return s->dmemo[k].drop;
}

int dc_script_drops_path(const struct dc_script *s, const char *path)
{
	for (int i = 0; path && i < s->ndrops; i++) /* (every event: lengths kept) */
		if (!strncmp(path, s->drops[i], s->droplen[i]))
			return 1;
	return 0;
}

static void free_names(struct callback *cb)
{
	for (int k = 0; k < cb->nnames; k++)
		free(cb->names[k]);
	free(cb->names);
	cb->names = NULL;
	cb->nnames = 0;
}

/* Adds name to cb's names unless it is there. 0, or -1 out of memory. */
static int add_name(struct callback *cb, const char *name)
{
	for (int k = 0; k < cb->nnames; k++)
		if (!strcmp(cb->names[k], name))
			return 0;
	char **v = realloc(cb->names, (cb->nnames + 1) * sizeof(*v));
	char *copy = strdup(name);
	if (v)
		cb->names = v;
	if (!v || !copy) {
		free(copy);
		return -1;
	}
	cb->names[cb->nnames++] = copy;
	return 0;
}

/* Levenshtein distance of a and b (bytes; each at most 63 long, else 99): how far a
 * misspelt name is from a real one, for the "did you mean" of a filter's error. */
static int edit_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 63 || m > 63)
		return 99;
	int row[64];
	for (size_t j = 0; j <= m; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= n; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= m; j++) {
			int up = row[j];
			int best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[m];
}

/* Does request r make events of cb's layer (any, when the filter names none)? */
static int in_cat(const struct callback *cb, const struct dc_probe_req *r)
{
	return !cb->cat[0] || !strcasecmp(cb->cat, r->layer->name);
}

/* The layers of the requests cb's layer takes in (all: cb NULL), "A, B", into buf. */
static void req_layers(const struct dc_script *s, const struct callback *cb, char *buf,
		       size_t len)
{
	buf[0] = 0;
	for (int i = 0; i < s->nreqs; i++) {
		if (cb && !in_cat(cb, &s->reqs[i]))
			continue;
		int seen = 0; /* an earlier request of the same layer (by name, not a substring:
				 a layer "IO" beside "POSIX_IO" is listed too) */
		for (int j = 0; j < i && !seen; j++)
			seen = (!cb || in_cat(cb, &s->reqs[j])) &&
			       !strcmp(s->reqs[j].layer->name, s->reqs[i].layer->name);
		if (!seen)
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "",
				 s->reqs[i].layer->name);
	}
}

/* Completes cb's filter against the script's probe requests, once they are all made
 * (dc_script_run's end; at once for a callback added later): a function that the system
 * call tracepoints serve is traced as the function its layer names after each of its
 * system calls (glibc's open makes openat, pwrite64 is pwrite's: docs/probes.md "Library
 * call or system call"), so the filter takes those names as well and sees the calls the
 * script asked for. Returns 0; -1 with "file:line: ..." in err for a cat that is no layer
 * the script probes, or a name no requested function of that layer is traced as (a
 * misspelt name or layer matched nothing, silently, before), with the nearest name when
 * one is close. Names are not checked in a layer of the script's own functions
 * (dc.uprobe: its globs are matched in the libraries only when they are attached). */
static int filter_names(struct dc_script *s, struct callback *cb, char *err, size_t errlen)
{
	char layers[256];
	int custom = 0, cat_ok = 0;
	for (int i = 0; i < s->nreqs; i++)
		if (in_cat(cb, &s->reqs[i])) {
			cat_ok = 1;
			custom |= s->reqs[i].layer->custom;
		}
	if (cb->cat[0] && !cat_ok) {
		req_layers(s, NULL, layers, sizeof(layers));
		snprintf(err, errlen, "%son_event: filter.cat '%s' is no layer this script probes "
			 "(%s%s), so the callback would never run", cb->where, cb->cat,
			 layers[0] ? "layers " : "no dc.probe", layers);
		return -1;
	}
	for (int n = 0; n < cb->asked; n++) {
		const char *name = cb->names[n], *near = NULL;
		int found = 0, best = strlen(name) > 6 ? (int)strlen(name) / 3 + 1 : 3;
		for (int i = 0; i < s->nreqs; i++) {
			const struct dc_probe_req *r = &s->reqs[i];
			struct dc_req_iter it = { .r = r };
			const struct dc_func *f;
			int hidden;
			if (!in_cat(cb, r))
				continue;
			while ((f = dc_req_next(&it, &hidden)) && !hidden) {
				int is = !strcmp(f->name, name), d = edit_distance(f->name, name);
				found |= is;
				if (d < best)
					best = d, near = f->name;
				for (int k = 0; !r->uprobe && k < f->nsyscalls; k++) {
					const struct dc_func *namer =
						dc_layer_syscall_namer(r->layer, f->syscall[k]);
					if (!namer)
						continue;
					found |= !strcmp(namer->name, name);
					if (is && add_name(cb, namer->name)) {
						snprintf(err, errlen, "%son_event: out of memory",
							 cb->where);
						return -1;
					}
				}
			}
		}
		if (!found && !custom) {
			req_layers(s, cb, layers, sizeof(layers));
			snprintf(err, errlen, "%son_event: filter.name '%s' is no function this "
				 "script probes (%s%s), so the callback would never run%s%s%s",
				 cb->where, name, layers[0] ? "layers " : "no dc.probe", layers,
				 near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "");
			return -1;
		}
	}
	return 0;
}

/* dc.on_event(fn): fn(ev) is called for every event before it is written.
 *   ev: { id, name, cat, pid, tid, ts (us since epoch), dur (us), level, p_idx,
 *         path (absolute, or nil), args = { fd=, count=, offset=, ret=, ... } }
 * fn may change name, cat, path, ts, dur and args (add, change, or set to nil), and
 * returns false to drop the event (anything else keeps it).
 *   filter (optional): { cat = "POSIX" } and/or { name = "write" or { "write", "pwrite" } }:
 *   fn sees only those events; filter.reuse = true: fn keeps no ev past its call, and
 *   when every callback says so one ev and one ev.args table serve the run (docs/lua-api.md).
 * Each call adds a callback; an event goes through the ones that want it in the order
 * they were added, all seeing the same table; the first false drops it. ev is filled as
 * they read it (ev_index): a field never read during them cannot be read after them. */
static int l_on_event(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	luaL_checktype(L, 1, LUA_TFUNCTION);
	struct callback cb = { .ref = LUA_NOREF };
	if (!lua_isnoneornil(L, 2)) {
		static const char *const known[] = { "cat", "name", "reuse", NULL };
		luaL_checktype(L, 2, LUA_TTABLE);
		check_fields(L, 2, "on_event", known); /* { nme = "write" } must not see all */
		lua_getfield(L, 2, "cat");
		if (!lua_isnil(L, -1))
			snprintf(cb.cat, sizeof(cb.cat), "%s", luaL_checkstring(L, -1));
		lua_getfield(L, 2, "name");
		int n = lua_istable(L, -1) ? (int)luaL_len(L, -1) : lua_isstring(L, -1) ? 1 : 0;
		if (!lua_isnil(L, -1) && n == 0)
			return luaL_error(L, "on_event: filter.name must be a name or a list of names");
		cb.names = n ? calloc(n, sizeof(char *)) : NULL;
		for (int i = 1; i <= n; i++) {
			if (lua_istable(L, -1))
				lua_geti(L, -1, i);
			else
				lua_pushvalue(L, -1);
			const char *name = lua_tostring(L, -1);
			if (!name || !cb.names) {
				free_names(&cb);
				return luaL_error(L, "on_event: filter.name #%d is not a name", i);
			}
			cb.names[cb.nnames++] = strdup(name);
			lua_pop(L, 1);
		}
		lua_pop(L, 2);
		lua_getfield(L, 2, "reuse");
		if (!lua_isnil(L, -1) && !lua_isboolean(L, -1))
			return luaL_error(L, "on_event: filter.reuse must be true or false");
		cb.reuse = lua_toboolean(L, -1);
		lua_pop(L, 1);
	}
	cb.asked = cb.nnames;
	luaL_where(L, 1);
	snprintf(cb.where, sizeof(cb.where), "%s", lua_tostring(L, -1));
	lua_pop(L, 1);
	char err[512];
	if (s->started && filter_names(s, &cb, err, sizeof(err))) { /* from a timer: now */
		free_names(&cb);
		lua_pushstring(L, err);
		return lua_error(L);
	}
	struct callback *v = realloc(s->cbs, (s->ncbs + 1) * sizeof(*v));
	if (!v) {
		free_names(&cb);
		return luaL_error(L, "on_event: out of memory");
	}
	s->cbs = v;
	lua_pushvalue(L, 1);
	cb.ref = luaL_ref(L, LUA_REGISTRYINDEX);
	s->cbs[s->ncbs++] = cb;
	s->nreuse += cb.reuse;
	return 0;
}


static void push_strings(lua_State *L, char **v)
{
	lua_newtable(L);
	for (int i = 0; v && v[i]; i++) {
		lua_pushstring(L, v[i]);
		lua_rawseti(L, -2, i + 1);
	}
}

/* os.exit, replaced: ending the tracer from a script would leave the trace unfinished
 * (its last buffer unwritten, no "]"). It raises an error at the caller's line instead. */
static int l_no_exit(lua_State *L)
{
	return luaL_error(L, "os.exit is not available in a datacrumbs script: it would end "
			  "the tracer without finishing the trace (return from the script, or "
			  "drop events in dc.on_event)");
}

/* dc.on_end(fn): fn() is called once when the traced command has ended and every event
 * has been handled, before the trace's end record: the place for a script's summary.
 * A later call replaces fn. A Lua error in fn is reported and counted. */
static int l_on_end(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	luaL_checktype(L, 1, LUA_TFUNCTION);
	luaL_unref(L, LUA_REGISTRYINDEX, s->end_ref);
	lua_pushvalue(L, 1);
	s->end_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}


/* dc.emit / dc.counter: ev (the table at 1) as a record of the script's own. */
static int emit(lua_State *L, int counter)
{
	struct dc_script *s = dc_script_of(L);
	luaL_checktype(L, 1, LUA_TTABLE);
	if (!s->emit)
		return luaL_error(L, "%s: tracing has not begun (call it from dc.on_event, "
				  "dc.on_end or a timer)", counter ? "counter" : "emit");
	lua_settop(L, 1);
	if (s->cur_ev && lua_topointer(L, 1) == s->cur_ev) {
		dc_ev_fill(s, L, 1); /* the event in the callbacks' hands, whole */
	} else if (lua_getmetatable(L, 1)) {
		int ours = s->evmt_ref != LUA_NOREF &&
			   lua_rawgeti(L, LUA_REGISTRYINDEX, s->evmt_ref) && lua_rawequal(L, -1, -2);
		int whole = 0;
		if (ours && s->whole_ref != LUA_NOREF) {
			lua_rawgeti(L, LUA_REGISTRYINDEX, s->whole_ref);
			lua_pushvalue(L, 1);
			whole = lua_rawget(L, -2) != LUA_TNIL;
		}
		lua_settop(L, 1);
		if (ours && !whole)
			return luaL_error(L, "%s: ev of an event whose callbacks returned, not read "
					  "whole (ev is filled as they read it: pairs(ev) or "
					  "dc.emit(ev) in them reads it all; or emit a table of the "
					  "fields kept)", counter ? "counter" : "emit");
	}
	dc_ev_from_table(L, s, s->emit_rec);
	s->emit(s->emit_ctx, s->emit_rec, counter);
	return 0;
}

/* dc.emit(ev): writes a complete event of the script's own (a phase marker, a summary),
 *   ev: { name, cat = "script", pid = the traced process, tid = pid, ts = now (us since
 *         the epoch), dur = 0 (us), path = nil, path2 = nil (a second file: fhash2),
 *         args = { key = integer|string|boolean } }
 * It gets a new id of the tracer's own range and no nesting. Only once tracing has begun
 * (in callbacks: dc.on_event, dc.on_end, luv timers); an error while the script loads. */
static int l_emit(lua_State *L)
{
	return emit(L, 0);
}

/* dc.counter(ev): writes a counter event (ph "C"): ev as for dc.emit, its args numbers
 * (e.g. { count = 12, size_sum = 4096 }); no id, no dur. Same rules as dc.emit. */
static int l_counter(lua_State *L)
{
	return emit(L, 1);
}

void dc_script_set_emitter(struct dc_script *s, dc_emit_fn fn, void *ctx, int root_pid)
{
	if (fn && !s->emit_rec)
		s->emit_rec = calloc(1, sizeof(*s->emit_rec));
	s->emit = s->emit_rec ? fn : NULL;
	s->emit_ctx = ctx;
	s->root_pid = root_pid;
}

/* dc.stats(): the run's counters so far, as a table: events (written), lost (the ring
 * buffer had no room), dropped (by callbacks), too_deep, unpaired (bpf/datacrumbs.h
 * enum dc_stat, summed over CPUs from the BPF map), script_errors. Before tracing has
 * begun all are 0. */
static int l_stats(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	uint64_t v[DC_SS_NR] = { 0 };
	if (s->stats)
		s->stats(s->stats_ctx, v);
	static const char *const names[DC_SS_NR] = { "events", "lost", "dropped", "too_deep",
						     "unpaired" };
	lua_createtable(L, 0, DC_SS_NR + 1);
	for (int i = 0; i < DC_SS_NR; i++) {
		lua_pushinteger(L, (lua_Integer)v[i]);
		lua_setfield(L, -2, names[i]);
	}
	lua_pushinteger(L, (lua_Integer)s->errors);
	lua_setfield(L, -2, "script_errors");
	return 1;
}

void dc_script_set_reader(struct dc_script *s, dc_read_fn fn, void *ctx)
{
	s->reader = fn;
	s->reader_ctx = ctx;
}

int dc_script_mode(const struct dc_script *s, uint64_t *interval_ns)
{
	*interval_ns = s->interval_ns;
	return s->mode;
}

/* dc.mode(mode [, interval]): asks for "trace" (a complete event per call) or "profile"
 * (calls aggregated in the kernel per interval, process, function and file, written as
 * counter events: docs/trace-format.md), with profile's interval as a duration string
 * ("1s", "250ms"; at least 10ms; default 1s). --mode and --interval on the command line
 * win. Only at the script's top level. Returns the mode the run will use. Errors: an
 * unknown mode, a bad interval, a call after the script has run. */
static int l_mode(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	if (s->started)
		return luaL_error(L, "mode: call it at the script's top level");
	const char *m = luaL_checkstring(L, 1);
	int md = dc_mode_of(m);
	if (!md)
		return luaL_error(L, "mode: '%s' is not a mode (trace or profile)", m);
	s->mode = md;
	if (lua_gettop(L) > 2)
		return luaL_error(L, "mode: takes a mode and an interval, got %d arguments",
				  lua_gettop(L));
	if (!lua_isnoneornil(L, 2)) {
		const char *iv = luaL_checkstring(L, 2);
		uint64_t ns = dc_parse_duration(iv);
		if (s->mode != DC_MODE_PROFILE)
			return luaL_error(L, "mode: an interval is for \"profile\" mode only");
		if (ns < DC_INTERVAL_MIN_NS || ns > DC_INTERVAL_MAX_NS)
			return luaL_error(L, "mode: interval '%s' is not a duration from 10ms to 1 "
					  "day (e.g. \"1s\", \"250ms\")", iv);
		s->interval_ns = ns;
	}
	const char *eff = s->info->mode ? s->info->mode
			: s->mode == DC_MODE_PROFILE ? "profile" : "trace";
	lua_pushstring(L, eff);
	return 1;
}

/* Pushes one aggregate as a table into the list at -1 (dc.aggregates/dc.totals). */
static void push_row(const struct dc_prow *row, void *arg)
{
	lua_State *L = arg;
	lua_createtable(L, 0, 14);
	lua_pushinteger(L, row->pid);            lua_setfield(L, -2, "pid");
	lua_pushstring(L, row->name);            lua_setfield(L, -2, "name");
	lua_pushstring(L, row->cat);             lua_setfield(L, -2, "cat");
	if (row->path) {
		lua_pushstring(L, row->path);
		lua_setfield(L, -2, "path");
	}
	if (row->interval_ts_us) {
		lua_pushinteger(L, (lua_Integer)row->interval_ts_us);
		lua_setfield(L, -2, "ts");
	}
	lua_pushinteger(L, (lua_Integer)row->count);            lua_setfield(L, -2, "count");
	lua_pushinteger(L, (lua_Integer)(row->dur_sum / 1000)); lua_setfield(L, -2, "dur_sum");
	lua_pushinteger(L, (lua_Integer)(row->dur_min / 1000)); lua_setfield(L, -2, "dur_min");
	lua_pushinteger(L, (lua_Integer)(row->dur_max / 1000)); lua_setfield(L, -2, "dur_max");
	if (row->bytes_n) {
		lua_pushinteger(L, (lua_Integer)row->bytes_sum); lua_setfield(L, -2, "size_sum");
		lua_pushinteger(L, (lua_Integer)row->bytes_min); lua_setfield(L, -2, "size_min");
		lua_pushinteger(L, (lua_Integer)row->bytes_max); lua_setfield(L, -2, "size_max");
	}
	if (row->moved_n) {
		lua_pushinteger(L, (lua_Integer)row->moved_sum); lua_setfield(L, -2, "moved_sum");
	}
	lua_rawseti(L, -2, luaL_len(L, -2) + 1);
}

/* dc.aggregates(): profile mode's aggregates not yet written, read from the BPF map now
 * (and from the records kept on the user side), as a list of
 *   { pid, cat, name, path (absent: no file), ts (interval start, us since the epoch),
 *     count, dur_sum, dur_min, dur_max (us), size_sum, size_min, size_max (bytes asked,
 *     absent when the function has no byte count), moved_sum (bytes moved, from the
 *     calls' ret: bpf/datacrumbs.h enum dc_pmoved; absent when ret is no byte count) }.
 * An empty list in trace mode and before tracing has begun. */
static int l_aggregates(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	lua_newtable(L);
	if (s->reader)
		s->reader(s->reader_ctx, 0, push_row, L);
	return 1;
}

/* dc.totals(): the run's totals so far per process, function and file, in either mode,
 * as dc.aggregates' rows without ts: in trace mode over the events written (after the
 * callbacks), in profile mode over the intervals written. */
static int l_totals(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	lua_newtable(L);
	if (s->reader)
		s->reader(s->reader_ctx, 1, push_row, L);
	return 1;
}

/* dc.on_process(fn): fn(p) for each traced process that starts, execs or ends, or
 * becomes an MPI rank (its MPI_Init returned; the MPIIO layer probed):
 *   p: { event = "fork" | "exec" | "exit" | "rank", pid, ppid (fork), name (the
 *        executable), status (exit: the wait status, as waitpid(2) gives it),
 *        rank (rank: the MPI rank, from the launcher's environment) }
 * A later call replaces fn; errors are reported and counted. */
static int l_on_process(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	luaL_checktype(L, 1, LUA_TFUNCTION);
	luaL_unref(L, LUA_REGISTRYINDEX, s->proc_ref);
	lua_pushvalue(L, 1);
	s->proc_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	return 0;
}

void dc_script_set_stats(struct dc_script *s, dc_stats_fn fn, void *ctx)
{
	s->stats = fn;
	s->stats_ctx = ctx;
}

void dc_script_process(struct dc_script *s, const char *event, int pid, int ppid,
		       const char *name, int status)
{
	lua_State *L = s->L;
	if (s->proc_ref == LUA_NOREF)
		return;
	lua_pushcfunction(L, dc_lua_on_error);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->proc_ref);
	lua_createtable(L, 0, 5);
	lua_pushstring(L, event);
	lua_setfield(L, -2, "event");
	lua_pushinteger(L, pid);
	lua_setfield(L, -2, "pid");
	if (ppid > 0) {
		lua_pushinteger(L, ppid);
		lua_setfield(L, -2, "ppid");
	}
	if (name) {
		lua_pushstring(L, name);
		lua_setfield(L, -2, "name");
	}
	if (!strcmp(event, "exit")) {
		lua_pushinteger(L, status);
		lua_setfield(L, -2, "status");
	} else if (!strcmp(event, "rank")) {
		lua_pushinteger(L, status);
		lua_setfield(L, -2, "rank");
	}
	dc_trust_enter_script();
	int st = lua_pcall(L, 1, 0, 1);
	dc_trust_leave_script();
	if (st != LUA_OK) {
		if (s->errors++ == 0)
			fprintf(stderr, "datacrumbs: error in the process callback: %s\n",
				lua_tostring(L, -1));
	}
	lua_settop(L, 0);
}

/* dc.done(code): ends the run before anything is attached or started, with exit status
 * `code` (an integer, default 0), e.g. after a script printed its --help. Only at the
 * script's top level: raises an error in a callback. */
static int l_done(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	lua_Integer code = luaL_optinteger(L, 1, 0);
	if (s->started)
		return luaL_error(L, "done: only while the script loads (the run has started)");
	s->done = 1;
	s->done_code = (int)code;
	lua_pushliteral(L, "datacrumbs: done");
	return lua_error(L);
}

/* require "datacrumbs": the module table. */
static int open_module(lua_State *L)
{
	struct dc_script *s = lua_touserdata(L, lua_upvalueindex(1));
	static const luaL_Reg funcs[] = {
		{ "probe", l_probe },
		{ "on_event", l_on_event },
		{ "drop_paths", l_drop_paths },
		{ "uprobe", l_uprobe },
		{ "done", l_done },
		{ "on_end", l_on_end },
		{ "emit", l_emit },
		{ "stats", l_stats },
		{ "on_process", l_on_process },
		{ "counter", l_counter },
		{ "mode", l_mode },
		{ "aggregates", l_aggregates },
		{ "totals", l_totals },
		{ NULL, NULL },
	};
	luaL_newlibtable(L, funcs);
	lua_pushlightuserdata(L, s);
	luaL_setfuncs(L, funcs, 1);

	/* dc.options: the run as the command line set it */
	lua_newtable(L);
	lua_pushstring(L, s->info->output ? s->info->output : ".");
	lua_setfield(L, -2, "output");
	lua_pushstring(L, s->info->mode ? s->info->mode : "trace");
	lua_setfield(L, -2, "mode");
	lua_pushinteger(L, (lua_Integer)((s->info->interval_ns ? s->info->interval_ns
					  : 1000000000ULL) / 1000000));
	lua_setfield(L, -2, "interval_ms");
	lua_pushinteger(L, s->info->pid);
	lua_setfield(L, -2, "pid");
	push_strings(L, s->info->cmd);
	lua_setfield(L, -2, "command");
	lua_setfield(L, -2, "options");
	lua_pushstring(L, DC_VERSION);
	lua_setfield(L, -2, "version");
	return 1;
}

/* luv's callback runner (luv.h luv_CFpcall), in place of its default, which prints the
 * error and exits the process: a Lua error in a timer or other luv callback is reported
 * once on stderr with file:line, counted in script_errors, and the run goes on. Leaves the
 * function's results on the stack and returns their number, or -(lua_pcall's code). */
static int luv_callback(lua_State *L, int nargs, int nresults, int flags)
{
	(void)flags;
	int base = lua_gettop(L) - nargs; /* the function's slot */
	lua_pushcfunction(L, dc_lua_on_error);
	lua_insert(L, base);
	dc_trust_enter_script();
	int r = lua_pcall(L, nargs, nresults, base);
	dc_trust_leave_script();
	lua_remove(L, base);
	if (r == LUA_OK)
		return lua_gettop(L) - base + 1;
	lua_getfield(L, LUA_REGISTRYINDEX, "datacrumbs.script");
	struct dc_script *s = lua_touserdata(L, -1);
	lua_pop(L, 1);
	if (s && s->errors++ == 0)
		fprintf(stderr, "datacrumbs: error in a luv callback (the run goes on; later "
			"errors are only counted): %s\n", lua_tostring(L, -1));
	lua_pop(L, 1);
	return -r;
}

/* Count hook: every million VM instructions, a pending SIGINT/SIGTERM/SIGHUP/SIGQUIT
 * (blocked, read by the event loop) interrupts the script, so an endless loop in a
 * callback cannot keep Ctrl-C from ending the run. */
static void on_count(lua_State *L, lua_Debug *ar)
{
	sigset_t pending;
	(void)ar;
	if (sigpending(&pending) == 0 &&
	    (sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
	     sigismember(&pending, SIGHUP) || sigismember(&pending, SIGQUIT)))
		luaL_error(L, "interrupted by a signal while the script ran");
}

/* A function a script may not call without --unsafe; upvalue 1 is its name. The error
 * names the script's line (level 1: the caller of this C function). */
static int l_unsafe(lua_State *L)
{
	const char *why = lua_tostring(L, lua_upvalueindex(2));
	return luaL_error(L, "%s is not available without --unsafe (it would %s with the "
			  "tracer's privileges)", lua_tostring(L, lua_upvalueindex(1)),
			  why ? why : "start a program or load native code");
}

/* Replaces t[name] (t at the top of the stack) by l_unsafe, when present. */
static void forbid(lua_State *L, const char *lib, const char *name)
{
	if (lua_getfield(L, -1, name) == LUA_TNIL) {
		lua_pop(L, 1);
		return;
	}
	lua_pop(L, 1);
	lua_pushfstring(L, "%s%s%s", lib, *lib ? "." : "", name);
	lua_pushcclosure(L, l_unsafe, 1);
	lua_setfield(L, -2, name);
}

/* load(chunk [, name [, mode [, env]]]) with mode forced to text: a binary chunk is
 * not checked by Lua and can break out of the VM (Lua 5.4 manual, "load"). Upvalue 1 is
 * the original load. */
static int l_load_text(lua_State *L)
{
	const char *mode = luaL_optstring(L, 3, "t");
	int n = lua_gettop(L), nargs = 3;
	size_t len;
	const char *chunk = lua_type(L, 1) == LUA_TSTRING ? lua_tolstring(L, 1, &len) : NULL;
	if (strchr(mode, 'b') || (chunk && len > 0 && chunk[0] == LUA_SIGNATURE[0]))
		return luaL_error(L, "load: binary chunks are not available without --unsafe");
	if (n < 2) {
		lua_settop(L, 2);
		n = 2;
	}
	lua_pushvalue(L, lua_upvalueindex(1));
	lua_pushvalue(L, 1);
	lua_pushvalue(L, 2);
	lua_pushliteral(L, "t");
	if (n >= 4) { /* an env given, even nil, stays given */
		lua_pushvalue(L, 4);
		nargs = 4;
	}
	lua_call(L, nargs, LUA_MULTRET);
	return lua_gettop(L) - n;
}

/* loadfile(file [, mode [, env]]) / dofile(file), text only, from a trusted file as root. */
static int load_text_file(lua_State *L, const char *path)
{
	char err[PATH_MAX + 256], real[PATH_MAX];
	if (!path)
		return luaL_loadfilex(L, NULL, "t"); /* stdin */
	if (dc_trust_file(path, "Lua file", real, sizeof(real), err, sizeof(err)))
		return luaL_error(L, "%s", err);
	return dc_trust_load(L, real, path);
}

static int l_loadfile_text(lua_State *L)
{
	const char *path = luaL_optstring(L, 1, NULL);
	int env = !lua_isnone(L, 3);
	if (load_text_file(L, path) != LUA_OK) {
		lua_pushnil(L);
		lua_insert(L, -2);
		return 2;
	}
	if (env) {
		lua_pushvalue(L, 3);
		if (!lua_setupvalue(L, -2, 1))
			lua_pop(L, 1);
	}
	return 1;
}

static int l_dofile_text(lua_State *L)
{
	const char *path = luaL_optstring(L, 1, NULL);
	lua_settop(L, 1);
	if (load_text_file(L, path) != LUA_OK)
		return lua_error(L);
	lua_call(L, 0, LUA_MULTRET);
	return lua_gettop(L) - 1;
}

/* package.searchers[2] in place of Lua's: package.path as Lua searches it, then, as
 * root, dc_trust_file on what it found; text chunks only. */
static int searcher_lua(lua_State *L)
{
	const char *name = luaL_checkstring(L, 1);
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "searchpath");
	lua_pushstring(L, name);
	lua_getfield(L, -3, "path");
	lua_call(L, 2, 2);
	if (lua_isnil(L, -2))
		return 1; /* the message of the places searched */
	const char *file = lua_tostring(L, -2);
	char err[PATH_MAX + 256], real[PATH_MAX];
	if (dc_trust_file(file, "Lua module", real, sizeof(real), err, sizeof(err)))
		return luaL_error(L, "%s", err);
	if (dc_trust_load(L, real, file) != LUA_OK)
		return luaL_error(L, "error loading module '%s' from file '%s': %s", name, file,
				  lua_tostring(L, -1));
	lua_pushstring(L, file);
	return 2;
}

/* The part of `path` (';'-separated templates) without relative entries ("./?.lua",
 * "?.lua"): those would read code from the current directory. Pushed on the stack. */
static void push_absolute_entries(lua_State *L, const char *path)
{
	luaL_Buffer b;
	luaL_buffinit(L, &b);
	int first = 1;
	while (path && *path) {
		const char *end = strchr(path, ';');
		size_t n = end ? (size_t)(end - path) : strlen(path);
		if (n && path[0] == '/') {
			if (!first)
				luaL_addchar(&b, ';');
			luaL_addlstring(&b, path, n);
			first = 0;
		}
		path = end ? end + 1 : NULL;
	}
	luaL_pushresult(&b);
}

/* The sandbox of a script without --unsafe (dc_script_new's comment lists it). */
static void restrict_libs(lua_State *L)
{
	lua_getglobal(L, "os");
	forbid(L, "os", "execute");
	lua_pop(L, 1);
	lua_getglobal(L, "io");
	forbid(L, "io", "popen");
	lua_pop(L, 1);
	lua_getglobal(L, "package");
	forbid(L, "package", "loadlib");
	lua_pushstring(L, "");
	lua_setfield(L, -2, "cpath");
	lua_getfield(L, -1, "searchers"); /* 1 preload, 2 Lua, 3 C, 4 C root */
	lua_pushnil(L);
	lua_rawseti(L, -2, 4);
	lua_pushnil(L);
	lua_rawseti(L, -2, 3);
	lua_pop(L, 2);
	lua_getglobal(L, "load");
	lua_pushcclosure(L, l_load_text, 1);
	lua_setglobal(L, "load");
	lua_pushcfunction(L, l_loadfile_text);
	lua_setglobal(L, "loadfile");
	lua_pushcfunction(L, l_dofile_text);
	lua_setglobal(L, "dofile");
	/* debug can reach any upvalue and the registry: only traceback stays */
	lua_getglobal(L, "debug");
	lua_getfield(L, -1, "traceback");
	lua_newtable(L);
	lua_insert(L, -2);
	lua_setfield(L, -2, "traceback");
	lua_pushvalue(L, -1);
	lua_setglobal(L, "debug");
	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_LOADED_TABLE);
	lua_insert(L, -2);
	lua_setfield(L, -2, "debug");
	lua_pop(L, 2);
}

/* `require "luv"`: the script's timers and I/O run while the command does, so it is
 * live (dc_script_live): its events are decoded as they come, not after the run. */
static int open_luv_live(lua_State *L)
{
	((struct dc_script *)lua_touserdata(L, lua_upvalueindex(1)))->live = 1;
	return luaopen_luv(L);
}

static int open_luv_restricted(lua_State *L);

static int open_luv_live_restricted(lua_State *L)
{
	((struct dc_script *)lua_touserdata(L, lua_upvalueindex(1)))->live = 1;
	return open_luv_restricted(L);
}

/* luaopen_luv without the calls that start processes or new Lua states (a thread's or
 * work's state has the full, unrestricted libraries): they raise the --unsafe error. */
/* Replaces method `name` of luv's handle type `mt` (its metatable's __index table, luv's
 * src/lhandle.c) with the --unsafe error. */
static void forbid_method(lua_State *L, const char *mt, const char *name)
{
	if (luaL_getmetatable(L, mt) == LUA_TTABLE &&
	    lua_getfield(L, -1, "__index") == LUA_TTABLE) {
		lua_pushfstring(L, "%s:%s", mt + 3, name);
		lua_pushliteral(L, "let a file descriptor of the tracer's (a BPF map, the trace) be passed on");
		lua_pushcclosure(L, l_unsafe, 2);
		lua_setfield(L, -2, name);
	}
	lua_pop(L, 2);
}

/* luv without what starts programs or threads, loads native code, changes the command's
 * environment, or adopts an fd by number (pipe/tcp/udp open, tty, poll): the tracer's own
 * fds (the ring buffer, BPF maps, the trace) must not be wrapped and passed to another
 * process (write2), as a site-mode user could otherwise do. */
static int open_luv_restricted(lua_State *L)
{
	luaopen_luv(L);
	static const char *const fd_adopters[] = { "new_tty", "new_poll", "new_socket_poll",
						   "pipe_open", "tcp_open", "udp_open", NULL };
	for (int i = 0; fd_adopters[i]; i++) {
		lua_pushfstring(L, "uv.%s", fd_adopters[i]);
		lua_pushliteral(L, "let a file descriptor of the tracer's (a BPF map, the trace) be passed on");
		lua_pushcclosure(L, l_unsafe, 2);
		lua_setfield(L, -2, fd_adopters[i]);
	}
	forbid_method(L, "uv_pipe", "open");
	forbid_method(L, "uv_tcp", "open");
	forbid_method(L, "uv_udp", "open");
	forbid(L, "uv", "spawn");
	forbid(L, "uv", "new_thread");
	forbid(L, "uv", "new_work");
	forbid(L, "uv", "queue_work");
	forbid(L, "uv", "dlopen");
	forbid(L, "uv", "os_setenv");   /* LD_PRELOAD, LD_AUDIT ... for the command */
	forbid(L, "uv", "os_unsetenv");
	if (dc_trust_switches()) {
		/* under sudo only the fs ids are the caller's (dc_trust_enter_script): these
		 * would act with root's real and effective ids */
		static const char *const as_root[] = { "kill", "os_setpriority", "new_tcp",
						       "new_udp", "new_pipe", NULL };
		for (int i = 0; as_root[i]; i++) {
			if (lua_getfield(L, -1, as_root[i]) == LUA_TNIL) {
				lua_pop(L, 1);
				continue;
			}
			lua_pop(L, 1);
			lua_pushfstring(L, "uv.%s", as_root[i]);
			lua_pushliteral(L, "signal, renice or open sockets as root, not as the "
					"sudo caller,");
			lua_pushcclosure(L, l_unsafe, 2);
			lua_setfield(L, -2, as_root[i]);
		}
	}
	return 1;
}

struct dc_script *dc_script_new(uv_loop_t *loop, const struct dc_run_info *info)
{
	struct dc_script *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->end_ref = LUA_NOREF;
	s->proc_ref = LUA_NOREF;
	s->keys_ref = LUA_NOREF;
	s->ev_ref = s->args_ref = LUA_NOREF;
	s->evmt_ref = s->whole_ref = LUA_NOREF;
	s->info = info;
	s->L = luaL_newstate();
	if (!s->L) {
		free(s);
		return NULL;
	}
	lua_State *L = s->L;
	luaL_openlibs(L);
	lua_sethook(L, on_count, LUA_MASKCOUNT, 1000000);
	lua_getglobal(L, "os");
	lua_pushcfunction(L, l_no_exit);
	lua_setfield(L, -2, "exit");
	lua_pop(L, 1);

	luaL_getsubtable(L, LUA_REGISTRYINDEX, LUA_PRELOAD_TABLE);
	lua_pushlightuserdata(L, s);
	lua_pushcclosure(L, open_module, 1);
	lua_setfield(L, -2, "datacrumbs");
	luv_set_loop(L, loop); /* luv must run on the tracer's own loop */
	lua_pushlightuserdata(L, s);
	lua_setfield(L, LUA_REGISTRYINDEX, "datacrumbs.script");
	luv_set_callback(L, luv_callback); /* an error in a timer must not end the run */
	lua_pushlightuserdata(L, s);
	lua_pushcclosure(L, info->unsafe ? open_luv_live : open_luv_live_restricted, 1);
	lua_setfield(L, -2, "luv");
	lua_pop(L, 1);

	/* package.path: our lua/ helpers first (installed, then the source tree), then the
	 * absolute entries of the default (LUA_PATH's): never the current directory */
	lua_getglobal(L, "package");
	lua_getfield(L, -1, "path");
	push_absolute_entries(L, lua_tostring(L, -1));
	lua_pushfstring(L, "%s/?.lua;%s/?.lua;%s", dc_data_dir(DC_DIR_LUA),
			dc_source_dir(DC_DIR_LUA), lua_tostring(L, -1));
	lua_setfield(L, -4, "path");
	lua_pop(L, 2);
	/* require's Lua searcher checks, as root, who owns what it loads */
	lua_getfield(L, -1, "searchers");
	lua_pushcfunction(L, searcher_lua);
	lua_rawseti(L, -2, 2);
	lua_pop(L, 2);
	if (!info->unsafe)
		restrict_libs(L);

	/* arg: the script's own arguments, as lua(1) gives them (arg[0]: set by run) */
	push_strings(L, info->script_args);
	lua_setglobal(L, "arg");
	if (dc_trust_switches()) { /* gc_on_switch */
		lua_gc(L, LUA_GCSTOP);
		dc_trust_on_switch(gc_on_switch, s);
	}
	return s;
}

/* Message handler: the error's own "file:line: message" on one line (newlines and tabs
 * of multi-line messages, e.g. require's search list, become "; " and " "); an error
 * object that is not a string gets the position of the code that raised it. */
int dc_lua_on_error(lua_State *L)
{
	if (lua_type(L, 1) != LUA_TSTRING && lua_type(L, 1) != LUA_TNUMBER) {
		luaL_where(L, 1);
		lua_pushfstring(L, "%s(error object is a %s value)", lua_tostring(L, -1),
				luaL_typename(L, 1));
	} else {
		lua_pushvalue(L, 1);
	}
	luaL_Buffer b;
	size_t n;
	char full[PATH_MAX + 1024];
	const char *m = dc_trust_full_name(lua_tostring(L, -1), full, sizeof(full));
	n = strlen(m);
	luaL_buffinit(L, &b);
	for (size_t i = 0; i < n; i++) {
		if (m[i] == '\n')
			luaL_addstring(&b, "; ");
		else if (m[i] == '\t')
			luaL_addchar(&b, ' ');
		else
			luaL_addchar(&b, m[i]);
	}
	luaL_pushresult(&b);
	return 1;
}


int dc_script_run(struct dc_script *s, const char *path, char *err, size_t errlen)
{
	lua_State *L = s->L;
	lua_getglobal(L, "arg"); /* arg[0] is the script, as lua(1) sets it */
	lua_pushstring(L, path);
	lua_rawseti(L, -2, 0);
	lua_pop(L, 1);
	char real[PATH_MAX];
	if (dc_trust_file(path, "script", real, sizeof(real), err, errlen))
		return -1;
	lua_pushcfunction(L, dc_lua_on_error);
	dc_trust_enter_script();
	int st = dc_trust_load(L, real, path);
	if (st == LUA_OK)
		st = lua_pcall(L, 0, 0, -2);
	dc_trust_leave_script();
	if (st != LUA_OK) {
		snprintf(err, errlen, "%s", lua_tostring(L, -1));
		lua_settop(L, 0);
		return s->done ? 1 : -1;
	}
	lua_settop(L, 0);
	for (int i = 0; i < s->ncbs; i++)
		if (filter_names(s, &s->cbs[i], err, errlen))
			return -1;
	return 0;
}

const struct dc_probe_req *dc_script_reqs(struct dc_script *s, int *n)
{
	s->started = 1;
	*n = s->nreqs;
	return s->reqs;
}

/* Does a function request r asks for take a DIR * (readdir)? Only then are the hidden
 * DIR-stream functions (opendir, fdopendir, closedir) needed: their uprobes would trap in
 * every process calling them for nothing (the fds they open and close are seen by their
 * system calls). */
static int asks_dirs(const struct dc_probe_req *r)
{
	for (int k = 0; k < r->nfuncs; k++) {
		const struct dc_func *f = dc_layer_func(r->layer, r->funcs[k]);
		for (int a = 0; f && a < f->nargs; a++)
			if (f->args[a].kind == DC_ARG_DIR)
				return 1;
	}
	return 0;
}

static int dir_effect(enum dc_effect fx)
{
	return fx == DC_FX_OPENDIR || fx == DC_FX_FDOPENDIR || fx == DC_FX_CLOSEDIR;
}

const struct dc_func *dc_req_next(struct dc_req_iter *it, int *hidden)
{
	const struct dc_probe_req *r = it->r;
	const struct dc_layer *l = r->layer;
	for (;;) {
		int n = it->pass == 0 && r->funcs ? r->nfuncs : l->nfuncs;
		if (it->k >= n) {
			if (it->pass == 1 || !r->funcs)
				return NULL;
			it->pass = 1;
			it->k = 0;
			continue;
		}
		const struct dc_func *f = it->pass == 0 && r->funcs
			? dc_layer_func(l, r->funcs[it->k]) : &l->funcs[it->k];
		it->k++;
		*hidden = it->pass == 1;
		if (!*hidden)
			return f;
		if (f->effect != DC_FX_NONE && (!dir_effect(f->effect) || asks_dirs(r)))
			return f;
	}
}

int dc_script_done(const struct dc_script *s)
{
	return s->done_code;
}

int dc_script_live(const struct dc_script *s)
{
	return s && s->live;
}

int dc_script_wants_events(const struct dc_script *s)
{
	return s->ncbs > 0;
}

void dc_script_end(struct dc_script *s)
{
	lua_State *L = s->L;
	if (s->end_ref == LUA_NOREF)
		return;
	lua_pushcfunction(L, dc_lua_on_error);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->end_ref);
	dc_trust_enter_script();
	int st = lua_pcall(L, 0, 0, -2);
	dc_trust_leave_script();
	if (st != LUA_OK) {
		s->errors++;
		fprintf(stderr, "datacrumbs: error in the end callback: %s\n", lua_tostring(L, -1));
	}
	lua_settop(L, 0);
}

unsigned long dc_script_errors(const struct dc_script *s)
{
	return s->errors;
}

void dc_script_free(struct dc_script *s)
{
	if (!s)
		return;
	/* lua_close runs every pending finalizer: script code, with the user's fs ids (and
	 * the collector running); no gc_on_switch on the closed state */
	dc_trust_enter_script();
	dc_trust_on_switch(NULL, NULL);
	lua_close(s->L);
	dc_trust_leave_script();
	free(s->kslots);
	free(s->wslots);
	free(s->emit_rec);
	for (int i = 0; i < s->ncbs; i++)
		free_names(&s->cbs[i]);
	free(s->cbs);
	for (int i = 0; i < s->ndrops; i++)
		free(s->drops[i]);
	free(s->drops);
	for (int i = 0; i < s->nreqs; i++) {
		for (int k = 0; k < s->reqs[i].nfuncs; k++)
			free(s->reqs[i].funcs[k]);
		free(s->reqs[i].funcs);
	}
	free(s->reqs);
	for (int i = 0; i < s->nlayers; i++)
		dc_layer_free(s->layers[i]);
	free(s->layers);
	free(s);
}
