/*
 * Unit tests for utf8: every kind of sequence RFC 3629 allows and each
 * way of breaking one (the expected code points are the Unicode
 * standard's, written out here), and counting and offsets in code points.
 * fuzz_fname also checks utf8_valid (through fname_valid_utf8) against an
 * independent decoder.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "lib/utf8.h"

static void decodes(const char *s, size_t len, uint32_t want)
{
	uint32_t cp = 0;

	assert_int_equal(utf8_decode((const unsigned char *)s, strlen(s), &cp), len);
	assert_int_equal(cp, want);
}

static void refused(const char *s, size_t n)
{
	uint32_t cp;

	assert_int_equal(utf8_decode((const unsigned char *)s, n, &cp), 0);
	assert_false(utf8_valid(s, n));
}

static void test_decode(void **state)
{
	(void)state;
	decodes("A", 1, 0x41);
	decodes("\xc2\x80", 2, 0x80);
	decodes("\xc3\xa9", 2, 0xe9);			/* é */
	decodes("\xdf\xbf", 2, 0x7ff);
	decodes("\xe0\xa0\x80", 3, 0x800);
	decodes("\xe5\xb9\xb3", 3, 0x5e73);		/* 平 */
	decodes("\xed\x9f\xbf", 3, 0xd7ff);
	decodes("\xee\x80\x80", 3, 0xe000);
	decodes("\xef\xbf\xbd", 3, 0xfffd);
	decodes("\xf0\x90\x80\x80", 4, 0x10000);
	decodes("\xf0\x9f\x98\x80", 4, 0x1f600);	/* 😀 */
	decodes("\xf4\x8f\xbf\xbf", 4, 0x10ffff);
	refused("\x80", 1);				/* a continuation byte */
	refused("\xc0\x80", 2);				/* overlong NUL */
	refused("\xc1\xbf", 2);
	refused("\xe0\x9f\xbf", 3);			/* overlong */
	refused("\xed\xa0\x80", 3);			/* a surrogate */
	refused("\xed\xbf\xbf", 3);
	refused("\xf0\x8f\xbf\xbf", 4);			/* overlong */
	refused("\xf4\x90\x80\x80", 4);			/* above U+10FFFF */
	refused("\xf5\x80\x80\x80", 4);
	refused("\xff", 1);
	refused("\xe5\xb9", 2);				/* cut short */
	refused("\xe5\x41\xb3", 3);			/* not continued */
}

static void test_valid_count_offset(void **state)
{
	const char *s = "a\xc3\xa9\xe5\xb9\xb3\xf0\x9f\x98\x80z";	/* aé平😀z */
	size_t n = strlen(s);

	(void)state;
	assert_true(utf8_valid("", 0));
	assert_true(utf8_valid(s, n));
	/* a NUL is a valid code point: callers that refuse it say so */
	assert_true(utf8_valid("a\0b", 3));
	assert_false(utf8_valid(s, n - 2));		/* 😀 cut */
	assert_int_equal(utf8_count(s, n), 5);
	assert_int_equal(utf8_offset(s, n, 0), 0);
	assert_int_equal(utf8_offset(s, n, 1), 1);
	assert_int_equal(utf8_offset(s, n, 2), 3);
	assert_int_equal(utf8_offset(s, n, 3), 6);
	assert_int_equal(utf8_offset(s, n, 4), 10);
	assert_int_equal(utf8_offset(s, n, 5), n);
	assert_int_equal(utf8_offset(s, n, 99), n);
}

/* Points checked against Python's unicodedata.east_asian_width (W, F). */
static void test_width(void **state)
{
	static const struct { uint32_t c; int w; } cases[] = {
		{ 'a', 1 }, { 0xe9, 1 }, { 0x10ff, 1 }, { 0x1100, 2 },
		{ 0x115f, 2 }, { 0x1160, 1 }, { 0x231a, 2 }, { 0x231c, 1 },
		{ 0x3000, 2 }, { 0x4e2d, 2 }, { 0xac00, 2 }, { 0xff01, 2 },
		{ 0xff61, 1 }, { 0x1f680, 2 }, { 0x1f6ff, 1 }, { 0x1f300, 2 },
		{ 0x20000, 2 }, { 0x2a6df, 2 }, { 0x10ffff, 1 }, { 0, 1 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (utf8_width(cases[i].c) != cases[i].w)
			fail_msg("U+%04X: %d columns, not %d",
				 (unsigned)cases[i].c, utf8_width(cases[i].c),
				 cases[i].w);
}

/* utf8_cut: whole characters kept, bytes that are not UTF-8 cut where
 * asked (a log message of 0x80 bytes once came out empty). */
static void test_cut(void **state)
{
	const char *s = "ab\xe4\xb8\xad\xf0\x9f\x98\x80z";	/* ab, 中, 😀, z */
	size_t n = strlen(s);
	char junk[1100];

	(void)state;
	assert_int_equal(utf8_cut(s, n, 20), n);
	assert_int_equal(utf8_cut(s, n, n), n);
	assert_int_equal(utf8_cut(s, n, 2), 2);
	assert_int_equal(utf8_cut(s, n, 3), 2);
	assert_int_equal(utf8_cut(s, n, 4), 2);
	assert_int_equal(utf8_cut(s, n, 5), 5);
	assert_int_equal(utf8_cut(s, n, 8), 5);
	assert_int_equal(utf8_cut(s, n, 9), 9);
	assert_int_equal(utf8_cut(s, n, 0), 0);
	memset(junk, 0x80, sizeof(junk));
	assert_int_equal(utf8_cut(junk, sizeof(junk), 1024), 1024);
	/* stray continuation bytes: a byte cut */
	assert_int_equal(utf8_cut("ab\xe4\x41\xb8\xb8", 6, 4), 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_valid_count_offset),
		cmocka_unit_test(test_width),
		cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
