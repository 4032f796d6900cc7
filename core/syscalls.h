/* syscalls.h: syscall names and numbers of this architecture (x86-64), from the
 * asm/unistd_64.h the tracer was built with; nothing else. */
#ifndef DC_SYSCALLS_H
#define DC_SYSCALLS_H

/* The number of syscall `name` ("read", "openat"; a "sys_" prefix is ignored), or -1 when
 * this architecture has no such syscall. Source: asm/unistd_64.h (__NR_read is 0). */
int dc_syscall_nr(const char *name);

#endif
