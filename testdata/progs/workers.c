/* Two worker threads busy for a while, built without frame pointers, for
 * recording for real with sampling (issue 26: --callgraph=dwarf must give
 * clone3 -> start_thread -> worker -> crunch). Usage: workers [MS]
 * (default 300 ms each). */
// cflags: -pthread -fomit-frame-pointer -O1
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long ms = 300;

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000;
}

__attribute__((noinline)) static unsigned long crunch(unsigned long x)
{
	for (int i = 0; i < 100000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	unsigned long x = (unsigned long)(size_t)arg;
	for (long end = now_ms() + ms; now_ms() < end;)
		x = crunch(x);
	return (void *)(size_t)(x & 1);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		ms = atol(argv[1]);
	pthread_t t[2];
	for (size_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)(i + 1));
	long odd = 0;
	for (size_t i = 0; i < 2; i++) {
		void *r;
		pthread_join(t[i], &r);
		odd += (long)(size_t)r;
	}
	printf("%ld\n", odd);
	return 0;
}
