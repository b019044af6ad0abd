/* tree_data: the bytes of regular files: chunk rows, data files, open files
 * with their gathered writes and the spill, reads, writes, cuts; see tree.h. */
#include "store/tree_i.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
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

/* What a commit of gathered writes stores. */
struct gathered {
	uint64_t ino;
	const struct dirty_chunk *chunks;
	size_t nchunks;
	int64_t size, alloc, mtime_ns, ctime_ns;
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

/* ---- open-file table ------------------------------------------------ */

static struct open_file **open_slot(struct tree *t, uint64_t ino)
{
	struct open_file **p = &t->open[ino % OPEN_BUCKETS];

	while (*p && (*p)->ino != ino)
		p = &(*p)->next;
	return p;
}

struct open_file *tree_open_find(struct tree *t, uint64_t ino)
{
	return *open_slot(t, ino);
}

void tree_overlay_open(struct tree *t, struct tree_attr *a)
{
	struct open_file *f = tree_open_find(t, a->ino);
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

void tree_drop_chunks(struct tree *t, struct open_file *f)
{
	for (size_t i = 0; i < f->nchunks; i++)
		chunk_free(t, f->chunks[i].data);
	f->nchunks = 0;
	t->dirty_bytes -= f->dirty_bytes;
	f->dirty_bytes = 0;
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
	struct open_file *f = tree_open_find(t, s->ino);

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
int tree_open_content(struct tree *t, int64_t id, int64_t session,
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
int tree_externalize(struct tree *t, struct open_file *f)
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
	tree_drop_chunks(t, f);
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
	struct open_file *f = tree_open_find(t, ino);

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
int tree_flush_file(struct tree *t, struct open_file *f, bool durable)
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
	tree_drop_chunks(t, f);
	return 0;
}

/* The first open of the file whose row is `a`. */
int tree_open_first(struct tree *t, const struct tree_attr *a)
{
	struct open_file **slot = open_slot(t, a->ino), *f;
	int fd = -1;

	if (S_ISDIR(a->mode))
		return -EISDIR;
	if (a->content) {
		fd = tree_open_content(t, a->content, a->session, a->ino,
				       false);
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
	struct open_file *f = tree_open_find(t, ino);
	struct tree_attr a;
	int ret;

	if (f) {
		f->handles++;
		return 0;
	}
	ret = tree_getattr(t, ino, &a);
	return ret < 0 ? ret : tree_open_first(t, &a);
}

int tree_flush(struct tree *t, uint64_t ino, bool durable)
{
	struct open_file *f = tree_open_find(t, ino);
	int ret;

	if (!f)
		return 0;
	ret = tree_flush_file(t, f, durable);
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
int tree_delete_unlinked(struct tree *t, struct open_file *f)
{
	int ret = tree_delete_if_unlinked(t, f->ino);

	if (!ret && !store_changes(t->st))
		f->orphan = false;
	return ret;
}

bool tree_flush_writes(struct tree *t, uint64_t ino, bool durable)
{
	struct open_file *f = tree_open_find(t, ino);

	return durable ||
	       (f && (f->nchunks || f->attr_dirty || f->spill_err ||
		      f->content_dirty));
}

bool tree_release_writes(struct tree *t, uint64_t ino)
{
	struct open_file *f = tree_open_find(t, ino);

	return f && f->handles == 1 &&
	       (f->nchunks || f->attr_dirty || f->spilling || f->spill_err ||
		(f->orphan && !tree_referenced(t, ino)));
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
	held = tree_referenced(t, ino);
	if (f->orphan && !held)
		ret = tree_delete_unlinked(t, f);
	/* Nothing can report a flush error any more; the data stays in
	 * memory only if we keep the file, which would leak. */
	if (!f->orphan || held)
		ret = tree_flush_file(t, f, false);
	tree_drop_chunks(t, f);
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
	struct open_file *f = tree_open_find(t, ino);
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
		ret = tree_externalize(t, f);
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
		return tree_flush_file(t, f, false);
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
	struct open_file *f = tree_open_find(t, ino);
	int64_t end;
	int ret;

	if (f && f->fd >= 0)
		return read_fd(f->fd, fsize, buf, size, off, got);
	if (!f && content) {
		int fd = tree_open_content(t, content, session, ino, true);

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
	struct open_file *f = tree_open_find(t, ino);
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
	struct open_file *f = tree_open_find(t, ino);

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

/* ---- setattr ------------------------------------------------------------ */

static int set_size(struct tree *t, uint64_t ino, int64_t size, int64_t now)
{
	static const char sql[] = "UPDATE inodes SET size = ?2,"
		" mtime_ns = ?3, ctime_ns = ?3 WHERE ino = ?1";
	static const char ext_sql[] = "UPDATE inodes SET size = ?2,"
		" mtime_ns = ?3, ctime_ns = ?3, content = nullif(?4, 0),"
		" alloc = CASE WHEN ?4 = 0 THEN 0 ELSE alloc END WHERE ino = ?1";
	struct open_file *f = tree_open_find(t, ino);
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

	tree_drop_chunks(t, f);
	f->attr_dirty = false;
	ret = tree_read_row(t, f->ino, &row);
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
	struct open_file *f = tree_open_find(t, ino);
	struct tree_attr a;
	int ret, settled;

	if (!can_leave(t) || tree_getattr(t, ino, &a) < 0 || a.content ||
	    !S_ISREG(a.mode) || size < 0 || size >= a.size ||
	    a.alloc - size < CUT_ALONE_BYTES)
		return 0;
	/* its gathered writes first: the cut applies to them too */
	if (f) {
		ret = tree_flush_file(t, f, false);
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
	f = tree_open_find(t, ino);
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

	if (!(sa->what & TREE_SET_SIZE) || tree_open_find(t, ino) ||
	    tree_read_row(t, ino, &a) < 0 || !a.content || !S_ISREG(a.mode))
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
	f = tree_open_find(t, ino);
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
