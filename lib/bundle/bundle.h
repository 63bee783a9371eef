/* bundle: a trace as one self-contained archive, so that it decodes on
 * another machine, later, with none of the recording host's files.
 *
 * A bundle is a tar archive (zstd-compressed by default; gzip or none),
 * written and read with libarchive:
 *   manifest                       key=value lines, "mt-bundle-format=1" first
 *   perf.data                      the trace
 *   kcore_dir/...                  perf record --kcore's copy, when recorded so
 *   root/PATH                      each object the trace maps (a --symfs tree),
 *                                  with separate debug info under root/usr/lib/debug
 *   .debug/.build-id/xx/rest/elf   an object whose path another build-id took
 *   .debug/[vdso]/BID/vdso         the vDSO (perf's build-id cache layout)
 *   kallsyms                       a /proc/kallsyms copy, for kernel code
 *   perf-maps/perf-PID.map         JIT symbol maps
 * A perf archive tarball (perf-archive(1)) reads as a bundle with only
 * build-id cache content: its entries are relative to ~/.debug.
 *
 * Archives are untrusted: extraction refuses absolute names, "..",
 * links leading outside, duplicate names, special files and sizes beyond
 * the limits or the free space, and writes nothing outside its directory. */
#ifndef MT_BUNDLE_H
#define MT_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record/caps.h"
#include "base/mt_err.h"

#define MT_BUNDLE_FORMAT 1

enum mt_bundle_compression { MT_BUNDLE_ZSTD, MT_BUNDLE_GZIP, MT_BUNDLE_NONE };

struct mt_bundle_hit { uint64_t time, ip; uint32_t pid, tid; };

struct mt_bundle_create_opts {
	const char *perf_data;      /* a perf.data, or perf record --kcore's directory */
	const char *output;         /* the archive ("-" = stdout), written atomically */
	enum mt_bundle_compression compression;
	const char *perf_archive;   /* also take objects from this perf archive tarball */
	const char *kallsyms;       /* NULL: /proc/kallsyms when the trace has kernel
				     * code and it shows addresses; "": none */
	const char *perf_map_dir;   /* where perf-PID.map files are (NULL = /tmp) */
	const char *command;        /* manifest: the recorded command line, or NULL */
	const struct mt_caps *caps; /* manifest: the recording host's (caps.KEY=VALUE), or NULL */
	/* manifest: trigger hits the recorder saw (trigger-hit=TIME PID TID
	 * 0xIP; perf.data has no record of them when sampling) */
	const struct mt_bundle_hit *hits;
	size_t nhits;
	void (*warn)(void *ctx, const char *msg);  /* objects left out, one call each */
	void *warn_ctx;
};

struct mt_bundle_stats {
	size_t objects, missing, debug_files, perf_maps;
	bool kallsyms, kcore, vdso;
	uint64_t bytes_in;          /* uncompressed bytes archived */
};

/* The compression an output name asks for: .tar.gz or .tgz gzip, .tar
 * none, anything else zstd. */
enum mt_bundle_compression mt_bundle_compression_of(const char *name);

/* Writes a bundle of o->perf_data and everything needed to decode it. */
int mt_bundle_create(const struct mt_bundle_create_opts *o, struct mt_bundle_stats *st, struct mt_err *err);

/* An extracted bundle; paths are "" where the bundle has no such part. */
struct mt_bundle {
	char dir[4096];             /* private temporary directory, removed on close */
	char perf_data[4200];
	char root[4200];            /* the symfs */
	char buildid_dir[4200];     /* perf's build-id cache layout */
	char kcore_dir[4200];
	char kallsyms[4200];
	char perf_maps[4200];
	bool perf_archive;          /* a perf archive tarball, not an mt bundle */
	char *manifest;             /* its text (NUL-terminated), NULL for a perf archive */
};

/* True when head (the first n bytes of a file; 262 or more tell plain tar)
 * starts an archive this reads: zstd, gzip, bzip2 or xz data, or tar. */
bool mt_bundle_sniff(const void *head, size_t n);

/* True when path is a regular file holding such an archive. */
bool mt_bundle_is_archive_file(const char *path);

/* Extracts path ("-" = stdin) into a new directory under $TMPDIR (or /tmp)
 * and checks the manifest's format version. */
int mt_bundle_open(struct mt_bundle *b, const char *path, struct mt_err *err);
/* The same from fd (closed here unless 0), whose first prefix_len bytes were
 * already read into prefix. */
int mt_bundle_open_fd(struct mt_bundle *b, int fd, const char *name, const void *prefix, size_t prefix_len,
		      struct mt_err *err);
/* Only the objects, kernel symbols, perf maps and manifest: perf.data
 * and kcore_dir/ are checked, not written (perf_data and kcore_dir "").
 * For a symbolizer: the decoder before it already has the trace; a
 * pipeline does not write the trace's gigabytes twice. fd: path's, or -1
 * to open path. */
int mt_bundle_open_objects(struct mt_bundle *b, int fd, const char *path, struct mt_err *err);
/* Removes the directory. (A signal that ends the process removes every
 * open bundle's, from the moment it is made.) */
void mt_bundle_close(struct mt_bundle *b);
/* Also removes it at exit and on SIGINT, SIGTERM, SIGHUP or SIGPIPE (then dies of
 * that signal), for tools that return from many places. */
void mt_bundle_close_at_exit(struct mt_bundle *b);
/* The value of key in the manifest, copied into out; false when absent. */
bool mt_bundle_manifest_get(const struct mt_bundle *b, const char *key, char *out, size_t n);

/* Extracts the archive at path into dir (existing and empty), refusing
 * what is unsafe (see above). On failure dir may hold a part: remove it. */
int mt_bundle_extract(const char *path, const char *dir, struct mt_err *err);
/* Checks every entry as extraction would, without writing, and prints one
 * line per entry (type, size, name) to out. */
int mt_bundle_list(const char *path, FILE *out, struct mt_err *err);

/* Reads the manifest (after checking every entry) into *text (malloc'd). */
int mt_bundle_read_manifest(const char *path, char **text, struct mt_err *err);

/* Removes a directory tree without following symbolic links. */
void mt_bundle_remove_tree(const char *dir);
/* Removes what a directory holds, keeping the directory itself (one the
 * user had, with its mode and owner). */
void mt_bundle_empty_tree(const char *dir);

#endif
