/* A hot loop in functions inlined two deep (step, inlined in work, and mix,
 * inlined in step), for recording for real with sampling: nearly every
 * sample's leaf is inlined code, which --inlines names as perf names
 * inlined frames, "mix (inlined)". Frame pointers make callchains whole. */
// cflags: -fno-omit-frame-pointer -O1
#include <stdio.h>
#include <stdlib.h>

static inline __attribute__((always_inline)) long mix(long i)
{
	long s = 0;
	for (int k = 0; k < 100; k++)
		s += (i * k) % 13;
	return s;
}

static inline __attribute__((always_inline)) long step(long i)
{
	return mix(i) + mix(i + 1);
}

__attribute__((noinline)) static long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += step(i);
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	printf("%ld\n", work(n));
	return 0;
}
