/* Unit tests for sbuf: growth, formatted output, NUL content, detach. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/sbuf.h"

static void test_init_is_empty_string(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct sbuf sb2;

	(void)state;
	assert_non_null(sb.buf);
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
	assert_int_equal(sb.alloc, 0);
	sbuf_init(&sb2);
	assert_ptr_equal(sb2.buf, sb.buf);
	/* setlen on the static buffer must not write to it */
	sbuf_setlen(&sb, 0);
	sbuf_reset(&sb);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sbuf_empty, "");
	sbuf_release(&sb);
	assert_int_equal(sb.alloc, 0);
}

static void test_growth(void **state)
{
	struct sbuf sb = SBUF_INIT;
	size_t total = 0;

	(void)state;
	/* Many small appends across several reallocations keep every byte. */
	for (int i = 0; i < 10000; i++) {
		char c = (char)('a' + i % 26);

		assert_int_equal(sbuf_addch(&sb, c), 0);
		total++;
		assert_int_equal(sb.len, total);
		assert_true(sb.alloc > sb.len);
		assert_int_equal(sb.buf[sb.len], '\0');
	}
	for (size_t i = 0; i < total; i++)
		assert_int_equal(sb.buf[i], 'a' + i % 26);

	/* one large append */
	{
		size_t n = 1 << 20;
		char *big = malloc(n);

		assert_non_null(big);
		memset(big, 'x', n);
		assert_int_equal(sbuf_add(&sb, big, n), 0);
		assert_int_equal(sb.len, total + n);
		assert_int_equal(sb.buf[sb.len], '\0');
		assert_memory_equal(sb.buf + total, big, n);
		free(big);
	}
	sbuf_release(&sb);
}

static void test_grow_reserves_room(void **state)
{
	struct sbuf sb = SBUF_INIT;
	char *before;

	(void)state;
	assert_int_equal(sbuf_addstr(&sb, "abc"), 0);
	assert_int_equal(sbuf_grow(&sb, 1000), 0);
	assert_true(sb.alloc >= sb.len + 1000 + 1);
	before = sb.buf;
	/* Room reserved: adding within it must not move the buffer. */
	for (int i = 0; i < 1000; i++)
		assert_int_equal(sbuf_addch(&sb, 'z'), 0);
	assert_ptr_equal(sb.buf, before);
	assert_int_equal(sb.len, 1003);
	assert_int_equal(sbuf_grow(&sb, SIZE_MAX), -ENOMEM);
	assert_int_equal(sbuf_grow(&sb, SIZE_MAX - sb.len), -ENOMEM);
	/* unchanged after -ENOMEM */
	assert_int_equal(sb.len, 1003);
	assert_memory_equal(sb.buf, "abcz", 4);
	sbuf_release(&sb);
}

static void test_addf(void **state)
{
	struct sbuf sb = SBUF_INIT;
	char expect[4096];
	char longarg[3000];

	(void)state;
	assert_int_equal(sbuf_addf(&sb, "%d-%s-%c", 42, "x", 'y'), 0);
	assert_string_equal(sb.buf, "42-x-y");
	assert_int_equal(sb.len, 6);
	assert_int_equal(sbuf_addf(&sb, "%s", ""), 0);
	assert_int_equal(sb.len, 6);
	memset(longarg, 'q', sizeof(longarg) - 1);
	longarg[sizeof(longarg) - 1] = '\0';
	/* longer than any first allocation: exercises vsnprintf twice */
	assert_int_equal(sbuf_addf(&sb, "[%s]%05d", longarg, 7), 0);
	snprintf(expect, sizeof(expect), "42-x-y[%s]%05d", longarg, 7);
	assert_string_equal(sb.buf, expect);
	assert_int_equal(sb.len, strlen(expect));
	sbuf_release(&sb);
}

static void test_nul_content(void **state)
{
	struct sbuf sb = SBUF_INIT;
	static const char data[] = { 'a', '\0', 'b', '\0', '\0', 'c' };

	(void)state;
	assert_int_equal(sbuf_add(&sb, data, sizeof(data)), 0);
	assert_int_equal(sb.len, sizeof(data));
	assert_memory_equal(sb.buf, data, sizeof(data));
	assert_int_equal(sb.buf[sb.len], '\0');
	assert_int_equal(sbuf_addch(&sb, '\0'), 0);
	assert_int_equal(sb.len, sizeof(data) + 1);
	assert_int_equal(sbuf_addstr(&sb, "tail"), 0);
	assert_int_equal(sb.len, sizeof(data) + 5);
	assert_memory_equal(sb.buf + sizeof(data) + 1, "tail", 5);
	sbuf_setlen(&sb, 2);
	assert_int_equal(sb.len, 2);
	assert_int_equal(sb.buf[2], '\0');
	assert_memory_equal(sb.buf, "a\0", 3);
	sbuf_release(&sb);
}

static void test_add_zero_len(void **state)
{
	struct sbuf sb = SBUF_INIT;

	(void)state;
	assert_int_equal(sbuf_add(&sb, "", 0), 0);
	assert_int_equal(sbuf_addstr(&sb, ""), 0);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb.buf, "");
	sbuf_release(&sb);
}

static void test_detach(void **state)
{
	struct sbuf sb = SBUF_INIT;
	size_t len = 99;
	char *p;

	(void)state;
	/* Detaching a never-allocated buffer still gives a free()able "". */
	p = sbuf_detach(&sb, &len);
	assert_non_null(p);
	assert_ptr_not_equal(p, sbuf_empty);
	assert_int_equal(len, 0);
	assert_string_equal(p, "");
	free(p);

	assert_int_equal(sbuf_add(&sb, "he\0llo", 6), 0);
	p = sbuf_detach(&sb, &len);
	assert_int_equal(len, 6);
	assert_memory_equal(p, "he\0llo", 7);
	/* the sbuf is empty and usable again */
	assert_int_equal(sb.len, 0);
	assert_int_equal(sb.alloc, 0);
	assert_string_equal(sb.buf, "");
	assert_int_equal(sbuf_addstr(&sb, "again"), 0);
	assert_string_equal(sb.buf, "again");
	assert_ptr_not_equal(sb.buf, p);
	free(p);
	p = sbuf_detach(&sb, NULL);
	assert_string_equal(p, "again");
	free(p);
	sbuf_release(&sb);
}

static void test_release_reuse(void **state)
{
	struct sbuf sb = SBUF_INIT;

	(void)state;
	for (int round = 0; round < 3; round++) {
		assert_int_equal(sbuf_addf(&sb, "round %d", round), 0);
		assert_int_equal(sbuf_add(&sb, "0123456789", 10), 0);
		assert_true(sb.alloc > 0);
		sbuf_release(&sb);
		assert_int_equal(sb.len, 0);
		assert_int_equal(sb.alloc, 0);
		assert_string_equal(sb.buf, "");
	}
	/* release twice is fine */
	sbuf_release(&sb);
	/* reset keeps the memory, empties the content */
	assert_int_equal(sbuf_addstr(&sb, "abc"), 0);
	sbuf_reset(&sb);
	assert_int_equal(sb.len, 0);
	assert_string_equal(sb.buf, "");
	assert_true(sb.alloc > 0);
	assert_int_equal(sbuf_addstr(&sb, "d"), 0);
	assert_string_equal(sb.buf, "d");
	sbuf_release(&sb);
}

/* sbuf_read appends everything, across its 64 KiB steps, NULs included */
static void test_read_stream(void **state)
{
	size_t n = 200000;
	char *data = malloc(n);
	struct sbuf sb = SBUF_INIT;
	FILE *f = tmpfile();

	(void)state;
	assert_non_null(data);
	assert_non_null(f);
	for (size_t i = 0; i < n; i++)
		data[i] = (char)(i * 7 % 251);
	assert_int_equal(fwrite(data, 1, n, f), n);
	rewind(f);
	assert_int_equal(sbuf_addstr(&sb, "head"), 0);
	assert_int_equal(sbuf_read(&sb, f), 0);
	assert_int_equal(sb.len, 4 + n);
	assert_memory_equal(sb.buf, "head", 4);
	assert_memory_equal(sb.buf + 4, data, n);
	assert_int_equal(sb.buf[sb.len], '\0');
	/* at the end: nothing more, no error */
	assert_int_equal(sbuf_read(&sb, f), 0);
	assert_int_equal(sb.len, 4 + n);
	fclose(f);
	/* a stream that cannot be read */
	f = fopen("/dev/null", "w");
	assert_non_null(f);
	assert_int_equal(sbuf_read(&sb, f), -EIO);
	fclose(f);
	sbuf_release(&sb);
	free(data);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_init_is_empty_string),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_grow_reserves_room),
		cmocka_unit_test(test_addf),
		cmocka_unit_test(test_nul_content),
		cmocka_unit_test(test_add_zero_len),
		cmocka_unit_test(test_detach),
		cmocka_unit_test(test_release_reuse),
		cmocka_unit_test(test_read_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
