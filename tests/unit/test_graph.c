/*
 * Unit tests for graph: node and edge documents (defaults, refusals,
 * node_uuid stability), drafts, delete, rename, infer-edges,
 * parameters.json (round trip of seed 000's examples, refusals,
 * all-or-nothing replace), the output file name, and a 2,000-node chain.
 *
 * Expected documents are written out by hand in the layout of Python's
 * json.dumps(obj, indent=2, ensure_ascii=False); the seed examples are
 * read from ../shared/fixtures (skipped when absent).  The output-name
 * times: 1795250759 s is 2026-11-21T08:45:59Z (Python:
 * datetime.fromtimestamp(1795250759, timezone.utc)).
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

#include "flowfs-config.h"
#include "lib/fjson.h"
#include "graph/graph.h"
#include "graph/tools.h"
#include "session/session.h"
#include "unit.h"

/* A file of ../shared/fixtures/ (NULL when absent). */
static char *read_fixture(const char *name, size_t *len)
{
	char path[512];

	snprintf(path, sizeof(path), "fixtures/%s", name);
	return unit_read_shared(path, len);
}


#define N GRAPH_NODE
#define E GRAPH_EDGE

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
	struct tree *t;
	struct session_info s;
	struct graph_tools *tools;
	struct ferr err;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || unit_db_open("graph", fx->dir, fx->path, &fx->st,
				&fx->t) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	if (session_create(fx->st, fx->t, "sess-1", 0755, 0, 0, &fx->s,
			   NULL) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	graph_tools_free(fx->tools);
	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

/* the database's rows, counted */
#define sql_int(fx, ...) unit_sql_int(store_db((fx)->st), __VA_ARGS__)

static int commit(struct fixture *fx, enum graph_kind kind, const char *id,
		  const char *text)
{
	ferr_clear(&fx->err);
	return graph_commit(fx->st, fx->tools, fx->s.id, kind, id, text,
			    strlen(text), &fx->err);
}

static void ok(struct fixture *fx, enum graph_kind kind, const char *id,
	       const char *text)
{
	if (commit(fx, kind, id, text) < 0)
		fail_msg("%s %s: %s", kind == N ? "node" : "edge", id,
			 fx->err.message);
}

/* A node `id` with label `label` and the given input names ("" none). */
static void node(struct fixture *fx, const char *id, const char *label,
		 const char *inputs)
{
	char doc[1024];
	size_t n;

	n = (size_t)snprintf(doc, sizeof(doc),
			     "{\"label\": \"%s\", \"input_parameters\": [",
			     label);
	for (const char *p = inputs; *p;) {
		const char *c = strchr(p, ',');
		size_t len = c ? (size_t)(c - p) : strlen(p);

		n += (size_t)snprintf(doc + n, sizeof(doc) - n,
				      "%s{\"name\": \"%.*s\", \"value\": \"v\"}",
				      p == inputs ? "" : ", ", (int)len, p);
		p += len + (c ? 1 : 0);
	}
	snprintf(doc + n, sizeof(doc) - n, "]}");
	ok(fx, N, id, doc);
}

static void edge(struct fixture *fx, const char *id, const char *src,
		 const char *tgt, const char *param)
{
	char doc[1024];

	snprintf(doc, sizeof(doc),
		 "{\"source_node_id\": \"%s\", \"target_node_id\": \"%s\","
		 " \"target_parameter_name\": \"%s\"}", src, tgt, param);
	ok(fx, E, id, doc);
}

static int edge_ret(struct fixture *fx, const char *id, const char *src,
		    const char *tgt, const char *param)
{
	char doc[1024];

	snprintf(doc, sizeof(doc),
		 "{\"source_node_id\": \"%s\", \"target_node_id\": \"%s\","
		 " \"target_parameter_name\": \"%s\"}", src, tgt, param);
	return commit(fx, E, id, doc);
}

static char *render(struct fixture *fx, enum graph_kind kind, const char *id)
{
	struct graph_item it;
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(graph_find(fx->st, fx->s.id, kind, id, &it), 0);
	assert_int_equal(graph_render(fx->st, kind, it.seq, &sb), 0);
	assert_int_equal(sb.len, it.size);
	free(it.id);
	return sbuf_detach(&sb, NULL);
}

/* The document of `id` holds `needle`. */
static void expect_in_doc(struct fixture *fx, enum graph_kind kind,
			  const char *id, const char *needle)
{
	char *doc = render(fx, kind, id);

	if (!strstr(doc, needle))
		fail_msg("%s has no %s:\n%s", id, needle, doc);
	free(doc);
}

static char *params(struct fixture *fx)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(graph_render_parameters(fx->st, fx->s.id, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static int commit_params(struct fixture *fx, const char *text)
{
	ferr_clear(&fx->err);
	return graph_commit_parameters(fx->st, fx->tools, fx->s.id, text,
				       strlen(text), &fx->err);
}

static int64_t gmtime_of(struct fixture *fx)
{
	int64_t m = -1;

	assert_int_equal(graph_mtime(fx->st, fx->s.id, &m), 0);
	return m;
}

static bool exists(struct fixture *fx, enum graph_kind kind, const char *id)
{
	struct graph_item it;
	int ret = graph_find(fx->st, fx->s.id, kind, id, &it);

	if (ret == 0)
		free(it.id);
	else
		assert_int_equal(ret, -ENOENT);
	return ret == 0;
}

/* The node_uuid of a node's document (checked to be a v4 UUID). */
static void uuid_of(struct fixture *fx, const char *id, char out[37])
{
	char *doc = render(fx, N, id);
	const char *p = strstr(doc, "\"node_uuid\": \"");

	assert_non_null(p);
	p += strlen("\"node_uuid\": \"");
	memcpy(out, p, 36);
	out[36] = '\0';
	free(doc);
}

static bool starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

static void assert_v4(const char *u)
{
	assert_int_equal(strlen(u), 36);
	for (int i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			assert_int_equal(u[i], '-');
			continue;
		}
		assert_true((u[i] >= '0' && u[i] <= '9') ||
			    (u[i] >= 'a' && u[i] <= 'f'));
	}
	assert_int_equal(u[14], '4');
	assert_non_null(strchr("89ab", u[19]));
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* ---- nodes ---------------------------------------------------------------- */

static void test_node_defaults(void **state)
{
	struct fixture *fx = *state;
	char tools[200], uuid[37], want[2048], *doc;
	struct graph_item it;

	snprintf(tools, sizeof(tools), "%s/tools.json", fx->dir);
	write_file(tools, "{\"apex_calculation\": {\"image\": \"registry/apex:1\","
		   " \"machine_type\": \"c2_m8_cpu\"}, \"only_image\":"
		   " {\"image\": \"img\"}}");
	assert_int_equal(graph_tools_load(tools, &fx->tools, &fx->err), 0);

	assert_int_equal(gmtime_of(fx), 0);
	ok(fx, N, "node-$id1", "{\"label\": \"apex_calculation\"}");
	assert_true(gmtime_of(fx) > 0);
	uuid_of(fx, "node-$id1", uuid);
	assert_v4(uuid);
	snprintf(want, sizeof(want),
		 "{\n"
		 "  \"id\": \"node-$id1\",\n"
		 "  \"node_uuid\": \"%s\",\n"
		 "  \"node_version\": \"1.2\",\n"
		 "  \"label\": \"apex_calculation\",\n"
		 "  \"position_x\": 0.0,\n"
		 "  \"position_y\": 0.0,\n"
		 "  \"system_values\": {\n"
		 "    \"machine_type\": \"c2_m8_cpu\",\n"
		 "    \"image\": \"registry/apex:1\",\n"
		 "    \"docker_image\": \"\"\n"
		 "  },\n"
		 "  \"input_parameters\": [],\n"
		 "  \"output_parameters\": []\n"
		 "}", uuid);
	doc = render(fx, N, "node-$id1");
	assert_string_equal(doc, want);
	free(doc);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "node-$id1", &it), 0);
	assert_false(it.draft);
	assert_int_equal(it.size, strlen(want));
	assert_int_equal(it.session, fx->s.id);
	assert_true(it.mtime_ns > 0);
	free(it.id);

	/* only the image mapped; not mapped at all; given values win; the
	 * key order is the documented one whatever the writer's; an integer
	 * position stays an integer; parameter types default to Python's
	 * type names */
	ok(fx, N, "b", "{\"label\": \"only_image\", \"position_y\": 2.5}");
	doc = render(fx, N, "b");
	assert_non_null(strstr(doc, "\"machine_type\": \"c2_m4_cpu\",\n"
				    "    \"image\": \"img\",\n"));
	assert_non_null(strstr(doc, "\"position_y\": 2.5,\n"));
	free(doc);
	ok(fx, N, "c", "{\"output_parameters\": [{\"k\": 1}],"
		       " \"input_parameters\": [{\"value\": 3, \"name\": \"n\"},"
		       " {\"name\": \"f\", \"value\": 0.5}, {\"name\": \"s\"},"
		       " {\"name\": \"t\", \"value\": true},"
		       " {\"name\": \"l\", \"value\": [1]},"
		       " {\"name\": \"d\", \"value\": {}},"
		       " {\"name\": \"x\", \"type\": \"custom\", \"value\": \"\"}],"
		       " \"system_values\": {\"image\": \"mine\"},"
		       " \"position_x\": 7, \"node_version\": \"2.0\","
		       " \"label\": \"apex_calculation\", \"id\": \"c\","
		       " \"node_uuid\": \"fixed-uuid\"}");
	doc = render(fx, N, "c");
	assert_string_equal(doc,
		"{\n"
		"  \"id\": \"c\",\n"
		"  \"node_uuid\": \"fixed-uuid\",\n"
		"  \"node_version\": \"2.0\",\n"
		"  \"label\": \"apex_calculation\",\n"
		"  \"position_x\": 7,\n"
		"  \"position_y\": 0.0,\n"
		"  \"system_values\": {\n"
		"    \"machine_type\": \"c2_m8_cpu\",\n"
		"    \"image\": \"mine\",\n"
		"    \"docker_image\": \"\"\n"
		"  },\n"
		"  \"input_parameters\": [\n"
		"    {\n"
		"      \"name\": \"n\",\n"
		"      \"type\": \"int\",\n"
		"      \"value\": 3\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"f\",\n"
		"      \"type\": \"float\",\n"
		"      \"value\": 0.5\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"s\",\n"
		"      \"type\": \"NoneType\",\n"
		"      \"value\": null\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"t\",\n"
		"      \"type\": \"bool\",\n"
		"      \"value\": true\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"l\",\n"
		"      \"type\": \"list\",\n"
		"      \"value\": [\n"
		"        1\n"
		"      ]\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"d\",\n"
		"      \"type\": \"dict\",\n"
		"      \"value\": {}\n"
		"    },\n"
		"    {\n"
		"      \"name\": \"x\",\n"
		"      \"type\": \"custom\",\n"
		"      \"value\": \"\"\n"
		"    }\n"
		"  ],\n"
		"  \"output_parameters\": [\n"
		"    {\n"
		"      \"k\": 1\n"
		"    }\n"
		"  ]\n"
		"}");
	free(doc);

	/* without a tool map */
	graph_tools_free(fx->tools);
	fx->tools = NULL;
	ok(fx, N, "d", "{\"label\": \"apex_calculation\"}");
	expect_in_doc(fx, N, "d", "\"machine_type\": \"c2_m4_cpu\",\n"
				    "    \"image\": \"\",\n");
}

static void test_node_refusals(void **state)
{
	struct fixture *fx = *state;
	static const struct { const char *id, *text, *msg; } bad[] = {
		{ "n", "[]", "a node must be a JSON object" },
		{ "n", "{\"lable\": \"x\"}",
		  "unknown field \"lable\" (a node has id, node_uuid,"
		  " node_version, label, position_x, position_y,"
		  " system_values, input_parameters, output_parameters)" },
		{ "n", "{}", "a node needs a \"label\"" },
		{ "n", "{\"label\": \"\"}", "\"label\" must be a non-empty string" },
		{ "n", "{\"label\": 5}", "\"label\" must be a non-empty string" },
		{ "n", "{\"label\": \"a\\u0000b\"}",
		  "\"label\" contains a NUL character" },
		{ "node-$id2", "{\"id\": \"node-$id3\", \"label\": \"x\"}",
		  "id \"node-$id3\" disagrees with the file name (node-$id2.json)" },
		{ "n", "{\"id\": 3, \"label\": \"x\"}", "\"id\" must be a string" },
		{ "n", "{\"label\": \"x\", \"position_x\": \"0\"}",
		  "\"position_x\" must be a number" },
		{ "n", "{\"label\": \"x\", \"position_y\": true}",
		  "\"position_y\" must be a number" },
		{ "n", "{\"label\": \"x\", \"node_uuid\": 1}",
		  "\"node_uuid\" must be a non-empty string" },
		{ "n", "{\"label\": \"x\", \"node_version\": 1.2}",
		  "\"node_version\" must be a string" },
		{ "n", "{\"label\": \"x\", \"system_values\": []}",
		  "\"system_values\" must be an object" },
		{ "n", "{\"label\": \"x\", \"system_values\": {\"gpu\": \"\"}}",
		  "unknown field \"system_values.gpu\" (system_values has"
		  " machine_type, image, docker_image)" },
		{ "n", "{\"label\": \"x\", \"system_values\": {\"image\": null}}",
		  "\"system_values.image\" must be a string" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": {}}",
		  "\"input_parameters\" must be an array" },
		{ "n", "{\"label\": \"x\", \"output_parameters\": null}",
		  "\"output_parameters\" must be an array" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [1]}",
		  "\"input_parameters[0]\" must be an object" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [{\"type\": \"str\"}]}",
		  "input_parameters[0] has no \"name\"" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [{\"name\": \"\"}]}",
		  "\"input_parameters[0].name\" must be a non-empty string" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [{\"name\": \"a\","
		       " \"type\": 1}]}",
		  "\"input_parameters[0].type\" must be a string" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [{\"name\": \"a\","
		       " \"default\": 1}]}",
		  "unknown field \"input_parameters[0].default\" (a parameter"
		  " has name, type, value)" },
		{ "n", "{\"label\": \"x\", \"input_parameters\": [{\"name\": \"a\"},"
		       " {\"name\": \"b\"}, {\"name\": \"a\"}]}",
		  "input_parameters[2]: name \"a\" repeats input_parameters[0]" },
		{ "n", "{\"label\": \"x\",\n  \"position_x\" 1}",
		  "expected ':'" },
		{ "n", "", "the document is empty" },
	};
	char longid[300];

	node(fx, "keep", "k", "");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t before = gmtime_of(fx);
		char *p = params(fx);
		char *after;

		if (commit(fx, N, bad[i].id, bad[i].text) != -EINVAL)
			fail_msg("accepted %s", bad[i].text);
		if (!strstr(fx->err.message, bad[i].msg))
			fail_msg("%s: got '%s', want '%s'", bad[i].text,
				 fx->err.message, bad[i].msg);
		assert_false(exists(fx, N, bad[i].id));
		assert_int_equal(gmtime_of(fx), before);
		after = params(fx);
		assert_string_equal(p, after);
		free(p);
		free(after);
	}
	/* a syntax error has its position */
	assert_int_equal(commit(fx, N, "n", "{\"label\": \"x\",\n  \"position_x\" 1}"),
			 -EINVAL);
	assert_int_equal(fx->err.line, 2);
	assert_int_equal(fx->err.column, 16);

	/* ids: the file name stem */
	assert_int_equal(commit(fx, N, "", "{\"label\": \"x\"}"), -EINVAL);
	assert_int_equal(commit(fx, N, ".", "{\"label\": \"x\"}"), -EINVAL);
	assert_int_equal(commit(fx, N, "..", "{\"label\": \"x\"}"), -EINVAL);
	assert_int_equal(commit(fx, N, "a/b", "{\"label\": \"x\"}"), -EINVAL);
	assert_string_equal(fx->err.message, "node id \"a/b\" contains '/'");
	assert_int_equal(commit(fx, N, "bad\xff", "{\"label\": \"x\"}"), -EINVAL);
	memset(longid, 'x', 251);
	longid[251] = '\0';
	assert_int_equal(commit(fx, N, longid, "{\"label\": \"x\"}"),
			 -ENAMETOOLONG);
	longid[250] = '\0';
	ok(fx, N, longid, "{\"label\": \"x\"}");
	ok(fx, N, "..x", "{\"label\": \"x\"}");
	ok(fx, N, "\xe8\x8a\x82\xe7\x82\xb9 \"q\"", "{\"label\": \"x\"}");
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_nodes"), 4);

	/* no such session */
	assert_int_equal(graph_commit(fx->st, NULL, fx->s.id + 9, N, "n",
				      "{\"label\": \"x\"}", 14, &fx->err), -ENOENT);
	assert_int_equal(graph_commit(fx->st, NULL, fx->s.id + 9, E, "e",
				      "{\"source_node_id\": \"keep\", \"target_node_id\":"
				      " \"keep\", \"target_parameter_name\": \"input\"}",
				      86, &fx->err), -ENOENT);
	assert_int_equal(graph_commit_parameters(fx->st, NULL, fx->s.id + 9,
				"{\"nodes\": [], \"edges\": [], \"meta\": {}}", 38,
				&fx->err), -ENOENT);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
}

static void test_node_uuid(void **state)
{
	struct fixture *fx = *state;
	char a[37], a2[37], b[37], c[37];

	node(fx, "a", "tool", "");
	node(fx, "b", "tool", "");
	uuid_of(fx, "a", a);
	uuid_of(fx, "b", b);
	assert_v4(a);
	assert_v4(b);
	assert_string_not_equal(a, b);
	/* replaced without a uuid: the stored one stays */
	node(fx, "a", "other_tool", "x");
	uuid_of(fx, "a", a2);
	assert_string_equal(a, a2);
	/* given: kept as given, and stays when later omitted */
	ok(fx, N, "a", "{\"label\": \"t\", \"node_uuid\": \"mine\"}");
	ok(fx, N, "a", "{\"label\": \"t\"}");
	{
		char *doc = render(fx, N, "a");

		assert_non_null(strstr(doc, "\"node_uuid\": \"mine\","));
		free(doc);
	}
	/* deleted and made again: a new node, a new uuid */
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "b"), 0);
	node(fx, "b", "tool", "");
	uuid_of(fx, "b", c);
	assert_v4(c);
	assert_string_not_equal(b, c);
}

static void test_node_unchanged(void **state)
{
	struct fixture *fx = *state;
	int64_t m1, m2;
	struct graph_item it;

	node(fx, "a", "tool", "x");
	m1 = gmtime_of(fx);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &it), 0);
	free(it.id);
	/* the same document again, here with its own uuid spelled out */
	{
		char *doc = render(fx, N, "a");

		ok(fx, N, "a", doc);
		free(doc);
	}
	node(fx, "a", "tool", "x");
	m2 = gmtime_of(fx);
	assert_int_equal(m1, m2);
	{
		struct graph_item it2;

		assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &it2), 0);
		assert_int_equal(it2.mtime_ns, it.mtime_ns);
		assert_int_equal(it2.seq, it.seq);
		free(it2.id);
	}
	/* a change moves both, and keeps the seq */
	node(fx, "a", "tool", "y");
	assert_true(gmtime_of(fx) > m2);
	{
		struct graph_item it3;

		assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &it3), 0);
		assert_true(it3.mtime_ns > it.mtime_ns);
		assert_int_equal(it3.seq, it.seq);
		free(it3.id);
	}
}

/* A node's new version must keep the inputs edges feed. */
static void test_node_keeps_fed_inputs(void **state)
{
	struct fixture *fx = *state;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "structure_file,x");
	node(fx, "c", "tc", "");
	edge(fx, "e1", "a", "b", "structure_file");
	edge(fx, "e2", "a", "c", "input");
	assert_int_equal(commit(fx, N, "b", "{\"label\": \"tb\", \"input_parameters\":"
				" [{\"name\": \"x\"}]}"), -EINVAL);
	assert_string_equal(fx->err.message,
			    "edge \"e1\" feeds input parameter \"structure_file\""
			    " of this node, which it would no longer have"
			    " (change or delete the edge first)");
	/* "input" is fine while c has no inputs, not once it has others */
	node(fx, "c", "tc2", "");
	assert_int_equal(commit(fx, N, "c", "{\"label\": \"tc\", \"input_parameters\":"
				" [{\"name\": \"data\"}]}"), -EINVAL);
	node(fx, "c", "tc", "data,input");
	/* other changes are fine */
	node(fx, "b", "tb", "x,structure_file,z");
}

/* ---- edges ---------------------------------------------------------------- */

static void test_edge_document(void **state)
{
	struct fixture *fx = *state;
	char *doc;

	node(fx, "node-$id1", "apex_calculation", "");
	node(fx, "node-$id2", "abacus_calculation", "input_file");
	edge(fx, "edge-$id1", "node-$id1", "node-$id2", "input_file");
	doc = render(fx, E, "edge-$id1");
	assert_string_equal(doc,
		"{\n"
		"  \"id\": \"edge-$id1\",\n"
		"  \"source_node_id\": \"node-$id1\",\n"
		"  \"source_parameter_name\": \"out_apex_calculation\",\n"
		"  \"target_node_id\": \"node-$id2\",\n"
		"  \"target_parameter_name\": \"input_file\"\n"
		"}");
	free(doc);
	/* given source parameter and id; names that need escaping */
	node(fx, "q\"\\\t", "t", "");
	ok(fx, E, "e\"2", "{\"id\": \"e\\\"2\", \"source_node_id\": \"node-$id2\","
			   " \"source_parameter_name\": \"out\\u0001\","
			   " \"target_node_id\": \"q\\\"\\\\\\t\","
			   " \"target_parameter_name\": \"input\"}");
	doc = render(fx, E, "e\"2");
	assert_string_equal(doc,
		"{\n"
		"  \"id\": \"e\\\"2\",\n"
		"  \"source_node_id\": \"node-$id2\",\n"
		"  \"source_parameter_name\": \"out\\u0001\",\n"
		"  \"target_node_id\": \"q\\\"\\\\\\t\",\n"
		"  \"target_parameter_name\": \"input\"\n"
		"}");
	free(doc);
}

static void test_edge_refusals(void **state)
{
	struct fixture *fx = *state;
	static const struct { const char *id, *text, *msg; } bad[] = {
		{ "e", "7", "an edge must be a JSON object" },
		{ "e", "{\"source\": \"node-$id1\"}",
		  "unknown field \"source\" (an edge has id, source_node_id,"
		  " source_parameter_name, target_node_id,"
		  " target_parameter_name)" },
		{ "e", "{\"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "an edge needs \"source_node_id\"" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "an edge needs \"target_node_id\"" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"node-$id2\"}",
		  "an edge needs \"target_parameter_name\"" },
		{ "e", "{\"source_node_id\": \"node-$id1\", \"target_node_id\": 2,"
		       " \"target_parameter_name\": \"input_file\"}",
		  "\"target_node_id\" must be a non-empty string" },
		{ "edge-$id5", "{\"id\": \"edge-$id1\", \"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "id \"edge-$id1\" disagrees with the file name (edge-$id5.json)" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"structure\"}",
		  "node \"node-$id2\" has no input parameter \"structure\""
		  " (it has: input_file, extra)" },
		{ "e", "{\"source_node_id\": \"node-$id2\","
		       " \"target_node_id\": \"node-$id1\","
		       " \"target_parameter_name\": \"x\"}",
		  "node \"node-$id1\" has no input parameter \"x\" (it has none,"
		  " so an edge into it uses \"input\")" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"source_parameter_name\": \"out_apex_calculation\","
		       " \"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "duplicates edge-$id1" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "duplicates edge-$id1" },
		{ "e", "{\"source_node_id\": \"node-$id2\","
		       " \"target_node_id\": \"node-$id1\","
		       " \"target_parameter_name\": \"input\"}",
		  "would close a cycle: node-$id2 -> node-$id1 -> node-$id2" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"node-$id1\","
		       " \"target_parameter_name\": \"input\"}",
		  "would close a cycle: node-$id1 -> node-$id1" },
		{ "e", "{\"source_node_id\": \"node-$id3\","
		       " \"target_node_id\": \"node-$id1\","
		       " \"target_parameter_name\": \"input\"}",
		  "would close a cycle: node-$id3 -> node-$id1 -> node-$id2 -> node-$id3" },
		/* the document alone is checked when a node is missing too */
		{ "e", "{\"source_node_id\": \"node-$id8\", \"x\": 1,"
		       " \"target_node_id\": \"node-$id9\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "unknown field \"x\" (an edge has id, source_node_id,"
		  " source_parameter_name, target_node_id,"
		  " target_parameter_name)" },
		{ "e", "{\"source_node_id\": \"node-$id8\","
		       " \"target_node_id\": \"\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "\"target_node_id\" must be a non-empty string" },
		{ "e", "{\"source_node_id\": \"node-$id8\","
		       " \"target_node_id\": \"node-$id9\"}",
		  "an edge needs \"target_parameter_name\"" },
		{ "e", "{\"id\": \"f\", \"source_node_id\": \"node-$id8\","
		       " \"target_node_id\": \"node-$id9\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "id \"f\" disagrees with the file name (e.json)" },
		{ "e", "[{\"source_node_id\": \"node-$id8\"}]",
		  "an edge must be a JSON object" },
		/* node ids are ids whether or not the node is there */
		{ "e", "{\"source_node_id\": \"a/b\","
		       " \"target_node_id\": \"node-$id2\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "\"source_node_id\" \"a/b\" contains '/'" },
		{ "e", "{\"source_node_id\": \"node-$id1\","
		       " \"target_node_id\": \"..\","
		       " \"target_parameter_name\": \"input_file\"}",
		  "\"target_node_id\" cannot be \"..\"" },
	};
	struct sbuf big = SBUF_INIT;
	int64_t seq;

	node(fx, "node-$id1", "apex_calculation", "");
	node(fx, "node-$id2", "abacus_calculation", "input_file,extra");
	node(fx, "node-$id3", "t3", "");
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "draft", &seq), 0);
	edge(fx, "edge-$id1", "node-$id1", "node-$id2", "input_file");
	edge(fx, "edge-$id2", "node-$id2", "node-$id3", "input");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t before = gmtime_of(fx);

		if (commit(fx, E, bad[i].id, bad[i].text) != -EINVAL)
			fail_msg("accepted %s", bad[i].text);
		if (strcmp(fx->err.message, bad[i].msg))
			fail_msg("%s: got '%s', want '%s'", bad[i].text,
				 fx->err.message, bad[i].msg);
		assert_false(exists(fx, E, bad[i].id));
		assert_int_equal(gmtime_of(fx), before);
	}
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges"), 2);
	assert_int_equal(commit(fx, E, "..", "{}"), -EINVAL);
	assert_string_equal(fx->err.message, "edge id cannot be \"..\"");
	/* a missing node's id of 1 MiB was kept, pending */
	assert_int_equal(sbuf_addstr(&big, "{\"source_node_id\": \""), 0);
	for (int i = 0; i < 1 << 20; i++)
		assert_int_equal(sbuf_addch(&big, 'n'), 0);
	assert_int_equal(sbuf_addstr(&big, "\", \"target_node_id\": \"node-$id2\","
				     " \"target_parameter_name\": \"x\"}"), 0);
	assert_int_equal(commit(fx, E, "e", big.buf), -EINVAL);
	assert_string_equal(fx->err.message, "\"source_node_id\" \"nnnnnnnnnn"
			    "nnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...\" is longer than 250"
			    " bytes");
	assert_false(exists(fx, E, "e"));
	sbuf_release(&big);
}

static void test_edge_replace(void **state)
{
	struct fixture *fx = *state;
	struct graph_item it, it2;
	int64_t m;
	char *doc;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	edge(fx, "e1", "a", "b", "input");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it), 0);
	m = gmtime_of(fx);
	/* itself again: not a duplicate, and no change */
	edge(fx, "e1", "a", "b", "input");
	doc = render(fx, E, "e1");
	ok(fx, E, "e1", doc);
	free(doc);
	assert_int_equal(gmtime_of(fx), m);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it2), 0);
	assert_int_equal(it2.mtime_ns, it.mtime_ns);
	free(it2.id);
	/* turned around: the old version does not count as a cycle */
	edge(fx, "e1", "b", "a", "input");
	assert_true(gmtime_of(fx) > m);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it2), 0);
	assert_int_equal(it2.seq, it.seq);
	free(it2.id);
	free(it.id);
	expect_in_doc(fx, E, "e1", "\"source_node_id\": \"b\",\n"
				    "  \"source_parameter_name\": \"out_tb\",\n"
				    "  \"target_node_id\": \"a\"");
	/* but another edge still sees it */
	assert_int_equal(edge_ret(fx, "e2", "a", "b", "input"), -EINVAL);
	assert_string_equal(fx->err.message, "would close a cycle: a -> b -> a");
}

/* ---- drafts --------------------------------------------------------------- */

static void test_drafts(void **state)
{
	struct fixture *fx = *state;
	struct graph_item *items, it;
	struct sbuf sb = SBUF_INIT;
	int64_t seq, eseq, seq2, m, m0;
	size_t n;
	char *before, *after;

	node(fx, "a", "ta", "");
	before = params(fx);
	m = gmtime_of(fx);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "new", &seq), 0);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "new", &seq2),
			 -EEXIST);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "a", &seq2),
			 -EEXIST);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "a/b", &seq2),
			 -EINVAL);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id + 99, N, "x",
					    &seq2), -ENOENT);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, E, "enew", &eseq), 0);
	assert_int_equal(graph_mtime(fx->st, fx->s.id, &m0), 0);
	assert_int_equal(m0, m);
	/* listed, flagged, empty; not in parameters.json */
	assert_int_equal(graph_list(fx->st, fx->s.id, N, &items, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(items[0].id, "a");
	assert_false(items[0].draft);
	assert_string_equal(items[1].id, "new");
	assert_true(items[1].draft);
	assert_int_equal(items[1].size, 0);
	assert_int_equal(items[1].seq, seq);
	graph_items_free(items, n);
	assert_int_equal(graph_render(fx->st, N, seq, &sb), 0);
	assert_int_equal(sb.len, 0);
	assert_int_equal(graph_render(fx->st, E, eseq, &sb), 0);
	assert_int_equal(sb.len, 0);
	assert_int_equal(graph_get(fx->st, E, eseq, &it), 0);
	assert_true(it.draft);
	assert_int_equal(it.size, 0);
	assert_string_equal(it.id, "enew");
	free(it.id);
	after = params(fx);
	assert_string_equal(before, after);
	free(after);
	/* an edge naming it waits for it */
	edge(fx, "e", "a", "new", "input");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e", &it), 0);
	assert_true(it.pending);
	assert_false(it.draft);
	free(it.id);
	/* completing it keeps its seq, and lets the edge in */
	node(fx, "new", "tn", "");
	assert_true(gmtime_of(fx) > m);
	assert_int_equal(graph_get(fx->st, N, seq, &it), 0);
	assert_false(it.draft);
	assert_true(it.size > 0);
	free(it.id);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e", &it), 0);
	assert_false(it.pending);
	free(it.id);
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e"), 0);
	/* no longer a draft: stays */
	assert_int_equal(graph_drop_draft(fx->st, N, seq), 0);
	assert_true(exists(fx, N, "new"));
	/* the edge draft completed */
	edge(fx, "enew", "a", "new", "input");
	assert_int_equal(graph_get(fx->st, E, eseq, &it), 0);
	assert_false(it.draft);
	free(it.id);
	/* dropped */
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "gone", &seq2), 0);
	m = gmtime_of(fx);
	assert_int_equal(graph_drop_draft(fx->st, N, seq2), 0);
	assert_false(exists(fx, N, "gone"));
	assert_int_equal(gmtime_of(fx), m);
	assert_int_equal(graph_get(fx->st, N, seq2, &it), -ENOENT);
	/* all of them, at mount */
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "d1", &seq2), 0);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, E, "d2", &seq2), 0);
	assert_int_equal(graph_drop_all_drafts(fx->st), 0);
	assert_false(exists(fx, N, "d1"));
	assert_false(exists(fx, E, "d2"));
	assert_true(exists(fx, N, "new"));
	assert_true(exists(fx, E, "enew"));
	/* a draft may be deleted like anything else */
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "d3", &seq2), 0);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "d3"), 0);
	assert_int_equal(gmtime_of(fx), m);
	free(before);
	sbuf_release(&sb);
}

/* ---- delete, rename ------------------------------------------------------- */

static void test_delete(void **state)
{
	struct fixture *fx = *state;
	struct graph_item *items;
	size_t n;
	int64_t m;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	node(fx, "c", "tc", "");
	node(fx, "d", "td", "");
	edge(fx, "e1", "a", "b", "input");
	edge(fx, "e2", "b", "c", "input");
	edge(fx, "e3", "c", "d", "input");
	edge(fx, "e4", "a", "d", "input");
	m = gmtime_of(fx);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "b"), 0);
	assert_true(gmtime_of(fx) > m);
	assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(items[0].id, "e3");
	assert_string_equal(items[1].id, "e4");
	graph_items_free(items, n);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "b"), -ENOENT);
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e3"), 0);
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e3"), -ENOENT);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "d"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges"), 0);
	/* the session goes, its graph with it */
	node(fx, "x", "tx", "");
	edge(fx, "e5", "a", "x", "input");
	assert_int_equal(session_delete(fx->st, fx->t, fx->s.id), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_nodes"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges"), 0);
}

static void test_rename(void **state)
{
	struct fixture *fx = *state;
	struct graph_item it, it2;
	int64_t m, dseq;
	char *doc;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	node(fx, "c", "tc", "");
	edge(fx, "e1", "a", "b", "input");
	edge(fx, "e2", "b", "c", "input");
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "b", &it), 0);
	m = gmtime_of(fx);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "b", "x", false,
				      &fx->err), 0);
	assert_true(gmtime_of(fx) > m);
	assert_false(exists(fx, N, "b"));
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "x", &it2), 0);
	assert_int_equal(it2.seq, it.seq);
	free(it.id);
	free(it2.id);
	doc = render(fx, N, "x");
	assert_true(starts_with(doc, "{\n  \"id\": \"x\",\n  \"node_uuid\": "));
	free(doc);
	expect_in_doc(fx, E, "e1", "\"target_node_id\": \"x\",");
	expect_in_doc(fx, E, "e2", "\"source_node_id\": \"x\",");
	/* the cycle check sees the new name */
	assert_int_equal(edge_ret(fx, "e3", "c", "a", "input"), -EINVAL);
	assert_string_equal(fx->err.message,
			    "would close a cycle: c -> a -> x -> c");

	/* taken */
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "x", "c", false,
				      &fx->err), -EEXIST);
	assert_true(exists(fx, N, "x"));
	/* replace: the old c goes, with its edges */
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "a", "c", true,
				      &fx->err), 0);
	assert_false(exists(fx, N, "a"));
	assert_false(exists(fx, E, "e2"));
	expect_in_doc(fx, E, "e1", "\"source_node_id\": \"c\",");
	/* to itself; missing; bad names */
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "c", "c", false,
				      &fx->err), 0);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "nope", "y", false,
				      &fx->err), -ENOENT);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "c", "a/b", false,
				      &fx->err), -EINVAL);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "c", ".", false,
				      &fx->err), -EINVAL);
	assert_true(exists(fx, N, "c"));

	/* edges */
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e1", "edge-1", false,
				      &fx->err), 0);
	doc = render(fx, E, "edge-1");
	assert_true(starts_with(doc, "{\n  \"id\": \"edge-1\",\n"));
	free(doc);
	node(fx, "z", "tz", "");
	edge(fx, "e9", "x", "z", "input");
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e9", "edge-1", false,
				      &fx->err), -EEXIST);
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e9", "edge-1", true,
				      &fx->err), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges"), 1);
	expect_in_doc(fx, E, "edge-1", "\"target_node_id\": \"z\",");

	/* a draft is renamed like a file, without touching the graph */
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "d", &dseq), 0);
	m = gmtime_of(fx);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "d", "d2", false,
				      &fx->err), 0);
	assert_int_equal(gmtime_of(fx), m);
	assert_int_equal(graph_get(fx->st, N, dseq, &it), 0);
	assert_string_equal(it.id, "d2");
	assert_true(it.draft);
	free(it.id);
}

/* ---- infer-edges ---------------------------------------------------------- */

static void test_infer_rule(void **state)
{
	struct fixture *fx = *state;
	/* target node inputs -> the parameter the rule picks */
	static const struct { const char *inputs, *want; } cases[] = {
		{ "formula,input_file", "input_file" },
		{ "a,FILE_x", "FILE_x" },
		{ "a,Path", "Path" },
		{ "a,the_url", "the_url" },
		{ "a,MyInput", "MyInput" },
		{ "a,output_dir", "output_dir" },
		{ "a,structure", "structure" },
		{ "a,rawData", "rawData" },
		{ "a,last_result", "last_result" },
		{ "structure_file,data", "structure_file" },
		{ "formula,method", "formula" },
		{ "", "input" },
		{ "fi_le,pa-th", "fi_le" },
	};
	size_t nc = sizeof(cases) / sizeof(cases[0]), added = 0;
	struct sbuf report = SBUF_INIT;
	struct graph_item *items;
	size_t n;

	node(fx, "n0", "first", "");
	for (size_t i = 0; i < nc; i++) {
		char id[16], label[16];

		snprintf(id, sizeof(id), "n%zu", i + 1);
		snprintf(label, sizeof(label), "tool%zu", i + 1);
		node(fx, id, label, cases[i].inputs);
	}
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, nc);
	assert_int_equal(report.len, 0);
	assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
	assert_int_equal(n, nc);
	for (size_t i = 0; i < nc; i++) {
		char want[512], *doc;

		snprintf(want, sizeof(want),
			 "{\n"
			 "  \"id\": \"edge-$id%zu\",\n"
			 "  \"source_node_id\": \"n%zu\",\n"
			 "  \"source_parameter_name\": \"out_%s%.0zu\",\n"
			 "  \"target_node_id\": \"n%zu\",\n"
			 "  \"target_parameter_name\": \"%s\"\n"
			 "}", i + 1, i, i ? "tool" : "first", i, i + 1,
			 cases[i].want);
		doc = render(fx, E, items[i].id);
		assert_string_equal(doc, want);
		free(doc);
	}
	graph_items_free(items, n);
	/* again: everything is there already */
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 0);
	assert_int_equal(report.len, 0);
	sbuf_release(&report);
}

static void test_infer_existing(void **state)
{
	struct fixture *fx = *state;
	struct sbuf report = SBUF_INIT;
	struct graph_item *items;
	size_t added, n;
	int64_t m;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	node(fx, "c", "tc", "");
	node(fx, "d", "td", "");
	node(fx, "e", "te", "");
	/* taken ids; an existing edge equal to what the rule gives (b -> c);
	 * one that makes d -> e close a cycle; one the rule would not make */
	edge(fx, "edge-$id1", "b", "c", "input");
	edge(fx, "edge-$id3", "e", "a", "input");
	edge(fx, "edge-$id4", "a", "d", "input");
	m = gmtime_of(fx);
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_true(gmtime_of(fx) > m);
	/* a -> b gets 2, c -> d gets 5; d -> e is skipped */
	assert_int_equal(added, 2);
	assert_string_equal(report.buf,
			    "d -> e skipped: would close a cycle: d -> e -> a -> d\n");
	assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
	assert_int_equal(n, 5);
	assert_string_equal(items[0].id, "edge-$id1");
	assert_string_equal(items[1].id, "edge-$id3");
	assert_string_equal(items[2].id, "edge-$id4");
	assert_string_equal(items[3].id, "edge-$id2");
	assert_string_equal(items[4].id, "edge-$id5");
	graph_items_free(items, n);
	{
		char *doc = render(fx, E, "edge-$id5");

		assert_non_null(strstr(doc, "\"source_node_id\": \"c\",\n"
					    "  \"source_parameter_name\": \"out_tc\",\n"
					    "  \"target_node_id\": \"d\""));
		free(doc);
	}
	/* nothing to add: no change */
	sbuf_reset(&report);
	m = gmtime_of(fx);
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 0);
	assert_int_equal(gmtime_of(fx), m);
	assert_non_null(strstr(report.buf, "d -> e skipped"));
	/* drafts take no part; an empty graph is fine */
	sbuf_release(&report);
}

static void test_infer_empty(void **state)
{
	struct fixture *fx = *state;
	struct sbuf report = SBUF_INIT;
	size_t added = 7;
	int64_t seq;

	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 0);
	node(fx, "a", "ta", "");
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "b", &seq), 0);
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 0);
	node(fx, "c", "tc", "");
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 1);
	assert_int_equal(report.len, 0);
	sbuf_release(&report);
}

/* ---- parameters.json ------------------------------------------------------ */

static void test_parameters_seed(void **state)
{
	struct fixture *fx = *state;
	static const char *const names[] = {
		"seed000-example1.json", "seed000-example2.json"
	};
	struct sbuf uuid = SBUF_INIT;

	for (size_t i = 0; i < 2; i++) {
		size_t len;
		char *text = read_fixture(names[i], &len), *back;
		struct graph_item *items;
		size_t n;

		if (!text)
			skip();
		ferr_clear(&fx->err);
		if (graph_commit_parameters(fx->st, fx->tools, fx->s.id, text,
					    len, &fx->err) < 0)
			fail_msg("%s: %s", names[i], fx->err.message);
		back = params(fx);
		assert_string_equal(back, text);
		free(back);
		/* the pieces are the nodes and edges of the document */
		assert_int_equal(graph_list(fx->st, fx->s.id, N, &items, &n), 0);
		assert_int_equal(n, i ? 3 : 1);
		assert_string_equal(items[n - 1].id, i ? "node-$id3" : "node-$id1");
		graph_items_free(items, n);
		assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
		assert_int_equal(n, i ? 2 : 0);
		graph_items_free(items, n);
		free(text);
	}
	assert_int_equal(graph_template_uuid(fx->st, fx->s.id, &uuid), 0);
	assert_string_equal(uuid.buf, "68a4ed99-9fff-4b1a-9b47-98a8624b5143");
	sbuf_release(&uuid);
}

static void test_parameters_render(void **state)
{
	struct fixture *fx = *state;
	struct sbuf uuid = SBUF_INIT;
	char want[512], *doc;

	/* a new session has its own template uuid and an empty graph */
	assert_int_equal(graph_template_uuid(fx->st, fx->s.id, &uuid), 0);
	assert_v4(uuid.buf);
	snprintf(want, sizeof(want),
		 "{\n"
		 "  \"nodes\": [],\n"
		 "  \"edges\": [],\n"
		 "  \"meta\": {\n"
		 "    \"template_uuid\": \"%s\"\n"
		 "  }\n"
		 "}", uuid.buf);
	doc = params(fx);
	assert_string_equal(doc, want);
	free(doc);
	assert_int_equal(graph_template_uuid(fx->st, fx->s.id + 9, &uuid),
			 -ENOENT);
	{
		struct sbuf sb = SBUF_INIT;

		assert_int_equal(graph_render_parameters(fx->st, fx->s.id + 9,
							 &sb), -ENOENT);
		assert_int_equal(sb.len, 0);
		sbuf_release(&sb);
	}
	/* nodes written one by one, in creation order, nested */
	ok(fx, N, "b", "{\"label\": \"tb\", \"node_uuid\": \"u-b\"}");
	ok(fx, N, "a", "{\"label\": \"ta\", \"node_uuid\": \"u-a\","
		       " \"input_parameters\": [{\"name\": \"p\", \"type\": \"str\","
		       " \"value\": \"line\\nbreak\"}]}");
	edge(fx, "e", "b", "a", "p");
	doc = params(fx);
	snprintf(want, sizeof(want), "    \"template_uuid\": \"%s\"\n  }\n}",
		 uuid.buf);
	assert_non_null(strstr(doc, want));
	{
		const char *expect =
			"{\n"
			"  \"nodes\": [\n"
			"    {\n"
			"      \"id\": \"b\",\n"
			"      \"node_uuid\": \"u-b\",\n"
			"      \"node_version\": \"1.2\",\n"
			"      \"label\": \"tb\",\n"
			"      \"position_x\": 0.0,\n"
			"      \"position_y\": 0.0,\n"
			"      \"system_values\": {\n"
			"        \"machine_type\": \"c2_m4_cpu\",\n"
			"        \"image\": \"\",\n"
			"        \"docker_image\": \"\"\n"
			"      },\n"
			"      \"input_parameters\": [],\n"
			"      \"output_parameters\": []\n"
			"    },\n"
			"    {\n"
			"      \"id\": \"a\",\n"
			"      \"node_uuid\": \"u-a\",\n"
			"      \"node_version\": \"1.2\",\n"
			"      \"label\": \"ta\",\n"
			"      \"position_x\": 0.0,\n"
			"      \"position_y\": 0.0,\n"
			"      \"system_values\": {\n"
			"        \"machine_type\": \"c2_m4_cpu\",\n"
			"        \"image\": \"\",\n"
			"        \"docker_image\": \"\"\n"
			"      },\n"
			"      \"input_parameters\": [\n"
			"        {\n"
			"          \"name\": \"p\",\n"
			"          \"type\": \"str\",\n"
			"          \"value\": \"line\\nbreak\"\n"
			"        }\n"
			"      ],\n"
			"      \"output_parameters\": []\n"
			"    }\n"
			"  ],\n"
			"  \"edges\": [\n"
			"    {\n"
			"      \"id\": \"e\",\n"
			"      \"source_node_id\": \"b\",\n"
			"      \"source_parameter_name\": \"out_tb\",\n"
			"      \"target_node_id\": \"a\",\n"
			"      \"target_parameter_name\": \"p\"\n"
			"    }\n"
			"  ],\n"
			"  \"meta\": {\n";

		assert_true(!strncmp(doc, expect, strlen(expect)));
	}
	free(doc);
	sbuf_release(&uuid);
}

static void test_parameters_refusals(void **state)
{
	struct fixture *fx = *state;
#define ND(id) "{\"id\": \"" id "\", \"label\": \"t\"}"
#define ED(id, s, t) "{\"id\": \"" id "\", \"source_node_id\": \"" s "\"," \
	" \"target_node_id\": \"" t "\", \"target_parameter_name\": \"input\"}"
#define DOC(nodes, edges) "{\"nodes\": [" nodes "], \"edges\": [" edges "]," \
	" \"meta\": {}}"
	static const struct { const char *text, *msg; } bad[] = {
		{ "[]", "parameters.json must be a JSON object" },
		{ "{\"nodes\": [], \"meta\": {}}", "missing \"edges\"" },
		{ "{\"edges\": [], \"meta\": {}}", "missing \"nodes\"" },
		{ "{\"nodes\": [], \"edges\": [], \"meta\": {}, \"x\": 1}",
		  "unknown field \"x\" (parameters.json has nodes, edges, meta)" },
		{ "{\"nodes\": {}, \"edges\": [], \"meta\": {}}",
		  "\"nodes\" must be an array" },
		{ "{\"nodes\": [], \"edges\": 1, \"meta\": {}}",
		  "\"edges\" must be an array" },
		{ "{\"nodes\": [], \"edges\": [], \"meta\": []}",
		  "\"meta\" must be an object" },
		{ "{\"nodes\": [], \"edges\": [], \"meta\": {\"v\": 1}}",
		  "unknown field \"meta.v\" (meta has template_uuid)" },
		{ "{\"nodes\": [], \"edges\": [], \"meta\": {\"template_uuid\": 1}}",
		  "\"meta.template_uuid\" must be a string" },
		{ DOC(ND("a") ", {\"label\": \"t\"}", ""),
		  "nodes[1]: a node needs an \"id\"" },
		{ DOC(ND("a") ", " ND("b") ", {\"id\": \"c\", \"lable\": \"t\"}", ""),
		  "nodes[2]: unknown field \"lable\"" },
		{ DOC(ND("a") ", {\"id\": \"b\", \"label\": \"t\", \"position_x\": []}", ""),
		  "nodes[1]: \"position_x\" must be a number" },
		{ DOC(ND("a") ", " ND("b") ", " ND("a"), ""),
		  "nodes[2]: id \"a\" repeats nodes[0]" },
		{ DOC(ND("a/b"), ""), "nodes[0]: \"id\" \"a/b\" contains '/'" },
		{ DOC(ND("a") ", 3", ""), "nodes[1]: a node must be a JSON object" },
		{ DOC(ND("a") ", " ND("b"), ED("e1", "a", "b") ", " ED("e2", "a", "c")),
		  "edges[1]: target node \"c\" does not exist" },
		{ DOC(ND("a") ", " ND("b"), ED("e1", "x", "b")),
		  "edges[0]: source node \"x\" does not exist" },
		{ DOC(ND("a") ", " ND("b"), "{\"source_node_id\": \"a\","
		      " \"target_node_id\": \"b\", \"target_parameter_name\": \"input\"}"),
		  "edges[0]: an edge needs an \"id\"" },
		{ DOC(ND("a") ", " ND("b"), ED("e1", "a", "b") ", " ED("e1", "b", "a")),
		  "edges[1]: id \"e1\" repeats edges[0]" },
		{ DOC(ND("a") ", " ND("b"), ED("e1", "a", "b") ", " ED("e2", "a", "b")),
		  "edges[1]: duplicates e1" },
		{ DOC(ND("a") ", " ND("b"), "{\"id\": \"e1\", \"source_node_id\": \"a\","
		      " \"target_node_id\": \"b\", \"target_parameter_name\": \"x\"}"),
		  "edges[0]: node \"b\" has no input parameter \"x\" (it has none,"
		  " so an edge into it uses \"input\")" },
		{ DOC(ND("a"), ED("e1", "a", "a")),
		  "edges[0]: would close a cycle: a -> a" },
		{ DOC(ND("a") ", " ND("b") ", " ND("c"),
		      ED("e1", "a", "b") ", " ED("e2", "b", "c") ", " ED("e3", "c", "a")),
		  "edges[2]: would close a cycle: c -> a -> b -> c" },
		{ DOC(ND("a") ", " ND("b") ", " ND("c") ", " ND("d"),
		      ED("e1", "c", "a") ", " ED("e2", "a", "b") ", "
		      ED("e3", "d", "a") ", " ED("e4", "b", "c")),
		  "edges[3]: would close a cycle: b -> c -> a -> b" },
		{ DOC(ND("a") ", " ND("b") ", " ND("c"),
		      ED("e1", "b", "a") ", " ED("e2", "a", "b") ", " ED("e3", "b", "c")),
		  "edges[1]: would close a cycle: a -> b -> a" },
		{ "{\"nodes\": [}", "line 1, column 12" },
	};
	char *before;
	int64_t m;

	node(fx, "keep", "k", "");
	before = params(fx);
	m = gmtime_of(fx);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *after, line[700];

		if (commit_params(fx, bad[i].text) != -EINVAL)
			fail_msg("accepted %s", bad[i].text);
		ferr_format(&fx->err, line, sizeof(line));
		if (!strstr(line, bad[i].msg))
			fail_msg("%s: got '%s', want '%s'", bad[i].text, line,
				 bad[i].msg);
		after = params(fx);
		assert_string_equal(before, after);
		free(after);
		assert_int_equal(gmtime_of(fx), m);
	}
	free(before);
#undef ND
#undef ED
#undef DOC
}

static void test_parameters_replace(void **state)
{
	struct fixture *fx = *state;
	struct graph_item *items, it;
	struct sbuf uuid = SBUF_INIT;
	char ua[37], ub[37], uc[37], *doc, *again;
	int64_t m, dseq, keep_seq;
	size_t n;

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	edge(fx, "old", "a", "b", "input");
	uuid_of(fx, "a", ua);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "writing", &dseq),
			 0);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "c", &keep_seq),
			 0);
	/* b, c (new; its draft gives way), a (uuid kept), in that order */
	assert_int_equal(commit_params(fx,
		"{\"nodes\": [{\"id\": \"b\", \"label\": \"tb2\"},"
		" {\"id\": \"c\", \"label\": \"tc\"},"
		" {\"id\": \"a\", \"label\": \"ta\", \"input_parameters\":"
		"  [{\"name\": \"structure\"}]}],"
		" \"edges\": [{\"id\": \"e1\", \"source_node_id\": \"c\","
		"  \"target_node_id\": \"a\", \"target_parameter_name\": \"structure\"},"
		"  {\"id\": \"e2\", \"source_node_id\": \"b\", \"source_parameter_name\":"
		"  \"mine\", \"target_node_id\": \"c\", \"target_parameter_name\": \"input\"}],"
		" \"meta\": {\"template_uuid\": \"tpl-1\"}}"), 0);
	assert_int_equal(graph_list(fx->st, fx->s.id, N, &items, &n), 0);
	assert_int_equal(n, 4);
	assert_string_equal(items[0].id, "writing");	/* drafts stay */
	assert_true(items[0].draft);
	assert_string_equal(items[1].id, "b");
	assert_string_equal(items[2].id, "c");
	assert_false(items[2].draft);
	assert_string_equal(items[3].id, "a");
	graph_items_free(items, n);
	assert_false(exists(fx, E, "old"));
	uuid_of(fx, "a", uc);
	assert_string_equal(ua, uc);
	uuid_of(fx, "c", uc);
	assert_v4(uc);
	uuid_of(fx, "b", ub);
	assert_v4(ub);
	expect_in_doc(fx, E, "e1", "\"source_parameter_name\": \"out_tc\",");
	expect_in_doc(fx, E, "e2", "\"source_parameter_name\": \"mine\",");
	assert_int_equal(graph_template_uuid(fx->st, fx->s.id, &uuid), 0);
	assert_string_equal(uuid.buf, "tpl-1");

	/* its own rendering again: nothing changes, not even times */
	doc = params(fx);
	m = gmtime_of(fx);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "b", &it), 0);
	assert_int_equal(commit_params(fx, doc), 0);
	again = params(fx);
	assert_string_equal(doc, again);
	free(again);
	assert_int_equal(gmtime_of(fx), m);
	{
		struct graph_item it2;

		assert_int_equal(graph_find(fx->st, fx->s.id, N, "b", &it2), 0);
		assert_int_equal(it2.seq, it.seq);
		assert_int_equal(it2.mtime_ns, it.mtime_ns);
		free(it2.id);
	}
	free(it.id);
	/* without meta.template_uuid the session keeps its own */
	assert_int_equal(commit_params(fx, "{\"nodes\": [], \"edges\": [],"
				       " \"meta\": {}}"), 0);
	assert_true(gmtime_of(fx) > m);
	sbuf_reset(&uuid);
	assert_int_equal(graph_template_uuid(fx->st, fx->s.id, &uuid), 0);
	assert_string_equal(uuid.buf, "tpl-1");
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_nodes"
				 " WHERE doc IS NOT NULL"), 0);
	assert_true(exists(fx, N, "writing"));
	/* what was written by parts reads back as the whole */
	assert_int_equal(commit_params(fx, doc), 0);
	again = params(fx);
	assert_string_equal(doc, again);
	free(again);
	free(doc);
	sbuf_release(&uuid);
}

/* ---- pending edges -------------------------------------------------------- */

static char *problems(struct fixture *fx)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(graph_problems(fx->st, fx->s.id, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static void assert_problems(struct fixture *fx, const char *want)
{
	char *got = problems(fx);

	assert_string_equal(got, want);
	free(got);
}

static bool is_pending(struct fixture *fx, const char *id)
{
	struct graph_item it;
	bool pending;

	assert_int_equal(graph_find(fx->st, fx->s.id, E, id, &it), 0);
	pending = it.pending;
	assert_false(it.draft);
	free(it.id);
	return pending;
}

/* Whether parameters.json has an edge `id`. */
static bool in_params(struct fixture *fx, const char *id)
{
	char *doc = params(fx), want[300];
	bool has;

	snprintf(want, sizeof(want), "      \"id\": \"%s\",\n      \"source_node_id\"",
		 id);
	has = strstr(doc, want) != NULL;
	free(doc);
	return has;
}

/* parameters.json's edges are one: this. */
static void assert_one_edge(struct fixture *fx, const char *id,
			    const char *src, const char *sp, const char *tgt,
			    const char *tp)
{
	char want[1024], *doc = params(fx);

	snprintf(want, sizeof(want), "  \"edges\": [\n"
		 "    {\n"
		 "      \"id\": \"%s\",\n"
		 "      \"source_node_id\": \"%s\",\n"
		 "      \"source_parameter_name\": \"%s\",\n"
		 "      \"target_node_id\": \"%s\",\n"
		 "      \"target_parameter_name\": \"%s\"\n"
		 "    }\n"
		 "  ],\n", id, src, sp, tgt, tp);
	assert_non_null(strstr(doc, want));
	free(doc);
}

/*
 * An edge before its nodes: kept outside the graph, its file what it
 * gives as an edge of the graph shows it (not the text as written: 1 MiB
 * of blanks around it was stored as such).
 */
static void test_pending_edge(void **state)
{
	struct fixture *fx = *state;
	static const char text[] =
		"{\"target_parameter_name\":\"structure_file\",\n"
		"   \"source_node_id\":\"n1\",\"target_node_id\":\"n2\"}\n";
	static const char canonical[] = "{\n"
		"  \"id\": \"e1\",\n"
		"  \"source_node_id\": \"n1\",\n"
		"  \"target_node_id\": \"n2\",\n"
		"  \"target_parameter_name\": \"structure_file\"\n"
		"}";
	struct graph_item *items, it, it2;
	struct sbuf padded = SBUF_INIT;
	char *before, *doc;
	int64_t m;
	size_t n;

	before = params(fx);
	assert_problems(fx, "");
	m = gmtime_of(fx);
	for (int i = 0; i < 1 << 20; i++)
		assert_int_equal(sbuf_addch(&padded, ' '), 0);
	assert_int_equal(sbuf_addstr(&padded, text), 0);
	ok(fx, E, "e1", padded.buf);
	sbuf_release(&padded);
	assert_true(gmtime_of(fx) > m);
	assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(items[0].id, "e1");
	assert_false(items[0].draft);
	assert_true(items[0].pending);
	assert_int_equal(items[0].size, strlen(canonical));
	graph_items_free(items, n);
	doc = render(fx, E, "e1");
	assert_string_equal(doc, canonical);
	free(doc);
	assert_int_equal(sql_int(fx, "SELECT max(length(source) + length(target)"
				 " + length(target_param)) FROM graph_edges"), 18);
	doc = params(fx);
	assert_string_equal(doc, before);
	free(doc);
	assert_problems(fx, "edges/e1.json: waits for its source node \"n1\" and"
			" its target node \"n2\", which do not exist\n");
	/* the same edge again is no change */
	m = gmtime_of(fx);
	ok(fx, E, "e1", text);
	ok(fx, E, "e1", canonical);
	assert_int_equal(gmtime_of(fx), m);

	node(fx, "n1", "structure_generate", "formula");
	assert_true(is_pending(fx, "e1"));
	assert_problems(fx, "edges/e1.json: waits for its target node \"n2\","
			" which does not exist\n");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it), 0);
	m = gmtime_of(fx);
	/* the second node's write places it, in the same step */
	node(fx, "n2", "apex_optimization", "structure_file");
	assert_false(is_pending(fx, "e1"));
	assert_true(gmtime_of(fx) > m);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it2), 0);
	assert_int_equal(it2.seq, it.seq);
	assert_true(it2.mtime_ns > it.mtime_ns);
	free(it.id);
	free(it2.id);
	assert_problems(fx, "");
	assert_one_edge(fx, "e1", "n1", "out_structure_generate", "n2",
			"structure_file");
	doc = render(fx, E, "e1");
	assert_true(starts_with(doc, "{\n  \"id\": \"e1\",\n"));
	free(doc);

	/* replaced by a later write of its id: pending again, then valid */
	ok(fx, E, "e1", "{\"source_node_id\": \"n1\", \"target_node_id\": \"n9\","
			 " \"target_parameter_name\": \"x\"}");
	assert_true(is_pending(fx, "e1"));
	assert_false(in_params(fx, "e1"));
	assert_problems(fx, "edges/e1.json: waits for its target node \"n9\","
			" which does not exist\n");
	edge(fx, "e1", "n1", "n2", "structure_file");
	assert_false(is_pending(fx, "e1"));
	assert_true(in_params(fx, "e1"));
	/* both nodes there: the graph's checks refuse as before */
	assert_int_equal(edge_ret(fx, "e2", "n2", "n1", "nope"), -EINVAL);
	assert_false(exists(fx, E, "e2"));
	/* a self-loop on a missing node */
	edge(fx, "e3", "n7", "n7", "input");
	assert_problems(fx, "edges/e3.json: waits for its source and target node"
			" \"n7\", which does not exist\n");
	free(before);
}

/* Nodes a and b, edge e1: a -> b, and e2: b -> c, which waits for c. */
static void chain_to_c(struct fixture *fx)
{
	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	edge(fx, "e1", "a", "b", "input");
	edge(fx, "e2", "b", "c", "input");
}

/* Placed once its nodes exist, a pending edge that would close a cycle
 * stays pending; the node write does not fail. */
static void test_pending_cycle(void **state)
{
	struct fixture *fx = *state;
	char *doc;

	chain_to_c(fx);
	edge(fx, "e3", "c", "a", "input");
	assert_problems(fx,
		"edges/e2.json: waits for its target node \"c\", which does not exist\n"
		"edges/e3.json: waits for its source node \"c\", which does not exist\n");
	node(fx, "c", "tc", "");
	assert_false(is_pending(fx, "e2"));
	assert_true(is_pending(fx, "e3"));
	assert_problems(fx, "edges/e3.json: would close a cycle: c -> a -> b -> c\n");
	assert_true(in_params(fx, "e2"));
	assert_false(in_params(fx, "e3"));
	/* it is in no check of the graph: no cycle with it, and its input
	 * is not one an edge feeds */
	edge(fx, "e4", "a", "c", "input");
	ok(fx, N, "a", "{\"label\": \"ta\", \"input_parameters\": [{\"name\": \"x\"}]}");
	assert_problems(fx, "edges/e3.json: node \"a\" has no input parameter"
			" \"input\" (it has: x)\n");
	node(fx, "a", "ta", "");
	assert_problems(fx, "edges/e3.json: would close a cycle: c -> a -> c\n");
	/* what held it back goes: it joins */
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e1"), 0);
	assert_problems(fx, "edges/e3.json: would close a cycle: c -> a -> c\n");
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e4"), 0);
	assert_false(is_pending(fx, "e3"));
	assert_problems(fx, "");
	/* parameters.json reads back the same */
	doc = params(fx);
	assert_int_equal(commit_params(fx, doc), 0);
	{
		char *again = params(fx);

		assert_string_equal(doc, again);
		free(again);
	}
	free(doc);
}

/* A target without the input: the node write succeeds, the edge waits
 * until the node has it; of two equal pending edges the older joins. */
static void test_pending_input(void **state)
{
	struct fixture *fx = *state;
	struct sbuf report = SBUF_INIT;
	size_t added;

	edge(fx, "e1", "a", "b", "structure_file");
	edge(fx, "e2", "a", "b", "structure_file");
	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "x");
	assert_true(is_pending(fx, "e1"));
	assert_problems(fx,
		"edges/e1.json: node \"b\" has no input parameter \"structure_file\""
		" (it has: x)\n"
		"edges/e2.json: node \"b\" has no input parameter \"structure_file\""
		" (it has: x)\n");
	/* infer-edges does not see them (ids taken stay taken) */
	assert_int_equal(graph_infer_edges(fx->st, fx->s.id, &added, &report), 0);
	assert_int_equal(added, 1);
	assert_true(exists(fx, E, "edge-$id1"));
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "edge-$id1"), 0);
	node(fx, "b", "tb", "x,structure_file");
	assert_false(is_pending(fx, "e1"));
	assert_true(is_pending(fx, "e2"));
	assert_problems(fx, "edges/e2.json: duplicates e1\n");
	/* the placed one holds the input now */
	assert_int_equal(commit(fx, N, "b", "{\"label\": \"tb\"}"), -EINVAL);
	sbuf_release(&report);
}

/* Drafts go at mount and with a refused create, pending edges stay, also
 * those that wait for a draft; a node deleted takes the pending edges
 * that name it, as it takes the others. */
static void test_pending_survives(void **state)
{
	struct fixture *fx = *state;
	struct graph_item it;
	int64_t nseq, eseq;

	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "b", &nseq), 0);
	edge(fx, "e1", "a", "b", "input");
	assert_problems(fx, "edges/e1.json: waits for its source node \"a\" and"
			" its target node \"b\", which do not exist\n");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e1", &it), 0);
	assert_int_equal(graph_drop_draft(fx->st, E, it.seq), 0);
	free(it.id);
	assert_true(exists(fx, E, "e1"));
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, E, "d", &eseq), 0);
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, E, "e1", &eseq),
			 -EEXIST);
	assert_int_equal(graph_drop_all_drafts(fx->st), 0);
	assert_false(exists(fx, E, "d"));
	assert_false(exists(fx, N, "b"));
	assert_true(is_pending(fx, "e1"));
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "b", &nseq), 0);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "b"), 0);
	assert_true(is_pending(fx, "e1"));
	/* deleted like any edge */
	edge(fx, "e2", "b", "a", "input");
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e2"), 0);
	assert_false(exists(fx, E, "e2"));
	/* a deleted node takes the edges naming it, those that wait too */
	node(fx, "a", "ta", "");
	node(fx, "c", "tc", "");
	edge(fx, "e3", "c", "a", "input");
	edge(fx, "e4", "c", "z", "input");
	edge(fx, "e5", "y", "c", "input");
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "c"), 0);
	assert_false(exists(fx, E, "e3"));
	assert_false(exists(fx, E, "e4"));
	assert_false(exists(fx, E, "e5"));
	assert_problems(fx, "edges/e1.json: waits for its target node \"b\","
			" which does not exist\n");
	/* whatever order its nodes came in */
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "a"), 0);
	assert_false(exists(fx, E, "e1"));
	assert_problems(fx, "");
}

/*
 * Renamed like any edge (its file shows the new id); a renamed node's
 * name lets edges in, and the pending edges naming a renamed node follow
 * it as the others do.
 */
static void test_pending_rename(void **state)
{
	struct fixture *fx = *state;
	static const char no_id[] = "{\"source_node_id\": \"a\","
		" \"target_node_id\": \"b\", \"target_parameter_name\": \"input\"}";
	struct graph_item it, it2;
	char *doc;

	ok(fx, E, "e1", "{\"id\": \"e1\", \"source_node_id\": \"a\","
			 " \"target_node_id\": \"b\", \"target_parameter_name\": \"input\"}");
	ok(fx, E, "e2", no_id);
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e1", "e9", false,
				      &fx->err), 0);
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e2", "e8", false,
				      &fx->err), 0);
	assert_true(is_pending(fx, "e9"));
	/* the id follows, so that it agrees with the file name */
	doc = render(fx, E, "e9");
	assert_string_equal(doc, "{\n"
			    "  \"id\": \"e9\",\n"
			    "  \"source_node_id\": \"a\",\n"
			    "  \"target_node_id\": \"b\",\n"
			    "  \"target_parameter_name\": \"input\"\n"
			    "}");
	free(doc);
	expect_in_doc(fx, E, "e8", "\"id\": \"e8\"");
	node(fx, "a", "ta", "");
	node(fx, "bb", "tb", "");
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "bb", "b", false,
				      &fx->err), 0);
	assert_false(is_pending(fx, "e9"));
	assert_true(is_pending(fx, "e8"));
	assert_problems(fx, "edges/e8.json: duplicates e9\n");
	/* they follow a renamed node (it was: wait for its old name) */
	edge(fx, "e7", "a", "c", "input");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e7", &it), 0);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "a", "a2", false,
				      &fx->err), 0);
	assert_problems(fx,
		"edges/e8.json: duplicates e9\n"
		"edges/e7.json: waits for its target node \"c\", which does not"
		" exist\n");
	expect_in_doc(fx, E, "e9", "\"source_node_id\": \"a2\",");
	expect_in_doc(fx, E, "e7", "\"source_node_id\": \"a2\",");
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e7", &it2), 0);
	assert_true(it2.mtime_ns > it.mtime_ns);
	free(it.id);
	free(it2.id);
	/* and join when the new name is the one they waited for */
	node(fx, "x", "tx", "");
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "x", "c", false,
				      &fx->err), 0);
	assert_false(is_pending(fx, "e7"));
	assert_problems(fx, "edges/e8.json: duplicates e9\n");
}

/*
 * parameters.json is the whole graph: the pending edges go, the one it
 * names and the others, and none joins it, not even one whose nodes it
 * has (it did, and came first); writing the graph's own document while
 * edges wait is a change.
 */
static void test_pending_parameters(void **state)
{
	struct fixture *fx = *state;
	static const char text[] =
		"{\"nodes\": [{\"id\": \"a\", \"label\": \"ta\"},"
		" {\"id\": \"b\", \"label\": \"tb\"},"
		" {\"id\": \"p\", \"label\": \"tp\"}, {\"id\": \"q\", \"label\": \"tq\"}],"
		" \"edges\": [{\"id\": \"e1\", \"source_node_id\": \"a\","
		"  \"target_node_id\": \"b\", \"target_parameter_name\": \"input\"}],"
		" \"meta\": {}}";
	char *doc;
	int64_t m;

	edge(fx, "e1", "x", "y", "input");
	edge(fx, "e2", "p", "q", "input");
	assert_int_equal(commit_params(fx, text), 0);
	assert_false(is_pending(fx, "e1"));
	expect_in_doc(fx, E, "e1", "\"source_node_id\": \"a\",");
	assert_false(exists(fx, E, "e2"));
	assert_problems(fx, "");
	assert_one_edge(fx, "e1", "a", "out_ta", "b", "input");
	/* its own document again: no change, unless edges wait */
	doc = params(fx);
	m = gmtime_of(fx);
	assert_int_equal(commit_params(fx, doc), 0);
	assert_int_equal(gmtime_of(fx), m);
	edge(fx, "e3", "a", "z", "input");
	m = gmtime_of(fx);
	assert_int_equal(commit_params(fx, doc), 0);
	assert_false(exists(fx, E, "e3"));
	assert_true(gmtime_of(fx) > m);
	free(doc);
	/* a document is still checked whole: its edges need its nodes */
	edge(fx, "e4", "a", "z", "input");
	assert_int_equal(commit_params(fx,
		"{\"nodes\": [{\"id\": \"a\", \"label\": \"ta\"}],"
		" \"edges\": [{\"id\": \"e5\", \"source_node_id\": \"a\","
		"  \"target_node_id\": \"q\", \"target_parameter_name\": \"input\"}],"
		" \"meta\": {}}"), -EINVAL);
	assert_string_equal(fx->err.message,
			    "edges[0]: target node \"q\" does not exist");
	assert_true(is_pending(fx, "e4"));
}

static int commit_in(struct fixture *fx, int64_t session, enum graph_kind kind,
		     const char *id, const char *text)
{
	ferr_clear(&fx->err);
	return graph_commit(fx->st, fx->tools, session, kind, id, text,
			    strlen(text), &fx->err);
}

/* A session copied back file by file in rsync's order (edges/, nodes/,
 * parameters.json, names sorted) ends with the graph it had. */
static void test_pending_restore(void **state)
{
	struct fixture *fx = *state;
	static const char *const eids[] = { "e1", "e2", "e3" };
	static const char *const nids[] = { "n1", "n2", "n3" };
	char *etext[3], *ntext[3], *orig, *copy, *meta;
	struct session_info s2;
	struct sbuf sb = SBUF_INIT;

	node(fx, "n1", "structure_generate", "formula");
	node(fx, "n2", "apex_optimization", "structure_file");
	node(fx, "n3", "report", "data,extra");
	edge(fx, "e1", "n1", "n2", "structure_file");
	ok(fx, E, "e2", "{\"source_node_id\": \"n2\", \"source_parameter_name\":"
			 " \"energy\", \"target_node_id\": \"n3\","
			 " \"target_parameter_name\": \"data\"}");
	edge(fx, "e3", "n1", "n3", "extra");
	orig = params(fx);
	for (int i = 0; i < 3; i++) {
		etext[i] = render(fx, E, eids[i]);
		ntext[i] = render(fx, N, nids[i]);
	}
	assert_int_equal(session_create(fx->st, fx->t, "sess-2", 0755, 0, 0,
					&s2, NULL), 0);
	for (int i = 0; i < 3; i++)
		if (commit_in(fx, s2.id, E, eids[i], etext[i]) < 0)
			fail_msg("%s: %s", eids[i], fx->err.message);
	assert_int_equal(graph_problems(fx->st, s2.id, &sb), 0);
	assert_non_null(strstr(sb.buf, "edges/e3.json: waits for its source node"
			       " \"n1\" and its target node \"n3\", which do"
			       " not exist\n"));
	for (int i = 0; i < 3; i++)
		if (commit_in(fx, s2.id, N, nids[i], ntext[i]) < 0)
			fail_msg("%s: %s", nids[i], fx->err.message);
	sbuf_reset(&sb);
	assert_int_equal(graph_problems(fx->st, s2.id, &sb), 0);
	assert_int_equal(sb.len, 0);
	/* the graph is whole already (the template differs: per session) */
	assert_int_equal(graph_render_parameters(fx->st, s2.id, &sb), 0);
	meta = strstr(orig, "\"meta\"");
	assert_non_null(meta);
	assert_int_equal(strncmp(sb.buf, orig, (size_t)(meta - orig)), 0);
	assert_int_equal(graph_commit_parameters(fx->st, fx->tools, s2.id, orig,
						 strlen(orig), &fx->err), 0);
	sbuf_reset(&sb);
	assert_int_equal(graph_render_parameters(fx->st, s2.id, &sb), 0);
	copy = sbuf_detach(&sb, NULL);
	assert_string_equal(copy, orig);
	free(copy);
	free(orig);
	for (int i = 0; i < 3; i++) {
		free(etext[i]);
		free(ntext[i]);
	}
	sbuf_release(&sb);
}

static int count_statement(unsigned type, void *ctx, void *p, void *x)
{
	(void)type;
	(void)p;
	(void)x;
	(*(int *)ctx)++;
	return 0;
}

/* Count the SQL statements run (triggers' included) until stop_count(). */
static void start_count(struct fixture *fx, int *count)
{
	*count = 0;
	sqlite3_trace_v2(store_db(fx->st), SQLITE_TRACE_STMT, count_statement,
			 count);
}

static void stop_count(struct fixture *fx)
{
	sqlite3_trace_v2(store_db(fx->st), 0, NULL, NULL);
}

/*
 * A change re-checks only the pending edges it can let in: deleting or
 * renaming a pending edge, or deleting an edge of the graph while the
 * others wait for missing nodes, costs the same with 10 or 110 edges
 * waiting (it was one parse, two node loads and more per pending edge).
 */
static void test_pending_cost(void **state)
{
	struct fixture *fx = *state;
	int del[2], ren[2], placed[2], node_del[2];
	char id[32], src[32];

	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	node(fx, "c", "tc", "");
	for (int round = 0, made = 0; round < 2; round++) {
		for (int want = round ? 110 : 10; made < want; made++) {
			snprintf(id, sizeof(id), "w%d", made);
			snprintf(src, sizeof(src), "m%d", made);
			edge(fx, id, src, "a", "input");
		}
		edge(fx, "p", "nowhere", "a", "input");
		edge(fx, "x", "a", "b", "input");
		node(fx, "d", "td", "");
		edge(fx, "y", "d", "c", "input");
		start_count(fx, &del[round]);
		assert_int_equal(graph_delete(fx->st, fx->s.id, E, "p"), 0);
		stop_count(fx);
		start_count(fx, &ren[round]);
		assert_int_equal(graph_rename(fx->st, fx->s.id, E, "w0", "w00",
					      false, &fx->err), 0);
		stop_count(fx);
		assert_int_equal(graph_rename(fx->st, fx->s.id, E, "w00", "w0",
					      false, &fx->err), 0);
		start_count(fx, &placed[round]);
		assert_int_equal(graph_delete(fx->st, fx->s.id, E, "x"), 0);
		stop_count(fx);
		start_count(fx, &node_del[round]);
		assert_int_equal(graph_delete(fx->st, fx->s.id, N, "d"), 0);
		stop_count(fx);
	}
	assert_int_equal(del[1], del[0]);
	assert_int_equal(ren[1], ren[0]);
	assert_int_equal(placed[1], placed[0]);
	assert_int_equal(node_del[1], node_del[0]);
}

/*
 * status reads the reasons as stored, in one query however many edges
 * wait, and every change that can change a reason keeps it right: the
 * edge a duplicate names and the nodes on a cycle's path are renamed,
 * a node is deleted.
 */
static void test_pending_reasons(void **state)
{
	struct fixture *fx = *state;
	int count;
	char *got;

	chain_to_c(fx);
	edge(fx, "d", "b", "c", "input");
	edge(fx, "h", "c", "a", "input");
	node(fx, "c", "tc", "");
	start_count(fx, &count);
	got = problems(fx);
	stop_count(fx);
	assert_string_equal(got, "edges/d.json: duplicates e2\n"
			    "edges/h.json: would close a cycle: c -> a -> b -> c\n");
	free(got);
	assert_int_equal(count, 1);
	assert_int_equal(graph_rename(fx->st, fx->s.id, E, "e2", "e5", false,
				      &fx->err), 0);
	assert_problems(fx, "edges/d.json: duplicates e5\n"
			"edges/h.json: would close a cycle: c -> a -> b -> c\n");
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "b", "b2", false,
				      &fx->err), 0);
	assert_problems(fx, "edges/d.json: duplicates e5\n"
			"edges/h.json: would close a cycle: c -> a -> b2 -> c\n");
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e1"), 0);
	assert_false(is_pending(fx, "h"));
	assert_problems(fx, "edges/d.json: duplicates e5\n");
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "e5"), 0);
	assert_problems(fx, "");
}

/*
 * Edges wait within bounds (their writers are untrusted): at most
 * GRAPH_PENDING_MAX in a session (replacing one that waits takes no
 * room, one that joins the graph makes room), each at most
 * GRAPH_PENDING_SIZE bytes as its file shows it.  There was no bound.
 */
static void test_pending_bounds(void **state)
{
	struct fixture *fx = *state;
	struct sbuf big = SBUF_INIT;
	char id[32], src[32];

	for (int i = 0; i < GRAPH_PENDING_MAX; i++) {
		snprintf(id, sizeof(id), "w%d", i);
		snprintf(src, sizeof(src), "m%d", i);
		edge(fx, id, src, "a", "input");
	}
	assert_int_equal(edge_ret(fx, "more", "m", "a", "input"), -EINVAL);
	assert_string_equal(fx->err.message, "cannot wait for its nodes: 1000"
			    " edges wait already, the most a session keeps"
			    " (write their nodes, or parameters.json)");
	assert_false(exists(fx, E, "more"));
	edge(fx, "w0", "m0", "b", "input");
	node(fx, "a", "ta", "");
	node(fx, "m1", "t", "");
	assert_false(is_pending(fx, "w1"));
	edge(fx, "more", "m", "a", "input");
	assert_int_equal(edge_ret(fx, "more2", "m", "a", "input"), -EINVAL);

	assert_int_equal(sbuf_addstr(&big, "{\"source_node_id\": \"x\","
				     " \"target_node_id\": \"y\","
				     " \"target_parameter_name\": \""), 0);
	for (int i = 0; i < GRAPH_PENDING_SIZE; i++)
		assert_int_equal(sbuf_addch(&big, 'p'), 0);
	assert_int_equal(sbuf_addstr(&big, "\"}"), 0);
	assert_int_equal(commit(fx, E, "w0", big.buf), -EINVAL);
	assert_true(starts_with(fx->err.message, "too big to wait for its nodes: "));
	assert_non_null(strstr(fx->err.message, " bytes as its file would show it"
			       " (at most 4096)"));
	expect_in_doc(fx, E, "w0", "\"target_node_id\": \"b\"");
	sbuf_release(&big);
}

/* ---- times, names, tools -------------------------------------------------- */

static void test_output_name(void **state)
{
	static const struct { const char *id; int64_t s; const char *want; } cases[] = {
		{ "a1b2c3d4e5f6", 1795250759,
		  "parameters_a1b2c3d4_20261121_084559.json" },
		{ "ab", 1795250759, "parameters_ab_20261121_084559.json" },
		{ "abcdefgh", 0, "parameters_abcdefgh_19700101_000000.json" },
		/* 3-byte characters: 8 of them, not 8 bytes */
		{ "\xe4\xbc\x9a\xe8\xaf\x9d\xe4\xb8\x80\xe4\xba\x8c\xe4\xb8\x89"
		  "\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad\xe4\xb8\x83\xe5\x85\xab"
		  "\xe4\xb9\x9d",
		  1795250759,
		  "parameters_\xe4\xbc\x9a\xe8\xaf\x9d\xe4\xb8\x80\xe4\xba\x8c"
		  "\xe4\xb8\x89\xe5\x9b\x9b\xe4\xba\x94\xe5\x85\xad"
		  "_20261121_084559.json" },
		/* mixed widths: a, e-acute, a 4-byte emoji */
		{ "a\xc3\xa9\xf0\x9f\x98\x80" "bcdefgh", 1795250759,
		  "parameters_a\xc3\xa9\xf0\x9f\x98\x80" "bcdef_20261121_084559.json" },
		{ "", 1795250759, "parameters_unknown_20261121_084559.json" },
	};
	char *tz = getenv("TZ") ? strdup(getenv("TZ")) : NULL;
	struct sbuf sb = SBUF_INIT;

	(void)state;
	setenv("TZ", "UTC", 1);
	tzset();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		sbuf_reset(&sb);
		assert_int_equal(graph_output_name(cases[i].id,
						   cases[i].s * 1000000000 + 999,
						   &sb), 0);
		assert_string_equal(sb.buf, cases[i].want);
	}
	/* local time: 9 hours east */
	setenv("TZ", "JST-9", 1);
	tzset();
	sbuf_reset(&sb);
	assert_int_equal(graph_output_name("s", (int64_t)1795250759 * 1000000000,
					   &sb), 0);
	assert_string_equal(sb.buf, "parameters_s_20261121_174559.json");
	if (tz)
		setenv("TZ", tz, 1);
	else
		unsetenv("TZ");
	tzset();
	free(tz);
	sbuf_release(&sb);
}

static void test_tools(void **state)
{
	struct fixture *fx = *state;
	static const struct { const char *text, *msg; } bad[] = {
		{ "[]", "must be a JSON object" },
		{ "{\"t\": 1}", "\"t\" must be an object" },
		{ "{\"t\": {\"image\": 1}}", "\"t.image\" must be a string" },
		{ "{\"t\": {\"imgae\": \"x\"}}",
		  "\"t\": unknown field \"imgae\" (a tool has image, "
		  "images, machine_type, command, options, outputs, "
		  "resources)" },
		{ "{\"t\": {\"command\": \"run x\"}}",
		  "tools.json: \"t\": command must be a list of 1 to 256 "
		  "strings" },
		{ "{\"t\": {\"command\": [\"x\", \"{{ a \"]}}",
		  "tools.json: \"t\": command[1]: " },
		{ "{\"t\": {\"outputs\": {\"e\": \"../e.json\"}}}",
		  "\"t\": outputs.e: \"../e.json\" leaves the job folder" },
		{ "{\"t\": {\"resources\": {\"cpus\": 0}}}",
		  "\"t\": resources.cpus must be a whole number from 1 to 4096" },
		{ "{\"t\": {\"resources\": {\"partition\": \"a b\"}}}",
		  "\"t\": resources.partition must be a partition name" },
		{ "{\"t\": {\"resources\": {\"ram\": 1}}}",
		  "\"t\": resources: unknown field \"ram\"" },
		{ "{", "line 1, column 2" },
	};
	struct graph_tools *t = NULL;
	char path[200];

	snprintf(path, sizeof(path), "%s/none.json", fx->dir);
	assert_int_equal(graph_tools_load(path, &t, &fx->err), 0);
	assert_non_null(t);
	graph_tools_free(t);
	snprintf(path, sizeof(path), "%s/tools.json", fx->dir);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[700];

		write_file(path, bad[i].text);
		ferr_clear(&fx->err);
		t = NULL;
		assert_int_equal(graph_tools_load(path, &t, &fx->err), -EINVAL);
		assert_null(t);
		ferr_format(&fx->err, line, sizeof(line));
		if (!strstr(line, bad[i].msg))
			fail_msg("%s: got '%s'", bad[i].text, line);
	}
	graph_tools_free(NULL);
}

/* 2,000 nodes in a chain, one edge at a time, then the edge that closes
 * it: each check only walks what the new edge's target reaches. */
static void test_chain(void **state)
{
	struct fixture *fx = *state;
	enum { LEN = 2000 };
	char id[32], prev[32], doc[256];
	struct graph_item *items;
	size_t n;

	for (int i = 0; i < LEN; i++) {
		snprintf(id, sizeof(id), "node-$id%d", i);
		snprintf(doc, sizeof(doc), "{\"label\": \"step_%d\"}", i);
		ok(fx, N, id, doc);
		if (i) {
			char eid[32];

			snprintf(eid, sizeof(eid), "edge-$id%d", i);
			edge(fx, eid, prev, id, "input");
		}
		memcpy(prev, id, sizeof(id));
	}
	assert_int_equal(graph_list(fx->st, fx->s.id, E, &items, &n), 0);
	assert_int_equal(n, LEN - 1);
	graph_items_free(items, n);
	assert_int_equal(edge_ret(fx, "back", "node-$id1999", "node-$id0",
				  "input"), -EINVAL);
	assert_true(starts_with(fx->err.message,
				"would close a cycle: node-$id1999 -> node-$id0 ->"
				" node-$id1 -> node-$id2 -> "));
	/* the whole chain as one document, read back the same */
	{
		char *p = params(fx), *q;

		assert_int_equal(commit_params(fx, p), 0);
		q = params(fx);
		assert_string_equal(p, q);
		free(p);
		free(q);
	}
}

/* parameters.json past GRAPH_MAX_NODES or GRAPH_MAX_EDGES is refused
 * before any of its items is looked at (these are not even valid). */
static void test_params_counts(void **state)
{
	struct fixture *fx = *state;
	struct sbuf sb = SBUF_INIT;
	char want[128];

	for (int kind = 0; kind < 2; kind++) {
		long max = kind ? GRAPH_MAX_EDGES : GRAPH_MAX_NODES;

		sbuf_reset(&sb);
		assert_int_equal(sbuf_addstr(&sb, kind ? "{\"nodes\": [],"
					     " \"edges\": [" : "{\"nodes\": ["),
				 0);
		for (long i = 0; i <= max; i++)
			assert_int_equal(sbuf_addstr(&sb, i ? ", 0" : "0"), 0);
		assert_int_equal(sbuf_addstr(&sb, kind ? "], \"meta\": {}}"
					     : "], \"edges\": [], \"meta\": {}}"),
				 0);
		assert_int_equal(commit_params(fx, sb.buf), -EINVAL);
		snprintf(want, sizeof(want),
			 "\"%s\": %ld %s: a graph holds at most %ld",
			 kind ? "edges" : "nodes", max + 1,
			 kind ? "edges" : "nodes", max);
		assert_string_equal(fx->err.message, want);
	}
	sbuf_release(&sb);
}

/*
 * The counts room_for() reads (graph_counts, kept by triggers) against
 * the rows they count, in every session; and no count outlives its
 * session.
 */
static void assert_counts_right(struct fixture *fx)
{
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM sessions s"
		" LEFT JOIN graph_counts c ON c.session = s.id"
		" WHERE coalesce(c.nodes, 0) != (SELECT count(*) FROM graph_nodes"
		" WHERE session = s.id) OR coalesce(c.edges, 0) != (SELECT"
		" count(*) FROM graph_edges WHERE session = s.id)"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_counts"
		" WHERE session NOT IN (SELECT id FROM sessions)"), 0);
}

static int64_t counted(struct fixture *fx, int64_t session, const char *col)
{
	return sql_int(fx, "SELECT coalesce((SELECT %s FROM graph_counts"
		       " WHERE session = %lld), -1)", col, (long long)session);
}

/*
 * A session's node and edge counts (drafts and pending edges too) stay
 * right through every write: drafts made and dropped, commits, refusals,
 * deletes (a node's edges with it), renames over another item,
 * parameters.json, a session deleted, and the migration from version 8
 * that fills them from the rows there.
 */
static void test_graph_counts(void **state)
{
	struct fixture *fx = *state;
	struct session_info s2;
	int64_t dseq;

	assert_int_equal(session_create(fx->st, fx->t, "sess-2", 0755, 0, 0,
					&s2, NULL), 0);
	node(fx, "a", "ta", "");
	node(fx, "b", "tb", "");
	node(fx, "c", "tc", "");
	edge(fx, "e1", "a", "b", "input");
	edge(fx, "e2", "b", "c", "input");
	edge(fx, "p1", "a", "zz", "input");	/* pending */
	assert_true(is_pending(fx, "p1"));
	assert_int_equal(graph_create_draft(fx->st, fx->s.id, N, "d", &dseq),
			 0);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 4);
	assert_int_equal(counted(fx, fx->s.id, "edges"), 3);
	assert_int_equal(counted(fx, s2.id, "nodes"), -1);
	/* refused: nothing stored, nothing counted */
	assert_int_equal(edge_ret(fx, "cyc", "c", "a", "input"), -EINVAL);
	assert_int_equal(commit(fx, N, "bad", "{\"label\": 5}"), -EINVAL);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 4);
	assert_int_equal(counted(fx, fx->s.id, "edges"), 3);
	assert_int_equal(graph_drop_draft(fx->st, N, dseq), 0);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 3);
	/* a rewrite is no new row; a rename over c takes c and its edge */
	node(fx, "a", "ta2", "");
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "b", "x", false,
				      &fx->err), 0);
	assert_int_equal(graph_rename(fx->st, fx->s.id, N, "a", "c", true,
				      &fx->err), 0);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 2);
	assert_counts_right(fx);
	assert_int_equal(graph_delete(fx->st, fx->s.id, E, "p1"), 0);
	assert_counts_right(fx);
	/* the other session's graph is its own */
	assert_int_equal(graph_commit(fx->st, fx->tools, s2.id, N, "n",
				      "{\"label\": \"t\"}", 14, &fx->err), 0);
	assert_int_equal(counted(fx, s2.id, "nodes"), 1);
	assert_int_equal(commit_params(fx, "{\"nodes\": [{\"id\": \"p\","
		" \"label\": \"t\"}, {\"id\": \"q\", \"label\": \"t\"}],"
		" \"edges\": [], \"meta\": {}}"), 0);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 2);
	assert_int_equal(counted(fx, fx->s.id, "edges"), 0);
	assert_int_equal(counted(fx, s2.id, "nodes"), 1);
	assert_counts_right(fx);
	assert_int_equal(session_delete(fx->st, fx->t, s2.id), 0);
	assert_counts_right(fx);

	/* a version 8 database: counted when it is opened */
	edge(fx, "w", "p", "nowhere", "input");
	unit_db_reopen_after(fx->path, UNIT_UNDO_V9 "PRAGMA user_version = 8;",
			     &fx->st, &fx->t);
	assert_int_equal(sql_int(fx, "PRAGMA user_version"),
			 STORE_SCHEMA_VERSION);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 2);
	assert_int_equal(counted(fx, fx->s.id, "edges"), 1);
	assert_counts_right(fx);
	node(fx, "r", "t", "");
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 3);
}

/*
 * parameters.json with the graph's ids in its order and other values
 * (the common rewrite): rows updated in place — the same seq (the files'
 * inode numbers), the counts still — and what reads back is the new
 * document; another order makes the rows anew, in the new order.
 */
static void test_parameters_rewritten_in_place(void **state)
{
	struct fixture *fx = *state;
	static const char *const docs[] = {
		"{\"nodes\": [{\"id\": \"a\", \"label\": \"one\"},"
		" {\"id\": \"b\", \"label\": \"two\"}],"
		" \"edges\": [{\"id\": \"e\", \"source_node_id\": \"a\","
		" \"source_parameter_name\": \"x\", \"target_node_id\": \"b\","
		" \"target_parameter_name\": \"input\"}], \"meta\": {}}",
		/* same ids and order, other values */
		"{\"nodes\": [{\"id\": \"a\", \"label\": \"uno\"},"
		" {\"id\": \"b\", \"label\": \"dos\"}],"
		" \"edges\": [{\"id\": \"e\", \"source_node_id\": \"b\","
		" \"source_parameter_name\": \"z\", \"target_node_id\": \"a\","
		" \"target_parameter_name\": \"input\"}], \"meta\": {}}",
		/* another order */
		"{\"nodes\": [{\"id\": \"b\", \"label\": \"dos\"},"
		" {\"id\": \"a\", \"label\": \"uno\"}],"
		" \"edges\": [{\"id\": \"e\", \"source_node_id\": \"b\","
		" \"source_parameter_name\": \"z\", \"target_node_id\": \"a\","
		" \"target_parameter_name\": \"input\"}], \"meta\": {}}",
	};
	struct graph_item a1, a2, e1, e2;
	char *doc;

	assert_int_equal(commit_params(fx, docs[0]), 0);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &a1), 0);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e", &e1), 0);
	assert_int_equal(commit_params(fx, docs[1]), 0);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &a2), 0);
	assert_int_equal(graph_find(fx->st, fx->s.id, E, "e", &e2), 0);
	assert_int_equal(a2.seq, a1.seq);
	assert_int_equal(e2.seq, e1.seq);
	expect_in_doc(fx, N, "a", "\"label\": \"uno\"");
	expect_in_doc(fx, E, "e", "\"source_node_id\": \"b\"");
	expect_in_doc(fx, E, "e", "\"source_parameter_name\": \"z\"");
	assert_counts_right(fx);
	assert_int_equal(counted(fx, fx->s.id, "nodes"), 2);
	assert_int_equal(counted(fx, fx->s.id, "edges"), 1);
	free(a2.id);
	free(e2.id);
	/* b before a now: made anew, read back in that order */
	assert_int_equal(commit_params(fx, docs[2]), 0);
	assert_int_equal(graph_find(fx->st, fx->s.id, N, "a", &a2), 0);
	assert_true(a2.seq != a1.seq);
	doc = params(fx);
	{
		const char *b = strstr(doc, "\"id\": \"b\"");
		const char *a = strstr(doc, "\"id\": \"a\"");

		assert_non_null(a);
		assert_non_null(b);
		assert_true(b < a);
	}
	assert_counts_right(fx);
	free(doc);
	free(a1.id);
	free(a2.id);
	free(e1.id);
}

static void left_out(void *ctx, const char *id, const char *why)
{
	assert_int_equal(sbuf_addf(ctx, "%s: %s\n", id, why), 0);
}

/*
 * Issue 29: a node moved to the trash and back lost its edges.  They are
 * kept with the file it left as and come back with it, named for the id
 * it comes back as; one whose id was taken meanwhile stays out, and the
 * report says why.  They go with the file.
 */
static void test_kept_edges(void **state)
{
	struct fixture *fx = *state;
	struct sbuf report = SBUF_INIT;
	struct tree_attr file;
	json_t *edges = NULL;

	node(fx, "a", "a", "");
	node(fx, "b", "b", "x");
	node(fx, "c", "c", "y");
	ok(fx, E, "ab", "{\"source_node_id\": \"a\", \"target_node_id\": \"b\","
	   " \"target_parameter_name\": \"x\"}");
	ok(fx, E, "bc", "{\"source_node_id\": \"b\", \"target_node_id\": \"c\","
	   " \"target_parameter_name\": \"y\"}");
	assert_int_equal(tree_put_file(fx->t, fx->s.uploads_ino, "b.json", "{}",
				       2, &file), 0);
	assert_int_equal(graph_keep_edges(fx->st, fx->s.id, "b",
					  (int64_t)file.ino), 0);
	assert_int_equal(graph_delete(fx->st, fx->s.id, N, "b"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges"), 0);
	/* another session finds none */
	assert_int_equal(graph_kept_edges(fx->st, fx->s.id + 1,
					  (int64_t)file.ino, "b", &edges), 0);
	assert_int_equal(json_array_size(edges), 0);
	json_decref(edges);
	/* back as b2: the edges name it */
	assert_int_equal(graph_kept_edges(fx->st, fx->s.id, (int64_t)file.ino,
					  "b2", &edges), 0);
	assert_int_equal(json_array_size(edges), 2);
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(edges, 0), "target_node_id")), "b2");
	assert_string_equal(json_string_value(json_object_get(
		json_array_get(edges, 1), "source_node_id")), "b2");
	node(fx, "b2", "b", "x");
	ok(fx, E, "bc", "{\"source_node_id\": \"a\", \"target_node_id\": \"c\","
	   " \"target_parameter_name\": \"y\"}");
	assert_int_equal(graph_restore_edges(fx->st, fx->s.id,
					     (int64_t)file.ino, edges,
					     left_out, &report), 0);
	assert_string_equal(report.buf, "bc: another edge has its name\n");
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM graph_edges WHERE"
				 " id = 'ab' AND target = 'b2' AND"
				 " pending_why IS NULL"), 1);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM kept_edges"), 0);
	json_decref(edges);
	sbuf_release(&report);
	/* kept rows go with their file */
	assert_int_equal(graph_keep_edges(fx->st, fx->s.id, "a",
					  (int64_t)file.ino), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM kept_edges"), 2);
	assert_int_equal(tree_unlink(fx->t, fx->s.uploads_ino, "b.json"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM kept_edges"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_node_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_uuid, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_unchanged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_node_keeps_fed_inputs, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_edge_document, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edge_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_edge_replace, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drafts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infer_rule, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infer_existing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_infer_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parameters_seed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parameters_render, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_parameters_refusals, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_parameters_replace, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_edge, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_cycle, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_input, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_survives, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_parameters, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_restore, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_cost, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pending_reasons, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pending_bounds, setup,
						teardown),
		cmocka_unit_test(test_output_name),
		cmocka_unit_test_setup_teardown(test_tools, setup, teardown),
		cmocka_unit_test_setup_teardown(test_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_params_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_parameters_rewritten_in_place,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_graph_counts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_kept_edges, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
