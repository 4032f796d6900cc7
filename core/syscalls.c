/* syscalls.c: the syscall name -> number table (generated at build time into
 * syscall_table.h from asm/unistd_64.h) and its lookup. */
#include "syscalls.h"

#include <string.h>

static const struct {
	const char *name;
	int nr;
} table[] = {
#include "syscall_table.h"
};

int dc_syscall_nr(const char *name)
{
	if (!strncmp(name, "sys_", 4))
		name += 4;
	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (!strcmp(table[i].name, name))
			return table[i].nr;
	return -1;
}
