/* perfimage: the code image of one process of a perf.data, from its
 * sideband's executable maps (objects found by path, build-id, --symfs),
 * kernel code from --vmlinux or a --kcore copy; each problem warned of once. */
#ifndef MT_PERFIMAGE_H
#define MT_PERFIMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/strtab.h"
#include "trace/image.h"
#include "trace/ptperf.h"
#include "trace/sideband.h"
#include "trace/unwind.h"

/* The warnings given so far, by key (an object's path, "kernel"). */
/* the keys warned of, interned (a list searched per warning was
 * quadratic: 100,000 missing objects, 17 s) */
struct warned { struct mt_strtab keys; };
void mt_warn_once(const struct mt_ptperf_opts *o, struct warned *wd, const char *key, const char *msg);
void mt_warned_free(struct warned *wd);

/* The unwinder of --call-graph=dwarf samples over every process's user
 * maps (objects found as for images; the vDSO from perf's cache, else this
 * kernel's when the build-ids agree). NULL with *why: libdw not loaded,
 * or out of memory. */
struct mt_unwind *mt_build_unwind(const struct mt_perfdata *pd, const struct side *s,
				  const struct mt_ptperf_opts *o, struct warned *wd, const char **why);

/* Adds pid's maps (and the kernel's) to img. */
void mt_build_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
		    const struct mt_ptperf_opts *o, struct warned *wd);
/* The same without the kernel's: user code alone (a branch stack's
 * entries classified where the objects are, no kernel warning). */
void mt_build_user_image(struct mt_image *img, const struct mt_perfdata *pd, const struct side *s, uint32_t pid,
			 const struct mt_ptperf_opts *o, struct warned *wd);

#endif
