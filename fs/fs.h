/*
 * The FUSE adapter's shared state and the path → entry table.
 *
 * Inode numbers: 1 is the mount's root; rows of the tree (core/tree.h)
 * use their row id; every other object is an *entry* of the table in
 * entries.c, numbered FS_VIRTUAL | session id << 16 | row, so it is the
 * same number on every mount (row 0 = no session: .flowfs and below).
 */
#ifndef FLOWFS_FS_H
#define FLOWFS_FS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "ferr.h"
#include "sbuf.h"
#include "session.h"
#include "store.h"
#include "tree.h"

#define FS_ROOT_INO 1
#define FS_VIRTUAL ((uint64_t)1 << 63)

struct flowfs {
	/* One lock around every request: the store and tree are not
	 * thread-safe, and requests are short. */
	pthread_mutex_t lock;
	struct store *st;
	struct tree *tree;
	char *mountpoint;	/* absolute */
	int64_t mounted_ns;
	uid_t uid;
	gid_t gid;
};

/* Where an entry of the table lives. */
enum entry_scope {
	SCOPE_ROOT,		/* in the mount's root, beside the sessions */
	SCOPE_DOTDIR,		/* in .flowfs/ */
	SCOPE_SESSION,		/* in every session folder */
};

enum entry_kind {
	ENTRY_DIR,		/* a read-only folder of entries */
	ENTRY_UPLOADS,		/* a real folder: rows of the tree */
	ENTRY_DOC,		/* a JSON document: rendered, written whole */
	ENTRY_GENERATED,	/* read-only, rendered on each open */
};

struct entry {
	const char *name;
	enum entry_scope scope;
	enum entry_kind kind;
	mode_t mode;
	/* Content and the time it last changed (DOC, GENERATED). */
	int (*render)(struct flowfs *fs, const struct session_info *s,
		      struct sbuf *out, int64_t *mtime_ns);
	/* Validate and store a whole new document (DOC). */
	int (*commit)(struct flowfs *fs, const struct session_info *s,
		      const char *text, size_t len, struct ferr *err);
};

extern const struct entry fs_entries[];
extern const unsigned fs_entry_count;

/* The entry `name` in `scope`, as a row index; -1 when there is none. */
int fs_entry_find(enum entry_scope scope, const char *name);

static inline uint64_t fs_entry_ino(int64_t session, unsigned row)
{
	return FS_VIRTUAL | (uint64_t)session << 16 | row;
}

static inline bool fs_ino_is_entry(uint64_t ino)
{
	return ino & FS_VIRTUAL;
}

static inline int64_t fs_ino_session(uint64_t ino)
{
	return (int64_t)((ino & ~FS_VIRTUAL) >> 16);
}

static inline unsigned fs_ino_row(uint64_t ino)
{
	return (unsigned)(ino & 0xffff);
}

/* The low-level operations table (ops.c). */
struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops fs_ops;

#endif
