/*
 * tree_i.h: private to the tree family (tree*.c), the shared structs and
 * the functions the parts call in each other.  Not a contract: tree.h is
 * the only one.
 *
 * tree.c: the rows and their names (lookup, create, remove, rename, the
 * trash folders, the kernel's references), the tree's life cycle;
 * tree_data.c: the bytes of regular files (chunk rows, data files, open
 * files and their gathered writes, the spill, reads, writes, cuts);
 * tree_copy.c: copies that share contents; tree_convert.c: an older
 * store's large files moved to data files.
 */
#ifndef FLOWFS_TREE_I_H
#define FLOWFS_TREE_I_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/contents.h"
#include "store/store.h"
#include "store/tree.h"

#define OPEN_BUCKETS 256

struct dirty_chunk {
	int64_t idx;
	size_t len;		/* bytes of data held, from the chunk start */
	size_t stored_len;	/* length of the chunk in the store before */
	char *data;		/* TREE_CHUNK_SIZE bytes */
};

/* One per inode with open handles, shared by them. */
struct open_file {
	uint64_t ino;
	int handles;
	bool orphan;		/* unlinked while open */
	int64_t size;		/* as the caller sees it */
	int64_t stored_size;	/* as in the store */
	int64_t alloc;		/* stored alloc */
	int64_t mtime_ns, ctime_ns;
	bool attr_dirty;
	struct dirty_chunk *chunks;
	size_t nchunks, chunks_alloc;
	size_t dirty_bytes;
	bool spilling;		/* its chunks are the spill (struct spill) */
	int spill_err;		/* the spill's failure, for the next write */
	/* Its bytes in a data file (contents.h): content's number, 0 when
	 * in chunks; the file open; whether the row names another content
	 * (or none) until the next commit; and whether the content is known
	 * to be its own alone, as of share_epoch (tree.share_epoch). */
	int64_t content;
	int fd;
	bool content_dirty;
	bool owned;
	uint64_t owned_epoch;
	struct open_file *next;
};

/*
 * A big write's gathered chunks on their way to the store (the spill,
 * tree_set_spiller()): tree_write() hands them over, another thread
 * commits them holding no lock while the writer gathers the next ones,
 * and settles holding the caller's lock.  Until then they are the file's
 * data, between the store's and what it gathered since.
 */
struct spill {
	uint64_t ino;		/* 0: none on its way */
	struct dirty_chunk *chunks;
	size_t nchunks;
	size_t bytes;		/* still counted in tree.dirty_bytes */
	int64_t first_idx, last_idx;
	int64_t size, mtime_ns, ctime_ns;
	int64_t alloc_before, alloc_after;
	int ret;		/* of the commit */
};

/* Chunk buffers kept for reuse, a small file's worth: freeing them lets
 * malloc trim the heap, and each write faulted pages anew.  (8 MiB of
 * them, as when every file's bytes were chunks, was a third of the
 * daemon's resident memory once large files went to data files.) */
#define POOL_MAX (2 * TREE_INLINE_MAX / TREE_CHUNK_SIZE)

/*
 * The kernel's references (tree.h), by inode: open addressing with
 * linear probing, at most half full, emptied slots closed up by moving
 * later ones back (no tombstones).  `kept`: the row was unlinked while
 * referenced, and waits for the last reference to go.
 */
struct ref_slot {
	uint64_t ino;		/* 0: empty */
	uint64_t count;
	bool kept;
};

struct ref_table {
	struct ref_slot *slots;
	size_t size;		/* a power of two, or 0 */
	size_t used;
};

struct tree {
	struct store *st;
	/* tree_set_cutter(): where and how big deletes go outside the
	 * caller's lock (cut_st NULL: on st, inside it) */
	struct store *cut_st;
	void (*leave)(void *lock_ctx);
	void (*enter)(void *lock_ctx);
	void *lock_ctx;
	/* tree_set_spiller(): spill_st NULL, none */
	struct store *spill_st;
	void (*spill_kick)(void *lock_ctx);
	void (*spill_wait)(void *lock_ctx);
	struct spill spill;
	struct ref_table refs;
	struct open_file *open[OPEN_BUCKETS];
	size_t dirty_bytes;
	uint64_t changes;	/* tree_changes() */
	char *pool[POOL_MAX];
	size_t npool;
	/* the data files (contents.h): the next content's number, and a
	 * count moved by whatever may share a content (tree_shared()) */
	struct contents *contents;
	int64_t next_content;
	uint64_t share_epoch;
	contents_report_fn report;
	void *report_ctx;
	int64_t inline_max;	/* tree_set_inline_max() */
	/* a row was deleted or let go of its content since the last
	 * tree_sweep(): only then it looks (a query per request cost 12
	 * fcntl() locks per small file created) */
	bool sweep_maybe;
};

/* ---- tree.c: rows, names, the kernel's references ------------------------ */

int tree_read_row(struct tree *t, uint64_t ino, struct tree_attr *out);
int tree_delete_if_unlinked(struct tree *t, uint64_t ino);
bool tree_referenced(const struct tree *t, uint64_t ino);

/* ---- tree_data.c: open files and their bytes ----------------------------- */

struct open_file *tree_open_find(struct tree *t, uint64_t ino);
void tree_overlay_open(struct tree *t, struct tree_attr *a);
void tree_drop_chunks(struct tree *t, struct open_file *f);
int tree_open_content(struct tree *t, int64_t id, int64_t session,
		      uint64_t ino, bool ro);
int tree_externalize(struct tree *t, struct open_file *f);
int tree_flush_file(struct tree *t, struct open_file *f, bool durable);
int tree_open_first(struct tree *t, const struct tree_attr *a);
int tree_delete_unlinked(struct tree *t, struct open_file *f);

#endif
