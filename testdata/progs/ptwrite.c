/* A freestanding, static test program that writes values into the trace
 * with PTWRITE (register forms, 32 and 64 bits) from a few functions.
 * Run it under mt-synth, which emulates PTWRITE: most CPUs (every one
 * here) have none, and run plainly it would die of SIGILL. So without an
 * argument it only checks CPUID (leaf 0x14: PTWRITE) and writes nothing
 * unless the CPU has it; with any argument it writes regardless.
 * Payloads: 0x1000 + i*i (64-bit) in square(i), i ^ 0x5a5a (32-bit) in
 * mark(i), for i = 0..7, then 0xfeedfacecafebeef from main; with two
 * arguments also one PTWRITE of a memory operand (which mt-synth refuses
 * to emulate). Exit status: the sum of the squares, 140, & 0x7f: 12. */
// cflags: -static -nostdlib -fno-pie -no-pie -fno-stack-protector -fno-optimize-sibling-calls
typedef unsigned long u64;
typedef unsigned int u32;

static int enabled;

__attribute__((noinline)) static void ptw64(u64 v)
{
	if (enabled)
		__asm__ volatile("ptwrite %0" : : "r"(v));
}

__attribute__((noinline)) static void ptw32(u32 v)
{
	if (enabled)
		__asm__ volatile("ptwrite %0" : : "r"(v));
}

__attribute__((noinline)) static u64 square(u64 i)
{
	u64 r = i * i;
	ptw64(0x1000 + r);
	return r;
}

__attribute__((noinline)) static void mark(u32 i)
{
	ptw32(i ^ 0x5a5a);
}

static int has_ptwrite(void)
{
	u32 a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
	if (a < 0x14)
		return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x14), "c"(0));
	return (b >> 4) & 1;
}

int main(int argc)
{
	enabled = argc > 1 || has_ptwrite();
	u64 sum = 0;
	for (u32 i = 0; i < 8; i++) {
		sum += square(i);
		mark(i);
	}
	ptw64(0xfeedfacecafebeefUL);
	if (argc > 2 && enabled)
		__asm__ volatile("ptwrite (%0)" : : "r"(&sum) : "memory");
	return (int)(sum & 0x7f);
}

__asm__(".globl _start\n"
	"_start:\n"
	"	mov (%rsp), %rdi\n"
	"	and $-16, %rsp\n"
	"	call main\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"
	"	syscall\n");
