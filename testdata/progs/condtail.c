/* Conditional tail calls: a Jcc straight into another function, as clang
 * makes of `if (c) return f(x);` (gcc does not: written here in assembly).
 * mt-pt2events reports each taken one as a jump that leaves its function,
 * with cond=1; its runs of conditional branches (runcache.c) must not pass
 * them. pick is taken into leaf for odd i: half of main's N calls (argv[1],
 * default 200). Freestanding and static: a short run to single-step. */
// cflags: -static -nostdlib -fno-pie -no-pie -fno-stack-protector
typedef unsigned long u64;

__attribute__((noinline, used)) u64 leaf(u64 x)
{
	return x * 3 + 1;
}

/* pick(x): leaf(x) when x is odd (a conditional tail call), else x / 2 */
u64 pick(u64 x);
__asm__(".text\n"
	".globl pick\n"
	".type pick, @function\n"
	"pick:\n"
	"\ttest $1, %dil\n"
	"\tjne leaf\n"
	"\tmov %rdi, %rax\n"
	"\tshr %rax\n"
	"\tret\n"
	".size pick, .-pick\n");

static u64 arg(const char *s)
{
	u64 n = 0;
	while (*s >= '0' && *s <= '9')
		n = n * 10 + (u64)(*s++ - '0');
	return n;
}

__attribute__((noreturn)) static void sys_exit(long code)
{
	__asm__ volatile("syscall" : : "a"(60), "D"(code));
	__builtin_unreachable();
}

u64 run(u64 n)
{
	u64 s = 0;
	for (u64 i = 0; i < n; i++)
		s += pick(i);
	return s;
}

__attribute__((used)) void start_c(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	sys_exit((long)(run(argc > 1 ? arg(argv[1]) : 200) & 1));
}

__asm__(".text\n"
	".globl _start\n"
	"_start:\n"
	"\tmov %rsp, %rdi\n"
	"\tand $-16, %rsp\n"
	"\tcall start_c\n");
