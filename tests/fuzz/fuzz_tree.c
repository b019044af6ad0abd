/*
 * Fuzz target for tree: the input is a program of operations (create,
 * mkdir, unlink, rmdir, rename, open, write, read, truncate, flush,
 * release, check, restart) on one session of a fresh in-memory store, run
 * at the same time against a small model of what a POSIX filesystem must
 * hold: the names in every folder, every file's bytes and size, the open
 * handles and files unlinked while open.  Any difference aborts: contents,
 * sizes, folder listings, success where the model expects failure and
 * vice versa, or an errno that is none of those the model allows.
 *
 * Set FUZZ_TREE_ALLOC=1 to also check that a file's alloc is the number of
 * bytes its chunks hold (off by default while that is a known bug).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/tree.h"

#define MAXN 40
#define MAXOPS 200
#define CHUNK TREE_CHUNK_SIZE

struct mnode {
	bool used, dir, linked;
	int parent;
	char name[2];
	uint64_t ino;
	unsigned char *data;
	size_t size;
	int opens;
};

struct ctx {
	struct store *st;
	struct tree *t;
	struct mnode n[MAXN];
	const uint8_t *p;
	size_t left;
	int op;			/* for messages */
	bool check_alloc;
};

static void die(struct ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
static void die(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_tree: op %d: ", c->op);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

static unsigned next(struct ctx *c)
{
	if (!c->left)
		return 0;
	c->left--;
	return *c->p++;
}

/* 0 must be 0; otherwise `ret` must be one of the allowed errnos. */
static void expect(struct ctx *c, const char *what, int ret, const int *allowed,
		   int nallowed)
{
	if (!nallowed) {
		if (ret != 0)
			die(c, "%s: got %d, model expects success", what, ret);
		return;
	}
	for (int i = 0; i < nallowed; i++)
		if (ret == allowed[i])
			return;
	die(c, "%s: got %d, model expects one of %d errors (first %d)", what,
	    ret, nallowed, allowed[0]);
}

static int find_child(struct ctx *c, int parent, const char *name)
{
	for (int i = 0; i < MAXN; i++)
		if (c->n[i].used && c->n[i].linked && c->n[i].parent == parent &&
		    !strcmp(c->n[i].name, name))
			return i;
	return -1;
}

static bool has_children(struct ctx *c, int d)
{
	for (int i = 0; i < MAXN; i++)
		if (c->n[i].used && c->n[i].linked && c->n[i].parent == d)
			return true;
	return false;
}

/* Whether `d` is `anc` or below it. */
static bool within(struct ctx *c, int d, int anc)
{
	for (; d >= 0; d = c->n[d].parent)
		if (d == anc)
			return true;
	return false;
}

static int free_slot(struct ctx *c)
{
	for (int i = 0; i < MAXN; i++)
		if (!c->n[i].used)
			return i;
	return -1;
}

enum pick { P_DIR, P_FILE, P_OPEN, P_READABLE };

static bool matches(struct mnode *m, enum pick what)
{
	if (!m->used)
		return false;
	switch (what) {
	case P_DIR: return m->dir && m->linked;
	case P_FILE: return !m->dir && m->linked;
	case P_OPEN: return m->opens > 0;
	case P_READABLE: return !m->dir && (m->linked || m->opens > 0);
	}
	return false;
}

static int pick(struct ctx *c, enum pick what, unsigned sel)
{
	int count = 0, k;

	for (int i = 0; i < MAXN; i++)
		count += matches(&c->n[i], what);
	if (!count)
		return -1;
	k = (int)(sel % (unsigned)count);
	for (int i = 0; i < MAXN; i++)
		if (matches(&c->n[i], what) && k-- == 0)
			return i;
	return -1;
}

static void forget(struct ctx *c, int i)
{
	struct tree_attr a;
	int ret;

	ret = tree_getattr(c->t, c->n[i].ino, &a);
	if (ret != -ENOENT)
		die(c, "ino %llu should be gone, getattr gave %d",
		    (unsigned long long)c->n[i].ino, ret);
	free(c->n[i].data);
	memset(&c->n[i], 0, sizeof(c->n[i]));
}

/* The node leaves its folder (unlink, or replaced by a rename). */
static void unlink_node(struct ctx *c, int i)
{
	c->n[i].linked = false;
	c->n[i].parent = -1;
	if (!c->n[i].opens)
		forget(c, i);
}

static int64_t gen_off(struct ctx *c)
{
	unsigned a = next(c), b = next(c);
	static const int64_t base[] = { 0, CHUNK - 128, 2 * CHUNK - 128,
					 3 * CHUNK - 128 };

	return base[a % 4] + (int64_t)(b % 256) + (int64_t)((a >> 2) % 4) * 16;
}

static size_t gen_len(struct ctx *c)
{
	unsigned a = next(c), b = next(c);

	if (a % 8 == 0)
		return CHUNK + b;		/* spans a whole chunk */
	return (size_t)b + (a % 8 == 1 ? 256 : 0);
}

static void check_attr(struct ctx *c, int i)
{
	struct mnode *m = &c->n[i];
	struct tree_attr a;
	int ret = tree_getattr(c->t, m->ino, &a);

	if (ret)
		die(c, "getattr of node %d: %d", i, ret);
	if (S_ISDIR(a.mode) != m->dir)
		die(c, "node %d: type differs", i);
	if (!m->dir && a.size != (int64_t)m->size)
		die(c, "node %d: size %lld, model %zu", i, (long long)a.size,
		    m->size);
	if (!m->dir && a.nlink != (m->linked ? 1u : 0u))
		die(c, "node %d: nlink %u", i, a.nlink);
	if (m->dir) {
		uint32_t subdirs = 0;

		for (int k = 0; k < MAXN; k++)
			subdirs += c->n[k].used && c->n[k].linked &&
				   c->n[k].dir && c->n[k].parent == i;
		if (a.nlink != 2 + subdirs)
			die(c, "dir %d: nlink %u, model %u", i, a.nlink,
			    2 + subdirs);
	}
	if (!m->dir && a.alloc < 0)
		die(c, "node %d: negative alloc", i);
	if (m->linked && i != 0) {
		struct tree_attr l;

		ret = tree_lookup(c->t, c->n[m->parent].ino, m->name, &l);
		if (ret || l.ino != m->ino)
			die(c, "lookup of node %d: %d", i, ret);
	}
}

static void check_alloc(struct ctx *c, int i)
{
	static const char sql[] = "SELECT (SELECT alloc FROM inodes WHERE ino = ?1)"
		" = (SELECT coalesce(sum(length(data)), 0) FROM chunks WHERE ino = ?1)";
	sqlite3_stmt *q = NULL;
	int ok;

	if (!c->check_alloc || c->n[i].dir || c->n[i].opens)
		return;
	if (sqlite3_prepare_v2(store_db(c->st), sql, -1, &q, NULL) != SQLITE_OK)
		die(c, "prepare");
	sqlite3_bind_int64(q, 1, (int64_t)c->n[i].ino);
	ok = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_int(q, 0);
	sqlite3_finalize(q);
	if (!ok)
		die(c, "node %d: alloc differs from the bytes its chunks hold", i);
}

static void check_read(struct ctx *c, int i, int64_t off, size_t len)
{
	struct mnode *m = &c->n[i];
	char *buf = malloc(len + 1);
	size_t got = 0, want;
	int ret;

	if (!buf)
		abort();
	ret = tree_read(c->t, m->ino, buf, len, off, &got);
	if (ret)
		die(c, "read node %d: %d", i, ret);
	want = (size_t)off >= m->size ? 0 :
	       (m->size - (size_t)off < len ? m->size - (size_t)off : len);
	if (got != want)
		die(c, "read node %d at %lld: got %zu bytes, model %zu", i,
		    (long long)off, got, want);
	for (size_t k = 0; k < got; k++)
		if ((unsigned char)buf[k] != m->data[off + (int64_t)k])
			die(c, "read node %d: byte %lld is %u, model %u", i,
			    (long long)(off + (int64_t)k), (unsigned char)buf[k],
			    m->data[off + (int64_t)k]);
	free(buf);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_dir(struct ctx *c, int d)
{
	struct tree_dir dir;
	const char *names[MAXN];
	size_t n = 0;

	for (int i = 0; i < MAXN; i++)
		if (c->n[i].used && c->n[i].linked && c->n[i].parent == d)
			names[n++] = c->n[i].name;
	qsort(names, n, sizeof(names[0]), cmp_str);
	if (tree_readdir(c->t, c->n[d].ino, &dir))
		die(c, "readdir %d", d);
	if (dir.n != n)
		die(c, "dir %d has %zu entries, model %zu", d, dir.n, n);
	for (size_t k = 0; k < n; k++) {
		int i = find_child(c, d, names[k]);

		if (strcmp(dir.ents[k].name, names[k]))
			die(c, "dir %d entry %zu is '%s', model '%s'", d, k,
			    dir.ents[k].name, names[k]);
		if (dir.ents[k].attr.ino != c->n[i].ino)
			die(c, "dir %d entry %s: ino differs", d, names[k]);
		if (!c->n[i].dir && dir.ents[k].attr.size != (int64_t)c->n[i].size)
			die(c, "dir %d entry %s: size differs", d, names[k]);
	}
	tree_dir_free(&dir);
}

static void check_all(struct ctx *c)
{
	for (int i = 0; i < MAXN; i++) {
		if (!c->n[i].used)
			continue;
		check_attr(c, i);
		if (c->n[i].dir)
			check_dir(c, i);
		else
			check_read(c, i, 0, c->n[i].size + 10);
		check_alloc(c, i);
	}
}

static void resize(struct ctx *c, int i, size_t size)
{
	struct mnode *m = &c->n[i];
	unsigned char *p;

	if (size == m->size)
		return;
	p = realloc(m->data, size ? size : 1);
	if (!p)
		abort();
	if (size > m->size)
		memset(p + m->size, 0, size - m->size);
	m->data = p;
	m->size = size;
}

static const char *gen_name(struct ctx *c, char buf[2])
{
	buf[0] = (char)('a' + next(c) % 4);
	buf[1] = '\0';
	return buf;
}

static void op_create(struct ctx *c, bool dir)
{
	int d = pick(c, P_DIR, next(c)), slot = free_slot(c), ex;
	char name[2];
	struct tree_attr a;
	int ret;

	gen_name(c, name);
	if (d < 0 || slot < 0)
		return;
	ex = find_child(c, d, name);
	ret = tree_create(c->t, c->n[d].ino, name,
			  dir ? S_IFDIR | 0755 : S_IFREG | 0644, 0, 0, NULL, &a);
	if (ex >= 0) {
		expect(c, "create", ret, (int[]){ -EEXIST }, 1);
		return;
	}
	expect(c, "create", ret, NULL, 0);
	c->n[slot] = (struct mnode){ .used = true, .dir = dir, .linked = true,
				     .parent = d, .ino = a.ino };
	memcpy(c->n[slot].name, name, 2);
}

static void op_remove(struct ctx *c, bool dir)
{
	int d = pick(c, P_DIR, next(c)), i, ret;
	char name[2];

	gen_name(c, name);
	if (d < 0)
		return;
	i = find_child(c, d, name);
	ret = dir ? tree_rmdir(c->t, c->n[d].ino, name)
		  : tree_unlink(c->t, c->n[d].ino, name);
	if (i < 0)
		expect(c, "remove", ret, (int[]){ -ENOENT }, 1);
	else if (dir && !c->n[i].dir)
		expect(c, "rmdir", ret, (int[]){ -ENOTDIR }, 1);
	else if (!dir && c->n[i].dir)
		expect(c, "unlink", ret, (int[]){ -EISDIR }, 1);
	else if (dir && has_children(c, i))
		expect(c, "rmdir", ret, (int[]){ -ENOTEMPTY }, 1);
	else {
		expect(c, "remove", ret, NULL, 0);
		unlink_node(c, i);
	}
}

static void op_rename(struct ctx *c)
{
	int d = pick(c, P_DIR, next(c)), nd = pick(c, P_DIR, next(c));
	bool noreplace = next(c) % 4 == 0;
	char name[2], nname[2];
	int s, t, nerr = 0, errs[4], ret;

	gen_name(c, name);
	gen_name(c, nname);
	if (d < 0 || nd < 0)
		return;
	s = find_child(c, d, name);
	t = find_child(c, nd, nname);
	ret = tree_rename(c->t, c->n[d].ino, name, c->n[nd].ino, nname,
			  noreplace);
	if (s < 0) {
		expect(c, "rename", ret, (int[]){ -ENOENT }, 1);
		return;
	}
	if (s == t) {
		/* The kernel answers RENAME_NOREPLACE onto itself; tree
		 * may succeed or refuse. */
		if (noreplace && ret == -EEXIST)
			return;
		expect(c, "rename onto itself", ret, NULL, 0);
		return;
	}
	if (c->n[s].dir && within(c, nd, s))
		errs[nerr++] = -EINVAL;
	if (t >= 0) {
		if (noreplace)
			errs[nerr++] = -EEXIST;
		else if (c->n[s].dir && !c->n[t].dir)
			errs[nerr++] = -ENOTDIR;
		else if (!c->n[s].dir && c->n[t].dir)
			errs[nerr++] = -EISDIR;
		else if (c->n[t].dir && has_children(c, t))
			errs[nerr++] = -ENOTEMPTY;
	}
	expect(c, "rename", ret, errs, nerr);
	if (nerr)
		return;
	if (t >= 0)
		unlink_node(c, t);
	c->n[s].parent = nd;
	memcpy(c->n[s].name, nname, 2);
}

static void op_open(struct ctx *c)
{
	int i = pick(c, P_FILE, next(c));

	if (i < 0 || c->n[i].opens >= 3)
		return;
	expect(c, "open", tree_open(c->t, c->n[i].ino), NULL, 0);
	c->n[i].opens++;
}

static void op_write(struct ctx *c)
{
	int i = pick(c, P_OPEN, next(c));
	int64_t off = gen_off(c);
	size_t len = gen_len(c);
	unsigned seed = next(c);
	char *buf;

	if (i < 0)
		return;
	buf = malloc(len + 1);
	if (!buf)
		abort();
	for (size_t k = 0; k < len; k++)
		buf[k] = (char)(seed + k * 7 + (k >> 8));
	expect(c, "write", tree_write(c->t, c->n[i].ino, buf, len, off), NULL, 0);
	/* a write of 0 bytes changes nothing, not even past the end */
	if (len && (size_t)off + len > c->n[i].size)
		resize(c, i, (size_t)off + len);
	if (len)
		memcpy(c->n[i].data + off, buf, len);
	free(buf);
}

static void op_read(struct ctx *c)
{
	int i = pick(c, P_READABLE, next(c));
	int64_t off = gen_off(c);
	size_t len = gen_len(c);

	if (i >= 0)
		check_read(c, i, off, len);
}

static void op_truncate(struct ctx *c)
{
	int i = pick(c, P_READABLE, next(c));
	struct tree_setattr sa = { .what = TREE_SET_SIZE };
	struct tree_attr a;
	int ret;

	sa.size = gen_off(c);
	if (next(c) % 4 == 0)
		sa.size = 0;
	if (i < 0)
		return;
	ret = tree_setattr(c->t, c->n[i].ino, &sa, &a);
	expect(c, "truncate", ret, NULL, 0);
	if (a.size != sa.size)
		die(c, "truncate answered size %lld", (long long)a.size);
	resize(c, i, (size_t)sa.size);
}

static void op_flush(struct ctx *c)
{
	int i = pick(c, P_OPEN, next(c));

	if (i >= 0)
		expect(c, "flush", tree_flush(c->t, c->n[i].ino, false), NULL, 0);
}

static void op_release(struct ctx *c)
{
	int i = pick(c, P_OPEN, next(c));

	if (i < 0)
		return;
	expect(c, "release", tree_release(c->t, c->n[i].ino), NULL, 0);
	if (--c->n[i].opens == 0) {
		if (!c->n[i].linked)
			forget(c, i);
		else
			check_alloc(c, i);
	}
}

static void op_check(struct ctx *c)
{
	int i = pick(c, P_DIR, next(c));

	if (i >= 0) {
		check_attr(c, i);
		check_dir(c, i);
	}
	i = pick(c, P_READABLE, next(c));
	if (i >= 0)
		check_attr(c, i);
}

/* Drop the tree (as at unmount) and bind a new one to the same store. */
static void op_restart(struct ctx *c)
{
	tree_free(c->t);
	c->t = NULL;
	if (tree_new(&c->t, c->st))
		die(c, "tree_new");
	for (int i = 0; i < MAXN; i++) {
		if (!c->n[i].used)
			continue;
		c->n[i].opens = 0;
		if (!c->n[i].linked)
			forget(c, i);
	}
	check_all(c);
}

static int setup(struct ctx *c)
{
	struct tree_attr a;
	int64_t id;

	if (store_open(&c->st, ":memory:", NULL))
		return -1;
	if (tree_new(&c->t, c->st))
		return -1;
	if (store_exec(c->st, "INSERT INTO sessions(name, created_ns,"
		       " doc_mtime_ns) VALUES ('s', 0, 0)"))
		return -1;
	id = sqlite3_last_insert_rowid(store_db(c->st));
	if (tree_create_root(c->t, id, 0755, 0, 0, &a))
		return -1;
	c->n[0] = (struct mnode){ .used = true, .dir = true, .linked = true,
				  .parent = -1, .ino = a.ino };
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx c;
	const char *env = getenv("FUZZ_TREE_ALLOC");

	memset(&c, 0, sizeof(c));
	c.p = data;
	c.left = size;
	c.check_alloc = env && *env == '1';
	if (setup(&c)) {
		fprintf(stderr, "fuzz_tree: cannot set up a store\n");
		abort();
	}
	for (c.op = 0; c.left && c.op < MAXOPS; c.op++) {
		switch (next(&c) % 14) {
		case 0: case 1: op_create(&c, false); break;
		case 2: op_create(&c, true); break;
		case 3: op_remove(&c, false); break;
		case 4: op_remove(&c, true); break;
		case 5: op_rename(&c); break;
		case 6: op_open(&c); break;
		case 7: case 8: op_write(&c); break;
		case 9: op_read(&c); break;
		case 10: op_truncate(&c); break;
		case 11: op_flush(&c); break;
		case 12: op_release(&c); break;
		case 13:
			if (next(&c) % 8 == 0)
				op_restart(&c);
			else
				op_check(&c);
			break;
		}
	}
	check_all(&c);
	/* close every handle: unlinked files go, the rest stays */
	for (int i = 0; i < MAXN; i++)
		while (c.n[i].used && c.n[i].opens)
			op_release(&c);
	check_all(&c);
	tree_free(c.t);
	store_close(c.st);
	for (int i = 0; i < MAXN; i++)
		free(c.n[i].data);
	return 0;
}
