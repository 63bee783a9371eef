/* debuginfod: a client of debuginfod servers (DEBUGINFOD_URLS), through
 * elfutils' libdebuginfod loaded the first time a run asks for one, not
 * linked. Linked, it came with libcurl and its TLS, LDAP, Kerberos and SSH
 * libraries (27 shared libraries of mt-symbolize's 47) that every start of
 * a tool naming addresses paid to load and relocate, while only a run with
 * DEBUGINFOD_URLS set uses them. */
#ifndef MT_DEBUGINFOD_H
#define MT_DEBUGINFOD_H

#include "base/mt_err.h"

#define MT_DEBUGINFOD_SONAME "libdebuginfod.so.1"

struct mt_debuginfod;

/* A client from the library lib (MT_DEBUGINFOD_SONAME; another name for
 * tests); NULL, with err set: MT_EUNSUP when the library or one of its
 * functions cannot be loaded or the client cannot start, MT_ENOMEM. */
struct mt_debuginfod *mt_debuginfod_begin(const char *lib, struct mt_err *err);

/* As debuginfod_find_debuginfo(3): the separate debug info of the build-id
 * id[0..idlen) (raw bytes), an fd open on it with its path in *path
 * (malloc'd), or a negative errno value. */
int mt_debuginfod_find_debuginfo(struct mt_debuginfod *c, const unsigned char *id, int idlen, char **path);

void mt_debuginfod_end(struct mt_debuginfod *c);

#endif
