/*
 * schema: flowfs's JSON Schema validator (draft-07 semantics) on jansson,
 * for the keywords skills use.  Nothing of flowfs here: no files, no
 * store, no session.
 *
 *	struct ferr err = FERR_INIT;
 *	if (schema_check(schema, &err) < 0)
 *		... "#/properties/n/minimum: must be a number"
 *	if (schema_validate(schema, NULL, doc, "parameter", 0, &err) < 0)
 *		... err.path "parameter.nalpha",
 *		    err.message "25 is greater than the maximum of 20"
 *
 * ---- Keywords ----
 * Keywords understood, as draft-07 defines them:
 *
 *	type (a name or an array of names; "integer" accepts 1.0)
 *	properties, required, additionalProperties (bool or schema)
 *	items (one schema, or an array of schemas: the tuple form)
 *	minItems, maxItems, minLength, maxLength (code points, not bytes)
 *	minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers)
 *	enum, const (JSON equality: 1 == 1.0, objects unordered, arrays
 *	ordered), default (annotation only; see schema_apply_defaults)
 *	allOf, anyOf, oneOf, not, if/then/else
 *	$ref to a JSON pointer inside the same document ("#",
 *	"#/definitions/a", "#/$defs/a", "#/properties/x", with ~0 ~1 and
 *	%-escapes); siblings of $ref are ignored, as in draft-07
 *	definitions, $defs (hold schemas for $ref)
 *	the boolean schemas true and false
 *
 * Every other keyword (title, description, $schema, $id, format, pattern,
 * additionalItems, x-..., extensions, ...) is ignored.  In particular $id
 * does not change what a $ref resolves against: refs always resolve in the
 * root document given to schema_validate(), and refs that are not "#..."
 * (remote or relative URIs, "#name" anchors) are refused by schema_check().
 *
 * ---- Limits ----
 * Limits, so that no input can crash or hang the daemon: schema_check()
 * refuses documents nesting deeper than SCHEMA_MAX_NESTING levels and
 * chains of more than SCHEMA_MAX_NESTING schemas applied to one value
 * (allOf/anyOf/oneOf/not/if/then/else/$ref without stepping into a
 * property or item); schema_validate() refuses, as invalid with a message
 * saying so, instances that need more than SCHEMA_MAX_DEPTH nested
 * evaluations, and work beyond a budget that grows with the size of the
 * instance (exponential anyOf/oneOf combinations).
 *
 * ---- State and threads ----
 * Nothing here keeps state between calls; all functions are thread-safe
 * for distinct or read-only arguments (schema_apply_defaults writes only
 * `instance`).
 */
#ifndef FLOWFS_SCHEMA_H
#define FLOWFS_SCHEMA_H

#include <jansson.h>

#include "lib/ferr.h"

#define SCHEMA_MAX_NESTING 256
#define SCHEMA_MAX_DEPTH 4096

/*
 * Is `schema` usable: keywords of the right JSON types, every $ref
 * resolvable (no remote refs) and pointing at a schema, no infinite $ref
 * loops, nesting within SCHEMA_MAX_NESTING.  Returns 0, -ENOMEM, or
 * -EINVAL with err->message naming the JSON pointer of the fault:
 * "#/properties/n/minimum: must be a number",
 * "#/definitions/b/$ref: infinite loop: \"#/definitions/a\" leads back
 * here without stepping into a property or item".  Problems are looked for
 * in document order, ref targets after the rest.  err->path is left alone.
 */
int schema_check(const json_t *schema, struct ferr *err);

/*
 * Validate `instance` against `sub` (a part of `root`, or NULL for root
 * itself); every $ref resolves against `root`.  The schema should have
 * passed schema_check(); an unchecked one cannot crash this function, but
 * its ill-typed keywords are ignored and an unresolvable $ref makes every
 * value invalid.
 *
 * Returns 0 when valid, -ENOMEM, or -EINVAL when not valid, with the
 * first error found (keywords of a value are tried before its own
 * constraints: type, enum/const, number and string rules, then the
 * properties or items in instance order, then required and minItems/
 * maxItems, then allOf, anyOf, oneOf, not, if/then/else):
 *
 *   err->path: the instance path built on `path` (NULL = ""): property
 *	"nalpha" of "parameter" -> "parameter.nalpha", an array index ->
 *	"parameter.alschd[3]", a name that is not an ASCII identifier ->
 *	parameter["a b"] (a JSON string); at the top, `path` itself.
 *   err->message: the rule, for a person, numbers and values written as
 *	Python's json.dumps writes them: "25 is greater than the maximum of
 *	20", "expected an integer, got a string", "missing required property
 *	\"column\"", "unknown property \"colour\"", "\"x\" is not one of
 *	\"a\", \"b\"", "3 items, at most 2 allowed", "does not match any of
 *	the anyOf schemas", "the document nests too deeply to validate".
 *
 * flags: SCHEMA_IGNORE_REQUIRED = `required` is not enforced for the top
 * value itself (used to accept a request that still lacks required
 * values).  That covers the top schema and the schemas it applies to the
 * same value by $ref, allOf, then and else; `required` inside anyOf,
 * oneOf, not and if (where it picks a branch) and in nested objects is
 * still enforced.  So a value valid without the flag is valid with it.
 */
#define SCHEMA_IGNORE_REQUIRED 1u
int schema_validate(const json_t *root, const json_t *sub,
		    const json_t *instance, const char *path, unsigned flags,
		    struct ferr *err);

/*
 * The schema `schema` stands for once its own "$ref"s are followed
 * (against `root`; `schema` NULL means root): where to read a
 * top-level "properties" or "required".  A $ref that resolves to
 * nothing, or a loop, stops the walk there.  Never NULL for a non-NULL
 * argument.
 */
const json_t *schema_deref(const json_t *root, const json_t *schema);

/*
 * Fill in defaults: for each property of `schema` (`root` when NULL; a
 * top-level $ref is followed) that `instance` lacks and whose subschema
 * has a "default" (the subschema's own, else that of the schema its $ref
 * names), add a deep copy of the default, appended in the schema's
 * property order.  Not recursive into nested objects; nothing happens when
 * `instance` is not an object.  Returns 0 or -ENOMEM (the properties added
 * before the failure stay).
 */
int schema_apply_defaults(const json_t *root, const json_t *schema,
			  json_t *instance);

#endif
