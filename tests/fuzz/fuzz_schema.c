/*
 * Fuzz target for schema: the bytes are two JSON texts separated by the
 * first NUL byte (a schema, then an instance; without a NUL the schema is
 * validated against itself).  schema_check() must answer with a message;
 * a schema it accepts is used for schema_validate() (with and without
 * SCHEMA_IGNORE_REQUIRED: what is valid without the flag is valid with it)
 * and schema_apply_defaults() (which must add every default the top
 * schema's properties name).  A schema it refuses is still validated
 * against: that must not crash either.  Nothing may crash, leak, recurse
 * without bound or run for long.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/schema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_verdict(int ret, const struct ferr *err)
{
	if (ret != 0 && ret != -EINVAL && ret != -ENOMEM)
		abort();
	if (ret == -EINVAL && !err->message[0])
		abort();
}

/* A limit is not a verdict; the flag only promises something about those. */
static int hit_limit(const struct ferr *err)
{
	return strstr(err->message, "too complex") ||
	       strstr(err->message, "too deeply");
}

/* Every property of the top schema with a plain "default" is present. */
static void expect_defaults(const json_t *schema, const json_t *inst)
{
	const json_t *props = json_object_get(schema, "properties");
	const char *key;
	json_t *sub;

	if (!json_is_object(inst) || json_object_get(schema, "$ref"))
		return;
	json_object_foreach((json_t *)props, key, sub)
		if (json_object_get(sub, "default") &&
		    !json_object_get(inst, key))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t slen = nul ? (size_t)(nul - data) : size;
	struct ferr err = FERR_INIT;
	json_t *schema = NULL, *inst = NULL;
	int ret, plain;

	if (fjson_parse(&schema, (const char *)data, slen, &err) < 0)
		goto out;
	if (nul) {
		if (fjson_parse(&inst, (const char *)nul + 1,
				size - slen - 1, &err) < 0)
			goto out;
	} else {
		inst = json_incref(schema);
	}

	ferr_clear(&err);
	ret = schema_check(schema, &err);
	expect_verdict(ret, &err);
	if (ret < 0) {
		ret = schema_validate(schema, NULL, inst, "in", 0, &err);
		expect_verdict(ret, &err);
		goto out;
	}

	ferr_clear(&err);
	plain = schema_validate(schema, NULL, inst, "in", 0, &err);
	expect_verdict(plain, &err);
	if (plain == -EINVAL && strncmp(err.path, "in", 2) != 0)
		abort();
	ferr_clear(&err);
	ret = schema_validate(schema, NULL, inst, "in",
			      SCHEMA_IGNORE_REQUIRED, &err);
	expect_verdict(ret, &err);
	if (plain == 0 && ret == -EINVAL && !hit_limit(&err))
		abort();

	if (json_is_object(inst)) {
		json_t *copy = json_deep_copy(inst);

		if (!copy)
			goto out;
		ret = schema_apply_defaults(schema, NULL, copy);
		if (ret != 0 && ret != -ENOMEM)
			abort();
		if (!ret)
			expect_defaults(schema, copy);
		ferr_clear(&err);
		ret = schema_validate(schema, NULL, copy, "", 0, &err);
		expect_verdict(ret, &err);
		json_decref(copy);
	}
out:
	json_decref(schema);
	json_decref(inst);
	return 0;
}
