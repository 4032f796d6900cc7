/* paths.c: where datacrumbs' data directories are at run time: resolved from
 * /proc/self/exe (<prefix>/bin/../share/datacrumbs/...), else the configure-time ones. */
#include "paths.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const char *const subdirs[] = { "scripts", "probes", "lua" };
static const char *const configured[] = { DC_SCRIPTS_DIR, DC_PROBES_DIR, DC_LUA_DIR };
static const char *const in_source[] = { DC_SOURCE_DIR "/scripts", DC_SOURCE_DIR "/probes",
					 DC_SOURCE_DIR "/lua" };

const char *dc_data_dir(enum dc_dir which)
{
	static char dirs[3][PATH_MAX];
	static int done[3];
	if ((unsigned)which > DC_DIR_LUA)
		return NULL;
	if (done[which])
		return dirs[which];
	done[which] = 1;
	snprintf(dirs[which], PATH_MAX, "%s", configured[which]);

	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return dirs[which];
	exe[n] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return dirs[which];
	*slash = 0;                         /* exe: the binary's directory */
	slash = strrchr(exe, '/');
	if (!slash || strcmp(slash + 1, "bin"))
		return dirs[which];         /* not an installed layout (a build tree) */
	*slash = 0;                         /* exe: the prefix */
	char cand[PATH_MAX + 64], real[PATH_MAX];
	struct stat st;
	snprintf(cand, sizeof(cand), "%s/share/datacrumbs/%s", exe, subdirs[which]);
	if (stat(cand, &st) == 0 && S_ISDIR(st.st_mode) && realpath(cand, real))
		snprintf(dirs[which], PATH_MAX, "%s", real);
	return dirs[which];
}

const char *dc_source_dir(enum dc_dir which)
{
	return (unsigned)which > DC_DIR_LUA ? NULL : in_source[which];
}

int dc_script_path_each(int (*fn)(const char *dir, size_t len, const char *origin, void *arg),
			void *arg)
{
	const char *cur = getenv("DATACRUMBS_SCRIPT_PATH"), *d, *inst, *src;
	size_t len;
	int r;

	/* "while (*dirs)": an empty variable, or its trailing ':', names nothing */
	while ((d = dc_list_next(&cur, ":", &len)))
		if (*d && (r = fn(d, len, "$DATACRUMBS_SCRIPT_PATH", arg)))
			return r;
	inst = dc_data_dir(DC_DIR_SCRIPTS);
	if ((r = fn(inst, strlen(inst), "installed", arg)))
		return r;
	src = dc_source_dir(DC_DIR_SCRIPTS);
	return fn(src, strlen(src), "source tree", arg);
}
