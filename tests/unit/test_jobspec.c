/*
 * Unit tests for jobspec (issue 16): the tool map's entries checked field
 * by field, a graph made into a plan (order, deps, the paths edges hand
 * on, argv rendering, resources, refusals with their messages, folder
 * names), the batch script run for real with bash in a temporary folder,
 * shell quoting round-tripped through bash, and sbatch's flags.
 *
 * Every expected value is written by hand from the contract in
 * core/jobspec.h.  Documents are written with ' for " (see unit_json()).
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "graph/jobspec.h"
#include "unit.h"

#define TOOLS_PATH "~/.config/flowfs/tools.json"
#define RUN "/run/flowfs/s1"

static const struct jobspec_options opt_plain = {
	.session = "sess", .run_dir = RUN, .container = NULL,
	.tools_path = TOOLS_PATH,
};


/* ---- jobspec_check_tool ------------------------------------------------- */

static int check(const char *entry, char *msg, size_t size)
{
	struct ferr err = FERR_INIT;
	json_t *v = unit_json(entry);
	int ret = jobspec_check_tool("relax", v, &err);

	json_decref(v);
	snprintf(msg, size, "%s", err.message);
	return ret;
}

static void check_ok(const char *entry)
{
	char msg[FERR_MESSAGE_MAX];

	if (check(entry, msg, sizeof(msg)) != 0)
		fail_msg("refused %s: %s", entry, msg);
}

static void check_refused(const char *entry, const char *want)
{
	char msg[FERR_MESSAGE_MAX];
	int ret = check(entry, msg, sizeof(msg));

	if (ret != -EINVAL)
		fail_msg("%s: returned %d, not -EINVAL", entry, ret);
	if (strcmp(msg, want))
		fail_msg("%s:\n  got  %s\n  want %s", entry, msg, want);
}

/* The same with a json_t built by the caller (taken). */
static void check_refused_v(json_t *v, const char *want)
{
	struct ferr err = FERR_INIT;

	assert_non_null(v);
	assert_int_equal(jobspec_check_tool("relax", v, &err), -EINVAL);
	assert_string_equal(err.message, want);
	json_decref(v);
}

static void test_check_good(void **state)
{
	(void)state;
	check_ok("{}");
	check_ok("{'image': 'registry.example/abacus:3.8',"
		 " 'machine_type': 'c2_m8_cpu',"
		 " 'command': ['abacus-relax', '--in', '{{ structure_file }}',"
		 "  '--out', '{{ job_dir }}/relaxed.cif'],"
		 " 'outputs': {'relaxed_structure': 'relaxed.cif'},"
		 " 'resources': {'cpus': 4, 'memory_mib': 16384,"
		 "  'time_minutes': 120, 'partition': 'compute'}}");
	check_ok("{'command': ['x'], 'outputs': {}, 'resources': {}}");
	check_ok("{'image': '', 'machine_type': ''}");
	/* a template with every construct the subset has */
	check_ok("{'command': ['{% for f in files %}{{ f|upper }},{% endfor %}',"
		 " '{% if a is defined %}{{ a }}{% else %}none{% endif %}',"
		 " '{{ inputs.x|default(\\'d\\') }}']}");
}

static void test_check_fields(void **state)
{
	(void)state;
	check_refused("[]", "\"relax\" must be an object");
	check_refused("'x'", "\"relax\" must be an object");
	check_refused("{'cmd': ['x']}",
		      "\"relax\": unknown field \"cmd\" (a tool has image, "
		      "images, machine_type, command, options, outputs, "
		      "resources)");
	check_refused("{'command': ['x'], 'Image': 'a'}",
		      "\"relax\": unknown field \"Image\" (a tool has image, "
		      "images, machine_type, command, options, outputs, "
		      "resources)");
	check_refused("{'image': 3}", "\"relax.image\" must be a string");
	check_refused("{'image': null}", "\"relax.image\" must be a string");
	check_refused("{'machine_type': ['c2_m8_cpu']}",
		      "\"relax.machine_type\" must be a string");
	check_refused("{'image': 'a\\u0000b'}",
		      "\"relax.image\" must be a string");
}

#define CMD_LIST "\"relax\": command must be a list of 1 to 256 strings " \
	"(an argv; no shell reads it)"

static void test_check_command(void **state)
{
	json_t *cmd;
	char *big;

	(void)state;
	check_refused("{'command': 'abacus --in x'}", CMD_LIST);
	check_refused("{'command': {}}", CMD_LIST);
	check_refused("{'command': null}", CMD_LIST);
	check_refused("{'command': []}", CMD_LIST);
	check_refused("{'command': ['a', 5]}",
		      "\"relax\": command[1] must be a string");
	check_refused("{'command': ['a', 'b', ['c']]}",
		      "\"relax\": command[2] must be a string");
	check_refused("{'command': [null]}",
		      "\"relax\": command[0] must be a string");
	check_refused("{'command': ['a\\u0000b']}",
		      "\"relax\": command[0] must be a string");

	/* 256 items, then 257 */
	cmd = json_array();
	for (int i = 0; i < 256; i++)
		json_array_append_new(cmd, json_string("x"));
	{
		json_t *e = json_pack("{sO}", "command", cmd);
		struct ferr err = FERR_INIT;

		assert_int_equal(jobspec_check_tool("relax", e, &err), 0);
		json_decref(e);
	}
	json_array_append_new(cmd, json_string("x"));
	check_refused_v(json_pack("{so}", "command", cmd), CMD_LIST);

	/* an item of 4096 bytes, then 4097 */
	big = malloc(4098);
	assert_non_null(big);
	memset(big, 'a', 4097);
	big[4096] = '\0';
	{
		json_t *e = json_pack("{s[ss]}", "command", "x", big);
		struct ferr err = FERR_INIT;

		assert_int_equal(jobspec_check_tool("relax", e, &err), 0);
		json_decref(e);
	}
	big[4096] = 'a';
	big[4097] = '\0';
	check_refused_v(json_pack("{s[ss]}", "command", "x", big),
			"\"relax\": command[1] is 4097 bytes; at most 4096");
	free(big);

	/* a template that does not parse: the item, and where in it */
	check_refused("{'command': ['a', 'b', '{{ x }']}",
		      "\"relax\": command[2]: line 1, column 7: unexpected "
		      "end of template inside '{{ }}'");
	check_refused("{'command': ['{% macro m() %}{% endmacro %}']}",
		      "\"relax\": command[0]: line 1, column 4: unsupported "
		      "tag 'macro'");
	check_refused("{'command': ['ok', 'line\\n{{ x|capitalize }}']}",
		      "\"relax\": command[1]: line 2, column 6: unsupported "
		      "filter 'capitalize'");
}

#define LEAVES(path) "\"relax\": outputs.e: \"" path "\" leaves the job " \
	"folder (a relative path without \"..\", \".\" or empty parts, up " \
	"to 255 bytes)"

static void test_check_outputs(void **state)
{
	char long_path[300], entry[400], want[600];

	(void)state;
	check_refused("{'outputs': ['a']}",
		      "\"relax\": outputs must be an object {\"<output "
		      "parameter>\": \"<file in the job folder>\"}");
	check_refused("{'outputs': 'a.json'}",
		      "\"relax\": outputs must be an object {\"<output "
		      "parameter>\": \"<file in the job folder>\"}");
	check_refused("{'outputs': {'': 'a.json'}}",
		      "\"relax\": outputs: an output needs a name");
	check_refused("{'outputs': {'e': 5}}",
		      "\"relax\": outputs.e must be a string");
	check_refused("{'outputs': {'e': ['a']}}",
		      "\"relax\": outputs.e must be a string");
	check_refused("{'outputs': {'e': 'a\\u0000b'}}",
		      "\"relax\": outputs.e must be a string");
	check_refused("{'outputs': {'e': '../x'}}", LEAVES("../x"));
	check_refused("{'outputs': {'e': '..'}}", LEAVES(".."));
	check_refused("{'outputs': {'e': '/abs'}}", LEAVES("/abs"));
	check_refused("{'outputs': {'e': '/'}}", LEAVES("/"));
	check_refused("{'outputs': {'e': 'a/../b'}}", LEAVES("a/../b"));
	check_refused("{'outputs': {'e': 'a/..'}}", LEAVES("a/.."));
	check_refused("{'outputs': {'e': 'a//b'}}", LEAVES("a//b"));
	check_refused("{'outputs': {'e': ''}}", LEAVES(""));
	check_refused("{'outputs': {'e': '.'}}", LEAVES("."));
	check_refused("{'outputs': {'e': './a'}}", LEAVES("./a"));
	check_refused("{'outputs': {'e': 'a/./b'}}", LEAVES("a/./b"));
	check_refused("{'outputs': {'e': 'a/.'}}", LEAVES("a/."));
	check_refused("{'outputs': {'e': 'a/'}}", LEAVES("a/"));
	/* the first bad output is named, after good ones */
	check_refused("{'outputs': {'ok': 'a', 'e': 'b/../../c'}}",
		      LEAVES("b/../../c"));

	/* 255 bytes (with a folder in it) is a path; 256 is not */
	memset(long_path, 'p', sizeof(long_path));
	long_path[3] = '/';
	long_path[255] = '\0';
	snprintf(entry, sizeof(entry), "{'outputs': {'e': '%s'}}", long_path);
	check_ok(entry);
	long_path[255] = 'p';
	long_path[256] = '\0';
	snprintf(entry, sizeof(entry), "{'outputs': {'e': '%s'}}", long_path);
	snprintf(want, sizeof(want), "\"relax\": outputs.e: \"%s\" leaves the "
		 "job folder (a relative path without \"..\", \".\" or empty "
		 "parts, up to 255 bytes)", long_path);
	check_refused(entry, want);

	check_ok("{'outputs': {'e': 'energy.json', 'out_relax': 'final.cif',"
		 " 'f': 'sub/dir/f.txt', 'g': '..a', 'h': 'a..', 'i': '.hidden',"
		 " 'j': 'a/...', 'k': 'é.json'}}");
}

#define WHOLE(field, lo, hi) "\"relax\": resources." field " must be a " \
	"whole number from " lo " to " hi
#define PARTITION "\"relax\": resources.partition must be a partition " \
	"name (letters, digits, _ - ., 1 to 64)"

static void test_check_resources(void **state)
{
	static const struct {
		const char *name, *lo, *hi, *below, *above;
	} bounds[] = {
		{ "cpus", "1", "4096", "0", "4097" },
		{ "memory_mib", "1", "16777216", "0", "16777217" },
		{ "gpus", "0", "64", "-1", "65" },
		{ "time_minutes", "1", "525600", "0", "525601" },
	};
	static const char *const wrong_types[] = {
		"'4'", "4.0", "true", "null", "[4]", "{}",
	};
	char entry[200], want[300];

	(void)state;
	check_refused("{'resources': [1]}",
		      "\"relax\": resources must be an object");
	check_refused("{'resources': {'mem': 5}}",
		      "\"relax\": resources: unknown field \"mem\" (cpus, "
		      "memory_mib, gpus, time_minutes, partition)");
	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		const char *vals[] = { bounds[i].below, bounds[i].above };

		snprintf(want, sizeof(want), "\"relax\": resources.%s must be "
			 "a whole number from %s to %s", bounds[i].name,
			 bounds[i].lo, bounds[i].hi);
		for (int k = 0; k < 2; k++) {
			snprintf(entry, sizeof(entry),
				 "{'resources': {'%s': %s}}", bounds[i].name,
				 vals[k]);
			check_refused(entry, want);
		}
		for (size_t k = 0; k < sizeof(wrong_types) /
				       sizeof(wrong_types[0]); k++) {
			snprintf(entry, sizeof(entry),
				 "{'resources': {'%s': %s}}", bounds[i].name,
				 wrong_types[k]);
			check_refused(entry, want);
		}
		snprintf(entry, sizeof(entry), "{'resources': {'%s': %s}}",
			 bounds[i].name, bounds[i].lo);
		check_ok(entry);
		snprintf(entry, sizeof(entry), "{'resources': {'%s': %s}}",
			 bounds[i].name, bounds[i].hi);
		check_ok(entry);
	}
	check_refused("{'resources': {'cpus': 9223372036854775807}}",
		      WHOLE("cpus", "1", "4096"));
	check_refused("{'resources': {'partition': ''}}", PARTITION);
	check_refused("{'resources': {'partition': 'a b'}}", PARTITION);
	check_refused("{'resources': {'partition': 'a/b'}}", PARTITION);
	check_refused("{'resources': {'partition': 'a,b'}}", PARTITION);
	check_refused("{'resources': {'partition': 'gpu\\n'}}", PARTITION);
	check_refused("{'resources': {'partition': 'gpü'}}", PARTITION);
	check_refused("{'resources': {'partition': '$(x)'}}", PARTITION);
	check_refused("{'resources': {'partition': 5}}", PARTITION);
	check_refused("{'resources': {'partition': null}}", PARTITION);
	check_refused("{'resources': {'partition': 'a\\u0000b'}}", PARTITION);
	check_refused("{'resources': {'partition': "
		      "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}",
		      PARTITION);	/* 65 */
	check_ok("{'resources': {'partition': "
		 "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'}}");
	check_ok("{'resources': {'partition': 'gpu-A_1.x', 'cpus': 2,"
		 " 'memory_mib': 100, 'gpus': 0, 'time_minutes': 5}}");
}

/* ---- jobspec_plan ------------------------------------------------------- */

static int plan(const char *graph, const char *tools,
		const struct jobspec_options *opt, struct jobspec_plan *p,
		struct ferr *err)
{
	json_t *g = unit_json(graph), *t = tools ? unit_json(tools) : NULL;
	int ret;

	ret = jobspec_plan(g, t, opt, p, err);
	json_decref(g);
	json_decref(t);
	return ret;
}

static void plan_ok(const char *graph, const char *tools,
		    const struct jobspec_options *opt, struct jobspec_plan *p)
{
	struct ferr err = FERR_INIT;
	int ret = plan(graph, tools, opt, p, &err);

	if (ret)
		fail_msg("plan refused (%d): %s", ret, err.message);
}

static void plan_refused(const char *graph, const char *tools, int code,
			 const char *want)
{
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	int ret = plan(graph, tools, &opt_plain, &p, &err);

	if (ret != code)
		fail_msg("returned %d, not %d (%s)", ret, code, err.message);
	if (strcmp(err.message, want))
		fail_msg("\n  got  %s\n  want %s", err.message, want);
	assert_null(p.jobs);
	assert_int_equal(p.n, 0);
}

static const struct jobspec_job *job(const struct jobspec_plan *p,
				     const char *id)
{
	long i = jobspec_find(p, id);

	if (i < 0)
		fail_msg("no job %s", id);
	return &p->jobs[i];
}

/* argv is exactly the NULL-terminated list given */
static void argv_is(const struct jobspec_job *j, ...)
{
	va_list ap;
	size_t n = 0;
	const char *want;

	va_start(ap, j);
	while ((want = va_arg(ap, const char *))) {
		if (n >= j->argc)
			fail_msg("%s: argv has %zu items, wants more (%s)",
				 j->node_id, j->argc, want);
		if (strcmp(j->argv[n], want))
			fail_msg("%s: argv[%zu] is \"%s\", not \"%s\"",
				 j->node_id, n, j->argv[n], want);
		n++;
	}
	va_end(ap);
	assert_int_equal(j->argc, n);
	assert_null(j->argv[n]);
}

static void inputs_are(const struct jobspec_job *j, const char *doc)
{
	json_t *want = unit_json(doc);

	if (!json_equal(j->inputs, want)) {
		char *got = json_dumps(j->inputs, JSON_SORT_KEYS);

		fail_msg("%s: inputs %s, not %s", j->node_id, got, doc);
	}
	json_decref(want);
}

/* The diamond n1 -> n2, n1 -> n3, n2/n3 -> n4, listed backwards. */
static const char diamond_graph[] =
	"{'nodes': ["
	" {'id': 'n4', 'label': 'join', 'input_parameters': ["
	"   {'name': 'a', 'value': null}, {'name': 'b', 'value': null}]},"
	" {'id': 'n2', 'label': 'relax', 'input_parameters': ["
	"   {'name': 'structure', 'value': 'given.cif'},"
	"   {'name': 'temp', 'value': 300}]},"
	" {'id': 'n3', 'label': 'relax', 'input_parameters': ["
	"   {'name': 'structure', 'value': null},"
	"   {'name': 'temp', 'value': 400}]},"
	" {'id': 'n1', 'label': 'gen', 'input_parameters': ["
	"   {'name': 'formula', 'value': 'Si'}]}],"
	" 'edges': ["
	" {'id': 'e3', 'source_node_id': 'n2', 'source_parameter_name': 'energy',"
	"  'target_node_id': 'n4', 'target_parameter_name': 'a'},"
	" {'id': 'e1', 'source_node_id': 'n1', 'source_parameter_name': 'out_gen',"
	"  'target_node_id': 'n2', 'target_parameter_name': 'structure'},"
	" {'id': 'e2', 'source_node_id': 'n1', 'source_parameter_name': 'data',"
	"  'target_node_id': 'n3', 'target_parameter_name': 'structure'},"
	" {'id': 'e4', 'source_node_id': 'n3', 'source_parameter_name': 'out_relax',"
	"  'target_node_id': 'n4', 'target_parameter_name': 'b'}],"
	" 'meta': {}}";

static const char diamond_tools[] =
	"{'gen': {'command': ['gen', '--formula', '{{ formula }}',"
	"   '--out', '{{ job_dir }}/data.json'],"
	"  'outputs': {'data': 'data.json'}},"
	" 'relax': {'command': ['relax', '{{ structure }}', '{{ inputs.temp }}',"
	"   '{{ node.id }}', '{{ node.label }}', '{{ session }}',"
	"   '{{ inputs|length }}'],"
	"  'outputs': {'energy': 'e/energy.json'}},"
	" 'join': {'command': ['join', '{{ a }}', '{{ b }}']}}";

static void test_plan_diamond(void **state)
{
	struct jobspec_plan p;
	const struct jobspec_job *n1, *n2, *n3, *n4;

	(void)state;
	plan_ok(diamond_graph, diamond_tools, &opt_plain, &p);
	assert_int_equal(p.n, 4);
	assert_string_equal(p.jobs[0].node_id, "n1");
	assert_string_equal(p.jobs[3].node_id, "n4");
	/* n2 and n3 are ready together: node order (n2 listed first) */
	assert_string_equal(p.jobs[1].node_id, "n2");
	assert_string_equal(p.jobs[2].node_id, "n3");
	assert_int_equal(jobspec_find(&p, "n9"), -1);
	n1 = job(&p, "n1");
	n2 = job(&p, "n2");
	n3 = job(&p, "n3");
	n4 = job(&p, "n4");

	assert_int_equal(n1->ndeps, 0);
	assert_int_equal(n2->ndeps, 1);
	assert_int_equal(n2->deps[0], 0);
	assert_int_equal(n3->ndeps, 1);
	assert_int_equal(n3->deps[0], 0);
	assert_int_equal(n4->ndeps, 2);
	assert_int_equal(n4->deps[0], 1);
	assert_int_equal(n4->deps[1], 2);

	assert_string_equal(n1->job_dir, RUN "/n1");
	assert_string_equal(n4->job_dir, RUN "/n4");
	assert_string_equal(n1->label, "gen");
	assert_string_equal(n1->image, "");
	assert_null(n1->partition);

	/* outputs: out_<label> (the folder) first, then the declared */
	assert_int_equal(n1->noutputs, 2);
	assert_string_equal(n1->outputs[0].name, "out_gen");
	assert_string_equal(n1->outputs[0].path, RUN "/n1");
	assert_string_equal(n1->outputs[1].name, "data");
	assert_string_equal(n1->outputs[1].path, RUN "/n1/data.json");
	assert_int_equal(n2->noutputs, 2);
	assert_string_equal(n2->outputs[1].name, "energy");
	assert_string_equal(n2->outputs[1].path, RUN "/n2/e/energy.json");
	assert_int_equal(n4->noutputs, 1);
	assert_string_equal(n4->outputs[0].name, "out_join");
	assert_string_equal(n4->outputs[0].path, RUN "/n4");

	/* edges hand on paths; the rest of the inputs as given */
	inputs_are(n1, "{'formula': 'Si'}");
	inputs_are(n2, "{'structure': '" RUN "/n1', 'temp': 300}");
	inputs_are(n3, "{'structure': '" RUN "/n1/data.json', 'temp': 400}");
	inputs_are(n4, "{'a': '" RUN "/n2/e/energy.json', 'b': '" RUN "/n3'}");

	argv_is(n1, "gen", "--formula", "Si", "--out", RUN "/n1/data.json",
		NULL);
	argv_is(n2, "relax", RUN "/n1", "300", "n2", "relax", "sess", "2", NULL);
	argv_is(n3, "relax", RUN "/n1/data.json", "400", "n3", "relax", "sess",
		"2", NULL);
	argv_is(n4, "join", RUN "/n2/e/energy.json", RUN "/n3", NULL);

	/* no machine type: one CPU and nothing else */
	assert_int_equal(n1->cpus, 1);
	assert_int_equal(n1->memory_mib, 0);
	assert_int_equal(n1->gpus, 0);
	assert_int_equal(n1->time_minutes, 0);
	jobspec_plan_release(&p);
	assert_null(p.jobs);
	assert_int_equal(p.n, 0);
}

/* Ties go in node order: a graph listed in a valid order keeps it. */
static void test_plan_order(void **state)
{
	struct jobspec_plan p;
	static const char *const want[] = { "a", "b", "c", "d" };
	static const char *const want2[] = { "z", "y", "x", "w" };

	(void)state;
	/* a -> d, b -> c: all of a, b, c, d is a valid order */
	plan_ok("{'nodes': [{'id': 'a', 'label': 't'}, {'id': 'b', 'label': 't'},"
		" {'id': 'c', 'label': 't'}, {'id': 'd', 'label': 't'}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'a',"
		"  'target_node_id': 'd', 'target_parameter_name': 'input'},"
		" {'id': 'e2', 'source_node_id': 'b',"
		"  'target_node_id': 'c', 'target_parameter_name': 'input'}]}",
		"{'t': {'command': ['true']}}", &opt_plain, &p);
	assert_int_equal(p.n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(p.jobs[i].node_id, want[i]);
	assert_int_equal(p.jobs[2].ndeps, 1);
	assert_int_equal(p.jobs[2].deps[0], 1);
	assert_int_equal(p.jobs[3].ndeps, 1);
	assert_int_equal(p.jobs[3].deps[0], 0);
	jobspec_plan_release(&p);

	/* no edges: node order */
	plan_ok("{'nodes': [{'id': 'z', 'label': 't'}, {'id': 'y', 'label': 't'},"
		" {'id': 'x', 'label': 't'}, {'id': 'w', 'label': 't'}],"
		" 'edges': []}", "{'t': {'command': ['true']}}", &opt_plain, &p);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(p.jobs[i].node_id, want2[i]);
	jobspec_plan_release(&p);

	/* a chain listed backwards comes out forwards; two edges between
	 * the same jobs are one dependency */
	plan_ok("{'nodes': [{'id': 'c', 'label': 't'}, {'id': 'b', 'label': 't'},"
		" {'id': 'a', 'label': 't'}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'b',"
		"  'target_node_id': 'c', 'target_parameter_name': 'x'},"
		" {'id': 'e2', 'source_node_id': 'a',"
		"  'target_node_id': 'b', 'target_parameter_name': 'x'},"
		" {'id': 'e3', 'source_node_id': 'a',"
		"  'target_node_id': 'b', 'target_parameter_name': 'y'}]}",
		"{'t': {'command': ['true']}}", &opt_plain, &p);
	assert_string_equal(p.jobs[0].node_id, "a");
	assert_string_equal(p.jobs[1].node_id, "b");
	assert_string_equal(p.jobs[2].node_id, "c");
	assert_int_equal(p.jobs[1].ndeps, 1);
	assert_int_equal(p.jobs[1].deps[0], 0);
	assert_int_equal(p.jobs[2].ndeps, 1);
	assert_int_equal(p.jobs[2].deps[0], 1);
	jobspec_plan_release(&p);
}

static void test_plan_outputs(void **state)
{
	struct jobspec_plan p;
	const struct jobspec_job *j;

	(void)state;
	/* a declared out_<label> is the file, not the folder; an edge
	 * without source_parameter_name hands on out_<label> */
	plan_ok("{'nodes': [{'id': 'src', 'label': 'relax'},"
		" {'id': 'dst', 'label': 'use', 'input_parameters': ["
		"  {'name': 'x', 'value': 1}, {'name': 'y', 'value': 2}]}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'src',"
		"  'source_parameter_name': 'out_relax',"
		"  'target_node_id': 'dst', 'target_parameter_name': 'x'},"
		" {'id': 'e2', 'source_node_id': 'src',"
		"  'target_node_id': 'dst', 'target_parameter_name': 'y'}]}",
		"{'relax': {'command': ['r'], 'outputs': {'energy': 'e.json',"
		"  'out_relax': 'final/relaxed.cif'}},"
		" 'use': {'command': ['u', '{{ x }}', '{{ y }}']}}",
		&opt_plain, &p);
	j = job(&p, "src");
	assert_int_equal(j->noutputs, 2);
	assert_string_equal(j->outputs[0].name, "out_relax");
	assert_string_equal(j->outputs[0].path, RUN "/src/final/relaxed.cif");
	assert_string_equal(j->outputs[1].name, "energy");
	assert_string_equal(j->outputs[1].path, RUN "/src/e.json");
	j = job(&p, "dst");
	argv_is(j, "u", RUN "/src/final/relaxed.cif",
		RUN "/src/final/relaxed.cif", NULL);
	jobspec_plan_release(&p);
}

/* Two or more edges into one input: a list of paths in edge order. */
static void test_plan_fan_in(void **state)
{
	struct jobspec_plan p;
	const struct jobspec_job *j;

	(void)state;
	plan_ok("{'nodes': [{'id': 'sum', 'label': 'sum', 'input_parameters': ["
		"  {'name': 'xs', 'value': 'replaced'}]},"
		" {'id': 'a', 'label': 'g'}, {'id': 'b', 'label': 'g'},"
		" {'id': 'c', 'label': 'g'}],"
		" 'edges': ["
		" {'id': 'e1', 'source_node_id': 'c', 'source_parameter_name': 'r',"
		"  'target_node_id': 'sum', 'target_parameter_name': 'xs'},"
		" {'id': 'e2', 'source_node_id': 'a', 'source_parameter_name': 'r',"
		"  'target_node_id': 'sum', 'target_parameter_name': 'xs'},"
		" {'id': 'e3', 'source_node_id': 'b',"
		"  'target_node_id': 'sum', 'target_parameter_name': 'xs'}]}",
		"{'g': {'command': ['g'], 'outputs': {'r': 'r.txt'}},"
		" 'sum': {'command': ['sum', '{{ xs|join(\\u0027,\\u0027) }}',"
		"  '{{ xs|length }}', '{{ xs }}']}}", &opt_plain, &p);
	j = job(&p, "sum");
	inputs_are(j, "{'xs': ['" RUN "/c/r.txt', '" RUN "/a/r.txt', '"
		   RUN "/b']}");
	argv_is(j, "sum", RUN "/c/r.txt," RUN "/a/r.txt," RUN "/b", "3",
		"['" RUN "/c/r.txt', '" RUN "/a/r.txt', '" RUN "/b']", NULL);
	assert_int_equal(p.jobs[3].ndeps, 3);
	assert_string_equal(p.jobs[3].node_id, "sum");
	jobspec_plan_release(&p);

	/* two edges: a list of two */
	plan_ok("{'nodes': [{'id': 'a', 'label': 'g'}, {'id': 'b', 'label': 'g'},"
		" {'id': 's', 'label': 'g'}],"
		" 'edges': ["
		" {'id': 'e1', 'source_node_id': 'b',"
		"  'target_node_id': 's', 'target_parameter_name': 'inp'},"
		" {'id': 'e2', 'source_node_id': 'a',"
		"  'target_node_id': 's', 'target_parameter_name': 'inp'}]}",
		"{'g': {'command': ['g', '{{ inp }}']}}", &opt_plain, &p);
	inputs_are(job(&p, "s"), "{'inp': ['" RUN "/b', '" RUN "/a']}");
	jobspec_plan_release(&p);
}

/* The names a template sees, and which of them shadow an input. */
static void test_plan_context(void **state)
{
	struct jobspec_plan p;
	const struct jobspec_options o = {
		.session = "my session", .run_dir = RUN, .tools_path = NULL,
	};

	(void)state;
	plan_ok("{'nodes': [{'id': 'n 1', 'label': 'calc', 'input_parameters': ["
		" {'name': 'session', 'value': 'mine'},"
		" {'name': 'job_dir', 'value': 'here'},"
		" {'name': 'node', 'value': 'nd'},"
		" {'name': 'inputs', 'value': 'in'},"
		" {'name': 'image', 'value': 'my-image-input'},"
		" {'name': 'n', 'value': 2.5},"
		" {'name': 'list', 'value': [1, 'a', true, null]},"
		" {'name': 'empty', 'value': ''}]}]}",
		"{'calc': {'image': 'reg/calc:1', 'command': ['{{ session }}',"
		" '{{ inputs.session }}', '{{ job_dir }}', '{{ inputs.job_dir }}',"
		" '{{ node.id }}/{{ node.label }}', '{{ inputs.node }}',"
		" '{{ inputs.inputs }}', '{{ image }}', '{{ n }}', '{{ list }}',"
		" '{{ empty }}', '{{ undefined_name }}', '{{ n|tojson }}']}}",
		&o, &p);
	argv_is(&p.jobs[0], "my session", "mine", RUN "/n_1", "here",
		"n 1/calc", "nd", "in", "my-image-input", "2.5",
		"[1, 'a', True, None]", "", "", "2.5", NULL);
	/* no container runner: the image is recorded, not used */
	assert_string_equal(p.jobs[0].image, "reg/calc:1");
	jobspec_plan_release(&p);
}

static void test_plan_container(void **state)
{
	static const char *const runner[] = {
		"apptainer", "exec", "--bind", "{{ job_dir }}",
		"docker://{{ image }}", NULL
	};
	const struct jobspec_options o = {
		.session = "s", .run_dir = RUN, .container = runner,
		.tools_path = TOOLS_PATH,
	};
	struct jobspec_plan p;

	(void)state;
	plan_ok("{'nodes': [{'id': 'img', 'label': 'withimage'},"
		" {'id': 'noimg', 'label': 'plain'},"
		" {'id': 'own', 'label': 'withimage',"
		"  'system_values': {'image': 'mine/x:2', 'machine_type': ''}},"
		" {'id': 'blank', 'label': 'plain',"
		"  'system_values': {'image': '', 'docker_image': 'ignored'}}]}",
		"{'withimage': {'image': 'reg/a:1', 'images': ['mine/x:2'],"
		"  'command': ['run', '{{ image }}']},"
		" 'plain': {'command': ['plain']}}", &o, &p);
	argv_is(job(&p, "img"), "apptainer", "exec", "--bind", RUN "/img",
		"docker://reg/a:1", "run", "", NULL);
	argv_is(job(&p, "own"), "apptainer", "exec", "--bind", RUN "/own",
		"docker://mine/x:2", "run", "", NULL);
	assert_string_equal(job(&p, "own")->image, "mine/x:2");
	argv_is(job(&p, "noimg"), "plain", NULL);
	argv_is(job(&p, "blank"), "plain", NULL);
	assert_string_equal(job(&p, "blank")->image, "");
	jobspec_plan_release(&p);
}

static void test_plan_resources(void **state)
{
	struct jobspec_plan p;
	const struct jobspec_job *j;

	(void)state;
	plan_ok("{'nodes': ["
		" {'id': 'cpu', 'label': 'cpu'},"
		" {'id': 'gpu', 'label': 'cpu',"
		"  'system_values': {'machine_type': 'c8_m32_1 * NVIDIA V100'}},"
		" {'id': 'odd', 'label': 'cpu',"
		"  'system_values': {'machine_type': 'big-box'}},"
		" {'id': 'res', 'label': 'res'},"
		" {'id': 'res2', 'label': 'res',"
		"  'system_values': {'machine_type': 'c2_m8_cpu'}},"
		" {'id': 'none', 'label': 'none'},"
		" {'id': 'two', 'label': 'none',"
		"  'system_values': {'machine_type': 'c16_m64_2 * NVIDIA A100'}}]}",
		"{'cpu': {'machine_type': 'c2_m8_cpu', 'command': ['x']},"
		" 'res': {'machine_type': 'c8_m32_1 * NVIDIA V100', 'command': ['x'],"
		"  'resources': {'cpus': 3, 'time_minutes': 90,"
		"   'partition': 'gpu-a'}},"
		" 'none': {'command': ['x'], 'resources': {'memory_mib': 100,"
		"  'gpus': 0}}}", &opt_plain, &p);
	j = job(&p, "cpu");
	assert_string_equal(j->machine_type, "c2_m8_cpu");
	assert_int_equal(j->cpus, 2);
	assert_int_equal(j->memory_mib, 8192);
	assert_int_equal(j->gpus, 0);
	assert_int_equal(j->time_minutes, 0);
	assert_null(j->partition);
	j = job(&p, "gpu");	/* the node's machine type wins */
	assert_string_equal(j->machine_type, "c8_m32_1 * NVIDIA V100");
	assert_int_equal(j->cpus, 8);
	assert_int_equal(j->memory_mib, 32768);
	assert_int_equal(j->gpus, 1);
	j = job(&p, "odd");
	assert_string_equal(j->machine_type, "big-box");
	assert_int_equal(j->cpus, 1);
	assert_int_equal(j->memory_mib, 0);
	assert_int_equal(j->gpus, 0);
	j = job(&p, "res");	/* resources over the machine type */
	assert_int_equal(j->cpus, 3);
	assert_int_equal(j->memory_mib, 32768);
	assert_int_equal(j->gpus, 1);
	assert_int_equal(j->time_minutes, 90);
	assert_string_equal(j->partition, "gpu-a");
	j = job(&p, "res2");
	assert_string_equal(j->machine_type, "c2_m8_cpu");
	assert_int_equal(j->cpus, 3);
	assert_int_equal(j->memory_mib, 8192);
	assert_int_equal(j->gpus, 0);
	assert_int_equal(j->time_minutes, 90);
	j = job(&p, "none");
	assert_string_equal(j->machine_type, "");
	assert_int_equal(j->cpus, 1);
	assert_int_equal(j->memory_mib, 100);
	assert_int_equal(j->gpus, 0);
	j = job(&p, "two");	/* gpus: 0 in resources is said */
	assert_int_equal(j->cpus, 16);
	assert_int_equal(j->memory_mib, 100);
	assert_int_equal(j->gpus, 0);
	jobspec_plan_release(&p);
}

static void test_plan_refusals(void **state)
{
	static const char two[] =
		"{'nodes': [{'id': 'n1', 'label': 'relax'},"
		" {'id': 'n2', 'label': 'relax'}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'n1',"
		"  'source_parameter_name': 'energy', 'target_node_id': 'n2',"
		"  'target_parameter_name': 'input'}]}";

	(void)state;
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'gen'},"
		     " {'id': 'n2', 'label': 'relax'}]}",
		     "{'gen': {'command': ['g']}}", -EINVAL,
		     "node \"n2\": its label \"relax\" has no command in the "
		     "tool map (" TOOLS_PATH ")");
	plan_refused("{'nodes': [{'id': 'n2', 'label': 'relax'}]}",
		     "{'relax': {'image': 'x'}}", -EINVAL,
		     "node \"n2\": its label \"relax\" has no command in the "
		     "tool map (" TOOLS_PATH ")");
	plan_refused("{'nodes': [{'id': 'n2', 'label': 'relax'}]}", NULL,
		     -EINVAL, "node \"n2\": its label \"relax\" has no command "
		     "in the tool map (" TOOLS_PATH ")");
	/* the message lists the outputs it has */
	plan_refused(two, "{'relax': {'command': ['r'], 'outputs': {"
		     "'relaxed_structure': 'r.cif'}}}", -EINVAL,
		     "edge \"e1\": node \"n1\" (relax) has no output \"energy\" "
		     "(it has: out_relax, relaxed_structure)");
	plan_refused(two, "{'relax': {'command': ['r']}}", -EINVAL,
		     "edge \"e1\": node \"n1\" (relax) has no output \"energy\" "
		     "(it has: out_relax)");
	plan_refused(two, "{'relax': {'command': ['r'], 'outputs': {"
		     "'out_relax': 'f', 'b': 'b', 'a': 'a'}}}", -EINVAL,
		     "edge \"e1\": node \"n1\" (relax) has no output \"energy\" "
		     "(it has: out_relax, b, a)");
	/* an entry no one checked is checked here: the map is the
	 * caller's (without it: no argv, a "(null)" path, 0 CPUs) */
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax'}]}",
		     "{'relax': {'command': 'r --x'}}", -EINVAL,
		     TOOLS_PATH ": " CMD_LIST);
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax'}]}",
		     "{'relax': {'command': ['r'], 'outputs': {'e': 5}}}",
		     -EINVAL, TOOLS_PATH ": \"relax\": outputs.e must be a "
		     "string");
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax'}]}",
		     "{'relax': {'command': ['r'], 'resources': {'cpus': '4'}}}",
		     -EINVAL, TOOLS_PATH ": " WHOLE("cpus", "1", "4096"));
	/* entries no node uses are not looked at */
	{
		struct jobspec_plan p;

		plan_ok("{'nodes': [{'id': 'n1', 'label': 'relax'}]}",
			"{'relax': {'command': ['r']}, 'other': {'command': 5}}",
			&opt_plain, &p);
		jobspec_plan_release(&p);
	}
}

/* The message of a refused plan of `graph` under `tools` (NULL when it
 * is accepted), at most `size` bytes into `msg`. */
static int refusal(const char *graph, const char *tools, char *msg,
		   size_t size)
{
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	int ret = plan(graph, tools, &opt_plain, &p, &err);

	snprintf(msg, size, "%s", err.message);
	if (!ret)
		jobspec_plan_release(&p);
	else {
		assert_null(p.jobs);
		assert_int_equal(p.n, 0);
	}
	return ret;
}

static void test_plan_render_refusals(void **state)
{
	char msg[FERR_MESSAGE_MAX];
	static const char *const runner[] = { "run", "{{ image.x.y }}", NULL };
	const struct jobspec_options o = {
		.session = "s", .run_dir = RUN, .container = runner,
	};
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	json_t *g, *t;

	(void)state;
	/* an undefined attribute of an undefined value */
	assert_int_equal(refusal("{'nodes': [{'id': 'n1', 'label': 'r'},"
				 " {'id': 'n2', 'label': 'r'}]}",
				 "{'r': {'command': ['r', '{{ node.id }}',"
				 " '{{ missing.attr }}']}}", msg, sizeof(msg)),
			 -EINVAL);
	assert_string_equal(msg, "node \"n1\": command[2]: 'missing' is "
			    "undefined");
	/* a NUL byte in a value */
	assert_int_equal(refusal("{'nodes': [{'id': 'n1', 'label': 'r',"
				 " 'input_parameters': [{'name': 'x',"
				 " 'value': 'a\\u0000b'}]}]}",
				 "{'r': {'command': ['r', '{{ x }}']}}", msg,
				 sizeof(msg)), -EINVAL);
	assert_string_equal(msg, "node \"n1\": command[1] renders with a NUL "
			    "byte, which no argument can hold");
	/* the container runner's items */
	g = unit_json("{'nodes': [{'id': 'n1', 'label': 'r'}]}");
	t = unit_json("{'r': {'image': 'i', 'command': ['r']}}");
	assert_int_equal(jobspec_plan(g, t, &o, &p, &err), -EINVAL);
	assert_string_equal(err.message, "node \"n1\": the container "
			    "runner[1]: 'str object' has no attribute 'x'");
	assert_null(p.jobs);
	json_decref(g);
	json_decref(t);
	/* past JOBSPEC_COMMAND_MAX */
	{
		char *big = malloc(4001), *tools;
		int ret;

		assert_non_null(big);
		memset(big, 'a', 4000);
		big[4000] = '\0';
		assert_true(asprintf(&tools, "{'r': {'command': [%s]}}",
				     "'{{ x }}{{ x }}{{ x }}{{ x }}'") > 0);
		{
			json_t *tv = unit_json(tools), *gv, *cmd;

			cmd = json_object_get(json_object_get(tv, "r"),
					      "command");
			for (int i = 0; i < 20; i++)
				json_array_append_new(cmd, json_string(
					"{{ x }}{{ x }}{{ x }}{{ x }}"));
			gv = json_pack("{s[{sssss[{ssss}]}]}", "nodes", "id",
				       "n1", "label", "r", "input_parameters",
				       "name", "x", "value", big);
			/* 21 items * 4 * 4000 bytes = 336000 > 262144 */
			ret = jobspec_plan(gv, tv, &opt_plain, &p, &err);
			if (ret != -E2BIG)
				fail_msg("%d: %s", ret, err.message);
			assert_string_equal(err.message, "node \"n1\": its "
					    "command renders to more than "
					    "262144 bytes");
			assert_null(p.jobs);
			json_decref(tv);
			json_decref(gv);
		}
		free(tools);
		free(big);
	}
}

/* Whether `msg` ("the graph has a cycle: a -> b -> a") names a cycle of
 * edges of `edges` ("a>b,b>a"): each arrow an edge, first == last. */
static void names_a_cycle(const char *msg, const char *edges)
{
	static const char head[] = "the graph has a cycle: ";
	char ids[32][16];
	size_t n = 0;
	const char *p;

	if (strncmp(msg, head, strlen(head)))
		fail_msg("not a cycle message: %s", msg);
	p = msg + strlen(head);
	for (;;) {
		size_t len = strcspn(p, " ");

		assert_true(n < 32 && len < 16);
		memcpy(ids[n], p, len);
		ids[n++][len] = '\0';
		p += len;
		if (!*p)
			break;
		if (strncmp(p, " -> ", 4))
			fail_msg("not a cycle message: %s", msg);
		p += 4;
	}
	if (n < 2 || strcmp(ids[0], ids[n - 1]))
		fail_msg("does not come back to where it starts: %s", msg);
	for (size_t i = 0; i + 1 < n; i++) {
		char arrow[1040];
		const char *e = edges;
		bool found = false;

		snprintf(arrow, sizeof(arrow), "%s>%s", ids[i], ids[i + 1]);
		while (*e && !found) {
			size_t len = strcspn(e, ",");

			found = len == strlen(arrow) && !strncmp(e, arrow, len);
			e += len + (e[len] == ',');
		}
		if (!found)
			fail_msg("%s is no edge: %s", arrow, msg);
		for (size_t j = 0; j < i; j++)
			if (!strcmp(ids[j], ids[i]))
				fail_msg("%s repeats: %s", ids[i], msg);
	}
}

/* A graph of nodes `ids` ("a,b,c", label t) and edges "a>b,b>a". */
static char *graph_of(const char *ids, const char *edges)
{
	struct sbuf sb = SBUF_INIT;
	const char *p;
	int k = 0;

	sbuf_addstr(&sb, "{'nodes': [");
	for (p = ids; *p;) {
		size_t len = strcspn(p, ",");

		sbuf_addf(&sb, "%s{'id': '%.*s', 'label': 't'}", p == ids ? ""
			  : ", ", (int)len, p);
		p += len + (p[len] == ',');
	}
	sbuf_addstr(&sb, "], 'edges': [");
	for (p = edges; *p; k++) {
		size_t len = strcspn(p, ",");
		const char *gt = memchr(p, '>', len);

		assert_non_null(gt);
		sbuf_addf(&sb, "%s{'id': 'e%d', 'source_node_id': '%.*s',"
			  " 'target_node_id': '%.*s', 'target_parameter_name':"
			  " 'input'}", k ? ", " : "", k, (int)(gt - p), p,
			  (int)(len - (size_t)(gt - p) - 1), gt + 1);
		p += len + (p[len] == ',');
	}
	sbuf_addstr(&sb, "]}");
	return sbuf_detach(&sb, NULL);
}

static void cycle_case(const char *ids, const char *edges, const char *want)
{
	char msg[FERR_MESSAGE_MAX], *g = graph_of(ids, edges);

	if (refusal(g, "{'t': {'command': ['t']}}", msg, sizeof(msg)) !=
	    -EINVAL)
		fail_msg("%s / %s: not refused", ids, edges);
	names_a_cycle(msg, edges);
	if (want)
		assert_string_equal(msg, want);
	free(g);
}

static void test_plan_cycles(void **state)
{
	(void)state;
	cycle_case("a,b", "a>b,b>a", "the graph has a cycle: a -> b -> a");
	cycle_case("a,b,c", "a>b,b>c,c>a",
		   "the graph has a cycle: a -> b -> c -> a");
	cycle_case("a", "a>a", "the graph has a cycle: a -> a");
	/* jobs before the cycle are placed and left out */
	cycle_case("s,a,b", "s>a,a>b,b>a", "the graph has a cycle: a -> b -> a");
	/* a node after the cycle, listed first: it is in no cycle */
	cycle_case("c,a,b", "a>b,b>a,b>c", NULL);
	cycle_case("x,y,a,b", "a>b,b>a,b>x,x>y", NULL);
	cycle_case("y,x,b,a", "a>b,b>a,b>x,x>y", NULL);
	/* a path from one cycle into another (it reaches the second only
	 * after a prefix that is in none) */
	cycle_case("x,a,b,p,q", "p>q,q>p,q>x,x>a,a>b,b>a", NULL);
	cycle_case("x,y,z,a,b,c", "z>x,x>y,y>a,a>b,b>c,c>a,c>z", NULL);
	/* a long cycle with a branch off it */
	cycle_case("a,b,c,d,e,f", "a>b,b>c,c>d,d>e,e>a,c>f", NULL);
}

/* A cycle too long for a message is cut in the middle, never at its
 * ends: it still reads from a node back to itself. */
static void test_plan_long_cycle(void **state)
{
	json_t *nodes = json_array(), *edges = json_array(), *g;
	json_t *t = unit_json("{'t': {'command': ['t']}}");
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	static const char head[] = "the graph has a cycle: "
		"node-with-a-long-name-000 -> node-with-a-long-name-001 -> ";
	static const char tail[] = " -> ... -> node-with-a-long-name-000";

	(void)state;
	for (int i = 0; i < 60; i++) {
		char id[64], next[64];

		snprintf(id, sizeof(id), "node-with-a-long-name-%03d", i);
		snprintf(next, sizeof(next), "node-with-a-long-name-%03d",
			 (i + 1) % 60);
		json_array_append_new(nodes, json_pack("{ssss}", "id", id,
						       "label", "t"));
		json_array_append_new(edges, json_pack("{ssssss}",
			"source_node_id", id, "target_node_id", next,
			"target_parameter_name", "input"));
	}
	g = json_pack("{soso}", "nodes", nodes, "edges", edges);
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), -EINVAL);
	assert_memory_equal(err.message, head, strlen(head));
	assert_true(strlen(err.message) > strlen(tail) &&
		    strlen(err.message) < FERR_MESSAGE_MAX - 1);
	assert_string_equal(err.message + strlen(err.message) - strlen(tail) + 4,
			    tail + 4);
	json_decref(g);
	json_decref(t);
}

static void test_plan_order_of_refusals(void **state)
{
	char msg[FERR_MESSAGE_MAX];

	(void)state;
	/* no command first, then an edge, then a template, then a cycle */
	refusal("{'nodes': [{'id': 'a', 'label': 't'}, {'id': 'b', 'label': 'u'},"
		" {'id': 'c', 'label': 'v'}],"
		" 'edges': [{'id': 'e1', 'source_node_id': 'a',"
		"  'source_parameter_name': 'nope', 'target_node_id': 'b',"
		"  'target_parameter_name': 'x'},"
		" {'id': 'e2', 'source_node_id': 'b',"
		"  'target_node_id': 'a', 'target_parameter_name': 'x'}]}",
		"{'t': {'command': ['{{ m.x }}']}, 'u': {'command': ['u']}}",
		msg, sizeof(msg));
	assert_string_equal(msg, "node \"c\": its label \"v\" has no command "
			    "in the tool map (" TOOLS_PATH ")");
	refusal("{'nodes': [{'id': 'a', 'label': 't'}, {'id': 'b', 'label': 'u'}],"
		" 'edges': [{'id': 'e2', 'source_node_id': 'b',"
		"  'target_node_id': 'a', 'target_parameter_name': 'x'},"
		" {'id': 'e1', 'source_node_id': 'a',"
		"  'source_parameter_name': 'nope', 'target_node_id': 'b',"
		"  'target_parameter_name': 'x'}]}",
		"{'t': {'command': ['{{ m.x }}']}, 'u': {'command': ['u']}}",
		msg, sizeof(msg));
	assert_string_equal(msg, "edge \"e1\": node \"a\" (t) has no output "
			    "\"nope\" (it has: out_t)");
	refusal("{'nodes': [{'id': 'a', 'label': 't'}, {'id': 'b', 'label': 'u'}],"
		" 'edges': [{'id': 'e2', 'source_node_id': 'b',"
		"  'target_node_id': 'a', 'target_parameter_name': 'x'},"
		" {'id': 'e1', 'source_node_id': 'a',"
		"  'target_node_id': 'b', 'target_parameter_name': 'x'}]}",
		"{'t': {'command': ['t']}, 'u': {'command': ['{{ m.x }}']}}",
		msg, sizeof(msg));
	assert_string_equal(msg, "node \"b\": command[0]: 'm' is undefined");
}

static void test_plan_no_nodes(void **state)
{
	(void)state;
	plan_refused("{'nodes': [], 'edges': []}", "{'t': {'command': ['t']}}",
		     -EINVAL, "the graph has no nodes");
	plan_refused("{'edges': []}", "{}", -EINVAL, "the graph has no nodes");
	plan_refused("{'nodes': {}}", NULL, -EINVAL, "the graph has no nodes");
	plan_refused("[]", NULL, -EINVAL, "the graph has no nodes");
	/* nodes that are not nodes, and edges between missing ones */
	plan_refused("{'nodes': [{'id': 'a'}]}", NULL, -EINVAL,
		     "nodes[0] has no id or label");
	plan_refused("{'nodes': [{'id': 'a', 'label': 't'}, 5]}",
		     "{'t': {'command': ['t']}}", -EINVAL,
		     "nodes[1] has no id or label");
	plan_refused("{'nodes': [{'id': 'a', 'label': 't'},"
		     " {'id': 'a', 'label': 't'}]}",
		     "{'t': {'command': ['t']}}", -EINVAL,
		     "two nodes are \"a\"");
	plan_refused("{'nodes': [{'id': 'a', 'label': 't'}],"
		     " 'edges': [{'id': 'e1', 'source_node_id': 'a',"
		     " 'target_node_id': 'zz', 'target_parameter_name': 'x'}]}",
		     "{'t': {'command': ['t']}}", -EINVAL,
		     "edge \"e1\": node \"zz\" is not in the graph");
	/* an empty id would make the job folder run_dir itself */
	plan_refused("{'nodes': [{'id': '', 'label': 't'}]}",
		     "{'t': {'command': ['t']}}", -EINVAL,
		     "nodes[0] has no id or label");
	plan_refused("{'nodes': [{'id': 'a', 'label': ''}]}",
		     "{'t': {'command': ['t']}}", -EINVAL,
		     "nodes[0] has no id or label");
}

/* JOBSPEC_NODES_MAX nodes make a plan; one more is -E2BIG. */
static void test_plan_many(void **state)
{
	json_t *nodes = json_array(), *g, *t = unit_json("{'t': {'command': ['t']}}");
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	char id[32];

	(void)state;
	for (int i = 0; i < JOBSPEC_NODES_MAX; i++) {
		snprintf(id, sizeof(id), "n%d", i);
		json_array_append_new(nodes, json_pack("{ssss}", "id", id,
						       "label", "t"));
	}
	g = json_pack("{sO}", "nodes", nodes);
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), 0);
	assert_int_equal(p.n, JOBSPEC_NODES_MAX);
	assert_string_equal(p.jobs[9999].job_dir, RUN "/n9999");
	jobspec_plan_release(&p);
	json_decref(g);

	json_array_append_new(nodes, json_pack("{ssss}", "id", "last",
					       "label", "t"));
	g = json_pack("{so}", "nodes", nodes);
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), -E2BIG);
	assert_string_equal(err.message, "the graph has 10001 nodes; a run "
			    "takes at most 10000");
	assert_null(p.jobs);
	json_decref(g);
	json_decref(t);
}

/*
 * 10,000 nodes with 5 edges into each, 3,000 of them making the same
 * folder name: ids, edges and names are looked up in O(1), so this
 * takes under a second of CPU under ASan (211 s when each lookup was a
 * scan of the nodes).
 */
static void test_plan_cost(void **state)
{
	json_t *nodes = json_array(), *edges = json_array(), *g;
	json_t *t = unit_json("{'t': {'command': ['t', '{{ x|length }}']}}");
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	char id[64], src[64];
	clock_t t0;
	double cpu;

	(void)state;
	for (int i = 0; i < JOBSPEC_NODES_MAX; i++) {
		if (i < 3000) {
			/* "x" and i in the digits "!@#$%^&*(": all "x_..." */
			int k = 0, v = i;

			id[k++] = 'x';
			do {
				id[k++] = "!@#$%^&*("[v % 9];
				v /= 9;
			} while (v);
			snprintf(id + k, sizeof(id) - (size_t)k, "%s",
				 &"!!!!!"[k - 1 > 5 ? 5 : k - 1]);
		} else {
			snprintf(id, sizeof(id), "node-%05d", i);
		}
		json_array_append_new(nodes, json_pack("{ssss}", "id", id,
						       "label", "t"));
		for (int k = 1; k <= 5 && i >= k; k++) {
			const char *s = json_string_value(json_object_get(
				json_array_get(nodes, (size_t)(i - k)), "id"));

			snprintf(src, sizeof(src), "%s", s);
			json_array_append_new(edges, json_pack("{ssssss}",
				"source_node_id", src, "target_node_id", id,
				"target_parameter_name", "x"));
		}
	}
	g = json_pack("{soso}", "nodes", nodes, "edges", edges);
	t0 = clock();
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), 0);
	cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
	if (cpu > 8.0)
		fail_msg("a plan of 10,000 nodes took %.1f s of CPU", cpu);
	assert_int_equal(p.n, JOBSPEC_NODES_MAX);
	for (size_t i = 0; i < p.n; i++)
		assert_string_equal(p.jobs[i].node_id, json_string_value(
			json_object_get(json_array_get(nodes, i), "id")));
	assert_string_equal(p.jobs[2999].job_dir, RUN "/x_____-3000");
	argv_is(&p.jobs[9999], "t", "5", NULL);
	jobspec_plan_release(&p);
	json_decref(g);
	json_decref(t);
}

static void safe_folder(const struct jobspec_job *j)
{
	const char *name = j->job_dir + strlen(RUN "/");

	assert_memory_equal(j->job_dir, RUN "/", strlen(RUN "/"));
	assert_true(*name);
	assert_true(*name != '.');
	for (const char *c = name; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-", *c))
			fail_msg("folder %s has byte 0x%02x", j->job_dir,
				 (unsigned char)*c);
}

static void test_plan_folders(void **state)
{
	json_t *nodes = json_array(), *g, *t = unit_json("{'t': {'command': ['t']}}");
	static const char *const ids[] = {
		"a b", "a_b", "a:b", "é", ".hidden", "x\ny", "..", "a.b",
		"_hidden", "a-b_C.9", "$(x)", "a\\b", "'q'", "a_b-2",
	};
	static const char *const want[] = {
		"a_b", "a_b-2", "a_b-3", "__", "_hidden", "x_y", "_.", "a.b",
		"_hidden-2", "a-b_C.9", "__x_", "a_b-4", "_q_", "a_b-2-2",
	};
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	char a[251], b[251];

	(void)state;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
		json_array_append_new(nodes, json_pack("{ssss}", "id", ids[i],
						       "label", "t"));
	/* two 250-byte ids that differ only past the 200th byte */
	memset(a, 'L', 250);
	a[250] = '\0';
	memcpy(b, a, sizeof(b));
	b[249] = 'M';
	json_array_append_new(nodes, json_pack("{ssss}", "id", a, "label",
					       "t"));
	json_array_append_new(nodes, json_pack("{ssss}", "id", b, "label",
					       "t"));
	g = json_pack("{so}", "nodes", nodes);
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), 0);
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char path[300];

		snprintf(path, sizeof(path), RUN "/%s", want[i]);
		assert_string_equal(job(&p, ids[i])->job_dir, path);
	}
	for (size_t i = 0; i < p.n; i++) {
		safe_folder(&p.jobs[i]);
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(p.jobs[i].job_dir,
						p.jobs[k].job_dir);
	}
	/* the long ones are cut, and the second takes "-2" */
	assert_int_equal(strlen(job(&p, a)->job_dir), strlen(RUN "/") + 200);
	assert_int_equal(strlen(job(&p, b)->job_dir),
			 strlen(RUN "/") + 202);
	assert_string_equal(job(&p, b)->job_dir + strlen(RUN "/") + 200, "-2");
	jobspec_plan_release(&p);
	json_decref(g);
	json_decref(t);
}

/* A label longer than any fixed buffer: out_<label> is still its output. */
static void test_plan_long_label(void **state)
{
	char label[1001];
	json_t *g, *t;
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	char *out;

	(void)state;
	memset(label, 'l', 1000);
	label[1000] = '\0';
	assert_true(asprintf(&out, "out_%s", label) > 0);
	g = json_pack("{s[{ssss}{ssss}]s[{ssssssss}]}", "nodes",
		      "id", "a", "label", label, "id", "b", "label", label,
		      "edges", "source_node_id", "a", "source_parameter_name",
		      out, "target_node_id", "b", "target_parameter_name",
		      "inp");
	t = json_pack("{s{s[ss]}}", label, "command", "x", "{{ inp }}");
	assert_non_null(g);
	assert_non_null(t);
	if (jobspec_plan(g, t, &opt_plain, &p, &err))
		fail_msg("refused: %s", err.message);
	assert_string_equal(p.jobs[0].outputs[0].name, out);
	argv_is(&p.jobs[1], "x", RUN "/a", NULL);
	jobspec_plan_release(&p);
	/* with no source_parameter_name, the same */
	json_object_del(json_array_get(json_object_get(g, "edges"), 0),
			"source_parameter_name");
	assert_int_equal(jobspec_plan(g, t, &opt_plain, &p, &err), 0);
	argv_is(&p.jobs[1], "x", RUN "/a", NULL);
	jobspec_plan_release(&p);
	json_decref(g);
	json_decref(t);
	free(out);
}

/* ---- jobspec_script, run for real --------------------------------------- */

struct run {
	char dir[64];
	struct jobspec_plan plan;
	struct jobspec_options opt;
};

static int run_setup(void **state)
{
	struct run *r = calloc(1, sizeof(*r));

	if (!r || unit_tmpdir(r->dir, sizeof(r->dir), "jobspec") < 0) {
		free(r);
		return -1;
	}
	r->opt.session = "sess";
	r->opt.run_dir = r->dir;
	r->opt.tools_path = TOOLS_PATH;
	*state = r;
	return 0;
}

static int run_teardown(void **state)
{
	struct run *r = *state;

	jobspec_plan_release(&r->plan);
	unit_rmtree(r->dir);
	free(r);
	return 0;
}

/* Plan one node "n1" (label "t") with `tools` and the inputs (JSON
 * list of {name, value}, built by the caller: taken). */
static void run_plan(struct run *r, const char *tools, json_t *inputs)
{
	json_t *g = json_pack("{s[{ssssso?}]}", "nodes", "id", "n1", "label",
			      "t", "input_parameters", inputs);
	json_t *t = unit_json(tools);
	struct ferr err = FERR_INIT;

	assert_non_null(g);
	jobspec_plan_release(&r->plan);
	if (jobspec_plan(g, t, &r->opt, &r->plan, &err))
		fail_msg("refused: %s", err.message);
	json_decref(g);
	json_decref(t);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct sbuf sb = SBUF_INIT;

	if (!f)
		return NULL;
	assert_int_equal(sbuf_read(&sb, f), 0);
	fclose(f);
	return sbuf_detach(&sb, len);
}

/* Write job i's script into its folder and run it with bash (its output
 * to the files the contract names); the exit status of bash. */
static int run_job(struct run *r, size_t i)
{
	const struct jobspec_job *j = &r->plan.jobs[i];
	struct sbuf script = SBUF_INIT, cmd = SBUF_INIT;
	char path[512];
	FILE *f;
	int status;

	assert_int_equal(jobspec_script(&r->plan, i, &r->opt, &script), 0);
	mkdir(j->job_dir, 0755);
	snprintf(path, sizeof(path), "%s/" JOBSPEC_SCRIPT, j->job_dir);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(script.buf, 1, script.len, f), script.len);
	fclose(f);
	/* the folder names are safe: the paths need no quoting here */
	sbuf_addf(&cmd, "cd /tmp && bash %s > %s/" JOBSPEC_STDOUT " 2> %s/"
		  JOBSPEC_STDERR, path, j->job_dir, j->job_dir);
	status = system(cmd.buf);
	sbuf_release(&script);
	sbuf_release(&cmd);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* .flowfs-exit is "<code> <seconds>\n" with a time in [t0, now]. */
static void exit_file_is(struct run *r, size_t i, int code, time_t t0)
{
	char path[512], want[16], *text, *sp, *end;
	struct timespec now;
	long long t;

	snprintf(path, sizeof(path), "%s/" JOBSPEC_EXIT, r->plan.jobs[i].job_dir);
	text = slurp(path, NULL);
	if (!text)
		fail_msg("no %s", path);
	snprintf(want, sizeof(want), "%d ", code);
	sp = strchr(text, ' ');
	assert_non_null(sp);
	if (strncmp(text, want, strlen(want)))
		fail_msg("exit file is \"%s\", wants code %d", text, code);
	t = strtoll(sp + 1, &end, 10);
	assert_string_equal(end, "\n");
	/* time() is the coarse clock, a tick behind what the script's
	 * `date` read: the precise one bounds it */
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
	assert_true(t >= (long long)t0 && t <= (long long)now.tv_sec);
	free(text);
	/* and it was renamed into place */
	snprintf(path, sizeof(path), "%s/" JOBSPEC_EXIT ".tmp",
		 r->plan.jobs[i].job_dir);
	assert_int_equal(access(path, F_OK), -1);

	snprintf(path, sizeof(path), "%s/" JOBSPEC_STARTED,
		 r->plan.jobs[i].job_dir);
	text = slurp(path, NULL);
	if (!text)
		fail_msg("no %s", path);
	t = strtoll(text, &end, 10);
	assert_string_equal(end, "\n");
	/* time() is the coarse clock, a tick behind what the script's
	 * `date` read: the precise one bounds it */
	assert_int_equal(clock_gettime(CLOCK_REALTIME, &now), 0);
	assert_true(t >= (long long)t0 && t <= (long long)now.tv_sec);
	free(text);
}

static void test_script_hostile_argument(void **state)
{
	struct run *r = *state;
	char pwned[128], pwned2[128], path[512], *payload, *got;
	size_t len;
	time_t t0 = time(NULL);

	snprintf(pwned, sizeof(pwned), "%s/pwned", r->dir);
	snprintf(pwned2, sizeof(pwned2), "%s/pwned2", r->dir);
	assert_true(asprintf(&payload, "it's \"q\" $(touch %s) `touch %s`"
			     " a\nb\tc ; touch %s | & < > \\ * ? ~ !! $HOME"
			     " ${x:-y} '' '\\'' \xc3\xa9 \n\n", pwned, pwned2,
			     pwned) > 0);
	run_plan(r, "{'t': {'command': ['/usr/bin/python3', '-c',"
		 " 'import sys; open(\\'arg\\', \\'wb\\').write(sys.argv[1]"
		 ".encode(\\'utf-8\\', \\'surrogateescape\\'))',"
		 " '{{ payload }}']}}",
		 json_pack("[{ssss}]", "name", "payload", "value", payload));
	assert_string_equal(r->plan.jobs[0].argv[3], payload);
	assert_int_equal(run_job(r, 0), 0);
	snprintf(path, sizeof(path), "%s/arg", r->plan.jobs[0].job_dir);
	got = slurp(path, &len);
	assert_non_null(got);
	assert_int_equal(len, strlen(payload));
	assert_memory_equal(got, payload, len);
	assert_int_equal(access(pwned, F_OK), -1);
	assert_int_equal(access(pwned2, F_OK), -1);
	exit_file_is(r, 0, 0, t0);
	free(got);
	free(payload);
}

/* The first word is a program, never an assignment or a bash keyword. */
static void test_script_first_word(void **state)
{
	struct run *r = *state;
	char pwned[128];
	time_t t0 = time(NULL);

	snprintf(pwned, sizeof(pwned), "%s/pwned", r->dir);
	run_plan(r, "{'t': {'command': ['{{ prog }}', 'touch', '{{ f }}']}}",
		 json_pack("[{ssss}{ssss}]", "name", "prog", "value", "X=1",
			   "name", "f", "value", pwned));
	assert_int_equal(run_job(r, 0), 127);
	assert_int_equal(access(pwned, F_OK), -1);
	exit_file_is(r, 0, 127, t0);

	run_plan(r, "{'t': {'command': ['if', 'true']}}", NULL);
	assert_int_equal(run_job(r, 0), 127);
	exit_file_is(r, 0, 127, t0);

	run_plan(r, "{'t': {'command': ['{{ p }}', 'touch', '{{ f }}']}}",
		 json_pack("[{ssss}{ssss}]", "name", "p", "value", "!",
			   "name", "f", "value", pwned));
	assert_int_equal(run_job(r, 0), 127);
	assert_int_equal(access(pwned, F_OK), -1);
}

static void test_script_exit_codes(void **state)
{
	struct run *r = *state;
	time_t t0 = time(NULL);

	run_plan(r, "{'t': {'command': ['false']}}", NULL);
	assert_int_equal(run_job(r, 0), 1);
	exit_file_is(r, 0, 1, t0);

	run_plan(r, "{'t': {'command': ['sh', '-c', 'exit 7']}}", NULL);
	assert_int_equal(run_job(r, 0), 7);
	exit_file_is(r, 0, 7, t0);

	run_plan(r, "{'t': {'command': ['/nonexistent/flowfs-no-such-program',"
		 " 'x']}}", NULL);
	assert_int_equal(run_job(r, 0), 127);
	exit_file_is(r, 0, 127, t0);

	run_plan(r, "{'t': {'command': ['flowfs-no-such-program-on-path']}}",
		 NULL);
	assert_int_equal(run_job(r, 0), 127);
	exit_file_is(r, 0, 127, t0);

	/* it runs in its folder; stdout is the caller's to send */
	run_plan(r, "{'t': {'command': ['sh', '-c', 'pwd; echo err >&2']}}",
		 NULL);
	assert_int_equal(run_job(r, 0), 0);
	exit_file_is(r, 0, 0, t0);
	{
		char path[512], want[512], *out;

		snprintf(path, sizeof(path), "%s/" JOBSPEC_STDOUT,
			 r->plan.jobs[0].job_dir);
		snprintf(want, sizeof(want), "%s\n", r->plan.jobs[0].job_dir);
		out = slurp(path, NULL);
		assert_non_null(out);
		assert_string_equal(out, want);
		free(out);
		snprintf(path, sizeof(path), "%s/" JOBSPEC_STDERR,
			 r->plan.jobs[0].job_dir);
		out = slurp(path, NULL);
		assert_non_null(out);
		assert_string_equal(out, "err\n");
		free(out);
	}

	/* an empty argument stays one */
	run_plan(r, "{'t': {'command': ['sh', '-c', 'exit $#', 'zero', '',"
		 " '{{ e }}', '']}}",
		 json_pack("[{ssss}]", "name", "e", "value", ""));
	assert_int_equal(run_job(r, 0), 3);
	exit_file_is(r, 0, 3, t0);
}

/* The lines of `text` that start with "#SBATCH", joined with "|". */
static char *sbatch_lines(const char *text)
{
	struct sbuf sb = SBUF_INIT;

	for (const char *p = text; *p;) {
		size_t len = strcspn(p, "\n");

		if (!strncmp(p, "#SBATCH", 7))
			sbuf_addf(&sb, "%s%.*s", sb.len ? "|" : "", (int)len, p);
		p += len + (p[len] == '\n');
	}
	return sbuf_detach(&sb, NULL);
}

static void test_script_sbatch(void **state)
{
	struct run *r = *state;
	struct sbuf s = SBUF_INIT;
	json_t *g, *t;
	struct ferr err = FERR_INIT;
	char *lines;

	r->opt.session = "my sess\n#SBATCH --x";
	g = unit_json("{'nodes': [{'id': 'n 1\\n#SBATCH --evil', 'label': 'gpu'},"
	      " {'id': 'plain', 'label': 'cpu'},"
	      " {'id': '.n2', 'label': 'cpu',"
	      "  'system_values': {'machine_type': 'c2_m8_cpu'}}]}");
	t = unit_json("{'gpu': {'machine_type': 'c8_m32_1 * NVIDIA V100',"
	      "  'command': ['x'], 'resources': {'time_minutes': 90,"
	      "  'partition': 'gpu-a', 'cpus': 6}},"
	      " 'cpu': {'command': ['y']}}");
	if (jobspec_plan(g, t, &r->opt, &r->plan, &err))
		fail_msg("refused: %s", err.message);
	assert_int_equal(jobspec_script(&r->plan, 0, &r->opt, &s), 0);
	assert_memory_equal(s.buf, "#!/bin/bash\n", 12);
	lines = sbatch_lines(s.buf);
	assert_string_equal(lines,
			    "#SBATCH --job-name=flowfs-my_sess__SBATCH_--x-"
			    "n_1__SBATCH_--evil|"
			    "#SBATCH --nodes=1|#SBATCH --ntasks=1|"
			    "#SBATCH --cpus-per-task=6|#SBATCH --mem=32768M|"
			    "#SBATCH --gres=gpu:1|#SBATCH --time=90|"
			    "#SBATCH --partition=gpu-a");
	free(lines);
	/* every line of the script is one the script means: no name
	 * reaches the start of a line */
	assert_null(strstr(s.buf, "\n#SBATCH --evil"));
	assert_null(strstr(s.buf, "\n#SBATCH --x"));
	sbuf_reset(&s);
	assert_int_equal(jobspec_script(&r->plan, 1, &r->opt, &s), 0);
	lines = sbatch_lines(s.buf);
	assert_string_equal(lines,
			    "#SBATCH --job-name=flowfs-my_sess__SBATCH_--x-plain|"
			    "#SBATCH --nodes=1|#SBATCH --ntasks=1|"
			    "#SBATCH --cpus-per-task=1");
	free(lines);
	sbuf_reset(&s);
	assert_int_equal(jobspec_script(&r->plan, 2, &r->opt, &s), 0);
	lines = sbatch_lines(s.buf);
	assert_string_equal(lines,
			    "#SBATCH --job-name=flowfs-my_sess__SBATCH_--x-_n2|"
			    "#SBATCH --nodes=1|#SBATCH --ntasks=1|"
			    "#SBATCH --cpus-per-task=2|#SBATCH --mem=8192M");
	free(lines);
	/* appended, not replaced */
	{
		size_t before = s.len;

		assert_int_equal(jobspec_script(&r->plan, 2, &r->opt, &s), 0);
		assert_int_equal(s.len, 2 * before);
		assert_memory_equal(s.buf, s.buf + before, before);
	}
	sbuf_release(&s);
	json_decref(g);
	json_decref(t);
	/* the scripts run (the folder of a hostile id included) */
	assert_int_equal(run_job(r, 0), 127);
	assert_int_equal(run_job(r, 2), 127);
}

static void test_sbatch_flags(void **state)
{
	struct jobspec_plan p;
	char **f;

	(void)state;
	plan_ok("{'nodes': [{'id': 'a b', 'label': 't'}]}",
		"{'t': {'command': ['t']}}", &opt_plain, &p);
	assert_int_equal(jobspec_sbatch_flags(&p, 0, &f), 0);
	assert_string_equal(f[0], "--chdir=" RUN "/a_b");
	assert_string_equal(f[1], "--output=" RUN "/a_b/.flowfs-stdout");
	assert_string_equal(f[2], "--error=" RUN "/a_b/.flowfs-stderr");
	assert_null(f[3]);
	for (int i = 0; f[i]; i++)
		free(f[i]);
	free(f);
	jobspec_plan_release(&p);
}

/* ---- jobspec_shell_quote ------------------------------------------------ */

static void quoted_is(const char *s, const char *want)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(sbuf_addstr(&sb, "x"), 0);
	assert_int_equal(jobspec_shell_quote(&sb, s), 0);
	assert_string_equal(sb.buf + 1, want);
	sbuf_release(&sb);
}

static void test_shell_quote(void **state)
{
	(void)state;
	quoted_is("abc", "abc");
	quoted_is("a-b_c.d/e=f:g,h@i%j+k", "a-b_c.d/e=f:g,h@i%j+k");
	quoted_is("/usr/bin/python3", "/usr/bin/python3");
	quoted_is("", "''");
	quoted_is("a b", "'a b'");
	quoted_is("it's", "'it'\\''s'");
	quoted_is("'", "''\\'''");
	quoted_is("''", "''\\'''\\'''");
	quoted_is("$HOME", "'$HOME'");
	quoted_is("~", "'~'");
	quoted_is("*", "'*'");
	quoted_is("a\nb", "'a\nb'");
	quoted_is("\"", "'\"'");
	quoted_is("\\", "'\\'");
	quoted_is("é", "'é'");
	quoted_is("{a,b}", "'{a,b}'");
	quoted_is("!", "'!'");
	quoted_is("#", "'#'");
}

/* Random byte strings come back byte for byte through bash. */
static void test_shell_quote_bash(void **state)
{
	enum { N = 300 };
	char dir[64], path[128];
	struct sbuf script = SBUF_INIT, cmd = SBUF_INIT;
	char *want[N];
	unsigned seed = 12345;
	FILE *f;

	(void)state;
	assert_int_equal(unit_tmpdir(dir, sizeof(dir), "quote"), 0);
	for (int i = 0; i < N; i++) {
		size_t len = i < 3 ? (size_t)i : (size_t)(rand_r(&seed) % 40);

		want[i] = malloc(len + 1);
		assert_non_null(want[i]);
		for (size_t k = 0; k < len; k++) {
			int c;

			/* half of them from the bytes that matter most */
			if (i % 2)
				c = "'\"\\$`!*?~#&;|<>(){}[] \t\n=%,@:+-._/aZ9"
				    [rand_r(&seed) % 38];
			else
				c = 1 + rand_r(&seed) % 255;
			want[i][k] = (char)c;
		}
		want[i][len] = '\0';
		sbuf_addf(&script, "printf %%s ");
		assert_int_equal(jobspec_shell_quote(&script, want[i]), 0);
		sbuf_addf(&script, " > %s/%d\n", dir, i);
	}
	snprintf(path, sizeof(path), "%s/script", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fwrite(script.buf, 1, script.len, f);
	fclose(f);
	sbuf_addf(&cmd, "LC_ALL=C bash %s", path);
	assert_int_equal(system(cmd.buf), 0);
	for (int i = 0; i < N; i++) {
		char *got;
		size_t len;

		snprintf(path, sizeof(path), "%s/%d", dir, i);
		got = slurp(path, &len);
		assert_non_null(got);
		if (len != strlen(want[i]) || memcmp(got, want[i], len))
			fail_msg("string %d came back different", i);
		free(got);
		free(want[i]);
	}
	sbuf_release(&script);
	sbuf_release(&cmd);
	unit_rmtree(dir);
}

/* ---- images (jobspec.h, "Images") --------------------------------------- */

static void image_ok(const char *ref)
{
	const char *why = "?";

	if (jobspec_image_check(ref, &why) != 0)
		fail_msg("refused %s: %s", ref, why);
}

static void image_bad(const char *ref, const char *want)
{
	const char *why = NULL;

	if (jobspec_image_check(ref, &why) != -EINVAL)
		fail_msg("took %s", ref);
	if (!why || !strstr(why, want))
		fail_msg("%s: why \"%s\", wants \"%s\"", ref, why ? why : "",
			 want);
}

#define HEX32 "0123456789abcdef0123456789ABCDEF"
#define NAME_WHY "its name is not [domain/]path"
#define TAG_WHY "its tag is not"
#define DIGEST_WHY "its digest is not"

/* A string of `n` times `c` after `head`, then `tail` (static buffer). */
static const char *rep(const char *head, char c, size_t n, const char *tail)
{
	static char buf[1024];
	size_t h = strlen(head);

	assert_true(h + n + strlen(tail) < sizeof(buf));
	memcpy(buf, head, h);
	memset(buf + h, c, n);
	strcpy(buf + h + n, tail);
	return buf;
}

static void test_image_grammar(void **state)
{
	(void)state;
	/* names: one part, several, separators at their edges */
	image_ok("a");
	image_ok("0");
	image_ok("ubuntu");
	image_ok("library/ubuntu");
	image_ok("a.b");
	image_ok("a_b");
	image_ok("a__b");
	image_ok("a-b");
	image_ok("a---b");
	image_ok("a-b.c_d__e/f0");
	image_bad("a___b", NAME_WHY);
	image_bad("a._b", NAME_WHY);
	image_bad("a..b", NAME_WHY);
	image_bad("a_", NAME_WHY);
	image_bad("_a", NAME_WHY);
	image_bad("a.", NAME_WHY);
	image_bad(".a", NAME_WHY);
	image_bad("a-", NAME_WHY);
	image_bad("a//b", NAME_WHY);
	image_bad("a/", NAME_WHY);
	image_bad("/a", NAME_WHY);
	image_bad("Ubuntu", NAME_WHY);	/* a path is lower case */
	image_bad("a/B", NAME_WHY);
	image_bad("a/-b", NAME_WHY);
	/* domains: a first part with another after it */
	image_ok("registry.example/abacus:3.8");
	image_ok("Registry.Example/abacus");
	image_ok("localhost:5000/x");
	image_ok("a:5000/x");	/* docker reads it so too */
	image_ok("reg-1.example:443/a/b/c:t");
	image_ok("[::1]:5000/x");
	image_ok("[fe80::1]/a/b");
	image_bad("[]/x", NAME_WHY);
	image_bad("[::1/x", NAME_WHY);
	image_bad("[::g]/x", NAME_WHY);
	image_bad("host-/x", NAME_WHY);
	image_bad("-host/x", "it begins with \"-\"");
	image_bad("h..x/y", NAME_WHY);
	image_bad("h:/x", NAME_WHY);
	image_bad("h:50a/x", NAME_WHY);
	image_ok("h:5000");	/* no "/": the name h, the tag 5000 */
	image_bad("x:a/b", NAME_WHY);
	/* the name's 255 bytes */
	image_ok(rep("", 'a', 255, ""));
	image_ok(rep("", 'a', 255, ":t"));
	image_bad(rep("", 'a', 256, ""), "longer than 255 bytes");
	image_ok(rep("r.example/", 'a', 245, ""));
	image_bad(rep("r.example/", 'a', 246, ""), "longer than 255 bytes");
	/* tags: 1 to 128, not beginning with . or - */
	image_ok("x:_");
	image_ok("x:A.b-c_9");
	image_ok(rep("x:", 'a', 128, ""));
	image_bad(rep("x:", 'a', 129, ""), TAG_WHY);
	image_bad("x:", TAG_WHY);
	image_bad("x:-1", TAG_WHY);
	image_bad("x:.a", TAG_WHY);
	image_bad("x:a+b", TAG_WHY);
	image_bad("x:a:b", TAG_WHY);
	/* digests: algorithm, 32 to 128 hex digits */
	image_ok("x@sha256:" HEX32 HEX32);
	image_ok("x:1@sha256:" HEX32 HEX32);
	image_ok("r.example:5000/x:1@sha512:" HEX32 HEX32 HEX32 HEX32);
	image_ok("x@sha256:" HEX32);
	image_ok("x@a+b.c_d-e9:" HEX32);
	image_bad("x@sha256:" "0123456789abcdef0123456789abcde", DIGEST_WHY);
	image_bad("x@sha256:" HEX32 HEX32 HEX32 HEX32 "0", DIGEST_WHY);
	image_bad("x@sha256:" HEX32 "g", DIGEST_WHY);
	image_bad("x@sha256", DIGEST_WHY);
	image_bad("x@:" HEX32, DIGEST_WHY);
	image_bad("x@1a:" HEX32, DIGEST_WHY);
	image_bad("x@a+:" HEX32, DIGEST_WHY);
	image_bad("x@a++b:" HEX32, DIGEST_WHY);
	image_bad("x@sha256:" HEX32 "@sha256:" HEX32, DIGEST_WHY);
	image_bad("@sha256:" HEX32, NAME_WHY);
	/* what the runner must never get: an option, a second word */
	image_bad("", "it is empty");
	image_bad("-x", "it begins with \"-\"");
	image_bad("--privileged", "it begins with \"-\"");
	image_bad("--volume=/:/host", "it begins with \"-\"");
	image_bad("a b", "a blank or a control character");
	image_bad("a\tb", "a blank or a control character");
	image_bad("a\nb", "a blank or a control character");
	image_bad("a\x7f", "a blank or a control character");
	image_bad("a\x01", "a blank or a control character");
	image_bad("caf\xc3\xa9", "outside ASCII");
	image_bad("a'b", NAME_WHY);
	image_bad("a$(id)", NAME_WHY);
	image_bad("docker://ubuntu", NAME_WHY);
}

static void test_check_images_options(void **state)
{
	char big[8 * 300 + 64];
	size_t at;

	(void)state;
	check_ok("{'image': 'reg/a:1', 'images': ['reg/a:2', 'other/b'],"
		 " 'options': ['flags', 'extra'], 'command': ['x']}");
	check_ok("{'images': [], 'options': []}");
	check_refused("{'image': '--privileged'}",
		      "\"relax\": image: \"--privileged\" is not an image "
		      "reference (registry/name:tag@digest): it begins with "
		      "\"-\"");
	check_refused("{'image': 'reg/X'}",
		      "\"relax\": image: \"reg/X\" is not an image reference "
		      "(registry/name:tag@digest): its name is not "
		      "[domain/]path, a path being parts of lower-case letters "
		      "and digits joined by \".\", \"_\", \"__\" or \"-\", "
		      "between \"/\"");
	check_refused("{'images': 'reg/a:1'}", "\"relax\": images must be a "
		      "list of at most 256 image references");
	check_refused("{'images': ['reg/a:1', 'a b']}",
		      "\"relax\": images[1]: \"a b\" is not an image reference "
		      "(registry/name:tag@digest): it holds a blank or a "
		      "control character");
	check_refused("{'images': ['']}",
		      "\"relax\": images[0]: \"\" is not an image reference "
		      "(registry/name:tag@digest): it is empty");
	check_refused("{'images': [3]}",
		      "\"relax\": images[0] must be a string");
	/* 256 images, and one more */
	at = (size_t)snprintf(big, sizeof(big), "{'images': [");
	for (int i = 0; i < 256; i++)
		at += (size_t)snprintf(big + at, sizeof(big) - at, "%s'i%d'",
				       i ? ", " : "", i);
	snprintf(big + at, sizeof(big) - at, "]}");
	check_ok(big);
	snprintf(big + at, sizeof(big) - at, ", 'x']}");
	check_refused(big, "\"relax\": images must be a list of at most 256 "
		      "image references");
	check_refused("{'options': 'flags'}", "\"relax\": options must be a "
		      "list of at most 256 input parameter names (those whose "
		      "value may begin an argument with \"-\")");
	check_refused("{'options': ['']}", "\"relax\": options[0] must be the "
		      "name of an input parameter");
	check_refused("{'options': ['a', null]}", "\"relax\": options[1] must "
		      "be the name of an input parameter");
	check_refused("{'options': ['inputs']}", "\"relax\": options[0]: "
		      "\"inputs\" is flowfs's, no input parameter (inputs, "
		      "job_dir, node and session cannot begin an argument with "
		      "\"-\")");
	check_refused("{'options': ['a', 'node']}", "\"relax\": options[1]: "
		      "\"node\" is flowfs's, no input parameter (inputs, "
		      "job_dir, node and session cannot begin an argument with "
		      "\"-\")");
}

/* A node's image: a reference, and one the map allows for its label;
 * with a runner or without (the exports take the image too). */
static void test_plan_images(void **state)
{
	static const char *const runner[] = {
		"podman", "run", "--rm", "{{ image }}", NULL
	};
	const struct jobspec_options o = {
		.session = "s", .run_dir = RUN, .container = runner,
		.tools_path = TOOLS_PATH,
	};
	static const char tools[] =
		"{'relax': {'image': 'reg/a:1', 'images': ['reg/a:2',"
		" 'reg/b@sha256:" HEX32 "'], 'command': ['relax']},"
		" 'bare': {'command': ['bare']},"
		" 'listed': {'images': ['reg/c:1'], 'command': ['c']}}";
	struct jobspec_plan p;
	char graph[1600], want[1600];	/* room for rep()'s 1023 */

	(void)state;
	/* the map's image, one of its list, none */
	plan_ok("{'nodes': [{'id': 'a', 'label': 'relax'},"
		" {'id': 'b', 'label': 'relax', 'system_values':"
		"  {'image': 'reg/a:2'}},"
		" {'id': 'c', 'label': 'relax', 'system_values':"
		"  {'image': 'reg/b@sha256:" HEX32 "'}},"
		" {'id': 'd', 'label': 'bare'},"
		" {'id': 'e', 'label': 'listed', 'system_values':"
		"  {'image': 'reg/c:1'}},"
		" {'id': 'f', 'label': 'listed'}]}", tools, &o, &p);
	argv_is(job(&p, "a"), "podman", "run", "--rm", "reg/a:1", "relax",
		NULL);
	argv_is(job(&p, "b"), "podman", "run", "--rm", "reg/a:2", "relax",
		NULL);
	argv_is(job(&p, "c"), "podman", "run", "--rm",
		"reg/b@sha256:" HEX32, "relax", NULL);
	argv_is(job(&p, "d"), "bare", NULL);
	argv_is(job(&p, "e"), "podman", "run", "--rm", "reg/c:1", "c", NULL);
	argv_is(job(&p, "f"), "c", NULL);
	jobspec_plan_release(&p);
	/* the attack: the image a runner's option */
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax',"
		     " 'system_values': {'image': '--privileged'}}]}", tools,
		     -EINVAL, "node \"n1\": system_values.image "
		     "\"--privileged\" is not an image reference "
		     "(registry/name:tag@digest): it begins with \"-\"");
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax',"
		     " 'system_values': {'image': 'reg/a:1 --privileged'}}]}",
		     tools, -EINVAL, "node \"n1\": system_values.image "
		     "\"reg/a:1 --privileged\" is not an image reference "
		     "(registry/name:tag@digest): it holds a blank or a "
		     "control character");
	/* a valid image the map did not choose */
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax',"
		     " 'system_values': {'image': 'evil/x:1'}}]}", tools,
		     -EINVAL, "node \"n1\": system_values.image \"evil/x:1\" is "
		     "not an image the tool map allows for \"relax\" (it "
		     "allows: reg/a:1, reg/a:2, reg/b@sha256:" HEX32 ")");
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'relax',"
		     " 'system_values': {'image': 'reg/a'}}]}", tools,
		     -EINVAL, "node \"n1\": system_values.image \"reg/a\" is "
		     "not an image the tool map allows for \"relax\" (it "
		     "allows: reg/a:1, reg/a:2, reg/b@sha256:" HEX32 ")");
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'bare',"
		     " 'system_values': {'image': 'ubuntu'}}]}", tools,
		     -EINVAL, "node \"n1\": system_values.image \"ubuntu\" is "
		     "not an image the tool map allows for \"bare\" (it names "
		     "no \"image\" or \"images\" for it)");
	plan_refused("{'nodes': [{'id': 'n1', 'label': 'listed',"
		     " 'system_values': {'image': 'reg/c:2'}}]}", tools,
		     -EINVAL, "node \"n1\": system_values.image \"reg/c:2\" is "
		     "not an image the tool map allows for \"listed\" (it "
		     "allows: reg/c:1)");
	/* a long image is cut in the message: 92 bytes and "..." */
	snprintf(graph, sizeof(graph), "{'nodes': [{'id': 'n1', 'label':"
		 " 'bare', 'system_values': {'image': '%s'}}]}",
		 rep("", 'a', 200, ""));
	snprintf(want, sizeof(want), "node \"n1\": system_values.image \"%s\" "
		 "is not an image the tool map allows for \"bare\" (it names "
		 "no \"image\" or \"images\" for it)", rep("", 'a', 92, "..."));
	plan_refused(graph, tools, -EINVAL, want);
}

/* ---- options (jobspec.h, "Options") ------------------------------------- */

static void test_is_option(void **state)
{
	static const char *const options[] = {
		"-", "--", "-x", "--x", "-1x", "-inf", "-nan", "- 1", "-1 ",
		"-1e", "-1e+", "-1e5x", "-.", "-e5", "-0x10", "--1", "-1.2.3",
		"--checkpoint-action=exec=id", NULL
	};
	static const char *const not_options[] = {
		"", "x", "1", "a-b", "/-x", " -x", "-1", "-0", "-0.5", "-.5",
		"-1.", "-2e-3", "-2E+10", "-12345678901234567890", "-1e5", NULL
	};

	(void)state;
	for (int i = 0; options[i]; i++)
		if (!jobspec_is_option(options[i]))
			fail_msg("\"%s\" reads as an option", options[i]);
	for (int i = 0; not_options[i]; i++)
		if (jobspec_is_option(not_options[i]))
			fail_msg("\"%s\" does not read as an option",
				 not_options[i]);
}

/*
 * The plan of node "n1" (label "t", inputs `inputs`, a JSON object of
 * name -> value in unit_json's quoting) whose command is ["prog", item]
 * under options `options` (a JSON list, or NULL): 0 and argv[1] in
 * `arg`, or the refusal's code and message in `msg`.
 */
static int one_arg(const char *item, const char *inputs, const char *options,
		   char *out, size_t size)
{
	json_t *in = unit_json(inputs), *params = json_array(), *v;
	json_t *graph, *tools, *cmd = json_pack("[ss]", "prog", item);
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	const char *name;
	int ret;

	assert_non_null(in);
	json_object_foreach(in, name, v)
		json_array_append_new(params, json_pack("{sssO}", "name", name,
							"value", v));
	graph = json_pack("{s[{sssssO}]}", "nodes", "id", "n1", "label", "t",
			  "input_parameters", params);
	tools = json_pack("{s{sO}}", "t", "command", cmd);
	if (options)
		json_object_set_new(json_object_get(tools, "t"), "options",
				    unit_json(options));
	assert_non_null(graph);
	assert_non_null(tools);
	ret = jobspec_plan(graph, tools, &opt_plain, &p, &err);
	if (!ret) {
		snprintf(out, size, "%s", p.jobs[0].argv[1]);
		jobspec_plan_release(&p);
	} else {
		snprintf(out, size, "%s", err.message);
		assert_null(p.jobs);
	}
	json_decref(in);
	json_decref(params);
	json_decref(cmd);
	json_decref(graph);
	json_decref(tools);
	return ret;
}

static void arg_stands(const char *item, const char *inputs,
		       const char *options, const char *want)
{
	char out[FERR_MESSAGE_MAX];
	int ret = one_arg(item, inputs, options, out, sizeof(out));

	if (ret)
		fail_msg("%s with %s: refused: %s", item, inputs, out);
	if (strcmp(out, want))
		fail_msg("%s with %s: \"%s\", not \"%s\"", item, inputs, out,
			 want);
}

/* Refused: the message is the common one, naming the argument `arg` and
 * the {{ }} `expr` ("" for "could not be told"). */
static void arg_refused(const char *item, const char *inputs,
			const char *options, const char *arg, const char *expr)
{
	char out[FERR_MESSAGE_MAX], want[FERR_MESSAGE_MAX];
	int ret = one_arg(item, inputs, options, out, sizeof(out));

	if (*expr)
		snprintf(want, sizeof(want), "node \"n1\": command[1] \"%s\" "
			 "begins with \"-\" from the node's value %s: a program "
			 "would read it as an option; only input parameters the "
			 "tool map lists in \"options\" for \"t\" may do that",
			 arg, expr);
	else
		snprintf(want, sizeof(want), "node \"n1\": command[1] \"%s\" "
			 "begins with \"-\", and where from could not be told: "
			 "a program would read it as an option", arg);
	if (ret != -EINVAL)
		fail_msg("%s with %s: %d (%s), not refused", item, inputs, ret,
			 out);
	if (strcmp(out, want))
		fail_msg("%s with %s:\n  got  %s\n  want %s", item, inputs, out,
			 want);
}

static void test_plan_options(void **state)
{
	(void)state;
	/* the attack: tar -xf {{ archive }} */
	arg_refused("{{ archive }}",
		    "{'archive': '--checkpoint-action=exec=id'}", NULL,
		    "--checkpoint-action=exec=id", "{{ archive }}");
	/* a whole argument: an option, "-", a number */
	arg_refused("{{ x }}", "{'x': '-rf'}", NULL, "-rf", "{{ x }}");
	arg_refused("{{ x }}", "{'x': '-'}", NULL, "-", "{{ x }}");
	arg_refused("{{ x }}", "{'x': '--'}", NULL, "--", "{{ x }}");
	arg_stands("{{ x }}", "{'x': '-5'}", NULL, "-5");
	arg_stands("{{ x }}", "{'x': '-0.25e-3'}", NULL, "-0.25e-3");
	arg_stands("{{ x }}", "{'x': -3}", NULL, "-3");
	arg_stands("{{ x }}", "{'x': -1.5}", NULL, "-1.5");
	arg_stands("{{ x }}", "{'x': ['-rf']}", NULL, "['-rf']");
	arg_stands("{{ x }}", "{'x': 'a-b'}", NULL, "a-b");
	arg_stands("{{ x }}", "{'x': ' -rf'}", NULL, " -rf");
	/* a value that begins an argument */
	arg_refused("{{ x }}.txt", "{'x': '-rf'}", NULL, "-rf.txt",
		    "{{ x }}");
	arg_refused("{{ a }}{{ x }}", "{'a': '', 'x': '-rf'}", NULL, "-rf",
		    "{{ x }}");
	arg_stands("{{ a }}{{ x }}", "{'a': 'ok', 'x': '-rf'}", NULL,
		   "ok-rf");
	arg_refused("{{ x|upper }}", "{'x': '-rf'}", NULL, "-RF",
		    "{{ x|upper }}");
	arg_refused("{{ x|join(',') }}", "{'x': ['-a', 'b']}", NULL,
		    "-a,b", "{{ x|join(',') }}");
	/* whitespace control strips the map's blanks before it */
	arg_refused("  {{- x }}", "{'x': '-rf'}", NULL, "-rf", "{{ x }}");
	arg_refused("{{ x -}}  ", "{'x': '-rf'}", NULL, "-rf", "{{ x }}");
	arg_refused("{# c #}{{ x }}", "{'x': '-rf'}", NULL, "-rf", "{{ x }}");
	arg_refused("{{ x }}\n", "{'x': '-rf'}", NULL, "-rf", "{{ x }}");
	arg_stands(" {{ x }}", "{'x': '-rf'}", NULL, " -rf");
	/* the map's text begins it: its own */
	arg_stands("--in={{ x }}", "{'x': '-rf'}", NULL, "--in=-rf");
	arg_stands("-{{ x }}", "{'x': '-checkpoint-action=exec=id'}", NULL,
		   "--checkpoint-action=exec=id");
	arg_stands("{% if v %}-v{% endif %}{{ x }}", "{'v': true, 'x': 'q'}",
		   NULL, "-vq");
	arg_refused("{% if v %}-v{% endif %}{{ x }}",
		    "{'v': false, 'x': '-q'}", NULL, "-q", "{{ x }}");
	arg_stands("{{ '-v' }}", "{}", NULL, "-v");
	arg_stands("{{- '-v' }}{{ x }}", "{'x': 'q'}", NULL, "-vq");
	/* names a {{ }} reads that are no value of the node's own */
	arg_refused("{{ x|default('-q') }}", "{}", NULL, "-q",
		    "{{ x|default('-q') }}");
	arg_stands("{{ x|default('-q') }}", "{}", "['x']", "-q");
	/* options: the parameters the map lists */
	arg_stands("{{ flags }}", "{'flags': '-v'}", "['flags']", "-v");
	arg_stands("{{flags}}", "{'flags': '--x=1'}", "['other', 'flags']",
		   "--x=1");
	arg_refused("{{ flags }}{{ x }}", "{'flags': '', 'x': '-x'}",
		    "['flags']", "-x", "{{ x }}");
	arg_stands("{{ flags }}{{ x }}", "{'flags': '-v', 'x': '-x'}",
		   "['flags']", "-v-x");
	arg_refused("{{ flags or x }}", "{'flags': '', 'x': '-x'}",
		    "['flags']", "-x", "{{ flags or x }}");
	arg_refused("{{ flags|default(x) }}", "{'x': '-x'}", "['flags']",
		    "-x", "{{ flags|default(x) }}");
	arg_refused("{{ inputs.flags }}", "{'flags': '-v'}", "['flags']",
		    "-v", "{{ inputs.flags }}");
	arg_refused("{{ x[flags] }}", "{'flags': 'k', 'x': {'k': '-v'}}",
		    "['flags']", "-v", "{{ x[flags] }}");
	arg_stands("{{ flags['k'] }}", "{'flags': {'k': '-v'}}",
		   "['flags']", "-v");
	arg_stands("{{ flags is defined and flags }}", "{'flags': '-v'}",
		   "['flags']", "-v");
	arg_stands("{{ flags is not undefined and flags }}", "{'flags': '-v'}",
		   "['flags']", "-v");
	arg_refused("{{ flags is defined and x }}", "{'flags': 1, 'x': '-v'}",
		    "['flags']", "-v", "{{ flags is defined and x }}");
	/* a loop's name stands for what it iterates, and for itself */
	arg_refused("{% for f in flags %}{{ f }}{% endfor %}",
		    "{'flags': ['-v']}", "['flags']", "-v", "{{ f }}");
	arg_stands("{% for f in flags %}{{ f }}{% endfor %}",
		   "{'flags': ['-v']}", "['flags', 'f']", "-v");
	arg_refused("{% for flags in x %}{{ flags }}{% endfor %}",
		    "{'flags': 'a', 'x': ['-v']}", "['flags']", "-v",
		    "{{ flags }}");
	arg_refused("{% for k, v in flags.items() %}{{ v }}{% endfor %}",
		    "{'flags': {'a': '-v'}}", "['flags', 'k']", "-v",
		    "{{ v }}");
	arg_stands("{% for k, v in flags.items() %}{{ v }}{% endfor %}",
		   "{'flags': {'a': '-v'}}", "['flags', 'v']", "-v");
	arg_stands("{{ loop }}{% for f in flags %}{{ loop.index }}"
		   "{% endfor %}", "{'flags': ['a', 'b']}", NULL, "12");
	/* a value holding the marks: told apart while one is free */
	arg_refused("{{ x }}", "{'x': '-a\\u0001\\u0002\\u0003'}", NULL,
		    "-a\x01\x02\x03", "{{ x }}");
	arg_stands("{{ x }}", "{'x': '-a\\u0001\\u0002\\u0003'}", "['x']",
		   "-a\x01\x02\x03");
	arg_refused("{{ x }}", "{'x': '-\\u0001\\u0002\\u0003\\u0004\\u0005"
		    "\\u0006\\u0007\\b\\u000e\\u000f\\u0010\\u0011\\u0012\\u0013"
		    "\\u0014\\u0015\\u0016\\u0017\\u0018\\u0019\\u001a\\u001b"
		    "\\u007f'}", "['x']", "-\x01\x02\x03\x04\x05\x06\x07\b\x0e"
		    "\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x7f",
		    "");
	/* the argument shown is cut to 92 bytes and "..." */
	{
		char inputs[1100], arg[1100];	/* room for rep()'s 1023 */

		snprintf(inputs, sizeof(inputs), "{'x': '%s'}",
			 rep("-", 'a', 200, ""));
		snprintf(arg, sizeof(arg), "%s", rep("-", 'a', 91, "..."));
		arg_refused("{{ x }}", inputs, NULL, arg, "{{ x }}");
	}
}

/* node.id, session: values of the node's too; an edge's path is not. */
static void test_plan_options_names(void **state)
{
	const struct jobspec_options dash = {
		.session = "-s", .run_dir = RUN, .tools_path = TOOLS_PATH,
	};
	struct jobspec_plan p;
	struct ferr err = FERR_INIT;
	json_t *g, *t;

	(void)state;
	plan_refused("{'nodes': [{'id': '--x', 'label': 't'}]}",
		     "{'t': {'command': ['prog', '{{ node.id }}']}}", -EINVAL,
		     "node \"--x\": command[1] \"--x\" begins with \"-\" from "
		     "the node's value {{ node.id }}: a program would read it "
		     "as an option; only input parameters the tool map lists "
		     "in \"options\" for \"t\" may do that");
	g = unit_json("{'nodes': [{'id': 'n1', 'label': 't'}]}");
	t = unit_json("{'t': {'command': ['prog', '{{ session }}']}}");
	assert_int_equal(jobspec_plan(g, t, &dash, &p, &err), -EINVAL);
	assert_string_equal(err.message, "node \"n1\": command[1] \"-s\" "
			    "begins with \"-\" from the node's value "
			    "{{ session }}: a program would read it as an "
			    "option; only input parameters the tool map lists "
			    "in \"options\" for \"t\" may do that");
	json_decref(g);
	json_decref(t);
	/* an edge hands on an absolute path */
	plan_ok("{'nodes': [{'id': '-a', 'label': 't'}, {'id': 'b', 'label':"
		" 'u', 'input_parameters': [{'name': 'src', 'value': '-x'}]}],"
		" 'edges': [{'id': 'e', 'source_node_id': '-a',"
		" 'target_node_id': 'b', 'target_parameter_name': 'src'}]}",
		"{'t': {'command': ['t']}, 'u': {'command': ['u', '{{ src }}']}}",
		&opt_plain, &p);
	argv_is(job(&p, "b"), "u", RUN "/-a", NULL);
	jobspec_plan_release(&p);
	/* the runner's words are not checked: the image cannot be one */
	{
		static const char *const runner[] = { "run", "-{{ image }}",
						      NULL };
		const struct jobspec_options o = {
			.session = "s", .run_dir = RUN, .container = runner,
		};

		plan_ok("{'nodes': [{'id': 'n1', 'label': 't'}]}",
			"{'t': {'image': 'i', 'command': ['t']}}", &o, &p);
		argv_is(&p.jobs[0], "run", "-i", "t", NULL);
		jobspec_plan_release(&p);
	}
}

/* ---- the container runner's words --------------------------------------- */

static void words_are(const char *text, ...)
{
	struct ferr err = FERR_INIT;
	char **w = NULL;
	const char *want;
	size_t n = 0;
	va_list ap;

	if (jobspec_runner_words(text, &w, &err) != 0)
		fail_msg("%s: refused: %s", text, err.message);
	va_start(ap, text);
	while ((want = va_arg(ap, const char *))) {
		if (!w[n] || strcmp(w[n], want))
			fail_msg("%s: word %zu is \"%s\", not \"%s\"", text, n,
				 w[n] ? w[n] : "(none)", want);
		n++;
	}
	va_end(ap);
	if (w[n])
		fail_msg("%s: a word more: %s", text, w[n]);
	jobspec_runner_free(w);
}

static void words_refused(const char *text, const char *want)
{
	struct ferr err = FERR_INIT;
	char **w = (char **)1;

	assert_int_equal(jobspec_runner_words(text, &w, &err), -EINVAL);
	assert_null(w);
	if (strcmp(err.message, want))
		fail_msg("%s:\n  got  %s\n  want %s", text, err.message, want);
}

static void test_runner_words(void **state)
{
	char big[4 * 300];
	size_t at = 0;

	(void)state;
	/* the README's examples, and --help's */
	words_are("apptainer exec docker://{{ image }}", "apptainer", "exec",
		  "docker://{{ image }}", NULL);
	words_are("podman run --rm -v {{ job_dir }}:{{ job_dir }} -w "
		  "{{ job_dir }} {{ image }}", "podman", "run", "--rm", "-v",
		  "{{ job_dir }}:{{ job_dir }}", "-w", "{{ job_dir }}",
		  "{{ image }}", NULL);
	/* blanks: several, tabs, newlines, at the ends */
	words_are("  a\t\tb \n c  ", "a", "b", "c", NULL);
	/* every tag holds its blanks; strings in it hold "}}" */
	words_are("x{{ image|default( 'a }} b' ) }}y {%- if image %}i{% endif"
		  " %} {# a comment #}", "x{{ image|default( 'a }} b' ) }}y",
		  "{%- if image %}i{% endif %}", "{# a comment #}", NULL);
	words_are("{% for c in image %}{{ c }}{{ loop.index }}{% endfor %}",
		  "{% for c in image %}{{ c }}{{ loop.index }}{% endfor %}",
		  NULL);
	/* a blank between tags is between words */
	words_refused("{% for c in image %}{{ c }} {% endfor %}", "word 1 "
		      "\"{% for c in image %}{{ c }}\": line 1, column 28: "
		      "'else' or 'endfor' expected, found end of template");
	words_refused("", "it has no words");
	words_refused(" \t ", "it has no words");
	words_refused("podman run {{ img }}", "word 3 \"{{ img }}\" reads "
		      "\"img\": the runner sees only image and job_dir");
	words_refused("run {{ node.id }}", "word 2 \"{{ node.id }}\" reads "
		      "\"node\": the runner sees only image and job_dir");
	words_refused("run {% if x %}{% endif %}", "word 2 \"{% if x %}"
		      "{% endif %}\" reads \"x\": the runner sees only image "
		      "and job_dir");
	words_refused("run {{ image", "word 2 \"{{ image\": line 1, column "
		      "9: unexpected end of template inside '{{ }}'");
	words_refused("run {{", "word 2 \"{{\": line 1, column 3: unexpected "
		      "end of template inside '{{ }}'");
	words_refused("sh -c 'a b'", "word 3 holds a quote or a backslash: "
		      "no shell reads the runner, its words are split at "
		      "blanks");
	words_refused("a\\ b", "word 1 holds a quote or a backslash: no shell "
		      "reads the runner, its words are split at blanks");
	/* 256 words, and one more */
	for (int i = 0; i < 256; i++)
		at += (size_t)snprintf(big + at, sizeof(big) - at, "w ");
	{
		struct ferr err = FERR_INIT;
		char **w = NULL;

		assert_int_equal(jobspec_runner_words(big, &w, &err), 0);
		assert_non_null(w[255]);
		assert_null(w[256]);
		jobspec_runner_free(w);
	}
	snprintf(big + at, sizeof(big) - at, "w");
	words_refused(big, "more than 256 words");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_good),
		cmocka_unit_test(test_check_fields),
		cmocka_unit_test(test_check_command),
		cmocka_unit_test(test_check_outputs),
		cmocka_unit_test(test_check_resources),
		cmocka_unit_test(test_plan_diamond),
		cmocka_unit_test(test_plan_order),
		cmocka_unit_test(test_plan_outputs),
		cmocka_unit_test(test_plan_fan_in),
		cmocka_unit_test(test_plan_context),
		cmocka_unit_test(test_plan_container),
		cmocka_unit_test(test_plan_resources),
		cmocka_unit_test(test_plan_refusals),
		cmocka_unit_test(test_plan_render_refusals),
		cmocka_unit_test(test_plan_cycles),
		cmocka_unit_test(test_plan_long_cycle),
		cmocka_unit_test(test_plan_order_of_refusals),
		cmocka_unit_test(test_plan_no_nodes),
		cmocka_unit_test(test_plan_many),
		cmocka_unit_test(test_plan_cost),
		cmocka_unit_test(test_plan_folders),
		cmocka_unit_test(test_plan_long_label),
		cmocka_unit_test(test_image_grammar),
		cmocka_unit_test(test_check_images_options),
		cmocka_unit_test(test_plan_images),
		cmocka_unit_test(test_is_option),
		cmocka_unit_test(test_plan_options),
		cmocka_unit_test(test_plan_options_names),
		cmocka_unit_test(test_runner_words),
		cmocka_unit_test_setup_teardown(test_script_hostile_argument,
						run_setup, run_teardown),
		cmocka_unit_test_setup_teardown(test_script_first_word,
						run_setup, run_teardown),
		cmocka_unit_test_setup_teardown(test_script_exit_codes,
						run_setup, run_teardown),
		cmocka_unit_test_setup_teardown(test_script_sbatch, run_setup,
						run_teardown),
		cmocka_unit_test(test_sbatch_flags),
		cmocka_unit_test(test_shell_quote),
		cmocka_unit_test(test_shell_quote_bash),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
