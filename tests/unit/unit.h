/*
 * unit: what the cmocka programs share — a temporary folder per fixture
 * and a probe of the database's rows.
 */
#ifndef FLOWFS_UNIT_H
#define FLOWFS_UNIT_H

#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include <jansson.h>

#include "store/store.h"
#include "store/tree.h"

/* Make /tmp/flowfs-unit-<what>-XXXXXX into `dir`; 0, or -1 on failure. */
int unit_tmpdir(char *dir, size_t size, const char *what);

/* A JSON document written with ' for " (for texts that need no quote of
 * their own; any value, NUL escapes allowed); fails the test when it
 * does not parse. */
json_t *unit_json(const char *text);

/* Write `text` to <base>/<rel>, making the folders on the way; fails
 * the running test when it cannot. */
void unit_put(const char *base, const char *rel, const char *text);

/*
 * Keep a deck the test generated for the real DATCOM (issue 28): when
 * FLOWFS_DECK_DUMP names a folder, write it there as <what>-<n>.dat,
 * with `notes` (what status would note beside it, may be "") as
 * <what>-<n>.notes; nothing otherwise.  tests/integration/
 * test_datcom_real.py runs the unit programs so and every deck through
 * DATCOM.  Fails the running test when it cannot write.
 */
void unit_keep_deck(const char *what, const char *deck, size_t len,
		    const char *notes);

/* Remove `dir` and everything below it (errors ignored: it is /tmp). */
void unit_rmtree(const char *dir);

/*
 * The bytes of ../shared/<path> beside the repo (data no one on this
 * project wrote: the seeds' fixtures, DATCOM decks), NUL-terminated, or
 * NULL when it is absent (the caller skips).  free() it.
 */
char *unit_read_shared(const char *path, size_t *len);

/*
 * The first column of the first row of a printf-formatted query, or
 * -12345 when there is no row.  Fails the running test on bad SQL.
 */
int64_t unit_sql_int(sqlite3 *db, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A new database with its tree in a new temporary folder named after
 * `what`: dir (64 bytes), path (128 bytes: dir/test.db), *st and *t.
 * 0, or -1 with nothing left behind.  unit_db_close() undoes it all.
 */
int unit_db_open(const char *what, char *dir, char *path, struct store **st,
		 struct tree **t);
void unit_db_close(const char *dir, struct store *st, struct tree *t);

/*
 * Run `undo` (SQL taking the database back to an older schema), close
 * it and open it again, so that it is migrated: the test fails when any
 * step does.  UNIT_UNDO_V9 takes a version 9 database back to 8.
 */
void unit_db_reopen_after(const char *path, const char *undo,
			  struct store **st, struct tree **t);
/* What version 13 added, undone. */
#define UNIT_UNDO_V13 \
	"DROP INDEX sessions_snapshots;" \
	"ALTER TABLE sessions DROP COLUMN snapshot_of;" \
	"ALTER TABLE sessions DROP COLUMN snapshot_label;" \
	"ALTER TABLE sessions DROP COLUMN forked_from;" \
	"DROP TRIGGER content_taken;" \
	"DROP TRIGGER content_dropped;" \
	"DROP TRIGGER content_changed;" \
	"DROP INDEX inodes_by_content;" \
	"DROP TABLE contents;" \
	"ALTER TABLE inodes DROP COLUMN content;"

/* What version 12 added, undone. */
#define UNIT_UNDO_V12 UNIT_UNDO_V13 \
	"DROP TABLE kept_edges;"

/* What version 11 added, undone. */
#define UNIT_UNDO_V11 UNIT_UNDO_V12 \
	"DROP TABLE refusals;"

/* What version 10 added, undone (to test migrations from before it). */
#define UNIT_UNDO_V10 UNIT_UNDO_V11 \
	"DROP TABLE graph_jobs;" \
	"DROP TABLE graph_runs;" \
	"DELETE FROM inodes WHERE ino IN (SELECT jobs_ino FROM sessions);" \
	"ALTER TABLE sessions DROP COLUMN jobs_ino;" \
	"UPDATE inodes SET nlink = nlink - 1" \
	"  WHERE ino IN (SELECT root_ino FROM sessions);"

#define UNIT_UNDO_V9 UNIT_UNDO_V10 \
	"DROP TRIGGER graph_nodes_counted;" \
	"DROP TRIGGER graph_nodes_uncounted;" \
	"DROP TRIGGER graph_nodes_moved;" \
	"DROP TRIGGER graph_edges_counted;" \
	"DROP TRIGGER graph_edges_uncounted;" \
	"DROP TRIGGER graph_edges_moved;" \
	"DROP TABLE graph_counts;"

#endif
