/* lua_script.h: the state of a script's Lua run, shared by lua_api.c (the state and the
 * `datacrumbs` module) and lua_event.c (an event's way through the callbacks); internal. */
#ifndef DC_LUA_SCRIPT_H
#define DC_LUA_SCRIPT_H

#include <stdint.h>
#include <lua.h>
#include "lua_api.h"
#include "record.h"

struct key_slot;
struct want_slot;

/* The event table's own keys, at these indices of the keys table. */
enum ev_key { K_ID = 1, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_LEVEL, K_P_IDX, K_PH,
	      K_PATH, K_PATH2, K_ARGS, K_PH_C, K_PH_X, K_NFIXED };

/* The touched bits (struct dc_script) of an ev with every own field in it. */
#define EV_ALL (((1u << (K_ARGS + 1)) - 1) & ~1u)

/* The Lua strings handed to the callbacks (ev_field), to tell an unchanged field from a
 * changed one when reading the event back. */
struct pushed {
	const char *name, *cat, *path, *path2;
	const char *key[DC_REC_ARGS], *val[DC_REC_ARGS];
};

/* One dc.on_event callback and the events it wants. */
struct callback {
	int ref;                    /* the function, in the registry */
	char cat[32];               /* only this layer ("" any) */
	char **names;               /* only these events (NULL: any): the filter's names, then
				       the ones they are traced as (filter_names) */
	int nnames;
	int asked;                  /* names[0, asked) are the filter's own */
	int reuse;                  /* filter.reuse: it keeps no ev past its call */
	char where[128];            /* "script.lua:12", the on_event call, for messages */
};

struct dc_script {
	lua_State *L;
	struct dc_probe_req *reqs;
	int nreqs;
	struct dc_layer **layers;   /* loaded probe descriptions, freed at the end */
	int nlayers;
	struct callback *cbs;       /* dc.on_event callbacks, in registration order */
	int ncbs;
	char **drops;               /* dc.drop_paths prefixes, applied in C before any callback */
	size_t droplen[64];         /* their lengths */
	int ndrops;
	struct { const char *path; int drop; } dmemo[64]; /* dc_script_drops_path_run's
				       answers by path address; cleared when prefixes are added */
	int end_ref;                /* dc.on_end's function, LUA_NOREF: none */
	int live;                   /* the script required luv: its timers and I/O run while
				       the command does, so its events are decoded live */
	unsigned long errors;
	int started;                /* the script has run: dc.probe is closed */
	int done, done_code;        /* dc.done was called, with this exit status */
	dc_emit_fn emit;            /* where dc.emit's records go, NULL before tracing */
	void *emit_ctx;
	struct dc_record *emit_rec; /* scratch record for dc.emit */
	int root_pid;               /* the traced root process: emitted events' default pid */
	dc_stats_fn stats;          /* what dc.stats reads, NULL before tracing */
	void *stats_ctx;
	int proc_ref;               /* dc.on_process's function, LUA_NOREF: none */
	dc_read_fn reader;          /* what dc.aggregates/dc.totals read, NULL before tracing */
	void *reader_ctx;
	int mode;                   /* dc.mode's DC_MODE_*, 0: not called */
	uint64_t interval_ns;       /* dc.mode's interval, 0: not given */
	const struct dc_run_info *info;
	/* the event path's pre-made strings (push_key): a registry table of Lua strings,
	 * the fixed keys first (enum ev_key), then each name, layer and arg key by the C
	 * pointer the consumer hands in (probe descriptions and literals: they live as long
	 * as the run); and which callbacks want each (name, layer) pair (wanted) */
	int keys_ref;
	int nkeys;
	struct key_slot *kslots;    /* open addressing by pointer, kcap slots */
	size_t kcap, kused;
	struct want_slot *wslots;   /* open addressing by (name, cat) pointers, wcap slots */
	size_t wcap, wused;
	int nreuse;                 /* callbacks that asked for reuse = true */
	int ev_ref, args_ref;       /* the reused ev and ev.args tables (LUA_NOREF: none yet) */
	/* the event in the callbacks' hands (dc_script_event), which ev's metamethods fill
	 * ev from, field by field as the script reads them (ev_index): its record, its table
	 * (NULL between events: ev of an event whose callbacks returned), bit K_* for each own
	 * field a callback read or set (only those are read back), the Lua strings handed
	 * out, and the Lua strings of the fixed keys (an interned short string has one
	 * address: a key is told by its address) */
	struct dc_record *cur;
	const void *cur_ev;
	unsigned touched;
	struct pushed pu;
	const char *fixed[K_NFIXED];
	int evmt_ref;               /* ev's metatable (ev_metatable), LUA_NOREF: not made yet */
	int whole_ref;              /* weak-keyed set of the ev tables with every own field in
				       (dc_ev_fill): dc.emit takes those after their callbacks */
};

/* The script a `datacrumbs` module function belongs to: its upvalue 1 (open_module). */
static inline struct dc_script *dc_script_of(lua_State *L)
{
	return lua_touserdata(L, lua_upvalueindex(1));
}

/* The message handler of every protected call (lua_api.c): the error's own "file:line:
 * message" on one line; an error object that is not a string gets the position of the
 * code that raised it. Returns 1 (the message). */
int dc_lua_on_error(lua_State *L);

/* Puts every own field of the event in the callbacks' hands (s->cur) into the ev table at
 * idx (lua_event.c), and records the table as read whole: pairs(ev) and dc.emit(ev). */
void dc_ev_fill(struct dc_script *s, lua_State *L, int idx);

/* Fills r from the event-shaped table at index 1 (name, cat, pid, tid, ts in us since the
 * epoch, dur in us, path, path2, args), for dc.emit and dc.counter (lua_event.c); missing pid,
 * tid and ts default to the traced process, its main thread and now; a ts outside
 * 2020-2100, a string in an integer arg of the format contract, and the reserved keys
 * are not taken. */
void dc_ev_from_table(lua_State *L, struct dc_script *s, struct dc_record *r);

#endif
