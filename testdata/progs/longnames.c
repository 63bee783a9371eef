/* Two hot functions whose names are 3,000 bytes long and differ only in
 * their last word (as C++'s _Hashtable<...>::_M_rehash and ::clear do), for
 * recording for real with sampling: names cut at any fixed length merge
 * them into one. Frame pointers make perf's callchains whole. */
// cflags: -fno-omit-frame-pointer -O1
#include <stdio.h>
#include <stdlib.h>

#define S10 "long_name_"
#define S100 S10 S10 S10 S10 S10 S10 S10 S10 S10 S10
#define S1000 S100 S100 S100 S100 S100 S100 S100 S100 S100 S100
#define LONG S1000 S1000 S1000

__attribute__((noinline)) long spin_rehash(long n) __asm__(LONG "rehash");
__attribute__((noinline)) long spin_clear(long n) __asm__(LONG "clear");

__attribute__((noinline)) long spin_rehash(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

__attribute__((noinline)) long spin_clear(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i * i % 11;
	return s;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000000, t = spin_rehash(n) + spin_clear(n);
	printf("%ld\n", t);
	return 0;
}
