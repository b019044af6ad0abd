/*
 * core/schema against the official JSON-Schema-Test-Suite (Debian package
 * json-schema-test-suite), draft-07 files of the keywords schema.h
 * supports.  One cmocka test per file.  A test group runs when its schema
 * uses only supported keywords (decided by walking it; remote refs, $id,
 * format, pattern, ... make a group out of scope, and its tests are
 * counted as skipped; keys that are no draft-07 keyword are ignored, as
 * draft-07 says).  Each test checks valid/invalid; an invalid verdict
 * must come with a message, and a valid one must stay valid under
 * SCHEMA_IGNORE_REQUIRED.
 *
 * SCHEMA_SUITE_DIR overrides where the draft7 files are looked for.
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
#include "lib/schema.h"

#define SUITE_DIR "/usr/share/json-schema-test-suite/tests/draft7"

static const char *const files[] = {
	"additionalProperties", "allOf", "anyOf", "boolean_schema", "const",
	"default", "definitions", "enum", "exclusiveMaximum",
	"exclusiveMinimum", "if-then-else", "items", "maxItems", "maxLength",
	"maximum", "minItems", "minLength", "minimum", "not", "oneOf",
	"properties", "ref", "required", "type",
};
#define NFILES (sizeof(files) / sizeof(files[0]))

struct counts {
	unsigned passed, failed, skipped;
	int ran;
};

/* What one cmocka test gets as its state. */
struct file_run {
	const char *name;
	struct counts n;
};

static const char *suite_dir(void)
{
	const char *dir = getenv("SCHEMA_SUITE_DIR");

	return dir && *dir ? dir : SUITE_DIR;
}

static int any_of(const char *key, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(key, *names))
			return 1;
	return 0;
}

/* Does `s` use only what core/schema supports? */
static int in_scope(const json_t *s)
{
	static const char *const one_schema[] = {
		"additionalProperties", "not", "if", "then", "else", NULL };
	static const char *const schema_maps[] = {
		"properties", "definitions", "$defs", NULL };
	static const char *const schema_arrays[] = {
		"allOf", "anyOf", "oneOf", NULL };
	/* Draft-07 vocabulary that core/schema does not implement; other
	 * unknown keys are ignored by draft-07 and by core/schema alike. */
	static const char *const unsupported[] = {
		"$id", "format", "pattern", "patternProperties",
		"additionalItems", "contains", "dependencies", "propertyNames",
		"uniqueItems", "multipleOf", "minProperties", "maxProperties",
		"contentMediaType", "contentEncoding", NULL };
	const char *key, *name;
	json_t *v, *item;
	size_t i;

	if (json_is_boolean(s))
		return 1;
	if (!json_is_object(s))
		return 0;
	json_object_foreach((json_t *)s, key, v) {
		if (any_of(key, one_schema) ||
		    (!strcmp(key, "items") && !json_is_array(v))) {
			if (!in_scope(v))
				return 0;
		} else if (any_of(key, schema_maps)) {
			json_object_foreach(v, name, item)
				if (!in_scope(item))
					return 0;
		} else if (any_of(key, schema_arrays) ||
			   !strcmp(key, "items")) {
			json_array_foreach(v, i, item)
				if (!in_scope(item))
					return 0;
		} else if (!strcmp(key, "$ref")) {
			const char *ref = json_string_value(v);

			if (!ref || ref[0] != '#' || (ref[1] && ref[1] != '/'))
				return 0;
		} else if (any_of(key, unsupported)) {
			return 0;
		}
	}
	return 1;
}

static json_t *load(const char *path)
{
	struct ferr err = FERR_INIT;
	json_t *doc = NULL;
	char *buf = NULL;
	FILE *f = fopen(path, "rb");
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1)) &&
	    fread(buf, 1, (size_t)len, f) == (size_t)len) {
		if (fjson_parse(&doc, buf, (size_t)len, &err) < 0)
			print_error("%s: %s\n", path, err.message);
	}
	free(buf);
	fclose(f);
	return doc;
}

static void run_group(const char *file, const json_t *group,
		      struct counts *n)
{
	const json_t *schema = json_object_get(group, "schema");
	const json_t *tests = json_object_get(group, "tests");
	const char *what = json_string_value(json_object_get(group, "description"));
	struct ferr err = FERR_INIT;
	const json_t *test;
	size_t i;
	int checked;

	if (!in_scope(schema)) {
		n->skipped += json_array_size(tests);
		return;
	}
	checked = schema_check(schema, &err);
	if (checked < 0)
		print_error("FAIL %s: %s: schema_check: %s\n", file, what,
			    err.message);
	json_array_foreach(tests, i, test) {
		const json_t *data = json_object_get(test, "data");
		int valid = json_is_true(json_object_get(test, "valid"));
		const char *desc = json_string_value(json_object_get(test, "description"));
		int ret;

		if (checked < 0) {
			n->failed++;
			continue;
		}
		ferr_clear(&err);
		ret = schema_validate(schema, NULL, data, "", 0, &err);
		if (ret != 0 && ret != -EINVAL) {
			print_error("FAIL %s: %s / %s: returned %d\n", file,
				    what, desc, ret);
			n->failed++;
			continue;
		}
		if ((ret == 0) != valid) {
			if (ret)
				print_error("FAIL %s: %s / %s: expected valid, got invalid (%s: %s)\n",
					    file, what, desc, err.path,
					    err.message);
			else
				print_error("FAIL %s: %s / %s: expected invalid, got valid\n",
					    file, what, desc);
			n->failed++;
			continue;
		}
		if (ret && !err.message[0]) {
			print_error("FAIL %s: %s / %s: invalid without a message\n",
				    file, what, desc);
			n->failed++;
			continue;
		}
		if (!ret && schema_validate(schema, NULL, data, "",
					    SCHEMA_IGNORE_REQUIRED, &err) != 0) {
			print_error("FAIL %s: %s / %s: invalid with SCHEMA_IGNORE_REQUIRED: %s\n",
				    file, what, desc, err.message);
			n->failed++;
			continue;
		}
		n->passed++;
	}
}

static void test_file(void **state)
{
	struct file_run *run = *state;
	struct counts *n = &run->n;
	char path[4096];
	const json_t *group;
	json_t *doc;
	size_t i;

	snprintf(path, sizeof(path), "%s/%s.json", suite_dir(), run->name);
	doc = load(path);
	if (!doc) {
		print_message("%s: cannot read it (install the Debian package json-schema-test-suite: tools/setup)\n",
			      path);
		skip();
	}
	assert_true(json_is_array(doc));
	n->ran = 1;
	json_array_foreach(doc, i, group)
		run_group(run->name, group, n);
	json_decref(doc);
	print_message("schema suite: %s: %u passed, %u failed, %u skipped (out of scope)\n",
		      run->name, n->passed, n->failed, n->skipped);
	if (n->failed)
		fail_msg("%u of the in-scope tests of %s.json failed", n->failed,
			 run->name);
}

int main(void)
{
	struct file_run runs[NFILES];
	struct CMUnitTest tests[NFILES];
	struct counts total = { 0, 0, 0, 0 };
	size_t i;
	int ret;

	for (i = 0; i < NFILES; i++) {
		runs[i] = (struct file_run){ .name = files[i] };
		tests[i] = (struct CMUnitTest){
			.name = files[i],
			.test_func = test_file,
			.initial_state = &runs[i],
		};
	}
	ret = _cmocka_run_group_tests("schema_suite", tests, NFILES, NULL,
				      NULL);
	for (i = 0; i < NFILES; i++) {
		if (!runs[i].n.ran)
			continue;
		printf("schema suite: %-22s %4u passed, %u failed, %3u skipped (out of scope)\n",
		       files[i], runs[i].n.passed, runs[i].n.failed,
		       runs[i].n.skipped);
		total.passed += runs[i].n.passed;
		total.failed += runs[i].n.failed;
		total.skipped += runs[i].n.skipped;
		total.ran = 1;
	}
	if (total.ran)
		printf("schema suite: %u passed, %u failed, %u skipped (out of scope)\n",
		       total.passed, total.failed, total.skipped);
	else
		printf("schema suite: not run: %s is missing\n", suite_dir());
	return ret;
}
