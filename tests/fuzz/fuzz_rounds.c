/*
 * Fuzz target for rounds (core/rounds): the bytes are one JSON text; an
 * array is taken as rounds 1..n (anything else as one round).  A refusal
 * must say which file and why; rounds_check must agree with
 * rounds_check_one round by round, and rendering must refuse exactly
 * what the check refuses.  Accepted rounds are rendered both ways:
 * summary.json must parse back to the two messages with exactly the
 * user text and the transcript (rounds_render_content), and
 * summary_readable.txt must be those same two contents in their frame.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "formats/rounds.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ROUNDS 256

static const char description[] = "Find the mean fare — 平均票价";
static const char io_instructions[] = "Write it to \"output.txt\"\n";
static const char user_text[] =
	"Find the mean fare — 平均票价\n\nI/O Requirements:\n"
	"Write it to \"output.txt\"\n";

static const char rule[] =
	"===================================================================="
	"============";

static void die(const char *what)
{
	fprintf(stderr, "fuzz_rounds: %s\n", what);
	abort();
}

static void same_string(const json_t *v, const char *s, size_t len,
			const char *what)
{
	if (!json_is_string(v) || json_string_length(v) != len ||
	    memcmp(json_string_value(v), s, len))
		die(what);
}

static void check_rendered(const json_t *const *rounds, size_t n)
{
	struct sbuf content = SBUF_INIT, summary = SBUF_INIT,
		    readable = SBUF_INIT, want = SBUF_INIT;
	struct ferr err = FERR_INIT;
	json_t *doc = NULL;
	int ret;

	ret = rounds_render_content(rounds, n, &content);
	if (ret == -ENOMEM)
		goto out;
	if (ret < 0)
		die("accepted rounds do not render");
	if (rounds_render_summary(description, io_instructions, rounds, n,
				  &summary) < 0)
		die("accepted rounds give no summary.json");
	if (fjson_parse(&doc, summary.buf, summary.len, &err) < 0)
		die("summary.json does not parse");
	if (!json_is_array(doc) || json_array_size(doc) != 2)
		die("summary.json is not two messages");
	same_string(json_object_get(json_array_get(doc, 0), "role"), "user", 4,
		    "first role");
	same_string(json_object_get(json_array_get(doc, 1), "role"),
		    "assistant", 9, "second role");
	same_string(json_object_get(json_array_get(doc, 0), "content"),
		    user_text, strlen(user_text), "user content");
	same_string(json_object_get(json_array_get(doc, 1), "content"),
		    content.buf, content.len, "assistant content");

	if (rounds_render_readable(description, io_instructions, rounds, n,
				   &readable) < 0)
		die("accepted rounds give no summary_readable.txt");
	if (sbuf_addf(&want, "=== USER ===\n%s\n\n%s\n\n", user_text, rule) <
	    0 || sbuf_addstr(&want, "=== ASSISTANT ===\n") < 0 ||
	    sbuf_add(&want, content.buf, content.len) < 0 ||
	    sbuf_addf(&want, "\n\n%s\n\n", rule) < 0)
		goto out;
	if (want.len != readable.len || memcmp(want.buf, readable.buf,
					       want.len))
		die("summary_readable.txt is not the two contents");
out:
	json_decref(doc);
	sbuf_release(&content);
	sbuf_release(&summary);
	sbuf_release(&readable);
	sbuf_release(&want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ferr err = FERR_INIT;
	const json_t *rounds[MAX_ROUNDS];
	json_t *doc = NULL;
	size_t n = 0;
	int ret, one = 0;

	if (fjson_parse(&doc, (const char *)data, size, &err) < 0)
		return 0;
	if (json_is_array(doc)) {
		n = json_array_size(doc);
		if (n > MAX_ROUNDS)
			goto out;
		for (size_t i = 0; i < n; i++)
			rounds[i] = json_array_get(doc, i);
	} else {
		rounds[0] = doc;
		n = 1;
	}
	ret = rounds_check(rounds, n, &err);
	for (size_t i = 0; i < n && !one; i++)
		one = rounds_check_one(i + 1, n, rounds[i], NULL);
	if ((ret < 0) != (one < 0))
		die("rounds_check and rounds_check_one disagree");
	if (ret < 0) {
		struct sbuf sb = SBUF_INIT;

		if (ret != -EINVAL || strncmp(err.message, "rounds/", 7) ||
		    strncmp(err.path, "rounds/", 7) ||
		    strncmp(err.message, err.path, strlen(err.path)))
			die("a refusal that does not name its file");
		if (rounds_render_summary(description, io_instructions, rounds,
					  n, &sb) != -EINVAL || sb.len)
			die("refused rounds render");
		sbuf_release(&sb);
		goto out;
	}
	check_rendered(rounds, n);
out:
	json_decref(doc);
	return 0;
}
