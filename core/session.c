#include "session.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fjson.h"
#include "fname.h"

#define SESSION_COLUMNS \
	"id, name, created_ns, doc_mtime_ns, root_ino, uploads_ino"

static void row_to_info(sqlite3_stmt *q, struct session_info *s)
{
	const unsigned char *name = sqlite3_column_text(q, 1);

	s->id = sqlite3_column_int64(q, 0);
	snprintf(s->name, sizeof(s->name), "%s", name ? (const char *)name : "");
	s->created_ns = sqlite3_column_int64(q, 2);
	s->doc_mtime_ns = sqlite3_column_int64(q, 3);
	s->root_ino = (uint64_t)sqlite3_column_int64(q, 4);
	s->uploads_ino = (uint64_t)sqlite3_column_int64(q, 5);
}

static int step_errno(int rc)
{
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? 0 : store_errno(rc);
}

const char *session_format_time(int64_t ns, char *buf, size_t size)
{
	time_t secs = (time_t)(ns / 1000000000);
	struct tm tm;

	if (!gmtime_r(&secs, &tm) ||
	    !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)secs);
	return buf;
}

static int find_one(sqlite3_stmt *q, struct session_info *out)
{
	int rc, ret = 0;

	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		row_to_info(q, out);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
	return ret;
}

int session_find(struct store *st, const char *name, struct session_info *out)
{
	static const char sql[] =
		"SELECT " SESSION_COLUMNS " FROM sessions WHERE name = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	return find_one(q, out);
}

int session_get(struct store *st, int64_t id, struct session_info *out)
{
	static const char sql[] =
		"SELECT " SESSION_COLUMNS " FROM sessions WHERE id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	return find_one(q, out);
}

void session_list_free(struct session_list *list)
{
	free(list->items);
	list->items = NULL;
	list->n = 0;
}

int session_list(struct store *st, struct session_list *out)
{
	static const char sql[] =
		"SELECT " SESSION_COLUMNS " FROM sessions ORDER BY name";
	sqlite3_stmt *q = store_stmt(st, sql);
	size_t alloc = 0;
	int rc, ret = 0;

	out->items = NULL;
	out->n = 0;
	if (!q)
		return -EIO;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (out->n == alloc) {
			size_t n = alloc ? alloc * 2 : 16;
			struct session_info *p =
				realloc(out->items, n * sizeof(*p));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			out->items = p;
			alloc = n;
		}
		row_to_info(q, &out->items[out->n++]);
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0)
		session_list_free(out);
	return ret;
}

int session_count(struct store *st, int64_t *count)
{
	static const char sql[] = "SELECT count(*) FROM sessions";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	*count = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	store_done(q);
	return step_errno(rc);
}

static int set_inodes(struct store *st, int64_t id, uint64_t root,
		      uint64_t uploads)
{
	static const char sql[] = "UPDATE sessions SET root_ino = ?2,"
		" uploads_ino = ?3 WHERE id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, (int64_t)root);
	sqlite3_bind_int64(q, 3, (int64_t)uploads);
	rc = sqlite3_step(q);
	store_done(q);
	return step_errno(rc);
}

/* Add `delta` to a folder's link count; the caller holds a transaction. */
static int add_links(struct store *st, uint64_t dir, int delta)
{
	static const char sql[] =
		"UPDATE inodes SET nlink = nlink + ?2 WHERE ino = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)dir);
	sqlite3_bind_int(q, 2, delta);
	rc = sqlite3_step(q);
	store_done(q);
	return step_errno(rc);
}

/* An uploads/ row below `root`; the caller holds a transaction. */
static int add_uploads(struct store *st, int64_t id, uint64_t root,
		       uint32_t uid, uint32_t gid, uint64_t *ino)
{
	static const char sql[] =
		"INSERT INTO inodes(session, parent, name, mode, uid, gid, nlink,"
		" atime_ns, mtime_ns, ctime_ns)"
		" VALUES (?1, ?2, CAST('uploads' AS BLOB), ?3, ?4, ?5, 2, ?6, ?6, ?6)";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, (int64_t)root);
	sqlite3_bind_int64(q, 3, S_IFDIR | 0755);
	sqlite3_bind_int64(q, 4, uid);
	sqlite3_bind_int64(q, 5, gid);
	sqlite3_bind_int64(q, 6, store_now_ns());
	rc = sqlite3_step(q);
	store_done(q);
	if (rc != SQLITE_DONE)
		return store_errno(rc);
	*ino = (uint64_t)sqlite3_last_insert_rowid(store_db(st));
	return 0;
}

int session_create(struct store *st, struct tree *t, const char *name,
		   uint32_t mode, uint32_t uid, uint32_t gid,
		   struct session_info *out, struct ferr *err)
{
	static const char sql[] = "INSERT INTO sessions(name, created_ns,"
		" doc_mtime_ns) VALUES (?1, ?2, ?2)";
	struct tree_attr root;
	int64_t now = store_now_ns();
	sqlite3_stmt *q;
	uint64_t uploads;
	int ret, rc;

	ret = fname_check_session(name, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ferr_set(err, ret, "the database is busy");
	q = store_stmt(st, sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 2, now);
	rc = sqlite3_step(q);
	store_done(q);
	if (rc != SQLITE_DONE) {
		ret = rc == SQLITE_CONSTRAINT ? -EEXIST : store_errno(rc);
		goto out;
	}
	out->id = sqlite3_last_insert_rowid(store_db(st));
	ret = tree_create_root(t, out->id, mode, uid, gid, &root);
	if (ret < 0)
		goto out;
	ret = add_uploads(st, out->id, root.ino, uid, gid, &uploads);
	if (ret < 0)
		goto out;
	ret = add_links(st, root.ino, 1);
	if (ret < 0)
		goto out;
	ret = set_inodes(st, out->id, root.ino, uploads);
	if (ret < 0)
		goto out;
	ret = store_commit(st);
	if (ret < 0)
		return ret;
	return session_get(st, out->id, out);
out:
	store_rollback(st);
	return ret;
}

int session_has_data(struct store *st, struct tree *t,
		     const struct session_info *s, bool *has)
{
	(void)st;
	return tree_session_has_data(t, s->id, s->root_ino, s->uploads_ino, has);
}

static int delete_row(struct store *st, struct tree *t, int64_t id)
{
	static const char sql[] = "DELETE FROM sessions WHERE id = ?1";
	sqlite3_stmt *q;
	int rc, ret;

	ret = tree_forget_session(t, id);
	if (ret < 0)
		return ret;
	q = store_stmt(st, sql);
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	store_done(q);
	return step_errno(rc);
}

int session_delete(struct store *st, struct tree *t, int64_t id)
{
	int ret = store_begin(st);

	if (ret < 0)
		return ret;
	ret = delete_row(st, t, id);
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

int session_rename(struct store *st, struct tree *t, const char *from,
		   const char *to, bool noreplace, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET name = ?2,"
		" doc_mtime_ns = ?3 WHERE id = ?1";
	struct session_info src, dst;
	sqlite3_stmt *q;
	bool has;
	int ret, rc;

	ret = fname_check_session(to, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ret;
	ret = session_find(st, from, &src);
	if (ret < 0)
		goto out;
	ret = session_find(st, to, &dst);
	if (ret == 0) {
		if (dst.id == src.id)
			goto done;
		if (noreplace) {
			ret = -EEXIST;
			goto out;
		}
		ret = session_has_data(st, t, &dst, &has);
		if (ret < 0)
			goto out;
		if (has) {
			ret = ferr_set(err, -ENOTEMPTY,
				       "session '%s' holds files", to);
			goto out;
		}
		ret = delete_row(st, t, dst.id);
		if (ret < 0)
			goto out;
	} else if (ret != -ENOENT) {
		goto out;
	}
	q = store_stmt(st, sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, src.id);
	sqlite3_bind_text(q, 2, to, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, store_now_ns());
	rc = sqlite3_step(q);
	store_done(q);
	ret = step_errno(rc);
	if (ret < 0)
		goto out;
done:
	return store_commit(st);
out:
	store_rollback(st);
	return ret;
}

int session_renew_uploads(struct store *st, struct tree *t,
			  struct session_info *s)
{
	struct tree_attr old;
	uint64_t ino;
	int ret;

	ret = tree_getattr(t, s->uploads_ino, &old);
	if (ret == -ENOENT)
		old = (struct tree_attr){ .uid = 0, .gid = 0 };
	else if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ret;
	ret = add_uploads(st, s->id, s->root_ino, old.uid, old.gid, &ino);
	if (ret < 0)
		goto out;
	ret = set_inodes(st, s->id, s->root_ino, ino);
	if (ret < 0)
		goto out;
	ret = add_links(st, s->root_ino, 1);
	if (ret < 0)
		goto out;
	ret = store_commit(st);
	if (ret == 0)
		s->uploads_ino = ino;
	return ret;
out:
	store_rollback(st);
	return ret;
}

/* ---- session.json -------------------------------------------------------- */

static int load_title(struct store *st, int64_t id, json_t **title)
{
	static const char sql[] = "SELECT title FROM sessions WHERE id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*title = NULL;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW) {
		const char *text = (const char *)sqlite3_column_text(q, 0);
		size_t len = (size_t)sqlite3_column_bytes(q, 0);

		*title = json_stringn(text ? text : "", len);
		if (!*title)
			ret = -ENOMEM;
	} else {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

int session_render_json(struct store *st, const struct session_info *s,
			struct sbuf *out)
{
	char created[32];
	json_t *doc = NULL, *title = NULL;
	int ret;

	ret = load_title(st, s->id, &title);
	if (ret < 0)
		goto out;
	session_format_time(s->created_ns, created, sizeof(created));
	doc = json_object();
	if (!doc || json_object_set_new(doc, "id", json_string(s->name)) ||
	    json_object_set_new(doc, "created", json_string(created)) ||
	    json_object_set(doc, "title", title)) {
		ret = -ENOMEM;
		goto out;
	}
	ret = fjson_dump(out, doc);
out:
	json_decref(title);
	json_decref(doc);
	return ret;
}

/* A read-only field may be repeated, but only with its stored value. */
static int check_fixed(json_t *doc, const char *key, const char *stored,
		       struct ferr *err)
{
	json_t *v = json_object_get(doc, key);

	if (!v)
		return 0;
	if (!json_is_string(v) || strcmp(json_string_value(v), stored) ||
	    json_string_length(v) != strlen(stored))
		return ferr_set(err, -EINVAL,
				"\"%s\" is read-only (it is \"%s\")", key, stored);
	return 0;
}

int session_commit_json(struct store *st, const struct session_info *s,
			const char *text, size_t len, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET title = ?2,"
		" doc_mtime_ns = ?3 WHERE id = ?1 AND title IS NOT ?2";
	char created[32];
	json_t *doc = NULL, *title;
	const char *key;
	json_t *value;
	sqlite3_stmt *q;
	int ret, rc;

	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	if (!json_is_object(doc)) {
		ret = ferr_set(err, -EINVAL,
			       "session.json must be a JSON object");
		goto out;
	}
	json_object_foreach(doc, key, value) {
		if (strcmp(key, "id") && strcmp(key, "created") &&
		    strcmp(key, "title")) {
			ret = ferr_set(err, -EINVAL,
				       "unknown field \"%s\" (session.json has id, created, title)",
				       key);
			goto out;
		}
	}
	session_format_time(s->created_ns, created, sizeof(created));
	ret = check_fixed(doc, "id", s->name, err);
	if (ret < 0)
		goto out;
	ret = check_fixed(doc, "created", created, err);
	if (ret < 0)
		goto out;
	title = json_object_get(doc, "title");
	if (title && !json_is_string(title)) {
		ret = ferr_set(err, -EINVAL, "\"title\" must be a string");
		goto out;
	}
	q = store_stmt(st, sql);
	if (!q) {
		ret = -EIO;
		goto out;
	}
	sqlite3_bind_int64(q, 1, s->id);
	sqlite3_bind_text(q, 2, title ? json_string_value(title) : "",
			  title ? (int)json_string_length(title) : 0,
			  SQLITE_STATIC);
	sqlite3_bind_int64(q, 3, store_now_ns());
	rc = sqlite3_step(q);
	store_done(q);
	ret = step_errno(rc);
	if (ret < 0)
		ferr_set(err, ret, "cannot store session.json: %s",
			 store_errmsg(st));
out:
	json_decref(doc);
	return ret;
}

/* ---- status ------------------------------------------------------------- */

int session_log(struct store *st, int64_t id, const char *path,
		const char *message)
{
	static const char add[] = "INSERT INTO status_log(session, time_ns,"
		" path, message) VALUES (?1, ?2, ?3, ?4)";
	static const char trim[] = "DELETE FROM status_log WHERE session = ?1"
		" AND id <= (SELECT id FROM status_log WHERE session = ?1"
		" ORDER BY id DESC LIMIT 1 OFFSET ?2)";
	char *line = strdup(message);
	sqlite3_stmt *q;
	int rc, ret;

	if (!line)
		return -ENOMEM;
	/* One refusal, one line. */
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	ret = store_begin(st);
	if (ret < 0)
		goto out;
	q = store_stmt(st, add);
	if (!q) {
		ret = -EIO;
		goto rollback;
	}
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int64(q, 2, store_now_ns());
	sqlite3_bind_text(q, 3, path, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, line, -1, SQLITE_STATIC);
	rc = sqlite3_step(q);
	store_done(q);
	ret = step_errno(rc);
	if (ret < 0)
		goto rollback;
	q = store_stmt(st, trim);
	if (!q) {
		ret = -EIO;
		goto rollback;
	}
	sqlite3_bind_int64(q, 1, id);
	sqlite3_bind_int(q, 2, SESSION_LOG_KEEP);
	rc = sqlite3_step(q);
	store_done(q);
	ret = step_errno(rc);
	if (ret < 0)
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	free(line);
	return ret;
}

int session_render_status(struct store *st, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns)
{
	static const char sql[] = "SELECT time_ns, path, message FROM status_log"
		" WHERE session = ?1 ORDER BY id";
	sqlite3_stmt *q = store_stmt(st, sql);
	int64_t mtime = s->created_ns;
	int rc, ret;

	if (!q)
		return -EIO;
	ret = sbuf_addstr(out, "ready\n");
	sqlite3_bind_int64(q, 1, s->id);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		char when[32];
		int64_t t = sqlite3_column_int64(q, 0);

		if (t > mtime)
			mtime = t;
		ret = sbuf_addf(out, "%s %s: %s\n",
				session_format_time(t, when, sizeof(when)),
				(const char *)sqlite3_column_text(q, 1),
				(const char *)sqlite3_column_text(q, 2));
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (mtime_ns)
		*mtime_ns = mtime;
	return ret;
}
