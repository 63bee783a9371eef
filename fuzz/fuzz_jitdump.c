/* fuzz_jitdump: a JIT's jitdump file (perf's format: header, code loads,
 * moves, debug and unwinding records, any of them cut or lying about its
 * size) through the reader mt-symbolize names JIT code with. */
#include "fuzz.h"

#include <string.h>

#include "names/jitdump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_file(data, size);
	if (!path)
		return 0;
	struct mt_jitdump jd;
	struct mt_err err = {0};
	if (!mt_jitdump_read(&jd, path, &err)) {
		/* every load's name is a whole string of the input's: ASan
		 * sees a read past one, and together they fit in the input */
		size_t total = 0;
		for (size_t i = 0; i < jd.ncode; i++)
			total += strlen(jd.code[i].name) + 1;
		if (total > size)
			__builtin_trap();
		mt_jitdump_free(&jd);
	}
	return 0;
}
