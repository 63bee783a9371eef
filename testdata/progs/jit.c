/* A small JIT: copies two functions of hand-assembled x86-64 into an
 * executable mapping and calls them for MS milliseconds, writing a jitdump
 * (perf's format, tools/perf/Documentation/jitdump-specification.txt) as
 * V8's --perf-prof does: the dump mapped PROT_EXEC so that the recording
 * says where it is, a DEBUG_INFO record before each load giving the source
 * line of its instructions in a made-up source file, then the CODE_LOAD
 * with the code's bytes. Times are CLOCK_MONOTONIC (perf record -k mono).
 * Usage: jit [MS [ROUNDS]] (default 300 ms; with ROUNDS, each function
 * called once with it, for single-stepping). Writes jit-PID.dump in the
 * current directory. The truth of the lines is the table below: jit_first's code
 * at offsets [0x00, 0x02) is /jit/first.src line 10, [0x02, 0x05) 11,
 * [0x05, 0x09) 12, [0x09, 0x10) 13, [0x10, 0x15) 14, 0x15 15; jit_second's
 * the same offsets in /jit/second.src, lines 110 to 115. Timed, half way
 * jit_first's code is loaded again as jit_third (/jit/third.src, lines
 * 210 to 215): from then on its samples are jit_third's. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* (by the system call, not the vDSO: mt-synth's recordings hold no vDSO
 * image for a decoder to read) */
static uint64_t now_ns(void)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* uint64_t f(uint64_t n): a loop of n rounds (n > 0) */
static const uint8_t code[] = {
	0x31, 0xc0,             /* 0x00 xor eax, eax     line 10 */
	0x48, 0x01, 0xf8,       /* 0x02 add rax, rdi     line 11 */
	0x48, 0xc1, 0xc0, 0x03, /* 0x05 rol rax, 3       line 12 */
	0x48, 0x31, 0xf8,       /* 0x09 xor rax, rdi     line 13 */
	0x48, 0x6b, 0xc0, 0x07, /* 0x0c imul rax, rax, 7 line 13 */
	0x48, 0xff, 0xcf,       /* 0x10 dec rdi          line 14 */
	0x75, 0xed,             /* 0x13 jne 0x02         line 14 */
	0xc3,                   /* 0x15 ret              line 15 */
};
static const struct { uint32_t off; int32_t line; } lines[] = {
	{0x00, 10}, {0x02, 11}, {0x05, 12}, {0x09, 13}, {0x10, 14}, {0x15, 15},
};

static FILE *dump;

static void put(const void *p, size_t n)
{
	if (fwrite(p, 1, n, dump) != n)
		exit(1);
}

static void prefix(uint32_t id, uint32_t size)
{
	uint64_t t = now_ns();
	put(&id, 4);
	put(&size, 4);
	put(&t, 8);
}

/* DEBUG_INFO (id 2) for the code at addr: each entry u64 addr (the
 * instruction's, as the specification says; V8 adds 0x40 to each, for
 * perf inject's ELF layout of its day), i32 line, i32 discriminator, the
 * file's name ("\xff" for the one before's, as perf's JVMTI agent does). */
static void debug_info(uint64_t addr, const char *file, int32_t line_shift)
{
	uint64_t n = sizeof lines / sizeof lines[0];
	uint32_t size = 16 + 16;
	for (uint64_t i = 0; i < n; i++)
		size += 16 + (i ? 2 : (uint32_t)strlen(file) + 1);
	prefix(2, size);
	put(&addr, 8);
	put(&n, 8);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t a = addr + lines[i].off;
		int32_t line = lines[i].line + line_shift, discrim = 0;
		put(&a, 8);
		put(&line, 4);
		put(&discrim, 4);
		if (i)
			put("\xff", 2);
		else
			put(file, strlen(file) + 1);
	}
}

/* CODE_LOAD (id 0): pid, tid, vma, code_addr, code_size, code_index,
 * the name, the code. */
static void code_load(uint64_t addr, const char *name, uint64_t index)
{
	uint32_t pid = (uint32_t)getpid(), tid = (uint32_t)syscall(SYS_gettid);
	uint64_t size = sizeof code;
	prefix(0, (uint32_t)(16 + 40 + strlen(name) + 1 + sizeof code));
	put(&pid, 4);
	put(&tid, 4);
	put(&addr, 8);
	put(&addr, 8);
	put(&size, 8);
	put(&index, 8);
	put(name, strlen(name) + 1);
	put(code, sizeof code);
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	char path[64];
	snprintf(path, sizeof path, "jit-%d.dump", (int)getpid());
	dump = fopen(path, "w+");
	if (!dump) {
		perror(path);
		return 1;
	}
	/* the header: magic, version 1, its size, EM_X86_64, pad, pid, time, flags */
	uint32_t h[6] = {0x4A695444u, 1, 40, 62, 0, (uint32_t)getpid()};
	uint64_t t = now_ns(), flags = 0;
	put(h, sizeof h);
	put(&t, 8);
	put(&flags, 8);
	fflush(dump);
	/* mapped so that perf records where it is (perf inject looks for it) */
	if (mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fileno(dump), 0) == MAP_FAILED) {
		perror("mmap jitdump");
		return 1;
	}
	uint8_t *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap code");
		return 1;
	}
	/* two functions of the same code: lines 10 on, and 110 on */
	memcpy(mem, code, sizeof code);
	memcpy(mem + 0x100, code, sizeof code);
	debug_info((uint64_t)(uintptr_t)mem, "/jit/first.src", 0);
	code_load((uint64_t)(uintptr_t)mem, "jit_first", 1);
	debug_info((uint64_t)(uintptr_t)(mem + 0x100), "/jit/second.src", 100);
	code_load((uint64_t)(uintptr_t)(mem + 0x100), "jit_second", 2);
	if (fflush(dump))
		return 1;
	uint64_t (*first)(uint64_t) = (uint64_t (*)(uint64_t))(uintptr_t)mem;
	uint64_t (*second)(uint64_t) = (uint64_t (*)(uint64_t))(uintptr_t)(mem + 0x100);
	uint64_t sum = 0, end = now_ns() + (uint64_t)ms * 1000000u;
	if (argc > 2)
		sum = first((uint64_t)atol(argv[2])) + second((uint64_t)atol(argv[2]));
	else {
		/* half way, jit_first's code is loaded again as jit_third (a JIT
		 * reusing freed code space): the same bytes, a new name and new
		 * lines from then on (/jit/third.src, 210 on) */
		uint64_t half = end - (uint64_t)ms * 500000u;
		bool reloaded = false;
		while (now_ns() < end) {
			if (!reloaded && now_ns() >= half) {
				debug_info((uint64_t)(uintptr_t)mem, "/jit/third.src", 200);
				code_load((uint64_t)(uintptr_t)mem, "jit_third", 3);
				if (fflush(dump))
					return 1;
				reloaded = true;
			}
			sum += first(200000) + second(100000);
		}
	}
	printf("%llu\n", (unsigned long long)(sum & 1));
	return fclose(dump) ? 1 : 0;
}
