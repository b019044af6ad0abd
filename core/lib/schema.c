/* schema: the JSON Schema (draft-07) validator; see schema.h. */
#include "lib/schema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/utf8.h"
#include "lib/sbuf.h"

#define NOINLINE __attribute__((noinline))

/* Values quoted in messages are cut to about this many bytes. */
#define MSG_VALUE_MAX 80

/* ---------------------------------------------------------------- values */

/*
 * Order two JSON numbers exactly, also an int64 against a double (where
 * converting either to the other's type could round).
 */
static int num_cmp(const json_t *a, const json_t *b)
{
	json_int_t i;
	double d, t;
	int sign = 1;

	if (json_is_integer(a) && json_is_integer(b)) {
		json_int_t x = json_integer_value(a), y = json_integer_value(b);
		return (x > y) - (x < y);
	}
	if (json_is_real(a) && json_is_real(b)) {
		double x = json_real_value(a), y = json_real_value(b);
		return (x > y) - (x < y);
	}
	if (json_is_integer(a)) {
		i = json_integer_value(a);
		d = json_real_value(b);
	} else {
		i = json_integer_value(b);
		d = json_real_value(a);
		sign = -1;
	}
	/* Now compare i with d and return the sign of i - d. */
	if (d >= 9223372036854775808.0)
		return -sign;
	if (d < -9223372036854775808.0)
		return sign;
	t = trunc(d);
	if (i < (json_int_t)t)
		return -sign;
	if (i > (json_int_t)t)
		return sign;
	if (d > t)
		return -sign;
	if (d < t)
		return sign;
	return 0;
}

/* Draft-07 JSON equality: 1 == 1.0, objects unordered, arrays ordered. */
static int json_same(const json_t *a, const json_t *b)
{
	const char *key;
	json_t *va;
	size_t i;

	if (json_is_number(a) && json_is_number(b))
		return num_cmp(a, b) == 0;
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_ARRAY:
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!json_same(json_array_get(a, i),
				       json_array_get(b, i)))
				return 0;
		return 1;
	case JSON_OBJECT:
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, key, va) {
			const json_t *vb = json_object_get(b, key);

			if (!vb || !json_same(va, vb))
				return 0;
		}
		return 1;
	default:
		return 1;	/* true, false, null: the type says it all */
	}
}

static int is_integral(const json_t *v)
{
	double d;

	if (json_is_integer(v))
		return 1;
	if (!json_is_real(v))
		return 0;
	d = json_real_value(v);
	return isfinite(d) && d == floor(d);
}

static int type_matches(const char *name, const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return !strcmp(name, "object");
	case JSON_ARRAY:
		return !strcmp(name, "array");
	case JSON_STRING:
		return !strcmp(name, "string");
	case JSON_INTEGER:
		return !strcmp(name, "integer") || !strcmp(name, "number");
	case JSON_REAL:
		return !strcmp(name, "number") ||
		       (!strcmp(name, "integer") && is_integral(v));
	case JSON_TRUE:
	case JSON_FALSE:
		return !strcmp(name, "boolean");
	default:
		return !strcmp(name, "null");
	}
}

static const char *const type_names[] = {
	"array", "boolean", "integer", "null", "number", "object", "string",
};

static int is_type_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(type_names) / sizeof(type_names[0]); i++)
		if (!strcmp(name, type_names[i]))
			return 1;
	return 0;
}

/* "an integer", "null": the type name as a message says it. */
static const char *with_article(const char *name)
{
	if (!strcmp(name, "integer"))
		return "an integer";
	if (!strcmp(name, "object"))
		return "an object";
	if (!strcmp(name, "array"))
		return "an array";
	if (!strcmp(name, "null"))
		return "null";
	if (!strcmp(name, "string"))
		return "a string";
	if (!strcmp(name, "boolean"))
		return "a boolean";
	if (!strcmp(name, "number"))
		return "a number";
	return name;
}

static const char *describe_type(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	default:
		return "null";
	}
}

/* Code points, not bytes. */
static size_t utf8_length(const json_t *s)
{
	return utf8_count(json_string_value(s), json_string_length(s));
}

/* A JSON string literal for `len` bytes of `s`, as json.dumps writes it. */
static int add_json_string(struct sbuf *sb, const char *s, size_t len)
{
	json_t *str = json_stringn_nocheck(s, len);
	int ret;

	if (!str)
		return -ENOMEM;
	ret = fjson_dump(sb, str);
	json_decref(str);
	return ret;
}

/*
 * A value on one line, with json.dumps's default separators (", ", ": "),
 * given up once the text is longer than a message can use.
 */
static void add_value(struct sbuf *sb, size_t start, const json_t *v,
		      int depth)
{
	const char *key;
	json_t *item;
	size_t i;
	int first = 1;

	if (sb->len - start > MSG_VALUE_MAX || depth > 16) {
		sbuf_addstr(sb, "...");
		return;
	}
	switch (json_typeof(v)) {
	case JSON_ARRAY:
		sbuf_addch(sb, '[');
		for (i = 0; i < json_array_size(v); i++) {
			if (i)
				sbuf_addstr(sb, ", ");
			add_value(sb, start, json_array_get(v, i), depth + 1);
			if (sb->len - start > MSG_VALUE_MAX)
				break;
		}
		sbuf_addch(sb, ']');
		break;
	case JSON_OBJECT:
		sbuf_addch(sb, '{');
		json_object_foreach((json_t *)v, key, item) {
			if (!first)
				sbuf_addstr(sb, ", ");
			first = 0;
			add_json_string(sb, key, strlen(key));
			sbuf_addstr(sb, ": ");
			add_value(sb, start, item, depth + 1);
			if (sb->len - start > MSG_VALUE_MAX)
				break;
		}
		sbuf_addch(sb, '}');
		break;
	default:
		fjson_dump(sb, v);
		break;
	}
}

/* add_value, cut to MSG_VALUE_MAX bytes (at a character boundary). */
static void add_short_value(struct sbuf *sb, const json_t *v)
{
	size_t start = sb->len, cut;

	add_value(sb, start, v, 0);
	if (sb->len - start <= MSG_VALUE_MAX)
		return;
	cut = utf8_cut(sb->buf + start, sb->len - start, MSG_VALUE_MAX - 3);
	sbuf_setlen(sb, start + cut);
	sbuf_addstr(sb, "...");
}

/* A count limit (minItems, ...) as a person writes it: 2, not 2.0. */
static void add_count(struct sbuf *sb, const json_t *v)
{
	if (json_is_real(v) && is_integral(v) &&
	    fabs(json_real_value(v)) < 1e15)
		sbuf_addf(sb, "%.0f", json_real_value(v));
	else
		add_short_value(sb, v);
}

/* ---------------------------------------------------------------- $ref */

/* One step of a JSON pointer: `tok` (`len` bytes, unescaped) in `cur`. */
static const json_t *pointer_step(const json_t *cur, const char *tok,
				  size_t len)
{
	size_t idx = 0, k;

	if (json_is_object(cur))
		return json_object_getn(cur, tok, len);
	if (!json_is_array(cur) || !len || len > 18 ||
	    (tok[0] == '0' && len > 1))
		return NULL;
	for (k = 0; k < len; k++) {
		if (tok[k] < '0' || tok[k] > '9')
			return NULL;
		idx = idx * 10 + (size_t)(tok[k] - '0');
	}
	return json_array_get(cur, idx);
}

/* resolve_ref() for a fragment without escapes. */
static int walk_plain(const json_t *root, const char *frag,
		      const json_t **out)
{
	const json_t *cur = root;

	if (*frag && *frag != '/')
		return -ENOENT;
	while (*frag) {
		const char *end = strchrnul(++frag, '/');

		cur = pointer_step(cur, frag, (size_t)(end - frag));
		if (!cur)
			return -ENOENT;
		frag = end;
	}
	*out = cur;
	return 0;
}

/*
 * Find what `ref` ("#", "#/definitions/a%20b/x~1y") names inside `root`:
 * the fragment is %-decoded first (it is a URI fragment), then read as a
 * JSON pointer.  0 with *out set, -ENOENT when it names nothing here
 * (also for anything that is not a local "#..." pointer), -ENOMEM.
 */
static int resolve_ref(const json_t *root, const char *ref,
		       const json_t **out)
{
	struct sbuf frag = SBUF_INIT, tok = SBUF_INIT;
	const json_t *cur = root;
	const char *p;
	size_t i;
	int ret = -ENOENT;

	if (ref[0] != '#')
		goto out;
	if (!strpbrk(ref, "%~")) {
		/* The usual "#/definitions/a": no copies, no allocation. */
		ret = walk_plain(root, ref + 1, out);
		goto out;
	}
	for (p = ref + 1; *p; p++) {
		char c = *p;

		if (c == '%') {
			int hi = utf8_hexval(p[1]), lo = hi < 0 ? -1 : utf8_hexval(p[2]);

			if (lo < 0)
				goto out;
			c = (char)(hi << 4 | lo);
			p += 2;
		}
		if (sbuf_addch(&frag, c) < 0) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (frag.len && frag.buf[0] != '/')
		goto out;	/* "#name": an anchor, which needs $id */
	i = 0;
	while (i < frag.len) {
		i++;	/* the '/' */
		sbuf_reset(&tok);
		for (; i < frag.len && frag.buf[i] != '/'; i++) {
			char c = frag.buf[i];

			if (c == '~') {
				if (i + 1 >= frag.len ||
				    (frag.buf[i + 1] != '0' &&
				     frag.buf[i + 1] != '1'))
					goto out;
				c = frag.buf[++i] == '0' ? '~' : '/';
			}
			if (sbuf_addch(&tok, c) < 0) {
				ret = -ENOMEM;
				goto out;
			}
		}
		cur = pointer_step(cur, tok.buf, tok.len);
		if (!cur)
			goto out;
	}
	*out = cur;
	ret = 0;
out:
	sbuf_release(&frag);
	sbuf_release(&tok);
	return ret;
}

/* --------------------------------------------------------------- check */

enum { C_WALKED = 1, C_GREY, C_BLACK };

struct cnode {
	const json_t *node;	/* NULL: free slot */
	char *ptr;		/* its JSON pointer, for messages */
	int state;
	int height;		/* longest same-value chain from here */
};

struct cref {
	const json_t *target;
	const char *ref;	/* the $ref string, which is its pointer */
};

struct cctx {
	const json_t *root;
	struct ferr *err;
	struct sbuf ptr;	/* pointer of what is being checked */
	struct cnode *tab;	/* open-addressing set of schema objects */
	size_t cap, used;
	const json_t **order;	/* the set's members in the order walked */
	size_t norder, order_alloc;
	struct cref *refs;	/* $ref targets still to check */
	size_t nrefs, refs_alloc;
};

static size_t node_hash(const json_t *node, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)node;

	h ^= h >> 29;
	h *= 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 17) & (cap - 1);
}

static struct cnode *set_find(struct cctx *c, const json_t *node)
{
	size_t i;

	if (!c->cap)
		return NULL;
	for (i = node_hash(node, c->cap); c->tab[i].node;
	     i = (i + 1) & (c->cap - 1))
		if (c->tab[i].node == node)
			return &c->tab[i];
	return NULL;
}

static int set_grow(struct cctx *c)
{
	size_t cap = c->cap ? c->cap * 2 : 64, i, j;
	struct cnode *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (i = 0; i < c->cap; i++) {
		if (!c->tab[i].node)
			continue;
		for (j = node_hash(c->tab[i].node, cap); tab[j].node;
		     j = (j + 1) & (cap - 1))
			;
		tab[j] = c->tab[i];
	}
	free(c->tab);
	c->tab = tab;
	c->cap = cap;
	return 0;
}

/* Add `node` (not yet in the set) with the current pointer. */
static int set_add(struct cctx *c, const json_t *node)
{
	size_t i;
	char *ptr;

	if ((c->used + 1) * 2 > c->cap && set_grow(c) < 0)
		return -ENOMEM;
	if (c->norder == c->order_alloc) {
		size_t n = c->order_alloc ? c->order_alloc * 2 : 64;
		const json_t **order = realloc(c->order, n * sizeof(*order));

		if (!order)
			return -ENOMEM;
		c->order = order;
		c->order_alloc = n;
	}
	ptr = strdup(c->ptr.buf);
	if (!ptr)
		return -ENOMEM;
	for (i = node_hash(node, c->cap); c->tab[i].node;
	     i = (i + 1) & (c->cap - 1))
		;
	c->tab[i].node = node;
	c->tab[i].ptr = ptr;
	c->tab[i].state = C_WALKED;
	c->used++;
	c->order[c->norder++] = node;
	return 0;
}

static int ptr_push_key(struct sbuf *ptr, const char *key)
{
	int ret = sbuf_addch(ptr, '/');

	for (; !ret && *key; key++) {
		if (*key == '~')
			ret = sbuf_addstr(ptr, "~0");
		else if (*key == '/')
			ret = sbuf_addstr(ptr, "~1");
		else
			ret = sbuf_addch(ptr, *key);
	}
	return ret;
}

static int check_fail(struct cctx *c, const char *what)
{
	return ferr_set(c->err, -EINVAL, "%s: %s", c->ptr.buf, what);
}

static int nesting_ok(const json_t *v, int depth)
{
	const char *key;
	json_t *item;
	size_t i;

	if (!json_is_array(v) && !json_is_object(v))
		return 1;
	if (depth > SCHEMA_MAX_NESTING)
		return 0;
	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++)
			if (!nesting_ok(json_array_get(v, i), depth + 1))
				return 0;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item)
			if (!nesting_ok(item, depth + 1))
				return 0;
	}
	return 1;
}

static int check_schema(struct cctx *c, const json_t *s);

static int is_count(const json_t *v)
{
	return is_integral(v) &&
	       (json_is_integer(v) ? json_integer_value(v) >= 0
				   : json_real_value(v) >= 0);
}

static int check_ref(struct cctx *c, const json_t *v)
{
	const json_t *target = NULL;
	const char *ref;
	int ret;

	if (!json_is_string(v))
		return check_fail(c, "must be a string");
	ref = json_string_value(v);
	if (ref[0] != '#')
		return ferr_set(c->err, -EINVAL,
				"%s: \"%s\": only references inside the schema (\"#...\") are supported",
				c->ptr.buf, ref);
	ret = resolve_ref(c->root, ref, &target);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		return ferr_set(c->err, -EINVAL,
				"%s: \"%s\" does not name a part of the schema",
				c->ptr.buf, ref);
	if (!json_is_object(target) && !json_is_boolean(target))
		return ferr_set(c->err, -EINVAL,
				"%s: \"%s\" is not a schema (an object, true or false)",
				c->ptr.buf, ref);
	if (json_is_boolean(target) || set_find(c, target))
		return 0;
	if (c->nrefs == c->refs_alloc) {
		size_t n = c->refs_alloc ? c->refs_alloc * 2 : 16;
		struct cref *refs = realloc(c->refs, n * sizeof(*refs));

		if (!refs)
			return -ENOMEM;
		c->refs = refs;
		c->refs_alloc = n;
	}
	c->refs[c->nrefs].target = target;
	c->refs[c->nrefs].ref = ref;
	c->nrefs++;
	return 0;
}

/* Check keyword `key` of a schema; c->ptr already ends in it. */
static int check_keyword(struct cctx *c, const char *key, const json_t *v)
{
	const char *name;
	json_t *item;
	size_t i, old = c->ptr.len;
	int ret = 0;

	if (!strcmp(key, "additionalProperties") || !strcmp(key, "not") ||
	    !strcmp(key, "if") || !strcmp(key, "then") ||
	    !strcmp(key, "else"))
		return check_schema(c, v);
	if (!strcmp(key, "properties") || !strcmp(key, "definitions") ||
	    !strcmp(key, "$defs")) {
		if (!json_is_object(v))
			return check_fail(c, "must be an object of schemas");
		json_object_foreach((json_t *)v, name, item) {
			ret = ptr_push_key(&c->ptr, name);
			if (!ret)
				ret = check_schema(c, item);
			sbuf_setlen(&c->ptr, old);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	if (!strcmp(key, "allOf") || !strcmp(key, "anyOf") ||
	    !strcmp(key, "oneOf") ||
	    (!strcmp(key, "items") && json_is_array(v))) {
		if (!json_is_array(v) || (key[0] != 'i' && !json_array_size(v)))
			return check_fail(c, "must be a non-empty array of schemas");
		for (i = 0; i < json_array_size(v); i++) {
			ret = sbuf_addf(&c->ptr, "/%zu", i);
			if (!ret)
				ret = check_schema(c, json_array_get(v, i));
			sbuf_setlen(&c->ptr, old);
			if (ret < 0)
				return ret;
		}
		return 0;
	}
	if (!strcmp(key, "items"))
		return check_schema(c, v);
	if (!strcmp(key, "minItems") || !strcmp(key, "maxItems") ||
	    !strcmp(key, "minLength") || !strcmp(key, "maxLength"))
		return is_count(v) ? 0 :
			check_fail(c, "must be a non-negative integer");
	if (!strcmp(key, "minimum") || !strcmp(key, "maximum") ||
	    !strcmp(key, "exclusiveMinimum") ||
	    !strcmp(key, "exclusiveMaximum"))
		return json_is_number(v) ? 0 :
			check_fail(c, "must be a number");
	if (!strcmp(key, "type")) {
		if (json_is_string(v)) {
			if (!is_type_name(json_string_value(v)))
				return ferr_set(c->err, -EINVAL,
						"%s: unknown type \"%s\"",
						c->ptr.buf, json_string_value(v));
			return 0;
		}
		if (!json_is_array(v) || !json_array_size(v))
			return check_fail(c, "must be a type name or a non-empty array of type names");
		for (i = 0; i < json_array_size(v); i++) {
			const json_t *t = json_array_get(v, i);

			if (json_is_string(t) && is_type_name(json_string_value(t)))
				continue;
			sbuf_addf(&c->ptr, "/%zu", i);
			if (!json_is_string(t))
				return check_fail(c, "must be a type name");
			return ferr_set(c->err, -EINVAL, "%s: unknown type \"%s\"",
					c->ptr.buf, json_string_value(t));
		}
		return 0;
	}
	if (!strcmp(key, "required")) {
		if (!json_is_array(v))
			return check_fail(c, "must be an array of property names");
		for (i = 0; i < json_array_size(v); i++) {
			if (json_is_string(json_array_get(v, i)))
				continue;
			sbuf_addf(&c->ptr, "/%zu", i);
			return check_fail(c, "must be a string");
		}
		return 0;
	}
	if (!strcmp(key, "enum"))
		return json_is_array(v) ? 0 : check_fail(c, "must be an array");
	if (!strcmp(key, "$ref"))
		return check_ref(c, v);
	return 0;	/* const, default, and everything we ignore */
}

static int check_schema(struct cctx *c, const json_t *s)
{
	const char *key;
	json_t *v;
	size_t old = c->ptr.len;
	int ret;

	if (json_is_boolean(s))
		return 0;
	if (!json_is_object(s))
		return check_fail(c, "must be a schema (an object, true or false)");
	if (set_find(c, s))
		return 0;
	ret = set_add(c, s);
	if (ret < 0)
		return ret;
	json_object_foreach((json_t *)s, key, v) {
		ret = ptr_push_key(&c->ptr, key);
		if (!ret)
			ret = check_keyword(c, key, v);
		sbuf_setlen(&c->ptr, old);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int find_chains(struct cctx *c, struct cnode *n, int depth);

/*
 * Follow one edge from `from` to a schema applied to the same value, and
 * raise *height to 1 + the height found there.
 */
static int chain_edge(struct cctx *c, struct cnode *from, const json_t *to,
		      const char *via, int depth, int *height)
{
	struct cnode *n = json_is_object(to) ? set_find(c, to) : NULL;
	int ret;

	if (!n)
		return 0;	/* true/false; anything else check_schema refused */
	if (n->state == C_GREY && !via)
		return ferr_set(c->err, -EINVAL, "%s: infinite loop", n->ptr);
	if (n->state == C_GREY)
		return ferr_set(c->err, -EINVAL,
				"%s/$ref: infinite loop: \"%s\" leads back here without stepping into a property or item",
				from->ptr, via);
	if (n->state == C_WALKED) {
		ret = find_chains(c, n, depth + 1);
		if (ret < 0)
			return ret;
	}
	if (n->height + 1 > *height)
		*height = n->height + 1;
	return 0;
}

/*
 * Depth-first search over "applies to the same value" edges ($ref, or
 * allOf/anyOf/oneOf/not/if/then/else when there is no $ref: draft-07
 * ignores its siblings).  A cycle is a loop validation could never leave;
 * a chain longer than SCHEMA_MAX_NESTING is refused too (`depth` catches
 * it on the way down, the heights on the way up), so validation recurses
 * at most that often per level of the instance.
 */
static int find_chains(struct cctx *c, struct cnode *n, int depth)
{
	static const char *const one[] = { "not", "if", "then", "else" };
	static const char *const many[] = { "allOf", "anyOf", "oneOf" };
	const json_t *s = n->node, *ref = json_object_get(s, "$ref");
	size_t i, k;
	int ret = 0, height = 1;

	if (depth >= SCHEMA_MAX_NESTING)
		goto too_long;
	n->state = C_GREY;
	if (json_is_string(ref)) {
		const json_t *target = NULL;

		ret = resolve_ref(c->root, json_string_value(ref), &target);
		if (!ret)
			ret = chain_edge(c, n, target, json_string_value(ref),
					 depth, &height);
		if (ret < 0)
			return ret;
	} else {
		for (k = 0; k < 4; k++) {
			ret = chain_edge(c, n, json_object_get(s, one[k]), NULL,
					 depth, &height);
			if (ret < 0)
				return ret;
		}
		for (k = 0; k < 3; k++) {
			const json_t *arr = json_object_get(s, many[k]);

			for (i = 0; i < json_array_size(arr); i++) {
				ret = chain_edge(c, n, json_array_get(arr, i),
						 NULL, depth, &height);
				if (ret < 0)
					return ret;
			}
		}
	}
	if (height > SCHEMA_MAX_NESTING)
		goto too_long;
	n->height = height;
	n->state = C_BLACK;
	return 0;
too_long:
	return ferr_set(c->err, -EINVAL,
			"%s: more than %d schemas in a row apply to the same value",
			n->ptr, SCHEMA_MAX_NESTING);
}

int schema_check(const json_t *schema, struct ferr *err)
{
	struct cctx c = { .root = schema, .err = err, .ptr = SBUF_INIT };
	size_t i;
	int ret;

	if (!schema)
		return -EINVAL;
	ret = sbuf_addstr(&c.ptr, "#");
	if (ret < 0)
		goto out;
	if (!nesting_ok(schema, 1)) {
		ret = ferr_set(err, -EINVAL, "#: the schema nests deeper than %d levels",
			       SCHEMA_MAX_NESTING);
		goto out;
	}
	ret = check_schema(&c, schema);
	/* The worklist grows while it is walked. */
	for (i = 0; !ret && i < c.nrefs; i++) {
		if (set_find(&c, c.refs[i].target))
			continue;
		sbuf_reset(&c.ptr);
		ret = sbuf_addstr(&c.ptr, c.refs[i].ref);
		if (!ret)
			ret = check_schema(&c, c.refs[i].target);
	}
	/* In the order walked, so that messages do not depend on addresses. */
	for (i = 0; !ret && i < c.norder; i++) {
		struct cnode *n = set_find(&c, c.order[i]);

		if (n->state == C_WALKED)
			ret = find_chains(&c, n, 0);
	}
out:
	for (i = 0; i < c.cap; i++)
		free(c.tab[i].ptr);
	free(c.tab);
	free(c.order);
	free(c.refs);
	sbuf_release(&c.ptr);
	return ret;
}

/* ------------------------------------------------------------ validate */

/* Internal verdicts; negative errnos pass through. */
#define V_OK 0
#define V_FAIL 1
/* A limit was hit: not a verdict, so anyOf/not must not turn it around. */
#define V_LIMIT (-E2BIG)

struct vctx {
	const json_t *root;
	struct ferr *err;
	struct sbuf path;	/* instance path of the value being checked */
	unsigned depth;
	size_t steps, budget;
	const char *limit;	/* why V_LIMIT was returned */
};

/*
 * Record the first error (only when not quiet: inside anyOf, oneOf, not
 * and if only the verdict matters, so nothing is formatted there).
 */
static NOINLINE __attribute__((format(printf, 3, 4)))
int fail(struct vctx *c, int quiet, const char *fmt, ...)
{
	char msg[FERR_MESSAGE_MAX];
	va_list ap;

	if (quiet)
		return V_FAIL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ferr_set_path(c->err, c->path.buf);
	ferr_set(c->err, 0, "%s", msg);
	return V_FAIL;
}

static int is_identifier(const char *s)
{
	if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
	      *s == '_'))
		return 0;
	for (s++; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return 0;
	return 1;
}

static int path_push_key(struct sbuf *path, const char *key)
{
	int ret;

	if (is_identifier(key)) {
		ret = path->len ? sbuf_addch(path, '.') : 0;
		return ret ? ret : sbuf_addstr(path, key);
	}
	ret = sbuf_addch(path, '[');
	if (!ret)
		ret = add_json_string(path, key, strlen(key));
	return ret ? ret : sbuf_addch(path, ']');
}

static NOINLINE int fail_type(struct vctx *c, const json_t *type,
			      const json_t *inst, int quiet)
{
	struct sbuf sb = SBUF_INIT;
	size_t i, n;
	int ret;

	if (quiet)
		return V_FAIL;
	if (json_is_string(type)) {
		sbuf_addstr(&sb, with_article(json_string_value(type)));
	} else {
		n = json_array_size(type);
		for (i = 0; i < n; i++) {
			const json_t *t = json_array_get(type, i);

			if (i)
				sbuf_addstr(&sb, i + 1 == n ? " or " : ", ");
			if (json_is_string(t))
				sbuf_addstr(&sb, with_article(json_string_value(t)));
		}
	}
	ret = fail(c, quiet, "expected %s, got %s", sb.buf,
		   describe_type(inst));
	sbuf_release(&sb);
	return ret;
}

static int v_type(struct vctx *c, const json_t *type, const json_t *inst,
		  int quiet)
{
	size_t i;

	if (json_is_string(type)) {
		if (type_matches(json_string_value(type), inst))
			return V_OK;
	} else if (json_is_array(type)) {
		for (i = 0; i < json_array_size(type); i++) {
			const json_t *t = json_array_get(type, i);

			if (json_is_string(t) &&
			    type_matches(json_string_value(t), inst))
				return V_OK;
		}
	} else {
		return V_OK;
	}
	return fail_type(c, type, inst, quiet);
}

static NOINLINE int v_enum(struct vctx *c, const json_t *values,
			   const json_t *inst, int quiet)
{
	struct sbuf a = SBUF_INIT, b = SBUF_INIT;
	size_t i;
	int ret;

	if (!json_is_array(values))
		return V_OK;
	for (i = 0; i < json_array_size(values); i++)
		if (json_same(json_array_get(values, i), inst))
			return V_OK;
	if (quiet)
		return V_FAIL;
	add_short_value(&a, inst);
	for (i = 0; i < json_array_size(values) && b.len < 2 * MSG_VALUE_MAX;
	     i++) {
		if (i)
			sbuf_addstr(&b, ", ");
		add_short_value(&b, json_array_get(values, i));
	}
	if (i < json_array_size(values))
		sbuf_addstr(&b, ", ...");
	if (!json_array_size(values))
		ret = fail(c, quiet, "%s is not allowed (the enum is empty)",
			   a.buf);
	else
		ret = fail(c, quiet, "%s is not one of %s", a.buf, b.buf);
	sbuf_release(&a);
	sbuf_release(&b);
	return ret;
}

static NOINLINE int v_const(struct vctx *c, const json_t *value,
			    const json_t *inst, int quiet)
{
	struct sbuf a = SBUF_INIT, b = SBUF_INIT;
	int ret;

	if (json_same(value, inst))
		return V_OK;
	if (quiet)
		return V_FAIL;
	add_short_value(&a, value);
	add_short_value(&b, inst);
	ret = fail(c, quiet, "expected %s, got %s", a.buf, b.buf);
	sbuf_release(&a);
	sbuf_release(&b);
	return ret;
}

static NOINLINE int v_number(struct vctx *c, const json_t *s,
			     const json_t *inst, int quiet)
{
	static const struct {
		const char *key;
		int bad_lo, bad_hi;	/* the comparisons that fail */
		const char *what;
	} rules[] = {
		{ "minimum", -1, -1, "is less than the minimum of" },
		{ "maximum", 1, 1, "is greater than the maximum of" },
		{ "exclusiveMinimum", -1, 0,
		  "is less than or equal to the exclusive minimum of" },
		{ "exclusiveMaximum", 0, 1,
		  "is greater than or equal to the exclusive maximum of" },
	};
	struct sbuf a = SBUF_INIT, b = SBUF_INIT;
	size_t i;
	int ret = V_OK;

	for (i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const json_t *lim = json_object_get(s, rules[i].key);
		int cmp;

		if (!json_is_number(lim))
			continue;
		cmp = num_cmp(inst, lim);
		if (cmp < rules[i].bad_lo || cmp > rules[i].bad_hi)
			continue;
		if (quiet)
			return V_FAIL;
		fjson_dump(&a, inst);
		fjson_dump(&b, lim);
		ret = fail(c, quiet, "%s %s %s", a.buf, rules[i].what, b.buf);
		break;
	}
	sbuf_release(&a);
	sbuf_release(&b);
	return ret;
}

/*
 * A count (string length, array size) against minX/maxX: `noun` is the
 * singular, made plural with "s".
 */
static NOINLINE int v_count(struct vctx *c, const json_t *s, size_t n,
			    const char *min_key, const char *max_key,
			    const char *noun, int quiet)
{
	const json_t *min = json_object_get(s, min_key);
	const json_t *max = json_object_get(s, max_key);
	struct sbuf sb = SBUF_INIT;
	int ret;

	if (json_is_number(min) &&
	    (json_is_integer(min) ? (json_int_t)n < json_integer_value(min)
				  : (double)n < json_real_value(min))) {
		if (quiet)
			return V_FAIL;
		add_count(&sb, min);
		ret = fail(c, quiet, "%zu %s%s, at least %s required", n, noun,
			   n == 1 ? "" : "s", sb.buf);
		goto out;
	}
	if (json_is_number(max) &&
	    (json_is_integer(max) ? (json_int_t)n > json_integer_value(max)
				  : (double)n > json_real_value(max))) {
		if (quiet)
			return V_FAIL;
		add_count(&sb, max);
		ret = fail(c, quiet, "%zu %s%s, at most %s allowed", n, noun,
			   n == 1 ? "" : "s", sb.buf);
		goto out;
	}
	return V_OK;
out:
	sbuf_release(&sb);
	return ret;
}

static NOINLINE int v_required(struct vctx *c, const json_t *required,
			       const json_t *inst, int quiet)
{
	struct sbuf sb = SBUF_INIT;
	size_t i;
	int ret;

	for (i = 0; i < json_array_size(required); i++) {
		const json_t *name = json_array_get(required, i);

		if (!json_is_string(name) ||
		    json_object_getn(inst, json_string_value(name),
				     json_string_length(name)))
			continue;
		if (quiet)
			return V_FAIL;
		add_json_string(&sb, json_string_value(name),
				json_string_length(name));
		ret = fail(c, quiet, "missing required property %s", sb.buf);
		sbuf_release(&sb);
		return ret;
	}
	return V_OK;
}

static NOINLINE int fail_unknown(struct vctx *c, const char *key, int quiet)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	if (quiet)
		return V_FAIL;
	add_json_string(&sb, key, strlen(key));
	ret = fail(c, quiet, "unknown property %s", sb.buf);
	sbuf_release(&sb);
	return ret;
}

static NOINLINE int hit_limit(struct vctx *c, const char *why)
{
	c->limit = why;
	return V_LIMIT;
}

static int validate(struct vctx *c, const json_t *s, const json_t *inst,
		    int quiet, int top);

/* Validate a child value: `key` names it (NULL: array index `idx`). */
static int v_child(struct vctx *c, const json_t *s, const json_t *inst,
		   const char *key, size_t idx, int quiet)
{
	size_t old = c->path.len;
	int ret = 0;

	if (!quiet)
		ret = key ? path_push_key(&c->path, key)
			  : sbuf_addf(&c->path, "[%zu]", idx);
	if (!ret)
		ret = validate(c, s, inst, quiet, 0);
	if (!quiet)
		sbuf_setlen(&c->path, old);
	return ret;
}

static int v_array(struct vctx *c, const json_t *s, const json_t *inst,
		   int quiet)
{
	const json_t *items = json_object_get(s, "items");
	size_t i, n = json_array_size(inst);
	int ret;

	if (json_is_array(items)) {
		for (i = 0; i < n && i < json_array_size(items); i++) {
			ret = v_child(c, json_array_get(items, i),
				      json_array_get(inst, i), NULL, i, quiet);
			if (ret)
				return ret;
		}
	} else if (items) {
		for (i = 0; i < n; i++) {
			ret = v_child(c, items, json_array_get(inst, i), NULL,
				      i, quiet);
			if (ret)
				return ret;
		}
	}
	return v_count(c, s, n, "minItems", "maxItems", "item", quiet);
}

static int v_object(struct vctx *c, const json_t *s, const json_t *inst,
		    int quiet, int top)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *extra = json_object_get(s, "additionalProperties");
	const json_t *sub;
	const char *key;
	json_t *value;
	int ret;

	if (!json_is_object(props))
		props = NULL;
	json_object_foreach((json_t *)inst, key, value) {
		sub = props ? json_object_get(props, key) : NULL;
		if (!sub) {
			if (json_is_false(extra))
				return fail_unknown(c, key, quiet);
			sub = extra;
		}
		if (!sub)
			continue;
		ret = v_child(c, sub, value, key, 0, quiet);
		if (ret)
			return ret;
	}
	if (top)
		return V_OK;
	return v_required(c, json_object_get(s, "required"), inst, quiet);
}

/* anyOf, oneOf, not, if/then/else; allOf is done by the caller. */
static int v_logic(struct vctx *c, const json_t *s, const json_t *inst,
		   int quiet, int top)
{
	const json_t *any = json_object_get(s, "anyOf");
	const json_t *one = json_object_get(s, "oneOf");
	const json_t *not = json_object_get(s, "not");
	const json_t *cond = json_object_get(s, "if");
	size_t i, first = 0, matches = 0;
	int ret = V_FAIL;

	if (json_is_array(any)) {
		for (i = 0; i < json_array_size(any); i++) {
			ret = validate(c, json_array_get(any, i), inst, 1, 0);
			if (ret <= 0)
				break;
		}
		if (ret < 0)
			return ret;
		if (i == json_array_size(any))
			return fail(c, quiet,
				    "does not match any of the anyOf schemas");
	}
	if (json_is_array(one)) {
		for (i = 0; i < json_array_size(one); i++) {
			ret = validate(c, json_array_get(one, i), inst, 1, 0);
			if (ret < 0)
				return ret;
			if (ret == V_OK && matches++ == 0)
				first = i;
			if (matches > 1)
				return fail(c, quiet,
					    "matches more than one of the oneOf schemas (%zu and %zu)",
					    first, i);
		}
		if (!matches)
			return fail(c, quiet,
				    "does not match any of the oneOf schemas");
	}
	if (not) {
		ret = validate(c, not, inst, 1, 0);
		if (ret < 0)
			return ret;
		if (ret == V_OK)
			return fail(c, quiet,
				    "must not match the \"not\" schema");
	}
	if (cond) {
		const json_t *branch;

		ret = validate(c, cond, inst, 1, 0);
		if (ret < 0)
			return ret;
		branch = json_object_get(s, ret == V_OK ? "then" : "else");
		if (branch)
			return validate(c, branch, inst, quiet, top);
	}
	return V_OK;
}

/*
 * The verdict of `s` on `inst`: V_OK, V_FAIL (first error recorded unless
 * quiet), V_LIMIT, -ENOMEM.  `top`: `required` is not enforced here.
 */
static int validate(struct vctx *c, const json_t *s, const json_t *inst,
		    int quiet, int top)
{
	const json_t *kw;
	size_t i;
	int ret;

	if (++c->steps > c->budget)
		return hit_limit(c, "the schema is too complex to validate this document");
	if (c->depth >= SCHEMA_MAX_DEPTH)
		return hit_limit(c, "the document nests too deeply to validate");
	if (json_is_false(s))
		return fail(c, quiet, "no value is allowed here");
	if (!json_is_object(s))
		return V_OK;	/* true, or not a schema at all */
	c->depth++;

	kw = json_object_get(s, "$ref");
	if (json_is_string(kw)) {
		const json_t *target = NULL;

		ret = resolve_ref(c->root, json_string_value(kw), &target);
		if (ret == -ENOENT)
			ret = fail(c, quiet, "the schema's $ref \"%s\" cannot be resolved",
				   json_string_value(kw));
		else if (!ret)
			ret = validate(c, target, inst, quiet, top);
		goto out;	/* draft-07: siblings of $ref are ignored */
	}
	ret = v_type(c, json_object_get(s, "type"), inst, quiet);
	if (ret)
		goto out;
	if ((kw = json_object_get(s, "enum"))) {
		ret = v_enum(c, kw, inst, quiet);
		if (ret)
			goto out;
	}
	if ((kw = json_object_get(s, "const"))) {
		ret = v_const(c, kw, inst, quiet);
		if (ret)
			goto out;
	}
	if (json_is_number(inst))
		ret = v_number(c, s, inst, quiet);
	else if (json_is_string(inst))
		ret = v_count(c, s, utf8_length(inst), "minLength",
			      "maxLength", "character", quiet);
	else if (json_is_array(inst))
		ret = v_array(c, s, inst, quiet);
	else if (json_is_object(inst))
		ret = v_object(c, s, inst, quiet, top);
	if (ret)
		goto out;
	kw = json_object_get(s, "allOf");
	for (i = 0; i < json_array_size(kw); i++) {
		ret = validate(c, json_array_get(kw, i), inst, quiet, top);
		if (ret)
			goto out;
	}
	ret = v_logic(c, s, inst, quiet, top);
out:
	c->depth--;
	return ret;
}

/* Values in `v`, counted to size the work budget. */
static size_t count_values(const json_t *v, unsigned depth)
{
	const char *key;
	json_t *item;
	size_t i, n = 1;

	if (depth > SCHEMA_MAX_DEPTH)
		return n;
	if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++)
			n += count_values(json_array_get(v, i), depth + 1);
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item)
			n += count_values(item, depth + 1);
	}
	return n;
}

int schema_validate(const json_t *root, const json_t *sub,
		    const json_t *instance, const char *path, unsigned flags,
		    struct ferr *err)
{
	struct vctx c = { .root = root, .err = err, .path = SBUF_INIT };
	int ret;

	if (!root || !instance)
		return -EINVAL;
	if (sbuf_addstr(&c.path, path ? path : "") < 0)
		return -ENOMEM;
	/* Enough for any sane schema; stops exponential anyOf/oneOf nests. */
	c.budget = (1u << 18) + 64 * count_values(instance, 0);
	ret = validate(&c, sub ? sub : root, instance, 0,
		       !!(flags & SCHEMA_IGNORE_REQUIRED));
	if (ret == V_FAIL) {
		ret = -EINVAL;
	} else if (ret == V_LIMIT) {
		ferr_set_path(err, path ? path : "");
		ret = ferr_set(err, -EINVAL, "%s", c.limit);
	}
	sbuf_release(&c.path);
	return ret;
}

/* ------------------------------------------------------------- defaults */

/* Follow $refs from `s` (a bounded number, so loops end). */
static int follow_refs(const json_t *root, const json_t **s)
{
	int hops, ret;

	for (hops = 0; hops < SCHEMA_MAX_NESTING; hops++) {
		const json_t *ref = json_object_get(*s, "$ref");
		const json_t *target = NULL;

		if (!json_is_string(ref))
			return 0;
		ret = resolve_ref(root, json_string_value(ref), &target);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0)
			return 0;
		*s = target;
	}
	return 0;
}

const json_t *schema_deref(const json_t *root, const json_t *schema)
{
	const json_t *s = schema ? schema : root;

	/* -ENOMEM only comes from %-escaped pointers; s stays where it got */
	follow_refs(root, &s);
	return s;
}

int schema_apply_defaults(const json_t *root, const json_t *schema,
			  json_t *instance)
{
	const json_t *s = schema ? schema : root, *props, *sub;
	const char *key;
	json_t *copy;
	int ret;

	if (!s || !json_is_object(instance))
		return 0;
	ret = follow_refs(root, &s);
	if (ret < 0)
		return ret;
	props = json_object_get(s, "properties");
	if (!json_is_object(props))
		return 0;
	json_object_foreach((json_t *)props, key, sub) {
		const json_t *def = json_object_get(sub, "default");

		if (json_object_get(instance, key))
			continue;
		if (!def) {
			const json_t *target = sub;

			ret = follow_refs(root, &target);
			if (ret < 0)
				return ret;
			def = json_object_get(target, "default");
		}
		if (!def)
			continue;
		copy = json_deep_copy(def);
		if (!copy || json_object_set_new(instance, key, copy) < 0)
			return -ENOMEM;
	}
	return 0;
}
