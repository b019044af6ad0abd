/*
 * Unit tests for fs/cache: the render cache keeps content by key (what,
 * session, version), one slot a session and kind, the least recently used
 * out first, within a byte budget; a removed session's content goes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "cache.h"

static const char kind_a, kind_b;

static struct fs_cache_key key(const void *what, int64_t session,
			       int64_t version)
{
	return (struct fs_cache_key){ .what = what, .session = session,
				      .version = { version, 0, 0, 7 } };
}

/* Keep `text` as key k; the slot. */
static struct fs_cache_slot *keep(struct fs_cache *c, struct fs_cache_key k,
				  const char *text)
{
	struct sbuf s = SBUF_INIT;
	struct fs_cache_slot *slot;

	assert_int_equal(sbuf_addstr(&s, text), 0);
	slot = fs_cache_keep(c, &k, &s, 42, 0);
	assert_non_null(slot);
	assert_int_equal(s.len, 0);	/* taken */
	sbuf_release(&s);
	return slot;
}

static void expect_hit(struct fs_cache *c, struct fs_cache_key k,
		       const char *text)
{
	struct fs_cache_slot *slot = fs_cache_find(c, &k);

	assert_non_null(slot);
	assert_string_equal(slot->content.buf, text);
	assert_int_equal(slot->mtime_ns, 42);
}

static void expect_miss(struct fs_cache *c, struct fs_cache_key k)
{
	assert_null(fs_cache_find(c, &k));
}

static void test_key(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	expect_miss(&c, key(&kind_a, 1, 1));
	keep(&c, key(&kind_a, 1, 1), "a1");
	expect_hit(&c, key(&kind_a, 1, 1), "a1");
	/* every field of the key counts */
	expect_miss(&c, key(&kind_b, 1, 1));
	expect_miss(&c, key(&kind_a, 2, 1));
	expect_miss(&c, key(&kind_a, 1, 2));
	{
		struct fs_cache_key k = key(&kind_a, 1, 1);

		k.version[3]++;
		expect_miss(&c, k);
	}
	assert_int_equal(c.hits, 1);
	assert_int_equal(c.misses, 5);
	fs_cache_release(&c);
}

static void test_a_new_version_replaces_the_old(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	keep(&c, key(&kind_a, 1, 1), "old");
	keep(&c, key(&kind_b, 1, 1), "other kind");
	keep(&c, key(&kind_a, 1, 2), "new");
	expect_miss(&c, key(&kind_a, 1, 1));
	expect_hit(&c, key(&kind_a, 1, 2), "new");
	expect_hit(&c, key(&kind_b, 1, 1), "other kind");
	{
		int used = 0;

		for (int i = 0; i < FS_CACHE_SLOTS; i++)
			used += c.slot[i].age.valid;
		assert_int_equal(used, 2);
	}
	assert_int_equal(c.bytes, strlen("new") + strlen("other kind"));
	fs_cache_release(&c);
	assert_int_equal(c.bytes, 0);
}

static void test_least_recently_used_goes(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	for (int s = 1; s <= FS_CACHE_SLOTS; s++)
		keep(&c, key(&kind_a, s, 1), "x");
	/* session 1 used again: session 2 is the oldest now */
	expect_hit(&c, key(&kind_a, 1, 1), "x");
	keep(&c, key(&kind_a, 100, 1), "y");
	expect_miss(&c, key(&kind_a, 2, 1));
	expect_hit(&c, key(&kind_a, 1, 1), "x");
	expect_hit(&c, key(&kind_a, 100, 1), "y");
	fs_cache_release(&c);
}

static void test_byte_budget(void **state)
{
	struct fs_cache c = { 0 };
	struct fs_cache_key k = key(&kind_a, 9, 1);
	struct sbuf big = SBUF_INIT, half = SBUF_INIT;

	(void)state;
	keep(&c, key(&kind_a, 1, 1), "small");
	/* too big to keep at all: the caller keeps it */
	assert_int_equal(sbuf_grow(&big, FS_CACHE_BYTES + 1), 0);
	memset(big.buf, 'b', FS_CACHE_BYTES + 1);
	sbuf_setlen(&big, FS_CACHE_BYTES + 1);
	assert_null(fs_cache_keep(&c, &k, &big, 0, 0));
	assert_int_equal(big.len, FS_CACHE_BYTES + 1);
	expect_hit(&c, key(&kind_a, 1, 1), "small");
	/* two halves and a bit: the older half goes, then the small one
	 * only if still needed */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sbuf_add(&half, big.buf, FS_CACHE_BYTES / 2),
				 0);
		k = key(&kind_a, 20 + i, 1);
		assert_non_null(fs_cache_keep(&c, &k, &half, 0, 0));
	}
	assert_true(c.bytes <= FS_CACHE_BYTES);
	expect_miss(&c, key(&kind_a, 1, 1));	/* the oldest went first */
	assert_int_equal(sbuf_add(&half, big.buf, FS_CACHE_BYTES / 2), 0);
	k = key(&kind_a, 22, 1);
	assert_non_null(fs_cache_keep(&c, &k, &half, 0, 0));
	assert_true(c.bytes <= FS_CACHE_BYTES);
	expect_miss(&c, key(&kind_a, 20, 1));
	assert_non_null(fs_cache_find(&c, &(struct fs_cache_key){
		.what = &kind_a, .session = 21, .version = { 1, 0, 0, 7 } }));
	sbuf_release(&big);
	sbuf_release(&half);
	fs_cache_release(&c);
}

/* Sixteen versions, one per slot, are all kept ... */
static void test_slots_at_16(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	for (int s = 1; s <= FS_CACHE_SLOTS; s++)
		keep(&c, key(&kind_a, s, 1), "x");
	for (int s = 1; s <= FS_CACHE_SLOTS; s++)
		expect_hit(&c, key(&kind_a, s, 1), "x");
	fs_cache_release(&c);
}

/* ... a seventeenth pushes the least recently used out. */
static void test_slots_past_16(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	for (int s = 1; s <= FS_CACHE_SLOTS + 1; s++)
		keep(&c, key(&kind_a, s, 1), "x");
	expect_miss(&c, key(&kind_a, 1, 1));
	for (int s = 2; s <= FS_CACHE_SLOTS + 1; s++)
		expect_hit(&c, key(&kind_a, s, 1), "x");
	fs_cache_release(&c);
}

/* Copies of 48 MiB together are all kept ... */
static void test_bytes_at_48_mib(void **state)
{
	struct fs_cache c = { 0 };
	struct fs_cache_key k;
	struct sbuf part = SBUF_INIT;

	(void)state;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(sbuf_grow(&part, FS_CACHE_BYTES / 2), 0);
		memset(part.buf, 'a' + i, FS_CACHE_BYTES / 2);
		sbuf_setlen(&part, FS_CACHE_BYTES / 2);
		k = key(&kind_a, 1 + i, 1);
		assert_non_null(fs_cache_keep(&c, &k, &part, 0, 0));
	}
	assert_int_equal(c.bytes, FS_CACHE_BYTES);
	assert_non_null(fs_cache_find(&c, &(struct fs_cache_key){
		.what = &kind_a, .session = 1, .version = { 1, 0, 0, 7 } }));
	assert_non_null(fs_cache_find(&c, &(struct fs_cache_key){
		.what = &kind_a, .session = 2, .version = { 1, 0, 0, 7 } }));
	/* and one copy of 48 MiB alone */
	fs_cache_release(&c);
	assert_int_equal(sbuf_grow(&part, FS_CACHE_BYTES), 0);
	memset(part.buf, 'c', FS_CACHE_BYTES);
	sbuf_setlen(&part, FS_CACHE_BYTES);
	k = key(&kind_a, 3, 1);
	assert_non_null(fs_cache_keep(&c, &k, &part, 0, 0));
	assert_int_equal(c.bytes, FS_CACHE_BYTES);
	sbuf_release(&part);
	fs_cache_release(&c);
}

/* ... one byte more, and the older goes. */
static void test_bytes_past_48_mib(void **state)
{
	struct fs_cache c = { 0 };
	struct fs_cache_key k;
	struct sbuf part = SBUF_INIT;

	(void)state;
	for (int i = 0; i < 2; i++) {
		size_t len = FS_CACHE_BYTES / 2 + (size_t)i;

		assert_int_equal(sbuf_grow(&part, len), 0);
		memset(part.buf, 'a' + i, len);
		sbuf_setlen(&part, len);
		k = key(&kind_a, 1 + i, 1);
		assert_non_null(fs_cache_keep(&c, &k, &part, 0, 0));
	}
	assert_int_equal(c.bytes, FS_CACHE_BYTES / 2 + 1);
	assert_null(fs_cache_find(&c, &(struct fs_cache_key){
		.what = &kind_a, .session = 1, .version = { 1, 0, 0, 7 } }));
	sbuf_release(&part);
	fs_cache_release(&c);
}

static void test_forget(void **state)
{
	struct fs_cache c = { 0 };

	(void)state;
	keep(&c, key(&kind_a, 1, 1), "a");
	keep(&c, key(&kind_b, 1, 1), "b");
	keep(&c, key(&kind_a, 2, 1), "c");
	fs_cache_forget(&c, 1);
	expect_miss(&c, key(&kind_a, 1, 1));
	expect_miss(&c, key(&kind_b, 1, 1));
	expect_hit(&c, key(&kind_a, 2, 1), "c");
	assert_int_equal(c.bytes, 1);
	fs_cache_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key),
		cmocka_unit_test(test_a_new_version_replaces_the_old),
		cmocka_unit_test(test_least_recently_used_goes),
		cmocka_unit_test(test_byte_budget),
		cmocka_unit_test(test_slots_at_16),
		cmocka_unit_test(test_slots_past_16),
		cmocka_unit_test(test_bytes_at_48_mib),
		cmocka_unit_test(test_bytes_past_48_mib),
		cmocka_unit_test(test_forget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
