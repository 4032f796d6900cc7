/* plancache.c: reads and writes the cache files of return plans (core/retsite.c), one per
 * file version, in a root-only directory walked with O_NOFOLLOW from "/". */
#define _GNU_SOURCE
#include "plancache.h"
#include "retsite.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DC_PLANCACHE_DIR "/var/cache/datacrumbs"
#define MAGIC "dcplan1\n"
#define MAX_FILE (256u << 20)

/* The file's header: the version of the file it plans and of the analysis. */
struct header {
	char magic[8];
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
	uint32_t bid_len, self_len;
	unsigned char bid[32], self[32];
	uint64_t n;
};

/* One record on disk, followed by `whylen` bytes of why and `nsites` uint64_t sites. */
struct rec {
	uint64_t offset, entry;
	uint8_t asked, noret, by_file, cxx, mode, go;
	uint16_t nsites, whylen;
	uint8_t pad[6];
};

/* This program's build-id (the analysis' version), from its PT_NOTE (dl_iterate_phdr(3)). */
struct self_id {
	unsigned len;
	unsigned char id[32];
};

static int self_note(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct self_id *s = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
		size_t left = ph->p_memsz;
		while (left >= sizeof(ElfW(Nhdr))) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			size_t name = (nh->n_namesz + 3) & ~3u, desc = (nh->n_descsz + 3) & ~3u;
			size_t all = sizeof(*nh) + name + desc;
			if (all > left)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(p + sizeof(*nh), "GNU", 4) && nh->n_descsz <= sizeof(s->id) &&
			    nh->n_descsz > 0) {
				s->len = nh->n_descsz;
				memcpy(s->id, p + sizeof(*nh) + name, nh->n_descsz);
				return 1;
			}
			p += all;
			left -= all;
		}
	}
	return 1; /* the first object is the program itself: stop there */
}

static const struct self_id *self_id(void)
{
	static struct self_id s;
	static int done;
	if (!done) {
		dl_iterate_phdr(self_note, &s);
		done = 1;
	}
	return &s;
}

/* Is the directory open as fd owned by root and writable by nobody else (strict: nor
 * readable or searchable: the cache's own)? */
static int dir_ok(int fd, int strict)
{
	struct stat st;
	return !fstat(fd, &st) && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	       !(st.st_mode & (strict ? 077 : 022));
}

/* The cache directory, opened (O_PATH-free: O_RDONLY | O_DIRECTORY) by walking its path
 * from "/" one component at a time with O_NOFOLLOW, each checked by dir_ok; made (0700)
 * when missing and make is 1. -1 when not root, off, or a check fails. */
static int open_dir(int make)
{
	if (geteuid() != 0)
		return -1;
	const char *env = getenv("DATACRUMBS_PLAN_CACHE");
	if (env && getenv("SUDO_UID") && strcmp(env, "off"))
		env = NULL; /* under sudo(8) (-E: the caller's environment): the default only */
	const char *path = env && *env ? env : DC_PLANCACHE_DIR;
	if (!strcmp(path, "off") || path[0] != '/' || strlen(path) >= 1024)
		return -1;
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", path);
	int fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !dir_ok(fd, 0)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (char *c = buf + 1, *next; c && *c; c = next) {
		next = strchr(c, '/');
		if (next)
			*next++ = 0;
		if (!*c || !strcmp(c, ".") || !strcmp(c, ".."))
			goto fail;
		int last = !next || !*next;
		int sub = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 && errno == ENOENT && last && make && !mkdirat(fd, c, 0700))
			sub = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = sub;
		if (fd < 0 || !dir_ok(fd, last))
			goto fail;
	}
	return fd;
fail:
	if (fd >= 0)
		close(fd);
	return -1;
}

static void file_name(const struct dc_plankey *k, char *out, size_t len)
{
	snprintf(out, len, "%llx-%llx.plans", (unsigned long long)k->dev,
		 (unsigned long long)k->ino);
}

static void fill_header(struct header *h, const struct dc_plankey *k, uint64_t n)
{
	const struct self_id *s = self_id();
	memset(h, 0, sizeof(*h));
	memcpy(h->magic, MAGIC, 8);
	h->dev = k->dev;
	h->ino = k->ino;
	h->size = k->size;
	h->mtime_ns = k->mtime_ns;
	h->ctime_ns = k->ctime_ns;
	h->bid_len = k->build_id_len;
	memcpy(h->bid, k->build_id, sizeof(h->bid));
	h->self_len = s->len;
	memcpy(h->self, s->id, sizeof(h->self));
	h->n = n;
}

void dc_plancache_free(struct dc_planrec *recs, size_t n)
{
	if (!recs)
		return;
	free((void *)recs[n].sites); /* the records' sites and reasons: one block each */
	free((void *)recs[n].why);
	free(recs);
}

struct dc_planrec *dc_plancache_read(const struct dc_plankey *key, size_t *n)
{
	*n = 0;
	if (!self_id()->len || key->build_id_len > 32)
		return NULL;
	int dfd = open_dir(0);
	if (dfd < 0)
		return NULL;
	char name[64];
	file_name(key, name, sizeof(name));
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return NULL;
	struct stat st;
	unsigned char *b = NULL;
	struct dc_planrec *out = NULL;
	char *whys = NULL;       /* every reason, NUL-terminated, one after the other */
	uint64_t *sites = NULL;  /* every site: both fit in the file's size */
	size_t got = 0, wat = 0, sat = 0;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_nlink != 1 ||
	    (st.st_mode & 077) || st.st_size < (off_t)(sizeof(struct header) + 4) ||
	    st.st_size > (off_t)MAX_FILE || !(b = malloc((size_t)st.st_size)) ||
	    pread(fd, b, (size_t)st.st_size, 0) != st.st_size)
		goto bad;
	size_t len = (size_t)st.st_size - 4;
	uint32_t crc;
	memcpy(&crc, b + len, 4);
	struct header want, h;
	fill_header(&want, key, 0);
	memcpy(&h, b, sizeof(h));
	want.n = h.n;
	if (crc != (uint32_t)crc32(0, b, (uInt)len) || memcmp(&h, &want, sizeof(h)) ||
	    h.n > len / sizeof(struct rec) || !(out = calloc(h.n + 1, sizeof(*out))) ||
	    !(whys = malloc(len)) || !(sites = malloc(len)))
		goto bad;
	size_t at = sizeof(h);
	for (; got < h.n; got++) {
		struct rec r;
		if (len - at < sizeof(r))
			goto bad;
		memcpy(&r, b + at, sizeof(r));
		at += sizeof(r);
		if (r.nsites > DC_RETSITE_MAX || r.whylen >= 200 ||
		    len - at < r.whylen + (size_t)r.nsites * 8 || r.mode < DC_RETURNS_HIJACK ||
		    r.mode > DC_RETURNS_NONE || (r.mode == DC_RETURNS_INSN) != (r.nsites > 0) ||
		    r.offset >= key->size || r.entry >= key->size || (got && r.offset <
		    out[got - 1].offset))
			goto bad;
		/* each record's reason and sites fit in what is left of the file (checked
		 * above), so in the two blocks of the file's size */
		char *why = whys + wat;
		uint64_t *s = sites + sat;
		memcpy(why, b + at, r.whylen);
		why[r.whylen] = 0;
		wat += r.whylen + 1u;
		at += r.whylen;
		memcpy(s, b + at, r.nsites * sizeof(*s));
		sat += r.nsites;
		at += (size_t)r.nsites * 8;
		for (unsigned k = 0; k < r.nsites; k++) /* offsets, flagged (retsite.h) */
			if ((s[k] & ~DC_RETSITE_SHARED) >= key->size)
				goto bad;
		out[got] = (struct dc_planrec){ r.offset, r.entry, r.asked, r.noret, r.by_file,
						r.cxx, r.mode, r.go, r.nsites,
						r.nsites ? s : NULL, why };
	}
	if (at != len)
		goto bad;
	out[got].sites = sites; /* the blocks, for dc_plancache_free */
	out[got].why = whys;
	free(b);
	close(fd);
	*n = got;
	return out;
bad:
	free(whys);
	free(sites);
	free(out);
	free(b);
	close(fd);
	return NULL;
}

int dc_plancache_write(const struct dc_plankey *key, const struct dc_planrec *recs, size_t n)
{
	if (!self_id()->len || key->build_id_len > 32)
		return -1;
	size_t len = sizeof(struct header) + 4;
	for (size_t i = 0; i < n; i++) {
		size_t wl = strlen(recs[i].why);
		if (wl >= 200 || recs[i].nsites > DC_RETSITE_MAX)
			return -1;
		len += sizeof(struct rec) + wl + recs[i].nsites * 8;
	}
	if (len > MAX_FILE)
		return -1;
	unsigned char *b = malloc(len);
	if (!b)
		return -1;
	struct header h;
	fill_header(&h, key, n);
	memcpy(b, &h, sizeof(h));
	size_t at = sizeof(h);
	for (size_t i = 0; i < n; i++) {
		const struct dc_planrec *p = &recs[i];
		struct rec r = { p->offset, p->entry, (uint8_t)p->asked, (uint8_t)p->noret,
				 (uint8_t)p->by_file, (uint8_t)p->cxx, (uint8_t)p->mode,
				 (uint8_t)p->go, (uint16_t)p->nsites, (uint16_t)strlen(p->why),
				 { 0 } };
		memcpy(b + at, &r, sizeof(r));
		at += sizeof(r);
		memcpy(b + at, p->why, r.whylen);
		at += r.whylen;
		if (p->nsites)
			memcpy(b + at, p->sites, p->nsites * 8);
		at += p->nsites * 8;
	}
	uint32_t crc = (uint32_t)crc32(0, b, (uInt)at);
	memcpy(b + at, &crc, 4);
	int dfd = open_dir(1), r = -1;
	char name[64], tmp[96];
	file_name(key, name, sizeof(name));
	snprintf(tmp, sizeof(tmp), ".%s.%d", name, (int)getpid());
	int fd = dfd < 0 ? -1 : openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
					O_CLOEXEC, 0600);
	if (fd >= 0) {
		int ok = write(fd, b, len) == (ssize_t)len;
		ok = !close(fd) && ok;
		if (ok && !renameat(dfd, tmp, dfd, name))
			r = 0;
		else
			unlinkat(dfd, tmp, 0);
	}
	if (dfd >= 0)
		close(dfd);
	free(b);
	return r;
}
