/*
 * contents: the data files beside the database — the bytes of large
 * regular files, one file per content, in a folder of their own; and the
 * table that counts who uses each.  Nothing of sessions here: a content
 * is a number, a file and a count.
 *
 * ---- Where ----
 * For a database FILE the folder is FILE.d/ (0700, made when missing),
 * and content N is the file FILE.d/N (0600).  The daemon is its only
 * writer (one mount per database: fs/main.c's lock).
 *
 * ---- Counted ----
 * A row of `inodes` names its content in its `content` column (NULL: the
 * file's bytes are chunk rows, as small files keep them).  The table
 * `contents(id, refs)` counts the rows naming each content; triggers of
 * the schema keep it right in the statement's own transaction, whatever
 * adds, changes or deletes a row (a session's cascading delete too).  A
 * content whose count falls to 0 keeps its row until contents_sweep()
 * has removed its file, after the commit: a rollback gives the count
 * back, and a file removed before the commit could not come back.
 *
 * ---- Shared, copied on write ----
 * Several rows may name one content (a fork, a snapshot, a copy made in
 * the mount, the trash).  A shared content is never written: the writer
 * first gets its own copy (contents_copy(): a reflink where the host file
 * system can, copy_file_range() otherwise).
 *
 * ---- The order of writes, and why a crash breaks nothing ----
 * 1. A content's file is made (O_EXCL) and written before any row names
 *    it; a file that no row names is an orphan, removed at the next
 *    mount (contents_mount_sweep()).
 * 2. The commit that names it (or a new size) comes after its bytes are
 *    written; for fsync() after fdatasync() of the file, so that a
 *    committed size never lies past what survives a power loss.
 *    A file is never shorter than the size committed for it: growing
 *    writes extend it before the commit, and a cut is made to the file
 *    only after the commit of the smaller size.
 * 3. A file is removed only after the commit that left it unnamed
 *    (count 0), then its row (a crash in between: removed again, ENOENT
 *    is fine).
 * 4. What a crash can leave: an orphan file (swept), a file longer than
 *    its committed size (the tail is never read, and cut before the size
 *    grows again), a count-0 row (swept).  A missing or short file is
 *    damage done outside flowfs: contents_mount_sweep() and the open of
 *    such a file report it, and reads of it are short, never a crash.
 *
 * Errors are negative errnos.  Not thread-safe beyond what the file
 * system calls themselves are; the callers serialize as for the store.
 */
#ifndef FLOWFS_CONTENTS_H
#define FLOWFS_CONTENTS_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/ferr.h"
#include "store/store.h"

struct contents;

/* The folder beside the database at `db_path`, made (0700) when
 * missing.  A folder that others may read is refused with the chmod that
 * fixes it: it holds every upload. */
int contents_open(struct contents **out, const char *db_path,
		  struct ferr *err);
void contents_close(struct contents *c);
const char *contents_dir(const struct contents *c);

/*
 * The reserve: CONTENTS_RESERVE bytes of the disk held in DIR/reserve (as
 * ZFS keeps slop space), so that when the disk is full a removal can
 * still write the database's log: the removal that fails with ENOSPC
 * lets go of it (contents_unreserve()) and tries again, and the writes
 * that grow the store wait until it is made again (contents_reserve(),
 * once the removals gave room back).  contents_reserve(): 0 when held,
 * -ENOSPC when the disk has not that much room.
 */
#define CONTENTS_RESERVE (8 * 1024 * 1024)
int contents_reserve(struct contents *c);
bool contents_unreserve(struct contents *c);
bool contents_reserved(const struct contents *c);

/* Make content `id`'s file (it must not exist): an fd open O_RDWR. */
int contents_create(struct contents *c, int64_t id);
/* Open content `id`'s file (O_RDWR, or O_RDONLY when `ro`). */
int contents_open_file(struct contents *c, int64_t id, bool ro);
/* Remove content `id`'s file; a missing one is no error. */
int contents_remove(struct contents *c, int64_t id);
/* Make content `id` a copy of the first `len` bytes of `src_fd`: a
 * reflink (FICLONE) where the file system can, else copy_file_range()
 * (in the kernel, no copy through the daemon); an fd open O_RDWR. */
int contents_copy(struct contents *c, int src_fd, int64_t len, int64_t id);

/* The bytes a content's file holds on the disk (blocks), or -errno. */
int64_t contents_allocated(int fd);

/*
 * At mount, before anything is written: removes the contents no row uses
 * any more, then the files no row names (a crash's orphans).  *next_id:
 * a number no content has (the next to make).
 */
int contents_mount_sweep(struct contents *c, struct store *st,
			 int64_t *next_id);

/*
 * What is wrong, one line each for a person, and the session each
 * concerns (0: none).
 */
typedef void (*contents_report_fn)(void *ctx, int64_t session,
				   const char *line);

/*
 * Every content a row names: its file there, and at least as long as the
 * largest size a row gives it.  Reports each that is not (never fixes
 * it); the number of contents found wrong, or -errno.
 */
int contents_check(struct contents *c, struct store *st,
		   contents_report_fn report, void *ctx);

/*
 * All that --check verifies: SQLite's quick_check, every count against
 * the rows naming the content, no row naming an uncounted content, no
 * file both in a data file and in chunks, and contents_check().  The
 * number of problems reported, or -errno.
 */
int contents_verify(struct contents *c, struct store *st,
		    contents_report_fn report, void *ctx);
/* The data files no row names (a crash's, which the next mount
 * removes): reported, how many. */
int contents_orphans(struct contents *c, struct store *st,
		     contents_report_fn report, void *ctx);

/* After a commit: remove the files of contents no row names any more,
 * then their rows (one transaction).  0, or -errno. */
int contents_sweep(struct contents *c, struct store *st);
/* Whether contents_sweep() has work (a cheap indexed look). */
bool contents_sweep_due(struct store *st);

/* How many rows name content `id` (0 when none). */
int contents_refs(struct store *st, int64_t id, int64_t *refs);

/* The bytes the data files hold on the disk, each counted once. */
int contents_space(struct contents *c, struct store *st, int64_t *bytes);

#endif
