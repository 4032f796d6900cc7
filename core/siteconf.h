/* siteconf.h: the site's policy for site mode (/etc/datacrumbs/site.conf): which scripts
 * and probe descriptions users get, and whether they may bring their own. */
#ifndef DC_SITECONF_H
#define DC_SITECONF_H

#include <limits.h>
#include <stddef.h>

#define DC_SITE_CONF "/etc/datacrumbs/site.conf"

struct dc_site {
	char path[PATH_MAX];      /* the file read */
	char scripts[PATH_MAX];   /* `scripts`: the site's scripts directory, "" none */
	char probes[PATH_MAX];    /* `probes`: extra probe descriptions, "" none */
	int user_scripts;         /* `user_scripts = yes`: a user may name a script by path */
	int user_uprobes;         /* `user_uprobes = yes`: dc.uprobe in users' scripts */
	int found;                /* the file exists (0: the defaults, no file) */
};

/* Reads the site configuration `path` (NULL: DC_SITE_CONF; a missing default file means
 * the defaults: installed scripts only, no user scripts, no user uprobes). The file must
 * pass dc_trust_file (root-owned, not writable by group or others, nor any directory
 * above it); so must the `scripts` and `probes` directories (dc_trust_search_dir).
 * Lines are `key = value`, `#` starts a comment; keys: scripts, probes (absolute paths),
 * user_scripts, user_uprobes (yes or no). Returns 0, or -1 with "FILE:LINE: reason" in
 * err (an unknown key, a bad value, a relative path, a refused file or directory). */
int dc_site_load(const char *path, struct dc_site *site, char *err, size_t errlen);

#endif
