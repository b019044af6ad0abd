/*
 * Unit tests for roundstore: rounds/<n>.json names, storing rounds with
 * the gap and placement rules of core/roundstore.h, deletions in any
 * order and what loading then reports, drafts, rename, mtimes, and the
 * session's ownership of its rounds.
 *
 * Expected documents are written out by hand in the layout of Python's
 * json.dumps(indent=2, ensure_ascii=False); expected messages from the
 * contracts in roundstore.h and rounds.h.
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

#include "session/roundstore.h"
#include "formats/rounds.h"
#include "session/session.h"
#include "store/store.h"
#include "store/tree.h"
#include "unit.h"

#define FIRST "{\"phenomenon\": \"P\", \"hypothesis\": \"H\", \"model\": \"M\"," \
	" \"experiment\": \"E\", \"observation\": \"O\"}"
#define FIRST_NO_OBSERVATION "{\"phenomenon\": \"P\", \"hypothesis\": \"H\"," \
	" \"model\": \"M\", \"experiment\": \"E\"}"
#define CONTINUING "{\"inference\": \"I\", \"hypothesis\": \"H2\"," \
	" \"model\": \"M2\", \"experiment\": \"E2\", \"observation\": \"O2\"}"
#define CONCLUDING "{\"inference\": \"I\", \"conclusion\": \"C\"}"

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
	struct tree *t;
	struct session_info s;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || unit_db_open("roundstore", fx->dir, fx->path, &fx->st,
				&fx->t) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	if (session_create(fx->st, fx->t, "run", 0755, 0, 0, &fx->s,
			   NULL) < 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

static int put(struct fixture *fx, int64_t n, const char *text,
	       struct ferr *err)
{
	return roundstore_put(fx->st, fx->s.id, n, text, strlen(text), err);
}

static void put_ok(struct fixture *fx, int64_t n, const char *text)
{
	struct ferr err = FERR_INIT;

	if (put(fx, n, text, &err) < 0)
		fail_msg("rounds/%lld.json refused: %s", (long long)n,
			 err.message);
}

static void refused(struct fixture *fx, int64_t n, const char *text,
		    const char *message)
{
	struct ferr err = FERR_INIT;

	assert_int_equal(put(fx, n, text, &err), -EINVAL);
	assert_string_equal(err.message, message);
	/* the file at fault is recorded, and the message starts with it */
	assert_true(err.path[0] != '\0');
	assert_memory_equal(err.message, err.path, strlen(err.path));
}

static size_t count(struct fixture *fx)
{
	struct roundstore_item *items;
	size_t n;

	assert_int_equal(roundstore_list(fx->st, fx->s.id, &items, &n), 0);
	free(items);
	return n;
}

static void test_names(void **state)
{
	static const char *const bad[] = {
		"0.json", "01.json", "-1.json", "+1.json", "1001.json",
		"99999999999999999999.json", "1.JSON", "1.json~", "1.jsonx",
		"x.json", ".json", "1", "", " 1.json", "1 .json", NULL,
	};
	int64_t n = -1;

	(void)state;
	assert_true(roundstore_number("1.json", &n));
	assert_int_equal(n, 1);
	assert_true(roundstore_number("1000.json", &n));
	assert_int_equal(n, 1000);
	assert_true(roundstore_number("42.json", &n));
	assert_int_equal(n, 42);
	for (size_t i = 0; bad[i]; i++) {
		n = -1;
		if (roundstore_number(bad[i], &n))
			fail_msg("'%s' taken as round %lld", bad[i],
				 (long long)n);
		assert_int_equal(n, -1);
	}
}

static void test_stored_in_the_json_layout(void **state)
{
	struct fixture *fx = *state;
	struct roundstore_item *items;
	struct sbuf doc = SBUF_INIT;
	int64_t mtime = 0;
	size_t n;
	static const char want[] =
		"{\n  \"phenomenon\": \"P\",\n  \"hypothesis\": \"H\",\n"
		"  \"model\": \"M\",\n  \"experiment\": \"E\",\n"
		"  \"observation\": \"O\"\n}";

	put_ok(fx, 1, "{\"phenomenon\":\"P\",\"hypothesis\":\"H\",\"model\":"
	       "\"M\",\"experiment\":\"E\",\"observation\":\"O\"}");
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 1, &doc, &mtime), 0);
	assert_string_equal(doc.buf, want);
	assert_true(mtime > 0);
	assert_int_equal(roundstore_list(fx->st, fx->s.id, &items, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(items[0].number, 1);
	assert_int_equal(items[0].size, strlen(want));
	assert_int_equal(items[0].mtime_ns, mtime);
	free(items);
	sbuf_reset(&doc);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 2, &doc, NULL),
			 -ENOENT);
	sbuf_release(&doc);
}

/*
 * Rounds come in any order (a copy of a session comes back so): a round
 * above a gap is stored, the gap is the set's problem until it is
 * filled, and filling it checks the round and its neighbours.
 */
static void test_rounds_in_any_order(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	json_t **rounds;
	size_t n;

	put_ok(fx, 3, CONCLUDING);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, &err), -EINVAL);
	assert_string_equal(err.message, "rounds/1.json is missing: rounds are"
			    " numbered from 1 without gaps (rounds/3.json"
			    " exists)");
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, NULL),
			 -EINVAL);
	put_ok(fx, 1, FIRST);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), -EINVAL);
	/* round 2 is checked as followed (it needs its observation) */
	refused(fx, 2, "{\"inference\": \"I\", \"hypothesis\": \"H\","
		" \"model\": \"M\", \"experiment\": \"E\"}",
		"rounds/2.json: a round followed by another needs the"
		" \"observation\" of its experiment");
	put_ok(fx, 2, CONTINUING);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), 0);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, NULL),
			 0);
	assert_int_equal(n, 3);
	roundstore_free(rounds, n);
	refused(fx, 1001, FIRST, "rounds/1001.json: rounds are numbered 1 to"
		" 1000");
	assert_int_equal(count(fx), 3);
}

/* A concluding round that a later one follows across a gap: the gap
 * cannot be filled, so the set never reads as a whole. */
static void test_gap_after_a_conclusion_stays(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;

	put_ok(fx, 1, FIRST);
	put_ok(fx, 2, CONCLUDING);
	put_ok(fx, 4, CONCLUDING);
	assert_int_equal(put(fx, 3, CONTINUING, &err), -EINVAL);
	assert_string_equal(err.path, "rounds/2.json");
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), -EINVAL);
}

static void test_placement_rules_over_the_whole_set(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;

	/* round 1 alone may lack its observation; once a round follows,
	 * the inference is drawn from it */
	put_ok(fx, 1, FIRST_NO_OBSERVATION);
	assert_int_equal(put(fx, 2, CONCLUDING, &err), -EINVAL);
	assert_string_equal(err.path, "rounds/1.json");
	assert_non_null(strstr(err.message, "observation"));
	assert_int_equal(count(fx), 1);
	put_ok(fx, 1, FIRST);
	/* a later round needs an inference */
	assert_int_equal(put(fx, 2, FIRST, &err), -EINVAL);
	assert_string_equal(err.path, "rounds/2.json");
	put_ok(fx, 2, CONCLUDING);
	/* nothing may follow a conclusion */
	assert_int_equal(put(fx, 3, CONTINUING, &err), -EINVAL);
	assert_non_null(strstr(err.message, "conclude"));
	assert_int_equal(count(fx), 2);
	/* not JSON: line and column */
	assert_int_equal(put(fx, 2, "{\n  \"inference\": \n}", &err), -EINVAL);
	assert_int_equal(err.line, 3);
	assert_int_equal(count(fx), 2);
}

static void test_deletions_in_any_order(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct sbuf problem = SBUF_INIT, content = SBUF_INIT;
	json_t **rounds;
	size_t n;

	put_ok(fx, 1, FIRST);
	put_ok(fx, 2, CONTINUING);
	put_ok(fx, 3, CONCLUDING);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, &err),
			 0);
	assert_int_equal(n, 3);
	assert_true(rounds_concluded((const json_t *const *)rounds, n));
	assert_int_equal(rounds_render_content((const json_t *const *)rounds,
					       n, &content), 0);
	assert_non_null(strstr(content.buf, "<Conclusion>\nC\n</Conclusion>"));
	roundstore_free(rounds, n);
	assert_int_equal(roundstore_problem(fx->st, fx->s.id, &problem), 0);
	assert_int_equal(problem.len, 0);

	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 2), 0);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 2), -ENOENT);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, &err),
			 -EINVAL);
	assert_null(rounds);
	assert_string_equal(err.message, "rounds/2.json is missing: rounds are"
			    " numbered from 1 without gaps (rounds/3.json"
			    " exists)");
	assert_int_equal(roundstore_problem(fx->st, fx->s.id, &problem), 0);
	assert_string_equal(problem.buf, "rounds/2.json is missing: rounds are"
			    " numbered from 1 without gaps (rounds/3.json"
			    " exists)\n");
	/* filling the gap checks the run it closes, conclusion included */
	put_ok(fx, 2, CONTINUING);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, &err),
			 0);
	assert_int_equal(n, 3);
	roundstore_free(rounds, n);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 1), 0);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 3), 0);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 2), 0);
	assert_int_equal(count(fx), 0);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, &err),
			 0);
	assert_int_equal(n, 0);
	roundstore_free(rounds, n);
	sbuf_release(&problem);
	sbuf_release(&content);
}

static void test_same_bytes_keep_the_mtime(void **state)
{
	struct fixture *fx = *state;
	struct sbuf doc = SBUF_INIT;
	int64_t before, after;

	put_ok(fx, 1, FIRST);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 1, &doc, &before), 0);
	put_ok(fx, 1, doc.buf);
	sbuf_reset(&doc);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 1, &doc, &after), 0);
	assert_int_equal(before, after);
	sbuf_release(&doc);
}

static void test_rounds_belong_to_the_session(void **state)
{
	struct fixture *fx = *state;
	bool has = false;

	assert_int_equal(session_has_data(fx->st, fx->t, &fx->s, &has), 0);
	assert_false(has);
	put_ok(fx, 1, FIRST);
	assert_int_equal(session_has_data(fx->st, fx->t, &fx->s, &has), 0);
	assert_true(has);
	assert_int_equal(session_delete(fx->st, fx->t, fx->s.id), 0);
	assert_int_equal(unit_sql_int(store_db(fx->st),
				      "SELECT count(*) FROM rounds"), 0);
}

static void test_drafts_are_not_rounds(void **state)
{
	struct fixture *fx = *state;
	struct roundstore_item item, *items;
	struct sbuf doc = SBUF_INIT;
	json_t **rounds;
	size_t n;
	bool has = true;

	put_ok(fx, 1, FIRST);
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 1), -EEXIST);
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 3), 0);
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 3), -EEXIST);
	/* listed, empty, but no round: no gap, not loaded, not user data */
	assert_int_equal(roundstore_list(fx->st, fx->s.id, &items, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(items[1].number, 3);
	assert_true(items[1].draft);
	assert_int_equal(items[1].size, 0);
	assert_false(items[0].draft);
	free(items);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 3, &item), 0);
	assert_true(item.draft);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 3, &doc, NULL), 0);
	assert_int_equal(doc.len, 0);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), 0);
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, NULL),
			 0);
	assert_int_equal(n, 1);
	roundstore_free(rounds, n);
	/* round 3 comes: a draft of 2 fills no gap */
	put_ok(fx, 3, CONCLUDING);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), -EINVAL);
	put_ok(fx, 2, CONTINUING);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 3, &item), 0);
	assert_false(item.draft);
	/* dropping a completed draft leaves the round */
	assert_int_equal(roundstore_drop_draft(fx->st, fx->s.id, 3), 0);
	assert_int_equal(count(fx), 3);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 3), 0);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 2), 0);
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 1), 0);
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 5), 0);
	assert_int_equal(session_has_data(fx->st, fx->t, &fx->s, &has), 0);
	assert_false(has);
	assert_int_equal(roundstore_drop_all_drafts(fx->st), 0);
	assert_int_equal(count(fx), 0);
	sbuf_release(&doc);
}

static void test_rename(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct roundstore_item item;
	struct sbuf doc = SBUF_INIT;

	put_ok(fx, 1, FIRST);
	put_ok(fx, 2, CONTINUING);
	/* moving the last round up leaves a gap, as a deletion would */
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 2, 3, false, &err),
			 0);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 2, &item), -ENOENT);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 3, &item), 0);
	assert_int_equal(roundstore_gap(fx->st, fx->s.id, NULL), -EINVAL);
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 3, 2, false, &err),
			 0);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 4, 5, false, &err),
			 -ENOENT);
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 1, 2, false, &err),
			 -EEXIST);
	/* onto round 1: the placement rules of round 1 apply */
	ferr_clear(&err);
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 2, 1, true, &err),
			 -EINVAL);
	assert_string_equal(err.message, "rounds/1.json: the first round"
			    " needs \"phenomenon\"");
	assert_int_equal(count(fx), 2);
	/* the conclusion moved over round 2: the run now ends there */
	put_ok(fx, 3, CONCLUDING);
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 3, 2, true, &err),
			 0);
	assert_int_equal(count(fx), 2);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 2, &doc, NULL), 0);
	assert_string_equal(doc.buf, "{\n  \"inference\": \"I\",\n"
			    "  \"conclusion\": \"C\"\n}");
	/* a draft just moves */
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 7), 0);
	assert_int_equal(roundstore_rename(fx->st, fx->s.id, 7, 9, false, &err),
			 0);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 9, &item), 0);
	assert_true(item.draft);
	assert_int_equal(roundstore_stat(fx->st, fx->s.id, 7, &item), -ENOENT);
	sbuf_release(&doc);
}

static void test_mtime_follows_every_change(void **state)
{
	struct fixture *fx = *state;
	int64_t t0, t1, t2, t3;

	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t0), 0);
	assert_int_equal(t0, 0);
	put_ok(fx, 1, FIRST);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t1), 0);
	assert_true(t1 > t0);
	/* a draft is no change to the rounds */
	assert_int_equal(roundstore_create_draft(fx->st, fx->s.id, 2), 0);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t2), 0);
	assert_int_equal(t2, t1);
	put_ok(fx, 1, FIRST);	/* the same document: no change either */
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t2), 0);
	assert_int_equal(t2, t1);
	/* a deletion leaves no row, yet the time moves */
	assert_int_equal(roundstore_delete(fx->st, fx->s.id, 1), 0);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t3), 0);
	assert_true(t3 > t1);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id + 1, &t3), -ENOENT);
}

/*
 * A schema-5 database (rounds as documents, no rounds/ folder) is moved
 * to version 6 when opened: the rounds keep their documents and times,
 * gain their tags' texts, and the session its rounds/ folder.  The v5
 * shape is made by undoing v6 by hand, as the v5 migration wrote it.
 */
static void test_migration_from_version_5(void **state)
{
	struct fixture *fx = *state;
	struct sbuf doc = SBUF_INIT, content = SBUF_INIT;
	struct session_info s;
	struct tree_attr a;
	json_t **rounds;
	int64_t mtime, t5;
	size_t n;

	put_ok(fx, 1, FIRST);
	put_ok(fx, 2, CONCLUDING);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 1, &doc, &mtime), 0);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t5), 0);
	unit_db_reopen_after(fx->path,
		"DELETE FROM inodes WHERE ino = (SELECT rounds_ino FROM sessions);"
		"ALTER TABLE sessions DROP COLUMN rounds_ino;"
		"ALTER TABLE sessions DROP COLUMN rounds_mtime_ns;"
		/* and what later versions added */
		"DROP TABLE engine_log;"
		"DROP TABLE fetches;"
		"DROP TABLE mount_log;"
		UNIT_UNDO_V9
		"DROP INDEX inodes_trash;"
		"DROP INDEX graph_edges_pending;"
		"ALTER TABLE graph_edges DROP COLUMN pending_why;"
		"UPDATE inodes SET tag = 0 WHERE tag = 64;"
		"ALTER TABLE sessions DROP COLUMN run_state;"
		"ALTER TABLE sessions DROP COLUMN run_message;"
		"ALTER TABLE sessions DROP COLUMN run_ns;"
		"CREATE TABLE rounds_v5 ("
		"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
		"  n INTEGER NOT NULL CHECK (n BETWEEN 1 AND 1000),"
		"  doc TEXT NOT NULL, mtime_ns INTEGER NOT NULL,"
		"  PRIMARY KEY (session, n)) WITHOUT ROWID;"
		"INSERT INTO rounds_v5 SELECT session, n, doc, mtime_ns FROM rounds;"
		"DROP TABLE rounds;"
		"ALTER TABLE rounds_v5 RENAME TO rounds;"
		"PRAGMA user_version = 5;", &fx->st, &fx->t);
	assert_int_equal(unit_sql_int(store_db(fx->st), "PRAGMA user_version"),
			 STORE_SCHEMA_VERSION);
	sbuf_reset(&doc);
	assert_int_equal(roundstore_get(fx->st, fx->s.id, 1, &doc, &t5), 0);
	assert_int_equal(t5, mtime);
	assert_string_equal(doc.buf, "{\n  \"phenomenon\": \"P\",\n"
			    "  \"hypothesis\": \"H\",\n  \"model\": \"M\",\n"
			    "  \"experiment\": \"E\",\n"
			    "  \"observation\": \"O\"\n}");
	/* the transcript reads the tag columns the migration filled */
	assert_int_equal(roundstore_load(fx->st, fx->s.id, &rounds, &n, NULL),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(rounds_render_content((const json_t *const *)rounds,
					       n, &content), 0);
	assert_string_equal(content.buf,
			    "<Phenomenon>\nP\n</Phenomenon>\n\n"
			    "<Hypothesis>\nH\n</Hypothesis>\n\n<Model>\nM\n</Model>"
			    "\n\n<Experiment>\nE\n</Experiment>\n\n"
			    "<Observation>\nO\n</Observation>\n\n"
			    "<Inference>\nI\n</Inference>\n\n"
			    "<Conclusion>\nC\n</Conclusion>\n\n"
			    "<Observation>\nO\n</Observation>");
	roundstore_free(rounds, n);
	assert_int_equal(roundstore_mtime(fx->st, fx->s.id, &t5), 0);
	assert_true(t5 >= mtime);
	assert_int_equal(session_get(fx->st, fx->s.id, &s), 0);
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "rounds", &a), 0);
	assert_int_equal(a.ino, s.rounds_ino);
	assert_int_equal(a.tag, SESSION_ROUNDS);
	/* 2 + the six folders, jobs/ (v10) among them */
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "jobs", &a), 0);
	assert_int_equal(a.ino, s.jobs_ino);
	assert_int_equal(a.tag, SESSION_JOBS);
	assert_int_equal(tree_getattr(fx->t, s.root_ino, &a), 0);
	assert_int_equal(a.nlink, 8);
	/* v8 tags the session's root as one, and the session is listed */
	assert_true(a.session_root);
	assert_int_equal(a.tag, TREE_TAG_SESSION_ROOT);
	assert_false(s.trashed);
	/* and it works on: a third round is refused after the conclusion */
	refused(fx, 3, CONTINUING, "rounds/2.json: only the last round may"
		" conclude; rounds/3.json follows it");
	sbuf_release(&doc);
	sbuf_release(&content);
}

/* A round of `fill` bytes of observation (round 1, or a later one). */
static char *big_round(int64_t n, size_t fill)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(sbuf_addstr(&sb, n == 1
			 ? "{\"phenomenon\": \"P\", \"hypothesis\": \"H\", \"model\": \"M\", \"experiment\": \"E\", \"observation\": \""
			 : "{\"inference\": \"I\", \"hypothesis\": \"H\", \"model\": \"M\", \"experiment\": \"E\", \"observation\": \""), 0);
	for (size_t i = 0; i < fill; i++)
		assert_int_equal(sbuf_addch(&sb, 'x'), 0);
	assert_int_equal(sbuf_addstr(&sb, "\"}"), 0);
	return sbuf_detach(&sb, NULL);
}

/* A round past ROUNDSTORE_ROUND_MAX, and rounds past
 * ROUNDSTORE_TOTAL_MAX together, are refused; a replace counts once. */
static void test_size_limits(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	const size_t fill = ROUNDSTORE_ROUND_MAX - 200;
	int64_t n;
	char *doc;

	doc = big_round(1, ROUNDSTORE_ROUND_MAX);
	assert_int_equal(put(fx, 1, doc, &err), -EINVAL);
	assert_non_null(strstr(err.message, "a round holds at most 1048576"));
	free(doc);
	for (n = 1; n <= ROUNDSTORE_TOTAL_MAX / ROUNDSTORE_ROUND_MAX; n++) {
		doc = big_round(n, fill);
		put_ok(fx, n, doc);
		free(doc);
	}
	doc = big_round(n, fill);
	assert_int_equal(put(fx, n, doc, &err), -EINVAL);
	assert_non_null(strstr(err.message,
			       "a session's rounds hold at most 16777216 together"));
	free(doc);
	doc = big_round(n - 1, fill);
	put_ok(fx, n - 1, doc);
	free(doc);
	assert_int_equal(count(fx), (size_t)(n - 1));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_stored_in_the_json_layout,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_rounds_in_any_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_gap_after_a_conclusion_stays, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_placement_rules_over_the_whole_set, setup,
			teardown),
		cmocka_unit_test_setup_teardown(test_deletions_in_any_order,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_same_bytes_keep_the_mtime,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_rounds_belong_to_the_session, setup, teardown),
		cmocka_unit_test_setup_teardown(test_drafts_are_not_rounds,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_rename, setup, teardown),
		cmocka_unit_test_setup_teardown(test_size_limits, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_mtime_follows_every_change, setup, teardown),
		cmocka_unit_test_setup_teardown(test_migration_from_version_5,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
