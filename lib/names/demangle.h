/* demangle: readable names for C++ (Itanium ABI), Rust (legacy and v0) and
 * OCaml symbols. C++ and Rust go through libiberty's demangler (the one
 * binutils' c++filt uses), without Rust's hashes and crate disambiguators,
 * as perf prints them; OCaml's camlModule__fn_123 becomes Module.fn. */
#ifndef MT_DEMANGLE_H
#define MT_DEMANGLE_H

/* A malloc'd demangled name, or NULL when name is not mangled. */
char *mt_demangle(const char *name);

#endif
