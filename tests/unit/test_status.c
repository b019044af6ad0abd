/*
 * Unit tests for status: the document behind `status` and `status.json`
 * from a real store (a session, a bound skill written to a temp dir, the
 * job graph, rounds), and its text.  Expected documents are written here
 * as Python's json.dumps(obj, indent=2) writes them.
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

#include "lib/fjson.h"
#include "graph/graph.h"
#include "session/roundstore.h"
#include "status.h"
#include "unit.h"

/* a first round, and one that goes on from it */
#define FIRST_ROUND "{\"phenomenon\": \"P\", \"hypothesis\": \"H\"," \
	" \"model\": \"M\", \"experiment\": \"E\", \"observation\": \"O\"}"
#define NEXT_ROUND "{\"inference\": \"I\", \"hypothesis\": \"H2\"," \
	" \"model\": \"M2\", \"experiment\": \"E2\", \"observation\": \"O2\"}"

struct fixture {
	char dir[64];
	char db[128];
	char skills[128];
	struct store *st;
	struct tree *t;
	struct skill_registry *reg;
	struct session_info s;
};

/* skill "one": a required parameter "n" */
static void mk_skill(const char *skills)
{
	unit_put(skills, "one/SKILL.md", "# one\n");
	unit_put(skills, "one/assets/runner.json",
		 "{\"id\": \"one\", \"engines\": [\"gemini\"],"
		 " \"entrypoint\": {\"prompts\": {\"gemini\": \"P.\\n\"}},"
		 " \"schemas\": {\"parameter\": \"assets/parameter.json\"}}");
	unit_put(skills, "one/assets/parameter.json",
		 "{\"type\": \"object\", \"properties\": {"
		 "\"n\": {\"type\": \"integer\"}}, \"required\": [\"n\"]}");
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct ferr err = FERR_INIT;
	const char *dirs[1];

	if (!fx)
		return -1;
	*state = fx;
	if (unit_db_open("status", fx->dir, fx->db, &fx->st, &fx->t) < 0)
		return -1;
	snprintf(fx->skills, sizeof(fx->skills), "%s/skills", fx->dir);
	mk_skill(fx->skills);
	dirs[0] = fx->skills;
	if (skill_registry_new(&fx->reg, dirs, 1) < 0 ||
	    session_create(fx->st, fx->t, "s1", 0755, 1000, 1000, &fx->s,
			   &err) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	skill_registry_free(fx->reg);
	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

/* status.json and status as the files read, and the files' mtime */
static void render(struct fixture *fx, char **json, char **text,
		   int64_t *mtime_ns)
{
	struct binding_ctx c = {
		.st = fx->st, .tree = fx->t, .skills = fx->reg, .s = &fx->s,
		.session_path = "/mnt/flow/s1",
	};
	struct sbuf dumped = SBUF_INIT, out = SBUF_INIT;
	json_t *doc;

	assert_int_equal(session_get(fx->st, fx->s.id, &fx->s), 0);
	assert_int_equal(status_doc(&c, &doc, mtime_ns), 0);
	assert_int_equal(fjson_dump(&dumped, doc), 0);
	assert_int_equal(status_text(doc, &out), 0);
	json_decref(doc);
	*json = sbuf_detach(&dumped, NULL);
	*text = sbuf_detach(&out, NULL);
}

static void expect(struct fixture *fx, const char *json, const char *text)
{
	char *j, *t;
	int64_t m;

	render(fx, &j, &t, &m);
	assert_string_equal(j, json);
	assert_string_equal(t, text);
	free(j);
	free(t);
}

static int64_t mtime_of(struct fixture *fx)
{
	char *j, *t;
	int64_t m;

	render(fx, &j, &t, &m);
	free(j);
	free(t);
	return m;
}

static const char READY_JSON[] = "{\n"
	"  \"ready\": true,\n"
	"  \"problems\": [],\n"
	"  \"notes\": [],\n"
	"  \"run\": null,\n"
	"  \"fetches\": [],\n"
	"  \"graph\": null,\n"
	"  \"snapshots\": [],\n"
	"  \"fork_of\": null\n"
	"}";

/* A session with nothing bound and no graph: ready, and a note says there
 * is nothing to do (issue 29). */
static const char EMPTY_JSON[] = "{\n"
	"  \"ready\": true,\n"
	"  \"problems\": [],\n"
	"  \"notes\": [\n"
	"    \"nothing to do yet: no skill is bound (session.json) and the"
	" job graph is empty (nodes/)\"\n"
	"  ],\n"
	"  \"run\": null,\n"
	"  \"fetches\": [],\n"
	"  \"graph\": null,\n"
	"  \"snapshots\": [],\n"
	"  \"fork_of\": null\n"
	"}";

static void test_a_new_session_is_ready(void **state)
{
	struct fixture *fx = *state;

	expect(fx, EMPTY_JSON, "ready\n");
}

/* The binding's problems, then the rounds' and the job graph's, in that
 * order; "ready" goes. */
static void test_problems_of_every_part(void **state)
{
	struct fixture *fx = *state;
	static const char session_doc[] = "{\"skill\": \"one\"}";
	static const char edge[] = "{\"source_node_id\": \"a\","
		" \"target_node_id\": \"b\", \"target_parameter_name\": \"x\"}";

	struct ferr err = FERR_INIT;

	assert_int_equal(session_commit_json(fx->st, &fx->s, fx->reg,
					     session_doc, strlen(session_doc),
					     &err), 0);
	assert_int_equal(graph_commit(fx->st, NULL, fx->s.id, GRAPH_EDGE, "e1",
				      edge, strlen(edge), &err), 0);
	assert_int_equal(roundstore_put(fx->st, fx->s.id, 1, FIRST_ROUND,
					strlen(FIRST_ROUND), &err), 0);
	assert_int_equal(roundstore_put(fx->st, fx->s.id, 3, NEXT_ROUND,
					strlen(NEXT_ROUND), &err), 0);
	expect(fx, "{\n"
	       "  \"ready\": false,\n"
	       "  \"problems\": [\n"
	       "    \"missing required parameters: n\",\n"
	       "    \"rounds/2.json is missing: rounds are numbered from 1"
	       " without gaps (rounds/3.json exists)\",\n"
	       "    \"edges/e1.json: waits for its source node \\\"a\\\" and its"
	       " target node \\\"b\\\", which do not exist\"\n"
	       "  ],\n"
	       "  \"notes\": [],\n"
	       "  \"run\": null,\n"
	       "  \"fetches\": [],\n"
	       "  \"graph\": null,\n"
	       "  \"snapshots\": [],\n"
	       "  \"fork_of\": null\n"
	       "}",
	       "missing required parameters: n\n"
	       "rounds/2.json is missing: rounds are numbered from 1 without"
	       " gaps (rounds/3.json exists)\n"
	       "edges/e1.json: waits for its source node \"a\" and its target"
	       " node \"b\", which do not exist\n");
}

/* What status shows of runs and fetches: only what is going on or
 * waiting (the fetches going on first), and a failed fetch as a problem
 * (status_doc puts it there). */
static void test_text_of_runs_and_fetches(void **state)
{
	json_t *doc = json_pack(
		"{sbs[s]s[]s{ssssss}s[{ssssssss}{ssssssss}{ssssssss}"
		"{ssssssss}]}",
		"ready", 0, "problems", "fetch uploads/a.csv: failed: HTTP 404",
		"notes", "run", "state", "running", "message", "asking the"
		" engine", "time", "2026-11-25T17:40:02Z", "fetches",
		"path", "uploads/a.csv", "state", "failed", "message",
		"HTTP 404", "time", "2026-11-25T17:39:58Z",
		"path", "uploads/a2.csv", "state", "queued", "message", "",
		"time", "2026-11-25T17:39:58Z",
		"path", "uploads/b.csv", "state", "fetching", "message",
		"3.0 MiB", "time", "2026-11-25T17:39:59Z",
		"path", "uploads/c.csv", "state", "done", "message", "",
		"time", "2026-11-25T17:39:57Z");
	struct sbuf out = SBUF_INIT;

	(void)state;
	assert_non_null(doc);
	assert_int_equal(status_text(doc, &out), 0);
	assert_string_equal(out.buf, "fetch uploads/a.csv: failed: HTTP 404\n"
			    "run: running: asking the engine\n"
			    "fetch uploads/b.csv: fetching: 3.0 MiB\n"
			    "fetch uploads/a2.csv: queued\n");
	json_decref(doc);
	sbuf_release(&out);
	/* a run that ended is history: not in status */
	doc = json_pack("{sbs[]s[]s{ssssss}s[]}", "ready", 1, "problems",
			"notes", "run", "state", "failed", "message", "down",
			"time", "2026-11-25T17:40:02Z", "fetches");
	assert_non_null(doc);
	assert_int_equal(status_text(doc, &out), 0);
	assert_string_equal(out.buf, "ready\n");
	json_decref(doc);
	sbuf_release(&out);
}

/* The files' mtime moves with the job graph and the rounds too. */
static void test_mtime_follows_graph_and_rounds(void **state)
{
	struct fixture *fx = *state;
	static const char node[] = "{\"label\": \"n\","
		" \"input_parameters\": []}";

	struct ferr err = FERR_INIT;
	int64_t m = mtime_of(fx), g;

	assert_int_equal(graph_commit(fx->st, NULL, fx->s.id, GRAPH_NODE, "n1",
				      node, strlen(node), &err), 0);
	g = mtime_of(fx);
	assert_true(g > m);
	assert_int_equal(g, fx->s.graph_mtime_ns);
	assert_int_equal(roundstore_put(fx->st, fx->s.id, 1, FIRST_ROUND,
					strlen(FIRST_ROUND), &err), 0);
	assert_true(mtime_of(fx) > g);
	assert_int_equal(mtime_of(fx), fx->s.rounds_mtime_ns);
	expect(fx, READY_JSON, "ready\n");
}

/* status_version() of the fixture's session now. */
static void version_now(struct fixture *fx, int64_t v[4])
{
	struct binding_ctx c = {
		.st = fx->st, .tree = fx->t, .skills = fx->reg, .s = &fx->s,
		.session_path = "/mnt/flow/s1",
	};

	assert_int_equal(session_get(fx->st, fx->s.id, &fx->s), 0);
	assert_int_equal(status_version(&c, v), 0);
}

/* The version moved (`moved`) or not since *last; *last becomes now's. */
static void expect_version(struct fixture *fx, int64_t last[4], bool moved)
{
	int64_t now[4];

	version_now(fx, now);
	if (moved)
		assert_memory_not_equal(now, last, sizeof(now));
	else
		assert_memory_equal(now, last, sizeof(now));
	memcpy(last, now, sizeof(now));
}

/* Each input of status moves its version (so a cache of it renders
 * again); reading does not. */
static void test_version(void **state)
{
	struct fixture *fx = *state;
	static const char bind[] = "{\"skill\": \"one\"}";
	struct session_info other;
	struct ferr err = FERR_INIT;
	struct tree_attr up;
	int64_t v[4];

	version_now(fx, v);
	expect_version(fx, v, false);
	/* rendering status reads, and writes nothing */
	expect(fx, EMPTY_JSON, "ready\n");
	expect_version(fx, v, false);
	/* session.json */
	assert_int_equal(session_commit_json(fx->st, &fx->s, fx->reg, bind,
					     strlen(bind), &err), 0);
	expect_version(fx, v, true);
	/* an upload stored */
	assert_int_equal(tree_put_file(fx->t, fx->s.uploads_ino, "a.csv",
				       "x", 1, &up), 0);
	expect_version(fx, v, true);
	/* a write gathered in memory, not stored yet */
	assert_int_equal(tree_open(fx->t, up.ino), 0);
	assert_int_equal(tree_write(fx->t, up.ino, "yz", 2, 1), 0);
	expect_version(fx, v, true);
	expect_version(fx, v, false);
	assert_int_equal(tree_release(fx->t, up.ino), 0);
	expect_version(fx, v, true);
	/* the run's state (a write with no session time of its own) */
	assert_int_equal(store_exec(fx->st, "UPDATE sessions SET run_state ="
				    " 'running', run_message = 'asking',"
				    " run_ns = 1"), 0);
	expect_version(fx, v, true);
	/* a write anywhere else (another session) moves it too */
	assert_int_equal(session_create(fx->st, fx->t, "s2", 0755, 1000, 1000,
					&other, &err), 0);
	expect_version(fx, v, true);
	/* the session renamed (its name is a row: what status names with it
	 * follows) */
	assert_int_equal(store_run(fx->st, "UPDATE sessions SET name = 'r'"
				   " WHERE id = ?1", STORE_INT(fx->s.id)), 0);
	expect_version(fx, v, true);
	/* the skills read again */
	assert_int_equal(skill_registry_scan(fx->reg), 0);
	expect_version(fx, v, true);
	expect_version(fx, v, false);
	/* a commit by another connection (another process, the writer's
	 * own connection) */
	{
		struct store *beside;

		assert_int_equal(store_open_beside(fx->st, &beside, &err), 0);
		assert_int_equal(store_exec(beside, "UPDATE sessions SET"
					    " run_message = 'more'"), 0);
		expect_version(fx, v, true);
		store_close(beside);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_a_new_session_is_ready,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_problems_of_every_part,
						setup, teardown),
		cmocka_unit_test(test_text_of_runs_and_fetches),
		cmocka_unit_test_setup_teardown(
			test_mtime_follows_graph_and_rounds, setup, teardown),
		cmocka_unit_test_setup_teardown(test_version, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
