/* fuzz_perfscript: perf script text (magic-trace's format, samples with
 * callchains) through mt-pt2events' parser. */
#include "fuzz.h"

#include <fcntl.h>
#include <unistd.h>

#include "stream/events.h"
#include "trace/perfscript.h"

static void quiet(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_file(data, size);
	int fd = path ? open(path, O_RDONLY) : -1;
	if (fd < 0)
		return 0;
	static struct mt_pscript_reader r; /* large: string buffers per column */
	struct mt_err err = {0};
	if (!mt_pscript_init(&r, fd, "fuzz", NULL, 0, &err)) {
		r.warn = quiet;
		struct mt_event ev;
		while (mt_pscript_next(&r, &ev, &err) > 0)
			;
		mt_pscript_fini(&r);
	}
	close(fd);
	return 0;
}
