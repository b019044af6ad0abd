/*
 * rounds_render: for the differential test tests/integration/
 * test_rounds_fidelity.py.  stdin is one JSON array of cases
 * {"description", "io_instructions", "rounds": [...]}; stdout is one
 * JSON array with, per case, {"summary": <summary.json text>,
 * "readable": <summary_readable.txt text>} or {"error": <message>}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/fjson.h"
#include "formats/rounds.h"

#define MAX_ROUNDS 256

static json_t *one(const json_t *c)
{
	const json_t *list = json_object_get(c, "rounds");
	const char *d = json_string_value(json_object_get(c, "description"));
	const char *io = json_string_value(json_object_get(c,
							   "io_instructions"));
	const json_t *rounds[MAX_ROUNDS];
	struct sbuf summary = SBUF_INIT, readable = SBUF_INIT;
	struct ferr err = FERR_INIT;
	size_t n = json_array_size(list);
	json_t *res = NULL;

	if (n > MAX_ROUNDS)
		return json_pack("{s:s}", "error", "too many rounds");
	for (size_t i = 0; i < n; i++)
		rounds[i] = json_array_get(list, i);
	if (rounds_check(rounds, n, &err) < 0) {
		res = json_pack("{s:s}", "error", err.message);
	} else if (rounds_render_summary(d, io, rounds, n, &summary) < 0 ||
		   rounds_render_readable(d, io, rounds, n, &readable) < 0) {
		res = json_pack("{s:s}", "error", "render failed");
	} else {
		res = json_pack("{s:s%,s:s%}", "summary", summary.buf,
				summary.len, "readable", readable.buf,
				readable.len);
	}
	sbuf_release(&summary);
	sbuf_release(&readable);
	return res;
}

int main(void)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *cases = NULL, *results = json_array();
	int status = 1;

	if (!results || sbuf_read(&in, stdin) < 0)
		goto out;
	if (fjson_parse(&cases, in.buf, in.len, &err) < 0) {
		fprintf(stderr, "rounds_render: %s\n", err.message);
		goto out;
	}
	for (size_t i = 0; i < json_array_size(cases); i++)
		if (json_array_append_new(results,
					  one(json_array_get(cases, i))) < 0)
			goto out;
	if (fjson_dump(&out, results) < 0 ||
	    fwrite(out.buf, 1, out.len, stdout) != out.len)
		goto out;
	status = 0;
out:
	json_decref(cases);
	json_decref(results);
	sbuf_release(&in);
	sbuf_release(&out);
	return status;
}
