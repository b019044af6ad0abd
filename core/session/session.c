/* session: the sessions of a store — made, found, moved, removed — and
 * their documents; see session.h. */
#include "session/session.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "formats/context.h"
#include "lib/fclock.h"
#include "lib/fjson.h"
#include "lib/fname.h"
#include "session/inputs.h"
#include "lib/utf8.h"

/* A session in a trash gives up its name for '/' and its id (a name no
 * folder can have), so that a new session may take the name; so does a
 * snapshot, which is no session's folder at the root (SESSION_HIDDEN). */
#define SESSION_HIDDEN "substr(s.name, 1, 1) = '/'"
#define SESSION_TRASHED "(" SESSION_HIDDEN " AND s.snapshot_of IS NULL)"
/* A snapshot's name, as logs and paths show it. */
#define SESSION_NAME \
	"CASE WHEN s.snapshot_of IS NULL THEN s.name ELSE coalesce((SELECT" \
	" o.name FROM sessions o WHERE o.id = s.snapshot_of), '?') ||" \
	" '/.snapshots/' || s.snapshot_label END"

/* A session's row, with its folder's owner joined in (one index search
 * of inodes) and the change times of its graph and rounds. */
#define SESSION_COLUMNS \
	"s.id, " SESSION_NAME ", s.created_ns, s.doc_mtime_ns, s.root_ino," \
	" s.uploads_ino, s.output_ino, coalesce(s.skill, '')," \
	" coalesce(s.engine, ''), s.request_mtime_ns, s.nodes_ino," \
	" s.edges_ino, s.rounds_ino, r.uid, r.gid, s.graph_mtime_ns," \
	" s.rounds_mtime_ns, " SESSION_TRASHED ", s.jobs_ino," \
	" coalesce(s.snapshot_of, 0)"
#define SESSION_FROM \
	" FROM sessions s LEFT JOIN inodes r ON r.ino = s.root_ino"

static void copy_text(char *dst, size_t size, const unsigned char *text)
{
	snprintf(dst, size, "%s", text ? (const char *)text : "");
}

static void row_to_info(sqlite3_stmt *q, struct session_info *s)
{
	s->id = sqlite3_column_int64(q, 0);
	copy_text(s->name, sizeof(s->name), sqlite3_column_text(q, 1));
	s->created_ns = sqlite3_column_int64(q, 2);
	s->doc_mtime_ns = sqlite3_column_int64(q, 3);
	s->root_ino = (uint64_t)sqlite3_column_int64(q, 4);
	s->uploads_ino = (uint64_t)sqlite3_column_int64(q, 5);
	s->output_ino = (uint64_t)sqlite3_column_int64(q, 6);
	copy_text(s->skill, sizeof(s->skill), sqlite3_column_text(q, 7));
	copy_text(s->engine, sizeof(s->engine), sqlite3_column_text(q, 8));
	s->request_mtime_ns = sqlite3_column_int64(q, 9);
	s->nodes_ino = (uint64_t)sqlite3_column_int64(q, 10);
	s->edges_ino = (uint64_t)sqlite3_column_int64(q, 11);
	s->rounds_ino = (uint64_t)sqlite3_column_int64(q, 12);
	s->uid = (uint32_t)sqlite3_column_int64(q, 13);
	s->gid = (uint32_t)sqlite3_column_int64(q, 14);
	s->graph_mtime_ns = sqlite3_column_int64(q, 15);
	s->rounds_mtime_ns = sqlite3_column_int64(q, 16);
	s->trashed = sqlite3_column_int(q, 17);
	s->jobs_ino = (uint64_t)sqlite3_column_int64(q, 18);
	s->snapshot_of = sqlite3_column_int64(q, 19);
}

/* A session in a trash is named by its folder's path from the mount's
 * root (trash folders have a name and no parent). */
static int trashed_path(struct store *st, struct session_info *s)
{
	static const char sql[] = "WITH RECURSIVE up(ino, parent, name, depth)"
		" AS (SELECT ino, parent, name, 0 FROM inodes WHERE ino = ?1"
		" UNION ALL SELECT i.ino, i.parent, i.name, up.depth + 1"
		" FROM inodes i JOIN up ON i.ino = up.parent)"
		" SELECT name FROM up ORDER BY depth DESC";
	sqlite3_stmt *q = store_stmt(st, sql);
	struct sbuf path = SBUF_INIT;
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)s->root_ino);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW)
		ret = sbuf_addf(&path, "%s%.*s", path.len ? "/" : "",
				sqlite3_column_bytes(q, 0),
				(const char *)sqlite3_column_blob(q, 0));
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	/* deeper than a name may be: its own place in the trash is enough */
	if (!ret)
		snprintf(s->name, sizeof(s->name), "%s",
			 path.len < sizeof(s->name) ? path.buf
			 : strrchr(path.buf, '/') + 1);
	sbuf_release(&path);
	return ret;
}

/* Each session folder: its name and the sessions column holding it. */
static const struct {
	const char *name;
	const char *set_sql;
} folders[] = {
	[SESSION_UPLOADS] = { "uploads",
		"UPDATE sessions SET uploads_ino = ?2 WHERE id = ?1" },
	[SESSION_OUTPUT] = { "output",
		"UPDATE sessions SET output_ino = ?2 WHERE id = ?1" },
	[SESSION_NODES] = { "nodes",
		"UPDATE sessions SET nodes_ino = ?2 WHERE id = ?1" },
	[SESSION_EDGES] = { "edges",
		"UPDATE sessions SET edges_ino = ?2 WHERE id = ?1" },
	[SESSION_ROUNDS] = { "rounds",
		"UPDATE sessions SET rounds_ino = ?2 WHERE id = ?1" },
	[SESSION_JOBS] = { "jobs",
		"UPDATE sessions SET jobs_ino = ?2 WHERE id = ?1" },
};

uint64_t session_folder_ino(const struct session_info *s,
			    enum session_folder which)
{
	switch (which) {
	case SESSION_UPLOADS:
		return s->uploads_ino;
	case SESSION_OUTPUT:
		return s->output_ino;
	case SESSION_NODES:
		return s->nodes_ino;
	case SESSION_EDGES:
		return s->edges_ino;
	case SESSION_ROUNDS:
		return s->rounds_ino;
	case SESSION_JOBS:
		return s->jobs_ino;
	}
	return 0;
}

static const char *folder_name(enum session_folder which)
{
	return folders[which].name;
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

static int find_one(struct store *st, sqlite3_stmt *q,
		    struct session_info *out)
{
	int rc, ret = 0;

	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		row_to_info(q, out);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
	return !ret && out->trashed ? trashed_path(st, out) : ret;
}

int session_find(struct store *st, const char *name, struct session_info *out)
{
	static const char sql[] =
		"SELECT " SESSION_COLUMNS SESSION_FROM " WHERE s.name = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC);
	return find_one(st, q, out);
}

int session_get(struct store *st, int64_t id, struct session_info *out)
{
	static const char sql[] =
		"SELECT " SESSION_COLUMNS SESSION_FROM " WHERE s.id = ?1";
	sqlite3_stmt *q = store_stmt(st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	return find_one(st, q, out);
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
		"SELECT " SESSION_COLUMNS SESSION_FROM " WHERE NOT "
		SESSION_HIDDEN " ORDER BY s.name";
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
	static const char sql[] = "SELECT count(*) FROM sessions s"
		" WHERE NOT " SESSION_HIDDEN;

	*count = 0;
	return store_int_args(st, sql, count, NULL, 0);
}

/* Store a folder's inode number in the session row (`sql` names the
 * column). */
static int set_ino(struct store *st, const char *sql, int64_t id, uint64_t ino)
{
	return store_run(st, sql, STORE_INT(id), STORE_INT(ino));
}

static const char set_root_sql[] =
	"UPDATE sessions SET root_ino = ?2 WHERE id = ?1";

static int set_folder(struct store *st, int64_t id, enum session_folder which,
		      uint64_t ino)
{
	return set_ino(st, folders[which].set_sql, id, ino);
}

/* A session folder (uploads/, output/, ...) in `root`; the caller holds a
 * transaction.  The tree owns the inodes table: it makes the row. */
static int add_folder(struct store *st, struct tree *t, int64_t id,
		      uint64_t root, enum session_folder which, uint32_t uid,
		      uint32_t gid)
{
	struct tree_attr a;
	int ret = tree_add_tagged_folder(t, root, folder_name(which), which,
					 uid, gid, &a);

	return ret < 0 ? ret : set_folder(st, id, which, a.ino);
}

int session_create(struct store *st, struct tree *t, const char *name,
		   uint32_t mode, uint32_t uid, uint32_t gid,
		   struct session_info *out, struct ferr *err)
{
	static const char sql[] = "INSERT INTO sessions(name, created_ns,"
		" doc_mtime_ns, template_uuid) VALUES (?1, ?2, ?2, "
		STORE_SQL_UUID4 ")";
	struct tree_attr root;
	int ret;

	ret = fname_check_session(name, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ferr_set(err, ret, "the database is busy");
	/* a name taken is -EEXIST (the UNIQUE constraint) */
	ret = store_run(st, sql, STORE_TEXT(name), STORE_INT(fclock_now_ns()));
	if (ret < 0)
		goto out;
	out->id = sqlite3_last_insert_rowid(store_db(st));
	ret = tree_create_root(t, out->id, mode, uid, gid, &root);
	if (ret < 0)
		goto out;
	ret = set_ino(st, set_root_sql, out->id, root.ino);
	if (ret < 0)
		goto out;
	ret = add_folder(st, t, out->id, root.ino, SESSION_UPLOADS, uid, gid);
	if (ret < 0)
		goto out;
	for (enum session_folder f = SESSION_OUTPUT; f <= SESSION_JOBS; f++) {
		ret = add_folder(st, t, out->id, root.ino, f, uid, gid);
		if (ret < 0)
			goto out;
	}
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
	static const char sql[] = "SELECT EXISTS (SELECT 1 FROM graph_nodes"
		" WHERE session = ?1) OR EXISTS (SELECT 1 FROM graph_edges"
		" WHERE session = ?1) OR EXISTS (SELECT 1 FROM sessions"
		" WHERE id = ?1 AND context IS NOT NULL) OR EXISTS (SELECT 1"
		" FROM rounds WHERE session = ?1 AND size IS NOT NULL)"
		/* its snapshots keep it: they go first, one by one */
		" OR EXISTS (SELECT 1 FROM sessions WHERE snapshot_of = ?1)";
	int64_t any = 0;
	int ret;

	ret = tree_session_has_data(t, s->id, has);
	if (ret < 0 || *has)
		return ret;
	/* the job graph, the context and the rounds are the user's too */
	ret = store_int(st, sql, &any, STORE_INT(s->id));
	*has = any != 0;
	return ret;
}

static int delete_row(struct store *st, struct tree *t, int64_t id)
{
	static const char sql[] = "DELETE FROM sessions WHERE id = ?1";
	int ret = tree_forget_session(t, id);

	return ret < 0 ? ret : store_run(st, sql, STORE_INT(id));
}

int session_delete(struct store *st, struct tree *t, int64_t id)
{
	static const char in_trash_sql[] = "SELECT CASE WHEN " SESSION_TRASHED
		" THEN s.root_ino ELSE 0 END FROM sessions s WHERE s.id = ?1";
	int64_t trashed_root = 0;
	int ret = store_begin(st);

	if (ret < 0)
		return ret;
	ret = store_int(st, in_trash_sql, &trashed_root, STORE_INT(id));
	/* out of the trash folder first: its link count and time follow */
	if (!ret && trashed_root)
		ret = tree_move_root(t, (uint64_t)trashed_root, 0, NULL);
	if (!ret)
		ret = delete_row(st, t, id);
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

/* ---- forks ------------------------------------------------------------- */

/* The columns of `table` but `skip` (NULL-ended), as "a, b, c". */
static int columns_but(struct store *st, const char *table,
		       const char *const *skip, struct sbuf *out)
{
	static const char sql[] = "SELECT name FROM pragma_table_info(?1)"
		" ORDER BY cid";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_text(q, 1, table, -1, SQLITE_STATIC);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		bool skipped = false;

		for (size_t i = 0; skip[i] && !skipped; i++)
			skipped = !strcmp(skip[i], name);
		if (!skipped)
			ret = sbuf_addf(out, "%s\"%s\"", out->len ? ", " : "",
					name);
	}
	store_done(q);
	return ret ? ret : rc == SQLITE_DONE ? 0 : store_errno(rc);
}

/* Run `fmt` (with the columns for %1$s), binding ?1 `from`, ?2 `to`. */
static int copy_rows(struct store *st, const char *table,
		     const char *const *skip, const char *fmt, int64_t from,
		     int64_t to)
{
	struct sbuf cols = SBUF_INIT, sql = SBUF_INIT;
	sqlite3_stmt *q = NULL;
	int rc, ret = columns_but(st, table, skip, &cols);

	if (!ret)
		ret = sbuf_addf(&sql, fmt, cols.buf, cols.buf);
	if (!ret) {
		rc = sqlite3_prepare_v2(store_db(st), sql.buf, -1, &q, NULL);
		if (rc == SQLITE_OK) {
			sqlite3_bind_int64(q, 1, from);
			sqlite3_bind_int64(q, 2, to);
			rc = sqlite3_step(q);
		}
		ret = rc == SQLITE_DONE ? 0 : store_errno(rc) ? store_errno(rc)
							       : -EIO;
		sqlite3_finalize(q);
	}
	sbuf_release(&cols);
	sbuf_release(&sql);
	return ret;
}

/*
 * What a fork copies besides the tree: the session's row (its documents,
 * title, binding, context; not its name, times of birth, template id,
 * folders, nor its run), its graph and its rounds.  New columns are
 * copied without a change here (the lists name what is not copied).
 */
static int copy_session_rows(struct store *st, int64_t from, int64_t to,
			     bool same_template)
{
	/* a snapshot, and a restore of one, is the same workflow: only a
	 * fork has a template id of its own */
#define NOT_COPIED "id", "name", "created_ns", "root_ino", "uploads_ino", \
	"output_ino", "nodes_ino", "edges_ino", "rounds_ino", "jobs_ino", \
	"run_state", "run_message", "run_ns", "snapshot_of", "snapshot_label", \
	"forked_from"
	static const char *const fork_skip[] = { NOT_COPIED, "template_uuid",
						 NULL };
	static const char *const same_skip[] = { NOT_COPIED, NULL };
#undef NOT_COPIED
	const char *const *row_skip = same_template ? same_skip : fork_skip;
	static const char *const seq_skip[] = { "seq", "session", NULL };
	static const char *const id_skip[] = { "id", "session", NULL };
	static const char upd[] = "UPDATE sessions SET (%s) = (SELECT %s FROM"
		" sessions WHERE id = ?1) WHERE id = ?2";
	int ret;

	ret = copy_rows(st, "sessions", row_skip, upd, from, to);
	if (!ret)
		ret = copy_rows(st, "graph_nodes", seq_skip,
				"INSERT INTO graph_nodes(session, %s) SELECT ?2,"
				" %s FROM graph_nodes WHERE session = ?1"
				" ORDER BY seq", from, to);
	if (!ret)
		ret = copy_rows(st, "graph_edges", seq_skip,
				"INSERT INTO graph_edges(session, %s) SELECT ?2,"
				" %s FROM graph_edges WHERE session = ?1"
				" ORDER BY seq", from, to);
	if (!ret)
		ret = copy_rows(st, "rounds", id_skip,
				"INSERT INTO rounds(session, %s) SELECT ?2, %s"
				" FROM rounds WHERE session = ?1 ORDER BY id",
				from, to);
	return ret;
}

/* The new session's folders: the copies of `src`'s. */
static int set_copied_folders(struct store *st, struct tree *t,
			      const struct session_info *src, int64_t id,
			      uint64_t root)
{
	int ret = set_ino(st, set_root_sql, id, root);

	for (enum session_folder f = SESSION_UPLOADS; !ret && f <= SESSION_JOBS;
	     f++) {
		uint64_t made = 0;

		ret = tree_copied(t, session_folder_ino(src, f), &made);
		if (!ret)
			ret = set_folder(st, id, f, made);
	}
	return ret;
}

/*
 * The new session `id`, a copy of `src` (inside the caller's
 * transaction): its row's columns, graph, rounds and tree; jobs/ copied
 * empty unless `with_jobs`.
 */
static int copy_into(struct store *st, struct tree *t,
		     const struct session_info *src, int64_t id,
		     bool same_template, bool with_jobs)
{
	uint64_t root = 0;
	int ret = copy_session_rows(st, src->id, id, same_template);

	if (!ret)
		ret = tree_copy(t, src->root_ino, with_jobs ? 0 : src->jobs_ino,
				id, &root);
	if (!ret)
		ret = set_copied_folders(st, t, src, id, root);
	return ret;
}

/* A name or label written to ctl (not the kernel's: '/' is checked). */
static int check_written_name(const char *name, const char *what,
			      struct ferr *err)
{
	int ret = fname_check_session(name, err);

	if (ret < 0)
		return ret;
	if (strchr(name, '/'))
		return ferr_set(err, -EINVAL, "%s cannot hold '/'", what);
	return 0;
}

/* Open files' gathered bytes are part of what a copy takes; then the
 * transaction of the copy. */
static int begin_copy(struct store *st, struct tree *t, struct ferr *err)
{
	int ret = tree_flush_all(t);

	if (!ret)
		ret = store_begin(st);
	return ret < 0 ? ferr_set(err, ret, "cannot store the open files"
				  " first: %s", strerror(-ret)) : 0;
}

int session_fork(struct store *st, struct tree *t,
		 const struct session_info *src, const char *name,
		 struct session_info *out, struct ferr *err)
{
	static const char sql[] = "INSERT INTO sessions(name, created_ns,"
		" doc_mtime_ns, template_uuid, forked_from) VALUES (?1, ?2, ?2, "
		STORE_SQL_UUID4 ", ?3)";
	int64_t id;
	int ret;

	ret = check_written_name(name, "session names", err);
	if (!ret)
		ret = begin_copy(st, t, err);
	if (ret < 0)
		return ret;
	ret = store_run(st, sql, STORE_TEXT(name), STORE_INT(fclock_now_ns()),
			STORE_TEXT(src->name));
	if (ret == -EEXIST) {
		ferr_set(err, ret, "a session named \"%s\" exists", name);
		goto out;
	}
	if (ret < 0)
		goto out;
	id = sqlite3_last_insert_rowid(store_db(st));
	ret = copy_into(st, t, src, id, false, false);
	if (ret < 0)
		goto out;
	ret = store_commit(st);
	if (ret < 0)
		return ferr_set(err, ret, "cannot store the fork: %s",
				strerror(-ret));
	return session_get(st, id, out);
out:
	if (!err || !err->message[0])
		ferr_set(err, ret, "cannot fork %s: %s", src->name,
			 strerror(-ret));
	store_rollback(st);
	return ret;
}

/* ---- snapshots --------------------------------------------------------- */

int session_copies_report(struct store *st, int64_t id, json_t **snapshots,
			  json_t **fork_of)
{
	static const char snaps_sql[] = "SELECT snapshot_label, created_ns"
		" FROM sessions WHERE snapshot_of = ?1 ORDER BY created_ns, id";
	static const char fork_sql[] = "SELECT forked_from FROM sessions"
		" WHERE id = ?1 AND forked_from IS NOT NULL";
	sqlite3_stmt *q = store_stmt(st, snaps_sql);
	int rc, ret = 0;

	*fork_of = NULL;
	*snapshots = json_array();
	if (!q || !*snapshots) {
		store_done(q);
		json_decref(*snapshots);
		*snapshots = NULL;
		return q ? -ENOMEM : -EIO;
	}
	sqlite3_bind_int64(q, 1, id);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		char when[32];

		session_format_time(sqlite3_column_int64(q, 1), when,
				    sizeof(when));
		ret = json_array_append_new(*snapshots, json_pack("{ssss}",
			"label", (const char *)sqlite3_column_text(q, 0),
			"taken", when)) ? -ENOMEM : 0;
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	q = ret ? NULL : store_stmt(st, fork_sql);
	if (!ret && !q)
		ret = -EIO;
	if (!ret) {
		sqlite3_bind_int64(q, 1, id);
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW)
			*fork_of = json_string((const char *)
					       sqlite3_column_text(q, 0));
		else if (rc != SQLITE_DONE)
			ret = store_errno(rc);
		store_done(q);
	}
	if (ret < 0) {
		json_decref(*snapshots);
		json_decref(*fork_of);
		*snapshots = *fork_of = NULL;
	}
	return ret;
}

int session_running(struct store *st, int64_t id, bool *running)
{
	static const char sql[] = "SELECT coalesce(run_state = 'running', 0)"
		" FROM sessions WHERE id = ?1";
	int64_t is = 0;
	int ret = store_int(st, sql, &is, STORE_INT(id));

	*running = is != 0;
	return ret;
}

bool session_is_snapshot(struct store *st, int64_t id)
{
	static const char sql[] = "SELECT snapshot_of IS NOT NULL FROM"
		" sessions WHERE id = ?1";
	int64_t is = 0;

	return store_int(st, sql, &is, STORE_INT(id)) == 0 && is;
}

/* A snapshot of `src` labelled `label`, inside the caller's transaction;
 * its id in *id. */
static int snapshot_within(struct store *st, struct tree *t,
			   const struct session_info *src, const char *label,
			   int64_t *id, struct ferr *err)
{
	/* a name no other row has ('/' and a label, unique with the
	 * session), then '/' || id, as a trashed session's */
	static const char sql[] = "INSERT INTO sessions(name, created_ns,"
		" doc_mtime_ns, snapshot_of, snapshot_label) VALUES"
		" ('/' || ?1 || '/' || ?2, ?3, ?3, ?1, ?2)";
	static const char name_sql[] = "UPDATE sessions SET name = '/' || id"
		" WHERE id = ?1";
	int ret;

	ret = store_run(st, sql, STORE_INT(src->id), STORE_TEXT(label),
			STORE_INT(fclock_now_ns()));
	if (ret == -EEXIST)
		return ferr_set(err, ret, "a snapshot \"%s\" exists", label);
	if (ret < 0)
		return ret;
	*id = sqlite3_last_insert_rowid(store_db(st));
	ret = store_run(st, name_sql, STORE_INT(*id));
	if (!ret)
		ret = copy_into(st, t, src, *id, true, true);
	return ret;
}

int session_snapshot(struct store *st, struct tree *t,
		     const struct session_info *src, const char *label,
		     struct ferr *err)
{
	int64_t id;
	int ret;

	if (src->snapshot_of)
		return ferr_set(err, -EROFS, "a snapshot takes no snapshot");
	ret = check_written_name(label, "snapshot labels", err);
	if (!ret)
		ret = begin_copy(st, t, err);
	if (ret < 0)
		return ret;
	ret = snapshot_within(st, t, src, label, &id, err);
	if (!ret)
		return store_commit(st);
	if (!err || !err->message[0])
		ferr_set(err, ret, "cannot keep the snapshot: %s",
			 strerror(-ret));
	store_rollback(st);
	return ret;
}

int session_find_snapshot(struct store *st, int64_t of, const char *label,
			  struct session_info *out)
{
	static const char sql[] = "SELECT " SESSION_COLUMNS SESSION_FROM
		" WHERE s.snapshot_of = ?1 AND s.snapshot_label = ?2";
	sqlite3_stmt *q = store_stmt(st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, of);
	sqlite3_bind_text(q, 2, label, -1, SQLITE_STATIC);
	return find_one(st, q, out);
}

int session_list_snapshots(struct store *st, int64_t of,
			   struct session_list *out, char ***labels)
{
	static const char sql[] = "SELECT snapshot_label FROM sessions"
		" WHERE snapshot_of = ?1 ORDER BY snapshot_label";
	sqlite3_stmt *q = store_stmt(st, sql);
	size_t n = 0;
	int rc, ret = 0;

	out->items = NULL;
	out->n = 0;
	*labels = NULL;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, of);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		char **l = realloc(*labels, (n + 2) * sizeof(*l));

		if (!l) {
			ret = -ENOMEM;
			break;
		}
		*labels = l;
		l[n] = strdup((const char *)sqlite3_column_text(q, 0));
		l[n + 1] = NULL;
		if (!l[n])
			ret = -ENOMEM;
		else
			n++;
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (!ret) {
		out->items = calloc(n ? n : 1, sizeof(*out->items));
		if (!out->items)
			ret = -ENOMEM;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		ret = session_find_snapshot(st, of, (*labels)[i],
					    &out->items[i]);
		if (!ret)
			out->n++;
	}
	if (ret < 0) {
		session_list_free(out);
		session_labels_free(*labels);
		*labels = NULL;
	}
	return ret;
}

void session_labels_free(char **labels)
{
	for (size_t i = 0; labels && labels[i]; i++)
		free(labels[i]);
	free(labels);
}

/*
 * What `s` holds is replaced by snapshot `snap`'s, in one transaction:
 * the row's columns, graph and rounds, and the tree (copied from the
 * snapshot, data shared; the old rows go, open files of the session
 * kept as files unlinked while open).  The session keeps its id, name
 * and place; its root folder is a new row.
 */
static int replace_with(struct store *st, struct tree *t,
			const struct session_info *s,
			const struct session_info *snap)
{
	static const char *const drops[] = {
		"DELETE FROM graph_nodes WHERE session = ?1",
		"DELETE FROM graph_edges WHERE session = ?1",
		"DELETE FROM rounds WHERE session = ?1",
		"DELETE FROM graph_jobs WHERE session = ?1",
		"DELETE FROM graph_runs WHERE session = ?1",
	};
	static const char old_sql[] = "DELETE FROM inodes WHERE session = ?1"
		" AND ino NOT IN (SELECT new FROM temp.tree_copy_map)";
	static const char place_sql[] = "UPDATE inodes SET parent = ?2,"
		" name = ?3 WHERE ino = ?1";
	int64_t parent = 0;
	uint64_t root = 0;
	int ret = tree_forget_session(t, s->id);

	for (size_t i = 0; !ret && i < sizeof(drops) / sizeof(*drops); i++)
		ret = store_run(st, drops[i], STORE_INT(s->id));
	/* a session in a trash keeps its place there */
	if (!ret)
		ret = store_int(st, "SELECT coalesce(parent, 0) FROM inodes"
				" WHERE ino = ?1", &parent,
				STORE_INT(s->root_ino));
	if (!ret)
		ret = copy_session_rows(st, snap->id, s->id, true);
	if (!ret)
		ret = tree_copy(t, snap->root_ino, 0, s->id, &root);
	if (!ret)
		ret = set_copied_folders(st, t, snap, s->id, root);
	if (!ret && parent)
		ret = store_run(st, "UPDATE inodes SET parent = NULL, name ="
				" NULL WHERE ino = ?1", STORE_INT(s->root_ino));
	if (!ret)
		ret = store_run(st, old_sql, STORE_INT(s->id));
	if (!ret && parent) {
		const char *leaf = strrchr(s->name, '/');

		leaf = leaf ? leaf + 1 : s->name;
		ret = store_run(st, place_sql, STORE_INT(root),
				STORE_INT(parent),
				STORE_BLOB(leaf, strlen(leaf)));
	}
	return ret;
}

int session_restore(struct store *st, struct tree *t,
		    const struct session_info *s, const char *label,
		    char *kept, size_t kept_size, struct ferr *err)
{
	struct session_info snap;
	char stamp[32];
	int64_t id;
	int ret;

	if (s->snapshot_of)
		return ferr_set(err, -EROFS, "a snapshot takes no restore");
	ret = session_find_snapshot(st, s->id, label, &snap);
	if (ret == -ENOENT)
		return ferr_set(err, ret, "no snapshot \"%s\" (ls .snapshots"
				" lists them)", label);
	if (ret < 0)
		return ret;
	ret = begin_copy(st, t, err);
	if (ret < 0)
		return ret;
	/* what it replaces stays: a snapshot of its own, named by the time
	 * (and a number, when two restores share a second) */
	session_format_time(fclock_now_ns(), stamp, sizeof(stamp));
	for (int n = 1; n < 100; n++) {
		if (n == 1)
			snprintf(kept, kept_size, "before-restore-%s", stamp);
		else
			snprintf(kept, kept_size, "before-restore-%s-%d",
				 stamp, n);
		ret = snapshot_within(st, t, s, kept, &id, NULL);
		if (ret != -EEXIST)
			break;
	}
	if (!ret)
		ret = replace_with(st, t, s, &snap);
	if (!ret)
		ret = store_commit(st);
	else
		store_rollback(st);
	if (ret < 0 && (!err || !err->message[0]))
		ferr_set(err, ret, "cannot restore \"%s\": %s", label,
			 strerror(-ret));
	return ret;
}

/* Into folder `parent` of a trash: its name is free at the root. */
static int move_to_trash(struct store *st, struct tree *t,
			 const struct session_info *src, uint64_t parent,
			 const char *to)
{
	static const char sql[] = "UPDATE sessions SET name = '/' || id,"
		" doc_mtime_ns = ?2 WHERE id = ?1";
	int ret = tree_move_root(t, src->root_ino, parent, to);

	return ret < 0 ? ret : store_run(st, sql, STORE_INT(src->id),
					 STORE_INT(fclock_now_ns()));
}

int session_move(struct store *st, struct tree *t,
		 const struct session_info *src, uint64_t parent,
		 const char *to, bool noreplace, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET name = ?2,"
		" doc_mtime_ns = ?3 WHERE id = ?1";
	struct session_info dst;
	bool has;
	int ret;

	ret = parent ? fname_check_entry(to, err) : fname_check_session(to, err);
	if (ret < 0)
		return ret;
	ret = store_begin(st);
	if (ret < 0)
		return ret;
	if (parent) {
		ret = move_to_trash(st, t, src, parent, to);
		if (ret == -EEXIST)
			ferr_set(err, ret, "%s is taken in the trash", to);
		if (ret < 0)
			goto out;
		goto done;
	}
	ret = session_find(st, to, &dst);
	if (ret == 0) {
		if (dst.id == src->id)
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
	/* out of a trash: back to the root */
	ret = src->trashed ? tree_move_root(t, src->root_ino, 0, NULL) : 0;
	if (!ret)
		ret = store_run(st, sql, STORE_INT(src->id), STORE_TEXT(to),
				STORE_INT(fclock_now_ns()));
	if (ret < 0)
		goto out;
done:
	return store_commit(st);
out:
	store_rollback(st);
	return ret;
}

/*
 * Takes the session's folder away -- into the trash as @trash_name under
 * @trash_parent, or deleted when @trash_name is NULL -- and gives the
 * session a fresh, empty one.  One transaction: a failure half way must
 * not leave the session without the folder.
 */
static int replace_folder(struct store *st, struct tree *t,
			  struct session_info *s, enum session_folder which,
			  uint64_t trash_parent, const char *trash_name)
{
	uint64_t ino = session_folder_ino(s, which);
	int ret = store_begin(st);

	if (ret < 0)
		return ret;
	if (!trash_name) {
		ret = tree_rmdir_within(t, s->root_ino, folder_name(which));
	} else {
		ret = tree_rename_within(t, s->root_ino, folder_name(which),
					 trash_parent, trash_name, true);
		/* in the trash it is a plain folder: what it was is the
		 * session's */
		if (!ret)
			ret = tree_set_tag(t, ino, 0);
	}
	if (!ret)
		ret = add_folder(st, t, s->id, s->root_ino, which, s->uid,
				 s->gid);
	if (ret < 0)
		goto out;
	ret = store_commit(st);
	if (ret < 0)
		goto out;
	return session_get(st, s->id, s);
out:
	store_rollback(st);
	return ret;
}

int session_trash_folder(struct store *st, struct tree *t,
			 struct session_info *s, enum session_folder which,
			 uint64_t parent, const char *name)
{
	return replace_folder(st, t, s, which, parent, name);
}

int session_renew_folder(struct store *st, struct tree *t,
			 struct session_info *s, enum session_folder which)
{
	return replace_folder(st, t, s, which, 0, NULL);
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

/* A JSON string, or null for "" (no skill, no engine). */
static json_t *string_or_null(const char *s)
{
	return *s ? json_string(s) : json_null();
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
	    json_object_set_new(doc, "skill", string_or_null(s->skill)) ||
	    json_object_set_new(doc, "engine", string_or_null(s->engine)) ||
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

/*
 * A read-only field may be given, as a string: its value stays the
 * session's own.  A copy of a session's folder brings back another
 * session's id and creation time, and must still bind its skill.
 */
static int check_read_only(json_t *doc, const char *key, struct ferr *err)
{
	json_t *v = json_object_get(doc, key);

	if (v && !json_is_string(v))
		return ferr_set(err, -EINVAL, "\"%s\" must be a string (it is"
				" read-only: what is given is not used)", key);
	return 0;
}

/* A string field or null; *out is NULL for null or absent. */
static int optional_string(json_t *doc, const char *key, const char **out,
			   struct ferr *err)
{
	json_t *v = json_object_get(doc, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !json_string_length(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return ferr_set(err, -EINVAL,
				"\"%s\" must be a name (a string) or null", key);
	*out = json_string_value(v);
	return 0;
}

/* Which skill and engine the document asks for; "" for none. */
static int check_binding(json_t *doc, const struct session_info *s,
			 struct skill_registry *reg, const char **skill,
			 const char **engine, struct ferr *err)
{
	const struct skill *sk;
	int ret;

	ret = optional_string(doc, "skill", skill, err);
	if (!ret)
		ret = optional_string(doc, "engine", engine, err);
	if (ret < 0)
		return ret;
	if (!*skill) {
		if (*engine)
			return ferr_set(err, -EINVAL,
					"\"engine\" needs a \"skill\"");
		*skill = *engine = "";
		return 0;
	}
	sk = reg ? skill_find_fresh(reg, *skill) : NULL;
	if (!sk)
		return ferr_set(err, -EINVAL,
				"unknown skill \"%s\" (see .flowfs/skills/)",
				*skill);
	if (sk->error)
		return ferr_set(err, -EINVAL, "skill \"%s\" did not load: %s",
				*skill, sk->error);
	if (*engine && !skill_has_engine(sk, *engine)) {
		struct sbuf list = SBUF_INIT;
		const json_t *v;
		size_t i;

		json_array_foreach(sk->engines, i, v)
			sbuf_addf(&list, "%s%s", i ? ", " : "",
				  json_string_value(v));
		ret = ferr_set(err, -EINVAL,
			       "engine \"%s\" is not one of skill %s's engines (%s)",
			       *engine, sk->id, list.buf);
		sbuf_release(&list);
		return ret;
	}
	/* Keep the engine while the skill stays, else the skill's first. */
	if (!*engine)
		*engine = !strcmp(s->skill, sk->id) && *s->engine
				  ? s->engine : skill_default_engine(sk);
	return 0;
}

int session_commit_json(struct store *st, const struct session_info *s,
			struct skill_registry *reg, const char *text,
			size_t len, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET title = ?2,"
		" skill = nullif(?4, ''), engine = nullif(?5, ''),"
		" doc_mtime_ns = ?3 WHERE id = ?1 AND (title IS NOT ?2"
		" OR coalesce(skill, '') IS NOT ?4 OR coalesce(engine, '') IS NOT ?5)";
	static const char *const fields[] = {
		"id", "created", "skill", "engine", "title", NULL
	};
	const char *skill, *engine;
	json_t *doc = NULL, *title;
	const char *key;
	json_t *value;
	int ret;

	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	if (!json_is_object(doc)) {
		ret = ferr_set(err, -EINVAL,
			       "session.json must be a JSON object");
		goto out;
	}
	json_object_foreach(doc, key, value) {
		size_t i = 0;

		while (fields[i] && strcmp(fields[i], key))
			i++;
		if (!fields[i]) {
			ret = ferr_set(err, -EINVAL,
				       "unknown field \"%s\" (session.json has id, created, skill, engine, title)",
				       key);
			goto out;
		}
	}
	ret = check_read_only(doc, "id", err);
	if (ret < 0)
		goto out;
	ret = check_read_only(doc, "created", err);
	if (ret < 0)
		goto out;
	title = json_object_get(doc, "title");
	if (title && !json_is_string(title)) {
		ret = ferr_set(err, -EINVAL, "\"title\" must be a string");
		goto out;
	}
	ret = check_binding(doc, s, reg, &skill, &engine, err);
	if (ret < 0)
		goto out;
	ret = store_run(st, sql, STORE_INT(s->id),
			STORE_TEXTN(title ? json_string_value(title) : "",
				    title ? json_string_length(title) : 0),
			STORE_INT(fclock_now_ns()), STORE_TEXT(skill),
			STORE_TEXT(engine));
	if (ret < 0)
		ferr_set(err, ret, "cannot store session.json: %s",
			 store_errmsg(st));
out:
	json_decref(doc);
	return ret;
}

/* ---- request.json ------------------------------------------------------- */

/*
 * One stored session document: `sql` selects (document, mtime) of session
 * ?1.  *out: the parsed document (a new reference) or NULL when there is
 * none; *mtime_ns (when asked for) is left alone then.
 */
static int load_doc_column(struct store *st, const char *sql, int64_t id,
			   json_t **out, int64_t *mtime_ns)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	*out = NULL;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, id);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL) {
		ret = store_column_json(q, 0, out);
		if (mtime_ns)
			*mtime_ns = sqlite3_column_int64(q, 1);
	} else if (rc != SQLITE_ROW) {
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	}
	store_done(q);
	return ret;
}

/*
 * Store a checked document (`canon`, or SQL NULL when it is NULL) with
 * `sql`: UPDATE ... SET doc = ?2, mtime = ?3 WHERE id = ?1 AND doc IS NOT
 * ?2, so that writing the same bytes again keeps the mtime.
 */
static int store_doc_column(struct store *st, const char *sql, int64_t id,
			    const struct sbuf *canon, const char *file,
			    struct ferr *err)
{
	int ret = store_run(st, sql, STORE_INT(id),
			    canon ? STORE_TEXTN(canon->buf, canon->len)
				  : STORE_TEXT(NULL),
			    STORE_INT(fclock_now_ns()));

	if (ret < 0)
		ferr_set(err, ret, "cannot store %s: %s", file,
			 store_errmsg(st));
	return ret;
}

int session_load_request(struct store *st, const struct session_info *s,
			 json_t **out)
{
	return load_doc_column(st, "SELECT request, request_mtime_ns"
			       " FROM sessions WHERE id = ?1", s->id, out, NULL);
}

int session_render_request(struct store *st, const struct session_info *s,
			   struct sbuf *out)
{
	json_t *req = NULL;
	int ret = session_load_request(st, s, &req);

	static const char *const parts[] = { "input", "parameter" };
	json_t *shown;

	if (ret < 0)
		return ret;
	/* Both parts, always, in one order: what a writer left out is empty. */
	shown = json_object();
	for (size_t i = 0; shown && i < 2; i++) {
		json_t *part = json_object_get(req, parts[i]);

		if (json_object_set_new(shown, parts[i], part ? json_incref(part)
							      : json_object()) < 0) {
			json_decref(shown);
			shown = NULL;
		}
	}
	ret = shown ? fjson_dump(out, shown) : -ENOMEM;
	json_decref(shown);
	json_decref(req);
	return ret;
}

int session_commit_request(struct store *st, const struct session_info *s,
			   const struct skill *sk,
			   int (*extra)(const struct skill *sk,
					const json_t *request, struct ferr *err),
			   const char *text, size_t len, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET request = ?2,"
		" request_mtime_ns = ?3 WHERE id = ?1 AND request IS NOT ?2";
	struct sbuf canon = SBUF_INIT;
	json_t *req = NULL;
	int ret;

	ret = fjson_parse(&req, text, len, err);
	if (ret < 0)
		return ret;
	ret = inputs_check_request(sk, req, err);
	if (!ret && extra && sk)
		ret = extra(sk, req, err);
	if (ret < 0)
		goto out;
	ret = fjson_dump(&canon, req);
	if (ret < 0)
		goto out;
	ret = store_doc_column(st, sql, s->id, &canon, "request.json", err);
out:
	sbuf_release(&canon);
	json_decref(req);
	return ret;
}

/* ---- context.json ---------------------------------------------------------- */

/* context.json (as_text false) or context.txt (true). */
static int render_context(struct store *st, const struct session_info *s,
			  bool as_text, struct sbuf *out, int64_t *mtime_ns)
{
	json_t *doc;
	int ret;

	*mtime_ns = s->created_ns;
	ret = load_doc_column(st, "SELECT context, context_mtime_ns"
			      " FROM sessions WHERE id = ?1", s->id, &doc,
			      mtime_ns);
	if (ret < 0)
		return ret;
	if (!doc)
		return sbuf_addstr(out, as_text ? "No structured context yet:"
				   " write one to context.json.\n" : "null");
	ret = as_text ? context_render_text(doc, out) : fjson_dump(out, doc);
	json_decref(doc);
	return ret;
}

int session_render_context(struct store *st, const struct session_info *s,
			   struct sbuf *out, int64_t *mtime_ns)
{
	return render_context(st, s, false, out, mtime_ns);
}

int session_render_context_text(struct store *st, const struct session_info *s,
				struct sbuf *out, int64_t *mtime_ns)
{
	return render_context(st, s, true, out, mtime_ns);
}

int session_commit_context(struct store *st, const struct session_info *s,
			   const char *text, size_t len, struct ferr *err)
{
	static const char sql[] = "UPDATE sessions SET context = ?2,"
		" context_mtime_ns = ?3 WHERE id = ?1 AND context IS NOT ?2";
	struct sbuf canon = SBUF_INIT;
	json_t *doc = NULL, *checked = NULL;
	int ret;

	if (len > CONTEXT_MAX_SIZE)
		return ferr_refuse(err, -EINVAL, "context.json",
				   "%zu bytes: a context holds at most %d",
				   len, CONTEXT_MAX_SIZE);
	ret = fjson_parse(&doc, text, len, err);
	if (ret < 0)
		return ret;
	/* null: no context any more */
	if (!json_is_null(doc)) {
		ret = context_check(doc, (double)fclock_now_ns() / 1e9,
				    &checked, err);
		if (!ret)
			ret = fjson_dump(&canon, checked);
		if (!ret && canon.len > CONTEXT_MAX_SIZE)
			ret = ferr_refuse(err, -EINVAL, "context.json",
					  "%zu bytes as stored (indented): a context holds at most %d",
					  canon.len, CONTEXT_MAX_SIZE);
		if (ret < 0)
			goto out;
	}
	ret = store_doc_column(st, sql, s->id, checked ? &canon : NULL,
			       "context.json", err);
out:
	sbuf_release(&canon);
	json_decref(checked);
	json_decref(doc);
	return ret;
}

/* ---- the log ----------------------------------------------------------- */

/* The session's table and the mount root's: the same columns. */
static const char *const log_add[2] = {
	"INSERT INTO status_log(session, time_ns, path, message)"
	" VALUES (?1, ?2, ?3, ?4)",
	"INSERT INTO mount_log(time_ns, path, message) VALUES (?2, ?3, ?4)",
};
static const char *const log_trim[2] = {
	"DELETE FROM status_log WHERE session = ?1 AND id <= (SELECT id"
	" FROM status_log WHERE session = ?1 ORDER BY id DESC LIMIT 1"
	" OFFSET ?2)",
	"DELETE FROM mount_log WHERE id <= (SELECT id FROM mount_log"
	" ORDER BY id DESC LIMIT 1 OFFSET ?2)",
};
static const char *const log_read[2] = {
	"SELECT time_ns, path, message FROM status_log WHERE session = ?1"
	" ORDER BY id",
	"SELECT time_ns, path, message FROM mount_log ORDER BY id",
};

char *session_log_text(const char *text)
{
	return fname_shown(text, SESSION_LOG_MESSAGE_MAX);
}

/* ---- refused writes (session.h) ------------------------------------------ */

int session_refused(struct store *st, int64_t session, const char *path,
		    const char *message, bool made)
{
	static const char put[] = "INSERT INTO refusals (session, path,"
		" message, made, time_ns) VALUES (?1, ?2, ?3, ?4, ?5)"
		" ON CONFLICT (session, path) DO UPDATE SET"
		" message = excluded.message, made = excluded.made,"
		" time_ns = excluded.time_ns";
	static const char trim[] = "DELETE FROM refusals WHERE session = ?1"
		" AND path NOT IN (SELECT path FROM refusals WHERE session = ?1"
		" ORDER BY time_ns DESC LIMIT ?2)";
	char *why = session_log_text(message), *where = session_log_text(path);
	int ret = why && where ? 0 : -ENOMEM;

	if (!ret)
		ret = store_begin(st);
	if (ret < 0)
		goto out;
	ret = store_run(st, put, STORE_INT(session), STORE_TEXT(where),
			STORE_TEXT(why), STORE_INT(made), STORE_INT(fclock_now_ns()));
	if (!ret)
		ret = store_run(st, trim, STORE_INT(session),
				STORE_INT(SESSION_REFUSALS_KEEP));
	if (!ret)
		ret = store_commit(st);
	else
		store_rollback(st);
out:
	free(why);
	free(where);
	return ret;
}

int session_refusal_clear(struct store *st, int64_t session, const char *path)
{
	char *where = session_log_text(path);
	int ret = where ? store_run(st, "DELETE FROM refusals WHERE session = ?1"
				    " AND path = ?2", STORE_INT(session),
				    STORE_TEXT(where)) : -ENOMEM;

	free(where);
	return ret;
}

int session_refusal_clear_graph(struct store *st, int64_t session)
{
	/* the paths as session_refused() keeps them: an id with a control
	 * character is escaped there and stays (it names no file anyway) */
	static const char sql[] = "DELETE FROM refusals WHERE session = ?1"
		" AND (path IN (SELECT 'nodes/' || id || '.json' FROM graph_nodes"
		" WHERE session = ?1 AND doc IS NOT NULL) OR path IN (SELECT"
		" 'edges/' || id || '.json' FROM graph_edges WHERE session = ?1"
		" AND source IS NOT NULL))";

	return store_run(st, sql, STORE_INT(session));
}

int session_refusal_lines(struct store *st, int64_t session, struct sbuf *out)
{
	static const char sql[] = "SELECT path, message, made FROM refusals"
		" WHERE session = ?1 ORDER BY time_ns, path";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, session);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW)
		/* both were escaped when stored: one line each */
		ret = sbuf_addf(out, "%s: your last write was refused: %s; %s\n",
				(const char *)sqlite3_column_text(q, 0),
				(const char *)sqlite3_column_text(q, 1),
				sqlite3_column_int(q, 2)
					? "the file was not made"
					: "the file still holds the earlier"
					  " version");
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	store_done(q);
	return ret;
}

int session_log(struct store *st, int64_t id, const char *path,
		const char *message)
{
	return session_log_at(st, id, path, message, fclock_now_ns());
}

/* session_log_at(), and *row (NULL: not wanted) the line's id. */
static int log_add_row(struct store *st, int64_t id, const char *path,
		       const char *message, int64_t at_ns, int64_t *row)
{
	char *line = session_log_text(message), *where = session_log_text(path);
	int root = id == 0, ret = -ENOMEM;

	if (!line || !where)
		goto out;
	ret = store_begin(st);
	if (ret < 0)
		goto out;
	ret = store_run(st, log_add[root], STORE_INT(id),
			STORE_INT(at_ns), STORE_TEXT(where),
			STORE_TEXT(line));
	if (ret < 0)
		goto rollback;
	if (row)
		*row = sqlite3_last_insert_rowid(store_db(st));
	ret = store_run(st, log_trim[root], STORE_INT(id),
			STORE_INT(SESSION_LOG_KEEP));
	if (ret < 0)
		goto rollback;
	ret = store_commit(st);
	goto out;
rollback:
	store_rollback(st);
out:
	free(line);
	free(where);
	return ret;
}

int session_log_at(struct store *st, int64_t id, const char *path,
		   const char *message, int64_t at_ns)
{
	return log_add_row(st, id, path, message, at_ns, NULL);
}

int session_log_row(struct store *st, int64_t id, const char *path,
		    const char *message, int64_t *row)
{
	return id ? log_add_row(st, id, path, message, fclock_now_ns(), row)
		  : -EINVAL;
}

int session_log_rewrite_last(struct store *st, int64_t id, int64_t row,
			     const char *path, const char *message)
{
	static const char sql[] = "UPDATE status_log SET path = ?3,"
		" message = ?4 WHERE id = ?2 AND session = ?1 AND id ="
		" (SELECT max(id) FROM status_log WHERE session = ?1)";
	char *line = session_log_text(message), *where = session_log_text(path);
	int ret = -ENOMEM;

	if (line && where)
		ret = store_run(st, sql, STORE_INT(id), STORE_INT(row),
				STORE_TEXT(where), STORE_TEXT(line));
	if (!ret)
		ret = store_changes(st) == 1;
	free(line);
	free(where);
	return ret;
}

int session_render_log(struct store *st, int64_t id, struct sbuf *out,
		       int64_t *mtime_ns)
{
	sqlite3_stmt *q = store_stmt(st, log_read[id == 0]);
	int rc = SQLITE_DONE, ret = 0;

	*mtime_ns = 0;
	if (!q)
		return -EIO;
	if (id)
		sqlite3_bind_int64(q, 1, id);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW) {
		char when[32];
		int64_t t = sqlite3_column_int64(q, 0);

		if (t > *mtime_ns)
			*mtime_ns = t;
		ret = sbuf_addf(out, "%s %s: %s\n",
				session_format_time(t, when, sizeof(when)),
				(const char *)sqlite3_column_text(q, 1),
				(const char *)sqlite3_column_text(q, 2));
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	return ret;
}
