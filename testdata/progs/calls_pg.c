/* mt-report's peer check: a dynamic program whose functions carry
 * fentry hooks as 5-byte nops (-pg -mfentry -mnop-mcount, compile only;
 * linked without -pg, so no gmon start-up), which uftrace patches at run
 * time (`uftrace record -P .`) to count every call exactly, while the
 * same binary runs unpatched under mt-synth. Direct and indirect calls,
 * recursion and a libc call; argv[1] scales the work (default 50).
 * cflags: and compile-only: below are read by the Makefile. */
// cflags: -fno-pie -no-pie
// compile-only: -pg -mfentry -mnop-mcount
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long leaf(long x) { return x * 3 + 1; }
__attribute__((noinline)) static long fact(long n) { return n < 2 ? 1 : n * fact(n - 1); }
__attribute__((noinline)) static long step(long i) { return leaf(i) + (i % 3 == 0 ? fact(i % 7) : 0); }
__attribute__((noinline)) static long twice(long x) { return leaf(x) + leaf(x + 1); }

static long (*const ops[])(long) = {step, twice};

__attribute__((noinline)) static long run(int n)
{
	long s = 0;
	for (int i = 0; i < n; i++)
		s += ops[i % 2](i);
	return s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 50;
	printf("%ld\n", run(n));
	return 0;
}
