/* session.h: one `datacrumbs run`: script, probes, the traced command's life (start
 * before its first instruction, signals, exit status), the event loop, the trace's end. */
#ifndef DC_SESSION_H
#define DC_SESSION_H

#include "cli.h"

/* Exit status of datacrumbs itself failing before or while tracing (as timeout(1)). */
#define DC_EXIT_FAIL 125

/* Runs `datacrumbs run` with the parsed options. Returns the exit status: CMD's (128+N for signal N, 127 if it could not be
 * executed), 0 for a -p run, DC_EXIT_FAIL when datacrumbs itself failed. */
int dc_session_run(const struct dc_opts *o);

#endif
