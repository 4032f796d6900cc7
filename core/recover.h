/* recover.h: `datacrumbs recover SPOOL`, the trace of a killed run written from its
 * spool (core/spool.h). */
#ifndef DC_RECOVER_H
#define DC_RECOVER_H

/* `datacrumbs recover SPOOL [-o TRACE] [--keep] [-q]` (argv[0] is "recover"): writes the
 * trace from the spool a killed run left, marked incomplete, then removes the spool
 * (not with --keep). Returns the exit status: 0, 1 on failure (one line on stderr naming
 * the spool or the trace), 2 on a usage error. */
int dc_recover_main(int argc, char **argv);

#endif
