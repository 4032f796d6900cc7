/* kbtf.c: the kernel's BTF, parsed once per run and lent to libbpf's object loads
 * (dc_vmlinux_btf), by taking libbpf's own calls of btf__load_vmlinux_btf and btf__free. */
#define _GNU_SOURCE
#include "kbtf.h"

#include <dlfcn.h>
#include <pthread.h>
#include <bpf/btf.h>
#include <unistd.h>

#include "util.h"

/* Why this file defines two of libbpf's functions. libbpf 1.1 (Debian 12) has no way to
 * hand an object the kernel's BTF: bpf_object__load_vmlinux_btf calls
 * btf__load_vmlinux_btf() for every object and btf__free()s the result at the end of
 * bpf_object__load (libbpf v1.1.2 src/libbpf.c; `kernel_btf` options came later). Both are
 * exported functions, which libbpf.so calls through its PLT (objdump -d: `call
 * <btf__load_vmlinux_btf@plt>`), so the dynamic linker binds those calls to the
 * executable's definitions below (ELF symbol interposition; ld exports a definition that a
 * shared library in the link also defines). While a parse is held, libbpf gets it and its
 * btf__free of it does nothing; any other pointer, and every call when none is held, goes
 * to libbpf's own (dlsym RTLD_NEXT). A libbpf that bound the calls internally would just
 * parse per object again, as before.
 * libbpf only reads the kernel's BTF while it loads (CO-RE candidates, kfunc and attach
 * ids, module BTFs split on top of it), so two objects loading on two threads may share it.
 * Invariant: `held` is freed only by dc_vmlinux_btf_release, after every load that was
 * lent it has returned (core/attach.c releases it once its objects are loaded). */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER; /* held across a parse */
static struct btf *held;
static struct btf *(*real_load)(void);
static void (*real_free)(struct btf *);

/* dc_vmlinux_btf_prefetch's thread: started and joined by one thread (the session's),
 * in the process that started it (a child forked meanwhile has no such thread). While
 * `running`, written under `mu`, a parse libbpf asks for is kept as `held` (so lent to
 * every later load), whichever thread asked first. */
static struct {
	pthread_t thread;
	pid_t pid;
	int running;
} pre;

static void bind_real(void)
{
	if (!real_load) {
		real_load = (struct btf * (*)(void))dlsym(RTLD_NEXT, "btf__load_vmlinux_btf");
		real_free = (void (*)(struct btf *))dlsym(RTLD_NEXT, "btf__free");
	}
}

/* libbpf's btf__load_vmlinux_btf, taken: the held parse when there is one (not owned by
 * the caller: its btf__free of it is a no-op), else libbpf's own, a new parse the caller
 * owns. NULL with errno as libbpf's. */
struct btf *btf__load_vmlinux_btf(void)
{
	pthread_mutex_lock(&mu);
	bind_real();
	struct btf *b = held;
	if (!b && real_load) {
		b = real_load();
		if (pre.running) /* dc_vmlinux_btf_prefetch's parse was asked for: this is it */
			held = b;
	}
	pthread_mutex_unlock(&mu);
	return b;
}

/* libbpf's btf__free, taken: nothing for the held parse, libbpf's own for any other. */
void btf__free(struct btf *btf)
{
	pthread_mutex_lock(&mu);
	bind_real();
	int mine = btf && btf == held;
	pthread_mutex_unlock(&mu);
	if (!mine && real_free)
		real_free(btf);
}

const struct btf *dc_vmlinux_btf(void)
{
	pthread_mutex_lock(&mu);
	bind_real();
	if (!held && real_load)
		held = real_load();
	struct btf *b = held;
	pthread_mutex_unlock(&mu);
	return b;
}

static void *prefetch_main(void *arg)
{
	(void)arg;
	dc_vmlinux_btf();
	return NULL;
}

void dc_vmlinux_btf_prefetch(void)
{
	if (pre.running)
		return;
	pre.pid = getpid();
	pthread_mutex_lock(&mu);
	pre.running = 1; /* from here a load's btf__load_vmlinux_btf parses into `held` */
	pthread_mutex_unlock(&mu);
	if (dc_thread_start(&pre.thread, prefetch_main, NULL)) {
		pthread_mutex_lock(&mu);
		pre.running = 0;
		pthread_mutex_unlock(&mu);
	}
}

void dc_vmlinux_btf_release(void)
{
	if (pre.running && pre.pid == getpid()) {
		pthread_join(pre.thread, NULL);
		pthread_mutex_lock(&mu);
		pre.running = 0;
		pthread_mutex_unlock(&mu);
	}
	pthread_mutex_lock(&mu);
	struct btf *b = held;
	held = NULL;
	pthread_mutex_unlock(&mu);
	if (b && real_free)
		real_free(b);
}
