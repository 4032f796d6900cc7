/* probes.c: reads probe description files (probes/<layer>.yaml, format in docs/probes.md)
 * with libyaml's document API into struct dc_layer. Knows nothing of ELF, BPF or attaching. */
#define _GNU_SOURCE
#include "probes.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "retsite.h"
#include "syscalls.h"

#define FILE_MAX (16 << 20)     /* a description larger than this is surely a mistake */

/* The kinds as written in the file; indexed by enum dc_arg_kind (kept in enum order). */
static const struct { const char *name; enum dc_arg_kind kind; } arg_kinds[] = {
	{ "_", DC_ARG_NONE },       { "int", DC_ARG_INT },   { "uint", DC_ARG_UINT },
	{ "fd", DC_ARG_FD },        { "dirfd", DC_ARG_DIRFD }, { "path", DC_ARG_PATH },
	{ "iov", DC_ARG_IOV },      { "iovcnt", DC_ARG_IOVCNT }, { "dir", DC_ARG_DIR },
	{ "long", DC_ARG_LONG },    { "mode", DC_ARG_MODE },
	{ "ino", DC_ARG_INO },      { "dev", DC_ARG_DEV },   { "file", DC_ARG_FILE },
	{ "str", DC_ARG_STR },      { "size", DC_ARG_SIZE }, { "nmemb", DC_ARG_NMEMB },
	{ "handle", DC_ARG_HANDLE }, { "handle_in", DC_ARG_HANDLE_IN },
	{ "handle_out", DC_ARG_HANDLE_OUT }, { "long_out", DC_ARG_LONG_OUT },
	{ "elems", DC_ARG_ELEMS },  { "datatype", DC_ARG_DATATYPE }, { "status", DC_ARG_STATUS },
	{ "target", DC_ARG_TARGET }, { "text", DC_ARG_TEXT }, { "line", DC_ARG_LINE },
	{ "addr", DC_ARG_ADDR },
};
#define KINDS_LIST "int, uint, long, mode, fd, dirfd, path, target, text, line, addr, iov, " \
	"iovcnt, dir, ino, dev, file, str, size, nmemb, handle, handle_in, handle_out, " \
	"long_out, elems, datatype, status, _"

static const struct { const char *name; enum dc_effect fx; } effects[] = {
	{ "open", DC_FX_OPEN },         { "close", DC_FX_CLOSE },   { "dup", DC_FX_DUP },
	{ "dup2", DC_FX_DUP2 },         { "fcntl", DC_FX_FCNTL },   { "chdir", DC_FX_CHDIR },
	{ "fchdir", DC_FX_FCHDIR },     { "opendir", DC_FX_OPENDIR },
	{ "fdopendir", DC_FX_FDOPENDIR }, { "closedir", DC_FX_CLOSEDIR },
	{ "fopen", DC_FX_FOPEN },       { "fclose", DC_FX_FCLOSE }, { "hopen", DC_FX_HOPEN },
	{ "hclose", DC_FX_HCLOSE },     { "rank", DC_FX_RANK },     { "mmap", DC_FX_MMAP },
	{ "munmap", DC_FX_MUNMAP },     { "rename", DC_FX_RENAME }, { "unlink", DC_FX_UNLINK },
};
#define EFFECTS_LIST "open, close, dup, dup2, fcntl, chdir, fchdir, opendir, fdopendir, " \
	"closedir, fopen, fclose, hopen, hclose, rank, mmap, munmap, rename, unlink"

/* What each effect needs among the arguments (checked so a mistake shows at load time,
 * not as a silently wrong fd table): count of arguments of one kind. */
static const struct { enum dc_effect fx; enum dc_arg_kind kind; int n; } effect_needs[] = {
	{ DC_FX_OPEN, DC_ARG_PATH, 1 },     { DC_FX_CLOSE, DC_ARG_FD, 1 },
	{ DC_FX_DUP, DC_ARG_FD, 1 },        { DC_FX_DUP2, DC_ARG_FD, 2 },
	{ DC_FX_FCNTL, DC_ARG_FD, 1 },      { DC_FX_CHDIR, DC_ARG_PATH, 1 },
	{ DC_FX_FCHDIR, DC_ARG_FD, 1 },     { DC_FX_OPENDIR, DC_ARG_PATH, 1 },
	{ DC_FX_FDOPENDIR, DC_ARG_FD, 1 },  { DC_FX_CLOSEDIR, DC_ARG_DIR, 1 },
	{ DC_FX_FCLOSE, DC_ARG_FILE, 1 },   { DC_FX_HOPEN, DC_ARG_PATH, 1 },
	{ DC_FX_HOPEN, DC_ARG_HANDLE_OUT, 1 }, { DC_FX_HCLOSE, DC_ARG_HANDLE_IN, 1 },
	{ DC_FX_MMAP, DC_ARG_FD, 1 },       { DC_FX_MUNMAP, DC_ARG_ADDR, 1 },
	{ DC_FX_RENAME, DC_ARG_PATH, 2 },   { DC_FX_UNLINK, DC_ARG_PATH, 1 },
};

/* State of one load: the file name for messages and the first error. */
struct ctx {
	const char *path;
	yaml_document_t *doc;
	char *err;
	size_t errlen;
	int failed;
};

/* Records "PATH:LINE: message" (the first error wins). Returns -1 for `return fail(...)`. */
static int fail(struct ctx *c, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (c->failed)
		return -1;
	c->failed = 1;
	if (!c->err || c->errlen == 0)
		return -1;
	n = snprintf(c->err, c->errlen, "%s:%d: ", c->path, line);
	if (n >= 0 && (size_t)n < c->errlen) {
		va_start(ap, fmt);
		vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* 1-based line where a node starts. */
static int node_line(const yaml_node_t *n)
{
	return (int)n->start_mark.line + 1;
}

static const char *node_type_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:   return "a scalar";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_MAPPING_NODE:  return "a mapping";
	default:                 return "nothing";
	}
}

/* The value of a scalar node as a C string (libyaml keeps it NUL-terminated). */
static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* 1 when s is a C identifier. */
static int is_ident(const char *s)
{
	const char *p;

	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (p = s; *p; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			return 0;
	return 1;
}

/* Checks that `n` (the value of key `key`) is a non-empty scalar that fits `size` bytes
 * and copies it to out. */
static int get_string(struct ctx *c, const char *key, const yaml_node_t *n, char *out,
		      size_t size)
{
	size_t len;

	if (n->type != YAML_SCALAR_NODE)
		return fail(c, node_line(n), "'%s' must be a string, not %s", key,
			    node_type_name(n));
	len = n->data.scalar.length;
	if (len == 0)
		return fail(c, node_line(n), "'%s' is empty", key);
	if (len >= size)
		return fail(c, node_line(n), "'%s' is longer than %zu characters", key, size - 1);
	if (strlen(scalar(n)) != len)
		return fail(c, node_line(n), "'%s' holds a NUL character", key);
	memcpy(out, scalar(n), len + 1);
	return 0;
}

/* Walks a mapping's keys: each must be a scalar, named in `allowed`, and appear once.
 * Calls fn for each pair. Returns 0 or -1 (error recorded). */
static int each_pair(struct ctx *c, const yaml_node_t *map, const char *const *allowed,
		     int (*fn)(struct ctx *c, const char *key, const yaml_node_t *k,
			       const yaml_node_t *v, void *arg), void *arg)
{
	yaml_node_pair_t *p, *q;

	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		yaml_node_t *v = yaml_document_get_node(c->doc, p->value);
		const char *const *a;

		if (!k || !v || k->type != YAML_SCALAR_NODE)
			return fail(c, k ? node_line(k) : 1, "a key must be a plain name");
		for (a = allowed; *a && strcmp(*a, scalar(k)) != 0; a++)
			;
		if (!*a)
			return fail(c, node_line(k), "unknown field '%s'", scalar(k));
		for (q = map->data.mapping.pairs.start; q < p; q++) {
			yaml_node_t *k2 = yaml_document_get_node(c->doc, q->key);

			if (k2 && k2->type == YAML_SCALAR_NODE && strcmp(scalar(k2), scalar(k)) == 0)
				return fail(c, node_line(k), "duplicate field '%s' (first at line %d)",
					    scalar(k), node_line(k2));
		}
		if (fn(c, scalar(k), k, v, arg) != 0)
			return -1;
	}
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * One function entry
 * ------------------------------------------------------------------------------------- */

int dc_ret_kind_of(const char *name)
{
	static const char *const names[] = {
		[DC_RET_INT] = "int", [DC_RET_LONG] = "long", [DC_RET_POINTER] = "pointer",
		[DC_RET_ERRCODE] = "errcode", [DC_RET_VOID] = "void",
	};
	size_t i;

	for (i = 0; i < sizeof names / sizeof names[0]; i++)
		if (strcmp(name, names[i]) == 0)
			return (int)i;
	return -1;
}

int dc_arg_parse(const char *text, struct dc_arg *a, char *err, size_t errlen)
{
	char buf[128], *kind, *name, *extra, *save = NULL;
	size_t i;

	if (strlen(text) >= sizeof buf) {
		snprintf(err, errlen, "argument '%.40s...' is too long", text);
		return -1;
	}
	strcpy(buf, text);
	kind = strtok_r(buf, " \t", &save);
	name = kind ? strtok_r(NULL, " \t", &save) : NULL;
	extra = name ? strtok_r(NULL, " \t", &save) : NULL;
	if (!kind || extra) {
		snprintf(err, errlen, "argument '%s': expected 'KIND NAME'", text);
		return -1;
	}
	for (i = 0; i < sizeof arg_kinds / sizeof arg_kinds[0]; i++)
		if (strcmp(kind, arg_kinds[i].name) == 0)
			break;
	if (i == sizeof arg_kinds / sizeof arg_kinds[0]) {
		snprintf(err, errlen, "unknown argument kind '%s' in '%s' (kinds: %s)", kind, text,
			 KINDS_LIST);
		return -1;
	}
	a->kind = arg_kinds[i].kind;
	a->name[0] = '\0';
	if (!name) {
		if (a->kind != DC_ARG_NONE) {
			snprintf(err, errlen, "argument '%s' has no name ('%s NAME')", text, kind);
			return -1;
		}
		return 0;
	}
	if (!is_ident(name)) {
		snprintf(err, errlen, "argument name '%s' is not a C identifier", name);
		return -1;
	}
	if (strlen(name) >= sizeof a->name) {
		snprintf(err, errlen, "argument name '%s' is longer than %zu characters", name,
			 sizeof a->name - 1);
		return -1;
	}
	static const char *const reserved[] = { "hhash", "fhash", "level", "p_idx", "ret", "errno",
						"unfinished", "unwound", NULL };
	for (int r = 0; reserved[r]; r++)
		if (!strcmp(name, reserved[r])) {
			snprintf(err, errlen, "argument name '%s' is the tracer's own (reserved: "
				 "hhash, fhash, level, p_idx, ret, errno, unfinished, unwound)", name);
			return -1;
		}
	strcpy(a->name, name);
	return 0;
}

/* Parses one args item, "KIND NAME" or "_" alone, into a. */
static int parse_arg(struct ctx *c, const yaml_node_t *n, struct dc_arg *a)
{
	char msg[256];

	if (n->type != YAML_SCALAR_NODE)
		return fail(c, node_line(n), "an argument must be a string 'KIND NAME', not %s",
			    node_type_name(n));
	if (dc_arg_parse(scalar(n), a, msg, sizeof msg) != 0)
		return fail(c, node_line(n), "%s", msg);
	return 0;
}

/* Parses the args list into f, and checks the limits the BPF side has: two strings
 * (`path`, `target`: bpf/common.bpf.h call_return reads a second one, dc_pinfo.path2), two
 * dirfds (one per path), one iovec (with its count) and one DIR * per call
 * (bpf/datacrumbs.h cookie). */
static int parse_args(struct ctx *c, const yaml_node_t *n, struct dc_func *f)
{
	static const enum dc_arg_kind once[] = { DC_ARG_IOV, DC_ARG_IOVCNT, DC_ARG_TARGET,
						 DC_ARG_TEXT, DC_ARG_LINE, DC_ARG_ADDR,
						 DC_ARG_DIR, DC_ARG_STR, DC_ARG_SIZE,
						 DC_ARG_NMEMB, DC_ARG_ELEMS, DC_ARG_DATATYPE };
	yaml_node_item_t *it;
	int count[DC_ARG_NKINDS] = { 0 };
	int i, j;

	if (n->type != YAML_SEQUENCE_NODE)
		return fail(c, node_line(n), "'args' must be a list, not %s", node_type_name(n));
	f->nargs = 0;
	for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
		yaml_node_t *an = yaml_document_get_node(c->doc, *it);

		if (!an)
			return fail(c, node_line(n), "bad argument list");
		if (f->nargs == DC_PROBE_ARGS)
			return fail(c, node_line(an), "function '%s' has more than %d arguments",
				    f->name[0] ? f->name : "?", DC_PROBE_ARGS);
		if (parse_arg(c, an, &f->args[f->nargs]) != 0)
			return -1;
		for (j = 0; j < f->nargs; j++)
			if (f->args[f->nargs].name[0] &&
			    strcmp(f->args[j].name, f->args[f->nargs].name) == 0)
				return fail(c, node_line(an), "duplicate argument name '%s'",
					    f->args[j].name);
		count[f->args[f->nargs].kind]++;
		f->nargs++;
	}

	for (i = 0; i < (int)(sizeof once / sizeof once[0]); i++)
		if (count[once[i]] > 1)
			return fail(c, node_line(n), "more than one '%s' argument (at most one "
				    "is recorded per call)", arg_kinds[once[i]].name);
	if (count[DC_ARG_PATH] + count[DC_ARG_TARGET] > 2)
		return fail(c, node_line(n), "more than two string arguments (kinds path, target: "
			    "at most two are recorded per call)");
	if (count[DC_ARG_TARGET] && !count[DC_ARG_PATH])
		return fail(c, node_line(n), "a 'target' argument needs a 'path' argument (the "
			    "link it is resolved against)");
	if (count[DC_ARG_DIRFD] > 2)
		return fail(c, node_line(n), "more than two 'dirfd' arguments (one per path)");
	if (count[DC_ARG_TEXT] + count[DC_ARG_LINE] + count[DC_ARG_IOV] > 1)
		return fail(c, node_line(n), "more than one argument of kinds text, line, iov "
			    "(one byte count is read per call)");
	if (count[DC_ARG_IOV] != count[DC_ARG_IOVCNT])
		return fail(c, node_line(n), "an 'iov' argument needs an 'iovcnt' argument "
			    "and the other way round");
	/* one value read through a pointer per call (dc_event.aux) */
	if (count[DC_ARG_FILE] + count[DC_ARG_HANDLE_IN] + count[DC_ARG_HANDLE_OUT] +
	    count[DC_ARG_LONG_OUT] + count[DC_ARG_STATUS] > 1)
		return fail(c, node_line(n), "more than one argument of kinds file, handle_in, "
			    "handle_out, long_out, status (one is read per call)");
	return 0;
}

/* Values seen in one function mapping, before the checks that need all of them. */
struct func_parse {
	struct dc_func *f;
	const yaml_node_t *effect;  /* the effect value node, NULL: none */
	int have_name;
};

/* Why function `name` cannot take a uretprobe (it returns twice, or never), or NULL.
 * A uretprobe replaces the return address: setjmp's second return and the stack
 * unwinding of longjmp/exceptions then land in the trampoline (the program dies, SIGILL);
 * a call that never returns leaves its frame open for good. */
static const char *returns_oddly(const char *name)
{
	static const char *const twice[] = { "setjmp", "_setjmp", "__sigsetjmp", "sigsetjmp",
					     "vfork", "getcontext", "savectx", NULL };
	static const char *const never[] = { "exit", "_exit", "_Exit", "abort", "longjmp",
					     "_longjmp", "siglongjmp", "__longjmp_chk", "execve",
					     "execv", "execvp", "execvpe", "execl", "execlp", "execle",
					     "fexecve", "pthread_exit", "setcontext", NULL };
	for (int i = 0; twice[i]; i++)
		if (!strcmp(name, twice[i]))
			return "returns twice";
	for (int i = 0; never[i]; i++)
		if (!strcmp(name, never[i]))
			return "does not return (on success)";
	return NULL;
}

/* each_pair callback for a function mapping. */
/* `syscall: sys_NAME` or `syscall: [sys_NAME, ...]` (at most DC_FUNC_SYSCALLS): each a
 * system call of this architecture (asm/unistd_64.h), none twice. */
static int parse_syscalls(struct ctx *c, const yaml_node_t *v, struct dc_func *f)
{
	const yaml_node_item_t *it = NULL, *end = NULL;
	const yaml_node_t *one = v;
	int i;

	if (v->type == YAML_SEQUENCE_NODE) {
		it = v->data.sequence.items.start;
		end = v->data.sequence.items.top;
		if (it == end)
			return fail(c, node_line(v), "'syscall' is an empty list");
	}
	f->nsyscalls = 0;
	for (;;) {
		char *s;

		if (it) {
			if (it == end)
				break;
			one = yaml_document_get_node(c->doc, *it++);
			if (!one)
				return fail(c, node_line(v), "bad syscall list");
		} else if (f->nsyscalls) {
			break;
		}
		if (f->nsyscalls == DC_FUNC_SYSCALLS)
			return fail(c, node_line(one), "function '%s' names more than %d system "
				    "calls", f->name[0] ? f->name : "?", DC_FUNC_SYSCALLS);
		s = f->syscall[f->nsyscalls];
		if (get_string(c, "syscall", one, s, sizeof f->syscall[0]) != 0)
			return -1;
		if (strncmp(s, "sys_", 4) || !is_ident(s) || dc_syscall_nr(s) < 0)
			return fail(c, node_line(one), "syscall '%s' is not sys_<name> of a system "
				    "call of this architecture (asm/unistd_64.h)", s);
		for (i = 0; i < f->nsyscalls; i++)
			if (strcmp(f->syscall[i], s) == 0)
				return fail(c, node_line(one), "syscall '%s' named twice", s);
		f->nsyscalls++;
	}
	return 0;
}

static int func_field(struct ctx *c, const char *key, const yaml_node_t *k,
		      const yaml_node_t *v, void *arg)
{
	struct func_parse *fp = arg;
	struct dc_func *f = fp->f;
	size_t i;

	(void)k;
	if (strcmp(key, "name") == 0) {
		char name[64]; /* a C function of a description: an identifier */
		if (get_string(c, "name", v, name, sizeof name) != 0)
			return -1;
		free((char *)f->name);
		if (!(f->name = strdup(name)))
			return fail(c, node_line(v), "out of memory");
		if (!is_ident(f->name))
			return fail(c, node_line(v), "function name '%s' is not a C identifier",
				    f->name);
		fp->have_name = 1;
		if (returns_oddly(f->name))
			return fail(c, node_line(v), "'%s' %s: a uretprobe on it breaks the program or "
				    "never fires, so it cannot be probed", f->name, returns_oddly(f->name));
	} else if (strcmp(key, "symbol") == 0) {
		if (get_string(c, "symbol", v, f->symbol, sizeof f->symbol) != 0)
			return -1;
		if (!is_ident(f->symbol))
			return fail(c, node_line(v), "symbol '%s' is not a C identifier", f->symbol);
	} else if (strcmp(key, "syscall") == 0) {
		return parse_syscalls(c, v, f);
	} else if (strcmp(key, "args") == 0) {
		return parse_args(c, v, f);
	} else if (strcmp(key, "effect") == 0) {
		char buf[32];

		if (get_string(c, "effect", v, buf, sizeof buf) != 0)
			return -1;
		for (i = 0; i < sizeof effects / sizeof effects[0]; i++)
			if (strcmp(buf, effects[i].name) == 0)
				break;
		if (i == sizeof effects / sizeof effects[0])
			return fail(c, node_line(v), "unknown effect '%s' (effects: %s)", buf,
				    EFFECTS_LIST);
		f->effect = effects[i].fx;
		fp->effect = v;
	} else if (strcmp(key, "returns") == 0) {
		char buf[32];

		if (get_string(c, "returns", v, buf, sizeof buf) != 0)
			return -1;
		if ((f->returns = dc_returns_parse(buf)) < 0)
			return fail(c, node_line(v), "unknown returns '%s' (auto, hijack, "
				    "instructions or none)", buf);
	} else if (strcmp(key, "stream") == 0) {
		char buf[32];

		if (get_string(c, "stream", v, buf, sizeof buf) != 0)
			return -1;
		if (strcmp(buf, "stdin") && strcmp(buf, "stdout") && strcmp(buf, "stderr"))
			return fail(c, node_line(v), "unknown stream '%s' (stdin, stdout or stderr)",
				    buf);
		/* their fds 0, 1, 2 (stdin(3)) */
		f->stream = 1 + (!strcmp(buf, "stdin") ? 0 : !strcmp(buf, "stdout") ? 1 : 2);
	} else if (strcmp(key, "ret") == 0) {
		char buf[32];

		if (get_string(c, "ret", v, buf, sizeof buf) != 0)
			return -1;
		int k = dc_ret_kind_of(buf);

		if (k < 0)
			return fail(c, node_line(v), "unknown ret '%s' (" DC_RET_NAMES ")", buf);
		f->ret_kind = k;
	}
	return 0;
}

/* Parses one item of `functions` into f. */
static int parse_func(struct ctx *c, const yaml_node_t *n, struct dc_func *f)
{
	static const char *const keys[] = { "name", "symbol", "syscall", "args", "effect", "ret",
					    "returns", "stream", NULL };
	struct func_parse fp = { f, NULL, 0 };
	size_t i;

	memset(f, 0, sizeof *f);
	f->ret_kind = DC_RET_INT;
	f->line = node_line(n);
	if (n->type != YAML_MAPPING_NODE)
		return fail(c, node_line(n), "a function must be a mapping with 'name', not %s",
			    node_type_name(n));
	if (each_pair(c, n, keys, func_field, &fp) != 0)
		return -1;
	if (!fp.have_name)
		return fail(c, node_line(n), "function has no 'name'");

	/* An effect acts on an argument: it must be there. */
	for (i = 0; fp.effect && i < sizeof effect_needs / sizeof effect_needs[0]; i++) {
		int j, have = 0;

		if (effect_needs[i].fx != f->effect)
			continue;
		for (j = 0; j < f->nargs; j++)
			have += f->args[j].kind == effect_needs[i].kind;
		if (have < effect_needs[i].n)
			return fail(c, node_line(fp.effect), "effect '%s' of '%s' needs %s "
				    "of kind '%s'", scalar(fp.effect), f->name,
				    effect_needs[i].n > 1 ? "two arguments" : "an argument",
				    arg_kinds[effect_needs[i].kind].name);
	}
	/* effects that take the new fd or stream from the return value need it to be one */
	if ((f->effect == DC_FX_OPEN || f->effect == DC_FX_DUP || f->effect == DC_FX_FCNTL ||
	     f->effect == DC_FX_OPENDIR || f->effect == DC_FX_FDOPENDIR) &&
	    (f->ret_kind == DC_RET_ERRCODE || f->ret_kind == DC_RET_VOID))
		return fail(c, node_line(fp.effect), "effect '%s' of '%s' takes the return value, "
			    "which 'ret: %s' says is not an fd or pointer", scalar(fp.effect), f->name,
			    f->ret_kind == DC_RET_VOID ? "void" : "errcode");
	if (f->effect == DC_FX_FOPEN && f->ret_kind != DC_RET_POINTER)
		return fail(c, node_line(fp.effect), "effect 'fopen' of '%s' needs 'ret: pointer' "
			    "(the FILE * it returns)", f->name);
	return 0;
}

/* ---------------------------------------------------------------------------------------
 * The file
 * ------------------------------------------------------------------------------------- */

/* each_pair callback for the top-level mapping. */
static int top_field(struct ctx *c, const char *key, const yaml_node_t *k,
		     const yaml_node_t *v, void *arg)
{
	struct dc_layer *l = arg;
	yaml_node_item_t *it;
	int i;

	(void)k;
	if (strcmp(key, "layer") == 0)
		return get_string(c, "layer", v, l->name, sizeof l->name);
	if (strcmp(key, "library") == 0) {
		if (get_string(c, "library", v, l->library, sizeof l->library) != 0)
			return -1;
		const char *a = l->library; /* "a|b": no empty alternative */
		if (*a && (a[0] == '|' || a[strlen(a) - 1] == '|' || strstr(a, "||")))
			return fail(c, node_line(v), "empty alternative in 'library' ('%s')", a);
		return 0;
	}
	if (strcmp(key, "hint") == 0)
		return get_string(c, "hint", v, l->hint, sizeof l->hint);
	if (strcmp(key, "mechanism") == 0) {
		char buf[32];
		if (get_string(c, "mechanism", v, buf, sizeof buf) != 0)
			return -1;
		if (strcmp(buf, "uprobe") == 0)
			l->mechanism = DC_MECH_UPROBE;
		else if (strcmp(buf, "syscall") == 0)
			l->mechanism = DC_MECH_SYSCALL;
		else if (strcmp(buf, "tracepoint") == 0)
			l->mechanism = DC_MECH_TRACEPOINT;
		else if (strcmp(buf, "kernel") == 0)
			l->mechanism = DC_MECH_KERNEL;
		else
			return fail(c, node_line(v), "unknown mechanism '%s' (uprobe, syscall, "
				    "tracepoint or kernel)", buf);
		return 0;
	}

	/* functions */
	if (v->type != YAML_SEQUENCE_NODE)
		return fail(c, node_line(v), "'functions' must be a list, not %s",
			    node_type_name(v));
	if (v->data.sequence.items.top == v->data.sequence.items.start)
		return fail(c, node_line(v), "'functions' is empty");
	l->funcs = calloc((size_t)(v->data.sequence.items.top - v->data.sequence.items.start),
			  sizeof *l->funcs);
	if (!l->funcs)
		return fail(c, node_line(v), "out of memory");
	for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		yaml_node_t *fn = yaml_document_get_node(c->doc, *it);
		struct dc_func *f = &l->funcs[l->nfuncs];

		if (!fn)
			return fail(c, node_line(v), "bad function list");
		if (parse_func(c, fn, f) != 0) {
			free((char *)f->name); /* not counted in nfuncs: dc_layer_free misses it */
			f->name = NULL;
			return -1;
		}
		for (i = 0; i < l->nfuncs; i++)
			if (strcmp(l->funcs[i].name, f->name) == 0)
				return fail(c, f->line, "duplicate function '%s' (first at line %d)",
					    f->name, l->funcs[i].line);
		l->nfuncs++;
	}
	return 0;
}

/* Reads a whole file into memory. Returns the buffer (NUL-terminated) or NULL, errno set. */
static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!fp)
		return NULL;
	for (;;) {
		size_t r;

		if (cap - n < 4096) {
			char *nb;

			cap = cap ? cap * 2 : 16384;
			if (cap > FILE_MAX || !(nb = realloc(buf, cap + 1))) {
				free(buf);
				fclose(fp);
				errno = cap > FILE_MAX ? EFBIG : ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n, fp);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(fp)) {
		int e = errno;

		free(buf);
		fclose(fp);
		errno = e ? e : EIO;
		return NULL;
	}
	fclose(fp);
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Formats a libyaml parser error as "PATH:LINE: message". */
static void yaml_fail(struct ctx *c, const yaml_parser_t *p, const char *text, size_t len)
{
	int line;

	if (p->error == YAML_READER_ERROR) {
		/* Reader errors (bad encoding) carry a byte offset, not a mark. */
		size_t i;

		line = 1;
		for (i = 0; i < p->problem_offset && i < len; i++)
			line += text[i] == '\n';
		fail(c, line, "%s", p->problem ? p->problem : "cannot read the file");
		return;
	}
	if (p->error == YAML_MEMORY_ERROR) {
		fail(c, 1, "out of memory");
		return;
	}
	line = (int)p->problem_mark.line + 1;
	if (p->context)
		fail(c, line, "YAML syntax error: %s (%s that started at line %d)",
		     p->problem ? p->problem : "error", p->context,
		     (int)p->context_mark.line + 1);
	else
		fail(c, line, "YAML syntax error: %s", p->problem ? p->problem : "error");
}

/* Long on purpose: the libyaml document walk with every check's file:line message next
 * to the node it is about, and one cleanup path. */
struct dc_layer *dc_layer_load(const char *path, char *err, size_t errlen)
{
	static const char *const keys[] = { "layer", "library", "mechanism", "hint", "functions",
					    NULL };
	struct ctx c = { path, NULL, err, errlen, 0 };
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	yaml_node_t *root;
	struct dc_layer *l;
	char *text;
	size_t len = 0;

	if (!(text = slurp(path, &len))) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (!(l = calloc(1, sizeof *l))) {
		snprintf(err, errlen, "%s: out of memory", path);
		free(text);
		return NULL;
	}
	if (strlen(path) >= sizeof l->path) {
		snprintf(err, errlen, "%s: path longer than %zu characters", path,
			 sizeof l->path - 1);
		free(text);
		free(l);
		return NULL;
	}
	strcpy(l->path, path);

	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: out of memory", path);
		free(text);
		free(l);
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_fail(&c, &parser, text, len);
		yaml_parser_delete(&parser);
		free(text);
		free(l);
		return NULL;
	}
	c.doc = &doc;

	root = yaml_document_get_root_node(&doc);
	if (!root) {
		fail(&c, 1, "empty file: expected 'layer', 'library' and 'functions'");
	} else if (root->type != YAML_MAPPING_NODE) {
		fail(&c, node_line(root), "expected a mapping with 'layer', 'library' and "
		     "'functions', not %s", node_type_name(root));
	} else if (each_pair(&c, root, keys, top_field, l) == 0) {
		if (!l->name[0])
			fail(&c, node_line(root), "missing 'layer'");
		else if (!l->library[0] && l->mechanism == DC_MECH_UPROBE)
			fail(&c, node_line(root), "missing 'library'");
		else if (!l->funcs)
			fail(&c, node_line(root), "missing 'functions'");
	}

	/* One document per file: a second one (after `---`) is a mistake. */
	if (!c.failed) {
		if (!yaml_parser_load(&parser, &extra)) {
			yaml_fail(&c, &parser, text, len);
		} else {
			root = yaml_document_get_root_node(&extra);
			if (root)
				fail(&c, node_line(root), "more than one YAML document");
			yaml_document_delete(&extra);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(text);
	if (c.failed) {
		dc_layer_free(l);
		return NULL;
	}
	return l;
}

const struct dc_func *dc_layer_func(const struct dc_layer *l, const char *name)
{
	int i;

	if (!l || !name)
		return NULL;
	for (i = 0; i < l->nfuncs; i++)
		if (strcmp(l->funcs[i].name, name) == 0)
			return &l->funcs[i];
	return NULL;
}

const char *dc_arg_kind_name(enum dc_arg_kind kind)
{
	return (unsigned)kind < sizeof arg_kinds / sizeof arg_kinds[0] ? arg_kinds[kind].name
								      : "?";
}

struct dc_layer *dc_layer_custom_new(const char *name, const char *library, const char *where,
				     char *err, size_t errlen)
{
	struct dc_layer *l;

	if (!*name || strlen(name) >= sizeof l->name) {
		snprintf(err, errlen, "layer '%.40s' must be 1 to %d characters (it is the events' "
			 "cat)", name, (int)sizeof l->name - 1);
		return NULL;
	}
	if (strlen(library) >= sizeof l->library) {
		snprintf(err, errlen, "file '%.40s...' is longer than %d characters", library,
			 (int)sizeof l->library - 1);
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	l->custom = 1;
	l->mechanism = DC_MECH_UPROBE;
	l->tmpl.ret_kind = DC_RET_LONG;
	snprintf(l->name, sizeof l->name, "%s", name);
	snprintf(l->library, sizeof l->library, "%s", library);
	snprintf(l->path, sizeof l->path, "%sdc.uprobe", where);
	return l;
}

void dc_layer_free(struct dc_layer *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->nglobs; i++)
		free(l->globs[i]);
	free(l->globs);
	free(l->gtmpl);
	for (int i = 0; i < l->nfuncs; i++)
		free((char *)l->funcs[i].name);
	free(l->funcs);
	free(l);
}

const struct dc_func *dc_layer_syscall_namer(const struct dc_layer *l, const char *sys)
{
	const struct dc_func *any = NULL;
	int i, k;

	for (i = 0; i < l->nfuncs; i++) {
		const struct dc_func *f = &l->funcs[i];

		for (k = 0; k < f->nsyscalls; k++) {
			if (strcmp(f->syscall[k], sys) != 0)
				continue;
			if (k == 0)
				return f;
			if (!any)
				any = f;
		}
	}
	return any;
}
