/*
 * Unit tests for the small parts of core/lib that had none: ferr (the
 * error a person reads: its format, its message and path limits), lru
 * (which slot of a small cache goes) and fclock (the clocks' units).
 * Expected texts are written out here from ferr.h's and lru.h's words.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#include "lib/fclock.h"
#include "lib/ferr.h"
#include "lib/lru.h"

static void test_format(void **state)
{
	struct ferr err = FERR_INIT;
	char buf[FERR_MESSAGE_MAX + 64];

	(void)state;
	assert_int_equal(ferr_set_at(&err, -EINVAL, 3, 7, "bad %s", "x"), -EINVAL);
	assert_string_equal(ferr_format(&err, buf, sizeof(buf)),
			    "line 3, column 7: bad x");
	err.column = 0;
	assert_string_equal(ferr_format(&err, buf, sizeof(buf)), "line 3: bad x");
	err.line = 0;
	err.column = 7;
	assert_string_equal(ferr_format(&err, buf, sizeof(buf)), "bad x");
	/* cut to the buffer, never past it */
	err.line = 12;
	assert_string_equal(ferr_format(&err, buf, 8), "line 12");
	assert_ptr_equal(ferr_format(&err, buf, 0), buf);
	ferr_clear(&err);
	assert_int_equal(err.line, 0);
	assert_string_equal(err.message, "");
	/* NULL: only the code */
	assert_int_equal(ferr_set(NULL, -ENOENT, "x"), -ENOENT);
	assert_int_equal(ferr_refuse(NULL, -EIO, "p", "x"), -EIO);
}

static void test_refuse(void **state)
{
	struct ferr err = FERR_INIT;

	(void)state;
	assert_int_equal(ferr_refuse(&err, -EINVAL, "rounds/2.json", "%d bytes",
				     5), -EINVAL);
	assert_string_equal(err.path, "rounds/2.json");
	assert_string_equal(err.message, "rounds/2.json: 5 bytes");
	assert_int_equal(ferr_refuse(&err, -EINVAL, "", "no path"), -EINVAL);
	assert_string_equal(err.path, "");
	assert_string_equal(err.message, "no path");
}

/* A message of FERR_MESSAGE_MAX - 1 bytes is kept whole ... */
static void test_message_at_limit(void **state)
{
	struct ferr err = FERR_INIT;
	char text[FERR_MESSAGE_MAX];

	(void)state;
	memset(text, 'm', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	ferr_set(&err, -EINVAL, "%s", text);
	assert_string_equal(err.message, text);
	memset(text, 'p', FERR_PATH_MAX - 1);
	text[FERR_PATH_MAX - 1] = '\0';
	ferr_set_path(&err, text);
	assert_string_equal(err.path, text);
}

/* ... one byte more is cut to that, the path too. */
static void test_message_past_limit(void **state)
{
	struct ferr err = FERR_INIT;
	char text[FERR_MESSAGE_MAX + 1];

	(void)state;
	memset(text, 'm', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	ferr_set(&err, -EINVAL, "%s", text);
	assert_int_equal(strlen(err.message), FERR_MESSAGE_MAX - 1);
	text[FERR_PATH_MAX] = '\0';
	ferr_set_path(&err, text);
	assert_int_equal(strlen(err.path), FERR_PATH_MAX - 1);
}

struct slot {
	int payload;
	struct lru_age age;
};

/* An empty slot first, then the least recently used. */
static void test_lru(void **state)
{
	struct slot s[4];
	uint64_t clock = 0;

	(void)state;
	memset(s, 0, sizeof(s));
	for (size_t i = 0; i < 4; i++) {
		size_t pick = lru_pick(&s[0].age, 4, sizeof(s[0]));

		assert_int_equal(pick, i);
		lru_touch(&s[pick].age, &clock);
	}
	assert_int_equal(clock, 4);
	assert_int_equal(lru_pick(&s[0].age, 4, sizeof(s[0])), 0);
	lru_touch(&s[0].age, &clock);
	assert_int_equal(lru_pick(&s[0].age, 4, sizeof(s[0])), 1);
	lru_touch(&s[2].age, &clock);
	lru_touch(&s[1].age, &clock);
	assert_int_equal(lru_pick(&s[0].age, 4, sizeof(s[0])), 3);
	lru_touch(&s[3].age, &clock);
	assert_int_equal(lru_pick(&s[0].age, 4, sizeof(s[0])), 0);
	/* one emptied is taken first */
	s[2].age.valid = false;
	assert_int_equal(lru_pick(&s[0].age, 4, sizeof(s[0])), 2);
}

/* The clocks in their units: ns and ms, as the system's clocks say. */
static void test_clocks(void **state)
{
	struct timespec before, after, until;
	int64_t now, ms;

	(void)state;
	clock_gettime(CLOCK_REALTIME, &before);
	now = fclock_now_ns();
	clock_gettime(CLOCK_REALTIME, &after);
	assert_true(now >= (int64_t)before.tv_sec * 1000000000 + before.tv_nsec);
	assert_true(now <= (int64_t)after.tv_sec * 1000000000 + after.tv_nsec);
	clock_gettime(CLOCK_MONOTONIC, &before);
	ms = fclock_mono_ms();
	until = fclock_mono_after(1999);
	clock_gettime(CLOCK_MONOTONIC, &after);
	assert_true(ms >= (int64_t)before.tv_sec * 1000 + before.tv_nsec / 1000000);
	assert_true(ms <= (int64_t)after.tv_sec * 1000 + after.tv_nsec / 1000000);
	assert_true(until.tv_nsec >= 0 && until.tv_nsec < 1000000000);
	{
		int64_t u = (int64_t)until.tv_sec * 1000000000 + until.tv_nsec;
		int64_t b = (int64_t)before.tv_sec * 1000000000 + before.tv_nsec;
		int64_t a = (int64_t)after.tv_sec * 1000000000 + after.tv_nsec;

		assert_true(u >= b + 1999000000LL && u <= a + 1999000000LL);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_refuse),
		cmocka_unit_test(test_message_at_limit),
		cmocka_unit_test(test_message_past_limit),
		cmocka_unit_test(test_lru),
		cmocka_unit_test(test_clocks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
