/* corebtf.c: a small target BTF for libbpf's CO-RE relocations (corebtf.h): the kernel's
 * types an object names, copied with what they hold, renumbered, written to a memfd. */
#define _GNU_SOURCE
#include "corebtf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "util.h"

/* Why. For each type a program relocates, libbpf 1.1 looks at every type of the target
 * BTF (bpf_core_add_cands: a kind test, then the name), once per object: with the
 * kernel's 126,668 types that was ~40 ms of CPU per run here (perf: 11 ms on
 * uprobe.bpf.c's loading thread, the start-up's critical path). Here one pass over the
 * kernel's types picks those named as the object's own, and libbpf then searches a few
 * hundred. */

int dc_corebtf_open(char *path, size_t pathlen)
{
	int fd = memfd_create("datacrumbs-core-btf", MFD_CLOEXEC);
	if (fd >= 0)
		snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

/* libbpf's essential name (tools/lib/bpf/relo_core.c bpf_core_essential_name_len): the
 * name up to a flavor suffix, "___" between two characters that are not '_' (struct
 * task_struct___old is task_struct). */
static size_t essential_len(const char *name)
{
	size_t n = strlen(name);
	for (size_t i = n >= 5 ? n - 5 + 1 : 0; i-- > 0;)
		if (name[i] != '_' && name[i + 1] == '_' && name[i + 2] == '_' &&
		    name[i + 3] == '_' && name[i + 4] != '_')
			return i + 1;
	return n;
}

/* Kinds a relocation's root type has: the named ones a candidate search compares. */
static int root_kind(int kind)
{
	return kind == BTF_KIND_STRUCT || kind == BTF_KIND_UNION || kind == BTF_KIND_ENUM ||
	       kind == BTF_KIND_ENUM64 || kind == BTF_KIND_TYPEDEF || kind == BTF_KIND_FWD;
}

/* The object's root names, found by hash (util.h dc_index over names[]). */
struct names {
	struct dc_index ix;
	const char **name; /* into the object's BTF strings */
	size_t *len;
	size_t n, cap;
};

static uint64_t name_hash(const char *s, size_t n)
{
	return dc_hash_bytes(14695981039346656037ULL, s, n);
}

struct name_key {
	const char *s;
	size_t n;
};

static int name_match(size_t idx, const void *key, void *arg)
{
	const struct names *ns = arg;
	const struct name_key *k = key;
	return ns->len[idx] == k->n && !memcmp(ns->name[idx], k->s, k->n);
}

static int names_add(struct names *ns, const char *s, size_t n)
{
	struct name_key k = { s, n };
	uint64_t h = name_hash(s, n);
	if (dc_index_find(&ns->ix, h, name_match, &k, ns) >= 0)
		return 0;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? 2 * ns->cap : 256;
		const char **nn = realloc(ns->name, cap * sizeof(*nn));
		if (!nn)
			return -1;
		ns->name = nn;
		size_t *nl = realloc(ns->len, cap * sizeof(*nl));
		if (!nl)
			return -1;
		ns->len = nl;
		ns->cap = cap;
	}
	ns->name[ns->n] = s;
	ns->len[ns->n] = n;
	if (dc_index_add(&ns->ix, h, ns->n))
		return -1;
	ns->n++;
	return 0;
}

/* The ids a type of kind refers to, as pointers into t (so that they can be rewritten),
 * into out[] (at most max); its count. A pointer's target is reported too: the caller
 * tells it apart (kind PTR). */
static int refs_of(struct btf_type *t, __u32 **out, int max)
{
	int n = 0, kind = btf_kind(t);
	switch (kind) {
	case BTF_KIND_PTR:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_TYPE_TAG:
	case BTF_KIND_FUNC:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		if (n < max)
			out[n++] = &t->type;
		break;
	case BTF_KIND_ARRAY: {
		struct btf_array *a = btf_array(t);
		if (n + 2 <= max) {
			out[n++] = &a->type;
			out[n++] = &a->index_type;
		}
		break;
	}
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION: {
		struct btf_member *m = btf_members(t);
		for (int i = 0; i < btf_vlen(t) && n < max; i++)
			out[n++] = &m[i].type;
		break;
	}
	case BTF_KIND_FUNC_PROTO: {
		struct btf_param *p = btf_params(t);
		if (n < max)
			out[n++] = &t->type;
		for (int i = 0; i < btf_vlen(t) && n < max; i++)
			out[n++] = &p[i].type;
		break;
	}
	case BTF_KIND_DATASEC: {
		struct btf_var_secinfo *v = btf_var_secinfos(t);
		for (int i = 0; i < btf_vlen(t) && n < max; i++)
			out[n++] = &v[i].type;
		break;
	}
	default: /* INT, ENUM, ENUM64, FWD, FLOAT: none */
		break;
	}
	return n;
}

/* Copies kernel type k into dst, once: its new id goes in map[k] and k in order[new id]
 * (the copy still names the kernel's ids: renumbered after). 0, or a negative errno. */
static int copy_type(struct btf *dst, const struct btf *kern, __u32 k, __u32 *map,
		     __u32 *order)
{
	if (map[k])
		return 0;
	int id = btf__add_type(dst, kern, btf__type_by_id(kern, k));
	if (id < 0)
		return id;
	map[k] = id;
	order[id] = k;
	return 0;
}

/* A BTF type has at most 65,535 members (vlen is 16 bits): refs_of's bound. */
#define MAXREFS 65536

int dc_corebtf_build(const struct btf *local, const struct btf *kern, struct btf **out)
{
	struct names ns = { 0 };
	__u32 nk = btf__type_cnt(kern), nl = btf__type_cnt(local);
	__u32 *map = calloc(nk, sizeof(*map));    /* kernel id -> new id, 0: not copied */
	__u32 *order = calloc(nk, sizeof(*order)); /* new id -> kernel id */
	__u32 **refs = malloc(MAXREFS * sizeof(*refs));
	struct btf *dst = btf__new_empty();
	int e = 0;
	if (!map || !order || !refs || !dst) {
		e = ENOMEM;
		goto out;
	}
	for (__u32 i = 1; i < nl; i++) {
		const struct btf_type *t = btf__type_by_id(local, i);
		const char *s = btf__name_by_offset(local, t->name_off);
		if (root_kind(btf_kind(t)) && s && *s && names_add(&ns, s, essential_len(s))) {
			e = ENOMEM;
			goto out;
		}
	}
	/* the roots, in the kernel's order; then, breadth first, what each copied type holds
	 * (a pointer's target only when it is copied anyway: second pass) */
	for (__u32 i = 1; i < nk; i++) {
		const struct btf_type *t = btf__type_by_id(kern, i);
		if (!root_kind(btf_kind(t)) || !t->name_off)
			continue;
		const char *s = btf__name_by_offset(kern, t->name_off);
		struct name_key k = { s, strlen(s) };
		if (dc_index_find(&ns.ix, name_hash(k.s, k.n), name_match, &k, &ns) >= 0 &&
		    (e = -copy_type(dst, kern, i, map, order)))
			goto out;
	}
	/* btf__type_cnt(dst) grows as the loop copies: breadth first */
	for (__u32 id = 1; id < btf__type_cnt(dst); id++) {
		/* read the references from the kernel's type (the copy's are the same ids);
		 * refs_of only reads through its pointers here */
		struct btf_type *kt = (struct btf_type *)btf__type_by_id(kern, order[id]);
		int n = btf_kind(kt) == BTF_KIND_PTR ? 0 : refs_of(kt, refs, MAXREFS);
		for (int r = 0; r < n; r++)
			if (*refs[r] && *refs[r] < nk &&
			    (e = -copy_type(dst, kern, *refs[r], map, order)))
				goto out;
	}
	__u32 ncopied = btf__type_cnt(dst) - 1;
	/* renumber: every reference of a copy to its target's new id; a pointer to a type
	 * not copied becomes void * (0) */
	for (__u32 id = 1; id <= ncopied; id++) {
		struct btf_type *t = (struct btf_type *)btf__type_by_id(dst, id);
		int n = refs_of(t, refs, MAXREFS), ptr = btf_kind(t) == BTF_KIND_PTR;
		for (int r = 0; r < n; r++) {
			__u32 k = *refs[r];
			__u32 to = k && k < nk ? map[k] : 0;
			if (k && !to && !ptr) { /* every held type was copied above */
				e = EPROTO;
				goto out;
			}
			*refs[r] = to;
		}
	}
	*out = dst;
	dst = NULL;
out:
	btf__free(dst);
	dc_index_free(&ns.ix);
	free(ns.name);
	free(ns.len);
	free(map);
	free(order);
	free(refs);
	errno = e;
	return e ? -1 : 0;
}

/* Writes all of buf[len] to fd. 0, or -1 with errno. */
static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int dc_corebtf_fill(int fd, const struct bpf_object *obj, const struct btf *kern)
{
	const struct btf *local = bpf_object__btf(obj);
	struct btf *small = NULL;
	int e = 0;
	__u32 size = 0;
	const void *raw;
	if (!local || !kern)
		e = EINVAL;
	else if (dc_corebtf_build(local, kern, &small))
		e = errno;
	else if (!(raw = btf__raw_data(small, &size)) || write_all(fd, raw, size))
		e = errno ? errno : ENOMEM;
	btf__free(small);
	if (!e)
		return 0;
	/* the whole kernel BTF instead: the same relocations, libbpf's full search */
	if (kern && !ftruncate(fd, 0) && !lseek(fd, 0, SEEK_SET) &&
	    (raw = btf__raw_data(kern, &size)))
		write_all(fd, raw, size);
	errno = e;
	return -1;
}
