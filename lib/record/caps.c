/* caps: see caps.h. */
#define _GNU_SOURCE
#include "record/caps.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/trigger.h"

static void add(struct mt_caps *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void add(struct mt_caps *c, const char *key, const char *fmt, ...)
{
	if (c->n == MT_CAPS_MAX)
		return;
	snprintf(c->key[c->n], sizeof c->key[0], "%s", key);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->val[c->n], sizeof c->val[0], fmt, ap);
	va_end(ap);
	c->n++;
}

/* First line of a file, without its newline; false when unreadable. */
static bool read_line(const char *root, const char *path, char *buf, size_t n)
{
	char p[4096];
	snprintf(p, sizeof p, "%s%s", root, path);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)n, f) != NULL;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* magic-trace reads caps/psb_cyc and requires exactly "1\n". */
static bool file_is_1_newline(const char *root, const char *path)
{
	char p[4096], buf[8] = "";
	snprintf(p, sizeof p, "%s%s", root, path);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	return n == 2 && buf[0] == '1' && buf[1] == '\n';
}

/* "perf version 6.1.187" -> 6, 1; false when perf cannot be run or parsed. */
static bool perf_version(const char *perf, int *major, int *minor, char *raw, size_t rawn)
{
	int fds[2];
	if (pipe(fds) < 0)
		return false;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return false;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		setenv("PAGER", "cat", 1);
		execlp(perf, perf, "--version", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char buf[256] = "";
	size_t len = 0;
	ssize_t r;
	while (len + 1 < sizeof buf && (r = read(fds[0], buf + len, sizeof buf - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(fds[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(raw, rawn, "%s", buf);
	/* magic-trace: the command must exit 0 and print "perf version %d.%d" */
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && sscanf(buf, "perf version %d.%d", major, minor) == 2;
}

static bool at_least(int major, int minor, int want_major, int want_minor)
{
	return major > want_major || (major == want_major && minor >= want_minor);
}

/* Every flags: line of cpuinfo holds word (magic-trace's pdcm test), or any does. */
static void cpu_flags(const char *root, const char *word, bool *all, bool *any)
{
	char p[4096], line[8192];
	snprintf(p, sizeof p, "%s/cpuinfo", root);
	*all = false;
	*any = false;
	FILE *f = fopen(p, "r");
	if (!f)
		return;
	bool seen = false, every = true;
	size_t wl = strlen(word);
	while (fgets(line, sizeof line, f)) {
		if (strncmp(line, "flags", 5))
			continue;
		seen = true;
		bool has = false;
		for (char *q = strstr(line, word); q && !has; q = strstr(q + 1, word))
			has = (q[-1] == ' ' || q[-1] == '\t') && (q[wl] == ' ' || q[wl] == '\n' || !q[wl]);
		every &= has;
		*any |= has;
	}
	fclose(f);
	*all = seen && every;
}

/* Up to 64 entry names of a directory, sorted (none if it cannot be read). */
static size_t list_dir(const char *path, char names[64][64])
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *e;
	while ((e = readdir(d)) && n < 64)
		if (e->d_name[0] != '.')
			snprintf(names[n++], sizeof names[0], "%.63s", e->d_name);
	closedir(d);
	qsort(names, n, sizeof names[0], (int (*)(const void *, const void *))strcmp);
	return n;
}

void mt_caps_detect(const struct mt_caps_opts *o, struct mt_caps *c)
{
	memset(c, 0, sizeof *c);
	const char *sys = o->sysfs_root ? o->sysfs_root : "/sys";
	const char *proc = o->procfs_root ? o->procfs_root : "/proc";
	const char *perf = o->perf;
	if (!perf)
		perf = getenv("MT_PERF_PATH");
	if (!perf)
		perf = getenv("MAGIC_TRACE_PERF_PATH");
	if (!perf)
		perf = "perf";
	bool no_kcore = o->no_kcore || getenv("MT_PERF_NO_KCORE") || getenv("MAGIC_TRACE_PERF_NO_KCORE");
	char buf[256], path[4096];

	/* Intel PT: magic-trace only checks that the directory exists */
	snprintf(path, sizeof path, "%s/bus/event_source/devices/intel_pt", sys);
	bool pt = access(path, F_OK) == 0;
	add(c, "intel_pt", "%d", pt);
	if (pt && read_line(sys, "/bus/event_source/devices/intel_pt/type", buf, sizeof buf))
		add(c, "intel_pt.type", "%s", buf);
	snprintf(path, sizeof path, "%s/bus/event_source/devices/intel_pt/caps", sys);
	char names[64][64];
	size_t nn = pt ? list_dir(path, names) : 0;
	for (size_t i = 0; i < nn; i++) {
		char rel[256], key[96];
		snprintf(rel, sizeof rel, "/bus/event_source/devices/intel_pt/caps/%.63s", names[i]);
		snprintf(key, sizeof key, "intel_pt.caps.%.63s", names[i]);
		if (read_line(sys, rel, buf, sizeof buf))
			add(c, key, "%s", buf);
	}

	/* perf */
	int major = 0, minor = 0;
	char raw[256] = "";
	bool have_perf = perf_version(perf, &major, &minor, raw, sizeof raw);
	add(c, "perf.path", "%s", perf);
	add(c, "perf.version", "%s", have_perf ? raw + strlen("perf version ") : "");
	add(c, "perf.usable", "%d", have_perf);

	/* kernel and its perf settings */
	add(c, "kernel.release", "%s", read_line(proc, "/sys/kernel/osrelease", buf, sizeof buf) ? buf : "");
	add(c, "perf_event_paranoid", "%s", read_line(proc, "/sys/kernel/perf_event_paranoid", buf, sizeof buf) ? buf : "");
	add(c, "perf_event_mlock_kb", "%s", read_line(proc, "/sys/kernel/perf_event_mlock_kb", buf, sizeof buf) ? buf : "");
	add(c, "kptr_restrict", "%s", read_line(proc, "/sys/kernel/kptr_restrict", buf, sizeof buf) ? buf : "");
	add(c, "perf_event_max_sample_rate", "%s",
	    read_line(proc, "/sys/kernel/perf_event_max_sample_rate", buf, sizeof buf) ? buf : "");

	/* privileges: magic-trace looks at euid 0 only; CAP_PERFMON (38) or
	 * CAP_SYS_ADMIN (21) in the effective set do as well */
	uint64_t capeff = 0;
	snprintf(path, sizeof path, "%s/self/status", proc);
	FILE *f = fopen(path, "r");
	char line[512];
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %lx", (unsigned long *)&capeff) == 1)
			break;
	if (f)
		fclose(f);
	bool root = geteuid() == 0, capable = (capeff >> 38 & 1) || (capeff >> 21 & 1);
	add(c, "euid", "%u", (unsigned)geteuid());
	add(c, "cap_perfmon", "%d", (int)(capeff >> 38 & 1));
	add(c, "cap_sys_admin", "%d", (int)(capeff >> 21 & 1));
	add(c, "privileged", "%d", root || capable);

	bool hyp_all, hyp_any, pdcm_all, pdcm_any;
	cpu_flags(proc, "hypervisor", &hyp_all, &hyp_any);
	cpu_flags(proc, "pdcm", &pdcm_all, &pdcm_any);
	add(c, "hypervisor", "%d", hyp_any);

	/* events for the sampling fallback */
	snprintf(path, sizeof path, "%s/bus/event_source/devices/cpu/events", sys);
	char hw[256] = "";
	size_t hl = 0;
	nn = list_dir(path, names);
	for (size_t i = 0; i < nn && hl + strlen(names[i]) + 2 < sizeof hw; i++)
		hl += (size_t)snprintf(hw + hl, sizeof hw - hl, "%s%s", hl ? "," : "", names[i]);
	add(c, "events.hardware", "%s", hw);
	snprintf(path, sizeof path, "%s/bus/event_source/devices/software", sys);
	add(c, "events.software", "%s", access(path, F_OK) == 0 ? "cpu-clock,task-clock" : "");
	/* the primary event of the sampling fallback: cycles where the PMU
	 * has it, else a software clock (magic-trace fails here, its #283) */
	add(c, "sampling.event", "%s", strstr(hw, "cpu-cycles") ? "cycles" : "cpu-clock");

	/* what a trigger can use (trigger.h): hardware breakpoints when they
	 * fire -- tested on this process, so only for the live machine; some
	 * VMs accept them and never fire them -- else uprobes */
	snprintf(path, sizeof path, "%s/bus/event_source/devices/uprobe", sys);
	add(c, "trigger.uprobe", "%d", access(path, F_OK) == 0);
	add(c, "trigger.hw_breakpoint", "%s", strcmp(sys, "/sys") ? "unknown" : mt_hw_breakpoints_fire() ? "1" : "0");

	/* magic-trace's derived capabilities, same thresholds */
	add(c, "configurable_psb_period", "%d",
	    pt && file_is_1_newline(sys, "/bus/event_source/devices/intel_pt/caps/psb_cyc"));
	add(c, "kernel_tracing", "%d", root);
	add(c, "kcore", "%d", have_perf && at_least(major, minor, 5, 5) && !no_kcore);
	add(c, "snapshot_on_exit", "%d", have_perf && at_least(major, minor, 5, 4));
	add(c, "last_branch_record", "%d", pdcm_all);
	add(c, "dlfilter", "%d", have_perf && at_least(major, minor, 5, 14));
	add(c, "ctlfd", "%d", have_perf && at_least(major, minor, 5, 10));
	add(c, "mode", "%s", pt ? "intel_pt" : "sampling");
}

const char *mt_caps_get(const struct mt_caps *caps, const char *key)
{
	for (size_t i = 0; i < caps->n; i++)
		if (!strcmp(caps->key[i], key))
			return caps->val[i];
	return NULL;
}

static void json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

void mt_caps_print(const struct mt_caps *caps, FILE *out, bool json)
{
	if (!json) {
		for (size_t i = 0; i < caps->n; i++)
			fprintf(out, "%s=%s\n", caps->key[i], caps->val[i]);
		return;
	}
	fputc('{', out);
	for (size_t i = 0; i < caps->n; i++) {
		fprintf(out, "%s\n  ", i ? "," : "");
		json_string(out, caps->key[i]);
		fputs(": ", out);
		json_string(out, caps->val[i]);
	}
	fputs("\n}\n", out);
}

int mt_caps_parse(FILE *in, struct mt_caps *caps)
{
	memset(caps, 0, sizeof *caps);
	char line[512];
	while (fgets(line, sizeof line, in)) {
		line[strcspn(line, "\n")] = '\0';
		char *eq = strchr(line, '=');
		if (!eq || eq == line || (size_t)(eq - line) >= sizeof caps->key[0])
			return -1;
		*eq = '\0';
		if (caps->n == MT_CAPS_MAX)
			return -1;
		snprintf(caps->key[caps->n], sizeof caps->key[0], "%.63s", line);
		snprintf(caps->val[caps->n], sizeof caps->val[0], "%.255s", eq + 1);
		caps->n++;
	}
	return ferror(in) ? -1 : 0;
}
