/* fuzz_symbols: the untrusted symbol sources of mt-symbolize, a perf map
 * (JIT: V8, Java, .NET lines, of any length), a kallsyms copy and an ELF
 * object (section sizes, symbol and string tables, .rela.plt, DWARF lines
 * and inlines), from the same input: each is parsed, then addresses looked
 * up in each. */
#include "fuzz.h"

#include <stdio.h>

#include "names/symbolize.h"

static void quiet(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_file(data, size);
	if (!path)
		return 0;
	struct mt_sym *s = mt_sym_new(NULL, quiet, NULL);
	if (!s)
		return 0;
	mt_sym_set_perf_maps(s, NULL, path);
	mt_sym_set_kernel(s, NULL, path);
	mt_sym_set_lines(s, size & 1);
	mt_sym_set_inlines(s, size & 2);
	mt_sym_add_mmap_meta(s, "mmap\t4294967295\t0xffffffff81000000\t0x1000000\t0xffffffff81000000\t-\t[kernel.kallsyms]_text");
	/* the input as the object of pid 2's code, as a trace would name it */
	char obj[160];
	snprintf(obj, sizeof obj, "mmap\t2\t0x400000\t0x100000\t0x0\t-\t%s", path);
	mt_sym_add_mmap_meta(s, obj);
	uint64_t a = 0;
	for (size_t i = 0; i < size && i < 8; i++)
		a = a << 8 | data[i];
	static const uint64_t probes[] = {0, 1, 0x1000, 0x7f0000001000, 0xffffffff81000000, 0xffffffff81abcdef,
					  UINT64_MAX};
	struct mt_sym_result res;
	for (size_t i = 0; i < sizeof probes / sizeof *probes; i++) {
		mt_sym_lookup(s, 1, probes[i], &res);
		mt_sym_lookup(s, (uint32_t)-1, probes[i], &res);
	}
	mt_sym_lookup(s, 1, a, &res);
	for (uint64_t at = 0x400000; at < 0x404000; at += 0x3f1)
		mt_sym_lookup(s, 2, at, &res);
	mt_sym_free(s);
	return 0;
}
