/* siteconf.c: the site's policy for site mode, read from a root-owned file, trusted only
 * when nobody but root could have written it or the directories it names. */
#include "siteconf.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trust.h"

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	char *e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' || e[-1] == '\r'))
		*--e = 0;
	return s;
}

static int yes_no(const char *v)
{
	return !strcmp(v, "yes") ? 1 : !strcmp(v, "no") ? 0 : -1;
}

int dc_site_load(const char *path, struct dc_site *site, char *err, size_t errlen)
{
	memset(site, 0, sizeof(*site));
	int given = path != NULL;
	snprintf(site->path, sizeof(site->path), "%s", given ? path : DC_SITE_CONF);
	if (!given && access(site->path, F_OK) && errno == ENOENT)
		return 0; /* no site file: the defaults */
	char real[PATH_MAX];
	site->found = 1;
	if (dc_trust_file(site->path, "site configuration", real, sizeof(real), err, errlen))
		return -1;
	FILE *f = fopen(real, "re");
	if (!f) {
		snprintf(err, errlen, "%s: %s", site->path, strerror(errno));
		return -1;
	}
	char line[PATH_MAX + 64];
	int ln = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		char *s = trim(line);
		if (!*s)
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s:%d: expected 'key = value'", site->path, ln);
			goto fail;
		}
		*eq = 0;
		char *k = trim(s), *v = trim(eq + 1);
		if (!strcmp(k, "scripts") || !strcmp(k, "probes")) {
			char *dst = k[0] == 's' ? site->scripts : site->probes;
			if (v[0] != '/' || strlen(v) >= PATH_MAX) {
				snprintf(err, errlen, "%s:%d: %s must be an absolute directory path",
					 site->path, ln, k);
				goto fail;
			}
			char derr[PATH_MAX + 256];
			if (dc_trust_search_dir(v, k[0] == 's' ? "site scripts directory"
						: "site probes directory", derr, sizeof(derr))) {
				snprintf(err, errlen, "%s:%d: %s", site->path, ln, derr);
				goto fail;
			}
			snprintf(dst, PATH_MAX, "%s", v);
		} else if (!strcmp(k, "user_scripts") || !strcmp(k, "user_uprobes")) {
			int b = yes_no(v);
			if (b < 0) {
				snprintf(err, errlen, "%s:%d: %s must be yes or no, not '%s'",
					 site->path, ln, k, v);
				goto fail;
			}
			*(k[5] == 's' ? &site->user_scripts : &site->user_uprobes) = b;
		} else {
			snprintf(err, errlen, "%s:%d: unknown key '%s' (scripts, probes, "
				 "user_scripts, user_uprobes)", site->path, ln, k);
			goto fail;
		}
	}
	fclose(f);
	return 0;
fail:
	fclose(f);
	return -1;
}
