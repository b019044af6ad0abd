/*
 * session: the sessions of a store — one folder each at the mount's root —
 * with their session.json document and their status log.
 *
 * ---- Identity ----
 * A session has a stable numeric id (never reused; inode numbers of its
 * generated files derive from it), a name (the folder name, which is the
 * "id" field of session.json, and follows renames), a creation time, a
 * title, and two rows of the tree: its root folder and its uploads/.
 *
 * ---- session.json ----
 * session.json is rendered byte-identical to Python's
 * json.dumps({"id", "created", "skill", "engine", "title"}, indent=2,
 * ensure_ascii=False); skill and engine are null while no skill is bound.
 * session_commit_json() takes a whole new document: "title" (a string,
 * "" when absent) is stored; "skill" binds a skill of the registry (null
 * unbinds; an id it does not know makes it scan its folders once more,
 * for a skill installed since); "engine" must be one of the skill's engines (absent: its
 * first; `reg` may be NULL: no skill is known); "id" and "created"
 * may be present, as strings, and are not used (they are the session's:
 * a copy of another session's document binds its skill all the same);
 * anything else is refused with -EINVAL and a message (with line
 * and column for syntax errors) — the stored document is left as it was.
 *
 * ---- request.json ----
 * request.json ({"input": {...}, "parameter": {...}}) is stored as the
 * writer gave it (re-serialized), once inputs_check_request() accepts it
 * for the bound skill; with no skill bound, for its shape (files of a
 * copied session come back in any order: the request may come first).
 *
 * ---- The log ----
 * The log keeps what was refused and what happened to a session (runs,
 * fetches) as "<UTC time> <path>: <message>" lines, the last
 * SESSION_LOG_KEEP; the mount root has a log of its own (session id 0).
 *
 * Not thread-safe; the caller serializes (see store.h).
 */
#ifndef FLOWFS_SESSION_H
#define FLOWFS_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "session/skill.h"
#include "store/store.h"
#include "store/tree.h"

#define SESSION_LOG_KEEP 500
/* A logged message is cut there (at a character); a path too. */
#define SESSION_LOG_MESSAGE_MAX 1024

struct session_info {
	int64_t id;
	/* its folder's name; in a trash, the folder's path from the mount's
	 * root (".Trash-1000/files/s1") */
	char name[1024];
	bool trashed;
	int64_t created_ns;
	int64_t doc_mtime_ns;	/* last change of session.json's content */
	int64_t request_mtime_ns; /* last change of request.json; 0: none */
	uint64_t root_ino;
	uint64_t uploads_ino;
	uint64_t output_ino;
	uint64_t nodes_ino;
	uint64_t edges_ino;
	uint64_t rounds_ino;
	uint64_t jobs_ino;
	/* the session folder's owner: what its generated files show */
	uint32_t uid, gid;
	/* the last change of its graph and of its rounds (0: never), as
	 * graph_mtime() and roundstore_mtime() give them */
	int64_t graph_mtime_ns;
	int64_t rounds_mtime_ns;
	char skill[256];	/* "" when no skill is bound */
	char engine[256];
	/* a snapshot (read-only): the session it keeps; 0 for a session */
	int64_t snapshot_of;
};

/* The real folders every session has; their rows carry the value as
 * their tree tag (tree_attr.tag). */
enum session_folder {
	SESSION_UPLOADS = 1,
	SESSION_OUTPUT = 2,
	SESSION_NODES = 3,	/* scratch files beside the graph's nodes */
	SESSION_EDGES = 4,
	SESSION_ROUNDS = 5,	/* scratch files beside rounds/<n>.json */
	SESSION_JOBS = 6,	/* what the job graph's jobs left (jobs.h) */
};

struct session_list {
	struct session_info *items;
	size_t n;
};

/* Create session `name` (checked with fname_check_session): -EEXIST. */
int session_create(struct store *st, struct tree *t, const char *name,
		   uint32_t mode, uint32_t uid, uint32_t gid,
		   struct session_info *out, struct ferr *err);

int session_find(struct store *st, const char *name, struct session_info *out);
int session_get(struct store *st, int64_t id, struct session_info *out);
/* Every session, by name; free with session_list_free(). */
int session_list(struct store *st, struct session_list *out);
void session_list_free(struct session_list *list);
int session_count(struct store *st, int64_t *count);

/*
 * rename(2) of session `src`'s folder into folder `parent` of a trash as
 * `to` (-EEXIST when taken, whatever `noreplace` says: a trash's names
 * are its writer's to choose), or with parent 0 to the mount's root, out
 * of a trash too, where an existing session `to` is replaced when it
 * holds no user data (-ENOTEMPTY otherwise, -EEXIST with `noreplace`).
 * A session in a trash keeps
 * everything it holds; it is not listed at the root, its name is free
 * there, and session_info.name is its folder's path (.Trash-1000/files/x).
 */
int session_move(struct store *st, struct tree *t,
		 const struct session_info *src, uint64_t parent,
		 const char *to, bool noreplace, struct ferr *err);

/* Delete the session and everything in it. */
int session_delete(struct store *st, struct tree *t, int64_t id);

/*
 * A new session `name` holding everything `src` holds — its documents
 * (request, context, title, binding), its folders and files, its graph
 * and rounds — and none of its runs or jobs (jobs/ is empty).  Files are
 * copied as rows; the data files of large ones are shared, counted and
 * copied on the first write to either side, so a fork costs the rows,
 * not the bytes.  -EEXIST when the name is taken, -EINVAL for a bad
 * name, with the reason in `err`.
 */
int session_fork(struct store *st, struct tree *t,
		 const struct session_info *src, const char *name,
		 struct session_info *out, struct ferr *err);

/*
 * Snapshots.  A snapshot keeps a session as it was: a session of its own
 * (its id, its copy of the rows, data files shared as a fork's), hidden
 * from the root (named '/' and its id), known by the session it keeps
 * and a label; its name for logs is "SESSION/.snapshots/LABEL".  It
 * holds jobs/ too, and the template id.  A session with snapshots cannot
 * be removed (session_has_data()) until they are.
 *
 * session_snapshot(): -EEXIST for a label taken, -EINVAL for a bad one
 * (a session's name rules, no '/').  session_find_snapshot() by label
 * (-ENOENT); session_list_snapshots(): the snapshots of session `of` in
 * label order, and their labels (a NULL-ended array; free both).
 * session_restore(): what `s` holds becomes what snapshot `label` holds,
 * in one transaction; what it held is kept first as a snapshot labelled
 * "before-restore-<UTC time>", whose label goes to `kept`.  The session
 * keeps its id, name and place; its root folder is a new row (the
 * caller tells the kernel).  The caller refuses it while a run goes on.
 */
int session_snapshot(struct store *st, struct tree *t,
		     const struct session_info *src, const char *label,
		     struct ferr *err);
bool session_is_snapshot(struct store *st, int64_t id);
/* For status.json: the session's snapshots, [{"label", "taken" (UTC,
 * ISO 8601)}] oldest first, and the name of the session it was forked
 * from (NULL: it was not). */
int session_copies_report(struct store *st, int64_t id, json_t **snapshots,
			  json_t **fork_of);
/* Whether the session's engine run goes on (its row says so). */
int session_running(struct store *st, int64_t id, bool *running);
int session_find_snapshot(struct store *st, int64_t of, const char *label,
			  struct session_info *out);
int session_list_snapshots(struct store *st, int64_t of,
			   struct session_list *out, char ***labels);
void session_labels_free(char **labels);
int session_restore(struct store *st, struct tree *t,
		    const struct session_info *s, const char *label,
		    char *kept, size_t kept_size, struct ferr *err);

/* Whether the session holds user data: anything in uploads/, scratch
 * files, nodes or edges of its graph. */
int session_has_data(struct store *st, struct tree *t,
		     const struct session_info *s, bool *has);

/* The inode number of one of the session's folders. */
uint64_t session_folder_ino(const struct session_info *s,
			    enum session_folder which);

/*
 * mv of the session's uploads/ or output/ into folder `parent` of a
 * trash as `name` (a file manager's Delete of it): what it holds goes
 * there as a plain folder, and the session has a new, empty one, in one
 * transaction.  -EEXIST when the name is taken there.
 */
int session_trash_folder(struct store *st, struct tree *t,
			 struct session_info *s, enum session_folder which,
			 uint64_t parent, const char *name);

/* rmdir of a session folder: an empty one is replaced by a fresh one,
 * in one transaction (-ENOTEMPTY when it is not empty). */
int session_renew_folder(struct store *st, struct tree *t,
			 struct session_info *s, enum session_folder which);

int session_render_json(struct store *st, const struct session_info *s,
			struct sbuf *out);
int session_commit_json(struct store *st, const struct session_info *s,
			struct skill_registry *reg, const char *text,
			size_t len, struct ferr *err);

/* The stored request (a new reference), or NULL in *out when none. */
int session_load_request(struct store *st, const struct session_info *s,
			 json_t **out);
/* request.json as shown: the stored one, or an empty request. */
int session_render_request(struct store *st, const struct session_info *s,
			   struct sbuf *out);
/*
 * `extra`, when not NULL, adds a skill's own checks after the protocol's
 * (binding_check_request).
 */
int session_commit_request(struct store *st, const struct session_info *s,
			   const struct skill *sk,
			   int (*extra)(const struct skill *sk,
					const json_t *request, struct ferr *err),
			   const char *text, size_t len, struct ferr *err);

/*
 * context.json (seed 003): the stored structured context as written (the
 * key order kept), or `null` while there is none.  A write is checked by
 * context_check() (a legacy assistant message is converted first);
 * writing `null` removes the context.  *mtime_ns: its last change (the
 * session's creation while it never had one).
 */
int session_render_context(struct store *st, const struct session_info *s,
			   struct sbuf *out, int64_t *mtime_ns);
int session_commit_context(struct store *st, const struct session_info *s,
			   const char *text, size_t len, struct ferr *err);
/* context.txt: the readable rendering (a line saying there is none). */
int session_render_context_text(struct store *st, const struct session_info *s,
				struct sbuf *out, int64_t *mtime_ns);

/*
 * Add a line to the log of session `id` (0: the mount root's), dropping
 * the oldest beyond SESSION_LOG_KEEP.  `path` and `message` are kept as
 * session_log_text() gives them.
 */
/* `text` as a log keeps it (malloc'd; NULL: no memory): control
 * characters (line breaks, a terminal's escapes) escaped as fname_escape()
 * does, so one event is one line and says nothing to a terminal, and cut
 * at SESSION_LOG_MESSAGE_MAX bytes, at a character or escape. */
char *session_log_text(const char *text);

/*
 * Refused writes are state: the last refused write of each document of
 * a session (`path` as status names it: "request.json", "nodes/x.json"),
 * kept until that document is written well or removed.  `made`: the
 * write was to make a new file, which was not made.  At most
 * SESSION_REFUSALS_KEEP per session, the oldest dropped.
 * session_refusal_lines() appends status's line for each, oldest first:
 *   "request.json: your last write was refused: <why>; the file still
 *    holds the earlier version" (or "; the file was not made").
 * 0, or a negative errno.
 */
#define SESSION_REFUSALS_KEEP 100

int session_refused(struct store *st, int64_t session, const char *path,
		    const char *message, bool made);
int session_refusal_clear(struct store *st, int64_t session,
			  const char *path);
/* parameters.json was written well: it wrote every node and edge file
 * of the graph anew, so their refusals end (those of files it did not
 * make stay). */
int session_refusal_clear_graph(struct store *st, int64_t session);
int session_refusal_lines(struct store *st, int64_t session,
			  struct sbuf *out);

int session_log(struct store *st, int64_t id, const char *path,
		const char *message);
/* The same with the time it happened (session_log(): now). */
int session_log_at(struct store *st, int64_t id, const char *path,
		   const char *message, int64_t at_ns);
/*
 * A line that may come to stand for more than one event (the files of a
 * copy whose written bytes were dropped): session_log_row() adds it to
 * session `id`'s log (not the root's: -EINVAL) and sets *row to its id;
 * session_log_rewrite_last() gives line `row` a new path and message,
 * its time kept, while it is still the last line of that session's log:
 * 1 when it did, 0 when another line came after it (or it is gone), or
 * a negative errno.
 */
int session_log_row(struct store *st, int64_t id, const char *path,
		    const char *message, int64_t *row);
int session_log_rewrite_last(struct store *st, int64_t id, int64_t row,
			     const char *path, const char *message);
/*
 * The log of session `id` (0: the mount root's), oldest first, one
 * "<UTC time> <path>: <message>\n" each; *mtime_ns: the last line's time
 * (0 for an empty log).
 */
int session_render_log(struct store *st, int64_t id, struct sbuf *out,
		       int64_t *mtime_ns);

/* "2026-11-21T08:45:59Z" for a time in ns; `buf` holds at least 32. */
const char *session_format_time(int64_t ns, char *buf, size_t size);

#endif
