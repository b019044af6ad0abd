/* tree: the real files and folders of sessions, in the store; see tree.h. */
#include "store/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "store/contents.h"

/* Gathered writes past these limits go to the store before the close. */
#define FILE_DIRTY_LIMIT (8 * 1024 * 1024)
#define TOTAL_DIRTY_LIMIT (32 * 1024 * 1024)
#define OPEN_BUCKETS 256

struct dirty_chunk {
	int64_t idx;
	size_t len;		/* bytes of data held, from the chunk start */
	size_t stored_len;	/* length of the chunk in the store before */
	char *data;		/* TREE_CHUNK_SIZE bytes */
};

/* One per inode with open handles, shared by them. */
struct open_file {
	uint64_t ino;
	int handles;
	bool orphan;		/* unlinked while open */
	int64_t size;		/* as the caller sees it */
	int64_t stored_size;	/* as in the store */
	int64_t alloc;		/* stored alloc */
	int64_t mtime_ns, ctime_ns;
	bool attr_dirty;
	struct dirty_chunk *chunks;
	size_t nchunks, chunks_alloc;
	size_t dirty_bytes;
	bool spilling;		/* its chunks are the spill (struct spill) */
	int spill_err;		/* the spill's failure, for the next write */
	/* Its bytes in a data file (contents.h): content's number, 0 when
	 * in chunks; the file open; whether the row names another content
	 * (or none) until the next commit; and whether the content is known
	 * to be its own alone, as of share_epoch (tree.share_epoch). */
	int64_t content;
	int fd;
	bool content_dirty;
	bool owned;
	uint64_t owned_epoch;
	struct open_file *next;
};

/*
 * A big write's gathered chunks on their way to the store (the spill,
 * tree_set_spiller()): tree_write() hands them over, another thread
 * commits them holding no lock while the writer gathers the next ones,
 * and settles holding the caller's lock.  Until then they are the file's
 * data, between the store's and what it gathered since.
 */
struct spill {
	uint64_t ino;		/* 0: none on its way */
	struct dirty_chunk *chunks;
	size_t nchunks;
	size_t bytes;		/* still counted in tree.dirty_bytes */
	int64_t first_idx, last_idx;
	int64_t size, mtime_ns, ctime_ns;
	int64_t alloc_before, alloc_after;
	int ret;		/* of the commit */
};

/* What a commit of gathered writes stores. */
struct gathered {
	uint64_t ino;
	const struct dirty_chunk *chunks;
	size_t nchunks;
	int64_t size, alloc, mtime_ns, ctime_ns;
};

/* Chunk buffers kept for reuse, a small file's worth: freeing them lets
 * malloc trim the heap, and each write faulted pages anew.  (8 MiB of
 * them, as when every file's bytes were chunks, was a third of the
 * daemon's resident memory once large files went to data files.) */
#define POOL_MAX (2 * TREE_INLINE_MAX / TREE_CHUNK_SIZE)

/* The tags as SQL text, so statements and tree.h cannot disagree. */
#define SQL_TEXT_(x) #x
#define SQL_TEXT(x) SQL_TEXT_(x)
#define ROOT_TAG SQL_TEXT(TREE_TAG_SESSION_ROOT)
#define TRASH_TAG SQL_TEXT(TREE_TAG_TRASH)

/*
 * The kernel's references (tree.h), by inode: open addressing with
 * linear probing, at most half full, emptied slots closed up by moving
 * later ones back (no tombstones).  `kept`: the row was unlinked while
 * referenced, and waits for the last reference to go.
 */
struct ref_slot {
	uint64_t ino;		/* 0: empty */
	uint64_t count;
	bool kept;
};

struct ref_table {
	struct ref_slot *slots;
	size_t size;		/* a power of two, or 0 */
	size_t used;
};

struct tree {
	struct store *st;
	/* tree_set_cutter(): where and how big deletes go outside the
	 * caller's lock (cut_st NULL: on st, inside it) */
	struct store *cut_st;
	void (*leave)(void *lock_ctx);
	void (*enter)(void *lock_ctx);
	void *lock_ctx;
	/* tree_set_spiller(): spill_st NULL, none */
	struct store *spill_st;
	void (*spill_kick)(void *lock_ctx);
	void (*spill_wait)(void *lock_ctx);
	struct spill spill;
	struct ref_table refs;
	struct open_file *open[OPEN_BUCKETS];
	size_t dirty_bytes;
	uint64_t changes;	/* tree_changes() */
	char *pool[POOL_MAX];
	size_t npool;
	/* the data files (contents.h): the next content's number, and a
	 * count moved by whatever may share a content (tree_shared()) */
	struct contents *contents;
	int64_t next_content;
	uint64_t share_epoch;
	contents_report_fn report;
	void *report_ctx;
	int64_t inline_max;	/* tree_set_inline_max() */
	/* a row was deleted or let go of its content since the last
	 * tree_sweep(): only then it looks (a query per request cost 12
	 * fcntl() locks per small file created) */
	bool sweep_maybe;
};

static char *chunk_alloc(struct tree *t)
{
	return t->npool ? t->pool[--t->npool] : malloc(TREE_CHUNK_SIZE);
}

static void chunk_free(struct tree *t, char *data)
{
	if (t->npool < POOL_MAX)
		t->pool[t->npool++] = data;
	else
		free(data);
}

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

/* ---- open-file table ------------------------------------------------ */

static struct open_file **open_slot(struct tree *t, uint64_t ino)
{
	struct open_file **p = &t->open[ino % OPEN_BUCKETS];

	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

static struct open_file *open_find(struct tree *t, uint64_t ino)
{
	return *open_slot(t, ino);
}

static void overlay_open(struct tree *t, struct tree_attr *a)
{
	struct open_file *f = open_find(t, a->ino);
	int64_t pending = 0;

	if (!f)
		return;
	a->size = f->size;
	a->mtime_ns = f->mtime_ns;
	a->ctime_ns = f->ctime_ns;
	for (size_t i = 0; i < f->nchunks; i++)
		pending += (int64_t)f->chunks[i].len -
			   (int64_t)f->chunks[i].stored_len;
	a->alloc = f->alloc + pending;
	a->content = f->content;
}

static void drop_chunks(struct tree *t, struct open_file *f)
{
	for (size_t i = 0; i < f->nchunks; i++)
		chunk_free(t, f->chunks[i].data);
	f->nchunks = 0;
	t->dirty_bytes -= f->dirty_bytes;
	f->dirty_bytes = 0;
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
static int read_row(struct tree *t, uint64_t ino, struct tree_attr *out)
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
	int ret = read_row(t, ino, out);

	if (!ret)
		overlay_open(t, out);
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
		overlay_open(t, out);
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

static bool referenced(const struct tree *t, uint64_t ino)
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
static int delete_if_unlinked(struct tree *t, uint64_t ino)
{
	static const char sql[] = "DELETE FROM inodes WHERE ino = ?1"
		" AND nlink = 0";

	t->sweep_maybe = true;
	return store_run(t->st, sql, STORE_INT(ino));
}

bool tree_forget_deletes(struct tree *t, uint64_t ino, uint64_t n)
{
	struct ref_slot *s = ref_find(&t->refs, ino);

	return s && s->count <= n && s->kept && !open_find(t, ino);
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
	if (!kept || open_find(t, ino))
		return 0;
	/* inside the lock: on the writer's connection outside it, the next
	 * 256 MiB write took 12 % longer (unexplained; measured A/B) */
	return delete_if_unlinked(t, ino);
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
	struct open_file *f = open_find(t, ino);
	struct ref_slot *s = dir ? NULL : ref_find(&t->refs, ino);
	int ret;

	if (!f && !s)
		return delete_inode(t, ino);
	ret = store_run(t->st, sql, STORE_INT(ino), STORE_INT(fclock_now_ns()));
	if (ret < 0)
		return ret;
	/* set in the caller's transaction: a rollback leaves them stale,
	 * which delete_if_unlinked() tells */
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

/* ---- data ------------------------------------------------------------- */

/* Chunks at or past `size` go; the chunk holding `size` is cut there. */
static int cut_chunks(struct store *st, uint64_t ino, int64_t size)
{
	static const char del[] =
		"DELETE FROM chunks WHERE ino = ?1 AND idx >= ?2";
	static const char cut[] =
		"UPDATE chunks SET data = substr(data, 1, ?3)"
		" WHERE ino = ?1 AND idx = ?2 AND length(data) > ?3";
	static const char sum[] =
		"UPDATE inodes SET alloc = (SELECT coalesce(sum(length(data)), 0)"
		" FROM chunks WHERE ino = ?1) WHERE ino = ?1";
	int64_t first_gone = (size + TREE_CHUNK_SIZE - 1) / TREE_CHUNK_SIZE;
	int ret;

	ret = store_run(st, del, STORE_INT(ino), STORE_INT(first_gone));
	if (!ret && size % TREE_CHUNK_SIZE)
		ret = store_run(st, cut, STORE_INT(ino),
				STORE_INT(size / TREE_CHUNK_SIZE),
				STORE_INT(size % TREE_CHUNK_SIZE));
	if (!ret)
		ret = store_run(st, sum, STORE_INT(ino));
	return ret;
}

/* Write gathered chunks and attributes to `st`, in a transaction;
 * *alloc: the bytes it then stores. */
static int write_out(struct store *st, const struct gathered *f,
		     int64_t *alloc_out)
{
	static const char put[] =
		"INSERT OR REPLACE INTO chunks(ino, idx, data) VALUES (?1, ?2, ?3)";
	static const char upd[] = "UPDATE inodes SET size = ?2, alloc = ?3,"
		" mtime_ns = ?4, ctime_ns = ?5 WHERE ino = ?1";
	int64_t alloc = f->alloc;
	int ret;

	for (size_t i = 0; i < f->nchunks; i++) {
		const struct dirty_chunk *c = &f->chunks[i];

		ret = store_run(st, put, STORE_INT(f->ino), STORE_INT(c->idx),
				STORE_BLOB(c->data, c->len));
		if (ret < 0)
			return ret;
		alloc += (int64_t)c->len - (int64_t)c->stored_len;
	}
	ret = store_run(st, upd, STORE_INT(f->ino), STORE_INT(f->size),
			STORE_INT(alloc), STORE_INT(f->mtime_ns),
			STORE_INT(f->ctime_ns));
	if (ret < 0)
		return ret;
	*alloc_out = alloc;
	return 0;
}

static struct gathered gathered_of(const struct open_file *f)
{
	return (struct gathered){
		.ino = f->ino, .chunks = f->chunks, .nchunks = f->nchunks,
		.size = f->size, .alloc = f->alloc,
		.mtime_ns = f->mtime_ns, .ctime_ns = f->ctime_ns,
	};
}

void tree_set_cutter(struct tree *t, struct store *st,
		      void (*leave)(void *lock_ctx),
		      void (*enter)(void *lock_ctx), void *lock_ctx)
{
	t->cut_st = st;
	t->leave = leave;
	t->enter = enter;
	t->lock_ctx = lock_ctx;
}

static struct dirty_chunk *find_chunk(struct open_file *f, int64_t idx)
{
	/* Writes are mostly sequential: look from the newest chunk back. */
	for (size_t i = f->nchunks; i-- > 0;)
		if (f->chunks[i].idx == idx)
			return &f->chunks[i];
	return NULL;
}

void tree_set_spiller(struct tree *t, struct store *st,
		      void (*kick)(void *lock_ctx),
		      void (*wait)(void *lock_ctx))
{
	t->spill_st = st;
	t->spill_kick = kick;
	t->spill_wait = wait;
}

/* The chunk `idx` of file `ino` in the spill, if there. */
static const struct dirty_chunk *spilled_chunk(const struct tree *t,
					       uint64_t ino, int64_t idx)
{
	const struct spill *s = &t->spill;

	if (s->ino != ino || idx < s->first_idx || idx > s->last_idx)
		return NULL;
	for (size_t i = 0; i < s->nchunks; i++)
		if (s->chunks[i].idx == idx)
			return &s->chunks[i];
	return NULL;
}

/* Until the spill on its way has settled, `lock` let go meanwhile (the
 * spill thread takes it to settle). */
static void wait_spill(struct tree *t)
{
	if (!t->spill.ino)
		return;
	t->leave(t->lock_ctx);
	t->spill_wait(t->lock_ctx);
	t->enter(t->lock_ctx);
}

/*
 * Hand a file's gathered chunks to the spill thread, after the spill
 * before them (one at a time: memory stays bounded).  The file keeps
 * its size and times; its stored alloc counts the spill from now on.
 */
static int spill_file(struct tree *t, struct open_file *f)
{
	struct spill *s = &t->spill;
	int64_t alloc = f->alloc;

	wait_spill(t);
	if (f->spill_err) {
		int ret = f->spill_err;

		f->spill_err = 0;
		return ret;
	}
	*s = (struct spill){
		.ino = f->ino, .chunks = f->chunks, .nchunks = f->nchunks,
		.bytes = f->dirty_bytes, .first_idx = INT64_MAX,
		.last_idx = -1, .size = f->size, .mtime_ns = f->mtime_ns,
		.ctime_ns = f->ctime_ns, .alloc_before = f->alloc,
	};
	for (size_t i = 0; i < f->nchunks; i++) {
		const struct dirty_chunk *c = &f->chunks[i];

		alloc += (int64_t)c->len - (int64_t)c->stored_len;
		if (c->idx < s->first_idx)
			s->first_idx = c->idx;
		if (c->idx > s->last_idx)
			s->last_idx = c->idx;
	}
	s->alloc_after = f->alloc = alloc;
	f->chunks = NULL;
	f->nchunks = f->chunks_alloc = 0;
	f->dirty_bytes = 0;
	f->attr_dirty = false;
	f->spilling = true;
	t->spill_kick(t->lock_ctx);
	return 0;
}

int tree_spill_commit(struct tree *t)
{
	struct spill *s = &t->spill;
	struct gathered g = {
		.ino = s->ino, .chunks = s->chunks, .nchunks = s->nchunks,
		.size = s->size, .alloc = s->alloc_before,
		.mtime_ns = s->mtime_ns, .ctime_ns = s->ctime_ns,
	};
	int64_t alloc;
	int ret = store_begin(t->spill_st);

	if (!ret) {
		ret = write_out(t->spill_st, &g, &alloc);
		if (ret < 0)
			store_rollback(t->spill_st);
		else
			ret = store_commit(t->spill_st);
	}
	s->ret = ret;
	return ret;
}

/*
 * A failed spill's chunks go back to the file, under what it gathered
 * since (newer), which then replaces what the store really holds.
 */
static int unspill(struct tree *t, struct open_file *f)
{
	struct spill *s = &t->spill;
	size_t n = f->nchunks + s->nchunks;
	struct dirty_chunk *all = realloc(f->chunks, n * sizeof(*all));

	if (!all)
		return -ENOMEM;
	f->chunks = all;
	f->chunks_alloc = n;
	for (size_t i = 0; i < s->nchunks; i++) {
		struct dirty_chunk *b = &s->chunks[i];
		struct dirty_chunk *c = find_chunk(f, b->idx);

		if (c) {
			c->stored_len = b->stored_len;
			chunk_free(t, b->data);
		} else {
			f->chunks[f->nchunks++] = *b;
			f->dirty_bytes += b->len;
			t->dirty_bytes += b->len;
		}
	}
	s->nchunks = 0;
	f->alloc = s->alloc_before;
	f->attr_dirty = true;
	return 0;
}

void tree_spill_settle(struct tree *t)
{
	struct spill *s = &t->spill;
	struct open_file *f = open_find(t, s->ino);

	t->dirty_bytes -= s->bytes;
	if (f && s->ret < 0) {
		int ret = unspill(t, f);

		/* out of memory: the chunks are lost, and the next write
		 * or the close says so */
		f->spill_err = ret < 0 ? -EIO : s->ret;
	} else if (f) {
		f->stored_size = s->size;
	}
	if (f)
		f->spilling = false;
	for (size_t i = 0; i < s->nchunks; i++)
		chunk_free(t, s->chunks[i].data);
	free(s->chunks);
	*s = (struct spill){ .ino = 0 };
	t->changes++;
}

/* ---- data files (contents.h) ------------------------------------------ */

static void report(struct tree *t, int64_t session, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(struct tree *t, int64_t session, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!t->report)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	t->report(t->report_ctx, session, line);
}

static int pwrite_all(int fd, const char *buf, size_t len, int64_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, buf, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/* [off, off + size) of a data file whose file is `fsize` bytes: a file
 * shorter than that (damaged) reads short. */
static int read_fd(int fd, int64_t fsize, char *buf, size_t size,
		   int64_t off, size_t *got)
{
	*got = 0;
	if (off < 0)
		return -EINVAL;
	if (off >= fsize || !size)
		return 0;
	if ((int64_t)size > fsize - off)
		size = (size_t)(fsize - off);
	while (*got < size) {
		ssize_t n = pread(fd, buf + *got, size - *got,
				  off + (int64_t)*got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* Content `id`'s file, for a row of `session` (reported when it cannot
 * be opened: a missing data file is damage, -EIO to the caller). */
static int open_content(struct tree *t, int64_t id, int64_t session,
			uint64_t ino, bool ro)
{
	int fd = contents_open_file(t->contents, id, ro);

	if (fd >= 0)
		return fd;
	report(t, session, "damaged: the data file %s/%lld of inode %llu"
	       " cannot be opened (%s)", contents_dir(t->contents),
	       (long long)id, (unsigned long long)ino, strerror(-fd));
	return fd == -ENOMEM || fd == -EMFILE || fd == -ENFILE ? fd : -EIO;
}

/*
 * Before a write or a cut: the file's content is its own alone.  A
 * shared one is copied first (contents_copy()); the row names the copy
 * from the next commit on, and the other rows keep the content as it
 * was.  What is known stays known until something may have shared it
 * (share_epoch).
 */
static int own_content(struct tree *t, struct open_file *f)
{
	int64_t refs = 0, id;
	struct stat sb;
	bool linked;
	int fd, ret;

	/* another link to the file: a backup's (backup.h), which must never
	 * change; an fstat() per write costs nothing next to the write */
	linked = fstat(f->fd, &sb) == 0 && sb.st_nlink > 1;
	if (!linked && (f->content_dirty ||
			(f->owned && f->owned_epoch == t->share_epoch)))
		return 0;
	if (!linked) {
		ret = contents_refs(t->st, f->content, &refs);
		if (ret < 0)
			return ret;
	}
	if (linked || refs > 1) {
		id = t->next_content;
		fd = contents_copy(t->contents, f->fd, f->size, id);
		if (fd < 0)
			return fd;
		t->next_content++;
		close(f->fd);
		f->fd = fd;
		f->content = id;
		f->content_dirty = true;
		f->attr_dirty = true;
	}
	f->owned = true;
	f->owned_epoch = t->share_epoch;
	return 0;
}

/*
 * A file that grows past TREE_INLINE_MAX moves to a data file of its
 * own: what the store holds of it and what it gathered, written there;
 * the row names it from the next commit on (which also deletes its
 * chunks).  A crash before leaves an orphan file, swept at mount, and
 * the row as it was.
 */
static int externalize(struct tree *t, struct open_file *f)
{
	static const char sql[] = "SELECT idx, data FROM chunks"
		" WHERE ino = ?1 ORDER BY idx";
	int64_t id = t->next_content;
	sqlite3_stmt *q;
	int fd, rc = SQLITE_DONE, ret = 0;

	/* the spill of this file stored first: its chunks are then rows */
	if (t->spill.ino == f->ino)
		wait_spill(t);
	fd = contents_create(t->contents, id);
	if (fd < 0)
		return fd;
	t->next_content++;
	q = store_stmt(t->st, sql);
	if (!q) {
		ret = -EIO;
		goto fail;
	}
	sqlite3_bind_int64(q, 1, (int64_t)f->ino);
	while (!ret && (rc = sqlite3_step(q)) == SQLITE_ROW)
		ret = pwrite_all(fd, sqlite3_column_blob(q, 1),
				 (size_t)sqlite3_column_bytes(q, 1),
				 sqlite3_column_int64(q, 0) * TREE_CHUNK_SIZE);
	store_done(q);
	if (!ret && rc != SQLITE_DONE && rc != SQLITE_ROW)
		ret = store_errno(rc);
	/* gathered chunks hold at least what the store had of them */
	for (size_t i = 0; i < f->nchunks && !ret; i++)
		ret = pwrite_all(fd, f->chunks[i].data, f->chunks[i].len,
				 f->chunks[i].idx * TREE_CHUNK_SIZE);
	if (!ret && ftruncate(fd, f->size) < 0)
		ret = -errno;
	if (ret < 0)
		goto fail;
	drop_chunks(t, f);
	f->content = id;
	f->fd = fd;
	f->content_dirty = true;
	f->attr_dirty = true;
	f->owned = true;
	f->owned_epoch = t->share_epoch;
	return 0;
fail:
	close(fd);
	contents_remove(t->contents, id);
	return ret;
}

/* tree_write() of a file whose bytes are in a data file: one copy, into
 * the file (the kernel's page cache). */
static int write_external(struct tree *t, struct open_file *f,
			  const char *buf, size_t size, int64_t off)
{
	int ret = own_content(t, f);

	if (ret < 0)
		return ret;
	/* a gap reads zeros, whatever a crash left past the size */
	if (off > f->size && ftruncate(f->fd, f->size) < 0)
		return -errno;
	ret = pwrite_all(f->fd, buf, size, off);
	if (ret < 0)
		return ret;
	if (off + (int64_t)size > f->size)
		f->size = off + (int64_t)size;
	f->mtime_ns = f->ctime_ns = fclock_now_ns();
	f->attr_dirty = true;
	t->changes++;
	return 0;
}

/*
 * Commit what an open file with a data file changed: for fsync() the
 * file's bytes reach the disk first, then the commit that names them
 * (contents.h: the order of writes).
 */
static int flush_external(struct tree *t, struct open_file *f, bool durable)
{
	static const char upd[] = "UPDATE inodes SET size = ?2, alloc = ?3,"
		" mtime_ns = ?4, ctime_ns = ?5, content = ?6 WHERE ino = ?1";
	static const char del[] = "DELETE FROM chunks WHERE ino = ?1";
	int64_t alloc;
	int ret;

	if (durable && fdatasync(f->fd) < 0)
		return -errno;
	if (!f->attr_dirty && !f->content_dirty)
		return durable ? store_sync(t->st) : 0;
	alloc = contents_allocated(f->fd);
	if (alloc < 0)
		alloc = f->size;
	ret = durable ? store_begin_durable(t->st) : store_begin(t->st);
	if (ret < 0)
		return ret;
	ret = store_run(t->st, upd, STORE_INT(f->ino), STORE_INT(f->size),
			STORE_INT(alloc), STORE_INT(f->mtime_ns),
			STORE_INT(f->ctime_ns), STORE_INT(f->content));
	if (!ret && f->content_dirty)
		ret = store_run(t->st, del, STORE_INT(f->ino));
	if (ret < 0) {
		store_rollback(t->st);
		return ret;
	}
	ret = store_commit(t->st);
	if (ret < 0)
		return ret;
	/* a copy on write left the shared content to the others */
	if (f->content_dirty)
		t->sweep_maybe = true;
	f->alloc = alloc;
	f->stored_size = f->size;
	f->attr_dirty = false;
	f->content_dirty = false;
	return 0;
}

int tree_read_fd(struct tree *t, uint64_t ino, int *fd, int64_t *size)
{
	struct open_file *f = open_find(t, ino);

	if (!f)
		return -EBADF;
	if (f->fd < 0)
		return 1;
	*fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	*size = f->size;
	return 0;
}

void tree_set_reporter(struct tree *t, contents_report_fn fn, void *ctx)
{
	t->report = fn;
	t->report_ctx = ctx;
}

int tree_check_contents(struct tree *t)
{
	return t->contents ? contents_check(t->contents, t->st, t->report,
					    t->report_ctx) : 0;
}

int tree_sweep(struct tree *t)
{
	if (!t->contents || !t->sweep_maybe ||
	    !sqlite3_get_autocommit(store_db(t->st)))
		return 0;
	t->sweep_maybe = false;
	if (!contents_sweep_due(t->st))
		return 0;
	return contents_sweep(t->contents, t->st);
}

void tree_may_sweep(struct tree *t)
{
	t->sweep_maybe = true;
}

void tree_set_inline_max(struct tree *t, int64_t bytes)
{
	if (t->contents)
		t->inline_max = bytes;
}

void tree_shared(struct tree *t)
{
	t->share_epoch++;
}

/* Whether work may go outside the caller's lock now (tree_set_cutter):
 * not while the caller has a transaction open (a statement run then is
 * part of it). */
static bool can_leave(struct tree *t)
{
	return t->cut_st && sqlite3_get_autocommit(store_db(t->st));
}

/*
 * Store what an open file gathered, in a transaction of its own, inside
 * the caller's lock.  (On the cutter's connection outside it, a 256 MiB
 * write took 10-17 % longer: SQLite restarted its log half as often, and
 * it grew to twice the size.)
 */
static int flush_file(struct tree *t, struct open_file *f, bool durable)
{
	int64_t alloc = f->alloc;
	int ret;

	if (f->fd >= 0)
		return flush_external(t, f, durable);
	if (!f->nchunks && !f->attr_dirty)
		return durable ? store_sync(t->st) : 0;
	ret = durable ? store_begin_durable(t->st) : store_begin(t->st);
	if (!ret) {
		struct gathered g = gathered_of(f);

		ret = write_out(t->st, &g, &alloc);
		if (ret < 0)
			store_rollback(t->st);
		else
			ret = store_commit(t->st);
	}
	if (ret < 0)
		return ret;
	f->alloc = alloc;
	f->stored_size = f->size;
	f->attr_dirty = false;
	drop_chunks(t, f);
	return 0;
}

/* The first open of the file whose row is `a`. */
static int open_first(struct tree *t, const struct tree_attr *a)
{
	struct open_file **slot = open_slot(t, a->ino), *f;
	int fd = -1;

	if (S_ISDIR(a->mode))
		return -EISDIR;
	if (a->content) {
		fd = open_content(t, a->content, a->session, a->ino, false);
		if (fd < 0)
			return fd;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		if (fd >= 0)
			close(fd);
		return -ENOMEM;
	}
	f->ino = a->ino;
	f->content = a->content;
	f->fd = fd;
	f->handles = 1;
	f->orphan = a->nlink == 0;
	f->size = f->stored_size = a->size;
	f->alloc = a->alloc;
	f->mtime_ns = a->mtime_ns;
	f->ctime_ns = a->ctime_ns;
	*slot = f;
	return 0;
}

int tree_open(struct tree *t, uint64_t ino)
{
	struct open_file *f = open_find(t, ino);
	struct tree_attr a;
	int ret;

	if (f) {
		f->handles++;
		return 0;
	}
	ret = tree_getattr(t, ino, &a);
	return ret < 0 ? ret : open_first(t, &a);
}

int tree_flush(struct tree *t, uint64_t ino, bool durable)
{
	struct open_file *f = open_find(t, ino);
	int ret;

	if (!f)
		return 0;
	ret = flush_file(t, f, durable);
	/* a failed spill's chunks were written now, or are lost */
	if (!ret && f->spill_err == -EIO)
		ret = f->spill_err;
	f->spill_err = 0;
	return ret;
}

/*
 * The last close of an unlinked file: its row goes.  f->orphan is set
 * inside the caller's transaction; when that rolled back, the row has
 * its name again, and the file is kept (f->orphan cleared).
 */
static int delete_unlinked(struct tree *t, struct open_file *f)
{
	int ret = delete_if_unlinked(t, f->ino);

	if (!ret && !store_changes(t->st))
		f->orphan = false;
	return ret;
}

bool tree_flush_writes(struct tree *t, uint64_t ino, bool durable)
{
	struct open_file *f = open_find(t, ino);

	return durable ||
	       (f && (f->nchunks || f->attr_dirty || f->spill_err ||
		      f->content_dirty));
}

bool tree_release_writes(struct tree *t, uint64_t ino)
{
	struct open_file *f = open_find(t, ino);

	return f && f->handles == 1 &&
	       (f->nchunks || f->attr_dirty || f->spilling || f->spill_err ||
		(f->orphan && !referenced(t, ino)));
}

int tree_release(struct tree *t, uint64_t ino)
{
	struct open_file **slot = open_slot(t, ino), *f = *slot;
	bool held;
	int ret = 0;

	if (!f)
		return 0;
	if (--f->handles > 0)
		return 0;
	/* the kernel may open it again: tree_forget() deletes it */
	held = referenced(t, ino);
	if (f->orphan && !held)
		ret = delete_unlinked(t, f);
	/* Nothing can report a flush error any more; the data stays in
	 * memory only if we keep the file, which would leak. */
	if (!f->orphan || held)
		ret = flush_file(t, f, false);
	drop_chunks(t, f);
	*slot = f->next;
	if (f->fd >= 0)
		close(f->fd);
	/* a data file no commit named (that flush failed: a full disk) is
	 * no one's: its room back now, not at the next mount */
	if (f->fd >= 0 && f->content_dirty) {
		int64_t refs = 1;

		if (contents_refs(t->st, f->content, &refs) == 0 && !refs)
			contents_remove(t->contents, f->content);
	}
	free(f->chunks);
	free(f);
	return ret;
}

/*
 * The stored chunk `idx`: its length, and its bytes into `buf` unless
 * `buf` is NULL (a write that covers the whole chunk needs only the
 * length, and length() spares SQLite reading the blob).
 */
static int read_stored_chunk(struct tree *t, uint64_t ino, int64_t idx,
			     char *buf, size_t *len)
{
	static const char data_sql[] =
		"SELECT data FROM chunks WHERE ino = ?1 AND idx = ?2";
	static const char len_sql[] =
		"SELECT length(data) FROM chunks WHERE ino = ?1 AND idx = ?2";
	sqlite3_stmt *q = store_stmt(t->st, buf ? data_sql : len_sql);
	int rc;

	*len = 0;
	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)ino);
	sqlite3_bind_int64(q, 2, idx);
	rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && buf) {
		size_t n = (size_t)sqlite3_column_bytes(q, 0);

		if (n > TREE_CHUNK_SIZE)
			n = TREE_CHUNK_SIZE;
		memcpy(buf, sqlite3_column_blob(q, 0), n);
		*len = n;
	} else if (rc == SQLITE_ROW) {
		*len = (size_t)sqlite3_column_int64(q, 0);
	}
	store_done(q);
	return store_errno(rc);
}

/* The gathered chunk `idx`, created from the store's copy when needed. */
static int get_chunk(struct tree *t, struct open_file *f, int64_t idx,
		     bool whole, struct dirty_chunk **out)
{
	struct dirty_chunk *c = find_chunk(f, idx);
	const struct dirty_chunk *spilled;
	int ret = 0;

	if (c) {
		*out = c;
		return 0;
	}
	if (f->nchunks == f->chunks_alloc) {
		size_t n = f->chunks_alloc ? f->chunks_alloc * 2 : 16;
		struct dirty_chunk *p = realloc(f->chunks, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		f->chunks = p;
		f->chunks_alloc = n;
	}
	c = &f->chunks[f->nchunks];
	memset(c, 0, sizeof(*c));
	c->idx = idx;
	/* Not zeroed: bytes past c->len are zeroed when a write skips
	 * over them, and never read before that. */
	c->data = chunk_alloc(t);
	if (!c->data)
		return -ENOMEM;
	spilled = spilled_chunk(t, f->ino, idx);
	if (spilled) {
		/* stored once this is: the spill settles first */
		c->stored_len = spilled->len;
		if (!whole) {
			memcpy(c->data, spilled->data, spilled->len);
			c->len = spilled->len;
		}
	} else if (idx * TREE_CHUNK_SIZE < f->stored_size) {
		/* past the stored size no stored chunk can exist (truncate
		 * cuts) */
		ret = read_stored_chunk(t, f->ino, idx, whole ? NULL : c->data,
					&c->stored_len);
		if (!whole)
			c->len = c->stored_len;
	}
	if (ret < 0) {
		chunk_free(t, c->data);
		return ret;
	}
	f->nchunks++;
	*out = c;
	return 0;
}

int tree_write(struct tree *t, uint64_t ino, const char *buf, size_t size,
	       int64_t off)
{
	struct open_file *f = open_find(t, ino);
	size_t done = 0;
	int ret;

	if (!f)
		return -EBADF;
	if (off < 0)
		return -EINVAL;
	if (off > TREE_MAX_SIZE || (int64_t)size > TREE_MAX_SIZE - off)
		return -EFBIG;
	if (f->spill_err) {
		ret = f->spill_err;
		f->spill_err = 0;
		return ret;
	}
	/* write(2) of nothing changes nothing, not even mtime */
	if (!size)
		return 0;
	if (f->fd < 0 && off + (int64_t)size > t->inline_max) {
		ret = externalize(t, f);
		if (ret < 0)
			return ret;
	}
	if (f->fd >= 0)
		return write_external(t, f, buf, size, off);
	while (done < size) {
		int64_t pos = off + (int64_t)done;
		int64_t idx = pos / TREE_CHUNK_SIZE;
		size_t in = (size_t)(pos % TREE_CHUNK_SIZE);
		size_t n = TREE_CHUNK_SIZE - in;
		struct dirty_chunk *c;
		size_t before;

		if (n > size - done)
			n = size - done;
		ret = get_chunk(t, f, idx, in == 0 && n == TREE_CHUNK_SIZE, &c);
		if (ret < 0)
			return ret;
		before = c->len;
		if (in > c->len)
			memset(c->data + c->len, 0, in - c->len);
		memcpy(c->data + in, buf + done, n);
		if (in + n > c->len)
			c->len = in + n;
		f->dirty_bytes += c->len - before;
		t->dirty_bytes += c->len - before;
		done += n;
	}
	if (off + (int64_t)size > f->size)
		f->size = off + (int64_t)size;
	f->mtime_ns = f->ctime_ns = fclock_now_ns();
	f->attr_dirty = true;
	t->changes++;
	if (f->dirty_bytes >= FILE_DIRTY_LIMIT && t->spill_st)
		return spill_file(t, f);
	if (f->dirty_bytes >= FILE_DIRTY_LIMIT ||
	    t->dirty_bytes >= TOTAL_DIRTY_LIMIT) {
		/* its commit would wait for the spill's */
		if (t->spill_st)
			wait_spill(t);
		return flush_file(t, f, false);
	}
	return 0;
}

/*
 * Copy the stored chunks overlapping [off, end) into buf (buf[0] is at
 * `off`), zeros where nothing is stored.  A 64 KiB chunk spans several
 * database pages: incremental blob I/O copies from the pages straight
 * into buf, where sqlite3_column_blob() would first assemble a copy.
 */
static int read_stored(struct store *st, uint64_t ino, char *buf,
		       int64_t off, int64_t end)
{
	static const char sql[] = "SELECT idx, id, length(data) FROM chunks"
		" WHERE ino = ?1 AND idx BETWEEN ?2 AND ?3 ORDER BY idx";
	sqlite3_stmt *q = store_stmt(st, sql);
	sqlite3_blob *blob = NULL;
	int64_t filled = off;	/* buf holds [off, filled) */
	int rc, ret = 0;

	if (!q)
		return -EIO;
	sqlite3_bind_int64(q, 1, (int64_t)ino);
	sqlite3_bind_int64(q, 2, off / TREE_CHUNK_SIZE);
	sqlite3_bind_int64(q, 3, (end - 1) / TREE_CHUNK_SIZE);
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		int64_t cstart = sqlite3_column_int64(q, 0) * TREE_CHUNK_SIZE;
		sqlite3_int64 id = sqlite3_column_int64(q, 1);
		int64_t cend = cstart + sqlite3_column_int64(q, 2);
		int64_t from = cstart > off ? cstart : off;
		int64_t to = cend < end ? cend : end;

		if (from >= to)
			continue;
		if (from > filled)
			memset(buf + (filled - off), 0, (size_t)(from - filled));
		rc = blob ? sqlite3_blob_reopen(blob, id)
			  : sqlite3_blob_open(store_db(st), "main", "chunks",
					      "data", id, 0, &blob);
		if (rc == SQLITE_OK)
			rc = sqlite3_blob_read(blob, buf + (from - off),
					       (int)(to - from),
					       (int)(from - cstart));
		if (rc != SQLITE_OK) {
			ret = store_errno(rc);
			break;
		}
		filled = to;
	}
	if (!ret && rc != SQLITE_DONE)
		ret = store_errno(rc);
	sqlite3_blob_close(blob);
	store_done(q);
	if (!ret && filled < end)
		memset(buf + (filled - off), 0, (size_t)(end - filled));
	return ret;
}

static int read_clamped(struct store *st, uint64_t ino, int64_t fsize,
			char *buf, size_t size, int64_t off, size_t *got);

/*
 * A gathered chunk's part of [off, end) into buf (buf[0] is at `off`).
 * It holds the whole chunk's truth: its data, then zeros (a stored copy,
 * if any, was loaded into it or entirely overwritten).
 */
static void overlay_chunk(const struct dirty_chunk *c, char *buf,
			  int64_t off, int64_t end)
{
	int64_t cstart = c->idx * TREE_CHUNK_SIZE;
	int64_t cdata = cstart + (int64_t)c->len;
	int64_t cend = cstart + TREE_CHUNK_SIZE;
	int64_t from = cstart > off ? cstart : off;
	int64_t to = cdata < end ? cdata : end;

	if (from < to)
		memcpy(buf + (from - off), c->data + (from - cstart),
		       (size_t)(to - from));
	from = cdata > off ? cdata : off;
	to = cend < end ? cend : end;
	if (from < to)
		memset(buf + (from - off), 0, (size_t)(to - from));
}

/* tree_read() of a file whose size (open or not) the caller knows, and
 * its content when it is not open. */
static int read_sized(struct tree *t, uint64_t ino, int64_t content,
		      int64_t session, int64_t fsize, char *buf, size_t size,
		      int64_t off, size_t *got)
{
	struct open_file *f = open_find(t, ino);
	int64_t end;
	int ret;

	if (f && f->fd >= 0)
		return read_fd(f->fd, fsize, buf, size, off, got);
	if (!f && content) {
		int fd = open_content(t, content, session, ino, true);

		*got = 0;
		if (fd < 0)
			return fd;
		ret = read_fd(fd, fsize, buf, size, off, got);
		close(fd);
		return ret;
	}
	ret = read_clamped(t->st, ino, fsize, buf, size, off, got);
	if (ret < 0 || !*got)
		return ret;
	end = off + (int64_t)*got;
	/* the spill, then what was gathered since, over the store's */
	if (t->spill.ino == ino)
		for (size_t i = 0; i < t->spill.nchunks; i++)
			overlay_chunk(&t->spill.chunks[i], buf, off, end);
	if (f)
		for (size_t i = 0; i < f->nchunks; i++)
			overlay_chunk(&f->chunks[i], buf, off, end);
	*got = (size_t)(end - off);
	return 0;
}

int tree_read(struct tree *t, uint64_t ino, char *buf, size_t size,
	      int64_t off, size_t *got)
{
	struct open_file *f = open_find(t, ino);
	struct tree_attr a;
	int ret;

	*got = 0;
	if (f)
		return read_sized(t, ino, 0, 0, f->size, buf, size, off, got);
	ret = tree_getattr(t, ino, &a);
	return ret < 0 ? ret : read_sized(t, ino, a.content, a.session, a.size,
					  buf, size, off, got);
}

int tree_read_plan(struct tree *t, uint64_t ino, int64_t *size)
{
	struct open_file *f = open_find(t, ino);

	if (!f)
		return -EBADF;
	if (f->nchunks || f->attr_dirty || f->spilling)
		return 1;
	*size = f->size;
	return 0;
}

/* The stored bytes of [off, off + size) of a file of `fsize` bytes. */
static int read_clamped(struct store *st, uint64_t ino, int64_t fsize,
			char *buf, size_t size, int64_t off, size_t *got)
{
	int64_t end;
	int ret;

	*got = 0;
	if (off < 0)
		return -EINVAL;
	if (off >= fsize || !size)
		return 0;
	end = fsize - off < (int64_t)size ? fsize : off + (int64_t)size;
	ret = read_stored(st, ino, buf, off, end);
	if (!ret)
		*got = (size_t)(end - off);
	return ret;
}

/*
 * Outside the tree's lock a writer may cut the file between the caller's
 * plan and this read: the size is read again in the same snapshot as the
 * data, so a cut gives a short read, never the zeros of missing chunks.
 */
int tree_read_stored(struct store *st, uint64_t ino, int64_t fsize,
		     char *buf, size_t size, int64_t off, size_t *got)
{
	/* a file that moved to a data file meanwhile: its chunks are gone */
	static const char sql[] = "SELECT CASE WHEN content IS NULL"
		" THEN size ELSE -1 END FROM inodes WHERE ino = ?1";
	int64_t stored = 0;
	int ret;

	*got = 0;
	ret = store_exec(st, "BEGIN");
	if (ret < 0)
		return ret;
	ret = store_int(st, sql, &stored, STORE_INT(ino));
	if (!ret && stored < 0)
		ret = 1;
	else if (!ret)
		ret = read_clamped(st, ino, stored < fsize ? stored : fsize,
				   buf, size, off, got);
	else if (ret == -ENOENT)
		ret = 0;
	store_exec(st, "COMMIT");
	return ret;
}

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
	ret = open_first(t, out);
	if (ret < 0)
		delete_inode(t, out->ino);
	return ret;
}

int tree_link_unlinked(struct tree *t, uint64_t ino, uint64_t parent,
		       const char *name)
{
	static const char link_sql[] = "UPDATE inodes SET parent = ?2,"
		" name = ?3, nlink = 1, ctime_ns = ?4 WHERE ino = ?1";
	struct open_file *f = open_find(t, ino);
	struct tree_attr dir, old;
	int64_t now = fclock_now_ns(), session = 0;
	int ret;

	if (!f || !f->orphan)
		return -EINVAL;
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	/* the data first: once linked, the file is whole */
	ret = flush_file(t, f, false);
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

int tree_read_all(struct tree *t, const struct tree_attr *a,
		  struct sbuf *out)
{
	size_t got;
	int ret;

	if (!S_ISREG(a->mode))
		return -EINVAL;
	if (a->size > 64 * 1024 * 1024)
		return -EFBIG;
	if (sbuf_grow(out, (size_t)a->size) < 0)
		return -ENOMEM;
	ret = read_sized(t, a->ino, a->content, a->session, a->size,
			 out->buf + out->len, (size_t)a->size, 0, &got);
	if (ret < 0)
		return ret;
	sbuf_setlen(out, out->len + got);
	return 0;
}

/* ---- setattr, readlink, readdir ---------------------------------------- */

static int set_size(struct tree *t, uint64_t ino, int64_t size, int64_t now)
{
	static const char sql[] = "UPDATE inodes SET size = ?2,"
		" mtime_ns = ?3, ctime_ns = ?3 WHERE ino = ?1";
	static const char ext_sql[] = "UPDATE inodes SET size = ?2,"
		" mtime_ns = ?3, ctime_ns = ?3, content = nullif(?4, 0),"
		" alloc = CASE WHEN ?4 = 0 THEN 0 ELSE alloc END WHERE ino = ?1";
	struct open_file *f = open_find(t, ino);
	int ret;

	/*
	 * A data file: to nothing, the row lets go of it (removed once no
	 * row names it); else the content made its own, grown now (a cut of
	 * what a crash left past the old size first), and cut only after
	 * the commit (settle_after_cut(): never shorter than a committed
	 * size).
	 */
	if (f && f->fd >= 0) {
		int64_t content = size ? f->content : 0;

		t->sweep_maybe = true;
		if (size) {
			ret = own_content(t, f);
			if (ret < 0)
				return ret;
			content = f->content;
			if (size > f->size && (ftruncate(f->fd, f->size) < 0 ||
					       ftruncate(f->fd, size) < 0))
				return -errno;
		}
		ret = store_run(t->st, ext_sql, STORE_INT(ino), STORE_INT(size),
				STORE_INT(now), STORE_INT(content));
		if (!ret && f->content_dirty)
			ret = store_run(t->st, "DELETE FROM chunks WHERE ino = ?1",
					STORE_INT(ino));
		return ret;
	}
	/*
	 * Gathered writes first, so the cut applies to them too.  They stay
	 * gathered until the caller's commit succeeds (a rollback must not
	 * lose them); see settle_after_cut().
	 */
	if (f && (f->nchunks || f->attr_dirty)) {
		struct gathered g = gathered_of(f);

		ret = write_out(t->st, &g, &f->alloc);
		if (ret < 0)
			return ret;
	}
	ret = cut_chunks(t->st, ino, size);
	if (ret < 0)
		return ret;
	return store_run(t->st, sql, STORE_INT(ino), STORE_INT(size),
			 STORE_INT(now));
}

/* After a committed set_size(): the store holds all of an open file. */
static int settle_after_cut(struct tree *t, struct open_file *f)
{
	struct tree_attr row;
	int ret;

	drop_chunks(t, f);
	f->attr_dirty = false;
	ret = read_row(t, f->ino, &row);
	if (ret < 0)
		return ret;
	if (f->fd >= 0 && !row.content) {
		int64_t refs = 1;

		close(f->fd);
		f->fd = -1;
		/* a copy no commit ever named is no row's: gone now, not at
		 * the next mount (one that was named, tree_sweep() removes) */
		if (contents_refs(t->st, f->content, &refs) == 0 && !refs)
			contents_remove(t->contents, f->content);
		f->content = 0;
		f->content_dirty = false;
	} else if (f->fd >= 0) {
		f->content_dirty = false;
		/* the space back at once; failing, the tail is never read */
		if (ftruncate(f->fd, row.size) < 0)
			ret = 0;
	}
	f->size = f->stored_size = row.size;
	f->alloc = row.alloc;
	f->mtime_ns = row.mtime_ns;
	f->ctime_ns = row.ctime_ns;
	return 0;
}

uint64_t tree_changes(const struct tree *t)
{
	return t->changes;
}

/*
 * A file's data cut to `size` (shorter), with its size and times, in a
 * transaction of its own outside the caller's lock, before the rest of a
 * setattr (which then finds the size done): a 1 GiB file cut to nothing
 * (open with O_TRUNC) deletes 16,384 rows.  Only cuts of at least
 * CUT_ALONE_BYTES go so; anything wrong is left to tree_setattr() to
 * say.  Readers meanwhile see the file at its new size with its old
 * data, then the cut.
 */
#define CUT_ALONE_BYTES (1024 * 1024)	/* tree.h says so too */

static int cut_alone(struct tree *t, uint64_t ino, int64_t size)
{
	static const char sql[] = "UPDATE inodes SET size = ?2,"
		" mtime_ns = ?3, ctime_ns = ?3 WHERE ino = ?1";
	struct open_file *f = open_find(t, ino);
	struct tree_attr a;
	int ret, settled;

	if (!can_leave(t) || tree_getattr(t, ino, &a) < 0 || a.content ||
	    !S_ISREG(a.mode) || size < 0 || size >= a.size ||
	    a.alloc - size < CUT_ALONE_BYTES)
		return 0;
	/* its gathered writes first: the cut applies to them too */
	if (f) {
		ret = flush_file(t, f, false);
		if (ret < 0)
			return ret;
		f->size = size;
	}
	t->leave(t->lock_ctx);
	ret = store_begin(t->cut_st);
	if (!ret) {
		ret = cut_chunks(t->cut_st, ino, size);
		if (!ret)
			ret = store_run(t->cut_st, sql, STORE_INT(ino),
					STORE_INT(size),
					STORE_INT(fclock_now_ns()));
		if (ret < 0)
			store_rollback(t->cut_st);
		else
			ret = store_commit(t->cut_st);
	}
	t->enter(t->lock_ctx);
	/* as the row is now, cut or not (a reader may have closed the file
	 * meanwhile, or opened it) */
	f = open_find(t, ino);
	settled = f ? settle_after_cut(t, f) : 0;
	t->changes++;
	return ret < 0 ? ret : settled;
}

static int setattr_open(struct tree *t, uint64_t ino,
			const struct tree_setattr *sa, struct tree_attr *out);

/* A cut of a file with a data file goes through an open file (its fd,
 * the copy of a shared content): opened for it when no one has it open. */
int tree_setattr(struct tree *t, uint64_t ino, const struct tree_setattr *sa,
		 struct tree_attr *out)
{
	struct tree_attr a;
	int ret, r;

	if (!(sa->what & TREE_SET_SIZE) || open_find(t, ino) ||
	    read_row(t, ino, &a) < 0 || !a.content || !S_ISREG(a.mode))
		return setattr_open(t, ino, sa, out);
	ret = tree_open(t, ino);
	if (ret < 0)
		return ret;
	ret = setattr_open(t, ino, sa, out);
	r = tree_release(t, ino);
	return ret < 0 ? ret : r < 0 ? r : tree_getattr(t, ino, out);
}

static int setattr_open(struct tree *t, uint64_t ino,
			const struct tree_setattr *sa, struct tree_attr *out)
{
	static const char sql[] = "UPDATE inodes SET mode = ?2, uid = ?3,"
		" gid = ?4, atime_ns = ?5, mtime_ns = ?6, ctime_ns = ?7"
		" WHERE ino = ?1";
	struct open_file *f;
	struct tree_attr a;
	int64_t now;
	bool cut = false;
	int ret = 0;

	if (sa->what & TREE_SET_SIZE)
		ret = cut_alone(t, ino, sa->size);
	if (ret < 0)
		return ret;
	f = open_find(t, ino);
	now = fclock_now_ns();
	ret = store_begin(t->st);
	if (ret < 0)
		return ret;
	ret = tree_getattr(t, ino, &a);
	if (ret < 0)
		goto out;
	if (sa->what & TREE_SET_SIZE) {
		if (!S_ISREG(a.mode)) {
			ret = S_ISDIR(a.mode) ? -EISDIR : -EINVAL;
			goto out;
		}
		if (sa->size < 0) {
			ret = -EINVAL;
			goto out;
		}
		if (sa->size > TREE_MAX_SIZE) {
			ret = -EFBIG;
			goto out;
		}
		/* POSIX: times change only when the size does */
		if (sa->size != a.size) {
			ret = set_size(t, ino, sa->size, now);
			if (ret < 0)
				goto out;
			a.mtime_ns = a.ctime_ns = now;
			cut = true;
		}
		a.size = sa->size;
	}
	if (sa->what & TREE_SET_MODE)
		a.mode = (a.mode & S_IFMT) | (sa->mode & 07777);
	if (sa->what & TREE_SET_UID)
		a.uid = sa->uid;
	if (sa->what & TREE_SET_GID)
		a.gid = sa->gid;
	if (sa->what & TREE_SET_ATIME_NOW)
		a.atime_ns = now;
	else if (sa->what & TREE_SET_ATIME)
		a.atime_ns = sa->atime_ns;
	if (sa->what & TREE_SET_MTIME_NOW)
		a.mtime_ns = now;
	else if (sa->what & TREE_SET_MTIME)
		a.mtime_ns = sa->mtime_ns;
	if (sa->what & TREE_SET_CTIME)
		a.ctime_ns = sa->ctime_ns;
	else if (sa->what & ~(unsigned)TREE_SET_SIZE)
		a.ctime_ns = now;
	ret = store_run(t->st, sql, STORE_INT(ino), STORE_INT(a.mode),
			STORE_INT(a.uid), STORE_INT(a.gid), STORE_INT(a.atime_ns),
			STORE_INT(a.mtime_ns), STORE_INT(a.ctime_ns));
	if (ret < 0)
		goto out;
	ret = store_commit(t->st);
	if (ret < 0)
		return ret;
	if (f && cut)
		ret = settle_after_cut(t, f);
	if (f) {
		f->mtime_ns = a.mtime_ns;
		f->ctime_ns = a.ctime_ns;
		t->changes++;
	}
	if (ret < 0)
		return ret;
	return tree_getattr(t, ino, out);
out:
	store_rollback(t->st);
	return ret;
}

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
		overlay_open(t, &e->attr);
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

/* ---- copies that share contents ------------------------------------------ */

int tree_flush_all(struct tree *t)
{
	for (int b = 0; b < OPEN_BUCKETS; b++)
		for (struct open_file *f = t->open[b]; f; f = f->next) {
			int ret = flush_file(t, f, false);

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
	struct open_file *from = open_find(t, src), *to = open_find(t, dst);
	int64_t now = fclock_now_ns();
	int fd, ret;

	*shared = 0;
	if (!from || !to)
		return -EBADF;
	if (from == to || from->fd < 0 || to->fd >= 0 || to->size ||
	    to->nchunks)
		return -EOPNOTSUPP;
	/* what the source's row names is what is shared */
	ret = flush_file(t, from, false);
	if (ret < 0)
		return ret;
	fd = open_content(t, from->content, 0, from->ino, false);
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
				delete_unlinked(t, f);
			if (!f->orphan)
				flush_file(t, f, true);
			drop_chunks(t, f);
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
			delete_if_unlinked(t, t->refs.slots[i].ino);
	free(t->refs.slots);
	tree_sweep(t);
	while (t->npool)
		free(t->pool[--t->npool]);
	free(t);
}

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
		bool opened = !open_find(t, (uint64_t)ino);

		last = ino;
		ret = tree_open(t, (uint64_t)ino);
		if (ret < 0)
			return ret;
		f = open_find(t, (uint64_t)ino);
		ret = f->fd < 0 ? externalize(t, f) : 0;
		if (!ret)
			ret = flush_file(t, f, true);
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
