/*
 * Unit tests for tree: names (create, lookup, unlink, rmdir, rename and the
 * link counts of folders) and data (gathered writes, chunk boundaries,
 * sparse files, truncate, the spill path, unlink while open, crash
 * leftovers, durability across a reopen, setattr).  Each test gets a fresh
 * database in a temporary folder with two sessions made with plain SQL.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/tree.h"
#include "unit.h"

#define CHUNK TREE_CHUNK_SIZE
#define MiB (1024 * 1024)

struct fixture {
	char dir[64];
	char path[128];
	struct store *st;
	struct tree *t;
	int64_t sess, sess2;
	uint64_t root, root2;
	uint64_t up;		/* "uploads" in the first session */
};

/* the database's rows, counted */
#define sql_int(fx, ...) unit_sql_int(store_db((fx)->st), __VA_ARGS__)

static int64_t add_session(struct fixture *fx, const char *name,
			   uint64_t *root)
{
	char sql[200];
	struct tree_attr a;
	int64_t id;

	snprintf(sql, sizeof(sql), "INSERT INTO sessions(name, created_ns,"
		 " doc_mtime_ns) VALUES ('%s', 0, 0)", name);
	assert_int_equal(store_exec(fx->st, sql), 0);
	id = sqlite3_last_insert_rowid(store_db(fx->st));
	assert_int_equal(tree_create_root(fx->t, id, 0755, 0, 0, &a), 0);
	assert_true(S_ISDIR(a.mode));
	assert_true(a.session_root);
	snprintf(sql, sizeof(sql), "UPDATE sessions SET root_ino = %llu"
		 " WHERE id = %lld", (unsigned long long)a.ino, (long long)id);
	assert_int_equal(store_exec(fx->st, sql), 0);
	*root = a.ino;
	return id;
}

static void open_all(struct fixture *fx)
{
	struct ferr err = FERR_INIT;

	if (store_open(&fx->st, fx->path, &err) < 0)
		fail_msg("store_open: %s", err.message);
	assert_int_equal(tree_new(&fx->t, fx->st), 0);
	/* most tests here are of the chunk rows: large files stay in them
	 * (the data files' tests set TREE_INLINE_MAX back) */
	tree_set_inline_max(fx->t, TREE_MAX_SIZE);
}

static void close_all(struct fixture *fx)
{
	tree_free(fx->t);
	fx->t = NULL;
	store_close(fx->st);
	fx->st = NULL;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct tree_attr a;

	if (!fx)
		return -1;
	if (unit_tmpdir(fx->dir, sizeof(fx->dir), "tree") < 0) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/test.db", fx->dir);
	*state = fx;
	open_all(fx);
	fx->sess = add_session(fx, "one", &fx->root);
	fx->sess2 = add_session(fx, "two", &fx->root2);
	if (tree_create(fx->t, fx->root, "uploads", S_IFDIR | 0755, 0, 0,
			NULL, &a) < 0)
		return -1;
	fx->up = a.ino;
	/* tagged as the session's uploads/ (session.h), as sessions do */
	{
		char sql[96];

		snprintf(sql, sizeof(sql),
			 "UPDATE inodes SET tag = 1 WHERE ino = %llu",
			 (unsigned long long)fx->up);
		if (store_exec(fx->st, sql) < 0)
			return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	close_all(fx);
	unit_rmtree(fx->dir);
	free(fx);
	return 0;
}

static uint64_t mk(struct fixture *fx, uint64_t parent, const char *name,
		   uint32_t mode)
{
	struct tree_attr a;
	int ret = tree_create(fx->t, parent, name, mode, 1000, 1000,
			      S_ISLNK(mode) ? "target" : NULL, &a);

	if (ret < 0)
		fail_msg("create %s: %d", name, ret);
	return a.ino;
}

static uint64_t mkfile(struct fixture *fx, uint64_t parent, const char *name)
{
	return mk(fx, parent, name, S_IFREG | 0644);
}

static uint64_t mkdir_(struct fixture *fx, uint64_t parent, const char *name)
{
	return mk(fx, parent, name, S_IFDIR | 0755);
}

static struct tree_attr attr(struct fixture *fx, uint64_t ino)
{
	struct tree_attr a;

	assert_int_equal(tree_getattr(fx->t, ino, &a), 0);
	return a;
}

static void wr(struct fixture *fx, uint64_t ino, const void *buf, size_t n,
	       int64_t off)
{
	assert_int_equal(tree_write(fx->t, ino, buf, n, off), 0);
}

/* Read [off, off+n) and compare with `expect` (n bytes, the true content). */
static void check_read(struct fixture *fx, uint64_t ino, const char *expect,
		       size_t n, int64_t off)
{
	char *buf = malloc(n + 16);
	size_t got = 12345;

	assert_non_null(buf);
	memset(buf, 0x5a, n + 16);
	assert_int_equal(tree_read(fx->t, ino, buf, n, off, &got), 0);
	assert_int_equal(got, n);
	for (size_t i = 0; i < n; i++)
		if (buf[i] != expect[i]) {
			int g = buf[i];

			free(buf);
			fail_msg("byte %lld: got %d, want %d",
				 (long long)(off + (int64_t)i), g, expect[i]);
		}
	free(buf);
}

/* The whole file equals `model` (size bytes). */
static void check_file(struct fixture *fx, uint64_t ino, const char *model,
		       size_t size)
{
	char tail;
	size_t got = 7;

	assert_int_equal(attr(fx, ino).size, (int64_t)size);
	check_read(fx, ino, model, size, 0);
	assert_int_equal(tree_read(fx->t, ino, &tail, 1, (int64_t)size, &got), 0);
	assert_int_equal(got, 0);
}

static void fill_pattern(char *buf, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = (char)(seed >> 16);
	}
}

/* ---- names ------------------------------------------------------------ */

static void test_create_lookup_getattr(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a, l, up0, up1;
	struct sbuf sb = SBUF_INIT;

	up0 = attr(fx, fx->up);
	assert_int_equal(up0.nlink, 2);
	assert_false(up0.session_root);
	assert_int_equal(up0.session, fx->sess);
	assert_true(attr(fx, fx->root).session_root);
	assert_int_equal(attr(fx, fx->root).nlink, 3);	/* uploads/ */
	assert_true(fx->root > 1);

	assert_int_equal(tree_create(fx->t, fx->up, "f", S_IFREG | 0640, 1000,
				     1001, NULL, &a), 0);
	assert_true(S_ISREG(a.mode));
	assert_int_equal(a.mode & 07777, 0640);
	assert_int_equal(a.uid, 1000);
	assert_int_equal(a.gid, 1001);
	assert_int_equal(a.nlink, 1);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.session, fx->sess);
	assert_true(a.ino > fx->up);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &l), 0);
	assert_int_equal(l.ino, a.ino);
	assert_int_equal(l.mode, a.mode);
	assert_int_equal(l.uid, 1000);
	assert_int_equal(l.gid, 1001);
	assert_int_equal(l.mtime_ns, a.mtime_ns);
	/* a file does not add a link to its folder */
	up1 = attr(fx, fx->up);
	assert_int_equal(up1.nlink, 2);
	assert_true(up1.mtime_ns >= up0.mtime_ns);

	assert_int_equal(tree_create(fx->t, fx->up, "d", S_IFDIR | 0700, 0, 0,
				     NULL, &a), 0);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.nlink, 2);
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(attr(fx, a.ino).nlink, 2);

	assert_int_equal(tree_create(fx->t, fx->up, "l", S_IFLNK | 0777, 0, 0,
				     "../some/where", &a), 0);
	assert_true(S_ISLNK(a.mode));
	assert_int_equal(a.size, strlen("../some/where"));
	assert_int_equal(tree_readlink(fx->t, a.ino, &sb), 0);
	assert_int_equal(sb.len, strlen("../some/where"));
	assert_string_equal(sb.buf, "../some/where");
	sbuf_release(&sb);
	assert_int_equal(attr(fx, a.ino).size, strlen("../some/where"));
	assert_int_equal(tree_readlink(fx->t, l.ino, &sb), -EINVAL);
	sbuf_release(&sb);

	/* bytes are bytes: names differing only in case or invalid UTF-8 */
	mkfile(fx, fx->up, "F");
	mkfile(fx, fx->up, "\xff\xfe");
	assert_int_equal(tree_lookup(fx->t, fx->up, "\xff\xfe", &l), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "\xff", &l), -ENOENT);
}

static void test_create_errors(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a;
	uint64_t f = mkfile(fx, fx->up, "f");

	mkdir_(fx, fx->up, "d");
	assert_int_equal(tree_create(fx->t, fx->up, "f", S_IFREG | 0644, 0, 0,
				     NULL, &a), -EEXIST);
	assert_int_equal(tree_create(fx->t, fx->up, "f", S_IFDIR | 0755, 0, 0,
				     NULL, &a), -EEXIST);
	assert_int_equal(tree_create(fx->t, fx->up, "d", S_IFREG | 0644, 0, 0,
				     NULL, &a), -EEXIST);
	assert_int_equal(tree_create(fx->t, fx->up, "d", S_IFLNK | 0777, 0, 0,
				     "x", &a), -EEXIST);
	/* a failed mkdir leaves the link count alone */
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(tree_create(fx->t, f, "x", S_IFREG | 0644, 0, 0,
				     NULL, &a), -ENOTDIR);
	assert_int_equal(tree_create(fx->t, 999999, "x", S_IFREG | 0644, 0, 0,
				     NULL, &a), -ENOENT);
	assert_int_equal(tree_create(fx->t, fx->up, "p", S_IFIFO | 0644, 0, 0,
				     NULL, &a), -EPERM);
	assert_int_equal(tree_lookup(fx->t, fx->up, "p", &a), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, fx->up, "nope", &a), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, 999999, "f", &a), -ENOENT);
	assert_int_equal(tree_getattr(fx->t, 999999, &a), -ENOENT);
	/* no transaction left open by the failures */
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
}

static void test_unlink_rmdir(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a;
	uint64_t f = mkfile(fx, fx->up, "f");
	uint64_t d = mkdir_(fx, fx->up, "d");
	uint64_t e = mkdir_(fx, fx->up, "e");

	mkfile(fx, d, "inner");
	assert_int_equal(attr(fx, fx->up).nlink, 4);
	assert_int_equal(tree_unlink(fx->t, fx->up, "d"), -EISDIR);
	assert_int_equal(tree_rmdir(fx->t, fx->up, "f"), -ENOTDIR);
	assert_int_equal(tree_rmdir(fx->t, fx->up, "d"), -ENOTEMPTY);
	assert_int_equal(tree_unlink(fx->t, fx->up, "missing"), -ENOENT);
	assert_int_equal(tree_rmdir(fx->t, fx->up, "missing"), -ENOENT);
	assert_int_equal(attr(fx, fx->up).nlink, 4);

	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), -ENOENT);
	assert_int_equal(tree_getattr(fx->t, f, &a), -ENOENT);
	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), -ENOENT);

	assert_int_equal(tree_rmdir(fx->t, fx->up, "e"), 0);
	assert_int_equal(tree_getattr(fx->t, e, &a), -ENOENT);
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(tree_unlink(fx->t, d, "inner"), 0);
	assert_int_equal(tree_rmdir(fx->t, fx->up, "d"), 0);
	assert_int_equal(attr(fx, fx->up).nlink, 2);
	/* a symlink is unlinked, not rmdir'ed */
	mk(fx, fx->up, "l", S_IFLNK | 0777);
	assert_int_equal(tree_rmdir(fx->t, fx->up, "l"), -ENOTDIR);
	assert_int_equal(tree_unlink(fx->t, fx->up, "l"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " parent = %llu", (unsigned long long)fx->up), 0);
}

static void test_readdir(void **state)
{
	struct fixture *fx = *state;
	struct tree_dir dir;
	static const char *const names[] = { "B", "a", "c", "\xc3\xa9" };
	static const char *const sorted[] = { "B", "a", "c", "\xc3\xa9" };

	assert_int_equal(tree_readdir(fx->t, fx->up, &dir), 0);
	assert_int_equal(dir.n, 0);
	tree_dir_free(&dir);
	mkfile(fx, fx->up, names[2]);
	mkdir_(fx, fx->up, names[0]);
	mkfile(fx, fx->up, names[3]);
	mkfile(fx, fx->up, names[1]);
	assert_int_equal(tree_readdir(fx->t, fx->up, &dir), 0);
	assert_int_equal(dir.n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(dir.ents[i].name, sorted[i]);
	assert_true(S_ISDIR(dir.ents[0].attr.mode));
	assert_true(S_ISREG(dir.ents[1].attr.mode));
	tree_dir_free(&dir);
	assert_int_equal(dir.n, 0);
	/* the session root lists uploads */
	assert_int_equal(tree_readdir(fx->t, fx->root, &dir), 0);
	assert_int_equal(dir.n, 1);
	assert_string_equal(dir.ents[0].name, "uploads");
	assert_int_equal(dir.ents[0].attr.ino, fx->up);
	tree_dir_free(&dir);
}

static void test_rename_files(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a;
	uint64_t f = mkfile(fx, fx->up, "f");
	uint64_t g = mkfile(fx, fx->up, "g");
	uint64_t d = mkdir_(fx, fx->up, "d");

	/* plain rename keeps the inode */
	assert_int_equal(tree_rename(fx->t, fx->up, "f", fx->up, "f2", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f2", &a), 0);
	assert_int_equal(a.ino, f);
	/* replace a file */
	assert_int_equal(tree_rename(fx->t, fx->up, "f2", fx->up, "g", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "g", &a), 0);
	assert_int_equal(a.ino, f);
	assert_int_equal(tree_getattr(fx->t, g, &a), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f2", &a), -ENOENT);
	/* noreplace */
	mkfile(fx, fx->up, "h");
	assert_int_equal(tree_rename(fx->t, fx->up, "g", fx->up, "h", true), -EEXIST);
	assert_int_equal(tree_lookup(fx->t, fx->up, "g", &a), 0);
	assert_int_equal(tree_rename(fx->t, fx->up, "g", fx->up, "new", true), 0);
	/* same entry: a no-op */
	assert_int_equal(tree_rename(fx->t, fx->up, "new", fx->up, "new", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "new", &a), 0);
	assert_int_equal(a.ino, f);
	/* file onto folder and back */
	assert_int_equal(tree_rename(fx->t, fx->up, "new", fx->up, "d", false),
			 -EISDIR);
	assert_int_equal(tree_rename(fx->t, fx->up, "d", fx->up, "new", false),
			 -ENOTDIR);
	/* into another folder */
	assert_int_equal(tree_rename(fx->t, fx->up, "new", d, "in", false), 0);
	assert_int_equal(tree_lookup(fx->t, d, "in", &a), 0);
	assert_int_equal(a.ino, f);
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(attr(fx, d).nlink, 2);
	/* errors */
	assert_int_equal(tree_rename(fx->t, fx->up, "missing", fx->up, "x", false),
			 -ENOENT);
	assert_int_equal(tree_rename(fx->t, d, "in", f, "x", false), -ENOTDIR);
	assert_int_equal(tree_rename(fx->t, d, "in", 999999, "x", false), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, d, "in", &a), 0);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	/* into another session: the file is that session's from then on */
	assert_int_equal(tree_rename(fx->t, d, "in", fx->root2, "x", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->root2, "x", &a), 0);
	assert_int_equal(a.ino, f);
	assert_int_equal(a.session, fx->sess2);
	assert_int_equal(tree_lookup(fx->t, d, "in", &a), -ENOENT);
}

static void test_rename_dirs(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a;
	uint64_t p = mkdir_(fx, fx->up, "p");
	uint64_t q = mkdir_(fx, fx->up, "q");
	uint64_t a1 = mkdir_(fx, p, "a");
	uint64_t b1 = mkdir_(fx, p, "b");
	uint64_t sub = mkdir_(fx, a1, "sub");
	uint64_t deep = mkdir_(fx, sub, "deep");

	mkfile(fx, a1, "file");
	assert_int_equal(attr(fx, fx->up).nlink, 4);
	assert_int_equal(attr(fx, p).nlink, 4);
	assert_int_equal(attr(fx, a1).nlink, 3);

	/* replace an empty folder: p loses b's link */
	assert_int_equal(tree_rename(fx->t, p, "a", p, "b", false), 0);
	assert_int_equal(tree_getattr(fx->t, b1, &a), -ENOENT);
	assert_int_equal(tree_lookup(fx->t, p, "b", &a), 0);
	assert_int_equal(a.ino, a1);
	assert_int_equal(attr(fx, p).nlink, 3);
	assert_int_equal(tree_lookup(fx->t, a1, "file", &a), 0);
	assert_int_equal(tree_lookup(fx->t, sub, "deep", &a), 0);

	/* onto a non-empty folder */
	mkdir_(fx, q, "x");
	mkfile(fx, q, "y");
	assert_int_equal(tree_rename(fx->t, fx->up, "p", fx->up, "q", false),
			 -ENOTEMPTY);
	assert_int_equal(tree_rename(fx->t, fx->up, "q", fx->up, "p", false),
			 -ENOTEMPTY);
	assert_int_equal(tree_rename(fx->t, fx->up, "p", fx->up, "q", true),
			 -EEXIST);

	/* into its own subtree */
	assert_int_equal(tree_rename(fx->t, fx->up, "p", a1, "p", false), -EINVAL);
	assert_int_equal(tree_rename(fx->t, fx->up, "p", deep, "p", false), -EINVAL);
	assert_int_equal(tree_rename(fx->t, fx->up, "p", p, "p", false), -EINVAL);
	assert_int_equal(tree_rename(fx->t, p, "b", deep, "z", false), -EINVAL);
	assert_int_equal(tree_lookup(fx->t, fx->up, "p", &a), 0);

	/* same entry */
	assert_int_equal(tree_rename(fx->t, fx->up, "p", fx->up, "p", false), 0);
	assert_int_equal(attr(fx, fx->up).nlink, 4);

	/* a folder moves between parents: link counts follow */
	assert_int_equal(tree_rename(fx->t, p, "b", q, "moved", false), 0);
	assert_int_equal(attr(fx, p).nlink, 2);
	assert_int_equal(attr(fx, q).nlink, 4);
	assert_int_equal(tree_lookup(fx->t, q, "moved", &a), 0);
	assert_int_equal(a.ino, a1);
	assert_int_equal(tree_lookup(fx->t, a1, "file", &a), 0);
	/* deeper into a sibling's subtree is fine */
	assert_int_equal(tree_rename(fx->t, fx->up, "p", deep, "p", false), 0);
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(attr(fx, deep).nlink, 3);
	/* across sessions: the folder and all below it go with it */
	assert_int_equal(tree_rename(fx->t, fx->up, "q", fx->root2, "q", false),
			 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " session = %lld AND (ino = %llu OR parent = %llu)",
				 (long long)fx->sess2, (unsigned long long)q,
				 (unsigned long long)q), 4);
	assert_int_equal(tree_rename(fx->t, fx->root2, "q", fx->up, "q", false),
			 0);
	/* the emptied folder can be removed */
	assert_int_equal(tree_rmdir(fx->t, deep, "p"), 0);
	assert_int_equal(attr(fx, deep).nlink, 2);
}

/* ---- data ------------------------------------------------------------- */

static void test_gathered_writes_visible(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "hello", 5, 0);
	wr(fx, f, " world", 6, 5);
	/* nothing in the store yet... */
	assert_int_equal(sql_int(fx, "SELECT size FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)f), 0);
	/* ...but reads, getattr, lookup and readdir see it */
	check_file(fx, f, "hello world", 11);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), 0);
	assert_int_equal(a.size, 11);
	{
		struct tree_dir d;

		assert_int_equal(tree_readdir(fx->t, fx->up, &d), 0);
		assert_int_equal(d.n, 1);
		assert_int_equal(d.ents[0].attr.size, 11);
		tree_dir_free(&d);
	}
	/* a second handle shares the gathered data */
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "W", 1, 6);
	check_file(fx, f, "hello World", 11);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_int_equal(sql_int(fx, "SELECT size FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), 11);
	assert_int_equal(sql_int(fx, "SELECT alloc FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), 11);
	check_file(fx, f, "hello World", 11);
	assert_int_equal(tree_release(fx->t, f), 0);
	wr(fx, f, "!", 1, 11);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, "hello World!", 12);
	assert_int_equal(tree_write(fx->t, f, "x", 1, 0), -EBADF);
	/* a read past the end */
	{
		char buf[4];
		size_t got = 9;

		assert_int_equal(tree_read(fx->t, f, buf, 4, 100, &got), 0);
		assert_int_equal(got, 0);
		assert_int_equal(tree_read(fx->t, f, buf, 4, 10, &got), 0);
		assert_int_equal(got, 2);
		assert_memory_equal(buf, "d!", 2);
	}
}

static void test_open_errors(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	char buf[4];
	size_t got;

	assert_int_equal(tree_open(fx->t, fx->up), -EISDIR);
	assert_int_equal(tree_open(fx->t, 999999), -ENOENT);
	assert_int_equal(tree_read(fx->t, 999999, buf, 4, 0, &got), -ENOENT);
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_write(fx->t, f, "x", 1, -1), -EINVAL);
	assert_int_equal(tree_write(fx->t, f, "x", 1, TREE_MAX_SIZE), -EFBIG);
	assert_int_equal(tree_write(fx->t, f, "xy", 2, TREE_MAX_SIZE - 1), -EFBIG);
	assert_int_equal(tree_read(fx->t, f, buf, 4, -1, &got), -EINVAL);
	assert_int_equal(attr(fx, f).size, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	/* release of a file that is not open */
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
}

static void test_chunk_boundaries(void **state)
{
	struct fixture *fx = *state;
	static const struct { int64_t off; size_t len; } w[] = {
		{ 0, 10 },
		{ CHUNK - 6, 12 },		/* across 0|1 */
		{ 2 * CHUNK - 1, 2 },		/* across 1|2 by one byte */
		{ 2 * CHUNK, CHUNK },		/* exactly chunk 2 */
		{ 4 * CHUNK + 100, 3 * CHUNK },	/* spans 4..7 */
		{ 3 * CHUNK - 1, 1 },		/* last byte of chunk 2 */
		{ 5, 2 * CHUNK },		/* overwrite across 0..2 */
		{ 7 * CHUNK + 99, 1 },
	};
	size_t size = 0, max = 8 * CHUNK;
	char *model = calloc(1, max), *data = malloc(3 * CHUNK);
	uint64_t f = mkfile(fx, fx->up, "f");

	assert_non_null(model);
	assert_non_null(data);
	assert_int_equal(tree_open(fx->t, f), 0);
	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++) {
		fill_pattern(data, w[i].len, (unsigned)i + 1);
		wr(fx, f, data, w[i].len, w[i].off);
		memcpy(model + w[i].off, data, w[i].len);
		if ((size_t)w[i].off + w[i].len > size)
			size = (size_t)w[i].off + w[i].len;
		check_file(fx, f, model, size);
		/* flush every other step: mixes stored and gathered chunks */
		if (i % 2)
			assert_int_equal(tree_flush(fx->t, f, false), 0);
		check_file(fx, f, model, size);
		/* reads at odd offsets across boundaries */
		if (size >= CHUNK + 4)
			check_read(fx, f, model + CHUNK - 3, 7, CHUNK - 3);
	}
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, model, size);
	assert_int_equal(sql_int(fx, "SELECT alloc FROM inodes WHERE ino = %llu",
				 (unsigned long long)f),
			 sql_int(fx, "SELECT sum(length(data)) FROM chunks"
				 " WHERE ino = %llu", (unsigned long long)f));
	/* partial rewrite after reopen keeps the rest of the chunk */
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "ZZ", 2, CHUNK + 1000);
	memcpy(model + CHUNK + 1000, "ZZ", 2);
	check_file(fx, f, model, size);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, model, size);
	free(model);
	free(data);
}

static void test_sparse(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "sparse");
	int64_t off = 10 * MiB;
	char *zeros = calloc(1, 3 * CHUNK);
	struct tree_attr a;

	assert_non_null(zeros);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "end", 3, off);
	a = attr(fx, f);
	assert_int_equal(a.size, off + 3);
	assert_true(a.alloc < a.size);
	assert_true(a.alloc <= CHUNK);
	check_read(fx, f, zeros, 3 * CHUNK, 0);
	check_read(fx, f, zeros, 3 * CHUNK, off - 3 * CHUNK);
	check_read(fx, f, "\0\0end", 5, off - 2);
	assert_int_equal(tree_release(fx->t, f), 0);
	a = attr(fx, f);
	assert_int_equal(a.size, off + 3);
	assert_true(a.alloc > 0 && a.alloc < a.size);
	assert_true(a.alloc <= CHUNK);
	check_read(fx, f, zeros, 3 * CHUNK, 5 * MiB);
	check_read(fx, f, "\0\0end", 5, off - 2);
	assert_true(sql_int(fx, "SELECT count(*) FROM chunks WHERE ino = %llu",
			    (unsigned long long)f) <= 1);
	/* a write in the middle of the hole */
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "mid", 3, 5 * MiB);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_read(fx, f, "\0mid\0", 5, 5 * MiB - 1);
	check_read(fx, f, zeros, 3 * CHUNK, 5 * MiB + 3);
	free(zeros);
}

static void trunc_to(struct fixture *fx, uint64_t ino, int64_t size)
{
	struct tree_setattr sa = { .what = TREE_SET_SIZE, .size = size };
	struct tree_attr a;

	assert_int_equal(tree_setattr(fx->t, ino, &sa, &a), 0);
	assert_int_equal(a.size, size);
}

static void test_truncate_no_stale_data(void **state)
{
	struct fixture *fx = *state;
	size_t n = 2 * CHUNK + 500;
	char *model = malloc(n), *zeros = calloc(1, n);
	uint64_t f = mkfile(fx, fx->up, "f");

	assert_non_null(model);
	assert_non_null(zeros);
	memset(model, 'A', n);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, model, n, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	/* closed file: shrink into chunk 0, then extend past chunk 2 */
	trunc_to(fx, f, 10);
	check_file(fx, f, model, 10);
	trunc_to(fx, f, (int64_t)n);
	memset(model + 10, 0, n - 10);
	check_file(fx, f, model, n);
	trunc_to(fx, f, 0);
	check_file(fx, f, model, 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)f), 0);
	assert_int_equal(attr(fx, f).alloc, 0);
	trunc_to(fx, f, 3 * CHUNK);
	check_read(fx, f, zeros, n, 0);
	/* a truncate to the size it has already keeps mtime */
	{
		struct tree_setattr sa = { .what = TREE_SET_MTIME,
					   .mtime_ns = 1000000000 };
		struct tree_attr a;

		assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
		trunc_to(fx, f, 3 * CHUNK);
		assert_int_equal(attr(fx, f).mtime_ns, 1000000000);
		trunc_to(fx, f, 3 * CHUNK - 1);
		assert_true(attr(fx, f).mtime_ns > 1000000000);
	}
	free(model);
	free(zeros);
}

static void test_truncate_while_gathered(void **state)
{
	struct fixture *fx = *state;
	size_t n = CHUNK + 1000;
	char *model = calloc(1, 2 * n);
	uint64_t f = mkfile(fx, fx->up, "f");

	assert_non_null(model);
	memset(model, 'B', n);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, model, n, 0);
	/* cut inside chunk 1 and inside chunk 0 while the data is gathered */
	trunc_to(fx, f, CHUNK + 10);
	check_file(fx, f, model, CHUNK + 10);
	trunc_to(fx, f, 50);
	check_file(fx, f, model, 50);
	/* extend again: zeros, not the old 'B's */
	trunc_to(fx, f, (int64_t)n);
	memset(model + 50, 0, n - 50);
	check_file(fx, f, model, n);
	/* write after the truncate, still open */
	wr(fx, f, "CC", 2, 100);
	memcpy(model + 100, "CC", 2);
	check_file(fx, f, model, n);
	trunc_to(fx, f, 101);
	wr(fx, f, "D", 1, 200);
	memset(model + 101, 0, 200 - 101);
	model[200] = 'D';
	check_file(fx, f, model, 201);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, model, 201);
	free(model);
}

/* What getattr reports as alloc is what the chunks hold. */
static void test_alloc_after_truncate_open(void **state)
{
	struct fixture *fx = *state;
	size_t n = 3 * CHUNK;
	char *data = malloc(n);
	uint64_t f = mkfile(fx, fx->up, "f");
	int64_t held, open_alloc;

	assert_non_null(data);
	memset(data, 'E', n);
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_write(fx->t, f, data, n, 0), 0);
	free(data);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_int_equal(attr(fx, f).alloc, (int64_t)n);
	trunc_to(fx, f, 0);
	open_alloc = attr(fx, f).alloc;
	wr(fx, f, "0123456789", 10, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	held = sql_int(fx, "SELECT coalesce(sum(length(data)), 0) FROM chunks"
		       " WHERE ino = %llu", (unsigned long long)f);
	assert_int_equal(held, 10);
	/* set_size() must refresh the open file's alloc after the cut, or
	 * getattr reports the old alloc and the next flush writes old alloc
	 * + new bytes back into the row (as it once did). */
	if (open_alloc != 0 || attr(fx, f).alloc != held)
		fail_msg("alloc after truncate to 0 while open: %lld (want 0);"
			 " after writing 10 bytes and release: %lld (want 10)",
			 (long long)open_alloc, (long long)attr(fx, f).alloc);
}

/* write(2) of 0 bytes changes nothing: not the size, not mtime. */
static void test_zero_length_write(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_setattr sa = { .what = TREE_SET_MTIME, .mtime_ns = 7000000000 };
	struct tree_attr a;

	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_write(fx->t, f, "", 0, 0), 0);
	assert_int_equal(tree_write(fx->t, f, "", 0, CHUNK + 5), 0);
	a = attr(fx, f);
	assert_int_equal(tree_release(fx->t, f), 0);
	/* (an empty write past the end once set the size to its offset) */
	assert_int_equal(a.size, 0);
	assert_int_equal(a.mtime_ns, 7000000000);
	a = attr(fx, f);
	assert_int_equal(a.size, 0);
	assert_int_equal(a.mtime_ns, 7000000000);
}

static void test_spill_large_write(void **state)
{
	struct fixture *fx = *state;
	size_t n = 9 * MiB + 12345, step = 128 * 1024;
	char *data = malloc(n);
	uint64_t f = mkfile(fx, fx->up, "big");

	assert_non_null(data);
	fill_pattern(data, n, 77);
	assert_int_equal(tree_open(fx->t, f), 0);
	for (size_t off = 0; off < n; off += step)
		wr(fx, f, data + off, off + step > n ? n - off : step,
		   (int64_t)off);
	/* past the 8 MiB limit part of it is in the store already */
	assert_true(sql_int(fx, "SELECT count(*) FROM chunks WHERE ino = %llu",
			    (unsigned long long)f) > 0);
	check_file(fx, f, data, n);
	/* rewrite a spilled region partially */
	wr(fx, f, "spill", 5, 100);
	memcpy(data + 100, "spill", 5);
	check_file(fx, f, data, n);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, data, n);
	assert_int_equal(attr(fx, f).alloc, (int64_t)n);
	/* one single 9 MiB write call */
	f = mkfile(fx, fx->up, "big2");
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, data, n, 0);
	check_file(fx, f, data, n);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, data, n);
	free(data);
}

/* Row `ino` is gone, its data too. */
static void assert_gone(struct fixture *fx, uint64_t ino)
{
	struct tree_attr a;

	assert_int_equal(tree_getattr(fx->t, ino, &a), -ENOENT);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)ino), 0);
}

static void test_unlink_while_open(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "stored", 6, 0);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	wr(fx, f, "+gathered", 9, 6);
	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), -ENOENT);
	{
		struct tree_dir d;

		assert_int_equal(tree_readdir(fx->t, fx->up, &d), 0);
		assert_int_equal(d.n, 0);
		tree_dir_free(&d);
	}
	a = attr(fx, f);
	assert_int_equal(a.nlink, 0);
	assert_false(a.session_root);
	check_file(fx, f, "stored+gathered", 15);
	/* the name is free again */
	mkfile(fx, fx->up, "f");
	wr(fx, f, "!", 1, 15);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	check_file(fx, f, "stored+gathered!", 16);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_gone(fx, f);
}

static void test_rename_over_open_file(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	uint64_t g = mkfile(fx, fx->up, "g");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, g), 0);
	wr(fx, g, "old", 3, 0);
	assert_int_equal(tree_rename(fx->t, fx->up, "f", fx->up, "g", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "g", &a), 0);
	assert_int_equal(a.ino, f);
	check_file(fx, g, "old", 3);
	assert_int_equal(tree_release(fx->t, g), 0);
	assert_gone(fx, g);
}

/* The kernel looked a file up (no open), another process unlinked it,
 * then the kernel asks for it: it is there, unlinked, until forgotten. */
static void test_unlink_while_referenced(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "old", 3, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_int_equal(tree_ref(fx->t, f), 0);
	assert_int_equal(tree_ref(fx->t, f), 0);
	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), -ENOENT);
	a = attr(fx, f);
	assert_int_equal(a.nlink, 0);
	/* opened, written and closed again while referenced: still there */
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "+new", 4, 3);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, "old+new", 7);
	/* one of two references forgotten: still there */
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	check_file(fx, f, "old+new", 7);
	/* open across the last forget: the last release deletes it */
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	check_file(fx, f, "old+new", 7);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_gone(fx, f);
}

/* A read in two steps (tree.h): from a second connection, what
 * tree_read() gives, once the file's bytes are stored; before, the plan
 * says to read through the tree. */
static void test_read_from_another_connection(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct ferr err = FERR_INIT;
	struct store *other = NULL;
	char want[3 * TREE_CHUNK_SIZE + 100], buf[sizeof(want) + 10];
	int64_t size = -1;
	size_t got = 0;

	for (size_t i = 0; i < sizeof(want); i++)
		want[i] = (char)('a' + i % 23);
	assert_int_equal(store_open_beside(fx->st, &other, &err), 0);
	assert_int_equal(tree_read_plan(fx->t, f, &size), -EBADF);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, want, sizeof(want), 0);
	/* gathered in memory: the other connection cannot see them */
	assert_int_equal(tree_read_plan(fx->t, f, &size), 1);
	assert_true(tree_flush_writes(fx->t, f, false));
	assert_true(tree_release_writes(fx->t, f));
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_false(tree_flush_writes(fx->t, f, false));
	assert_true(tree_flush_writes(fx->t, f, true));
	assert_false(tree_release_writes(fx->t, f));
	assert_int_equal(tree_read_plan(fx->t, f, &size), 0);
	assert_int_equal(size, (int64_t)sizeof(want));
	assert_int_equal(tree_read_stored(other, f, size, buf, sizeof(buf), 0,
					  &got), 0);
	assert_int_equal(got, sizeof(want));
	assert_memory_equal(buf, want, sizeof(want));
	/* across a chunk's edge, and past the end */
	assert_int_equal(tree_read_stored(other, f, size, buf, 200,
					  TREE_CHUNK_SIZE - 100, &got), 0);
	assert_int_equal(got, 200);
	assert_memory_equal(buf, want + TREE_CHUNK_SIZE - 100, 200);
	assert_int_equal(tree_read_stored(other, f, size, buf, 10, size, &got),
			 0);
	assert_int_equal(got, 0);
	/* cut after the plan: a short read of what is left, no zeros */
	{
		struct tree_setattr cut = { .what = TREE_SET_SIZE, .size = 100 };
		struct tree_attr a;

		assert_int_equal(tree_setattr(fx->t, f, &cut, &a), 0);
		assert_int_equal(tree_read_stored(other, f, size, buf,
						  sizeof(buf), 0, &got), 0);
		assert_int_equal(got, 100);
		assert_memory_equal(buf, want, 100);
	}
	assert_int_equal(tree_release(fx->t, f), 0);
	store_close(other);
}

/* Which forgets and releases write: the last of an unlinked file's. */
static void test_which_forgets_and_releases_write(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");

	assert_int_equal(tree_ref(fx->t, f), 0);
	assert_int_equal(tree_ref(fx->t, f), 0);
	/* linked: a forget is a count */
	assert_false(tree_forget_deletes(fx->t, f, 2));
	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), 0);
	assert_false(tree_forget_deletes(fx->t, f, 1));
	assert_true(tree_forget_deletes(fx->t, f, 2));
	/* open: its last release deletes it, not the forget */
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_false(tree_forget_deletes(fx->t, f, 2));
	assert_false(tree_release_writes(fx->t, f));
	assert_int_equal(tree_forget(fx->t, f, 2), 0);
	assert_true(tree_release_writes(fx->t, f));
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_gone(fx, f);
}

/* What tree_set_cutter() sends outside the caller's lock: counted. */
static void count_leave(void *ctx)
{
	(*(int *)ctx)++;
}

static void count_enter(void *ctx)
{
	(void)ctx;
}

/* Big cuts go through the cutter's connection, outside the lock;
 * flushes, small cuts and deletes stay inside; the data is the same. */
static void test_cutter_outside_the_lock(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct ferr err = FERR_INIT;
	struct store *other = NULL;
	static char big[2 * 1024 * 1024];
	struct tree_setattr cut = { .what = TREE_SET_SIZE, .size = 10 };
	struct tree_attr a;
	int left = 0;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('A' + i % 26);
	assert_int_equal(store_open_beside(fx->st, &other, &err), 0);
	tree_set_cutter(fx->t, other, count_leave, count_enter, &left);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, big, sizeof(big), 0);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_int_equal(left, 0);
	check_file(fx, f, big, sizeof(big));
	assert_int_equal(sql_int(fx, "SELECT size FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), (int64_t)sizeof(big));
	/* a cut of 2 MiB to 10 bytes, while open: alone, then settled */
	assert_int_equal(tree_setattr(fx->t, f, &cut, &a), 0);
	assert_int_equal(left, 1);
	assert_int_equal(a.size, 10);
	check_file(fx, f, big, 10);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)f), 1);
	assert_int_equal(tree_release(fx->t, f), 0);
	/* a small cut stays inside */
	cut.size = 5;
	assert_int_equal(tree_setattr(fx->t, f, &cut, &a), 0);
	assert_int_equal(left, 1);
	check_file(fx, f, big, 5);
	/* the last forget of an unlinked file deletes it, inside */
	assert_int_equal(tree_ref(fx->t, f), 0);
	assert_int_equal(tree_unlink(fx->t, fx->up, "f"), 0);
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	assert_int_equal(left, 1);
	assert_gone(fx, f);
	tree_set_cutter(fx->t, NULL, NULL, NULL, NULL);
	store_close(other);
}

/* A spill thread played by the test: kick() notes the spill handed
 * over, and wait() (or the test) commits and settles it.  The cutter's
 * context too (tree_set_spiller()): count_leave() counts `left`. */
struct spiller {
	int left;
	struct tree *t;
	int kicked, pending;
};

static void spill_kick(void *ctx)
{
	struct spiller *sp = ctx;

	sp->kicked++;
	sp->pending = 1;
}

static void spill_run(struct spiller *sp)
{
	if (!sp->pending)
		return;
	tree_spill_commit(sp->t);
	tree_spill_settle(sp->t);
	sp->pending = 0;
}

static void spill_wait(void *ctx)
{
	spill_run(ctx);
}

static int64_t stored_chunks(struct fixture *fx, uint64_t ino)
{
	return sql_int(fx, "SELECT count(*) FROM chunks WHERE ino = %llu",
		       (unsigned long long)ino);
}

/*
 * A big write hands 8 MiB at a time to the spill: until it is committed
 * and settled, reads and writes of the file find its data there; a
 * failed spill's data goes back to the file, the next write says so,
 * and the close stores it.
 */
static void test_spill_beside_the_writer(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct ferr err = FERR_INIT;
	struct store *cut = NULL, *spill = NULL;
	struct spiller sp = { .t = fx->t };
	size_t n = 30 * MiB + 777, step = 3000, off = 0;
	char *data = malloc(n);
	int64_t size = -1;

	assert_non_null(data);
	fill_pattern(data, n, 5);
	assert_int_equal(store_open_beside(fx->st, &cut, &err), 0);
	assert_int_equal(store_open_beside(fx->st, &spill, &err), 0);
	tree_set_cutter(fx->t, cut, count_leave, count_enter, &sp);
	tree_set_spiller(fx->t, spill, spill_kick, spill_wait);
	assert_int_equal(tree_open(fx->t, f), 0);
	while (!sp.kicked) {
		wr(fx, f, data + off, step, (int64_t)off);
		off += step;
	}
	/* handed over, not committed: the file's data all the same */
	assert_int_equal(stored_chunks(fx, f), 0);
	assert_int_equal(tree_read_plan(fx->t, f, &size), 1);
	assert_true(tree_release_writes(fx->t, f));
	assert_int_equal(attr(fx, f).size, (int64_t)off);
	assert_int_equal(attr(fx, f).alloc, (int64_t)off);
	check_file(fx, f, data, off);
	/* the next writes go on beside it, into its last chunk too */
	wr(fx, f, data + off, step, (int64_t)off);
	off += step;
	memcpy(data + 10, "over", 4);
	wr(fx, f, "over", 4, 10);
	check_file(fx, f, data, off);
	tree_spill_commit(fx->t);
	assert_true(stored_chunks(fx, f) > 0);
	check_file(fx, f, data, off);
	tree_spill_settle(fx->t);
	sp.pending = 0;
	check_file(fx, f, data, off);
	/* the next spill waits for none; the one after for this one */
	while (sp.kicked < 2) {
		wr(fx, f, data + off, step, (int64_t)off);
		off += step;
	}
	assert_int_equal(sp.kicked, 2);
	assert_int_equal(sp.left, 0);
	/* the third waits for the second, the lock let go meanwhile */
	while (sp.kicked < 3) {
		wr(fx, f, data + off, step, (int64_t)off);
		off += step;
	}
	assert_int_equal(sp.left, 1);
	memcpy(data + off - 4 * MiB, "again", 5);
	wr(fx, f, "again", 5, (int64_t)(off - 4 * MiB));
	/* and fails: its connection may not write */
	assert_int_equal(store_exec(spill, "PRAGMA query_only=1"), 0);
	spill_run(&sp);
	check_file(fx, f, data, off);
	assert_true(tree_write(fx->t, f, data + off, step, (int64_t)off) < 0);
	check_file(fx, f, data, off);
	assert_int_equal(store_exec(spill, "PRAGMA query_only=0"), 0);
	while (off < n) {
		size_t k = off + step > n ? n - off : step;

		wr(fx, f, data + off, k, (int64_t)off);
		off += k;
	}
	spill_run(&sp);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, data, n);
	assert_int_equal(attr(fx, f).alloc, (int64_t)n);
	assert_int_equal(sql_int(fx, "SELECT size FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), (int64_t)n);
	assert_int_equal(sql_int(fx, "SELECT alloc FROM inodes WHERE ino = %llu",
				 (unsigned long long)f), (int64_t)n);
	tree_set_spiller(fx->t, NULL, NULL, NULL);
	tree_set_cutter(fx->t, NULL, NULL, NULL, NULL);
	store_close(spill);
	store_close(cut);
	free(data);
}

static void test_rename_over_referenced_file(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	uint64_t g = mkfile(fx, fx->up, "g");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, g), 0);
	wr(fx, g, "old", 3, 0);
	assert_int_equal(tree_release(fx->t, g), 0);
	assert_int_equal(tree_ref(fx->t, g), 0);
	assert_int_equal(tree_rename(fx->t, fx->up, "f", fx->up, "g", false), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "g", &a), 0);
	assert_int_equal(a.ino, f);
	check_file(fx, g, "old", 3);
	assert_int_equal(attr(fx, g).nlink, 0);
	/* more forgotten than counted (the kernel's count is the truth) */
	assert_int_equal(tree_forget(fx->t, g, 5), 0);
	assert_gone(fx, g);
	/* the file that took the name was never touched */
	assert_int_equal(attr(fx, f).nlink, 1);
}

/* A referenced file only forgotten (never unlinked) keeps its row; so
 * does one whose unlink (a rename over it) rolled back. */
static void test_forget_keeps_linked_files(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_attr a;

	assert_int_equal(tree_ref(fx->t, f), 0);
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	assert_int_equal(attr(fx, f).nlink, 1);
	assert_int_equal(tree_ref(fx->t, f), 0);
	mkfile(fx, fx->up, "g");
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_rename_within(fx->t, fx->up, "g", fx->up, "f",
					    false), 0);
	store_rollback(fx->st);
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), 0);
	assert_int_equal(a.ino, f);
	assert_int_equal(a.nlink, 1);
}

/* The reference table against a plain model: many inodes, counts up and
 * down in a shuffled order, growth and the closing up of emptied slots. */
static void test_reference_table(void **state)
{
	struct fixture *fx = *state;
	enum { N = 3000 };
	static uint32_t count[N];
	static uint64_t inos[N];
	uint32_t seed = 12345;

	memset(count, 0, sizeof(count));
	for (int i = 0; i < N; i++) {
		char name[32];
		struct tree_attr a;

		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(tree_create(fx->t, fx->up, name,
					     S_IFREG | 0644, 0, 0, NULL, &a), 0);
		inos[i] = a.ino;
	}
	for (int round = 0; round < 40000; round++) {
		int i;

		seed = seed * 1103515245u + 12345u;
		i = (int)((seed >> 8) % N);
		if ((seed >> 4) & 1) {
			assert_int_equal(tree_ref(fx->t, inos[i]), 0);
			count[i]++;
		} else if (count[i]) {
			uint32_t n = 1 + (seed >> 20) % count[i];

			assert_int_equal(tree_forget(fx->t, inos[i], n), 0);
			count[i] -= n;
		}
	}
	/* a file still referenced survives its unlink; the others go */
	for (int i = 0; i < N; i += 7) {
		char name[32];
		struct tree_attr a;

		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(tree_unlink(fx->t, fx->up, name), 0);
		assert_int_equal(tree_getattr(fx->t, inos[i], &a),
				 count[i] ? 0 : -ENOENT);
		if (count[i])
			assert_int_equal(tree_forget(fx->t, inos[i], count[i]),
					 0);
		assert_int_equal(tree_getattr(fx->t, inos[i], &a), -ENOENT);
	}
}

static void test_orphans_removed_by_tree_new(void **state)
{
	struct fixture *fx = *state;
	uint64_t keep = mkfile(fx, fx->up, "keep");
	uint64_t open = mkfile(fx, fx->up, "open");
	char sql[300];
	int64_t orphan;

	assert_int_equal(tree_open(fx->t, keep), 0);
	wr(fx, keep, "kept", 4, 0);
	assert_int_equal(tree_release(fx->t, keep), 0);
	/* What a killed daemon leaves: an unlinked, still-open file's row
	 * (tree_free would clean it up, so it is written by hand). */
	snprintf(sql, sizeof(sql), "INSERT INTO inodes(session, parent, name,"
		 " mode, uid, gid, nlink, size, alloc, atime_ns, mtime_ns,"
		 " ctime_ns) VALUES (%lld, NULL, NULL, %d, 0, 0, 0, 3, 3, 0, 0, 0)",
		 (long long)fx->sess, S_IFREG | 0644);
	assert_int_equal(store_exec(fx->st, sql), 0);
	orphan = sqlite3_last_insert_rowid(store_db(fx->st));
	snprintf(sql, sizeof(sql), "INSERT INTO chunks(ino, idx, data) VALUES (%lld, 0, 'abc')",
		 (long long)orphan);
	if (store_exec(fx->st, sql) < 0)
		fail_msg("%s: %s", sql, store_errmsg(fx->st));
	/* and an unlinked open file in this tree: tree_free drops it */
	assert_int_equal(tree_open(fx->t, open), 0);
	wr(fx, open, "gone", 4, 0);
	assert_int_equal(tree_unlink(fx->t, fx->up, "open"), 0);
	close_all(fx);
	open_all(fx);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " ino IN (%lld, %llu)", (long long)orphan,
				 (unsigned long long)open), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino IN (%lld, %llu)", (long long)orphan,
				 (unsigned long long)open), 0);
	/* everything else is still there */
	assert_true(attr(fx, fx->root).session_root);
	assert_true(attr(fx, fx->root2).session_root);
	assert_int_equal(attr(fx, fx->up).nlink, 2);
	check_file(fx, keep, "kept", 4);
}

/*
 * A daemon killed with files open: a child process works on the same
 * database and _exit()s without tree_free() or store_close().  What it
 * closed is intact; the file it had unlinked while open is gone after the
 * next tree_new().
 */
static void test_killed_with_open_files(void **state)
{
	struct fixture *fx = *state;
	uint64_t kept = mkfile(fx, fx->up, "kept");
	uint64_t doomed = mkfile(fx, fx->up, "doomed");
	pid_t pid;
	int status;
	struct tree_attr a;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *st;
		struct tree *t;

		if (store_open(&st, fx->path, NULL) || tree_new(&t, st))
			_exit(90);
		if (tree_open(t, kept) || tree_write(t, kept, "closed", 6, 0) ||
		    tree_release(t, kept))
			_exit(91);
		if (tree_open(t, doomed) || tree_write(t, doomed, "open", 4, 0) ||
		    tree_flush(t, doomed, false) ||
		    tree_unlink(t, fx->up, "doomed"))
			_exit(92);
		/* and one more file written but never flushed */
		if (tree_open(t, kept) || tree_write(t, kept, "lost", 4, 100))
			_exit(93);
		_exit(0);	/* as if killed: nothing is cleaned up */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* the orphan's row is still there until a tree is bound again */
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " ino = %llu AND nlink = 0",
				 (unsigned long long)doomed), 1);
	close_all(fx);
	open_all(fx);
	assert_int_equal(tree_getattr(fx->t, doomed, &a), -ENOENT);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)doomed), 0);
	check_file(fx, kept, "closed", 6);
	assert_int_equal(tree_lookup(fx->t, fx->up, "doomed", &a), -ENOENT);
	assert_int_equal(attr(fx, fx->up).nlink, 2);
}

static void test_durability_across_reopen(void **state)
{
	struct fixture *fx = *state;
	size_t n = 3 * CHUNK + 17;
	char *data = malloc(n);
	uint64_t f = mkfile(fx, fx->up, "f");
	uint64_t g = mkfile(fx, fx->up, "g");
	uint64_t d = mkdir_(fx, fx->up, "d");
	uint64_t l = mk(fx, d, "link", S_IFLNK | 0777);
	struct tree_attr before, after;
	struct sbuf sb = SBUF_INIT;

	assert_non_null(data);
	fill_pattern(data, n, 5);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, data, n, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	before = attr(fx, f);
	/* still open at tree_free: its gathered writes are flushed */
	assert_int_equal(tree_open(fx->t, g), 0);
	wr(fx, g, "open at exit", 12, 0);
	close_all(fx);
	open_all(fx);
	after = attr(fx, f);
	assert_int_equal(after.ino, before.ino);
	assert_int_equal(after.size, before.size);
	assert_int_equal(after.mtime_ns, before.mtime_ns);
	assert_int_equal(after.alloc, before.alloc);
	check_file(fx, f, data, n);
	check_file(fx, g, "open at exit", 12);
	assert_int_equal(tree_lookup(fx->t, fx->up, "d", &after), 0);
	assert_int_equal(after.ino, d);
	assert_int_equal(tree_readlink(fx->t, l, &sb), 0);
	assert_string_equal(sb.buf, "target");
	sbuf_release(&sb);
	/* inode numbers are never reused */
	assert_true(mkfile(fx, fx->up, "new") > l);
	free(data);
}

static void test_setattr(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct tree_setattr sa;
	struct tree_attr a, b;
	char buf[8];
	size_t got;

	sa = (struct tree_setattr){ .what = TREE_SET_MODE, .mode = S_IFDIR | 04711 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_true(S_ISREG(a.mode));		/* the type stays */
	assert_int_equal(a.mode & 07777, 04711);
	sa = (struct tree_setattr){ .what = TREE_SET_UID | TREE_SET_GID,
				    .uid = 4242, .gid = 4343 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(a.uid, 4242);
	assert_int_equal(a.gid, 4343);
	assert_int_equal(a.mode & 07777, 04711);
	sa = (struct tree_setattr){ .what = TREE_SET_ATIME | TREE_SET_MTIME,
				    .atime_ns = 1111111111000000001,
				    .mtime_ns = 1222222222000000002 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(a.atime_ns, 1111111111000000001);
	assert_int_equal(a.mtime_ns, 1222222222000000002);
	assert_true(a.ctime_ns > 1222222222000000002);
	b = attr(fx, f);
	assert_int_equal(b.atime_ns, a.atime_ns);
	assert_int_equal(b.mtime_ns, a.mtime_ns);
	assert_int_equal(b.uid, 4242);
	/* only mtime: atime stays */
	sa = (struct tree_setattr){ .what = TREE_SET_MTIME_NOW };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(a.atime_ns, 1111111111000000001);
	assert_true(a.mtime_ns > 1222222222000000002);
	sa = (struct tree_setattr){ .what = TREE_SET_ATIME_NOW };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_true(a.atime_ns > 1111111111000000001);
	sa = (struct tree_setattr){ .what = TREE_SET_CTIME, .ctime_ns = 77 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(a.ctime_ns, 77);

	/* reads and getattr never change mtime; writes do */
	sa = (struct tree_setattr){ .what = TREE_SET_MTIME, .mtime_ns = 5000000000 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_read(fx->t, f, buf, sizeof(buf), 0, &got), 0);
	assert_int_equal(tree_flush(fx->t, f, false), 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_int_equal(attr(fx, f).mtime_ns, 5000000000);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "data", 4, 0);
	assert_true(attr(fx, f).mtime_ns > 5000000000);
	assert_int_equal(tree_release(fx->t, f), 0);
	a = attr(fx, f);
	assert_true(a.mtime_ns > 5000000000);
	/* utimens while open sticks after the release */
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "more", 4, 4);
	sa = (struct tree_setattr){ .what = TREE_SET_MTIME, .mtime_ns = 6000000000 };
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
	assert_int_equal(a.mtime_ns, 6000000000);
	assert_int_equal(tree_read(fx->t, f, buf, sizeof(buf), 0, &got), 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_int_equal(attr(fx, f).mtime_ns, 6000000000);
	check_file(fx, f, "datamore", 8);

	/* size errors */
	sa = (struct tree_setattr){ .what = TREE_SET_SIZE, .size = 1 };
	assert_int_equal(tree_setattr(fx->t, fx->up, &sa, &a), -EISDIR);
	sa.size = -1;
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), -EINVAL);
	sa.size = TREE_MAX_SIZE + 1;
	assert_int_equal(tree_setattr(fx->t, f, &sa, &a), -EFBIG);
	assert_int_equal(tree_setattr(fx->t, 999999, &sa, &a), -ENOENT);
	assert_true(sqlite3_get_autocommit(store_db(fx->st)));
	/* chmod of a folder */
	sa = (struct tree_setattr){ .what = TREE_SET_MODE, .mode = 0700 };
	assert_int_equal(tree_setattr(fx->t, fx->up, &sa, &a), 0);
	assert_true(S_ISDIR(a.mode));
	assert_int_equal(a.mode & 07777, 0700);
}

static void test_read_all(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "f");
	struct sbuf sb = SBUF_INIT;
	struct tree_attr a;

	a = attr(fx, f);
	assert_int_equal(tree_read_all(fx->t, &a, &sb), 0);
	assert_int_equal(sb.len, 0);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, "{\"a\":\0}", 7, 0);
	/* an open file's gathered writes, as tree_lookup() sizes it */
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &a), 0);
	assert_int_equal(tree_read_all(fx->t, &a, &sb), 0);
	assert_int_equal(sb.len, 7);
	assert_memory_equal(sb.buf, "{\"a\":\0}", 8);
	assert_int_equal(tree_release(fx->t, f), 0);
	a = attr(fx, fx->up);
	assert_int_equal(tree_read_all(fx->t, &a, &sb), -EINVAL);
	sbuf_release(&sb);
}

static void test_session_has_data(void **state)
{
	struct fixture *fx = *state;
	bool has = true;

	assert_int_equal(tree_session_has_data(fx->t, fx->sess, &has), 0);
	assert_false(has);
	mkfile(fx, fx->up, "x");
	assert_int_equal(tree_session_has_data(fx->t, fx->sess, &has), 0);
	assert_true(has);
	assert_int_equal(tree_session_has_data(fx->t, fx->sess2, &has), 0);
	assert_false(has);
}

static size_t listed(struct fixture *fx, uint64_t dir_ino)
{
	struct tree_dir dir;
	size_t n;

	assert_int_equal(tree_readdir(fx->t, dir_ino, &dir), 0);
	n = dir.n;
	tree_dir_free(&dir);
	return n;
}

static void test_unlinked_then_linked(void **state)
{
	struct fixture *fx = *state;
	uint64_t old = mkfile(fx, fx->up, "f"), plain = mkfile(fx, fx->up, "g");
	struct tree_attr a, b;

	mkdir_(fx, fx->up, "d");
	assert_int_equal(tree_open(fx->t, old), 0);
	wr(fx, old, "old", 3, 0);
	/* made, written and spilled: still in no folder */
	assert_int_equal(tree_create_unlinked(fx->t, fx->up, &a), 0);
	assert_int_equal(a.nlink, 0);
	assert_false(a.session_root);
	wr(fx, a.ino, "new data", 8, 0);
	assert_int_equal(tree_flush(fx->t, a.ino, false), 0);
	assert_int_equal(listed(fx, fx->up), 3);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " ino = %llu AND parent IS NULL AND nlink = 0",
				 (unsigned long long)a.ino), 1);
	/* not over a folder, not into another session, not a plain file */
	assert_int_equal(tree_link_unlinked(fx->t, a.ino, fx->up, "d"), -EISDIR);
	assert_int_equal(tree_link_unlinked(fx->t, a.ino, fx->root2, "f"),
			 -EXDEV);
	assert_int_equal(tree_open(fx->t, plain), 0);
	assert_int_equal(tree_link_unlinked(fx->t, plain, fx->up, "h"), -EINVAL);
	assert_int_equal(tree_release(fx->t, plain), 0);
	/* over "f", which is open: the old one lives on, unlinked */
	wr(fx, a.ino, "!", 1, 8);
	assert_int_equal(tree_link_unlinked(fx->t, a.ino, fx->up, "f"), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "f", &b), 0);
	assert_int_equal(b.ino, a.ino);
	assert_int_equal(b.nlink, 1);
	assert_int_equal(b.size, 9);
	assert_int_equal(tree_release(fx->t, a.ino), 0);
	check_file(fx, a.ino, "new data!", 9);
	check_file(fx, old, "old", 3);
	assert_int_equal(listed(fx, fx->up), 3);
	assert_int_equal(attr(fx, fx->up).nlink, 3);
	assert_int_equal(tree_release(fx->t, old), 0);
	assert_int_equal(tree_getattr(fx->t, old, &b), -ENOENT);
	/* released before it is linked: gone, chunks and all */
	assert_int_equal(tree_create_unlinked(fx->t, fx->up, &a), 0);
	wr(fx, a.ino, "x", 1, 3 * CHUNK);
	assert_int_equal(tree_flush(fx->t, a.ino, false), 0);
	assert_int_equal(tree_release(fx->t, a.ino), 0);
	assert_int_equal(tree_getattr(fx->t, a.ino, &b), -ENOENT);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks WHERE"
				 " ino = %llu", (unsigned long long)a.ino), 0);
	/* tree_put_file on top */
	assert_int_equal(tree_put_file(fx->t, fx->up, "g", "put", 3, &b), 0);
	assert_int_equal(b.nlink, 1);
	check_file(fx, b.ino, "put", 3);
	assert_int_equal(tree_getattr(fx->t, plain, &a), -ENOENT);
	assert_int_equal(tree_put_file(fx->t, fx->up, "d", "put", 3, NULL),
			 -EISDIR);
	assert_int_equal(listed(fx, fx->up), 3);
}

/* A daemon killed while it wrote a file in no folder leaves nothing. */
static void test_killed_with_an_unlinked_file(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr a;
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct store *st;
		struct tree *t;
		struct tree_attr u;

		if (store_open(&st, fx->path, NULL) || tree_new(&t, st))
			_exit(90);
		if (tree_create_unlinked(t, fx->up, &u) ||
		    tree_write(t, u.ino, "half", 4, 0) ||
		    tree_flush(t, u.ino, false))
			_exit(91);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " nlink = 0 AND parent IS NULL"), 1);
	close_all(fx);
	open_all(fx);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " nlink = 0"), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM chunks"), 0);
	assert_int_equal(listed(fx, fx->up), 0);
	assert_int_equal(tree_getattr(fx->t, fx->up, &a), 0);
}

/* The session's row deleted as session_delete() does, its files with it. */
static void delete_session(struct fixture *fx)
{
	char sql[96];

	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_forget_session(fx->t, fx->sess), 0);
	snprintf(sql, sizeof(sql), "DELETE FROM sessions WHERE id = %lld",
		 (long long)fx->sess);
	assert_int_equal(store_exec(fx->st, sql), 0);
	assert_int_equal(store_commit(fx->st), 0);
}

/* Files of a deleted session that are still open keep working, also
 * those already unlinked. */
static void test_forget_session_keeps_open_files(void **state)
{
	struct fixture *fx = *state;
	uint64_t linked = mkfile(fx, fx->up, "a"), gone = mkfile(fx, fx->up, "b");

	assert_int_equal(tree_open(fx->t, linked), 0);
	assert_int_equal(tree_open(fx->t, gone), 0);
	wr(fx, linked, "linked", 6, 0);
	wr(fx, gone, "unlinked", 8, 0);
	assert_int_equal(tree_flush(fx->t, gone, false), 0);
	assert_int_equal(tree_unlink(fx->t, fx->up, "b"), 0);
	delete_session(fx);
	check_read(fx, linked, "linked", 6, 0);
	check_read(fx, gone, "unlinked", 8, 0);
	assert_int_equal(tree_release(fx->t, linked), 0);
	assert_int_equal(tree_release(fx->t, gone), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " ino IN (%llu, %llu)", (unsigned long long)linked,
				 (unsigned long long)gone), 0);
}

/* The same with the kernel holding the files too: they go with its last
 * forget (the session's delete once left them until the next mount). */
static void test_forget_session_with_referenced_files(void **state)
{
	struct fixture *fx = *state;
	uint64_t f = mkfile(fx, fx->up, "a");

	assert_int_equal(tree_open(fx->t, f), 0);
	assert_int_equal(tree_ref(fx->t, f), 0);
	wr(fx, f, "data", 4, 0);
	delete_session(fx);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, "data", 4);
	assert_int_equal(tree_forget(fx->t, f, 1), 0);
	assert_gone(fx, f);
}

/* A transaction that unlinked an open file and then rolled back: the
 * file has its name again, and its last close must not delete it. */
static void test_unlink_rolled_back_keeps_the_file(void **state)
{
	struct fixture *fx = *state;
	uint64_t ino = mkfile(fx, fx->up, "kept");
	struct tree_attr a;

	assert_int_equal(tree_open(fx->t, ino), 0);
	wr(fx, ino, "stored", 6, 0);
	assert_int_equal(tree_flush(fx->t, ino, false), 0);
	wr(fx, ino, "!", 1, 6);
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_forget_session(fx->t, fx->sess), 0);
	store_rollback(fx->st);
	assert_int_equal(tree_release(fx->t, ino), 0);
	assert_int_equal(tree_lookup(fx->t, fx->up, "kept", &a), 0);
	assert_int_equal(a.ino, ino);
	check_file(fx, ino, "stored!", 7);
}

/* A move of an open file into another session that rolled back: the
 * file is still its first session's, and deleting that one keeps it
 * open (it once went on the move's word, and the file's row with it). */
static void test_move_rolled_back_keeps_open_file(void **state)
{
	struct fixture *fx = *state;
	uint64_t d = mkdir_(fx, fx->up, "d");
	uint64_t ino = mkfile(fx, d, "f");

	assert_int_equal(tree_open(fx->t, ino), 0);
	wr(fx, ino, "hello", 5, 0);
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_rename_within(fx->t, fx->up, "d", fx->root2, "d",
					    false), 0);
	assert_int_equal(attr(fx, ino).session, fx->sess2);
	store_rollback(fx->st);
	assert_int_equal(attr(fx, ino).session, fx->sess);
	delete_session(fx);
	wr(fx, ino, " more", 5, 5);
	assert_int_equal(tree_flush(fx->t, ino, false), 0);
	check_read(fx, ino, "hello more", 10, 0);
	assert_int_equal(tree_release(fx->t, ino), 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " ino = %llu", (unsigned long long)ino), 0);
}

/*
 * Trash folders at the mount's root: made, found by name, listed; what
 * moves in is no session's, what moves back out is the session's; a
 * session's root moves in and out with tree_move_root() and within a
 * trash with tree_rename(), keeping its rows its session's.
 */
static void test_trash(void **state)
{
	struct fixture *fx = *state;
	struct tree_attr tr, files, a;
	struct tree_dir dir;
	uint64_t d = mkdir_(fx, fx->up, "d");
	uint64_t f = mkfile(fx, d, "f");

	assert_int_equal(tree_trash_lookup(fx->t, ".Trash-1000", &tr), -ENOENT);
	assert_int_equal(tree_trash_create(fx->t, ".Trash-1000", 0700, 1000,
					   1000, &tr), 0);
	assert_true(S_ISDIR(tr.mode));
	assert_false(tr.session_root);
	assert_int_equal(tr.session, 0);
	assert_int_equal(tr.tag, TREE_TAG_TRASH);
	assert_int_equal(tree_trash_create(fx->t, ".Trash-1000", 0700, 1000,
					   1000, &a), -EEXIST);
	assert_int_equal(tree_trash_lookup(fx->t, ".Trash-1000", &a), 0);
	assert_int_equal(a.ino, tr.ino);
	assert_int_equal(tree_trash_list(fx->t, &dir), 0);
	assert_int_equal(dir.n, 1);
	assert_string_equal(dir.ents[0].name, ".Trash-1000");
	tree_dir_free(&dir);
	assert_int_equal(tree_create(fx->t, tr.ino, "files", S_IFDIR | 0700,
				     1000, 1000, NULL, &files), 0);
	assert_int_equal(files.session, 0);

	/* a folder of a session into the trash, and back */
	assert_int_equal(tree_rename(fx->t, fx->up, "d", files.ino, "d", false),
			 0);
	assert_int_equal(attr(fx, f).session, 0);
	assert_int_equal(sql_int(fx, "SELECT count(*) FROM inodes WHERE"
				 " session IS NULL AND ino IN (%llu, %llu)",
				 (unsigned long long)d, (unsigned long long)f), 2);
	assert_int_equal(tree_rename(fx->t, files.ino, "d", fx->up, "d", false),
			 0);
	assert_int_equal(attr(fx, f).session, fx->sess);

	/* a session's root: into the trash, within it, out again */
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_move_root(fx->t, fx->root2, files.ino, "s2"), 0);
	assert_int_equal(store_commit(fx->st), 0);
	assert_int_equal(tree_lookup(fx->t, files.ino, "s2", &a), 0);
	assert_true(a.session_root);
	assert_int_equal(a.session, fx->sess2);
	assert_int_equal(attr(fx, files.ino).nlink, 3);
	assert_int_equal(tree_create(fx->t, tr.ino, "expunged", S_IFDIR | 0700,
				     1000, 1000, NULL, &a), 0);
	assert_int_equal(tree_rename(fx->t, files.ino, "s2", a.ino, "7", false), 0);
	assert_int_equal(tree_lookup(fx->t, a.ino, "7", &a), 0);
	assert_int_equal(a.session, fx->sess2);
	assert_int_equal(attr(fx, files.ino).nlink, 2);
	/* a session's root goes nowhere but a trash, nor inside a folder of
	 * one: deleting the session it went into would take it along */
	assert_int_equal(tree_rename(fx->t, tr.ino, "expunged", fx->up, "e",
				     false), -EXDEV);
	assert_int_equal(tree_lookup(fx->t, tr.ino, "expunged", &a), 0);
	assert_int_equal(tree_lookup(fx->t, a.ino, "7", &a), 0);
	assert_int_equal(a.session, fx->sess2);
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_move_root(fx->t, fx->root2, fx->up, "x"), -EXDEV);
	assert_int_equal(tree_move_root(fx->t, f, files.ino, "x"), -EINVAL);
	assert_int_equal(tree_move_root(fx->t, fx->root2, 0, NULL), 0);
	assert_int_equal(store_commit(fx->st), 0);
	assert_true(attr(fx, fx->root2).session_root);

	/* only an empty trash folder goes */
	assert_int_equal(tree_trash_remove(fx->t, ".Trash-1000"), -ENOTEMPTY);
	assert_int_equal(tree_rmdir(fx->t, tr.ino, "files"), 0);
	assert_int_equal(tree_rmdir(fx->t, tr.ino, "expunged"), 0);
	assert_int_equal(tree_trash_remove(fx->t, ".Trash-1000"), 0);
	assert_int_equal(tree_trash_lookup(fx->t, ".Trash-1000", &a), -ENOENT);
	assert_int_equal(tree_trash_remove(fx->t, ".Trash-1000"), -ENOENT);
}


/* ---- data files (contents.h) ---------------------------------------------- */

static int64_t sql_count(struct fixture *fx, const char *sql)
{
	int64_t v = -1;

	assert_int_equal(store_int_args(fx->st, sql, &v, NULL, 0), 0);
	return v;
}

/*
 * A file that grows past TREE_INLINE_MAX moves to a data file: its
 * bytes read back (model), its row names the content, no chunk is left;
 * a cut to nothing lets go of it, and the sweep removes it.
 */
static void test_data_file_moves_out_and_back(void **state)
{
	struct fixture *fx = *state;
	size_t n = 3 * TREE_INLINE_MAX + 17;
	char *model = calloc(1, n);
	uint64_t f = mkfile(fx, fx->up, "grows");

	assert_non_null(model);
	tree_set_inline_max(fx->t, TREE_INLINE_MAX);
	fill_pattern(model, n, 3);
	assert_int_equal(tree_open(fx->t, f), 0);
	/* small writes first, in chunks, then past the threshold */
	for (size_t off = 0; off < n; off += 10000)
		wr(fx, f, model + off, off + 10000 > n ? n - off : 10000,
		   (int64_t)off);
	check_file(fx, f, model, n);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_true(attr(fx, f).content > 0);
	assert_int_equal(sql_count(fx, "SELECT count(*) FROM chunks"), 0);
	assert_int_equal(sql_count(fx, "SELECT refs FROM contents"), 1);
	check_file(fx, f, model, n);
	/* a reader on a connection of its own is sent back (it read zeros
	 * of chunks that were gone, or nothing) */
	{
		struct store *other;
		char buf[16];
		size_t got = 5;

		assert_int_equal(store_open_beside(fx->st, &other, NULL), 0);
		assert_int_equal(tree_read_stored(other, f, (int64_t)n, buf,
						  sizeof(buf), 0, &got), 1);
		assert_int_equal(got, 0);
		store_close(other);
	}
	/* a rewrite in the middle, reopened */
	assert_int_equal(tree_open(fx->t, f), 0);
	memcpy(model + 1000, "middle", 6);
	wr(fx, f, "middle", 6, 1000);
	assert_int_equal(tree_release(fx->t, f), 0);
	check_file(fx, f, model, n);
	/* a cut to nothing: no content, its file swept */
	{
		struct tree_setattr sa = { .what = TREE_SET_SIZE, .size = 0 };
		struct tree_attr a;

		assert_int_equal(tree_setattr(fx->t, f, &sa, &a), 0);
		assert_int_equal(a.content, 0);
	}
	assert_int_equal(tree_sweep(fx->t), 0);
	assert_int_equal(sql_count(fx, "SELECT count(*) FROM contents"), 0);
	free(model);
}

/*
 * A copy shares a content (counted twice); the first write to either side
 * gives the writer its own, and the other reads what it had.  A content
 * no row names goes with the sweep, not before the commit.
 */
static void test_copy_shares_then_copies_on_write(void **state)
{
	struct fixture *fx = *state;
	size_t n = 2 * TREE_INLINE_MAX;
	char *model = malloc(n);
	uint64_t f = mkfile(fx, fx->up, "big"), copy;
	uint64_t dir = mkdir_(fx, fx->root, "d");
	int64_t refs;

	assert_non_null(model);
	tree_set_inline_max(fx->t, TREE_INLINE_MAX);
	fill_pattern(model, n, 9);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, model, n, 0);
	/* open with bytes written: the copy takes what is stored, so flush */
	assert_int_equal(tree_flush_all(fx->t), 0);
	assert_int_equal(store_begin(fx->st), 0);
	assert_int_equal(tree_copy(fx->t, fx->up, 0, fx->sess2, &copy), 0);
	assert_int_equal(store_run(fx->st, "UPDATE inodes SET parent = ?1,"
				   " name = CAST('copied' AS BLOB) WHERE ino = ?2",
				   STORE_INT(dir), STORE_INT(copy)), 0);
	assert_int_equal(store_commit(fx->st), 0);
	assert_int_equal(contents_refs(fx->st, attr(fx, f).content, &refs), 0);
	assert_int_equal(refs, 2);
	{
		struct tree_attr up, c;

		assert_int_equal(tree_lookup(fx->t, dir, "copied", &up), 0);
		assert_int_equal(tree_lookup(fx->t, up.ino, "big", &c), 0);
		assert_int_equal(c.content, attr(fx, f).content);
		assert_int_equal(c.session, fx->sess2);
		/* the original's next write copies: the copy keeps its bytes */
		wr(fx, f, "XYZ", 3, 5);
		assert_int_equal(tree_release(fx->t, f), 0);
		assert_true(attr(fx, f).content != c.content);
		check_file(fx, c.ino, model, n);
		memcpy(model + 5, "XYZ", 3);
		check_file(fx, f, model, n);
		assert_int_equal(contents_refs(fx->st, c.content, &refs), 0);
		assert_int_equal(refs, 1);
	}
	assert_int_equal(sql_count(fx, "SELECT count(*) FROM contents"), 2);
	free(model);
}

/* The data file of a file unlinked goes only after the commit and the
 * sweep; a data file no row names is removed by the next tree_new(). */
static void test_sweeps_of_data_files(void **state)
{
	struct fixture *fx = *state;
	char *buf = calloc(1, 2 * TREE_INLINE_MAX);
	char orphan[300];
	uint64_t f = mkfile(fx, fx->up, "gone");
	FILE *o;

	assert_non_null(buf);
	tree_set_inline_max(fx->t, TREE_INLINE_MAX);
	assert_int_equal(tree_open(fx->t, f), 0);
	wr(fx, f, buf, 2 * TREE_INLINE_MAX, 0);
	assert_int_equal(tree_release(fx->t, f), 0);
	assert_int_equal(tree_unlink(fx->t, fx->up, "gone"), 0);
	assert_int_equal(sql_count(fx, "SELECT count(*) FROM contents"
				   " WHERE refs = 0"), 1);
	assert_int_equal(tree_sweep(fx->t), 0);
	assert_int_equal(sql_count(fx, "SELECT count(*) FROM contents"), 0);
	/* an orphan, as a crash leaves one */
	snprintf(orphan, sizeof(orphan), "%s.d/4242", fx->path);
	o = fopen(orphan, "w");
	assert_non_null(o);
	fclose(o);
	close_all(fx);
	open_all(fx);
	assert_int_equal(access(orphan, F_OK), -1);
	free(buf);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_create_lookup_getattr),
		T(test_create_errors),
		T(test_unlink_rmdir),
		T(test_readdir),
		T(test_rename_files),
		T(test_rename_dirs),
		T(test_trash),
		T(test_gathered_writes_visible),
		T(test_open_errors),
		T(test_chunk_boundaries),
		T(test_sparse),
		T(test_truncate_no_stale_data),
		T(test_truncate_while_gathered),
		T(test_alloc_after_truncate_open),
		T(test_zero_length_write),
		T(test_spill_large_write),
		T(test_unlink_while_open),
		T(test_rename_over_open_file),
		T(test_orphans_removed_by_tree_new),
		T(test_read_from_another_connection),
		T(test_which_forgets_and_releases_write),
		T(test_cutter_outside_the_lock),
		T(test_spill_beside_the_writer),
		T(test_unlink_while_referenced),
		T(test_rename_over_referenced_file),
		T(test_forget_keeps_linked_files),
		T(test_reference_table),
		T(test_killed_with_open_files),
		T(test_durability_across_reopen),
		T(test_setattr),
		T(test_read_all),
		T(test_session_has_data),
		T(test_data_file_moves_out_and_back),
		T(test_copy_shares_then_copies_on_write),
		T(test_sweeps_of_data_files),
		T(test_unlinked_then_linked),
		T(test_killed_with_an_unlinked_file),
		T(test_forget_session_keeps_open_files),
		T(test_forget_session_with_referenced_files),
		T(test_unlink_rolled_back_keeps_the_file),
		T(test_move_rolled_back_keeps_open_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
