/* demangle: see demangle.h. */
#define _GNU_SOURCE
#include "names/demangle.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

/* camlFoo__bar_123 -> Foo.bar; camlFoo__Bar__baz_7 -> Foo.Bar.baz */
static char *ocaml(const char *name)
{
	const char *p = name + 4;
	if (!isupper((unsigned char)*p))
		return NULL;
	size_t n = strlen(p);
	/* the trailing _NNN stamp */
	size_t end = n;
	while (end && isdigit((unsigned char)p[end - 1]))
		end--;
	if (end < n && end && p[end - 1] == '_')
		n = end - 1;
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '_' && i + 1 < n && p[i + 1] == '_') {
			*o++ = '.';
			i++;
		} else {
			*o++ = p[i];
		}
	}
	*o = '\0';
	return out;
}

char *mt_demangle(const char *name)
{
	if (!strncmp(name, "_Z", 2) || !strncmp(name, "_R", 2))
		return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
	if (!strncmp(name, "caml", 4))
		return ocaml(name);
	return NULL;
}
