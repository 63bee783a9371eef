/* fuzz_bundle: untrusted archives through the bundle reader: the checking
 * walk (mt-bundle list), then extraction and the manifest check (what
 * mt-pt2events does with a bundle), into a private directory removed after. */
#define _GNU_SOURCE
#include "fuzz.h"

#include <stdlib.h>

#include "bundle/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int limited;
	if (!limited) {
		/* keep the disk out of it: small bundles only */
		setenv("MT_BUNDLE_MAX_BYTES", "8000000", 1);
		setenv("MT_BUNDLE_MAX_ENTRIES", "2000", 1);
		limited = 1;
	}
	const char *path = fuzz_input_file(data, size);
	if (!path)
		return 0;
	struct mt_err err = {0};
	mt_bundle_list(path, fuzz_devnull(), &err);
	struct mt_bundle b;
	mt_err_clear(&err);
	if (!mt_bundle_open(&b, path, &err))
		mt_bundle_close(&b);
	char *text = NULL;
	mt_err_clear(&err);
	mt_bundle_read_manifest(path, &text, &err);
	free(text);
	return 0;
}
