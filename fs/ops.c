/*
 * The FUSE low-level operations: translate each request to core calls
 * under the filesystem lock, and core errors to errnos.  What a name means
 * comes from the entry table (entries.c), never from string compares here.
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
#include "fs.h"

/* Real rows and folders change only through this mount, so the kernel may
 * keep them long; generated content changes behind its back, so its
 * attributes (the size!) are never cached. */
#define LONG_TIMEOUT 3600.0
#define DOC_MAX_SIZE (16 * 1024 * 1024)
/*
 * A document being written is held whole in memory until it is
 * committed, and a generated file open for reading holds the copy it
 * was rendered into, so what those buffers hold together is bounded,
 * each kind on its own, for each session and for the mount: a write,
 * truncate or open that would pass it fails with ENOSPC (EFBIG would say
 * the file is too big; it is the open files together that are) and the
 * session's log says so.
 */
#define DOC_SESSION_BUDGET ((size_t)64 * 1024 * 1024)
#define DOC_MOUNT_BUDGET ((size_t)256 * 1024 * 1024)
/*
 * On a mount shared with -o allow_other, users other than the one who
 * mounted it hold at most a session's budget each and half the mount's
 * together, so that they can neither take it all from the owner nor one
 * of them from the others.
 */
#define DOC_USER_BUDGET DOC_SESSION_BUDGET
#define DOC_OTHERS_BUDGET (DOC_MOUNT_BUDGET / 2)
/* A path in a session as its log names it: "parameters_output/" + a
 * 255-byte name. */
#define STATUS_PATH_MAX 280

/* H_SINK: a generated file opened for writing: what is written is
 * dropped (reserved names, below) */
enum handle_kind { H_FILE, H_DOC, H_GENERATED, H_DIR, H_CONTROL, H_SINK };

/* Where a written document goes: a row of the table, or a collection. */
struct doc_target {
	int64_t session;
	bool in_collection;
	unsigned row;
	unsigned coll;
	char id[256];
};

struct dir_item {
	char *name;
	struct stat st;
	bool generated;
	double entry_timeout;
	bool given;	/* its last readdirplus reply counted a reference */
};



struct handle {
	enum handle_kind kind;
	uint64_t ino;
	int64_t session;
	struct doc_target target;	/* H_DOC */
	int64_t item_key;		/* H_DOC of a collection: its key */
	uid_t uid;		/* who opened it (budgets, below) */
	/* H_DIR of a real folder: its mtime when the listing was taken
	 * (reply_dir() checks its entries again once it changed) */
	bool dir_real;
	int64_t dir_mtime_ns;
	bool dirty;		/* H_DOC: written since the last commit; H_FILE,
				 * H_SINK: since the last flush */
	bool refused;		/* H_DOC: this draft was refused already */
	/* H_DOC, H_GENERATED, H_SINK: the bytes of content counted in
	 * fs->doc_bytes, and whether the log said it passed the budget */
	size_t budgeted;
	bool budget_logged;
	/* H_DOC: it created the collection item's draft and has not stored
	 * a version since: its last close drops the draft.  Only the creator:
	 * a late release of an earlier handle on the same name (the kernel
	 * sends RELEASE asynchronously) must not drop a newer file's draft. */
	bool owns_draft;
	struct sbuf content;	/* H_DOC, H_GENERATED, H_SINK */
	int64_t mtime_ns;	/* of content, as rendered at open */
	/* H_SINK: the bytes written to it since the last flush, whether
	 * they differ from what it holds (content) and where the writes
	 * end; the path its session's log names it by */
	size_t sink_bytes;
	bool sink_differs;
	size_t sink_end;
	char sink_path[STATUS_PATH_MAX];
	struct dir_item *items;	/* H_DIR */
	size_t nitems;
	struct handle *prev, *next;	/* fs->open_handles */
};

static void release_handle(struct flowfs *fs, struct handle *h);
static void take_in_uploads(struct flowfs *fs, int64_t session);
struct doc_target;
static void target_path(const struct doc_target *t, char *buf, size_t size);
struct node;
static bool node_is_dir(const struct node *n);

/* What an inode number stands for. */
struct node {
	enum { N_ROOT, N_ENTRY, N_REAL, N_VIEW, N_ITEM } type;
	uint64_t ino;
	unsigned row;			/* N_ENTRY */
	/* N_ENTRY that is not there now (an absent for005.dat) but that a
	 * process made or changes (reserved names, below): an empty file
	 * (or link) as far as the kernel is told */
	bool nominal;
	bool standin;			/* nominal, in FS_SPACE_STANDIN (fs.h) */
	struct session_info s;		/* when has_session */
	bool has_session;
	struct tree_attr attr;		/* N_REAL */
	/* N_VIEW: a skill's folder or file under .flowfs/skills/; file 0 is
	 * the skill's folder. */
	const struct skill *sk;
	size_t file;
	/* N_ITEM: a document of a collection (fs.h) */
	unsigned coll;
	struct fs_item item;
};

/* The collection a folder shows (nodes/, edges/, rounds/), or -1. */
static int collection_of(const struct node *n)
{
	return n->type == N_REAL && n->attr.tag
		       ? fs_collection_of_tag(n->attr.tag) : -1;
}

/* The id `name` in folder `dir` stands for, when it is a collection's
 * and the name one of its documents': the collection, or -1. */
static int item_name(const struct node *dir, const char *name, char *id,
		     size_t size)
{
	int coll = collection_of(dir);

	if (coll < 0 || !fs_collections[coll].id_of(name, id, size))
		return -1;
	return coll;
}

static bool is_item_name(const struct node *dir, const char *name)
{
	char id[256];

	return item_name(dir, name, id, sizeof(id)) >= 0;
}

/* What a failed skill shows instead of its files. */
static const char error_name[] = "ERROR";

static struct flowfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A request that changes nothing stored (fs.h: the locks). */
static void lock(struct flowfs *fs)
{
	fs_lock_read(fs);
}

/* One that may: the database, the tree, the registry. */
static void lock_write(struct flowfs *fs)
{
	fs_lock_write(fs);
}

static void unlock(struct flowfs *fs)
{
	fs_unlock(fs);
}

static struct handle *handle_of(struct fuse_file_info *fi)
{
	return (struct handle *)(uintptr_t)fi->fh;
}

/* A new handle of `kind`, on the mount's list of open handles. */
static struct handle *handle_new(struct flowfs *fs, enum handle_kind kind)
{
	struct handle *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	sbuf_init(&h->content);
	h->kind = kind;
	pthread_mutex_lock(&fs->handles_lock);
	h->next = fs->open_handles;
	if (h->next)
		h->next->prev = h;
	fs->open_handles = h;
	pthread_mutex_unlock(&fs->handles_lock);
	return h;
}

/* The mount's total that h's buffer counts in (doc_budget()). */
static size_t *budget_total(struct flowfs *fs, const struct handle *h)
{
	return h->kind == H_DOC ? &fs->doc_bytes : &fs->copy_bytes;
}

static void handle_free(struct flowfs *fs, struct handle *h)
{
	if (!h)
		return;
	pthread_mutex_lock(&fs->handles_lock);
	*budget_total(fs, h) -= h->budgeted;
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->open_handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->handles_lock);
	sbuf_release(&h->content);
	for (size_t i = 0; i < h->nitems; i++)
		free(h->items[i].name);
	free(h->items);
	free(h);
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
static int64_t ns_from_ts(const struct timespec *ts)
{
	int64_t ns;

	if (__builtin_mul_overflow((int64_t)ts->tv_sec, (int64_t)1000000000,
				   &ns) ||
	    __builtin_add_overflow(ns, (int64_t)ts->tv_nsec, &ns))
		return ts->tv_sec < 0 ? INT64_MIN : INT64_MAX;
	return ns;
}

/* Folders report the size a local file system's small folder has (ext4:
 * one 4 KiB block): tools that show or sum sizes expect a folder not to
 * be empty of bytes. */
#define DIR_SIZE 4096

static void dir_size(struct stat *st)
{
	if (S_ISDIR(st->st_mode)) {
		st->st_size = DIR_SIZE;
		st->st_blocks = DIR_SIZE / 512;
	}
}

static void stat_from_attr(const struct tree_attr *a, struct stat *st)
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

/* ---- resolving inodes ---------------------------------------------------- */

/* ---- skill views ------------------------------------------------------ */

/* How many files a view of `sk` has (a failed skill: only ERROR). */
static size_t view_count(const struct skill *sk)
{
	return sk->error ? 1 : sk->nfiles;
}

/* The relative path of a view node ("" for the skill's folder). */
static const char *view_path(const struct node *n)
{
	if (!n->file)
		return "";
	return n->sk->error ? error_name : n->sk->files[n->file - 1].path;
}

static bool view_is_dir(const struct node *n)
{
	return !n->file || (!n->sk->error && n->sk->files[n->file - 1].dir);
}

/* The content of a view file. */
static int view_content(const struct node *n, struct sbuf *out)
{
	const struct skill_file *f;

	if (n->sk->error)
		return sbuf_addf(out, "%s\n", n->sk->error);
	f = &n->sk->files[n->file - 1];
	return sbuf_add(out, f->data, f->len);
}

static uint64_t view_ino(const struct node *n, size_t file)
{
	return fs_catalog_ino(n->sk->serial, file);
}

static int resolve_view(struct flowfs *fs, uint64_t ino, struct node *n)
{
	n->type = N_VIEW;
	n->file = fs_ino_low(ino);
	n->sk = skill_by_serial(fs->skills, fs_ino_serial(ino));
	if (fs_ino_space(ino) != FS_SPACE_CATALOG || fs_ino_session(ino) ||
	    !n->sk || n->file > view_count(n->sk))
		return -ENOENT;
	return 0;
}

/* The node of a collection's item (its session known). */
static void item_node(struct node *n, unsigned coll,
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
		item_node(n, coll, &item, &s);
	return ret;
}

static int resolve(struct flowfs *fs, uint64_t ino, struct node *n)
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

static bool is_session_root(const struct node *n)
{
	return n->type == N_REAL && n->attr.session_root;
}

/* The session node `n` is of (0: none, the root, a trash's). */
static int64_t session_of(const struct node *n)
{
	return n->has_session ? n->s.id : n->type == N_REAL ? n->attr.session
							   : 0;
}

/* Something in session `session` changed: its generated files may have
 * appeared, gone or changed (refresh.c shows file managers, later). */
static void changed(struct flowfs *fs, int64_t session)
{
	if (session)
		fs_notify_session(fs->notifier, session);
}

/* changed(), when `ret` says something was done; returns `ret`. */
static int changed_if(struct flowfs *fs, int64_t session, int ret)
{
	if (!ret)
		changed(fs, session);
	return ret;
}

/* A folder or file of a trash at the mount's root (no session's). */
static bool in_trash(const struct node *n)
{
	return n->type == N_REAL && !n->attr.session;
}

/* A real folder `ino` of session `s` (its root, uploads/, output/, ...),
 * whose row the caller already has: resolve() without reading the
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

/* The folder of session `s`, whose row the caller already has: resolve()
 * without reading the session again. */
static int resolve_session_root(struct flowfs *fs,
				const struct session_info *s, struct node *n)
{
	return resolve_in_session(fs, s, s->root_ino, n);
}

/* The scope of the table's entries that live in folder `n`, or -1. */
static int scope_of(const struct node *n)
{
	if (n->type == N_ROOT)
		return SCOPE_ROOT;
	if (n->type == N_ENTRY && fs_entries[n->row].kind == ENTRY_DIR)
		return (int)fs_entries[n->row].holds;
	if (is_session_root(n))
		return SCOPE_SESSION;
	if (n->type == N_REAL && n->attr.tag == SESSION_OUTPUT)
		return SCOPE_OUTPUT;
	return -1;
}

/* .flowfs/ and below: nothing there can be changed. */
static bool read_only_tree(const struct node *n)
{
	return n->type == N_VIEW ||
	       (n->type == N_ENTRY && fs_entries[n->row].scope < SCOPE_SESSION);
}

/*
 * The content of an entry with a version, from fs->rendered (rendered
 * into the least recently used slot when no slot holds this version):
 * *content points into the cache until the next call.  1 when the entry
 * has no version now (render it directly).
 */
/* The render cache's slot of (e, session, version), or NULL; *oldest:
 * the one to reuse. */
static struct fs_rendered *rendered_find(struct flowfs *fs,
					 const struct entry *e, int64_t session,
					 const int64_t version[2],
					 struct fs_rendered **oldest)
{
	*oldest = &fs->rendered[0];
	for (int i = 0; i < FS_RENDERED_SLOTS; i++) {
		struct fs_rendered *c = &fs->rendered[i];

		if (c->valid && c->render == e->render &&
		    c->session == session && c->version[0] == version[0] &&
		    c->version[1] == version[1])
			return c;
		if (!c->valid || c->used < (*oldest)->used)
			*oldest = c;
	}
	return NULL;
}

/*
 * A reader's render of an entry that renders alone: outside `lock`, on a
 * connection of the reader pool, the session read again and rendered in
 * one read transaction, with the tool map pinned, so that the content
 * and its version (*version, *s: the session as read, the map as used)
 * are of one moment (perhaps later than the caller's).  `lock` is let go
 * and taken back.  1 when no connection is free (render under `lock`
 * then).
 */
static int render_outside(struct flowfs *fs, const struct entry *e,
			  struct session_info *s, int64_t version[2],
			  struct sbuf *out, int64_t *mtime_ns)
{
	struct store *reader = fs_reader_get(fs);
	struct fs_alone a;
	int ret;

	if (!reader)
		return 1;
	fs_alone_init(fs, reader, s, &a);
	fs->toolfile.pins++;
	unlock(fs);
	ret = store_exec(reader, "BEGIN");
	if (!ret) {
		ret = session_get(reader, s->id, s);
		if (!ret)
			ret = e->render_alone(&a, out, mtime_ns);
		store_exec(reader, ret < 0 && ret != -ENOENT ? "ROLLBACK"
							      : "COMMIT");
	}
	fs_reader_put(fs, reader);
	lock(fs);
	/* the map is still pinned: the version is of the one used */
	if (!ret || ret == -ENOENT) {
		int vret = e->version(fs, s, version);

		if (vret < 0)
			ret = vret;
	}
	fs->toolfile.pins--;
	return ret;
}

/*
 * The content of an entry with a version, from the render cache (a
 * pointer into it, good while the caller holds `lock`).  A reader renders
 * what is costly outside `lock` (struct entry: render_alone), a writer
 * under it (its transaction may be open).  1: the entry is not to be
 * cached now (render it).
 */
static int cached_content(struct flowfs *fs, const struct node *n,
			  const struct entry *e, struct sbuf *scratch,
			  const struct sbuf **content, int64_t *mtime_ns)
{
	struct fs_rendered *slot, *oldest;
	struct session_info s = n->s;
	int64_t version[2];
	struct sbuf fresh = SBUF_INIT;
	int ret = 1;

	if (e->version(fs, &n->s, version) < 0)
		return 1;
	slot = rendered_find(fs, e, n->s.id, version, &oldest);
	if (!slot) {
		if (e->render_alone && !fs_holds_write(fs))
			ret = render_outside(fs, e, &s, version, &fresh,
					     mtime_ns);
		if (ret == 1) {
			s = n->s;
			ret = e->render(fs, &s, &fresh, mtime_ns);
		}
		if (ret < 0 && ret != -ENOENT) {
			sbuf_release(&fresh);
			return ret;
		}
		/* what is cheap to render again does not push out what
		 * is not (an empty session's summary.json, a big one's) */
		if (fresh.len < FS_RENDERED_MIN) {
			if (sbuf_add(scratch, fresh.buf, fresh.len) < 0)
				ret = -ENOMEM;
			sbuf_release(&fresh);
			*content = scratch;
			return ret;
		}
		/* another reader may have kept the same meanwhile */
		slot = rendered_find(fs, e, s.id, version, &oldest);
	}
	if (!slot) {
		slot = oldest;
		sbuf_release(&slot->content);
		*slot = (struct fs_rendered){
			.valid = true, .render = e->render,
			.session = s.id, .version = { version[0], version[1] },
			.mtime_ns = *mtime_ns, .ret = ret, .content = fresh,
		};
	} else {
		sbuf_release(&fresh);
	}
	slot->used = ++fs->render_clock;
	*mtime_ns = slot->mtime_ns;
	*content = &slot->content;
	return slot->ret;
}

/*
 * An entry's content: *content is the render cache's copy when the entry
 * has a version, else `scratch`, rendered into.  Its size and mtime
 * follow from it.
 */
static int entry_content(struct flowfs *fs, const struct node *n,
			 struct sbuf *scratch, const struct sbuf **content,
			 int64_t *mtime_ns)
{
	const struct entry *e;

	*mtime_ns = fs->mounted_ns;
	*content = scratch;
	if (n->type == N_ITEM) {
		*mtime_ns = n->item.mtime_ns;
		return fs_collections[n->coll].render(fs, &n->item, scratch);
	}
	if (n->type == N_VIEW) {
		if (!view_is_dir(n) && !n->sk->error)
			*mtime_ns = n->sk->files[n->file - 1].mtime_ns;
		return view_content(n, scratch);
	}
	e = &fs_entries[n->row];
	if (!e->render)
		return 0;
	if (e->version && n->has_session) {
		int ret = cached_content(fs, n, e, scratch, content, mtime_ns);

		if (ret <= 0)
			return ret;
		*content = scratch;
	}
	return e->render(fs, n->has_session ? &n->s : NULL, scratch, mtime_ns);
}

/* An entry's content, copied into `out`. */
static int render_entry(struct flowfs *fs, const struct node *n,
			struct sbuf *out, int64_t *mtime_ns)
{
	const struct sbuf *c;
	int ret = entry_content(fs, n, out, &c, mtime_ns);

	return ret || c == out ? ret : sbuf_add(out, c->buf, c->len);
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
	int ret = snap ? 0 : entry_content(fs, n, &scratch, &c, &mtime);

	st->st_size = ret < 0 ? 0 : (off_t)c->len;
	st->st_blocks = (st->st_size + 511) / 512;
	ts_from_ns(&st->st_mtim, mtime);
	st->st_ctim = st->st_mtim;
	sbuf_release(&scratch);
	return ret;
}

/* stat of any node; `generated` tells whether the kernel may cache it. */
static int node_stat_snap(struct flowfs *fs, const struct node *n,
			  struct stat *st, bool *generated,
			  const struct handle *snap);

static int node_stat(struct flowfs *fs, const struct node *n, struct stat *st,
		     bool *generated)
{
	return node_stat_snap(fs, n, st, generated, NULL);
}

/* node_stat, with the content of an open handle when there is one. */
static int node_stat_snap(struct flowfs *fs, const struct node *n,
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
		stat_from_attr(&n->attr, st);
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
		st->st_mode = view_is_dir(n) ? S_IFDIR | 0555 : S_IFREG | 0444;
		st->st_nlink = view_is_dir(n) ? 2 : 1;
		dir_size(st);
		/* a rescan may change a file under the same number */
		*generated = true;
		return view_is_dir(n) ? 0 : stat_content(fs, n, st, snap);
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
	const char *dir = view_path(parent);
	struct sbuf path = SBUF_INIT;
	size_t index;
	int ret;

	if (!view_is_dir(parent))
		return -ENOTDIR;
	if (parent->sk->error)
		return !parent->file && !strcmp(name, error_name)
			       ? resolve(fs, view_ino(parent, 1), out) : -ENOENT;
	if (sbuf_addf(&path, "%s%s%s", dir, *dir ? "/" : "", name) < 0)
		return -ENOMEM;
	ret = skill_file_find(parent->sk, path.buf, &index) ? 0 : -ENOENT;
	sbuf_release(&path);
	return ret < 0 ? ret : resolve(fs, view_ino(parent, index + 1), out);
}

/* The node an entry of the table stands for in `parent`'s session. */
static int resolve_row(struct flowfs *fs, const struct node *parent,
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
		/* resolve() of fs_entry_ino(session, row), but the session
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

/* The node `name` in folder `parent` (the parent already resolved). */
static int reserved_row(struct flowfs *fs, const struct node *parent,
			const char *name);

static int lookup_in(struct flowfs *fs, const struct node *parent,
		     const char *name, struct node *out)
{
	int row = reserved_row(fs, parent, name);
	const struct skill *sk;
	char id[256];
	int coll, ret;

	if (row >= 0)
		return resolve_row(fs, parent, (unsigned)row, out);
	coll = item_name(parent, name, id, sizeof(id));
	if (coll >= 0) {
		struct fs_item item;

		/* One query: the folder already knows session and owner. */
		ret = fs_collections[coll].find(fs, parent->attr.session, id,
						&item);
		if (ret < 0)
			return ret;
		item_node(out, (unsigned)coll, &item, &parent->s);
		return 0;
	}
	/* A session's name never starts with '.', a trash folder's always
	 * with ".Trash": a file manager's probes (.hidden, .directory) cost
	 * no query. */
	if (parent->type == N_ROOT && name[0] != '.') {
		struct session_info si;

		ret = session_find(fs->st, name, &si);
		return ret < 0 ? ret : resolve_session_root(fs, &si, out);
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
	if (parent->type == N_ENTRY) {
		if (fs_entries[parent->row].kind != ENTRY_CATALOG)
			return S_ISDIR(fs_entries[parent->row].mode) ? -ENOENT
								     : -ENOTDIR;
		sk = skill_find(fs->skills, name);
		if (!sk)
			return -ENOENT;
		return resolve(fs, fs_catalog_ino(sk->serial,
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
static double entry_timeout(const struct node *parent, const struct node *n,
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
	    (is_session_root(parent) || in_trash(parent) ||
	     (parent->type == N_REAL && parent->attr.tag != SESSION_UPLOADS &&
	      parent->attr.tag != 0)))
		return 0.0;
	return LONG_TIMEOUT;
}

static int fill_entry(struct flowfs *fs, const struct node *parent,
		      const struct node *n, struct fuse_entry_param *e)
{
	bool generated;
	int ret;

	memset(e, 0, sizeof(*e));
	ret = node_stat(fs, n, &e->attr, &generated);
	if (ret < 0)
		return ret;
	e->ino = n->ino;
	e->generation = 1;
	e->entry_timeout = entry_timeout(parent, n, e->attr.st_mode);
	e->attr_timeout = generated ? 0.0 : LONG_TIMEOUT;
	return 0;
}

/* fill_entry(), but a reserved name absent now is there, nominal, for
 * the process that made it (`made`). */
static int fill_made_entry(struct flowfs *fs, const struct node *parent,
			   struct node *n, bool made,
			   struct fuse_entry_param *e)
{
	int ret = fill_entry(fs, parent, n, e);

	if (ret == -ENOENT && made && n->type == N_ENTRY && !n->nominal) {
		n->nominal = true;
		ret = fill_entry(fs, parent, n, e);
	}
	return ret;
}

/* The reserved entry `name` would stand for in this folder, or -1. */
static int reserved_row(struct flowfs *fs, const struct node *parent,
			const char *name)
{
	int scope = scope_of(parent);

	return scope >= 0 ? fs_entry_find(fs, parent->has_session ? &parent->s
								 : NULL,
					  (enum entry_scope)scope, name) : -1;
}

/* ---- reserved names ------------------------------------------------------ */

/*
 * The names flowfs gives meaning in a session — the table's rows in its
 * folder and in output/, and every name in parameters_output/ — cannot
 * really go or come: status is there whatever is done to it.  So that
 * the tools that copy a session back in work (cp -a, rsync -a, tar x, a
 * file manager), a process may still write, remove and make them:
 *  - what is written to a generated file (anything in parameters_output/
 *    included) is taken and dropped; the log says so when it differed;
 *  - removing one changes nothing, but the process that removed it finds
 *    it gone until it makes it again: tar x removes a name that exists
 *    and creates it anew, and would loop for ever on EEXIST;
 *  - making one that is absent now (output/for005.dat before the
 *    parameters are complete, prompt.txt before a skill is bound) is
 *    taken, and the process that made it finds it, an empty file (or a
 *    link), until it is really there: cp -a sets its times by name.
 * Other processes see what flowfs shows.  A process's view of a name is
 * kept for FS_SEEN_NS after its last use, for FS_SEEN_SLOTS names.
 */

/* The process a request comes from: requests carry the thread, and the
 * threads of a process (a file manager's) share one view.  A read of
 * /proc: only when a note could be the caller's (seen_mine()). */
static pid_t caller(fuse_req_t req)
{
	pid_t tid = fuse_req_ctx(req)->pid, who = tid;
	char path[64], line[128];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return who;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Tgid:", 5)) {
			who = (pid_t)atoi(line + 5);
			break;
		}
	fclose(f);
	return who;
}

/* Whether live note `s` is the calling process's; *who: the caller,
 * found once (0 until then).  The thread that made the note needs no
 * look in /proc. */
static bool seen_mine(const struct fs_seen *s, fuse_req_t req, pid_t *who)
{
	if (s->tid == fuse_req_ctx(req)->pid)
		return true;
	if (!*who)
		*who = caller(req);
	return s->who == *who;
}

static bool seen_live(const struct fs_seen *s, int64_t now)
{
	return s->until_ns > now;
}

/* A live note on `name` in `parent`, any process's (its view of the name
 * differs from others': the kernel must ask, every time). */
static struct fs_seen *seen_named(struct flowfs *fs, uint64_t parent,
				  const char *name)
{
	int64_t now = fclock_now_ns();

	for (int i = 0; i < FS_SEEN_SLOTS; i++) {
		struct fs_seen *s = &fs->seen[i];

		if (seen_live(s, now) && s->parent == parent &&
		    !strcmp(s->name, name))
			return s;
	}
	return NULL;
}

/* The calling process's live note on `name` in `parent`, kept alive. */
static struct fs_seen *seen_find(struct flowfs *fs, fuse_req_t req,
				 uint64_t parent, const char *name)
{
	int64_t now = fclock_now_ns();
	pid_t who = 0;

	for (int i = 0; i < FS_SEEN_SLOTS; i++) {
		struct fs_seen *s = &fs->seen[i];

		if (seen_live(s, now) && s->parent == parent &&
		    !strcmp(s->name, name) && seen_mine(s, req, &who)) {
			s->until_ns = now + FS_SEEN_NS;
			return s;
		}
	}
	return NULL;
}

/* Note that the calling process removed (`ino` 0) or made (as inode
 * `ino`) `name` in `parent`. */
static struct fs_seen *seen_note(struct flowfs *fs, fuse_req_t req,
				 uint64_t parent, const char *name,
				 uint64_t ino)
{
	struct fs_seen *s = seen_find(fs, req, parent, name);

	if (!s) {
		s = &fs->seen[0];
		for (int i = 1; i < FS_SEEN_SLOTS; i++)
			if (fs->seen[i].until_ns < s->until_ns)
				s = &fs->seen[i];
		s->who = caller(req);
		s->parent = parent;
		snprintf(s->name, sizeof(s->name), "%s", name);
	}
	s->tid = fuse_req_ctx(req)->pid;
	s->ino = ino;
	s->folder = 0;
	s->folder_mtime_ns = 0;
	s->until_ns = fclock_now_ns() + FS_SEEN_NS;
	return s;
}

/* Whether the process `req` comes from made a reserved name that is
 * inode `ino` now (so it is there for it, absent or not). */
static bool made_by_caller(struct flowfs *fs, fuse_req_t req, uint64_t ino)
{
	int64_t now = fclock_now_ns();
	pid_t who = 0;

	for (int i = 0; i < FS_SEEN_SLOTS; i++) {
		const struct fs_seen *s = &fs->seen[i];

		if (seen_live(s, now) && s->ino == ino &&
		    seen_mine(s, req, &who))
			return true;
	}
	return false;
}

/* parameters_output/: every name in it stands for its one file. */
static bool is_paramout(const struct node *p)
{
	return scope_of(p) == SCOPE_PARAMOUT;
}

/* The row of the table `name` in folder `p` stands for when that is a
 * session's (above); -1 for names that are ordinary files there. */
static int session_row(struct flowfs *fs, const struct node *p,
		       const char *name)
{
	if (!p->has_session)
		return -1;
	if (is_paramout(p)) {
		for (unsigned row = 1; row < fs_entry_count; row++)
			if (fs_entries[row].scope == SCOPE_PARAMOUT)
				return (int)row;
		return -1;
	}
	return scope_of(p) >= SCOPE_SESSION ? reserved_row(fs, p, name) : -1;
}

/* The node of row `row` in `p` as a process that made `name` there sees
 * it: nominal when it is another name in parameters_output/ than its
 * file's.  Whether it is there now, the stat that follows finds out
 * (stat_made()). */
static int made_node(struct flowfs *fs, const struct node *p, unsigned row,
		     const char *name, struct node *n)
{
	struct sbuf buf = SBUF_INIT;
	const char *real;
	int ret = resolve_row(fs, p, row, n);

	if (ret < 0)
		return ret;
	real = fs_entry_name(fs, &p->s, row, &buf);
	if (!real || strcmp(real, name))
		n->nominal = true;
	sbuf_release(&buf);
	return 0;
}

/* node_stat_snap(), but a reserved name absent now is there, nominal,
 * for the process that made it (`made`, or a note says so). */
static int stat_made(struct flowfs *fs, fuse_req_t req, struct node *n,
		     struct stat *st, bool *generated,
		     const struct handle *snap, bool made)
{
	int ret = node_stat_snap(fs, n, st, generated, snap);

	if (ret == -ENOENT && n->type == N_ENTRY && !n->nominal &&
	    (made || made_by_caller(fs, req, n->ino))) {
		n->nominal = true;
		ret = node_stat_snap(fs, n, st, generated, NULL);
	}
	return ret;
}

/* lookup_in(), as the calling process sees reserved names; *made: it
 * made the name (it is there for it). */
static int lookup_seen(struct flowfs *fs, fuse_req_t req,
		       const struct node *p, const char *name, struct node *n,
		       bool *made)
{
	const struct fs_seen *seen = seen_named(fs, p->ino, name);
	int row = seen ? session_row(fs, p, name) : -1;

	*made = false;
	seen = row < 0 ? NULL : seen_find(fs, req, p->ino, name);
	/* a removed folder came back new at once: it stays visible */
	if (!seen || (!seen->ino && S_ISDIR(fs_entries[row].mode)))
		return lookup_in(fs, p, name, n);
	if (!seen->ino)
		return -ENOENT;
	*made = true;
	/* what it made stands there for it: a stand-in file too */
	if (fs_ino_space(seen->ino) == FS_SPACE_STANDIN)
		return resolve(fs, seen->ino, n);
	return made_node(fs, p, (unsigned)row, name, n);
}

/* ---- the kernel's references ------------------------------------------- */

/*
 * The kernel keeps what a lookup, create, mkdir or readdirplus entry gave
 * it until it sends FORGET (tree.h, "Kernel references"): a real row's
 * references are counted, so that a file unlinked or renamed over in
 * between still answers its GETATTR and OPEN.  Generated entries are
 * made from their inode number: nothing to count.  The lock held.
 */
static bool counted(fuse_ino_t ino)
{
	return ino && ino != FS_ROOT_INO && !fs_ino_is_virtual(ino);
}

static int entry_given(struct flowfs *fs, fuse_ino_t ino)
{
	return counted(ino) ? tree_ref(fs->tree, ino) : 0;
}

/* A reply that carried it did not reach the kernel (interrupted). */
static void entry_not_taken(struct flowfs *fs, fuse_ino_t ino)
{
	if (!counted(ino))
		return;
	lock_write(fs);
	tree_forget(fs->tree, ino, 1);
	unlock(fs);
}

/* The kernel forgets `n` references: a count, unless it was the last one
 * of an unlinked file, whose row then goes (a writer's work).  A row the
 * store could not delete now stays unlinked (nlink 0) until the next
 * mount sweeps it (tree_new()). */
static void forget(struct flowfs *fs, fuse_ino_t ino, uint64_t n)
{
	lock(fs);
	if (tree_forget_deletes(fs->tree, ino, n)) {
		unlock(fs);
		lock_write(fs);
	}
	tree_forget(fs->tree, ino, n);
	unlock(fs);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	struct flowfs *fs = fs_of(req);

	if (counted(ino))
		forget(fs, ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	struct flowfs *fs = fs_of(req);

	/* one at a time: each may delete a big file's data (the lock is
	 * not held across a batch of them) */
	for (size_t i = 0; i < count; i++) {
		if (counted(forgets[i].ino))
			forget(fs, forgets[i].ino, forgets[i].nlookup);
	}
	fuse_reply_none(req);
}

/* ---- lookup, getattr, setattr ----------------------------------------- */

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct node p, n;
	bool made;
	int ret;

	if (strlen(name) > FNAME_MAX) {
		fuse_reply_err(req, ENAMETOOLONG);
		return;
	}
	lock(fs);
	ret = resolve(fs, parent, &p);
	if (!ret)
		ret = lookup_seen(fs, req, &p, name, &n, &made);
	if (!ret)
		ret = fill_made_entry(fs, &p, &n, made, &e);
	/* a name a process sees its own way: the kernel asks each time */
	if (!ret && seen_named(fs, p.ino, name))
		e.entry_timeout = 0.0;
	if (!ret)
		ret = entry_given(fs, e.ino);
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) < 0)
		entry_not_taken(fs, e.ino);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fi ? handle_of(fi) : NULL;
	bool made = h && h->kind == H_SINK;
	struct stat st;
	struct node n;
	bool generated;
	int ret;

	/* Through an open handle of generated content or a document, its
	 * copy answers (for a writer: what it has written so far). */
	if (h && h->kind != H_GENERATED && h->kind != H_DOC)
		h = NULL;
	lock(fs);
	ret = resolve(fs, ino, &n);
	/* absent now, but made by the caller (a writer of it, cp -a setting
	 * its times, tar's check of its placeholder): there for it */
	if (!ret)
		ret = stat_made(fs, req, &n, &st, &generated, h, made);
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, generated ? 0.0 : LONG_TIMEOUT);
}

static void setattr_real(struct flowfs *fs, fuse_req_t req, fuse_ino_t ino,
			 struct stat *attr, int to_set)
{
	struct tree_setattr sa = { 0 };
	struct tree_attr a;
	struct stat st;
	int ret;

	if (to_set & FUSE_SET_ATTR_MODE) {
		sa.what |= TREE_SET_MODE;
		sa.mode = attr->st_mode;
	}
	if (to_set & FUSE_SET_ATTR_UID) {
		sa.what |= TREE_SET_UID;
		sa.uid = attr->st_uid;
	}
	if (to_set & FUSE_SET_ATTR_GID) {
		sa.what |= TREE_SET_GID;
		sa.gid = attr->st_gid;
	}
	if (to_set & FUSE_SET_ATTR_SIZE) {
		sa.what |= TREE_SET_SIZE;
		sa.size = attr->st_size;
	}
	if (to_set & FUSE_SET_ATTR_ATIME_NOW)
		sa.what |= TREE_SET_ATIME_NOW;
	else if (to_set & FUSE_SET_ATTR_ATIME) {
		sa.what |= TREE_SET_ATIME;
		sa.atime_ns = ns_from_ts(&attr->st_atim);
	}
	if (to_set & FUSE_SET_ATTR_MTIME_NOW)
		sa.what |= TREE_SET_MTIME_NOW;
	else if (to_set & FUSE_SET_ATTR_MTIME) {
		sa.what |= TREE_SET_MTIME;
		sa.mtime_ns = ns_from_ts(&attr->st_mtim);
	}
	lock_write(fs);
	ret = tree_setattr(fs->tree, ino, &sa, &a);
	/* a cut uploads/deck changes output/for005.dat */
	if (!ret && (to_set & FUSE_SET_ATTR_SIZE))
		changed(fs, a.session);
	unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	stat_from_attr(&a, &st);
	fuse_reply_attr(req, &st, LONG_TIMEOUT);
}

/*
 * Count `len` bytes for h's buffer when the budgets (above) allow:
 * documents being written and generated files open (each holds the
 * copy it was rendered into) each have their own, so that readers (of
 * the log that says why a write was refused, say) are not refused for a
 * writer's drafts.  The handle list is what a session's and a user's
 * shares are summed from, walked only when the mount's total could let
 * one pass its own (the smallest, DOC_SESSION_BUDGET).
 */
static int doc_budget(struct flowfs *fs, struct handle *h, size_t len)
{
	size_t session = 0, user = 0, others = 0, *total;
	bool other = h->uid != fs->uid;
	int ret = 0;

	pthread_mutex_lock(&fs->handles_lock);
	total = budget_total(fs, h);
	if (*total - h->budgeted + len > DOC_MOUNT_BUDGET) {
		ret = -ENOSPC;
	} else if (len > h->budgeted &&
		   *total - h->budgeted + len > DOC_SESSION_BUDGET) {
		for (const struct handle *o = fs->open_handles; o; o = o->next) {
			if (budget_total(fs, o) != total)
				continue;
			if (o->session == h->session)
				session += o->budgeted;
			if (o->uid == h->uid)
				user += o->budgeted;
			if (o->uid != fs->uid)
				others += o->budgeted;
		}
		if (session - h->budgeted + len > DOC_SESSION_BUDGET ||
		    (other && (user - h->budgeted + len > DOC_USER_BUDGET ||
			       others - h->budgeted + len > DOC_OTHERS_BUDGET)))
			ret = -ENOSPC;
	}
	if (!ret) {
		*total = *total - h->budgeted + len;
		h->budgeted = len;
	}
	pthread_mutex_unlock(&fs->handles_lock);
	return ret;
}

/* The log's line for a buffer refused room (once per descriptor), the
 * lock held. */
static void log_budget(struct flowfs *fs, struct handle *h, size_t len)
{
	struct session_info s;
	char path[STATUS_PATH_MAX], line[FERR_MESSAGE_MAX];

	if (h->budget_logged || session_get(fs->st, h->session, &s) < 0)
		return;
	h->budget_logged = true;
	target_path(&h->target, path, sizeof(path));
	if (h->uid == fs->uid)
		snprintf(line, sizeof(line),
			 "no room to hold %zu bytes: %s hold at most %zu MiB per session and %zu MiB in all until they are closed",
			 len, h->kind == H_DOC ? "documents being written"
					       : "generated files open",
			 DOC_SESSION_BUDGET >> 20, DOC_MOUNT_BUDGET >> 20);
	else
		snprintf(line, sizeof(line),
			 "no room to hold %zu bytes: %s hold at most %zu MiB per session, %zu MiB per user other than the mount's (%zu MiB for all of them) and %zu MiB in all until they are closed",
			 len, h->kind == H_DOC ? "documents being written"
					       : "generated files open",
			 DOC_SESSION_BUDGET >> 20, DOC_USER_BUDGET >> 20,
			 DOC_OTHERS_BUDGET >> 20, DOC_MOUNT_BUDGET >> 20);
	fs_log(fs, s.id, s.name, path, line);
}

/* A document opened for writing, or a generated file opened at all,
 * holds what it read in its buffer. */
static int open_budget(struct flowfs *fs, struct handle *h)
{
	int ret = h->kind == H_DOC || h->kind == H_GENERATED ||
			  h->kind == H_SINK
			  ? doc_budget(fs, h, h->content.len) : 0;

	if (ret < 0)
		log_budget(fs, h, h->content.len);
	return ret;
}

/* The handle's buffer (a document's draft) made `size` bytes long: cut,
 * or grown with zeros. */
static int buffer_resize(struct flowfs *fs, struct handle *h, size_t size)
{
	int ret = doc_budget(fs, h, size);

	if (ret < 0) {
		log_budget(fs, h, size);
		return ret;
	}
	if (size > h->content.len) {
		size_t old = h->content.len;

		ret = sbuf_grow(&h->content, size - old);
		if (ret < 0)
			return ret;
		memset(h->content.buf + old, 0, size - old);
	} else if (h->content.alloc > 2 * size + 65536) {
		/* the budget counts what is held: a cut buffer gives its
		 * memory back too (write 1 byte at 16 MiB, truncate to 0,
		 * again on another descriptor...) */
		struct sbuf cut = SBUF_INIT;

		if (sbuf_add(&cut, h->content.buf, size) < 0)
			return -ENOMEM;
		sbuf_release(&h->content);
		h->content = cut;
		return 0;
	}
	sbuf_setlen(&h->content, size);
	return 0;
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = fi ? handle_of(fi) : NULL;
	const int times = FUSE_SET_ATTR_ATIME | FUSE_SET_ATTR_MTIME |
			  FUSE_SET_ATTR_ATIME_NOW | FUSE_SET_ATTR_MTIME_NOW |
			  FUSE_SET_ATTR_CTIME;
	const struct handle *snap;
	struct stat st;
	struct node n;
	bool generated;
	int ret;

	/* touch(1) of a refresh (refresh.c): watchers look, nothing changes */
	if (fs_refresher_is(fs, fuse_req_ctx(req)->pid)) {
		op_getattr(req, ino, NULL);
		return;
	}
	if (!fs_ino_is_virtual(ino) && ino != FS_ROOT_INO) {
		setattr_real(fs, req, ino, attr, to_set);
		return;
	}
	if (h && h->kind != H_DOC)
		h = NULL;
	/* an open document's size and time are its handle's (op_getattr) */
	snap = h;
	lock_write(fs);
	ret = resolve(fs, ino, &n);
	if (ret < 0)
		goto out;
	if (read_only_tree(&n) || n.type == N_ROOT) {
		ret = (to_set & ~times) ? -EROFS
					: node_stat_snap(fs, &n, &st, &generated,
							 snap);
		goto out;
	}
	/* not there now, but made by the caller (reserved names, above):
	 * cp -a sets its times and mode */
	ret = stat_made(fs, req, &n, &st, &generated, snap, false);
	if (ret < 0)
		goto out;
	/* a copy brought back sets the mode and owner it had: the ones
	 * there are fine, others are not flowfs's to change — but for
	 * a name the caller made, which is nothing (rsync's temporary files
	 * in parameters_output/ are 0600) */
	if ((((to_set & FUSE_SET_ATTR_MODE) &&
	      (attr->st_mode & 07777) != (st.st_mode & 07777)) ||
	     ((to_set & FUSE_SET_ATTR_UID) && attr->st_uid != st.st_uid) ||
	     ((to_set & FUSE_SET_ATTR_GID) && attr->st_gid != st.st_gid)) &&
	    !n.nominal && !made_by_caller(fs, req, ino)) {
		ret = -EPERM;
		goto out;
	}
	/* touch(1) on a generated file: nothing to store, not an error */
	if (!(to_set & FUSE_SET_ATTR_SIZE))
		goto out;
	/* Only an open document can be cut: its buffer is the draft of the
	 * next version.  A generated file takes it and stays as it is, as
	 * it does with what is written to it. */
	if (!h) {
		ret = n.type == N_ITEM || fs_entries[n.row].kind == ENTRY_DOC
			      ? -EINVAL : 0;
		goto out;
	}
	ret = attr->st_size > DOC_MAX_SIZE
		      ? -EFBIG : buffer_resize(fs, h, (size_t)attr->st_size);
	if (ret < 0)
		goto out;
	h->dirty = true;
	h->refused = false;
	/* the size it has now */
	ret = node_stat_snap(fs, &n, &st, &generated, snap);
out:
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_attr(req, &st, 0.0);
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino)
{
	struct flowfs *fs = fs_of(req);
	struct sbuf sb = SBUF_INIT;
	struct node n;
	int64_t mtime;
	int ret;

	if (ino == FS_ROOT_INO) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	lock(fs);
	if (!fs_ino_is_virtual(ino)) {
		ret = tree_readlink(fs->tree, ino, &sb);
	} else {
		ret = resolve(fs, ino, &n);
		if (!ret && (n.type != N_ENTRY ||
			     fs_entries[n.row].kind != ENTRY_LINK))
			ret = -EINVAL;
		if (!ret)
			ret = render_entry(fs, &n, &sb, &mtime);
	}
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_readlink(req, sb.buf);
	sbuf_release(&sb);
}

/* ---- creating ------------------------------------------------------------ */

/*
 * A refusal at the mount's root, where no session's log can keep it:
 * the root's log (.flowfs/log) says why; returns `code`.
 */
static int refuse_at_root(struct flowfs *fs, int code, const char *name,
			  const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

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


/* The path of `name` in folder `p` of a session, as its log names it. */
static void session_path(const struct node *p, const char *name, char *buf,
			 size_t size)
{
	int scope = scope_of(p);

	snprintf(buf, size, "%s%s",
		 fs_scope_folder(scope < 0 ? SCOPE_SESSION
					   : (enum entry_scope)scope),
		 name);
}

/* The path of entry node `n` (N_ENTRY) in its session, as its log names
 * it. */
static void node_path(struct flowfs *fs, const struct node *n, char *buf,
		      size_t size)
{
	const struct entry *e = &fs_entries[n->row];
	struct sbuf name = SBUF_INIT;
	const char *shown = fs_entry_name(fs, &n->s, n->row, &name);

	snprintf(buf, size, "%s%s", fs_scope_folder(e->scope),
		 shown ? shown : "");
	sbuf_release(&name);
}

/* What was written to (or moved onto) generated file `n` — `bytes` of
 * it, not what it holds — was dropped: the session's log says so. */
static void log_dropped(struct flowfs *fs, const struct node *n,
			const char *path, size_t bytes, const char *how)
{
	char line[FERR_MESSAGE_MAX];

	snprintf(line, sizeof(line), "flowfs makes this file: the %zu bytes %s"
		 " it were dropped", bytes, how);
	fs_log(fs, n->s.id, n->s.name, path, line);
}

/*
 * A process makes a reserved name (above) — the kernel asks only when
 * the name looks absent to it — as a folder (mkdir), a file (create,
 * mknod) or a link (symlink): *n, the node it now stands for.  A folder
 * is made by being there.  A file where a link is stands in for it, for
 * that process, until it removes it: tar x makes an empty file where a
 * link to "../" goes and swaps the link in at the end.  A file where a
 * folder is gives EISDIR, and the other mismatches EPERM: EEXIST would
 * send tar round its loop.  A link to elsewhere than flowfs's is
 * dropped, and the log says so.
 */
static int make_reserved(struct flowfs *fs, fuse_req_t req,
			 const struct node *p, const char *name, int row,
			 mode_t type, const char *target, struct node *n)
{
	const struct entry *e = &fs_entries[row];
	mode_t is = S_ISDIR(e->mode) ? S_IFDIR
		    : e->kind == ENTRY_LINK ? S_IFLNK : S_IFREG;
	struct sbuf now = SBUF_INIT;
	int64_t mtime;
	int ret;

	if (type == S_IFREG && is == S_IFLNK) {
		ret = resolve(fs, fs_standin_ino(p->s.id, (unsigned)row), n);
		if (!ret)
			seen_note(fs, req, p->ino, name, n->ino);
		return ret;
	}
	if (type != is)
		return type == S_IFREG && is == S_IFDIR ? -EISDIR : -EPERM;
	ret = made_node(fs, p, (unsigned)row, name, n);
	if (ret < 0)
		return ret;
	seen_note(fs, req, p->ino, name, n->ino);
	if (type == S_IFLNK && !n->nominal &&
	    render_entry(fs, n, &now, &mtime) == 0 && strcmp(now.buf, target)) {
		char path[STATUS_PATH_MAX], line[FERR_MESSAGE_MAX];

		session_path(p, name, path, sizeof(path));
		snprintf(line, sizeof(line), "flowfs makes this link (to %s):"
			 " the link to %.200s was dropped", now.buf, target);
		fs_log(fs, n->s.id, n->s.name, path, line);
	}
	sbuf_release(&now);
	return 0;
}

static int clear_doc(struct flowfs *fs, const struct node *n);

/*
 * unlink (or rmdir, `dir`) of a reserved name: nothing goes, but the
 * calling process finds it gone (above).  A document is emptied first —
 * what it held is its user's, and rm -rf of a session must leave nothing
 * that keeps rmdir from removing it — and an empty uploads/ or output/
 * comes back new.  The errnos of a real folder for the wrong type or no
 * name.
 */
static int remove_reserved(struct flowfs *fs, fuse_req_t req,
			   const struct node *p, const char *name, int row,
			   bool dir)
{
	const struct entry *e = &fs_entries[row];
	struct fs_seen *seen = seen_find(fs, req, p->ino, name);
	bool removed = seen && !seen->ino;
	struct tree_attr folder;
	struct node n;
	int ret;

	if (removed && !S_ISDIR(e->mode))
		return -ENOENT;
	ret = made_node(fs, p, (unsigned)row, name, &n);
	if (ret < 0)
		return ret;
	/* a folder comes back at once (below), so it stays visible; removing
	 * it again untouched since is tar x looping over a file of a
	 * folder's name (parameters_output/ cannot tell: it is never
	 * touched) */
	if (removed && (n.type == N_ENTRY ||
			(seen->folder == n.ino &&
			 seen->folder_mtime_ns == n.attr.mtime_ns)))
		return -EBUSY;
	/* another name in parameters_output/ is there only to its maker */
	if (n.nominal && !seen && is_paramout(p))
		return -ENOENT;
	if (dir != S_ISDIR(e->mode))
		return dir ? -ENOTDIR : -EISDIR;
	if (e->kind == ENTRY_FOLDER) {
		ret = session_renew_folder(fs->st, fs->tree, &n.s, e->folder);
		if (!ret)
			ret = tree_getattr(fs->tree,
					   session_folder_ino(&n.s, e->folder),
					   &folder);
	}
	if (e->kind == ENTRY_DOC)
		ret = clear_doc(fs, &n);
	if (ret < 0)
		return ret;
	seen = seen_note(fs, req, p->ino, name, 0);
	if (e->kind == ENTRY_FOLDER) {
		seen->folder = folder.ino;
		seen->folder_mtime_ns = folder.mtime_ns;
		changed(fs, n.s.id);
	}
	return 0;
}

/* Check that `name` may be created in folder `p`; 0 or -errno (EROFS in
 * flowfs's own folders). */
static int may_create(struct flowfs *fs, const struct node *p,
		      const char *name)
{
	int ret;

	if (p->type == N_ENTRY || p->type == N_VIEW)
		return -EROFS;
	if (reserved_row(fs, p, name) >= 0)
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
	if (!ret && is_item_name(p, name))
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
 * (resolve() of it, without reading it back). */
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
static int make(struct flowfs *fs, fuse_req_t req, const struct node *p,
		const char *name, mode_t mode, const char *target,
		struct node *n, struct fuse_entry_param *e)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct session_info s;
	struct tree_attr a;
	int row, ret;

	row = session_row(fs, p, name);
	if (row >= 0) {
		ret = make_reserved(fs, req, p, name, row, mode & S_IFMT,
				    target, n);
		return ret < 0 ? ret : fill_made_entry(fs, p, n, true, e);
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
		return fill_entry(fs, p, n, e);
	}
	ret = may_create(fs, p, name);
	if (ret < 0)
		return ret;
	if (p->type == N_ROOT) {
		ret = session_create(fs->st, fs->tree, name, mode, ctx->uid,
				     ctx->gid, &s, NULL);
		if (!ret)
			ret = resolve_session_root(fs, &s, n);
		return ret < 0 ? ret : fill_entry(fs, p, n, e);
	}
	ret = tree_create(fs->tree, p->ino, name, S_ISDIR(mode)
			  ? S_IFDIR | (mode & 07777) : mode, ctx->uid, ctx->gid,
			  target, &a);
	if (ret < 0)
		return ret;
	changed(fs, session_of(p));
	new_real_node(&a, n);
	return fill_entry(fs, p, n, e);
}

/* make() in folder `parent`, replied to. */
static void make_in(fuse_req_t req, fuse_ino_t parent, const char *name,
		    mode_t mode, const char *target)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct node p, n;
	int ret;

	lock_write(fs);
	ret = resolve(fs, parent, &p);
	if (!ret)
		ret = make(fs, req, &p, name, mode, target, &n, &e);
	/* made: no reference counted is the old behaviour, not a failure */
	if (!ret)
		entry_given(fs, e.ino);
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else if (fuse_reply_entry(req, &e) < 0)
		entry_not_taken(fs, e.ino);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	make_in(req, parent, name, S_IFDIR | mode, NULL);
}

static void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	(void)rdev;
	if (!S_ISREG(mode))
		fuse_reply_err(req, EPERM);
	else
		make_in(req, parent, name, mode, NULL);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	if (strlen(link) >= 4096)
		fuse_reply_err(req, ENAMETOOLONG);
	else
		make_in(req, parent, name, S_IFLNK | 0777, link);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	(void)ino;
	(void)newparent;
	(void)newname;
	/* Rows have one name each; tools fall back to copying. */
	fuse_reply_err(req, EPERM);
}

/* ---- removing ------------------------------------------------------------- */

static int log_refusal(struct flowfs *fs, const struct session_info *s,
		       const char *path, const struct ferr *err);

/* The log line of a refused <folder>/<name> of a collection. */
static void log_item_refusal(struct flowfs *fs, const struct session_info *s,
			     const char *folder, const char *name,
			     const struct ferr *err)
{
	char path[STATUS_PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", folder, name);
	log_refusal(fs, s, path, err);
}

static void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	struct node p;
	char id[256];
	int row, coll, ret;

	lock_write(fs);
	ret = resolve(fs, parent, &p);
	row = ret < 0 ? -1 : session_row(fs, &p, name);
	if (row >= 0) {
		/* it says itself when it changed something */
		ret = remove_reserved(fs, req, &p, name, row, false);
		goto reply;
	}
	if (!ret && p.type == N_ROOT) {
		struct session_info s;

		ret = reserved_row(fs, &p, name) >= 0 ? -EROFS
			: session_find(fs->st, name, &s) < 0 ? -ENOENT : -EISDIR;
		goto out;
	}
	if (!ret && (p.type == N_ENTRY || p.type == N_VIEW))
		ret = -EROFS;
	if (ret < 0)
		goto out;
	coll = item_name(&p, name, id, sizeof(id));
	if (coll >= 0) {
		struct ferr err = FERR_INIT;

		ret = fs_collections[coll].remove(fs, p.attr.session, id, &err);
		if (ret < 0 && err.message[0])
			log_item_refusal(fs, &p.s, fs_collections[coll].folder,
					 name, &err);
		goto out;
	}
	ret = tree_unlink(fs->tree, parent, name);
out:
	if (!ret)
		changed(fs, session_of(&p));
reply:
	unlock(fs);
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
				     " rounds (rm -rf removes it all)");
	/* before the rows that know the jobs go with the session */
	if (!ret && fs->jobs)
		jobs_cancel(fs->jobs, s->id);
	if (!ret)
		ret = session_delete(fs->st, fs->tree, s->id);
	if (!ret) {
		fs_cancel_runs(fs, s->id);
		status_cache_forget(&fs->status_cache, s->id);
	}
	return ret;
}

static void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct flowfs *fs = fs_of(req);
	struct session_info s;
	struct node p, n;
	int row, ret;

	lock_write(fs);
	ret = resolve(fs, parent, &p);
	row = ret < 0 ? -1 : session_row(fs, &p, name);
	if (row >= 0) {
		/* it says itself when it changed something */
		ret = remove_reserved(fs, req, &p, name, row, true);
		goto reply;
	}
	if (!ret && p.type == N_ROOT) {
		if (reserved_row(fs, &p, name) >= 0)
			ret = -EROFS;
		else if (session_find(fs->st, name, &s) == 0)
			ret = remove_session(fs, &s);
		else
			ret = tree_trash_remove(fs->tree, name);
		goto out;
	}
	if (!ret && (p.type == N_ENTRY || p.type == N_VIEW))
		ret = -EROFS;
	/* a session in a trash (emptying it) */
	if (!ret && in_trash(&p) && lookup_in(fs, &p, name, &n) == 0 &&
	    resolve(fs, n.ino, &n) == 0 && is_session_root(&n)) {
		ret = remove_session(fs, &n.s);
		goto out;
	}
	if (!ret)
		ret = tree_rmdir(fs->tree, parent, name);
out:
	if (!ret)
		changed(fs, session_of(&p));
reply:
	unlock(fs);
	fuse_reply_err(req, -ret);
}

/* ---- rename --------------------------------------------------------------- */

static int log_refusal(struct flowfs *fs, const struct session_info *s,
		       const char *path, const struct ferr *err)
{
	char line[FERR_MESSAGE_MAX + 64];
	size_t len = strlen(path);
	const char *message = line;

	ferr_format(err, line, sizeof(line));
	/* messages that name their file already (rounds') say it once */
	if (!strncmp(line, path, len) && !strncmp(line + len, ": ", 2))
		message += len + 2;
	return fs_log(fs, s->id, s->name, path, message);
}


/* The path status names a document by ("session.json", "nodes/x.json"). */
static void target_path(const struct doc_target *t, char *buf, size_t size)
{
	if (t->in_collection)
		snprintf(buf, size, "%s/%s.json", fs_collections[t->coll].folder,
			 t->id);
	else
		snprintf(buf, size, "%s%s",
			 fs_scope_folder(fs_entries[t->row].scope),
			 fs_entries[t->row].name);
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
	target_path(t, path, sizeof(path));
	log_refusal(fs, &s, path, &err);
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
static int commit_target(struct flowfs *fs, const struct doc_target *t,
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
	if (ret < 0 && err.message[0]) {
		target_path(t, path, sizeof(path));
		log_refusal(fs, &s, path, &err);
	}
	return changed_if(fs, t->session, ret);
}

/* The document a writer of node `n` (or of name `name` in folder `dir`)
 * writes to. */
static void node_target(const struct node *n, struct doc_target *t)
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
static int clear_doc(struct flowfs *fs, const struct node *n)
{
	const struct entry *e = &fs_entries[n->row];
	struct doc_target t;
	int ret;

	node_target(n, &t);
	ret = commit_target(fs, &t, e->cleared, strlen(e->cleared));
	return ret == -EINVAL ? -EBUSY : ret;
}

/* rename of a file onto a document (an editor's save, a file brought
 * back from the trash): store it, drop the file. */
static int rename_onto_doc(struct flowfs *fs, const struct node *p,
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
	ret = commit_target(fs, t, text.buf, text.len);
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
 * entry_timeout()).
 */
static int copy_away(struct flowfs *fs, const struct node *n,
		     fuse_ino_t newparent, const char *newname)
{
	struct sbuf text = SBUF_INIT;
	struct node np;
	int64_t mtime;
	int ret;

	ret = resolve(fs, newparent, &np);
	if (ret < 0)
		return ret;
	if (np.type != N_REAL)
		return np.type == N_ROOT ? -EPERM : -EROFS;
	if (reserved_row(fs, &np, newname) >= 0 || is_item_name(&np, newname))
		return -EEXIST;
	ret = fname_check_entry(newname, NULL);
	if (ret < 0)
		return ret;
	ret = render_entry(fs, n, &text, &mtime);
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
static bool moves_out(const struct session_info *s, const struct node *np)
{
	return np->type == N_REAL && np->attr.session != s->id;
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

	if (is_paramout(p) && is_paramout(np))
		return 0;
	/* uploads/ or output/ into the trash (Delete on it in a file
	 * manager, which would otherwise offer to delete it for good): its
	 * files go there, the session gets an empty one */
	if (fs_entries[row].kind == ENTRY_FOLDER && in_trash(np) &&
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
	ret = made_node(fs, p, (unsigned)row, name, &n);
	if (!ret && n.nominal)
		ret = -ENOENT;
	if (!ret)
		ret = copy_away(fs, &n, np->ino, newname);
	/* moved out of its session (to the trash): a document goes with
	 * it, as it would with unlink; kept, the copy goes */
	if (!ret && moves_out(&n.s, np) && fs_entries[row].kind == ENTRY_DOC) {
		ret = clear_doc(fs, &n);
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
	int ret = n->standin ? 0 : render_entry(fs, n, out, &mtime);

	return ret == -ENOENT ? 0 : ret;
}

/* Whether file `src` holds `bytes` (read only when the sizes agree). */
static int holds(struct flowfs *fs, const struct tree_attr *src,
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
		ret = made_node(fs, np, (unsigned)newrow, newname, &n);
	if (!ret)
		ret = made_content(fs, &n, &now);
	if (!ret)
		ret = holds(fs, &src, &now, &same);
	if (ret < 0)
		goto out;
	session_path(np, newname, path, sizeof(path));
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
		log_dropped(fs, &n, path, (size_t)src.size, "moved onto");
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

	if ((p->type == N_ROOT && reserved_row(fs, p, name) >= 0) ||
	    (np->type == N_ROOT && reserved_row(fs, np, newname) >= 0))
		return -EROFS;
	if (p->type == N_ROOT) {
		if (session_find(fs->st, name, &s) < 0)
			return tree_trash_lookup(fs->tree, name, &n.attr) == 0
				       ? refuse_at_root(fs, -EPERM, name,
						"a trash folder stays where it is")
				       : -ENOENT;
		if (np->type == N_ROOT || in_trash(np))
			return move_session(fs, &s, np, newname, noreplace);
		return refuse_at_root(fs, -EXDEV, name, "a session folder moves"
				      " only at the root or into a trash");
	}
	/* out of a trash: a session's folder comes back as one */
	ret = lookup_in(fs, p, name, &n);
	if (!ret && n.type == N_REAL && n.attr.session_root)
		ret = resolve(fs, n.ino, &n);
	if (ret < 0)
		return ret;
	if (is_session_root(&n))
		return move_session(fs, &n.s, np, newname, noreplace);
	return refuse_at_root(fs, -EXDEV, newname, "only sessions live at the"
			      " root (a folder moved there is copied into a"
			      " new session by mv)");
}

/* rename where documents of a collection are at either end. */
static int rename_items(struct flowfs *fs, const struct node *p,
			const char *name, const struct node *np,
			const char *newname, bool noreplace)
{
	char id[256], newid[256];
	int coll = item_name(p, name, id, sizeof(id));
	int newcoll = item_name(np, newname, newid, sizeof(newid));
	bool from = coll >= 0, to = newcoll >= 0;
	struct ferr err = FERR_INIT;
	struct doc_target t;
	struct node n;
	int ret;

	if (from && to) {
		if (coll != newcoll || p->attr.session != np->attr.session)
			return -EXDEV;
		ret = fs_collections[coll].rename(fs, p->attr.session, id, newid,
						  !noreplace, &err);
		/* a busy node's reason too, not only a refused document's */
		if (ret < 0 && err.message[0])
			log_item_refusal(fs, &p->s, fs_collections[coll].folder,
				 ret == -EBUSY ? name : newname, &err);
		return ret;
	}
	if (from) {
		ret = lookup_in(fs, p, name, &n);
		if (!ret)
			ret = copy_away(fs, &n, np->ino, newname);
		/* moved out of its session (to the trash): it goes; kept,
		 * the copy goes */
		if (!ret && moves_out(&p->s, np)) {
			ret = fs_collections[coll].remove(fs, p->attr.session, id,
							  &err);
			if (ret < 0 && err.message[0])
				log_item_refusal(fs, &p->s,
					 fs_collections[coll].folder, name,
					 &err);
			if (ret < 0)
				tree_unlink(fs->tree, np->ino, newname);
		}
		return ret;
	}
	if (noreplace) {
		ret = lookup_in(fs, np, newname, &n);
		if (ret != -ENOENT)
			return ret < 0 ? ret : -EEXIST;
	}
	memset(&t, 0, sizeof(t));
	t.session = np->attr.session;
	t.in_collection = true;
	t.coll = (unsigned)newcoll;
	snprintf(t.id, sizeof(t.id), "%s", newid);
	return rename_onto_doc(fs, p, name, &t);
}

static void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
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
	lock_write(fs);
	ret = resolve(fs, parent, &p);
	if (!ret)
		ret = resolve(fs, newparent, &np);
	if (ret < 0)
		goto out;
	if (p.type == N_ROOT || np.type == N_ROOT) {
		ret = rename_at_root(fs, &p, name, &np, newname, noreplace);
		goto out;
	}
	row = session_row(fs, &p, name);
	newrow = session_row(fs, &np, newname);
	if (row >= 0) {
		ret = rename_from_entry(fs, &p, name, row, &np, newname);
		goto out;
	}
	if (newrow >= 0) {
		struct doc_target t = { .session = np.s.id, .row = (unsigned)newrow };
		const struct entry *e = &fs_entries[newrow];

		if (noreplace && !is_paramout(&np))
			ret = -EEXIST;
		else if (S_ISDIR(e->mode))
			ret = -EPERM;
		else if (e->kind != ENTRY_DOC)
			ret = rename_onto_made(fs, &p, name, &np, newname,
					       newrow);
		else
			ret = rename_onto_doc(fs, &p, name, &t);
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
	if (is_item_name(&p, name) || is_item_name(&np, newname)) {
		ret = rename_items(fs, &p, name, &np, newname, noreplace);
		goto out;
	}
	ret = fname_check_entry(newname, NULL);
	if (!ret)
		ret = tree_rename(fs->tree, parent, name, newparent, newname,
				  noreplace);
	/* a deck renamed into place (rsync, an editor's save) */
	if (!ret)
		take_in_uploads(fs, session_of(&np));
out:
	if (!ret) {
		changed(fs, session_of(&p));
		changed(fs, session_of(&np));
	}
	unlock(fs);
	fuse_reply_err(req, -ret);
}

/* ---- files ----------------------------------------------------------------- */

static int open_node(struct flowfs *fs, const struct node *n, int flags,
		     uid_t uid, struct handle **out)
{
	bool writing = (flags & O_ACCMODE) != O_RDONLY;
	const struct entry *e;
	struct handle *h;
	int ret;

	*out = NULL;
	if (n->type == N_ROOT)
		return -EISDIR;
	h = handle_new(fs, H_FILE);
	if (!h)
		return -ENOMEM;
	h->ino = n->ino;
	h->uid = uid;
	if (n->type == N_REAL) {
		if (S_ISDIR(n->attr.mode)) {
			ret = -EISDIR;
			goto fail;
		}
		h->kind = H_FILE;
		h->session = n->attr.session;
		ret = tree_open(fs->tree, n->ino);
		if (ret < 0)
			goto fail;
		if (writing && (flags & O_TRUNC) && n->attr.size) {
			struct tree_setattr sa = { .what = TREE_SET_SIZE };
			struct tree_attr a;

			ret = tree_setattr(fs->tree, n->ino, &sa, &a);
			if (ret < 0) {
				tree_release(fs->tree, n->ino);
				goto fail;
			}
		}
		*out = h;
		return 0;
	}
	if (n->type == N_VIEW && view_is_dir(n)) {
		ret = -EISDIR;
		goto fail;
	}
	if (n->type == N_ITEM) {
		h->kind = writing ? H_DOC : H_GENERATED;
		h->session = n->s.id;
		node_target(n, &h->target);
		h->item_key = n->item.key;
		if (!(writing && (flags & O_TRUNC))) {
			ret = render_entry(fs, n, &h->content, &h->mtime_ns);
			if (ret < 0)
				goto fail;
		}
		ret = open_budget(fs, h);
		if (ret < 0)
			goto fail;
		*out = h;
		return 0;
	}
	e = n->type == N_VIEW ? NULL : &fs_entries[n->row];
	if (e && e->kind == ENTRY_CONTROL) {
		/* reads nothing (a copy of the session gets an empty ctl) */
		h->kind = writing ? H_CONTROL : H_GENERATED;
		h->session = n->s.id;
		*out = h;
		return 0;
	}
	if (e && S_ISDIR(e->mode)) {
		ret = -EISDIR;
		goto fail;
	}
	/* the kernel follows links itself; this is an O_NOFOLLOW open (of a
	 * link: a stand-in for one is a file) */
	if (e && e->kind == ENTRY_LINK && !n->standin) {
		ret = -ELOOP;
		goto fail;
	}
	if (writing && read_only_tree(n)) {
		ret = -EROFS;
		goto fail;
	}
	h->kind = !writing ? H_GENERATED
		  : e->kind == ENTRY_DOC ? H_DOC : H_SINK;
	h->session = n->s.id;
	node_target(n, &h->target);
	if (h->kind == H_SINK)
		node_path(fs, n, h->sink_path, sizeof(h->sink_path));
	/* a name made while absent reads as the empty file it is; a sink
	 * keeps what its file holds (any name in parameters_output/: the
	 * one file there), to tell a copy of it from news */
	if (h->kind == H_SINK ? !n->standin
			      : !(h->kind == H_DOC && (flags & O_TRUNC)) &&
					!n->nominal) {
		ret = render_entry(fs, n, &h->content, &h->mtime_ns);
		if (ret == -ENOENT && h->kind == H_SINK)
			ret = 0;
		if (ret < 0)
			goto fail;
	}
	ret = open_budget(fs, h);
	if (ret < 0)
		goto fail;
	/*
	 * O_TRUNC alone is no new version: shells open, dup2 and close the
	 * file before the first write, and that close must not commit an
	 * empty document.  The first write or truncate makes the draft.
	 */
	*out = h;
	return 0;
fail:
	handle_free(fs, h);
	return ret;
}

static void set_open_flags(struct fuse_file_info *fi, const struct handle *h)
{
	fi->fh = (uint64_t)(uintptr_t)h;
	/* Real files change only through this mount: keep their pages
	 * between opens.  Generated ones are read fresh on every open. */
	fi->keep_cache = h->kind == H_FILE;
	/*
	 * and each open reads its own copy, the version it was rendered
	 * into: through the page cache (one per inode), a reader that
	 * opened parameters.json before a change and one that opened it
	 * after would read each other's pages, and the kernel would cut
	 * both at whichever size it heard of last.  (mmap stays possible,
	 * MAP_PRIVATE.)
	 */
	fi->direct_io = h->kind == H_GENERATED || h->kind == H_DOC;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = NULL;
	struct node n;
	int ret;

	if ((fi->flags & O_ACCMODE) == O_RDONLY && !(fi->flags & O_TRUNC))
		lock(fs);
	else
		lock_write(fs);
	ret = resolve(fs, ino, &n);
	if (!ret)
		ret = open_node(fs, &n, fi->flags, fuse_req_ctx(req)->uid, &h);
	unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	set_open_flags(fi, h);
	if (fuse_reply_open(req, fi) == -ENOENT) {
		/* the caller was interrupted: undo the open */
		lock_write(fs);
		release_handle(fs, h);
		unlock(fs);
		handle_free(fs, h);
	}
}

/*
 * create(2) of `name` in `parent`, opened with `flags`: a reserved name
 * of a session (above), a draft of a new document for <id>.json in a
 * collection's folder (its first valid close makes it a node, an edge, a
 * round), or a real file.
 */
static int create_in(struct flowfs *fs, fuse_req_t req, fuse_ino_t parent,
		     const char *name, mode_t mode, int flags,
		     struct fuse_entry_param *e, struct handle **h)
{
	struct node p, n;
	char id[256];
	int64_t key = 0;
	int coll, ret;

	ret = resolve(fs, parent, &p);
	if (ret < 0)
		return ret;
	/* nothing to read in what is made anew (a document's draft) */
	flags |= O_TRUNC;
	coll = item_name(&p, name, id, sizeof(id));
	if (coll >= 0) {
		ret = fs_collections[coll].create_draft(fs, p.attr.session, id,
							&key);
		if (!ret)
			ret = resolve(fs, fs_item_ino((unsigned)coll, key), &n);
		if (!ret)
			ret = fill_entry(fs, &p, &n, e);
	} else {
		ret = make(fs, req, &p, name, S_IFREG | (mode & 07777), NULL,
			   &n, e);
	}
	if (!ret)
		ret = open_node(fs, &n, flags, fuse_req_ctx(req)->uid, h);
	/* its last close drops the draft unless it stored a version */
	if (!ret && coll >= 0)
		(*h)->owns_draft = (*h)->kind == H_DOC;
	/* a sink made under another name (in parameters_output/) is named
	 * so in the log */
	if (!ret && (*h)->kind == H_SINK)
		session_path(&p, name, (*h)->sink_path,
			     sizeof((*h)->sink_path));
	return ret;
}

static void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct fuse_entry_param e;
	struct handle *h = NULL;
	int ret;

	lock_write(fs);
	ret = create_in(fs, req, parent, name, mode, fi->flags, &e, &h);
	if (!ret)
		entry_given(fs, e.ino);
	unlock(fs);
	if (ret < 0) {
		fuse_reply_err(req, -ret);
		return;
	}
	set_open_flags(fi, h);
	/* any failure: the kernel took neither the handle nor the entry */
	if (fuse_reply_create(req, &e, fi) < 0) {
		lock_write(fs);
		release_handle(fs, h);
		unlock(fs);
		handle_free(fs, h);
		entry_not_taken(fs, e.ino);
	}
}

/*
 * A read of a real file: from a connection of its own, outside `lock`,
 * when all its bytes are stored (readers of different files then read
 * side by side); under `lock` when some are still gathered in memory.
 */
static int read_file(struct flowfs *fs, fuse_ino_t ino, char *buf,
		     size_t size, off_t off, size_t *got)
{
	struct store *reader = NULL;
	int64_t fsize;
	int ret;

	lock(fs);
	ret = tree_read_plan(fs->tree, ino, &fsize);
	if (ret == 0)
		reader = fs_reader_get(fs);
	if (!reader) {
		ret = tree_read(fs->tree, ino, buf, size, off, got);
		unlock(fs);
		return ret;
	}
	unlock(fs);
	ret = tree_read_stored(reader, ino, fsize, buf, size, off, got);
	fs_reader_put(fs, reader);
	return ret;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	size_t got = 0;
	char *buf;
	int ret;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	/*
	 * Always reply from a private buffer: once the kernel has the reply,
	 * a RELEASE may free the handle on another thread while this one is
	 * still returning from writev().
	 */
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (h->kind != H_FILE) {
		/* a document's buffer changes with writes, truncates and
		 * flushes on other threads; a generated one (a sink's) never
		 * does */
		bool changes = h->kind == H_DOC;

		if (changes)
			lock(fs);
		ret = 0;
		if ((size_t)off < h->content.len) {
			got = h->content.len - (size_t)off < size
				      ? h->content.len - (size_t)off : size;
			memcpy(buf, h->content.buf + off, got);
		}
		if (changes)
			unlock(fs);
	} else {
		ret = read_file(fs, ino, buf, size, off, &got);
	}
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_buf(req, buf, got);
	free(buf);
}

/*
 * A write to ctl: every line is a command, run now; the write fails with
 * the first command that fails (and status says why).
 */
static int run_control(struct flowfs *fs, struct handle *h, const char *buf,
		       size_t size)
{
	struct ferr err = FERR_INIT;
	struct session_info s;
	size_t start = 0;
	int ret;

	lock_write(fs);
	ret = session_get(fs->st, h->session, &s);
	while (!ret && start < size) {
		const char *nl = memchr(buf + start, '\n', size - start);
		size_t end = nl ? (size_t)(nl - buf) : size;

		ret = fs_run_command(fs, &s, buf + start, end - start, &err);
		start = end + 1;
	}
	if (ret < 0 && err.message[0])
		log_refusal(fs, &s, "ctl", &err);
	changed_if(fs, h->session, ret);
	unlock(fs);
	return ret;
}

/* `size` bytes at `off` into a document's draft. */
static int buffer_write(struct flowfs *fs, struct handle *h, const char *buf,
			size_t size, size_t off)
{
	int ret = off + size > h->content.len
			  ? buffer_resize(fs, h, off + size) : 0;

	if (!ret)
		memcpy(h->content.buf + off, buf, size);
	return ret;
}

/* What is written to a sink is dropped, but compared with what the file
 * holds first: a copy of it brought back is no news (flush_sink()). */
static void sink_write(struct handle *h, const char *buf, size_t size,
		       size_t off)
{
	if (off > h->content.len || size > h->content.len - off ||
	    memcmp(h->content.buf + off, buf, size))
		h->sink_differs = true;
	if (off + size > h->sink_end)
		h->sink_end = off + size;
	h->sink_bytes += size;
	h->dirty = true;
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	int ret = 0;

	if (off < 0) {
		fuse_reply_err(req, EINVAL);
		return;
	}
	if (h->kind == H_SINK) {
		/* a flush of a dup'ed descriptor may read it meanwhile */
		lock(fs);
		sink_write(h, buf, size, (size_t)off);
		unlock(fs);
		fuse_reply_write(req, size);
		return;
	}
	if (h->kind == H_DOC) {
		if ((size_t)off > DOC_MAX_SIZE ||
		    size > DOC_MAX_SIZE - (size_t)off) {
			fuse_reply_err(req, EFBIG);
			return;
		}
		/* a flush of a dup'ed descriptor may read it meanwhile,
		 * outside `lock` too (commit_target()) */
		lock_write(fs);
		ret = buffer_write(fs, h, buf, size, (size_t)off);
		if (!ret) {
			h->dirty = true;
			h->refused = false;
		}
		unlock(fs);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (h->kind == H_CONTROL) {
		ret = run_control(fs, h, buf, size);
		if (ret < 0)
			fuse_reply_err(req, -ret);
		else
			fuse_reply_write(req, size);
		return;
	}
	if (h->kind != H_FILE) {
		fuse_reply_err(req, EBADF);
		return;
	}
	/* POSIX: a write that reaches past the largest file writes the
	 * bytes that fit; only a write starting there fails (EFBIG) */
	if (off >= 0 && off < TREE_MAX_SIZE &&
	    (int64_t)size > TREE_MAX_SIZE - off)
		size = (size_t)(TREE_MAX_SIZE - off);
	fs_lock_gather(fs);
	ret = tree_write(fs->tree, ino, buf, size, off);
	if (!ret)
		h->dirty = true;
	unlock(fs);
	if (ret < 0)
		fuse_reply_err(req, -ret);
	else
		fuse_reply_write(req, size);
}

/* Commit a written document (close, fsync); refusals go to status. */
static int flush_doc(struct flowfs *fs, struct handle *h, bool durable)
{
	int ret = 0;

	/* A refused draft stays refused, reported once in status. */
	if (h->refused)
		return -EINVAL;
	if (h->dirty) {
		ret = commit_target(fs, &h->target, h->content.buf,
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

/* What a sink was given is dropped; the log says so unless it was what
 * the file holds. */
static void flush_sink(struct flowfs *fs, struct handle *h)
{
	struct node n;

	if (!h->dirty)
		return;
	h->dirty = false;
	/* a session gone meanwhile has no log to tell */
	if ((h->sink_differs || h->sink_end != h->content.len) &&
	    resolve(fs, h->ino, &n) == 0)
		log_dropped(fs, &n, h->sink_path, h->sink_bytes, "written to");
	h->sink_bytes = 0;
	h->sink_differs = false;
}

/* The last close of a file handle (the caller holds the lock). */
static void release_handle(struct flowfs *fs, struct handle *h)
{
	if (h->kind == H_SINK)
		flush_sink(fs, h);
	if (h->kind == H_FILE) {
		tree_release(fs->tree, h->ino);
	} else if (h->kind == H_DOC) {
		/* flush normally came first; this catches writers that
		 * never flushed (the error can only reach status) */
		flush_doc(fs, h, false);
		/* a new document that never got a valid version */
		if (h->owns_draft)
			fs_collections[h->target.coll].drop_draft(fs,
								  h->item_key);
	}
}

/*
 * A file written in a session whose skill imports an upload (datcom's
 * deck) may be that upload: parse it now, in the writer's time and
 * outside `lock`, into the binding cache, so that no reader (status,
 * for005.dat: every session's) waits for the parse.  In any other
 * session a close or rename costs a session_get() and nothing more.
 */
static void take_in_uploads(struct flowfs *fs, int64_t session)
{
	struct sbuf problems = SBUF_INIT;
	struct session_info s;
	struct fs_binding b;

	if (!session || session_get(fs->st, session, &s) < 0 || !s.skill[0])
		return;
	fs_binding_init(fs, &s, &b);
	if (!binding_imports(&b.ctx))
		return;
	b.ctx.leave = fs_leave_cb;
	b.ctx.enter = fs_enter_cb;
	b.ctx.lock_ctx = fs;
	binding_problems(&b.ctx, &problems, NULL, NULL);
	sbuf_release(&problems);
}

/*
 * The lock a flush (or the last close: `release`) of `h` needs: a
 * writer's when it stores something — a document, a file's gathered
 * bytes, an fsync, the last close of an unlinked file — else a
 * reader's, so that closing what was only read never waits for another
 * session's commit.  What it logs (a sink's dropped bytes) a reader may.
 */
static void lock_handle(struct flowfs *fs, const struct handle *h,
			bool durable, bool release)
{
	if (h->kind == H_DOC) {
		lock_write(fs);
		return;
	}
	lock(fs);
	/* a file written through `h`: its close may import a deck */
	if (h->kind == H_FILE &&
	    (h->dirty || (release ? tree_release_writes(fs->tree, h->ino)
				  : tree_flush_writes(fs->tree, h->ino,
						      durable)))) {
		unlock(fs);
		lock_write(fs);
	}
}

static void sync_handle(fuse_req_t req, struct fuse_file_info *fi,
			bool durable)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = handle_of(fi);
	int ret = 0;

	lock_handle(fs, h, durable, false);
	if (h->kind == H_FILE) {
		ret = tree_flush(fs->tree, h->ino, durable);
		/* what was written may bind an input, import a deck */
		if (h->dirty && !changed_if(fs, h->session, ret))
			take_in_uploads(fs, h->session);
		h->dirty = false;
	}
	else if (h->kind == H_DOC)
		ret = flush_doc(fs, h, durable);
	else if (h->kind == H_SINK)
		flush_sink(fs, h);
	unlock(fs);
	fuse_reply_err(req, -ret);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)ino;
	sync_handle(req, fi, false);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi)
{
	(void)ino;
	(void)datasync;
	sync_handle(req, fi, true);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h = handle_of(fi);

	(void)ino;
	lock_handle(fs, h, false, true);
	release_handle(fs, h);
	unlock(fs);
	handle_free(fs, h);
	fuse_reply_err(req, 0);
}

void fs_release_open_handles(struct flowfs *fs)
{
	while (fs->open_handles) {
		struct handle *h = fs->open_handles;

		lock_write(fs);
		if (h->kind != H_DIR)
			release_handle(fs, h);
		unlock(fs);
		handle_free(fs, h);
	}
}

/* ---- folders --------------------------------------------------------------- */

static int dir_add(struct handle *h, size_t *alloc, const char *name,
		   const struct stat *st, bool generated, double timeout)
{
	struct dir_item *it;

	if (h->nitems == *alloc) {
		size_t n = *alloc ? *alloc * 2 : 16;
		struct dir_item *p = realloc(h->items, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		h->items = p;
		*alloc = n;
	}
	it = &h->items[h->nitems];
	it->name = strdup(name);
	if (!it->name)
		return -ENOMEM;
	it->st = *st;
	it->generated = generated;
	it->entry_timeout = timeout;
	h->nitems++;
	return 0;
}

/* Add node `n` of folder `dir`; an entry that does not exist now is
 * left out. */
static int dir_add_node(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir, const char *name,
			const struct node *n)
{
	struct stat st;
	bool generated;
	int ret = node_stat(fs, n, &st, &generated);

	if (ret == -ENOENT)
		return 0;
	if (ret < 0)
		return ret;
	/* a name a process sees its own way: the kernel asks each time */
	return dir_add(h, alloc, name, &st, generated,
		       n->type == N_ENTRY && seen_named(fs, dir->ino, name)
			       ? 0.0 : entry_timeout(dir, n, st.st_mode));
}

/* The entries of the table that live in folder `dir`. */
static int dir_add_entries(struct flowfs *fs, struct handle *h, size_t *alloc,
			   enum entry_scope scope, const struct node *dir)
{
	for (unsigned row = 1; row < fs_entry_count; row++) {
		const struct entry *e = &fs_entries[row];
		struct node n;
		int ret;

		if (e->scope != scope)
			continue;
		ret = resolve_row(fs, dir, row, &n);
		if (!ret) {
			struct sbuf buf = SBUF_INIT;
			const char *name = fs_entry_name(fs, dir->has_session
							       ? &dir->s : NULL,
							 row, &buf);

			ret = name ? dir_add_node(fs, h, alloc, dir, name, &n)
				   : -ENOENT;
			sbuf_release(&buf);
		}
		if (ret < 0 && ret != -ENOENT)
			return ret;
	}
	return 0;
}

/* The documents of a collection's folder (one query, no per-item
 * lookups). */
static int dir_add_items(struct flowfs *fs, struct handle *h, size_t *alloc,
			 const struct node *dir)
{
	unsigned coll = (unsigned)collection_of(dir);
	struct fs_item *items = NULL;
	struct sbuf name = SBUF_INIT;
	size_t n = 0;
	int ret;

	ret = fs_collections[coll].list(fs, dir->attr.session, &items, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		struct node in;

		item_node(&in, coll, &items[i], &dir->s);
		sbuf_reset(&name);
		ret = sbuf_addf(&name, "%s.json", items[i].id);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, name.buf, &in);
	}
	free(items);
	sbuf_release(&name);
	return ret;
}

/* Every skill of the registry, read again first. */
static int dir_add_catalog(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir)
{
	/* not while a writer outside the lock holds skills (fs.h): the
	 * listing then shows the last scan's */
	int ret = fs->writer_out ? 0 : skill_registry_scan(fs->skills);

	for (size_t i = 0; !ret && i < skill_count(fs->skills); i++) {
		const struct skill *sk = skill_at(fs->skills, i);
		struct node n;

		ret = resolve(fs, fs_catalog_ino(sk->serial,
					       0), &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, sk->id, &n);
	}
	return ret;
}

/* The files of a skill folder view directly in `dir`. */
static int dir_add_view(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir)
{
	const char *path = view_path(dir);
	size_t plen = strlen(path);
	int ret = 0;

	for (size_t i = 1; !ret && i <= view_count(dir->sk); i++) {
		const char *p = dir->sk->error ? error_name
					       : dir->sk->files[i - 1].path;
		const char *name = p;
		struct node n;

		if (plen) {
			if (strncmp(p, path, plen) || p[plen] != '/')
				continue;
			name = p + plen + 1;
		}
		if (strchr(name, '/'))
			continue;	/* deeper down */
		ret = resolve(fs, view_ino(dir, i), &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, name, &n);
	}
	return ret;
}

static int dir_add_rows_of(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir, bool trash);

static int dir_add_sessions(struct flowfs *fs, struct handle *h, size_t *alloc,
			    const struct node *dir)
{
	struct session_list list;
	int ret = session_list(fs->st, &list);

	for (size_t i = 0; !ret && i < list.n; i++) {
		struct node n;

		ret = resolve_session_root(fs, &list.items[i], &n);
		if (!ret)
			ret = dir_add_node(fs, h, alloc, dir, list.items[i].name,
					   &n);
	}
	if (!ret || list.items)
		session_list_free(&list);
	return ret < 0 ? ret : dir_add_rows_of(fs, h, alloc, dir, true);
}

/* The rows of a real folder, or (`trash`) the trash folders at the
 * root, but for names the table has taken. */
static int dir_add_rows_of(struct flowfs *fs, struct handle *h, size_t *alloc,
			   const struct node *dir, bool trash)
{
	struct tree_dir td;
	int ret = trash ? tree_trash_list(fs->tree, &td)
			: tree_readdir(fs->tree, dir->ino, &td);

	for (size_t i = 0; !ret && i < td.n; i++) {
		struct node n = { .type = N_REAL, .ino = td.ents[i].attr.ino };
		struct stat st;

		if (reserved_row(fs, dir, td.ents[i].name) >= 0)
			continue;
		n.attr = td.ents[i].attr;
		stat_from_attr(&td.ents[i].attr, &st);
		ret = dir_add(h, alloc, td.ents[i].name, &st, false,
			      entry_timeout(dir, &n, st.st_mode));
	}
	tree_dir_free(&td);
	return ret;
}

static int dir_add_rows(struct flowfs *fs, struct handle *h, size_t *alloc,
			const struct node *dir)
{
	return dir_add_rows_of(fs, h, alloc, dir, false);
}

static int dir_fill(struct flowfs *fs, struct handle *h, const struct node *dir)
{
	int scope = scope_of(dir);
	struct stat st;
	size_t alloc = 0;
	bool generated;
	int ret;

	ret = node_stat(fs, dir, &st, &generated);
	if (!ret)
		ret = dir_add(h, &alloc, ".", &st, false, 0.0);
	if (!ret) {
		/* ".." is only a name here; its attributes are not used */
		st.st_ino = FS_ROOT_INO;
		ret = dir_add(h, &alloc, "..", &st, false, 0.0);
	}
	if (!ret && scope >= 0)
		ret = dir_add_entries(fs, h, &alloc, (enum entry_scope)scope, dir);
	if (ret < 0)
		return ret;
	switch (dir->type) {
	case N_ROOT:
		return dir_add_sessions(fs, h, &alloc, dir);
	case N_ENTRY:
		return fs_entries[dir->row].kind == ENTRY_CATALOG
			       ? dir_add_catalog(fs, h, &alloc, dir) : 0;
	case N_VIEW:
		return dir_add_view(fs, h, &alloc, dir);
	default:
		if (collection_of(dir) >= 0) {
			ret = dir_add_items(fs, h, &alloc, dir);
			if (ret < 0)
				return ret;
		}
		return dir_add_rows(fs, h, &alloc, dir);
	}
}

static bool node_is_dir(const struct node *n)
{
	switch (n->type) {
	case N_ROOT:
		return true;
	case N_ENTRY:
		return S_ISDIR(fs_entries[n->row].mode);
	case N_VIEW:
		return view_is_dir(n);
	case N_ITEM:
		return false;
	default:
		return S_ISDIR(n->attr.mode);
	}
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	struct handle *h;
	struct node n;
	int ret;

	h = handle_new(fs, H_DIR);
	if (!h) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	h->ino = ino;
	lock(fs);
	ret = resolve(fs, ino, &n);
	if (!ret && !node_is_dir(&n))
		ret = -ENOTDIR;
	if (!ret)
		ret = dir_fill(fs, h, &n);
	if (!ret && n.type == N_REAL) {
		h->dir_real = true;
		h->dir_mtime_ns = n.attr.mtime_ns;
	}
	unlock(fs);
	if (ret < 0) {
		handle_free(fs, h);
		fuse_reply_err(req, -ret);
		return;
	}
	fi->fh = (uint64_t)(uintptr_t)h;
	if (fuse_reply_open(req, fi) == -ENOENT)
		handle_free(fs, h);
}

static bool is_dot(const char *name)
{
	return name[0] == '.' &&
	       (!name[1] || (name[1] == '.' && !name[2]));
}

/*
 * Whether a real folder changed since its listing was taken at opendir
 * (its mtime moved: a name made, removed or renamed), so that its
 * entries must be checked before they bind names (the lock held).
 */
static bool listing_changed(struct flowfs *fs, const struct handle *h)
{
	struct tree_attr a;

	return h->dir_real && (tree_getattr(fs->tree, h->ino, &a) < 0 ||
			       a.mtime_ns != h->dir_mtime_ns);
}

/* Whether item `it` of a real folder's listing still names its inode. */
static bool still_named(struct flowfs *fs, const struct handle *h,
			const struct dir_item *it)
{
	struct tree_attr a;

	if (!counted(it->st.st_ino))
		return true;
	return tree_lookup(fs->tree, h->ino, it->name, &a) == 0 &&
	       a.ino == (uint64_t)it->st.st_ino;
}

static void reply_dir(fuse_req_t req, struct handle *h, size_t size, off_t off,
		      bool plus)
{
	struct flowfs *fs = fs_of(req);
	char *buf = malloc(size);
	size_t used = 0, first = off > 0 ? (size_t)off : 0, end = first;
	bool stale;

	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (plus)
		lock(fs);
	stale = plus && listing_changed(fs, h);
	for (size_t i = first; i < h->nitems; i++, end = i) {
		struct dir_item *it = &h->items[i];
		size_t n;

		if (plus) {
			struct fuse_entry_param e = { 0 };
			bool dot = is_dot(it->name);

			e.attr = it->st;
			/* "." and ".." must not create dentries, nor may a
			 * name the listing has wrong now: the kernel would
			 * bind it to what it named (a file renamed over,
			 * for the hour an entry lives) */
			e.ino = dot || (stale && !still_named(fs, h, it))
				? 0 : it->st.st_ino;
			e.generation = 1;
			e.entry_timeout = it->entry_timeout;
			e.attr_timeout = it->generated ? 0.0 : LONG_TIMEOUT;
			n = fuse_add_direntry_plus(req, buf + used, size - used,
						   it->name, &e, (off_t)i + 1);
			/* the kernel takes a reference of each entry but
			 * "." and ".." (no room for one: the entries so far) */
			it->given = false;
			if (n <= size - used) {
				if (entry_given(fs, e.ino) < 0)
					break;
				it->given = counted(e.ino);
			}
		} else {
			n = fuse_add_direntry(req, buf + used, size - used,
					      it->name, &it->st, (off_t)i + 1);
		}
		if (n > size - used)
			break;
		used += n;
	}
	if (plus)
		unlock(fs);
	if (fuse_reply_buf(req, buf, used) < 0 && plus)
		for (size_t i = first; i < end; i++)
			if (h->items[i].given)
				entry_not_taken(fs, h->items[i].st.st_ino);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	(void)ino;
	reply_dir(req, handle_of(fi), size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	(void)ino;
	reply_dir(req, handle_of(fi), size, off, true);
}

static void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi)
{
	(void)ino;
	handle_free(fs_of(req), handle_of(fi));
	fuse_reply_err(req, 0);
}

static void op_fsyncdir(fuse_req_t req, fuse_ino_t ino, int datasync,
			struct fuse_file_info *fi)
{
	struct flowfs *fs = fs_of(req);
	int ret;

	(void)ino;
	(void)datasync;
	(void)fi;
	lock_write(fs);
	ret = store_sync(fs->st);
	unlock(fs);
	fuse_reply_err(req, -ret);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct flowfs *fs = fs_of(req);
	struct statvfs sv;

	int64_t used = 0, free_list = 0;
	int ret;

	(void)ino;
	if (statvfs(store_path(fs->st), &sv) < 0)
		memset(&sv, 0, sizeof(sv));
	lock(fs);
	ret = store_space(fs->st, &used, &free_list);
	unlock(fs);
	/*
	 * What flowfs holds is what is used; what it could still take, the
	 * disk's room for the database plus its pages waiting to be given
	 * back, is free: `df` on the mount shows flowfs's own size, not the
	 * disk's.  (Files and inodes stay the disk's: a row costs no inode.)
	 */
	if (!ret && sv.f_frsize) {
		fsblkcnt_t held = (fsblkcnt_t)((used + (int64_t)sv.f_frsize - 1) /
					       (int64_t)sv.f_frsize);
		fsblkcnt_t room = sv.f_bavail +
				  (fsblkcnt_t)(free_list / (int64_t)sv.f_frsize);

		sv.f_blocks = held + room;
		sv.f_bfree = sv.f_bavail = room;
	}
	sv.f_namemax = FNAME_MAX;
	fuse_reply_statfs(req, &sv);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	if (conn->capable & FUSE_CAP_ATOMIC_O_TRUNC)
		conn->want |= FUSE_CAP_ATOMIC_O_TRUNC;
	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* Always send attributes with listings: ls -l is the common case. */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/* Fewer, larger requests: each round trip costs 20-25 us here. */
	conn->max_write = 1024 * 1024;
	conn->max_readahead = 1024 * 1024;
}

const struct fuse_lowlevel_ops fs_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.setattr = op_setattr,
	.readlink = op_readlink,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_rmdir,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.open = op_open,
	.read = op_read,
	.write = op_write,
	.flush = op_flush,
	.release = op_release,
	.fsync = op_fsync,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.releasedir = op_releasedir,
	.fsyncdir = op_fsyncdir,
	.statfs = op_statfs,
	.create = op_create,
	.forget = op_forget,
	.forget_multi = op_forget_multi,
};
