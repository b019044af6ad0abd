/*
 * ops_i: what the files of the FUSE operations share — private to fs/
 * (ops.c, ops_name.c, ops_file.c, ops_dir.c and the layers under them:
 * resolve.c, content.c, reserved.c, handles.c, docs.c).  fs.h is the
 * adapter's shared state; this is how its requests are served.
 *
 * Every request resolves its inode numbers into nodes (resolve.c: what a
 * number stands for, read under the filesystem's lock), answers from them
 * and from their content (content.c: generated files, through the render
 * cache), and writes through handles (handles.c) and documents (docs.c).
 * Reserved names (reserved.c) bend what a node is for the one process
 * that removed or made one.
 */
#ifndef FLOWFS_OPS_I_H
#define FLOWFS_OPS_I_H

#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

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

/* What a failed skill shows instead of its files. */
#define FS_VIEW_ERROR_NAME "ERROR"

static inline struct flowfs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* ---- resolve.c: inode numbers, attributes, names in folders ---- */

int fs_collection_of(const struct node *n);
int fs_item_name(const struct node *dir, const char *name, char *id,
		     size_t size);
bool fs_is_item_name(const struct node *dir, const char *name);
int64_t fs_ns_from_ts(const struct timespec *ts);
void fs_stat_from_attr(const struct tree_attr *a, struct stat *st);
size_t fs_view_count(const struct skill *sk);
const char *fs_view_path(const struct node *n);
bool fs_view_is_dir(const struct node *n);
int fs_view_content(const struct node *n, struct sbuf *out);
uint64_t fs_view_ino(const struct node *n, size_t file);
void fs_item_node(struct node *n, unsigned coll,
		      const struct fs_item *item,
		      const struct session_info *s);
int fs_resolve(struct flowfs *fs, uint64_t ino, struct node *n);
bool fs_is_session_root(const struct node *n);
/* In a snapshot (read-only but for removals: session.h). */
bool fs_frozen(struct flowfs *fs, const struct node *n);
int64_t fs_session_of(const struct node *n);
void fs_changed(struct flowfs *fs, int64_t session);
int fs_changed_if(struct flowfs *fs, int64_t session, int ret);
bool fs_in_trash(const struct node *n);
int fs_resolve_session_root(struct flowfs *fs,
				const struct session_info *s, struct node *n);
int fs_scope_of(const struct node *n);
bool fs_read_only_tree(const struct node *n);
int fs_node_stat(struct flowfs *fs, const struct node *n, struct stat *st,
		     bool *generated);
int fs_node_stat_snap(struct flowfs *fs, const struct node *n,
			  struct stat *st, bool *generated,
			  const struct handle *snap);
int fs_resolve_row(struct flowfs *fs, const struct node *parent,
		       unsigned row, struct node *out);
int fs_lookup_in(struct flowfs *fs, const struct node *parent,
		     const char *name, struct node *out);
double fs_entry_timeout(const struct node *parent, const struct node *n,
			    mode_t mode);
int fs_fill_entry(struct flowfs *fs, const struct node *parent,
		      const struct node *n, struct fuse_entry_param *e);
int fs_fill_made_entry(struct flowfs *fs, const struct node *parent,
			   struct node *n, bool made,
			   struct fuse_entry_param *e);
int fs_reserved_row(struct flowfs *fs, const struct node *parent,
			const char *name);
bool fs_ino_counted(fuse_ino_t ino);
int fs_entry_given(struct flowfs *fs, fuse_ino_t ino);
void fs_entry_not_taken(struct flowfs *fs, fuse_ino_t ino);
bool fs_node_is_dir(const struct node *n);

/* ---- content.c: generated content, through the render cache ---- */

int fs_entry_content(struct flowfs *fs, const struct node *n,
			 struct sbuf *scratch, const struct sbuf **content,
			 int64_t *mtime_ns);
int fs_render_entry(struct flowfs *fs, const struct node *n,
			struct sbuf *out, int64_t *mtime_ns);

/* ---- reserved.c: reserved names as each process sees them ---- */

pid_t fs_caller_pid(fuse_req_t req);
struct fs_seen *fs_seen_named(struct flowfs *fs, uint64_t parent,
				  const char *name);
bool fs_made_by_caller(struct flowfs *fs, fuse_req_t req, uint64_t ino);
bool fs_is_paramout(const struct node *p);
int fs_session_row(struct flowfs *fs, const struct node *p,
		       const char *name);
int fs_made_node(struct flowfs *fs, const struct node *p, unsigned row,
		     const char *name, struct node *n);
int fs_stat_made(struct flowfs *fs, fuse_req_t req, struct node *n,
		     struct stat *st, bool *generated,
		     const struct handle *snap, bool made);
int fs_lookup_seen(struct flowfs *fs, fuse_req_t req,
		       const struct node *p, const char *name, struct node *n,
		       bool *made);
void fs_session_path(const struct node *p, const char *name, char *buf,
			 size_t size);
void fs_node_path(struct flowfs *fs, const struct node *n, char *buf,
		      size_t size);
void fs_log_dropped(struct flowfs *fs, const struct node *n,
			const char *path, size_t bytes, const char *how);
int fs_make_reserved(struct flowfs *fs, fuse_req_t req,
			 const struct node *p, const char *name, int row,
			 mode_t type, const char *target, struct node *n);
int fs_remove_reserved(struct flowfs *fs, fuse_req_t req,
			   const struct node *p, const char *name, int row,
			   bool dir);

/* ---- handles.c: handles and their budgets ---- */

struct handle *fs_handle_of(struct fuse_file_info *fi);
struct handle *fs_handle_new(struct flowfs *fs, enum handle_kind kind);
void fs_handle_free(struct flowfs *fs, struct handle *h);
int fs_open_budget(struct flowfs *fs, struct handle *h);
int fs_buffer_resize(struct flowfs *fs, struct handle *h, size_t size);
int fs_buffer_write(struct flowfs *fs, struct handle *h, const char *buf,
			size_t size, size_t off);

/* ---- docs.c: documents taken in whole ---- */

void fs_log_item_refusal(struct flowfs *fs, const struct session_info *s,
			     const char *folder, const char *name,
			     const struct ferr *err);
int fs_log_refusal(struct flowfs *fs, const struct session_info *s,
		       const char *path, const struct ferr *err);
void fs_target_path(const struct doc_target *t, char *buf, size_t size);
/* <folder>/<name>'s refused write is no problem any more (removed). */
void fs_forget_refusal(struct flowfs *fs, int64_t session,
		       const char *folder, const char *name);
int fs_commit_target(struct flowfs *fs, const struct doc_target *t,
			 const char *text, size_t len);
void fs_node_target(const struct node *n, struct doc_target *t);
int fs_clear_doc(struct flowfs *fs, const struct node *n);
int fs_rename_onto_doc(struct flowfs *fs, const struct node *p,
			   const char *name, const struct doc_target *t);
int fs_copy_away(struct flowfs *fs, const struct node *n,
		     fuse_ino_t newparent, const char *newname);
bool fs_moves_out(const struct session_info *s, const struct node *np);
int fs_flush_doc(struct flowfs *fs, struct handle *h, bool durable);

/* ---- ops_name.c ---- */

int fs_make(struct flowfs *fs, fuse_req_t req, const struct node *p,
		const char *name, mode_t mode, const char *target,
		struct node *n, struct fuse_entry_param *e);
int fs_file_holds(struct flowfs *fs, const struct tree_attr *src,
		 const struct sbuf *bytes, bool *same);

/* ---- ops_file.c ---- */

void fs_take_in_uploads(struct flowfs *fs, int64_t session);

/* ---- the operations the table in ops.c names ---- */

void op_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode);
void op_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev);
void op_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name);
void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname);
void op_unlink(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rmdir(fuse_req_t req, fuse_ino_t parent, const char *name);
void op_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags);
void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi);
void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi);
void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi);
void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi);
void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync,
		     struct fuse_file_info *fi);
void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi);
void op_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			off_t off_out, struct fuse_file_info *fi_out,
			size_t len, int flags);
void op_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi);
void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi);
void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi);
void op_releasedir(fuse_req_t req, fuse_ino_t ino,
			  struct fuse_file_info *fi);

#endif
