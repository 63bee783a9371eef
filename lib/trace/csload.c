#include "trace/csload.h"

#include <capstone.h>
#include <dlfcn.h>
#include <intel-pt.h>
#include <pthread.h>
#include <stdbool.h>

static struct {
	bool tried, loaded;
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*close)(csh *);
	cs_insn *(*malloc)(csh);
	void (*free)(cs_insn *, size_t);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	size_t (*disasm)(csh, const uint8_t *, size_t, uint64_t, size_t, cs_insn **);
} cs;
static pthread_mutex_t cs_mu = PTHREAD_MUTEX_INITIALIZER;

/* Loads the library once, then disassembles one instruction under the
 * lock: Capstone 4 sorts some of its x86 tables on first use, unlocked,
 * and two decode jobs disassembling their first instruction at once raced
 * on them (helgrind saw it; it does not see pthread_once's ordering, a
 * mutex it does). */
static bool load(void)
{
	pthread_mutex_lock(&cs_mu);
	if (!cs.tried) {
		cs.tried = true;
		void *lib = dlopen("libcapstone.so.4", RTLD_NOW | RTLD_LOCAL);
		if (!lib)
			lib = dlopen("libcapstone.so.5", RTLD_NOW | RTLD_LOCAL);
		if (lib) {
			/* POSIX: a function's address through a data pointer */
			*(void **)&cs.open = dlsym(lib, "cs_open");
			*(void **)&cs.close = dlsym(lib, "cs_close");
			*(void **)&cs.malloc = dlsym(lib, "cs_malloc");
			*(void **)&cs.free = dlsym(lib, "cs_free");
			*(void **)&cs.disasm_iter = dlsym(lib, "cs_disasm_iter");
			*(void **)&cs.disasm = dlsym(lib, "cs_disasm");
			cs.loaded = cs.open && cs.close && cs.malloc && cs.free && cs.disasm_iter && cs.disasm;
		}
		csh h;
		static const uint8_t mov[] = {0x48, 0x89, 0xd8}; /* mov rax, rbx */
		if (cs.loaded && cs.open(CS_ARCH_X86, CS_MODE_64, &h) == CS_ERR_OK) {
			cs_insn *insn = NULL;
			size_t n = cs.disasm(h, mov, sizeof mov, 0, 1, &insn);
			if (n)
				cs.free(insn, n);
			cs.close(&h);
		}
	}
	bool loaded = cs.loaded;
	pthread_mutex_unlock(&cs_mu);
	return loaded;
}

int mt_csload_length(struct mt_csload *c, const uint8_t *code, size_t n, uint64_t addr)
{
	if (!c->handle) {
		if (!load())
			return -pte_not_supported;
		csh h;
		if (cs.open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
			return -pte_nomem;
		c->handle = h;
	}
	if (!c->insn && !(c->insn = cs.malloc((csh)c->handle)))
		return -pte_nomem;
	cs_insn *insn = c->insn;
	return cs.disasm_iter((csh)c->handle, &code, &n, &addr, insn) ? insn->size : 0;
}

void mt_csload_close(struct mt_csload *c)
{
	if (c->insn)
		cs.free(c->insn, 1);
	if (c->handle) {
		csh h = c->handle;
		cs.close(&h);
	}
	c->insn = NULL;
	c->handle = 0;
}
