#include "bundle/entryname.h"

#include <string.h>

#include "base/mt_err.h"

int mt_bundle_normalize_name(const char *raw, char *out, size_t n, const char **why)
{
	if (!raw || !*raw) {
		*why = "an empty name";
		return MT_EFORMAT;
	}
	if (raw[0] == '/') {
		*why = "an absolute name";
		return MT_EFORMAT;
	}
	size_t o = 0;
	for (const char *p = raw; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			*why = "a '..' component";
			return MT_EFORMAT;
		}
		if (len && !(len == 1 && p[0] == '.')) {
			if (o + len + 2 > n || o + len + 1 > MAX_NAME) {
				*why = "a name too long";
				return MT_EFORMAT;
			}
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, len);
			o += len;
		}
		p += len + (e ? 1 : 0);
	}
	out[o] = '\0';
	return o ? 1 : 0;
}

bool mt_bundle_link_inside(const char *name, const char *target)
{
	if (!*target || target[0] == '/')
		return false;
	size_t depth = 0;
	for (const char *p = name; *p; p++)
		depth += *p == '/';
	bool leading = true;
	size_t ups = 0;
	for (const char *p = target; *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		bool up = len == 2 && p[0] == '.' && p[1] == '.';
		if (up && !leading)
			return false;
		if (up)
			ups++;
		else if (len && !(len == 1 && p[0] == '.'))
			leading = false;
		p += len + (e ? 1 : 0);
	}
	return ups <= depth;
}

