/* utf8: which byte sequences are UTF-8 (oracle: the Unicode Standard's
 * Table 3-7, "Well-Formed UTF-8 Byte Sequences", at each range's edges,
 * and Markus Kuhn's decoder stress cases), what each reader's form of a
 * name is: U+FFFD per maximal subpart for UTF-8 readers (as Python's
 * decoder replaces them), backslash escapes for
 * terminals and TSV. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "tap.h"

static bool valid(const char *s)
{
	return mt_utf8_valid(s);
}

static char *escaped(const char *s)
{
	char *b = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&b, &n);
	mt_utf8_put_escaped(f, s);
	fclose(f);
	return b;
}

static bool json_is(const char *s, const char *want)
{
	char b[256];
	*mt_utf8_json(b, sizeof b, s) = '\0';
	if (strcmp(b, want))
		printf("# json of %s: %s, not %s\n", s, b, want);
	return !strcmp(b, want);
}

int main(void)
{
	/* Table 3-7's rows, first and last of each */
	static const char *const good[] = {
		"a", "\x7f", "\xc2\x80", "\xdf\xbf", "\xe0\xa0\x80", "\xe0\xbf\xbf", "\xe1\x80\x80", "\xec\xbf\xbf",
		"\xed\x80\x80", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80", "\xf0\xbf\xbf\xbf",
		"\xf1\x80\x80\x80", "\xf3\xbf\xbf\xbf", "\xf4\x80\x80\x80", "\xf4\x8f\xbf\xbf", "na\xc3\xafve \xe2\x82\xac",
	};
	static const char *const bad[] = {
		"\x80", "\xbf", "\xc0\x80", "\xc1\xbf", "\xc2", "\xc2\x7f", "\xc2\xc0", "\xe0\x9f\xbf", "\xe0\xa0",
		"\xed\xa0\x80" /* a surrogate */, "\xed\xbf\xbf", "\xf0\x8f\xbf\xbf", "\xf4\x90\x80\x80" /* > U+10FFFF */,
		"\xf5\x80\x80\x80", "\xff", "\xfe", "abc\xe2\x82", "\xf0\x90\x80",
	};
	int wrong = 0;
	for (size_t i = 0; i < sizeof good / sizeof *good; i++)
		if (!valid(good[i]))
			printf("# refused good %zu\n", i), wrong++;
	ok(!wrong, "Table 3-7's edges are UTF-8");
	wrong = 0;
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		if (valid(bad[i]))
			printf("# took bad %zu\n", i), wrong++;
	ok(!wrong, "stray continuations, overlongs, surrogates, beyond U+10FFFF, cut sequences are not");

	char *buf = NULL;
	size_t cap = 0;
	const char *same = "f\xc3\xa9";
	ok(mt_utf8_fixed(same, &buf, &cap) == same && !buf, "valid: the name itself, no copy");
	const char *fx = mt_utf8_fixed("a\xff" "b\xe2\x82" "c\xed\xa0\x80", &buf, &cap);
	/* as Python's bytes.decode("utf-8", "replace") gives them */
	ok(fx && !strcmp(fx, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd") && valid(fx),
	   "invalid: U+FFFD for each maximal subpart (a cut sequence is one, a surrogate three), the rest kept");
	free(buf);

	ok(json_is("q\"b\\\n\x01\x7f", "q\\\"b\\\\\\u000a\\u0001\x7f"),
	   "JSON: quote, backslash, control bytes escaped");
	ok(json_is("\xff" "\xc3\xa9", "\\ufffd\xc3\xa9"), "JSON: a bad byte \\ufffd, a good sequence kept");

	char *e = escaped("a\tb\nc\rd\\e\x1b[31m\x7f");
	ok(!strcmp(e, "a\\tb\\nc\\rd\\\\e\\x1b[31m\\x7f"), "terminal/TSV: TAB, LF, CR, backslash, ESC, DEL escaped");
	free(e);
	e = escaped("\xc2\x9b" "2J\x9b\xff" "\xc3\xa9\xe2\x82\xac");
	ok(!strcmp(e, "\\xc2\\x9b2J\\x9b\\xff\xc3\xa9\xe2\x82\xac"),
	   "terminal/TSV: C1's CSI (UTF-8 and alone) and bad bytes as \\xNN, printable UTF-8 kept");
	ok(mt_utf8_is_control((const unsigned char *)"\xc2\x80", 2) &&
		   !mt_utf8_is_control((const unsigned char *)"\xc2\xa0", 2),
	   "U+0080 is a control, U+00A0 is not");
	return tap_done();
}
