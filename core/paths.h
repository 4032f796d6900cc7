/* paths.h: where datacrumbs' data directories (scripts, probes, lua) are at run time:
 * beside the running binary when it is installed, else the configure-time directories. */
#ifndef DC_PATHS_H
#define DC_PATHS_H

#include <stddef.h>

enum dc_dir {
	DC_DIR_SCRIPTS = 0, /* <prefix>/share/datacrumbs/scripts */
	DC_DIR_PROBES,      /* <prefix>/share/datacrumbs/probes */
	DC_DIR_LUA,         /* <prefix>/share/datacrumbs/lua */
};

/* The installed directory `which`: <dir of /proc/self/exe>/../share/datacrumbs/<sub> when
 * the running binary sits in a bin/ directory beside such a directory (an installed
 * prefix, wherever it was moved or installed with --prefix), else the configure-time
 * DC_SCRIPTS_DIR / DC_PROBES_DIR / DC_LUA_DIR. The string is static, computed once. */
const char *dc_data_dir(enum dc_dir which);

/* The source tree's directory for `which` (DC_SOURCE_DIR "/scripts", "/probes", "/lua"),
 * the last place a build-tree binary looks. */
const char *dc_source_dir(enum dc_dir which);

/* Walks the directories scripts are looked for in, in order: each element of
 * $DATACRUMBS_SCRIPT_PATH (':'-separated; empty ones too, len 0), then
 * dc_data_dir(DC_DIR_SCRIPTS), then dc_source_dir(DC_DIR_SCRIPTS). Calls fn with the
 * directory (len bytes of dir, not NUL-terminated), where it comes from
 * ("$DATACRUMBS_SCRIPT_PATH", "installed", "source tree") and arg. Stops at the first
 * nonzero return of fn and returns it; 0 when fn always returned 0. Used by
 * `datacrumbs run`'s script lookup and by `datacrumbs list`, so both see one order. */
int dc_script_path_each(int (*fn)(const char *dir, size_t len, const char *origin, void *arg),
			void *arg);

#endif
