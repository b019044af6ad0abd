/*
 * The FUSE adapter's shared state and the path → entry table.
 *
 * Inode numbers: 1 is the mount's root; rows of the tree (core/tree.h)
 * use their row id; everything else has FS_VIRTUAL set and lives in one
 * of three spaces (bits 61-62):
 *   FS_SPACE_ENTRY   a row of the entry table (entries.c) in a session:
 *                    session id << 16 | row (session 0: .flowfs and below)
 *   FS_SPACE_SKILL   a file of the skill bound to a session (its skill/):
 *                    session id << 28 | skill serial << 16 | file
 *   FS_SPACE_CATALOG a file of a skill under .flowfs/skills/:
 *                    skill serial << 16 | file
 *   FS_SPACE_GRAPH   a node (bit 60 clear) or edge (bit 60 set) of a
 *                    session's job graph: its row's seq
 * where file 0 is the skill's own folder and file n its n-th file.  The
 * numbers are the same on every mount (skill serials: for a mount).
 */
#ifndef FLOWFS_FS_H
#define FLOWFS_FS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "binding.h"
#include "ferr.h"
#include "graph.h"
#include "notify.h"
#include "sbuf.h"
#include "session.h"
#include "skill.h"
#include "store.h"
#include "tree.h"

#define FS_ROOT_INO 1
#define FS_VIRTUAL ((uint64_t)1 << 63)
#define FS_SPACE_SHIFT 61
#define FS_SPACE_ENTRY 0u
#define FS_SPACE_SKILL 1u
#define FS_SPACE_CATALOG 2u
#define FS_SPACE_GRAPH 3u
#define FS_GRAPH_EDGE_BIT ((uint64_t)1 << 60)

struct flowfs {
	/* One lock around every request: the store, tree and registry are
	 * not thread-safe, and requests are short. */
	pthread_mutex_t lock;
	struct store *st;
	struct tree *tree;
	struct skill_registry *skills;
	struct fs_notifier *notifier;
	/* the tool map (graph.h), read again when its file changes */
	char *tools_path;
	struct graph_tools *tools;
	int64_t tools_mtime_ns;
	char *mountpoint;	/* absolute */
	int64_t mounted_ns;
	uid_t uid;
	gid_t gid;
	/* Every open file and folder handle.  A close just before unmount
	 * can leave its RELEASE unsent (the kernel sends it asynchronously
	 * and drops it with the connection), so what is left here when the
	 * loop ends is released by fs_release_open_handles(). */
	pthread_mutex_t handles_lock;
	struct handle *open_handles;
};

/* After the loop: release what the kernel never released (see above). */
void fs_release_open_handles(struct flowfs *fs);

/* The current tool map (never NULL: empty when the file is missing or
 * broken — then `err` says why, for .flowfs/config). */
const struct graph_tools *fs_tools(struct flowfs *fs, struct ferr *err);

/* Where an entry of the table lives. */
enum entry_scope {
	SCOPE_ROOT,		/* in the mount's root, beside the sessions */
	SCOPE_DOTDIR,		/* in .flowfs/ */
	SCOPE_SESSION,		/* in every session folder */
	SCOPE_OUTPUT,		/* in every session's output/, beside its files */
	SCOPE_PARAMOUT,		/* in every session's parameters_output/ */
};

enum entry_kind {
	ENTRY_DIR,		/* a read-only folder of entries */
	ENTRY_FOLDER,		/* a real folder of the session (uploads/, output/) */
	ENTRY_DOC,		/* a JSON document: rendered, written whole */
	ENTRY_GENERATED,	/* read-only, rendered on each open */
	ENTRY_SKILL,		/* the bound skill's package, read-only */
	ENTRY_CATALOG,		/* every known skill, read-only */
	ENTRY_CONTROL,		/* write-only: each line written is a command */
};

struct entry {
	const char *name;
	enum entry_scope scope;
	enum entry_kind kind;
	mode_t mode;
	/* ENTRY_FOLDER: which of the session's folders */
	enum session_folder folder;
	/* ENTRY_DIR: the scope of the entries it holds */
	enum entry_scope holds;
	/* A name that depends on the session (name is NULL then). */
	int (*name_fn)(struct flowfs *fs, const struct session_info *s,
		       struct sbuf *out);
	/* Content and the time it last changed (DOC, GENERATED);
	 * -ENOENT when the entry does not exist now. */
	int (*render)(struct flowfs *fs, const struct session_info *s,
		      struct sbuf *out, int64_t *mtime_ns);
	/* Validate and store a whole new document (DOC). */
	int (*commit)(struct flowfs *fs, const struct session_info *s,
		      const char *text, size_t len, struct ferr *err);
};

/* A command of a session's ctl file. */
struct fs_command {
	const char *name;
	int (*run)(struct flowfs *fs, const struct session_info *s,
		   struct ferr *err);
};

extern const struct fs_command fs_commands[];

/* Run one line written to ctl; -EINVAL + err for an unknown command. */
int fs_run_command(struct flowfs *fs, const struct session_info *s,
		   const char *line, size_t len, struct ferr *err);

extern const struct entry fs_entries[];
extern const unsigned fs_entry_count;

/*
 * The entry `name` in `scope`, as a row index; -1 when there is none.
 * Entries with a computed name need the session `s` (may be NULL for
 * scopes without them).
 */
int fs_entry_find(struct flowfs *fs, const struct session_info *s,
		  enum entry_scope scope, const char *name);
/* The name of row `row` (computed ones into `buf`). */
const char *fs_entry_name(struct flowfs *fs, const struct session_info *s,
			  unsigned row, struct sbuf *buf);

/* The binding context of a session (its path under the mountpoint). */
struct fs_binding {
	struct binding_ctx ctx;
	char path[4096 + 256];
};
void fs_binding_init(struct flowfs *fs, const struct session_info *s,
		     struct fs_binding *b);

static inline uint64_t fs_entry_ino(int64_t session, unsigned row)
{
	return FS_VIRTUAL | (uint64_t)session << 16 | row;
}

static inline uint64_t fs_skill_ino(unsigned space, int64_t session,
				    unsigned serial, size_t file)
{
	return FS_VIRTUAL | (uint64_t)space << FS_SPACE_SHIFT |
	       (uint64_t)session << 28 | (uint64_t)serial << 16 | file;
}

static inline uint64_t fs_graph_ino(enum graph_kind kind, int64_t seq)
{
	return FS_VIRTUAL | (uint64_t)FS_SPACE_GRAPH << FS_SPACE_SHIFT |
	       (kind == GRAPH_EDGE ? FS_GRAPH_EDGE_BIT : 0) | (uint64_t)seq;
}

static inline bool fs_ino_is_virtual(uint64_t ino)
{
	return ino & FS_VIRTUAL;
}

static inline unsigned fs_ino_space(uint64_t ino)
{
	return (unsigned)(ino >> FS_SPACE_SHIFT) & 3u;
}

static inline int64_t fs_ino_session(uint64_t ino)
{
	uint64_t bits = ino & (((uint64_t)1 << FS_SPACE_SHIFT) - 1);

	return (int64_t)(fs_ino_space(ino) == FS_SPACE_ENTRY ? bits >> 16
							     : bits >> 28);
}

static inline unsigned fs_ino_serial(uint64_t ino)
{
	return (unsigned)(ino >> 16) & 0xfffu;
}

static inline unsigned fs_ino_low(uint64_t ino)
{
	return (unsigned)(ino & 0xffff);
}

/* The low-level operations table (ops.c). */
struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops fs_ops;

#endif
