/* plancache.h: the return plans of a file's functions (core/retsite.c) kept between runs,
 * one cache file per file version, in a directory only root can write. */
#ifndef DC_PLANCACHE_H
#define DC_PLANCACHE_H

#include <stddef.h>
#include <stdint.h>

/* A file's version: what no rewrite of the file keeps (stat(2)'s device, inode, size,
 * mtime and ctime; ctime cannot be set from user space, utimensat(2)) and its GNU
 * build-id (ELF note NT_GNU_BUILD_ID, elf(5); len 0: none). */
struct dc_plankey {
	uint64_t dev, ino, size, mtime_ns, ctime_ns;
	unsigned build_id_len;
	unsigned char build_id[32];
};

/* One function's plan as cached: the arguments of dc_retsite_plan it answers (offset,
 * asked, noret, by_file; cxx: the name starts with "_Z") and the struct dc_retplan fields. */
struct dc_planrec {
	uint64_t offset, entry;
	int asked, noret, by_file, cxx;
	int mode, go;
	unsigned nsites;
	const uint64_t *sites;
	const char *why;
};

/* The plans cached for the file of version *key: the records of the cache file that
 * names that version, sorted by offset, *n of them. NULL (and *n 0) when there is none or
 * it cannot be used: not root; the cache directory (/var/cache/datacrumbs, or
 * DATACRUMBS_PLAN_CACHE's absolute path, not taken under sudo; "off": no cache, taken
 * always) or one above it is not a
 * directory owned by root and writable by nobody else (each opened O_NOFOLLOW: no
 * symlink); the file is not root's, mode 0600, one link; its version, the analysis'
 * (this program's own build-id: a new build plans again) or its CRC-32 (zlib) differ;
 * a record out of bounds. Free with dc_plancache_free. */
struct dc_planrec *dc_plancache_read(const struct dc_plankey *key, size_t *n);
void dc_plancache_free(struct dc_planrec *recs, size_t n);

/* Writes recs[0..n) (sorted by offset) as the cache file of version *key, replacing the
 * file's old one (a new file renamed over it: readers see the old or the new). Only as
 * root, into the directory dc_plancache_read checks (made 0700 when missing). Returns 0,
 * or -1 (nothing written; the run goes on without a cache). */
int dc_plancache_write(const struct dc_plankey *key, const struct dc_planrec *recs, size_t n);

#endif
