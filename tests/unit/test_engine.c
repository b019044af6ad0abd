/*
 * Unit tests for the pure parts of a run: engine_extract_json (the JSON
 * result in a reply), run_parse_tags (seed 004's tags in a reply) and
 * sandbox_fold / sandbox_observation (what an experiment printed, as the
 * observation).  The HTTP and process parts run against real servers
 * and processes in tests/integration/test_engine.py.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "run/engine.h"
#include "sandbox/sandbox.h"
#include "run/run.h"

static void extract(const char *text, const char *want)
{
	struct ferr err = FERR_INIT;
	json_t *got = NULL, *expected = json_loads(want, 0, NULL);

	assert_non_null(expected);
	assert_int_equal(engine_extract_json(text, &got, &err), 0);
	assert_true(json_equal(got, expected));
	json_decref(got);
	json_decref(expected);
}

static void test_extract_json(void **state)
{
	struct ferr err = FERR_INIT;
	json_t *got = (json_t *)1;

	(void)state;
	extract("{\"a\": 1}", "{\"a\": 1}");
	/* a fenced block wins over braces around it */
	extract("see {this}\n```json\n{\"a\": [1, 2]}\n```\nand {that}",
		"{\"a\": [1, 2]}");
	/* else from the first { to the last } */
	extract("The result: {\"a\": {\"b\": \"}\"}} done", "{\"a\": {\"b\": \"}\"}}");
	assert_int_equal(engine_extract_json("no json", &got, &err), -EINVAL);
	assert_null(got);
	assert_string_equal(err.message, "the reply holds no JSON object");
	assert_int_equal(engine_extract_json("} {", &got, &err), -EINVAL);
	assert_int_equal(engine_extract_json("```json\n[1]\n```", &got, &err),
			 -EINVAL);
	assert_string_equal(err.message, "the reply's JSON is not an object");
	ferr_clear(&err);
	assert_int_equal(engine_extract_json("{\"a\": }", &got, &err), -EINVAL);
	assert_int_equal(err.line, 1);
}

static void tags(const char *reply, const char *want)
{
	json_t *got = run_parse_tags(reply), *expected = json_loads(want, 0, NULL);

	assert_non_null(got);
	assert_non_null(expected);
	if (!json_equal(got, expected)) {
		char *s = json_dumps(got, 0);

		fail_msg("got %s", s);
	}
	json_decref(got);
	json_decref(expected);
}

static void test_parse_tags(void **state)
{
	(void)state;
	tags("", "{}");
	tags("<Phenomenon>\n  p  \n</Phenomenon> <Model>m</Model>",
	     "{\"phenomenon\": \"p\", \"model\": \"m\"}");
	/* unclosed or lower-case tags are not tags */
	tags("<Hypothesis>h <hypothesis>x</hypothesis>", "{}");
	/* a fenced experiment is its code */
	tags("<Experiment>\n```python\nprint(1)\nprint(2)\n```\n</Experiment>",
	     "{\"experiment\": \"print(1)\\nprint(2)\"}");
	tags("<Experiment>```x```</Experiment>", "{\"experiment\": \"```x```\"}");
	/* not UTF-8: no tag (found by fuzzing) */
	tags("<Model>\xff</Model><Inference>i</Inference>",
	     "{\"inference\": \"i\"}");
	tags("<Inference>i</Inference><Conclusion>c\n</Conclusion>",
	     "{\"inference\": \"i\", \"conclusion\": \"c\"}");
}

static void fold(const char *in, const char *want)
{
	struct sbuf out = SBUF_INIT;

	assert_int_equal(sandbox_fold(in, strlen(in), &out), 0);
	assert_string_equal(out.buf, want);
	sbuf_release(&out);
}

static void test_fold(void **state)
{
	struct sbuf big = SBUF_INIT, out = SBUF_INIT;

	(void)state;
	fold("", "");
	fold("a\na\nb\n", "a\na\nb\n");
	fold("a\na\na\nb\n", "a (repeated 3 times)\nb\n");
	fold("x\ny\ny\ny\ny", "x\ny (repeated 4 times)");
	fold("\n\n\n\nz\n", " (repeated 4 times)\nz\n");
	/* not UTF-8, or NUL: U+FFFD */
	fold("a\xff" "b\0c", "a\xef\xbf\xbd" "b");
	/* over 16,000 characters: the first and last 8,000, counted as
	 * characters (é is one) */
	for (int i = 0; i < 9000; i++)
		sbuf_addstr(&big, i % 2 ? "é" : "a");
	for (int i = 0; i < 9000; i++)
		sbuf_addch(&big, (char)('0' + i % 10));
	assert_int_equal(sandbox_fold(big.buf, big.len, &out), 0);
	assert_non_null(strstr(out.buf, "\n... (2000 characters cut) ...\n"));
	assert_memory_equal(out.buf, big.buf, 12000);	/* 8,000 chars */
	assert_string_equal(out.buf + strlen(out.buf) - 8000,
			    big.buf + big.len - 8000);
	sbuf_release(&big);
	sbuf_release(&out);
}

static void test_observation(void **state)
{
	struct sandbox_limits lim = { .wall_s = 7 };
	struct sandbox_result res = { 0 };
	struct sbuf out = SBUF_INIT;

	(void)state;
	sbuf_init(&res.out);
	sbuf_init(&res.err);
	sbuf_addstr(&res.out, "fine\n");
	sbuf_addstr(&res.err, "a warning\n");
	res.status = 0;		/* exited 0: stdout */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\n");
	sbuf_reset(&out);
	res.status = 1 << 8;	/* exit status 1: stderr */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "a warning\n");
	sbuf_reset(&out);
	sbuf_reset(&res.err);
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nexit status 1");
	sbuf_reset(&out);
	/* bwrap's exit status for a program killed by SIGKILL: 128 + 9 */
	res.status = 137 << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nkilled by signal 9 (SIGKILL)");
	sbuf_reset(&out);
	res.status = (128 + 11) << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nkilled by signal 11 (SIGSEGV)");
	sbuf_reset(&out);
	res.status = (128 + 40) << 8;	/* real-time: no name */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nkilled by signal 40");
	sbuf_reset(&out);
	res.status = 128 << 8;		/* 128 and past 128 + 64: a status */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nexit status 128");
	sbuf_reset(&out);
	res.status = 200 << 8;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nexit status 200");
	sbuf_reset(&out);
	res.status = SIGTERM;		/* bwrap itself killed */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\nkilled by signal 15 (SIGTERM)");
	sbuf_reset(&out);
	res.timed_out = true;
	res.status = 9;		/* killed */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\n(stopped after 7 s)");
	sbuf_reset(&out);
	res.timed_out = false;
	res.over = SANDBOX_OVER_DISK;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\n(stopped: it wrote more than 1024 MiB"
			    " to its folder)");
	sbuf_reset(&out);
	res.over = SANDBOX_OVER_FILES;
	res.status = 0;		/* it ended 0 as it was stopped: still stopped */
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\n(stopped: it made more than 10000"
			    " files and folders in its folder)");
	sbuf_reset(&out);
	res.over = SANDBOX_OVER_MEMORY;
	lim.memory_total_mib = 512;
	assert_int_equal(sandbox_observation(&res, &lim, &out), 0);
	assert_string_equal(out.buf, "fine\n(stopped: it ran out of memory, 512 MiB"
			    " for all its processes)");
	sandbox_result_release(&res);
	sbuf_release(&out);
}

/* An experiment that cannot start is an error, not an exit status. */
static void test_experiment_that_cannot_start(void **state)
{
	struct sandbox_limits lim = { .wall_s = 7 };
	struct sandbox_result res;
	struct ferr err = FERR_INIT;

	(void)state;
	assert_int_equal(sandbox_run_python("/nonexistent/flowfs-scratch", "x.py",
				     &lim, NULL, NULL, &res, &err), -EIO);
	/* bwrap's own complaint: the sandbox could not be made */
	assert_string_equal(err.message, "cannot start the experiment's"
			    " sandbox (bwrap): bwrap: Can't find source path"
			    " /nonexistent/flowfs-scratch: No such file or"
			    " directory");
	sandbox_result_release(&res);
}

/* Issue 12: credentials in --engine-url showed in status, engine.log,
 * .flowfs/config and the database. */
static void test_url_shown(void **state)
{
	static const char *const cases[][2] = {
		{ "http://user:pass@host/v1", "http://***@host/v1" },
		{ "https://user@host:8443/v1/", "https://***@host:8443/v1/" },
		{ "http://:pw@127.0.0.1:8080/v1", "http://***@127.0.0.1:8080/v1" },
		{ "http://us%40er:p%3Ass@host/v1?x=1", "http://***@host/v1?***" },
		/* a key in the query (Azure's api-key=) */
		{ "https://host/openai/v1?api-key=SECRET#f",
		  "https://host/openai/v1?***" },
		/* nothing to hide: as given, not as libcurl spells it */
		{ "http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1" },
		{ "HTTP://Host", "HTTP://Host" },
		{ "http://", "(not a URL)" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *got = engine_url_shown(cases[i][0]);

		assert_non_null(got);
		if (strcmp(got, cases[i][1]))
			fail_msg("%s: '%s', want '%s'", cases[i][0], got,
				 cases[i][1]);
		free(got);
	}
}

/* The waits between attempts double from the first up to 60 s, exactly
 * there and never past it (README: --engine-backoff-ms). */
static void test_backoff_up_to_60_s(void **state)
{
	static const long waits[] = { 1000, 2000, 4000, 8000, 16000, 32000,
				      60000, 60000 };

	(void)state;
	for (int i = 0; i < (int)(sizeof(waits) / sizeof(*waits)); i++)
		assert_int_equal(engine_backoff_ms(1000, i), waits[i]);
	assert_int_equal(engine_backoff_ms(30000, 1), 60000);
	assert_int_equal(engine_backoff_ms(29999, 1), 59998);
	assert_int_equal(engine_backoff_ms(60000, 0), 60000);
	assert_int_equal(engine_backoff_ms(60000, 100), 60000);
	assert_int_equal(engine_backoff_ms(1, 1000), 60000);
}

static void test_backoff_past_60_s(void **state)
{
	(void)state;
	assert_int_equal(engine_backoff_ms(60001, 0), 60000);
	assert_int_equal(engine_backoff_ms(30001, 1), 60000);
	assert_int_equal(engine_backoff_ms(LONG_MAX, 3), 60000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extract_json),
		cmocka_unit_test(test_url_shown),
		cmocka_unit_test(test_backoff_up_to_60_s),
		cmocka_unit_test(test_backoff_past_60_s),
		cmocka_unit_test(test_parse_tags),
		cmocka_unit_test(test_fold),
		cmocka_unit_test(test_observation),
		cmocka_unit_test(test_experiment_that_cannot_start),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
