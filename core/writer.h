/* writer.h: the DFTracer trace writer (.pfw / .pfw.gz), per ../shared/reference/trace-format.md.
 * Owns JSON escaping, string hashing (HH/FH/SH records), gzip members and the closing "]". */
#ifndef DC_WRITER_H
#define DC_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct dc_writer;

/* Hash of a string as the format contract defines it: MD5 of the bytes, digest bytes
 * 0,2,...,14 as 16 lowercase hex characters. `out` gets 17 bytes (NUL-terminated).
 * Source: trace-format.md "Hash" (corona183 -> 2dbbcec2c820dc4c). */
void dc_hash(const void *data, size_t len, char out[17]);
/* (An OpenSSL limited to FIPS algorithms has no MD5: out is then all zeros.) */

/* Writes a trace to fd (open for writing, positioned where the trace starts; `path` names
 * it in messages); the writer owns fd from now on, also on failure. compress=1 writes gzip
 * members (RFC 1952, ISA-L igzip at wthread.h DC_WT_LEVEL, one per text buffer of up to
 * 1 MiB, compressed and written by the writer's own thread), 0 a plain .pfw (written by that
 * thread too). Writes "[\n" and the HH record
 * for `hostname` (pid, tid of that record given). Returns NULL and fills err (one line
 * naming path and reason). The safe creation of the file is outfile.h's job. */
struct dc_writer *dc_writer_fdopen(int fd, const char *path, int compress,
				   const char *hostname, int pid, int tid, char *err,
				   size_t errlen);

/* dc_writer_fdopen on `path` opened O_CREAT|O_TRUNC|O_NOFOLLOW, mode 0600 (for tests and
 * tools writing where nobody else can; a run creates its trace with dc_out_create). */
struct dc_writer *dc_writer_open(const char *path, int compress, const char *hostname,
				 int pid, int tid, char *err, size_t errlen);

/* Returns the 16-hex hash of a file path, writing its FH record (with pid, tid) the first
 * time this path is seen. The returned pointer stays valid until dc_writer_close. */
const char *dc_writer_file(struct dc_writer *w, int pid, int tid, const char *path);
/* dc_writer_file for a path that lives, unchanged, until dc_writer_close (an interned one:
 * fdtable.h dc_files_intern): found again by its address, without hashing or comparing it. */
const char *dc_writer_file_run(struct dc_writer *w, int pid, int tid, const char *path);
/* Same for any other string: SH record. */
const char *dc_writer_string(struct dc_writer *w, int pid, int tid, const char *s);

/* Writes a thread_name / process_name record: kind is "thread_name" or "process_name",
 * name the shown name (value is ignored: the contract wants the literal kind there).
 * Also used for "PR" records (kind "PR", name key, value its value). */
void dc_writer_meta(struct dc_writer *w, const char *kind, int pid, int tid,
		    const char *name, const char *value);

/* A complete event: begin, then any number of args, then end. ts and dur in us
 * (ts since the Unix epoch). args.hhash is written first automatically. */
void dc_writer_begin(struct dc_writer *w, uint64_t id, const char *name, const char *cat,
		     int pid, int tid, uint64_t ts_us, uint64_t dur_us);
/* The `start` record (docs/trace-format.md): the traced process pid, its command line,
 * executable and cwd (as SH, SH and FH), the tracer's version, its parent ppid; ts_us
 * since the Unix epoch, id one of the tracer's own. */
void dc_writer_start(struct dc_writer *w, uint64_t id, int pid, uint64_t ts_us,
		     const char *cmdline, const char *exec, const char *cwd, int ppid,
		     const char *version);

/* A counter event (ph "C", no id/dur): begin with this, then args, then dc_writer_end. */
void dc_writer_begin_counter(struct dc_writer *w, const char *name, const char *cat,
			     int pid, int tid, uint64_t ts_us);
void dc_writer_arg_int(struct dc_writer *w, const char *key, int64_t v);
void dc_writer_arg_uint(struct dc_writer *w, const char *key, uint64_t v);
void dc_writer_arg_double(struct dc_writer *w, const char *key, double v);
void dc_writer_arg_str(struct dc_writer *w, const char *key, const char *s);
void dc_writer_end(struct dc_writer *w);

/* An args key quoted once, for the dc_writer_*_q calls that write it with one fixed-size
 * copy: `,"key":` JSON-escaped in s (len bytes; the rest of s zero). */
#define DC_QKEY_MAX 48
struct dc_qkey {
	unsigned char len;
	char s[DC_QKEY_MAX];
};

/* Fills q for key (NUL-terminated). Returns 0, or -1 when the quoted key does not fit
 * DC_QKEY_MAX (the caller then writes that key with the plain calls). */
int dc_qkey_make(struct dc_qkey *q, const char *key);

/* An event's name and layer quoted once (dc_qname_make), for dc_writer_begin_q:
 * `,"name":"N","cat":"C"` JSON-escaped, len bytes in s. */
struct dc_qname {
	size_t len;
	char *s;
};

/* Fills q for name and cat; q->s is malloc(3)ed (free it with free(q->s)). Returns 0, or
 * -1 when out of memory. */
int dc_qname_make(struct dc_qname *q, const char *name, const char *cat);

/* dc_writer_begin with the name and the layer quoted beforehand: the same bytes. */
void dc_writer_begin_q(struct dc_writer *w, uint64_t id, const struct dc_qname *nc, int pid,
		       int tid, uint64_t ts_us, uint64_t dur_us);
/* dc_writer_arg_int / dc_writer_arg_str with a pre-quoted key: the same bytes. */
void dc_writer_arg_int_q(struct dc_writer *w, const struct dc_qkey *k, int64_t v);
void dc_writer_arg_str_q(struct dc_writer *w, const struct dc_qkey *k, const char *s);
/* A hash (16 lowercase hex characters, dc_hash's) as a string arg, copied as it is. */
void dc_writer_arg_hash_q(struct dc_writer *w, const struct dc_qkey *k, const char *hash);

/* Ends the current gzip member (a no-op when nothing is buffered) and writes it out,
 * so everything so far survives a kill. Returns 0, or -1 on a write error now or in an
 * earlier automatic flush (errno set; ENOENT when the file has no name left: removed, or
 * its directory); after an error output is discarded. */
int dc_writer_flush(struct dc_writer *w);

/* As dc_writer_flush, but does not wait for the writer thread: the buffered text is handed
 * over (a member of its own) and written soon after; errors seen so far are returned.
 * For a periodic flush from the ring buffer's consumer, which must not wait on deflate. */
int dc_writer_handoff(struct dc_writer *w);

/* Events written so far (complete + counter events). */
uint64_t dc_writer_count(const struct dc_writer *w);

/* Of those, the events that reached the file: in complete gzip members (or plain text)
 * written out. After a write error the file is truncated back to the end of the last
 * complete member, so exactly these events can be read from it. */
uint64_t dc_writer_on_disk(const struct dc_writer *w);

/* The first write error (an errno value: ENOSPC, EIO, ENOENT when the file was removed),
 * or 0. Sticky: after it nothing more is written. */
int dc_writer_error(const struct dc_writer *w);

/* Ends the trace's text without closing: with complete=1 writes the final "]", then
 * flushes (dc_writer_flush), so that dc_writer_on_disk is final. Returns 0 or -1 with
 * errno. dc_writer_close then only closes. */
int dc_writer_finish(struct dc_writer *w, int complete);

/* Finishes the file: with complete=1 writes the final "]"; with complete=0 leaves the
 * trace open-ended (a cut trace, which check_pfw.py --partial accepts). Flushes, closes,
 * frees. Returns 0, or -1 on a write error. */
int dc_writer_close(struct dc_writer *w, int complete);

/* Writes `len` bytes of `s` JSON-escaped (no surrounding quotes) into buf: `"` `\` and
 * control characters escaped, each byte that is not part of valid UTF-8 written as \ufffd
 * (so the line stays UTF-8; hashes are always of the raw bytes). Returns the bytes written
 * (no NUL added), or -1 if cap is too small. Exposed for tests. */
long dc_json_escape(char *buf, size_t cap, const char *s, size_t len);

#endif
