/* list.h: `datacrumbs list`: the scripts on the search path with their descriptions and
 * origins, and `list --functions LIB:GLOB`: the functions a glob selects in an ELF file. */
#ifndef DC_LIST_H
#define DC_LIST_H

#include <stddef.h>
#include <stdio.h>

/* The `list` command; argv[0] is "list". Returns the exit status: 0, 1 when nothing was
 * found (no such library, no function matches), 2 on a usage error. */
int dc_list_main(int argc, char **argv);

/* The script search path in dc_script_find's order, as directories: each directory of
 * $DATACRUMBS_SCRIPT_PATH, then the installed scripts directory, then the source tree's
 * scripts/. Calls fn(dir, origin, arg) for each (origin: "$DATACRUMBS_SCRIPT_PATH",
 * "installed", "source tree"); a directory already given (same real path) is skipped. */
void dc_script_dirs(void (*fn)(const char *dir, const char *origin, void *arg), void *arg);

/* The one-line description of a script: its first line, "-- name.lua: description",
 * without the "-- name.lua: " (or just "-- ") prefix. Writes "" when the first line is
 * not a comment. Returns 0, or -1 when the file cannot be read. */
int dc_script_description(const char *path, char *out, size_t outlen);

/* Finds an ELF file by what a user types: a path (has a '/'); else a library name
 * ("libc.so.6", "libz.so") as /bin/sh loads it (dc_elf_find_library), else in
 * $LD_LIBRARY_PATH and the standard library directories (an exact name, then the first
 * name starting with it, e.g. "libz.so" finds libz.so.1); else a command in $PATH.
 * Returns 0 with the real path in out, -1 with err. */
int dc_find_elf(const char *name, char *out, size_t outlen, char *err, size_t errlen);

/* Prints the functions of an ELF file that a glob selects, sorted by name, with their
 * file offsets (what a uprobe attaches at). spec: "FILE:GLOB", or "FILE" for all of them;
 * FILE as dc_find_elf takes it. Returns 0, 1 when nothing matches or FILE is not found. */
int dc_list_functions(const char *spec, FILE *out);

#endif
