/* kernel.bpf.c: the PAGE_CACHE and BLOCK layers from tracepoints (tp_btf): pages entering
 * and leaving the page cache in a traced process's context, and block requests it issued. */
#include "common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Attach cookies of the probes, by datacrumbs.h DC_TRACEPOINTS order, set by the loader
 * before load; 0: not asked for (the loader also turns such programs' autoload off). */
const volatile __u64 tp_cookie[DC_TP_NR] = {};

/* --- page cache ------------------------------------------------------------------------ */

/* folio.flags before Linux 6.18, a plain unsigned long (since, a memdesc_flags_t holding
 * one): the same bits, read through whichever layout this kernel has (CO-RE flavor). */
struct folio___ulong {
	unsigned long flags;
} __attribute__((preserve_access_index));

/* Pages in a folio: 1 << order for a large folio (PG_head set), else 1 (mm.h folio_order). */
static __always_inline __u64 folio_pages(struct folio *folio)
{
	unsigned long flags = 0, flags1 = 0;
	if (bpf_core_type_exists(memdesc_flags_t))
		bpf_probe_read_kernel(&flags, sizeof(flags), &folio->flags);
	else
		bpf_probe_read_kernel(&flags, sizeof(flags),
				      &((struct folio___ulong *)folio)->flags);
	if (!(flags & (1UL << bpf_core_enum_value(enum pageflags, PG_head))))
		return 1;
	bpf_probe_read_kernel(&flags1, sizeof(flags1), &folio->_flags_1);
	return 1ULL << (flags1 & 0xff);
}

/* args: ino, dev (user encoding), index (first page), pages, bytes (4096 per page) */
static __always_inline void folio_event(__u64 cookie, struct folio *folio)
{
	struct inode *host = BPF_CORE_READ(folio, mapping, host);
	__u64 pages = folio_pages(folio);
	__u64 args[DC_MAX_ARGS] = {
		BPF_CORE_READ(host, i_ino),
		user_dev(BPF_CORE_READ(host, i_sb, s_dev)),
		BPF_CORE_READ(folio, index),
		pages,
		pages * 4096,
		0,
	};
	emit_now(cookie, args);
}

SEC("tp_btf/mm_filemap_add_to_page_cache")
int BPF_PROG(dc_pc_add, struct folio *folio)
{
	folio_event(tp_cookie[DC_TP_PC_ADD], folio);
	return 0;
}

SEC("tp_btf/mm_filemap_delete_from_page_cache")
int BPF_PROG(dc_pc_delete, struct folio *folio)
{
	folio_event(tp_cookie[DC_TP_PC_DELETE], folio);
	return 0;
}

/* A read looking pages up in the cache (filemap_get_pages): args ino, dev, first index,
 * pages asked, bytes asked; pages asked minus pages added are the cache hits. */
SEC("tp_btf/mm_filemap_get_pages")
int BPF_PROG(dc_pc_lookup, struct address_space *mapping, unsigned long index,
	     unsigned long last_index)
{
	struct inode *host = BPF_CORE_READ(mapping, host);
	__u64 pages = last_index >= index ? last_index - index + 1 : 0;
	__u64 args[DC_MAX_ARGS] = {
		BPF_CORE_READ(host, i_ino),
		user_dev(BPF_CORE_READ(host, i_sb, s_dev)),
		index,
		pages,
		pages * 4096,
		0,
	};
	emit_now(tp_cookie[DC_TP_PC_LOOKUP], args);
	return 0;
}

/* --- block ----------------------------------------------------------------------------- */

/* A request a traced thread queued or issued, until it completes. */
struct dc_blk {
	__u32 tgid, tid, level, pad;
	__u64 id, parent;
	__u64 queued;  /* block_rq_insert time, ns (0: issued directly) */
	__u64 issued;  /* block_rq_issue time, ns */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH); /* a request freed unseen ages out */
	__uint(max_entries, 16384);
	__type(key, __u64);        /* struct request * */
	__type(value, struct dc_blk);
} blk_inflight SEC(".maps");

/* Starts following rq for the current thread (a fresh entry: a struct request is reused
 * for later requests, so an old entry must never be inherited), or, when the current
 * process is not traced, forgets any entry rq has. Returns the entry or NULL. */
static __always_inline struct dc_blk *blk_track(struct request *rq, __u64 now, int queued)
{
	__u64 key = (__u64)rq;
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct dc_blk fresh = { .tgid = pid_tgid >> 32, .tid = (__u32)pid_tgid };
	if (current_place(fresh.tgid, fresh.tid, &fresh.id, &fresh.parent, &fresh.level)) {
		bpf_map_delete_elem(&blk_inflight, &key);
		return NULL;
	}
	fresh.queued = queued ? now : 0;
	bpf_map_update_elem(&blk_inflight, &key, &fresh, BPF_ANY);
	return bpf_map_lookup_elem(&blk_inflight, &key);
}

SEC("tp_btf/block_rq_insert")
int BPF_PROG(dc_blk_insert, struct request *rq)
{
	blk_track(rq, bpf_ktime_get_ns(), 1);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(dc_blk_issue, struct request *rq)
{
	__u64 now = bpf_ktime_get_ns(), key = (__u64)rq;
	struct dc_blk *b = bpf_map_lookup_elem(&blk_inflight, &key);
	/* queued by a traced thread and not issued yet: that entry; else a direct issue */
	if (!b || b->issued)
		b = blk_track(rq, now, 0);
	if (b)
		b->issued = now;
	return 0;
}

/* A request merged into another one is freed without completing: forget it (its bytes
 * complete with the request it joined). */
SEC("tp_btf/block_rq_merge")
int BPF_PROG(dc_blk_merge, struct request *rq)
{
	__u64 key = (__u64)rq;
	bpf_map_delete_elem(&blk_inflight, &key);
	return 0;
}

/* args: dev (user encoding), sector, bytes, op (REQ_OP_*), queue ns (insert to issue),
 * error (blk_status_t); ts is the issue, dur the device's time (issue to complete). */
SEC("tp_btf/block_rq_complete")
int BPF_PROG(dc_blk_complete, struct request *rq, blk_status_t error, unsigned int nr_bytes)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns();
	struct dc_blk *b = bpf_map_lookup_elem(&blk_inflight, &key);
	if (!b)
		return 0;
	struct gendisk *disk = BPF_CORE_READ(rq, q, disk);
	__u32 kdev = ((__u32)BPF_CORE_READ(disk, major) << 20) | BPF_CORE_READ(disk, first_minor);
	__u64 issued = b->issued ? b->issued : now;
	__u64 args[DC_MAX_ARGS] = {
		user_dev(kdev),
		BPF_CORE_READ(rq, __sector),
		nr_bytes,
		BPF_CORE_READ(rq, cmd_flags) & 0xff,
		b->queued && b->issued ? b->issued - b->queued : 0,
		error,
	};
	/* nested in the call that issued it only if that call is still open on its thread
	 * (a synchronous request: O_DIRECT, fsync); readahead and writeback complete later */
	__u64 parent = 0;
	__u32 level = 1, tid = b->tid;
	struct dc_stack *st = stack_of(tid);
	if (st && b->parent) {
		for (int i = 0; i < DC_MAX_DEPTH; i++) {
			if (i < st->depth && st->f[i].id == b->parent) {
				parent = b->parent;
				level = b->level;
			}
		}
	}
	emit_record(tp_cookie[DC_TP_BLOCK], b->tgid, b->tid, b->id, parent, level, issued, now - issued,
		    args, b->parent && !parent ? DC_F_ASYNC : 0);
	bpf_map_delete_elem(&blk_inflight, &key);
	return 0;
}
