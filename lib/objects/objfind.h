/* objfind: where the file of an object a trace names is, as perf looks
 * for it: perf's build-id cache, a --symfs root, the path itself; the
 * vDSO in perf's cache; separate debug info by build-id and
 * .gnu_debuglink. Used by the decoder's images and by the symbolizer;
 * knows nothing of either. */
#ifndef MT_OBJFIND_H
#define MT_OBJFIND_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A traced object's file: by build-id in perf's cache
 * (buildid_dir/.build-id/xx/rest/elf; buildid_dir NULL = ~/.debug), then
 * symfs + path (inside symfs once normalized), then -- only without a
 * symfs -- path itself. Writes the
 * path found to out; 0, or MT_EIO when there is none (a regular file). */
int mt_obj_find(const char *path, const uint8_t *build_id, unsigned build_id_size, const char *symfs,
		const char *buildid_dir, char *out, size_t outsz);

/* Whether p, normalized (.., symlinks), lies under root, normalized: a
 * trace's paths never lead out of a --symfs root or a bundle. False when
 * either cannot be resolved. */
bool mt_obj_under(const char *root, const char *p);

/* The vDSO of build-id bid (hex) in perf's cache: buildid_dir/[vdso]/ID/vdso,
 * buildid_dir NULL = ~/.debug. True with the path in out when readable. */
bool mt_obj_vdso_cached(const char *buildid_dir, const char *bid, char *out, size_t outsz);

#define MT_OBJ_DEBUG_CANDIDATES 4
#define MT_OBJ_PATH_MAX 4400
/* Where separate debug info of elf (found at path, named orig_path in the
 * trace) may be, in the order to try: by build-id under
 * symfs/usr/lib/debug/.build-id, then by .gnu_debuglink beside the file,
 * in its .debug/, and under symfs/usr/lib/debug + its original directory.
 * Returns how many were written to cand. */
int mt_obj_debug_candidates(Elf *elf, const char *path, const char *orig_path, const char *symfs,
			    char cand[MT_OBJ_DEBUG_CANDIDATES][MT_OBJ_PATH_MAX]);

#endif
