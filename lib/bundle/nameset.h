/* nameset: the names an archive has shown so far, each with what it is
 * (directory, file, link): an open-addressing set of strings. */
#ifndef MT_NAMESET_H
#define MT_NAMESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Names already seen: an open-addressing set of strings, with what each is. */
enum name_kind { NAME_DIR, NAME_FILE, NAME_LINK };
struct nameset {
	char **v;
	uint8_t *kind;             /* enum name_kind of each */
	size_t cap, n;
};

/* Finds name: its slot index, and *found. */
size_t mt_nameset_slot(const struct nameset *ns, const char *name, bool *found);
/* Adds name (not in the set yet); 0 or MT_ENOMEM. */
int mt_nameset_add(struct nameset *ns, const char *name, enum name_kind kind);
void mt_nameset_free(struct nameset *ns);

#endif
