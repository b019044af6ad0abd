/* store: the SQLite database — opened, checked, migrated — its statements,
 * transactions and checkpoints; see store.h. */
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "lib/fclock.h"
#include "lib/fjson.h"
#include "store/contents.h"

#define STMT_BUCKETS 128

struct stmt_entry {
	const char *sql;
	sqlite3_stmt *stmt;
	struct stmt_entry *next;
};

/*
 * WAL frames past which a commit checkpoints inline anyway, so the log
 * stays bounded when the background checkpointer cannot keep up (128 MiB
 * in 16 KiB pages); past CKPT_TRUNCATE_FRAMES (journal_size_limit's 64
 * MiB) the thread also empties the file once writes pause.
 */
#define WAL_FRAMES_LIMIT 8192
#define CKPT_TRUNCATE_FRAMES 4096
#define CKPT_TRUNCATE_TRIES 5
/*
 * The thread copies the log back once it holds CKPT_EVERY_FRAMES frames
 * (4 MiB in 16 KiB pages), or CKPT_AFTER_MS after the first commit it has
 * not copied.  Waking it for every commit cost two fdatasync()s, a dozen
 * fcntl() locks and a truncate of the log per commit: creating 2,000 small
 * files made 7,386 fdatasync() and 95,186 fcntl() calls (strace -c), and
 * the daemon 3.5x fuse-overlayfs's CPU.  Since the bytes of large files
 * no longer pass through the log (contents.h), it grows slowly.
 */
#define CKPT_EVERY_FRAMES 256
#define CKPT_AFTER_MS 1000

struct checkpointer {
	sqlite3 *db;		/* its own connection */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_mutex_t copying;	/* held through every checkpoint */
	bool pending, stop, running;
	bool dirty;		/* commits not copied since the last copy */
	uint64_t commits;	/* how many, for quiet_for() */
	int frames;		/* in the log at the last commit */
	bool truncate_due;	/* the log is to be emptied (vacuum_steps()) */
};

struct store {
	struct checkpointer ckpt;
	sqlite3 *db;
	char *path;
	bool durable;		/* the open transaction syncs on commit */
	struct ferr warning;	/* store_warning() */
	struct contents *contents;	/* the data files beside it */
	bool owns_contents;		/* not a connection beside another */
	struct stmt_entry *stmts[STMT_BUCKETS];
};

/*
 * Version 1.  Inode numbers are rowids of `inodes` and are never reused
 * (AUTOINCREMENT), so the kernel never confuses a new file with a
 * forgotten one.  Every real file, folder and symlink of a session
 * (its root, uploads/ and everything below, scratch files) is a row;
 * file data is split in chunks so a large file is neither loaded whole
 * nor rewritten on a small change.
 */
static const char schema_v1[] =
	"CREATE TABLE meta ("
	"  key TEXT PRIMARY KEY,"
	"  value TEXT NOT NULL"
	") WITHOUT ROWID;"
	"CREATE TABLE sessions ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  name TEXT NOT NULL UNIQUE,"
	"  created_ns INTEGER NOT NULL,"
	"  title TEXT NOT NULL DEFAULT '',"
	"  doc_mtime_ns INTEGER NOT NULL,"
	"  root_ino INTEGER NOT NULL DEFAULT 0,"
	"  uploads_ino INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE TABLE inodes ("
	"  ino INTEGER PRIMARY KEY AUTOINCREMENT,"
	/* NULL for a file unlinked while open whose session is gone */
	"  session INTEGER REFERENCES sessions(id) ON DELETE CASCADE,"
	"  parent INTEGER,"		/* NULL: a session root, or unlinked */
	"  name BLOB,"
	"  mode INTEGER NOT NULL,"
	"  uid INTEGER NOT NULL,"
	"  gid INTEGER NOT NULL,"
	"  nlink INTEGER NOT NULL,"
	"  size INTEGER NOT NULL DEFAULT 0,"
	"  alloc INTEGER NOT NULL DEFAULT 0,"	/* bytes held in chunks */
	"  atime_ns INTEGER NOT NULL,"
	"  mtime_ns INTEGER NOT NULL,"
	"  ctime_ns INTEGER NOT NULL,"
	"  target BLOB"			/* symlink target */
	");"
	"CREATE UNIQUE INDEX inodes_by_name ON inodes(parent, name)"
	"  WHERE parent IS NOT NULL;"
	"CREATE INDEX inodes_by_session ON inodes(session);"
	/* Files unlinked while open, swept at mount: found without a scan. */
	"CREATE INDEX inodes_unlinked ON inodes(ino) WHERE nlink = 0;"
	/* A rowid table: SQLite writes 64 KiB blobs about 1.7x faster
	 * into one than into a WITHOUT ROWID table (measured here). */
	"CREATE TABLE chunks ("
	"  id INTEGER PRIMARY KEY,"
	"  ino INTEGER NOT NULL REFERENCES inodes(ino) ON DELETE CASCADE,"
	"  idx INTEGER NOT NULL,"
	"  data BLOB NOT NULL"
	");"
	"CREATE UNIQUE INDEX chunks_by_offset ON chunks(ino, idx);"
	"CREATE TABLE status_log ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  time_ns INTEGER NOT NULL,"
	"  path TEXT NOT NULL,"
	"  message TEXT NOT NULL"
	");"
	"CREATE INDEX status_log_by_session ON status_log(session, id);"
	/* Inode 1 is the mount's root, which is not a row. */
	"INSERT INTO sqlite_sequence(name, seq) VALUES ('inodes', 1);";

/*
 * Version 2: sessions bind a skill and an engine and keep their
 * request.json; every session gets an output/ folder.  A scratch entry
 * that a version-1 session already had under that name is kept, renamed
 * "output.v1" (a folder of that name is adopted instead).
 */
static const char schema_v2[] =
	"ALTER TABLE sessions ADD COLUMN skill TEXT;"
	"ALTER TABLE sessions ADD COLUMN engine TEXT;"
	"ALTER TABLE sessions ADD COLUMN request TEXT;"
	"ALTER TABLE sessions ADD COLUMN request_mtime_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN output_ino INTEGER NOT NULL DEFAULT 0;"
	/* what a folder is to its session: 1 uploads/, 2 output/ */
	"ALTER TABLE inodes ADD COLUMN tag INTEGER NOT NULL DEFAULT 0;"
	"UPDATE inodes SET tag = 1 WHERE ino IN (SELECT uploads_ino FROM sessions);"
	"UPDATE inodes SET name = CAST('output.v1' AS BLOB)"
	"  WHERE name = CAST('output' AS BLOB) AND (mode & 61440) != 16384"
	"  AND parent IN (SELECT root_ino FROM sessions);"
	"INSERT INTO inodes(session, parent, name, mode, uid, gid, nlink,"
	"  atime_ns, mtime_ns, ctime_ns, tag)"
	"  SELECT s.id, s.root_ino, CAST('output' AS BLOB), 16877, r.uid, r.gid,"
	"    2, r.mtime_ns, r.mtime_ns, r.mtime_ns, 2"
	"  FROM sessions s JOIN inodes r ON r.ino = s.root_ino"
	"  WHERE NOT EXISTS (SELECT 1 FROM inodes o WHERE o.parent = s.root_ino"
	"    AND o.name = CAST('output' AS BLOB));"
	"UPDATE inodes SET nlink = 2 + (SELECT count(*) FROM inodes c"
	"  WHERE c.parent = inodes.ino AND (c.mode & 61440) = 16384)"
	"  WHERE ino IN (SELECT root_ino FROM sessions);"
	"UPDATE sessions SET output_ino = (SELECT ino FROM inodes"
	"  WHERE parent = sessions.root_ino AND name = CAST('output' AS BLOB));"
	"UPDATE inodes SET tag = 2 WHERE ino IN (SELECT output_ino FROM sessions);";

/* A session folder `name` tagged `tag` for every session that lacks one
 * (a non-folder scratch entry of that name is kept as "<name>.v2"). */
#define SQL_ADD_FOLDER(name, tag, column) \
	"UPDATE inodes SET name = CAST('" name ".v2' AS BLOB)" \
	"  WHERE name = CAST('" name "' AS BLOB) AND (mode & 61440) != 16384" \
	"  AND parent IN (SELECT root_ino FROM sessions);" \
	"INSERT INTO inodes(session, parent, name, mode, uid, gid, nlink," \
	"  atime_ns, mtime_ns, ctime_ns, tag)" \
	"  SELECT s.id, s.root_ino, CAST('" name "' AS BLOB), 16877, r.uid," \
	"    r.gid, 2, r.mtime_ns, r.mtime_ns, r.mtime_ns, " #tag \
	"  FROM sessions s JOIN inodes r ON r.ino = s.root_ino" \
	"  WHERE NOT EXISTS (SELECT 1 FROM inodes o WHERE o.parent = s.root_ino" \
	"    AND o.name = CAST('" name "' AS BLOB));" \
	"UPDATE sessions SET " column " = (SELECT ino FROM inodes" \
	"  WHERE parent = sessions.root_ino AND name = CAST('" name "' AS BLOB));" \
	"UPDATE inodes SET tag = " #tag " WHERE ino IN (SELECT " column \
	"  FROM sessions);"

/*
 * Version 3: the job graph (seed 000).  A node keeps its canonical
 * document; an edge its five fields (NULL while it is a draft being
 * written).  Deleting a node deletes the edges that name it, whatever
 * deletes it.  Every session gets nodes/ and edges/ folders (for the
 * scratch files of editors; the graph's files are shown over them).
 */
static const char schema_v3[] =
	"ALTER TABLE sessions ADD COLUMN template_uuid TEXT;"
	"ALTER TABLE sessions ADD COLUMN graph_mtime_ns INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN nodes_ino INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN edges_ino INTEGER NOT NULL DEFAULT 0;"
	"UPDATE sessions SET template_uuid = " STORE_SQL_UUID4 ";"
	"CREATE TABLE graph_nodes ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  id TEXT NOT NULL,"
	"  doc TEXT,"			/* NULL: a draft */
	"  mtime_ns INTEGER NOT NULL"
	");"
	"CREATE UNIQUE INDEX graph_nodes_by_id ON graph_nodes(session, id);"
	"CREATE TABLE graph_edges ("
	"  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  id TEXT NOT NULL,"
	"  source TEXT,"		/* NULL (all four): a draft */
	"  source_param TEXT,"
	"  target TEXT,"
	"  target_param TEXT,"
	"  mtime_ns INTEGER NOT NULL"
	");"
	"CREATE UNIQUE INDEX graph_edges_by_id ON graph_edges(session, id);"
	"CREATE INDEX graph_edges_by_source ON graph_edges(session, source);"
	"CREATE INDEX graph_edges_by_target ON graph_edges(session, target);"
	"CREATE TRIGGER graph_node_deleted AFTER DELETE ON graph_nodes BEGIN"
	"  DELETE FROM graph_edges WHERE session = old.session"
	"    AND (source = old.id OR target = old.id);"
	"END;"
	SQL_ADD_FOLDER("nodes", 3, "nodes_ino")
	SQL_ADD_FOLDER("edges", 4, "edges_ino")
	"UPDATE inodes SET nlink = 2 + (SELECT count(*) FROM inodes c"
	"  WHERE c.parent = inodes.ino AND (c.mode & 61440) = 16384)"
	"  WHERE ino IN (SELECT root_ino FROM sessions);";

/* Version 4: a session's structured context (seed 003), as stored. */
static const char schema_v4[] =
	"ALTER TABLE sessions ADD COLUMN context TEXT;"
	"ALTER TABLE sessions ADD COLUMN context_mtime_ns INTEGER NOT NULL DEFAULT 0;";

/* Version 5: the rounds of a scientific workflow (seed 004). */
static const char schema_v5[] =
	"CREATE TABLE rounds ("
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL CHECK (n BETWEEN 1 AND 1000),"
	"  doc TEXT NOT NULL,"
	"  mtime_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (session, n)"
	") WITHOUT ROWID;";

/*
 * Version 6: rounds/ is a folder of every session (for editors' scratch
 * files, like nodes/); a round may be a draft (doc NULL): a
 * rounds/<n>.json created and not yet closed with a valid document; a
 * round keeps each tag's text in a column beside its document; and the
 * session knows when its rounds last changed (a deletion leaves no row
 * to tell).
 */
static const char schema_v6[] =
	"ALTER TABLE sessions ADD COLUMN rounds_ino INTEGER NOT NULL DEFAULT 0;"
	"ALTER TABLE sessions ADD COLUMN rounds_mtime_ns INTEGER NOT NULL DEFAULT 0;"
	"UPDATE sessions SET rounds_mtime_ns = coalesce((SELECT max(mtime_ns)"
	"  FROM rounds WHERE session = sessions.id), 0);"
	/* A rowid table: a WITHOUT ROWID b-tree compares whole rows as
	 * keys, so every scan of numbers read every round's text (v5). */
	"CREATE TABLE rounds_v6 ("
	"  id INTEGER PRIMARY KEY,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  n INTEGER NOT NULL CHECK (n BETWEEN 1 AND 1000),"
	"  mtime_ns INTEGER NOT NULL,"
	"  size INTEGER,"			/* of doc; NULL: a draft */
	/* the tags' texts, so that a transcript parses no JSON */
	"  phenomenon TEXT, hypothesis TEXT, model TEXT, experiment TEXT,"
	"  observation TEXT, inference TEXT, conclusion TEXT,"
	"  doc TEXT"				/* as shown; NULL: a draft */
	");"
	"INSERT INTO rounds_v6(session, n, mtime_ns, size, phenomenon,"
	"  hypothesis, model, experiment, observation, inference, conclusion,"
	"  doc) SELECT session, n, mtime_ns, length(CAST(doc AS BLOB)),"
	"  doc ->> '$.phenomenon', doc ->> '$.hypothesis', doc ->> '$.model',"
	"  doc ->> '$.experiment', doc ->> '$.observation',"
	"  doc ->> '$.inference', doc ->> '$.conclusion', doc FROM rounds;"
	"DROP TABLE rounds;"
	"ALTER TABLE rounds_v6 RENAME TO rounds;"
	"CREATE UNIQUE INDEX rounds_by_number ON rounds(session, n);"
	/* the stored rounds' numbers, read without visiting a row */
	"CREATE INDEX rounds_stored ON rounds(session, n)"
	"  WHERE size IS NOT NULL;"
	SQL_ADD_FOLDER("rounds", 5, "rounds_ino")
	"UPDATE inodes SET nlink = 2 + (SELECT count(*) FROM inodes c"
	"  WHERE c.parent = inodes.ino AND (c.mode & 61440) = 16384)"
	"  WHERE ino IN (SELECT root_ino FROM sessions);";

/*
 * Version 7: engine runs (issue 7).  A session remembers its last run's
 * state and what status says of it, keeps the audit log of its engine
 * calls (engine.log, one JSON line per HTTP call) and the state of the
 * downloads of its URL inputs.
 */
static const char schema_v7[] =
	"ALTER TABLE sessions ADD COLUMN run_state TEXT;"
	"ALTER TABLE sessions ADD COLUMN run_message TEXT;"
	"ALTER TABLE sessions ADD COLUMN run_ns INTEGER NOT NULL DEFAULT 0;"
	"CREATE TABLE engine_log ("
	"  id INTEGER PRIMARY KEY,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  time_ns INTEGER NOT NULL,"
	"  line TEXT NOT NULL"
	");"
	"CREATE INDEX engine_log_by_session ON engine_log(session, id);"
	/* the URL inputs of request.json and where their download stands */
	"CREATE TABLE fetches ("
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  key TEXT NOT NULL,"
	"  url TEXT NOT NULL,"
	"  name TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  message TEXT NOT NULL DEFAULT '',"
	"  time_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (session, key)"
	");";

/*
 * Version 8 (issue 11): the mount root's log (.flowfs/log), for refusals
 * at the root, where no session could keep them (a session's log stays
 * status_log); and the trash.  Sessions' root folders get a tag of their
 * own (tree.h), as they may now lie in a trash folder, with a parent; a
 * trash folder at the root is a row of no session without a parent,
 * found by its name.  A session in a trash is named "/<id>" in sessions
 * (no session name holds a '/'), so its name is free at the root.
 * Edges may be written before their nodes: such an edge waits, pending,
 * in its row as any edge (source_param NULL when it gives none), and why
 * it waits in pending_why (NULL for the edges of the graph), kept right
 * by every change that can change it, so that status need not check
 * again (graph.h).  A node takes the edges naming it, pending ones too,
 * when it is deleted, but a draft has none: those that wait for it stay.
 */
static const char schema_v8[] =
	"CREATE TABLE mount_log ("
	"  id INTEGER PRIMARY KEY AUTOINCREMENT,"
	"  time_ns INTEGER NOT NULL,"
	"  path TEXT NOT NULL,"
	"  message TEXT NOT NULL"
	");"
	"UPDATE inodes SET tag = 64 WHERE ino IN (SELECT root_ino FROM sessions);"
	"CREATE UNIQUE INDEX inodes_trash ON inodes(name)"
	"  WHERE parent IS NULL AND tag = 65;"
	"ALTER TABLE graph_edges ADD COLUMN pending_why TEXT;"
	"CREATE INDEX graph_edges_pending"
	"  ON graph_edges(session, seq) WHERE pending_why IS NOT NULL;"
	"DROP TRIGGER graph_node_deleted;"
	"CREATE TRIGGER graph_node_deleted AFTER DELETE ON graph_nodes"
	"  WHEN old.doc IS NOT NULL BEGIN"
	"  DELETE FROM graph_edges WHERE session = old.session"
	"    AND (source = old.id OR target = old.id);"
	"END;";

/*
 * Version 9 (issue 12): how many rows of graph_nodes and graph_edges each
 * session holds (drafts and pending edges too: room_for() counts them),
 * kept by triggers in the statement's own transaction, so that a write is
 * checked against the limit without counting the graph (count(*) per
 * file made a restore of N files O(N^2)).  A table of their own, not
 * columns of sessions: a session row holds its context (up to 1 MiB),
 * which SQLite would copy again on every count it changed.  A row is
 * made by a session's first graph row; rows never change session today,
 * but a trigger keeps the counts right if one does.
 */
static const char schema_v9[] =
	"CREATE TABLE graph_counts ("
	"  session INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
	"  nodes INTEGER NOT NULL DEFAULT 0,"
	"  edges INTEGER NOT NULL DEFAULT 0"
	");"
	"INSERT INTO graph_counts(session, nodes, edges)"
	"  SELECT id, (SELECT count(*) FROM graph_nodes WHERE session = s.id),"
	"  (SELECT count(*) FROM graph_edges WHERE session = s.id)"
	"  FROM sessions s WHERE EXISTS (SELECT 1 FROM graph_nodes"
	"  WHERE session = s.id) OR EXISTS (SELECT 1 FROM graph_edges"
	"  WHERE session = s.id);"
#define COUNT_TRIGGERS(table, col)					\
	"CREATE TRIGGER " table "_counted AFTER INSERT ON " table " BEGIN" \
	"  INSERT INTO graph_counts(session, " col ")"			\
	"    VALUES (new.session, 1) ON CONFLICT(session)"		\
	"    DO UPDATE SET " col " = " col " + 1;"			\
	"END;"								\
	"CREATE TRIGGER " table "_uncounted AFTER DELETE ON " table " BEGIN" \
	"  UPDATE graph_counts SET " col " = " col " - 1"		\
	"    WHERE session = old.session;"				\
	"END;"								\
	"CREATE TRIGGER " table "_moved AFTER UPDATE OF session ON " table \
	"  WHEN new.session IS NOT old.session BEGIN"			\
	"  UPDATE graph_counts SET " col " = " col " - 1"		\
	"    WHERE session = old.session;"				\
	"  INSERT INTO graph_counts(session, " col ")"			\
	"    VALUES (new.session, 1) ON CONFLICT(session)"		\
	"    DO UPDATE SET " col " = " col " + 1;"			\
	"END;"
	COUNT_TRIGGERS("graph_nodes", "nodes")
	COUNT_TRIGGERS("graph_edges", "edges");
#undef COUNT_TRIGGERS

/* migrations[v] takes a database at version v to v + 1. */
/*
 * Version 10: the job graph runs (issue 16).  jobs/ is a folder of every
 * session (what each job left: its script, state, stdout, stderr and
 * outputs); a session's last graph run and its jobs, kept so that a
 * remount re-attaches to jobs that outlive the daemon.
 */
static const char schema_v10[] =
	"ALTER TABLE sessions ADD COLUMN jobs_ino INTEGER NOT NULL DEFAULT 0;"
	SQL_ADD_FOLDER("jobs", 6, "jobs_ino")
	"UPDATE inodes SET nlink = 2 + (SELECT count(*) FROM inodes c"
	"  WHERE c.parent = inodes.ino AND (c.mode & 61440) = 16384)"
	"  WHERE ino IN (SELECT root_ino FROM sessions);"
	"CREATE TABLE graph_runs ("
	"  session INTEGER PRIMARY KEY REFERENCES sessions(id) ON DELETE CASCADE,"
	"  number INTEGER NOT NULL,"		/* run-<number>/ in the work dir */
	"  executor TEXT NOT NULL,"		/* local, slurm */
	"  run_dir TEXT NOT NULL,"
	"  state TEXT NOT NULL,"		/* running, done, failed, cancelled */
	"  started_ns INTEGER NOT NULL,"
	"  ended_ns INTEGER"
	");"
	"CREATE TABLE graph_jobs ("
	"  id INTEGER PRIMARY KEY,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  position INTEGER NOT NULL,"		/* in the plan's order */
	"  node_id TEXT NOT NULL,"
	"  job_dir TEXT NOT NULL,"
	"  deps TEXT NOT NULL,"			/* JSON: positions it needs */
	"  outputs TEXT NOT NULL,"		/* JSON: {name: path} */
	"  script TEXT NOT NULL,"
	"  state TEXT NOT NULL,"
	"  scheduler_id TEXT,"			/* Slurm job id, or local pid */
	"  pid_start INTEGER,"			/* local: the process's start */
	"  exit_code INTEGER,"
	"  message TEXT,"
	"  time_limit_s INTEGER NOT NULL DEFAULT 0,"	/* local: 0 none */
	"  queued_ns INTEGER, started_ns INTEGER, ended_ns INTEGER"
	");"
	"CREATE UNIQUE INDEX graph_jobs_by_node ON graph_jobs(session, node_id);"
	"CREATE INDEX graph_jobs_going ON graph_jobs(state)"
	"  WHERE state IN ('queued', 'submitted', 'running');";

/*
 * Version 11: refused writes are state (issue 29).  A document whose last
 * write was refused is a problem in status until that file is written
 * well or removed; a shell's redirect or a program that never checks
 * close() learns of it there.  One row per session and path.
 */
static const char schema_v11[] =
	"CREATE TABLE refusals ("
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  path TEXT NOT NULL,"
	"  message TEXT NOT NULL,"
	"  made INTEGER NOT NULL,"		/* 1: the file was not made */
	"  time_ns INTEGER NOT NULL,"
	"  PRIMARY KEY (session, path)"
	") WITHOUT ROWID;";

/*
 * Version 12: a node moved out of its session (into the trash) keeps its
 * edges with the file it became, so that the trash's restore brings them
 * back (issue 29; graph.h, graph_keep_edges()).  They go with that file
 * or with the session.
 */
static const char schema_v12[] =
	"CREATE TABLE kept_edges ("
	"  ino INTEGER NOT NULL REFERENCES inodes(ino) ON DELETE CASCADE,"
	"  session INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,"
	"  node TEXT NOT NULL,"			/* the node's id as it left */
	"  seq INTEGER NOT NULL,"		/* the edge's, for its order */
	"  id TEXT NOT NULL,"
	"  source TEXT NOT NULL,"
	"  source_param TEXT,"			/* NULL: a pending edge gave none */
	"  target TEXT NOT NULL,"
	"  target_param TEXT NOT NULL,"
	"  PRIMARY KEY (ino, seq)"
	") WITHOUT ROWID;"
	"CREATE INDEX kept_edges_by_session ON kept_edges(session);";
/*
 * Version 13 (issue 27): the contents of large regular files live in
 * data files beside the database (contents.h), one per content, which
 * several rows may share.  A row names its content (NULL: its bytes are
 * chunk rows, as small files keep them); `contents` counts the rows
 * naming each, kept by triggers in every statement's own transaction
 * (a session's cascading delete fires them too).  A count of 0 waits for
 * its file's removal after the commit (contents_sweep()).  The data of
 * the large files of an older store moves out after this, in steps
 * (tree_convert()).  Snapshots of sessions (session.h) are sessions too,
 * hidden, each naming the session it keeps and its label.
 */
static const char schema_v13[] =
	"ALTER TABLE inodes ADD COLUMN content INTEGER;"
	"CREATE TABLE contents ("
	"  id INTEGER PRIMARY KEY,"
	"  refs INTEGER NOT NULL"
	");"
	"CREATE INDEX contents_unused ON contents(id) WHERE refs <= 0;"
	"CREATE INDEX inodes_by_content ON inodes(content)"
	"  WHERE content IS NOT NULL;"
	"CREATE TRIGGER content_taken AFTER INSERT ON inodes"
	"  WHEN new.content IS NOT NULL BEGIN"
	"  INSERT INTO contents(id, refs) VALUES (new.content, 1)"
	"    ON CONFLICT(id) DO UPDATE SET refs = refs + 1;"
	"END;"
	"CREATE TRIGGER content_dropped AFTER DELETE ON inodes"
	"  WHEN old.content IS NOT NULL BEGIN"
	"  UPDATE contents SET refs = refs - 1 WHERE id = old.content;"
	"END;"
	/* a snapshot is a session of its own, hidden (named '/' || id),
	 * known by its session and label (session.h) */
	"ALTER TABLE sessions ADD COLUMN snapshot_of INTEGER;"
	"ALTER TABLE sessions ADD COLUMN snapshot_label TEXT;"
	/* a fork: the name its session had when it was made */
	"ALTER TABLE sessions ADD COLUMN forked_from TEXT;"
	"CREATE UNIQUE INDEX sessions_snapshots"
	"  ON sessions(snapshot_of, snapshot_label)"
	"  WHERE snapshot_of IS NOT NULL;"
	"CREATE TRIGGER content_changed AFTER UPDATE OF content ON inodes"
	"  WHEN new.content IS NOT old.content BEGIN"
	"  UPDATE contents SET refs = refs - 1 WHERE id = old.content;"
	"  INSERT INTO contents(id, refs) SELECT new.content, 1"
	"    WHERE new.content IS NOT NULL"
	"    ON CONFLICT(id) DO UPDATE SET refs = refs + 1;"
	"END;";

static const char *const migrations[STORE_SCHEMA_VERSION] = {
	schema_v1,
	schema_v2,
	schema_v3,
	schema_v4,
	schema_v5,
	schema_v6,
	schema_v7,
	schema_v8,
	schema_v9,
	schema_v10,
	schema_v11,
	schema_v12,
	schema_v13,
};

int store_column_json(sqlite3_stmt *q, int col, json_t **out)
{
	int ret = fjson_parse(out, (const char *)sqlite3_column_text(q, col),
			      (size_t)sqlite3_column_bytes(q, col), NULL);

	return ret == -EINVAL ? -EIO : ret;
}

int store_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
	case SQLITE_ROW:
	case SQLITE_DONE:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EAGAIN;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
	case SQLITE_CANTOPEN:
		return -EROFS;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_TOOBIG:
		return -EFBIG;
	case SQLITE_CONSTRAINT:
		return -EEXIST;
	default:
		return -EIO;
	}
}

sqlite3 *store_db(struct store *st)
{
	return st->db;
}

const char *store_path(const struct store *st)
{
	return st->path;
}

const char *store_errmsg(struct store *st)
{
	return sqlite3_errmsg(st->db);
}

static unsigned stmt_bucket(const char *sql)
{
	uintptr_t p = (uintptr_t)sql;

	return (unsigned)((p >> 4) ^ (p >> 12)) % STMT_BUCKETS;
}

sqlite3_stmt *store_stmt(struct store *st, const char *sql)
{
	unsigned b = stmt_bucket(sql);
	struct stmt_entry *e;

	for (e = st->stmts[b]; e; e = e->next)
		if (e->sql == sql) {
			sqlite3_reset(e->stmt);
			sqlite3_clear_bindings(e->stmt);
			return e->stmt;
		}
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &e->stmt, NULL) != SQLITE_OK) {
		free(e);
		return NULL;
	}
	e->sql = sql;
	e->next = st->stmts[b];
	st->stmts[b] = e;
	return e->stmt;
}

void store_done(sqlite3_stmt *stmt)
{
	if (stmt)
		sqlite3_reset(stmt);
}

int store_version(struct store *st, struct store_version *out)
{
	static const char sql[] = "PRAGMA data_version";
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc;

	if (!q)
		return -EIO;
	rc = sqlite3_step(q);
	/* data_version moves only for the other connections' commits */
	out->others = rc == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
	out->own = sqlite3_total_changes64(st->db);
	store_done(q);
	return rc == SQLITE_ROW ? 0 : store_errno(rc) ? store_errno(rc) : -EIO;
}

bool store_version_eq(const struct store_version *a,
		      const struct store_version *b)
{
	return a->own == b->own && a->others == b->others;
}

static int bind_arg(sqlite3_stmt *q, int col, const struct store_arg *a)
{
	if (a->type == STORE_ARG_INT)
		return sqlite3_bind_int64(q, col, a->i);
	if (!a->p)
		return sqlite3_bind_null(q, col);
	if (a->type == STORE_ARG_TEXT && a->len == SIZE_MAX)
		return sqlite3_bind_text(q, col, a->p, -1, SQLITE_STATIC);
	if (a->len > INT_MAX)
		return SQLITE_TOOBIG;
	if (a->type == STORE_ARG_TEXT)
		return sqlite3_bind_text(q, col, a->p, (int)a->len,
					 SQLITE_STATIC);
	return sqlite3_bind_blob(q, col, a->p, (int)a->len, SQLITE_STATIC);
}

/* Bind `args` to `sql` and step once: the SQLite result code, and the
 * statement in *out for the caller to read and reset (NULL when it
 * could not be prepared). */
static int step_args(struct store *st, const char *sql,
		     const struct store_arg *args, size_t n,
		     sqlite3_stmt **out)
{
	sqlite3_stmt *q = store_stmt(st, sql);
	int rc = q ? SQLITE_OK : SQLITE_ERROR;

	for (size_t i = 0; i < n && rc == SQLITE_OK; i++)
		rc = bind_arg(q, (int)i + 1, &args[i]);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(q);
	*out = q;
	return rc;
}

int store_run_args(struct store *st, const char *sql,
		   const struct store_arg *args, size_t n)
{
	sqlite3_stmt *q;
	int rc = step_args(st, sql, args, n, &q);

	store_done(q);
	return store_errno(rc);
}

int store_int_args(struct store *st, const char *sql, int64_t *out,
		   const struct store_arg *args, size_t n)
{
	sqlite3_stmt *q;
	int rc = step_args(st, sql, args, n, &q);

	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int64(q, 0);
	store_done(q);
	return rc == SQLITE_DONE ? -ENOENT : store_errno(rc);
}

int64_t store_changes(struct store *st)
{
	return sqlite3_changes64(st->db);
}

int store_exec(struct store *st, const char *sql)
{
	return store_errno(sqlite3_exec(st->db, sql, NULL, NULL, NULL));
}

int store_begin(struct store *st)
{
	return store_exec(st, "BEGIN IMMEDIATE");
}

int store_begin_read(struct store *st)
{
	return store_exec(st, "BEGIN");
}

void store_end_read(struct store *st)
{
	/* a read transaction has nothing to keep: COMMIT and ROLLBACK end
	 * it alike, and ROLLBACK cannot fail on a busy database */
	store_rollback(st);
}

int store_cache_limit(struct store *st, int kib)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA cache_size=-%d", kib);
	return store_exec(st, sql);
}

void store_on_commit(struct store *st, int (*hook)(void *arg), void *arg)
{
	sqlite3_commit_hook(st->db, hook, arg);
}

/* Back to synchronous=NORMAL after a durable transaction ends. */
static void end_durable(struct store *st)
{
	if (st->durable)
		store_exec(st, "PRAGMA synchronous=NORMAL");
	st->durable = false;
}

int store_begin_durable(struct store *st)
{
	int ret;

	/*
	 * In WAL mode synchronous=NORMAL writes each commit to the WAL
	 * without fsync (safe against a killed process); FULL also syncs the
	 * WAL, which covers every earlier commit too.
	 */
	ret = store_exec(st, "PRAGMA synchronous=FULL");
	if (ret < 0)
		return ret;
	st->durable = true;
	ret = store_begin(st);
	if (ret < 0)
		end_durable(st);
	return ret;
}

int store_commit(struct store *st)
{
	int ret = store_exec(st, "COMMIT");

	if (ret < 0)
		store_rollback(st);
	end_durable(st);
	return ret;
}

int store_sync(struct store *st)
{
	int ret = store_begin_durable(st);

	if (ret < 0)
		return ret;
	/*
	 * A commit that changes nothing writes nothing, so nothing would be
	 * synced (SQLite even skips rewriting a row with identical bytes):
	 * record a new value.
	 */
	{
		char sql[128];

		snprintf(sql, sizeof(sql),
			 "INSERT OR REPLACE INTO meta(key, value)"
			 " VALUES ('synced_ns', '%lld')",
			 (long long)fclock_now_ns());
		ret = store_exec(st, sql);
	}
	if (ret < 0) {
		store_rollback(st);
		return ret;
	}
	return store_commit(st);
}

void store_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db))
		sqlite3_exec(st->db, "ROLLBACK", NULL, NULL, NULL);
	end_durable(st);
}

static int pragma_int(struct store *st, const char *sql, int64_t *out)
{
	sqlite3_stmt *q = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &q, NULL);

	if (rc == SQLITE_OK) {
		rc = sqlite3_step(q);
		if (rc == SQLITE_ROW) {
			*out = sqlite3_column_int64(q, 0);
			rc = SQLITE_OK;
		}
	}
	sqlite3_finalize(q);
	return rc;
}

/* Whether the database has no tables of any kind (a new, empty file). */
static int is_empty(struct store *st, bool *empty)
{
	int64_t n = 0;
	int rc = pragma_int(st, "SELECT count(*) FROM sqlite_master", &n);

	*empty = (n == 0);
	return rc;
}

/*
 * A database made before auto-vacuum (store.h): VACUUM, the one way to
 * turn it on in a file that has tables, rewrites it once.
 */
static void make_vacuumable(struct store *st)
{
	int64_t mode = 0;
	int rc = pragma_int(st, "PRAGMA auto_vacuum", &mode);

	if (rc == SQLITE_OK && mode != 2)
		rc = sqlite3_exec(st->db, "PRAGMA auto_vacuum=INCREMENTAL;"
				  "VACUUM", NULL, NULL, NULL);
	/* Not fatal (the disk is full, another program writes): the
	 * database works as before, its space not given back, and the next
	 * open tries again. */
	if (rc != SQLITE_OK)
		ferr_set(&st->warning, store_errno(rc) ? store_errno(rc) : -EIO,
			 "warning: cannot turn on auto-vacuum in %s (%s): the"
			 " space of deleted data is not given back",
			 st->path, sqlite3_errmsg(st->db));
}

const char *store_warning(const struct store *st)
{
	return st->warning.message[0] ? st->warning.message : NULL;
}

int store_space(struct store *st, int64_t *used, int64_t *free_list)
{
	int64_t pages = 0, page_size = 0, free_pages = 0;
	int rc = pragma_int(st, "PRAGMA page_count", &pages);

	if (rc == SQLITE_OK)
		rc = pragma_int(st, "PRAGMA page_size", &page_size);
	if (rc == SQLITE_OK)
		rc = pragma_int(st, "PRAGMA freelist_count", &free_pages);
	*used = (pages - free_pages) * page_size;
	*free_list = free_pages * page_size;
	return rc == SQLITE_OK ? 0 : store_errno(rc) ? store_errno(rc) : -EIO;
}

static int check_and_migrate(struct store *st, struct ferr *err)
{
	int64_t app = 0, version = 0;
	bool empty;
	int rc, ret;

	rc = is_empty(st, &empty);
	if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT)
		return ferr_set(err, -EINVAL,
				"%s is not a flowfs database (not an SQLite file)",
				st->path);
	if (rc != SQLITE_OK)
		goto sql_error;
	if ((rc = pragma_int(st, "PRAGMA application_id", &app)) != SQLITE_OK ||
	    (rc = pragma_int(st, "PRAGMA user_version", &version)) != SQLITE_OK)
		goto sql_error;
	/* Taken by a new file only (older ones: make_vacuumable()); set on
	 * an existing file, it rewrites the header even when unchanged, and
	 * a database flowfs refuses must be left byte for byte. */
	if (empty && (rc = sqlite3_exec(st->db, "PRAGMA auto_vacuum=INCREMENTAL",
					NULL, NULL, NULL)) != SQLITE_OK)
		goto sql_error;
	if (!empty && app != STORE_APPLICATION_ID)
		return ferr_set(err, -EINVAL,
				"%s is not a flowfs database (it belongs to another program)",
				st->path);
	if (version < 0)
		return ferr_set(err, -EINVAL,
				"%s is not a flowfs database (schema version %lld)",
				st->path, (long long)version);
	if (version > STORE_SCHEMA_VERSION)
		return ferr_set(err, -EPROTO,
				"%s has database schema %lld, newer than this flowfs understands (%d); use a newer flowfs",
				st->path, (long long)version,
				STORE_SCHEMA_VERSION);
	if (version == STORE_SCHEMA_VERSION)
		return 0;

	ret = store_begin_durable(st);
	if (ret < 0)
		goto busy;
	for (int64_t v = version; v < STORE_SCHEMA_VERSION; v++) {
		rc = sqlite3_exec(st->db, migrations[v], NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto rollback;
	}
	{
		char sql[128];

		snprintf(sql, sizeof(sql),
			 "PRAGMA application_id=%d; PRAGMA user_version=%d;",
			 STORE_APPLICATION_ID, STORE_SCHEMA_VERSION);
		rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto rollback;
	}
	if (version == 0) {
		char sql[160];

		snprintf(sql, sizeof(sql),
			 "INSERT INTO meta(key, value) VALUES ('created_ns', '%lld')",
			 (long long)fclock_now_ns());
		rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			goto rollback;
	}
	ret = store_commit(st);
	if (ret < 0)
		goto busy;
	return 0;

rollback:
	ferr_set(err, store_errno(rc), "cannot set up %s: %s", st->path,
		 sqlite3_errmsg(st->db));
	store_rollback(st);
	return store_errno(rc) ? store_errno(rc) : -EIO;
busy:
	return ferr_set(err, ret, "cannot set up %s: %s", st->path,
			ret == -EAGAIN ? "the database is locked by another process"
				       : sqlite3_errmsg(st->db));
sql_error:
	return ferr_set(err, store_errno(rc) ? store_errno(rc) : -EIO,
			"cannot read %s: %s", st->path, sqlite3_errmsg(st->db));
}

/* Why SQLite could not open `path`: its own result code does not say. */
static int open_errno(const char *path)
{
	char *dir = strdup(path), *slash;
	int ret = -EROFS;

	if (!dir)
		return -ENOMEM;
	slash = strrchr(dir, '/');
	if (slash)
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (access(slash ? dir : ".", F_OK) < 0)
		ret = -ENOENT;
	else if (access(path, F_OK) == 0)
		ret = -EACCES;
	free(dir);
	return ret;
}

int store_check_private(const char *path, struct ferr *warn)
{
	static const char *const suffixes[] = { "", "-wal", "-shm" };
	char file[PATH_MAX], first[PATH_MAX], files[3 * PATH_MAX + 3] = "";
	struct stat sb;
	mode_t mode = 0;

	for (size_t i = 0; i < sizeof(suffixes) / sizeof(*suffixes); i++) {
		if (snprintf(file, sizeof(file), "%s%s", path, suffixes[i]) >=
		    (int)sizeof(file))
			return -ENAMETOOLONG;
		if (stat(file, &sb) < 0) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		if (!(sb.st_mode & 077))
			continue;
		if (!mode) {
			mode = sb.st_mode;
			memcpy(first, file, sizeof(first));
		}
		/* the advice names each file, no glob (a .bak beside it is
		 * not flowfs's to change) */
		strcat(files, " ");
		strcat(files, file);
	}
	if (!mode)
		return 0;
	ferr_set(warn, 0, "warning: other users may %s the database %s (mode"
		 " %04o): chmod 600%s", mode & 022 ? "read and write" : "read",
		 first, (unsigned)(mode & 07777), files);
	return 1;
}

/* What every connection of a store runs first. */
static const char connection_setup[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=NORMAL;"
	"PRAGMA foreign_keys=ON;"
	/* metadata and small files: the bytes of large ones are not pages
	 * (contents.h); 8 MiB per connection was most of the daemon's
	 * resident memory */
	"PRAGMA cache_size=-2048;"
	/* a large write leaves a long WAL: cut it back once checkpointed,
	 * not to hold twice the space */
	"PRAGMA journal_size_limit=67108864;"
	"PRAGMA temp_store=MEMORY;"
	/* Debian builds SQLite with secure_delete on: removing a file would
	 * write its size in zeros to the log and again to the database
	 * (rm of 256 MiB: 0.6 s, holding every writer); FAST clears what
	 * costs no extra write, and the rest goes back to the disk */
	"PRAGMA secure_delete=FAST;";

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames);

int store_open_beside(struct store *first, struct store **out,
		      struct ferr *err)
{
	struct store *st;
	int rc, ret;

	*out = NULL;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(first->path))) {
		free(st);
		return ferr_set(err, -ENOMEM, "out of memory");
	}
	rc = sqlite3_open_v2(st->path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_extended_result_codes(st->db, 0);
		sqlite3_busy_timeout(st->db, 2000);
		rc = sqlite3_exec(st->db, connection_setup, NULL, NULL, NULL);
	}
	if (rc != SQLITE_OK) {
		ret = ferr_set(err, store_errno(rc) ? store_errno(rc) : -EIO,
			       "cannot open %s a second time: %s", st->path,
			       st->db ? sqlite3_errmsg(st->db) : "out of memory");
		store_close(st);
		return ret;
	}
	st->contents = first->contents;
	/* its commits wake the first one's checkpointer as its own do */
	if (first->ckpt.running)
		sqlite3_wal_hook(st->db, wal_hook, &first->ckpt);
	*out = st;
	return 0;
}

/*
 * Whether flowfs can write `path` and the -wal and -shm files SQLite
 * makes beside it: without, SQLite fails later with "unable to open
 * database file", which says nothing of why.
 */
static int check_writable(const char *path, struct ferr *err)
{
	char dir[PATH_MAX];
	struct statvfs sv;
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		*(slash == dir ? slash + 1 : slash) = '\0';
	if (statvfs(dir, &sv) == 0 && (sv.f_flag & ST_RDONLY))
		return ferr_set(err, -EROFS, "cannot write %s: its file system"
				" is read-only (flowfs writes the database, and"
				" SQLite its -wal and -shm files beside it)",
				path);
	if (access(path, F_OK) == 0 && access(path, W_OK) < 0)
		return ferr_set(err, -errno, "cannot write %s: %s", path,
				strerror(errno));
	if (access(dir, F_OK) == 0 && access(dir, W_OK | X_OK) < 0)
		return ferr_set(err, -errno, "cannot write in %s, where SQLite"
				" makes the -wal and -shm files of %s: %s", dir,
				path, strerror(errno));
	return 0;
}

int store_open(struct store **out, const char *path, struct ferr *err)
{
	struct store *st;
	int rc, ret, fd;

	*out = NULL;
	ret = check_writable(path, err);
	if (ret < 0)
		return ret;
	st = calloc(1, sizeof(*st));
	if (!st || !(st->path = strdup(path))) {
		free(st);
		return ferr_set(err, -ENOMEM, "out of memory");
	}
	/* created here, not by SQLite, which would create it 0644 */
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	rc = sqlite3_open_v2(path, &st->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			     SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		ret = ferr_set(err, open_errno(path), "cannot open %s: %s", path,
			       st->db ? sqlite3_errmsg(st->db) : "out of memory");
		goto fail;
	}
	sqlite3_extended_result_codes(st->db, 0);
	sqlite3_busy_timeout(st->db, 2000);
	/*
	 * page_size only takes effect on a new file; 16 KiB keeps a 64 KiB
	 * chunk to a few overflow pages without making small row updates
	 * costly.
	 */
	sqlite3_exec(st->db, "PRAGMA page_size=16384", NULL, NULL, NULL);
	ret = check_and_migrate(st, err);
	if (ret < 0)
		goto fail;
	if (sqlite3_db_readonly(st->db, "main") == 1) {
		ret = ferr_set(err, -EROFS, "cannot write %s (read-only)", path);
		goto fail;
	}
	make_vacuumable(st);
	rc = sqlite3_exec(st->db, connection_setup, NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		ret = ferr_set(err, store_errno(rc), "cannot set up %s: %s",
			       path, sqlite3_errmsg(st->db));
		goto fail;
	}
	/* an in-memory database (the fuzzers') has no folder beside it: its
	 * files keep every byte in chunks */
	if (strcmp(path, ":memory:")) {
		ret = contents_open(&st->contents, path, err);
		if (ret < 0)
			goto fail;
		st->owns_contents = true;
	}
	*out = st;
	return 0;
fail:
	store_close(st);
	return ret;
}

/* Whether `ms` pass with no commit (and no stop) meanwhile. */
static bool quiet_for(struct checkpointer *c, long ms)
{
	struct timespec until = fclock_mono_after(ms);
	uint64_t seen;
	bool quiet;

	pthread_mutex_lock(&c->lock);
	seen = c->commits;
	while (c->commits == seen && !c->pending && !c->stop &&
	       pthread_cond_timedwait(&c->wake, &c->lock, &until) == 0)
		;
	quiet = c->commits == seen && !c->pending && !c->stop;
	pthread_mutex_unlock(&c->lock);
	return quiet;
}

/*
 * Give the free list back to the disk, a step at a time (store.h), once
 * writes have held still for a moment: a writer going on reuses the free
 * pages itself, and each step would take the lock from it (SQLite has no
 * queue for its lock).  A commit meanwhile, or a step that finds the
 * database locked, ends it: the next commit wakes the thread again.
 */
static void vacuum_steps(struct checkpointer *c)
{
	static const char count_sql[] = "PRAGMA freelist_count";
	char step_sql[64];
	bool gave = false;
	long pause_ms = 1000;
	int64_t last_free = -1;

	snprintf(step_sql, sizeof(step_sql), "PRAGMA incremental_vacuum(%d)",
		 STORE_VACUUM_STEP_PAGES);
	while (quiet_for(c, pause_ms)) {
		sqlite3_stmt *q = NULL;
		int64_t free_pages = 0;
		int rc = sqlite3_prepare_v2(c->db, count_sql, -1, &q, NULL);

		if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
			free_pages = sqlite3_column_int64(q, 0);
		sqlite3_finalize(q);
		/* a step that gave nothing back (auto-vacuum off: its
		 * conversion failed) would be tried for good */
		if (free_pages < STORE_VACUUM_STEP_PAGES ||
		    free_pages == last_free)
			break;
		last_free = free_pages;
		if (sqlite3_exec(c->db, step_sql, NULL, NULL, NULL) != SQLITE_OK)
			break;
		gave = true;
		pause_ms = 5;
	}
	/*
	 * The file is cut when the moved pages are checkpointed; TRUNCATE
	 * also empties the log, which held what was deleted.  Without a busy
	 * handler it gives up at once when a reader or writer is busy: it
	 * is tried again a few times while writes hold still (a reader's
	 * transaction is short), then at the next wake.
	 */
	if (gave)
		c->truncate_due = true;
	for (int tries = 0; c->truncate_due && tries < CKPT_TRUNCATE_TRIES &&
			    quiet_for(c, tries ? 200 : 0); tries++) {
		pthread_mutex_lock(&c->copying);
		if (sqlite3_wal_checkpoint_v2(c->db, NULL,
					      SQLITE_CHECKPOINT_TRUNCATE,
					      NULL, NULL) == SQLITE_OK)
			c->truncate_due = false;
		pthread_mutex_unlock(&c->copying);
	}
}

/*
 * Copying the WAL back into the database file is a large part of a big
 * write; a thread with its own connection does it beside the FUSE
 * threads (a PASSIVE checkpoint never blocks the writer).
 */
static void *checkpoint_loop(void *arg)
{
	struct checkpointer *c = arg;
	int frames;

	pthread_mutex_lock(&c->lock);
	while (!c->stop) {
		while (!c->pending && !c->stop) {
			struct timespec until = fclock_mono_after(CKPT_AFTER_MS);

			if (!c->dirty)
				pthread_cond_wait(&c->wake, &c->lock);
			else if (pthread_cond_timedwait(&c->wake, &c->lock,
							&until) == ETIMEDOUT)
				c->pending = true;
		}
		c->pending = false;
		c->dirty = false;
		frames = c->frames;
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&c->copying);
		sqlite3_wal_checkpoint_v2(c->db, NULL, SQLITE_CHECKPOINT_PASSIVE,
					  NULL, NULL);
		pthread_mutex_unlock(&c->copying);
		if (frames > CKPT_TRUNCATE_FRAMES)
			c->truncate_due = true;
		vacuum_steps(c);
		pthread_mutex_lock(&c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct checkpointer *c = arg;

	/*
	 * Only a commit that finds the log all copied starts it again, and
	 * the thread's copy is always a commit behind a write that never
	 * pauses: the writer waits for the thread's copy (SQLite would
	 * refuse its own at once while it runs) and copies the rest, so its
	 * next commit starts the log again.  PASSIVE: it never waits for a
	 * reader (a long render's read transaction), since the writer may
	 * hold the filesystem's lock; a reader still on the log only means
	 * the log stays long a while.  The thread is woken all the same: it
	 * gives freed pages back.
	 */
	if (frames > WAL_FRAMES_LIMIT) {
		pthread_mutex_lock(&c->copying);
		sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE,
					  NULL, NULL);
		pthread_mutex_unlock(&c->copying);
	}
	pthread_mutex_lock(&c->lock);
	c->frames = frames;
	c->commits++;
	/* the first commit starts the thread's clock; a long log, its copy */
	if (frames >= CKPT_EVERY_FRAMES)
		c->pending = true;
	if (c->pending || !c->dirty) {
		c->dirty = true;
		pthread_cond_signal(&c->wake);
	}
	pthread_mutex_unlock(&c->lock);
	return SQLITE_OK;
}

int store_start_checkpointer(struct store *st, struct ferr *err)
{
	struct checkpointer *c = &st->ckpt;
	int rc;

	if (c->running)
		return 0;
	rc = sqlite3_open_v2(st->path, &c->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
	/* Until it has read the database, a connection does not know it is
	 * in WAL mode, and its checkpoints do nothing. */
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "SELECT count(*) FROM sqlite_master;"
				  /* as the main connection: a vacuum step's
				   * commit need not sync */
				  "PRAGMA synchronous=NORMAL",
				  NULL, NULL, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_close(c->db);
		c->db = NULL;
		return ferr_set(err, store_errno(rc) ? store_errno(rc) : -EIO,
				"cannot open %s a second time: %s", st->path,
				sqlite3_errstr(rc));
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->copying, NULL);
	{
		pthread_condattr_t attr;

		/* quiet_for() waits by the monotonic clock */
		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&c->wake, &attr);
		pthread_condattr_destroy(&attr);
	}
	if (pthread_create(&c->thread, NULL, checkpoint_loop, c) != 0) {
		pthread_cond_destroy(&c->wake);
		pthread_mutex_destroy(&c->lock);
		pthread_mutex_destroy(&c->copying);
		sqlite3_close(c->db);
		c->db = NULL;
		return ferr_set(err, -EAGAIN, "cannot start a thread");
	}
	c->running = true;
	sqlite3_wal_hook(st->db, wal_hook, c);
	return 0;
}

static void stop_checkpointer(struct store *st)
{
	struct checkpointer *c = &st->ckpt;

	if (!c->running)
		return;
	sqlite3_wal_hook(st->db, NULL, NULL);
	pthread_mutex_lock(&c->lock);
	c->stop = true;
	pthread_cond_signal(&c->wake);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	sqlite3_close(c->db);
	pthread_cond_destroy(&c->wake);
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->copying);
	c->running = false;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	stop_checkpointer(st);
	for (int b = 0; b < STMT_BUCKETS; b++) {
		struct stmt_entry *e = st->stmts[b], *next;

		for (; e; e = next) {
			next = e->next;
			sqlite3_finalize(e->stmt);
			free(e);
		}
	}
	sqlite3_close(st->db);
	if (st->owns_contents)
		contents_close(st->contents);
	free(st->path);
	free(st);
}

struct contents *store_contents(struct store *st)
{
	return st->contents;
}
