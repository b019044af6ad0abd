/*
 * Unit tests for core/graph/plan (and gexport_file): the graph as it would
 * run, read from the database — graph_document() is parameters.json as
 * values, graph_plan() refuses what cannot run in the order plan.h gives,
 * and an export of a graph that cannot run is a file that says why.
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

#include "graph/gexport.h"
#include "graph/graph.h"
#include "graph/plan.h"
#include "graph/tools.h"
#include "lib/fjson.h"
#include "session/session.h"
#include "unit.h"

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
	struct tree *t;
	struct session_info s;
	struct graph_tools *tools;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	char tools[256];

	if (!fx || unit_db_open("plan", fx->dir, fx->path, &fx->st,
				&fx->t) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	if (session_create(fx->st, fx->t, "my run", 0755, 0, 0, &fx->s,
			   NULL) < 0)
		return -1;
	unit_put(fx->dir, "tools.json", "{\"relax\": {\"command\": [\"relax\","
		 " \"{{ structure }}\"], \"outputs\": {\"energy\": \"e.json\"}}}");
	snprintf(tools, sizeof(tools), "%s/tools.json", fx->dir);
	return graph_tools_load(tools, &fx->tools, NULL);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	graph_tools_free(fx->tools);
	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

static void store_graph(struct fixture *fx, const char *text)
{
	struct ferr err = FERR_INIT;
	json_t *doc = unit_json(text);
	char *s = json_dumps(doc, 0);

	if (graph_commit_parameters(fx->st, fx->tools, fx->s.id, s, strlen(s),
				    &err) < 0)
		fail_msg("not stored: %s", err.message);
	free(s);
	json_decref(doc);
}

#define TWO_NODES "{'nodes': [{'id': 'a', 'label': 'relax'," \
	" 'input_parameters': [{'name': 'structure', 'value': 'x.cif'}]}," \
	" {'id': 'b', 'label': 'relax', 'input_parameters':" \
	" [{'name': 'structure', 'value': ''}]}], 'edges': [{'id': 'e'," \
	" 'source_node_id': 'a', 'source_parameter_name': 'energy'," \
	" 'target_node_id': 'b', 'target_parameter_name': 'structure'}]," \
	" 'meta': {}}"

/* graph_document() is what parameters.json holds, as values. */
static void test_document_is_parameters_json(void **state)
{
	struct fixture *fx = *state;
	struct sbuf text = SBUF_INIT;
	json_t *doc = NULL, *parsed = NULL;

	store_graph(fx, TWO_NODES);
	assert_int_equal(graph_document(fx->st, fx->s.id, &doc), 0);
	assert_int_equal(graph_render_parameters(fx->st, fx->s.id, &text), 0);
	assert_int_equal(fjson_parse(&parsed, text.buf, text.len, NULL), 0);
	assert_true(json_equal(doc, parsed));
	assert_int_equal(json_array_size(json_object_get(doc, "edges")), 1);
	json_decref(doc);
	json_decref(parsed);
	sbuf_release(&text);
	/* no such session */
	assert_int_equal(graph_document(fx->st, fx->s.id + 100, &doc), -ENOENT);
	assert_null(doc);
}

static int plan(struct fixture *fx, const char *tools_error, bool whole,
		struct jobspec_plan *p, struct ferr *err)
{
	struct plan_source src = { .session = fx->s.id, .tools = fx->tools,
				   .tools_error = tools_error,
				   .whole = whole };
	struct jobspec_options jo = { .session = fx->s.name,
				      .run_dir = "/w/run-1",
				      .tools_path = "tools.json" };

	ferr_clear(err);
	return graph_plan(fx->st, &src, &jo, p, err);
}

static void test_plan(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct jobspec_plan p;
	int64_t nodes = -1;

	/* no nodes: nothing said (an export is no file, a submit says so) */
	assert_int_equal(graph_node_count(fx->st, fx->s.id, &nodes), 0);
	assert_int_equal(nodes, 0);
	assert_int_equal(plan(fx, NULL, true, &p, &err), -ENOENT);
	assert_string_equal(err.message, "");
	/* ... even with an unusable tool map */
	assert_int_equal(plan(fx, "tools.json: broken", true, &p, &err),
			 -ENOENT);
	store_graph(fx, TWO_NODES);
	assert_int_equal(graph_node_count(fx->st, fx->s.id, &nodes), 0);
	assert_int_equal(nodes, 2);
	assert_int_equal(plan(fx, "tools.json: broken", false, &p, &err),
			 -EINVAL);
	assert_string_equal(err.message,
			    "the tool map cannot be used: tools.json: broken");
	/* the edge hands a's output file to b */
	assert_int_equal(plan(fx, "", true, &p, &err), 0);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.jobs[0].node_id, "a");
	assert_string_equal(p.jobs[1].argv[1], "/w/run-1/a/e.json");
	jobspec_plan_release(&p);
	/* an edge that waits for a node: refused whole, left out otherwise */
	{
		struct ferr e = FERR_INIT;
		const char *edge = "{\"source_node_id\": \"a\", \"source_"
			"parameter_name\": \"energy\", \"target_node_id\": "
			"\"later\", \"target_parameter_name\": \"structure\"}";

		assert_int_equal(graph_commit(fx->st, fx->tools, fx->s.id,
					      GRAPH_EDGE, "w", edge,
					      strlen(edge), &e), 0);
	}
	assert_int_equal(plan(fx, NULL, true, &p, &err), -EINVAL);
	assert_non_null(strstr(err.message, "the graph is not whole: "));
	assert_non_null(strstr(err.message, "later"));
	assert_int_equal(plan(fx, NULL, false, &p, &err), 0);
	assert_int_equal(p.n, 2);
	jobspec_plan_release(&p);
}

static void test_session_dir(void **state)
{
	char *dir = NULL;

	(void)state;
	assert_int_equal(graph_session_dir("/w", "my run/../x", 7, "run-2",
					   &dir), 0);
	assert_string_equal(dir, "/w/my_run_.._x-7/run-2");
	free(dir);
}

static char *export(struct fixture *fx, enum gexport_kind kind,
		    const char *tools_error, int *ret)
{
	struct gexport_source src = {
		.graph = { .session = fx->s.id, .tools = fx->tools,
			   .tools_error = tools_error, .whole = true },
		.session_name = fx->s.name, .work_dir = "/w",
		.tools_path = "tools.json",
	};
	struct sbuf out = SBUF_INIT;

	*ret = gexport_file(fx->st, kind, &src, &out);
	return sbuf_detach(&out, NULL);
}

static void test_export_files(void **state)
{
	struct fixture *fx = *state;
	char *text;
	int ret;

	text = export(fx, GEXPORT_ARGO, NULL, &ret);
	assert_int_equal(ret, -ENOENT);
	free(text);
	store_graph(fx, TWO_NODES);
	text = export(fx, GEXPORT_ARGO, NULL, &ret);
	assert_int_equal(ret, 0);
	assert_non_null(strstr(text, "kind: \"Workflow\""));
	free(text);
	text = export(fx, GEXPORT_SLURM, NULL, &ret);
	assert_int_equal(ret, 0);
	/* the jobs go in the session's export folder of the work folder */
	assert_non_null(strstr(text, "/w/my_run-1/export/a"));
	free(text);
	/* cannot run: a file that says why, on one line */
	text = export(fx, GEXPORT_ARGO, "bad\nmap", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "# flowfs cannot export this job graph for"
			    " Argo Workflows: the tool map cannot be used:"
			    " bad map\n");
	free(text);
	text = export(fx, GEXPORT_SLURM, "bad", &ret);
	assert_int_equal(ret, 0);
	assert_string_equal(text, "#!/bin/bash\necho 'submit.slurm.sh: flowfs"
			    " cannot submit this job graph: the tool map cannot"
			    " be used: bad' >&2\nexit 1\n");
	free(text);
	/* a pending edge does not keep an export from being made */
	{
		struct ferr e = FERR_INIT;
		const char *edge = "{\"source_node_id\": \"a\", \"source_"
			"parameter_name\": \"energy\", \"target_node_id\": "
			"\"later\", \"target_parameter_name\": \"structure\"}";

		assert_int_equal(graph_commit(fx->st, fx->tools, fx->s.id,
					      GRAPH_EDGE, "w", edge,
					      strlen(edge), &e), 0);
	}
	text = export(fx, GEXPORT_ARGO, NULL, &ret);
	assert_int_equal(ret, 0);
	assert_null(strstr(text, "cannot export"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_document_is_parameters_json,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_plan, setup, teardown),
		cmocka_unit_test(test_session_dir),
		cmocka_unit_test_setup_teardown(test_export_files, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
