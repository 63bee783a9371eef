/* Unit tests of the demangler rules (names/demangle.c), TAP output.
 * Oracles: binutils' c++filt (the same libiberty demangler, as perf uses
 * it) on each C++ and Rust name, with Rust's legacy hash (::h + 16 hex
 * digits) and v0 crate disambiguators ([hex] after a crate) dropped, as
 * perf's non-verbose demangling drops them; OCaml's native symbol naming
 * (caml + Module + "__" + name + "_" + stamp) for OCaml names, hand-checked. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names/demangle.h"

#include "tap.h"

static const char *const mangled[] = {
	"_ZN3foo3barEv",
	"_ZNSt6vectorIiSaIiEE9push_backERKi",
	"_ZN9__gnu_cxx13new_allocatorIcE8allocateEmPKv",
	"_ZNK3Bar5valueB5cxx11Ev",
	"_ZZ4mainE1x",
	"_ZN12_GLOBAL__N_14workEi",
	"_ZN4core3ptr13drop_in_place17h1234567890abcdefE",
	"_ZN3std2rt10lang_start28_$u7b$$u7b$closure$u7d$$u7d$17h0011223344556677E",
	"_RNvCs1234_7mycrate3foo",
	"_RNvMs_Cs4Cv8Wi1oAIB_7mycrateNtB4_3Foo3bar",
};

/* c++filt's answer (verbose), less a trailing legacy-Rust hash and the
 * v0 crate disambiguators */
static int cxxfilt(const char *name, char *out, size_t n)
{
	char cmd[512];
	snprintf(cmd, sizeof cmd, "c++filt '%s'", name);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(out, (int)n, p)) {
		if (p)
			pclose(p);
		return -1;
	}
	pclose(p);
	out[strcspn(out, "\n")] = '\0';
	size_t len = strlen(out);
	if (len > 19 && !strncmp(out + len - 19, "::h", 3) && strspn(out + len - 16, "0123456789abcdef") == 16)
		out[len - 19] = '\0';
	char *o = out;
	for (const char *q = out; *q;) {
		size_t h = q[0] == '[' ? strspn(q + 1, "0123456789abcdef") : 0;
		if (h && q[1 + h] == ']') {
			q += h + 2;
			continue;
		}
		*o++ = *q++;
	}
	*o = '\0';
	return 0;
}

static void test_against_cxxfilt(void)
{
	int good = 0, n = 0;
	for (size_t i = 0; i < sizeof mangled / sizeof mangled[0]; i++) {
		char want[1024];
		char *got = mt_demangle(mangled[i]);
		n++;
		if (!cxxfilt(mangled[i], want, sizeof want) && got && !strcmp(got, want))
			good++;
		else
			printf("# %s: mt %s, c++filt %s\n", mangled[i], got ? got : "(none)", want);
		free(got);
	}
	ok(good == n, "C++ and Rust (legacy and v0) names as c++filt writes them, without Rust's hashes");
}

static void test_ocaml(void)
{
	static const char *const cases[][2] = {
		{"camlFoo__bar_123", "Foo.bar"},
		{"camlFoo__Bar__baz_7", "Foo.Bar.baz"},
		{"camlStdlib__List__map_291", "Stdlib.List.map"},
		{"camlMain__entry", "Main.entry"},
	};
	int good = 0;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = mt_demangle(cases[i][0]);
		good += got && !strcmp(got, cases[i][1]);
		free(got);
	}
	ok(good == (int)(sizeof cases / sizeof cases[0]), "OCaml: camlModule__fn_stamp as Module.fn, nested modules dotted");
	char *a = mt_demangle("caml_alloc_shr"), *b = mt_demangle("main"), *c = mt_demangle("_Zgarbage");
	ok(!a && !b && !c, "not mangled (OCaml's runtime caml_*, C names, broken C++): no demangled name");
	free(a);
	free(b);
	free(c);
}

int main(void)
{
	test_against_cxxfilt();
	test_ocaml();
	return tap_done();
}
