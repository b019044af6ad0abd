/*
 * Fuzz target for what a run reads from an engine's reply and from an
 * experiment's output: engine_extract_json (the result must be an object
 * that prints and parses back the same), run_parse_tags (every tag is a
 * string that occurs in the reply), and sandbox_fold (valid UTF-8 without
 * NUL, and at most 8 times as long as the input: see below).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/engine.h"
#include "sandbox/sandbox.h"
#include "lib/fjson.h"
#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what)
{
	fprintf(stderr, "fuzz_reply: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	struct sbuf out = SBUF_INIT, again = SBUF_INIT;
	json_t *doc = NULL, *round, *back = NULL;
	const char *key;
	json_t *v;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (engine_extract_json(text, &doc, NULL) == 0) {
		if (!json_is_object(doc))
			die("extracted JSON is not an object");
		if (fjson_dump(&out, doc) < 0 ||
		    fjson_parse(&back, out.buf, out.len, NULL) < 0 ||
		    fjson_dump(&again, back) < 0 || strcmp(out.buf, again.buf))
			die("extracted JSON does not print back");
	}
	round = run_parse_tags(text);
	if (!round)
		die("run_parse_tags failed");
	json_object_foreach(round, key, v) {
		if (!json_is_string(v))
			die("a tag that is not a string");
		if (!memmem(text, strlen(text), json_string_value(v),
			    json_string_length(v)))
			die("a tag's text that is not in the reply");
	}
	sbuf_reset(&out);
	if (sandbox_fold((const char *)data, size, &out) < 0)
		die("sandbox_fold failed");
	if (strlen(out.buf) != out.len)
		die("a NUL in the folded text");
	/* a bad byte becomes U+FFFD (3 bytes); three empty lines become
	 * " (repeated 3 times)\n" (20): nothing grows more than that */
	if (out.len > 8 * size + 64)
		die("the folded text grew");
	json_decref(doc);
	json_decref(back);
	json_decref(round);
	sbuf_release(&out);
	sbuf_release(&again);
	free(text);
	return 0;
}
