#define _GNU_SOURCE
#include "trace/perfdata.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strtab.h"

#define FILE_HEADER_SIZE 104
#define PIPE_HEADER_SIZE 16
#define ATTR_MIN_SIZE 64

/* Reads fd to its end after `prefix` (bytes already read from it). */
static int read_all(int fd, const uint8_t *prefix, size_t prefix_len, uint8_t **out, size_t *outlen,
		    const char *name, struct mt_err *err)
{
	size_t cap = 1 << 20, len = prefix_len;
	uint8_t *buf = malloc(cap);
	if (!buf)
		return mt_err_set(err, MT_ENOMEM, "out of memory reading %s", name);
	if (prefix_len)
		memcpy(buf, prefix, prefix_len); /* callers peek at most a few bytes */
	for (;;) {
		if (len == cap) {
			uint8_t *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return mt_err_set(err, MT_ENOMEM, "out of memory reading %s (%zu bytes)", name, len);
			}
			buf = nb;
			cap *= 2;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int e = errno;
			free(buf);
			return mt_err_set(err, MT_EIO, "%s: %s", name, strerror(e));
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	*out = buf;
	*outlen = len;
	return 0;
}

static void parse_attr(struct mt_perf_evattr *a, const uint8_t *p, uint32_t avail)
{
	/* Zero-fill what an older, shorter attr does not carry. */
	uint8_t tmp[136] = {0};
	memcpy(tmp, p, avail < sizeof tmp ? avail : sizeof tmp);
	a->type = mt_rd32(tmp);
	a->size = mt_rd32(tmp + 4);
	a->config = mt_rd64(tmp + 8);
	a->sample_period = mt_rd64(tmp + 16);
	a->sample_type = mt_rd64(tmp + 24);
	a->read_format = mt_rd64(tmp + 32);
	a->flags = mt_rd64(tmp + 40);
	a->bp_type = mt_rd32(tmp + 52);
	a->config1 = mt_rd64(tmp + 56);
	a->config2 = mt_rd64(tmp + 64);
	a->branch_sample_type = mt_rd64(tmp + 72);
	a->sample_regs_user = mt_rd64(tmp + 80);
	a->sample_stack_user = mt_rd32(tmp + 88);
	a->clockid = (int32_t)mt_rd32(tmp + 92);
}

/* perf's string feature: u32 len; char str[len] (NUL-padded) */
static const char *feat_string(const uint8_t *p, uint64_t size)
{
	if (size < 4)
		return NULL;
	uint32_t n = mt_rd32(p);
	if (n == 0 || n > size - 4 || memchr(p + 4, 0, n) == NULL)
		return NULL;
	return (const char *)p + 4;
}

static void parse_event_desc(struct mt_perfdata *pd, const uint8_t *p, uint64_t size)
{
	if (size < 8)
		return;
	uint32_t nr = mt_rd32(p), asz = mt_rd32(p + 4);
	uint64_t off = 8;
	for (uint32_t i = 0; i < nr; i++) {
		if (off + asz + 4 > size)
			return;
		uint32_t nids = mt_rd32(p + off + asz);
		const char *name = feat_string(p + off + asz + 4, size - off - asz - 4);
		if (!name)
			return;
		uint32_t slen = mt_rd32(p + off + asz + 4);
		if (i < pd->nattrs)
			pd->attrs[i].name = name;
		off += asz + 4 + 4 + slen + (uint64_t)nids * 8;
	}
}

static void parse_buildids(struct mt_perfdata *pd, const uint8_t *p, uint64_t size)
{
	/* struct { header; s32 pid; u8 build_id[24]; char filename[]; } */
	size_t cap = 0;
	uint64_t off = 0;
	while (off + 8 + 4 + 24 < size) {
		uint16_t misc = mt_rd16(p + off + 4), rsz = mt_rd16(p + off + 6);
		if (rsz < 8 + 4 + 24 + 1 || off + rsz > size)
			break;
		const uint8_t *r = p + off + 8;
		if (memchr(r + 28, 0, rsz - 8 - 28) == NULL)
			break;
		if (pd->nbuildids == cap) {
			cap = cap ? cap * 2 : 32;
			void *nb = realloc(pd->buildids, cap * sizeof *pd->buildids);
			if (!nb)
				break;
			pd->buildids = nb;
		}
		struct mt_perf_buildid *b = &pd->buildids[pd->nbuildids++];
		b->pid = (int32_t)mt_rd32(r);
		memcpy(b->id, r + 4, 20);
		/* misc bit 15: the size is stored after the 20 id bytes */
		b->id_size = (misc & (1u << 15)) ? r[4 + 20] : 20;
		if (b->id_size > 20)
			b->id_size = 20;
		b->path = (const char *)r + 28;
		off += rsz;
	}
}

/* HEADER_CPU_PMU_CAPS: u32 count, then name and value strings: the LBR's
 * depth is "branches" (perf's env max_branches, what its LBR stitching
 * needs). */
static void parse_pmu_caps(struct mt_perfdata *pd, const uint8_t *p, uint64_t size)
{
	if (size < 4)
		return;
	uint32_t n = mt_rd32(p);
	uint64_t off = 4;
	for (uint32_t i = 0; i < n && off < size; i++) {
		const char *name = feat_string(p + off, size - off);
		if (!name)
			return;
		off += 4 + (uint64_t)mt_rd32(p + off);
		const char *value = off < size ? feat_string(p + off, size - off) : NULL;
		if (!value)
			return;
		off += 4 + (uint64_t)mt_rd32(p + off);
		if (!strcmp(name, "branches"))
			pd->max_branches = (unsigned)strtoul(value, NULL, 10);
	}
}

static void parse_feature(struct mt_perfdata *pd, int bit, const uint8_t *p, uint64_t size)
{
	switch (bit) {
	case MT_FEAT_HOSTNAME: pd->hostname = feat_string(p, size); break;
	case MT_FEAT_OSRELEASE: pd->osrelease = feat_string(p, size); break;
	case MT_FEAT_VERSION: pd->version = feat_string(p, size); break;
	case MT_FEAT_ARCH: pd->arch = feat_string(p, size); break;
	case MT_FEAT_CPUDESC: pd->cpudesc = feat_string(p, size); break;
	case MT_FEAT_CPUID: pd->cpuid = feat_string(p, size); break;
	case MT_FEAT_NRCPUS:
		if (size >= 8) {
			pd->nrcpus_online = mt_rd32(p);
			pd->nrcpus_avail = mt_rd32(p + 4);
		}
		break;
	case MT_FEAT_EVENT_DESC: parse_event_desc(pd, p, size); break;
	case MT_FEAT_BUILD_ID: parse_buildids(pd, p, size); break;
	case MT_FEAT_CPU_PMU_CAPS: parse_pmu_caps(pd, p, size); break;
	case MT_FEAT_COMPRESSED: /* u32 version, type, level, ratio, mmap_len */
		if (size >= 20)
			pd->comp_mmap_len = mt_rd32(p + 16);
		break;
	}
}

static int cmp_perf_id(const void *a, const void *b)
{
	const struct mt_perf_id *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->attr < y->attr ? -1 : x->attr > y->attr;
}

/* (Re)builds the id index once the attrs are known (file mode) or change
 * (pipe mode). Out of memory: no index, and ids find no attr. */
static void index_ids(struct mt_perfdata *pd)
{
	if (!pd->any_identifier)
		return; /* records then carry no id to look up */
	size_t n = 0;
	for (size_t i = 0; i < pd->nattrs; i++)
		n += pd->attrs[i].nids;
	free(pd->id_index);
	pd->nid_index = 0;
	pd->id_index = n ? malloc(n * sizeof *pd->id_index) : NULL;
	if (!pd->id_index)
		return;
	for (size_t i = 0; i < pd->nattrs; i++)
		for (size_t j = 0; j < pd->attrs[i].nids; j++)
			pd->id_index[pd->nid_index++] =
				(struct mt_perf_id){mt_rd64((const uint8_t *)&pd->attrs[i].ids[j]), (uint32_t)i};
	qsort(pd->id_index, pd->nid_index, sizeof *pd->id_index, cmp_perf_id);
}


static int parse_file_header(struct mt_perfdata *pd, struct mt_err *err)
{
	const uint8_t *b = pd->base;
	if (pd->len < FILE_HEADER_SIZE)
		return mt_err_set(err, MT_ETRUNC, "%s: file header truncated (%zu of %d bytes)",
				  pd->name, pd->len, FILE_HEADER_SIZE);
	uint64_t hsize = mt_rd64(b + 8), attr_size = mt_rd64(b + 16);
	uint64_t attrs_off = mt_rd64(b + 24), attrs_size = mt_rd64(b + 32);
	uint64_t data_off = mt_rd64(b + 40), data_size = mt_rd64(b + 48);
	if (hsize != FILE_HEADER_SIZE)
		return mt_err_set(err, MT_EFORMAT, "%s: unexpected header size %llu",
				  pd->name, (unsigned long long)hsize);
	memcpy(pd->features, b + 72, 32);
	if (attr_size < ATTR_MIN_SIZE + 16 || attr_size > 4096)
		return mt_err_set(err, MT_EFORMAT, "%s: bad attr_size %llu", pd->name,
				  (unsigned long long)attr_size);
	if (attrs_off > pd->len || attrs_size > pd->len - attrs_off)
		return mt_err_set(err, MT_ETRUNC, "%s: attrs section [%llu,+%llu) beyond end of file (%zu bytes)",
				  pd->name, (unsigned long long)attrs_off, (unsigned long long)attrs_size, pd->len);
	size_t n = attrs_size / attr_size;
	if (n > sizeof pd->attrs / sizeof pd->attrs[0])
		return mt_err_set(err, MT_EUNSUP, "%s: %zu events (at most 64 supported)", pd->name, n);
	for (size_t i = 0; i < n; i++) {
		const uint8_t *a = b + attrs_off + i * attr_size;
		struct mt_perf_evattr *ea = &pd->attrs[i];
		parse_attr(ea, a, (uint32_t)(attr_size - 16));
		uint64_t ids_off = mt_rd64(a + attr_size - 16), ids_size = mt_rd64(a + attr_size - 8);
		if (ids_off <= pd->len && ids_size <= pd->len - ids_off) {
			ea->ids = (const uint64_t *)(const void *)(b + ids_off);
			ea->nids = ids_size / 8;
		}
		if (ea->sample_type & MT_SAMPLE_IDENTIFIER)
			pd->any_identifier = true;
	}
	pd->nattrs = n;
	pd->data_off = data_off;
	if (data_off > pd->len) {
		pd->data_end = data_off;
		pd->truncated = true;
		return mt_err_set(err, MT_ETRUNC, "%s: data section starts at %llu, beyond end of file (%zu bytes)",
				  pd->name, (unsigned long long)data_off, pd->len);
	}
	/* A crashed `perf record` leaves data.size 0: walk to the end of file. */
	pd->data_declared = data_size;
	if (data_size == 0 || data_size > pd->len - data_off) {
		if (data_size > pd->len - data_off)
			pd->truncated = true;
		pd->data_end = pd->len;
	} else {
		pd->data_end = data_off + data_size;
	}
	pd->pos = data_off;
	index_ids(pd); /* past the refusals above: a failed open holds nothing */
	/* Feature table: one {offset,size} per set bit, right after the data
	 * (none to read when the data size itself runs past the end). */
	bool have_table = data_size && data_size <= pd->len - data_off;
	uint64_t ft = have_table ? data_off + data_size : 0;
	for (int bit = 0; bit < 256 && have_table; bit++) {
		if (!(pd->features[bit / 8] & (1u << (bit % 8))))
			continue;
		if (ft > pd->len || pd->len - ft < 16)
			break;
		uint64_t off = mt_rd64(b + ft), size = mt_rd64(b + ft + 8);
		ft += 16;
		if (off <= pd->len && size <= pd->len - off)
			parse_feature(pd, bit, b + off, size);
	}
	return 0;
}

static int init(struct mt_perfdata *pd, struct mt_err *err)
{
	if (pd->len < 16) {
		if (pd->len == 0)
			return mt_err_set(err, MT_ETRUNC, "%s: empty input", pd->name);
		return mt_err_set(err, MT_ETRUNC, "%s: too short for a perf.data header (%zu bytes)", pd->name, pd->len);
	}
	if (!memcmp(pd->base, "2ELIFREP", 8))
		return mt_err_set(err, MT_EUNSUP, "%s: big-endian (byte-swapped) perf.data is not supported", pd->name);
	if (!memcmp(pd->base, "PERFFILE", 8))
		return mt_err_set(err, MT_EUNSUP, "%s: obsolete perf.data version 1", pd->name);
	if (memcmp(pd->base, "PERFILE2", 8))
		return mt_err_set(err, MT_EFORMAT, "%s: not a perf.data file (bad magic)", pd->name);
	if (mt_rd64(pd->base + 8) == PIPE_HEADER_SIZE) {
		pd->pipe_mode = true;
		pd->data_off = pd->pos = PIPE_HEADER_SIZE;
		pd->data_end = pd->len;
		return 0;
	}
	return parse_file_header(pd, err);
}

static void release_input(struct mt_perfdata *pd)
{
	if (pd->mapped)
		munmap((void *)pd->base, pd->len);
	else if (!pd->borrowed)
		free((void *)pd->base);
	free(pd->buildids);
	free(pd->id_index);
	pd->base = NULL;
	pd->buildids = NULL;
	pd->id_index = NULL;
	pd->nid_index = 0;
}

/* A perf.data directory (perf record --threads): the data.N files beside
 * its `data`, mapped, in N's order; a number missing between them, or a
 * header read without its directory, said in st. Returns the count. */
static size_t dir_parts(const struct mt_perfdata *pd, struct mt_perfexpand_part **out,
			struct mt_perfexpand_stats *st)
{
	*out = NULL;
	size_t nl = strlen(pd->name);
	if (!(nl == 4 && !strcmp(pd->name, "data")) && !(nl > 4 && !strcmp(pd->name + nl - 5, "/data"))) {
		snprintf(st->part_damage, sizeof st->part_damage, "a perf.data directory's header read without its "
			 "directory: its data.N files (perf record --threads) are not read");
		return 0;
	}
	char dir[4096];
	snprintf(dir, sizeof dir, "%.*s", (int)(nl - 4), pd->name);
	DIR *d = opendir(nl == 4 ? "." : dir);
	if (!d) {
		snprintf(st->part_damage, sizeof st->part_damage, "%.300s: %s", dir, strerror(errno));
		return 0;
	}
	unsigned long *nums = NULL;
	size_t n = 0, cap = 0;
	for (struct dirent *e; (e = readdir(d));) {
		const char *s = e->d_name;
		if (strncmp(s, "data.", 5) || !s[5] || s[5 + strspn(s + 5, "0123456789")] || strlen(s) > 12)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			unsigned long *v = realloc(nums, cap * sizeof *v);
			if (!v)
				break;
			nums = v;
		}
		nums[n++] = strtoul(s + 5, NULL, 10);
	}
	closedir(d);
	for (size_t i = 1; i < n; i++) /* a few dozen at most: insertion */
		for (size_t j = i; j && nums[j - 1] > nums[j]; j--) {
			unsigned long t = nums[j];
			nums[j] = nums[j - 1];
			nums[j - 1] = t;
		}
	struct mt_perfexpand_part *parts = n ? calloc(n, sizeof *parts) : NULL;
	size_t got = 0;
	for (size_t i = 0; i < n && parts; i++) {
		if (nums[i] != i && !st->part_damage[0])
			snprintf(st->part_damage, sizeof st->part_damage, "%.300sdata.%zu is missing: what it held is lost", dir,
				 i);
		char path[4200];
		snprintf(path, sizeof path, "%sdata.%lu", dir, nums[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		struct stat sb;
		if (fd < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
			if (!st->part_damage[0])
				snprintf(st->part_damage, sizeof st->part_damage, "%.300s: %s", path,
					 fd < 0 ? strerror(errno) : "not a regular file");
			if (fd >= 0)
				close(fd);
			continue;
		}
		void *m = sb.st_size ? mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
		close(fd);
		if (m == MAP_FAILED)
			continue;
		parts[got++] = (struct mt_perfexpand_part){.base = m, .len = (size_t)sb.st_size, .name = strdup(path)};
	}
	free(nums);
	*out = parts;
	return got;
}

static void free_parts(struct mt_perfexpand_part *parts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (parts[i].len)
			munmap((void *)parts[i].base, parts[i].len);
		free((void *)parts[i].name);
	}
	free(parts);
}

/* perf record -z: its zstd batches expanded into a file of plain records
 * (perfexpand.h), which then stands for the input; perf record --threads:
 * the data.N files' records after the data section's. A file says either
 * in its header; a pipe's records, already in memory, are looked at. */
static int expand_if_needed(struct mt_perfdata *pd, struct mt_err *err)
{
	bool dir = !pd->pipe_mode && (pd->features[MT_FEAT_DIR_FORMAT / 8] & (1u << (MT_FEAT_DIR_FORMAT % 8)));
	bool says = pd->features[MT_FEAT_COMPRESSED / 8] & (1u << (MT_FEAT_COMPRESSED % 8));
	if (!dir && (!(says || pd->pipe_mode) || !mt_perfexpand_needed(pd->base, pd->data_off, pd->data_end)))
		return 0;
	struct mt_perfexpand_stats st = {0};
	struct mt_perfexpand_part *parts = NULL;
	size_t nparts = dir ? dir_parts(pd, &parts, &st) : 0;
	char part_damage[sizeof st.part_damage];
	memcpy(part_damage, st.part_damage, sizeof part_damage);
	int fd;
	size_t n;
	int rc = mt_perfexpand(pd->base, pd->len, pd->pipe_mode, pd->data_off, pd->data_end, parts, nparts,
			       pd->comp_mmap_len, &fd, &n, &st, pd->name, err);
	free_parts(parts, nparts);
	if (rc)
		return rc;
	if (part_damage[0])
		memcpy(st.part_damage, part_damage, sizeof part_damage);
	void *m = mmap(NULL, n, PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	close(fd);
	if (m == MAP_FAILED)
		return mt_err_set(err, MT_EIO, "%s: mmap of its records, whole and uncompressed: %s", pd->name, strerror(e));
	madvise(m, n, MADV_SEQUENTIAL);
	const char *name = pd->name;
	release_input(pd);
	memset(pd, 0, sizeof *pd);
	pd->name = name;
	pd->base = m;
	pd->len = n;
	pd->mapped = true;
	pd->expanded = true;
	pd->zstd = st;
	return init(pd, err);
}

int mt_perfdata_open_mem(struct mt_perfdata *pd, const uint8_t *buf, size_t len,
			 const char *name, struct mt_err *err)
{
	memset(pd, 0, sizeof *pd);
	pd->name = name;
	pd->base = buf;
	pd->len = len;
	pd->borrowed = true;
	int rc = init(pd, err);
	return rc ? rc : expand_if_needed(pd, err);
}

int mt_perfdata_open(struct mt_perfdata *pd, const char *path, struct mt_err *err)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : 0;
	if (fd < 0) {
		memset(pd, 0, sizeof *pd);
		return mt_err_set(err, MT_EIO, "%s: %s", path, strerror(errno));
	}
	return mt_perfdata_open_fd(pd, fd, strcmp(path, "-") ? path : "standard input", NULL, 0, err);
}

int mt_perfdata_open_fd(struct mt_perfdata *pd, int fd, const char *name, const uint8_t *prefix,
			size_t prefix_len, struct mt_err *err)
{
	memset(pd, 0, sizeof *pd);
	pd->name = name;
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		if (fd)
			close(fd);
		return mt_err_set(err, MT_EIO, "%s: %s", pd->name, strerror(e));
	}
	if (S_ISDIR(st.st_mode)) {
		if (fd)
			close(fd);
		return mt_err_set(err, MT_EIO, "%s: is a directory", pd->name);
	}
	int rc = 0;
	if (S_ISREG(st.st_mode) && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			rc = mt_err_set(err, MT_EIO, "%s: mmap: %s", pd->name, strerror(errno));
		} else {
			madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
			pd->base = m;
			pd->len = (size_t)st.st_size;
			pd->mapped = true;
		}
	} else {
		uint8_t *buf = NULL;
		rc = read_all(fd, prefix, prefix_len, &buf, &pd->len, pd->name, err);
		pd->base = buf;
	}
	if (fd)
		close(fd);
	if (rc)
		return rc;
	rc = init(pd, err);
	return rc ? rc : expand_if_needed(pd, err);
}

/* The time of a piece's first timed record (UINT64_MAX: none); perf
 * synthesizes a COMM at time 0 at the start of every piece. */
static uint64_t first_time(struct mt_perfdata *pd)
{
	struct mt_perf_record r;
	struct mt_err e = {0};
	uint64_t t = UINT64_MAX;
	while (mt_perfdata_next(pd, &r, &e) > 0)
		if (r.sid.has_time && r.sid.time) {
			t = r.sid.time;
			break;
		}
	mt_perfdata_rewind(pd);
	pd->rewound = false;
	return t;
}

static bool same_events(const struct mt_perfdata *a, const struct mt_perfdata *b)
{
	if (a->nattrs != b->nattrs)
		return false;
	for (size_t i = 0; i < a->nattrs; i++)
		if (a->attrs[i].type != b->attrs[i].type || a->attrs[i].config != b->attrs[i].config ||
		    a->attrs[i].sample_type != b->attrs[i].sample_type)
			return false;
	return true;
}

int mt_perfdata_open_pieces(struct mt_perfdata *pd, const char *const *paths, size_t n, struct mt_err *err)
{
	memset(pd, 0, sizeof *pd);
	struct piece { struct mt_perfdata pd; uint64_t t; } *pc = calloc(n, sizeof *pc);
	struct mt_perfexpand_part *parts = calloc(n, sizeof *parts);
	int rc = pc && parts ? 0 : mt_err_set(err, MT_ENOMEM, "out of memory opening %zu perf.data files", n);
	size_t opened = 0;
	for (; opened < n && !rc; opened++) {
		struct mt_perfdata *p = &pc[opened].pd;
		rc = mt_perfdata_open(p, paths[opened], err);
		if (!rc && p->pipe_mode)
			rc = mt_err_set(err, MT_EUNSUP, "%s: a pipe-mode perf.data cannot be a piece of a recording given in "
					"several files (perf record --switch-output writes files)", p->name);
		else if (!rc && opened && !same_events(p, &pc[0].pd))
			rc = mt_err_set(err, MT_EFORMAT, "%s is not a piece of the same recording as %s: its events differ",
					p->name, pc[0].pd.name);
		if (!rc)
			pc[opened].t = first_time(p);
	}
	if (!rc) {
		/* in time order, as perf record --switch-output wrote them (an
		 * untimed piece keeps its place after the timed ones) */
		for (size_t i = 1; i < n; i++)
			for (size_t j = i; j && pc[j - 1].t > pc[j].t; j--) {
				struct piece t = pc[j];
				pc[j] = pc[j - 1];
				pc[j - 1] = t;
			}
		for (size_t i = 1; i < n; i++)
			parts[i - 1] = (struct mt_perfexpand_part){.base = pc[i].pd.base + pc[i].pd.data_off,
								   .len = pc[i].pd.data_end - pc[i].pd.data_off,
								   .name = pc[i].pd.name};
		struct mt_perfexpand_stats st;
		const struct mt_perfdata *b = &pc[0].pd;
		int fd;
		size_t len;
		rc = mt_perfexpand(b->base, b->len, false, b->data_off, b->data_end, parts, n - 1, b->comp_mmap_len, &fd, &len,
				   &st, b->name, err);
		if (!rc) {
			st.input_bytes = 0;
			for (size_t i = 0; i < n; i++)
				st.input_bytes += pc[i].pd.expanded ? pc[i].pd.zstd.input_bytes : pc[i].pd.len;
			for (size_t i = 0; i < n; i++)
				if (pc[i].pd.expanded) {
					st.batches += pc[i].pd.zstd.batches;
					st.batches_lost += pc[i].pd.zstd.batches_lost;
					st.records_cut += pc[i].pd.zstd.records_cut;
					if (!st.damage[0])
						memcpy(st.damage, pc[i].pd.zstd.damage, sizeof st.damage);
				}
			void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
			int e = errno;
			close(fd);
			if (m == MAP_FAILED) {
				rc = mt_err_set(err, MT_EIO, "%s: mmap of the pieces' records: %s", b->name, strerror(e));
			} else {
				pd->name = b->name;
				pd->base = m;
				pd->len = len;
				pd->mapped = true;
				pd->expanded = true;
				pd->zstd = st;
				rc = init(pd, err);
			}
		}
	}
	for (size_t i = 0; i < opened && pc; i++)
		mt_perfdata_close(&pc[i].pd);
	free(pc);
	free(parts);
	return rc;
}

void mt_perfdata_close(struct mt_perfdata *pd)
{
	release_input(pd);
}

/* The first attr whose ids hold id (never 0: records with id 0 take attr 0),
 * or -1: the index's first entry with it follows those below it. */
static int attr_index_by_id(const struct mt_perfdata *pd, uint64_t id)
{
	size_t lo = mt_count_at_or_below(pd->id_index, pd->nid_index, sizeof *pd->id_index,
					 offsetof(struct mt_perf_id, id), id - 1);
	return lo < pd->nid_index && pd->id_index[lo].id == id ? (int)pd->id_index[lo].attr : -1;
}

/* Size of the sample_id_all trailer for a sample_type. */
static size_t trailer_size(uint64_t st)
{
	size_t n = 0;
	if (st & MT_SAMPLE_TID) n += 8;
	if (st & MT_SAMPLE_TIME) n += 8;
	if (st & MT_SAMPLE_ID) n += 8;
	if (st & MT_SAMPLE_STREAM_ID) n += 8;
	if (st & MT_SAMPLE_CPU) n += 8;
	if (st & MT_SAMPLE_IDENTIFIER) n += 8;
	return n;
}

static void parse_trailer(const struct mt_perfdata *pd, struct mt_perf_record *rec)
{
	struct mt_perf_sample_id *s = &rec->sid;
	if (pd->nattrs == 0 || rec->body_size < 8)
		return;
	int ai = 0;
	if (pd->any_identifier) {
		uint64_t id = mt_rd64(rec->body + rec->body_size - 8);
		ai = id ? attr_index_by_id(pd, id) : 0;
		if (ai < 0)
			return;
	}
	const struct mt_perf_evattr *a = &pd->attrs[ai];
	if (!(a->flags & MT_ATTR_SAMPLE_ID_ALL))
		return;
	uint64_t st = a->sample_type;
	size_t ts = trailer_size(st);
	if (ts > rec->body_size)
		return;
	const uint8_t *p = rec->body + rec->body_size - ts;
	s->attr_index = ai;
	if (st & MT_SAMPLE_TID) { s->has_tid = true; s->pid = mt_rd32(p); s->tid = mt_rd32(p + 4); p += 8; }
	if (st & MT_SAMPLE_TIME) { s->has_time = true; s->time = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_ID) { s->has_id = true; s->id = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_STREAM_ID) p += 8;
	if (st & MT_SAMPLE_CPU) { s->has_cpu = true; s->cpu = mt_rd32(p); p += 8; }
	if (st & MT_SAMPLE_IDENTIFIER) { s->has_id = true; s->id = mt_rd64(p); }
}

static void parse_sample(const struct mt_perfdata *pd, struct mt_perf_record *rec)
{
	struct mt_perf_sample_id *s = &rec->sid;
	const uint8_t *p = rec->body, *end = rec->body + rec->body_size;
	int ai = 0;
	if (pd->nattrs == 0)
		return;
	if (pd->any_identifier) {
		if (end - p < 8)
			return;
		uint64_t id = mt_rd64(p);
		ai = id ? attr_index_by_id(pd, id) : 0;
		if (ai < 0)
			return;
	}
	uint64_t st = pd->attrs[ai].sample_type;
	s->attr_index = ai;
#define TAKE(n) do { if ((uint64_t)(end - p) < (uint64_t)(n)) return; } while (0)
	if (st & MT_SAMPLE_IDENTIFIER) { TAKE(8); s->has_id = true; s->id = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_IP) { TAKE(8); s->has_ip = true; s->ip = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_TID) { TAKE(8); s->has_tid = true; s->pid = mt_rd32(p); s->tid = mt_rd32(p + 4); p += 8; }
	if (st & MT_SAMPLE_TIME) { TAKE(8); s->has_time = true; s->time = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_ADDR) { TAKE(8); s->has_addr = true; s->addr = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_ID) { TAKE(8); s->has_id = true; s->id = mt_rd64(p); p += 8; }
	if (st & MT_SAMPLE_STREAM_ID) { TAKE(8); p += 8; }
	if (st & MT_SAMPLE_CPU) { TAKE(8); s->has_cpu = true; s->cpu = mt_rd32(p); p += 8; }
	if (st & MT_SAMPLE_PERIOD) { TAKE(8); s->has_period = true; s->period = mt_rd64(p); p += 8; }
	else if (!(pd->attrs[ai].flags & MT_ATTR_FREQ) && pd->attrs[ai].sample_period) {
		/* a fixed period (perf record -c N) is the event's, not the
		 * sample's: perf script gives it to every sample */
		s->has_period = true;
		s->period = pd->attrs[ai].sample_period;
	}
	if (st & MT_SAMPLE_READ)
		return; /* its size depends on read_format: callchains after it are not read */
	if (st & MT_SAMPLE_CALLCHAIN) {
		TAKE(8);
		uint64_t nr = mt_rd64(p);
		p += 8;
		if (nr > (uint64_t)(end - p) / 8)
			return;
		s->callchain = p;
		s->callchain_nr = nr;
		p += nr * 8;
	}
	if (st & MT_SAMPLE_RAW) {
		TAKE(4);
		uint32_t n = mt_rd32(p);
		TAKE(4 + (uint64_t)n);
		p += 4 + n;
	}
	if (st & MT_SAMPLE_BRANCH_STACK) {
		TAKE(8);
		uint64_t nr = mt_rd64(p);
		p += 8;
		if (pd->attrs[ai].branch_sample_type & MT_BRANCH_HW_INDEX) {
			TAKE(8);
			s->brstack_hw_idx = mt_rd64(p);
			s->has_hw_idx = true;
			p += 8;
		}
		if (nr > (uint64_t)(end - p) / 24)
			return;
		s->brstack = p;
		s->brstack_nr = nr;
		p += nr * 24;
		if (pd->attrs[ai].branch_sample_type & MT_BRANCH_COUNTERS) {
			/* a u64 of counter occurrences per entry (Linux 6.8) */
			TAKE(nr * 8);
			s->brstack_cntr = p;
			p += nr * 8;
		}
	}
	s->has_stack = (st & (MT_SAMPLE_REGS_USER | MT_SAMPLE_STACK_USER)) == (MT_SAMPLE_REGS_USER | MT_SAMPLE_STACK_USER);
	if (st & MT_SAMPLE_REGS_USER) {
		TAKE(8);
		uint64_t abi = mt_rd64(p);
		p += 8;
		if (abi) {
			uint64_t mask = pd->attrs[ai].sample_regs_user;
			unsigned n = (unsigned)__builtin_popcountll(mask);
			TAKE(8 * (uint64_t)n);
			s->regs = p;
			s->regs_n = n;
			s->regs_mask = mask;
			p += 8 * n;
		}
	}
	if (st & MT_SAMPLE_STACK_USER) {
		TAKE(8);
		uint64_t size = mt_rd64(p);
		p += 8;
		if (size) {
			if (size > (uint64_t)(end - p))
				return;
			TAKE(size + 8);
			uint64_t dyn = mt_rd64(p + size);
			s->stack = p;
			s->stack_size = dyn < size ? dyn : size;
			p += size + 8;
		}
	}
#undef TAKE
}

static int take_pipe_header_record(struct mt_perfdata *pd, const struct mt_perf_record *rec, struct mt_err *err)
{
	if (rec->type == MT_REC_HEADER_ATTR) {
		if (pd->nattrs >= sizeof pd->attrs / sizeof pd->attrs[0])
			return mt_err_set(err, MT_EUNSUP, "%s: too many events (at most 64)", pd->name);
		if (rec->body_size < ATTR_MIN_SIZE)
			return mt_err_set(err, MT_EFORMAT, "%s: HEADER_ATTR too short at offset %llu",
					  pd->name, (unsigned long long)rec->offset);
		uint32_t asz = mt_rd32(rec->body + 4);
		if (asz == 0)
			asz = ATTR_MIN_SIZE;
		if (asz > rec->body_size)
			return mt_err_set(err, MT_EFORMAT, "%s: HEADER_ATTR attr.size %u exceeds record at offset %llu",
					  pd->name, asz, (unsigned long long)rec->offset);
		struct mt_perf_evattr *a = &pd->attrs[pd->nattrs++];
		parse_attr(a, rec->body, asz);
		a->ids = (const uint64_t *)(const void *)(rec->body + asz);
		a->nids = (rec->body_size - asz) / 8;
		if (a->sample_type & MT_SAMPLE_IDENTIFIER)
			pd->any_identifier = true;
		index_ids(pd);
	} else if (rec->type == MT_REC_HEADER_FEATURE && rec->body_size >= 8) {
		uint64_t bit = mt_rd64(rec->body);
		if (bit < 256) {
			pd->features[bit / 8] |= (uint8_t)(1u << (bit % 8));
			/* In pipe mode BUILD_ID arrives as HEADER_BUILD_ID records. */
			parse_feature(pd, (int)bit, rec->body + 8, rec->body_size - 8);
		}
	}
	return 0;
}

int mt_perfdata_next(struct mt_perfdata *pd, struct mt_perf_record *rec, struct mt_err *err)
{
	memset(rec, 0, sizeof *rec);
	rec->sid.attr_index = -1;
	if (pd->pos >= pd->data_end)
		return 0;
	if (pd->data_end - pd->pos < 8) {
		pd->truncated = true;
		return mt_err_set(err, MT_ETRUNC, "%s: record header truncated at offset %llu",
				  pd->name, (unsigned long long)pd->pos);
	}
	const uint8_t *h = pd->base + pd->pos;
	rec->type = mt_rd32(h);
	rec->misc = mt_rd16(h + 4);
	rec->size = mt_rd16(h + 6);
	rec->offset = pd->pos;
	if (rec->size < 8) {
		pd->truncated = true;
		return mt_err_set(err, MT_EFORMAT, "%s: corrupt record (size %u) at offset %llu",
				  pd->name, rec->size, (unsigned long long)pd->pos);
	}
	if (rec->size > pd->data_end - pd->pos) {
		pd->truncated = true;
		return mt_err_set(err, MT_ETRUNC, "%s: %s record truncated at offset %llu (%u bytes declared, %llu left)",
				  pd->name, mt_perf_record_name(rec->type), (unsigned long long)pd->pos, rec->size,
				  (unsigned long long)(pd->data_end - pd->pos));
	}
	rec->body = h + 8;
	rec->body_size = rec->size - 8u;
	pd->pos += rec->size;
	if (rec->type == MT_REC_AUXTRACE) {
		if (rec->body_size < 40) {
			pd->truncated = true;
			return mt_err_set(err, MT_EFORMAT, "%s: AUXTRACE record too short at offset %llu",
					  pd->name, (unsigned long long)rec->offset);
		}
		rec->aux_declared = mt_rd64(rec->body);
		rec->aux_data = pd->base + pd->pos;
		uint64_t left = pd->data_end - pd->pos;
		rec->aux_size = rec->aux_declared < left ? rec->aux_declared : left;
		pd->pos += rec->aux_size;
		if (rec->aux_size < rec->aux_declared)
			pd->truncated = true; /* caller decodes the partial payload, then sees the end */
	} else if (rec->type == MT_REC_SAMPLE) {
		parse_sample(pd, rec);
	} else if (rec->type < MT_REC_HEADER_ATTR) {
		parse_trailer(pd, rec);
	} else if (pd->pipe_mode && !pd->rewound) {
		int rc = take_pipe_header_record(pd, rec, err);
		if (rc)
			return rc;
	}
	return 1;
}

const struct mt_perf_evattr *mt_perfdata_attr_of(const struct mt_perfdata *pd,
						 const struct mt_perf_record *rec)
{
	if (pd->nattrs == 0)
		return NULL;
	return &pd->attrs[rec->sid.attr_index >= 0 ? rec->sid.attr_index : 0];
}

void mt_perfdata_rewind(struct mt_perfdata *pd)
{
	pd->pos = pd->data_off;
	pd->truncated = false;
	pd->rewound = true;
}

void mt_perfdata_release(const struct mt_perfdata *pd, const void *p, size_t len)
{
	if (!pd->mapped || !len)
		return;
	/* whole pages around the range: the mapping is read-only, so pages
	 * shared with data still wanted are simply read again when touched */
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), base = (uintptr_t)pd->base;
	uintptr_t a = (uintptr_t)p & ~(page - 1), b = ((uintptr_t)p + len + page - 1) & ~(page - 1);
	uintptr_t end = (base + pd->len + page - 1) & ~(page - 1);
	if (a < base)
		a = base; /* base is page-aligned (mmap) */
	if (b > end)
		b = end;
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

bool mt_perf_parse_mmap(const struct mt_perf_record *r, struct mt_perf_mmap *m)
{
	if (r->type != MT_REC_MMAP && r->type != MT_REC_MMAP2)
		return false;
	const uint8_t *b = r->body;
	size_t fo = r->type == MT_REC_MMAP ? 32 : 64, bs = r->body_size;
	if (bs <= fo)
		return false;
	const char *path = (const char *)b + fo;
	if (!memchr(path, 0, bs - fo))
		return false;
	*m = (struct mt_perf_mmap){.pid = mt_rd32(b), .tid = mt_rd32(b + 4), .start = mt_rd64(b + 8),
				   .len = mt_rd64(b + 16), .pgoff = mt_rd64(b + 24), .path = path, .exec = true};
	if (r->type == MT_REC_MMAP2 && (r->misc & MT_MISC_MMAP_BUILD_ID)) {
		m->bidsz = b[32] > 20 ? 20 : b[32];
		memcpy(m->bid, b + 36, m->bidsz);
	}
	if (r->type == MT_REC_MMAP2 && !(mt_rd32(b + 56) & 4))
		m->exec = false; /* no PROT_EXEC */
	if (r->type == MT_REC_MMAP && (r->misc & (1u << 13)))
		m->exec = false; /* MMAP_DATA */
	return true;
}

const char *mt_perf_record_name(uint32_t type)
{
	static const char *const kernel[] = {
		[MT_REC_MMAP] = "MMAP", [MT_REC_LOST] = "LOST", [MT_REC_COMM] = "COMM",
		[MT_REC_EXIT] = "EXIT", [MT_REC_THROTTLE] = "THROTTLE", [MT_REC_UNTHROTTLE] = "UNTHROTTLE",
		[MT_REC_FORK] = "FORK", [MT_REC_READ] = "READ", [MT_REC_SAMPLE] = "SAMPLE",
		[MT_REC_MMAP2] = "MMAP2", [MT_REC_AUX] = "AUX", [MT_REC_ITRACE_START] = "ITRACE_START",
		[MT_REC_LOST_SAMPLES] = "LOST_SAMPLES", [MT_REC_SWITCH] = "SWITCH",
		[MT_REC_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE", [MT_REC_NAMESPACES] = "NAMESPACES",
		[MT_REC_KSYMBOL] = "KSYMBOL", [MT_REC_BPF_EVENT] = "BPF_EVENT", [MT_REC_CGROUP] = "CGROUP",
		[MT_REC_TEXT_POKE] = "TEXT_POKE", [MT_REC_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
	};
	static const char *const user[] = {
		"HEADER_ATTR", "HEADER_EVENT_TYPE", "HEADER_TRACING_DATA", "HEADER_BUILD_ID",
		"FINISHED_ROUND", "ID_INDEX", "AUXTRACE_INFO", "AUXTRACE", "AUXTRACE_ERROR",
		"THREAD_MAP", "CPU_MAP", "STAT_CONFIG", "STAT", "STAT_ROUND", "EVENT_UPDATE",
		"TIME_CONV", "HEADER_FEATURE", "COMPRESSED", "FINISHED_INIT", "COMPRESSED2",
	};
	if (type < sizeof kernel / sizeof kernel[0] && kernel[type])
		return kernel[type];
	if (type >= 64 && type - 64 < sizeof user / sizeof user[0])
		return user[type - 64];
	return "UNKNOWN";
}
