/* status.c: `datacrumbs status`: lists the job steps traced on this node from the status
 * files of the site tracers (root's, in /run/datacrumbs), parsed with libyaml. */
#define _GNU_SOURCE
#include "status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "writer.h"

#define STATUS_MAX (64 << 10) /* bytes; a status file is a few hundred */

static const char status_help[] =
"usage: datacrumbs status [--dir DIR] [--json]\n"
"\n"
"Lists the job steps traced on this node: one row per status file that a site tracer\n"
"(datacrumbs step, started by the SLURM plugin) keeps in " DC_STATUS_DIR " and rewrites\n"
"about once a second:\n"
"  JOBID STEP USER TRACER TASKS PROBES EVENTS LOST TRACE\n"
"TRACER is the tracer's pid, or 'stale' when that process is gone or is not the tracer\n"
"that wrote the file (its figures are then not current). TASKS is the number of traced\n"
"tasks, EVENTS the events the kernel handed over so far, LOST the ones lost so far.\n"
"Files not owned by root, or in a directory not owned by root or writable by group or\n"
"others, are ignored with a warning: users cannot plant a status.\n"
"\n"
"options:\n"
"      --dir DIR   read the status files in DIR (default " DC_STATUS_DIR ")\n"
"      --json      print the objects as a JSON list, each with \"stale\": true|false\n"
"  -h, --help      this text\n"
"\n"
"exit status: 0 (also with 'no traced jobs'); 1 when a status file could not be read or\n"
"parsed (the others are listed) or the directory is not trusted; 2 on a usage error.\n";

/* The fields of the format: a string's buffer and size, or an integer's place. */
enum kind { STR, INT, TASKS };
struct field {
	const char *key;
	enum kind kind;
	size_t off, size;
};
#define S(k, m) { k, STR, offsetof(struct dc_status, m), sizeof(((struct dc_status *)0)->m) }
#define I(k, m) { k, INT, offsetof(struct dc_status, m), 0 }
static const struct field fields[] = {
	S("job", job), S("step", step), S("node", node), S("user", user), I("uid", uid),
	I("tracer_pid", tracer_pid), I("consumer_pid", consumer_pid),
	{ "tasks", TASKS, 0, 0 }, I("probes", probes), I("events", events), I("lost", lost),
	S("trace", trace), I("started", started),
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))
#undef S
#undef I

/* A plain scalar that is a decimal integer >= 0 (JSON numbers of the format). */
static int int_of(const yaml_node_t *n, long long *out)
{
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return -1;
	const char *t = (const char *)n->data.scalar.value;
	char *end;
	if (n->data.scalar.length == 0 || t[0] < '0' || t[0] > '9')
		return -1;
	errno = 0;
	long long v = strtoll(t, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* One key's value into s. Returns 0, or -1 with what is wrong in err. */
static int set_field(const struct field *f, yaml_document_t *doc, yaml_node_t *v,
		     struct dc_status *s, char *err, size_t errlen)
{
	char *base = (char *)s;
	if (f->kind == STR) {
		if (v->type != YAML_SCALAR_NODE || v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
			snprintf(err, errlen, "\"%s\" must be a string", f->key);
			return -1;
		}
		if (v->data.scalar.length >= f->size || strlen((char *)v->data.scalar.value) !=
							     v->data.scalar.length) {
			snprintf(err, errlen, "\"%s\" is longer than %zu bytes or holds a NUL",
				 f->key, f->size - 1);
			return -1;
		}
		memcpy(base + f->off, v->data.scalar.value, v->data.scalar.length + 1);
		return 0;
	}
	if (f->kind == INT) {
		if (int_of(v, (long long *)(base + f->off))) {
			snprintf(err, errlen, "\"%s\" must be an integer >= 0", f->key);
			return -1;
		}
		return 0;
	}
	if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.style != YAML_FLOW_SEQUENCE_STYLE) {
		snprintf(err, errlen, "\"tasks\" must be a list of pids");
		return -1;
	}
	size_t n = v->data.sequence.items.top - v->data.sequence.items.start;
	free(s->tasks);
	s->tasks = calloc(n ? n : 1, sizeof(long long));
	s->ntasks = 0;
	if (!s->tasks) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
	     it++) {
		yaml_node_t *t = yaml_document_get_node(doc, *it);
		if (!t || int_of(t, &s->tasks[s->ntasks])) {
			snprintf(err, errlen, "\"tasks\" must be a list of pids");
			return -1;
		}
		s->ntasks++;
	}
	return 0;
}

/* The object's pairs into s: every key of `fields` once, others ignored. Returns 0, or -1
 * with "LINE: message" in err. */
static int walk(yaml_document_t *doc, yaml_node_t *root, struct dc_status *s, char *err,
		size_t errlen)
{
	char what[256];
	int seen[NFIELDS] = { 0 };
	if (root->type != YAML_MAPPING_NODE || root->data.mapping.style != YAML_FLOW_MAPPING_STYLE) {
		snprintf(err, errlen, "%d: expected one JSON object", (int)root->start_mark.line + 1);
		return -1;
	}
	for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
	     p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);
		if (!k || !v || k->type != YAML_SCALAR_NODE ||
		    k->data.scalar.style != YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
			snprintf(err, errlen, "%d: a key that is no JSON string",
				 k ? (int)k->start_mark.line + 1 : 1);
			return -1;
		}
		for (size_t i = 0; i < NFIELDS; i++) {
			if (strcmp((char *)k->data.scalar.value, fields[i].key))
				continue;
			if (seen[i]++) {
				snprintf(err, errlen, "%d: \"%s\" twice", (int)k->start_mark.line + 1,
					 fields[i].key);
				return -1;
			}
			if (set_field(&fields[i], doc, v, s, what, sizeof(what))) {
				snprintf(err, errlen, "%d: %s", (int)v->start_mark.line + 1, what);
				return -1;
			}
		}
	}
	for (size_t i = 0; i < NFIELDS; i++)
		if (!seen[i]) {
			snprintf(err, errlen, "%d: no \"%s\"", (int)root->start_mark.line + 1,
				 fields[i].key);
			return -1;
		}
	return 0;
}

int dc_status_parse(const char *name, const char *text, size_t len, struct dc_status *s,
		    char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	char why[512];
	int r = -1;
	memset(s, 0, sizeof(*s));
	if (!yaml_parser_initialize(&parser)) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "%s:%d: not JSON: %s", name, (int)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "syntax error");
		yaml_parser_delete(&parser);
		return -1;
	}
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	if (!root) {
		snprintf(err, errlen, "%s:1: empty, expected one JSON object", name);
	} else if (walk(&doc, root, s, why, sizeof(why))) {
		snprintf(err, errlen, "%s:%s", name, why);
	} else if (!yaml_parser_load(&parser, &extra)) {
		snprintf(err, errlen, "%s:%d: not JSON: %s", name, (int)parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "syntax error");
	} else {
		if (yaml_document_get_root_node(&extra))
			snprintf(err, errlen, "%s:%d: more than one JSON object", name,
				 (int)yaml_document_get_root_node(&extra)->start_mark.line + 1);
		else
			r = 0;
		yaml_document_delete(&extra);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (r) {
		free(s->tasks);
		s->tasks = NULL;
	}
	return r;
}

/* The start of process pid in seconds since the epoch (proc(5): /proc/stat's btime plus
 * field 22 of /proc/PID/stat in clock ticks), or -1. */
static long long process_start(long long pid)
{
	char path[64], buf[1024];
	long long btime = -1;
	FILE *f = fopen("/proc/stat", "re");
	if (!f)
		return -1;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || btime < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *p = strrchr(buf, ')'); /* comm may hold spaces and ')' */
	if (!p)
		return -1;
	p++;
	for (int field = 3; field <= 22 && p; field++) { /* p is before field `field` */
		while (*p == ' ')
			p++;
		if (field == 22) {
			long long ticks = strtoll(p, NULL, 10);
			long hz = sysconf(_SC_CLK_TCK);
			return hz > 0 ? btime + ticks / hz : -1;
		}
		p = strchr(p, ' ');
	}
	return -1;
}

int dc_status_tracer_alive(const struct dc_status *s)
{
	char path[64], exe[4096];
	if (s->tracer_pid <= 0 || s->tracer_pid > 0x3fffffff)
		return 0;
	snprintf(path, sizeof(path), "/proc/%lld/status", s->tracer_pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	long long uid[4] = { -1, -1, -1, -1 };
	while (fgets(exe, sizeof(exe), f))
		if (sscanf(exe, "Uid: %lld %lld %lld %lld", &uid[0], &uid[1], &uid[2], &uid[3]) == 4)
			break;
	fclose(f);
	if (uid[0] != 0 || uid[1] != 0) /* real and effective: root's (proc(5) "Uid") */
		return 0;
	snprintf(path, sizeof(path), "/proc/%lld/exe", s->tracer_pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0 && errno == EACCES) {
		/* a user may not read a root process's exe link (proc(5): ptrace access mode);
		 * its comm, the executable's name, is world-readable */
		snprintf(path, sizeof(path), "/proc/%lld/comm", s->tracer_pid);
		FILE *c = fopen(path, "re");
		n = c && fgets(exe, sizeof(exe), c) ? (ssize_t)strcspn(exe, "\n") : 0;
		if (c)
			fclose(c);
	}
	if (n <= 0)
		return 0;
	exe[n] = 0;
	char *del = strstr(exe, " (deleted)"); /* an upgraded binary still runs */
	if (del && !del[10])
		*del = 0;
	const char *base = strrchr(exe, '/');
	if (strcmp(base ? base + 1 : exe, "datacrumbs"))
		return 0;
	long long start = process_start(s->tracer_pid);
	return start >= 0 && start <= s->started + 1;
}

/* Whether fd (an open directory or file) may be trusted: root's, not writable by group
 * or others. */
static int trusted(int fd)
{
	struct stat st;
	return !fstat(fd, &st) && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
}

/* Reads status file `name` of directory dirfd into *s. Returns 0; 1 when it is ignored
 * (a warning printed); -1 after an error line. */
static int read_one(int dirfd, const char *dir, const char *name, struct dc_status *s)
{
	char err[1024], path[4096 + 256];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT) /* removed by its tracer since the listing */
			return 1;
		if (errno == ELOOP) {
			fprintf(stderr, "datacrumbs status: warning: %s is a symbolic link: "
				"ignored\n", path);
			return 1;
		}
		fprintf(stderr, "datacrumbs status: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !trusted(fd)) {
		fprintf(stderr, "datacrumbs status: warning: %s is not a regular file owned by "
			"root and writable only by it: ignored\n", path);
		close(fd);
		return 1;
	}
	if (st.st_size > STATUS_MAX) {
		fprintf(stderr, "datacrumbs status: %s: over %d bytes, not a status file\n", path,
			STATUS_MAX);
		close(fd);
		return -1;
	}
	char *text = malloc(st.st_size + 1);
	ssize_t n = text ? read(fd, text, st.st_size + 1) : -1;
	int e = errno;
	close(fd);
	if (n < 0 || n > st.st_size) {
		fprintf(stderr, "datacrumbs status: %s: %s\n", path,
			n < 0 ? strerror(e) : "grew while read");
		free(text);
		return -1;
	}
	int r = dc_status_parse(path, text, n, s, err, sizeof(err));
	free(text);
	if (r) {
		fprintf(stderr, "datacrumbs status: %s\n", err);
		return -1;
	}
	s->stale = !dc_status_tracer_alive(s);
	return 0;
}

/* Orders by job id (numerically), then step (numbers first, then "batch" and others). */
static int by_job(const void *a, const void *b)
{
	const struct dc_status *x = a, *y = b;
	size_t lx = strlen(x->job), ly = strlen(y->job);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	int c = strcmp(x->job, y->job);
	if (c)
		return c;
	int nx = x->step[0] >= '0' && x->step[0] <= '9', ny = y->step[0] >= '0' && y->step[0] <= '9';
	if (nx != ny)
		return nx ? -1 : 1;
	if (nx && strlen(x->step) != strlen(y->step))
		return strlen(x->step) < strlen(y->step) ? -1 : 1;
	return strcmp(x->step, y->step);
}

/* Prints s as a JSON string (quoted, escaped). */
static void json_str(const char *s)
{
	size_t len = strlen(s);
	char *buf = malloc(len * 6 + 1);
	long n = buf ? dc_json_escape(buf, len * 6 + 1, s, len) : -1;
	printf("\"%.*s\"", n < 0 ? 0 : (int)n, n < 0 ? "" : buf);
	free(buf);
}

static void print_json(const struct dc_status *v, size_t n)
{
	printf("[");
	for (size_t i = 0; i < n; i++) {
		const struct dc_status *s = &v[i];
		printf("%s\n{\"job\":", i ? "," : "");
		json_str(s->job);
		printf(",\"step\":");
		json_str(s->step);
		printf(",\"node\":");
		json_str(s->node);
		printf(",\"user\":");
		json_str(s->user);
		printf(",\"uid\":%lld,\"tracer_pid\":%lld,\"consumer_pid\":%lld,\"tasks\":[", s->uid,
		       s->tracer_pid, s->consumer_pid);
		for (size_t t = 0; t < s->ntasks; t++)
			printf("%s%lld", t ? "," : "", s->tasks[t]);
		printf("],\"probes\":%lld,\"events\":%lld,\"lost\":%lld,\"trace\":", s->probes,
		       s->events, s->lost);
		json_str(s->trace);
		printf(",\"started\":%lld,\"stale\":%s}", s->started, s->stale ? "true" : "false");
	}
	printf("%s]\n", n ? "\n" : "");
}

/* src for a terminal: bytes below 0x20 and DEL as \ooo (as ls -b does), so a user's
 * path cannot move the admin's cursor, clear the screen or start a forged row. */
static const char *printable(const char *src, char *buf, size_t len)
{
	size_t o = 0;
	for (; *src && o + 5 < len; src++) {
		unsigned char c = (unsigned char)*src;
		if (c < 0x20 || c == 0x7f)
			o += (size_t)snprintf(buf + o, len - o, "\\%03o", c);
		else
			buf[o++] = (char)c;
	}
	buf[o] = 0;
	return buf;
}

static void print_table(const struct dc_status *v, size_t n)
{
	printf("%-10s %-6s %-10s %-8s %5s %6s %12s %8s %s\n", "JOBID", "STEP", "USER", "TRACER",
	       "TASKS", "PROBES", "EVENTS", "LOST", "TRACE");
	for (size_t i = 0; i < n; i++) {
		char tracer[32];
		if (v[i].stale)
			snprintf(tracer, sizeof(tracer), "stale");
		else
			snprintf(tracer, sizeof(tracer), "%lld", v[i].tracer_pid);
		char job[256], step[256], user[256], trace[4 * 4096 + 8];
		printf("%-10s %-6s %-10s %-8s %5zu %6lld %12lld %8lld %s\n",
		       printable(v[i].job, job, sizeof(job)),
		       printable(v[i].step, step, sizeof(step)),
		       printable(v[i].user, user, sizeof(user)), tracer, v[i].ntasks, v[i].probes,
		       v[i].events, v[i].lost, printable(v[i].trace, trace, sizeof(trace)));
	}
}

int dc_status_main(int argc, char **argv)
{
	const char *dir = DC_STATUS_DIR;
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(status_help, stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--dir") && i + 1 < argc && argv[i + 1][0]) {
			dir = argv[++i];
		} else if (!strncmp(argv[i], "--dir=", 6) && argv[i][6]) {
			dir = argv[i] + 6;
		} else {
			fprintf(stderr, "datacrumbs status: %s '%s' (see 'datacrumbs status "
				"--help')\n", strcmp(argv[i], "--dir") ? "unknown argument" :
				"a directory must follow", argv[i]);
			return 2;
		}
	}
	int rc = 0;
	size_t n = 0, cap = 0;
	struct dc_status *v = NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && errno != ENOENT) {
		fprintf(stderr, "datacrumbs status: %s: %s\n", dir,
			errno == ENOTDIR || errno == ELOOP ? "not a directory (or a symbolic link)"
							   : strerror(errno));
		return 1;
	}
	if (dfd >= 0 && !trusted(dfd)) {
		fprintf(stderr, "datacrumbs status: warning: %s is not owned by root or is writable "
			"by group or others: its status files are ignored\n", dir);
		close(dfd);
		dfd = -1;
		rc = 1;
	}
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (dfd >= 0 && !d) {
		fprintf(stderr, "datacrumbs status: %s: %s\n", dir, strerror(errno));
		close(dfd);
		return 1;
	}
	struct dirent *de;
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		/* <jobid>.<stepid>.json; dot files are a tracer's temporary files */
		if (de->d_name[0] == '.' || len <= 5 || strcmp(de->d_name + len - 5, ".json"))
			continue;
		if (n == cap) {
			struct dc_status *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof(*v));
			if (!nv) {
				fprintf(stderr, "datacrumbs status: out of memory\n");
				rc = 1;
				break;
			}
			v = nv;
		}
		int r = read_one(dirfd(d), dir, de->d_name, &v[n]);
		if (r == 0)
			n++;
		else if (r < 0)
			rc = 1;
	}
	if (d)
		closedir(d);
	qsort(v, n, sizeof(*v), by_job);
	if (json)
		print_json(v, n);
	else if (!n)
		printf("no traced jobs\n");
	else
		print_table(v, n);
	for (size_t i = 0; i < n; i++)
		free(v[i].tasks);
	free(v);
	return rc;
}
