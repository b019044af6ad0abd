/*
 * fcopy: one file's bytes into another, the cheapest way the file systems
 * allow: shared blocks (FICLONE) where they can, copy_file_range() where
 * they can, read and write where neither can.  The kernel refuses
 * copy_file_range() between file systems of different types (EXDEV), so a
 * backup onto another disk or a tmpfs needs the last way.  Nothing of
 * flowfs here.
 */
#ifndef FLOWFS_FCOPY_H
#define FLOWFS_FCOPY_H

#include <stdint.h>

/*
 * Copy the first `len` bytes of `from` into `to` (empty, opened for
 * writing), both from offset 0, and make `to` exactly `len` bytes long:
 * what `from` does not hold reads as zeros there.  0, or a negative errno
 * (what is in `to` is then undefined).
 */
int fcopy(int from, int to, int64_t len);

#endif
