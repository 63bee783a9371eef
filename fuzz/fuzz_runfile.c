/* fuzz_runfile: a run saved by mt-synth --save-run (counts, mappings,
 * steps, instructions, PTWRITEs, any of them cut or lying) through the
 * reader of --from-run; a run it accepts is then written as two variants,
 * as mt-synth would: what the reader lets through, the writer must take. */
#define _GNU_SOURCE
#include "fuzz.h"

#include "synth/runfile.h"
#include "synth/synth.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fmemopen((void *)(size ? data : (const uint8_t *)""), size ? size : 1, "rb");
	if (!f)
		return 0;
	struct mt_synth_run run;
	struct mt_err err = {0};
	if (!mt_synth_run_load(f, size, &run, &err)) {
		static const char *const names[] = {"plain", "per-cpu"};
		for (int i = 0; i < 2; i++) {
			struct mt_synth_result res;
			mt_err_clear(&err);
			mt_synth_write(&run, mt_synth_variant_find(names[i]), NULL, fuzz_devnull(), fuzz_devnull(), &res,
				       &err);
		}
		mt_synth_run_free(&run);
	}
	fclose(f);
	return 0;
}
