/*
 * tree: the real files of a session — its root folder, uploads/ and all
 * below it, and scratch files — as rows of the store, with their data in
 * fixed-size chunks or, for large files, in data files beside it.  The
 * files and folders in the database; nothing of skills, graphs or runs.
 *
 * ---- Inodes and names ----
 * Every object is addressed by its inode number (a row id, never reused).
 * A session's root folder is a row without a parent (or, while the
 * session is in a trash, in a trash's folder); everything else hangs
 * below a folder row by name.  Names are bytes (their rules are checked
 * by the caller, fs/, with fname).
 *
 * ---- Trash folders ----
 * The mount's root also holds the freedesktop.org trash
 * folders (.Trash, .Trash-<uid>): rows of no session, found by name at
 * the root, holding what was moved there (files, folders, sessions).
 *
 * ---- Data files ----
 * A regular file's bytes are chunk rows (TREE_CHUNK_SIZE each) while it
 * is at most TREE_INLINE_MAX bytes; past it they are a data file beside
 * the database (contents.h), which writes go to at once and which may be
 * shared with other rows (tree_copy(), tree_share()): the first write to
 * a shared one copies it.  The order of writes is contents.h's.
 *
 * ---- Open files ----
 * tree_open() / tree_release() count the open handles of an
 * inode.  While a file in chunks is open, writes are gathered in memory,
 * chunk by chunk, and written to the store in one transaction by
 * tree_flush() (the close/fsync path), by tree_release(), or when the
 * gathered bytes pass a limit; a file in a data file commits its size and
 * times there.  Reads and
 * getattr see gathered bytes at once.  A file unlinked while open keeps
 * its row (without a name) until the last release, so its data stays
 * readable through the open descriptors; rows left so by a crash are
 * removed by tree_new().
 *
 * ---- Kernel references ----
 * The kernel keeps an inode it was given (a lookup,
 * a create, a readdirplus entry) until it forgets it, and may GETATTR or
 * OPEN it after another process unlinked or renamed its name away (the
 * other side of a `mv new cfg` race).  tree_ref() counts one such
 * reference, tree_forget() drops `n` of them; a file unlinked while
 * referenced keeps its row (without a name, nlink 0), as an open one
 * does, until its last reference and its last open handle are gone, so
 * it answers as an unlinked file does.  Folders are removed at once
 * (rmdir: the kernel forgets them itself).
 *
 * ---- Errors and threads ----
 * Errors are negative errnos: -ENOENT, -ENOTDIR, -EISDIR, -EEXIST,
 * -ENOTEMPTY, -EINVAL (rename into own subtree), -EXDEV (a session's root
 * out of a trash), -EFBIG, -EAGAIN (database busy), -EIO.
 *
 * Not thread-safe; the caller serializes (see store.h).
 */
#ifndef FLOWFS_TREE_H
#define FLOWFS_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/sbuf.h"
#include "store/contents.h"
#include "store/store.h"

#define TREE_CHUNK_SIZE (64 * 1024)
/*
 * A regular file is kept in chunk rows up to this size; a write past it
 * moves it to a data file beside the database (contents.h), where it
 * stays.  Measured (2,000 files each through the mount, the database on
 * tmpfs, release build): at 96 and 128 KiB the database wrote 7-8 % and
 * read 16-33 % faster; at 256 KiB the data file wrote 1.4x and read 3x
 * faster, at 1 MiB 3.5x and 1.1x.  SQLite's own figures put the crossover
 * between 50 and 100 KB.
 */
#define TREE_INLINE_MAX (128 * 1024)

/* The tags of rows that are no session's folder (session.h tags those):
 * a session's root folder, and a trash folder at the mount's root, whose
 * rows belong to no session (tree_attr.session 0). */
#define TREE_TAG_SESSION_ROOT 64
#define TREE_TAG_TRASH 65
/* Largest file size accepted (sparse files may go this far): what a
 * data file may be on ext4 with 4 KiB blocks (2^32 - 1 blocks), the
 * smallest limit of Linux's usual file systems. */
#define TREE_MAX_SIZE (((int64_t)1 << 44) - 4096)

struct tree_attr {
	uint64_t ino;
	int64_t session;
	uint32_t mode;		/* includes the S_IFMT type bits */
	uint32_t uid, gid;
	uint32_t nlink;
	int64_t size;
	int64_t alloc;		/* bytes of data stored (sparse files hold less) */
	int64_t atime_ns, mtime_ns, ctime_ns;
	bool session_root;	/* the root folder of its session */
	unsigned tag;		/* what the row is to its session (session.h) */
	int64_t content;	/* its data file (contents.h), 0: in chunks */
};

/* What tree_setattr() changes; a flag per field. */
enum {
	TREE_SET_MODE = 1 << 0,
	TREE_SET_UID = 1 << 1,
	TREE_SET_GID = 1 << 2,
	TREE_SET_SIZE = 1 << 3,
	TREE_SET_ATIME = 1 << 4,
	TREE_SET_MTIME = 1 << 5,
	TREE_SET_ATIME_NOW = 1 << 6,
	TREE_SET_MTIME_NOW = 1 << 7,
	TREE_SET_CTIME = 1 << 8,
};

struct tree_setattr {
	unsigned what;
	uint32_t mode, uid, gid;
	int64_t size;
	int64_t atime_ns, mtime_ns, ctime_ns;
};

struct tree_dirent {
	char *name;
	struct tree_attr attr;
};

struct tree_dir {
	struct tree_dirent *ents;
	size_t n;
};

struct tree;

/* Bind to an open store; removes rows orphaned by an earlier crash. */
int tree_new(struct tree **out, struct store *st);
/* Flushes every open file's gathered writes, then frees. */
void tree_free(struct tree *t);

/* Create the root folder of a new session (no parent, no name). */
int tree_create_root(struct tree *t, int64_t session, uint32_t mode,
		     uint32_t uid, uint32_t gid, struct tree_attr *out);

/*
 * Move session root `root` into folder `parent` of a trash as `name`, or
 * (parent 0) back out, with no parent and no name.  Inside the caller's
 * transaction.  -EEXIST when the name is taken, -EXDEV for a folder that
 * is not a trash's, -EINVAL when `root` is no session's root.
 */
int tree_move_root(struct tree *t, uint64_t root, uint64_t parent,
		   const char *name);

/* The trash folder `name` at the mount's root; make one (-EEXIST);
 * all of them, by name; remove an empty one (-ENOTEMPTY). */
int tree_trash_lookup(struct tree *t, const char *name, struct tree_attr *out);
int tree_trash_create(struct tree *t, const char *name, uint32_t mode,
		      uint32_t uid, uint32_t gid, struct tree_attr *out);
int tree_trash_list(struct tree *t, struct tree_dir *out);
int tree_trash_remove(struct tree *t, const char *name);

int tree_getattr(struct tree *t, uint64_t ino, struct tree_attr *out);
int tree_lookup(struct tree *t, uint64_t parent, const char *name,
		struct tree_attr *out);

/*
 * A folder a session keeps for itself (uploads/, output/, ...): `name` in
 * `parent` with mode 0755 and tree tag `tag` (session.h).  Inside the
 * caller's transaction (no transaction of its own).  -EEXIST when the
 * name is taken.
 */
int tree_add_tagged_folder(struct tree *t, uint64_t parent, const char *name,
			   unsigned tag, uint32_t uid, uint32_t gid,
			   struct tree_attr *out);

/*
 * Create `name` in folder `parent`: a regular file, folder or symlink
 * according to the S_IFMT bits of `mode` (symlinks take `target`).
 * In a setgid folder the new entry takes the folder's group (and a new
 * folder the setgid bit).  -EEXIST when the name is taken.
 */
int tree_create(struct tree *t, uint64_t parent, const char *name,
		uint32_t mode, uint32_t uid, uint32_t gid, const char *target,
		struct tree_attr *out);

/* Remove a non-folder (tree_unlink) or an empty folder (tree_rmdir). */
int tree_unlink(struct tree *t, uint64_t parent, const char *name);
int tree_rmdir(struct tree *t, uint64_t parent, const char *name);
/* tree_rmdir inside the caller's transaction. */
int tree_rmdir_within(struct tree *t, uint64_t parent, const char *name);

/*
 * rename(2).  `noreplace`: -EEXIST when the target exists.  A target that
 * exists is replaced (a folder only by a folder, and only when empty).
 * What moves into another session or a trash belongs to it from then
 * on, all below it too; a session's root moves only within a trash.
 */
int tree_rename(struct tree *t, uint64_t parent, const char *name,
		uint64_t newparent, const char *newname, bool noreplace);
/* tree_rename inside the caller's transaction. */
int tree_rename_within(struct tree *t, uint64_t parent, const char *name,
		       uint64_t newparent, const char *newname, bool noreplace);

/* Set a row's tag (what it is to its session; the caller's transaction). */
int tree_set_tag(struct tree *t, uint64_t ino, unsigned tag);

/*
 * How many times what open files gathered in memory changed (a write,
 * the times a setattr gave them): with store_version(), a cache of what
 * is computed from the tree sees every change, stored or not.
 */
uint64_t tree_changes(const struct tree *t);

int tree_setattr(struct tree *t, uint64_t ino, const struct tree_setattr *sa,
		 struct tree_attr *out);
int tree_readlink(struct tree *t, uint64_t ino, struct sbuf *out);

/* A snapshot of a folder's entries, sorted by name; free with tree_dir_free. */
int tree_readdir(struct tree *t, uint64_t ino, struct tree_dir *out);
void tree_dir_free(struct tree_dir *dir);

/*
 * Whether a session holds user data: any row but its root folder and
 * the tagged folders the session itself keeps (uploads/, output/).
 */
int tree_session_has_data(struct tree *t, int64_t session, bool *has);

/* Kernel references (see above).  tree_ref(): 0 or -ENOMEM;
 * tree_forget(): 0, or the store's error deleting the row it kept. */
int tree_ref(struct tree *t, uint64_t ino);
int tree_forget(struct tree *t, uint64_t ino, uint64_t n);
/* Whether tree_forget() of the same would delete a row (the last
 * reference of a file unlinked and not open): a write to the store. */
bool tree_forget_deletes(struct tree *t, uint64_t ino, uint64_t n);

/* Open files (see above). */
/*
 * A cut of a file by CUT_ALONE_BYTES or more (tree_setattr(): a 1 GiB
 * file opened with O_TRUNC is 16,384 rows to delete) made outside the
 * caller's lock: on `st`, another connection to the store, between
 * leave() and enter(), when the caller has no transaction open on the
 * tree's own.  Meanwhile the caller's lock may be taken by others who
 * only read the tree or open and close files; nothing else may change
 * it.  st NULL: on the tree's connection (the default; before
 * tree_free() too).
 */
void tree_set_cutter(struct tree *t, struct store *st,
		      void (*leave)(void *lock_ctx),
		      void (*enter)(void *lock_ctx), void *lock_ctx);

/*
 * The spill: a file that gathered 8 MiB of writes hands them to another
 * thread, which commits them on `st` (a connection of its own) while the
 * writer gathers the next 8 MiB, so that a big write's commits and its
 * requests go side by side.  tree_write() calls kick() with the chunks
 * handed over (one spill at a time: it first waits for the last, with
 * wait(), between the cutter's leave() and enter()); kick()'s thread then
 * calls tree_spill_commit() holding no lock and tree_spill_settle()
 * holding the caller's lock only, and wait() returns once it has.
 * Meanwhile the spill is the file's data for tree_read() and
 * tree_write(), and its size and alloc stand.
 *
 * Whatever else writes to the store must wait() first (SQLite has one
 * writer): tree_write() does itself, for any commit of its own.  A spill
 * that fails goes back to the file's gathered writes and fails the file's
 * next tree_write() with its errno; tree_flush() writes it again.
 * Needs tree_set_cutter()'s leave() and enter(), and its lock_ctx
 * is theirs; st NULL: none (writes
 * commit in the caller's request, the default; before tree_free()).
 */
void tree_set_spiller(struct tree *t, struct store *st,
		      void (*kick)(void *lock_ctx),
		      void (*wait)(void *lock_ctx));
int tree_spill_commit(struct tree *t);
void tree_spill_settle(struct tree *t);

/* Whether tree_flush(), tree_release() of the same would write to the
 * store (for a caller that takes a writer's lock only then). */
bool tree_flush_writes(struct tree *t, uint64_t ino, bool durable);
bool tree_release_writes(struct tree *t, uint64_t ino);
int tree_open(struct tree *t, uint64_t ino);
int tree_read(struct tree *t, uint64_t ino, char *buf, size_t size,
	      int64_t off, size_t *got);

/*
 * tree_read() of an open file in two steps, the second without the tree
 * (for a reader that lets go of its lock meanwhile): tree_read_plan()
 * gives 0 and the file's size when all its bytes are in the store, 1
 * when some are gathered in memory (tree_read() then), -EBADF when it
 * is not open.  tree_read_stored() reads them from `st`, any connection
 * to the store with no transaction open, in one read transaction, at
 * most as far as the file's size in that snapshot (a cut made since the
 * plan gives a short read).
 */
int tree_read_plan(struct tree *t, uint64_t ino, int64_t *size);
int tree_read_stored(struct store *st, uint64_t ino, int64_t fsize,
		     char *buf, size_t size, int64_t off, size_t *got);
/*
 * A read of an open file whose bytes are in a data file, made without
 * the tree (for a reader that lets go of its lock and splices): 0 with a
 * duplicate of its fd (the caller closes it) and its size now, 1 when
 * its bytes are in chunks (tree_read_plan() then), -EBADF when it is not
 * open.  tree_read_stored() answers 1 for such a file.
 */
int tree_read_fd(struct tree *t, uint64_t ino, int *fd, int64_t *size);
int tree_write(struct tree *t, uint64_t ino, const char *buf, size_t size,
	       int64_t off);
int tree_flush(struct tree *t, uint64_t ino, bool durable);
int tree_release(struct tree *t, uint64_t ino);

/*
 * A file stored whole or not at all, for what the daemon itself writes
 * (a fetch, a run's output, a copy left by a rename): no reader sees it
 * half-written, no scratch name is shown, and a crash leaves nothing.
 *
 * tree_create_unlinked() makes a regular file in no folder, of
 * `parent`'s session and owner, and opens it once: tree_write() it, then
 * tree_link_unlinked() gives it the name `name` in `parent` in one
 * transaction (its data stored first), over a file of that name (a
 * folder there: -EISDIR), and tree_release() closes it.  Released before
 * it is linked, it is gone; after a crash, tree_new() sweeps it.
 * tree_link_unlinked() answers -EINVAL for a file that is not such a
 * file, -EXDEV for a folder of another session.
 *
 * tree_put_file() does the three with `len` bytes; the new file's
 * attributes in *out when out is not NULL.
 */
int tree_create_unlinked(struct tree *t, uint64_t parent,
			 struct tree_attr *out);
int tree_link_unlinked(struct tree *t, uint64_t ino, uint64_t parent,
		       const char *name);
int tree_put_file(struct tree *t, uint64_t parent, const char *name,
		  const char *data, size_t len, struct tree_attr *out);

/* Read a whole regular file (a scratch file renamed onto a document),
 * given its attributes as tree_lookup() or tree_getattr() gave them
 * (-EINVAL for another type, -EFBIG over 64 MiB). */
int tree_read_all(struct tree *t, const struct tree_attr *a,
		  struct sbuf *out);

/*
 * Before a session is deleted: its open files become unlinked-while-open
 * files of no session, so their descriptors keep working.  The caller's
 * transaction then deletes the session, which takes every other row.
 */
int tree_forget_session(struct tree *t, int64_t session);

/* ---- data files (contents.h) ---- */

/* Where damage found is told (a data file missing, short): the store
 * never fixes it, and the file reads short or answers EIO. */
void tree_set_reporter(struct tree *t, contents_report_fn fn, void *ctx);
/* contents_check() with the reporter: the number found wrong, or -errno. */
int tree_check_contents(struct tree *t);
/* After the caller's commits: the data files no row names any more go
 * (nothing when a transaction is open).  It looks only when the tree
 * deleted a row or let go of a content since (or tree_may_sweep() says
 * that something else may have: rows deleted by SQL of the caller's).
 * 0, or -errno. */
int tree_sweep(struct tree *t);
void tree_may_sweep(struct tree *t);
/* Another threshold than TREE_INLINE_MAX (tests that make chunk rows of
 * large files, as a store of the last schema holds them). */
void tree_set_inline_max(struct tree *t, int64_t bytes);
/* Something may have made a content shared that was not (a snapshot, a
 * fork, a copy): every open file asks again before its next write. */
void tree_shared(struct tree *t);
/*
 * Copies that share contents (a fork, a snapshot, a restore).
 * tree_flush_all() stores what every open file gathered (a copy takes
 * what the store holds).  tree_copy(), inside the caller's transaction,
 * copies folder `root` and all below it (named rows only; below
 * `skip_below`, copied empty, nothing) as rows of `session` (0: none),
 * the copy of `root` in no folder: chunk rows are copied, data files
 * are shared (counted; the first write to either side copies it), so a
 * copy costs its rows, never its bytes.  The copy of `root` in
 * *new_root; tree_copied() gives the copy of any row copied, until the
 * next tree_copy() (-ENOENT for one not copied).
 */
int tree_flush_all(struct tree *t);
int tree_copy(struct tree *t, uint64_t root, uint64_t skip_below,
	      int64_t session, uint64_t *new_root);
int tree_copied(struct tree *t, uint64_t old, uint64_t *made);
/* The folder row `ino` is in (0: none, a session's root at the top). */
int tree_parent(struct tree *t, uint64_t ino, uint64_t *parent);
/*
 * copy_file_range() of the whole of open file `src` into open file `dst`,
 * which is empty: `dst` names `src`'s data file from now on (shared,
 * copied on the first write to either).  *shared: the bytes.
 * -EOPNOTSUPP when it cannot share (`src`'s bytes are in chunks, `dst`
 * is not empty): the caller copies them.
 */
int tree_share(struct tree *t, uint64_t src, uint64_t dst, int64_t *shared);

/*
 * Move the chunks of every regular file past TREE_INLINE_MAX (a store of
 * the last schema) to data files, one file at a time, each in steps a
 * crash cannot break (tree.c); `progress` after each, with the bytes
 * done of the total.  0, or -errno (what was moved stays moved).
 */
typedef void (*tree_progress_fn)(void *ctx, int64_t done, int64_t total);
int tree_convert(struct tree *t, tree_progress_fn progress, void *ctx);

#endif
