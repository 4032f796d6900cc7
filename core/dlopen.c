/* dlopen.c: libraries loaded at run time: which requests wait for a library, the files a
 * traced process maps that they name, resolved and attached once per file. */
#define _GNU_SOURCE
#include "dlopen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

/* A file attached for a request: its device and inode (as /proc/PID/maps shows them). */
struct done {
	int req;
	dev_t dev;
	ino_t ino;
};

struct dc_dlopen {
	struct dc_bpf *b;
	const struct dc_probe_req *reqs;
	int nreqs;
	struct dc_sysset claimed;
	int quiet;
	int *waiting; /* request indexes */
	int nwaiting;
	struct done *done;
	int ndone, capdone;
};

struct dc_dlopen *dc_dlopen_new(struct dc_bpf *b, const struct dc_probe_req *reqs, int n,
				const struct dc_sysset *claimed, int quiet)
{
	struct dc_dlopen *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->waiting = calloc(n > 0 ? n : 1, sizeof(int));
	if (!d->waiting) {
		free(d);
		return NULL;
	}
	d->b = b;
	d->reqs = reqs;
	d->nreqs = n;
	d->claimed = *claimed;
	d->quiet = quiet;
	return d;
}

void dc_dlopen_wait_for(struct dc_dlopen *d, int i)
{
	for (int k = 0; k < d->nwaiting; k++)
		if (d->waiting[k] == i)
			return;
	if (i >= 0 && i < d->nreqs)
		d->waiting[d->nwaiting++] = i;
}

int dc_dlopen_waiting(const struct dc_dlopen *d)
{
	return d ? d->nwaiting : 0;
}

static int is_done(const struct dc_dlopen *d, int req, dev_t dev, ino_t ino)
{
	for (int i = 0; i < d->ndone; i++)
		if (d->done[i].req == req && d->done[i].dev == dev && d->done[i].ino == ino)
			return 1;
	return 0;
}

static int add_done(struct dc_dlopen *d, int req, dev_t dev, ino_t ino)
{
	if (d->ndone == d->capdone) {
		int cap = d->capdone ? 2 * d->capdone : 16;
		struct done *n = realloc(d->done, cap * sizeof(*n));
		if (!n)
			return -1;
		d->done = n;
		d->capdone = cap;
	}
	d->done[d->ndone++] = (struct done){ req, dev, ino };
	return 0;
}

/* The name to open the file `path` process pid maps at `range` ("start-end" of its maps
 * line) as, device dev, inode ino: /proc/PID/map_files/RANGE where it can be opened (root:
 * a link to the very file mapped there, which no rename of the path can swap between
 * reading its symbols and attaching to it, proc(5)); else the path itself when the
 * process shares our root and the path still is that file, else the path under
 * /proc/PID/root (another mount namespace, a chroot). Returns 0, or -1 when none is that
 * file any more (replaced, deleted). */
static int file_name(int pid, const char *range, const char *path, dev_t dev, ino_t ino,
		     char *out, size_t outlen)
{
	struct stat st, r1, r2;
	char root[64];
	snprintf(out, outlen, "/proc/%d/map_files/%s", pid, range);
	int fd = open(out, O_RDONLY | O_CLOEXEC);
	int same = fd >= 0 && !fstat(fd, &st) && st.st_dev == dev && st.st_ino == ino;
	if (fd >= 0)
		close(fd);
	if (same)
		return 0;
	snprintf(root, sizeof(root), "/proc/%d/root", pid);
	if (!stat("/", &r1) && !stat(root, &r2) && r1.st_dev == r2.st_dev &&
	    r1.st_ino == r2.st_ino && !stat(path, &st) && st.st_dev == dev &&
	    st.st_ino == ino) {
		snprintf(out, outlen, "%s", path);
		return 0;
	}
	snprintf(out, outlen, "%s%s", root, path);
	return !stat(out, &st) && st.st_dev == dev && st.st_ino == ino ? 0 : -1;
}

struct add_ctx {
	struct dc_bpf *b;
	int added;
	int full;
};

/* dc_resolve_fn: one function of the new library into the probe table. */
static int add_one(const struct dc_resolved *p, void *arg)
{
	struct add_ctx *c = arg;
	if (dc_bpf_add_probe(c->b, p->layer, p->func, p->where, p->offset, p->hidden) < 0) {
		c->full = 1;
		return 1;
	}
	c->added += !p->hidden;
	return 0;
}

/* The process's command name (/proc/PID/comm), for messages. */
static void comm_of(int pid, char *out, size_t outlen)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	FILE *f = fopen(path, "r");
	if (!f || !fgets(out, (int)outlen, f))
		snprintf(out, outlen, "?");
	out[strcspn(out, "\n")] = 0;
	if (f)
		fclose(f);
}

/* Resolves and attaches waiting request ri in the file process pid mapped: opened as
 * `name` (file_name), said as `file` (its path in the process's maps). */
static int attach_file(struct dc_dlopen *d, int ri, int pid, const char *name, const char *file,
		       const char *late)
{
	const struct dc_probe_req *r = &d->reqs[ri];
	char err[PATH_MAX + 256], comm[32];
	struct add_ctx c = { d->b, 0, 0 };
	comm_of(pid, comm, sizeof(comm));
	int e = dc_resolve_file(r, &d->claimed, name, file, add_one, &c, err, sizeof(err));
	if (e < 0 || c.full) {
		fprintf(stderr,
			"datacrumbs: warning: process %d (%s) loaded %s: layer %s cannot be "
			"probed there (%s): not traced in it\n",
			pid, comm, file, r->layer->name,
			c.full ? "too many probes (65536 functions at most)" : err);
		return 0;
	}
	if (!c.added)
		return 0;
	int n = dc_bpf_attach(d->b, err, sizeof(err));
	if (n < 0) {
		fprintf(stderr,
			"datacrumbs: warning: process %d (%s) loaded %s: layer %s cannot be "
			"attached there (%s): not traced in it\n",
			pid, comm, file, r->layer->name, err);
		return c.added;
	}
	if (late)
		fprintf(stderr,
			"datacrumbs: warning: process %d (%s) loaded %s before its probes "
			"could be attached (%s): layer %s attached late, its calls until now "
			"are not traced\n",
			pid, comm, file, late, r->layer->name);
	else if (!d->quiet)
		fprintf(stderr,
			"datacrumbs: process %d (%s) loaded %s: layer %s attached (%d "
			"functions) before any of its code ran\n",
			pid, comm, file, r->layer->name, n);
	return c.added;
}

int dc_dlopen_scan(struct dc_dlopen *d, int pid, const char *late)
{
	if (!d || !d->nwaiting)
		return 0;
	char path[64], line[PATH_MAX + 256];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0; /* it has exited: nothing to attach for it */
	int added = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		int at = 0;
		char range[64];
		/* "start-end perms offset MAJ:MIN inode   path" (proc(5)) */
		if (sscanf(line, "%63s %*s %*s %x:%x %llu %n", range, &maj, &min, &ino, &at) !=
			    4 ||
		    !ino || line[at] != '/')
			continue;
		char *file = line + at;
		file[strcspn(file, "\n")] = 0;
		dev_t dev = makedev(maj, min);
		for (int k = 0; k < d->nwaiting; k++) {
			int ri = d->waiting[k];
			if (is_done(d, ri, dev, (ino_t)ino) ||
			    !dc_resolve_matches(&d->reqs[ri], file))
				continue;
			if (add_done(d, ri, dev, (ino_t)ino))
				continue;
			char name[PATH_MAX + 64];
			if (file_name(pid, range, file, dev, (ino_t)ino, name, sizeof(name))) {
				fprintf(stderr,
					"datacrumbs: warning: process %d loaded %s, which is "
					"no longer at that path: layer %s is not traced in "
					"it\n",
					pid, file, d->reqs[ri].layer->name);
				continue;
			}
			added += attach_file(d, ri, pid, name, file, late);
		}
	}
	fclose(f);
	return added;
}

void dc_dlopen_free(struct dc_dlopen *d)
{
	if (!d)
		return;
	free(d->waiting);
	free(d->done);
	free(d);
}
