/* Unit tests of the record memo (stream/recmemo.c) and its key compare
 * (stream/memohash.h); TAP output. Oracles: memcmp for the compare; the
 * memo's contract (recmemo.h), case by case: what was kept is found by its
 * bytes and string table alone, with its columns copied, anything else is
 * not, and the memo stands aside where records do not repeat. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stream/memohash.h"
#include "stream/recmemo.h"

#include "tap.h"

/* Looks key up and, on a miss, keeps ev for it, as the reader does. */
static const struct mt_recmemo_entry *seen(struct mt_recmemo *m, const uint8_t *key, size_t len,
					   const struct mt_event *ev)
{
	struct mt_recmemo_entry *keep;
	uint64_t hash;
	const struct mt_recmemo_entry *e = mt_recmemo_lookup(m, key, len, ev->strings_epoch, &keep, &hash);
	if (!e && keep)
		mt_recmemo_keep(keep, hash, key, len, ev, true);
	return e;
}

/* mt_memohash_same against memcmp: every length to 64, the bytes equal
 * and then each one changed in turn. */
static void test_same(void)
{
	uint8_t a[MT_MEMOHASH_MAX], b[MT_MEMOHASH_MAX];
	unsigned wrong = 0, pairs = 0;
	for (size_t n = 0; n <= MT_MEMOHASH_MAX; n++) {
		for (size_t i = 0; i < n; i++)
			a[i] = b[i] = (uint8_t)(i * 37 + n);
		for (size_t j = 0; j <= n; j++) {
			if (j < n)
				b[j] ^= 0x40;
			pairs++;
			wrong += mt_memohash_same(a, b, n) != !memcmp(a, b, n);
			if (j < n)
				b[j] ^= 0x40;
		}
	}
	char msg[96];
	snprintf(msg, sizeof msg, "key compare = memcmp on %u pairs, lengths 0 to 64 (%u differ)", pairs, wrong);
	ok(!wrong && pairs > 2000, msg);
}

static void test_keep_find(void)
{
	struct mt_recmemo m;
	mt_recmemo_init(&m);
	struct mt_kv kv[3] = {{"from_sym", "main"}, {"to_sym", "helper"}, {"flag", NULL}};
	struct mt_event ev = {.time = 77, .has_time = true, .pid = 5, .tid = 6, .cpu = -1, .kind = MT_EV_CALL,
			      .from = 0x1000, .to = 0x2000, .insn = 3, .offset = MT_NO_OFFSET, .extra = kv,
			      .nextra = 3, .strings_epoch = 9, .extra_id = 4};
	const uint8_t key[] = "\x10\x05\x18\x06\x20\x00\x28\x80\x20\x30\x80\x40\x40\x03\x72\x06\x01\x02\x03\x04\x05\x00";
	size_t len = sizeof key - 1;
	ok(!seen(&m, key, len, &ev), "a record not seen before is not found");
	kv[0].val = "changed"; /* the caller's columns change after: the kept ones do not */
	const struct mt_recmemo_entry *e = seen(&m, key, len, &ev);
	ok(e && e->ev.pid == 5 && e->ev.tid == 6 && e->ev.from == 0x1000 && e->ev.to == 0x2000 && e->ev.insn == 3 &&
		   e->ev.kind == MT_EV_CALL && !e->ev.has_time && e->ev.time == 0,
	   "a record seen before is found: its event, without the time");
	ok(e && e->ev.nextra == 3 && e->ev.extra == e->kv && !strcmp(e->kv[0].val, "main") &&
		   !strcmp(e->kv[1].key, "to_sym") && !e->kv[2].val,
	   "its columns are the memo's copy, as they were when kept");
	ok(e && e->ev.extra_id && e->ev.extra_id != 4, "its columns have an id of the memo's own");
	ok(e && m.found == 1, "the hit is counted");
	ok(!seen(&m, key, len - 1, &ev), "the same bytes but the last are not found");
	uint8_t other[sizeof key];
	memcpy(other, key, sizeof key);
	other[len - 2] ^= 1;
	ok(!seen(&m, other, len, &ev), "a byte changed is not found");
	struct mt_event later = ev;
	later.strings_epoch = 10;
	ok(!seen(&m, key, len, &later), "the same bytes with another string table are not found");
	mt_recmemo_fini(&m);
}

/* Three records of one set: the two used last stay. Keys found to share
 * a set by trying (the memo's hash). */
static void test_sets_of_two(void)
{
	struct mt_recmemo m;
	mt_recmemo_init(&m);
	struct mt_event ev = {.pid = 1, .tid = 1, .cpu = -1, .offset = MT_NO_OFFSET, .strings_epoch = 3};
	uint8_t keys[3][16];
	unsigned found = 0;
	uint64_t want = 0;
	for (uint32_t i = 0; found < 3 && i < 1000000; i++) {
		uint8_t k[16];
		memset(k, 0, sizeof k);
		memcpy(k, &i, sizeof i);
		uint64_t set = (mt_memohash(k, sizeof k) | 1) >> (64 - MT_RECMEMO_SLOT_BITS + 1);
		if (found == 0)
			want = set;
		if (set == want)
			memcpy(keys[found++], k, sizeof k);
	}
	ok(found == 3, "three keys of one set");
	seen(&m, keys[0], 16, &ev);
	seen(&m, keys[1], 16, &ev);
	bool both = seen(&m, keys[0], 16, &ev) && seen(&m, keys[1], 16, &ev);
	ok(both, "two records of one set are both kept");
	seen(&m, keys[2], 16, &ev); /* replaces keys[0], used longer ago */
	ok(seen(&m, keys[1], 16, &ev) && seen(&m, keys[2], 16, &ev) && !seen(&m, keys[0], 16, &ev),
	   "a third replaces the one not used last");
	mt_recmemo_fini(&m);
}

/* The entry that followed last time, tried first: a loop's records are
 * found by it; one that came after something else, or whose entry was
 * taken by other bytes since, is still found (or not) by its bytes. Keys
 * of one set as test_sets_of_two finds them. */
static void test_followed(void)
{
	struct mt_recmemo m;
	mt_recmemo_init(&m);
	struct mt_event ev = {.pid = 1, .tid = 1, .cpu = -1, .offset = MT_NO_OFFSET, .strings_epoch = 3};
	const uint8_t a[] = "record a", b[] = "record b", c[] = "record c";
	for (int round = 0; round < 3; round++) {
		seen(&m, a, 8, &ev);
		seen(&m, b, 8, &ev);
		seen(&m, c, 8, &ev);
	}
	ok(m.found == 6 && m.followed == 5, "a loop's records are found, each by the one before (the first by its hash)");
	seen(&m, a, 8, &ev);
	uint64_t before = m.followed;
	const struct mt_recmemo_entry *e = seen(&m, c, 8, &ev); /* after a came b: c by its hash */
	ok(e && e->len == 8 && !memcmp(e->key, c, 8) && m.followed == before,
	   "a record after another than last time is found by its hash");
	/* b's entry taken by two other records of its set: after a, the entry
	 * that followed a holds other bytes, and b is not found */
	uint8_t other[2][8];
	unsigned n = 0;
	uint64_t want = (mt_memohash(b, 8) | 1) >> (64 - MT_RECMEMO_SLOT_BITS + 1);
	for (uint32_t i = 0; n < 2 && i < 1000000; i++) {
		uint8_t k[8] = "x";
		memcpy(k + 4, &i, 4);
		if (((mt_memohash(k, 8) | 1) >> (64 - MT_RECMEMO_SLOT_BITS + 1)) == want)
			memcpy(other[n++], k, 8);
	}
	seen(&m, a, 8, &ev);
	seen(&m, b, 8, &ev); /* a then b again: b follows a */
	seen(&m, other[0], 8, &ev);
	seen(&m, other[1], 8, &ev);
	seen(&m, other[0], 8, &ev);
	seen(&m, other[1], 8, &ev); /* both kept: b's entry is one of theirs */
	seen(&m, a, 8, &ev);
	ok(n == 2 && !seen(&m, b, 8, &ev), "a record whose entry was taken since is not found");
	mt_recmemo_fini(&m);
}

static void test_limits_and_aside(void)
{
	struct mt_recmemo m;
	mt_recmemo_init(&m);
	struct mt_kv kv[MT_RECMEMO_KV + 1];
	for (unsigned i = 0; i <= MT_RECMEMO_KV; i++)
		kv[i] = (struct mt_kv){"k", "v"};
	struct mt_event ev = {.cpu = -1, .offset = MT_NO_OFFSET, .extra = kv, .nextra = MT_RECMEMO_KV + 1,
			      .strings_epoch = 1};
	const uint8_t key[] = "many columns";
	seen(&m, key, sizeof key - 1, &ev);
	ok(!seen(&m, key, sizeof key - 1, &ev), "an event with more columns than the memo keeps is not kept");
	ev.nextra = MT_RECMEMO_KV;
	seen(&m, key, sizeof key - 1, &ev);
	ok(seen(&m, key, sizeof key - 1, &ev) != NULL, "one with as many as it keeps is");
	/* records that never repeat: it stands aside for a while */
	unsigned skipped = 0;
	for (uint32_t i = 0; i < 3 * MT_RECMEMO_WINDOW; i++) {
		if (!mt_recmemo_active(&m)) {
			skipped++;
			continue;
		}
		uint8_t k[8];
		memcpy(k, &i, 4);
		memcpy(k + 4, &i, 4);
		seen(&m, k, sizeof k, &ev);
	}
	ok(skipped > 0, "records that do not repeat make it stand aside");
	mt_recmemo_fini(&m);
}

int main(void)
{
	test_same();
	test_keep_find();
	test_sets_of_two();
	test_followed();
	test_limits_and_aside();
	return tap_done();
}
