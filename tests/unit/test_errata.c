/* errata: the CPUs of each Intel PT erratum (trace/errata.h). Oracle:
 * libipt's ptt suite (../shared/testdata/libipt-ptt/cases.json, libipt
 * 8978561), which runs each erratum's tests on the CPUs libipt's table
 * lists for it: every such (test, cpu) pair is read here and must have
 * its erratum set; a CPU none lists (6/1) and an AMD CPU have none of
 * them beyond libipt 2.0.5's own answer. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/errata.h"
#include "tap.h"

static int has(const struct pt_errata *e, const char *name)
{
	if (!strcmp(name, "apl11")) return e->apl11;
	if (!strcmp(name, "apl12")) return e->apl12;
	if (!strcmp(name, "bdm64")) return e->bdm64;
	if (!strcmp(name, "bdm70")) return e->bdm70;
	if (!strcmp(name, "skd007")) return e->skd007;
	if (!strcmp(name, "skd010")) return e->skd010;
	if (!strcmp(name, "skd022")) return e->skd022;
	if (!strcmp(name, "skl014")) return e->skl014;
	if (!strcmp(name, "skz84")) return e->skz84;
	return -1;
}

int main(void)
{
	/* "test": "NAME..." then its runs' "cpu": "F/M": a scan of the JSON
	 * text for those two keys, in order, is enough */
	const char *path = getenv("MT_PTT_CASES") ? getenv("MT_PTT_CASES") : "../shared/testdata/libipt-ptt/cases.json";
	FILE *f = fopen(path, "r");
	bool have = f != NULL;
	size_t pairs = 0, wrong = 0;
	if (f) {
		static char buf[1 << 22];
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = '\0';
		fclose(f);
		char test[64] = "";
		for (char *p = buf; (p = strchr(p, '"'));) {
			if (!strncmp(p, "\"test\": \"", 9)) {
				sscanf(p + 9, "%63[a-z0-9]", test);
				p += 9;
			} else if (!strncmp(p, "\"cpu\": \"", 8)) {
				unsigned fam, model;
				if (sscanf(p + 8, "%u/%u", &fam, &model) == 2 && has(&(struct pt_errata){0}, test) >= 0) {
					struct pt_cpu cpu = {.vendor = pcv_intel, .family = (uint16_t)fam,
							     .model = (uint8_t)model};
					struct pt_errata e;
					mt_cpu_errata(&e, &cpu);
					pairs++;
					if (has(&e, test) != 1) {
						wrong++;
						printf("# %s not set for %u/%u\n", test, fam, model);
					}
				}
				p += 8;
			} else {
				p++;
			}
		}
	}
	if (have) {
		printf("# %zu (erratum, cpu) runs read from %s\n", pairs, path);
		ok(pairs > 100, "the ptt suite's erratum runs are read");
		ok(pairs && !wrong, "every CPU the suite runs an erratum's tests on has that erratum");
	} else {
		char why[4200];
		snprintf(why, sizeof why, "not here: %s (../shared beside the checkout has it)", path);
		skip("the ptt suite's erratum runs are read", why);
		skip("every CPU the suite runs an erratum's tests on has that erratum", why);
	}

	static const char *const names[] = {"apl11", "apl12", "bdm64", "bdm70", "skd007", "skd010", "skd022",
					    "skl014", "skz84"};
	struct pt_cpu none = {.vendor = pcv_intel, .family = 6, .model = 1}, amd = {.vendor = pcv_unknown, .family = 25};
	struct pt_errata e1, e2, base;
	mt_cpu_errata(&e1, &none);
	mt_cpu_errata(&e2, &amd);
	int extra = 0;
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		memset(&base, 0, sizeof base);
		pt_cpu_errata(&base, &none);
		extra += has(&e1, names[i]) && !has(&base, names[i]);
		extra += has(&e2, names[i]);
	}
	ok(!extra, "a CPU no table lists, and an AMD CPU: nothing added");
	return tap_done();
}
