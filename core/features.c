/* features.c: owns `datacrumbs features` (try each BPF mechanism for real: load, map,
 * attach, fire, close; report what works and why not) and the uprobe_multi link helpers. */
#define _GNU_SOURCE /* gettid */
#include "dc_features.h"

#include <errno.h>
#include <pthread.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "elfsym.h"
#include "kmech.h"
#include "util.h"
#include "writer.h"

#ifndef TRACEFS_MAGIC
#define TRACEFS_MAGIC 0x74726163
#endif
#define DC_ENOTSUPP 524 /* kernel-internal errno (include/linux/errno.h), no libc name */

static const char *const feature_names[DC_FEAT_NR] = {
	[DC_FEAT_UPROBE] = "uprobe",
	[DC_FEAT_ATTACH_COOKIE] = "attach_cookie",
	[DC_FEAT_UPROBE_MULTI] = "uprobe_multi",
	[DC_FEAT_UPROBE_SESSION] = "uprobe_session",
	[DC_FEAT_TRACEPOINT] = "tracepoint",
	[DC_FEAT_RAW_TRACEPOINT] = "raw_tracepoint",
	[DC_FEAT_TP_BTF] = "tp_btf",
	[DC_FEAT_FENTRY] = "fentry",
	[DC_FEAT_KPROBE] = "kprobe",
	[DC_FEAT_KPROBE_MULTI] = "kprobe_multi",
	[DC_FEAT_RINGBUF] = "ringbuf",
	[DC_FEAT_BTF] = "btf",
	[DC_FEAT_TRACEFS] = "tracefs",
};

static const struct { const char *name; int cap; } caps[DC_CAP_NR] = {
	[DC_CAP_BPF] = { "CAP_BPF", CAP_BPF },
	[DC_CAP_PERFMON] = { "CAP_PERFMON", CAP_PERFMON },
	[DC_CAP_SYS_ADMIN] = { "CAP_SYS_ADMIN", CAP_SYS_ADMIN },
	[DC_CAP_SYS_RESOURCE] = { "CAP_SYS_RESOURCE", CAP_SYS_RESOURCE },
};

/* --- results and errno texts ------------------------------------------------------- */

static void say(struct dc_feature_result *r, int ok, const char *fmt, ...)
{
	va_list ap;
	r->ok = ok;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

static const char *errno_name(int e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case E2BIG: return "E2BIG";
	case EBADF: return "EBADF";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EEXIST: return "EEXIST";
	case ENODEV: return "ENODEV";
	case EINVAL: return "EINVAL";
	case ENOSPC: return "ENOSPC";
	case ENOSYS: return "ENOSYS";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case DC_ENOTSUPP: return "ENOTSUPP";
	default: return "errno";
	}
}

/* "Operation not permitted, EPERM"; the kernel's ENOTSUPP has no libc text. */
static const char *errtext(int e)
{
	static char buf[8][96];
	static unsigned next;
	char *b = buf[next++ % 8];
	if (e == DC_ENOTSUPP)
		snprintf(b, sizeof(buf[0]), "Operation not supported, ENOTSUPP=%d", e);
	else if (!strcmp(errno_name(e), "errno"))
		snprintf(b, sizeof(buf[0]), "%s, errno %d", strerror(e), e);
	else
		snprintf(b, sizeof(buf[0]), "%s, %s", strerror(e), errno_name(e));
	return b;
}

/* What a refused BPF_PROG_LOAD means, per bpf(2) and the kernel's verifier. */
static const char *load_meaning(int e)
{
	switch (e) {
	case EPERM:
		return "needs CAP_BPF and CAP_PERFMON (or root), or the kernel is locked down";
	case EINVAL:
		return "the kernel does not know this program type, attach type or helper "
		       "(too old, or built without it)";
	case EACCES:
		return "the verifier rejected the program";
	case DC_ENOTSUPP:
	case EOPNOTSUPP:
		return "not supported by this kernel build";
	default:
		return "see bpf(2)";
	}
}

/* --- raw BPF programs ----------------------------------------------------------------- */

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

/* Map keys: which program stored there. */
enum { K_UPROBE, K_URETPROBE, K_COOKIE, K_UMULTI, K_TP, K_RAWTP, K_TPBTF, K_FENTRY, K_FEXIT,
       K_KPROBE, K_KRETPROBE, K_KMULTI, K_USESS0, K_USESS1, K_NR };

#define DC_TEST_COOKIE 0xdc0000c00c1eULL

struct ctx {
	int map_fd;              /* ARRAY u32 -> u64, K_NR entries: what each program stored */
	int map_errno;           /* why map_fd < 0 */
	char libc[4096];         /* the libc this process has mapped */
	__u64 getpid_off;        /* file offset of getpid in it, 0: not found */
	char libc_err[256];      /* why getpid_off is 0 */
	struct btf *btf;         /* vmlinux BTF, NULL when it cannot be loaded */
	char tracefs[64];        /* where tracefs is mounted, "" when nowhere */
	pid_t tid;               /* the thread that fires getpid (load_count counts its calls) */
};

/* Loads "map[key] = cookie (or key + 1); return 0" as a program of type/eat; the program
 * fd, or -errno. Named dc_feat_<name> so that a leftover is recognisable in bpftool. */
static int load_mark(const struct ctx *c, const char *name, enum bpf_prog_type type,
		     enum bpf_attach_type eat, __u32 btf_id, __u32 key, int cookie)
{
	struct bpf_insn in[16];
	int n = 0;
	if (cookie)
		in[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_attach_cookie);
	else
		in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, key + 1);
	in[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_0, -8, 0);
	in[n++] = INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -16, key);
	in[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, c->map_fd);
	in[n++] = INSN(0, 0, 0, 0, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -16);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_3, BPF_REG_10, 0, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_3, 0, 0, -8);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_4, 0, 0, BPF_ANY);
	in[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_update_elem);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
	in[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	char pname[16];
	snprintf(pname, sizeof(pname), "dc_feat_%s", name);
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = eat, .attach_btf_id = btf_id);
	int fd = bpf_prog_load(type, pname, "GPL", in, n, &o);
	return fd < 0 ? (errno ? -errno : fd) : fd;
}

/* What the program of key stored; 0 when nothing (it never ran). */
static __u64 marked(const struct ctx *c, __u32 key)
{
	__u64 v = 0;
	if (bpf_map_lookup_elem(c->map_fd, &key, &v))
		return 0;
	return v;
}

/* The BPF objects made here, by id: closing the last fd does not free a program, link or
 * map at once (the kernel waits for an RCU grace period), so the checks end by waiting
 * until each id is gone: when `datacrumbs features` returns, nothing of it is left. */
enum { OBJ_PROG, OBJ_LINK, OBJ_MAP };
static struct { int kind; __u32 id; } made[64];
static unsigned nmade;

/* Records the BPF object behind fd (from /proc/self/fdinfo: link_id, prog_id or map_id). */
static void track(int fd)
{
	static const char *const keys[] = { "link_id:", "prog_id:", "map_id:" };
	static const int kinds[] = { OBJ_LINK, OBJ_PROG, OBJ_MAP };
	char path[64], line[256];
	if (fd < 0 || nmade == sizeof(made) / sizeof(made[0]))
		return;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	FILE *f = fopen(path, "r");
	unsigned long ids[3] = { 0, 0, 0 };
	while (f && fgets(line, sizeof(line), f))
		for (int k = 0; k < 3; k++)
			if (!strncmp(line, keys[k], strlen(keys[k])))
				ids[k] = strtoul(line + strlen(keys[k]), NULL, 10);
	if (f)
		fclose(f);
	for (int k = 0; k < 3; k++) {
		if (ids[k]) { /* a link's fdinfo names its program too: the link it is */
			made[nmade].kind = kinds[k];
			made[nmade++].id = ids[k];
			return;
		}
	}
}

/* Waits (at most about 5 s) until the kernel has freed every object track() saw. */
static void await_freed(void)
{
	for (int tries = 0; tries < 2500; tries++) {
		unsigned left = 0;
		for (unsigned i = 0; i < nmade; i++) {
			if (!made[i].id)
				continue;
			int fd = made[i].kind == OBJ_PROG ? bpf_prog_get_fd_by_id(made[i].id) :
				 made[i].kind == OBJ_LINK ? bpf_link_get_fd_by_id(made[i].id) :
				 bpf_map_get_fd_by_id(made[i].id);
			if (fd >= 0) {
				close(fd);
				left++;
			} else {
				made[i].id = 0; /* ENOENT: freed; EPERM: cannot know, don't wait */
			}
		}
		if (!left) {
			nmade = 0;
			return;
		}
		usleep(2000);
	}
	fprintf(stderr, "datacrumbs: warning: the kernel has not freed every BPF object of the "
		"features checks yet\n");
	nmade = 0;
}

/* fds to close at the end of one check, newest first */
struct fds {
	int fd[8];
	int n;
};

static int keep(struct fds *f, int fd)
{
	if (fd >= 0 && f->n < 8) {
		f->fd[f->n++] = fd;
		track(fd);
	}
	return fd;
}

/* quick_check's fds, closed by its teardown thread instead of close_all (see
 * dc_feature_settle) */
static struct fds deferred;
static int deferring;

static void close_all(struct fds *f)
{
	while (f->n > 0) {
		int fd = f->fd[--f->n];
		if (deferring && deferred.n < 8)
			deferred.fd[deferred.n++] = fd;
		else
			close(fd);
	}
}

/* --- perf events ------------------------------------------------------------------- */

/* Reads an integer from a sysfs file; -errno when it cannot. */
static long read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	long v;
	int ok = fscanf(f, "%ld", &v) == 1;
	fclose(f);
	return ok ? v : -EINVAL;
}

/* The type of dynamic PMU "uprobe"/"kprobe" (perf_event_open(2), "dynamic PMU"); -errno. */
static int pmu_type(const char *pmu)
{
	char p[128];
	snprintf(p, sizeof(p), "/sys/bus/event_source/devices/%s/type", pmu);
	return (int)read_long(p);
}

/* The config bit that makes a probe of that PMU a return probe ("config:N"); 0 if unknown. */
static int pmu_retprobe_bit(const char *pmu)
{
	char p[128];
	snprintf(p, sizeof(p), "/sys/bus/event_source/devices/%s/format/retprobe", pmu);
	FILE *f = fopen(p, "r");
	int bit = 0;
	if (f) {
		if (fscanf(f, "config:%d", &bit) != 1)
			bit = 0;
		fclose(f);
	}
	return bit;
}

static int perf_open(struct perf_event_attr *a, int pid)
{
	a->size = sizeof(*a);
	/* as libbpf: one event on CPU 0 for every process, else the process on any CPU;
	 * a BPF program on it runs wherever the probe fires */
	int fd = syscall(__NR_perf_event_open, a, pid, pid == -1 ? 0 : -1, -1,
			 PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* A uprobe/kprobe perf event of PMU type: name_or_path and offset in config1/config2. */
static int perf_probe(int type, int retbit, int ret, const char *name_or_path, __u64 off,
		      int pid)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = type;
	a.config = ret ? 1ULL << retbit : 0;
	a.config1 = (__u64)(uintptr_t)name_or_path;
	a.config2 = off;
	return perf_open(&a, pid);
}

#define ATTACHED_BY_IOCTL (-100000)

/* Runs prog on perf event pfd: a BPF_PERF_EVENT link (kernel >= 5.15, with cookie), else,
 * without a cookie, PERF_EVENT_IOC_SET_BPF as libbpf falls back to. Returns the link fd,
 * ATTACHED_BY_IOCTL (closing pfd detaches), or -errno. */
static int attach_perf(int prog, int pfd, __u64 cookie)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .perf_event.bpf_cookie = cookie);
	int l = bpf_link_create(prog, pfd, BPF_PERF_EVENT, &o);
	if (l < 0)
		l = errno ? -errno : l;
	if (l < 0 && l == -EINVAL && !cookie) {
		if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog))
			return -errno;
		l = ATTACHED_BY_IOCTL;
	}
	if (l >= 0 || l == ATTACHED_BY_IOCTL)
		ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0);
	return l;
}

/* The uprobe target: this process's libc and getpid in it (core/elfsym.h offsets). */
static void find_libc_getpid(struct ctx *c)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");
	while (f && !c->libc[0] && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');
		if (p && strstr(p, "/libc.so")) {
			p[strcspn(p, "\n")] = 0;
			snprintf(c->libc, sizeof(c->libc), "%s", p);
		}
	}
	if (f)
		fclose(f);
	if (!c->libc[0]) {
		snprintf(c->libc_err, sizeof(c->libc_err), "no libc.so in /proc/self/maps");
		return;
	}
	struct dc_elf_syms *s = dc_elf_syms_open(c->libc, c->libc_err, sizeof(c->libc_err));
	c->getpid_off = s ? dc_elf_sym_offset(s, "getpid") : 0;
	if (s && !c->getpid_off)
		snprintf(c->libc_err, sizeof(c->libc_err), "no getpid symbol in %.200s", c->libc);
	dc_elf_syms_close(s);
}

static void fire_getpid(void)
{
	volatile pid_t p = getpid(); /* through the PLT into libc's getpid: the probed address */
	(void)p;
}

/* read(2) of /dev/null: runs vfs_read */
static void fire_vfs_read(void)
{
	char b[1];
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, b, 1) < 0)
			b[0] = 0;
		close(fd);
	}
}

/* --- the checks ---------------------------------------------------------------------- */

static int need_map(const struct ctx *c, struct dc_feature_result *r)
{
	if (c->map_fd >= 0)
		return 1;
	say(r, DC_FEAT_NO, "cannot create a BPF array map: %s (%s)", errtext(c->map_errno),
	    load_meaning(c->map_errno));
	return 0;
}

/* uprobe + uretprobe on libc getpid, this process only, both fired once. */
static void check_uprobe(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	if (!c->getpid_off) {
		say(r, DC_FEAT_NO, "no uprobe target: %s", c->libc_err);
		return;
	}
	int type = pmu_type("uprobe"), bit = pmu_retprobe_bit("uprobe");
	if (type < 0) {
		say(r, DC_FEAT_NO, "no uprobe PMU (/sys/bus/event_source/devices/uprobe/type: %s): "
		    "the kernel has no CONFIG_UPROBE_EVENTS", errtext(-type));
		return;
	}
	static const char *const what[2] = { "uprobe", "uretprobe" };
	for (int ret = 0; ret < 2; ret++) {
		int p = keep(&f, load_mark(c, ret ? "uretprobe" : "uprobe", BPF_PROG_TYPE_KPROBE, 0,
					   0, ret ? K_URETPROBE : K_UPROBE, 0));
		if (p < 0) {
			say(r, DC_FEAT_NO, "%s program load refused: %s (%s)", what[ret],
			    errtext(-p), load_meaning(-p));
			goto out;
		}
		int pe = keep(&f, perf_probe(type, bit, ret, c->libc, c->getpid_off, getpid()));
		if (pe < 0) {
			say(r, DC_FEAT_NO, "perf_event_open of a %s on getpid in %s refused: %s",
			    what[ret], c->libc, errtext(-pe));
			goto out;
		}
		int l = attach_perf(p, pe, 0);
		if (l < 0 && l != ATTACHED_BY_IOCTL) {
			say(r, DC_FEAT_NO, "attaching the %s program refused: %s", what[ret],
			    errtext(-l));
			goto out;
		}
		keep(&f, l);
	}
	fire_getpid();
	if (marked(c, K_UPROBE) != K_UPROBE + 1 || marked(c, K_URETPROBE) != K_URETPROBE + 1)
		say(r, DC_FEAT_NO, "attached, but the %s program did not run when getpid was "
		    "called", marked(c, K_UPROBE) != K_UPROBE + 1 ? "uprobe" : "uretprobe");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* A uprobe program calling bpf_get_attach_cookie(), linked with a cookie, fired: it must
 * read that cookie. */
static void check_cookie(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	int p = keep(&f, load_mark(c, "cookie", BPF_PROG_TYPE_KPROBE, 0, 0, K_COOKIE, 1));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load of a uprobe program calling bpf_get_attach_cookie "
		    "refused: %s (%s; the helper needs kernel >= 5.15)", errtext(-p),
		    load_meaning(-p));
		goto out;
	}
	int type = pmu_type("uprobe");
	if (type < 0 || !c->getpid_off) {
		say(r, DC_FEAT_NO, "the program loads, but there is no uprobe to attach it to "
		    "(see uprobe)");
		goto out;
	}
	int pe = keep(&f, perf_probe(type, 0, 0, c->libc, c->getpid_off, getpid()));
	if (pe < 0) {
		say(r, DC_FEAT_NO, "perf_event_open of a uprobe refused: %s", errtext(-pe));
		goto out;
	}
	int l = keep(&f, attach_perf(p, pe, DC_TEST_COOKIE));
	if (l < 0) {
		say(r, DC_FEAT_NO, "a BPF_PERF_EVENT link with a cookie refused: %s (perf links "
		    "and cookies need kernel >= 5.15)", errtext(-l));
		goto out;
	}
	fire_getpid();
	__u64 got = marked(c, K_COOKIE);
	if (got != DC_TEST_COOKIE)
		say(r, DC_FEAT_NO, "attached, but the program read cookie 0x%llx, not 0x%llx",
		    (unsigned long long)got, DC_TEST_COOKIE);
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* BPF_LINK_CREATE of a uprobe_multi link of attach type `type` (multi or session) with
 * uflags; returns the link fd or -1 with errno (bpf(2)). */
static int link_multi(int prog_fd, int type, const char *path, const __u64 *offsets,
		      const __u64 *cookies, unsigned cnt, unsigned uflags, int pid)
{
	struct dc_link_create_uprobe_multi a;
	memset(&a, 0, sizeof(a));
	a.prog_fd = prog_fd;
	a.attach_type = type;
	a.path = (unsigned long)path;
	a.offsets = (unsigned long)offsets;
	a.cookies = (unsigned long)cookies;
	a.cnt = cnt;
	a.uflags = uflags;
	a.pid = pid > 0 ? pid : 0;
	return syscall(__NR_bpf, BPF_LINK_CREATE, &a, sizeof(a));
}

int dc_link_uprobe_multi(int prog_fd, const char *path, const __u64 *offsets,
			 const __u64 *cookies, unsigned cnt, int ret, int pid)
{
	return link_multi(prog_fd, DC_BPF_TRACE_UPROBE_MULTI, path, offsets, cookies, cnt,
			  ret ? DC_BPF_F_UPROBE_MULTI_RETURN : 0, pid);
}

/* A uprobe_multi link on getpid, this process only, fired once. */
static void check_uprobe_multi(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	if (!c->getpid_off) {
		say(r, DC_FEAT_NO, "no uprobe target: %s", c->libc_err);
		return;
	}
	int p = keep(&f, load_mark(c, "umulti", BPF_PROG_TYPE_KPROBE,
				   (enum bpf_attach_type)DC_BPF_TRACE_UPROBE_MULTI, 0, K_UMULTI, 0));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load with expected_attach_type BPF_TRACE_UPROBE_MULTI "
		    "refused: %s (%s)", errtext(-p), load_meaning(-p));
		goto out;
	}
	__u64 off = c->getpid_off, cookie = 0;
	int l = keep(&f, dc_link_uprobe_multi(p, c->libc, &off, &cookie, 1, 0, getpid()));
	if (l < 0) {
		int e = errno;
		say(r, DC_FEAT_NO, "link_create(BPF_TRACE_UPROBE_MULTI) refused: %s%s",
		    errtext(e), e == EINVAL ? " (no uprobe_multi links: kernel < 6.6)" :
		    e == EOPNOTSUPP ? " (the kernel has no CONFIG_UPROBES)" : "");
		goto out;
	}
	fire_getpid();
	if (marked(c, K_UMULTI) != K_UMULTI + 1)
		say(r, DC_FEAT_NO, "attached, but the program did not run when getpid was called");
	else
		say(r, DC_FEAT_YES, getenv("DATACRUMBS_NO_UPROBE_MULTI") ?
		    "DATACRUMBS_NO_UPROBE_MULTI is set: datacrumbs run will not use it" : "");
out:
	close_all(&f);
}

int dc_link_uprobe_session(int prog_fd, const char *path, const __u64 *offsets,
			   const __u64 *cookies, unsigned cnt, int pid)
{
	return link_multi(prog_fd, DC_BPF_TRACE_UPROBE_SESSION, path, offsets, cookies, cnt, 0,
			  pid);
}

/* Loads "if this is thread c->tid: map[key] += 1; return ret" as a session uprobe program
 * (fd, or -errno): run twice per call when ret is 0 (entry and return), once when 1. Only
 * the checking thread's calls count: another thread of this process may call getpid
 * meanwhile (the check runs beside the start-up: dc_feature_uprobe_prefetch). */
static int load_count(const struct ctx *c, const char *name, __u32 key, int ret)
{
	struct bpf_insn in[20];
	int n = 0;
	in[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_get_current_pid_tgid);
	in[n++] = INSN(BPF_ALU | BPF_MOV | BPF_X, BPF_REG_0, BPF_REG_0, 0, 0); /* the tid */
	in[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 9, c->tid);  /* to the return */
	in[n++] = INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -4, key);
	in[n++] = INSN(BPF_LD | BPF_DW | BPF_IMM, BPF_REG_1, BPF_PSEUDO_MAP_FD, 0, c->map_fd);
	in[n++] = INSN(0, 0, 0, 0, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_2, BPF_REG_10, 0, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_ADD | BPF_K, BPF_REG_2, 0, 0, -4);
	in[n++] = INSN(BPF_JMP | BPF_CALL, 0, 0, 0, BPF_FUNC_map_lookup_elem);
	in[n++] = INSN(BPF_JMP | BPF_JEQ | BPF_K, BPF_REG_0, 0, 2, 0);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_1, 0, 0, 1);
	in[n++] = INSN(BPF_STX | BPF_ATOMIC | BPF_DW, BPF_REG_0, BPF_REG_1, 0, BPF_ADD);
	in[n++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, ret);
	in[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	char pname[16];
	snprintf(pname, sizeof(pname), "dc_feat_%s", name);
	LIBBPF_OPTS(bpf_prog_load_opts, o,
		    .expected_attach_type = (enum bpf_attach_type)DC_BPF_TRACE_UPROBE_SESSION);
	int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, pname, "GPL", in, n, &o);
	return fd < 0 ? (errno ? -errno : fd) : fd;
}

/* Session uprobes on getpid, this process only: one program asks for the return, one
 * does not; one getpid must run the first twice and the second once. */
static void check_uprobe_session(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	if (!c->getpid_off) {
		say(r, DC_FEAT_NO, "no uprobe target: %s", c->libc_err);
		return;
	}
	int p0 = keep(&f, load_count(c, "usess0", K_USESS0, 0));
	int p1 = p0 < 0 ? p0 : keep(&f, load_count(c, "usess1", K_USESS1, 1));
	if (p1 < 0) {
		say(r, DC_FEAT_NO, "load with expected_attach_type BPF_TRACE_UPROBE_SESSION (%d) "
		    "refused: %s (%s; kernel >= 6.13)", DC_BPF_TRACE_UPROBE_SESSION, errtext(-p1),
		    load_meaning(-p1));
		goto out;
	}
	__u64 off = c->getpid_off, cookie = 0;
	int me = getpid(); /* before the links: a getpid between them would count */
	int l0 = keep(&f, dc_link_uprobe_session(p0, c->libc, &off, &cookie, 1, me));
	int l1 = l0 < 0 ? -1 : keep(&f, dc_link_uprobe_session(p1, c->libc, &off, &cookie, 1,
							     me));
	if (l1 < 0) {
		int e = errno;
		say(r, DC_FEAT_NO, "link_create(BPF_TRACE_UPROBE_SESSION) refused: %s%s",
		    errtext(e), e == EINVAL ? " (no session uprobes: kernel < 6.13)" : "");
		goto out;
	}
	fire_getpid();
	/* the kfuncs last: the kernel's BTF may still be parsing on another thread meanwhile
	 * (quick_check does not wait for it) */
	const struct btf *kb = c->btf ? c->btf : dc_vmlinux_btf();
	const char *kf = !kb ? "the kernel's BTF" :
			 btf__find_by_name_kind(kb, "bpf_session_is_return", BTF_KIND_FUNC) < 0 ?
			 "kfunc bpf_session_is_return" :
			 btf__find_by_name_kind(kb, "bpf_session_cookie", BTF_KIND_FUNC) < 0 ?
			 "kfunc bpf_session_cookie" : NULL;
	__u64 n0 = marked(c, K_USESS0), n1 = marked(c, K_USESS1);
	if (kf)
		say(r, DC_FEAT_NO, "no %s (session uprobes need kernel >= 6.13)", kf);
	else if (n0 != 2 || n1 != 1)
		say(r, DC_FEAT_NO, "attached, but one getpid ran the program asking for its "
		    "return %llu times (want 2) and the one not asking %llu times (want 1)",
		    (unsigned long long)n0, (unsigned long long)n1);
	else
		say(r, DC_FEAT_YES, getenv("DATACRUMBS_NO_UPROBE_SESSION") ?
		    "DATACRUMBS_NO_UPROBE_SESSION is set: datacrumbs run will not use it" : "");
out:
	close_all(&f);
}

static pthread_t settler;
static int settling;
static pid_t settle_pid; /* the process that started it */

/* The teardown thread: closes the deferred fds (newest first, as close_all would have),
 * then waits until the kernel has freed them (await_freed; made[] is this thread's until
 * dc_feature_settle joins it). */
static void *settle_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < deferred.n; i++)
		close(deferred.fd[i]);
	deferred.n = 0;
	await_freed();
	return NULL;
}

/* Joins the teardown thread of the last check, if this process has one. */
static void settle_join(void)
{
	/* a child forked meanwhile (site mode's consumer) has no such thread to join */
	if (settling && getpid() == settle_pid)
		pthread_join(settler, NULL);
	settling = 0;
}

static int take_prefetch(int *ok, char *reason, size_t reasonlen);

void dc_feature_settle(void)
{
	int ok;
	take_prefetch(&ok, NULL, 0); /* a run that ended before it took the answer */
	settle_join();
}

/* Runs one check on libc's getpid in this process, unless env var `off` is set; the
 * answer of dc_feature_uprobe_session / dc_feature_uprobe_multi. The check's fds are
 * closed and awaited by a thread (dc_feature_settle), or here when no thread starts. */
static int quick_check(const char *off, void (*check)(const struct ctx *, struct dc_feature_result *),
		       char *reason, size_t reasonlen)
{
	struct dc_feature_result r = { .ok = DC_FEAT_NO, .reason = "" };
	if (getenv(off)) {
		say(&r, DC_FEAT_NO, "%s is set", off);
	} else {
		settle_join(); /* made[] and deferred are free again */
		struct ctx c;
		memset(&c, 0, sizeof(c));
		c.tid = gettid();
		c.btf = NULL; /* the check asks for the kernel's BTF (dc_vmlinux_btf) when it needs it */
		c.map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "dc_feat", 4, 8, K_NR, NULL);
		c.map_errno = c.map_fd < 0 ? errno : 0;
		track(c.map_fd);
		find_libc_getpid(&c);
		deferring = 1;
		check(&c, &r);
		deferring = 0;
		/* the map last: the programs hold it until they are freed anyway */
		if (c.map_fd >= 0 && deferred.n < 8)
			deferred.fd[deferred.n++] = c.map_fd;
		else if (c.map_fd >= 0)
			close(c.map_fd);
		settle_pid = getpid();
		settling = dc_thread_start(&settler, settle_main, NULL) == 0;
		if (!settling)
			settle_main(NULL);
	}
	if (reason && reasonlen)
		snprintf(reason, reasonlen, "%s", r.reason);
	return r.ok == DC_FEAT_YES;
}

/* dc_feature_uprobe_prefetch's thread and its answer, taken by the first
 * dc_feature_uprobe_session (or _multi) of the process that started it. */
static struct {
	pthread_t thread;
	pid_t pid;      /* the process that started it (a child forked since has no thread) */
	int running;    /* started, not yet joined */
	int ok;         /* its answer, and why */
	char why[320];
} pre;

static void *prefetch_main(void *arg)
{
	(void)arg;
	pre.ok = quick_check("DATACRUMBS_NO_UPROBE_SESSION", check_uprobe_session, pre.why,
			     sizeof(pre.why));
	return NULL;
}

void dc_feature_uprobe_prefetch(void)
{
	if (pre.running)
		return;
	pre.pid = getpid();
	pre.running = dc_thread_start(&pre.thread, prefetch_main, NULL) == 0;
}

/* Joins the prefetch thread, if this process has one: 1 when its answer is taken (*ok
 * and reason set), else 0. Every check after it runs alone again (quick_check's statics). */
static int take_prefetch(int *ok, char *reason, size_t reasonlen)
{
	if (!pre.running || getpid() != pre.pid)
		return 0;
	pthread_join(pre.thread, NULL);
	pre.running = 0;
	*ok = pre.ok;
	if (reason && reasonlen)
		snprintf(reason, reasonlen, "%s", pre.why);
	return 1;
}

int dc_feature_uprobe_session(char *reason, size_t reasonlen)
{
	int ok;
	if (take_prefetch(&ok, reason, reasonlen))
		return ok;
	return quick_check("DATACRUMBS_NO_UPROBE_SESSION", check_uprobe_session, reason, reasonlen);
}

int dc_feature_uprobe_multi(char *reason, size_t reasonlen)
{
	int ok;
	take_prefetch(&ok, NULL, 0); /* the session check's: it must not run beside this one */
	return quick_check("DATACRUMBS_NO_UPROBE_MULTI", check_uprobe_multi, reason, reasonlen);
}

/* Is tracefs mounted at dir? (statfs(2) f_type, include/uapi/linux/magic.h) */
static int is_tracefs(const char *dir)
{
	struct statfs s;
	return statfs(dir, &s) == 0 && s.f_type == TRACEFS_MAGIC;
}

static void check_tracefs(struct ctx *c, struct dc_feature_result *r)
{
	/* libbpf 1.1 reads /sys/kernel/debug/tracing when it exists, else /sys/kernel/tracing */
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	for (unsigned i = 0; i < 2; i++) {
		if (is_tracefs(dirs[i])) {
			snprintf(c->tracefs, sizeof(c->tracefs), "%s", dirs[i]);
			say(r, DC_FEAT_YES, "%s", dirs[i]);
			return;
		}
	}
	say(r, DC_FEAT_NO, "not mounted at /sys/kernel/tracing nor /sys/kernel/debug/tracing "
	    "(as root: mount -t tracefs nodev /sys/kernel/tracing)");
}

/* perf_event tracepoint syscalls:sys_enter_openat, fired by an open(2). */
static void check_tracepoint(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	if (!c->tracefs[0]) {
		say(r, DC_FEAT_NO, "tracefs is not mounted, so the event id of "
		    "syscalls:sys_enter_openat cannot be read (libbpf's attach_tracepoint reads "
		    "it there; as root: mount -t tracefs nodev /sys/kernel/tracing)");
		return;
	}
	char path[256];
	snprintf(path, sizeof(path), "%s/events/syscalls/sys_enter_openat/id", c->tracefs);
	long id = read_long(path);
	if (id < 0) {
		say(r, DC_FEAT_NO, "cannot read %s: %s%s", path, errtext((int)-id),
		    id == -ENOENT ? " (the kernel has no CONFIG_FTRACE_SYSCALLS)" : "");
		return;
	}
	int p = keep(&f, load_mark(c, "tp", BPF_PROG_TYPE_TRACEPOINT, 0, 0, K_TP, 0));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load refused: %s (%s)", errtext(-p), load_meaning(-p));
		goto out;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_TRACEPOINT;
	a.config = id;
	int pe = keep(&f, perf_open(&a, -1));
	if (pe < 0) {
		say(r, DC_FEAT_NO, "perf_event_open of syscalls:sys_enter_openat refused: %s",
		    errtext(-pe));
		goto out;
	}
	int l = attach_perf(p, pe, 0);
	if (l < 0 && l != ATTACHED_BY_IOCTL) {
		say(r, DC_FEAT_NO, "attach refused: %s", errtext(-l));
		goto out;
	}
	keep(&f, l);
	int fd = open("/", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		close(fd);
	if (marked(c, K_TP) != K_TP + 1)
		say(r, DC_FEAT_NO, "attached, but the program did not run on an openat");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* BPF_PROG_TYPE_RAW_TRACEPOINT on sys_enter, fired by our own next syscall. */
static void check_raw_tracepoint(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	int p = keep(&f, load_mark(c, "rawtp", BPF_PROG_TYPE_RAW_TRACEPOINT, 0, 0, K_RAWTP, 0));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load refused: %s (%s)", errtext(-p), load_meaning(-p));
		goto out;
	}
	int l = keep(&f, bpf_raw_tracepoint_open("sys_enter", p));
	if (l < 0) {
		say(r, DC_FEAT_NO, "bpf_raw_tracepoint_open(sys_enter) refused: %s",
		    errtext(errno ? errno : -l));
		goto out;
	}
	if (syscall(__NR_getppid) < 0)
		errno = 0;
	if (marked(c, K_RAWTP) != K_RAWTP + 1)
		say(r, DC_FEAT_NO, "attached, but the program did not run on a syscall");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* The BTF id of name (kind) in vmlinux, or 0 with the reason in r. */
static __u32 btf_id(const struct ctx *c, const char *name, int kind,
		    struct dc_feature_result *r)
{
	if (!c->btf) {
		say(r, DC_FEAT_NO, "needs the kernel's BTF (see btf)");
		return 0;
	}
	int id = btf__find_by_name_kind(c->btf, name, kind);
	if (id <= 0) {
		say(r, DC_FEAT_NO, "%s is not in the kernel's BTF", name);
		return 0;
	}
	return id;
}

/* Links a BPF_PROG_TYPE_TRACING program: bpf_link_create, or on kernels without tracing
 * links (EINVAL) bpf_raw_tracepoint_open(NULL), as libbpf does. fd or -errno. */
static int attach_tracing(int prog, enum bpf_attach_type t)
{
	int l = bpf_link_create(prog, 0, t, NULL);
	if (l < 0 && errno == EINVAL)
		l = bpf_raw_tracepoint_open(NULL, prog);
	return l < 0 ? (errno ? -errno : l) : l;
}

/* tp_btf: BPF_PROG_TYPE_TRACING + BPF_TRACE_RAW_TP on btf_trace_sched_process_exit,
 * fired by a child's exit. */
static void check_tp_btf(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	__u32 id = btf_id(c, "btf_trace_sched_process_exit", BTF_KIND_TYPEDEF, r);
	if (!id)
		return;
	int p = keep(&f, load_mark(c, "tpbtf", BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, id,
				   K_TPBTF, 0));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load refused: %s (%s)", errtext(-p), load_meaning(-p));
		goto out;
	}
	int l = keep(&f, attach_tracing(p, BPF_TRACE_RAW_TP));
	if (l < 0) {
		say(r, DC_FEAT_NO, "attach to sched_process_exit refused: %s", errtext(-l));
		goto out;
	}
	fflush(NULL);
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	if (marked(c, K_TPBTF) != K_TPBTF + 1)
		say(r, DC_FEAT_NO, "attached, but the program did not run when a process exited");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* What a refused fentry/fexit load or attach means (kernel/bpf/trampoline.c needs
 * ftrace direct calls; ftrace can be locked down or absent). */
static const char *fentry_meaning(int e)
{
	switch (e) {
	case EPERM:
		return "ftrace is locked down, or CONFIG_FUNCTION_TRACER off";
	case DC_ENOTSUPP:
	case EOPNOTSUPP:
		return "the kernel cannot build BPF trampolines: no "
		       "CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS, or ftrace is locked down";
	case EBUSY:
		return "another ftrace user holds the function";
	default:
		return load_meaning(e);
	}
}

/* fentry and fexit on vfs_read, fired by a read(2). */
static void check_fentry(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	__u32 id = btf_id(c, "vfs_read", BTF_KIND_FUNC, r);
	if (!id)
		return;
	static const char *const what[2] = { "fentry", "fexit" };
	for (int ret = 0; ret < 2; ret++) {
		enum bpf_attach_type t = ret ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
		int p = keep(&f, load_mark(c, what[ret], BPF_PROG_TYPE_TRACING, t, id,
					   ret ? K_FEXIT : K_FENTRY, 0));
		if (p < 0) {
			say(r, DC_FEAT_NO, "%sload refused: %s (%s)", ret ? "fexit " : "",
			    errtext(-p), fentry_meaning(-p));
			goto out;
		}
		int l = keep(&f, attach_tracing(p, t));
		if (l < 0) {
			say(r, DC_FEAT_NO, "%s attach to vfs_read refused: %s (%s)", what[ret],
			    errtext(-l), fentry_meaning(-l));
			goto out;
		}
	}
	fire_vfs_read();
	if (marked(c, K_FENTRY) != K_FENTRY + 1 || marked(c, K_FEXIT) != K_FEXIT + 1)
		say(r, DC_FEAT_NO, "attached, but the programs did not run on a read");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* Why there is no kprobe PMU: checked without privileges too. 1 when it is there. */
static int kprobe_pmu(const struct ctx *c, struct dc_feature_result *r, int *type)
{
	*type = pmu_type("kprobe");
	if (*type >= 0)
		return 1;
	char legacy[128] = "";
	if (c->tracefs[0]) {
		char p[96];
		struct stat st;
		snprintf(p, sizeof(p), "%s/kprobe_events", c->tracefs);
		if (stat(p, &st) == 0)
			snprintf(legacy, sizeof(legacy), "; tracefs has kprobe_events (legacy "
				 "kprobes)");
		else if (errno == ENOENT)
			snprintf(legacy, sizeof(legacy), "; tracefs has no kprobe_events either");
	}
	if (*type == -ENOENT)
		say(r, DC_FEAT_NO, "no kprobe PMU (/sys/bus/event_source/devices/kprobe is "
		    "missing): the kernel is built without CONFIG_KPROBES (or "
		    "CONFIG_KPROBE_EVENTS)%s", legacy);
	else
		say(r, DC_FEAT_NO, "cannot read the kprobe PMU's type "
		    "(/sys/bus/event_source/devices/kprobe/type: %s)%s", errtext(-*type), legacy);
	return 0;
}

/* kprobe + kretprobe perf events on vfs_read, fired by a read(2). */
static void check_kprobe(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	int type;
	if (!kprobe_pmu(c, r, &type) || !need_map(c, r))
		return;
	int bit = pmu_retprobe_bit("kprobe");
	static const char *const what[2] = { "kprobe", "kretprobe" };
	for (int ret = 0; ret < 2; ret++) {
		int p = keep(&f, load_mark(c, what[ret], BPF_PROG_TYPE_KPROBE, 0, 0,
					   ret ? K_KRETPROBE : K_KPROBE, 0));
		if (p < 0) {
			say(r, DC_FEAT_NO, "%s program load refused: %s (%s)", what[ret],
			    errtext(-p), load_meaning(-p));
			goto out;
		}
		int pe = keep(&f, perf_probe(type, bit, ret, "vfs_read", 0, -1));
		if (pe < 0) {
			say(r, DC_FEAT_NO, "perf_event_open of a %s on vfs_read refused: %s",
			    what[ret], errtext(-pe));
			goto out;
		}
		int l = attach_perf(p, pe, 0);
		if (l < 0 && l != ATTACHED_BY_IOCTL) {
			say(r, DC_FEAT_NO, "attaching the %s program refused: %s", what[ret],
			    errtext(-l));
			goto out;
		}
		keep(&f, l);
	}
	fire_vfs_read();
	if (marked(c, K_KPROBE) != K_KPROBE + 1 || marked(c, K_KRETPROBE) != K_KRETPROBE + 1)
		say(r, DC_FEAT_NO, "attached, but the programs did not run on a read");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

/* A kprobe_multi link on vfs_read, fired by a read(2). */
static void check_kprobe_multi(const struct ctx *c, struct dc_feature_result *r)
{
	struct fds f = { .n = 0 };
	if (!need_map(c, r))
		return;
	int p = keep(&f, load_mark(c, "kmulti", BPF_PROG_TYPE_KPROBE, BPF_TRACE_KPROBE_MULTI, 0,
				   K_KMULTI, 0));
	if (p < 0) {
		say(r, DC_FEAT_NO, "load with expected_attach_type BPF_TRACE_KPROBE_MULTI "
		    "refused: %s (%s)", errtext(-p), load_meaning(-p));
		goto out;
	}
	const char *syms[] = { "vfs_read" };
	LIBBPF_OPTS(bpf_link_create_opts, o, .kprobe_multi.syms = syms, .kprobe_multi.cnt = 1);
	int l = keep(&f, bpf_link_create(p, 0, BPF_TRACE_KPROBE_MULTI, &o));
	if (l < 0) {
		int e = errno ? errno : -l;
		say(r, DC_FEAT_NO, "link_create(BPF_TRACE_KPROBE_MULTI) on vfs_read refused: %s%s",
		    errtext(e),
		    e == EOPNOTSUPP ? " (the kernel has no CONFIG_FPROBE: kprobe_multi needs "
				      "fprobe, i.e. ftrace)" :
		    e == EINVAL ? " (no kprobe_multi links: kernel < 5.18)" :
		    e == ESRCH || e == ENOENT ? " (vfs_read is not in kallsyms)" :
		    e == EPERM ? " (ftrace is locked down, or not permitted)" : "");
		goto out;
	}
	fire_vfs_read();
	if (marked(c, K_KMULTI) != K_KMULTI + 1)
		say(r, DC_FEAT_NO, "attached, but the program did not run on a read");
	else
		say(r, DC_FEAT_YES, "");
out:
	close_all(&f);
}

static int ringbuf_sample(void *ctx, void *data, size_t size)
{
	(void)ctx, (void)data, (void)size;
	return 0;
}

/* A BPF_MAP_TYPE_RINGBUF map, mmapped and polled by libbpf's ring_buffer__new. */
static void check_ringbuf(struct dc_feature_result *r)
{
	long page = sysconf(_SC_PAGESIZE);
	__u32 size = page > 0 && page < (1 << 16) ? 1 << 16 : (__u32)page;
	int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "dc_feat_rb", 0, 0, size, NULL);
	if (fd < 0) {
		int e = errno ? errno : -fd;
		say(r, DC_FEAT_NO, "map create refused: %s%s", errtext(e),
		    e == EINVAL ? " (no ring buffer maps: kernel < 5.8)" :
		    e == EPERM ? " (needs CAP_BPF or root)" : "");
		return;
	}
	track(fd);
	struct ring_buffer *rb = ring_buffer__new(fd, ringbuf_sample, NULL, NULL);
	if (!rb)
		say(r, DC_FEAT_NO, "the map is created, but libbpf cannot mmap it: %s",
		    errtext(errno));
	else
		say(r, DC_FEAT_YES, "");
	ring_buffer__free(rb);
	close(fd);
}

static void check_btf(struct ctx *c, struct dc_feature_result *r)
{
	c->btf = btf__load_vmlinux_btf();
	if (!c->btf) {
		int e = errno;
		say(r, DC_FEAT_NO, "libbpf cannot load the kernel's BTF: %s (%s)", errtext(e),
		    access("/sys/kernel/btf/vmlinux", F_OK) ? "no /sys/kernel/btf/vmlinux: the "
		    "kernel has no CONFIG_DEBUG_INFO_BTF" : "/sys/kernel/btf/vmlinux is there");
		return;
	}
	say(r, DC_FEAT_YES, "");
}

static void check_caps(struct dc_features *f)
{
	for (int i = 0; i < DC_CAP_NR; i++)
		f->caps[i] = dc_cap_effective(caps[i].cap) == 1; /* capget failing: none */
}

/* libbpf's own diagnostics: the reasons here say it better; DATACRUMBS_DEBUG shows them. */
static int quiet_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || !getenv("DATACRUMBS_DEBUG"))
		return 0;
	fprintf(stderr, "datacrumbs: libbpf: ");
	return vfprintf(stderr, fmt, ap);
}

void dc_features_check(struct dc_features *f)
{
	memset(f, 0, sizeof(*f));
	struct utsname u;
	snprintf(f->kernel, sizeof(f->kernel), "%s", uname(&u) ? "unknown" : u.release);
	f->libbpf = libbpf_version_string();
	check_caps(f);
	f->privileged = f->caps[DC_CAP_BPF] || f->caps[DC_CAP_SYS_ADMIN];

	libbpf_print_fn_t old = libbpf_set_print(quiet_print);
	struct ctx c;
	memset(&c, 0, sizeof(c));
	c.map_fd = -1;
	c.tid = gettid(); /* every check fires its probes from this thread */
	check_btf(&c, &f->r[DC_FEAT_BTF]);
	check_tracefs(&c, &f->r[DC_FEAT_TRACEFS]);
	for (int i = 0; i < DC_FEAT_NR; i++)
		if (i != DC_FEAT_BTF && i != DC_FEAT_TRACEFS)
			say(&f->r[i], DC_FEAT_UNKNOWN, "not checked: needs root (or CAP_BPF and "
			    "CAP_PERFMON)");
	int kt;
	kprobe_pmu(&c, &f->r[DC_FEAT_KPROBE], &kt); /* a missing PMU is a fact for anyone */
	if (kt >= 0 && !f->privileged)
		say(&f->r[DC_FEAT_KPROBE], DC_FEAT_UNKNOWN, "not checked: needs root (or CAP_BPF "
		    "and CAP_PERFMON)");
	if (f->privileged) {
		c.map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "dc_feat", 4, 8, K_NR, NULL);
		c.map_errno = c.map_fd < 0 ? (errno ? errno : -c.map_fd) : 0;
		track(c.map_fd);
		find_libc_getpid(&c);
		check_uprobe(&c, &f->r[DC_FEAT_UPROBE]);
		check_cookie(&c, &f->r[DC_FEAT_ATTACH_COOKIE]);
		check_uprobe_multi(&c, &f->r[DC_FEAT_UPROBE_MULTI]);
		check_uprobe_session(&c, &f->r[DC_FEAT_UPROBE_SESSION]);
		check_tracepoint(&c, &f->r[DC_FEAT_TRACEPOINT]);
		check_raw_tracepoint(&c, &f->r[DC_FEAT_RAW_TRACEPOINT]);
		check_tp_btf(&c, &f->r[DC_FEAT_TP_BTF]);
		check_fentry(&c, &f->r[DC_FEAT_FENTRY]);
		if (kt >= 0)
			check_kprobe(&c, &f->r[DC_FEAT_KPROBE]);
		check_kprobe_multi(&c, &f->r[DC_FEAT_KPROBE_MULTI]);
		check_ringbuf(&f->r[DC_FEAT_RINGBUF]);
		if (c.map_fd >= 0)
			close(c.map_fd);
		await_freed();
	}
	btf__free(c.btf);
	libbpf_set_print(old);
}

/* --- output -------------------------------------------------------------------------- */

static const char features_help[] =
"usage: datacrumbs features [--json]\n"
"\n"
"Tries, on this kernel and with these privileges, each mechanism the tracer can use, and\n"
"prints whether it works, with the reason when it does not: minimal BPF programs are\n"
"loaded, attached, fired where possible, and closed again (nothing stays attached).\n"
"\n"
"  uprobe          uprobe + uretprobe perf events (POSIX, STDIO, MPI-IO layers)\n"
"  attach_cookie   bpf_get_attach_cookie in a uprobe program (kernel >= 5.15)\n"
"  uprobe_multi    one link for many uprobes (kernel >= 6.6)\n"
"  uprobe_session  session uprobes: one program at entry and, only in traced processes,\n"
"                  at return (kernel >= 6.13); without them returns are seen at the\n"
"                  functions' return instructions (never a uretprobe unless asked)\n"
"  tracepoint      perf_event tracepoint syscalls:sys_enter_openat (needs tracefs)\n"
"  raw_tracepoint  raw tracepoint sys_enter\n"
"  tp_btf          BTF-typed raw tracepoint sched_process_exit\n"
"  fentry          fentry/fexit on vfs_read (needs ftrace)\n"
"  kprobe          kprobe/kretprobe perf events on vfs_read (needs CONFIG_KPROBES)\n"
"  kprobe_multi    one link for many kprobes (needs fprobe)\n"
"  ringbuf         a BPF ring buffer map (the event transport)\n"
"  btf             the kernel's BTF, /sys/kernel/btf/vmlinux\n"
"  tracefs         tracefs mounted (/sys/kernel/tracing)\n"
"then the capabilities held and what it all means for each layer.\n"
"\n"
"options:\n"
"      --json   one JSON object: {\"kernel\", \"libbpf\", \"privileged\", \"mechanisms\":\n"
"               {NAME: {\"ok\": true|false|null, \"reason\"}}, \"capabilities\", \"layers\"}\n"
"  -h, --help   this text\n"
"\n"
"Without root (or CAP_BPF and CAP_PERFMON) only capabilities, BTF, tracefs and the kprobe\n"
"PMU can be checked; the rest is reported as not checked.\n"
"exit status: 0 when the checks ran (even if some say no); 2 on a usage error.\n";

static int yes(const struct dc_features *f, enum dc_feature_id id)
{
	return f->r[id].ok;
}

/* 1 if a or b, 0 if neither, -1 if unknown and not known yes */
static int either(int a, int b)
{
	if (a == DC_FEAT_YES || b == DC_FEAT_YES)
		return 1;
	if (a == DC_FEAT_UNKNOWN || b == DC_FEAT_UNKNOWN)
		return -1;
	return 0;
}

static int both(int a, int b)
{
	if (a == DC_FEAT_NO || b == DC_FEAT_NO)
		return 0;
	if (a == DC_FEAT_UNKNOWN || b == DC_FEAT_UNKNOWN)
		return -1;
	return 1;
}

struct layer {
	const char *key, *label, *needs;
	int ok;
};

/* Which layers this kernel allows, by the programs datacrumbs loads for them: uprobe
 * layers need uprobe_multi links, or perf_event uprobes with attach cookies
 * (bpf/uprobe.bpf.c, core/attach.c), the syscall, page cache and
 * block layers tp_btf programs (bpf/syscall.bpf.c, kernel.bpf.c: BTF and raw tracepoints
 * with BTF), VFS fentry or kprobes (bpf/vfs.bpf.c). Every layer also needs the ring
 * buffer and the process-tracking tp_btf programs. */
static void layers(const struct dc_features *f, struct layer l[4])
{
	int common = both(yes(f, DC_FEAT_RINGBUF), both(yes(f, DC_FEAT_TP_BTF), yes(f, DC_FEAT_BTF)));
	/* an uprobe_multi link carries its cookies and needs only CAP_BPF + CAP_PERFMON;
	 * a perf_event uprobe wants more (EACCES without root here): either way serves */
	l[0] = (struct layer){ "posix_stdio_mpiio", "POSIX, STDIO, MPI-IO",
			       "uprobe_multi, or uprobe and attach_cookie; tp_btf",
			       both(common, either(yes(f, DC_FEAT_UPROBE_MULTI),
						   both(yes(f, DC_FEAT_UPROBE),
							yes(f, DC_FEAT_ATTACH_COOKIE)))) };
	l[1] = (struct layer){ "syscalls", "syscalls", "tp_btf", common };
	l[2] = (struct layer){ "vfs", "VFS", "fentry or kprobe, tp_btf",
			       both(common, either(yes(f, DC_FEAT_FENTRY), yes(f, DC_FEAT_KPROBE))) };
	l[3] = (struct layer){ "page_cache_block", "page cache, block", "tp_btf", common };
}

/* How `datacrumbs run` sees calls return, from the checks (core/attach.c makes the same
 * choice at run time): the mechanism's name and what it means for processes not traced. */
static const char *return_probes(const struct dc_features *f, const char **what)
{
	if (yes(f, DC_FEAT_UPROBE_SESSION) == DC_FEAT_YES &&
	    !getenv("DATACRUMBS_NO_UPROBE_SESSION")) {
		*what = "one program at entry and return; the return is installed only in traced "
			"processes: others only step over the entry breakpoint";
		return "session";
	}
	if (yes(f, DC_FEAT_UPROBE_SESSION) == DC_FEAT_UNKNOWN) {
		*what = "not checked: needs root";
		return "unknown";
	}
	*what = "no session uprobes (kernel < 6.13, or DATACRUMBS_NO_UPROBE_SESSION): returns "
		"are seen by plain uprobes on each probed function's return instructions, also "
		"in processes not traced (a trap each, as at the entry; no return address is "
		"rewritten); a function whose returns cannot be found so is entry-only, and a "
		"uretprobe is used only where a script asks for returns = \"hijack\"";
	return "instructions";
}

static const char not_root_msg[] =
	"NOT ROOT: only capabilities, BTF, tracefs and the kprobe PMU were checked; the other "
	"mechanisms need root (or CAP_BPF and CAP_PERFMON) to be tried: run it as root";

static void print_text(const struct dc_features *f)
{
	printf("%-18s%s\n", "kernel", f->kernel);
	printf("%-18s%s\n", "libbpf", f->libbpf);
	for (int i = 0; i < DC_FEAT_NR; i++) {
		const struct dc_feature_result *r = &f->r[i];
		const char *v = r->ok == DC_FEAT_YES ? "yes" : r->ok == DC_FEAT_NO ? "no" : "?";
		if (r->reason[0])
			printf("%-18s%-5s%s\n", feature_names[i], v, r->reason);
		else
			printf("%-18s%s\n", feature_names[i], v);
	}
	printf("%-18s", "capabilities");
	for (int i = 0; i < DC_CAP_NR; i++)
		printf("%s%s %s", i ? ", " : "", caps[i].name, f->caps[i] ? "yes" : "no");
	printf("\n");
	struct layer l[4];
	layers(f, l);
	printf("%-18s", "layers");
	for (int i = 0; i < 4; i++)
		printf("%s%s %s (%s %s)", i ? "; " : "", l[i].label,
		       l[i].ok == 1 ? "yes" : l[i].ok == 0 ? "NO" : "unknown",
		       l[i].ok == 1 ? "via" : "needs", l[i].needs);
	printf("\n");
	const char *what, *mech = return_probes(f, &what);
	printf("%-18s%-13s%s\n", "return probes", mech, what);
	if (!f->privileged)
		printf("datacrumbs: %s\n", not_root_msg);
}

/* Prints s as a JSON string, escaped as the trace's strings are (writer.h). */
static void json_str(const char *s)
{
	size_t n = strlen(s);
	char small[512], *buf = n * 6 <= sizeof(small) ? small : malloc(n * 6);
	long o = buf ? dc_json_escape(buf, buf == small ? sizeof(small) : n * 6, s, n) : -1;
	printf("\"%.*s\"", o < 0 ? 0 : (int)o, buf ? buf : "");
	if (buf != small)
		free(buf);
}

static const char *json_tri(int v)
{
	return v == 1 ? "true" : v == 0 ? "false" : "null";
}

static void print_json(const struct dc_features *f)
{
	printf("{\"kernel\": ");
	json_str(f->kernel);
	printf(", \"libbpf\": ");
	json_str(f->libbpf);
	printf(", \"privileged\": %s", f->privileged ? "true" : "false");
	if (!f->privileged) {
		printf(", \"note\": ");
		json_str(not_root_msg);
	}
	printf(",\n \"mechanisms\": {");
	for (int i = 0; i < DC_FEAT_NR; i++) {
		const struct dc_feature_result *r = &f->r[i];
		printf("%s\n  ", i ? "," : "");
		json_str(feature_names[i]);
		printf(": {\"ok\": %s", json_tri(r->ok));
		if (r->reason[0]) {
			printf(r->ok == DC_FEAT_YES ? ", \"detail\": " : ", \"reason\": ");
			json_str(r->reason);
		}
		printf("}");
	}
	printf("},\n \"capabilities\": {");
	for (int i = 0; i < DC_CAP_NR; i++) {
		printf("%s", i ? ", " : "");
		json_str(caps[i].name);
		printf(": %s", f->caps[i] ? "true" : "false");
	}
	printf("},\n \"layers\": {");
	struct layer l[4];
	layers(f, l);
	for (int i = 0; i < 4; i++) {
		printf("%s", i ? ", " : "");
		json_str(l[i].key);
		printf(": {\"ok\": %s, \"needs\": ", json_tri(l[i].ok));
		json_str(l[i].needs);
		printf("}");
	}
	const char *what, *mech = return_probes(f, &what);
	printf("},\n \"return_probes\": {\"mechanism\": ");
	json_str(mech);
	printf(", \"means\": ");
	json_str(what);
	printf("}}\n");
}

int dc_features_main(int argc, char **argv)
{
	int json = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(features_help, stdout);
			return 0;
		} else {
			fprintf(stderr, "datacrumbs: features: unknown %s '%s' (see 'datacrumbs "
				"features --help')\n", argv[i][0] == '-' ? "option" : "argument",
				argv[i]);
			return 2;
		}
	}
	struct dc_features f;
	dc_features_check(&f);
	if (json) {
		print_json(&f);
		if (!f.privileged)
			fprintf(stderr, "datacrumbs: %s\n", not_root_msg);
	} else {
		print_text(&f);
	}
	return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
