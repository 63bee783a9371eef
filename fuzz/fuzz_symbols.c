/* fuzz_symbols: the untrusted symbol sources of mt-symbolize, a perf map
 * (JIT: V8, Java, .NET lines) and a kallsyms copy, from the same input:
 * both are parsed, then addresses looked up in each. */
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
	mt_sym_add_mmap_meta(s, "mmap\t4294967295\t0xffffffff81000000\t0x1000000\t0xffffffff81000000\t-\t[kernel.kallsyms]_text");
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
	mt_sym_free(s);
	return 0;
}
