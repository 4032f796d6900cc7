/* lua_event.c: an event's way through the script's dc.on_event callbacks: which callbacks
 * want it, the ev table filled as they read it, and what they changed read back. */
#include "lua_script.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <lauxlib.h>
#include "trust.h"
#include "util.h"

/* A script's ts (us since the epoch) must lie after 2020 (the format contract) and its
 * ts + dur before 2100 (4102444800 s): math.maxinteger would overflow ts + dur. */
#define TS_MIN_US 1577836800000000LL
#define TS_END_US 4102444800000000LL

/* enum ev_key's strings (lua_script.h): ev's own keys, then ph's two values. */
static const char *const ev_keys[K_NFIXED] = {
	[K_ID] = "id", [K_NAME] = "name", [K_CAT] = "cat", [K_PID] = "pid", [K_TID] = "tid",
	[K_TS] = "ts", [K_DUR] = "dur", [K_LEVEL] = "level", [K_P_IDX] = "p_idx",
	[K_PH] = "ph", [K_PATH] = "path", [K_PATH2] = "path2", [K_ARGS] = "args",
	[K_PH_C] = "C", [K_PH_X] = "X",
};

/* A C string of the event path and its Lua string: idx in the keys table, lua the
 * string's bytes inside Lua (an interned short string has one address per content, so an
 * unchanged field read back is found by comparing addresses). */
struct key_slot {
	const char *p;
	const char *lua;
	int idx;
};

/* Bit i: callback i wants events of this name and layer (wants). */
struct want_slot {
	const char *name, *cat;
	uint64_t mask;
};

const char *dc_rec_keep(struct dc_record *r, const char *s, size_t n)
{
	if (r->used + n + 1 > sizeof(r->arena))
		return NULL;
	char *d = r->arena + r->used;
	memcpy(d, s, n);
	d[n] = 0;
	r->used += n + 1;
	return d;
}

/* Does callback cb want record r? */
static int wants(const struct callback *cb, const struct dc_record *r)
{
	if (cb->cat[0] && strcasecmp(cb->cat, r->cat)) /* "posix" as dc.probe takes it */
		return 0;
	if (!cb->names)
		return 1;
	for (int i = 0; i < cb->nnames; i++)
		if (!strcmp(cb->names[i], r->name))
			return 1;
	return 0;
}

/* Reads one Lua value (at -1) into arg a; 0 when it is not a number/string/boolean. */
static int read_arg(lua_State *L, struct dc_record *r, struct dc_rec_arg *a)
{
	switch (lua_type(L, -1)) {
	case LUA_TNUMBER:
		a->is_str = 0;
		if (lua_isinteger(L, -1)) {
			a->i = lua_tointeger(L, -1);
		} else {
			lua_Number d = lua_tonumber(L, -1);
			if (!(d > -9.2e18 && d < 9.2e18)) /* NaN, inf, out of range: dropped */
				return 0;
			a->i = (int64_t)d;
		}
		return 1;
	case LUA_TBOOLEAN:
		a->is_str = 0;
		a->i = lua_toboolean(L, -1);
		return 1;
	case LUA_TSTRING: {
		size_t n;
		const char *v = lua_tolstring(L, -1, &n);
		a->s = dc_rec_keep(r, v, n);
		a->is_str = 1;
		return a->s != NULL;
	}
	default:
		return 0;
	}
}

/* Pushes t[key] of the table at idx without metamethods: a script's metatable on the
 * event must not run (or raise) outside the protected callback. */
static int raw_field(lua_State *L, int idx, const char *key)
{
	idx = lua_absindex(L, idx);
	lua_pushstring(L, key);
	return lua_rawget(L, idx);
}

/* Reads a string field of the event table back into *dst (copied into the arena); an
 * empty string, or a value that is not a string, keeps the old one (a name and a cat
 * must not be empty). */
static void read_str_field(lua_State *L, struct dc_record *r, const char *key,
			   const char **dst, int nil_ok)
{
	raw_field(L, -1, key);
	size_t n = 0;
	const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
	if (v && n == 0 && !nil_ok)
		v = NULL;
	if (v) {
		if (*dst == NULL || strcmp(v, *dst)) {
			const char *k = dc_rec_keep(r, v, n);
			if (k)
				*dst = k;
		}
	} else if (nil_ok && lua_isnil(L, -1)) {
		*dst = NULL;
	}
	lua_pop(L, 1);
}

/* An arg the format contract says is an integer (docs/trace-format.md; the validator's
 * INT_ARGS, scripts/pfw_validate.py): a script's string there would make the trace
 * invalid, so it is not taken (an own arg keeps its value, an added one is dropped). */
static int int_only(const char *k, lua_State *L)
{
	static const char *const keys[] = { "fd", "count", "offset", "ret", "errno", "whence",
					    "flags", "unfinished", "unwound", "async", "ino",
					    "dev", NULL };
	if (lua_type(L, -1) != LUA_TSTRING)
		return 0;
	for (int i = 0; keys[i]; i++)
		if (!strcmp(k, keys[i]))
			return 1;
	return 0;
}

/* The keys the writer owns: a script cannot set them through ev.args. */
static int reserved_key(const char *k)
{
	static const char *const keys[] = { "hhash", "fhash", "fhash2", "level", "p_idx", NULL };
	for (int i = 0; keys[i]; i++)
		if (!strcmp(k, keys[i]))
			return 1;
	return 0;
}

static uint64_t ptr_hash(const void *a, const void *b)
{
	uint64_t k = (uint64_t)(uintptr_t)a * 0x9e3779b97f4a7c15ULL ^
		     (uint64_t)(uintptr_t)b * 0xc2b2ae3d27d4eb4fULL;
	return k ^ (k >> 29);
}

/* Doubles the slots of an open-addressing table of `size`-byte slots whose first member
 * is a pointer (NULL: empty), rehashing by rehash(). */
static void *grow_slots(void *old, size_t *cap, size_t size,
			uint64_t (*rehash)(const void *slot))
{
	size_t ncap = *cap ? *cap * 2 : 256;
	char *n = calloc(ncap, size);
	if (!n)
		dc_oom();
	for (size_t i = 0; i < *cap; i++) {
		const char *slot = (const char *)old + i * size;
		if (!*(void *const *)slot)
			continue;
		size_t j = rehash(slot) & (ncap - 1);
		while (*(void **)(n + j * size))
			j = (j + 1) & (ncap - 1);
		memcpy(n + j * size, slot, size);
	}
	free(old);
	*cap = ncap;
	return n;
}

static uint64_t key_rehash(const void *slot)
{
	return ptr_hash(((const struct key_slot *)slot)->p, NULL);
}

static uint64_t want_rehash(const void *slot)
{
	const struct want_slot *w = slot;
	return ptr_hash(w->name, w->cat);
}

/* Pushes the Lua string of C string p, which lives as long as the run (a name, layer or
 * arg key of the probe descriptions, or a literal), made once and then taken from the keys
 * table (at stack index keys) by its pointer: no hashing or comparing of its bytes per
 * event. Returns the Lua string's bytes (see struct key_slot). */
static const char *push_key(struct dc_script *s, lua_State *L, int keys, const char *p)
{
	if (2 * (s->kused + 1) > s->kcap)
		s->kslots = grow_slots(s->kslots, &s->kcap, sizeof(*s->kslots), key_rehash);
	size_t j = ptr_hash(p, NULL) & (s->kcap - 1);
	while (s->kslots[j].p && s->kslots[j].p != p)
		j = (j + 1) & (s->kcap - 1);
	struct key_slot *k = &s->kslots[j];
	if (k->p) {
		lua_rawgeti(L, keys, k->idx);
		return k->lua;
	}
	lua_pushstring(L, p);
	lua_pushvalue(L, -1);
	lua_rawseti(L, keys, ++s->nkeys);
	*k = (struct key_slot){ p, lua_tostring(L, -1), s->nkeys };
	s->kused++;
	return k->lua;
}

/* Pushes the keys table (the registry's s->keys_ref, made with the fixed keys at the
 * first event). Returns its stack index. */
static int push_keys(struct dc_script *s, lua_State *L)
{
	if (s->keys_ref == LUA_NOREF || !s->keys_ref) {
		lua_createtable(L, 64, 0);
		for (int i = 1; i < K_NFIXED; i++) {
			s->fixed[i] = lua_pushstring(L, ev_keys[i]);
			lua_rawseti(L, -2, i);
		}
		s->nkeys = K_NFIXED - 1;
		lua_pushvalue(L, -1);
		s->keys_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	} else {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->keys_ref);
	}
	return lua_gettop(L);
}

/* Pushes the value of own field f (enum ev_key, K_ID..K_ARGS) of the event in the
 * callbacks' hands (s->cur), noting the Lua strings handed out in s->pu; keys: the keys
 * table's stack index. ev.args is a whole table (made here, or the reused one emptied). */
static void ev_field(struct dc_script *s, lua_State *L, int keys, int f)
{
	const struct dc_record *r = s->cur;
	switch (f) {
	case K_ID: lua_pushinteger(L, (lua_Integer)r->id); return;
	case K_NAME: s->pu.name = push_key(s, L, keys, r->name); return;
	case K_CAT: s->pu.cat = push_key(s, L, keys, r->cat); return;
	case K_PID: lua_pushinteger(L, r->pid); return;
	case K_TID: lua_pushinteger(L, r->tid); return;
	case K_TS: lua_pushinteger(L, (lua_Integer)r->ts_us); return;
	case K_DUR: lua_pushinteger(L, (lua_Integer)r->dur_us); return;
	case K_LEVEL: lua_pushinteger(L, r->level); return;
	case K_P_IDX: lua_pushinteger(L, r->p_idx); return;
	case K_PH: lua_rawgeti(L, keys, r->counter ? K_PH_C : K_PH_X); return;
	case K_PATH:
	case K_PATH2: {
		const char *v = f == K_PATH ? r->path : r->path2;
		if (!v) {
			lua_pushnil(L);
			return;
		}
		lua_pushstring(L, v);
		*(f == K_PATH ? &s->pu.path : &s->pu.path2) = lua_tostring(L, -1);
		return;
	}
	}
	/* K_ARGS */
	if (s->nreuse == s->ncbs && s->args_ref != LUA_NOREF) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->args_ref);
		/* the last event's args out (setting a field being traversed to nil is
		 * allowed: lua_next, Lua 5.4 manual 4.6) */
		lua_pushnil(L);
		while (lua_next(L, -2)) {
			lua_pop(L, 1);
			lua_pushvalue(L, -1);
			lua_pushnil(L);
			lua_rawset(L, -4);
		}
	} else {
		lua_createtable(L, 0, r->nargs);
		if (s->nreuse == s->ncbs) {
			lua_pushvalue(L, -1);
			s->args_ref = luaL_ref(L, LUA_REGISTRYINDEX);
		}
	}
	for (int i = 0; i < r->nargs; i++) {
		const struct dc_rec_arg *a = &r->args[i];
		s->pu.key[i] = push_key(s, L, keys, a->key);
		s->pu.val[i] = NULL;
		if (a->is_str) {
			lua_pushstring(L, a->s);
			s->pu.val[i] = lua_tostring(L, -1);
		} else {
			lua_pushinteger(L, a->i);
		}
		lua_rawset(L, -3);
	}
}

/* The own field (K_ID..K_ARGS) named by the value at stack index idx, 0: none (not a
 * string, or another key: the script's own). */
static int ev_field_of(const struct dc_script *s, lua_State *L, int idx)
{
	if (lua_type(L, idx) != LUA_TSTRING)
		return 0;
	const char *k = lua_tostring(L, idx);
	for (int f = K_ID; f <= K_ARGS; f++)
		if (k == s->fixed[f])
			return f;
	return 0;
}

/* Sets every own field of ev (at idx, the event in the callbacks' hands) that no callback
 * read or set yet: pairs(ev) and dc.emit(ev) see the whole event. */
void dc_ev_fill(struct dc_script *s, lua_State *L, int idx)
{
	idx = lua_absindex(L, idx);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->keys_ref);
	int keys = lua_gettop(L);
	for (int f = K_ID; f <= K_ARGS; f++) {
		if (s->touched & 1u << f)
			continue;
		lua_rawgeti(L, keys, f);
		ev_field(s, L, keys, f);
		lua_rawset(L, idx);
		s->touched |= 1u << f;
	}
	/* noted as whole: after its callbacks, dc.emit(ev) writes it as it is */
	if (s->whole_ref == LUA_NOREF) {
		lua_createtable(L, 0, 1);
		lua_createtable(L, 0, 1);
		lua_pushliteral(L, "k");
		lua_setfield(L, -2, "__mode");
		lua_setmetatable(L, -2);
		s->whole_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->whole_ref);
	lua_pushvalue(L, idx);
	lua_pushboolean(L, 1);
	lua_rawset(L, -3);
	lua_settop(L, keys - 1);
}

/* ev's __index(ev, k): an own field not read yet is made from the record, kept in ev
 * (so a string read back unchanged is the one handed out, and ev.args is one table) and
 * returned; one the script set to nil stays nil; other keys are nil. ev of an event whose
 * callbacks have returned has no record behind it: an error naming the field. */
static int ev_index(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	int f = ev_field_of(s, L, 2);
	if (!f)
		return 0;
	if (lua_topointer(L, 1) != s->cur_ev)
		return luaL_error(L, "ev.%s read after that event's callbacks returned (ev is "
				  "filled as they read it: copy the fields to keep)", ev_keys[f]);
	if (s->touched & 1u << f)
		return 0;
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->keys_ref);
	ev_field(s, L, lua_gettop(L), f);
	lua_pushvalue(L, 2);
	lua_pushvalue(L, -2);
	lua_rawset(L, 1);
	s->touched |= 1u << f;
	return 1;
}

/* ev's __newindex(ev, k, v): an own field set (nil included: removed) is marked to be
 * read back; the value goes in ev as any table's would. */
static int ev_newindex(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	int f = ev_field_of(s, L, 2);
	if (f && lua_topointer(L, 1) == s->cur_ev)
		s->touched |= 1u << f;
	lua_settop(L, 3);
	lua_rawset(L, 1);
	return 0;
}

/* next(t, k) for ev's __pairs, as the base library's (which a script may not have). */
static int ev_next(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TTABLE);
	lua_settop(L, 2);
	if (lua_next(L, 1))
		return 2;
	lua_pushnil(L);
	return 1;
}

/* ev's __pairs(ev) (Lua 5.4 manual, pairs): the whole event first (dc_ev_fill), then next. */
static int ev_pairs(lua_State *L)
{
	struct dc_script *s = dc_script_of(L);
	luaL_checktype(L, 1, LUA_TTABLE);
	if (lua_topointer(L, 1) == s->cur_ev)
		dc_ev_fill(s, L, 1);
	lua_pushcfunction(L, ev_next);
	lua_pushvalue(L, 1);
	lua_pushnil(L);
	return 3;
}

/* Pushes ev's metatable, made at the first event: __index, __newindex and __pairs above;
 * __metatable keeps a script from taking or replacing it. */
static void ev_metatable(struct dc_script *s, lua_State *L)
{
	if (s->evmt_ref != LUA_NOREF) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->evmt_ref);
		return;
	}
	static const luaL_Reg mm[] = {
		{ "__index", ev_index }, { "__newindex", ev_newindex }, { "__pairs", ev_pairs },
		{ NULL, NULL },
	};
	lua_createtable(L, 0, 4);
	lua_pushlightuserdata(L, s);
	luaL_setfuncs(L, mm, 1);
	lua_pushliteral(L, "datacrumbs event");
	lua_setfield(L, -2, "__metatable");
	lua_pushvalue(L, -1);
	s->evmt_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* Pushes the `ev` of dc.on_event for record r, empty: its fields are made as the
 * callbacks read them (ev_index), so an event costs what its callbacks look at (an
 * eager table of every field and arg cost ~11,000 instructions per event, bench/HISTORY.md
 * cgcost cbnil). When every callback said reuse = true, one table serves the run: the
 * last event's own fields are taken out of it first, the script's own stay. */
static void push_event(struct dc_script *s, lua_State *L, int keys, struct dc_record *r)
{
	int reuse = s->nreuse == s->ncbs;
	if (reuse && s->ev_ref != LUA_NOREF) {
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->ev_ref);
		for (int f = K_ID; f <= K_ARGS; f++) {
			if (!(s->touched & 1u << f))
				continue;
			lua_rawgeti(L, keys, f);
			lua_pushnil(L);
			lua_rawset(L, -3);
		}
		if (s->touched == EV_ALL && s->whole_ref != LUA_NOREF) { /* not whole now */
			lua_rawgeti(L, LUA_REGISTRYINDEX, s->whole_ref);
			lua_pushvalue(L, -2);
			lua_pushnil(L);
			lua_rawset(L, -3);
			lua_pop(L, 1);
		}
	} else {
		lua_createtable(L, 0, 4);
		ev_metatable(s, L);
		lua_setmetatable(L, -2);
		if (reuse) {
			lua_pushvalue(L, -1);
			s->ev_ref = luaL_ref(L, LUA_REGISTRYINDEX);
		}
	}
	s->cur = r;
	s->cur_ev = lua_topointer(L, -1);
	s->touched = 0;
	s->pu.name = s->pu.cat = s->pu.path = s->pu.path2 = NULL;
}

/* Reads string field `key` (fixed key index) of the event table at t back into *dst
 * (copied into the arena) unless it is still `was`, the Lua string pushed; an empty
 * string, or a value that is not a string, keeps the old one (a name and a cat must not
 * be empty). */
static void read_back_str(lua_State *L, int keys, int t, int key, struct dc_record *r,
			  const char **dst, const char *was, int nil_ok)
{
	lua_rawgeti(L, keys, key);
	lua_rawget(L, t);
	size_t n = 0;
	const char *v = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : NULL;
	if (v && v == was && *dst && !strcmp(v, *dst)) {
		/* unchanged (the address alone is not enough: the string handed out may have
		 * been collected and its memory taken by the one set in its place) */
	} else if (v && (n || nil_ok)) {
		if (*dst == NULL || strcmp(v, *dst)) {
			const char *k = dc_rec_keep(r, v, n);
			if (k)
				*dst = k;
		}
	} else if (nil_ok && lua_isnil(L, -1)) {
		*dst = NULL;
	}
	lua_pop(L, 1);
}

/* Which callbacks want events of r's name and layer: a bit per callback, found by
 * comparing strings once per (name, layer) pair (their pointers are the probe
 * descriptions'), later by their pointers. More than 64 callbacks: compared each time. */
static uint64_t wanted(struct dc_script *s, const struct dc_record *r)
{
	uint64_t mask = 0;
	if (s->ncbs > 64) {
		for (int i = 0; i < s->ncbs; i++)
			mask |= (uint64_t)wants(&s->cbs[i], r) << (i & 63);
		return mask;
	}
	if (2 * (s->wused + 1) > s->wcap)
		s->wslots = grow_slots(s->wslots, &s->wcap, sizeof(*s->wslots), want_rehash);
	size_t j = ptr_hash(r->name, r->cat) & (s->wcap - 1);
	while (s->wslots[j].name && (s->wslots[j].name != r->name || s->wslots[j].cat != r->cat))
		j = (j + 1) & (s->wcap - 1);
	struct want_slot *w = &s->wslots[j];
	if (w->name)
		return w->mask;
	for (int i = 0; i < s->ncbs; i++)
		mask |= (uint64_t)wants(&s->cbs[i], r) << i;
	*w = (struct want_slot){ r->name, r->cat, mask };
	s->wused++;
	return mask;
}

static int script_event(struct dc_script *s, struct dc_record *r);

int dc_script_event(struct dc_script *s, struct dc_record *r)
{
	if (!s->cur)
		return script_event(s, r);
	/* an event inside another's callbacks (a callback that runs the loop, uv.run, whose
	 * profile-interval timer hands counters to the script): the outer ev's state back
	 * after it. The outer ev's table is still on the Lua stack below this one's. */
	struct dc_record *cur = s->cur;
	const void *cur_ev = s->cur_ev;
	unsigned touched = s->touched;
	struct pushed pu = s->pu;
	int ret = script_event(s, r); /* leaves the stack as it found it */
	s->cur = cur, s->cur_ev = cur_ev, s->touched = touched, s->pu = pu;
	return ret;
}

static int script_event(struct dc_script *s, struct dc_record *r)
{
	lua_State *L = s->L;
	uint64_t want = wanted(s, r);
	if (!want)
		return 1;
	/* above base: handler (base + 1), keys (base + 2), event (base + 3); base is 0 but in
	 * an event inside another's callbacks (dc_script_event) */
	int base = lua_gettop(L);
	lua_pushcfunction(L, dc_lua_on_error);
	int keys = push_keys(s, L);
	push_event(s, L, keys, r);
	const struct pushed *pu = &s->pu;
	for (int i = 0; i < s->ncbs; i++) {
		if (!(want >> (i & 63) & 1) || (s->ncbs > 64 && !wants(&s->cbs[i], r)))
			continue;
		lua_rawgeti(L, LUA_REGISTRYINDEX, s->cbs[i].ref);
		lua_pushvalue(L, base + 3);
		dc_trust_enter_script();
		int st = lua_pcall(L, 1, 1, base + 1);
		dc_trust_leave_script();
		if (st != LUA_OK) {
			if (s->errors++ == 0)
				fprintf(stderr, "datacrumbs: error in the event callback (events are "
					"kept unchanged; later errors are only counted): %s\n",
					lua_tostring(L, -1));
			lua_settop(L, base);
			s->cur = NULL, s->cur_ev = NULL;
			return 1;
		}
		if (lua_type(L, -1) == LUA_TBOOLEAN && !lua_toboolean(L, -1)) {
			lua_settop(L, base);
			s->cur = NULL, s->cur_ev = NULL;
			return 0;
		}
		lua_pop(L, 1);
	}
	/* read back only the own fields a callback read or set (ev_index, ev_newindex): the
	 * others are the record's still */
	int t = base + 3;
	unsigned touched = s->touched;
	s->cur = NULL, s->cur_ev = NULL;
	if (touched & 1u << K_NAME)
		read_back_str(L, keys, t, K_NAME, r, &r->name, pu->name, 0);
	if (touched & 1u << K_CAT)
		read_back_str(L, keys, t, K_CAT, r, &r->cat, pu->cat, 0);
	if (touched & 1u << K_PATH)
		read_back_str(L, keys, t, K_PATH, r, &r->path, pu->path, 1);
	if (touched & 1u << K_PATH2)
		read_back_str(L, keys, t, K_PATH2, r, &r->path2, pu->path2, 1);
	/* times: microseconds, ts after 2020 (the format contract), dur not negative, ts + dur
	 * before 2100 (TS_END_US) */
	if (touched & 1u << K_TS) {
		lua_rawgeti(L, keys, K_TS);
		lua_rawget(L, t);
		if (lua_isinteger(L, -1) && lua_tointeger(L, -1) > TS_MIN_US &&
		    lua_tointeger(L, -1) < TS_END_US - (lua_Integer)r->dur_us)
			r->ts_us = lua_tointeger(L, -1);
		lua_pop(L, 1);
	}
	if (touched & 1u << K_DUR) {
		lua_rawgeti(L, keys, K_DUR);
		lua_rawget(L, t);
		if (lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0 &&
		    lua_tointeger(L, -1) < TS_END_US - (lua_Integer)r->ts_us)
			r->dur_us = lua_tointeger(L, -1);
		lua_pop(L, 1);
	}
	if (!(touched & 1u << K_ARGS)) {
		lua_settop(L, base);
		return 1;
	}

	lua_rawgeti(L, keys, K_ARGS);
	lua_rawget(L, t);
	if (lua_istable(L, -1)) {
		/* the call's own args keep their order; a nil drops one */
		int n = 0;
		const char *own[DC_REC_ARGS];
		for (int i = 0; i < r->nargs; i++) {
			struct dc_rec_arg a = r->args[i];
			push_key(s, L, keys, a.key);
			lua_rawget(L, -2);
			if (a.is_str && lua_type(L, -1) == LUA_TSTRING &&
			    lua_tostring(L, -1) == pu->val[i] && !strcmp(pu->val[i], a.s)) {
				r->args[n] = a; /* unchanged */
				own[n++] = pu->key[i];
			} else if (int_only(a.key, L) || read_arg(L, r, &a)) {
				r->args[n] = a;
				own[n++] = pu->key[i];
			}
			lua_pop(L, 1);
		}
		int nown = r->nargs;
		r->nargs = n;
		/* then the args the script added: keys that are not the call's own (an own
		 * key it set to nil is neither) */
		lua_pushnil(L);
		while (lua_next(L, -2) && r->nargs < DC_REC_ARGS) {
			if (lua_type(L, -2) == LUA_TSTRING) {
				const char *k = lua_tostring(L, -2);
				int known = 0; /* the call's own args were read above */
				for (int i = 0; i < nown && !known; i++)
					known = k == pu->key[i];
				for (int i = 0; i < n && !known; i++)
					known = k == own[i] || !strcmp(r->args[i].key, k);
				struct dc_rec_arg a = { .key = NULL };
				if (!known && !reserved_key(k) && !int_only(k, L) &&
				    read_arg(L, r, &a)) {
					a.key = dc_rec_keep(r, k, strlen(k));
					if (a.key)
						r->args[r->nargs++] = a;
				}
			}
			lua_pop(L, 1);
		}
	}
	lua_settop(L, base);
	return 1;
}

/* Fills r from the event-shaped table at index 1 (name, cat, pid, tid, ts, dur, path,
 * path2, args); missing pid/tid/ts default to the traced process, its main thread and now. */
void dc_ev_from_table(lua_State *L, struct dc_script *s, struct dc_record *r)
{
	memset(r, 0, sizeof(*r) - sizeof(r->arena));
	r->p_idx = -1;
	r->name = "event";
	r->cat = "script";
	read_str_field(L, r, "name", &r->name, 0);
	read_str_field(L, r, "cat", &r->cat, 0);
	read_str_field(L, r, "path", &r->path, 1);
	read_str_field(L, r, "path2", &r->path2, 1);
	raw_field(L, -1, "pid");
	r->pid = lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0 ? (int)lua_tointeger(L, -1)
		: s->root_pid;
	raw_field(L, -2, "tid");
	r->tid = lua_isinteger(L, -1) && lua_tointeger(L, -1) > 0 ? (int)lua_tointeger(L, -1)
		: r->pid;
	raw_field(L, -3, "ts");
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	r->ts_us = lua_isinteger(L, -1) && lua_tointeger(L, -1) > TS_MIN_US &&
		   lua_tointeger(L, -1) < TS_END_US
		? (uint64_t)lua_tointeger(L, -1)
		: (uint64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
	raw_field(L, -4, "dur");
	r->dur_us = lua_isinteger(L, -1) && lua_tointeger(L, -1) >= 0 &&
		    lua_tointeger(L, -1) < TS_END_US - (lua_Integer)r->ts_us ? lua_tointeger(L, -1) : 0;
	lua_pop(L, 4);
	raw_field(L, -1, "args");
	if (lua_istable(L, -1)) {
		lua_pushnil(L);
		while (lua_next(L, -2) && r->nargs < DC_REC_ARGS) {
			struct dc_rec_arg a = { .key = NULL };
			if (lua_type(L, -2) == LUA_TSTRING && !reserved_key(lua_tostring(L, -2)) &&
			    !int_only(lua_tostring(L, -2), L) && read_arg(L, r, &a)) {
				const char *k = lua_tostring(L, -2);
				a.key = dc_rec_keep(r, k, strlen(k));
				if (a.key)
					r->args[r->nargs++] = a;
			}
			lua_pop(L, 1);
		}
	}
	lua_pop(L, 1);
}
