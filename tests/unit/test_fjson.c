/*
 * Unit tests for fjson.  Every expected serialization below was printed by
 * Python 3.11's json.dumps(obj, indent=2, ensure_ascii=False) for the same
 * object (floats given as hex literals so both sides hold the same double);
 * expected error positions are Python's json.loads positions where its idea
 * of the offending token is the same as ours.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"

static void assert_dumps(json_t *v, const char *expected)
{
	char *s;

	assert_non_null(v);
	s = fjson_dumps(v);
	assert_non_null(s);
	assert_string_equal(s, expected);
	free(s);
	json_decref(v);
}

/* Parse `text`, dump it, compare with Python's output for the same text. */
static void assert_roundtrip(const char *text, const char *expected)
{
	struct ferr err = FERR_INIT;
	json_t *v = NULL;

	if (fjson_parse(&v, text, strlen(text), &err) < 0)
		fail_msg("%s: %s", text, err.message);
	assert_dumps(v, expected);
}

static void test_reals(void **state)
{
	static const struct {
		double d;
		const char *py;
	} cases[] = {
		{ 0x1.999999999999ap-4, "0.1" },
		{ 0x1.1c37937e08000p+53, "1e+16" },
		{ 0x1.4f8b588e368f1p-17, "1e-05" },
		{ 0x0.0000000000001p-1022, "5e-324" },
		{ 0x1.fffffffffffffp+1023, "1.7976931348623157e+308" },
		{ -0x0.0p+0, "-0.0" },
		{ 0x0.0p+0, "0.0" },
		{ 0x1.0f0cf064dd592p+73, "1e+22" },
		{ 0x1.d6f34547df3b6p+26, "123456789.123" },
		{ 0x1.a36e2eb1c432dp-14, "0.0001" },
		{ 0x1.18b54f22aeb00p+50, "1234567890123456.0" },
		{ 0x1.aa535d3d0c000p+53, "1.5e+16" },
		{ 0x1.7e43c8800759cp+996, "1e+300" },
		{ 0x1.8000000000000p+2, "6.0" },
		{ 0x1.0000000000000p-1022, "2.2250738585072014e-308" },
		{ 0x1.ad7f29abcaf48p-24, "1e-07" },
		{ 0x1.3333333333333p-2, "0.3" },
		{ 0x1.5555555555555p-1, "0.6666666666666666" },
		{ 0x1.9000000000000p+6, "100.0" },
		{ 0x1.c6bf526340000p+49, "1000000000000000.0" },
		{ 0x1.5ee2a2eb5a5c4p+53, "1.2345678901234568e+16" },
		{ -0x1.01297d23ab683p-996, "-1.5e-300" },
		{ 0x1.1666666666666p+2, "4.35" },
		{ 0x1.52d02c7e14af6p+76, "1e+23" },
		{ 0x0.05c0ab9347ed7p-1022, "5e-310" },
		{ 0x1.a36e2eb1c432dp-16, "2.5e-05" },
		{ 0x1.1c37937e07fffp+53, "9999999999999998.0" },
		{ 0x1.a36371ea531a8p-14, "9.999e-05" },
		{ 0x1.c92d503f699ccp-999, "3.3333333333333334e-301" },
		{ 0x0.0000000000003p-1022, "1.5e-323" },
		{ 0x0.8d83aff3e96b1p-1022, "1.23e-308" },
		{ 0x1.199999999999ap+0, "1.1" },
		{ 0x1.80d43de9cc603p-31, "7e-10" },
		{ 0x1.0000000000000p+63, "9.223372036854776e+18" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_dumps(json_real(cases[i].d), cases[i].py);
}

static void test_integers(void **state)
{
	(void)state;
	assert_dumps(json_integer(0), "0");
	assert_dumps(json_integer(-1), "-1");
	assert_dumps(json_integer(INT64_MAX), "9223372036854775807");
	assert_dumps(json_integer(INT64_MIN), "-9223372036854775808");
	/* JSON "-0" is the integer 0; "1E2" is a real. */
	assert_roundtrip("[-0, 1E2, 0e0, -0.0, 1.0]",
			 "[\n  0,\n  100.0,\n  0.0,\n  -0.0,\n  1.0\n]");
}

static void test_strings(void **state)
{
	static const char raw[] =
		"\x00\x01\x1f\x7f\xe2\x80\xa8\"\\\n\t\b\f\r/\xc3\xa9"
		"\xf0\x9f\x98\x80";
	static const char py[] =
		"\"\\u0000\\u0001\\u001f\x7f\xe2\x80\xa8\\\"\\\\\\n\\t\\b\\f"
		"\\r/\xc3\xa9\xf0\x9f\x98\x80\"";

	(void)state;
	assert_dumps(json_stringn(raw, sizeof(raw) - 1), py);
	assert_dumps(json_string(""), "\"\"");
	/* \u escapes and surrogate pairs come out as raw UTF-8. */
	assert_roundtrip("\"\\u00e9\\ud83d\\ude00\\/\\u000b\\u001F\"",
			 "\"\xc3\xa9\xf0\x9f\x98\x80/\\u000b\\u001f\"");
}

static void test_keys_escaped(void **state)
{
	json_t *o = json_object();

	(void)state;
	json_object_setn_new(o, "a\0b", 3, json_true());
	json_object_set_new(o, "\"\n", json_null());
	assert_dumps(o, "{\n  \"a\\u0000b\": true,\n  \"\\\"\\n\": null\n}");
}

static void test_nesting(void **state)
{
	(void)state;
	assert_roundtrip(
		"{\"name\":\"x\",\"list\":[1,[],{},{\"a\":[true,false,null]}],"
		"\"e\":{}, \"f\":[2.5,-3]}",
		"{\n  \"name\": \"x\",\n  \"list\": [\n    1,\n    [],\n    {},"
		"\n    {\n      \"a\": [\n        true,\n        false,\n"
		"        null\n      ]\n    }\n  ],\n  \"e\": {},\n  \"f\": [\n"
		"    2.5,\n    -3\n  ]\n}");
	assert_roundtrip("[]", "[]");
	assert_roundtrip(" {\n} ", "{}");
	assert_roundtrip("[[[]]]", "[\n  [\n    []\n  ]\n]");
	assert_roundtrip("null", "null");
	assert_roundtrip("\t\"x\"\r\n", "\"x\"");
}

static void test_duplicate_keys(void **state)
{
	(void)state;
	/* Python: last value wins, the key keeps its first position. */
	assert_roundtrip("{\"b\": 1, \"a\": 2, \"b\": 3}",
			 "{\n  \"b\": 3,\n  \"a\": 2\n}");
}

static void test_dump_appends_and_restores(void **state)
{
	struct sbuf sb = SBUF_INIT;
	json_t *deep = json_array(), *inner = deep;
	int i;

	(void)state;
	assert_int_equal(sbuf_addstr(&sb, "x = "), 0);
	assert_int_equal(fjson_dump(&sb, json_true()), 0);
	assert_string_equal(sb.buf, "x = true");

	/* Too deep to read back: refused, nothing appended. */
	for (i = 0; i < 3000; i++) {
		json_t *a = json_array();

		json_array_append_new(inner, a);
		inner = a;
	}
	assert_int_equal(fjson_dump(&sb, deep), -EINVAL);
	assert_string_equal(sb.buf, "x = true");
	assert_int_equal(sb.len, 8);
	assert_int_equal(fjson_dump(&sb, NULL), -EINVAL);
	assert_null(fjson_dumps(NULL));
	json_decref(deep);
	sbuf_release(&sb);
}

/* Whatever the parser accepts, the writer writes: same depth limit. */
static void test_depth_limit(void **state)
{
	struct ferr err = FERR_INIT;
	struct sbuf text = SBUF_INIT, out = SBUF_INIT;
	json_t *v = NULL;
	int i;

	(void)state;
	for (i = 0; i < 2048; i++)
		sbuf_addch(&text, '[');
	for (i = 0; i < 2048; i++)
		sbuf_addch(&text, ']');
	assert_int_equal(fjson_parse(&v, text.buf, text.len, &err), 0);
	assert_int_equal(fjson_dump(&out, v), 0);
	json_decref(v);
	assert_int_equal(fjson_parse(&v, out.buf, out.len, &err), 0);
	json_decref(v);

	sbuf_reset(&text);
	for (i = 0; i < 2049; i++)
		sbuf_addch(&text, '[');
	assert_int_equal(fjson_parse(&v, text.buf, text.len, &err), -EINVAL);
	assert_null(v);
	assert_non_null(strstr(err.message, "nested too deeply"));
	sbuf_release(&text);
	sbuf_release(&out);
}

/* A value `depth` arrays deep, built (not parsed). */
static json_t *nested(int depth)
{
	json_t *v = json_array();

	for (int i = 1; i < depth; i++) {
		json_t *outer = json_array();

		assert_int_equal(json_array_append_new(outer, v), 0);
		v = outer;
	}
	return v;
}

/* The writer writes FJSON_MAX_DEPTH (2048) levels ... */
static void test_dump_depth_at_limit(void **state)
{
	struct sbuf out = SBUF_INIT;
	json_t *v = nested(2048);
	size_t open = 0;

	(void)state;
	assert_int_equal(fjson_dump(&out, v), 0);
	for (size_t i = 0; i < out.len; i++)
		open += out.buf[i] == '[';
	assert_int_equal(open, 2048);
	json_decref(v);
	sbuf_release(&out);
}

/* ... and refuses one more, leaving `out` as it was. */
static void test_dump_depth_past_limit(void **state)
{
	struct sbuf out = SBUF_INIT;
	json_t *v = nested(2049);

	(void)state;
	assert_int_equal(sbuf_addstr(&out, "kept"), 0);
	assert_int_equal(fjson_dump(&out, v), -EINVAL);
	assert_string_equal(out.buf, "kept");
	json_decref(v);
	sbuf_release(&out);
}

static void test_parse_errors(void **state)
{
	static const struct {
		const char *text;
		int line, column;
		const char *message;	/* a part of it */
	} cases[] = {
		/* positions as Python's json.loads reports them */
		{ "{\"a\": 1 \"b\": 2}", 1, 9, "expected ',' or '}'" },
		{ "{\n  \"a\": 1,\n  \"b\" 2\n}", 3, 7, "expected ':'" },
		{ "[1 2]", 1, 4, "expected ',' or ']'" },
		{ "[1,]", 1, 4, "no comma may come before ']'" },
		{ "[,1]", 1, 2, "expected a value, found ','" },
		{ "{\"a\":1,}", 1, 8, "no comma may come before '}'" },
		{ "{a:1}", 1, 2, "expected an object key" },
		{ "{\"a\":}", 1, 6, "expected a value, found '}'" },
		{ "[tru]", 1, 2, "'tru' is not a JSON value" },
		{ "[1] x", 1, 5, "unexpected 'x' after the end" },
		{ "{\"a\":1", 1, 7, "ends before the object is closed" },
		{ "[1,\n\n", 3, 1, "ends before the array is closed" },
		{ "\"abc", 1, 1, "never closed" },
		{ "\"a\\x\"", 1, 3, "invalid escape '\\x'" },
		{ "\"\tx\"", 1, 2, "control character 0x09" },
		{ "\"ab\ncd\"", 1, 4, "line break inside a string" },
		{ "[\"\xc3\xa9\", 1 2]", 1, 9, "expected ',' or ']'" },
		{ "[\n  \"a\xc3\xa9\",\n  @]", 3, 3, "unexpected character '@'" },
		{ "\xef\xbb\xbf[1]", 1, 1, "byte order mark" },
		/* positions of the offending token's first character */
		{ "[01]", 1, 2, "invalid number '01'" },
		{ "[NaN]", 1, 2, "'NaN' is not a JSON value" },
		{ "{'a': 1}", 1, 2, "expected an object key" },
		{ "[\"\\ud800\"]", 1, 2, "surrogate" },
		{ "[1, 12345678901234567890]", 1, 5,
		  "integer 12345678901234567890 is out of range" },
		{ "-9223372036854775809", 1, 1,
		  "integer -9223372036854775809 is out of range" },
		{ "[1e400]", 1, 2, "number 1e400 is too large" },
		{ "{\"a\\u0000\": 1}", 1, 2, "must not contain \\u0000" },
		{ "[\"\xff\"]", 1, 3, "not valid UTF-8 (byte 0xff)" },
		{ "[\"\xc3\xa9\xc3\"]", 1, 4, "not valid UTF-8 (byte 0xc3)" },
		{ "\"\xed\xa0\x80\"", 1, 2, "not valid UTF-8" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ferr err = FERR_INIT;
		json_t *v = json_true();
		int ret;

		ret = fjson_parse(&v, cases[i].text, strlen(cases[i].text),
				  &err);
		if (ret != -EINVAL || v ||
		    err.line != cases[i].line ||
		    err.column != cases[i].column ||
		    !strstr(err.message, cases[i].message))
			fail_msg("%s: got %d, line %d, column %d: %s",
				 cases[i].text, ret, err.line, err.column,
				 err.message);
	}
}

static void test_parse_special(void **state)
{
	struct ferr err = FERR_INIT;
	json_t *v = NULL;
	char buf[FERR_MESSAGE_MAX + 64];
	const char *text;

	(void)state;
	/* Positions as Python's json.loads reports them: "Expecting value:
	 * line 1 column 1 (char 0)" and "line 2 column 4 (char 5)". */
	assert_int_equal(fjson_parse(&v, "", 0, &err), -EINVAL);
	assert_string_equal(err.message, "the document is empty");
	assert_int_equal(err.line, 1);
	assert_int_equal(err.column, 1);
	assert_int_equal(fjson_parse(&v, " \n\t\r ", 5, &err), -EINVAL);
	assert_string_equal(err.message, "the document is empty");
	assert_string_equal(ferr_format(&err, buf, sizeof(buf)),
			    "line 2, column 4: the document is empty");

	/* A raw NUL byte is never JSON; jansson would read it as the end. */
	assert_int_equal(fjson_parse(&v, "[1]\0", 4, &err), -EINVAL);
	assert_int_equal(err.column, 4);
	assert_non_null(strstr(err.message, "NUL byte"));
	assert_int_equal(fjson_parse(&v, "[\"a\0\"]", 6, &err), -EINVAL);
	assert_int_equal(err.column, 4);
	/* ... and would skip it after a number. */
	assert_int_equal(fjson_parse(&v, "[-744\0,5]", 9, &err), -EINVAL);
	assert_null(v);
	assert_int_equal(err.column, 6);
	/* An error before the NUL is reported first. */
	assert_int_equal(fjson_parse(&v, "[1 2\0]", 6, &err), -EINVAL);
	assert_string_equal(err.message, "expected ',' or ']'");

	/* Length is honoured: no NUL terminator needed, none read past. */
	assert_int_equal(fjson_parse(&v, "[1]garbage", 3, &err), 0);
	assert_int_equal(json_array_size(v), 1);
	json_decref(v);

	/* \u0000 inside strings is kept. */
	assert_int_equal(fjson_parse(&v, "\"a\\u0000b\"", 10, &err), 0);
	assert_int_equal(json_string_length(v), 3);
	assert_memory_equal(json_string_value(v), "a\0b", 3);
	json_decref(v);

	/* The extremes of int64 are fine. */
	text = "[-9223372036854775808, 9223372036854775807]";
	assert_int_equal(fjson_parse(&v, text, strlen(text), &err), 0);
	assert_true(json_integer_value(json_array_get(v, 0)) == INT64_MIN);
	assert_true(json_integer_value(json_array_get(v, 1)) == INT64_MAX);
	json_decref(v);

	/* NULL err is allowed. */
	assert_int_equal(fjson_parse(&v, "[", 1, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_keys_escaped),
		cmocka_unit_test(test_nesting),
		cmocka_unit_test(test_duplicate_keys),
		cmocka_unit_test(test_dump_appends_and_restores),
		cmocka_unit_test(test_depth_limit),
		cmocka_unit_test(test_dump_depth_at_limit),
		cmocka_unit_test(test_dump_depth_past_limit),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_parse_special),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
