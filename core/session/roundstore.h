/*
 * roundstore: a session's rounds/<n>.json (seed 004, DESIGN §7) in the
 * database — the rounds table (schema v6 and on: drafts, a column per
 * tag) — checked with formats/rounds.
 * No files here: the caller maps rounds/<n>.json to n and back
 * (roundstore_number()).
 *
 *	struct ferr err = FERR_INIT;
 *	if (roundstore_put(st, session, 2, text, len, &err) < 0)
 *		... "rounds/2.json: a round after the first needs
 *		     \"inference\""
 *	json_t **rounds; size_t n;
 *	roundstore_load(st, session, &rounds, &n, &err);
 *	rounds_render_summary(desc, io, (const json_t *const *)rounds, n, &out);
 *	roundstore_free(rounds, n);
 *
 * ---- Writes, gaps and drafts ----
 * Writes keep the set valid but for gaps: a round is stored only when
 * it is placed right among the rounds there (the rules concern a round's
 * number and whether another follows it, so it and the one before it
 * are checked) — so adding round n+1 after a concluding round n is
 * refused, as is adding it while round n has no observation.  Rounds may
 * come in any order (a copy of a session comes back so), and deletions
 * too (so `rm -rf rounds` works): a gap is a problem roundstore_gap()
 * finds with one index scan and roundstore_load() refuses until it is
 * filled; filling it checks the round and its neighbours, so a set
 * without gaps passes rounds_check() — a gap is the only way a stored
 * set can be wrong.  Drafts (below) are not
 * rounds: no rule sees them.  Documents are stored in the
 * one JSON layout (fjson_dump), key order as written; writing the same
 * bytes again keeps the mtime.
 */
#ifndef FLOWFS_ROUNDSTORE_H
#define FLOWFS_ROUNDSTORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/ferr.h"
#include "lib/sbuf.h"
#include "store/store.h"

/* The most rounds a session holds (seed 004 runs at most 50 iterations;
 * the bound keeps one write's check linear and small). */
#define ROUNDSTORE_MAX 1000
/*
 * The largest round (its stored document) and the most all of a
 * session's rounds hold together: output/summary.json is built from
 * all of them on a read, so they bound what one read builds.  A write
 * past either is refused (-EINVAL, "rounds/3.json: 2000000 bytes: a
 * round holds at most 1048576").
 */
#define ROUNDSTORE_ROUND_MAX (1024 * 1024)
#define ROUNDSTORE_TOTAL_MAX (16 * 1024 * 1024)

/* A stored round as a folder lists it. */
struct roundstore_item {
	int64_t number;
	int64_t mtime_ns;
	size_t size;		/* of its document; 0 for a draft */
	bool draft;
};

/*
 * The round number a file name stands for: "<n>.json", n a decimal
 * 1..ROUNDSTORE_MAX without leading zeros or sign.  true and *number, or
 * false (the name is an ordinary scratch file).
 */
bool roundstore_number(const char *name, int64_t *number);

/* Every stored round by number; free(*items). */
int roundstore_list(struct store *st, int64_t session,
		    struct roundstore_item **items, size_t *n);

/* One stored round (or draft) by number; -ENOENT when there is none. */
int roundstore_stat(struct store *st, int64_t session, int64_t number,
		    struct roundstore_item *out);

/* Round `number`'s document (nothing for a draft) and mtime; -ENOENT
 * when there is none. */
int roundstore_get(struct store *st, int64_t session, int64_t number,
		   struct sbuf *doc, int64_t *mtime_ns);

/*
 * Store `text` as round `number` (created or replaced) when it parses and
 * the rounds with it pass (see above).  0, -EINVAL with err (its path
 * "rounds/<n>.json" and a message that names the file), -ENOMEM, or a
 * store error.
 */
int roundstore_put(struct store *st, int64_t session, int64_t number,
		   const char *text, size_t len, struct ferr *err);

/*
 * A draft of round `number`: a rounds/<n>.json being created, listed with
 * size 0 and ignored by everything else until roundstore_put() fills it.
 * -EEXIST when the number is taken.  roundstore_drop_draft() removes it
 * if it is still a draft (a refused or abandoned create);
 * roundstore_drop_all_drafts() removes every one (at mount, after a
 * crash).
 */
int roundstore_create_draft(struct store *st, int64_t session, int64_t number);
int roundstore_drop_draft(struct store *st, int64_t session, int64_t number);
int roundstore_drop_all_drafts(struct store *st);

/*
 * mv rounds/<from>.json rounds/<to>.json: the round is stored as `to`
 * under roundstore_put()'s rules, with `from` already gone (so moving
 * the last round up leaves a gap and is refused), in one transaction.
 * -ENOENT without `from`, -EEXIST when `to` is taken and not `replace`,
 * -EINVAL with err for a refusal (nothing changed).  A draft just moves.
 */
int roundstore_rename(struct store *st, int64_t session, int64_t from,
		      int64_t to, bool replace, struct ferr *err);

/* Remove round `number` (or its draft): 0 or -ENOENT. */
int roundstore_delete(struct store *st, int64_t session, int64_t number);

/*
 * All rounds 1..n, parsed, for rounds_render_*(): 0, or -EINVAL with err
 * when the stored set has a gap or does not pass rounds_check() (after
 * a deletion).  Free with roundstore_free().
 */
int roundstore_load(struct store *st, int64_t session, json_t ***rounds,
		    size_t *n, struct ferr *err);
void roundstore_free(json_t **rounds, size_t n);

/* When a round was last stored, changed or removed (0: never); it only
 * grows, by at least 1 per change (a version of the rounds). */
int roundstore_mtime(struct store *st, int64_t session, int64_t *mtime_ns);

/*
 * -EINVAL with err ("rounds/3.json is missing: rounds are numbered from 1
 * without gaps (rounds/5.json exists)") when the numbering has a gap;
 * 0 when not.  No document is read.
 */
int roundstore_gap(struct store *st, int64_t session, struct ferr *err);

/* roundstore_gap()'s message as a status line with its "\n", or
 * nothing. */
int roundstore_problem(struct store *st, int64_t session, struct sbuf *out);

#endif
