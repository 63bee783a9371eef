/* archive_lib: libarchive, loaded the first time a bundle is read or
 * written, not linked. Linked, it came with libxml2 (for its xar reader),
 * ICU and libstdc++: 6 ms of every start of mt-pt2events, mt-symbolize,
 * mt-record and mt-bundle (200 starts of an empty program: 0.83 s, linked
 * with -larchive 2.09 s, on this project's 2-core VM), while only a bundle
 * uses them. The code calls libarchive's functions by their own names:
 * below, each is a macro over the table mt_archive_load fills; the types
 * come from libarchive's headers, so a changed signature fails the build,
 * not a run. Include this instead of <archive.h>. */
#ifndef MT_ARCHIVE_LIB_H
#define MT_ARCHIVE_LIB_H

#include <archive.h>
#include <archive_entry.h>

#include "base/mt_err.h"

#define MT_ARCHIVE_SONAME "libarchive.so.13"

#define MT_ARCHIVE_FUNCS(X) \
	X(archive_entry_filetype) \
	X(archive_entry_free) \
	X(archive_entry_hardlink) \
	X(archive_entry_new) \
	X(archive_entry_pathname) \
	X(archive_entry_perm) \
	X(archive_entry_set_filetype) \
	X(archive_entry_set_mtime) \
	X(archive_entry_set_pathname) \
	X(archive_entry_set_perm) \
	X(archive_entry_set_size) \
	X(archive_entry_size) \
	X(archive_entry_size_is_set) \
	X(archive_entry_symlink) \
	X(archive_error_string) \
	X(archive_read_data) \
	X(archive_read_data_block) \
	X(archive_read_free) \
	X(archive_read_new) \
	X(archive_read_next_header) \
	X(archive_read_open) \
	X(archive_read_support_filter_all) \
	X(archive_read_support_format_tar) \
	X(archive_set_error) \
	X(archive_write_add_filter_gzip) \
	X(archive_write_add_filter_none) \
	X(archive_write_add_filter_zstd) \
	X(archive_write_close) \
	X(archive_write_data) \
	X(archive_write_free) \
	X(archive_write_header) \
	X(archive_write_new) \
	X(archive_write_open_FILE) \
	X(archive_write_set_bytes_in_last_block) \
	X(archive_write_set_format_pax_restricted)

struct mt_archive_lib {
#define MT_ARCHIVE_FIELD(f) __typeof__(f) *f;
	MT_ARCHIVE_FUNCS(MT_ARCHIVE_FIELD)
#undef MT_ARCHIVE_FIELD
};

extern struct mt_archive_lib mt_archive_lib;

/* Loads the library and its functions, once (later calls give the first
 * one's answer): 0, or MT_EUNSUP with err set ("cannot load libarchive:
 * WHY"). Every path into libarchive calls it first. */
int mt_archive_load(struct mt_err *err);

#ifndef MT_ARCHIVE_LIB_SELF
#define archive_entry_filetype mt_archive_lib.archive_entry_filetype
#define archive_entry_free mt_archive_lib.archive_entry_free
#define archive_entry_hardlink mt_archive_lib.archive_entry_hardlink
#define archive_entry_new mt_archive_lib.archive_entry_new
#define archive_entry_pathname mt_archive_lib.archive_entry_pathname
#define archive_entry_perm mt_archive_lib.archive_entry_perm
#define archive_entry_set_filetype mt_archive_lib.archive_entry_set_filetype
#define archive_entry_set_mtime mt_archive_lib.archive_entry_set_mtime
#define archive_entry_set_pathname mt_archive_lib.archive_entry_set_pathname
#define archive_entry_set_perm mt_archive_lib.archive_entry_set_perm
#define archive_entry_set_size mt_archive_lib.archive_entry_set_size
#define archive_entry_size mt_archive_lib.archive_entry_size
#define archive_entry_size_is_set mt_archive_lib.archive_entry_size_is_set
#define archive_entry_symlink mt_archive_lib.archive_entry_symlink
#define archive_error_string mt_archive_lib.archive_error_string
#define archive_read_data mt_archive_lib.archive_read_data
#define archive_read_data_block mt_archive_lib.archive_read_data_block
#define archive_read_free mt_archive_lib.archive_read_free
#define archive_read_new mt_archive_lib.archive_read_new
#define archive_read_next_header mt_archive_lib.archive_read_next_header
#define archive_read_open mt_archive_lib.archive_read_open
#define archive_read_support_filter_all mt_archive_lib.archive_read_support_filter_all
#define archive_read_support_format_tar mt_archive_lib.archive_read_support_format_tar
#define archive_set_error mt_archive_lib.archive_set_error
#define archive_write_add_filter_gzip mt_archive_lib.archive_write_add_filter_gzip
#define archive_write_add_filter_none mt_archive_lib.archive_write_add_filter_none
#define archive_write_add_filter_zstd mt_archive_lib.archive_write_add_filter_zstd
#define archive_write_close mt_archive_lib.archive_write_close
#define archive_write_data mt_archive_lib.archive_write_data
#define archive_write_free mt_archive_lib.archive_write_free
#define archive_write_header mt_archive_lib.archive_write_header
#define archive_write_new mt_archive_lib.archive_write_new
#define archive_write_open_FILE mt_archive_lib.archive_write_open_FILE
#define archive_write_set_bytes_in_last_block mt_archive_lib.archive_write_set_bytes_in_last_block
#define archive_write_set_format_pax_restricted mt_archive_lib.archive_write_set_format_pax_restricted
#endif

#endif
