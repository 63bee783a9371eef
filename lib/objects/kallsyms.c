#define _GNU_SOURCE
#include "objects/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/infile.h"

/* "ADDR TYPE NAME[\tMODULE]": the name ends at white space */
static int parse_line(char *line, size_t len, uint64_t *addr, char *type, char **name)
{
	if (strlen(line) != len)
		return -1;
	char *p = line, *e;
	errno = 0;
	*addr = strtoull(p, &e, 16);
	if (e == p || errno || (*e != ' ' && *e != '\t'))
		return -1;
	p = e + strspn(e, " \t");
	if (!*p || (p[1] != ' ' && p[1] != '\t'))
		return -1;
	*type = *p;
	p += 1 + strspn(p + 1, " \t");
	size_t n = strcspn(p, " \t\n");
	if (!n)
		return -1;
	p[n] = '\0';
	*name = p;
	return 0;
}

int mt_kallsyms_read(const char *path, mt_kallsyms_fn fn, void *ctx, size_t *bad, struct mt_err *err)
{
	*bad = 0;
	FILE *f = mt_infile_fopen(path, 0, err);
	if (!f)
		return err->code;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		uint64_t addr;
		char type, *name;
		if (line[len - 1] == '\n')
			line[--len] = '\0';
		if (!len)
			continue;
		if (parse_line(line, (size_t)len, &addr, &type, &name)) {
			(*bad)++;
			continue;
		}
		if (addr && strchr("tTwW", type))
			fn(ctx, addr, name);
	}
	int rc = ferror(f) ? mt_err_set(err, MT_EIO, "%s: read error", path) : 0;
	free(line);
	fclose(f);
	return rc;
}
