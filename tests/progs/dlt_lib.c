/* dlt_lib.c: libdltest.so, the library prog_dlopen loads at run time: dlt_fn returns its
 * argument times 10, and the constructor calls dlt_fn(-1) each time the library is
 * loaded, before dlopen returns (a probe attached later than that misses this call). */
__attribute__((noinline, visibility("default"))) long dlt_fn(long x)
{
	__asm__ volatile("" ::: "memory");
	return x * 10;
}

__attribute__((constructor)) static void dlt_init(void)
{
	dlt_fn(-1);
}
