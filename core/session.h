/*
 * session: the sessions of a store — one folder each at the mount's root —
 * with their session.json document and their status log.
 *
 * A session has a stable numeric id (never reused; inode numbers of its
 * generated files derive from it), a name (the folder name, which is the
 * "id" field of session.json, and follows renames), a creation time, a
 * title, and two rows of the tree: its root folder and its uploads/.
 *
 * session.json is rendered byte-identical to Python's
 * json.dumps({"id", "created", "title"}, indent=2, ensure_ascii=False).
 * session_commit_json() takes a whole new document: "title" (a string,
 * "" when absent) is stored; "id" and "created" may be present only with
 * their current values; anything else is refused with -EINVAL and a
 * message (with line and column for syntax errors) — the stored document
 * is left as it was.
 *
 * The status log keeps the last SESSION_LOG_KEEP refused writes of a
 * session as "<UTC time> <path>: <message>" lines.
 *
 * Not thread-safe; the caller serializes (see store.h).
 */
#ifndef FLOWFS_SESSION_H
#define FLOWFS_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ferr.h"
#include "sbuf.h"
#include "store.h"
#include "tree.h"

#define SESSION_LOG_KEEP 50

struct session_info {
	int64_t id;
	char name[256];
	int64_t created_ns;
	int64_t doc_mtime_ns;	/* last change of session.json's content */
	uint64_t root_ino;
	uint64_t uploads_ino;
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
 * rename(2) of a session folder.  An existing target is replaced when it
 * holds no user data (-ENOTEMPTY otherwise, -EEXIST with `noreplace`).
 */
int session_rename(struct store *st, struct tree *t, const char *from,
		   const char *to, bool noreplace, struct ferr *err);

/* Delete the session and everything in it. */
int session_delete(struct store *st, struct tree *t, int64_t id);

/* Whether the session holds user data (anything in uploads/, scratch). */
int session_has_data(struct store *st, struct tree *t,
		     const struct session_info *s, bool *has);

/* Replace an (empty) uploads/ folder by a fresh one (after its rmdir). */
int session_renew_uploads(struct store *st, struct tree *t,
			  struct session_info *s);

int session_render_json(struct store *st, const struct session_info *s,
			struct sbuf *out);
int session_commit_json(struct store *st, const struct session_info *s,
			const char *text, size_t len, struct ferr *err);

/* Add a refused write to the status log (keeps the last 50). */
int session_log(struct store *st, int64_t id, const char *path,
		const char *message);
/* The status file; `mtime_ns` gets the time of its last change. */
int session_render_status(struct store *st, const struct session_info *s,
			  struct sbuf *out, int64_t *mtime_ns);

/* "2026-11-21T08:45:59Z" for a time in ns; `buf` holds at least 32. */
const char *session_format_time(int64_t ns, char *buf, size_t size);

#endif
