/*
 * ops_name: the operations that make, remove and rename names (mkdir,
 * mknod, symlink, link, unlink, rmdir, rename); see ops_i.h.
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


static int refuse_at_root(struct flowfs *fs, int code, const char *name,
			  const char *fmt, ...)
{
	char message[FERR_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(message, sizeof(message), fmt, ap);
	va_end(ap);
	fs_log(fs, 0, "", name, message);
	return code;
}

/* Check that `name` may be created in folder `p`; 0 or -errno (EROFS in
 * flowfs's own folders). */
static int may_create(struct flowfs *fs, const struct node *p,
		      const char *name)
{
	int ret;

	if (p->type == N_ENTRY || p->type == N_VIEW)
		return -EROFS;
	if (fs_reserved_row(fs, p, name) >= 0)
		return -EEXIST;
	if (p->type == N_ROOT) {
		struct ferr err = FERR_INIT;

		ret = fname_check_session(name, &err);
		return ret < 0 ? refuse_at_root(fs, ret, name, "not a session"
						" name: %s", err.message) : 0;
	}
	ret = fname_check_entry(name, NULL);
	/* <id>.json in nodes/, edges/, rounds/ is a document, created by
	 * open */
	if (!ret && fs_is_item_name(p, name))
		ret = -EINVAL;
	return ret;
}

/*
 * The freedesktop.org trash folders a caller may make at the root: .Trash
 * (shared; an administrator gives it the sticky bit) and .Trash-<uid>,
 * the caller's own.
 */
static int trash_name_ok(struct flowfs *fs, fuse_req_t req, const char *name)
{
	char own[32];

	snprintf(own, sizeof(own), ".Trash-%u",
		 (unsigned)fuse_req_ctx(req)->uid);
	if (!strcmp(name, ".Trash") || !strcmp(name, own))
		return 0;
	return refuse_at_root(fs, -EPERM, name, "the only trash folders here"
			      " are .Trash and one's own, %s", own);
}

/* The node of a row just made: a new row has no session's folders in it
 * (fs_resolve() of it, without reading it back). */
static void new_real_node(const struct tree_attr *a, struct node *n)
{
	memset(n, 0, sizeof(*n));
	n->type = N_REAL;
	n->ino = a->ino;
	n->attr = *a;
}

/*
 * mkdir, mknod (type S_IFREG) and symlink (S_IFLNK, `target`) of `name`
 * in folder `p`: a session or a trash folder at the root, a reserved name
 * of a session (above), or a row of the tree; *n and *e: what it made.
 */
int fs_make(struct flowfs *fs, fuse_req_t req, const struct node *p,
		const char *name, mode_t mode, const char *target,
		struct node *n, struct fuse_entry_param *e)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct session_info s;
	struct tree_attr a;
	int row, ret;

	/* a snapshot takes nothing new */
	if (fs_frozen(fs, p))
		return -EROFS;
	row = fs_session_row(fs, p, name);
	if (row >= 0) {
		ret = fs_make_reserved(fs, req, p, name, row, mode & S_IFMT,
				    target, n);
		return ret < 0 ? ret : fs_fill_made_entry(fs, p, n, true, e);
	}
	/* The root holds sessions only, and the trash folders. */
	if (p->type == N_ROOT && !S_ISDIR(mode))
		return refuse_at_root(fs, -EPERM, name, "only sessions live at"
				      " the root, one folder each: %s cannot be"
				      " made here (mkdir makes a session)",
				      S_ISLNK(mode) ? "a symlink" : "a file");
	if (p->type == N_ROOT && !strncmp(name, ".Trash", 6)) {
		ret = trash_name_ok(fs, req, name);
		if (!ret)
			ret = tree_trash_create(fs->tree, name, mode, ctx->uid,
						ctx->gid, &a);
		if (ret < 0)
			return ret;
		new_real_node(&a, n);
		return fs_fill_entry(fs, p, n, e);
	}
	ret = may_create(fs, p, name);
	if (ret < 0)
		return ret;
	if (p->type == N_ROOT) {
		ret = session_create(fs->st, fs->tree, name, mode, ctx->uid,
				     ctx->gid, &s, NULL);
		if (!ret)
			ret = fs_resolve_session_root(fs, &s, n);
		return ret < 0 ? ret : fs_fill_entry(fs, p, n, e);
	}
	ret = tree_create(fs->tree, p->ino, name, S_ISDIR(mode)
			  ? S_IFDIR | (mode & 07777) : mode, ctx->uid, ctx->gid,
			  target, &a);
	if (ret < 0)
		return ret;
	fs_changed(fs, fs_session_of(p));
	new_real_node(&a, n);
	return fs_fill_entry(fs, p, n, e);
}

/* fs_make() in folder `parent`, replied to. */
static void make_in(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, const char *target)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct node p, n;
	int ret;

	fs_lock_write(fs);
	ret = fs_resolve(fs, parent, &p);
	if (!ret)
		ret = fs_make(fs, req, &p, name, mode, target, &n, &e);
	/* made: no reference counted is the old behaviour, not a failure */
	if (!ret)
		fs_entry_given(fs, e.ino);
	fs_unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) < 0)
		fs_entry_not_taken(fs, e.ino);
}

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_in(req, parent, name, S_IFDIR | mode, NULL);
}

void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)rdev;
	if (!S_ISREG(mode))
		fuse_reply_err(req, EPERM);
	else
		make_in(req, parent, name, mode, NULL);
}

void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (strlen(link) >= 4096)
		fuse_reply_err(req, ENAMETOOLONG);
	else
		make_in(req, parent, name, S_IFLNK | 0777, link);
}

void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	/* Rows have one name each; tools fall back to copying. */
	fuse_reply_err(req, EPERM);
}

/* unlink(2) of `name` in `parent`, the write lock held. */
static int unlink_in(struct flowfs *fs, fuse_req_t req, fuse_ino_t parent,
		     const char *name)
{
	struct node p;
	char id[256];
	int row, coll, ret;

	ret = fs_resolve(fs, parent, &p);
	row = ret < 0 ? -1 : fs_session_row(fs, &p, name);
	if (row >= 0) {
		/* it says itself when it changed something */
		ret = fs_remove_reserved(fs, req, &p, name, row, false);
		goto reply;
	}
	if (!ret && p.type == N_ROOT) {
		struct session_info s;

		ret = fs_reserved_row(fs, &p, name) >= 0 ? -EROFS
			: session_find(fs->st, name, &s) < 0 ? -ENOENT : -EISDIR;
		goto out;
	}
	if (!ret && (p.type == N_ENTRY || p.type == N_VIEW))
		ret = -EROFS;
	if (ret < 0)
		goto out;
	coll = fs_item_name(&p, name, id, sizeof(id));
	if (coll >= 0) {
		struct ferr err = FERR_INIT;

		ret = fs_collections[coll].remove(fs, p.attr.session, id, &err);
		if (ret < 0 && err.message[0])
			fs_log_item_refusal(fs, &p.s, fs_collections[coll].folder,
					 name, &err);
		/* removed: its refused write is no problem any more (nor is
		 * the refused new file, even when the removal found none) */
		if (!ret || ret == -ENOENT)
			fs_forget_refusal(fs, p.attr.session,
					  fs_collections[coll].folder, name);
		goto out;
	}
	ret = tree_unlink(fs->tree, parent, name);
out:
	if (!ret)
		fs_changed(fs, fs_session_of(&p));
reply:
	return ret;
}

void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	int ret;

	fs_lock_write(fs);
	ret = unlink_in(fs, req, parent, name);
	/* on a full disk the reserve lets it write the log (contents.h) */
	if (ret == -ENOSPC && fs_spend_reserve(fs))
		ret = unlink_in(fs, req, parent, name);
	fs_unlock(fs);
	fuse_reply_err(req, -ret);
}

/* rmdir of session `s`'s folder (at the root, or in a trash): only an
 * empty one goes; what was running for it has nothing to write to. */
static int remove_session(struct flowfs *fs, const struct session_info *s)
{
	bool has;
	int ret = session_has_data(fs->st, fs->tree, s, &has);

	if (!ret && has)
		ret = refuse_at_root(fs, -ENOTEMPTY, s->name, "the session"
				     " holds files, a job graph, a context or"
				     " rounds (rm -rf removes it all), or"
				     " snapshots (rm -rf S/.snapshots/*"
				     " removes them)");
	/* before the rows that know the jobs go with the session */
	if (!ret && fs->jobs)
		jobs_cancel(fs->jobs, s->id);
	if (!ret)
		ret = session_delete(fs->st, fs->tree, s->id);
	if (!ret) {
		fs_cancel_runs(fs, s->id);
		fs_cache_forget(&fs->cache, s->id);
	}
	return ret;
}

/* rmdir(2) of `name` in `parent`, the write lock held. */
static int rmdir_in(struct flowfs *fs, fuse_req_t req, fuse_ino_t parent,
		    const char *name)
{
	struct session_info s;
	struct node p, n;
	int row, ret;

	ret = fs_resolve(fs, parent, &p);
	row = ret < 0 ? -1 : fs_session_row(fs, &p, name);
	if (row >= 0) {
		/* it says itself when it changed something */
		ret = fs_remove_reserved(fs, req, &p, name, row, true);
		goto reply;
	}
	if (!ret && p.type == N_ROOT) {
		if (fs_reserved_row(fs, &p, name) >= 0)
			ret = -EROFS;
		else if (session_find(fs->st, name, &s) == 0)
			ret = remove_session(fs, &s);
		else
			ret = tree_trash_remove(fs->tree, name);
		goto out;
	}
	/* a snapshot goes whole (like ZFS's rmdir in .zfs/snapshot) */
	if (!ret && p.type == N_ENTRY &&
	    fs_entries[p.row].kind == ENTRY_SNAPSHOTS) {
		ret = session_find_snapshot(fs->st, p.s.id, name, &s);
		if (!ret)
			ret = session_delete(fs->st, fs->tree, s.id);
		goto out;
	}
	if (!ret && (p.type == N_ENTRY || p.type == N_VIEW))
		ret = -EROFS;
	/* a session in a trash (emptying it) */
	if (!ret && fs_in_trash(&p) && fs_lookup_in(fs, &p, name, &n) == 0 &&
	    fs_resolve(fs, n.ino, &n) == 0 && fs_is_session_root(&n)) {
		ret = remove_session(fs, &n.s);
		goto out;
	}
	if (!ret)
		ret = tree_rmdir(fs->tree, parent, name);
out:
	if (!ret)
		fs_changed(fs, fs_session_of(&p));
reply:
	return ret;
}

void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	int ret;

	fs_lock_write(fs);
	ret = rmdir_in(fs, req, parent, name);
	if (ret == -ENOSPC && fs_spend_reserve(fs))
		ret = rmdir_in(fs, req, parent, name);
	fs_unlock(fs);
	fuse_reply_err(req, -ret);
}

/* rename of a reserved name away (see copy_away); in parameters_output/
 * to another name there, nothing happens: a sink made there (rsync's
 * temporary file) is renamed to the name it copies. */
static int rename_from_entry(struct flowfs *fs, const struct node *p,
			     const char *name, int row, const struct node *np,
			     const char *newname)
{
	struct node n;
	int ret;

	if (fs_is_paramout(p) && fs_is_paramout(np))
		return 0;
	/* uploads/ or output/ into the trash (Delete on it in a file
	 * manager, which would otherwise offer to delete it for good): its
	 * files go there, the session gets an empty one */
	if (fs_entries[row].kind == ENTRY_FOLDER && fs_in_trash(np) &&
	    (fs_entries[row].folder == SESSION_UPLOADS ||
	     fs_entries[row].folder == SESSION_OUTPUT)) {
		struct session_info s = p->s;

		return session_trash_folder(fs->st, fs->tree, &s,
					    fs_entries[row].folder, np->ino,
					    newname);
	}
	if (fs_entries[row].kind != ENTRY_DOC &&
	    fs_entries[row].kind != ENTRY_GENERATED)
		return -EPERM;
	ret = fs_made_node(fs, p, (unsigned)row, name, &n);
	if (!ret && n.nominal)
		ret = -ENOENT;
	if (!ret)
		ret = fs_copy_away(fs, &n, np->ino, newname);
	/* moved out of its session (to the trash): a document goes with
	 * it, as it would with unlink; kept, the copy goes */
	if (!ret && fs_moves_out(&n.s, np) && fs_entries[row].kind == ENTRY_DOC) {
		ret = fs_clear_doc(fs, &n);
		if (ret < 0)
			tree_unlink(fs->tree, np->ino, newname);
	}
	return ret;
}

/* What generated entry `n` holds now ("" when it is not there; any name
 * in parameters_output/: its one file). */
static int made_content(struct flowfs *fs, const struct node *n,
			struct sbuf *out)
{
	int64_t mtime;
	int ret = n->standin ? 0 : fs_render_entry(fs, n, out, &mtime);

	return ret == -ENOENT ? 0 : ret;
}

/* Whether file `src` holds `bytes` (read only when the sizes agree). */
int fs_file_holds(struct flowfs *fs, const struct tree_attr *src,
		 const struct sbuf *bytes, bool *same)
{
	struct sbuf text = SBUF_INIT;
	int ret = 0;

	*same = (size_t)src->size == bytes->len;
	if (*same)
		ret = S_ISLNK(src->mode) ? tree_readlink(fs->tree, src->ino, &text)
					 : tree_read_all(fs->tree, src, &text);
	if (*same && !ret)
		*same = text.len == bytes->len &&
			!memcmp(text.buf, bytes->buf, text.len);
	/* too large to hold: not what a generated file holds */
	if (ret == -EFBIG) {
		*same = false;
		ret = 0;
	}
	sbuf_release(&text);
	return ret;
}

/*
 * rename of a file onto a name flowfs makes (a generated file, a link,
 * ctl, any name in parameters_output/), from the same folder: the file
 * goes, and what it held is dropped, as what is written to such a name
 * is (reserved names) — rsync -a brings a copy of status back that way,
 * through a temporary file beside it.  From elsewhere (mv of a deck in
 * uploads/ onto output/for005.dat) only a file holding what the name
 * does (a copy from the trash) may go: anything else would be lost.
 */
static int rename_onto_made(struct flowfs *fs, const struct node *p,
			    const char *name, const struct node *np,
			    const char *newname, int newrow)
{
	struct sbuf now = SBUF_INIT;
	char path[STATUS_PATH_MAX];
	struct tree_attr src;
	struct node n;
	bool same = false;
	int ret;

	ret = tree_lookup(fs->tree, p->ino, name, &src);
	if (!ret && S_ISDIR(src.mode))
		ret = -ENOTDIR;
	if (!ret)
		ret = fs_made_node(fs, np, (unsigned)newrow, newname, &n);
	if (!ret)
		ret = made_content(fs, &n, &now);
	if (!ret)
		ret = fs_file_holds(fs, &src, &now, &same);
	if (ret < 0)
		goto out;
	fs_session_path(np, newname, path, sizeof(path));
	if (!same && p->ino != np->ino) {
		ret = -EACCES;
		fs_log(fs, n.s.id, n.s.name, path, "flowfs makes this file: a"
		       " file moved onto it from another folder is refused"
		       " (what it holds would be lost)");
		goto out;
	}
	ret = tree_unlink(fs->tree, p->ino, name);
	if (ret < 0)
		goto out;
	if (!same && src.size)
		fs_log_dropped(fs, &n, path, (size_t)src.size, "moved onto");
	/* the kernel moved the file's name there: it must forget it */
	fs_notify_entry(fs->notifier, np->ino, newname);
out:
	sbuf_release(&now);
	return ret;
}

/*
 * mv of session `s` to `newname` at the root (out of a trash too), or
 * into trash folder `np` (the freedesktop.org trash: gio trash, a file
 * manager's Delete).  A session it replaces at the root has its runs
 * cancelled, as rmdir does; so does one moved into a trash.
 */
static int move_session(struct flowfs *fs, const struct session_info *s,
			const struct node *np, const char *newname,
			bool noreplace)
{
	struct session_info old;
	bool to_root = np->type == N_ROOT;
	bool replaces = to_root && !noreplace &&
			session_find(fs->st, newname, &old) == 0 &&
			old.id != s->id;
	struct ferr err = FERR_INIT;
	int ret;

	/* the replaced session's rows go with it: its jobs stop first */
	if (replaces && fs->jobs)
		jobs_cancel(fs->jobs, old.id);
	ret = session_move(fs->st, fs->tree, s, to_root ? 0 : np->ino,
			   newname, noreplace, &err);

	if (ret < 0 && err.message[0])
		refuse_at_root(fs, ret, newname, "%s", err.message);
	if (!ret && replaces)
		fs_cancel_runs(fs, old.id);
	if (!ret && !to_root)
		fs_cancel_runs(fs, s->id);
	return ret;
}

/*
 * rename where the root is at either end: of a session (to another name,
 * into a trash, back from one); of a trash folder itself or .flowfs/, no.
 */
static int rename_at_root(struct flowfs *fs, const struct node *p,
			  const char *name, const struct node *np,
			  const char *newname, bool noreplace)
{
	struct session_info s;
	struct node n;
	int ret;

	if ((p->type == N_ROOT && fs_reserved_row(fs, p, name) >= 0) ||
	    (np->type == N_ROOT && fs_reserved_row(fs, np, newname) >= 0))
		return -EROFS;
	if (p->type == N_ROOT) {
		if (session_find(fs->st, name, &s) < 0)
			return tree_trash_lookup(fs->tree, name, &n.attr) == 0
				       ? refuse_at_root(fs, -EPERM, name,
						"a trash folder stays where it is")
				       : -ENOENT;
		if (np->type == N_ROOT || fs_in_trash(np))
			return move_session(fs, &s, np, newname, noreplace);
		return refuse_at_root(fs, -EXDEV, name, "a session folder moves"
				      " only at the root or into a trash");
	}
	/* out of a trash: a session's folder comes back as one */
	ret = fs_lookup_in(fs, p, name, &n);
	if (!ret && n.type == N_REAL && n.attr.session_root)
		ret = fs_resolve(fs, n.ino, &n);
	if (ret < 0)
		return ret;
	if (fs_is_session_root(&n))
		return move_session(fs, &n.s, np, newname, noreplace);
	return refuse_at_root(fs, -EXDEV, newname, "only sessions live at the"
			      " root (a folder moved there is copied into a"
			      " new session by mv)");
}

/* Before node `id` of `session` leaves as file `newname` in folder `np`
 * (the trash): its edges, kept with that file. */
static int keep_edges(struct flowfs *fs, int64_t session, const char *id,
		      const struct node *np, const char *newname)
{
	struct tree_attr copy;
	int ret = tree_lookup(fs->tree, np->ino, newname, &copy);

	return ret < 0 ? ret : graph_keep_edges(fs->st, session, id,
						(int64_t)copy.ino);
}

/* The edges kept with file `name` in folder `p` for `session` (*edges
 * NULL when it has none), named for node `to`; *ino: the file's. */
static int kept_edges(struct flowfs *fs, int64_t session,
		      const struct node *p, const char *name, const char *to,
		      json_t **edges, int64_t *ino)
{
	struct tree_attr file;
	int ret;

	*edges = NULL;
	if (tree_lookup(fs->tree, p->ino, name, &file) < 0)
		return 0;	/* fs_rename_onto_doc() says what is wrong */
	*ino = (int64_t)file.ino;
	ret = graph_kept_edges(fs->st, session, *ino, to, edges);
	if (!ret && !json_array_size(*edges)) {
		json_decref(*edges);
		*edges = NULL;
	}
	return ret;
}

/* An edge a node came back without, and why: a line of its session's
 * log. */
struct left_out {
	struct flowfs *fs;
	const struct session_info *s;
};

static void edge_left_out(void *ctx, const char *id, const char *why)
{
	const struct left_out *l = ctx;
	char path[STATUS_PATH_MAX], line[FERR_MESSAGE_MAX];

	snprintf(path, sizeof(path), "edges/%s.json", id);
	snprintf(line, sizeof(line), "did not come back with its node: %s",
		 why);
	fs_log(l->fs, l->s->id, l->s->name, path, line);
}

/* Commit the edges a node came back with; the session's log says which
 * did not come back, and why.  The node is back whatever they do. */
static void restore_edges(struct flowfs *fs, const struct session_info *s,
			  int64_t ino, const json_t *edges)
{
	struct left_out l = { fs, s };

	if (graph_restore_edges(fs->st, s->id, ino, edges, edge_left_out,
				&l) < 0)
		fs_log(fs, s->id, s->name, "edges/", "the edges of a node"
		       " brought back could not all be stored");
}

/* rename where documents of a collection are at either end. */
static int rename_items(struct flowfs *fs, const struct node *p,
			const char *name, const struct node *np,
			const char *newname, bool noreplace)
{
	char id[256], newid[256];
	int coll = fs_item_name(p, name, id, sizeof(id));
	int newcoll = fs_item_name(np, newname, newid, sizeof(newid));
	bool from = coll >= 0, to = newcoll >= 0;
	struct ferr err = FERR_INIT;
	struct doc_target t;
	json_t *edges = NULL;
	int64_t ino = 0;
	struct node n;
	int ret;

	if (from && to) {
		if (coll != newcoll || p->attr.session != np->attr.session)
			return -EXDEV;
		ret = fs_collections[coll].rename(fs, p->attr.session, id, newid,
						  !noreplace, &err);
		/* a busy node's reason too, not only a refused document's */
		if (ret < 0 && err.message[0])
			fs_log_item_refusal(fs, &p->s, fs_collections[coll].folder,
				 ret == -EBUSY ? name : newname, &err);
		return ret;
	}
	if (from) {
		ret = fs_lookup_in(fs, p, name, &n);
		if (!ret)
			ret = fs_copy_away(fs, &n, np->ino, newname);
		/* moved out of its session (to the trash): it goes; kept,
		 * the copy goes.  A node's edges go with it, kept with the
		 * copy, which brings them back when it comes back (below) */
		if (!ret && fs_moves_out(&p->s, np)) {
			if (fs_collections[coll].tag == SESSION_NODES)
				ret = keep_edges(fs, p->attr.session, id, np,
						 newname);
			if (!ret)
				ret = fs_collections[coll].remove(
					fs, p->attr.session, id, &err);
			if (ret < 0 && err.message[0])
				fs_log_item_refusal(fs, &p->s,
					 fs_collections[coll].folder, name,
					 &err);
			if (ret < 0)
				tree_unlink(fs->tree, np->ino, newname);
		}
		return ret;
	}
	if (noreplace) {
		ret = fs_lookup_in(fs, np, newname, &n);
		if (ret != -ENOENT)
			return ret < 0 ? ret : -EEXIST;
	}
	memset(&t, 0, sizeof(t));
	t.session = np->attr.session;
	t.in_collection = true;
	t.coll = (unsigned)newcoll;
	snprintf(t.id, sizeof(t.id), "%s", newid);
	if (fs_collections[newcoll].tag != SESSION_NODES)
		return fs_rename_onto_doc(fs, p, name, &t);
	/* a node back from the trash: the edges it left with come back
	 * (read first: the file goes as the node is made of it) */
	ret = kept_edges(fs, np->attr.session, p, name, newid, &edges, &ino);
	if (!ret)
		ret = fs_rename_onto_doc(fs, p, name, &t);
	if (!ret && edges)
		restore_edges(fs, &np->s, ino, edges);
	json_decref(edges);
	return ret;
}

void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	struct flowfs *fs = fs_of(req);
	bool noreplace = flags & RENAME_NOREPLACE;
	struct node p, np;
	int row, newrow, ret;

	if (flags & ~RENAME_NOREPLACE) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	fs_lock_write(fs);
	ret = fs_resolve(fs, parent, &p);
	if (!ret)
		ret = fs_resolve(fs, newparent, &np);
	if (ret < 0)
		goto out;
	if (fs_frozen(fs, &p) || fs_frozen(fs, &np)) {
		ret = -EROFS;
		goto out;
	}
	if (p.type == N_ROOT || np.type == N_ROOT) {
		ret = rename_at_root(fs, &p, name, &np, newname, noreplace);
		goto out;
	}
	row = fs_session_row(fs, &p, name);
	newrow = fs_session_row(fs, &np, newname);
	if (row >= 0) {
		ret = rename_from_entry(fs, &p, name, row, &np, newname);
		goto out;
	}
	if (newrow >= 0) {
		struct doc_target t = { .session = np.s.id, .row = (unsigned)newrow };
		const struct entry *e = &fs_entries[newrow];

		if (noreplace && !fs_is_paramout(&np))
			ret = -EEXIST;
		else if (S_ISDIR(e->mode))
			ret = -EPERM;
		else if (e->kind != ENTRY_DOC)
			ret = rename_onto_made(fs, &p, name, &np, newname,
					       newrow);
		else
			ret = fs_rename_onto_doc(fs, &p, name, &t);
		/* the kernel moved the file's name onto the document: it must
		 * look it up again, whatever timeout the file's name had */
		if (!ret && e->kind == ENTRY_DOC)
			fs_notify_entry(fs->notifier, newparent, newname);
		goto out;
	}
	if (p.type == N_ENTRY || p.type == N_VIEW || np.type == N_ENTRY ||
	    np.type == N_VIEW) {
		ret = -EROFS;
		goto out;
	}
	if (fs_is_item_name(&p, name) || fs_is_item_name(&np, newname)) {
		ret = rename_items(fs, &p, name, &np, newname, noreplace);
		goto out;
	}
	ret = fname_check_entry(newname, NULL);
	if (!ret)
		ret = tree_rename(fs->tree, parent, name, newparent, newname,
				  noreplace);
	/* a deck renamed into place (rsync, an editor's save) */
	if (!ret)
		fs_take_in_uploads(fs, fs_session_of(&np));
out:
	if (!ret) {
		fs_changed(fs, fs_session_of(&p));
		fs_changed(fs, fs_session_of(&np));
	}
	fs_unlock(fs);
	fuse_reply_err(req, -ret);
}
