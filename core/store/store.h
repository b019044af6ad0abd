/*
 * store: the one SQLite database that holds every session.  The database
 * as a whole: it creates every table (the graph's and the runs' too) but
 * calls nothing of skills, graphs or runs.
 *
 * ---- Opening ----
 * store_open() opens or creates the database file, checks that it is a
 * flowfs database (PRAGMA application_id), and migrates older schemas
 * forward inside one transaction.  It refuses, with a message for a person,
 * a file that is not a database, a database of another application, and a
 * schema newer than this build knows.
 *
 * ---- Durability ----
 * The connection runs in WAL mode (other processes may read while flowfs
 * writes), with foreign keys on and synchronous=NORMAL: a committed
 * transaction survives a killed process; one begun with
 * store_begin_durable() also survives power loss (the fsync path).
 *
 * ---- Statements ----
 * Statements are prepared once and cached by their SQL text's address:
 *
 *	static const char sql[] = "SELECT ... WHERE ino = ?1";
 *	sqlite3_stmt *q = store_stmt(st, sql);   // reset, bindings cleared
 *	if (!q) return -EIO;
 *	sqlite3_bind_int64(q, 1, ino);
 *	rc = sqlite3_step(q);
 *	...
 *	store_done(q);                           // always, on every path
 *
 * ---- Threads ----
 * A store is not thread-safe: its user serializes calls (flowfs holds a
 * lock around every filesystem request); threads that work beside each
 * other use a connection each (store_open_beside()).
 *
 * ---- Errors ----
 * Errors from SQLite become errnos through store_errno(): SQLITE_BUSY and
 * SQLITE_LOCKED become -EAGAIN (another process holds the write lock; the
 * caller may retry), SQLITE_FULL -ENOSPC, SQLITE_READONLY -EROFS,
 * SQLITE_NOMEM -ENOMEM, SQLITE_TOOBIG -EFBIG, SQLITE_CONSTRAINT -EEXIST
 * (a unique name taken; callers that can break another constraint check
 * for it first), anything else -EIO.
 */
#ifndef FLOWFS_STORE_H
#define FLOWFS_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <time.h>
#include <sqlite3.h>

#include "lib/ferr.h"

/* An SQL expression for a random (version 4) UUID string. */
#define STORE_SQL_UUID4 \
	"lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||" \
	" substr(hex(randomblob(2)), 2) || '-' ||" \
	" substr('89ab', 1 + (abs(random()) % 4), 1) ||" \
	" substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"

/* The schema version this build creates and understands. */
#define STORE_SCHEMA_VERSION 13
/* 'FlFS': marks a database as flowfs's (PRAGMA application_id). */
#define STORE_APPLICATION_ID 0x466c4653

struct store;

/*
 * Open (creating if missing) the database at `path`.  The parent folder
 * must exist.  A database it creates is mode 0600 (SQLite gives its -wal
 * and -shm the database's mode): it holds every session, uploads that
 * are 0600 in the mount too.  On failure returns a negative errno and a
 * one-line reason.
 *
 * Space comes back.  A database is in incremental auto-vacuum mode: the
 * pages data freed sit on SQLite's free list until the checkpointer
 * (below) gives them back to the disk, STORE_VACUUM_STEP_PAGES at a time,
 * each step a short write transaction of its own connection that gives
 * way to any other writer (it never waits for the lock).  A database made
 * by a flowfs before this (auto-vacuum off) is rewritten once, by VACUUM,
 * when it is opened: that takes about as long as copying the file, and
 * up to twice its size again in free space (a copy in SQLite's temporary
 * folder, and the rewritten pages in the log), before anything is
 * mounted; when it fails (no room), the database is used as it is and
 * store_warning() says so.
 */
int store_open(struct store **out, const char *path, struct ferr *err);

/* A line for a person about what store_open() could not do but did
 * without (auto-vacuum not turned on), or NULL. */
const char *store_warning(const struct store *st);

#define STORE_VACUUM_STEP_PAGES 64

/*
 * The bytes of the database's pages that hold data (`used`) and those on
 * its free list, waiting to be given back (`free_list`).  0, or a
 * negative errno.
 */
int store_space(struct store *st, int64_t *used, int64_t *free_list);

/*
 * Whether other users may read or write the database at `path` (or the
 * -wal, -shm beside it): 1 with a line for a person in `warn` (which file,
 * its mode, the chmod that fixes it), 0 when only its owner may, or a
 * negative errno when it cannot be looked at.
 */
int store_check_private(const char *path, struct ferr *warn);
void store_close(struct store *st);

/*
 * Move WAL checkpoints (copying committed pages back into the database
 * file) to a background thread with its own connection, so commits do
 * not wait for them; the same thread gives freed pages back to the disk
 * (above).  For a long-lived store (the daemon); stopped by
 * store_close().  Call it after any fork().
 */
int store_start_checkpointer(struct store *st, struct ferr *err);

/*
 * A second connection to the database of `first` (open, checked and
 * migrated), for another thread: its own statements and transactions,
 * the same settings, its commits waking the checkpointer of `first`
 * (started before).  Closed by store_close(), before `first`.
 */
int store_open_beside(struct store *first, struct store **out,
		      struct ferr *err);

sqlite3 *store_db(struct store *st);

/* The data files beside the database (contents.h): opened, and made when
 * missing, by store_open(); shared by the connections beside it.  NULL
 * for ":memory:" (whose files keep every byte in chunks). */
struct contents;
struct contents *store_contents(struct store *st);
const char *store_path(const struct store *st);

/*
 * Column `col` of the current row: a JSON document flowfs checked before
 * storing it, parsed (a new reference in *out).  -EIO when it no longer
 * parses (the database was damaged), or -ENOMEM.
 */
int store_column_json(sqlite3_stmt *q, int col, json_t **out);

/* The cached statement for `sql` (same address each call), reset. */
sqlite3_stmt *store_stmt(struct store *st, const char *sql);
/* Reset a statement from store_stmt() so it holds no read snapshot. */
void store_done(sqlite3_stmt *stmt);

/*
 * Where the database stands: two versions that differ whenever anything
 * in it changed in between — a row written by this connection (even one
 * rolled back) or a transaction committed by another (another process on
 * the same file).  For caches of what is computed from the database:
 * equal versions, the same data.  0, or a negative errno.
 */
struct store_version {
	int64_t own, others;
};

int store_version(struct store *st, struct store_version *out);
bool store_version_eq(const struct store_version *a,
		      const struct store_version *b);

/* Execute one statement that returns no rows; 0 or -errno. */
int store_exec(struct store *st, const char *sql);

/*
 * Statements that bind a few values and step once, without the
 * prepare/bind/step/reset ladder.  The values bind to ?1, ?2, ... in
 * order; make them with STORE_INT (any integer, taken as int64_t),
 * STORE_TEXT (up to its NUL), STORE_TEXTN (text of a given length),
 * STORE_BLOB (bytes and length: names are stored as blobs) and
 * STORE_NULL; a NULL pointer binds SQL NULL too.  They are bound without a copy, which is
 * safe because the statement is reset before the call returns.
 *
 *   ret = store_run(st, sql, STORE_INT(id), STORE_TEXT(name));
 *   ret = store_int(st, sql, &count, STORE_INT(session));
 *
 * store_run() steps once (to the first row, or to the end): 0 or -errno
 * as store_errno() maps it.  store_int() also gives the first row's
 * first column: -ENOENT when there is no row, *out then unchanged.
 * store_changes() is how many rows the last statement changed.
 */
enum store_arg_type { STORE_ARG_INT, STORE_ARG_TEXT, STORE_ARG_BLOB };

struct store_arg {
	enum store_arg_type type;
	int64_t i;
	const void *p;
	size_t len;
};

#define STORE_INT(v) \
	((struct store_arg){ .type = STORE_ARG_INT, .i = (int64_t)(v) })
#define STORE_TEXT(s) \
	((struct store_arg){ .type = STORE_ARG_TEXT, .p = (s), .len = SIZE_MAX })
#define STORE_TEXTN(s, n) \
	((struct store_arg){ .type = STORE_ARG_TEXT, .p = (s), .len = (n) })
#define STORE_NULL ((struct store_arg){ .type = STORE_ARG_TEXT, .p = NULL })
#define STORE_BLOB(s, n) \
	((struct store_arg){ .type = STORE_ARG_BLOB, .p = (s), .len = (n) })

#define STORE_ARGS_(...)                                                  \
	((const struct store_arg[]){ __VA_ARGS__ }),                      \
	(sizeof((const struct store_arg[]){ __VA_ARGS__ }) /              \
	 sizeof(struct store_arg))
#define store_run(st, sql, ...) \
	store_run_args(st, sql, STORE_ARGS_(__VA_ARGS__))
#define store_int(st, sql, out, ...) \
	store_int_args(st, sql, out, STORE_ARGS_(__VA_ARGS__))

int store_run_args(struct store *st, const char *sql,
		   const struct store_arg *args, size_t n);
int store_int_args(struct store *st, const char *sql, int64_t *out,
		   const struct store_arg *args, size_t n);
int64_t store_changes(struct store *st);

/*
 * Transactions.  store_begin() starts an IMMEDIATE transaction (the write
 * lock is taken up front, so a busy database fails here, before any work).
 * store_begin_durable() starts one whose commit also syncs the WAL to
 * disk, so it and every earlier commit survive power loss (SQLite refuses
 * to change its sync level inside a transaction, hence a separate begin).
 * store_commit() rolls back when the commit fails.  store_rollback() is
 * safe to call when no transaction is open.
 */
int store_begin(struct store *st);
int store_begin_durable(struct store *st);
int store_commit(struct store *st);
void store_rollback(struct store *st);

/*
 * A read transaction: what is read between store_begin_read() and
 * store_end_read() is of one moment (the last commit when it began),
 * whatever other connections commit meanwhile.  End it on every path.
 */
int store_begin_read(struct store *st);
void store_end_read(struct store *st);

/*
 * The pages this connection keeps in memory: at most `kib` KiB (a
 * connection that reads each page once needs few).  0, or -errno.
 */
int store_cache_limit(struct store *st, int kib);

/*
 * Call `hook(arg)` at every commit this connection makes (before it is
 * made; a non-zero return turns it into a rollback); NULL removes it.
 * For checks of who commits (fs/locks.c).
 */
void store_on_commit(struct store *st, int (*hook)(void *arg), void *arg);

/*
 * Make every transaction committed so far survive power loss (the WAL is
 * synced); for fsync() of something with no pending changes.
 */
int store_sync(struct store *st);

/* The errno for an SQLite result code (see above). */
int store_errno(int sqlite_rc);

/* Log-friendly text of the last error on this connection. */
const char *store_errmsg(struct store *st);

#endif
