/* For mt-record's trigger: the main thread spins in before_hit until a
 * worker thread -- never the first thread, magic-trace's #274 -- has
 * called magic_trace_stop_indicator HITS times (argv[1], default 1; the
 * first after FIRST ms, argv[3], default 300; then 100 ms apart), then
 * spins in after_hit for AFTER ms (argv[2], default 1000). A recording that ends at the first hit holds before_hit, hardly
 * any after_hit. */
// cflags: -pthread -fno-omit-frame-pointer -O1
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* The `.` trigger: empty, not inlined, its two arguments readable in
 * rdi and rsi at the breakpoint. */
__attribute__((noinline)) void magic_trace_stop_indicator(uint64_t start, uint64_t arg)
{
	__asm__ volatile("" : : "r"(start), "r"(arg) : "memory");
}

static volatile int done;
static int hits = 1;
static double first_ms = 300;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) static long spin_until(double end)
{
	long s = 0;
	while (now_ms() < end)
		for (int i = 0; i < 1000; i++)
			s += i * i % 7;
	return s;
}

__attribute__((noinline)) static long before_hit(void)
{
	long s = 0;
	while (!done)
		s += spin_until(now_ms() + 1);
	return s;
}

__attribute__((noinline)) static long after_hit(double ms)
{
	return spin_until(now_ms() + ms);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 1; i <= hits; i++) {
		spin_until(now_ms() + (i == 1 ? first_ms : 100));
		magic_trace_stop_indicator(0x1000 + (uint64_t)i, (uint64_t)i);
	}
	done = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	hits = argc > 1 ? atoi(argv[1]) : 1;
	double after = argc > 2 ? atof(argv[2]) : 1000;
	first_ms = argc > 3 ? atof(argv[3]) : 300;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL))
		return 2;
	long s = before_hit();
	pthread_join(t, NULL);
	s += after_hit(after);
	printf("%ld\n", s & 1);
	return 0;
}
