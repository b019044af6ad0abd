/*
 * docs: written documents taken in whole: committed, refused with a line
 * in status, copied away, renamed onto; see ops_i.h.
 */

#include <errno.h>
#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "lib/fclock.h"
#include "lib/fname.h"
#include "ops_i.h"


/* The log line of a refused <folder>/<name> of a collection. */
void fs_log_item_refusal(struct flowfs *fs, const struct session_info *s,
			     const char *folder, const char *name,
			     const struct ferr *err)
{
	char path[STATUS_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", folder, name);
	fs_log_refusal(fs, s, path, err);
}

/* err's text for document `path`, into `line`: a message that names its
 * file already (rounds') says it once. */
static const char *refusal_text(const char *path, const struct ferr *err,
				char *line, size_t size)
{
	size_t len = strlen(path);

	ferr_format(err, line, size);
	if (!strncmp(line, path, len) && !strncmp(line + len, ": ", 2))
		return line + len + 2;
	return line;
}

int fs_log_refusal(struct flowfs *fs, const struct session_info *s,
		       const char *path, const struct ferr *err)
{
	char line[FERR_MESSAGE_MAX + 64];

	return fs_log(fs, s->id, s->name, path,
		      refusal_text(path, err, line, sizeof(line)));
}

void fs_forget_refusal(struct flowfs *fs, int64_t session,
		       const char *folder, const char *name)
{
	char path[STATUS_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", folder, name);
	session_refusal_clear(fs->st, session, path);
}

/* The path status names a document by ("session.json", "nodes/x.json"). */
void fs_target_path(const struct doc_target *t, char *buf, size_t size)
{
	if (t->in_collection)
		snprintf(buf, size, "%s/%s.json", fs_collections[t->coll].folder,
			 t->id);
	else
		snprintf(buf, size, "%s%s",
			 fs_scope_folder(fs_entries[t->row].scope),
			 fs_entries[t->row].name);
}

/*
 * A refused write of document `t` is state until the document is written
 * well or removed (session.h: refused writes): status names it, for the
 * writers that never see close()'s error (a shell's redirect).  A new
 * document of a collection that was refused was not made.
 */
static void note_refusal(struct flowfs *fs, const struct doc_target *t,
			 const char *path, const struct ferr *err)
{
	char line[FERR_MESSAGE_MAX + 64];
	struct fs_item item;
	bool made = t->in_collection &&
		    (fs_collections[t->coll].find(fs, t->session, t->id,
						  &item) < 0 || !item.size);

	session_refused(fs->st, t->session, path,
			refusal_text(path, err, line, sizeof(line)), made);
}

/* A document of `len` bytes for `t` refused: too big (EFBIG and the
 * log's line).  A write or truncate never gets a draft past it; a file
 * renamed onto a document could. */
static int refuse_too_big(struct flowfs *fs, const struct doc_target *t,
			  size_t len)
{
	struct ferr err = FERR_INIT;
	struct session_info s;
	char path[STATUS_PATH_MAX];
	int ret = session_get(fs->st, t->session, &s);

	if (ret < 0)
		return ret;
	ferr_set(&err, -EFBIG, "%zu bytes: a document holds at most %d MiB",
		 len, DOC_MAX_SIZE >> 20);
	fs_target_path(t, path, sizeof(path));
	fs_log_refusal(fs, &s, path, &err);
	note_refusal(fs, t, path, &err);
	return -EFBIG;
}

/*
 * A document whose entry commits it alone (struct entry): taken in by the
 * writer outside `lock`, on its own connection, so readers of every
 * session go on meanwhile (fs.h: the locks).  The caller holds both
 * locks; `text` is the caller's or a document handle's, which no other
 * writer can touch now.
 */
static int commit_alone(struct flowfs *fs, const struct doc_target *t,
			const char *text, size_t len, struct ferr *err)
{
	const struct graph_tools *tools = fs_tools(fs, NULL);
	int ret;

	/* parameters.json replaces the graph a run is running */
	ret = jobs_node_busy(fs->st, t->session, NULL, err);
	if (ret < 0)
		return ret;
	fs->toolfile.pins++;
	fs_leave(fs);
	ret = fs_entries[t->row].commit_alone(fs->wst, tools, t->session, text,
					      len, err);
	fs_enter(fs);
	fs->toolfile.pins--;
	return ret;
}

/* Validate and store a whole document; a refusal goes to status. */
int fs_commit_target(struct flowfs *fs, const struct doc_target *t,
			 const char *text, size_t len)
{
	struct ferr err = FERR_INIT;
	struct session_info s;
	char path[STATUS_PATH_MAX];
	int ret;

	if (len > DOC_MAX_SIZE)
		return refuse_too_big(fs, t, len);
	ret = session_get(fs->st, t->session, &s);
	if (ret < 0)
		return ret;
	if (t->in_collection)
		ret = fs_collections[t->coll].commit(fs, t->session, t->id, text,
						    len, &err);
	else if (fs_entries[t->row].commit_alone)
		ret = commit_alone(fs, t, text, len, &err);
	else
		ret = fs_entries[t->row].commit(fs, &s, text, len, &err);
	fs_target_path(t, path, sizeof(path));
	if (ret < 0 && err.message[0]) {
		fs_log_refusal(fs, &s, path, &err);
		note_refusal(fs, t, path, &err);
	} else if (!ret) {
		session_refusal_clear(fs->st, t->session, path);
		/* it wrote every node and edge file there is */
		if (!t->in_collection && !strcmp(path, "parameters.json"))
			session_refusal_clear_graph(fs->st, t->session);
	}
	return fs_changed_if(fs, t->session, ret);
}

/* The document a writer of node `n` (or of name `name` in folder `dir`)
 * writes to. */
void fs_node_target(const struct node *n, struct doc_target *t)
{
	memset(t, 0, sizeof(*t));
	t->session = n->s.id;
	if (n->type == N_ITEM) {
		t->in_collection = true;
		t->coll = n->coll;
		snprintf(t->id, sizeof(t->id), "%s", n->item.id);
	} else {
		t->row = n->row;
	}
}

/* Empty document `n` (moved to the trash, removed by rm): refused now
 * (a run is going on), EBUSY; the log says why. */
int fs_clear_doc(struct flowfs *fs, const struct node *n)
{
	const struct entry *e = &fs_entries[n->row];
	struct doc_target t;
	int ret;

	fs_node_target(n, &t);
	ret = fs_commit_target(fs, &t, e->cleared, strlen(e->cleared));
	return ret == -EINVAL ? -EBUSY : ret;
}

/* rename of a file onto a document (an editor's save, a file brought
 * back from the trash): store it, drop the file. */
int fs_rename_onto_doc(struct flowfs *fs, const struct node *p,
			   const char *name, const struct doc_target *t)
{
	struct sbuf text = SBUF_INIT;
	struct tree_attr src;
	int ret;

	ret = tree_lookup(fs->tree, p->ino, name, &src);
	if (ret < 0)
		goto out;
	if (!S_ISREG(src.mode)) {
		ret = S_ISDIR(src.mode) ? -EISDIR : -EINVAL;
		goto out;
	}
	/* not read in whole to learn that it is too big */
	if (src.size > DOC_MAX_SIZE) {
		ret = refuse_too_big(fs, t, (size_t)src.size);
		goto out;
	}
	ret = tree_read_all(fs->tree, &src, &text);
	if (ret < 0)
		goto out;
	ret = fs_commit_target(fs, t, text.buf, text.len);
	if (ret < 0)
		goto out;
	ret = tree_unlink(fs->tree, p->ino, name);
out:
	sbuf_release(&text);
	return ret;
}

/*
 * rename of a generated file or a document away: the new name gets a
 * copy, and the original stays (editors rename the original to a backup
 * before writing the new version; a node must not lose its edges over
 * it).  The kernel has moved the original's dentry to the new name: a
 * document's entry timeout of 0 makes the kernel look it up again before
 * any use, and the notifier makes it forget a generated file's (see
 * fs_entry_timeout()).
 */
int fs_copy_away(struct flowfs *fs, const struct node *n,
		     fuse_ino_t newparent, const char *newname)
{
	struct sbuf text = SBUF_INIT;
	struct node np;
	int64_t mtime;
	int ret;

	ret = fs_resolve(fs, newparent, &np);
	if (ret < 0)
		return ret;
	if (np.type != N_REAL)
		return np.type == N_ROOT ? -EPERM : -EROFS;
	if (fs_reserved_row(fs, &np, newname) >= 0 || fs_is_item_name(&np, newname))
		return -EEXIST;
	ret = fname_check_entry(newname, NULL);
	if (ret < 0)
		return ret;
	ret = fs_render_entry(fs, n, &text, &mtime);
	/* whole or not at all, over what had the name (not a folder:
	 * -EISDIR) */
	if (!ret)
		ret = tree_put_file(fs->tree, newparent, newname, text.buf,
				    text.len, NULL);
	if (!ret)
		fs_notify_entry(fs->notifier, newparent, newname);
	sbuf_release(&text);
	return ret;
}

/* Whether folder `np` is outside session `s` (another's, a trash). */
bool fs_moves_out(const struct session_info *s, const struct node *np)
{
	return np->type == N_REAL && np->attr.session != s->id;
}

/* Commit a written document (close, fsync); refusals go to status. */
int fs_flush_doc(struct flowfs *fs, struct handle *h, bool durable)
{
	int ret = 0;

	/* A refused draft stays refused, reported once in status. */
	if (h->refused)
		return -EINVAL;
	if (h->dirty) {
		ret = fs_commit_target(fs, &h->target, h->content.buf,
				    h->content.len);
		h->refused = ret == -EINVAL;
		/* A refusal is final, so a refused new document goes now,
		 * not at RELEASE: the kernel sends that after close() has
		 * returned, and a listing right after the failed close
		 * would still show the draft. */
		if (h->refused && h->owns_draft) {
			fs_collections[h->target.coll].drop_draft(fs,
								  h->item_key);
			h->owns_draft = false;
		}
		if (ret < 0)
			return ret;
		h->dirty = false;
		h->owns_draft = false;
	}
	if (durable)
		ret = store_sync(fs->st);
	return ret;
}
