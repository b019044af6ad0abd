/*
 * Unit tests for inputs: the refusal rules of request.json, the matching
 * of uploads/ names to file inputs, input.json and parameter.json, the
 * status problem lines and the output manifest.
 *
 * Skills are built by hand from JSON texts (skill_load is tested in
 * test_skill.c).  Expected messages and lines are the texts of issue 3
 * (notes/issue3.md); expected documents are written here as Python's
 * json.dumps(obj, indent=2) writes them.
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
#include "session/inputs.h"
#include "session/skill.h"

#define UPLOADS "/mnt/flow/s1/uploads"

static json_t *parse(const char *text)
{
	struct ferr err = FERR_INIT;
	json_t *v = NULL;

	if (fjson_parse(&v, text, strlen(text), &err) < 0)
		fail_msg("bad test JSON %s: %s", text, err.message);
	return v;
}

/* A loaded skill "demo" with these schemas (NULL: none). */
static struct skill *mk(const char *input, const char *parameter,
			const char *output)
{
	struct skill *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->id = strdup("demo");
	s->dir = strdup("/nonexistent/demo");
	s->runner = parse("{\"id\": \"demo\", \"engines\": [\"gemini\", \"codex\"],"
			  " \"entrypoint\": {\"prompts\": {\"codex\": \"Plain codex prompt.\\n\"}}}");
	s->engines = json_object_get(s->runner, "engines");
	s->input_schema = input ? parse(input) : NULL;
	s->parameter_schema = parameter ? parse(parameter) : NULL;
	s->output_schema = output ? parse(output) : NULL;
	assert_int_equal(skill_parse_prompts(s), 0);
	return s;
}

/* ---- request.json -------------------------------------------------------- */

#define QUERY_INPUTS \
	"{\"type\": \"object\", \"properties\": {" \
	"\"csv_file\": {\"type\": \"string\", \"extensions\": [\".csv\"]}," \
	"\"query\": {\"type\": \"string\", \"x-input-source\": \"inline\"}," \
	"\"limit\": {\"type\": \"integer\", \"minimum\": 1, \"x-input-source\": \"inline\"}," \
	"\"weird\": {\"type\": \"string\", \"x-input-source\": \"INLINE\"}," \
	"\"odd\": {\"type\": \"string\", \"x-input-source\": 3}," \
	"\"plain\": {\"type\": \"string\", \"x-input-source\": \"file\"}}," \
	" \"required\": [\"csv_file\", \"query\"]}"
#define DIVISOR_PARAMS \
	"{\"type\": \"object\", \"properties\": {" \
	"\"divisor\": {\"type\": \"integer\", \"minimum\": 1}," \
	"\"mode\": {\"enum\": [\"fast\", \"slow\"]}}," \
	" \"required\": [\"divisor\"], \"additionalProperties\": false}"

static void expect_refused(const struct skill *sk, const char *request,
			   const char *msg)
{
	struct ferr err = FERR_INIT;
	json_t *req = parse(request);

	assert_int_equal(inputs_check_request(sk, req, &err), -EINVAL);
	if (msg)
		assert_string_equal(err.message, msg);
	else
		assert_true(err.message[0] != 0);
	json_decref(req);
}

static void expect_accepted(const struct skill *sk, const char *request)
{
	struct ferr err = FERR_INIT;
	json_t *req = parse(request);

	if (inputs_check_request(sk, req, &err) != 0)
		fail_msg("%s refused: %s", request, err.message);
	json_decref(req);
}

static void test_check_accepts(void **state)
{
	struct skill *sk = mk(QUERY_INPUTS, DIVISOR_PARAMS, NULL);

	(void)state;
	expect_accepted(sk, "{}");
	expect_accepted(sk, "{\"input\": {}, \"parameter\": {}}");
	expect_accepted(sk, "{\"input\": {}}");
	expect_accepted(sk, "{\"parameter\": {}}");
	/* missing required values are accepted (status lists them) */
	expect_accepted(sk, "{\"input\": {\"limit\": 3}, \"parameter\": {\"mode\": \"slow\"}}");
	expect_accepted(sk, "{\"input\": {\"query\": \"x\", \"limit\": 1},"
			    " \"parameter\": {\"divisor\": 2, \"mode\": \"fast\"}}");
	expect_accepted(sk, "{\"parameter\": {\"divisor\": 1}, \"input\": {\"query\": \"\"}}");
	skill_free(sk);
}

static void test_check_refusals(void **state)
{
	struct skill *sk = mk(QUERY_INPUTS, DIVISOR_PARAMS, NULL);

	(void)state;
	expect_refused(sk, "[]", NULL);
	expect_refused(sk, "\"input\"", NULL);
	expect_refused(sk, "null", NULL);
	expect_refused(sk, "{\"input\": {}, \"x\": 1}",
		       "unknown key 'x' (request.json has input, parameter)");
	expect_refused(sk, "{\"inputs\": {}}",
		       "unknown key 'inputs' (request.json has input, parameter)");
	/* the shape, with a skill bound or not */
	for (int i = 0; i < 2; i++) {
		const struct skill *s = i ? sk : NULL;

		expect_refused(s, "{\"input\": []}", "input must be an object");
		expect_refused(s, "{\"input\": \"q\"}", "input must be an object");
		expect_refused(s, "{\"parameter\": [1]}",
			       "parameter must be an object");
		expect_refused(s, "{\"parameter\": null}",
			       "parameter must be an object");
		expect_refused(s, "{\"input\": {}, \"parameter\": 2}",
			       "parameter must be an object");
	}
	expect_accepted(NULL, "{\"input\": {\"k\": 1}, \"parameter\": {\"x\": 2}}");
	expect_refused(sk, "{\"input\": {\"k\": 1}}", "unknown input key 'k'");
	expect_refused(sk, "{\"input\": {\"csv_file\": \"/tmp/a.csv\"}}",
		       "key 'csv_file' is file-sourced; write it to uploads/csv_file or give an http:// or https:// URL to fetch it from");
	expect_refused(sk, "{\"input\": {\"plain\": \"x\"}}",
		       "key 'plain' is file-sourced; write it to uploads/plain or give an http:// or https:// URL to fetch it from");
	/* x-input-source that is not exactly "inline": a file input */
	expect_refused(sk, "{\"input\": {\"weird\": \"x\"}}",
		       "key 'weird' is file-sourced; write it to uploads/weird or give an http:// or https:// URL to fetch it from");
	expect_refused(sk, "{\"input\": {\"odd\": \"x\"}}",
		       "key 'odd' is file-sourced; write it to uploads/odd or give an http:// or https:// URL to fetch it from");
	expect_refused(sk, "{\"input\": {\"query\": 5.5}}",
		       "input.query: expected a string, got a number");
	expect_refused(sk, "{\"input\": {\"limit\": 0}}",
		       "input.limit: 0 is less than the minimum of 1");
	expect_refused(sk, "{\"parameter\": {\"divisor\": 0}}",
		       "parameter.divisor: 0 is less than the minimum of 1");
	expect_refused(sk, "{\"parameter\": {\"divisor\": \"2\"}}",
		       "parameter.divisor: expected an integer, got a string");
	expect_refused(sk, "{\"parameter\": {\"colour\": 1}}", NULL);
	expect_refused(sk, "{\"parameter\": {\"mode\": \"medium\"}}", NULL);
	skill_free(sk);
}

static void test_check_ref_in_input(void **state)
{
	/* an inline input's $ref resolves in the input schema */
	struct skill *sk = mk("{\"definitions\": {\"q\": {\"type\": \"string\"}},"
			      " \"properties\": {\"query\": {\"$ref\": \"#/definitions/q\","
			      " \"x-input-source\": \"inline\"}}}", NULL, NULL);

	(void)state;
	expect_accepted(sk, "{\"input\": {\"query\": \"x\"}}");
	expect_refused(sk, "{\"input\": {\"query\": 5.5}}",
		       "input.query: expected a string, got a number");
	skill_free(sk);
}

static void test_check_no_schemas(void **state)
{
	struct skill *sk = mk(NULL, NULL, NULL);

	(void)state;
	expect_accepted(sk, "{}");
	expect_accepted(sk, "{\"input\": {}, \"parameter\": {}}");
	expect_refused(sk, "{\"input\": {\"q\": 1}}", "unknown input key 'q'");
	/* parameters for a skill with no parameter schema */
	expect_refused(sk, "{\"parameter\": {\"n\": 1}}", NULL);
	skill_free(sk);
}

/* ---- resolution helpers -------------------------------------------------- */

struct up {
	const char *name;
	bool dir;
};

/* Resolve; the caller releases `in`. */
static void resolve(const struct skill *sk, const char *request,
		    const struct up *ups, size_t n, struct inputs *in)
{
	struct inputs_upload list[16];
	json_t *req = request ? parse(request) : NULL;

	assert_true(n <= 16);
	for (size_t i = 0; i < n; i++) {
		list[i].name = ups[i].name;
		list[i].dir = ups[i].dir;
	}
	assert_int_equal(inputs_resolve(sk, req, list, n, UPLOADS, in), 0);
	json_decref(req);
}

static void expect_doc(const json_t *v, const char *want)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(fjson_dump(&sb, v), 0);
	assert_string_equal(sb.buf, want);
	sbuf_release(&sb);
}

/* Which upload binds `key` of a one-file-input skill (NULL: none). */
static void expect_binding(const struct skill *sk, const char *key,
			   const struct up *ups, size_t n, const char *name,
			   const char *problems)
{
	struct inputs in;
	const json_t *v;

	resolve(sk, NULL, ups, n, &in);
	v = json_object_get(in.input, key);
	if (name) {
		char want[512];

		snprintf(want, sizeof(want), UPLOADS "/%s", name);
		if (!json_is_string(v))
			fail_msg("%s not bound (want %s); problems: %s", key,
				 name, in.problems.buf);
		assert_string_equal(json_string_value(v), want);
	} else if (v) {
		fail_msg("%s bound to %s", key, json_string_value(v));
	}
	if (problems)
		assert_string_equal(in.problems.buf, problems);
	inputs_release(&in);
}

#define CSV_SKILL(exts) \
	"{\"type\": \"object\", \"properties\": {\"csv_file\": {\"type\": \"string\"," \
	" \"extensions\": " exts "}}, \"required\": [\"csv_file\"]}"
#define MISSING_CSV "missing required input files: csv_file\n"

#define N(a) (sizeof(a) / sizeof(*(a)))

/* ---- uploads/ key matching ---------------------------------------------- */

static void test_match_exact(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[\".csv\"]"), NULL, NULL);
	const struct up file[] = { { "other.csv", false }, { "csv_file", false } };
	const struct up dir[] = { { "csv_file", true } };
	const struct up none[] = { { "other.csv", false } };

	(void)state;
	expect_binding(sk, "csv_file", file, N(file), "csv_file", "");
	expect_binding(sk, "csv_file", dir, N(dir), "csv_file", "");
	expect_binding(sk, "csv_file", none, N(none), NULL, MISSING_CSV
		       "uploads/: other.csv binds no input; the names that"
		       " would bind: csv_file, csv_file.csv\n");
	expect_binding(sk, "csv_file", NULL, 0, NULL, MISSING_CSV);
	skill_free(sk);
}

static void test_match_extensions(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[\".csv\"]"), NULL, NULL);
	struct skill *nodot = mk(CSV_SKILL("[\"csv\"]"), NULL, NULL);
	struct skill *upper = mk(CSV_SKILL("[\".CSV\", \".tsv\"]"), NULL, NULL);
	const struct up lower[] = { { "csv_file.csv", false } };
	const struct up caps[] = { { "csv_file.CSV", false } };
	const struct up mixed[] = { { "csv_file.cSv", true } };
	const struct up tsv[] = { { "csv_file.tsv", false } };

	(void)state;
	expect_binding(sk, "csv_file", lower, 1, "csv_file.csv", "");
	expect_binding(sk, "csv_file", caps, 1, "csv_file.CSV", "");
	expect_binding(sk, "csv_file", mixed, 1, "csv_file.cSv", "");
	expect_binding(nodot, "csv_file", lower, 1, "csv_file.csv", "");
	expect_binding(nodot, "csv_file", caps, 1, "csv_file.CSV", "");
	expect_binding(upper, "csv_file", lower, 1, "csv_file.csv", "");
	expect_binding(upper, "csv_file", tsv, 1, "csv_file.tsv", "");
	skill_free(sk);
	skill_free(nodot);
	skill_free(upper);
}

static void test_match_two_candidates(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[\".csv\"]"), NULL, NULL);
	const struct up two[] = { { "csv_file", false }, { "csv_file.csv", false } };
	const struct up cases[] = { { "csv_file.CSV", false }, { "csv_file.csv", false } };

	(void)state;
	expect_binding(sk, "csv_file", two, N(two), NULL,
		       "uploads/: 2 files could be input csv_file (csv_file, csv_file.csv); keep one\n"
		       MISSING_CSV);
	expect_binding(sk, "csv_file", cases, N(cases), NULL,
		       "uploads/: 2 files could be input csv_file (csv_file.CSV, csv_file.csv); keep one\n"
		       MISSING_CSV);
	skill_free(sk);
}

static void test_match_disallowed(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[\".csv\"]"), NULL, NULL);
	struct skill *two = mk(CSV_SKILL("[\".csv\", \"tsv\"]"), NULL, NULL);
	const struct up pdf[] = { { "csv_file.pdf", false } };
	const struct up pdfs[] = { { "csv_file.pdf", false }, { "csv_file.txt", true } };
	const struct up both[] = { { "csv_file.csv", false }, { "csv_file.pdf", false } };

	(void)state;
	expect_binding(sk, "csv_file", pdf, 1, NULL,
		       "uploads/csv_file.pdf: extension .pdf not allowed for csv_file (allowed: .csv)\n"
		       MISSING_CSV);
	expect_binding(sk, "csv_file", pdfs, 2, NULL,
		       "uploads/csv_file.pdf: extension .pdf not allowed for csv_file (allowed: .csv)\n"
		       "uploads/csv_file.txt: extension .txt not allowed for csv_file (allowed: .csv)\n"
		       MISSING_CSV);
	expect_binding(two, "csv_file", pdf, 1, NULL,
		       "uploads/csv_file.pdf: extension .pdf not allowed for csv_file (allowed: .csv, tsv)\n"
		       MISSING_CSV);
	/* an allowed one beside it: bound, nothing to complain about */
	expect_binding(sk, "csv_file", both, 2, "csv_file.csv", "");
	skill_free(sk);
	skill_free(two);
}

/* non-string entries of "extensions" are skipped, also in the list */
static void test_match_disallowed_odd_list(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[7, \".csv\", null, \".tsv\"]"), NULL, NULL);
	const struct up pdf[] = { { "csv_file.pdf", false } };
	const struct up csv[] = { { "csv_file.tsv", false } };

	(void)state;
	expect_binding(sk, "csv_file", pdf, 1, NULL,
		       "uploads/csv_file.pdf: extension .pdf not allowed for csv_file (allowed: .csv, .tsv)\n"
		       MISSING_CSV);
	expect_binding(sk, "csv_file", csv, 1, "csv_file.tsv", "");
	skill_free(sk);
}

static void test_match_no_extensions(void **state)
{
	struct skill *sk = mk("{\"properties\": {\"report\": {\"type\": \"string\"}},"
			      " \"required\": [\"report\"]}", NULL, NULL);
	struct skill *empty = mk("{\"properties\": {\"report\": {\"extensions\": []}},"
				 " \"required\": [\"report\"]}", NULL, NULL);
	const struct up txt[] = { { "report.txt", false }, { "report.csv", false } };
	const struct up exact[] = { { "report.txt", false }, { "report", false } };

	(void)state;
	/* without declared extensions only the exact name binds: no problem
	 * line for the near misses */
	expect_binding(sk, "report", txt, 2, NULL,
		       "missing required input files: report\n");
	expect_binding(sk, "report", exact, 2, "report", "");
	expect_binding(empty, "report", txt, 2, NULL,
		       "missing required input files: report\n");
	expect_binding(empty, "report", exact, 2, "report", "");
	skill_free(sk);
	skill_free(empty);
}

static void test_match_prefix_only(void **state)
{
	struct skill *sk = mk(CSV_SKILL("[\".csv\"]"), NULL, NULL);
	const struct up near[] = {
		{ "csv_file_old.csv", false }, { "csv_files.csv", false },
		{ "csv_file2", false }, { "csv_file.backup.csv", false },
		{ "CSV_FILE.csv", false }, { "csv_fil.csv", false },
		{ "xcsv_file.csv", false }, { "csv_file.", false },
	};

	(void)state;
	expect_binding(sk, "csv_file", near, N(near), NULL, NULL);
	skill_free(sk);
}

static void test_match_dotted_key(void **state)
{
	struct skill *sk = mk("{\"properties\": {\"data.v1\": {\"extensions\": [\".csv\"]}}}",
			      NULL, NULL);
	const struct up ext[] = { { "data.v1.csv", false }, { "data.csv", false } };
	const struct up exact[] = { { "data.v1", false } };

	(void)state;
	expect_binding(sk, "data.v1", ext, 2, "data.v1.csv", "");
	expect_binding(sk, "data.v1", exact, 1, "data.v1", "");
	skill_free(sk);
}

/* "<key><ext>" with a declared extension of two parts binds (issue 3:
 * uploads/<key><ext> with an allowed extension) */
static void test_match_multi_part_extension(void **state)
{
	struct skill *sk = mk("{\"properties\": {\"archive\": {\"extensions\": [\".tar.gz\"]}}}",
			      NULL, NULL);
	const struct up up[] = { { "archive.tar.gz", false } };

	(void)state;
	expect_binding(sk, "archive", up, 1, "archive.tar.gz", "");
	skill_free(sk);
}

/* ---- input.json, parameter.json ----------------------------------------- */

static void test_input_order_and_inline(void **state)
{
	struct skill *sk = mk(
		"{\"properties\": {"
		"\"b_file\": {\"extensions\": [\".txt\"]},"
		"\"a_inline\": {\"x-input-source\": \"inline\"},"
		"\"c_opt\": {},"
		"\"d_inline\": {\"x-input-source\": \"inline\"},"
		"\"e_obj\": {\"x-input-source\": \"inline\"}},"
		" \"required\": [\"b_file\"]}", NULL, NULL);
	const struct up ups[] = { { "b_file.TXT", false }, { "zzz", false } };
	struct inputs in;

	(void)state;
	resolve(sk, "{\"input\": {\"e_obj\": {\"k\": [1, 2.5]}, \"a_inline\": \"x\"}}",
		ups, 2, &in);
	expect_doc(in.input,
		   "{\n"
		   "  \"b_file\": \"/mnt/flow/s1/uploads/b_file.TXT\",\n"
		   "  \"a_inline\": \"x\",\n"
		   "  \"e_obj\": {\n"
		   "    \"k\": [\n"
		   "      1,\n"
		   "      2.5\n"
		   "    ]\n"
		   "  }\n"
		   "}");
	assert_string_equal(in.problems.buf, "");
	inputs_release(&in);
	skill_free(sk);
}

static void test_parameter_order(void **state)
{
	struct skill *sk = mk(NULL,
		"{\"properties\": {"
		"\"x\": {\"default\": 1},"
		"\"y\": {\"type\": \"string\"},"
		"\"z\": {\"default\": [3]},"
		"\"w\": {\"default\": 4},"
		"\"v\": {}}}", NULL);
	struct inputs in;

	(void)state;
	resolve(sk, "{\"parameter\": {\"w\": 9, \"y\": \"s\"}}", NULL, 0, &in);
	expect_doc(in.parameter,
		   "{\n  \"w\": 9,\n  \"y\": \"s\",\n  \"x\": 1,\n  \"z\": [\n    3\n  ]\n}");
	assert_string_equal(in.problems.buf, "");
	inputs_release(&in);

	/* no request yet: the defaults */
	resolve(sk, NULL, NULL, 0, &in);
	expect_doc(in.parameter, "{\n  \"x\": 1,\n  \"z\": [\n    3\n  ],\n  \"w\": 4\n}");
	expect_doc(in.input, "{}");
	inputs_release(&in);
	skill_free(sk);
}

static void test_parameter_without_schema(void **state)
{
	struct skill *sk = mk(
		"{\"properties\": {"
		"\"data\": {},"
		"\"q\": {\"x-input-source\": \"inline\"},"
		"\"n\": {\"x-input-source\": \"inline\"}}}", NULL, NULL);
	const struct up ups[] = { { "data", false } };
	struct inputs in;

	(void)state;
	resolve(sk, "{\"input\": {\"n\": 2, \"q\": \"s\"}}", ups, 1, &in);
	expect_doc(in.input,
		   "{\n  \"data\": \"/mnt/flow/s1/uploads/data\",\n"
		   "  \"q\": \"s\",\n  \"n\": 2\n}");
	/* its inline inputs, not the files */
	expect_doc(in.parameter, "{\n  \"q\": \"s\",\n  \"n\": 2\n}");
	inputs_release(&in);
	skill_free(sk);
}

/* required parameters the schema reaches by a top-level $ref are
 * missing too (the defaults there are applied) */
static void test_parameter_required_elsewhere(void **state)
{
	struct skill *ref = mk(NULL,
		"{\"$ref\": \"#/definitions/p\", \"definitions\": {\"p\": {"
		"\"properties\": {\"divisor\": {\"default\": 2}, \"mode\": {}},"
		" \"required\": [\"divisor\", \"mode\"]}}}", NULL);
	struct inputs in;

	(void)state;
	resolve(ref, NULL, NULL, 0, &in);
	expect_doc(in.parameter, "{\n  \"divisor\": 2\n}");
	assert_string_equal(in.problems.buf, "missing required parameters: mode\n");
	inputs_release(&in);
	skill_free(ref);
}

static void test_parameter_required_without_property(void **state)
{
	struct skill *bare = mk(NULL,
		"{\"properties\": {\"a\": {}}, \"required\": [\"a\", \"b\"]}",
		NULL);
	struct inputs in;

	(void)state;
	resolve(bare, NULL, NULL, 0, &in);
	assert_string_equal(in.problems.buf, "missing required parameters: a, b\n");
	inputs_release(&in);
	skill_free(bare);
	/* the same behind a top-level $ref: its "required" is the one read
	 * (the names without a property were looked up beside the $ref) */
	bare = mk(NULL, "{\"$ref\": \"#/definitions/p\", \"definitions\": {\"p\":"
		  " {\"properties\": {\"a\": {}}, \"required\": [\"a\", \"b\"]}}}",
		  NULL);
	resolve(bare, NULL, NULL, 0, &in);
	assert_string_equal(in.problems.buf, "missing required parameters: a, b\n");
	inputs_release(&in);
	skill_free(bare);
}

static void test_no_input_schema(void **state)
{
	struct skill *sk = mk(NULL, NULL, NULL);
	const struct up ups[] = { { "whatever", false } };
	struct inputs in;

	(void)state;
	resolve(sk, NULL, ups, 1, &in);
	expect_doc(in.input, "{}");
	expect_doc(in.parameter, "{}");
	assert_string_equal(in.problems.buf, "");
	inputs_release(&in);
	skill_free(sk);
}

/* ---- problems ------------------------------------------------------------ */

static void test_problem_order(void **state)
{
	struct skill *sk = mk(
		"{\"properties\": {"
		"\"a\": {\"extensions\": [\".csv\"]},"
		"\"q\": {\"x-input-source\": \"inline\"},"
		"\"b\": {\"extensions\": [\".txt\"]},"
		"\"c\": {},"
		"\"r\": {\"x-input-source\": \"inline\"},"
		"\"opt\": {\"extensions\": [\".md\"]}},"
		" \"required\": [\"r\", \"a\", \"b\", \"c\", \"q\"]}",
		"{\"properties\": {\"p2\": {}, \"p1\": {}, \"p3\": {\"default\": 1}},"
		" \"required\": [\"p1\", \"p2\", \"p3\"]}", NULL);
	const struct up ups[] = {
		{ "a.pdf", false }, { "b", false }, { "b.txt", false },
		{ "opt.doc", false },
	};
	struct inputs in;

	(void)state;
	resolve(sk, "{\"input\": {\"zzz\": 1}}", ups, N(ups), &in);
	assert_string_equal(in.problems.buf,
		"uploads/a.pdf: extension .pdf not allowed for a (allowed: .csv)\n"
		"uploads/: 2 files could be input b (b, b.txt); keep one\n"
		"uploads/opt.doc: extension .doc not allowed for opt (allowed: .md)\n"
		"missing required input files: a, b, c\n"
		"missing required inputs: q, r\n"
		"missing required parameters: p2, p1\n"
		"request.json: unknown input key 'zzz'\n");
	inputs_release(&in);

	/* all there: no problems */
	{
		const struct up good[] = {
			{ "a.csv", false }, { "b.txt", false }, { "c", true },
		};

		resolve(sk, "{\"input\": {\"q\": 1, \"r\": null},"
			" \"parameter\": {\"p1\": 0, \"p2\": 0}}", good, 3, &in);
		assert_string_equal(in.problems.buf, "");
		inputs_release(&in);
	}
	skill_free(sk);
}

static void test_stale_request(void **state)
{
	struct skill *a = mk("{\"properties\": {\"query\": {\"type\": \"string\","
			     " \"x-input-source\": \"inline\"}}}",
			     "{\"properties\": {\"n\": {\"type\": \"integer\"}}}", NULL);
	struct skill *b = mk("{\"properties\": {\"query\": {\"type\": \"string\"}}}",
			     "{\"properties\": {\"n\": {\"type\": \"string\"}}}", NULL);
	struct skill *c = mk(NULL, "{\"properties\": {\"n\": {\"type\": \"integer\"}}}",
			     NULL);
	struct skill *d = mk("{\"properties\": {\"query\": {\"type\": \"string\","
			     " \"x-input-source\": \"inline\"}}}", NULL, NULL);
	const char *req = "{\"input\": {\"query\": \"x\"}, \"parameter\": {\"n\": 2}}";
	struct inputs in;

	(void)state;
	expect_accepted(a, req);
	resolve(a, req, NULL, 0, &in);
	assert_string_equal(in.problems.buf, "");
	inputs_release(&in);

	/* after rebinding to skills the stored request no longer fits */
	resolve(b, req, NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"request.json: key 'query' is file-sourced; write it to uploads/query"
		" or give an http:// or https:// URL to fetch it from\n");
	inputs_release(&in);
	resolve(c, req, NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"request.json: unknown input key 'query'\n");
	inputs_release(&in);
	resolve(c, "{\"parameter\": {\"n\": \"2\"}}", NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"request.json: parameter.n: expected an integer, got a string\n");
	inputs_release(&in);
	resolve(d, req, NULL, 0, &in);
	assert_true(strncmp(in.problems.buf, "request.json: ", 14) == 0);
	assert_non_null(strchr(in.problems.buf, '\n'));
	assert_int_equal(strchr(in.problems.buf, '\n')[1], 0);
	inputs_release(&in);
	skill_free(a);
	skill_free(b);
	skill_free(c);
	skill_free(d);
}

/*
 * Issue 29: a file copied in under its own name (uploads/data.csv for
 * input csv_file) bound nothing and nothing said so.  The entries no
 * input could take are named with the names that would bind: beside
 * "missing required input files" while a required one is missing, else
 * as a note (status stays ready).
 */
static void test_unbound_uploads(void **state)
{
	struct skill *sk = mk(
		"{\"properties\": {"
		"\"csv_file\": {\"extensions\": [\".csv\", \"tsv\"]},"
		"\"q\": {\"x-input-source\": \"inline\"},"
		"\"image\": {}},"
		" \"required\": [\"csv_file\"]}", NULL, NULL);
	const struct up one[] = { { "data.csv", false } };
	const struct up many[] = {
		{ "a", false }, { ".a.swp", false }, { "csv_file.pdf", false },
		{ "b", true }, { "c", false }, { "d", false }, { "e", false },
	};
	const struct up bound[] = { { "csv_file.csv", false }, { "data.csv", false } };
	const struct up all[] = {
		{ "csv_file.csv", false }, { "image", false }, { "notes.txt", false },
	};
	struct inputs in;

	(void)state;
	resolve(sk, NULL, one, N(one), &in);
	assert_string_equal(in.problems.buf,
		"missing required input files: csv_file\n"
		"uploads/: data.csv binds no input; the names that would bind:"
		" csv_file, csv_file.csv, csv_file.tsv, image\n");
	assert_string_equal(in.notes.buf, "");
	inputs_release(&in);
	/* hidden names and candidates (named in a line of their own) are
	 * left out; past three, how many more */
	resolve(sk, NULL, many, N(many), &in);
	assert_string_equal(in.problems.buf,
		"uploads/csv_file.pdf: extension .pdf not allowed for csv_file"
		" (allowed: .csv, tsv)\n"
		"missing required input files: csv_file\n"
		"uploads/: a, b, c and 2 more bind no input; the names that"
		" would bind: csv_file, csv_file.csv, csv_file.tsv, image\n");
	inputs_release(&in);
	/* the required one bound: a note for the optional one */
	resolve(sk, NULL, bound, N(bound), &in);
	assert_string_equal(in.problems.buf, "");
	assert_string_equal(in.notes.buf,
		"uploads/: data.csv binds no input; the names that would bind:"
		" image\n");
	inputs_release(&in);
	/* every file input bound: other files are just files */
	resolve(sk, NULL, all, N(all), &in);
	assert_string_equal(in.problems.buf, "");
	assert_string_equal(in.notes.buf, "");
	inputs_release(&in);
	skill_free(sk);
}

/*
 * Issue 29: a misspelled parameter ("colum") was stored silently where
 * the schema does not forbid undeclared names.  Each is a problem when
 * the schema says nothing of them, a note when it takes them
 * (additionalProperties true or a schema); names declared in allOf,
 * anyOf, oneOf, if/then/else and behind $ref count as declared.
 */
static void test_undeclared_parameters(void **state)
{
	struct skill *silent = mk(NULL,
		"{\"properties\": {\"column\": {\"type\": \"string\"},"
		" \"n\": {\"default\": 3}}, \"required\": [\"column\"]}", NULL);
	struct skill *open = mk(NULL,
		"{\"properties\": {\"column\": {}},"
		" \"additionalProperties\": {\"type\": \"string\"}}", NULL);
	struct skill *composed = mk(NULL,
		"{\"$ref\": \"#/definitions/p\", \"definitions\": {\"p\": {"
		"\"properties\": {\"a\": {}},"
		" \"allOf\": [{\"properties\": {\"b\": {}}}],"
		" \"if\": {\"properties\": {\"c\": {}}},"
		" \"else\": {\"$ref\": \"#/definitions/e\"}},"
		" \"e\": {\"properties\": {\"d\": {}}}}}", NULL);
	struct skill *bare = mk(NULL, "{\"type\": \"object\"}", NULL);
	struct inputs in;

	(void)state;
	expect_accepted(silent, "{\"parameter\": {\"colum\": \"age\"}}");
	resolve(silent, "{\"parameter\": {\"colum\": \"age\"}}", NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"missing required parameters: column\n"
		"request.json: skill demo has no parameter \"colum\" (it has:"
		" column, n)\n");
	inputs_release(&in);
	resolve(silent, "{\"parameter\": {\"column\": \"age\", \"x\": 1}}",
		NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"request.json: skill demo has no parameter \"x\" (it has:"
		" column, n)\n");
	assert_string_equal(in.notes.buf, "");
	inputs_release(&in);

	resolve(open, "{\"parameter\": {\"column\": \"a\", \"extra\": \"b\"}}",
		NULL, 0, &in);
	assert_string_equal(in.problems.buf, "");
	assert_string_equal(in.notes.buf,
		"request.json: skill demo declares no parameter \"extra\" (it"
		" has: column); it is passed on as given, as its schema"
		" allows\n");
	inputs_release(&in);

	resolve(composed, "{\"parameter\": {\"a\": 1, \"b\": 1, \"c\": 1,"
		" \"d\": 1, \"z\": 1}}", NULL, 0, &in);
	assert_string_equal(in.problems.buf,
		"request.json: skill demo has no parameter \"z\" (it has:"
		" a, b, c, d)\n");
	inputs_release(&in);

	/* no property declared anywhere: nothing to tell */
	resolve(bare, "{\"parameter\": {\"x\": 1}}", NULL, 0, &in);
	assert_string_equal(in.problems.buf, "");
	assert_string_equal(in.notes.buf, "");
	inputs_release(&in);
	skill_free(silent);
	skill_free(open);
	skill_free(composed);
	skill_free(bare);
}

/* ---- manifest, prompt ------------------------------------------------------ */

static void test_manifest(void **state)
{
	struct skill *sk = mk(NULL, NULL,
		"{\"type\": \"object\", \"properties\": {"
		"\"mean\": {\"type\": \"number\"},"
		"\"report\": {\"x-type\": \"artifact\", \"x-role\": \"summary\","
		" \"x-filename\": \"report.md\"},"
		"\"table\": {\"x-type\": \"file\"},"
		"\"other\": {\"x-type\": \"value\", \"x-filename\": \"no.txt\"},"
		"\"plot\": {\"x-type\": \"artifact\", \"x-filename\": \"*.png\"}},"
		" \"required\": [\"plot\", \"mean\", \"report\"]}");
	struct skill *none = mk(NULL, NULL, NULL);
	json_t *m;

	(void)state;
	m = inputs_manifest(sk);
	assert_non_null(m);
	expect_doc(m,
		   "[\n"
		   "  {\n"
		   "    \"role\": \"summary\",\n"
		   "    \"pattern\": \"report.md\",\n"
		   "    \"required\": true\n"
		   "  },\n"
		   "  {\n"
		   "    \"role\": \"output\",\n"
		   "    \"pattern\": \"table\",\n"
		   "    \"required\": false\n"
		   "  },\n"
		   "  {\n"
		   "    \"role\": \"output\",\n"
		   "    \"pattern\": \"*.png\",\n"
		   "    \"required\": true\n"
		   "  }\n"
		   "]");
	json_decref(m);
	m = inputs_manifest(none);
	assert_non_null(m);
	expect_doc(m, "[]");
	json_decref(m);
	skill_free(sk);
	skill_free(none);
}

/* Only the choice of template: a template without {{ }} renders as
 * itself with any engine (the real template engine is tested apart). */
static void test_prompt_template_choice(void **state)
{
	struct skill *sk = mk(NULL, NULL, NULL);
	struct sbuf out = SBUF_INIT;
	struct ferr err = FERR_INIT;
	struct inputs in;

	(void)state;
	resolve(sk, NULL, NULL, 0, &in);
	assert_int_equal(inputs_prompt(sk, "codex", &in, "/mnt/flow/s1",
				       "/mnt/flow/s1/skill", &out, &err), 0);
	/* Jinja2 drops the one trailing newline */
	assert_string_equal(out.buf, "Plain codex prompt.");
	sbuf_reset(&out);
	/* the other engine gets the built-in default, not codex's */
	assert_int_equal(inputs_prompt(sk, "gemini", &in, "/mnt/flow/s1",
				       "/mnt/flow/s1/skill", &out, &err), 0);
	assert_true(out.len > 0);
	assert_null(strstr(out.buf, "Plain codex prompt."));
	sbuf_release(&out);
	inputs_release(&in);
	skill_free(sk);
}

/* inputs_urls(): each URL input as "key=url -> name;" */
static int collect(void *ctx, const char *key, const char *url,
		   const char *name)
{
	return sbuf_addf(ctx, "%s=%s -> %s;", key, url, name);
}

static void test_url_inputs(void **state)
{
	struct skill *sk = mk("{\"type\": \"object\", \"properties\": {"
		"\"csv_file\": {\"type\": \"string\", \"extensions\": [\".csv\", \"tsv\"]},"
		"\"plain\": {\"type\": \"string\"},"
		"\"tabs\": {\"type\": \"string\", \"extensions\": [\"tsv\"]},"
		"\"query\": {\"type\": \"string\", \"x-input-source\": \"inline\"}}}",
		NULL, NULL);
	struct sbuf out = SBUF_INIT;
	json_t *req;

	(void)state;
	expect_accepted(sk, "{\"input\": {\"csv_file\": \"https://x.org/a/train.CSV?v=2\"}}");
	expect_accepted(sk, "{\"input\": {\"plain\": \"HTTP://x.org/\"}}");
	expect_refused(sk, "{\"input\": {\"plain\": \"file:///etc/passwd\"}}",
		       "key 'plain' is file-sourced; write it to uploads/plain or give"
		       " an http:// or https:// URL to fetch it from");
	expect_refused(sk, "{\"input\": {\"plain\": \"http://x.org/a b\"}}", NULL);
	expect_refused(sk, "{\"input\": {\"plain\": 5}}", NULL);
	req = parse("{\"input\": {"
		    "\"csv_file\": \"https://x.org/a/train.CSV?v=2\","
		    "\"plain\": \"http://x.org/data.bin\","
		    "\"tabs\": \"http://x.org/download?id=3\","
		    "\"query\": \"http://not.fetched/\"}}");
	assert_int_equal(inputs_urls(sk, req, collect, &out), 0);
	/* the URL's extension when allowed (any case), else the first
	 * allowed one, dot added; no extension when none are listed */
	assert_string_equal(out.buf,
		"csv_file=https://x.org/a/train.CSV?v=2 -> csv_file.CSV;"
		"plain=http://x.org/data.bin -> plain;"
		"tabs=http://x.org/download?id=3 -> tabs.tsv;");
	json_decref(req);
	sbuf_release(&out);
	skill_free(sk);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_accepts),
		cmocka_unit_test(test_url_inputs),
		cmocka_unit_test(test_check_refusals),
		cmocka_unit_test(test_check_ref_in_input),
		cmocka_unit_test(test_check_no_schemas),
		cmocka_unit_test(test_match_exact),
		cmocka_unit_test(test_match_extensions),
		cmocka_unit_test(test_match_two_candidates),
		cmocka_unit_test(test_match_disallowed),
		cmocka_unit_test(test_match_disallowed_odd_list),
		cmocka_unit_test(test_match_no_extensions),
		cmocka_unit_test(test_match_prefix_only),
		cmocka_unit_test(test_match_dotted_key),
		cmocka_unit_test(test_match_multi_part_extension),
		cmocka_unit_test(test_input_order_and_inline),
		cmocka_unit_test(test_parameter_order),
		cmocka_unit_test(test_parameter_without_schema),
		cmocka_unit_test(test_parameter_required_elsewhere),
		cmocka_unit_test(test_parameter_required_without_property),
		cmocka_unit_test(test_no_input_schema),
		cmocka_unit_test(test_problem_order),
		cmocka_unit_test(test_stale_request),
		cmocka_unit_test(test_unbound_uploads),
		cmocka_unit_test(test_undeclared_parameters),
		cmocka_unit_test(test_manifest),
		cmocka_unit_test(test_prompt_template_choice),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
