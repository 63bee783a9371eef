/* replay: runs a harness's entry point over saved inputs (files, or every
 * file of a directory), without libFuzzer: the regression inputs of
 * fuzz/regress/ run this way in make check. Exit 0 unless a file cannot be
 * read; a crash is the harness's (and the sanitizers') to report. */
#define _DEFAULT_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "replay: %s: cannot open\n", path);
		return 1;
	}
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	for (;;) {
		if (n == cap) {
			cap = cap ? 2 * cap : 65536;
			uint8_t *nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return 1;
			}
			buf = nb;
		}
		size_t k = fread(buf + n, 1, cap - n, f);
		if (!k)
			break;
		n += k;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0, runs = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (e->d_name[0] == '.')
					continue;
				char p[4096];
				snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
				rc |= run_file(p);
				runs++;
			}
			if (d)
				closedir(d);
		} else {
			rc |= run_file(argv[i]);
			runs++;
		}
	}
	fprintf(stderr, "replay: %d inputs\n", runs);
	return rc;
}
