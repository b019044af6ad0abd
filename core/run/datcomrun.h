/*
 * datcomrun: USAF Digital DATCOM run on a deck (--datcom=PATH), in the
 * experiment sandbox, once per deck, and what it gave: its printout
 * (output/for006.dat), its coefficient tables as CSV
 * (output/coefficients.csv) and plotted by gnuplot, in the sandbox too
 * (output/coefficients.svg).
 *
 * ---- Once per deck ----
 * Results are kept by the deck's text (compared whole), so a session
 * whose deck does not change runs DATCOM once, and sessions with the same
 * deck share the run: DATCOMRUN_SLOTS decks, the least recently used out
 * (what they hold is bounded below).  A caller that asks for a deck being
 * run waits for that run rather than starting another.
 *
 * ---- Never stalling the daemon ----
 * A caller runs DATCOM, or waits for it, in its own thread and holding
 * nothing (the filesystem's reader, outside its lock: fs/entries.c).  At
 * most DATCOMRUN_GOING runs go on at once and DATCOMRUN_WAITING callers
 * wait at once (for a run of theirs or for a free run), all decks
 * together, so the filesystem's threads (fs.h: FS_READERS) are never
 * all held by DATCOM; a caller past that gets -EAGAIN at once and shows
 * that DATCOM is busy.  A run ends by the time limit (--datcom-timeout:
 * DATCOM never ends on some input) or when the daemon stops
 * (datcomrun_stop()).
 *
 * ---- In the sandbox ----
 * Each run gets a scratch folder of its own below the daemon's
 * (sandbox.h: sandbox_scratch_open()), holding the deck as d.dat; DATCOM
 * runs there as `PROGRAM d.dat` (BUILD.md: its argument is read into a
 * CHARACTER*32), the program bound read-only into the sandbox, and writes
 * output.dat; gnuplot then runs in the same folder on the script
 * printout_plot_script() wrote.  Both as sandbox_run() runs any program:
 * no network, no view of the host, the mount or the database, the
 * sandbox's limits, wall and CPU time the time limit.  What comes back
 * is read from the folder as an experiment's files are (a regular file
 * with one link), at most PRINTOUT_MAX_SIZE of the printout and
 * DATCOMRUN_SVG_MAX of the plot; the folder is removed after.
 *
 * ---- Failure ----
 * DATCOM failed when it could not be started, did not end within the
 * time limit, stopped before its END OF JOB (a crash, a Fortran runtime
 * error), marked the deck's input as wrong (printout_input_errors()), or
 * printed no coefficient table.  The result then says why in one line
 * (`why`), and every file says it too: for006.dat is what DATCOM printed
 * followed by a line "flowfs: <why>", coefficients.csv and
 * coefficients.svg that line alone (the SVG as a picture of the
 * message).  A plot gnuplot could not draw is a picture of why; the
 * tables are still good.
 */
#ifndef FLOWFS_DATCOMRUN_H
#define FLOWFS_DATCOMRUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/lru.h"
#include "lib/sbuf.h"
#include "sandbox/sandbox.h"

#define DATCOMRUN_SLOTS 8
#define DATCOMRUN_GOING 2
#define DATCOMRUN_WAITING 3
/* the plot gnuplot wrote, read back at most */
#define DATCOMRUN_SVG_MAX ((size_t)8 << 20)
/* --datcom-timeout: default and range */
#define DATCOMRUN_TIMEOUT_S 30
#define DATCOMRUN_TIMEOUT_MAX 3600
/* gnuplot on tables it is given ends in well under a second */
#define DATCOMRUN_PLOT_S 30

struct datcomrun_options {
	const char *program;	/* --datcom, an absolute path */
	long timeout_s;		/* 0: DATCOMRUN_TIMEOUT_S */
	const char *scratch;	/* the daemon's folder of scratch folders */
	/* the sandbox's uid and gid, cgroups (wall and CPU time are set
	 * from timeout_s) */
	struct sandbox_limits limits;
};

/* What one run gave; shared, read-only once made. */
struct datcomrun_result {
	unsigned refs;		/* datcomrun's lock guards it */
	uint64_t serial;	/* unique among results: a cache's version */
	bool ok;
	char why[512];		/* when !ok: one line, for status and log */
	int64_t seconds_ms;	/* how long DATCOM ran */
	struct sbuf printout;	/* for006.dat as shown */
	struct sbuf csv, svg;
};

struct datcomrun {
	struct datcomrun_options opt;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct datcomrun_slot {
		struct lru_age age;
		char *deck;
		size_t len;
		bool running;
		struct datcomrun_result *res;	/* NULL while running */
	} slot[DATCOMRUN_SLOTS];
	uint64_t clock, serials;
	/* moves whenever a run starts or ends: status's version */
	uint64_t generation;
	unsigned going, waiting;
	bool stopping;
};

/* 0 or a negative errno; opt's strings must outlive r. */
int datcomrun_init(struct datcomrun *r, const struct datcomrun_options *opt);
/* Ask runs going on to end (they end as cancelled) and wait for them. */
void datcomrun_stop(struct datcomrun *r);
void datcomrun_release(struct datcomrun *r);

/*
 * The result for `deck` in *res (a reference: datcomrun_put() it), run
 * now when none is kept, or waited for when one is being run.  *fresh
 * (may be NULL) says whether this call ran it.  -EAGAIN: DATCOM is busy
 * (see above), -ECANCELED: the daemon is stopping, -ENOMEM.  Never call
 * holding a lock other threads need.
 */
int datcomrun_get(struct datcomrun *r, const char *deck, size_t len,
		  struct datcomrun_result **res, bool *fresh);

/*
 * The result kept for `deck`, at once: a reference, or NULL (none yet).
 * *running (may be NULL) says whether it is being run.
 */
struct datcomrun_result *datcomrun_peek(struct datcomrun *r, const char *deck,
					size_t len, bool *running);

void datcomrun_put(struct datcomrun *r, struct datcomrun_result *res);

/* A number that moves whenever a run starts or ends. */
uint64_t datcomrun_generation(struct datcomrun *r);

/* Two 64-bit hashes of a deck's text: a version for what is made from
 * it (fs/cache.h) without holding the text. */
void datcomrun_hash(const char *deck, size_t len, int64_t out[2]);

#endif
