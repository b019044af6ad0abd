/*
 * The FUSE adapter's shared state and the path → entry table.
 *
 * Inode numbers: 1 is the mount's root; rows of the tree (core/tree.h)
 * use their row id; everything else has FS_VIRTUAL set and lives in one
 * of four spaces (bits 61-62):
 *   FS_SPACE_ENTRY   a row of the entry table (entries.c) in a session:
 *                    session id << 16 | row (session 0: .flowfs and below)
 *   FS_SPACE_STANDIN an empty regular file standing, for the process that
 *                    made it, where a reserved name of another type is
 *                    (tar x's placeholder for the skill link, ops.c):
 *                    session id << 28 | row
 *   FS_SPACE_CATALOG a file of a skill under .flowfs/skills/:
 *                    skill serial << 16 | file
 *   FS_SPACE_COLLECTION a document of a collection (nodes/, edges/,
 *                    rounds/; below): collection << 59 | its key
 * where file 0 is the skill's own folder and file n its n-th file.  The
 * numbers are the same on every mount (skill serials: for a mount).
 */
#ifndef FLOWFS_FS_H
#define FLOWFS_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "session/binding.h"
#include "lib/ferr.h"
#include "graph/graph.h"
#include "graph/tools.h"
#include "run/datcomrun.h"
#include "run/jobs.h"
#include "session/roundstore.h"
#include "run/run.h"
#include "run/runs.h"
#include "cache.h"
#include "notify.h"
#include "lib/sbuf.h"
#include "session/session.h"
#include "session/skill.h"
#include "status.h"
#include "store/store.h"
#include "store/tree.h"

#define FS_ROOT_INO 1
/* Content smaller is rendered each time it is asked for, not kept. */
#define FS_RENDERED_MIN (16 * 1024)
#define FS_VIRTUAL ((uint64_t)1 << 63)
#define FS_SPACE_SHIFT 61
#define FS_SPACE_ENTRY 0u
#define FS_SPACE_STANDIN 1u
#define FS_SPACE_CATALOG 2u
#define FS_SPACE_COLLECTION 3u
#define FS_COLLECTION_SHIFT 59
#define FS_COLLECTION_KEY_MASK (((uint64_t)1 << FS_COLLECTION_SHIFT) - 1)

/* What one process did to a reserved name of a session (ops.c). */
struct fs_seen {
	pid_t who;		/* the process (not the thread) */
	pid_t tid;		/* the thread that noted it */
	uint64_t parent;	/* the folder's inode number */
	char name[256];
	uint64_t ino;		/* made, as this inode; 0: removed */
	/* a removed folder (uploads/, output/): the new one it got, and its
	 * time then -- unchanged, a second removal is tar x looping */
	uint64_t folder;
	int64_t folder_mtime_ns;
	int64_t until_ns;	/* forgotten after */
};

/* A path in the mount, from its root, that flowfs itself builds. */
#define FS_PATH_MAX 1400

/* At most as many as the loop has threads (main.c). */
#define FS_READERS 8

#define FS_SEEN_SLOTS 32
#define FS_SEEN_NS ((int64_t)10 * 1000000000)

/*
 * The line of a session's log that sums up what was written to files
 * flowfs makes and dropped (fs_log_dropped()): a copy of a session
 * brought back writes every one of them.  A drop within FS_DROPPED_NS
 * of the one before, while the line is still the log's last, is counted
 * in it.  The names counted apart (the first FS_DROPPED_NAMES) and how
 * many there were.
 */
#define FS_DROPPED_SLOTS 4
#define FS_DROPPED_NAMES 32
#define FS_DROPPED_SHOWN 3
#define FS_DROPPED_NS ((int64_t)60 * 1000000000)

struct fs_dropped {
	int64_t session;	/* 0: a free slot */
	int64_t row;		/* its log line */
	int64_t last_ns;	/* the last drop counted */
	unsigned files;		/* how many files (names counted apart) */
	unsigned names;		/* how many of them `name` holds */
	uint64_t bytes;
	bool written, moved;	/* how: written to, moved onto */
	char name[FS_DROPPED_NAMES][128];
};

struct flowfs;

/* An entry's content and the time it last changed (struct entry). */
typedef int fs_render_fn(struct flowfs *fs, const struct session_info *s,
			 struct sbuf *out, int64_t *mtime_ns);

/*
 * What a render outside `lock` may use (struct entry: render_alone): a
 * reader's connection in a read transaction, the session as read in it,
 * the tool map (pinned: not replaced meanwhile, see toolfile.pins) and the
 * mount's fixed settings.  Nothing else of struct flowfs.
 */
struct fs_alone {
	struct store *st;
	const struct session_info *s;
	const struct graph_tools *tools;
	struct ferr tools_err;	/* why the map is empty, when it is */
	int64_t tools_mtime_ns;
	const char *tools_path;
	const char *work_dir;
};

struct flowfs {
	/*
	 * Two locks, always taken in this order: write_lock, then lock.
	 *
	 * `lock` is held around every request's work on what is not
	 * thread-safe: the store `st`, the tree, the registry, the caches.
	 * (Never held while this process makes a request to its own mount:
	 * refresh.c.)
	 *
	 * `write_lock` is the database's one writer (SQLite has one at a
	 * time): whatever may change the database, the tree or the registry
	 * takes it before `lock` (fs_lock_write()), so a writer waiting for
	 * another waits holding nothing readers need.  A writer may let go
	 * of `lock` for slow work (fs_leave()/fs_enter()): a document's
	 * parse, check and commit, on the writer's own connection `wst`.
	 * Meanwhile only readers run (lookup, getattr, read, readdir,
	 * status), on `st`, which shows them the last commit: nothing they
	 * may change (caches, the kernel's references) is held across it,
	 * and nothing the writer holds (the tree, the tool map: toolfile.pins)
	 * changes under it.
	 */
	pthread_mutex_t write_lock;
	pthread_mutex_t lock;
	/* the thread holding write_lock (its pthread_self(), 0: none): who
	 * may write, log and leave (fs_holds_write()) */
	_Atomic unsigned long writer_tid;
	_Atomic unsigned long lock_tid;	/* the same of `lock` */
	/* a writer let go of `lock` for slow work (fs_leave()): readers do
	 * not scan the skill folders again meanwhile (its skill pointers
	 * would go); `lock` guards it */
	bool writer_out;
	/* log lines of readers, which may not write: written by the next
	 * thread to hold write_lock, before the reader's request is
	 * answered (fs_unlock()); `lock` guards it */
	struct fs_log_line *log_queue, **log_tail;
	struct store *st;
	struct store *wst;	/* the writer's, used outside `lock` only */
	/*
	 * The spill thread (tree_set_spiller(), locks.c) commits a big
	 * write's gathered 8 MiB on `sst` while the writer gathers the next,
	 * holding no lock, then settles holding `lock`.  spill_due: handed
	 * over and not settled; it is set by the holder of write_lock only,
	 * so a writer that finds it false may write, and one that finds it
	 * true waits (fs_lock_write()).  spill_lock guards the rest and the
	 * waits; it is taken last.
	 */
	struct store *sst;
	pthread_mutex_t spill_lock;
	pthread_cond_t spill_cond;
	_Atomic bool spill_due;
	bool spill_stop;
	pthread_t spill_thread;
	/* connections for reads of file data outside `lock` (ops.c's
	 * read), opened as needed: fs_reader_get() */
	pthread_mutex_t readers_lock;
	struct store *readers[FS_READERS];
	bool reader_busy[FS_READERS];
	struct tree *tree;
	struct skill_registry *skills;
	struct fs_notifier *notifier;
	/* the tool map (graph.h), read again when its file changes */
	char *tools_path;
	struct graph_toolfile toolfile;	/* of tools_path */
	char *mountpoint;	/* absolute */
	int64_t mounted_ns;
	uid_t uid;
	gid_t gid;
	bool foreground;	/* -f: log lines go to stderr, else syslog */
	/* Every open file and folder handle.  A close just before unmount
	 * can leave its RELEASE unsent (the kernel sends it asynchronously
	 * and drops it with the connection), so what is left here when the
	 * loop ends is released by fs_release_open_handles(). */
	pthread_mutex_t handles_lock;
	struct handle *open_handles;
	/* Engine runs: what they may use, and the ones not reaped yet
	 * (at most one going on per session). */
	struct run_host run_host;
	struct run_options run_opt;
	/* with --allow-exec: the daemon's folder of scratch folders */
	struct sandbox_scratch scratch;
	/* where experiments' cgroups are made (run_opt.limits.cgroups) */
	struct cgroup_base cgroups;
	struct runs runs;
	struct run_queue fetch_queue;	/* run_host.fetches */
	/* The job graph's runs (`echo submit > ctl`): the monitor thread
	 * and what it runs with (--executor, --work-dir, --jobs,
	 * --container); NULL before it starts. */
	struct jobs *jobs;
	struct jobs_options jobs_opt;
	char **container;	/* --container split into argv templates */
	/* --datcom: DATCOM's results on sessions' decks (NULL: not given) */
	struct datcomrun *datcom;
	/* the content of generated files with a version (cache.h) */
	struct fs_cache cache;
	/* parsed decks (binding.h), for every session's binding */
	struct binding_cache binding_cache;
	/* the bytes held by documents being written (H_DOC buffers), all
	 * sessions together: ops.c bounds it and each session's share */
	size_t doc_bytes;
	/* the same of generated files open (H_GENERATED, H_SINK:
	 * each holds the copy it was rendered into) */
	size_t copy_bytes;
	/* each process's own view of the reserved names it removed or made
	 * (ops.c), the lock held */
	struct fs_seen seen[FS_SEEN_SLOTS];
	/* the sessions' lines of dropped writes being summed up
	 * (fs_log_dropped()), write_lock held */
	struct fs_dropped dropped[FS_DROPPED_SLOTS];
	/* The refresher: its pid, the pipe's end that sends it paths, the
	 * mount's device it was started for, how many times it was started
	 * again after it ended, and whether the daemon is stopping it.
	 * refresher_lock guards these; it is taken last, never held while
	 * taking `lock`. */
	pthread_mutex_t refresher_lock;
	pid_t refresher_pid;
	int refresher_fd;
	dev_t refresher_dev;
	unsigned refresher_restarts;
	bool refresher_stopped;
};

/*
 * The refresher (refresh.c): a process of its own that touches a
 * session's folders and generated names through the mount, for inotify
 * watchers.  fs_refresher_start() once mounted (before the loop runs);
 * fs_refresh_session() from the notifier's thread, never waiting (a
 * refresher that ended is started again, a few times, while the mount is
 * still at the mountpoint; each time is logged);
 * fs_refresher_stop() as soon as the loop has ended (the refresher may be
 * waiting for an answer); fs_refresher_is(): whether a request comes
 * from it (ops.c takes those as no-ops); fs_refresher_main(): main() of
 * "flowfs --refresh-helper MOUNTPOINT MAJOR:MINOR".
 */
/*
 * The locks (struct flowfs).  fs_lock_read(): `lock` alone, for a request
 * that changes nothing stored; fs_lock_write(): write_lock then `lock`.
 * fs_unlock() lets go of what the thread holds.  A writer may call
 * fs_leave() to let go of `lock` for slow work and fs_enter() to take it
 * back, holding nothing from caches across.
 */
void fs_lock_read(struct flowfs *fs);
void fs_lock_write(struct flowfs *fs);
/* fs_lock_write() for a write to a file's data (tree_write()), which
 * gathers beside a spill on its way and waits for it itself: the write
 * after a spill does not wait for its commit. */
void fs_lock_gather(struct flowfs *fs);
void fs_unlock(struct flowfs *fs);
void fs_leave(struct flowfs *fs);
void fs_enter(struct flowfs *fs);
/* The same as callbacks (binding_ctx, tree_set_cutter()). */
void fs_leave_cb(void *fs);
void fs_enter_cb(void *fs);
/*
 * A connection of the reader pool for a read outside `lock`, or NULL when
 * all are in use or none can be opened (read under `lock` then);
 * fs_reader_put() gives it back; fs_readers_close() at the end.
 */
struct store *fs_reader_get(struct flowfs *fs);
void fs_reader_put(struct flowfs *fs, struct store *st);
void fs_readers_close(struct flowfs *fs);

/*
 * The spill thread, committing on fs->sst: fs_spiller_start() after the
 * cutter is set, fs_spiller_stop() once no request can come (it commits
 * a spill on its way first).  Both return 0 or a negative errno.
 */
int fs_spiller_start(struct flowfs *fs);
void fs_spiller_stop(struct flowfs *fs);

/* In a build with sanitizers: abort when a commit on `st` is made by a
 * thread that does not hold write_lock (locks.c); else nothing.  `fs`
 * NULL: no more (one thread again, after the loop). */
void fs_check_locks(struct flowfs *fs, struct store *st);

int fs_refresher_start(struct flowfs *fs);
void fs_refresh_session(void *ctx, int64_t session);
void fs_refresher_stop(struct flowfs *fs);
bool fs_refresher_is(struct flowfs *fs, pid_t pid);
int fs_refresher_main(int argc, char **argv);

/*
 * Add a line to the log of session `session` (0: the mount root's,
 * .flowfs/log), and echo it as "<name>/<path>: <message>" to stderr
 * (-f) or syslog.  `name`: the session's folder name ("" at the root).
 */
int fs_log(struct flowfs *fs, int64_t session, const char *name,
	   const char *path, const char *message);
/* Only the echo to stderr or syslog (a line whose store is the
 * caller's: fs_log_dropped()). */
void fs_log_echo(struct flowfs *fs, const char *name, const char *path,
		 const char *message);
/* Write what readers logged (fs_log() by a thread holding `lock` only):
 * the caller holds write_lock and `lock`.  fs_log_drop(): at the end. */
void fs_log_flush(struct flowfs *fs);
void fs_log_drop(struct flowfs *fs);
/* Whether the calling thread holds write_lock; `lock`. */
bool fs_holds_write(struct flowfs *fs);
bool fs_holds_lock(struct flowfs *fs);

/*
 * The disk's reserve (contents.h): a removal that failed with ENOSPC
 * spends it and tries again (true: there was one to spend); a write that
 * grows the store first makes it again (-ENOSPC when there is no room
 * for it: the disk is full).
 */
bool fs_spend_reserve(struct flowfs *fs);
int fs_room_to_grow(struct flowfs *fs);

/* After the loop: release what the kernel never released (see above). */
void fs_release_open_handles(struct flowfs *fs);

/* Cancel the run and the fetches of a session (the lock held; they end
 * on their own, a queued fetch at once); how many there were. */
size_t fs_cancel_runs(struct flowfs *fs, int64_t session);

/* The current tool map (never NULL: empty when the file is missing or
 * broken — then `err` says why, for .flowfs/config).  The file is read
 * again only when its time changed: a call costs a stat(). */
const struct graph_tools *fs_tools(struct flowfs *fs, struct ferr *err);

/* `a` for a render from `st` of session `s` (the caller holds `lock`;
 * outside it, the caller pins the tool map). */
void fs_alone_init(struct flowfs *fs, struct store *st,
		   const struct session_info *s, struct fs_alone *a);

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
	ENTRY_GENERATED,	/* rendered on each open; writes are dropped */
	ENTRY_CATALOG,		/* every known skill, read-only */
	ENTRY_CONTROL,		/* each line written is a command; reads empty */
	ENTRY_LINK,		/* a symlink: render gives its target */
	ENTRY_SNAPSHOTS,	/* a session's snapshots, by label (session.h) */
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
	fs_render_fn *render;
	/* Optional, for costly content with a version: the same render
	 * from what struct fs_alone holds, which a reader runs outside
	 * `lock` on a connection of its own (ops.c: cached_content()), with
	 * the entry's version(), which must then read nothing but the
	 * session and the tool map's time. */
	int (*render_alone)(const struct fs_alone *a, struct sbuf *out,
			    int64_t *mtime_ns);
	/* Optional, with render_alone, for a version that reads the
	 * database beyond the session (the job graph's states): version()
	 * read in the render's own transaction, so that the two are of one
	 * moment; version() still serves the lookups before a render. */
	int (*version_alone)(const struct fs_alone *a, int64_t version[4]);
	/* Validate and store a whole new document (DOC). */
	int (*commit)(struct flowfs *fs, const struct session_info *s,
		      const char *text, size_t len, struct ferr *err);
	/* Or, for a document that is slow to take in, the same done with
	 * the database and the tool map alone: run by the writer outside
	 * `lock`, on its own connection (see struct flowfs). */
	int (*commit_alone)(struct store *st, const struct graph_tools *tools,
			    int64_t session, const char *text, size_t len,
			    struct ferr *err);
	/* DOC: the document unlinking it leaves (it holds nothing then) */
	const char *cleared;
	/* Optional, for costly content: four numbers, cheap to get, that
	 * change whenever anything render reads does, so that one render
	 * serves until they move (the render cache, cache.h).  -ENOENT: not
	 * rendered now, ask render. */
	int (*version)(struct flowfs *fs, const struct session_info *s,
		       int64_t version[4]);
	/* Kept in the render cache however small: costly to render again
	 * (status; content under FS_RENDERED_MIN is otherwise not kept) */
	bool keep_small;
	/* found by its name, never listed: a copy of the folder (cp -a,
	 * rsync, tar, a file manager) does not go into it */
	bool hidden;
};

/*
 * A collection: a session folder whose "<id>.json" files are the
 * documents of a core store — nodes/ and edges/ (core/graph), rounds/
 * (core/roundstore).  The real folder underneath keeps every other name
 * (editors' scratch files).  The adapter treats all of them alike:
 * create(2) of <id>.json makes a draft, listed empty, which the first
 * valid close turns into the document (a refused or abandoned one is
 * dropped); a write is validated on flush, fsync and rename and refused
 * with a status line; unlink deletes; rename between two ids is the
 * store's rename; rename of a scratch file onto an id stores it; rename
 * of a document away leaves a copy and keeps the document.  Adding a
 * collection is adding a row to fs_collections[] (collections.c).
 */
struct fs_item {
	int64_t key;		/* unique in its collection and stable: the
				 * low bits of its inode number */
	int64_t session;
	char id[256];		/* its file is "<id>.json" */
	size_t size;		/* of its document; 0 for a draft */
	int64_t mtime_ns;
};

struct fs_collection {
	const char *folder;		/* its name in a session */
	enum session_folder tag;	/* the real folder's tree tag */
	/* The id a file name stands for, or false (a scratch file). */
	bool (*id_of)(const char *name, char *id, size_t size);
	int (*list)(struct flowfs *fs, int64_t session, struct fs_item **items,
		    size_t *n);
	/* by id in a session, or by key (any session); -ENOENT */
	int (*find)(struct flowfs *fs, int64_t session, const char *id,
		    struct fs_item *out);
	int (*get)(struct flowfs *fs, int64_t key, struct fs_item *out);
	/* the document as shown (empty for a draft) */
	int (*render)(struct flowfs *fs, const struct fs_item *item,
		      struct sbuf *out);
	/* -EEXIST when the id is taken */
	int (*create_draft)(struct flowfs *fs, int64_t session, const char *id,
			    int64_t *key);
	/* remove `key` if it is still a draft */
	int (*drop_draft)(struct flowfs *fs, int64_t key);
	/* validate and store; -EINVAL with err (nothing stored) */
	int (*commit)(struct flowfs *fs, int64_t session, const char *id,
		      const char *text, size_t len, struct ferr *err);
	/* -EBUSY with err for a node whose job has not ended */
	int (*remove)(struct flowfs *fs, int64_t session, const char *id,
		      struct ferr *err);
	int (*rename)(struct flowfs *fs, int64_t session, const char *from,
		      const char *to, bool replace, struct ferr *err);
};

extern const struct fs_collection fs_collections[];
extern const unsigned fs_collection_count;

/* The collection a real folder with tree tag `tag` shows, or -1. */
int fs_collection_of_tag(unsigned tag);

/* A command of a session's ctl file. */
struct fs_command {
	const char *name;
	int (*run)(struct flowfs *fs, const struct session_info *s,
		   struct ferr *err);
	/* a command with a name after it ("fork NEW"): the name, at most
	 * FS_COMMAND_ARG_MAX bytes, spaces around it dropped */
	int (*run_arg)(struct flowfs *fs, const struct session_info *s,
		       const char *arg, struct ferr *err);
};

#define FS_COMMAND_ARG_MAX 255

extern const struct fs_command fs_commands[];

/* Whether the last commands run by this thread want the kernel told of
 * what they changed before the write returns (fs_notify_settle()). */
bool fs_command_settle(void);

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
/* The folder a scope's entries are in, as a path in a session: "output/",
 * "parameters_output/", or "" (the session's own). */
const char *fs_scope_folder(enum entry_scope scope);
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

static inline uint64_t fs_catalog_ino(unsigned serial, size_t file)
{
	return FS_VIRTUAL | (uint64_t)FS_SPACE_CATALOG << FS_SPACE_SHIFT |
	       (uint64_t)serial << 16 | file;
}

static inline uint64_t fs_standin_ino(int64_t session, unsigned row)
{
	return FS_VIRTUAL | (uint64_t)FS_SPACE_STANDIN << FS_SPACE_SHIFT |
	       (uint64_t)session << 28 | row;
}

static inline uint64_t fs_item_ino(unsigned collection, int64_t key)
{
	return FS_VIRTUAL | (uint64_t)FS_SPACE_COLLECTION << FS_SPACE_SHIFT |
	       (uint64_t)collection << FS_COLLECTION_SHIFT |
	       ((uint64_t)key & FS_COLLECTION_KEY_MASK);
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
