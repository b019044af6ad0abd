/* tree_copy: copies that share contents: a folder and all below it copied
 * as rows (a fork, a snapshot, a restore), a data file shared; see tree.h. */
#include "store/tree_i.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/fclock.h"

int tree_flush_all(struct tree *t)
{
	for (int b = 0; b < OPEN_BUCKETS; b++)
		for (struct open_file *f = t->open[b]; f; f = f->next) {
			int ret = tree_flush_file(t, f, false);

			if (ret < 0)
				return ret;
		}
	return 0;
}

int tree_copy(struct tree *t, uint64_t root, uint64_t skip_below,
	      int64_t session, uint64_t *new_root)
{
	static const char map_sql[] =
		"CREATE TEMP TABLE IF NOT EXISTS tree_copy_map ("
		"  old INTEGER PRIMARY KEY, new INTEGER NOT NULL,"
		"  old_parent INTEGER);"
		"DELETE FROM temp.tree_copy_map;";
	/* the rows below `root` (named ones: nlink > 0), not below
	 * `skip_below` (which is copied, empty) */
	static const char list_sql[] =
		"WITH RECURSIVE sub(ino) AS (SELECT ?1 UNION ALL"
		" SELECT i.ino FROM inodes i JOIN sub ON i.parent = sub.ino"
		" WHERE sub.ino <> ?2 AND i.nlink > 0)"
		" SELECT ino FROM sub ORDER BY ino";
	/* a copy of the row, in no folder until all are made */
	static const char copy_sql[] =
		"INSERT INTO inodes(session, parent, name, mode, uid, gid,"
		" nlink, size, alloc, atime_ns, mtime_ns, ctime_ns, target, tag,"
		" content) SELECT nullif(?2, 0), NULL, name, mode, uid, gid,"
		" nlink, size, alloc, atime_ns, mtime_ns, ctime_ns, target, tag,"
		" content FROM inodes WHERE ino = ?1";
	static const char note_sql[] =
		"INSERT INTO temp.tree_copy_map(old, new, old_parent)"
		" SELECT ?1, ?2, parent FROM inodes WHERE ino = ?1";
	static const char link_sql[] =
		"UPDATE inodes SET parent = (SELECT p.new FROM"
		" temp.tree_copy_map m JOIN temp.tree_copy_map p"
		" ON p.old = m.old_parent WHERE m.new = inodes.ino)"
		" WHERE ino IN (SELECT new FROM temp.tree_copy_map WHERE old <> ?1)";
	static const char chunks_sql[] =
		"INSERT INTO chunks(ino, idx, data) SELECT m.new, c.idx, c.data"
		" FROM chunks c JOIN temp.tree_copy_map m ON m.old = c.ino";
	/* the jobs' folder left empty has two links, like a new one */
	static const char skip_sql[] =
		"UPDATE inodes SET nlink = 2 WHERE ino = (SELECT new FROM"
		" temp.tree_copy_map WHERE old = ?1)";
	sqlite3_stmt *q;
	int rc, ret;

	ret = store_exec(t->st, map_sql);
	if (ret < 0)
		return ret;
	q = store_stmt(t->st, list_sql);
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)root);
	sqlite3_bind_int64(q, 2, (int64_t)skip_below);
	/* the list is read whole first: the inserts add rows to inodes */
	{
		int64_t *inos = NULL;
		size_t n = 0, alloc = 0;

		while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
			if (n == alloc) {
				size_t na = alloc ? 2 * alloc : 256;
				int64_t *p = realloc(inos, na * sizeof(*p));

				if (!p) {
					store_done(q);
					free(inos);
					return -ENOMEM;
				}
				inos = p;
				alloc = na;
			}
			inos[n++] = sqlite3_column_int64(q, 0);
		}
		store_done(q);
		ret = rc == SQLITE_DONE ? 0 : store_errno(rc);
		for (size_t i = 0; i < n && !ret; i++) {
			int64_t made;

			ret = store_run(t->st, copy_sql, STORE_INT(inos[i]),
					STORE_INT(session));
			made = sqlite3_last_insert_rowid(store_db(t->st));
			if (!ret)
				ret = store_run(t->st, note_sql,
						STORE_INT(inos[i]),
						STORE_INT(made));
			if (!ret && (uint64_t)inos[i] == root)
				*new_root = (uint64_t)made;
		}
		free(inos);
	}
	if (!ret)
		ret = store_run(t->st, link_sql, STORE_INT(root));
	if (!ret)
		ret = store_run(t->st, chunks_sql);
	if (!ret && skip_below)
		ret = store_run(t->st, skip_sql, STORE_INT(skip_below));
	/* open files of either side ask again before their next write */
	if (!ret)
		tree_shared(t);
	return ret;
}

int tree_share(struct tree *t, uint64_t src, uint64_t dst, int64_t *shared)
{
	static const char sql[] = "UPDATE inodes SET content = ?2, size = ?3,"
		" alloc = ?4, mtime_ns = ?5, ctime_ns = ?5 WHERE ino = ?1";
	struct open_file *from = tree_open_find(t, src),
			 *to = tree_open_find(t, dst);
	int64_t now = fclock_now_ns();
	int fd, ret;

	*shared = 0;
	if (!from || !to)
		return -EBADF;
	if (from == to || from->fd < 0 || to->fd >= 0 || to->size ||
	    to->nchunks)
		return -EOPNOTSUPP;
	/* what the source's row names is what is shared */
	ret = tree_flush_file(t, from, false);
	if (ret < 0)
		return ret;
	fd = tree_open_content(t, from->content, 0, from->ino, false);
	if (fd < 0)
		return fd;
	ret = store_begin(t->st);
	if (!ret)
		ret = store_run(t->st, sql, STORE_INT(dst),
				STORE_INT(from->content), STORE_INT(from->size),
				STORE_INT(from->alloc), STORE_INT(now));
	if (!ret)
		ret = store_run(t->st, "DELETE FROM chunks WHERE ino = ?1",
				STORE_INT(dst));
	if (ret < 0)
		store_rollback(t->st);
	else
		ret = store_commit(t->st);
	if (ret < 0) {
		close(fd);
		return ret;
	}
	to->fd = fd;
	to->content = from->content;
	to->size = to->stored_size = from->size;
	to->alloc = from->alloc;
	to->mtime_ns = to->ctime_ns = now;
	to->attr_dirty = to->content_dirty = to->owned = false;
	/* the source asks again before its next write */
	tree_shared(t);
	t->changes++;
	*shared = to->size;
	return 0;
}

int tree_parent(struct tree *t, uint64_t ino, uint64_t *parent)
{
	int64_t v = 0;
	int ret = store_int(t->st, "SELECT coalesce(parent, 0) FROM inodes"
			    " WHERE ino = ?1", &v, STORE_INT(ino));

	*parent = (uint64_t)v;
	return ret;
}

int tree_copied(struct tree *t, uint64_t old, uint64_t *made)
{
	int64_t v = 0;
	int ret = store_int(t->st, "SELECT new FROM temp.tree_copy_map"
			    " WHERE old = ?1", &v, STORE_INT(old));

	*made = (uint64_t)v;
	return ret;
}
