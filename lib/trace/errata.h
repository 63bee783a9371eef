/* errata: the Intel PT errata of a CPU, as libipt's current table has
 * them. Debian 12's libipt (2.0.5) knows fewer CPUs than libipt does now;
 * mt takes libipt's answer and adds the CPUs its later table lists for each
 * erratum (the family/model pairs its own ptt suite runs each erratum's
 * tests on: ../shared/testdata/libipt-ptt/cases.json, libipt 8978561). */
#ifndef MT_ERRATA_H
#define MT_ERRATA_H

#include <intel-pt.h>

/* Fills e for cpu (vendor intel); 0, or libipt's negative error code. */
int mt_cpu_errata(struct pt_errata *e, const struct pt_cpu *cpu);

#endif
