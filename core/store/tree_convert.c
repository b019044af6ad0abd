/* tree_convert: a store of the last schema brought up to this one, its large
 * files' chunks moved out to data files; see tree.h. */
#include "store/tree_i.h"

#include <errno.h>

/*
 * A store of the last schema keeps large files in chunks: each moves to
 * a data file in two steps a crash cannot break — the file written and
 * synced (an orphan until named: swept at mount), then one durable
 * commit that names it and deletes the chunks.  Interrupted, the next
 * mount goes on where this one stopped.
 */
int tree_convert(struct tree *t, tree_progress_fn progress, void *ctx)
{
	static const char total_sql[] = "SELECT count(*), coalesce(sum(size), 0)"
		" FROM inodes WHERE content IS NULL AND (mode & 61440) = 32768"
		" AND size > ?1";
	static const char next_sql[] = "SELECT ino FROM inodes"
		" WHERE content IS NULL AND (mode & 61440) = 32768"
		" AND size > ?1 AND ino > ?2 ORDER BY ino LIMIT 1";
	sqlite3_stmt *q = store_stmt(t->st, total_sql);
	int64_t files = 0, total = 0, done = 0, last = 0, ino;
	int ret;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, TREE_INLINE_MAX);
	if (sqlite3_step(q) == SQLITE_ROW) {
		files = sqlite3_column_int64(q, 0);
		total = sqlite3_column_int64(q, 1);
	}
	store_done(q);
	if (!files)
		return 0;
	while ((ret = store_int(t->st, next_sql, &ino,
				STORE_INT(TREE_INLINE_MAX),
				STORE_INT(last))) == 0) {
		struct open_file *f;
		bool opened = !tree_open_find(t, (uint64_t)ino);

		last = ino;
		ret = tree_open(t, (uint64_t)ino);
		if (ret < 0)
			return ret;
		f = tree_open_find(t, (uint64_t)ino);
		ret = f->fd < 0 ? tree_externalize(t, f) : 0;
		if (!ret)
			ret = tree_flush_file(t, f, true);
		done += f->size;
		if (opened || ret < 0) {
			int r = tree_release(t, (uint64_t)ino);

			ret = ret < 0 ? ret : r;
		}
		if (ret < 0)
			return ret;
		if (progress)
			progress(ctx, done, total);
	}
	if (ret != -ENOENT)
		return ret;
	/* the chunks' pages back to the disk */
	return store_exec(t->st, "PRAGMA incremental_vacuum");
}
