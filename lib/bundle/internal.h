/* internal: what the bundle's files share. Internal to bundle/. */
#ifndef MT_BUNDLE_INTERNAL_H
#define MT_BUNDLE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

#include "base/mt_err.h"

/* Reads every entry of the archive on fd: extracts under dir, or (dir
 * NULL) checks and lists them. objects_only: perf.data and kcore_dir/ are
 * checked and not written (a symbolizer needs the objects, not the
 * trace's gigabytes again). */
int mt_bundle_walk(int fd, const char *aname, const void *prefix, size_t prefix_len, const char *dir, FILE *list,
		   const char *want, char **wanted, bool objects_only, struct mt_err *err);
/* path's fd, or standard input for "-". */
int mt_bundle_open_input(const char *path, int *fd, struct mt_err *err);
/* p is of that type itself (a link to one is not) */
bool mt_bundle_is_type(const char *p, mode_t type);

#endif
