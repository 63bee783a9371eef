/* utf8: names are bytes (a JIT's perf map, a thread's prctl name, a
 * hostile ELF), and every output a program or a person reads gets them
 * in a form its reader takes, by one rule per kind of reader:
 *   - UTF-8 readers (JSON, SQLite TEXT, Perfetto's and FXT's strings):
 *     what is not UTF-8 (a stray continuation, an overlong form, a
 *     surrogate, beyond U+10FFFF, a cut sequence) is replaced by U+FFFD,
 *     one for each maximal subpart of a sequence (the Unicode Standard's
 *     practice, as browsers and Python decode with replacement); valid
 *     text is kept byte for byte.
 *   - terminals and TSV: backslash escapes, so that no control byte (C0,
 *     DEL, C1 such as CSI 0x9b, in UTF-8 or alone) reaches the reader and
 *     no name breaks a row: \t \n \r \\ and \xNN for each other control
 *     byte or byte of an invalid sequence; valid printable UTF-8 is kept. */
#ifndef MT_UTF8_H
#define MT_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The length (1 to 4) of the valid UTF-8 sequence at s (n bytes there),
 * 0 when none begins there. */
size_t mt_utf8_seq(const unsigned char *s, size_t n);
/* Where mt_utf8_seq gives 0: the length of the maximal subpart at s
 * (at least 1), which one U+FFFD replaces. */
size_t mt_utf8_bad(const unsigned char *s, size_t n);
/* Whether s (NUL-terminated) is valid UTF-8 throughout. */
bool mt_utf8_valid(const char *s);
/* s as valid UTF-8: s itself when it is, else a copy with U+FFFD for each
 * maximal subpart in *buf (grown as needed; the caller frees it). NULL when out
 * of memory. */
const char *mt_utf8_fixed(const char *s, char **buf, size_t *cap);
/* s escaped for a terminal or a TSV field (above), written to f; returns
 * the bytes written. */
size_t mt_utf8_put_escaped(FILE *f, const char *s);
/* s as a JSON string's contents: quotes, backslashes and control bytes
 * escaped, each maximal subpart \ufffd; at most about cap - 8 bytes of it.
 * Returns the end (no NUL). 6 * strlen(s) + 8 bytes hold all of it. */
char *mt_utf8_json(char *out, size_t cap, const char *s);
/* The same, quoted, written to f. */
void mt_utf8_put_json(FILE *f, const char *s);
/* Whether the byte sequence of length k at s is a control character
 * (C0, DEL, or U+0080..U+009F). */
bool mt_utf8_is_control(const unsigned char *s, size_t k);

#endif
