/*
 * backup: a consistent copy of a store — its database and its data
 * files — made while it is mounted (flowfs --backup=DEST).  Nothing of
 * sessions; the database as a whole.
 *
 * The database is copied by SQLite's backup API in one step, so the copy
 * is one moment of it (a read transaction: the daemon's commits go on).
 * Then each data file the copy names is hard-linked into DEST.d/ (no
 * space taken; the daemon copies a data file before writing one that
 * has another link, so the backup's never changes), or reflinked or
 * copied where a link cannot be made (another file system).  A data file
 * removed between the copy and its link (the file was deleted through
 * the mount meanwhile) makes it start again, up to BACKUP_TRIES times.
 * DEST is written as DEST.part and renamed when whole.
 */
#ifndef FLOWFS_BACKUP_H
#define FLOWFS_BACKUP_H

#include "lib/ferr.h"
#include "store/store.h"

#define BACKUP_TRIES 5

/* Copy the store `st` (opened on its database) to the database file
 * `dest`, which must not exist, and its data files to dest.d/.  0, or a
 * negative errno with the reason in `err`. */
int store_backup(struct store *st, const char *dest, struct ferr *err);

#endif
