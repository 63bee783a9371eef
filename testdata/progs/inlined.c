/* Calls made from inside inlined functions (always_inline, two levels
 * deep), so branch addresses lie in inlined code: the test program for
 * mt-symbolize --inlines. Freestanding and static. */
// cflags: -static -nostdlib -fno-pie -no-pie -fno-stack-protector
typedef unsigned long u64;

__attribute__((noinline)) static u64 leaf(u64 x)
{
	return x * 7 + 1;
}

static inline __attribute__((always_inline)) u64 inner(u64 x)
{
	return leaf(x) + leaf(x + 1);
}

static inline __attribute__((always_inline)) u64 outer(u64 x)
{
	return inner(x) ^ leaf(x + 2);
}

__attribute__((noinline)) static u64 work(u64 n)
{
	u64 s = 0;
	for (u64 i = 0; i < n; i++)
		s += outer(i);
	return s;
}

void _start(void)
{
	u64 v = work(5);
	__asm__ volatile("syscall" : : "a"(60), "D"(v & 0x7f) : "rcx", "r11", "memory");
	__builtin_unreachable();
}
