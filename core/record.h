/* record.h: one event on its way from the ring buffer to the trace: decoded, offered to
 * the script's callback (which may change or drop it), then serialized by the writer. */
#ifndef DC_RECORD_H
#define DC_RECORD_H

#include <stdint.h>

#define DC_REC_ARGS  32     /* args per event, script-added ones included */
#define DC_REC_ARENA 8192   /* bytes for strings a script puts into an event */

struct dc_qkey;

struct dc_rec_arg {
	const char *key;
	const struct dc_qkey *q; /* key quoted beforehand (writer.h), NULL: none; set only
				    with a key that lives for the run, and kept with it */
	int is_str;      /* 1: s, 0: i */
	int64_t i;
	const char *s;
};

struct dc_record {
	uint64_t id;          /* unique within pid */
	const char *name;     /* function name */
	const char *cat;      /* layer */
	int pid, tid;         /* tgid, thread id */
	uint64_t ts_us;       /* entry, us since the Unix epoch */
	uint64_t dur_us;      /* us */
	int level;            /* nesting depth, 1 = outermost; 0: not written */
	int64_t p_idx;        /* enclosing event's id, -1 none */
	const char *path;     /* absolute file path (gives fhash), NULL none */
	const char *path2;    /* a second file of the call (gives fhash2): copy_file_range's
				 fd_out, sendfile's in_fd, splice's fd_out; NULL none */
	int counter;          /* 1: a counter event (profile mode), 0: a complete event */
	int nargs;
	struct dc_rec_arg args[DC_REC_ARGS];
	size_t used;          /* bytes of arena in use */
	char arena[DC_REC_ARENA];
};

/* Appends an integer arg; silently ignored past DC_REC_ARGS. */
static inline void dc_rec_int(struct dc_record *r, const char *key, int64_t v)
{
	if (r->nargs < DC_REC_ARGS)
		r->args[r->nargs++] = (struct dc_rec_arg){ .key = key, .i = v };
}

/* Appends a string arg (the pointer must outlive the record, or live in its arena). */
static inline void dc_rec_str(struct dc_record *r, const char *key, const char *s)
{
	if (r->nargs < DC_REC_ARGS)
		r->args[r->nargs++] = (struct dc_rec_arg){ .key = key, .is_str = 1, .s = s };
}

/* dc_rec_int / dc_rec_str with the key also quoted beforehand (q: key's, lives for the
 * run): the writer copies it instead of quoting key again. */
static inline void dc_rec_intq(struct dc_record *r, const char *key, const struct dc_qkey *q,
			       int64_t v)
{
	if (r->nargs < DC_REC_ARGS)
		r->args[r->nargs++] = (struct dc_rec_arg){ .key = key, .q = q, .i = v };
}

static inline void dc_rec_strq(struct dc_record *r, const char *key, const struct dc_qkey *q,
			       const char *s)
{
	if (r->nargs < DC_REC_ARGS)
		r->args[r->nargs++] = (struct dc_rec_arg){ .key = key, .q = q, .is_str = 1,
							   .s = s };
}

/* Copies n bytes of s (plus a NUL) into the record's arena; NULL when it is full. */
const char *dc_rec_keep(struct dc_record *r, const char *s, size_t n);

#endif
