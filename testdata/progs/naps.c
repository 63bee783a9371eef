/* A program that runs, sleeps a known time, and runs again, for recording
 * for real with sampling (issue 26: off-CPU time): spin busy-loops for
 * MS milliseconds of the monotonic clock, nap sleeps SLEEP milliseconds.
 * Usage: naps [MS [SLEEP]] (default 100 and 300). */
// cflags: -fno-omit-frame-pointer -O1
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static void spin(long ms)
{
	long end = now_ms() + ms;
	while (now_ms() < end)
		for (int i = 0; i < 10000; i++)
			sink += (unsigned long)i;
}

__attribute__((noinline)) static void nap(long ms)
{
	usleep((useconds_t)(ms * 1000));
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 100, sleep_ms = argc > 2 ? atol(argv[2]) : 300;
	spin(ms);
	nap(sleep_ms);
	spin(ms);
	return 0;
}
