/*
 * Unit tests for store: creating, reopening and refusing databases,
 * transactions, the SQLite-to-errno mapping (also with a real lock held by
 * a second connection) and the durable commit path (counted with a VFS
 * shim that wraps the default VFS and counts syncs of the WAL file).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "store/store.h"
#include "unit.h"

struct fixture {
	char dir[64];
	char path[128];
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	if (unit_tmpdir(fx->dir, sizeof(fx->dir), "store") < 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/test.db", fx->dir);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	unit_rmtree(fx->dir);
	free(fx);
	return 0;
}

static int64_t query_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	int64_t v = -12345;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW)
		v = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return v;
}

static char *query_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *q = NULL;
	char *v = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &q, NULL), SQLITE_OK);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		v = strdup((const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return v;
}

/* Make a database at `path` with plain SQLite, running `sql`. */
static void make_db(const char *path, const char *sql)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void test_create_new(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	sqlite3 *db;
	char *mode;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_non_null(st);
	assert_string_equal(store_path(st), fx->path);
	db = store_db(st);
	assert_int_equal(query_int(db, "PRAGMA application_id"),
			 STORE_APPLICATION_ID);
	assert_int_equal(query_int(db, "PRAGMA user_version"),
			 STORE_SCHEMA_VERSION);
	assert_int_equal(STORE_APPLICATION_ID, 0x466c4653);
	assert_int_equal(query_int(db, "PRAGMA foreign_keys"), 1);
	mode = query_text(db, "PRAGMA journal_mode");
	assert_string_equal(mode, "wal");
	free(mode);
	assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master"
				   " WHERE type = 'table' AND name IN"
				   " ('meta','sessions','inodes','chunks','status_log')"),
			 5);
	assert_int_equal(query_int(db, "SELECT count(*) FROM meta"
				   " WHERE key = 'created_ns'"), 1);
	/* inode 1 is the mount's root: the first row gets 2 */
	assert_int_equal(query_int(db, "SELECT seq FROM sqlite_sequence"
				   " WHERE name = 'inodes'"), 1);
	store_close(st);
}

/* Issue 12: other users read a 0644 database (uploads that are 0600 in
 * the mount); a new one and its -wal, -shm are 0600 whatever the umask,
 * and one others may read is reported. */
static void test_private_files(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT, warn = FERR_INIT;
	struct store *st = NULL;
	char file[400];
	struct stat sb;
	mode_t old = umask(022);

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	umask(old);
	/* a write: the -wal and -shm exist */
	assert_int_equal(sqlite3_exec(store_db(st), "CREATE TABLE t(x)",
				      NULL, NULL, NULL), SQLITE_OK);
	for (int i = 0; i < 3; i++) {
		snprintf(file, sizeof(file), "%s%s", fx->path,
			 (const char *[]){ "", "-wal", "-shm" }[i]);
		assert_int_equal(stat(file, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}
	assert_int_equal(store_check_private(fx->path, &warn), 0);
	assert_string_equal(warn.message, "");
	store_close(st);

	assert_int_equal(chmod(fx->path, 0644), 0);
	assert_int_equal(store_check_private(fx->path, &warn), 1);
	snprintf(file, sizeof(file), "warning: other users may read the"
		 " database %s (mode 0644): chmod 600 %s", fx->path, fx->path);
	assert_string_equal(warn.message, file);
	assert_int_equal(chmod(fx->path, 0606), 0);
	assert_int_equal(store_check_private(fx->path, &warn), 1);
	assert_non_null(strstr(warn.message, "read and write"));
	assert_int_equal(chmod(fx->path, 0600), 0);
	snprintf(file, sizeof(file), "%s-shm", fx->path);
	write_file(file, "", 0);
	assert_int_equal(chmod(file, 0640), 0);
	assert_int_equal(store_check_private(fx->path, &warn), 1);
	assert_non_null(strstr(warn.message, "-shm (mode 0640)"));
	/* each exposed file is named in the advice, no other */
	assert_int_equal(chmod(fx->path, 0644), 0);
	assert_int_equal(store_check_private(fx->path, &warn), 1);
	snprintf(file, sizeof(file), ": chmod 600 %s %s-shm", fx->path,
		 fx->path);
	assert_non_null(strstr(warn.message, file));
	assert_null(strstr(warn.message, "*"));
}

static void test_empty_file_is_new(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;

	write_file(fx->path, "", 0);
	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	assert_int_equal(query_int(store_db(st), "PRAGMA user_version"),
			 STORE_SCHEMA_VERSION);
	store_close(st);
}

static void test_reopen(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	char *created1, *created2;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	created1 = query_text(store_db(st),
			      "SELECT value FROM meta WHERE key = 'created_ns'");
	assert_int_equal(store_exec(st, "INSERT INTO meta(key, value)"
				    " VALUES ('probe', 'kept')"), 0);
	store_close(st);

	for (int i = 0; i < 2; i++) {
		char *probe;

		ferr_clear(&err);
		if (store_open(&st, fx->path, &err) != 0)
			fail_msg("reopen %d: %s", i, err.message);
		created2 = query_text(store_db(st), "SELECT value FROM meta"
				      " WHERE key = 'created_ns'");
		probe = query_text(store_db(st), "SELECT value FROM meta"
				   " WHERE key = 'probe'");
		assert_non_null(created2);
		assert_string_equal(created1, created2);
		assert_non_null(probe);
		assert_string_equal(probe, "kept");
		assert_int_equal(query_int(store_db(st), "SELECT count(*)"
					   " FROM meta"), 2);
		free(created2);
		free(probe);
		store_close(st);
	}
	free(created1);
}

static void test_refuses_newer_schema(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = (struct store *)&err;	/* must be reset */
	char sql[200];

	snprintf(sql, sizeof(sql), "CREATE TABLE meta(key TEXT, value TEXT);"
		 "PRAGMA application_id=%d; PRAGMA user_version=999;",
		 STORE_APPLICATION_ID);
	make_db(fx->path, sql);
	assert_int_equal(store_open(&st, fx->path, &err), -EPROTO);
	assert_null(st);
	assert_non_null(strstr(err.message, "999"));
	{
		char mine[16];

		snprintf(mine, sizeof(mine), "%d", STORE_SCHEMA_VERSION);
		assert_non_null(strstr(err.message, mine));
	}
	assert_non_null(strstr(err.message, fx->path));
	/* the file was not touched */
	{
		sqlite3 *db;

		assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
		assert_int_equal(query_int(db, "PRAGMA user_version"), 999);
		sqlite3_close(db);
	}
}

static void test_refuses_other_app(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;

	make_db(fx->path, "CREATE TABLE photos(id INTEGER PRIMARY KEY, x);"
		"INSERT INTO photos(x) VALUES (1);");
	assert_int_equal(store_open(&st, fx->path, &err), -EINVAL);
	assert_null(st);
	assert_non_null(strstr(err.message, "not a flowfs database"));
	{
		sqlite3 *db;

		assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
		assert_int_equal(query_int(db, "SELECT count(*) FROM photos"), 1);
		assert_int_equal(query_int(db, "PRAGMA application_id"), 0);
		assert_int_equal(query_int(db, "SELECT count(*) FROM sqlite_master"), 1);
		sqlite3_close(db);
	}
}

static void test_refuses_other_app_id(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;

	make_db(fx->path, "CREATE TABLE meta(key, value);"
		"PRAGMA application_id=1234; PRAGMA user_version=1;");
	assert_int_equal(store_open(&st, fx->path, NULL), -EINVAL);
	assert_null(st);
}

static void test_refuses_random_bytes(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	unsigned char junk[8192], back[8192];
	unsigned x = 12345;
	FILE *f;

	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245 + 12345;
		junk[i] = (unsigned char)(x >> 16);
	}
	write_file(fx->path, junk, sizeof(junk));
	assert_int_equal(store_open(&st, fx->path, &err), -EINVAL);
	assert_null(st);
	assert_non_null(strstr(err.message, "not a flowfs database"));
	/* not overwritten */
	f = fopen(fx->path, "rb");
	assert_non_null(f);
	assert_int_equal(fread(back, 1, sizeof(back), f), sizeof(back));
	assert_int_equal(fgetc(f), EOF);
	fclose(f);
	assert_memory_equal(junk, back, sizeof(junk));
}

static void test_refuses_text_file(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	static const char text[] = "just some notes\nnot a database\n";

	write_file(fx->path, text, sizeof(text) - 1);
	assert_int_equal(store_open(&st, fx->path, &err), -EINVAL);
	assert_null(st);
	assert_true(err.message[0] != '\0');
}

/*
 * user_version is a signed 32-bit value.  A negative one must be refused,
 * never used as an index into the migrations (it once was: an
 * out-of-bounds read of migrations[-1]).
 */
static void test_negative_user_version(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;

	make_db(fx->path, "PRAGMA user_version=-1;");
	assert_int_equal(store_open(&st, fx->path, &err), -EINVAL);
	assert_null(st);
	assert_non_null(strstr(err.message, fx->path));
	/* with flowfs's application id too */
	{
		char sql[128];

		remove(fx->path);
		snprintf(sql, sizeof(sql), "CREATE TABLE meta(key, value);"
			 "PRAGMA application_id=%d; PRAGMA user_version=-7;",
			 STORE_APPLICATION_ID);
		make_db(fx->path, sql);
		assert_int_equal(store_open(&st, fx->path, NULL), -EINVAL);
		assert_null(st);
	}
}

static void test_missing_parent(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	char path[200];

	snprintf(path, sizeof(path), "%s/no/such/dir/x.db", fx->dir);
	assert_true(store_open(&st, path, &err) < 0);
	assert_null(st);
	assert_non_null(strstr(err.message, path));
}

static void test_read_only_file(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	pid_t pid;
	int status;

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	store_close(st);
	assert_int_equal(chmod(fx->path, 0444), 0);
	assert_int_equal(chmod(fx->dir, 0777), 0);
	/* root ignores file modes: try it as nobody */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct ferr err = FERR_INIT;
		int ret;

		if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
			_exit(90);
		ret = store_open(&st, fx->path, &err);
		if (ret == 0)
			_exit(91);
		if (st)
			_exit(92);
		if (ret != -EROFS && ret != -EACCES)
			_exit(93);
		if (!strstr(err.message, fx->path))
			_exit(94);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_transactions(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	sqlite3 *other = NULL;

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	assert_int_equal(sqlite3_open(fx->path, &other), SQLITE_OK);

	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('a', '1')"), 0);
	/* not visible to another connection before the commit */
	assert_int_equal(query_int(other, "SELECT count(*) FROM meta"
				   " WHERE key = 'a'"), 0);
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(query_int(other, "SELECT count(*) FROM meta"
				   " WHERE key = 'a'"), 1);

	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('b', '2')"), 0);
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM meta"
				   " WHERE key = 'b'"), 1);
	store_rollback(st);
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM meta"
				   " WHERE key = 'b'"), 0);
	assert_true(sqlite3_get_autocommit(store_db(st)));
	/* safe without a transaction */
	store_rollback(st);

	assert_int_equal(store_begin_durable(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('c', '3')"), 0);
	assert_int_equal(store_commit(st), 0);
	assert_int_equal(query_int(other, "SELECT count(*) FROM meta"
				   " WHERE key = 'c'"), 1);
	assert_int_equal(store_sync(st), 0);
	assert_true(sqlite3_get_autocommit(store_db(st)));

	/* errors of store_exec */
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('a', 'x')"),
			 store_errno(SQLITE_CONSTRAINT));
	assert_int_equal(store_exec(st, "SELECT * FROM no_such_table"), -EIO);
	sqlite3_close(other);
	store_close(st);

	/* committed data survives a reopen, rolled back data does not */
	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM meta"
				   " WHERE key IN ('a', 'b', 'c')"), 2);
	store_close(st);
}

static void test_stmt_cache(void **state)
{
	struct fixture *fx = *state;
	static const char sql[] = "SELECT value FROM meta WHERE key = ?1";
	static const char sql2[] = "SELECT count(*) FROM meta";
	struct store *st = NULL;
	sqlite3_stmt *q, *q2;

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	q = store_stmt(st, sql);
	assert_non_null(q);
	sqlite3_bind_text(q, 1, "created_ns", -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	/* handed out again without store_done: reset, bindings cleared */
	q2 = store_stmt(st, sql);
	assert_ptr_equal(q, q2);
	assert_int_equal(sqlite3_step(q2), SQLITE_DONE);
	store_done(q2);
	store_done(NULL);
	q2 = store_stmt(st, sql2);
	assert_non_null(q2);
	assert_ptr_not_equal(q, q2);
	assert_int_equal(sqlite3_step(q2), SQLITE_ROW);
	store_done(q2);
	assert_null(store_stmt(st, "THIS IS NOT SQL"));
	store_close(st);
}

static void test_run_and_int(void **state)
{
	struct fixture *fx = *state;
	static const char make[] = "CREATE TEMP TABLE t(i INTEGER, s, b BLOB,"
		" UNIQUE (i))";
	static const char put[] = "INSERT INTO t VALUES (?1, ?2, ?3)";
	static const char get_i[] = "SELECT i FROM t WHERE s = ?1";
	static const char get_b[] = "SELECT i FROM t WHERE b = ?1";
	static const char is_null[] = "SELECT count(*) FROM t"
		" WHERE s IS NULL AND b IS NULL AND i = ?1";
	static const char typeof_s[] = "SELECT typeof(s) = 'text'"
		" AND typeof(b) = 'blob' FROM t WHERE i = ?1";
	static const char upd[] = "UPDATE t SET s = ?2 WHERE i >= ?1";
	static const char bad[] = "NOT SQL";
	static const char nul[] = { 'a', '\0', 'b' };
	struct store *st = NULL;
	int64_t v = -1;

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	assert_int_equal(store_exec(st, make), 0);
	/* the values land where ?1, ?2, ?3 say, with their types */
	assert_int_equal(store_run(st, put, STORE_INT(INT64_MAX),
				   STORE_TEXT("x"), STORE_BLOB(nul, 3)), 0);
	assert_int_equal(store_int(st, get_i, &v, STORE_TEXT("x")), 0);
	assert_true(v == INT64_MAX);
	v = -1;
	assert_int_equal(store_int(st, get_i, &v, STORE_TEXTN("xyz", 1)), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(store_int(st, get_b, &v, STORE_BLOB(nul, 3)), 0);
	assert_true(v == INT64_MAX);
	assert_int_equal(store_int(st, typeof_s, &v, STORE_INT(INT64_MAX)), 0);
	assert_int_equal(v, 1);
	/* a blob's length counts, not a NUL in it */
	v = -7;
	assert_int_equal(store_int(st, get_b, &v, STORE_BLOB(nul, 1)), -ENOENT);
	assert_int_equal(v, -7);
	/* NULL text binds SQL NULL; a plain int widens */
	assert_int_equal(store_run(st, put, STORE_INT(-3), STORE_TEXT(NULL),
				   STORE_BLOB(NULL, 0)), 0);
	assert_int_equal(store_int(st, is_null, &v, STORE_INT(-3)), 0);
	assert_int_equal(v, 1);
	/* a constraint is -EEXIST; store_changes counts the last one */
	assert_int_equal(store_run(st, put, STORE_INT(-3), STORE_TEXT("y"),
				   STORE_BLOB(nul, 2)), -EEXIST);
	assert_int_equal(store_run(st, upd, STORE_INT(-10), STORE_TEXT("z")), 0);
	assert_int_equal(store_changes(st), 2);
	/* a statement that does not prepare is -EIO, not a crash */
	assert_int_equal(store_run(st, bad, STORE_INT(1)), -EIO);
	assert_int_equal(store_int(st, bad, &v, STORE_INT(1)), -EIO);
	store_close(st);
}

static void test_errno_mapping(void **state)
{
	(void)state;
	assert_int_equal(store_errno(SQLITE_OK), 0);
	assert_int_equal(store_errno(SQLITE_ROW), 0);
	assert_int_equal(store_errno(SQLITE_DONE), 0);
	assert_int_equal(store_errno(SQLITE_BUSY), -EAGAIN);
	assert_int_equal(store_errno(SQLITE_BUSY_SNAPSHOT), -EAGAIN);
	assert_int_equal(store_errno(SQLITE_BUSY_RECOVERY), -EAGAIN);
	assert_int_equal(store_errno(SQLITE_LOCKED), -EAGAIN);
	assert_int_equal(store_errno(SQLITE_FULL), -ENOSPC);
	assert_int_equal(store_errno(SQLITE_READONLY), -EROFS);
	assert_int_equal(store_errno(SQLITE_NOMEM), -ENOMEM);
	assert_int_equal(store_errno(SQLITE_TOOBIG), -EFBIG);
	assert_int_equal(store_errno(SQLITE_IOERR), -EIO);
	assert_int_equal(store_errno(SQLITE_IOERR_FSYNC), -EIO);
	assert_int_equal(store_errno(SQLITE_CORRUPT), -EIO);
	assert_int_equal(store_errno(SQLITE_ERROR), -EIO);
	assert_int_equal(store_errno(SQLITE_MISUSE), -EIO);
}

static void test_busy_is_eagain(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	sqlite3 *other = NULL;

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	sqlite3_busy_timeout(store_db(st), 50);
	assert_int_equal(sqlite3_open(fx->path, &other), SQLITE_OK);
	assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL,
				      NULL), SQLITE_OK);
	assert_int_equal(store_begin(st), -EAGAIN);
	assert_true(sqlite3_get_autocommit(store_db(st)));
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('x', 'y')"),
			 -EAGAIN);
	assert_int_equal(store_sync(st), -EAGAIN);
	/* reads still work while another process writes (WAL) */
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM meta"), 1);
	assert_int_equal(sqlite3_exec(other, "COMMIT", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_commit(st), 0);
	sqlite3_close(other);
	store_close(st);
}

/* ---- a VFS that counts syncs of WAL files -------------------------------- */

struct count_file {
	sqlite3_file base;
	sqlite3_file *real;
	int is_wal;
};

static int wal_syncs;
static sqlite3_vfs *real_vfs;

#define REAL(f) (((struct count_file *)(f))->real)

static int cf_close(sqlite3_file *f)
{
	return REAL(f)->pMethods->xClose(REAL(f));
}
static int cf_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int cf_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o)
{
	return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int cf_truncate(sqlite3_file *f, sqlite3_int64 s)
{
	return REAL(f)->pMethods->xTruncate(REAL(f), s);
}
static int cf_sync(sqlite3_file *f, int flags)
{
	if (((struct count_file *)f)->is_wal)
		wal_syncs++;
	return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int cf_size(sqlite3_file *f, sqlite3_int64 *s)
{
	return REAL(f)->pMethods->xFileSize(REAL(f), s);
}
static int cf_lock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xLock(REAL(f), l);
}
static int cf_unlock(sqlite3_file *f, int l)
{
	return REAL(f)->pMethods->xUnlock(REAL(f), l);
}
static int cf_reserved(sqlite3_file *f, int *r)
{
	return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r);
}
static int cf_fcntl(sqlite3_file *f, int op, void *arg)
{
	return REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
}
static int cf_sector(sqlite3_file *f)
{
	return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int cf_devchar(sqlite3_file *f)
{
	return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int cf_shmmap(sqlite3_file *f, int pg, int sz, int ext,
		     void volatile **pp)
{
	return REAL(f)->pMethods->xShmMap(REAL(f), pg, sz, ext, pp);
}
static int cf_shmlock(sqlite3_file *f, int off, int n, int flags)
{
	return REAL(f)->pMethods->xShmLock(REAL(f), off, n, flags);
}
static void cf_shmbarrier(sqlite3_file *f)
{
	REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int cf_shmunmap(sqlite3_file *f, int del)
{
	return REAL(f)->pMethods->xShmUnmap(REAL(f), del);
}
static int cf_fetch(sqlite3_file *f, sqlite3_int64 o, int n, void **pp)
{
	return REAL(f)->pMethods->xFetch(REAL(f), o, n, pp);
}
static int cf_unfetch(sqlite3_file *f, sqlite3_int64 o, void *p)
{
	return REAL(f)->pMethods->xUnfetch(REAL(f), o, p);
}

static const sqlite3_io_methods cf_methods = {
	3, cf_close, cf_read, cf_write, cf_truncate, cf_sync, cf_size,
	cf_lock, cf_unlock, cf_reserved, cf_fcntl, cf_sector, cf_devchar,
	cf_shmmap, cf_shmlock, cf_shmbarrier, cf_shmunmap, cf_fetch,
	cf_unfetch,
};

static int cv_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f,
		   int flags, int *out_flags)
{
	struct count_file *cf = (struct count_file *)f;
	int rc;

	(void)vfs;
	cf->real = (sqlite3_file *)(cf + 1);
	cf->is_wal = (flags & SQLITE_OPEN_WAL) != 0;
	rc = real_vfs->xOpen(real_vfs, name, cf->real, flags, out_flags);
	cf->base.pMethods = cf->real->pMethods ? &cf_methods : NULL;
	return rc;
}
static int cv_delete(sqlite3_vfs *v, const char *n, int s)
{
	(void)v;
	return real_vfs->xDelete(real_vfs, n, s);
}
static int cv_access(sqlite3_vfs *v, const char *n, int fl, int *out)
{
	(void)v;
	return real_vfs->xAccess(real_vfs, n, fl, out);
}
static int cv_full(sqlite3_vfs *v, const char *n, int sz, char *out)
{
	(void)v;
	return real_vfs->xFullPathname(real_vfs, n, sz, out);
}
static int cv_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xRandomness(real_vfs, n, out);
}
static int cv_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return real_vfs->xSleep(real_vfs, us);
}
static int cv_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return real_vfs->xCurrentTime(real_vfs, out);
}
static int cv_lasterr(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return real_vfs->xGetLastError(real_vfs, n, out);
}
static int cv_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static sqlite3_vfs count_vfs = {
	.iVersion = 2,
	.zName = "flowfs-test-count",
	.xOpen = cv_open,
	.xDelete = cv_delete,
	.xAccess = cv_access,
	.xFullPathname = cv_full,
	.xRandomness = cv_random,
	.xSleep = cv_sleep,
	.xCurrentTime = cv_time,
	.xGetLastError = cv_lasterr,
	.xCurrentTimeInt64 = cv_time64,
};

static void test_durable_commit_syncs_wal(void **state)
{
	struct fixture *fx = *state;
	struct store *st = NULL;
	int before;

	real_vfs = sqlite3_vfs_find(NULL);
	assert_non_null(real_vfs);
	count_vfs.szOsFile = (int)sizeof(struct count_file) + real_vfs->szOsFile;
	count_vfs.mxPathname = real_vfs->mxPathname;
	assert_int_equal(sqlite3_vfs_register(&count_vfs, 1), SQLITE_OK);

	assert_int_equal(store_open(&st, fx->path, NULL), 0);
	/* The first commit into a new WAL syncs its header; later commits
	 * with synchronous=NORMAL do not sync. */
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('w', '1')"), 0);
	before = wal_syncs;
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('n', '1')"), 0);
	assert_int_equal(store_commit(st), 0);
	if (wal_syncs != before) {
		store_close(st);
		sqlite3_vfs_unregister(&count_vfs);
		fail_msg("a non-durable commit synced the WAL");
	}

	before = wal_syncs;
	assert_int_equal(store_begin_durable(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('d', '1')"), 0);
	assert_int_equal(store_commit(st), 0);
	if (wal_syncs == before) {
		/* SQLite refuses PRAGMA synchronous inside a transaction
		 * ("Safety level may not be changed inside a transaction"),
		 * so the level must be set before BEGIN. */
		store_close(st);
		sqlite3_vfs_unregister(&count_vfs);
		fail_msg("store_commit(st) did not sync the WAL");
	}
	/* and the level goes back to NORMAL afterwards */
	before = wal_syncs;
	assert_int_equal(store_begin(st), 0);
	assert_int_equal(store_exec(st, "INSERT INTO meta VALUES ('e', '1')"), 0);
	assert_int_equal(store_commit(st), 0);
	if (wal_syncs != before) {
		store_close(st);
		sqlite3_vfs_unregister(&count_vfs);
		fail_msg("a commit after a durable one synced the WAL");
	}
	before = wal_syncs;
	assert_int_equal(store_sync(st), 0);
	if (wal_syncs == before) {
		store_close(st);
		sqlite3_vfs_unregister(&count_vfs);
		fail_msg("store_sync() did not sync the WAL");
	}
	store_close(st);
	sqlite3_vfs_unregister(&count_vfs);
}

/* A database made before auto-vacuum: opened, it is turned on (VACUUM),
 * its data kept. */
static void test_old_database_made_vacuumable(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	sqlite3 *db = NULL;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(query_int(store_db(st), "PRAGMA auto_vacuum"), 2);
	assert_int_equal(store_exec(st, "INSERT INTO meta(key, value)"
				    " VALUES ('probe', 'kept')"), 0);
	store_close(st);
	/* what a flowfs before this made */
	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA auto_vacuum=NONE; VACUUM",
				      NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(query_int(db, "PRAGMA auto_vacuum"), 0);
	sqlite3_close(db);
	if (store_open(&st, fx->path, &err) != 0)
		fail_msg("reopen: %s", err.message);
	assert_int_equal(query_int(store_db(st), "PRAGMA auto_vacuum"), 2);
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM meta"
				   " WHERE key = 'probe' AND value = 'kept'"), 1);
	store_close(st);
}

/* Deleted data's pages go back to the disk, by the checkpointer, in
 * steps; store_space() says what is held and what waits. */
static void test_space_comes_back(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	struct stat sb;
	int64_t used = 0, waiting = 0, before;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(store_start_checkpointer(st, &err), 0);
	assert_int_equal(store_exec(st, "CREATE TABLE big(b BLOB)"), 0);
	/* 32 MiB in 512 rows */
	assert_int_equal(store_exec(st, "WITH RECURSIVE n(i) AS (SELECT 1"
				    " UNION ALL SELECT i + 1 FROM n WHERE"
				    " i < 512) INSERT INTO big SELECT"
				    " randomblob(65536) FROM n"), 0);
	assert_int_equal(store_space(st, &used, &waiting), 0);
	assert_true(used >= 32 * 1024 * 1024);
	before = used;
	assert_int_equal(store_exec(st, "DELETE FROM big"), 0);
	/* the checkpointer, woken by the commit, gives the pages back */
	for (int i = 0; i < 200; i++) {
		assert_int_equal(store_space(st, &used, &waiting), 0);
		assert_int_equal(stat(fx->path, &sb), 0);
		if (waiting < STORE_VACUUM_STEP_PAGES * 16384 &&
		    sb.st_size < 4 * 1024 * 1024)
			break;
		usleep(50 * 1000);
	}
	assert_true(used < before / 8);
	assert_true(waiting < STORE_VACUUM_STEP_PAGES * 16384);
	assert_true(sb.st_size < 4 * 1024 * 1024);
	store_close(st);
}

/* A database whose auto-vacuum could not be turned on: the free list
 * stays, and the checkpointer must not try to give it back for good
 * (it once stepped every 5 ms while the mount held still). */
static void test_no_vacuum_without_auto_vacuum(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	struct timespec t0, t1;
	double spent_ms;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(store_start_checkpointer(st, &err), 0);
	assert_int_equal(store_exec(st, "PRAGMA auto_vacuum=NONE"), 0);
	assert_int_equal(store_exec(st, "VACUUM"), 0);
	assert_int_equal(store_exec(st, "CREATE TABLE big(b BLOB)"), 0);
	assert_int_equal(store_exec(st, "WITH RECURSIVE n(i) AS (SELECT 1"
				    " UNION ALL SELECT i + 1 FROM n WHERE"
				    " i < 64) INSERT INTO big SELECT"
				    " randomblob(65536) FROM n"), 0);
	assert_int_equal(store_exec(st, "DELETE FROM big"), 0);
	/* the quiet second before the first step, then what it does */
	usleep(1500 * 1000);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	usleep(1000 * 1000);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	spent_ms = (double)(t1.tv_sec - t0.tv_sec) * 1000 +
		   (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	if (spent_ms > 5)
		fail_msg("the checkpointer kept working: %.1f ms of CPU in 1 s",
			 spent_ms);
	store_close(st);
}

static int64_t file_size(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

/* `mib` MiB of 64 KiB rows into table big, in one transaction. */
static void insert_mib(struct store *st, int mib)
{
	char sql[256];

	snprintf(sql, sizeof(sql), "WITH RECURSIVE n(i) AS (SELECT 1 UNION"
		 " ALL SELECT i + 1 FROM n WHERE i < %d) INSERT INTO big"
		 " SELECT zeroblob(65536) FROM n", mib * 16);
	assert_int_equal(store_exec(st, sql), 0);
}

/*
 * Removing data writes only the pages that say it is gone: Debian's
 * SQLite is built with secure_delete on, which wrote every freed page
 * again, in zeros, to the log (and later to the database): rm of a
 * 256 MiB file took 0.6 s and held every writer meanwhile.
 */
static void test_delete_does_not_rewrite_the_data(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	char wal[160];
	int64_t size;

	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(store_exec(st, "CREATE TABLE big(b BLOB)"), 0);
	insert_mib(st, 16);
	assert_int_equal(store_exec(st, "PRAGMA wal_checkpoint(TRUNCATE)"), 0);
	assert_int_equal(file_size(wal), 0);
	assert_int_equal(store_exec(st, "DELETE FROM big"), 0);
	size = file_size(wal);
	if (size > 1024 * 1024)
		fail_msg("deleting 16 MiB wrote %lld bytes to the log",
			 (long long)size);
	store_close(st);
}

/*
 * A write that never pauses keeps the log bounded (the writer's own
 * checkpoint waits for the thread's: SQLite refused it at once while
 * the thread copied, and the log grew without bound), and once writes
 * stop the log is copied back and its file emptied (it stayed at 64 MiB
 * and more).
 */
static void test_log_bounded_and_emptied(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	char wal[160];
	int64_t size, largest = 0;

	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(store_start_checkpointer(st, &err), 0);
	assert_int_equal(store_exec(st, "CREATE TABLE big(b BLOB)"), 0);
	/* 384 MiB in 8 MiB commits, as a big file's spills come */
	for (int i = 0; i < 48; i++) {
		insert_mib(st, 8);
		size = file_size(wal);
		if (size > largest)
			largest = size;
	}
	/* 128 MiB of frames, the commit that passed them, and headers */
	if (largest > (int64_t)160 * 1024 * 1024)
		fail_msg("the log grew to %lld bytes", (long long)largest);
	for (int i = 0; i < 200 && (size = file_size(wal)) > 0; i++)
		usleep(50 * 1000);
	if (size != 0)
		fail_msg("the log still holds %lld bytes after writes stopped",
			 (long long)size);
	assert_int_equal(query_int(store_db(st), "SELECT count(*) FROM big"),
			 48 * 8 * 16);
	store_close(st);
}

static int count_busy(void *arg, int tries)
{
	(void)tries;
	(*(int *)arg)++;
	return 0;	/* give up at once: a wait is what is counted */
}

/*
 * The writer's own checkpoint never waits for a reader: it may hold the
 * filesystem's lock, and a reader (a long render's read transaction)
 * would then hold up everyone.  A RESTART checkpoint waited for it.
 */
static void test_log_bound_waits_for_no_reader(void **state)
{
	struct fixture *fx = *state;
	struct ferr err = FERR_INIT;
	struct store *st = NULL;
	sqlite3 *reader = NULL;
	int waits = 0;

	assert_int_equal(store_open(&st, fx->path, &err), 0);
	assert_int_equal(store_start_checkpointer(st, &err), 0);
	assert_int_equal(store_exec(st, "CREATE TABLE big(b BLOB)"), 0);
	insert_mib(st, 8);
	/* a reader in the middle of a read, on the log as it is now */
	assert_int_equal(sqlite3_open(fx->path, &reader), SQLITE_OK);
	assert_int_equal(sqlite3_exec(reader, "BEGIN;"
				      " SELECT count(*) FROM big", NULL,
				      NULL, NULL), SQLITE_OK);
	sqlite3_busy_handler(store_db(st), count_busy, &waits);
	/* past the log's bound (128 MiB) */
	for (int i = 0; i < 20; i++)
		insert_mib(st, 8);
	assert_int_equal(waits, 0);
	sqlite3_exec(reader, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(reader);
	store_close(st);
}

static void test_now(void **state)
{
	int64_t a = fclock_now_ns(), b = fclock_now_ns();

	(void)state;
	assert_true(a > (int64_t)1600000000 * 1000000000);
	assert_true(b >= a);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_new),
		T(test_private_files),
		T(test_empty_file_is_new),
		T(test_reopen),
		T(test_refuses_newer_schema),
		T(test_refuses_other_app),
		T(test_refuses_other_app_id),
		T(test_refuses_random_bytes),
		T(test_refuses_text_file),
		T(test_negative_user_version),
		T(test_missing_parent),
		T(test_read_only_file),
		T(test_transactions),
		T(test_stmt_cache),
		T(test_run_and_int),
		cmocka_unit_test(test_errno_mapping),
		T(test_busy_is_eagain),
		T(test_durable_commit_syncs_wal),
		T(test_old_database_made_vacuumable),
		T(test_space_comes_back),
		T(test_no_vacuum_without_auto_vacuum),
		T(test_delete_does_not_rewrite_the_data),
		T(test_log_bounded_and_emptied),
		T(test_log_bound_waits_for_no_reader),
		cmocka_unit_test(test_now),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
