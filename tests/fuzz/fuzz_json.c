/*
 * fuzz_json: whatever fjson_parse accepts, fjson_dump must write so that
 * it reads back as an equal value, and writing that again must give the
 * same bytes (the writer is a fixed point after one round).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf first = SBUF_INIT, second = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *doc = NULL, *again = NULL;
	int ret;

	ret = fjson_parse(&doc, (const char *)data, size, &err);
	if (ret < 0) {
		/* A refusal must say why and where. */
		if (ret != -EINVAL && ret != -ENOMEM)
			abort();
		if (ret == -EINVAL && !err.message[0])
			abort();
		goto out;
	}
	if (fjson_dump(&first, doc) < 0)
		abort();
	if (fjson_parse(&again, first.buf, first.len, &err) < 0) {
		fprintf(stderr, "dump does not parse: %s\n", err.message);
		abort();
	}
	if (!json_equal(doc, again))
		abort();
	if (fjson_dump(&second, again) < 0)
		abort();
	if (first.len != second.len ||
	    memcmp(first.buf, second.buf, first.len) != 0)
		abort();
out:
	json_decref(doc);
	json_decref(again);
	sbuf_release(&first);
	sbuf_release(&second);
	return 0;
}
