/* trust.h: who datacrumbs runs for (the invoking user, also under sudo) and which files a
 * root run may read code from (owner and mode checks, as ssh's StrictModes). */
#ifndef DC_TRUST_H
#define DC_TRUST_H

#include <stddef.h>
#include <sys/types.h>

/* The user on whose behalf this run works. */
struct dc_invoker {
	uid_t uid;          /* SUDO_UID under sudo, else the real uid */
	gid_t gid;          /* SUDO_GID under sudo, else the real gid */
	int root;           /* effective uid 0: files with code must pass dc_trust_* */
	int sudo;           /* real uid 0 and SUDO_UID set: started through sudo(8) */
	char name[64];      /* SUDO_USER under sudo, else the passwd name of uid ("?") */
};

/* The invoking user, computed once: under sudo (real uid 0 and a numeric SUDO_UID in the
 * environment, sudo(8) "ENVIRONMENT") the sudo caller, else the real uid and gid. Never
 * fails; the pointer is static. */
const struct dc_invoker *dc_invoker(void);

/* Forgets the computed invoker: the next dc_invoker() looks again. For a child that has
 * changed user (site mode's script runs): it is then that user, not root. */
void dc_invoker_reset(void);

/* As root (dc_invoker()->root), checks that code may be read from file `path`: the file
 * and every directory above it (after resolving symlinks) are owned by root or the
 * invoking user; the file is a regular file not writable by group or others; a directory
 * is not writable by group or others unless it has the sticky bit (as /tmp: nobody can
 * replace another's entry there). `what` names the file in messages ("script").
 * Not root: only resolves. On success, 0 with the resolved path in real (reallen bytes,
 * may be NULL); else -1 and one line in err naming the file and the reason. */
int dc_trust_file(const char *path, const char *what, char *real, size_t reallen,
		  char *err, size_t errlen);

/* As root, checks a directory that names are looked up in (a search path entry): owned by
 * root or the invoking user, not writable by group or others, sticky or not (anyone could
 * plant a new name in it), and its parents as in dc_trust_file. A missing directory
 * passes (nothing can be found there). Not root: 0. Returns 0, or -1 with err. */
int dc_trust_search_dir(const char *dir, const char *what, char *err, size_t errlen);

/* Around every run of script code (its top level, each callback, each luv callback;
 * nesting counted): under sudo, file system access takes the invoking user's rights:
 * setfsuid(2)/setfsgid(2) to SUDO_UID/SUDO_GID, which also drops CAP_DAC_OVERRIDE and the
 * other file capabilities from the effective set (capabilities(7) "Effect of user ID
 * changes on capabilities"); leaving restores root's. So a user's script opens only what
 * the user could (not /proc/self/mem of the tracer, not /etc); the BPF calls are not file
 * accesses and keep working. The consumer resolves traced paths (symlinks) inside them
 * too. A no-op unless root under sudo. */
void dc_trust_enter_script(void);
void dc_trust_leave_script(void);

/* 1 when dc_trust_enter_script changes the fs ids (root, started through sudo by a user
 * other than root), else 0. */
int dc_trust_switches(void);

/* fn(as_user, arg) is called after each switch of the fs ids: 1 to the invoking user's,
 * 0 back to root's (lua_api.c stops Lua's collector while they are root's); NULL: none. */
void dc_trust_on_switch(void (*fn)(int as_user, void *arg), void *arg);

/* A batch of script runs (the event callbacks of one drain of the ring buffers): inside
 * it, leaving script code keeps the invoking user's fs ids, so that the next callback
 * enters with no system call (the four of a switch and back were ~7 us per event:
 * bench/HISTORY.md, cbcost under sudo); dc_trust_release puts root's back when the code
 * between two callbacks needs them (a process's exec, fork or exit record: its /proc
 * files), dc_trust_batch_end at the batch's end. The code between the callbacks runs with
 * the user's fs ids, never more than root's. Main thread only; no-ops unless root under
 * sudo. */
void dc_trust_batch_begin(void);
void dc_trust_release(void);
void dc_trust_batch_end(void);

/* Loads the Lua chunk of file `path` (a trusted, resolved path from dc_trust_file) as text
 * ("t": no bytecode), named `name` in messages ("@name"), read through one descriptor
 * opened O_NOFOLLOW: what was checked is what runs. A first line starting with '#' is
 * skipped as luaL_loadfilex does. Returns a lua_load status; the error message is pushed
 * on failure, the chunk on success. */
struct lua_State;
int dc_trust_load(struct lua_State *L, const char *path, const char *name);

/* Lua shortens a long chunk name in its messages to "...its end" (LUA_IDSIZE, 60 bytes,
 * luaconf.h): msg with such a start given back the full name of a chunk dc_trust_load
 * loaded, in buf (len bytes); else msg itself. */
const char *dc_trust_full_name(const char *msg, char *buf, size_t len);

#endif
