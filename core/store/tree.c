/* tree: the rows of the files and folders of sessions in the store: names,
 * folders, trash folders, rename, the kernel's references; see tree.h. */
#include "store/tree_i.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "store/contents.h"

/* The tags as SQL text, so statements and tree.h cannot disagree. */
#define SQL_TEXT_(x) #x
#define SQL_TEXT(x) SQL_TEXT_(x)
#define ROOT_TAG SQL_TEXT(TREE_TAG_SESSION_ROOT)
#define TRASH_TAG SQL_TEXT(TREE_TAG_TRASH)

#define ATTR_COLUMNS \
	"ino, coalesce(session, 0), mode, uid, gid, nlink, size, alloc," \
	" atime_ns, mtime_ns, ctime_ns, tag = " ROOT_TAG " AND nlink > 0, tag," \
	" coalesce(content, 0)"

static void row_to_attr(sqlite3_stmt *q, int col, struct tree_attr *a)
{
	a->ino = (uint64_t)sqlite3_column_int64(q, col + 0);
	a->session = sqlite3_column_int64(q, col + 1);
	a->mode = (uint32_t)sqlite3_column_int64(q, col + 2);
	a->uid = (uint32_t)sqlite3_column_int64(q, col + 3);
	a->gid = (uint32_t)sqlite3_column_int64(q, col + 4);
	a->nlink = (uint32_t)sqlite3_column_int64(q, col + 5);
	a->size = sqlite3_column_int64(q, col + 6);
	a->alloc = sqlite3_column_int64(q, col + 7);
	a->atime_ns = sqlite3_column_int64(q, col + 8);
	a->mtime_ns = sqlite3_column_int64(q, col + 9);
	a->ctime_ns = sqlite3_column_int64(q, col + 10);
	a->session_root = sqlite3_column_int(q, col + 11);
	a->tag = (unsigned)sqlite3_column_int(q, col + 12);
	a->content = sqlite3_column_int64(q, col + 13);
}

/* ---- attributes, lookup --------------------------------------------- */

/* Step `q` (bound) for one row of ATTR_COLUMNS: -ENOENT when none. */
static int one_row(sqlite3_stmt *q, struct tree_attr *out)
{
	int rc = sqlite3_step(q), ret = 0;

	if (rc == SQLITE_ROW)
		row_to_attr(q, 0, out);
	else
		ret = rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
	store_done(q);
	return ret;
}

/* The row as stored, without what open files have gathered. */
int tree_read_row(struct tree *t, uint64_t ino, struct tree_attr *out)
{
	static const char sql[] =
		"SELECT " ATTR_COLUMNS " FROM inodes WHERE ino = ?1";
	sqlite3_stmt *q = store_stmt(t->st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)ino);
	return one_row(q, out);
}

int tree_getattr(struct tree *t, uint64_t ino, struct tree_attr *out)
{
	int ret = tree_read_row(t, ino, out);

	if (!ret)
		tree_overlay_open(t, out);
	return ret;
}

int tree_lookup(struct tree *t, uint64_t parent, const char *name,
		struct tree_attr *out)
{
	static const char sql[] = "SELECT " ATTR_COLUMNS
		" FROM inodes WHERE parent = ?1 AND name = ?2";
	sqlite3_stmt *q = store_stmt(t->st, sql);
	int ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)parent);
	sqlite3_bind_blob(q, 2, name, (int)strlen(name), SQLITE_STATIC);
	ret = one_row(q, out);
	if (!ret)
		tree_overlay_open(t, out);
	return ret;
}

/* Add `delta` to a folder's link count and stamp its mtime/ctime. */
static int touch_dir(struct tree *t, uint64_t dir, int delta, int64_t now)
{
	static const char sql[] = "UPDATE inodes SET nlink = nlink + ?2,"
		" mtime_ns = ?3, ctime_ns = ?3 WHERE ino = ?1";

	return store_run(t->st, sql, STORE_INT(dir), STORE_INT(delta),
			 STORE_INT(now));
}

static int insert_inode(struct tree *t, int64_t session, const uint64_t *parent,
			const char *name, uint32_t mode, uint32_t uid,
			uint32_t gid, const char *target, unsigned tag,
			int64_t now, struct tree_attr *out)
{
	static const char sql[] =
		"INSERT INTO inodes(session, parent, name, mode, uid, gid, nlink,"
		" size, alloc, atime_ns, mtime_ns, ctime_ns, target, tag)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?9, ?9, ?10, ?11)";
	bool dir = S_ISDIR(mode);
	/* a file with no folder is unlinked (tree_create_unlinked()) */
	uint32_t nlink = dir ? 2 : parent ? 1 : 0;
	int64_t size = target ? (int64_t)strlen(target) : 0;
	int ret;

	/* a name taken is -EEXIST (the UNIQUE constraint); session 0: a
	 * trash's row, of no session */
	ret = store_run(t->st, sql, session ? STORE_INT(session) : STORE_NULL,
			parent ? STORE_INT(*parent) : STORE_NULL,
			STORE_BLOB(name, name ? strlen(name) : 0),
			STORE_INT(mode), STORE_INT(uid), STORE_INT(gid),
			STORE_INT(nlink), STORE_INT(size), STORE_INT(now),
			STORE_BLOB(target, (size_t)size), STORE_INT(tag));
	if (ret < 0)
		return ret;
	*out = (struct tree_attr){
		.ino = (uint64_t)sqlite3_last_insert_rowid(store_db(t->st)),
		.session = session, .mode = mode, .uid = uid, .gid = gid,
		.nlink = nlink, .size = size,
		.atime_ns = now, .mtime_ns = now, .ctime_ns = now,
		.session_root = tag == TREE_TAG_SESSION_ROOT && nlink,
		.tag = tag,
	};
	return 0;
}

int tree_create_root(struct tree *t, int64_t session, uint32_t mode,
		     uint32_t uid, uint32_t gid, struct tree_attr *out)
{
	return insert_inode(t, session, NULL, NULL, S_IFDIR | (mode & 07777),
			    uid, gid, NULL, TREE_TAG_SESSION_ROOT, fclock_now_ns(),
			    out);
}

/* ---- trash folders at the mount's root --------------------------------- */

static int read_dir(struct tree *t, const char *sql, uint64_t ino,
		    struct tree_dir *out);

int tree_trash_lookup(struct tree *t, const char *name, struct tree_attr *out)
{
	static const char sql[] = "SELECT " ATTR_COLUMNS " FROM inodes"
		" WHERE parent IS NULL AND tag = " TRASH_TAG " AND name = ?1";
	sqlite3_stmt *q = store_stmt(t->st, sql);

	if (!q)
		return -EIO;
	sqlite3_bind_blob(q, 1, name, (int)strlen(name), SQLITE_STATIC);
	return one_row(q, out);
}

int tree_trash_create(struct tree *t, const char *name, uint32_t mode,
		      uint32_t uid, uint32_t gid, struct tree_attr *out)
{
	/* a name taken is the unique index inodes_trash's EEXIST */
	return insert_inode(t, 0, NULL, name, S_IFDIR | (mode & 07777), uid,
			    gid, NULL, TREE_TAG_TRASH, fclock_now_ns(), out);
}

int tree_trash_list(struct tree *t, struct tree_dir *out)
{
	return read_dir(t, "SELECT name, " ATTR_COLUMNS " FROM inodes WHERE"
			" parent IS NULL AND tag = " TRASH_TAG " ORDER BY name",
			0, out);
}

int tree_add_tagged_folder(struct tree *t, uint64_t parent, const char *name,
			   unsigned tag, uint32_t uid, uint32_t gid,
			   struct tree_attr *out)
{
	struct tree_attr dir;
	int64_t now = fclock_now_ns();
	int ret = tree_getattr(t, parent, &dir);

	if (!ret)
		ret = insert_inode(t, dir.session, &parent, name,
				   S_IFDIR | 0755, uid, gid, NULL, tag, now, out);
	return ret < 0 ? ret : touch_dir(t, parent, 1, now);
}

int tree_create(struct tree *t, uint64_t parent, const char *name,
		uint32_t mode, uint32_t uid, uint32_t gid, const char *target,
		struct tree_attr *out)
{
	struct tree_attr dir;
	int64_t now = fclock_now_ns();
	int ret;

	if (!S_ISREG(mode) && !S_ISDIR(mode) && !S_ISLNK(mode))
		return -EPERM;
	if (S_ISLNK(mode) && (!target || !*target))
		return -ENOENT;
	ret = store_begin(t->st);
	if (ret < 0)
		return ret;
	ret = tree_getattr(t, parent, &dir);
	if (ret < 0)
		goto out;
	if (!S_ISDIR(dir.mode)) {
		ret = -ENOTDIR;
		goto out;
	}
	/* A setgid folder hands its group down, and to folders the bit too
	 * (Linux's rule; shared upload folders rely on it). */
	if (dir.mode & S_ISGID) {
		gid = dir.gid;
		if (S_ISDIR(mode))
			mode |= S_ISGID;
	}
	ret = insert_inode(t, dir.session, &parent, name, mode, uid, gid,
			   S_ISLNK(mode) ? target : NULL, 0, now, out);
	if (ret < 0)
		goto out;
	ret = touch_dir(t, parent, S_ISDIR(mode) ? 1 : 0, now);
	if (ret < 0)
		goto out;
	ret = store_commit(t->st);
	return ret;
out:
	store_rollback(t->st);
	return ret;
}

/* ---- removal ---------------------------------------------------------- */

/* ---- the kernel's references ------------------------------------------ */

static size_t ref_home(const struct ref_table *r, uint64_t ino)
{
	/* Fibonacci hashing: row ids are sequential */
	return (size_t)((ino * 0x9E3779B97F4A7C15ull) >> 32) & (r->size - 1);
}

static struct ref_slot *ref_find(const struct ref_table *r, uint64_t ino)
{
	if (!r->size)
		return NULL;
	for (size_t i = ref_home(r, ino);; i = (i + 1) & (r->size - 1)) {
		if (r->slots[i].ino == ino)
			return &r->slots[i];
		if (!r->slots[i].ino)
			return NULL;
	}
}

static int ref_grow(struct ref_table *r)
{
	struct ref_table bigger = { .size = r->size ? 2 * r->size : 64 };

	bigger.slots = calloc(bigger.size, sizeof(*bigger.slots));
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < r->size; i++) {
		size_t j;

		if (!r->slots[i].ino)
			continue;
		for (j = ref_home(&bigger, r->slots[i].ino);
		     bigger.slots[j].ino; j = (j + 1) & (bigger.size - 1))
			;
		bigger.slots[j] = r->slots[i];
	}
	bigger.used = r->used;
	free(r->slots);
	*r = bigger;
	return 0;
}

/* Empty slot `s`, moving back the slots after it that would otherwise
 * no longer be found from their home. */
static void ref_remove(struct ref_table *r, struct ref_slot *s)
{
	size_t hole = (size_t)(s - r->slots), mask = r->size - 1;

	for (size_t i = (hole + 1) & mask; r->slots[i].ino; i = (i + 1) & mask) {
		size_t home = ref_home(r, r->slots[i].ino);

		/* it may move into the hole when its home is not in (hole, i] */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			r->slots[hole] = r->slots[i];
			hole = i;
		}
	}
	r->slots[hole] = (struct ref_slot){ 0 };
	r->used--;
	/* a mount that saw a million files and forgot them gives it back */
	if (r->used == 0) {
		free(r->slots);
		*r = (struct ref_table){ 0 };
	}
}

int tree_ref(struct tree *t, uint64_t ino)
{
	struct ref_table *r = &t->refs;
	struct ref_slot *s = ref_find(r, ino);
	size_t i;

	if (s) {
		s->count++;
		return 0;
	}
	if (2 * (r->used + 1) > r->size && ref_grow(r) < 0)
		return -ENOMEM;
	for (i = ref_home(r, ino); r->slots[i].ino; i = (i + 1) & (r->size - 1))
		;
	r->slots[i] = (struct ref_slot){ .ino = ino, .count = 1 };
	r->used++;
	return 0;
}

bool tree_referenced(const struct tree *t, uint64_t ino)
{
	return ref_find(&t->refs, ino) != NULL;
}

static int delete_inode(struct tree *t, uint64_t ino)
{
	static const char sql[] = "DELETE FROM inodes WHERE ino = ?1";

	t->sweep_maybe = true;
	return store_run(t->st, sql, STORE_INT(ino));
}

/* The row of a file unlinked while open or referenced, once neither:
 * unless the unlink rolled back (the row has its name again). */
int tree_delete_if_unlinked(struct tree *t, uint64_t ino)
{
	static const char sql[] = "DELETE FROM inodes WHERE ino = ?1"
		" AND nlink = 0";

	t->sweep_maybe = true;
	return store_run(t->st, sql, STORE_INT(ino));
}

bool tree_forget_deletes(struct tree *t, uint64_t ino, uint64_t n)
{
	struct ref_slot *s = ref_find(&t->refs, ino);

	return s && s->count <= n && s->kept && !tree_open_find(t, ino);
}

int tree_forget(struct tree *t, uint64_t ino, uint64_t n)
{
	struct ref_slot *s = ref_find(&t->refs, ino);
	bool kept;

	if (!s)
		return 0;
	if (s->count > n) {
		s->count -= n;
		return 0;
	}
	kept = s->kept;
	ref_remove(&t->refs, s);
	/* an open handle keeps it still: tree_release() deletes it */
	if (!kept || tree_open_find(t, ino))
		return 0;
	/* inside the lock: on the writer's connection outside it, the next
	 * 256 MiB write took 12 % longer (unexplained; measured A/B) */
	return tree_delete_if_unlinked(t, ino);
}

/*
 * Take a row out of its folder.  A file open or referenced by the kernel
 * keeps its row, without a name, until the last of those goes; a folder
 * (empty: checked) or a file no one holds goes at once.
 */
static int detach_inode(struct tree *t, uint64_t ino, bool dir)
{
	static const char sql[] = "UPDATE inodes SET parent = NULL, name = NULL,"
		" nlink = 0, ctime_ns = ?2 WHERE ino = ?1";
	struct open_file *f = tree_open_find(t, ino);
	struct ref_slot *s = dir ? NULL : ref_find(&t->refs, ino);
	int ret;

	if (!f && !s)
		return delete_inode(t, ino);
	ret = store_run(t->st, sql, STORE_INT(ino), STORE_INT(fclock_now_ns()));
	if (ret < 0)
		return ret;
	/* set in the caller's transaction: a rollback leaves them stale,
	 * which tree_delete_if_unlinked() tells */
	if (f)
		f->orphan = true;
	if (s)
		s->kept = true;
	return 0;
}

static int has_children(struct tree *t, uint64_t dir, bool *has)
{
	static const char sql[] =
		"SELECT EXISTS (SELECT 1 FROM inodes WHERE parent = ?1)";
	int64_t any = 0;
	int ret = store_int(t->st, sql, &any, STORE_INT(dir));

	*has = any != 0;
	return ret;
}

/*
 * Whether `victim` may go to make room for (or as) an object that is a
 * folder when `dir`: the errnos of unlink(2), rmdir(2) and rename(2).
 */
static int check_removable(struct tree *t, const struct tree_attr *victim,
			   bool dir)
{
	bool has;
	int ret;

	if (dir && !S_ISDIR(victim->mode))
		return -ENOTDIR;
	if (!dir && S_ISDIR(victim->mode))
		return -EISDIR;
	if (!dir)
		return 0;
	ret = has_children(t, victim->ino, &has);
	if (ret < 0)
		return ret;
	return has ? -ENOTEMPTY : 0;
}

static int remove_entry(struct tree *t, uint64_t parent, const char *name,
			bool want_dir)
{
	struct tree_attr a;
	int ret = tree_lookup(t, parent, name, &a);

	if (!ret)
		ret = check_removable(t, &a, want_dir);
	if (!ret)
		ret = detach_inode(t, a.ino, want_dir);
	if (!ret)
		ret = touch_dir(t, parent, want_dir ? -1 : 0, fclock_now_ns());
	return ret;
}

static int remove_entry_alone(struct tree *t, uint64_t parent,
			      const char *name, bool want_dir)
{
	int ret = store_begin(t->st);

	if (ret < 0)
		return ret;
	ret = remove_entry(t, parent, name, want_dir);
	if (ret < 0) {
		store_rollback(t->st);
		return ret;
	}
	return store_commit(t->st);
}

int tree_unlink(struct tree *t, uint64_t parent, const char *name)
{
	return remove_entry_alone(t, parent, name, false);
}

int tree_rmdir(struct tree *t, uint64_t parent, const char *name)
{
	return remove_entry_alone(t, parent, name, true);
}

int tree_rmdir_within(struct tree *t, uint64_t parent, const char *name)
{
	return remove_entry(t, parent, name, true);
}

int tree_trash_remove(struct tree *t, const char *name)
{
	struct tree_attr a;
	bool has;
	int ret = tree_trash_lookup(t, name, &a);

	if (!ret)
		ret = has_children(t, a.ino, &has);
	if (!ret && has)
		ret = -ENOTEMPTY;
	return ret < 0 ? ret : delete_inode(t, a.ino);
}

int tree_move_root(struct tree *t, uint64_t root, uint64_t parent,
		   const char *name)
{
	struct tree_attr dir;
	int64_t now = fclock_now_ns(), old = 0;
	int ret;

	ret = store_int(t->st, "SELECT coalesce(parent, 0) FROM inodes"
			" WHERE ino = ?1 AND tag = " ROOT_TAG, &old, STORE_INT(root));
	if (ret < 0)
		return ret == -ENOENT ? -EINVAL : ret;
	if (parent) {
		ret = tree_getattr(t, parent, &dir);
		if (ret < 0)
			return ret;
		if (!S_ISDIR(dir.mode))
			return -ENOTDIR;
		/* a session lies in a trash, or at the mount's root; a
		 * name taken there is inodes_by_name's EEXIST */
		if (dir.session)
			return -EXDEV;
	}
	ret = store_run(t->st, "UPDATE inodes SET parent = nullif(?2, 0),"
			" name = CASE WHEN ?2 = 0 THEN NULL ELSE ?3 END,"
			" ctime_ns = ?4 WHERE ino = ?1", STORE_INT(root),
			STORE_INT(parent), STORE_BLOB(name, name ? strlen(name) : 0),
			STORE_INT(now));
	if (!ret && old)
		ret = touch_dir(t, (uint64_t)old, -1, now);
	if (!ret && parent)
		ret = touch_dir(t, parent, 1, now);
	return ret;
}

/* Whether `dir` is `ancestor` or lies below it. */
static int is_within(struct tree *t, uint64_t dir, uint64_t ancestor,
		     bool *within)
{
	static const char sql[] =
		"WITH RECURSIVE up(ino) AS (SELECT ?1 UNION ALL"
		" SELECT i.parent FROM inodes i JOIN up ON i.ino = up.ino"
		" WHERE i.parent IS NOT NULL)"
		" SELECT EXISTS (SELECT 1 FROM up WHERE ino = ?2)";
	int64_t found = 0;
	int ret = store_int(t->st, sql, &found, STORE_INT(dir),
			    STORE_INT(ancestor));

	*within = found != 0;
	return ret;
}

/*
 * `ino` and all below it now belong to `session` (0: a trash's rows):
 * moved into another session or a trash.  Sessions' roots in a trash
 * stay their sessions'.
 */
static int change_session(struct tree *t, uint64_t ino, int64_t session)
{
	static const char sql[] = "WITH RECURSIVE sub(ino) AS (SELECT ?1"
		" UNION ALL SELECT i.ino FROM inodes i JOIN sub"
		" ON i.parent = sub.ino WHERE i.tag <> " ROOT_TAG ")"
		" UPDATE inodes SET session = nullif(?2, 0)"
		" WHERE ino IN (SELECT ino FROM sub)";

	return store_run(t->st, sql, STORE_INT(ino), STORE_INT(session));
}

/* Whether a session's root lies below folder `dir` (in a trash). */
static int holds_session_root(struct tree *t, uint64_t dir, bool *holds)
{
	static const char sql[] = "WITH RECURSIVE sub(ino) AS (SELECT ?1"
		" UNION ALL SELECT i.ino FROM inodes i JOIN sub"
		" ON i.parent = sub.ino)"
		" SELECT EXISTS (SELECT 1 FROM inodes WHERE tag = "
		ROOT_TAG " AND parent IN (SELECT ino FROM sub))";
	int64_t found = 0;
	int ret = store_int(t->st, sql, &found, STORE_INT(dir));

	*holds = found != 0;
	return ret;
}

static int move_inode(struct tree *t, uint64_t ino, uint64_t newparent,
		      const char *newname, int64_t now)
{
	static const char sql[] = "UPDATE inodes SET parent = ?2, name = ?3,"
		" ctime_ns = ?4 WHERE ino = ?1";

	return store_run(t->st, sql, STORE_INT(ino), STORE_INT(newparent),
			 STORE_BLOB(newname, strlen(newname)), STORE_INT(now));
}

int tree_rename_within(struct tree *t, uint64_t parent, const char *name,
		       uint64_t newparent, const char *newname, bool noreplace)
{
	struct tree_attr src, dst, np;
	int64_t now = fclock_now_ns();
	bool src_dir, within;
	int ret;

	ret = tree_lookup(t, parent, name, &src);
	if (ret < 0)
		return ret;
	ret = tree_getattr(t, newparent, &np);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(np.mode))
		return -ENOTDIR;
	/* a session's root folder moves only within a trash (it is the
	 * session's: session.h moves it anywhere else) */
	if (src.session_root && np.session)
		return -EXDEV;
	src_dir = S_ISDIR(src.mode);
	if (src_dir) {
		ret = is_within(t, newparent, src.ino, &within);
		if (ret < 0)
			return ret;
		if (within)
			return -EINVAL;
	}
	/* nor inside a folder of a trash: a session deleted with the folder
	 * would take it along, out of every listing */
	if (src_dir && !src.session && np.session) {
		ret = holds_session_root(t, src.ino, &within);
		if (ret < 0)
			return ret;
		if (within)
			return -EXDEV;
	}
	ret = tree_lookup(t, newparent, newname, &dst);
	if (ret == 0) {
		if (dst.ino == src.ino)
			return 0;
		if (noreplace)
			return -EEXIST;
		ret = check_removable(t, &dst, src_dir);
		/* the replaced folder's ".." link goes away */
		if (!ret && src_dir)
			ret = touch_dir(t, newparent, -1, now);
		if (!ret)
			ret = detach_inode(t, dst.ino, src_dir);
		if (ret < 0)
			return ret;
	} else if (ret != -ENOENT) {
		return ret;
	}
	ret = move_inode(t, src.ino, newparent, newname, now);
	if (!ret && np.session != src.session && !src.session_root)
		ret = change_session(t, src.ino, np.session);
	if (!ret)
		ret = touch_dir(t, parent, src_dir ? -1 : 0, now);
	if (!ret)
		ret = touch_dir(t, newparent, src_dir ? 1 : 0, now);
	return ret;
}

int tree_rename(struct tree *t, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, bool noreplace)
{
	int ret = store_begin(t->st);

	if (ret < 0)
		return ret;
	ret = tree_rename_within(t, parent, name, newparent, newname,
				 noreplace);
	if (ret < 0) {
		store_rollback(t->st);
		return ret;
	}
	return store_commit(t->st);
}

int tree_set_tag(struct tree *t, uint64_t ino, unsigned tag)
{
	static const char sql[] = "UPDATE inodes SET tag = ?2 WHERE ino = ?1";

	return store_run(t->st, sql, STORE_INT(ino), STORE_INT(tag));
}

/* ---- files stored whole or not at all ----------------------------------- */

int tree_create_unlinked(struct tree *t, uint64_t parent,
			 struct tree_attr *out)
{
	struct tree_attr dir;
	int ret;

	ret = tree_getattr(t, parent, &dir);
	if (ret < 0)
		return ret;
	if (!S_ISDIR(dir.mode))
		return -ENOTDIR;
	/* no folder and no links: what tree_new() sweeps after a crash */
	ret = insert_inode(t, dir.session, NULL, NULL, S_IFREG | 0644, dir.uid,
			   dir.gid, NULL, 0, fclock_now_ns(), out);
	if (ret < 0)
		return ret;
	ret = tree_open_first(t, out);
	if (ret < 0)
		delete_inode(t, out->ino);
	return ret;
}

int tree_link_unlinked(struct tree *t, uint64_t ino, uint64_t parent,
		       const char *name)
{
	static const char link_sql[] = "UPDATE inodes SET parent = ?2,"
		" name = ?3, nlink = 1, ctime_ns = ?4 WHERE ino = ?1";
	struct open_file *f = tree_open_find(t, ino);
	struct tree_attr dir, old;
	int64_t now = fclock_now_ns(), session = 0;
	int ret;

	if (!f || !f->orphan)
		return -EINVAL;
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	/* the data first: once linked, the file is whole */
	ret = tree_flush_file(t, f, false);
	if (ret < 0)
		return ret;
	ret = store_begin(t->st);
	if (ret < 0)
		return ret;
	ret = tree_getattr(t, parent, &dir);
	if (!ret && !S_ISDIR(dir.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = store_int(t->st, "SELECT coalesce(session, 0) FROM inodes"
				" WHERE ino = ?1", &session, STORE_INT(ino));
	if (!ret && dir.session != session)
		ret = -EXDEV;
	if (!ret) {
		ret = tree_lookup(t, parent, name, &old);
		if (!ret)
			ret = S_ISDIR(old.mode) ? -EISDIR
						: detach_inode(t, old.ino, false);
		else if (ret == -ENOENT)
			ret = 0;
	}
	if (!ret)
		ret = store_run(t->st, link_sql, STORE_INT(ino),
				STORE_INT(parent), STORE_BLOB(name, strlen(name)),
				STORE_INT(now));
	if (!ret)
		ret = touch_dir(t, parent, 0, now);
	if (ret < 0) {
		store_rollback(t->st);
		return ret;
	}
	ret = store_commit(t->st);
	if (!ret)
		f->orphan = false;
	return ret;
}

int tree_put_file(struct tree *t, uint64_t parent, const char *name,
		  const char *data, size_t len, struct tree_attr *out)
{
	struct tree_attr a;
	int ret, r;

	ret = tree_create_unlinked(t, parent, &a);
	if (ret < 0)
		return ret;
	ret = len ? tree_write(t, a.ino, data, len, 0) : 0;
	if (!ret)
		ret = tree_link_unlinked(t, a.ino, parent, name);
	/* not linked: this release deletes it */
	r = tree_release(t, a.ino);
	if (!ret)
		ret = r;
	if (!ret && out)
		ret = tree_getattr(t, a.ino, out);
	return ret;
}

/* ---- readlink, readdir -------------------------------------------------- */

int tree_readlink(struct tree *t, uint64_t ino, struct sbuf *out)
{
	static const char sql[] =
		"SELECT target FROM inodes WHERE ino = ?1 AND target IS NOT NULL";
	sqlite3_stmt *q = store_stmt(t->st, sql);
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)ino);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW)
		ret = sbuf_add(out, sqlite3_column_blob(q, 0),
			       (size_t)sqlite3_column_bytes(q, 0));
	else
		ret = rc == SQLITE_DONE ? -EINVAL : store_errno(rc);
	store_done(q);
	return ret;
}

void tree_dir_free(struct tree_dir *dir)
{
	for (size_t i = 0; i < dir->n; i++)
		free(dir->ents[i].name);
	free(dir->ents);
	dir->ents = NULL;
	dir->n = 0;
}

static int read_dir(struct tree *t, const char *sql, uint64_t ino,
		    struct tree_dir *out)
{
	sqlite3_stmt *q = store_stmt(t->st, sql);
	size_t alloc = 0;
	int rc, ret = 0;

	out->ents = NULL;
	out->n = 0;
	if (!q)
		return -EIO;
	/* the trash folders' listing has no folder to name */
	if (sqlite3_bind_parameter_count(q))
		sqlite3_bind_int64(q, 1, (int64_t)ino);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct tree_dirent *e;
		size_t len = (size_t)sqlite3_column_bytes(q, 0);

		if (out->n == alloc) {
			size_t n = alloc ? alloc * 2 : 32;
			struct tree_dirent *p = realloc(out->ents, n * sizeof(*p));

			if (!p) {
				ret = -ENOMEM;
				break;
			}
			out->ents = p;
			alloc = n;
		}
		e = &out->ents[out->n];
		e->name = malloc(len + 1);
		if (!e->name) {
			ret = -ENOMEM;
			break;
		}
		memcpy(e->name, sqlite3_column_blob(q, 0), len);
		e->name[len] = '\0';
		row_to_attr(q, 1, &e->attr);
		tree_overlay_open(t, &e->attr);
		out->n++;
	}
	store_done(q);
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	if (ret < 0)
		tree_dir_free(out);
	return ret;
}

int tree_readdir(struct tree *t, uint64_t ino, struct tree_dir *out)
{
	static const char sql[] = "SELECT name, " ATTR_COLUMNS
		" FROM inodes WHERE parent = ?1 ORDER BY name";

	return read_dir(t, sql, ino, out);
}

int tree_session_has_data(struct tree *t, int64_t session, bool *has)
{
	static const char sql[] = "SELECT EXISTS (SELECT 1 FROM inodes"
		" WHERE session = ?1 AND parent IS NOT NULL AND tag = 0"
		" AND nlink > 0)";
	int64_t any = 0;
	int ret = store_int(t->st, sql, &any, STORE_INT(session));

	*has = any != 0;
	return ret;
}

int tree_forget_session(struct tree *t, int64_t session)
{
	/* an unlinked one too: it still has its session */
	static const char sql[] = "UPDATE inodes SET session = NULL,"
		" parent = NULL, name = NULL, nlink = 0"
		" WHERE ino = ?1 AND session = ?2";

	/*
	 * Open files of the session become unlinked-while-open files with
	 * no session, which the session's cascading delete spares: their
	 * descriptors keep working until the last release deletes them.
	 * Which session a file is in is asked of the store, never
	 * remembered: a move that rolled back must not leave it wrong.
	 */
	/* the session's rows go in the caller's transaction */
	t->sweep_maybe = true;
	for (int b = 0; b < OPEN_BUCKETS; b++) {
		for (struct open_file *f = t->open[b]; f; f = f->next) {
			int ret = store_run(t->st, sql, STORE_INT(f->ino),
					    STORE_INT(session));

			if (ret < 0)
				return ret;
			if (store_changes(t->st) > 0) {
				struct ref_slot *r = ref_find(&t->refs, f->ino);

				f->orphan = true;
				/* the kernel's last forget deletes it then */
				if (r)
					r->kept = true;
			}
		}
	}
	return 0;
}

/* ---- life cycle ---------------------------------------------------------- */

int tree_new(struct tree **out, struct store *st)
{
	struct tree *t = calloc(1, sizeof(*t));
	int ret;

	*out = NULL;
	if (!t)
		return -ENOMEM;
	t->st = st;
	t->contents = store_contents(st);
	/* no folder (an in-memory store): every byte in chunks */
	t->inline_max = t->contents ? TREE_INLINE_MAX : TREE_MAX_SIZE;
	/* Files unlinked while open when the last daemon died; then the
	 * data files no row names (contents.h) */
	ret = store_exec(st, "DELETE FROM inodes WHERE nlink = 0");
	if (!ret && t->contents)
		ret = contents_mount_sweep(t->contents, st, &t->next_content);
	if (ret < 0) {
		free(t);
		return ret;
	}
	*out = t;
	return 0;
}

void tree_free(struct tree *t)
{
	if (!t)
		return;
	for (int b = 0; b < OPEN_BUCKETS; b++) {
		struct open_file *f = t->open[b], *next;

		for (; f; f = next) {
			next = f->next;
			if (f->orphan)
				tree_delete_unlinked(t, f);
			if (!f->orphan)
				tree_flush_file(t, f, true);
			tree_drop_chunks(t, f);
			if (f->fd >= 0)
				close(f->fd);
			free(f->chunks);
			free(f);
		}
	}
	/* the kernel forgets nothing once unmounted: what it held unlinked
	 * goes now (else tree_new() sweeps it) */
	for (size_t i = 0; i < t->refs.size; i++)
		if (t->refs.slots[i].kept)
			tree_delete_if_unlinked(t, t->refs.slots[i].ino);
	free(t->refs.slots);
	tree_sweep(t);
	while (t->npool)
		free(t->pool[--t->npool]);
	free(t);
}
