/*
 * roundstore: rounds/<n>.json in the rounds table; see roundstore.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fclock.h"
#include "lib/fjson.h"
#include "formats/rounds.h"
#include "session/roundstore.h"

bool roundstore_number(const char *name, int64_t *number)
{
	int64_t v = 0;
	const char *p = name;

	if (*p < '1' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (*p - '0');
		if (v > ROUNDSTORE_MAX)
			return false;
	}
	if (strcmp(p, ".json"))
		return false;
	*number = v;
	return true;
}

int roundstore_list(struct store *st, int64_t session,
		    struct roundstore_item **items, size_t *n)
{
	static const char sql[] = "SELECT n, mtime_ns, coalesce(size, 0),"
		" size IS NULL FROM rounds WHERE session = ?1 ORDER BY n";
	struct roundstore_item *list = NULL, *grown;
	size_t count = 0, alloc = 0;
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*items = NULL;
	*n = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (count == alloc) {
			alloc = alloc ? 2 * alloc : 16;
			grown = realloc(list, alloc * sizeof(*list));
			if (!grown) {
				ret = -ENOMEM;
				goto out;
			}
			list = grown;
		}
		list[count].number = sqlite3_column_int64(q, 0);
		list[count].mtime_ns = sqlite3_column_int64(q, 1);
		list[count].size = (size_t)sqlite3_column_int64(q, 2);
		list[count].draft = sqlite3_column_int(q, 3);
		count++;
	}
	ret = store_errno(rc);
out:
	store_done(q);
	if (ret < 0) {
		free(list);
		return ret;
	}
	*items = list;
	*n = count;
	return 0;
}

/* `sql` with ?1 = session and ?2 = number bound, or NULL. */
static sqlite3_stmt *round_stmt(struct store *st, const char *sql,
				int64_t session, int64_t number)
{
	sqlite3_stmt *q = store_stmt(st, sql);

	if (q) {
		sqlite3_bind_int64(q, 1, session);
		sqlite3_bind_int64(q, 2, number);
	}
	return q;
}

int roundstore_stat(struct store *st, int64_t session, int64_t number,
		    struct roundstore_item *out)
{
	static const char sql[] = "SELECT mtime_ns, coalesce(size, 0),"
		" size IS NULL FROM rounds WHERE session = ?1 AND n = ?2";
	sqlite3_stmt *q = round_stmt(st, sql, session, number);
	int rc, ret;

	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		out->number = number;
		out->mtime_ns = sqlite3_column_int64(q, 0);
		out->size = (size_t)sqlite3_column_int64(q, 1);
		out->draft = sqlite3_column_int(q, 2);
		ret = 0;
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

int roundstore_get(struct store *st, int64_t session, int64_t number,
		   struct sbuf *doc, int64_t *mtime_ns)
{
	static const char sql[] = "SELECT doc, mtime_ns FROM rounds"
		" WHERE session = ?1 AND n = ?2";
	sqlite3_stmt *q = round_stmt(st, sql, session, number);
	int rc, ret;

	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		/* a draft reads empty */
		ret = sqlite3_column_type(q, 0) == SQLITE_NULL
			      ? 0
			      : sbuf_add(doc, sqlite3_column_text(q, 0),
					 (size_t)sqlite3_column_bytes(q, 0));
		if (mtime_ns)
			*mtime_ns = sqlite3_column_int64(q, 1);
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

/* The tag columns, in rounds_tags order (rounds.h). */
#define TAG_COLUMNS "phenomenon, hypothesis, model, experiment," \
	" observation, inference, conclusion"

/*
 * The round in columns `first`.. of a row (TAG_COLUMNS): built from the
 * texts, no JSON parsed.  Key order is the tags' (a transcript does not
 * depend on it).
 */
static int round_from_columns(sqlite3_stmt *q, int first, json_t **out)
{
	json_t *round = json_object();

	if (!round)
		return -ENOMEM;
	for (int i = 0; i < ROUNDS_TAG_COUNT; i++) {
		json_t *text;

		if (sqlite3_column_type(q, first + i) == SQLITE_NULL)
			continue;
		text = json_stringn((const char *)sqlite3_column_text(q, first + i),
				    (size_t)sqlite3_column_bytes(q, first + i));
		/* not UTF-8: only a database edited by hand */
		if (!text || json_object_set_new(round, rounds_tags[i], text) < 0) {
			json_decref(round);
			return text ? -ENOMEM : -EIO;
		}
	}
	*out = round;
	return 0;
}

void roundstore_free(json_t **rounds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_decref(rounds[i]);
	free(rounds);
}

/*
 * The stored rounds as numbered: rounds[k] is round k + 1, NULL where
 * one is missing; *n the highest number.
 */
static int load_numbered(struct store *st, int64_t session, json_t ***rounds,
			 size_t *n)
{
	static const char sql[] = "SELECT n, " TAG_COLUMNS " FROM rounds"
		" WHERE session = ?1 AND size IS NOT NULL ORDER BY n";
	json_t **list = NULL, **grown;
	size_t count = 0;
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*rounds = NULL;
	*n = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t number = sqlite3_column_int64(q, 0);
		json_t *doc;

		/* the table's CHECK keeps n in 1..ROUNDSTORE_MAX */
		if (number < 1 || number > ROUNDSTORE_MAX) {
			ret = -EIO;
			goto out;
		}
		grown = realloc(list, (size_t)number * sizeof(*list));
		if (!grown) {
			ret = -ENOMEM;
			goto out;
		}
		list = grown;
		while (count < (size_t)number)
			list[count++] = NULL;
		ret = round_from_columns(q, 1, &doc);
		if (ret < 0)
			goto out;
		list[number - 1] = doc;
	}
	ret = store_errno(rc);
out:
	store_done(q);
	if (ret < 0) {
		roundstore_free(list, count);
		return ret;
	}
	*rounds = list;
	*n = count;
	return 0;
}

/* The first missing round of rounds[0..n-1] (1-based), or 0. */
static size_t first_gap(json_t *const *rounds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!rounds[i])
			return i + 1;
	return 0;
}

/* The file status names round `number` by. */
static const char *round_file(char buf[48], int64_t number)
{
	snprintf(buf, 48, "rounds/%" PRId64 ".json", number);
	return buf;
}

/* Round `number` parsed, or *out NULL when it is not stored. */
static int load_one(struct store *st, int64_t session, int64_t number,
		    json_t **out)
{
	static const char sql[] = "SELECT " TAG_COLUMNS " FROM rounds"
		" WHERE session = ?1 AND n = ?2 AND size IS NOT NULL";
	sqlite3_stmt *q = round_stmt(st, sql, session, number);
	int rc, ret = 0;

	*out = NULL;
	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		ret = round_from_columns(q, 0, out);
	else
		ret = store_errno(rc);
	store_done(q);
	return ret;
}

/*
 * Whether round `number` may be `doc`.  The placement rules of a round
 * depend only on its own number and on whether another follows it, so a
 * write concerns this round and the one before it (now followed), never
 * the whole set.
 */
static int check_in_place(struct store *st, int64_t session, int64_t number,
			  const json_t *doc, struct ferr *err)
{
	json_t *next = NULL, *prev = NULL;
	int ret;

	ret = load_one(st, session, number + 1, &next);
	if (!ret)
		ret = rounds_check_one((size_t)number,
				       (size_t)number + (next != NULL), doc, err);
	if (!ret && number > 1)
		ret = load_one(st, session, number - 1, &prev);
	if (!ret && prev)
		ret = rounds_check_one((size_t)number - 1, (size_t)number, prev,
				       err);
	json_decref(next);
	json_decref(prev);
	return ret;
}

/* The rounds of `session` changed now (for roundstore_mtime()). */
static int touch(struct store *st, int64_t session)
{
	static const char sql[] = "UPDATE sessions SET rounds_mtime_ns ="
		" max(?2, rounds_mtime_ns + 1) WHERE id = ?1";

	return store_run(st, sql, STORE_INT(session), STORE_INT(fclock_now_ns()));
}

int roundstore_mtime(struct store *st, int64_t session, int64_t *mtime_ns)
{
	static const char sql[] = "SELECT rounds_mtime_ns FROM sessions"
		" WHERE id = ?1";

	*mtime_ns = 0;
	return store_int(st, sql, mtime_ns, STORE_INT(session));
}

/* Whether `doc` may be round `number`: in range and placed right among
 * the rounds there (the caller's transaction is open).  The rounds below
 * it need not be there yet: a copy of a session comes back in any order,
 * and a gap is a problem status shows until it is filled. */
static int may_be(struct store *st, int64_t session, int64_t number,
		  const json_t *doc, struct ferr *err)
{
	char file[48];

	if (number < 1 || number > ROUNDSTORE_MAX)
		return ferr_refuse(err, -EINVAL, round_file(file, number),
				   "rounds are numbered 1 to %d",
				   ROUNDSTORE_MAX);
	return check_in_place(st, session, number, doc, err);
}

/* Whether a round of `size` bytes fits as round `number`. */
static int room_for(struct store *st, int64_t session, int64_t number,
		    size_t size, struct ferr *err)
{
	static const char sql[] = "SELECT coalesce(sum(size), 0) FROM rounds"
		" WHERE session = ?1 AND n != ?2";
	char file[48];
	int64_t others = 0;
	int ret;

	if (size > ROUNDSTORE_ROUND_MAX)
		return ferr_refuse(err, -EINVAL, round_file(file, number),
				   "%zu bytes: a round holds at most %d",
				   size, ROUNDSTORE_ROUND_MAX);
	ret = store_int(st, sql, &others, STORE_INT(session),
			STORE_INT(number));
	if (!ret && others + (int64_t)size > ROUNDSTORE_TOTAL_MAX)
		ret = ferr_refuse(err, -EINVAL, round_file(file, number),
				  "%zu bytes after %" PRId64 " in the other rounds: a session's rounds hold at most %d together",
				  size, others, ROUNDSTORE_TOTAL_MAX);
	return ret;
}

/* Store `doc` as round `number` when it may be (the caller's
 * transaction is open). */
static int store_round(struct store *st, int64_t session, int64_t number,
		       const json_t *doc, struct ferr *err)
{
	static const char sql[] = "INSERT INTO rounds(session, n, doc, mtime_ns,"
		" " TAG_COLUMNS ", size) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8,"
		" ?9, ?10, ?11, ?12) ON CONFLICT(session, n) DO UPDATE"
		" SET doc = excluded.doc, mtime_ns = excluded.mtime_ns,"
		" size = excluded.size,"
		" phenomenon = excluded.phenomenon,"
		" hypothesis = excluded.hypothesis, model = excluded.model,"
		" experiment = excluded.experiment,"
		" observation = excluded.observation,"
		" inference = excluded.inference,"
		" conclusion = excluded.conclusion"
		" WHERE doc IS NOT excluded.doc";
	struct sbuf canon = SBUF_INIT;
	sqlite3_stmt *q;
	int ret;

	ret = may_be(st, session, number, doc, err);
	if (!ret)
		ret = fjson_dump(&canon, doc);
	if (!ret)
		ret = room_for(st, session, number, canon.len, err);
	if (ret < 0)
		goto out;
	q = round_stmt(st, sql, session, number);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_text(q, 3, canon.buf, (int)canon.len, SQLITE_STATIC);
	sqlite3_bind_int64(q, 4, fclock_now_ns());
	sqlite3_bind_int64(q, 12, (int64_t)canon.len);
	for (int i = 0; i < ROUNDS_TAG_COUNT; i++) {
		const json_t *v = json_object_get(doc, rounds_tags[i]);

		/* rounds_check_one() let only strings and null through */
		if (json_is_string(v))
			sqlite3_bind_text(q, 5 + i, json_string_value(v),
					  (int)json_string_length(v),
					  SQLITE_STATIC);
	}
	ret = store_errno(sqlite3_step(q));
	/* the same bytes again change nothing, not even the time */
	if (!ret && sqlite3_changes(sqlite3_db_handle(q)))
		ret = touch(st, session);
	store_done(q);
out:
	sbuf_release(&canon);
	return ret;
}

/* Commit, or roll back and say what failed. */
static int finish(struct store *st, int ret, struct ferr *err, int64_t number)
{
	if (!ret)
		ret = store_commit(st);
	if (ret < 0 && ret != -EINVAL)
		ferr_set(err, ret, "cannot store rounds/%" PRId64 ".json: %s",
			 number, store_errmsg(st));
	if (ret < 0)
		store_rollback(st);
	return ret;
}

int roundstore_put(struct store *st, int64_t session, int64_t number,
		   const char *text, size_t len, struct ferr *err)
{
	json_t *doc = NULL;
	int ret;

	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (!ret)
		ret = finish(st, store_round(st, session, number, doc, err), err,
			     number);
	json_decref(doc);
	return ret;
}

int roundstore_create_draft(struct store *st, int64_t session, int64_t number)
{
	static const char sql[] = "INSERT INTO rounds(session, n, mtime_ns)"
		" VALUES (?1, ?2, ?3)";

	/* a constraint (-EEXIST): the number is taken (or out of range:
	 * never, roundstore_number() bounds it) */
	return store_run(st, sql, STORE_INT(session), STORE_INT(number),
			 STORE_INT(fclock_now_ns()));
}

int roundstore_drop_draft(struct store *st, int64_t session, int64_t number)
{
	static const char sql[] = "DELETE FROM rounds WHERE session = ?1"
		" AND n = ?2 AND size IS NULL";

	return store_run(st, sql, STORE_INT(session), STORE_INT(number));
}

int roundstore_drop_all_drafts(struct store *st)
{
	static const char sql[] = "DELETE FROM rounds WHERE size IS NULL";

	return store_exec(st, sql);
}

int roundstore_rename(struct store *st, int64_t session, int64_t from,
		      int64_t to, bool replace, struct ferr *err)
{
	static const char move_sql[] = "UPDATE rounds SET n = ?3"
		" WHERE session = ?1 AND n = ?2";
	struct roundstore_item src, dst;
	json_t *doc = NULL;
	int ret;

	ret = roundstore_stat(st, session, from, &src);
	if (ret < 0 || from == to)
		return ret;
	ret = roundstore_stat(st, session, to, &dst);
	if (ret == 0 && !replace)
		return -EEXIST;
	if (ret < 0 && ret != -ENOENT)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ret;
	if (!src.draft)
		ret = load_one(st, session, from, &doc);
	if (!ret)
		ret = roundstore_delete(st, session, to);
	if (ret == -ENOENT)
		ret = 0;
	/* the row moves as it is: its document keeps its key order */
	if (!ret)
		ret = store_run(st, move_sql, STORE_INT(session),
				STORE_INT(from), STORE_INT(to));
	if (!ret && !src.draft)
		ret = may_be(st, session, to, doc, err);
	if (!ret && !src.draft)
		ret = touch(st, session);
	ret = finish(st, ret, err, to);
	json_decref(doc);
	return ret;
}

int roundstore_delete(struct store *st, int64_t session, int64_t number)
{
	static const char sql[] = "DELETE FROM rounds WHERE session = ?1"
		" AND n = ?2";
	int ret = store_run(st, sql, STORE_INT(session), STORE_INT(number));

	if (!ret && !store_changes(st))
		ret = -ENOENT;
	return ret < 0 ? ret : touch(st, session);
}

/* The message for a gap: round `missing` absent, `highest` stored. */
static int refuse_missing(struct ferr *err, size_t missing, size_t highest)
{
	char file[48];

	/* the path is the missing file's; the text names it on its own */
	ferr_set_path(err, round_file(file, (int64_t)missing));
	return ferr_set(err, -EINVAL, "%s is missing: rounds are numbered"
			" from 1 without gaps (rounds/%zu.json exists)", file,
			highest);
}

int roundstore_load(struct store *st, int64_t session, json_t ***rounds,
		    size_t *n, struct ferr *err)
{
	json_t **list;
	size_t count, missing;
	int ret;

	*rounds = NULL;
	*n = 0;
	ret = load_numbered(st, session, &list, &count);
	if (ret < 0)
		return ret;
	missing = first_gap(list, count);
	if (missing)
		ret = refuse_missing(err, missing, count);
	else
		ret = rounds_check((const json_t *const *)list, count, err);
	if (ret < 0) {
		roundstore_free(list, count);
		return ret;
	}
	*rounds = list;
	*n = count;
	return 0;
}

int roundstore_gap(struct store *st, int64_t session, struct ferr *err)
{
	static const char sql[] = "SELECT n FROM rounds WHERE session = ?1"
		" AND size IS NOT NULL ORDER BY n";
	sqlite3_stmt *q = store_stmt(st, sql);
	int64_t expected = 1, missing = 0, highest = 0;
	int rc, ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		highest = sqlite3_column_int64(q, 0);
		if (!missing && highest != expected)
			missing = expected;
		expected = highest + 1;
	}
	ret = store_errno(rc);
	store_done(q);
	if (!ret && missing)
		ret = refuse_missing(err, (size_t)missing, (size_t)highest);
	return ret;
}

int roundstore_problem(struct store *st, int64_t session, struct sbuf *out)
{
	struct ferr err = FERR_INIT;
	int ret = roundstore_gap(st, session, &err);

	if (ret != -EINVAL)
		return ret;
	ret = sbuf_addstr(out, err.message);
	return ret < 0 ? ret : sbuf_addch(out, '\n');
}
