/* Two threads for the synthesizer: a worker computing while the main thread
 * computes too, so the single-CPU schedule preempts each of them, then a
 * join that blocks the main thread in futex until the worker exits. */
// cflags: -pthread -fno-optimize-sibling-calls
#include <pthread.h>
#include <stdio.h>

static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static long spin(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i & 3 ? fib(3) : fib(4);
	return s;
}

static void *worker(void *arg)
{
	long *out = arg;
	*out = fib(14) + spin(300);
	return NULL;
}

int main(void)
{
	pthread_t t;
	long w = 0;
	if (pthread_create(&t, NULL, worker, &w))
		return 2;
	long m = fib(13) + spin(200);
	pthread_join(t, NULL);
	printf("%ld %ld\n", m, w);
	return (int)((m + w) & 0x7f);
}
