/* Unit tests of libarchive's loading (bundle/archive_lib.c), TAP output.
 * Oracle: the library itself: once loaded, every function the bundles
 * call is there; and POSIX's tar layout: a tar written through them has
 * the file's name at offset 0 and "ustar" at 257 of its first header (the
 * bundle tests in bundle.bats hold the rest). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/archive_lib.h"

#include "tap.h"

int main(void)
{
	struct mt_err err = {0};
	ok(mt_archive_load(&err) == 0, "libarchive loads");
	ok(mt_archive_load(&err) == 0, "and again (loaded once)");
	/* the table is one function pointer a function (the names are macros
	 * here): none may be null */
	size_t slots = sizeof mt_archive_lib / sizeof(void (*)(void)), missing = 0;
	static const unsigned char null_ptr[sizeof(void (*)(void))];
	for (size_t i = 0; i < slots; i++)
		missing += !memcmp((const unsigned char *)&mt_archive_lib + i * sizeof null_ptr, null_ptr, sizeof null_ptr);
	ok(slots >= 30 && missing == 0, "every function the bundles call is there");

	/* a tar with one file, written and read back through the table */
	FILE *f = tmpfile();
	struct archive *w = archive_write_new();
	archive_write_set_format_pax_restricted(w);
	archive_write_add_filter_none(w);
	int wrote = f && archive_write_open_FILE(w, f) == ARCHIVE_OK;
	struct archive_entry *e = archive_entry_new();
	archive_entry_set_pathname(e, "hello");
	archive_entry_set_size(e, 5);
	archive_entry_set_filetype(e, 0100000);
	archive_entry_set_perm(e, 0644);
	wrote = wrote && archive_write_header(w, e) == ARCHIVE_OK && archive_write_data(w, "world", 5) == 5;
	archive_entry_free(e);
	wrote = archive_write_close(w) == ARCHIVE_OK && wrote;
	archive_write_free(w);
	ok(wrote, "a tar is written");
	rewind(f);
	char buf[16384];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	ok(n >= 1024 && !memcmp(buf, "hello", 6) && !memcmp(buf + 257, "ustar", 5),
	   "its first header names the file, in the ustar layout");
	return tap_done();
}
