/* A dynamically linked glibc program for the synthesizer: PLT calls,
 * IFUNC-resolved string functions, a qsort callback, setjmp/longjmp,
 * syscalls and a signal handler. PIE, so the decoder must apply load bias. */
// cflags: -fno-optimize-sibling-calls
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static jmp_buf env;
static volatile sig_atomic_t got;

static void on_signal(int sig)
{
	got = sig;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static void bail(int code)
{
	longjmp(env, code);
}

int main(void)
{
	int v[16];
	for (int i = 0; i < 16; i++)
		v[i] = (i * 7919) % 31;
	qsort(v, 16, sizeof v[0], cmp_int);          /* callback from libc */
	char buf[64];
	strcpy(buf, "synthesized ");                  /* IFUNC */
	size_t n = strlen(buf);                       /* IFUNC */
	memcpy(buf + n, "trace", 6);
	signal(SIGUSR1, on_signal);
	raise(SIGUSR1);                               /* handler runs */
	int r = setjmp(env);
	if (r == 0)
		bail(3);                              /* longjmp back */
	if (write(1, buf, strlen(buf)) < 0)
		return 1;
	return (v[0] + r + got) & 0x7f ? 0 : 1;
}
