/*
 * reserved: the names flowfs gives meaning in a session, as each process
 * that removes or makes them sees them.
 *
 * Those names — the table's rows in a session's folder and in output/,
 * and every name in parameters_output/ — cannot really go or come: status
 * is there whatever is done to it.  So that the tools that copy a session
 * back in work (cp -a, rsync -a, tar x, a file manager), a process may
 * still write, remove and make them:
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

#include <errno.h>
#include <inttypes.h>
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


/* The process a request comes from: requests carry the thread, and the
 * threads of a process (a file manager's) share one view.  A read of
 * /proc: only when a note could be the caller's (seen_mine()). */
pid_t fs_caller_pid(fuse_req_t req)
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
		*who = fs_caller_pid(req);
	return s->who == *who;
}

static bool seen_live(const struct fs_seen *s, int64_t now)
{
	return s->until_ns > now;
}

/* A live note on `name` in `parent`, any process's (its view of the name
 * differs from others': the kernel must ask, every time). */
struct fs_seen *fs_seen_named(struct flowfs *fs, uint64_t parent,
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
		s->who = fs_caller_pid(req);
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
bool fs_made_by_caller(struct flowfs *fs, fuse_req_t req, uint64_t ino)
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
bool fs_is_paramout(const struct node *p)
{
	return fs_scope_of(p) == SCOPE_PARAMOUT;
}

/* The row of the table `name` in folder `p` stands for when that is a
 * session's (above); -1 for names that are ordinary files there. */
int fs_session_row(struct flowfs *fs, const struct node *p,
		       const char *name)
{
	if (!p->has_session)
		return -1;
	if (fs_is_paramout(p)) {
		for (unsigned row = 1; row < fs_entry_count; row++)
			if (fs_entries[row].scope == SCOPE_PARAMOUT)
				return (int)row;
		return -1;
	}
	return fs_scope_of(p) >= SCOPE_SESSION ? fs_reserved_row(fs, p, name) : -1;
}

/* The node of row `row` in `p` as a process that made `name` there sees
 * it: nominal when it is another name in parameters_output/ than its
 * file's.  Whether it is there now, the stat that follows finds out
 * (fs_stat_made()). */
int fs_made_node(struct flowfs *fs, const struct node *p, unsigned row,
		     const char *name, struct node *n)
{
	struct sbuf buf = SBUF_INIT;
	const char *real;
	int ret = fs_resolve_row(fs, p, row, n);

	if (ret < 0)
		return ret;
	real = fs_entry_name(fs, &p->s, row, &buf);
	if (!real || strcmp(real, name))
		n->nominal = true;
	sbuf_release(&buf);
	return 0;
}

/* fs_node_stat_snap(), but a reserved name absent now is there, nominal,
 * for the process that made it (`made`, or a note says so). */
int fs_stat_made(struct flowfs *fs, fuse_req_t req, struct node *n,
		     struct stat *st, bool *generated,
		     const struct handle *snap, bool made)
{
	int ret = fs_node_stat_snap(fs, n, st, generated, snap);

	if (ret == -ENOENT && n->type == N_ENTRY && !n->nominal &&
	    (made || fs_made_by_caller(fs, req, n->ino))) {
		n->nominal = true;
		ret = fs_node_stat_snap(fs, n, st, generated, NULL);
	}
	return ret;
}

/* fs_lookup_in(), as the calling process sees reserved names; *made: it
 * made the name (it is there for it). */
int fs_lookup_seen(struct flowfs *fs, fuse_req_t req,
		       const struct node *p, const char *name, struct node *n,
		       bool *made)
{
	const struct fs_seen *seen = fs_seen_named(fs, p->ino, name);
	int row = seen ? fs_session_row(fs, p, name) : -1;

	*made = false;
	seen = row < 0 ? NULL : seen_find(fs, req, p->ino, name);
	/* a removed folder came back new at once: it stays visible */
	if (!seen || (!seen->ino && S_ISDIR(fs_entries[row].mode)))
		return fs_lookup_in(fs, p, name, n);
	if (!seen->ino)
		return -ENOENT;
	*made = true;
	/* what it made stands there for it: a stand-in file too */
	if (fs_ino_space(seen->ino) == FS_SPACE_STANDIN)
		return fs_resolve(fs, seen->ino, n);
	return fs_made_node(fs, p, (unsigned)row, name, n);
}

/* The path of `name` in folder `p` of a session, as its log names it. */
void fs_session_path(const struct node *p, const char *name, char *buf,
			 size_t size)
{
	int scope = fs_scope_of(p);

	snprintf(buf, size, "%s%s",
		 fs_scope_folder(scope < 0 ? SCOPE_SESSION
					   : (enum entry_scope)scope),
		 name);
}

/* The path of entry node `n` (N_ENTRY) in its session, as its log names
 * it. */
void fs_node_path(struct flowfs *fs, const struct node *n, char *buf,
		      size_t size)
{
	const struct entry *e = &fs_entries[n->row];
	struct sbuf name = SBUF_INIT;
	const char *shown = fs_entry_name(fs, &n->s, n->row, &name);

	snprintf(buf, size, "%s%s", fs_scope_folder(e->scope),
		 shown ? shown : "");
	sbuf_release(&name);
}

/* The slot that sums up session `session`'s dropped writes still: its
 * last drop FS_DROPPED_NS ago at most (NULL: none does). */
static struct fs_dropped *dropped_find(struct flowfs *fs, int64_t session,
				       int64_t now)
{
	for (int i = 0; i < FS_DROPPED_SLOTS; i++) {
		struct fs_dropped *d = &fs->dropped[i];

		if (d->session == session && now - d->last_ns <= FS_DROPPED_NS)
			return d;
	}
	return NULL;
}

/* A slot for a new line: session `session`'s, a free one, or the one
 * whose last drop is the oldest. */
static struct fs_dropped *dropped_slot(struct flowfs *fs, int64_t session)
{
	struct fs_dropped *d = &fs->dropped[0];

	for (int i = 0; i < FS_DROPPED_SLOTS; i++) {
		if (fs->dropped[i].session == session)
			return &fs->dropped[i];
		if (fs->dropped[i].last_ns < d->last_ns)
			d = &fs->dropped[i];
	}
	return d;
}

/* Count file `path` (`bytes` written to it, or moved onto it) in `d`;
 * a name seen already is the same file again (rsync run twice). */
static void dropped_count(struct fs_dropped *d, const char *path,
			  size_t bytes, bool moved)
{
	bool seen = false;

	for (unsigned i = 0; i < d->names && !seen; i++)
		seen = !strcmp(d->name[i], path);
	if (!seen) {
		d->files++;
		if (d->names < FS_DROPPED_NAMES)
			snprintf(d->name[d->names++], sizeof(d->name[0]), "%s",
				 path);
	}
	d->bytes += bytes;
	if (moved)
		d->moved = true;
	else
		d->written = true;
}

/* The line of `d`: its path (the files, the first FS_DROPPED_SHOWN and
 * how many more) and its message.  0 or -ENOMEM. */
static int dropped_line(const struct fs_dropped *d, struct sbuf *path,
			char *msg, size_t msg_size)
{
	const char *how = !d->moved ? "written to"
			  : d->written ? "written to or moved onto"
				       : "moved onto";
	int ret = 0;

	for (unsigned i = 0; i < d->names && i < FS_DROPPED_SHOWN; i++)
		ret |= sbuf_addf(path, "%s%s", i ? ", " : "", d->name[i]);
	if (d->files > FS_DROPPED_SHOWN)
		ret |= sbuf_addf(path, " and %u more",
				 d->files - FS_DROPPED_SHOWN);
	if (d->files == 1)
		snprintf(msg, msg_size, "flowfs makes this file: the %" PRIu64
			 " bytes %s it were dropped", d->bytes, how);
	else
		snprintf(msg, msg_size, "flowfs makes these %u files: the %"
			 PRIu64 " bytes %s them were dropped", d->files,
			 d->bytes, how);
	return ret ? -ENOMEM : 0;
}

/*
 * What was written to (or moved onto) generated file `n` — `bytes` of
 * it, not what it holds — was dropped: the session's log says so.  A
 * copy of a session brought back (cp -a, rsync -a) writes every file
 * flowfs makes, and most differ from what the new session shows as they
 * arrive: they come before what they are made from (input.json before
 * session.json binds the skill, output/'s exports before nodes/), and
 * some name the session or hold its history (input.json's paths, log,
 * status).  So the drops of a session that follow one another (each
 * within FS_DROPPED_NS of the last) make one line, rewritten as they
 * come ("input.json, prompt.txt, log and 5 more: flowfs makes these 8
 * files: ..."), while nothing else is logged to it between; the daemon's
 * own log (stderr, syslog) has each.  A reader cannot write the store
 * (fs.h: the locks): its drop is a line of its own, queued.
 */
void fs_log_dropped(struct flowfs *fs, const struct node *n,
			const char *path, size_t bytes, const char *how)
{
	char line[FERR_MESSAGE_MAX];
	struct sbuf where = SBUF_INIT;
	int64_t now = fclock_now_ns();
	bool moved = !strcmp(how, "moved onto");
	struct fs_dropped *d;

	snprintf(line, sizeof(line), "flowfs makes this file: the %zu bytes %s"
		 " it were dropped", bytes, how);
	if (!fs_holds_write(fs)) {
		fs_log(fs, n->s.id, n->s.name, path, line);
		return;
	}
	fs_log_echo(fs, n->s.name, path, line);
	d = dropped_find(fs, n->s.id, now);
	if (d) {
		dropped_count(d, path, bytes, moved);
		if (dropped_line(d, &where, line, sizeof(line)) == 0 &&
		    session_log_rewrite_last(fs->st, n->s.id, d->row, where.buf,
					     line) == 1) {
			d->last_ns = now;
			goto out;
		}
		/* another line came after it: this drop starts a new one */
		sbuf_reset(&where);
	}
	d = dropped_slot(fs, n->s.id);
	memset(d, 0, sizeof(*d));
	dropped_count(d, path, bytes, moved);
	if (dropped_line(d, &where, line, sizeof(line)) == 0 &&
	    session_log_row(fs->st, n->s.id, where.buf, line, &d->row) == 0) {
		d->session = n->s.id;
		d->last_ns = now;
	} else {
		d->session = 0;
	}
out:
	sbuf_release(&where);
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
int fs_make_reserved(struct flowfs *fs, fuse_req_t req,
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
		ret = fs_resolve(fs, fs_standin_ino(p->s.id, (unsigned)row), n);
		if (!ret)
			seen_note(fs, req, p->ino, name, n->ino);
		return ret;
	}
	if (type != is)
		return type == S_IFREG && is == S_IFDIR ? -EISDIR : -EPERM;
	ret = fs_made_node(fs, p, (unsigned)row, name, n);
	if (ret < 0)
		return ret;
	seen_note(fs, req, p->ino, name, n->ino);
	if (type == S_IFLNK && !n->nominal &&
	    fs_render_entry(fs, n, &now, &mtime) == 0 && strcmp(now.buf, target)) {
		char path[STATUS_PATH_MAX], line[FERR_MESSAGE_MAX];

		fs_session_path(p, name, path, sizeof(path));
		snprintf(line, sizeof(line), "flowfs makes this link (to %s):"
			 " the link to %.200s was dropped", now.buf, target);
		fs_log(fs, n->s.id, n->s.name, path, line);
	}
	sbuf_release(&now);
	return 0;
}

/*
 * unlink (or rmdir, `dir`) of a reserved name: nothing goes, but the
 * calling process finds it gone (above).  A document is emptied first —
 * what it held is its user's, and rm -rf of a session must leave nothing
 * that keeps rmdir from removing it — and an empty uploads/ or output/
 * comes back new.  The errnos of a real folder for the wrong type or no
 * name.
 */
int fs_remove_reserved(struct flowfs *fs, fuse_req_t req,
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
	ret = fs_made_node(fs, p, (unsigned)row, name, &n);
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
	if (n.nominal && !seen && fs_is_paramout(p))
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
		ret = fs_clear_doc(fs, &n);
	if (ret < 0)
		return ret;
	seen = seen_note(fs, req, p->ino, name, 0);
	if (e->kind == ENTRY_FOLDER) {
		seen->folder = folder.ino;
		seen->folder_mtime_ns = folder.mtime_ns;
		fs_changed(fs, n.s.id);
	}
	return 0;
}
