/*
 * Unit tests for session: create/find/list, session.json rendering and
 * committing, rename, delete, uploads/ renewal and the status log.
 *
 * The expected session.json texts were printed by Python 3.11:
 *   json.dumps({"id": ..., "created": ..., "title": ...}, indent=2,
 *              ensure_ascii=False)
 * for the same values, and the expected error positions are those of
 * Python's json.loads for the same text; created times by
 *   datetime.fromtimestamp(ts, timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ').
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/fclock.h"
#include "session/session.h"
#include "formats/context.h"
#include "unit.h"

/* 1795250759 s is 2026-11-21T08:45:59Z (Python, see above) */
#define CREATED_NS ((int64_t)1795250759 * 1000000000 + 123456789)
#define CREATED "2026-11-21T08:45:59Z"

#define UNI_NAME "\xc3\x9cn\xc3\xaf \xe2\x82\xac\xf0\x9f\x98\x80"

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
	struct tree *t;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx || unit_db_open("session", fx->dir, fx->path, &fx->st,
				&fx->t) < 0) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unit_db_close(fx->dir, fx->st, fx->t);
	free(fx);
	return 0;
}

/* the database's rows, counted */
#define sql_int(fx, ...) unit_sql_int(store_db((fx)->st), __VA_ARGS__)

static struct session_info mk(struct fixture *fx, const char *name)
{
	struct session_info s;
	struct ferr err = FERR_INIT;

	if (session_create(fx->st, fx->t, name, 0755, 1000, 1000, &s, &err) < 0)
		fail_msg("create %s: %s", name, err.message);
	return s;
}

/* rename(2) of session folder `from` at the root, as fs/ops.c does it. */
static int rename_(struct fixture *fx, const char *from, const char *to,
		   bool noreplace, struct ferr *err)
{
	struct session_info src;
	int ret = session_find(fx->st, from, &src);

	return ret < 0 ? ret : session_move(fx->st, fx->t, &src, 0, to,
					    noreplace, err);
}

/* A session with a fixed creation time, as stored. */
static struct session_info mk_at(struct fixture *fx, const char *name)
{
	struct session_info s = mk(fx, name);
	char sql[200];

	snprintf(sql, sizeof(sql), "UPDATE sessions SET created_ns = %lld"
		 " WHERE id = %lld", (long long)CREATED_NS, (long long)s.id);
	assert_int_equal(store_exec(fx->st, sql), 0);
	assert_int_equal(session_get(fx->st, s.id, &s), 0);
	return s;
}

static char *render(struct fixture *fx, const struct session_info *s)
{
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(session_render_json(fx->st, s, &sb), 0);
	return sbuf_detach(&sb, NULL);
}

static void test_create(void **state)
{
	struct fixture *fx = *state;
	struct session_info s, f;
	struct tree_attr a;
	struct ferr err = FERR_INIT;
	int64_t before = fclock_now_ns(), n = -1;

	assert_int_equal(session_create(fx->st, fx->t, "run-1", 0750, 1234,
					5678, &s, &err), 0);
	assert_true(s.id > 0);
	assert_string_equal(s.name, "run-1");
	assert_true(s.created_ns >= before);
	assert_true(s.created_ns <= fclock_now_ns());
	assert_int_equal(tree_getattr(fx->t, s.root_ino, &a), 0);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.mode & 07777, 0750);
	assert_int_equal(a.uid, 1234);
	assert_int_equal(a.gid, 5678);
	/* 2 + uploads/, output/, nodes/, edges/, rounds/, jobs/ */
	assert_int_equal(a.nlink, 8);
	assert_true(a.session_root);
	assert_int_equal(a.session, s.id);
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "uploads", &a), 0);
	assert_int_equal(a.ino, s.uploads_ino);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.uid, 1234);
	assert_int_equal(a.gid, 5678);
	assert_false(a.session_root);

	assert_int_equal(session_find(fx->st, "run-1", &f), 0);
	assert_int_equal(f.id, s.id);
	assert_int_equal(f.root_ino, s.root_ino);
	assert_int_equal(f.uploads_ino, s.uploads_ino);
	assert_int_equal(f.created_ns, s.created_ns);
	assert_int_equal(session_get(fx->st, s.id, &f), 0);
	assert_string_equal(f.name, "run-1");
	assert_int_equal(session_find(fx->st, "run-2", &f), -ENOENT);
	assert_int_equal(session_get(fx->st, s.id + 100, &f), -ENOENT);
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 1);

	/* taken */
	assert_int_equal(session_create(fx->st, fx->t, "run-1", 0755, 0, 0,
					&f, NULL), -EEXIST);
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 1);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	/* the failed create left no rows behind: the root, its 6 folders */
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes"), 7);
}

static void test_create_names(void **state)
{
	struct fixture *fx = *state;
	static const struct { const char *name; int err; } bad[] = {
		{ "", -EINVAL }, { ".", -EINVAL }, { "..", -EINVAL },
		{ ".hidden", -EINVAL }, { ".flowfs", -EINVAL },
		{ "bad\xff", -EINVAL },
		{ "\xc0\xaf", -EINVAL }, { "\xed\xa0\x80", -EINVAL },
		{ "\xf4\x90\x80\x80", -EINVAL }, { "cut\xe2\x82", -EINVAL },
	};
	struct session_info s;
	struct ferr err;
	char longname[300];
	int64_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ferr_clear(&err);
		if (session_create(fx->st, fx->t, bad[i].name, 0755, 0, 0, &s,
				   &err) != bad[i].err)
			fail_msg("bad[%zu] not refused", i);
		assert_true(err.message[0] != '\0');
	}
	memset(longname, 'x', 256);
	longname[256] = '\0';
	assert_int_equal(session_create(fx->st, fx->t, longname, 0755, 0, 0,
					&s, NULL), -ENAMETOOLONG);
	longname[255] = '\0';
	assert_int_equal(session_create(fx->st, fx->t, longname, 0755, 0, 0,
					&s, NULL), 0);
	assert_string_equal(s.name, longname);
	assert_int_equal(session_find(fx->st, longname, &s), 0);
	assert_string_equal(s.name, longname);
	mk(fx, UNI_NAME);
	assert_int_equal(session_find(fx->st, UNI_NAME, &s), 0);
	/* control characters are allowed (fname.h) */
	mk(fx, "tab\there\x01");
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 3);
}

static void test_list(void **state)
{
	struct fixture *fx = *state;
	struct session_list l;
	static const char *const order[] = { "C", "a", "b", UNI_NAME };

	assert_int_equal(session_list(fx->st, &l), 0);
	assert_int_equal(l.n, 0);
	session_list_free(&l);
	mk(fx, "b");
	mk(fx, UNI_NAME);
	mk(fx, "a");
	mk(fx, "C");
	assert_int_equal(session_list(fx->st, &l), 0);
	assert_int_equal(l.n, 4);
	for (size_t i = 0; i < 4; i++) {
		struct session_info s;

		assert_string_equal(l.items[i].name, order[i]);
		assert_int_equal(session_find(fx->st, order[i], &s), 0);
		assert_int_equal(s.id, l.items[i].id);
		assert_int_equal(s.root_ino, l.items[i].root_ino);
	}
	session_list_free(&l);
	assert_null(l.items);
	assert_int_equal(l.n, 0);
}

static void test_render_json(void **state)
{
	struct fixture *fx = *state;
	static const char expect1[] =
		"{\n  \"id\": \"run-1\",\n  \"created\": \"2026-11-21T08:45:59Z\","
		"\n  \"skill\": null,\n  \"engine\": null,"
		"\n  \"title\": \"\"\n}";
	static const char title_src[] =
		"{\"title\": \"line1\\nline2 \\\"q\\\" \\\\ tab\\t c\\u0001"
		" n\\u0000 \xc3\xa9\xf0\x9f\x98\x80\\u007f/\"}";
	static const char expect2[] =
		"{\n  \"id\": \"" UNI_NAME "\",\n"
		"  \"created\": \"2026-11-21T08:45:59Z\",\n"
		"  \"skill\": null,\n  \"engine\": null,\n"
		"  \"title\": \"line1\\nline2 \\\"q\\\" \\\\ tab\\t c\\u0001"
		" n\\u0000 \xc3\xa9\xf0\x9f\x98\x80\x7f/\"\n}";
	struct session_info s = mk_at(fx, "run-1");
	struct session_info u = mk_at(fx, UNI_NAME);
	struct ferr err = FERR_INIT;
	char *doc;

	doc = render(fx, &s);
	assert_string_equal(doc, expect1);
	free(doc);
	if (session_commit_json(fx->st, &u, NULL, title_src, strlen(title_src),
				&err) < 0)
		fail_msg("commit: %s", err.message);
	doc = render(fx, &u);
	assert_string_equal(doc, expect2);
	free(doc);
	/* the rendered document is accepted back as it is */
	assert_int_equal(session_commit_json(fx->st, &u, NULL, expect2,
					     strlen(expect2), &err), 0);
	doc = render(fx, &u);
	assert_string_equal(doc, expect2);
	free(doc);
	/* and survives a reopen */
	tree_free(fx->t);
	store_close(fx->st);
	assert_int_equal(store_open(&fx->st, fx->path, NULL), 0);
	assert_int_equal(tree_new(&fx->t, fx->st), 0);
	assert_int_equal(session_find(fx->st, UNI_NAME, &u), 0);
	doc = render(fx, &u);
	assert_string_equal(doc, expect2);
	free(doc);
}

static void test_commit_accepts(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk_at(fx, "run-1");
	static const struct { const char *text; const char *title_json; } ok[] = {
		{ "{\"title\": \"hello\"}", "\"hello\"" },
		{ "{\"id\": \"run-1\", \"created\": \"" CREATED "\","
		  " \"title\": \"x\"}", "\"x\"" },
		{ "  {\n\"created\": \"" CREATED "\",\"title\":\"\\u00e9\"}\n\n",
		  "\"\xc3\xa9\"" },
		{ "{\"title\": \"\xf0\x9f\x98\x80 \\ud83d\\ude00\"}",
		  "\"\xf0\x9f\x98\x80 \xf0\x9f\x98\x80\"" },
		{ "{\"title\": \"a\", \"title\": \"last wins\"}", "\"last wins\"" },
		{ "{}", "\"\"" },
		{ "{\"id\": \"run-1\"}", "\"\"" },
	};
	struct ferr err;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char expect[512], *doc;

		ferr_clear(&err);
		if (session_commit_json(fx->st, &s, NULL, ok[i].text,
					strlen(ok[i].text), &err) != 0)
			fail_msg("ok[%zu] refused: %s", i, err.message);
		snprintf(expect, sizeof(expect), "{\n  \"id\": \"run-1\",\n"
			 "  \"created\": \"" CREATED "\",\n  \"skill\": null,\n"
			 "  \"engine\": null,\n  \"title\": %s\n}",
			 ok[i].title_json);
		doc = render(fx, &s);
		assert_string_equal(doc, expect);
		free(doc);
	}
}

static void test_commit_doc_mtime(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk_at(fx, "run-1"), after;
	static const char doc[] = "{\"title\": \"t\"}";

	assert_int_equal(store_exec(fx->st, "UPDATE sessions SET"
				    " doc_mtime_ns = 1000"), 0);
	assert_int_equal(session_commit_json(fx->st, &s, NULL, doc, strlen(doc),
					     NULL), 0);
	assert_int_equal(session_get(fx->st, s.id, &after), 0);
	assert_true(after.doc_mtime_ns > 1000);
	/* the same content again is no change */
	assert_int_equal(store_exec(fx->st, "UPDATE sessions SET"
				    " doc_mtime_ns = 1000"), 0);
	assert_int_equal(session_commit_json(fx->st, &s, NULL, doc, strlen(doc),
					     NULL), 0);
	assert_int_equal(session_get(fx->st, s.id, &after), 0);
	assert_int_equal(after.doc_mtime_ns, 1000);
}

/* A copy of another session's session.json (another id, another time)
 * is taken: what it binds and names is stored, id and created stay. */
static void test_commit_keeps_id_and_created(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk_at(fx, "run-1"), after;
	static const char copy[] = "{\"id\": \"other\", \"created\":"
		" \"2000-01-01T00:00:00Z\", \"title\": \"copied\"}";
	char *doc;

	assert_int_equal(session_commit_json(fx->st, &s, NULL, copy,
					     strlen(copy), NULL), 0);
	assert_int_equal(session_get(fx->st, s.id, &after), 0);
	doc = render(fx, &after);
	assert_non_null(strstr(doc, "\"id\": \"run-1\""));
	assert_non_null(strstr(doc, "\"created\": \"" CREATED "\""));
	assert_non_null(strstr(doc, "\"title\": \"copied\""));
	free(doc);
}

static void test_commit_refuses(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *text;
		size_t len;	/* 0: strlen */
		int line, column;	/* expected position, 0: not checked */
		const char *needle;	/* in the message, NULL: not checked */
	} bad[] = {
		{ "{\n  \"title\": \"x\",\n  oops\n}", 0, 3, 3, NULL },
		{ "{\"title\": \"x\"", 0, 1, 14, NULL },
		{ "", 0, 0, 0, NULL },
		{ "   ", 0, 0, 0, NULL },
		{ "[]", 0, 0, 0, "object" },
		{ "\"title\"", 0, 0, 0, "object" },
		{ "42", 0, 0, 0, "object" },
		{ "null", 0, 0, 0, "object" },
		{ "{\"title\": \"x\", \"extra\": 1}", 0, 0, 0, "extra" },
		{ "{\"Title\": \"x\"}", 0, 0, 0, "Title" },
		{ "{\"id\": 5}", 0, 0, 0, "id" },
		{ "{\"id\": null}", 0, 0, 0, "id" },
		{ "{\"created\": 1795250759}", 0, 0, 0, "created" },
		{ "{\"title\": 5}", 0, 0, 0, "title" },
		{ "{\"title\": null}", 0, 0, 0, "title" },
		{ "{\"title\": [\"a\"]}", 0, 0, 0, "title" },
		{ "{\"title\": {}}", 0, 0, 0, "title" },
		{ "{\"title\": true}", 0, 0, 0, "title" },
		{ "{\"title\": \"bad \xff\"}", 0, 0, 0, NULL },
		{ "{\"title\": \"raw\0nul\"}", 19, 0, 0, NULL },
		{ "{\"title\": \"x\"} trailing", 0, 0, 0, NULL },
		{ "{\"title\": \"\\ud800\"}", 0, 0, 0, NULL },
		{ "{\"title\": NaN}", 0, 0, 0, NULL },
	};
	struct session_info s = mk_at(fx, "run-1"), after;
	static const char good[] = "{\"title\": \"kept\"}";
	char before[1024], *doc;
	struct ferr err;
	int64_t mtime;

	assert_int_equal(session_commit_json(fx->st, &s, NULL, good, strlen(good),
					     NULL), 0);
	assert_int_equal(session_get(fx->st, s.id, &after), 0);
	mtime = after.doc_mtime_ns;
	doc = render(fx, &s);
	snprintf(before, sizeof(before), "%s", doc);
	free(doc);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t len = bad[i].len ? bad[i].len : strlen(bad[i].text);
		int ret;

		ferr_clear(&err);
		ret = session_commit_json(fx->st, &s, NULL, bad[i].text, len, &err);
		if (ret != -EINVAL)
			fail_msg("bad[%zu] gave %d, not -EINVAL", i, ret);
		if (!err.message[0])
			fail_msg("bad[%zu]: no message", i);
		if (bad[i].line && (err.line != bad[i].line ||
				    err.column != bad[i].column))
			fail_msg("bad[%zu]: at %d:%d, want %d:%d (%s)", i,
				 err.line, err.column, bad[i].line,
				 bad[i].column, err.message);
		if (bad[i].needle && !strstr(err.message, bad[i].needle))
			fail_msg("bad[%zu]: message '%s' lacks '%s'", i,
				 err.message, bad[i].needle);
		doc = render(fx, &s);
		ret = strcmp(doc, before);
		free(doc);
		if (ret)
			fail_msg("bad[%zu] changed the document", i);
	}
	assert_int_equal(session_get(fx->st, s.id, &after), 0);
	assert_int_equal(after.doc_mtime_ns, mtime);
	{
		char buf[600];

		ferr_clear(&err);
		session_commit_json(fx->st, &s, NULL, bad[0].text,
				    strlen(bad[0].text), &err);
		ferr_format(&err, buf, sizeof(buf));
		assert_int_equal(strncmp(buf, "line 3, column 3: ", 18), 0);
	}
}

/* The files/ folder of a new trash, .Trash-1000, as gio makes it. */
static struct tree_attr trash_files(struct fixture *fx)
{
	struct tree_attr tr, files;

	assert_int_equal(tree_trash_create(fx->t, ".Trash-1000", 0700, 1000,
					   1000, &tr), 0);
	assert_int_equal(tree_create(fx->t, tr.ino, "files", S_IFDIR | 0700,
				     1000, 1000, NULL, &files), 0);
	return files;
}

/*
 * A session moved into a trash folder keeps all it holds and its id, is
 * no longer listed or found at the root (its name is free there), and is
 * named by its folder's path; moved back, it is the same session again;
 * deleted from the trash, its folder's link count follows.
 */
static void test_trash_and_back(void **state)
{
	struct fixture *fx = *state;
	struct session_info a = mk(fx, "a"), s, again;
	struct tree_attr files, f;
	struct session_list list;
	struct ferr err = FERR_INIT;
	int64_t n = -1;

	assert_int_equal(tree_create(fx->t, a.uploads_ino, "f", S_IFREG | 0644,
				     1000, 1000, NULL, &f), 0);
	files = trash_files(fx);
	assert_int_equal(session_move(fx->st, fx->t, &a, files.ino, "a", false,
				      &err), 0);
	assert_int_equal(session_find(fx->st, "a", &s), -ENOENT);
	assert_int_equal(session_get(fx->st, a.id, &s), 0);
	assert_true(s.trashed);
	assert_string_equal(s.name, ".Trash-1000/files/a");
	assert_int_equal(s.uploads_ino, a.uploads_ino);
	assert_int_equal(session_list(fx->st, &list), 0);
	assert_int_equal(list.n, 0);
	session_list_free(&list);
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 0);
	/* its name is free at the root; its place in the trash is not */
	again = mk(fx, "a");
	assert_int_equal(session_move(fx->st, fx->t, &again, files.ino, "a",
				      true, &err), -EEXIST);
	err = (struct ferr)FERR_INIT;
	assert_int_equal(session_move(fx->st, fx->t, &again, files.ino, "a",
				      false, &err), -EEXIST);
	assert_string_equal(err.message, "a is taken in the trash");
	/* back, onto a session that holds nothing: that one goes */
	assert_int_equal(session_move(fx->st, fx->t, &s, 0, "a", false, &err),
			 0);
	assert_int_equal(session_get(fx->st, again.id, &again), -ENOENT);
	assert_int_equal(session_find(fx->st, "a", &s), 0);
	assert_int_equal(s.id, a.id);
	assert_false(s.trashed);
	assert_int_equal(tree_lookup(fx->t, s.uploads_ino, "f", &f), 0);
	assert_int_equal(tree_lookup(fx->t, files.ino, "a", &f), -ENOENT);
	/* deleted while in the trash: the trash folder's links follow */
	assert_int_equal(session_move(fx->st, fx->t, &s, files.ino, "a.2", false,
				      &err), 0);
	assert_int_equal(tree_getattr(fx->t, files.ino, &files), 0);
	assert_int_equal(files.nlink, 3);
	assert_int_equal(session_delete(fx->st, fx->t, a.id), 0);
	assert_int_equal(tree_getattr(fx->t, files.ino, &files), 0);
	assert_int_equal(files.nlink, 2);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " session = %lld", (long long)a.id), 0);
}

/* uploads/ into a trash: its files go with it, as a plain folder, and
 * the session has a new, empty uploads/ at once. */
static void test_trash_folder(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s");
	uint64_t old = s.uploads_ino;
	struct tree_attr files, a;

	assert_int_equal(tree_create(fx->t, s.uploads_ino, "f", S_IFREG | 0644,
				     1000, 1000, NULL, &a), 0);
	files = trash_files(fx);
	assert_int_equal(session_trash_folder(fx->st, fx->t, &s,
					      SESSION_UPLOADS, files.ino,
					      "uploads"), 0);
	assert_true(s.uploads_ino != old);
	assert_int_equal(tree_lookup(fx->t, files.ino, "uploads", &a), 0);
	assert_int_equal(a.ino, old);
	assert_int_equal(a.tag, 0);
	assert_int_equal(a.session, 0);
	assert_int_equal(tree_lookup(fx->t, old, "f", &a), 0);
	assert_int_equal(a.session, 0);
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "uploads", &a), 0);
	assert_int_equal(a.ino, s.uploads_ino);
	assert_int_equal(a.tag, SESSION_UPLOADS);
	/* a name taken in the trash: nothing moves */
	assert_int_equal(session_trash_folder(fx->st, fx->t, &s,
					      SESSION_UPLOADS, files.ino,
					      "uploads"), -EEXIST);
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "uploads", &a), 0);
	assert_int_equal(a.ino, s.uploads_ino);
}

static void test_rename(void **state)
{
	struct fixture *fx = *state;
	struct session_info a = mk(fx, "a"), b = mk(fx, "b"), c = mk(fx, "c");
	struct session_info s;
	struct tree_attr attr;
	struct ferr err = FERR_INIT;
	int64_t n;
	char *doc;

	/* contents follow the rename with their inode numbers */
	assert_int_equal(tree_create(fx->t, a.uploads_ino, "f", S_IFREG | 0644,
				     0, 0, NULL, &attr), 0);
	assert_int_equal(rename_(fx, "a", "x", false, &err), 0);
	assert_int_equal(session_find(fx->st, "a", &s), -ENOENT);
	assert_int_equal(session_find(fx->st, "x", &s), 0);
	assert_int_equal(s.id, a.id);
	assert_int_equal(s.root_ino, a.root_ino);
	assert_int_equal(s.uploads_ino, a.uploads_ino);
	assert_int_equal(s.created_ns, a.created_ns);
	assert_int_equal(tree_lookup(fx->t, s.uploads_ino, "f", &attr), 0);
	doc = render(fx, &s);
	assert_non_null(strstr(doc, "\"id\": \"x\""));
	free(doc);
	a = s;

	/* onto an empty session: it is replaced */
	assert_int_equal(rename_(fx, "x", "b", false, &err), 0);
	assert_int_equal(session_find(fx->st, "x", &s), -ENOENT);
	assert_int_equal(session_find(fx->st, "b", &s), 0);
	assert_int_equal(s.id, a.id);
	assert_int_equal(session_get(fx->st, b.id, &s), -ENOENT);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " session = %lld", (long long)b.id), 0);
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 2);

	/* onto a session with files: ENOTEMPTY; "b" has f in uploads */
	ferr_clear(&err);
	assert_int_equal(rename_(fx, "c", "b", false, &err),
			 -ENOTEMPTY);
	assert_int_equal(session_find(fx->st, "c", &s), 0);
	assert_int_equal(session_find(fx->st, "b", &s), 0);
	assert_int_equal(s.id, a.id);
	/* a scratch file in the session folder counts as data too */
	assert_int_equal(tree_unlink(fx->t, a.uploads_ino, "f"), 0);
	assert_int_equal(tree_create(fx->t, a.root_ino, "notes.txt",
				     S_IFREG | 0644, 0, 0, NULL, &attr), 0);
	assert_int_equal(rename_(fx, "c", "b", false, NULL),
			 -ENOTEMPTY);
	/* a folder in uploads too */
	assert_int_equal(tree_unlink(fx->t, a.root_ino, "notes.txt"), 0);
	assert_int_equal(tree_create(fx->t, a.uploads_ino, "d", S_IFDIR | 0755,
				     0, 0, NULL, &attr), 0);
	assert_int_equal(rename_(fx, "c", "b", false, NULL),
			 -ENOTEMPTY);
	assert_int_equal(tree_rmdir(fx->t, a.uploads_ino, "d"), 0);

	/* noreplace */
	assert_int_equal(rename_(fx, "c", "b", true, NULL),
			 -EEXIST);
	/* bad names, missing source */
	ferr_clear(&err);
	assert_int_equal(rename_(fx, "c", ".c", false, &err),
			 -EINVAL);
	assert_true(err.message[0] != '\0');
	assert_int_equal(rename_(fx, "c", "", false, NULL),
			 -EINVAL);
	assert_int_equal(rename_(fx, "nope", "z", false, NULL),
			 -ENOENT);
	/* onto itself */
	assert_int_equal(rename_(fx, "c", "c", false, NULL), 0);
	assert_int_equal(session_find(fx->st, "c", &s), 0);
	assert_int_equal(s.id, c.id);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	/* now b is empty again: c replaces it */
	assert_int_equal(rename_(fx, "c", "b", false, NULL), 0);
	assert_int_equal(session_find(fx->st, "b", &s), 0);
	assert_int_equal(s.id, c.id);
	assert_int_equal(session_count(fx->st, &n), 0);
	assert_int_equal(n, 1);
}

/* The files in the data folder beside the database. */
static int count_data_files(struct fixture *fx)
{
	char dir[160];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(dir, sizeof(dir), "%s.d", fx->path);
	d = opendir(dir);
	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static void test_delete_cascades(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "doomed"), k = mk(fx, "kept");
	struct tree_attr a, d;
	char data[3 * 65536];
	int64_t kept_chunks;

	memset(data, 'z', sizeof(data));
	assert_int_equal(tree_create(fx->t, s.uploads_ino, "d", S_IFDIR | 0755,
				     0, 0, NULL, &d), 0);
	assert_int_equal(tree_create(fx->t, d.ino, "f", S_IFREG | 0644, 0, 0,
				     NULL, &a), 0);
	assert_int_equal(tree_open(fx->t, a.ino), 0);
	assert_int_equal(tree_write(fx->t, a.ino, data, sizeof(data), 0), 0);
	assert_int_equal(tree_release(fx->t, a.ino), 0);
	assert_int_equal(tree_create(fx->t, k.uploads_ino, "g", S_IFREG | 0644,
				     0, 0, NULL, &a), 0);
	assert_int_equal(tree_open(fx->t, a.ino), 0);
	assert_int_equal(tree_write(fx->t, a.ino, "keep", 4, 0), 0);
	assert_int_equal(tree_release(fx->t, a.ino), 0);
	assert_int_equal(session_log(fx->st, s.id, "session.json", "no"), 0);
	assert_int_equal(session_log(fx->st, k.id, "session.json", "yes"), 0);
	/* the large file's bytes are a data file beside the database */
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM contents"
				 " WHERE refs = 1"), 1);
	assert_int_equal(count_data_files(fx), 1);
	kept_chunks = sql_int(fx, "SELECT count(*) FROM chunks WHERE ino IN"
			      " (SELECT ino FROM inodes WHERE session = %lld)",
			      (long long)k.id);

	assert_int_equal(session_delete(fx->st, fx->t, s.id), 0);
	assert_int_equal(session_find(fx->st, "doomed", &s), -ENOENT);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " session = %lld", (long long)s.id), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE ino"
				 " NOT IN (SELECT ino FROM inodes)"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks"), kept_chunks);
	/* its data file goes after the commit (and not before) */
	assert_int_equal(count_data_files(fx), 1);
	assert_int_equal(tree_sweep(fx->t), 0);
	assert_int_equal(count_data_files(fx), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM contents"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM status_log WHERE"
				 " session = %lld", (long long)s.id), 0);
	assert_int_equal(tree_getattr(fx->t, s.root_ino, &a), -ENOENT);
	assert_int_equal(tree_getattr(fx->t, d.ino, &a), -ENOENT);
	/* the other session is untouched */
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM status_log WHERE"
				 " session = %lld", (long long)k.id), 1);
	assert_int_equal(tree_lookup(fx->t, k.uploads_ino, "g", &a), 0);
	assert_int_equal(a.size, 4);
	/* the name can be used again, with a new id */
	{
		struct session_info again = mk(fx, "doomed");

		assert_true(again.id != s.id);
		assert_true(again.root_ino > a.ino);
	}
}

static void test_delete_with_open_file(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s");
	struct tree_attr a;

	assert_int_equal(tree_create(fx->t, s.uploads_ino, "f", S_IFREG | 0644,
				     0, 0, NULL, &a), 0);
	assert_int_equal(tree_open(fx->t, a.ino), 0);
	assert_int_equal(tree_write(fx->t, a.ino, "data", 4, 0), 0);
	assert_int_equal(session_delete(fx->st, fx->t, s.id), 0);
	/* like a file unlinked while open: the descriptor still works
	 * (a flush once inserted chunks for the deleted row and close()
	 * got -EEXIST from the foreign key) */
	assert_int_equal(tree_write(fx->t, a.ino, "more", 4, 4), 0);
	assert_int_equal(tree_flush(fx->t, a.ino, false), 0);
	/* the release of the last handle neither fails loudly nor
	 * resurrects rows */
	tree_release(fx->t, a.ino);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks"), 0);
}

static void test_has_data(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s");
	struct tree_attr a;
	bool has = true;

	assert_int_equal(session_has_data(fx->st, fx->t, &s, &has), 0);
	assert_false(has);
	assert_int_equal(tree_create(fx->t, s.root_ino, "4913", S_IFREG | 0644,
				     0, 0, NULL, &a), 0);
	assert_int_equal(session_has_data(fx->st, fx->t, &s, &has), 0);
	assert_true(has);
	assert_int_equal(tree_unlink(fx->t, s.root_ino, "4913"), 0);
	assert_int_equal(session_has_data(fx->st, fx->t, &s, &has), 0);
	assert_false(has);
}

static void test_renew_uploads(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s"), f;
	struct tree_attr a;
	uint64_t old = s.uploads_ino;

	/* root: 2 + uploads/, output/, nodes/, edges/, rounds/, jobs/ */
	assert_int_equal(tree_getattr(fx->t, s.root_ino, &a), 0);
	assert_int_equal(a.nlink, 8);
	assert_int_equal(session_renew_folder(fx->st, fx->t, &s, SESSION_UPLOADS), 0);
	assert_true(s.uploads_ino != old);
	assert_int_equal(tree_lookup(fx->t, s.root_ino, "uploads", &a), 0);
	assert_int_equal(a.ino, s.uploads_ino);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.nlink, 2);
	assert_int_equal(tree_getattr(fx->t, s.root_ino, &a), 0);
	assert_int_equal(a.nlink, 8);
	assert_int_equal(session_get(fx->st, s.id, &f), 0);
	assert_int_equal(f.uploads_ino, s.uploads_ino);
	/* the new uploads/ is usable */
	assert_int_equal(tree_create(fx->t, s.uploads_ino, "x", S_IFREG | 0644,
				     0, 0, NULL, &a), 0);
	/* a renew of a folder that is not empty changes nothing */
	old = s.uploads_ino;
	assert_int_equal(session_renew_folder(fx->st, fx->t, &s, SESSION_UPLOADS),
			 -ENOTEMPTY);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	assert_int_equal(session_get(fx->st, s.id, &f), 0);
	assert_int_equal(f.uploads_ino, old);
	assert_int_equal(tree_lookup(fx->t, old, "x", &a), 0);
}

static bool is_time(const char *p)
{
	/* YYYY-MM-DDTHH:MM:SSZ */
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";

	for (size_t i = 0; i < sizeof(shape) - 1; i++) {
		if (shape[i] == 'd' ? (p[i] < '0' || p[i] > '9') : p[i] != shape[i])
			return false;
	}
	return true;
}

static void test_log(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s"), o = mk(fx, "other");
	struct sbuf sb = SBUF_INIT;
	int64_t mtime = -1;
	const char *p;
	char msg[64], tail[128], big[SESSION_LOG_MESSAGE_MAX + 64];

	assert_int_equal(session_render_log(fx->st, s.id, &sb, &mtime), 0);
	assert_string_equal(sb.buf, "");
	assert_int_equal(mtime, 0);
	sbuf_release(&sb);

	for (int i = 0; i < SESSION_LOG_KEEP + 10; i++) {
		snprintf(msg, sizeof(msg), "line 1, column %d: m%d", i + 1, i);
		assert_int_equal(session_log(fx->st, s.id, "session.json", msg), 0);
		if (i % 100 == 0)
			assert_int_equal(session_log(fx->st, o.id, "x", "o"), 0);
	}
	assert_int_equal(session_log(fx->st, s.id, "uploads/a b",
				     "two\nlines\r!"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM status_log WHERE"
				 " session = %lld", (long long)s.id),
			 SESSION_LOG_KEEP);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM status_log WHERE"
				 " session = %lld", (long long)o.id), 6);
	assert_int_equal(session_render_log(fx->st, s.id, &sb, &mtime), 0);
	assert_true(mtime >= s.created_ns);
	assert_true(mtime <= fclock_now_ns());
	p = sb.buf;
	/* the last SESSION_LOG_KEEP, oldest first, then the two-line one */
	for (int i = 11; i <= SESSION_LOG_KEEP + 10; i++) {
		const char *nl = strchr(p, '\n');

		assert_non_null(nl);
		if (!is_time(p))
			fail_msg("no time at line for m%d: %.40s", i, p);
		if (i < SESSION_LOG_KEEP + 10)
			snprintf(tail, sizeof(tail),
				 " session.json: line 1, column %d: m%d", i + 1, i);
		else
			snprintf(tail, sizeof(tail), " uploads/a b: two\\nlines\\r!");
		if ((size_t)(nl - p) != 20 + strlen(tail) ||
		    strncmp(p + 20, tail, strlen(tail)))
			fail_msg("line for m%d: '%.*s', want '<time>%s'", i,
				 (int)(nl - p), p, tail);
		p = nl + 1;
	}
	assert_string_equal(p, "");
	sbuf_release(&sb);
	assert_int_equal(session_render_log(fx->st, o.id, &sb, &mtime), 0);
	assert_int_equal(sb.len, 6 * (20 + strlen(" x: o\n")));
	sbuf_release(&sb);

	/* the mount root's log is its own; long messages are cut at a
	 * character, never inside one */
	memset(big, 'a', sizeof(big));
	memcpy(big + SESSION_LOG_MESSAGE_MAX - 1, "\xc3\xa9", 2);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(session_log(fx->st, 0, ".hidden", big), 0);
	assert_int_equal(session_render_log(fx->st, 0, &sb, &mtime), 0);
	assert_true(is_time(sb.buf));
	assert_int_equal(strncmp(sb.buf + 20, " .hidden: aaa", 13), 0);
	assert_int_equal(sb.len, 20 + strlen(" .hidden: ") +
			 SESSION_LOG_MESSAGE_MAX - 1 + 1);
	sbuf_release(&sb);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM mount_log"), 1);

	/* a terminal's escapes and tabs, as a model or an archive may name a
	 * file, are JSON escapes: the echo to stderr and syslog shows this
	 * text */
	p = session_log_text("x\x1b[2Jy\tz\x7f\xc3\xa9\nready");
	assert_non_null(p);
	assert_string_equal(p, "x\\u001b[2Jy\\tz\\u007f\xc3\xa9\\nready");
	free((char *)p);
	/* cut before an escape that does not fit, never inside it */
	memset(big, 'a', sizeof(big));
	big[SESSION_LOG_MESSAGE_MAX - 3] = '\x1b';
	big[sizeof(big) - 1] = '\0';
	p = session_log_text(big);
	assert_non_null(p);
	assert_int_equal(strlen(p), SESSION_LOG_MESSAGE_MAX - 3);
	free((char *)p);
}

/* A line that is rewritten while it is the session's last (issue 29: a
 * copy's dropped writes, one line). */
static void test_log_rewrite_last(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "s"), o = mk(fx, "other");
	struct sbuf sb = SBUF_INIT;
	int64_t row = 0, mtime;

	assert_int_equal(session_log_row(fx->st, s.id, "a", "one", &row), 0);
	assert_true(row > 0);
	/* another session's line does not count */
	assert_int_equal(session_log(fx->st, o.id, "x", "o"), 0);
	assert_int_equal(session_log_rewrite_last(fx->st, s.id, row, "a, b",
						  "two\n"), 1);
	assert_int_equal(session_render_log(fx->st, s.id, &sb, &mtime), 0);
	assert_true(is_time(sb.buf));
	assert_string_equal(sb.buf + 20, " a, b: two\\n\n");
	sbuf_release(&sb);
	/* once another line came after it, it stays */
	assert_int_equal(session_log(fx->st, s.id, "b", "other"), 0);
	assert_int_equal(session_log_rewrite_last(fx->st, s.id, row, "c",
						  "three"), 0);
	assert_int_equal(session_log_rewrite_last(fx->st, o.id, row, "c",
						  "three"), 0);
	assert_int_equal(session_render_log(fx->st, s.id, &sb, &mtime), 0);
	assert_non_null(strstr(sb.buf, " a, b: two\\n\n"));
	assert_null(strstr(sb.buf, "three"));
	sbuf_release(&sb);
	/* the root's log has no such lines */
	assert_int_equal(session_log_row(fx->st, 0, "a", "one", &row), -EINVAL);
}

static void test_format_time(void **state)
{
	char buf[32];

	(void)state;
	assert_string_equal(session_format_time(0, buf, sizeof(buf)),
			    "1970-01-01T00:00:00Z");
	assert_string_equal(session_format_time(CREATED_NS, buf, sizeof(buf)),
			    CREATED);
	assert_string_equal(session_format_time((int64_t)946684800 * 1000000000
						+ 999999999, buf, sizeof(buf)),
			    "2000-01-01T00:00:00Z");
}

/* context.json past CONTEXT_MAX_SIZE, as written or as stored
 * (indented), is refused; the stored context stays. */
static void test_context_size(void **state)
{
	struct fixture *fx = *state;
	struct session_info s = mk(fx, "ctx");
	struct ferr err = FERR_INIT;
	size_t len = CONTEXT_MAX_SIZE + 1;
	struct sbuf out = SBUF_INIT;
	int64_t mtime;
	char *text = malloc(len);

	assert_non_null(text);
	memset(text, ' ', len);
	memcpy(text, "null", 4);
	assert_int_equal(session_commit_context(fx->st, &s, text, len, &err),
			 -EINVAL);
	assert_string_equal(err.message,
			    "context.json: 1048577 bytes: a context holds at most 1048576");
	/* small as written, past the limit once indented: a legacy
	 * message whose call's arguments are an array of empty arrays */
	len = (size_t)sprintf(text, "{\"role\": \"assistant\", \"content\":"
			      " \"c\", \"tool_calls\": [{\"id\": \"1\", \"type\":"
			      " \"function\", \"function\": {\"name\":"
			      " \"run_terminal\", \"arguments\": \"[");
	while (len < CONTEXT_MAX_SIZE / 2 - 8)
		len += (size_t)sprintf(text + len, "[],");
	len += (size_t)sprintf(text + len, "[]]\"}}]}");
	ferr_clear(&err);
	assert_int_equal(session_commit_context(fx->st, &s, text, len, &err),
			 -EINVAL);
	if (!strstr(err.message, "bytes as stored (indented): a context holds at most"))
		fail_msg("%s", err.message);
	assert_int_equal(session_render_context(fx->st, &s, &out, &mtime), 0);
	assert_string_equal(out.buf, "null");
	sbuf_release(&out);
	free(text);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create),
		T(test_create_names),
		T(test_list),
		T(test_render_json),
		T(test_commit_accepts),
		T(test_commit_doc_mtime),
		T(test_commit_keeps_id_and_created),
		T(test_commit_refuses),
		T(test_trash_and_back),
		T(test_trash_folder),
		T(test_rename),
		T(test_delete_cascades),
		T(test_delete_with_open_file),
		T(test_has_data),
		T(test_renew_uploads),
		T(test_log),
		T(test_log_rewrite_last),
		T(test_context_size),
		cmocka_unit_test(test_format_time),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
