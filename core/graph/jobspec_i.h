/*
 * jobspec_i.h: private to jobspec.c and jobspec_values.c — where an
 * argument of a command begins, for the rule on options (jobspec.h,
 * "Options").  Not a contract: jobspec.h is the only one.
 */
#ifndef FLOWFS_JOBSPEC_I_H
#define FLOWFS_JOBSPEC_I_H

#include <stddef.h>

#include <jansson.h>

/*
 * Whether the argument `arg` (`len` bytes), the command item `item`
 * rendered with `context`, may stand: 0 when it does not read as an
 * option, when its first byte is the item's own text or printed by a
 * {{ }} that reads no name, or when every name that {{ }} reads is in
 * `options` (the tool's list of names; NULL: none).  1 when it may not:
 * `expr` (`size` bytes) is then the {{ }} that printed it, as the map
 * wrote it and cut to fit, or "" when where it begins could not be told
 * (a render of the item that does not agree with `arg`: refused, never
 * let through).  -ENOMEM.
 */
int jobspec_arg_origin(const char *item, const json_t *context,
		       const char *arg, size_t len, const json_t *options,
		       char *expr, size_t size);

#endif
