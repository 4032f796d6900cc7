/* pytools.c: `datacrumbs convert|report|summary|validate ARGS` exec the Python tools
 * shipped with datacrumbs: $DATACRUMBS_PYTHON (default: the interpreter found at configure
 * time, DC_PYTHON) on <prefix>/share/datacrumbs/python/... when installed (beside
 * bin/datacrumbs), else on the source tree's python/ and scripts/ files. */
#include "pytools.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* file: under share/datacrumbs/python when installed; src: in the source tree */
static const struct { const char *cmd, *file, *src; } tools[] = {
	{ "convert", "datacrumbs/chrome.py", "python/datacrumbs/chrome.py" },
	{ "report", "datacrumbs/report.py", "python/datacrumbs/report.py" },
	{ "summary", "pfw_summary.py", "scripts/pfw_summary.py" },
	{ "validate", "pfw_validate.py", "scripts/pfw_validate.py" },
};

int dc_pytool_is(const char *cmd)
{
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (!strcmp(cmd, tools[i].cmd))
			return 1;
	return 0;
}

/* The installed python directory: <prefix>/share/datacrumbs/python beside an installed
 * binary; "" for a build tree's binary (then the source tree's files are run). */
static void python_dir(char *out, size_t n)
{
	char exe[PATH_MAX];
	struct stat st;
	out[0] = 0;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return;
	exe[len] = 0;
	char *s = strrchr(exe, '/');
	if (!s)
		return;
	*s = 0;
	s = strrchr(exe, '/');
	if (!s || strcmp(s + 1, "bin"))
		return;
	*s = 0;
	char cand[PATH_MAX];
	int w = snprintf(cand, sizeof(cand), "%s/share/datacrumbs/python", exe);
	if (w > 0 && (size_t)w < sizeof(cand) && (size_t)w < n && stat(cand, &st) == 0 &&
	    S_ISDIR(st.st_mode))
		snprintf(out, n, "%s", cand);
}

int dc_pytool_main(int argc, char **argv)
{
	const char *file = NULL, *src = NULL;
	for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (!strcmp(argv[0], tools[i].cmd)) {
			file = tools[i].file;
			src = tools[i].src;
		}
	if (!file)
		return 125;
	char dir[PATH_MAX], script[PATH_MAX + 64];
	python_dir(dir, sizeof(dir));
	if (dir[0])
		snprintf(script, sizeof(script), "%s/%s", dir, file);
	else
		snprintf(script, sizeof(script), "%s/%s", DC_SOURCE_DIR, src);
	const char *py = getenv("DATACRUMBS_PYTHON");
	if (!py || !*py)
		py = DC_PYTHON;
	char **args = calloc(argc + 2, sizeof(char *));
	if (!args)
		return 125;
	args[0] = (char *)py;
	args[1] = script;
	for (int i = 1; i < argc; i++)
		args[i + 1] = argv[i];
	execvp(py, args);
	fprintf(stderr, "datacrumbs %s: cannot run %s (set DATACRUMBS_PYTHON): %m\n", argv[0], py);
	free(args);
	return 125;
}

int dc_pytool_summary(const char *trace)
{
	fflush(stderr);
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(2, 1);
		char *argv[] = { "summary", (char *)trace, NULL };
		_exit(dc_pytool_main(2, argv));
	}
	int st;
	while (waitpid(p, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
