/*
 * Unit tests for core/schema: every keyword, error paths and messages,
 * schema_check() refusals, defaults, SCHEMA_IGNORE_REQUIRED, $ref loops
 * and the limits.  Expected messages are the ones schema.h promises;
 * numbers in them are written as Python's json.dumps writes them.
 * (Draft-07 conformance as such is test_schema_suite.c's job.)
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
#include "lib/sbuf.h"
#include "lib/schema.h"

static json_t *parse(const char *text)
{
	struct ferr err = FERR_INIT;
	json_t *v = NULL;

	if (fjson_parse(&v, text, strlen(text), &err) < 0)
		fail_msg("cannot parse %s: %s", text, err.message);
	return v;
}

/* Check `schema`, validate `inst` against it with `flags`. */
static int run(const char *schema, const char *inst, const char *path,
	       unsigned flags, struct ferr *err)
{
	struct ferr cerr = FERR_INIT;
	json_t *s = parse(schema), *i = parse(inst);
	int ret;

	if (schema_check(s, &cerr) < 0)
		fail_msg("schema_check(%s): %s", schema, cerr.message);
	ret = schema_validate(s, NULL, i, path, flags, err);
	json_decref(s);
	json_decref(i);
	return ret;
}

static void valid(const char *schema, const char *inst)
{
	struct ferr err = FERR_INIT;

	if (run(schema, inst, "", 0, &err) != 0)
		fail_msg("%s against %s: expected valid, got %s: %s", inst,
			 schema, err.path, err.message);
}

static void invalid_at(const char *schema, const char *inst,
		       const char *base, unsigned flags, const char *path,
		       const char *message)
{
	struct ferr err = FERR_INIT;
	int ret = run(schema, inst, base, flags, &err);

	if (ret != -EINVAL)
		fail_msg("%s against %s: expected invalid, got %d", inst,
			 schema, ret);
	assert_string_equal(err.message, message);
	assert_string_equal(err.path, path);
}

static void invalid(const char *schema, const char *inst, const char *path,
		    const char *message)
{
	invalid_at(schema, inst, "", 0, path, message);
}

static void check_fails(const char *schema, const char *message)
{
	struct ferr err = FERR_INIT;
	json_t *s = parse(schema);

	if (schema_check(s, &err) != -EINVAL)
		fail_msg("schema_check(%s) accepted it", schema);
	assert_string_equal(err.message, message);
	assert_string_equal(err.path, "");	/* left alone */
	json_decref(s);
}

static void check_ok(const char *schema)
{
	struct ferr err = FERR_INIT;
	json_t *s = parse(schema);

	if (schema_check(s, &err) != 0)
		fail_msg("schema_check(%s): %s", schema, err.message);
	json_decref(s);
}

static void test_type(void **state)
{
	(void)state;
	valid("{\"type\": \"integer\"}", "3");
	valid("{\"type\": \"integer\"}", "1.0");	/* draft-07 */
	valid("{\"type\": \"integer\"}", "-0.0");
	valid("{\"type\": \"number\"}", "3");
	valid("{\"type\": \"number\"}", "3.5");
	valid("{\"type\": \"string\"}", "\"x\"");
	valid("{\"type\": \"null\"}", "null");
	valid("{\"type\": \"boolean\"}", "false");
	valid("{\"type\": \"array\"}", "[]");
	valid("{\"type\": \"object\"}", "{}");
	valid("{\"type\": [\"string\", \"null\"]}", "null");
	invalid("{\"type\": \"integer\"}", "\"3\"", "",
		"expected an integer, got a string");
	invalid("{\"type\": \"integer\"}", "1.5", "",
		"expected an integer, got a number");
	invalid("{\"type\": \"number\"}", "true", "",
		"expected a number, got a boolean");
	invalid("{\"type\": \"object\"}", "[1]", "",
		"expected an object, got an array");
	invalid("{\"type\": \"null\"}", "{}", "",
		"expected null, got an object");
	invalid("{\"type\": \"array\"}", "null", "",
		"expected an array, got null");
	invalid("{\"type\": [\"string\", \"null\"]}", "3", "",
		"expected a string or null, got an integer");
	invalid("{\"type\": [\"string\", \"number\", \"null\"]}", "false", "",
		"expected a string, a number or null, got a boolean");
}

static void test_numbers(void **state)
{
	(void)state;
	valid("{\"maximum\": 20}", "20");
	valid("{\"maximum\": 20}", "20.0");
	valid("{\"minimum\": 0.5}", "0.5");
	valid("{\"maximum\": 20}", "\"not a number\"");
	invalid_at("{\"properties\": {\"nalpha\": {\"maximum\": 20}}}",
		   "{\"nalpha\": 25}", "parameter", 0, "parameter.nalpha",
		   "25 is greater than the maximum of 20");
	invalid("{\"minimum\": 0.5}", "0.1", "",
		"0.1 is less than the minimum of 0.5");
	invalid("{\"minimum\": 1e-05}", "0", "",
		"0 is less than the minimum of 1e-05");
	invalid("{\"maximum\": 2}", "2.5", "",
		"2.5 is greater than the maximum of 2");
	invalid("{\"maximum\": 2.0}", "3", "",
		"3 is greater than the maximum of 2.0");
	valid("{\"exclusiveMinimum\": 5}", "5.000001");
	invalid("{\"exclusiveMinimum\": 5}", "5", "",
		"5 is less than or equal to the exclusive minimum of 5");
	invalid("{\"exclusiveMinimum\": 5}", "5.0", "",
		"5.0 is less than or equal to the exclusive minimum of 5");
	valid("{\"exclusiveMaximum\": 20}", "19.5");
	invalid("{\"exclusiveMaximum\": 20}", "20", "",
		"20 is greater than or equal to the exclusive maximum of 20");
	/* Exact int64-against-double comparison: 2**53 + 1 > 2.0**53. */
	invalid("{\"maximum\": 9007199254740992.0}", "9007199254740993", "",
		"9007199254740993 is greater than the maximum of 9007199254740992.0");
	valid("{\"maximum\": 9007199254740993}", "9007199254740992.0");
	valid("{\"minimum\": -9223372036854775808}", "-9.2e18");
	invalid("{\"maximum\": 9223372036854775807}", "1e19", "",
		"1e+19 is greater than the maximum of 9223372036854775807");
}

static void test_strings(void **state)
{
	(void)state;
	valid("{\"maxLength\": 1}", "\"\xc3\xa9\"");	/* é: 2 bytes */
	valid("{\"maxLength\": 1}", "\"\xf0\x9f\x98\x80\"");	/* U+1F600 */
	valid("{\"minLength\": 2, \"maxLength\": 2}", "\"\xe6\x97\xa5\xe6\x9c\xac\"");
	invalid("{\"maxLength\": 2}", "\"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\"",
		"", "3 characters, at most 2 allowed");
	invalid("{\"minLength\": 2}", "\"a\"", "",
		"1 character, at least 2 required");
	invalid("{\"minLength\": 2.0}", "\"\"", "",
		"0 characters, at least 2 required");
	valid("{\"minLength\": 3}", "12");
}

static void test_arrays(void **state)
{
	(void)state;
	valid("{\"items\": {\"type\": \"integer\"}}", "[1, 2, 3]");
	invalid_at("{\"properties\": {\"alschd\": {\"items\": {\"maximum\": 10}}}}",
		   "{\"alschd\": [1, 2, 3, 11]}", "parameter", 0,
		   "parameter.alschd[3]", "11 is greater than the maximum of 10");
	invalid("{\"items\": {\"type\": \"string\"}}", "[\"a\", 1]", "[1]",
		"expected a string, got an integer");
	/* Tuple form: extra items are allowed (additionalItems is ignored). */
	valid("{\"items\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}",
	      "[\"a\", 1, null]");
	valid("{\"items\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}",
	      "[\"a\"]");
	invalid("{\"items\": [{\"type\": \"string\"}, {\"type\": \"integer\"}]}",
		"[\"a\", \"b\"]", "[1]", "expected an integer, got a string");
	invalid("{\"items\": [true, false]}", "[1, 2]", "[1]",
		"no value is allowed here");
	invalid("{\"maxItems\": 2}", "[1, 2, 3]", "",
		"3 items, at most 2 allowed");
	invalid("{\"minItems\": 2}", "[1]", "", "1 item, at least 2 required");
	invalid("{\"minItems\": 1}", "[]", "", "0 items, at least 1 required");
	valid("{\"maxItems\": 0}", "[]");
	valid("{\"maxItems\": 0}", "{\"a\": 1}");
}

static void test_objects(void **state)
{
	(void)state;
	valid("{\"properties\": {\"a\": {\"type\": \"string\"}}}",
	      "{\"a\": \"x\", \"b\": 1}");
	invalid("{\"required\": [\"column\"]}", "{}", "",
		"missing required property \"column\"");
	invalid_at("{\"required\": [\"column\"]}", "{}", "parameter", 0,
		   "parameter", "missing required property \"column\"");
	invalid("{\"required\": [\"a \\\"q\\\"\"]}", "{}", "",
		"missing required property \"a \\\"q\\\"\"");
	valid("{\"required\": [\"a\"]}", "[]");
	invalid_at("{\"properties\": {\"color\": {}}, \"additionalProperties\": false}",
		   "{\"color\": 1, \"colour\": 2}", "parameter", 0, "parameter",
		   "unknown property \"colour\"");
	invalid("{\"additionalProperties\": {\"type\": \"integer\"}}",
		"{\"a\": 1, \"b\": \"x\"}", "b",
		"expected an integer, got a string");
	valid("{\"properties\": {\"a\": {}}, \"additionalProperties\": {\"type\": \"integer\"}}",
	      "{\"a\": \"x\", \"b\": 2}");
	invalid("{\"properties\": {\"a\": false}}", "{\"a\": 1}", "a",
		"no value is allowed here");
	valid("{\"properties\": {\"a\": false}}", "{}");
}

static void test_paths(void **state)
{
	static const char *deep =
		"{\"properties\": {\"a\": {\"items\": {\"properties\": "
		"{\"b c\": {\"properties\": {\"_d9\": {\"type\": \"string\"}}}}}}}}";

	(void)state;
	invalid_at(deep, "{\"a\": [{}, {\"b c\": {\"_d9\": 1}}]}", "parameter", 0,
		   "parameter.a[1][\"b c\"]._d9",
		   "expected a string, got an integer");
	invalid_at(deep, "{\"a\": [{}, {\"b c\": {\"_d9\": 1}}]}", "", 0,
		   "a[1][\"b c\"]._d9", "expected a string, got an integer");
	invalid_at(deep, "{\"a\": [{}, {\"b c\": {\"_d9\": 1}}]}", NULL, 0,
		   "a[1][\"b c\"]._d9", "expected a string, got an integer");
	invalid_at("{\"additionalProperties\": {\"type\": \"string\"}}",
		   "{\"9a\": 1}", "parameter", 0, "parameter[\"9a\"]",
		   "expected a string, got an integer");
	invalid_at("{\"additionalProperties\": {\"type\": \"string\"}}",
		   "{\"d\xc3\xa9j\xc3\xa0\": 1}", "p", 0, "p[\"d\xc3\xa9j\xc3\xa0\"]",
		   "expected a string, got an integer");
	invalid_at("{\"additionalProperties\": {\"type\": \"string\"}}",
		   "{\"a-b\": 1}", "p", 0, "p[\"a-b\"]",
		   "expected a string, got an integer");
	invalid_at("{\"items\": {\"type\": \"string\"}}", "[0]", "p", 0, "p[0]",
		   "expected a string, got an integer");
	invalid_at("{\"type\": \"string\"}", "0", "input.x", 0, "input.x",
		   "expected a string, got an integer");
}

/* The value's own keywords before its children, its children (in the
 * instance's order) before required and counts. */
static void test_order(void **state)
{
	static const char *s =
		"{\"properties\": {\"a\": {\"maximum\": 1}, \"b\": {\"maximum\": 1}},"
		" \"required\": [\"z\"]}";

	(void)state;
	invalid(s, "{\"b\": 5, \"a\": 5}", "b", "5 is greater than the maximum of 1");
	invalid(s, "{\"a\": 0, \"b\": 0}", "", "missing required property \"z\"");
	invalid("{\"type\": \"object\", \"required\": [\"z\"]}", "[]", "",
		"expected an object, got an array");
	invalid("{\"maxItems\": 1, \"items\": {\"type\": \"string\"}}",
		"[\"a\", 2]", "[1]", "expected a string, got an integer");
	invalid("{\"enum\": [1], \"minimum\": 5}", "2", "",
		"2 is not one of 1");
}

static void test_enum_const(void **state)
{
	(void)state;
	invalid("{\"enum\": [\"a\", \"b\"]}", "\"x\"", "",
		"\"x\" is not one of \"a\", \"b\"");
	valid("{\"enum\": [\"a\", 1]}", "1.0");
	valid("{\"enum\": [{\"a\": 1, \"b\": [1, 2]}]}", "{\"b\": [1.0, 2], \"a\": 1}");
	invalid("{\"enum\": [[1, 2]]}", "[2, 1]", "", "[2, 1] is not one of [1, 2]");
	invalid("{\"enum\": [0]}", "false", "", "false is not one of 0");
	invalid("{\"enum\": [null, 1.5, {\"k\": \"v\"}]}", "2", "",
		"2 is not one of null, 1.5, {\"k\": \"v\"}");
	invalid("{\"enum\": []}", "1", "", "1 is not allowed (the enum is empty)");
	valid("{\"const\": 1}", "1.0");
	valid("{\"const\": {\"a\": [true]}}", "{\"a\": [true]}");
	invalid("{\"const\": \"a\"}", "\"x\"", "", "expected \"a\", got \"x\"");
	invalid("{\"const\": {\"a\": false}}", "{\"a\": 0}", "",
		"expected {\"a\": false}, got {\"a\": 0}");
	invalid("{\"const\": \"a\\u0000b\"}", "\"a\"", "",
		"expected \"a\\u0000b\", got \"a\"");
}

/* Long values are cut in messages, at a character boundary. */
static void test_long_values(void **state)
{
	struct sbuf schema = SBUF_INIT, inst = SBUF_INIT;
	struct ferr err = FERR_INIT;
	int i;

	(void)state;
	sbuf_addstr(&schema, "{\"enum\": [");
	for (i = 0; i < 100; i++)
		sbuf_addf(&schema, "%s\"value-%d\"", i ? ", " : "", i);
	sbuf_addstr(&schema, "]}");
	sbuf_addstr(&inst, "\"");
	for (i = 0; i < 200; i++)
		sbuf_addstr(&inst, "\xc3\xa9");
	sbuf_addstr(&inst, "\"");
	assert_int_equal(run(schema.buf, inst.buf, "", 0, &err), -EINVAL);
	assert_true(strlen(err.message) < 300);
	assert_non_null(strstr(err.message, "\xc3\xa9... is not one of \"value-0\", \"value-1\""));
	assert_non_null(strstr(err.message, ", ..."));
	sbuf_release(&schema);
	sbuf_release(&inst);
}

/* The message of an enum refusal for string `len` bytes long. */
static void enum_message(size_t len, struct ferr *err)
{
	struct sbuf inst = SBUF_INIT;

	sbuf_addch(&inst, '"');
	for (size_t i = 0; i < len; i++)
		sbuf_addch(&inst, 'v');
	sbuf_addch(&inst, '"');
	assert_int_equal(run("{\"enum\": [\"x\"]}", inst.buf, "", 0, err),
			 -EINVAL);
	sbuf_release(&inst);
}

/* A value of 80 bytes as a message shows it (quotes included) is shown
 * whole ... */
static void test_value_shown_at_80_bytes(void **state)
{
	struct ferr err = FERR_INIT;
	char want[128];

	(void)state;
	enum_message(78, &err);
	snprintf(want, sizeof(want), "\"%.78s\" is not one of \"x\"",
		 "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	assert_string_equal(err.message, want);
}

/* ... one byte more: its first 77 bytes and "...". */
static void test_value_shown_past_80_bytes(void **state)
{
	struct ferr err = FERR_INIT;
	char want[128];

	(void)state;
	enum_message(79, &err);
	snprintf(want, sizeof(want), "\"%.76s... is not one of \"x\"",
		 "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
	assert_string_equal(err.message, want);
}

static void test_logic(void **state)
{
	static const char *ite =
		"{\"if\": {\"properties\": {\"kind\": {\"const\": \"a\"}}},"
		" \"then\": {\"required\": [\"x\"]},"
		" \"else\": {\"properties\": {\"y\": {\"type\": \"string\"}}}}";

	(void)state;
	valid("{\"allOf\": [{\"type\": \"integer\"}, {\"minimum\": 2}]}", "3");
	invalid("{\"allOf\": [{\"type\": \"integer\"}, {\"properties\": {}}, {\"minimum\": 2}]}",
		"1", "", "1 is less than the minimum of 2");
	valid("{\"anyOf\": [{\"type\": \"string\"}, {\"minimum\": 2}]}", "3");
	invalid("{\"anyOf\": [{\"type\": \"string\"}, {\"minimum\": 2}]}", "1", "",
		"does not match any of the anyOf schemas");
	invalid_at("{\"properties\": {\"a\": {\"anyOf\": [false]}}}",
		   "{\"a\": 1}", "p", 0, "p.a",
		   "does not match any of the anyOf schemas");
	valid("{\"oneOf\": [{\"type\": \"string\"}, {\"minimum\": 2}]}", "3");
	invalid("{\"oneOf\": [{\"type\": \"string\"}, {\"minimum\": 2}]}", "1", "",
		"does not match any of the oneOf schemas");
	invalid("{\"oneOf\": [{\"type\": \"string\"}, {\"minimum\": 2}, {\"maximum\": 5}]}",
		"3", "", "matches more than one of the oneOf schemas (1 and 2)");
	valid("{\"not\": {\"type\": \"string\"}}", "1");
	invalid("{\"not\": {\"type\": \"string\"}}", "\"s\"", "",
		"must not match the \"not\" schema");
	valid(ite, "{\"kind\": \"a\", \"x\": 1}");
	invalid(ite, "{\"kind\": \"a\"}", "", "missing required property \"x\"");
	valid(ite, "{\"kind\": \"b\", \"y\": \"s\"}");
	invalid(ite, "{\"kind\": \"b\", \"y\": 1}", "y",
		"expected a string, got an integer");
	valid("{\"then\": false}", "1");	/* no if: then/else unused */
	valid("{\"if\": true, \"else\": false}", "1");
	invalid("{\"if\": false, \"else\": false}", "1", "",
		"no value is allowed here");
}

static void test_boolean_schemas(void **state)
{
	(void)state;
	valid("true", "{\"a\": [1]}");
	valid("{}", "null");
	invalid("false", "1", "", "no value is allowed here");
	invalid_at("false", "1", "parameter", 0, "parameter",
		   "no value is allowed here");
}

static void test_refs(void **state)
{
	static const char *esc =
		"{\"definitions\": {\"a~b\": {\"type\": \"integer\"},"
		" \"c/d\": {\"type\": \"string\"}, \"e%f\": {\"type\": \"null\"},"
		" \"g h\": {\"type\": \"boolean\"}},"
		" \"properties\": {\"1\": {\"$ref\": \"#/definitions/a~0b\"},"
		" \"2\": {\"$ref\": \"#/definitions/c~1d\"},"
		" \"3\": {\"$ref\": \"#/definitions/e%25f\"},"
		" \"4\": {\"$ref\": \"#/definitions/g%20h\"}}}";

	(void)state;
	valid("{\"definitions\": {\"n\": {\"type\": \"integer\"}}, \"items\": {\"$ref\": \"#/definitions/n\"}}",
	      "[1, 2]");
	invalid("{\"definitions\": {\"n\": {\"type\": \"integer\"}}, \"items\": {\"$ref\": \"#/definitions/n\"}}",
		"[1, \"2\"]", "[1]", "expected an integer, got a string");
	invalid("{\"$defs\": {\"n\": {\"maximum\": 3}}, \"$ref\": \"#/$defs/n\"}",
		"4", "", "4 is greater than the maximum of 3");
	valid("{\"properties\": {\"next\": {\"$ref\": \"#\"}}, \"additionalProperties\": false}",
	      "{\"next\": {\"next\": {}}}");
	invalid("{\"properties\": {\"next\": {\"$ref\": \"#\"}}, \"additionalProperties\": false}",
		"{\"next\": {\"next\": {\"x\": 1}}}", "next.next",
		"unknown property \"x\"");
	valid(esc, "{\"1\": 1, \"2\": \"s\", \"3\": null, \"4\": true}");
	invalid(esc, "{\"1\": 1.5}", "[\"1\"]", "expected an integer, got a number");
	invalid(esc, "{\"2\": 2}", "[\"2\"]", "expected a string, got an integer");
	invalid(esc, "{\"3\": 3}", "[\"3\"]", "expected null, got an integer");
	invalid(esc, "{\"4\": 4}", "[\"4\"]", "expected a boolean, got an integer");
	/* Draft-07: the siblings of $ref are ignored. */
	valid("{\"definitions\": {\"a\": {\"type\": \"array\"}},"
	      " \"properties\": {\"x\": {\"$ref\": \"#/definitions/a\", \"maxItems\": 1}}}",
	      "{\"x\": [1, 2, 3]}");
	valid("{\"$ref\": \"#/definitions/t\", \"definitions\": {\"t\": true}}", "1");
	invalid("{\"$ref\": \"#/definitions/f\", \"definitions\": {\"f\": false}}",
		"1", "", "no value is allowed here");
	/* Any JSON pointer into the document, also into tuple items. */
	valid("{\"items\": [{\"type\": \"integer\"}, {\"$ref\": \"#/items/0\"}]}",
	      "[1, 2]");
	invalid("{\"items\": [{\"type\": \"integer\"}, {\"$ref\": \"#/items/0\"}]}",
		"[1, \"a\"]", "[1]", "expected an integer, got a string");
	/* Empty tokens are keys "". */
	valid("{\"definitions\": {\"\": {\"definitions\": {\"\": {\"type\": \"number\"}}}},"
	      " \"allOf\": [{\"$ref\": \"#/definitions//definitions/\"}]}", "1");
}

/* A schema that did not pass schema_check cannot crash validation. */
static void test_unchecked(void **state)
{
	struct ferr err = FERR_INIT;
	json_t *s, *i = parse("{\"a\": [1]}");

	(void)state;
	s = parse("{\"$ref\": \"#/nowhere\"}");
	assert_int_equal(schema_validate(s, NULL, i, "p", 0, &err), -EINVAL);
	assert_string_equal(err.message,
			    "the schema's $ref \"#/nowhere\" cannot be resolved");
	assert_string_equal(err.path, "p");
	json_decref(s);

	s = parse("{\"$ref\": \"#\"}");
	assert_int_equal(schema_validate(s, NULL, i, "", 0, &err), -EINVAL);
	assert_string_equal(err.message, "the document nests too deeply to validate");
	json_decref(s);

	s = parse("{\"type\": 5, \"minimum\": \"x\", \"items\": 3, \"required\": {},"
		  " \"properties\": [], \"enum\": {}, \"allOf\": {}, \"maxItems\": \"2\"}");
	assert_int_equal(schema_validate(s, NULL, i, "", 0, NULL), 0);
	json_decref(s);

	s = parse("{\"required\": [\"b\"]}");
	assert_int_equal(schema_validate(s, NULL, i, "", 0, NULL), -EINVAL);
	json_decref(s);
	json_decref(i);
}

static void test_err_untouched_when_valid(void **state)
{
	struct ferr err = FERR_INIT;

	(void)state;
	snprintf(err.message, sizeof(err.message), "before");
	snprintf(err.path, sizeof(err.path), "p");
	assert_int_equal(run("{\"type\": \"integer\"}", "1", "x", 0, &err), 0);
	assert_string_equal(err.message, "before");
	assert_string_equal(err.path, "p");
}

static void test_sub_schema(void **state)
{
	json_t *root = parse(
		"{\"definitions\": {\"lang\": {\"enum\": [\"en\", \"zh\"]}},"
		" \"properties\": {\"parameter\": {\"properties\":"
		" {\"language\": {\"$ref\": \"#/definitions/lang\"}},"
		" \"required\": [\"language\"]}}}");
	json_t *ok = parse("{\"language\": \"en\"}");
	json_t *bad = parse("{\"language\": \"fr\"}");
	const json_t *sub = json_object_get(json_object_get(root, "properties"),
					    "parameter");
	struct ferr err = FERR_INIT;

	(void)state;
	assert_int_equal(schema_check(root, &err), 0);
	assert_int_equal(schema_validate(root, sub, ok, "parameter", 0, &err), 0);
	assert_int_equal(schema_validate(root, sub, bad, "parameter", 0, &err),
			 -EINVAL);
	assert_string_equal(err.path, "parameter.language");
	assert_string_equal(err.message, "\"fr\" is not one of \"en\", \"zh\"");
	json_decref(root);
	json_decref(ok);
	json_decref(bad);
}

static void test_ignore_required(void **state)
{
	static const char *nested =
		"{\"required\": [\"a\", \"b\"], \"properties\": {\"b\": {\"required\": [\"c\"]}}}";
	static const char *via =
		"{\"definitions\": {\"p\": {\"required\": [\"a\"]}},"
		" \"allOf\": [{\"$ref\": \"#/definitions/p\"}, {\"required\": [\"b\"]}],"
		" \"if\": true, \"then\": {\"required\": [\"c\"]}}";
	static const char *branch =
		"{\"anyOf\": [{\"required\": [\"a\"]}, {\"required\": [\"b\"]}]}";

	(void)state;
	invalid(nested, "{}", "", "missing required property \"a\"");
	assert_int_equal(run(nested, "{}", "", SCHEMA_IGNORE_REQUIRED, NULL), 0);
	invalid_at(nested, "{\"b\": {}}", "parameter", SCHEMA_IGNORE_REQUIRED,
		   "parameter.b", "missing required property \"c\"");
	invalid(via, "{}", "", "missing required property \"a\"");
	assert_int_equal(run(via, "{}", "", SCHEMA_IGNORE_REQUIRED, NULL), 0);
	/* Where required picks a branch, it still counts. */
	invalid_at(branch, "{}", "", SCHEMA_IGNORE_REQUIRED, "",
		   "does not match any of the anyOf schemas");
	assert_int_equal(run(branch, "{\"b\": 1}", "", SCHEMA_IGNORE_REQUIRED,
			     NULL), 0);
	assert_int_equal(run("{\"not\": {\"required\": [\"a\"]}}", "{}", "",
			     SCHEMA_IGNORE_REQUIRED, NULL), 0);
	/* Other rules of the top value still hold. */
	invalid_at("{\"required\": [\"a\"], \"additionalProperties\": false}",
		   "{\"x\": 1}", "", SCHEMA_IGNORE_REQUIRED, "",
		   "unknown property \"x\"");
}

static void test_check(void **state)
{
	char deep[2 * 300 + 16];
	int i;

	(void)state;
	check_fails("{\"properties\": {\"n\": {\"minimum\": \"1\"}}}",
		    "#/properties/n/minimum: must be a number");
	check_fails("{\"properties\": {\"a/b~c\": {\"type\": \"strin\"}}}",
		    "#/properties/a~1b~0c/type: unknown type \"strin\"");
	check_fails("{\"type\": [\"string\", 1]}", "#/type/1: must be a type name");
	check_fails("{\"type\": []}",
		    "#/type: must be a type name or a non-empty array of type names");
	check_fails("{\"required\": \"a\"}",
		    "#/required: must be an array of property names");
	check_fails("{\"required\": [\"a\", 2]}", "#/required/1: must be a string");
	check_fails("{\"items\": 3}",
		    "#/items: must be a schema (an object, true or false)");
	check_fails("{\"items\": [{}, null]}",
		    "#/items/1: must be a schema (an object, true or false)");
	check_fails("{\"allOf\": []}", "#/allOf: must be a non-empty array of schemas");
	check_fails("{\"anyOf\": {}}", "#/anyOf: must be a non-empty array of schemas");
	check_fails("{\"minLength\": -1}", "#/minLength: must be a non-negative integer");
	check_fails("{\"maxItems\": 1.5}", "#/maxItems: must be a non-negative integer");
	check_fails("{\"exclusiveMinimum\": true}",	/* draft-04 style */
		    "#/exclusiveMinimum: must be a number");
	check_fails("{\"enum\": 1}", "#/enum: must be an array");
	check_fails("{\"properties\": []}", "#/properties: must be an object of schemas");
	check_fails("{\"definitions\": {\"a\": 1}}",
		    "#/definitions/a: must be a schema (an object, true or false)");
	check_fails("{\"not\": \"x\"}",
		    "#/not: must be a schema (an object, true or false)");
	check_fails("[]", "#: must be a schema (an object, true or false)");
	check_fails("{\"$ref\": 1}", "#/$ref: must be a string");
	check_fails("{\"$ref\": \"#/definitions/x\"}",
		    "#/$ref: \"#/definitions/x\" does not name a part of the schema");
	check_fails("{\"$ref\": \"#/definitions/a%zz\", \"definitions\": {\"a%zz\": {}}}",
		    "#/$ref: \"#/definitions/a%zz\" does not name a part of the schema");
	check_fails("{\"$ref\": \"#/items/01\", \"items\": [{}, {}]}",
		    "#/$ref: \"#/items/01\" does not name a part of the schema");
	check_fails("{\"$ref\": \"#anchor\"}",
		    "#/$ref: \"#anchor\" does not name a part of the schema");
	check_fails("{\"properties\": {\"x\": {\"$ref\": \"http://example.com/s.json#\"}}}",
		    "#/properties/x/$ref: \"http://example.com/s.json#\": only references inside the schema (\"#...\") are supported");
	check_fails("{\"$ref\": \"other.json\"}",
		    "#/$ref: \"other.json\": only references inside the schema (\"#...\") are supported");
	check_fails("{\"$ref\": \"#/enum/0\", \"enum\": [1]}",
		    "#/$ref: \"#/enum/0\" is not a schema (an object, true or false)");
	/* A ref target is checked too, under the ref's name. */
	check_fails("{\"$ref\": \"#/x-lib/a\", \"x-lib\": {\"a\": {\"maximum\": null}}}",
		    "#/x-lib/a/maximum: must be a number");
	/* Unknown keywords are not looked at; const/default hold any value. */
	check_ok("{\"x-input-source\": 1, \"title\": [],"
		" \"extensions\": 5, \"const\": {\"type\": 1}, \"default\": {\"minimum\": \"a\"}}");

	/* Nesting: 256 levels are fine, 257 are not. */
	for (i = 0; i < 256; i++)
		deep[i] = '[';
	for (i = 0; i < 256; i++)
		deep[256 + i] = ']';
	deep[512] = '\0';
	{
		char doc[600];
		json_t *v;

		/* {"enum": [[[...]]]}: 1 + 255 arrays = 256 levels */
		snprintf(doc, sizeof(doc), "{\"enum\": %.*s%.*s}", 255, deep, 255,
			 deep + 256);
		v = parse(doc);
		assert_int_equal(schema_check(v, NULL), 0);
		json_decref(v);
		snprintf(doc, sizeof(doc), "{\"enum\": %.*s%.*s}", 256, deep, 256,
			 deep + 256);
		v = parse(doc);
		{
			struct ferr err = FERR_INIT;

			assert_int_equal(schema_check(v, &err), -EINVAL);
			assert_string_equal(err.message,
					    "#: the schema nests deeper than 256 levels");
		}
		json_decref(v);
	}
}

static void test_loops(void **state)
{
	(void)state;
	check_fails("{\"$ref\": \"#\"}",
		    "#/$ref: infinite loop: \"#\" leads back here without stepping into a property or item");
	check_fails("{\"definitions\": {\"a\": {\"$ref\": \"#/definitions/b\"},"
		    " \"b\": {\"$ref\": \"#/definitions/a\"}}}",
		    "#/definitions/b/$ref: infinite loop: \"#/definitions/a\" leads back here without stepping into a property or item");
	check_fails("{\"allOf\": [{\"$ref\": \"#\"}]}",
		    "#/allOf/0/$ref: infinite loop: \"#\" leads back here without stepping into a property or item");
	check_fails("{\"anyOf\": [{}, {\"not\": {\"$ref\": \"#\"}}]}",
		    "#/anyOf/1/not/$ref: infinite loop: \"#\" leads back here without stepping into a property or item");
	check_fails("{\"if\": {\"$ref\": \"#/then\"}, \"then\": {\"$ref\": \"#/if\"}}",
		    "#/then/$ref: infinite loop: \"#/if\" leads back here without stepping into a property or item");
	/* Recursion through a property, an item or additionalProperties
	 * steps into the value: fine. */
	check_ok("{\"properties\": {\"x\": {\"$ref\": \"#\"}},"
		" \"items\": {\"$ref\": \"#\"}, \"additionalProperties\": {\"$ref\": \"#\"}}");
	/* An allOf sibling of $ref is ignored, so it is no loop. */
	check_ok("{\"definitions\": {\"a\": {}},"
		" \"$ref\": \"#/definitions/a\", \"allOf\": [{\"$ref\": \"#\"}]}");
}

static void test_long_chains(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *s;
	int i, n;

	(void)state;
	/* d0 -> d1 -> ... -> dN by $ref: N schemas apply to one value. */
	for (n = 250; n <= 300; n += 50) {
		sbuf_reset(&sb);
		sbuf_addstr(&sb, "{\"$ref\": \"#/definitions/d0\", \"definitions\": {");
		for (i = 0; i < n; i++)
			sbuf_addf(&sb, "\"d%d\": {\"$ref\": \"#/definitions/d%d\"}, ",
				  i, i + 1);
		sbuf_addf(&sb, "\"d%d\": {\"type\": \"integer\"}}}", n);
		s = parse(sb.buf);
		if (n == 250) {
			json_t *one = json_integer(1), *str = json_string("x");

			assert_int_equal(schema_check(s, &err), 0);
			assert_int_equal(schema_validate(s, NULL, one, "", 0, &err), 0);
			assert_int_equal(schema_validate(s, NULL, str, "", 0, &err),
					 -EINVAL);
			assert_string_equal(err.message, "expected an integer, got a string");
			json_decref(one);
			json_decref(str);
		} else {
			assert_int_equal(schema_check(s, &err), -EINVAL);
			assert_non_null(strstr(err.message,
					       "more than 256 schemas in a row apply to the same value"));
		}
		json_decref(s);
	}
	sbuf_release(&sb);
}

/* A schema whose $ref chain applies `n` schemas in a row to one value
 * (the top one, n - 2 that refer on, an integer's). */
static json_t *chain_of(int n)
{
	struct sbuf sb = SBUF_INIT;
	json_t *s;

	sbuf_addstr(&sb, "{\"$ref\": \"#/definitions/d0\", \"definitions\": {");
	for (int i = 0; i < n - 2; i++)
		sbuf_addf(&sb, "\"d%d\": {\"$ref\": \"#/definitions/d%d\"}, ",
			  i, i + 1);
	sbuf_addf(&sb, "\"d%d\": {\"type\": \"integer\"}}}", n - 2);
	s = parse(sb.buf);
	sbuf_release(&sb);
	return s;
}

/* 256 schemas in a row ... */
static void test_chain_at_256(void **state)
{
	struct ferr err = FERR_INIT;
	json_t *s = chain_of(SCHEMA_MAX_NESTING), *one = json_integer(1);

	(void)state;
	assert_int_equal(schema_check(s, &err), 0);
	assert_int_equal(schema_validate(s, NULL, one, "", 0, &err), 0);
	json_decref(one);
	json_decref(s);
}

/* ... not 257. */
static void test_chain_past_256(void **state)
{
	struct ferr err = FERR_INIT;
	json_t *s = chain_of(SCHEMA_MAX_NESTING + 1);

	(void)state;
	assert_int_equal(schema_check(s, &err), -EINVAL);
	assert_non_null(strstr(err.message, ": more than 256 schemas in a row"
			       " apply to the same value"));
	json_decref(s);
}

/* Deeply nested instances against a recursive schema: no stack overflow,
 * and past the limit a clear refusal. */
static void test_deep_instances(void **state)
{
	json_t *schema = parse("{\"items\": {\"$ref\": \"#\"}, \"type\": \"array\"}");
	struct ferr err = FERR_INIT;
	/* each level is two schemas deep (items, then the $ref): the 4096
	 * of SCHEMA_MAX_DEPTH are 2048 levels */
	int depths[] = { 1000, 2048, 2049, 3000, 100000 };
	size_t k;

	(void)state;
	assert_int_equal(schema_check(schema, NULL), 0);
	for (k = 0; k < sizeof(depths) / sizeof(depths[0]); k++) {
		json_t *top = json_array(), *cur = top;
		int i, ret;

		for (i = 1; i < depths[k]; i++) {
			json_t *next = json_array();

			json_array_append_new(cur, next);
			cur = next;
		}
		ferr_clear(&err);
		ret = schema_validate(schema, NULL, top, "p", 0, &err);
		if (depths[k] <= 2048) {
			assert_int_equal(ret, 0);
		} else {
			assert_int_equal(ret, -EINVAL);
			assert_string_equal(err.message,
					    "the document nests too deeply to validate");
			assert_string_equal(err.path, "p");
		}
		/* Free iteratively: jansson's decref recurses. */
		while (json_array_size(top)) {
			json_t *child = json_incref(json_array_get(top, 0));

			json_decref(top);
			top = child;
		}
		json_decref(top);
	}
	json_decref(schema);
}

/* anyOf of anyOfs of the same definitions: 2**40 paths, stopped. */
static void test_exponential(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *s, *inst = json_integer(1);
	int i;

	(void)state;
	sbuf_addstr(&sb, "{\"$ref\": \"#/definitions/d0\", \"definitions\": {");
	for (i = 0; i < 40; i++)
		sbuf_addf(&sb, "\"d%d\": {\"anyOf\": [{\"$ref\": \"#/definitions/d%d\"},"
			  " {\"$ref\": \"#/definitions/d%d\"}]}, ", i, i + 1, i + 1);
	sbuf_addstr(&sb, "\"d40\": false}}");
	s = parse(sb.buf);
	assert_int_equal(schema_check(s, &err), 0);
	assert_int_equal(schema_validate(s, NULL, inst, "p", 0, &err), -EINVAL);
	assert_string_equal(err.message,
			    "the schema is too complex to validate this document");
	assert_string_equal(err.path, "p");
	/* Under not, a limit must not turn into "valid". */
	json_object_del(s, "$ref");
	json_object_set_new(s, "not", json_pack("{s:s}", "$ref", "#/definitions/d0"));
	assert_int_equal(schema_validate(s, NULL, inst, "", 0, &err), -EINVAL);
	assert_string_equal(err.message,
			    "the schema is too complex to validate this document");
	json_decref(s);
	json_decref(inst);
	sbuf_release(&sb);
}

static void test_defaults(void **state)
{
	json_t *root = parse(
		"{\"definitions\": {\"p\": {\"properties\": {"
		" \"z\": {\"default\": 1},"
		" \"a\": {\"type\": \"object\", \"default\": {\"k\": [1, 2]},"
		"        \"properties\": {\"inner\": {\"default\": 9}}},"
		" \"have\": {\"default\": \"no\"},"
		" \"none\": {\"type\": \"string\"},"
		" \"viaref\": {\"$ref\": \"#/definitions/withdef\"},"
		" \"own\": {\"$ref\": \"#/definitions/withdef\", \"default\": \"mine\"}}},"
		" \"withdef\": {\"default\": 0.0}},"
		" \"$ref\": \"#/definitions/p\"}");
	json_t *inst = parse("{\"have\": \"yes\", \"b\": null}");
	char *out;

	(void)state;
	assert_int_equal(schema_check(root, NULL), 0);
	assert_int_equal(schema_apply_defaults(root, NULL, inst), 0);
	out = fjson_dumps(inst);
	assert_string_equal(out,
		"{\n  \"have\": \"yes\",\n  \"b\": null,\n  \"z\": 1,\n"
		"  \"a\": {\n    \"k\": [\n      1,\n      2\n    ]\n  },\n"
		"  \"viaref\": 0.0,\n  \"own\": \"mine\"\n}");
	free(out);
	/* A deep copy: changing the instance leaves the schema alone. */
	json_array_append_new(json_object_get(json_object_get(inst, "a"), "k"),
			      json_integer(3));
	out = fjson_dumps(json_object_get(json_object_get(json_object_get(
		json_object_get(root, "definitions"), "p"), "properties"), "a"));
	assert_non_null(strstr(out, "\"k\": [\n      1,\n      2\n    ]"));
	free(out);
	/* Applying again changes nothing. */
	{
		json_t *copy = json_deep_copy(inst);

		assert_int_equal(schema_apply_defaults(root, NULL, inst), 0);
		assert_true(json_equal(copy, inst));
		json_decref(copy);
	}
	json_decref(inst);

	/* Not an object: nothing to do. */
	inst = json_array();
	assert_int_equal(schema_apply_defaults(root, NULL, inst), 0);
	assert_int_equal(json_array_size(inst), 0);
	json_decref(inst);

	/* A sub schema. */
	inst = json_object();
	assert_int_equal(schema_apply_defaults(root,
		json_object_get(json_object_get(root, "definitions"), "withdef"),
		inst), 0);
	assert_int_equal(json_object_size(inst), 0);
	assert_int_equal(schema_apply_defaults(root,
		json_object_get(json_object_get(root, "definitions"), "p"),
		inst), 0);
	assert_int_equal(json_object_size(inst), 5);
	json_decref(inst);
	json_decref(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_type),
		cmocka_unit_test(test_numbers),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_arrays),
		cmocka_unit_test(test_objects),
		cmocka_unit_test(test_paths),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_enum_const),
		cmocka_unit_test(test_long_values),
		cmocka_unit_test(test_logic),
		cmocka_unit_test(test_boolean_schemas),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_unchecked),
		cmocka_unit_test(test_err_untouched_when_valid),
		cmocka_unit_test(test_sub_schema),
		cmocka_unit_test(test_ignore_required),
		cmocka_unit_test(test_check),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_long_chains),
		cmocka_unit_test(test_chain_at_256),
		cmocka_unit_test(test_chain_past_256),
		cmocka_unit_test(test_value_shown_at_80_bytes),
		cmocka_unit_test(test_value_shown_past_80_bytes),
		cmocka_unit_test(test_deep_instances),
		cmocka_unit_test(test_exponential),
		cmocka_unit_test(test_defaults),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
