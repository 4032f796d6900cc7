/* pytools.h: `datacrumbs convert`, `report`, `summary` and `validate`: the Python tools
 * shipped with datacrumbs, run with the configured interpreter. */
#ifndef DC_PYTOOLS_H
#define DC_PYTOOLS_H

/* Whether `cmd` is one of the Python tools' commands. */
int dc_pytool_is(const char *cmd);

/* Execs the tool of argv[0] with argv[1..]; returns only on failure (125). */
int dc_pytool_main(int argc, char **argv);

/* Runs `datacrumbs summary TRACE` with its output on stderr and waits for it (signals
 * unblocked in it); returns its exit status, or -1. */
int dc_pytool_summary(const char *trace);

#endif
