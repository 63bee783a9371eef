/* entryname: the rules an archive entry's name and a link's target keep
 * to, for extraction to stay inside its directory. */
#ifndef MT_ENTRYNAME_H
#define MT_ENTRYNAME_H

#include <stdbool.h>
#include <stddef.h>

/* The longest name kept. */
#define MAX_NAME 4000

/* Normalizes an entry name: leading "./" and empty or "." components go;
 * an absolute name or a ".." component is refused. 1 = use, 0 = skip (the
 * archive's own "."), or a negative code with the reason in why. */
int mt_bundle_normalize_name(const char *raw, char *out, size_t n, const char **why);
/* A symbolic link is kept when, read from the link's own directory, it
 * stays inside: relative, any ".." only at its start and no more of them
 * than the link is deep. (Every directory on an entry's path is a real one
 * -- extraction never goes through a link -- so this holds on disk too.) */
bool mt_bundle_link_inside(const char *name, const char *target);

#endif
