#define _GNU_SOURCE
#include "trace/dwload.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static struct mt_dw dw;
static const struct mt_dw *loaded;
static char failed[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const char *name = getenv("MT_LIBDW");
	if (!name || !*name)
		name = "libdw.so.1";
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(failed, sizeof failed, "libdw could not be loaded: %s", e ? e : name);
		return;
	}
	/* each field by its name (the count checked against the struct) */
	static const struct {
		const char *name;
		size_t off;
	} fns[] = {
#define FN(f) {#f, offsetof(struct mt_dw, f)}
		FN(dwfl_begin), FN(dwfl_end), FN(dwfl_errmsg), FN(dwfl_report_begin_add), FN(dwfl_report_elf),
		FN(dwfl_report_end), FN(dwfl_addrmodule), FN(dwfl_attach_state), FN(dwfl_getthread_frames),
		FN(dwfl_thread_state_registers), FN(dwfl_thread_state_register_pc), FN(dwfl_frame_pc),
		FN(dwfl_frame_reg), FN(dwfl_linux_proc_find_elf), FN(dwfl_standard_find_debuginfo),
		FN(dwfl_module_eh_cfi), FN(dwfl_module_dwarf_cfi), FN(dwarf_cfi_addrframe), FN(dwarf_frame_info),
		FN(dwarf_frame_register),
#undef FN
	};
	_Static_assert(sizeof fns / sizeof fns[0] == sizeof(struct mt_dw) / sizeof(void (*)(void)),
		       "every field of struct mt_dw loaded");
	for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		void *f = dlsym(h, fns[i].name);
		if (!f) {
			snprintf(failed, sizeof failed, "libdw (%s) has no %s: elfutils 0.188 or later is needed", name,
				 fns[i].name);
			dlclose(h);
			return;
		}
		/* POSIX: a function pointer read from dlsym's void * */
		memcpy((char *)&dw + fns[i].off, &f, sizeof f);
	}
	loaded = &dw; /* the handle stays open for the process */
}

const struct mt_dw *mt_dw_load(const char **why)
{
	pthread_once(&once, load);
	if (!loaded && why)
		*why = failed;
	return loaded;
}
