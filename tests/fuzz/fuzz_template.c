/*
 * fuzz_template: whatever bytes tmpl_parse gets, it parses or refuses with a
 * message and a position; whatever parses renders against a fixed context
 * (nested values, strings that need escaping, every JSON type) or fails
 * with a message, in bounded time and memory, and rendering twice gives the
 * same bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char context_json[] =
	"{\"input\": {\"a\": 1, \"b\": \"x'y\\\"z\\n\", \"c\": [1, 2.5, null, true,"
	" \"\\u00e9\\u200b\"], \"d\": {\"k\": {\"k\": [[], {}]}}},"
	" \"parameter\": {\"n\": -9223372036854775808, \"f\": 1e16, \"z\": -0.0},"
	" \"skill\": {\"id\": \"demo\", \"engines\": [\"gemini\", \"codex\"]},"
	" \"l\": [[1, 2], \"ab\", {\"x\": 1, \"y\": 2}], \"s\": \" Stra\\u00dfe \","
	" \"e\": \"\", \"n\": null, \"t\": true, \"i\": 0,"
	" \"big\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferr err = FERR_INIT;
	struct sbuf first = SBUF_INIT, second = SBUF_INIT;
	struct tmpl *t = NULL;
	json_t *ctx = NULL;
	int ret, again;

	/* beyond libFuzzer's default max_len anyway; keeps replays quick */
	if (size > 65536)
		return 0;
	ret = tmpl_parse(&t, (const char *)data, size, &err);
	if (ret < 0) {
		if (ret != -EINVAL || t || !err.message[0] || err.line < 1)
			abort();
		return 0;
	}
	if (fjson_parse(&ctx, context_json, strlen(context_json), &err) < 0)
		abort();
	ferr_clear(&err);
	ret = tmpl_render(t, ctx, &first, &err);
	if (ret < 0 && (ret != -EINVAL || !err.message[0] || first.len))
		abort();
	again = tmpl_render(t, ctx, &second, NULL);
	if (again != ret || first.len != second.len ||
	    memcmp(first.buf, second.buf, first.len) != 0)
		abort();
	tmpl_free(t);
	json_decref(ctx);
	sbuf_release(&first);
	sbuf_release(&second);
	return 0;
}
