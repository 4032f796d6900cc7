/* outfile.h: the trace file's name (-o DIR or FILE) and its creation, safe as root in a
 * directory other users can write: never through a symlink, never over another's file. */
#ifndef DC_OUTFILE_H
#define DC_OUTFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Where the trace goes, as -o gave it (NULL: the current directory). */
struct dc_outspec {
	const char *output;  /* -o PATH or NULL */
	int compress;        /* 1: .pfw.gz, 0: .pfw (--no-compress) */
	int force;           /* --force: replace an existing trace file of the invoking user */
	int group_readable;  /* --group-readable: mode 0640 instead of 0600 */
};

/* The trace file path: -o DIR (an existing directory) -> DIR/<exec>-<host>-<pid>.pfw[.gz]
 * (exec is a basename); -o FILE (a name ending in .pfw.gz, or .pfw with --no-compress) ->
 * FILE. Refuses, with one line in err: a FILE of the wrong suffix, a missing directory, a
 * target that exists and is not a regular file (FIFO, device, socket, symlink: nothing is
 * opened, so nothing can block), an existing file without --force (or with --force, one
 * not owned by the invoking user or with other links), an unwritable directory. Called
 * before anything is attached, and again once the pid is known. 0, or -1 with err. */
int dc_out_path(const struct dc_outspec *o, const char *exec, const char *host, int pid,
		char *out, size_t outlen, char *err, size_t errlen);

/* Creates the trace file `path` (from dc_out_path) with O_CREAT|O_EXCL|O_NOFOLLOW, so a
 * name planted since (a symlink, a file) is never followed or truncated; with --force an
 * existing regular file of the invoking user is unlinked first. Mode 0600 (0640 with
 * group_readable), owner uid/gid (the invoking user, trust.h). Returns the fd (close-on-exec)
 * or -1 with one line in err. open(2) O_EXCL: "If O_CREAT and O_EXCL are set, open() fails
 * if the file exists ... symbolic links are not followed". */
int dc_out_create(const struct dc_outspec *o, const char *path, uid_t uid, gid_t gid,
		  char *err, size_t errlen);

#endif
