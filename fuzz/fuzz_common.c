/* fuzz_common: helpers for the harnesses (see fuzz.h). */
#define _GNU_SOURCE
#include "fuzz.h"

#include <sys/mman.h>
#include <unistd.h>

FILE *fuzz_devnull(void)
{
	static FILE *f;
	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

const char *fuzz_input_file(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0 && (fd = memfd_create("fuzz-input", 0)) < 0)
		return NULL;
	if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return NULL;
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	return path;
}
