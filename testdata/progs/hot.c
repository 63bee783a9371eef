/* A program with one hot function, for recording for real with sampling
 * (mt-record's test): nearly all of its time is in hot_loop, called from
 * middle, called from main. Frame pointers make perf's callchains whole. */
// cflags: -fno-omit-frame-pointer -O1
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static long hot_loop(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

__attribute__((noinline)) static long middle(long n)
{
	return hot_loop(n) + 1;
}

int main(int argc, char **argv)
{
	long t = 0;
	int reps = argc > 1 ? atoi(argv[1]) : 30; /* more: a process to attach to */
	for (int k = 0; k < reps; k++)
		t += middle(10000000 + k); /* distinct arguments: no call is folded away */
	printf("%ld\n", t);
	return 0;
}
