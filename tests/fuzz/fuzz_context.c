/*
 * Fuzz target for context.json (core/context): the bytes are one written
 * context.json.  Whatever fjson_parse accepts goes through context_check;
 * a refusal must be -EINVAL with a message (or -ENOMEM) and no document.
 * An accepted document must render to context.txt (valid as text: no NUL,
 * every line ended), and checking it again must accept it unchanged (the
 * stored form is a fixed point: a converted legacy message is no longer
 * legacy), rendering the same text; its fjson text must read back equal.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/context.h"
#include "lib/fjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "fuzz_context: %s%s%s\n", what, detail ? ": " : "",
		detail ? detail : "");
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sbuf txt = SBUF_INIT, txt2 = SBUF_INIT, stored = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *doc = NULL, *out = NULL, *again = NULL, *back = NULL;
	int ret;

	if (fjson_parse(&doc, (const char *)data, size, NULL) < 0)
		goto out;
	ret = context_check(doc, 1764100000.25, &out, &err);
	if (ret < 0) {
		if (out)
			die("a refusal returned a document", NULL);
		if (ret == -EINVAL && !err.message[0])
			die("a refusal without a message", NULL);
		if (ret != -EINVAL && ret != -ENOMEM)
			die("an unexpected error", strerror(-ret));
		goto out;
	}
	if (context_render_text(out, &txt) < 0)
		die("an accepted document does not render", NULL);
	if (memchr(txt.buf, '\0', txt.len) || !txt.len ||
	    txt.buf[txt.len - 1] != '\n')
		die("context.txt is not lines of text", txt.buf);
	ferr_clear(&err);
	if (context_check(out, 1764100000.25, &again, &err) < 0)
		die("the stored document is refused", err.message);
	if (!json_equal(out, again))
		die("checking the stored document changed it", NULL);
	if (context_render_text(again, &txt2) < 0 || txt.len != txt2.len ||
	    memcmp(txt.buf, txt2.buf, txt.len))
		die("context.txt is not deterministic", NULL);
	if (fjson_dump(&stored, out) < 0 ||
	    fjson_parse(&back, stored.buf, stored.len, NULL) < 0 ||
	    !json_equal(out, back))
		die("the stored text does not read back", stored.buf);
out:
	json_decref(doc);
	json_decref(out);
	json_decref(again);
	json_decref(back);
	sbuf_release(&txt);
	sbuf_release(&txt2);
	sbuf_release(&stored);
	return 0;
}
