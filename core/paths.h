/* paths.h: where datacrumbs' data directories (scripts, probes, lua) are at run time:
 * beside the running binary when it is installed, else the configure-time directories. */
#ifndef DC_PATHS_H
#define DC_PATHS_H

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

#endif
