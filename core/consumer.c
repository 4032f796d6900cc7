/* consumer.c: ring buffer records -> trace records: fd/path bookkeeping per process,
 * args named by the probe description, the script's callback, then the writer. */
#include "consumer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdtable.h"
#include "trust.h"
#include "mpi.h"
#include "profile.h"
#include "record.h"
#include "shards.h"
#include "spool.h"
#include "util.h"

#define NAME_SLOTS 4096  /* open addressing; pids and threads seen, grows by rehash */

/* The args keys the consumer writes itself, quoted once (writer.h dc_qkey), by QK_*. */
enum { QK_COUNT, QK_SIZE, QK_FD, QK_RET, QK_ERRNO, QK_ASYNC, QK_ENTRY_ONLY, QK_UNWOUND,
       QK_UNFINISHED, QK_BYTES, QK_PATHNAME, QK_LEVEL, QK_P_IDX, QK_FHASH, QK_FHASH2, QK_N };
static const char *const qk_names[QK_N] = {
	"count", "size", "fd", "ret", "errno", "async", "entry_only", "unwound", "unfinished",
	"bytes", "pathname", "level", "p_idx", "fhash", "fhash2",
};

/* A key quoted once: one per distinct name (probe args and QK_*), so that one name has
 * one dc_qkey (record_bytes compares them). */
struct qkname {
	char name[32];           /* as struct dc_arg's name */
	int ok;                  /* q is made (the quoted key fits DC_QKEY_MAX) */
	struct dc_qkey q;
};

/* What a probe's records write the same every time, quoted when its first record comes:
 * its name and layer, and its args' keys (NULL: written with the plain calls). */
struct pquote {
	struct dc_qname nc;
	const struct dc_qkey *arg[DC_PROBE_ARGS];
	int sizei;               /* the `long size` argument (the last so named), -1 none */
};

struct seen {
	uint64_t key;   /* pid << 32 | tid, 0: empty */
	char name[48];  /* process name (tid 0 entries) */
	int rank;       /* MPI rank from the environment at exec, -1 unknown */
	int ranked;     /* its PR record is written */
	int trusted;    /* rank given by the launcher (site mode: slurmstepd), not the env */
	int live_rank;  /* spooling: 1 + the rank its environment had at its last exec, read
			   while the run went on (its /proc is gone at the replay), 0: none */
	int named;      /* its thread_name record is written (thread entries) */
	unsigned next_kid;
	/* thread entries: the bytes the reads nested in a still open call moved, by that
	 * call's id (0: a free slot); a call's children arrive before it, and at most
	 * DC_MAX_DEPTH calls of a thread are open at once */
	uint64_t kid_parent[DC_MAX_DEPTH], kid_bytes[DC_MAX_DEPTH];
	/* thread entries: ids of still open calls that a written call names as its p_idx
	 * (0: a free slot), so a filter that drops such a call does not leave its nested
	 * calls naming a parent the trace lacks (the validator's p_idx rule) */
	uint64_t parents_named[DC_MAX_DEPTH];
	unsigned next_parent;
	unsigned nkids, nparents; /* slots in use of kid_parent and parents_named (0: the
				     per-event scans of them are skipped) */
};

struct dc_consumer {
	struct dc_shards *sh;      /* the ring buffers' readers and their merge */
	struct dc_bpf *bpf;
	struct dc_writer *w;
	struct dc_script *script;
	int64_t mono_to_real_ns;
	int failed;
	int yielded;               /* the last drain stopped at its budget */
	int want_inodes;           /* a probe records inodes: map opened paths to them */
	int want_ranks;            /* a probe has the `rank` effect (MPI_Init) */
	signed char *flags_arg;    /* per probe: index of its `uint flags` arg, -1 none */
	unsigned char *role;       /* per probe: ROLE_* bits, from its name once */
	struct dc_pinfo *bytes;    /* per probe: its bytes rule (dc_probe_bytes; bytes, b1, b2)
				      and bytes-moved rule (dc_probe_moved; moved) */
	unsigned nknown;           /* probes flags_arg and bytes cover */
	dc_dlstate_fn on_dlstate;  /* DC_EV_DLSTATE records go there (NULL: ignored) */
	void *dlstate_arg;
	uint64_t written, dropped, own_ids;
	struct dc_profile *prof;   /* totals, and profile mode's aggregates (profiling) */
	int profiling;             /* profile mode: calls are aggregated, not written */
	struct dc_htab seen;       /* of struct seen, NAME_SLOTS at first */
	struct qkname **kn;        /* the keys quoted so far, nkn of them */
	unsigned nkn, kncap;
	const struct dc_qkey *qk[QK_N];
	struct pquote **pq;        /* per probe (nknown), NULL until its first record */
	struct dc_record rec;      /* reused for every event */
	int held_pid;              /* dc_consumer_held's child until its exec, 0: none */
	uint64_t held_until;       /* its calls entering from then on are the command's */
	const char *path_run;      /* the last record's path when record_path interned it
				      (dc_files_intern), else NULL: r->path equal to it lives
				      for the run, and caches key it by its address */
	char path[DC_PATH_MAX * 2];
	char rpath[DC_PATH_MAX * 2]; /* the kernel's path of it (dc_files_real) */
	char path2[DC_PATH_MAX * 2]; /* the same two for a call's second string */
	char rpath2[DC_PATH_MAX * 2];
	struct dc_spool *spool;    /* spooling (dc_consumer_spool): the journal; NULL: none */
	int spooling;              /* the drains hand on the live kinds alone (on_live) */
	int switched;              /* the spooling failed during the run (its errno): the
				      spool was replayed then, and the rest decoded live */
};

static uint64_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static uint64_t seen_hash(const void *slot)
{
	return hash64(((const struct seen *)slot)->key);
}

static int seen_used(const void *slot)
{
	return ((const struct seen *)slot)->key != 0;
}

static int seen_eq(const void *slot, const void *key)
{
	return ((const struct seen *)slot)->key == *(const uint64_t *)key;
}

/* Finds or adds the seen-slot for key; *added tells whether it is new. */
static struct seen *seen_slot(struct dc_consumer *c, uint64_t key, int *added)
{
	if (dc_htab_reserve(&c->seen))
		dc_oom();
	struct seen *s = dc_htab_find(&c->seen, hash64(key), seen_eq, &key);
	*added = !s->key;
	if (*added) {
		s->key = key;
		s->rank = -1;
		c->seen.n++;
	}
	return s;
}

/* Names process pid (process_name record) and remembers the name for its children. */
static void name_process(struct dc_consumer *c, int pid, const char *name)
{
	int added;
	struct seen *s = seen_slot(c, (uint64_t)pid << 32, &added);
	if (!added && !strcmp(s->name, name))
		return;
	snprintf(s->name, sizeof(s->name), "%s", name);
	dc_writer_meta(c->w, "process_name", pid, pid, s->name, "process_name");
}

/* MPI_Init returned in pid: the process is a rank. Names it "Rank N" (process_name) and
 * writes a PR record {"name":"rank","value":"N"} once, N from its environment (read at
 * exec, or now). */
static void mark_rank(struct dc_consumer *c, int pid)
{
	int added;
	struct seen *s = seen_slot(c, (uint64_t)pid << 32, &added);
	int rank = s->rank >= 0 ? s->rank : dc_mpi_env_rank(pid);
	if (rank < 0)
		rank = s->live_rank - 1;
	if (s->ranked || rank < 0)
		return;
	s->ranked = 1;
	char name[32], value[16];
	snprintf(name, sizeof(name), "Rank %d", rank);
	snprintf(value, sizeof(value), "%d", rank);
	name_process(c, pid, name);
	dc_writer_meta(c->w, "PR", pid, pid, "rank", value);
	if (c->script)
		dc_script_process(c->script, "rank", pid, 0, name, rank);
}

/* Writes a thread_name record the first time a thread is seen. */
static void name_thread(struct dc_consumer *c, struct seen *s, int pid, int tid)
{
	if (!s->named) {
		s->named = 1;
		char name[16];
		snprintf(name, sizeof(name), "%d", tid);
		dc_writer_meta(c->w, "thread_name", pid, tid, name, "thread_name");
	}
}

static void see_thread(struct dc_consumer *c, int pid, int tid)
{
	int added;
	name_thread(c, seen_slot(c, (uint64_t)pid << 32 | (uint32_t)tid, &added), pid, tid);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* The quoted key of `name` (made the first time); NULL when it does not fit a dc_qkey. */
static const struct dc_qkey *quoted_key(struct dc_consumer *c, const char *name)
{
	for (unsigned i = 0; i < c->nkn; i++)
		if (!strcmp(c->kn[i]->name, name))
			return c->kn[i]->ok ? &c->kn[i]->q : NULL;
	if (c->nkn == c->kncap) {
		unsigned cap = c->kncap ? 2 * c->kncap : 64;
		struct qkname **kn = realloc(c->kn, cap * sizeof(*kn));
		if (!kn)
			dc_oom();
		c->kn = kn;
		c->kncap = cap;
	}
	struct qkname *k = calloc(1, sizeof(*k));
	if (!k)
		dc_oom();
	snprintf(k->name, sizeof(k->name), "%s", name);
	k->ok = strlen(name) < sizeof(k->name) && dc_qkey_make(&k->q, name) == 0;
	c->kn[c->nkn++] = k;
	return k->ok ? &k->q : NULL;
}

/* Probe pr's (number `probe`) quoted name, layer and keys, made on its first record. */
static const struct pquote *probe_quotes(struct dc_consumer *c, unsigned probe,
					 const struct dc_probe *pr)
{
	if (c->pq[probe])
		return c->pq[probe];
	struct pquote *q = calloc(1, sizeof(*q));
	if (!q || dc_qname_make(&q->nc, pr->func->name, pr->layer->name) < 0)
		dc_oom();
	q->sizei = -1;
	for (int i = 0; i < pr->func->nargs && i < DC_PROBE_ARGS; i++) {
		q->arg[i] = quoted_key(c, pr->func->args[i].name);
		if (pr->func->args[i].kind == DC_ARG_LONG && !strcmp(pr->func->args[i].name, "size"))
			q->sizei = i;
	}
	c->pq[probe] = q;
	return q;
}

/* Serializes a record: FH record for its path first, then the complete event. nc: its
 * name and layer quoted beforehand (NULL: from r). */
static void write_record(struct dc_consumer *c, const struct dc_record *r,
			 const struct dc_qname *nc)
{
	const char *fh = !r->path ? NULL : r->path == c->path_run
			 ? dc_writer_file_run(c->w, r->pid, r->tid, r->path)
			 : dc_writer_file(c->w, r->pid, r->tid, r->path);
	char fh2[17] = "";
	if (r->path2) /* (dc_writer_file's hash lives until its next call) */
		snprintf(fh2, sizeof(fh2), "%s", dc_writer_file(c->w, r->pid, r->tid, r->path2));
	if (fh && r->path2)
		fh = dc_writer_file(c->w, r->pid, r->tid, r->path);
	if (nc)
		dc_writer_begin_q(c->w, r->id, nc, r->pid, r->tid, r->ts_us, r->dur_us);
	else
		dc_writer_begin(c->w, r->id, r->name, r->cat, r->pid, r->tid, r->ts_us, r->dur_us);
	if (r->level > 0) {
		dc_writer_arg_int_q(c->w, c->qk[QK_LEVEL], r->level);
		dc_writer_arg_int_q(c->w, c->qk[QK_P_IDX], r->p_idx);
	}
	if (fh)
		dc_writer_arg_hash_q(c->w, c->qk[QK_FHASH], fh);
	if (fh2[0])
		dc_writer_arg_hash_q(c->w, c->qk[QK_FHASH2], fh2);
	for (int i = 0; i < r->nargs; i++) {
		const struct dc_rec_arg *a = &r->args[i];
		if (a->is_str && a->q)
			dc_writer_arg_str_q(c->w, a->q, a->s);
		else if (a->is_str)
			dc_writer_arg_str(c->w, a->key, a->s);
		else if (a->q)
			dc_writer_arg_int_q(c->w, a->q, a->i);
		else
			dc_writer_arg_int(c->w, a->key, a->i);
	}
	dc_writer_end(c->w);
}

/* Was the call successful, judging by its return value? */
static int call_ok(const struct dc_func *f, int64_t ret)
{
	if (f->ret_kind == DC_RET_ERRCODE)
		return ret == 0;
	if (f->ret_kind == DC_RET_VOID)
		return 1;
	return f->ret_kind == DC_RET_POINTER ? (ret != 0 && ret != -1) : ret >= 0;
}

/* What on_call learned from an event's args for the path and the effect. */
struct decoded {
	int fdi, dirfdi, inoi, devi;
	int fd2i;            /* a second fd argument (copy_file_range's fd_out), -1 none */
	int dirfd2i;         /* a second dirfd (renameat's newdirfd), -1 none */
	int target;          /* the second string is a symlink's target (kind `target`) */
	int addri;           /* an address in a mapping (msync's), -1 none */
	int sizei;           /* the `long size` argument (mmap's length), -1 none */
	int64_t fd;          /* a FILE *'s fd (aux), -1 none */
	int has_handle;
	uint64_t handle;     /* DIR *, MPI_File: the handle the event is about */
	int has_new;
	uint64_t new_handle; /* the handle a `handle_out` arg received */
};


/* The `uint flags` argument of call e (open's), 0 when its probe has none. */
static uint64_t flags_of(const struct dc_consumer *c, const struct dc_event *e)
{
	int flagsi = c->flags_arg[e->probe];
	return flagsi >= 0 ? e->args[flagsi] : 0;
}

/* The open call e made an unnamed file (O_TMPFILE; open(2)). */
static int unnamed(const struct dc_consumer *c, const struct dc_event *e)
{
	return (flags_of(c, e) & __O_TMPFILE) == __O_TMPFILE;
}

/* The open call e made a new file (O_CREAT|O_EXCL, or O_TMPFILE's unnamed one), whose
 * inode number may be that of a file freed earlier in the run (open(2)). */
static int made_new(const struct dc_consumer *c, const struct dc_event *e)
{
	return (flags_of(c, e) & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL) || unnamed(c, e);
}

/* Applies what a successful call does to the process's fds, handles and cwd, and to the
 * inode table; path and path2 are the record's files (record_path). */
static void apply_effect(struct dc_consumer *c, struct dc_proc_files *pf,
			 const struct dc_func *f, const struct dc_event *e, int64_t ret,
			 const char *path, const char *path2, const struct decoded *d)
{
	int fdi = d->fdi;
	int64_t fd = fdi >= 0 ? (int)e->args[fdi] : -1;
	const char *fdpath = fdi >= 0 ? dc_files_fd_at(pf, fd, e->ts) : NULL;
	switch (f->effect) {
	case DC_FX_FOPEN:
		if (!(e->flags & DC_F_AUX) || (int)e->aux < 0) /* fmemopen: no fd */
			break;
		ret = (int)e->aux;
		__attribute__((fallthrough)); /* the FILE's fd opens the path */
	case DC_FX_OPEN:
		dc_files_set_fd_at(pf, ret, path, e->ts + e->dur);
		/* for page cache and VFS events, which know only the inode */
		if (!path)
			break;
		if (e->ino)
			dc_files_set_inode(e->dev, e->ino, path);
		else if (c->want_inodes)
			dc_files_note_inode(path);
		break;
	case DC_FX_CLOSE:
		dc_files_set_fd_at(pf, fd, NULL, e->ts);
		break;
	case DC_FX_FCLOSE:
		if (d->fd >= 0)
			dc_files_set_fd_at(pf, d->fd, NULL, e->ts);
		break;
	case DC_FX_DUP:
		dc_files_set_fd_at(pf, ret, fdpath, e->ts + e->dur);
		break;
	case DC_FX_DUP2:
		if ((int)e->args[1] != fd)
			dc_files_set_fd_at(pf, (int)e->args[1], fdpath, e->ts + e->dur);
		break;
	case DC_FX_FCNTL:
		if ((int)e->args[1] == F_DUPFD || (int)e->args[1] == F_DUPFD_CLOEXEC)
			dc_files_set_fd_at(pf, ret, fdpath, e->ts + e->dur);
		break;
	case DC_FX_CHDIR:
		if (path)
			dc_files_set_cwd(pf, path);
		break;
	case DC_FX_FCHDIR:
		if (fdpath)
			dc_files_set_cwd(pf, fdpath);
		break;
	case DC_FX_OPENDIR:
		dc_files_set_dir(pf, (uint64_t)ret, path);
		if (c->prof)
			dc_profile_handle(c->prof, e->pid, e->id, path);
		break;
	case DC_FX_FDOPENDIR:
		dc_files_set_dir(pf, (uint64_t)ret, fdpath);
		if (c->prof)
			dc_profile_handle(c->prof, e->pid, e->id, fdpath);
		break;
	case DC_FX_CLOSEDIR:
	case DC_FX_HCLOSE:
		if (d->has_handle)
			dc_files_set_dir(pf, d->handle, NULL);
		break;
	case DC_FX_HOPEN:
		if (d->has_new && path)
			dc_files_set_dir(pf, d->new_handle, path);
		if (c->prof)
			dc_profile_handle(c->prof, e->pid, e->id, path);
		break;
	case DC_FX_RANK:
		mark_rank(c, e->pid);
		break;
	case DC_FX_MMAP: /* MAP_ANONYMOUS (fd -1) maps no file, but replaces what was there */
		if (d->sizei >= 0)
			dc_files_map(pf, (uint64_t)ret, e->args[d->sizei], fd >= 0 ? fdpath : NULL);
		break;
	case DC_FX_MUNMAP:
		if (d->sizei >= 0 && d->addri >= 0)
			dc_files_unmap(pf, e->args[d->addri], e->args[d->sizei]);
		break;
	case DC_FX_RENAME: /* RENAME_EXCHANGE: include/uapi/linux/fs.h */
		dc_files_renamed(path, path2, !!(flags_of(c, e) & 2));
		break;
	case DC_FX_UNLINK:
		dc_files_unlinked(path);
		break;
	case DC_FX_NONE:
		break;
	}
}

/* The bytes a record counts in aggregates: its `count` arg (bytes asked; for kernel
 * tracepoint events, the last of `count` and `size`), as BPF computes them in profile
 * mode (core/attach.c pinfo_of). -1: none. */
static int64_t record_bytes(const struct dc_consumer *c, const struct dc_record *r,
			    const struct dc_probe *pr)
{
	int tp = pr->mech == DC_MECH_TRACEPOINT;
	for (int i = r->nargs - 1; i >= 0; i--) {
		const struct dc_rec_arg *a = &r->args[i];
		if (a->is_str)
			continue;
		/* a quoted key is its name's one dc_qkey (quoted_key) */
		if (a->q ? a->q == c->qk[QK_COUNT] || (tp && a->q == c->qk[QK_SIZE])
			 : !strcmp(a->key, "count") || (tp && !strcmp(a->key, "size")))
			return a->i;
	}
	return -1;
}

/* The bytes call e (record r, ret as record_ret gave it, asked its record_bytes) moved, by
 * the probe's rule
 * (dc_probe_moved, the one BPF applies in profile mode): ret bounded by the count, fread's
 * ret items x size, an MPI call's bytes from its MPI_Status (the `status` argument) or,
 * without one (MPI_STATUS_IGNORE), the count when it returned MPI_SUCCESS. -1: the call
 * has no such figure (or did not return). */
static int64_t record_moved(int64_t asked, const struct dc_record *r,
			    const struct dc_probe *pr,
			    const struct dc_pinfo *rule, const struct dc_event *e, int64_t ret,
			    int finished)
{
	if (rule->moved == DC_PM_NONE || !finished)
		return -1;
	int64_t size = (int64_t)e->args[rule->b1];
	switch (rule->moved) {
	case DC_PM_RET:
		return asked >= 0 && ret >= 0 && ret <= asked ? ret : 0;
	case DC_PM_RETANY:
		return ret > 0 ? ret : 0;
	case DC_PM_ITEMS:
		return ret > 0 && size > 0 ? ret * size : 0;
	case DC_PM_ASKED:
		return asked > 0 && (int)ret >= 0 ? asked : 0;
	case DC_PM_ONE:
		return (int)ret >= 0 ? 1 : 0;
	case DC_PM_ERRCODE:
		for (int i = 0; i < pr->func->nargs; i++)
			if (pr->func->args[i].kind == DC_ARG_STATUS)
				for (int k = 0; k < r->nargs; k++)
					if (!r->args[k].is_str &&
					    !strcmp(r->args[k].key, pr->func->args[i].name))
						return r->args[k].i > 0 ? r->args[k].i : 0;
		return asked > 0 && ret == 0 ? asked : 0;
	}
	return -1;
}

/* The `count` of a call whose bytes are a product (attach.c dc_probe_bytes, the rule BPF
 * sums in profile mode): size x nmemb (bytes asked), or elements x the MPI datatype's size
 * (Open MPI's read when the call returned). The single-argument rules need nothing: that
 * argument is recorded as `count` itself. */
static void record_count(struct dc_consumer *c, struct dc_record *r, const struct dc_probe *pr,
			 const struct dc_pinfo *rule, const struct dc_event *e)
{
	if (rule->bytes == DC_PB_MUL) {
		int64_t size = (int64_t)e->args[rule->b1], nmemb = (int64_t)e->args[rule->b2];
		if (size >= 0 && nmemb >= 0)
			dc_rec_intq(r, "count", c->qk[QK_COUNT], size * nmemb);
	} else if ((rule->bytes == DC_PB_MUL32 || rule->bytes == DC_PB_MPICH) &&
		   !(e->flags & (DC_F_UNFINISHED | DC_F_UNWOUND))) {
		int64_t elems = (int)e->args[rule->b1];
		int64_t tsize = dc_mpi_type_size(pr->mpi, e->args[rule->b2]);
		if (elems >= 0 && tsize >= 0)
			dc_rec_intq(r, "count", c->qk[QK_COUNT], elems * tsize);
	}
}

/* Whether a kernel-side call (syscall, VFS) returned ERESTARTSYS..ERESTART_RESTARTBLOCK
 * (-512..-516, kernel-internal, include/linux/errno.h): a signal interrupted it, and it is
 * restarted as a new call or never returns (killed). Such a call is unfinished. */
static int restarted(const struct dc_probe *pr, int64_t ret)
{
	return pr->mech != DC_MECH_UPROBE && ret <= -512 && ret >= -516;
}

/* on_call's parts, in its order: the record's fixed fields, the arguments decoded by the
 * probe description, the return value, the file the call is about, and where the record
 * goes (profile aggregates, the script, the trace). */

/* The fixed fields of call e's record r (its args emptied). */
static void record_head(struct dc_consumer *c, struct dc_record *r, const struct dc_probe *pr,
			const struct dc_event *e)
{
	const struct dc_func *f = pr->func;
	r->id = e->id;
	r->name = f->name;
	r->cat = pr->layer->name;
	r->pid = e->pid;
	r->tid = e->tid;
	r->ts_us = (e->ts + c->mono_to_real_ns) / 1000;
	r->dur_us = e->dur / 1000;
	r->level = e->level;
	r->p_idx = e->parent ? (int64_t)e->parent : -1;
	r->path = NULL;
	r->path2 = NULL;
	r->nargs = 0;
	r->used = 0;
}

/* Records call e's arguments by the probe description (integer widths, `mode` only with
 * O_CREAT, `count`s), and notes in d which of them name its file or handles. Long on
 * purpose: one case per enum dc_arg_kind (probes.h), in its order. */
static void record_args(struct dc_consumer *c, struct dc_record *r, const struct dc_probe *pr,
			const struct pquote *pq, const struct dc_event *e, struct decoded *d)
{
	const struct dc_func *f = pr->func;
	int flagsi = c->flags_arg[e->probe];
	int aux = (e->flags & DC_F_AUX) != 0;
	for (int i = 0; i < f->nargs; i++) {
		const struct dc_arg *a = &f->args[i];
		const struct dc_qkey *ak = pq->arg[i];
		uint64_t v = e->args[i];
		switch (a->kind) {
		case DC_ARG_FD:
			if (d->fdi < 0)
				d->fdi = i;
			else if (d->fd2i < 0)
				d->fd2i = i;
			dc_rec_intq(r, a->name, ak, (int)v);
			break;
		case DC_ARG_DIRFD:
			if (d->dirfdi < 0)
				d->dirfdi = i;
			else
				d->dirfd2i = i;
			dc_rec_intq(r, a->name, ak, (int)v);
			break;
		case DC_ARG_TARGET:
			d->target = 1;
			break;
		case DC_ARG_TEXT: /* its length, read by BPF */
		case DC_ARG_LINE:
			if (!(e->flags & (DC_F_UNFINISHED | DC_F_UNWOUND | DC_F_ENTRY)))
				dc_rec_intq(r, "count", c->qk[QK_COUNT], (int64_t)e->iov_bytes);
			break;
		case DC_ARG_INT:
		case DC_ARG_IOVCNT:
			dc_rec_intq(r, a->name, ak, (int)v);
			break;
		case DC_ARG_UINT:
			dc_rec_intq(r, a->name, ak, (unsigned int)v);
			break;
		case DC_ARG_LONG:
			if (i == pq->sizei)
				d->sizei = i;
			dc_rec_intq(r, a->name, ak, (int64_t)v);
			break;
		case DC_ARG_ADDR: /* not written: its mapping's file gives fhash */
			d->addri = i;
			break;
		case DC_ARG_MODE: /* open(2): mode is read only with O_CREAT or O_TMPFILE */
			if (flagsi < 0 || (e->args[flagsi] & O_CREAT) ||
			    (e->args[flagsi] & __O_TMPFILE) == __O_TMPFILE) /* has O_DIRECTORY */
				dc_rec_intq(r, a->name, ak, (unsigned int)v);
			break;
		case DC_ARG_IOV:
			dc_rec_intq(r, "count", c->qk[QK_COUNT], (int64_t)e->iov_bytes);
			break;
		case DC_ARG_DIR:
		case DC_ARG_HANDLE:
			d->has_handle = 1;
			d->handle = v;
			break;
		case DC_ARG_HANDLE_IN:
			d->has_handle = aux;
			d->handle = e->aux;
			break;
		case DC_ARG_HANDLE_OUT:
			d->has_new = aux;
			d->new_handle = e->aux;
			break;
		case DC_ARG_LONG_OUT:
			if (aux)
				dc_rec_intq(r, a->name, ak, (int64_t)e->aux);
			break;
		case DC_ARG_FILE:
			if (aux && (int)e->aux >= 0)
				d->fd = (int)e->aux;
			break;
		case DC_ARG_STR: { /* BPF put the string's first bytes in place of the pointer,
				     when the call returned */
			if (e->flags & (DC_F_UNFINISHED | DC_F_UNWOUND))
				break;
			char s8[sizeof(v) + 1] = { 0 };
			memcpy(s8, &v, sizeof(v));
			const char *k = dc_rec_keep(r, s8, strlen(s8));
			if (k)
				dc_rec_strq(r, a->name, ak, k);
			break;
		}
		case DC_ARG_SIZE:
		case DC_ARG_NMEMB:
			dc_rec_intq(r, a->name, ak, (int64_t)v);
			break;
		case DC_ARG_ELEMS:
			dc_rec_intq(r, a->name, ak, (int)v);
			break;
		case DC_ARG_DATATYPE: /* its size makes the count (below) */
			break;
		case DC_ARG_STATUS:
			if (aux && pr->mpi)
				dc_rec_intq(r, a->name, ak, dc_mpi_status_bytes(pr->mpi, e->aux));
			break;
		case DC_ARG_INO:
			d->inoi = i;
			dc_rec_intq(r, a->name, ak, (int64_t)v);
			break;
		case DC_ARG_DEV:
			d->devi = i;
			dc_rec_intq(r, a->name, ak, (int64_t)v);
			break;
		case DC_ARG_PATH:
		case DC_ARG_NONE:
		case DC_ARG_NKINDS:
			break;
		}
	}
	if (f->effect == DC_FX_FOPEN)
		d->fd = aux && (int)e->aux >= 0 ? (int)e->aux : -1; /* the returned FILE's */
	if (f->stream && d->fd < 0 && d->fdi < 0)
		d->fd = f->stream - 1; /* printf: stdout's */
	if (d->fd >= 0)
		dc_rec_intq(r, "fd", c->qk[QK_FD], d->fd);
	record_count(c, r, pr, &c->bytes[e->probe], e);
}

/* Records call e's return value as the contract wants it (ret; -1 and errno for kernel
 * calls; unfinished, entry_only, async instead). Returns the value, -1 for a kernel
 * call's error. */
static int64_t record_ret(struct dc_consumer *c, struct dc_record *r, const struct dc_probe *pr,
			  const struct dc_event *e)
{
	const struct dc_func *f = pr->func;
	int64_t ret = f->ret_kind == DC_RET_INT || f->ret_kind == DC_RET_ERRCODE ?
		      (int)e->ret : e->ret;
	/* a tracepoint function with `ret: long` is an operation with a result (the AIO
	 * layer's: bytes moved or -errno, bpf/datacrumbs.h "Async I/O") */
	int kres = pr->mech == DC_MECH_TRACEPOINT && f->ret_kind == DC_RET_LONG;
	if (pr->mech == DC_MECH_TRACEPOINT && (e->flags & DC_F_ASYNC))
		dc_rec_intq(r, "async", c->qk[QK_ASYNC], 1);
	if (pr->mech == DC_MECH_TRACEPOINT && !kres) {
		/* a kernel event, not a call: no return value */
	} else if (e->flags & DC_F_ENTRY) {
		/* an entry-only probe (its return is not safe to probe): no ret, dur 0 */
		dc_rec_intq(r, "entry_only", c->qk[QK_ENTRY_ONLY], 1);
	} else if (e->flags & DC_F_UNWOUND) {
		/* left without a return: an exception or a longjmp went past it */
		dc_rec_intq(r, "unwound", c->qk[QK_UNWOUND], 1);
	} else if ((e->flags & DC_F_UNFINISHED) || restarted(pr, ret)) {
		/* the thread exited inside the call, or a signal interrupted the system call */
		dc_rec_intq(r, "unfinished", c->qk[QK_UNFINISHED], 1);
	} else if ((pr->mech == DC_MECH_SYSCALL || pr->mech == DC_MECH_KERNEL || kres) &&
		   ret < 0 && ret >= -4095) {
		/* the kernel returns -errno; the contract writes ret -1 and errno (syscall(2)) */
		dc_rec_intq(r, "ret", c->qk[QK_RET], -1);
		dc_rec_intq(r, "errno", c->qk[QK_ERRNO], -ret);
		ret = -1;
	} else if (f->ret_kind != DC_RET_VOID) {
		dc_rec_intq(r, "ret", c->qk[QK_RET], ret);
	}
	return ret;
}

/* The name of the file (dev, ino) that an open reached by path `got`: the path the run
 * first saw it opened by (the inode table, dc_files_inode), while that name lives in the
 * run's history (got is a hard link of it: link(2)), else got. The history, not the file
 * system now: the replay runs after the command, when the name may be another file's
 * (git's config.lock renamed over config, its inode number given to the next lock). A
 * file the open made (made_new) has no older name. So one file has one name in both
 * modes: profile mode's BPF keys an fd's calls by inode, and the inode table names them. */
static const char *one_name(uint64_t dev, uint64_t ino, const char *got, int fresh)
{
	const char *known = fresh ? NULL : dc_files_inode(dev, ino);
	return known ? known : got;
}

/* The file that path (absolute) names when it is one of process pid's fds in /proc
 * (/proc/self/fd/N, /proc/PID/fd/N: linkat's way to name an O_TMPFILE file, open(2)): the
 * fd table's file for it at time ts, else NULL. */
static const char *proc_fd_file(const struct dc_proc_files *pf, int pid, const char *path,
				 uint64_t ts)
{
	char *end;
	if (strncmp(path, "/proc/", 6))
		return NULL;
	path += 6;
	if (!strncmp(path, "self/", 5))
		path += 5;
	else if (strtol(path, &end, 10) == pid && end != path && *end == '/')
		path = end + 1;
	else
		return NULL;
	if (strncmp(path, "fd/", 3) || path[3] < '0' || path[3] > '9')
		return NULL;
	long fd = strtol(path + 3, &end, 10);
	return *end ? NULL : dc_files_fd_at(pf, fd, ts);
}

/* The second string of call e (epath2: rename's newpath, link's newpath, symlink's
 * target) as a file: made absolute (against the second dirfd, or, for a symlink's
 * target, the directory of the link, r->path) and real, kept in r; NULL when unknown.
 * A target that names its own link's directory gives that directory's path
 * (symlink(2): a relative target is read from the link's directory). */
static const char *second_path(struct dc_consumer *c, struct dc_proc_files *pf,
			       struct dc_record *r, const struct dc_event *e, const char *epath2,
			       const struct decoded *d)
{
	char *buf = c->path2;
	unsigned cap = sizeof(c->path2);
	const char *abs;
	if (d->target) {
		if (epath2[0] == '/') {
			abs = dc_files_resolve(pf, 0, 0, epath2, buf, cap);
		} else {
			const char *slash = r->path ? strrchr(r->path, '/') : NULL;
			if (!slash)
				return NULL;
			char joined[DC_PATH_MAX * 2];
			snprintf(joined, sizeof(joined), "%.*s/%s", (int)(slash - r->path), r->path,
				 epath2);
			abs = dc_files_resolve(pf, 0, 0, joined, buf, cap);
		}
	} else {
		abs = dc_files_resolve(pf, d->dirfd2i >= 0, d->dirfd2i >= 0 ?
				       (int)e->args[d->dirfd2i] : 0, epath2, buf, cap);
	}
	if (!abs)
		return NULL;
	const char *fdf = proc_fd_file(pf, r->pid, abs, e->ts);
	if (fdf)
		return dc_rec_keep(r, fdf, strlen(fdf));
	const char *real = dc_files_real(r->pid, -1, 0, 0, abs, c->rpath2, sizeof(c->rpath2));
	return dc_rec_keep(r, real, strlen(real));
}

/* Sets r->path to the file call e (of probe pr, returning ret) is about: its path argument
 * made absolute and real, else its fd's, FILE's, handle's or inode's path, copied into r
 * (the fd table may change below), NULL: none; and r->path2 to its second fd's, or its
 * second string's (epath2, second_path). */
static void record_path(struct dc_consumer *c, struct dc_proc_files *pf,
			struct dc_record *r, const struct dc_probe *pr, const struct dc_event *e,
			const char *epath, const char *epath2, const struct decoded *d,
			int64_t ret)
{
	const struct dc_func *f = pr->func;
	int run = 1; /* r->path is interned (the fd table's, or made so below) */
	if (epath) {
		r->path = dc_files_resolve(pf, d->dirfdi >= 0,
					   d->dirfdi >= 0 ? (int)e->args[d->dirfdi] : 0,
					   epath, c->path, sizeof(c->path));
		/* the file's real path (symlinked directories resolved), with the name the
		 * program gave kept as `pathname` when they differ */
		const char *real = NULL, *fdf = r->path ?
			proc_fd_file(pf, r->pid, r->path, e->ts) : NULL;
		if (fdf) { /* the fd's file itself */
			real = fdf;
		} else if (r->path && f->effect == DC_FX_CHDIR && ret == 0) {
			/* a cwd: every component resolved (with the invoking user's rights
			 * under sudo, as dc_files_real) */
			dc_trust_enter_script();
			real = realpath(r->path, c->rpath);
			dc_trust_leave_script();
		} else if (r->path) {
			real = dc_files_real(r->pid, f->effect == DC_FX_OPEN ? ret : -1, e->dev,
					     e->ino, r->path, c->rpath, sizeof(c->rpath));
			if (f->effect == DC_FX_OPEN && e->ino && ret >= 0)
				real = one_name(e->dev, e->ino, real ? real : r->path,
						made_new(c, e));
			if (f->effect == DC_FX_OPEN && e->ino && ret >= 0 && unnamed(c, e)) {
				/* O_TMPFILE: no name; the kernel's is DIR/#INO (fs/namei.c
				 * vfs_tmpfile), as /proc/PID/fd shows it, less " (deleted)" */
				char dir[sizeof(c->rpath)];
				snprintf(dir, sizeof(dir), "%s", real ? real : r->path);
				snprintf(c->rpath, sizeof(c->rpath), "%.*s/#%llu",
					 (int)sizeof(dir) - 24, dir, (unsigned long long)e->ino);
				real = c->rpath;
			}
		}
		if (real && strcmp(real, r->path)) {
			const char *given = dc_rec_keep(r, epath, strlen(epath));
			if (given)
				dc_rec_strq(r, "pathname", c->qk[QK_PATHNAME], given);
			r->path = real;
		}
		run = 0;
	} else if (d->fdi >= 0) {
		r->path = dc_files_fd_at(pf, (int)e->args[d->fdi], e->ts);
	} else if (d->fd >= 0) {
		r->path = dc_files_fd_at(pf, d->fd, e->ts);
	} else if (d->has_handle) {
		r->path = dc_files_dir(pf, d->handle);
	} else if (d->addri >= 0) {
		r->path = dc_files_mapped(pf, e->args[d->addri]);
	}
	if (!r->path && d->inoi >= 0 && d->devi >= 0) /* also an fd of no known file: an io_uring
							fixed file's slot (-1) */
		r->path = dc_files_inode(e->args[d->devi], e->args[d->inoi]);
	char special[48];
	if (!r->path && (e->flags & (DC_F_PIPE | DC_F_SOCKET))) {
		/* a pipe's or socket's fd, as /proc/PID/fd names it (BPF read its inode) */
		snprintf(special, sizeof(special), "%s:[%llu]", e->flags & DC_F_PIPE ? "pipe" :
			 "socket", (unsigned long long)e->ino);
		r->path = special;
	}
	if (r->path == special) { /* a string of this call only */
		r->path = dc_rec_keep(r, special, strlen(special));
		run = 0;
	} else if (r->path && !run) { /* a named file: the fd table will hold it if opened */
		r->path = dc_files_intern(r->path);
		run = 1;
	}
	c->path_run = run ? r->path : NULL;
	/* a call on two files (copy_file_range, sendfile, splice): the second one's path */
	const char *p2 = d->fd2i >= 0 ? dc_files_fd_at(pf, (int)e->args[d->fd2i], e->ts) : NULL;
	if (!p2 && d->fd2i >= 0 && (e->flags & (DC_F_PIPE2 | DC_F_SOCKET2))) {
		snprintf(special, sizeof(special), "%s:[%llu]", e->flags & DC_F_PIPE2 ? "pipe" :
			 "socket", (unsigned long long)e->dev);
		p2 = special;
	}
	r->path2 = p2 ? dc_rec_keep(r, p2, strlen(p2)) : NULL;
	if (epath2 && !r->path2)
		r->path2 = second_path(c, pf, r, e, epath2, d);
}

/* Is f a read, by its name (read, pread64, readv, preadv2, sys_read, __read_nocancel)? */
enum {
	ROLE_READ = 1,   /* a read (read, pread, their sys_ and __ forms): nested reads count */
	ROLE_SCANF = 2,  /* the scanf family: its bytes are those of the reads nested in it */
};

static int is_read(const struct dc_func *f)
{
	const char *n = f->name;
	if (!strncmp(n, "sys_", 4))
		n += 4;
	while (*n == '_')
		n++;
	return !strncmp(n, "read", 4) ? strncmp(n, "readlink", 8) && strncmp(n, "readdir", 7)
	       : !strncmp(n, "pread", 5);
}

/* Trace mode: the bytes moved by the reads nested in a call, for the calls whose own
 * result does not give their bytes (fscanf: ret is the items assigned). A finished read
 * of thread (pid, tid) with parent id adds its bytes (moved >= 0) to its parent's slot;
 * a call takes (and frees) its own slot: returns the bytes, or -1 when none nested. */
static int64_t nested_reads(struct seen *s, unsigned role, const struct dc_event *e,
			    int64_t moved, int finished)
{
	int64_t mine = -1;
	for (int i = 0; (s->nkids || !e->id) && i < DC_MAX_DEPTH; i++)
		if (s->kid_parent[i] == e->id) {
			mine = (int64_t)s->kid_bytes[i];
			s->nkids -= s->kid_parent[i] != 0;
			s->kid_parent[i] = 0;
		}
	if (e->parent && finished && moved >= 0 && (role & ROLE_READ)) {
		int at = -1;
		for (int i = 0; i < DC_MAX_DEPTH && at < 0; i++)
			if (s->kid_parent[i] == e->parent)
				at = i;
		for (int i = 0; i < DC_MAX_DEPTH && at < 0; i++)
			if (!s->kid_parent[i])
				at = i;
		if (at < 0) /* slots of calls whose record never came: reuse the oldest */
			at = s->next_kid++ % DC_MAX_DEPTH;
		if (s->kid_parent[at] != e->parent) {
			s->nkids += s->kid_parent[at] == 0;
			s->kid_parent[at] = e->parent;
			s->kid_bytes[at] = 0;
		}
		s->kid_bytes[at] += (uint64_t)moved;
	}
	return mine;
}

/* Was call r named as the parent of a call already written (its children end, and are
 * written, before it)? Forgets it (it is done) and returns 1, else 0. s: r's thread. */
static int took_parent(struct seen *s, const struct dc_record *r)
{
	for (int i = 0; s->nparents && i < DC_MAX_DEPTH; i++)
		if (s->parents_named[i] && s->parents_named[i] == r->id) {
			s->parents_named[i] = 0;
			s->nparents--;
			return 1;
		}
	return 0;
}

/* A written call r names its parent (p_idx >= 0): remembered until the parent comes. At
 * most DC_MAX_DEPTH calls of a thread are open at once; the oldest slot gives way. */
static void note_parent(struct dc_consumer *c, const struct dc_record *r)
{
	if (r->p_idx < 0)
		return;
	int added;
	struct seen *s = seen_slot(c, (uint64_t)r->pid << 32 | (uint32_t)r->tid, &added);
	int free_at = -1;
	for (int i = 0; i < DC_MAX_DEPTH; i++) {
		if (s->parents_named[i] == (uint64_t)r->p_idx)
			return;
		if (!s->parents_named[i] && free_at < 0)
			free_at = i;
	}
	s->nparents += free_at >= 0;
	s->parents_named[free_at >= 0 ? free_at : (int)(s->next_parent++ % DC_MAX_DEPTH)] =
		(uint64_t)r->p_idx;
}

/* Does the script drop r's file (dc.drop_paths)? An interned path's answer by its address. */
static int drops_path(struct dc_consumer *c, const struct dc_record *r)
{
	return r->path && r->path == c->path_run ? dc_script_drops_path_run(c->script, r->path)
						 : dc_script_drops_path(c->script, r->path);
}

/* Hands the record of a call on: into profile mode's aggregates (a call BPF could not
 * aggregate), or through the script's on_event to the trace, and into the run's totals. */
static void deliver(struct dc_consumer *c, struct dc_record *r, const struct dc_probe *pr,
		    const struct pquote *pq, const struct dc_event *e, int finished, int64_t ret)
{
	int64_t asked = record_bytes(c, r, pr); /* again after a callback, which may change it */
	int64_t moved = record_moved(asked, r, pr, &c->bytes[e->probe], e, ret, finished);
	if (c->profiling) { /* a call BPF could not aggregate (it names a path); one that
			       never returned is not a call to count */
		if (finished)
			dc_profile_add(c->prof, r->pid, e->probe, e->ts + e->dur, e->dur,
				       asked, moved, r->path);
		return;
	}
	/* the thread's slot, looked up once: valid until the script's callback, which may
	 * add slots (dc.emit of a new process) and so move them */
	int added;
	struct seen *th = seen_slot(c, (uint64_t)r->pid << 32 | (uint32_t)r->tid, &added);
	unsigned role = c->role[e->probe];
	int64_t nested = nested_reads(th, role, e, moved, finished);
	if (nested >= 0 && finished && (role & ROLE_SCANF)) { /* its bytes: the reads under it */
		dc_rec_intq(r, "bytes", c->qk[QK_BYTES], nested);
		moved = nested;
	}
	name_thread(c, th, r->pid, r->tid);
	int parent = took_parent(th, r);
	int called = 0; /* the script's callback saw r (and may have changed it) */
	if (c->script && (drops_path(c, r) ||
			  ((called = dc_script_wants_events(c->script)) &&
			   !dc_script_event(c->script, r))) &&
	    !parent) { /* a call its written nested calls name stays: the nesting stays valid */
		c->dropped++;
		return;
	}
	/* the name and the layer quoted beforehand, unless the callback changed them */
	write_record(c, r, r->name == pr->func->name && r->cat == pr->layer->name ? &pq->nc
		     : NULL);
	note_parent(c, r);
	c->written++;
	if (c->prof)
		dc_profile_total(c->prof, r->pid, e->probe, e->dur,
				 called ? record_bytes(c, r, pr) : asked, moved,
				 r->path, r->path && r->path == c->path_run);
}

/* A returned call: decode its args by the probe description, then write it. epath and
 * epath2: the strings of its record (NULL: none). */
static void on_call(struct dc_consumer *c, const struct dc_event *e, const char *epath,
		    const char *epath2)
{
	const struct dc_probe *pr = dc_bpf_probe(c->bpf, e->probe);
	if (!pr || (e->probe >= c->nknown && dc_consumer_probes_added(c)))
		return;
	const struct dc_func *f = pr->func;
	if ((int)e->pid == c->held_pid) { /* before the command's exec: datacrumbs' own calls */
		if (e->ts < c->held_until)
			return;
		c->held_pid = 0;
	}
	struct dc_proc_files *pf = dc_files_find(e->pid);
	if (!pf) {
		/* a process whose fork record we did not get (lost, or it predates -p):
		 * its cwd and fds as /proc shows them now (with root's fs ids, as at a
		 * process's record: dc_trust_release) */
		dc_trust_release();
		dc_files_from_proc(e->pid);
		pf = dc_files_get(e->pid);
	}
	struct dc_record *r = &c->rec;
	struct decoded d = { -1, -1, -1, -1, -1, -1, 0, -1, -1, -1, 0, 0, 0, 0 };
	const struct pquote *pq = probe_quotes(c, e->probe, pr);
	record_head(c, r, pr, e);
	record_args(c, r, pr, pq, e, &d);
	int64_t ret = record_ret(c, r, pr, e);
	record_path(c, pf, r, pr, e, epath, epath2, &d, ret);
	int finished = !(e->flags & (DC_F_UNFINISHED | DC_F_ENTRY | DC_F_UNWOUND)) &&
		       !restarted(pr, ret);
	if (f->effect != DC_FX_NONE && finished && call_ok(f, ret))
		apply_effect(c, pf, f, e, ret, r->path, r->path2, &d);
	if (pr->hidden)
		return;
	deliver(c, r, pr, pq, e, finished, ret);
}

/* A traced process exec'd a program that gains privileges (datacrumbs.h DC_EV_EXEC,
 * args[0] = 1) in a run without root: said on stderr, and in the trace as an `untraced`
 * record (cat datacrumbs: reason, exec_hash the SH hash of the program's file name) at
 * the time of the exec. */
static void untraced(struct dc_consumer *c, const struct dc_event *e, const char *epath)
{
	const char *file = epath ? epath : "?";
	fprintf(stderr, "datacrumbs: process %d exec'd %s, which gains privileges (setuid, "
		"setgid or file capabilities): not traced from here on, as under ptrace "
		"(datacrumbs runs without root)\n", (int)e->pid, file);
	char sh[17];
	memcpy(sh, dc_writer_string(c->w, e->pid, e->tid, file), sizeof(sh));
	dc_writer_begin(c->w, dc_consumer_own_id(c), "untraced", "datacrumbs", e->pid, e->tid,
			(e->ts + c->mono_to_real_ns) / 1000, 0);
	dc_writer_arg_str(c->w, "reason", "privileged exec");
	dc_writer_arg_str(c->w, "exec_hash", sh);
	dc_writer_end(c->w);
	c->written++; /* an event of the file like any other: num_events counts it */
}

void dc_consumer_untraced_task(struct dc_consumer *c, int pid, int rank, uint64_t ts_us)
{
	dc_writer_begin(c->w, dc_consumer_own_id(c), "untraced", "datacrumbs", pid, pid, ts_us, 0);
	dc_writer_arg_str(c->w, "reason", "task not handed over");
	dc_writer_arg_int(c->w, "rank", rank);
	dc_writer_end(c->w);
	c->written++;
}

/* A fork, exec or exit of a traced process. */
static void on_process(struct dc_consumer *c, const struct dc_event *e, const char *epath)
{
	int added;
	switch (e->kind) {
	case DC_EV_FORK: {
		struct seen *parent = seen_slot(c, (uint64_t)e->args[0] << 32, &added);
		char name[48];
		snprintf(name, sizeof(name), "%s", parent->name);
		dc_files_fork((int)e->args[0], e->pid);
		name_process(c, e->pid, name[0] ? name : "?");
		if (c->script)
			dc_script_process(c->script, "fork", e->pid, (int)e->args[0], name, 0);
		break;
	}
	case DC_EV_EXEC: {
		if ((int)e->pid == c->held_pid) /* the command runs: its calls from here on */
			c->held_pid = 0;
		if (dc_files_find(e->pid)) /* a new address space: no mappings */
			dc_files_exec(dc_files_find(e->pid));
		struct seen *p = seen_slot(c, (uint64_t)e->pid << 32, &added);
		if (epath && !p->trusted) /* a task keeps its "Rank N" */
			name_process(c, e->pid, base_name(epath));
		if (e->args[0]) /* gained privileges: BPF stopped tracing it */
			untraced(c, e, epath);
		if (c->want_ranks && !p->trusted) { /* now, while the new program surely runs */
			p->rank = dc_mpi_env_rank(e->pid);
			if (p->rank < 0) /* a spooled exec: as it was read during the run */
				p->rank = p->live_rank - 1;
		}
		if (c->script)
			dc_script_process(c->script, "exec", e->pid, 0, epath ? base_name(epath) : NULL, 0);
		break;
	}
	case DC_EV_EXIT: {
		struct seen *p = seen_slot(c, (uint64_t)e->pid << 32, &added);
		if (c->script)
			dc_script_process(c->script, "exit", e->pid, 0, p->name, (int)e->args[0]);
		dc_files_exit(e->pid);
		break;
	}
	}
}

static void on_record(void *ctx, const void *data, size_t size)
{
	struct dc_consumer *c = ctx;
	const struct dc_event *e = data;
	if (size < sizeof(*e) || c->failed)
		return;
	const char *path = NULL, *path2 = NULL;
	if (e->path_len > 0 && e->path_len <= DC_PATH_MAX &&
	    size >= sizeof(struct dc_event) + e->path_len) {
		/* BPF NUL-terminates the string */
		const struct dc_path_event *pe = data;
		if (pe->path[e->path_len - 1] == 0)
			path = pe->path;
	}
	if (e->kind == DC_EV_CALL && e->path2_len > 0) {
		/* a second string (bpf/datacrumbs.h struct dc_path2_event): DC_PATH_SMALL after
		 * the first in a small record, DC_PATH_MAX in a full one */
		size_t at = size >= sizeof(struct dc_path2_event) ? DC_PATH_MAX : DC_PATH_SMALL;
		const char *s = (const char *)data + sizeof(struct dc_event) + at;
		if (e->path2_len <= DC_PATH_MAX && e->path2_len <= (at == DC_PATH_MAX ?
		    DC_PATH_MAX : DC_PATH_SMALL) && size >= sizeof(struct dc_event) + at +
		    e->path2_len && s[e->path2_len - 1] == 0)
			path2 = s;
	}
	if (e->kind == DC_EV_CALL) {
		on_call(c, e, path, path2);
		return;
	}
	dc_trust_release(); /* a process's record: root's fs ids (its /proc files) */
	if (e->kind == DC_EV_DLSTATE && c->on_dlstate)
		c->on_dlstate(c->dlstate_arg, (int)e->pid, (int)e->tid, (int)e->args[0]);
	else if (e->kind != DC_EV_DLSTATE)
		on_process(c, e, path);
}


/* Sets the rank process pid had at its exec (spooling: read during the run). */
static void set_live_rank(struct dc_consumer *c, int pid, int rank)
{
	int added;
	seen_slot(c, (uint64_t)pid << 32, &added)->live_rank = rank + 1;
}

/* While spooling, the records the run cannot wait for (core/shards.h live kinds): a
 * thread in the dynamic loader (its library is attached now), an exec (its MPI rank is
 * read from its environment now, and journaled). Everything is decoded at the replay. */
static void on_live(void *ctx, const void *data, size_t size)
{
	struct dc_consumer *c = ctx;
	const struct dc_event *e = data;
	if (size < sizeof(*e))
		return;
	dc_trust_release(); /* a process's /proc files: root's fs ids */
	if (e->kind == DC_EV_DLSTATE && c->on_dlstate) {
		c->on_dlstate(c->dlstate_arg, (int)e->pid, (int)e->tid, (int)e->args[0]);
	} else if (e->kind == DC_EV_EXEC) { /* ranks are wanted once MPI is loaded: later */
		int32_t v[2] = { (int32_t)e->pid, dc_mpi_env_rank((int)e->pid) };
		if (v[1] < 0)
			return;
		set_live_rank(c, v[0], v[1]);
		const void *ptr[1] = { v };
		size_t len[1] = { sizeof(v) };
		dc_spool_note(c->spool, DC_J_RANK, 1, ptr, len);
	}
}

int dc_consumer_spool(struct dc_consumer *c, struct dc_spool *sp, uint64_t limit)
{
	for (unsigned i = 0; i < c->nknown; i++)
		if (dc_spool_note_probe(sp, i, dc_bpf_probe(c->bpf, i)))
			return -1;
	if (dc_shards_spool(c->sh, dc_spool_fds(sp), limit,
			    1u << DC_EV_DLSTATE | 1u << DC_EV_EXEC))
		return -1;
	c->spool = sp; /* from now its journal gets the probes and processes added */
	c->spooling = 1;
	return 0;
}

uint64_t dc_consumer_spooled(const struct dc_consumer *c)
{
	return c->spooling ? dc_shards_spooled(c->sh) : 0;
}

/* The spooling failed during the run (a full disk, --spool-size): what the spool holds is
 * decoded now, and from here on the records as they come (the drain threads queue them
 * since the failure). Said once on stderr. */
static void switch_live(struct dc_consumer *c)
{
	/* (the spool is not replayed again: its blocks are freed as it is read, room for the
	 * trace on a full disk) */
	char err[512];
	c->switched = dc_shards_spool_failed(c->sh);
	fprintf(stderr, "datacrumbs: warning: the spool %s: %s: from here on the events are "
		"decoded while the command runs\n", dc_spool_dir(c->spool),
		dc_spool_stop_reason(c->switched));
	c->spooling = 0;
	dc_shards_spool_settle(c->sh);
	dc_trust_batch_begin();
	if (dc_spool_replay(c->spool, on_record, c, 1, err, sizeof(err)) < 0)
		fprintf(stderr, "datacrumbs: cannot read the spool: %s\n", err);
	dc_trust_batch_end();
	dc_shards_spool_replayed(c->sh);
}

int dc_consumer_spool_switched(const struct dc_consumer *c)
{
	return c->switched;
}

long dc_consumer_replay(struct dc_consumer *c, int *spool_err, char *err, size_t errlen)
{
	*spool_err = c->switched;
	if (c->switched)
		return 0; /* replayed when it failed */
	if (c->spooling) {
		*spool_err = dc_shards_spool_end(c->sh);
		c->spooling = 0;
	}
	dc_consumer_on_dlstate(c, NULL, NULL); /* the loads were attached during the run */
	dc_trust_batch_begin();
	long n = dc_spool_replay(c->spool, on_record, c, 0, err, errlen);
	dc_trust_batch_end();
	return n;
}

/* The journal's entries that remake the consumer's state of the run's start (recover). */
static void on_journal(void *arg, uint32_t tag, const void *p, uint32_t len)
{
	struct dc_consumer *c = arg;
	int32_t v[2] = { 0, 0 };
	const char *str = (const char *)p + sizeof(v[0]);
	if (len < sizeof(v[0]) || (tag != DC_J_RANK && tag != DC_J_FD && tag != DC_J_HELD &&
	    ((const char *)p)[len - 1]))
		return;
	memcpy(v, p, len >= sizeof(v) ? sizeof(v) : sizeof(v[0]));
	switch (tag) {
	case DC_J_PROC:
		name_process(c, v[0], str);
		break;
	case DC_J_CWD:
		dc_files_set_cwd(dc_files_get(v[0]), str);
		break;
	case DC_J_FD:
		if (len > sizeof(v) && ((const char *)p)[len - 1] == 0)
			dc_files_set_fd(dc_files_get(v[0]), v[1], (const char *)p + sizeof(v));
		break;
	case DC_J_HELD:
		c->held_pid = v[0];
		c->held_until = UINT64_MAX;
		break;
	case DC_J_RANK:
		if (len >= sizeof(v))
			set_live_rank(c, v[0], v[1]);
		break;
	}
}

int dc_consumer_restore(struct dc_consumer *c, struct dc_spool *sp, char *err, size_t errlen)
{
	c->spool = sp;
	return dc_spool_journal(sp, on_journal, c, err, errlen);
}

/* dc_files_each_fd's visitor: a DC_J_FD entry of the process `arg` (a struct jproc). */
struct jproc {
	struct dc_spool *sp;
	int32_t pid;
};

static void note_fd(void *arg, long fd, const char *path)
{
	const struct jproc *j = arg;
	int32_t v[2] = { j->pid, (int32_t)fd };
	const void *ptr[2] = { v, path };
	size_t len[2] = { sizeof(v), strlen(path) + 1 };
	dc_spool_note(j->sp, DC_J_FD, 2, ptr, len);
}

/* Journals process pid as the run starts with it: its name, cwd and fds (recover). */
static void note_process(struct dc_consumer *c, int pid, const char *name)
{
	if (!c->spool)
		return;
	struct jproc j = { c->spool, pid };
	const void *ptr[2] = { &j.pid, name };
	size_t len[2] = { sizeof(j.pid), strlen(name) + 1 };
	dc_spool_note(c->spool, DC_J_PROC, 2, ptr, len);
	const char *cwd = dc_files_each_fd(pid, note_fd, &j);
	if (cwd) {
		ptr[1] = cwd;
		len[1] = strlen(cwd) + 1;
		dc_spool_note(c->spool, DC_J_CWD, 2, ptr, len);
	}
}

struct dc_consumer *dc_consumer_new(struct dc_bpf *b, struct dc_writer *w,
				    struct dc_script *script, int64_t mono_to_real_ns,
				    int nthreads, char *err, size_t errlen)
{
	struct dc_consumer *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->bpf = b;
	c->w = w;
	c->script = script;
	c->mono_to_real_ns = mono_to_real_ns;
	c->seen = (struct dc_htab){ .size = sizeof(struct seen), .first = NAME_SLOTS,
				    .hash = seen_hash, .used = seen_used };
	for (int k = 0; k < QK_N; k++)
		c->qk[k] = quoted_key(c, qk_names[k]); /* short names: they fit */
	if (dc_consumer_probes_added(c)) {
		free(c->flags_arg);
	free(c->role);
		free(c->bytes);
		snprintf(err, errlen, "out of memory");
		free(c);
		return NULL;
	}
	int fds[DC_MAX_SHARDS];
	unsigned n = dc_bpf_nshards(b);
	for (unsigned k = 0; k < n; k++)
		fds[k] = dc_bpf_ring_fd(b, k);
	if (nthreads < 0) { /* as many as a node can spare: one per 16 CPUs, 1 to 8 */
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		nthreads = cpus < 32 ? 1 : cpus / 16 > 8 ? 8 : (int)(cpus / 16);
	}
	c->sh = dc_shards_new(fds, n, dc_bpf_ring_bytes(b), (unsigned)nthreads, err, errlen);
	if (!c->sh) {
		free(c->flags_arg);
	free(c->role);
		free(c->bytes);
		free(c);
		return NULL;
	}
	return c;
}

int dc_consumer_probes_added(struct dc_consumer *c)
{
	/* what the per-event path asks of each probe's description, found once here */
	unsigned n = dc_bpf_nprobes(c->bpf);
	signed char *fa = realloc(c->flags_arg, n + 1);
	if (fa)
		c->flags_arg = fa;
	struct dc_pinfo *by = realloc(c->bytes, (n + 1) * sizeof(*by));
	if (by)
		c->bytes = by;
	unsigned char *ro = realloc(c->role, n + 1);
	if (ro)
		c->role = ro;
	struct pquote **pq = realloc(c->pq, (n + 1) * sizeof(*pq));
	if (pq) {
		c->pq = pq;
		for (unsigned i = c->nknown; i <= n; i++)
			pq[i] = NULL;
	}
	if (!fa || !by || !ro || !pq)
		return -1;
	for (unsigned i = c->nknown; i < n; i++) {
		const struct dc_func *f = dc_bpf_probe(c->bpf, i)->func;
		memset(&c->bytes[i], 0, sizeof(c->bytes[i]));
		c->bytes[i].bytes = dc_probe_bytes(dc_bpf_probe(c->bpf, i), &c->bytes[i].b1,
						   &c->bytes[i].b2);
		c->bytes[i].moved = dc_probe_moved(dc_bpf_probe(c->bpf, i), c->bytes[i].bytes);
		c->flags_arg[i] = -1;
		/* fscanf's ret is the items assigned: its bytes come from its nested reads */
		c->role[i] = (is_read(f) ? ROLE_READ : 0) |
			     (c->bytes[i].moved == DC_PM_NONE && strstr(f->name, "scanf")
			      ? ROLE_SCANF : 0);
		c->want_ranks |= f->effect == DC_FX_RANK;
		if (c->spool && dc_spool_note_probe(c->spool, i, dc_bpf_probe(c->bpf, i)))
			return -1;
		for (int k = 0; k < f->nargs; k++) {
			c->want_inodes |= f->args[k].kind == DC_ARG_INO;
			if (f->args[k].kind == DC_ARG_UINT && !strcmp(f->args[k].name, "flags"))
				c->flags_arg[i] = k;
		}
	}
	c->nknown = n;
	return 0;
}

void dc_consumer_on_dlstate(struct dc_consumer *c, dc_dlstate_fn fn, void *arg)
{
	c->on_dlstate = fn;
	c->dlstate_arg = arg;
}

int dc_consumer_fd(const struct dc_consumer *c)
{
	return dc_shards_fd(c->sh);
}

int dc_consumer_defer(struct dc_consumer *c, size_t bytes)
{
	return c ? dc_shards_defer(c->sh, bytes) : -1;
}

void dc_consumer_lift(struct dc_consumer *c)
{
	if (c)
		dc_shards_lift(c->sh);
}

unsigned dc_consumer_threads(const struct dc_consumer *c)
{
	return dc_shards_threads(c->sh);
}

int dc_consumer_drain(struct dc_consumer *c, unsigned max)
{
	/* the callbacks of one drain keep the invoking user's fs ids between them (sudo) */
	dc_trust_batch_begin();
	if (c->spooling && dc_shards_spool_failed(c->sh))
		switch_live(c);
	long n = dc_shards_drain(c->sh, max, c->spooling ? on_live : on_record, c);
	dc_trust_batch_end();
	c->yielded = max && n >= (long)max;
	return n > INT32_MAX ? INT32_MAX : (int)n;
}

int dc_consumer_yielded(const struct dc_consumer *c)
{
	return c->yielded;
}

void dc_consumer_add_process(struct dc_consumer *c, int pid, const char *name)
{
	dc_files_from_proc(pid);
	name_process(c, pid, name);
	note_process(c, pid, name);
}

void dc_consumer_held(struct dc_consumer *c, int pid)
{
	c->held_pid = pid;
	c->held_until = UINT64_MAX;
	if (c->spool) {
		const void *ptr[1] = { &pid };
		size_t len[1] = { sizeof(pid) };
		dc_spool_note(c->spool, DC_J_HELD, 1, ptr, len);
	}
}

void dc_consumer_held_execd_by(struct dc_consumer *c, uint64_t exec_ns)
{
	c->held_until = exec_ns;
}

void dc_consumer_add_task(struct dc_consumer *c, int pid, int rank)
{
	int added;
	struct seen *s = seen_slot(c, (uint64_t)pid << 32, &added);
	dc_files_from_proc(pid);
	if (rank < 0) /* a task that is no rank (the batch step's script) */
		return;
	s->rank = rank;
	s->trusted = 1;
	mark_rank(c, pid);
}

uint64_t dc_consumer_written(const struct dc_consumer *c)
{
	return c->written;
}

void dc_consumer_set_profile(struct dc_consumer *c, struct dc_profile *p, int profiling)
{
	c->prof = p;
	c->profiling = profiling;
}

void dc_consumer_count(struct dc_consumer *c, uint64_t n)
{
	c->written += n;
}

uint64_t dc_consumer_dropped(const struct dc_consumer *c)
{
	return c->dropped;
}

void dc_consumer_emit(struct dc_consumer *c, struct dc_record *r, int counter)
{
	if (counter) {
		dc_writer_begin_counter(c->w, r->name, r->cat, r->pid, r->tid, r->ts_us);
		for (int i = 0; i < r->nargs; i++)
			if (!r->args[i].is_str)
				dc_writer_arg_int(c->w, r->args[i].key, r->args[i].i);
		dc_writer_end(c->w);
		c->written++; /* num_events counts every event in the file, counters too */
		return;
	}
	r->id = dc_consumer_own_id(c);
	see_thread(c, r->pid, r->tid);
	write_record(c, r, NULL);
	c->written++;
}

uint64_t dc_consumer_own_id(struct dc_consumer *c)
{
	return (1ULL << 40) + ++c->own_ids;
}

void dc_consumer_free(struct dc_consumer *c)
{
	if (!c)
		return;
	dc_shards_free(c->sh);
	free(c->flags_arg);
	free(c->role);
	free(c->bytes);
	for (unsigned i = 0; c->pq && i < c->nknown; i++)
		if (c->pq[i]) {
			free(c->pq[i]->nc.s);
			free(c->pq[i]);
		}
	free(c->pq);
	for (unsigned i = 0; i < c->nkn; i++)
		free(c->kn[i]);
	free(c->kn);
	dc_htab_free(&c->seen);
	free(c);
	dc_files_clear();
}
