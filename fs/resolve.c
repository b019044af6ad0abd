/*
 * resolve: what an inode number stands for (struct node), its attributes,
 * and the names in a folder; see ops_i.h.
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

/* Folders report the size a local file system's small folder has (ext4:
 * one 4 KiB block): tools that show or sum sizes expect a folder not to
 * be empty of bytes. */
#define DIR_SIZE 4096


/* The collection a folder shows (nodes/, edges/, rounds/), or -1. */
int fs_collection_of(const struct node *n)
{
	return n->type == N_REAL && n->attr.tag
		       ? fs_collection_of_tag(n->attr.tag) : -1;
}

/* The id `name` in folder `dir` stands for, when it is a collection's
 * and the name one of its documents': the collection, or -1. */
int fs_item_name(const struct node *dir, const char *name, char *id,
		     size_t size)
{
	int coll = fs_collection_of(dir);

	if (coll < 0 || !fs_collections[coll].id_of(name, id, size))
		return -1;
	return coll;
}

bool fs_is_item_name(const struct node *dir, const char *name)
{
	char id[256];

	return fs_item_name(dir, name, id, sizeof(id)) >= 0;
}

static void ts_from_ns(struct timespec *ts, int64_t ns)
{
	int64_t sec = ns / 1000000000, nsec = ns % 1000000000;

	/* tv_nsec is never negative: -1.5 s is -2 s + 0.5 s */
	if (nsec < 0) {
		sec--;
		nsec += 1000000000;
	}
	ts->tv_sec = (time_t)sec;
	ts->tv_nsec = (long)nsec;
}

/*
 * A timestamp as the store keeps it: nanoseconds in an int64, so
 * 1677-09-21 to 2262-04-11.  Times outside are clamped to the nearest
 * end, as Linux filesystems clamp to what they can store.
 */
int64_t fs_ns_from_ts(const struct timespec *ts)
{
	int64_t ns;

	if (__builtin_mul_overflow((int64_t)ts->tv_sec, (int64_t)1000000000,
				   &ns) ||
	    __builtin_add_overflow(ns, (int64_t)ts->tv_nsec, &ns))
		return ts->tv_sec < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

static void dir_size(struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		st->st_size = DIR_SIZE;
		st->st_blocks = DIR_SIZE / 512;
	}
}

void fs_stat_from_attr(const struct tree_attr *a, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = a->ino;
	st->st_mode = a->mode;
	st->st_nlink = a->nlink;
	st->st_uid = a->uid;
	st->st_gid = a->gid;
	st->st_size = a->size;
	st->st_blocks = (a->alloc + 511) / 512;
	st->st_blksize = TREE_CHUNK_SIZE;
	ts_from_ns(&st->st_atim, a->atime_ns);
	ts_from_ns(&st->st_mtim, a->mtime_ns);
	ts_from_ns(&st->st_ctim, a->ctime_ns);
	dir_size(st);
}

/* How many files a view of `sk` has (a failed skill: only ERROR). */
size_t fs_view_count(const struct skill *sk)
{
	return sk->error ? 1 : sk->nfiles;
}

/* The relative path of a view node ("" for the skill's folder). */
const char *fs_view_path(const struct node *n)
{
	if (!n->file)
		return "";
	return n->sk->error ? FS_VIEW_ERROR_NAME : n->sk->files[n->file - 1].path;
}

bool fs_view_is_dir(const struct node *n)
{
	return !n->file || (!n->sk->error && n->sk->files[n->file - 1].dir);
}

/* The content of a view file. */
int fs_view_content(const struct node *n, struct sbuf *out)
{
	const struct skill_file *f;

	if (n->sk->error)
		return sbuf_addf(out, "%s\n", n->sk->error);
	f = &n->sk->files[n->file - 1];
	return sbuf_add(out, f->data, f->len);
}

uint64_t fs_view_ino(const struct node *n, size_t file)
{
	return fs_catalog_ino(n->sk->serial, file);
}

static int resolve_view(struct flowfs *fs, uint64_t ino, struct node *n)
{
	n->type = N_VIEW;
	n->file = fs_ino_low(ino);
	n->sk = skill_by_serial(fs->skills, fs_ino_serial(ino));
	if (fs_ino_space(ino) != FS_SPACE_CATALOG || fs_ino_session(ino) ||
	    !n->sk || n->file > fs_view_count(n->sk))
		return -ENOENT;
	return 0;
}

/* The node of a collection's item (its session known). */
void fs_item_node(struct node *n, unsigned coll,
		      const struct fs_item *item,
		      const struct session_info *s)
{
	memset(n, 0, sizeof(*n));
	n->type = N_ITEM;
	n->ino = fs_item_ino(coll, item->key);
	n->coll = coll;
	n->item = *item;
	n->s = *s;
	n->has_session = true;
}

static int resolve_item(struct flowfs *fs, uint64_t ino, struct node *n)
{
	unsigned coll = (unsigned)(ino >> FS_COLLECTION_SHIFT) &
			((1u << (FS_SPACE_SHIFT - FS_COLLECTION_SHIFT)) - 1);
	struct fs_item item;
	struct session_info s;
	int ret;

	if (coll >= fs_collection_count)
		return -ENOENT;
	ret = fs_collections[coll].get(fs, (int64_t)(ino & FS_COLLECTION_KEY_MASK),
				       &item);
	if (!ret)
		ret = session_get(fs->st, item.session, &s);
	if (!ret)
		fs_item_node(n, coll, &item, &s);
	return ret;
}

int fs_resolve(struct flowfs *fs, uint64_t ino, struct node *n)
{
	int ret;

	memset(n, 0, sizeof(*n));
	n->ino = ino;
	if (ino == FS_ROOT_INO) {
		n->type = N_ROOT;
		return 0;
	}
	if (fs_ino_is_virtual(ino) && fs_ino_space(ino) == FS_SPACE_COLLECTION)
		return resolve_item(fs, ino, n);
	if (fs_ino_is_virtual(ino) && fs_ino_space(ino) == FS_SPACE_CATALOG)
		return resolve_view(fs, ino, n);
	if (fs_ino_is_virtual(ino)) {
		n->type = N_ENTRY;
		n->row = fs_ino_low(ino);
		n->standin = fs_ino_space(ino) == FS_SPACE_STANDIN;
		n->nominal = n->standin;
		if (n->row == 0 || n->row >= fs_entry_count)
			return -ENOENT;
		if (fs_entries[n->row].scope < SCOPE_SESSION)
			return fs_ino_session(ino) ? -ENOENT : 0;
		n->has_session = true;
		return session_get(fs->st, fs_ino_session(ino), &n->s);
	}
	n->type = N_REAL;
	ret = tree_getattr(fs->tree, ino, &n->attr);
	if (ret < 0)
		return ret;
	/* Folders with entries of the table or a collection in them know
	 * their session (uploads/ needs none: it is on every path walk). */
	if (n->attr.session_root || (n->attr.tag != 0 && n->attr.session &&
				     n->attr.tag != SESSION_UPLOADS)) {
		n->has_session = true;
		return session_get(fs->st, n->attr.session, &n->s);
	}
	return 0;
}

bool fs_frozen(struct flowfs *fs, const struct node *n)
{
	int64_t session = fs_session_of(n);

	if (n->has_session)
		return n->s.snapshot_of != 0;
	return session && session_is_snapshot(fs->st, session);
}

bool fs_is_session_root(const struct node *n)
{
	return n->type == N_REAL && n->attr.session_root;
}

/* The session node `n` is of (0: none, the root, a trash's). */
int64_t fs_session_of(const struct node *n)
{
	return n->has_session ? n->s.id : n->type == N_REAL ? n->attr.session
							   : 0;
}

/* Something in session `session` changed: its generated files may have
 * appeared, gone or changed (refresh.c shows file managers, later). */
void fs_changed(struct flowfs *fs, int64_t session)
{
	if (session)
		fs_notify_session(fs->notifier, session);
}

/* fs_changed(), when `ret` says something was done; returns `ret`. */
int fs_changed_if(struct flowfs *fs, int64_t session, int ret)
{
	if (!ret)
		fs_changed(fs, session);
	return ret;
}

/* A folder or file of a trash at the mount's root (no session's). */
bool fs_in_trash(const struct node *n)
{
	return n->type == N_REAL && !n->attr.session;
}

/* A real folder `ino` of session `s` (its root, uploads/, output/, ...),
 * whose row the caller already has: fs_resolve() without reading the
 * session again. */
static int resolve_in_session(struct flowfs *fs, const struct session_info *s,
			      uint64_t ino, struct node *n)
{
	memset(n, 0, sizeof(*n));
	n->type = N_REAL;
	n->ino = ino;
	n->has_session = true;
	n->s = *s;
	return tree_getattr(fs->tree, n->ino, &n->attr);
}

/* The folder of session `s`, whose row the caller already has: fs_resolve()
 * without reading the session again. */
int fs_resolve_session_root(struct flowfs *fs,
				const struct session_info *s, struct node *n)
{
	return resolve_in_session(fs, s, s->root_ino, n);
}

/* The scope of the table's entries that live in folder `n`, or -1. */
int fs_scope_of(const struct node *n)
{
	if (n->type == N_ROOT)
		return SCOPE_ROOT;
	if (n->type == N_ENTRY && fs_entries[n->row].kind == ENTRY_DIR)
		return (int)fs_entries[n->row].holds;
	if (fs_is_session_root(n))
		return SCOPE_SESSION;
	if (n->type == N_REAL && n->attr.tag == SESSION_OUTPUT)
		return SCOPE_OUTPUT;
	return -1;
}

/* .flowfs/ and below: nothing there can be changed. */
bool fs_read_only_tree(const struct node *n)
{
	return n->type == N_VIEW ||
	       (n->type == N_ENTRY && fs_entries[n->row].scope < SCOPE_SESSION);
}

/*
 * Size and times of generated content: true, so it is rendered — unless
 * the caller reads it through an open handle (`snap`): then the handle's
 * copy is the truth for it.  The kernel asks before every read() of a
 * file whose attributes it may not cache, and rendering a 9 MB
 * parameters.json for each 128 KiB read would make reading quadratic.
 * A cached content's size needs no copy of it (megabytes).
 */
static int stat_content(struct flowfs *fs, const struct node *n,
			struct stat *st, const struct handle *snap)
{
	struct sbuf scratch = SBUF_INIT;
	const struct sbuf *c = snap ? &snap->content : &scratch;
	int64_t mtime = snap ? snap->mtime_ns : 0;
	int ret = snap ? 0 : fs_entry_content(fs, n, &scratch, &c, &mtime);

	st->st_size = ret < 0 ? 0 : (off_t)c->len;
	st->st_blocks = (st->st_size + 511) / 512;
	ts_from_ns(&st->st_mtim, mtime);
	st->st_ctim = st->st_mtim;
	sbuf_release(&scratch);
	return ret;
}

int fs_node_stat(struct flowfs *fs, const struct node *n, struct stat *st,
		     bool *generated)
{
	return fs_node_stat_snap(fs, n, st, generated, NULL);
}

/* node_stat, with the content of an open handle when there is one. */
int fs_node_stat_snap(struct flowfs *fs, const struct node *n,
			  struct stat *st, bool *generated,
			  const struct handle *snap)
{
	const struct entry *e;
	int ret = 0;

	*generated = false;
	memset(st, 0, sizeof(*st));
	st->st_ino = n->ino;
	st->st_blksize = 4096;
	if (n->type == N_REAL) {
		fs_stat_from_attr(&n->attr, st);
		return 0;
	}
	if (n->type == N_ITEM) {
		st->st_mode = S_IFREG | 0644;
		st->st_nlink = 1;
		st->st_size = (off_t)(snap ? snap->content.len : n->item.size);
		st->st_blocks = (st->st_size + 511) / 512;
		ts_from_ns(&st->st_mtim, n->item.mtime_ns);
		st->st_atim = st->st_ctim = st->st_mtim;
		st->st_uid = n->s.uid;
		st->st_gid = n->s.gid;
		/* its document changes behind the kernel's back (defaults,
		 * the one JSON layout) */
		*generated = true;
		return 0;
	}
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	ts_from_ns(&st->st_atim, fs->mounted_ns);
	st->st_mtim = st->st_ctim = st->st_atim;
	if (n->type == N_ROOT) {
		int64_t count = 0;

		ret = session_count(fs->st, &count);
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 3 + (nlink_t)count;
		dir_size(st);
		return ret;
	}
	if (n->type == N_VIEW) {
		st->st_mode = fs_view_is_dir(n) ? S_IFDIR | 0555 : S_IFREG | 0444;
		st->st_nlink = fs_view_is_dir(n) ? 2 : 1;
		dir_size(st);
		/* a rescan may change a file under the same number */
		*generated = true;
		return fs_view_is_dir(n) ? 0 : stat_content(fs, n, st, snap);
	}
	e = &fs_entries[n->row];
	st->st_mode = e->mode;
	st->st_nlink = S_ISDIR(e->mode) ? 2 : 1;
	dir_size(st);
	/* the session row carries its folder's owner: no query per stat */
	if (n->has_session) {
		st->st_uid = n->s.uid;
		st->st_gid = n->s.gid;
	}
	if (n->nominal) {
		*generated = true;
		if (n->standin)
			st->st_mode = S_IFREG | 0644;
		else if (!S_ISDIR(e->mode))
			st->st_mode = (e->kind == ENTRY_LINK ? S_IFLNK : S_IFREG) |
				      (e->mode & 07777);
		return 0;
	}
	if (e->kind == ENTRY_DOC || e->kind == ENTRY_GENERATED ||
	    e->kind == ENTRY_LINK) {
		*generated = true;
		ret = stat_content(fs, n, st, snap);
	}
	return ret;
}

/* The view node `name` in view folder `parent`. */
static int lookup_view(struct flowfs *fs, const struct node *parent,
		       const char *name, struct node *out)
{
	const char *dir = fs_view_path(parent);
	struct sbuf path = SBUF_INIT;
	size_t index;
	int ret;

	if (!fs_view_is_dir(parent))
		return -ENOTDIR;
	if (parent->sk->error)
		return !parent->file && !strcmp(name, FS_VIEW_ERROR_NAME)
			       ? fs_resolve(fs, fs_view_ino(parent, 1), out) : -ENOENT;
	if (sbuf_addf(&path, "%s%s%s", dir, *dir ? "/" : "", name) < 0)
		return -ENOMEM;
	ret = skill_file_find(parent->sk, path.buf, &index) ? 0 : -ENOENT;
	sbuf_release(&path);
	return ret < 0 ? ret : fs_resolve(fs, fs_view_ino(parent, index + 1), out);
}

/* The node an entry of the table stands for in `parent`'s session. */
int fs_resolve_row(struct flowfs *fs, const struct node *parent,
		       unsigned row, struct node *out)
{
	const struct entry *e = &fs_entries[row];
	int64_t session = parent->has_session ? parent->s.id : 0;

	switch (e->kind) {
	case ENTRY_FOLDER:
		return resolve_in_session(fs, &parent->s,
					  session_folder_ino(&parent->s,
							     e->folder), out);
	default:
		/* fs_resolve() of fs_entry_ino(session, row), but the session
		 * is the parent's: no need to read it again */
		memset(out, 0, sizeof(*out));
		out->type = N_ENTRY;
		out->row = row;
		out->ino = fs_entry_ino(session, row);
		if (e->scope >= SCOPE_SESSION) {
			out->has_session = true;
			out->s = parent->s;
		}
		return 0;
	}
}

int fs_lookup_in(struct flowfs *fs, const struct node *parent,
		     const char *name, struct node *out)
{
	int row = fs_reserved_row(fs, parent, name);
	const struct skill *sk;
	char id[256];
	int coll, ret;

	if (row >= 0)
		return fs_resolve_row(fs, parent, (unsigned)row, out);
	coll = fs_item_name(parent, name, id, sizeof(id));
	if (coll >= 0) {
		struct fs_item item;

		/* One query: the folder already knows session and owner. */
		ret = fs_collections[coll].find(fs, parent->attr.session, id,
						&item);
		if (ret < 0)
			return ret;
		fs_item_node(out, (unsigned)coll, &item, &parent->s);
		return 0;
	}
	/* A session's name never starts with '.', a trash folder's always
	 * with ".Trash": a file manager's probes (.hidden, .directory) cost
	 * no query. */
	if (parent->type == N_ROOT && name[0] != '.') {
		struct session_info si;

		ret = session_find(fs->st, name, &si);
		return ret < 0 ? ret : fs_resolve_session_root(fs, &si, out);
	}
	if (parent->type == N_ROOT) {
		memset(out, 0, sizeof(*out));
		out->type = N_REAL;
		ret = strncmp(name, ".Trash", 6) ? -ENOENT
			: tree_trash_lookup(fs->tree, name, &out->attr);
		out->ino = out->attr.ino;
		return ret;
	}
	if (parent->type == N_VIEW)
		return lookup_view(fs, parent, name, out);
	if (parent->type == N_ENTRY &&
	    fs_entries[parent->row].kind == ENTRY_SNAPSHOTS) {
		struct session_info si;

		ret = session_find_snapshot(fs->st, parent->s.id, name, &si);
		return ret < 0 ? ret : fs_resolve_session_root(fs, &si, out);
	}
	if (parent->type == N_ENTRY) {
		if (fs_entries[parent->row].kind != ENTRY_CATALOG)
			return S_ISDIR(fs_entries[parent->row].mode) ? -ENOENT
								     : -ENOTDIR;
		sk = skill_find(fs->skills, name);
		if (!sk)
			return -ENOENT;
		return fs_resolve(fs, fs_catalog_ino(sk->serial,
						0), out);
	}
	if (!S_ISDIR(parent->attr.mode))
		return -ENOTDIR;
	memset(out, 0, sizeof(*out));
	out->type = N_REAL;
	ret = tree_lookup(fs->tree, parent->ino, name, &out->attr);
	out->ino = out->attr.ino;
	return ret;
}

/*
 * How long the kernel may keep the name of `n` in `parent`.  A rename
 * moves the kernel's dentry: after rename(scratch, "session.json") (an
 * editor's save) the name would stand for the scratch file's deleted
 * inode.  So the scratch files of folders where names mean something
 * (a session folder, output/, nodes/, edges/) are looked up again on each
 * use, and so are the files in a trash: restored onto a document (a node
 * the trash gives back), the name would stand for the trash's file.  So are the documents (session.json, ...): renamed away, they
 * leave a copy under the new name, but the kernel's moved dentry would
 * stand for the document, and an invalidation sent after the rename
 * comes too late for an editor writing its backup right after it.  A
 * generated file renamed away is left to the notifier: until it runs,
 * the new name reads the live file instead of the copy, and a write
 * there is refused.  (A timeout of 0 costs a LOOKUP on top of the
 * GETATTR for each entry `ls -l` lists: +40% on `ls -lR` of sessions
 * when the generated files had it too.)  Skill views change with the
 * binding and with rescans.  Everything else (uploads/ above all) keeps
 * its names long.
 */
double fs_entry_timeout(const struct node *parent, const struct node *n,
			    mode_t mode)
{
	/*
	 * Collections' documents come and go (with every parameters.json,
	 * with refused creates), computed names change with the graph, and
	 * documents can be renamed away (above).  Their names are looked up
	 * on every path call: a LOOKUP before the GETATTR their attributes
	 * cost anyway.
	 */
	if (n->type == N_ITEM || n->nominal ||
	    (n->type == N_ENTRY && (fs_entries[n->row].name_fn ||
				    fs_entries[n->row].kind == ENTRY_DOC)))
		return 0.0;
	if (n->type == N_VIEW || parent->type == N_VIEW ||
	    (parent->type == N_ENTRY &&
	     fs_entries[parent->row].kind == ENTRY_CATALOG))
		return 0.0;
	if (n->type == N_REAL && !S_ISDIR(mode) &&
	    (fs_is_session_root(parent) || fs_in_trash(parent) ||
	     (parent->type == N_REAL && parent->attr.tag != SESSION_UPLOADS &&
	      parent->attr.tag != 0)))
		return 0.0;
	return LONG_TIMEOUT;
}

int fs_fill_entry(struct flowfs *fs, const struct node *parent,
		      const struct node *n, struct fuse_entry_param *e)
{
	bool generated;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = fs_node_stat(fs, n, &e->attr, &generated);
	if (ret < 0)
		return ret;
	e->ino = n->ino;
	e->generation = 1;
	e->entry_timeout = fs_entry_timeout(parent, n, e->attr.st_mode);
	e->attr_timeout = generated ? 0.0 : LONG_TIMEOUT;
	return 0;
}

/* fs_fill_entry(), but a reserved name absent now is there, nominal, for
 * the process that made it (`made`). */
int fs_fill_made_entry(struct flowfs *fs, const struct node *parent,
			   struct node *n, bool made,
			   struct fuse_entry_param *e)
{
	int ret = fs_fill_entry(fs, parent, n, e);

	if (ret == -ENOENT && made && n->type == N_ENTRY && !n->nominal) {
		n->nominal = true;
		ret = fs_fill_entry(fs, parent, n, e);
	}
	return ret;
}

/* The reserved entry `name` would stand for in this folder, or -1. */
int fs_reserved_row(struct flowfs *fs, const struct node *parent,
			const char *name)
{
	int scope = fs_scope_of(parent);

	return scope >= 0 ? fs_entry_find(fs, parent->has_session ? &parent->s
								 : NULL,
					  (enum entry_scope)scope, name) : -1;
}

/*
 * The kernel keeps what a lookup, create, mkdir or readdirplus entry gave
 * it until it sends FORGET (tree.h, "Kernel references"): a real row's
 * references are counted, so that a file unlinked or renamed over in
 * between still answers its GETATTR and OPEN.  Generated entries are
 * made from their inode number: nothing to count.  The lock held.
 */
bool fs_ino_counted(fuse_ino_t ino)
{
	return ino && ino != FS_ROOT_INO && !fs_ino_is_virtual(ino);
}

int fs_entry_given(struct flowfs *fs, fuse_ino_t ino)
{
	return fs_ino_counted(ino) ? tree_ref(fs->tree, ino) : 0;
}

/* A reply that carried it did not reach the kernel (interrupted). */
void fs_entry_not_taken(struct flowfs *fs, fuse_ino_t ino)
{
	if (!fs_ino_counted(ino))
		return;
	fs_lock_write(fs);
	tree_forget(fs->tree, ino, 1);
	fs_unlock(fs);
}

bool fs_node_is_dir(const struct node *n)
{
	switch (n->type) {
	case N_ROOT:
		return true;
	case N_ENTRY:
		return S_ISDIR(fs_entries[n->row].mode);
	case N_VIEW:
		return fs_view_is_dir(n);
	case N_ITEM:
		return false;
	default:
		return S_ISDIR(n->attr.mode);
	}
}
