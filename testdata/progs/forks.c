/* A program that forks without exec: the child runs the parent's code,
 * which perf maps for the parent only (no MMAP for the child), under the
 * parent's name (no COMM for it). For recording for real with sampling:
 * the child's samples must be named, and the child named, as perf does. */
// cflags: -fno-omit-frame-pointer -O1
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static void child_spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) static void parent_spin(long n)
{
	for (long i = 0; i < n; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000000;
	pid_t p = fork();
	if (p == 0) {
		child_spin(2 * n);
		return 0;
	}
	parent_spin(n);
	if (p > 0)
		waitpid(p, NULL, 0);
	return 0;
}
