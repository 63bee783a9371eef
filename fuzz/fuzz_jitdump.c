/* fuzz_jitdump: a JIT's jitdump file (perf's format: header, code loads,
 * moves, debug and unwinding records, any of them cut or lying about its
 * size) through the reader mt-symbolize names JIT code with, and each
 * load's source lines looked up at each of its entries. */
#include "fuzz.h"

#include <string.h>

#include "objects/jitdump.h"

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
		/* every load's lines: each entry's own line, in its code */
		for (size_t i = 0; i < jd.ncode; i++) {
			const struct mt_jit_code *c = &jd.code[i];
			if (c->line0 > jd.nlines || c->nlines > jd.nlines - c->line0)
				__builtin_trap();
			for (size_t k = c->line0; k < c->line0 + c->nlines; k++) {
				const struct mt_jit_line *l = mt_jitdump_line(&jd, c, jd.lines[k].addr);
				if (l && (l->addr != jd.lines[k].addr || strlen(l->file) > size))
					__builtin_trap();
			}
		}
		mt_jitdump_free(&jd);
	}
	return 0;
}
