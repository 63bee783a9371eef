/* Calls clock_gettime in a loop: its time is spent in the vDSO, the
 * kernel-provided object no file on disk holds (mt-record's vDSO test).
 * cflags: below is read by the Makefile. */
// cflags: -fno-omit-frame-pointer -O1
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 3000000, s = 0;
	struct timespec ts;
	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec & 1;
	}
	printf("%ld\n", s);
	return 0;
}
