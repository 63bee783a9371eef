/* A freestanding, static test program: direct and indirect calls, deep
 * recursion, tail calls, a jump table, and raw syscalls. No libc, so the
 * whole run is a few thousand instructions.
 * cflags: below is read by the Makefile. */
// cflags: -static -nostdlib -fno-pie -no-pie -fno-stack-protector -fno-optimize-sibling-calls
typedef unsigned long u64;

static long sys3(long n, long a, long b, long c)
{
	long r;
	__asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return r;
}

__attribute__((noinline)) static u64 fib(u64 n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static u64 depth(u64 n)
{
	return n ? 1 + depth(n - 1) : 0;
}

__attribute__((noinline)) static u64 twice(u64 x) { return 2 * x; }
__attribute__((noinline)) static u64 square(u64 x) { return x * x; }
__attribute__((noinline)) static u64 inc(u64 x) { return x + 1; }

static u64 (*const ops[])(u64) = {twice, square, inc};

__attribute__((noinline)) static u64 apply(u64 (*volatile f)(u64), u64 x)
{
	return f(x); /* indirect call */
}

__attribute__((noinline)) static u64 dispatch(u64 k, u64 x)
{
	switch (k) { /* dense switch: a jump table (indirect jmp) */
	case 0: return x + 3;
	case 1: return x * 5;
	case 2: return x ^ 7;
	case 3: return x - 1;
	case 4: return x << 2;
	case 5: return x >> 1;
	case 6: return x | 9;
	default: return x;
	}
}

__attribute__((noinline)) static u64 tail_target(u64 x) { return x + 100; }

__attribute__((noinline, optimize("optimize-sibling-calls"))) static u64 tail_caller(u64 x)
{
	return tail_target(x * 2); /* tail call: a jmp that leaves the function */
}

void _start(void)
{
	u64 acc = fib(12) + depth(40);
	for (u64 i = 0; i < 30; i++) {
		acc += apply(ops[i % 3], i);
		acc += dispatch(i % 9, acc);
		acc += tail_caller(i);
	}
	sys3(39 /* getpid */, 0, 0, 0);
	char msg[] = "flow done\n";
	sys3(1 /* write */, 1, (long)msg, sizeof msg - 1);
	sys3(60 /* exit */, (long)(acc & 0x7f), 0, 0);
	__builtin_unreachable();
}
