/* template_value: Python's semantics of the values json.loads gives: truth,
 * ==, str() and repr(), getattr/getitem, iteration; and UTF-8 helpers. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/template_i.h"
#include "lib/template_tables.h"
#include "lib/utf8.h"

/*** UTF-8 and Python's character classes ***/

/* Decode one code point (utf8.h); 0 when the bytes are not valid
 * UTF-8 or there are none. */
size_t tmpl_u8_dec(const char *p, size_t n, uint32_t *cp)
{
	return n ? utf8_decode((const unsigned char *)p, n, cp) : 0;
}

size_t tmpl_u8_enc(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

static bool in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < r[mid][0])
			hi = mid;
		else if (cp > r[mid][1])
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* str.isspace(), which is also what Python's re module calls \s. */
bool tmpl_py_isspace(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= 9 && cp <= 13) || (cp >= 0x1C && cp <= 0x20);
	return in_ranges(whitespace, ARRAY_SIZE(whitespace), cp);
}

static bool py_isprintable(uint32_t cp)
{
	if (cp < 0x80)
		return cp >= 0x20 && cp < 0x7F;
	return !in_ranges(nonprintable, ARRAY_SIZE(nonprintable), cp);
}

/*** values: Python semantics of what json.loads gives ***/

void tmpl_v_release(struct val *v)
{
	if (v->k == V_JSON)
		json_decref(v->j);
	v->k = V_UNDEF;
	v->j = NULL;
	v->uname = v->utype = NULL;
}

int tmpl_v_json(struct val *v, json_t *j)
{
	v->k = V_JSON;
	v->j = j;
	v->loop = NULL;
	return j ? 0 : -ENOMEM;
}

int tmpl_r_fail(struct render *r, const struct expr *at, const char *fmt,
		...)
{
	va_list ap;
	char msg[FERR_MESSAGE_MAX];

	if (!at)
		at = r->at;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return ferr_set_at(r->err, -EINVAL, at ? at->line : 0,
			   at ? at->col : 0, "%s", msg);
}

const char *tmpl_type_name(const struct val *v)
{
	if (v->k == V_UNDEF)
		return "Undefined";
	if (v->k == V_LOOP)
		return "LoopContext";
	switch (json_typeof(v->j)) {
	case JSON_OBJECT: return "dict";
	case JSON_ARRAY: return "list";
	case JSON_STRING: return "str";
	case JSON_INTEGER: return "int";
	case JSON_REAL: return "float";
	case JSON_TRUE:
	case JSON_FALSE: return "bool";
	default: return "NoneType";
	}
}

int tmpl_undefined_error(struct render *r, const struct val *v)
{
	if (v->utype)
		return tmpl_r_fail(r, NULL, "'%s object' has no attribute '%s'",
				   v->utype, v->uname ? v->uname : "?");
	if (v->uname)
		return tmpl_r_fail(r, NULL, "'%s' is undefined", v->uname);
	return tmpl_r_fail(r, NULL, "%s", "undefined value used");
}

/* Python truth; -EINVAL for the loop object. */
int tmpl_truth(struct render *r, const struct val *v, bool *out)
{
	if (v->k == V_UNDEF) {
		*out = false;
		return 0;
	}
	if (v->k == V_LOOP)
		return tmpl_r_fail(r, NULL, "%s", "unsupported: the loop object as a value");
	switch (json_typeof(v->j)) {
	case JSON_OBJECT: *out = json_object_size(v->j) > 0; break;
	case JSON_ARRAY: *out = json_array_size(v->j) > 0; break;
	case JSON_STRING: *out = json_string_length(v->j) > 0; break;
	case JSON_INTEGER: *out = json_integer_value(v->j) != 0; break;
	case JSON_REAL: *out = json_real_value(v->j) != 0.0; break;
	case JSON_TRUE: *out = true; break;
	default: *out = false; break;
	}
	return 0;
}

bool tmpl_is_intlike(const json_t *j, json_int_t *out)
{
	if (json_is_integer(j))
		*out = json_integer_value(j);
	else if (json_is_boolean(j))
		*out = json_is_true(j);
	else
		return false;
	return true;
}

static bool int_eq_real(json_int_t i, double d)
{
	if (d != d || d < -9223372036854775808.0 || d >= 9223372036854775808.0 ||
	    d != trunc(d))
		return false;
	return (json_int_t)d == i;
}

/* Python ==; 1/0, or -EINVAL when nested too deeply. */
static int json_py_eq(const json_t *a, const json_t *b, int depth)
{
	json_int_t ia, ib;
	size_t i, n;

	if (depth > MAX_VALUE_DEPTH)
		return -EINVAL;
	if (tmpl_is_intlike(a, &ia)) {
		if (tmpl_is_intlike(b, &ib))
			return ia == ib;
		if (json_is_real(b))
			return int_eq_real(ia, json_real_value(b));
		return 0;
	}
	if (json_is_real(a)) {
		if (tmpl_is_intlike(b, &ib))
			return int_eq_real(ib, json_real_value(a));
		return json_is_real(b) && json_real_value(a) == json_real_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	switch (json_typeof(a)) {
	case JSON_STRING:
		return json_string_length(a) == json_string_length(b) &&
		       !memcmp(json_string_value(a), json_string_value(b),
			       json_string_length(a));
	case JSON_NULL:
		return 1;
	case JSON_ARRAY:
		n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (i = 0; i < n; i++) {
			int e = json_py_eq(json_array_get(a, i),
					   json_array_get(b, i), depth + 1);

			if (e <= 0)
				return e;
		}
		return 1;
	case JSON_OBJECT: {
		const char *key;
		json_t *va;

		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, key, va) {
			json_t *vb = json_object_get(b, key);
			int e;

			if (!vb)
				return 0;
			e = json_py_eq(va, vb, depth + 1);
			if (e <= 0)
				return e;
		}
		return 1;
	}
	default:
		return 0;
	}
}

int tmpl_py_eq(struct render *r, const struct val *a, const struct val *b,
	       bool *out)
{
	int e;

	if (a->k == V_LOOP || b->k == V_LOOP)
		return tmpl_r_fail(r, NULL, "%s", "unsupported: the loop object as a value");
	if (a->k == V_UNDEF || b->k == V_UNDEF) {
		*out = a->k == b->k;
		return 0;
	}
	e = json_py_eq(a->j, b->j, 0);
	if (e < 0)
		return tmpl_r_fail(r, NULL, "unsupported: comparing values nested deeper than %d levels",
				   MAX_VALUE_DEPTH);
	*out = e;
	return 0;
}

/* repr() of a str, by Python's unicode_repr rules. */
static int repr_str(struct sbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	bool sq = memchr(s, '\'', n) != NULL, dq = memchr(s, '"', n) != NULL;
	char quote = sq && !dq ? '"' : '\'';
	size_t i = 0;
	int ret = sbuf_addch(sb, quote);

	while (!ret && i < n) {
		uint32_t cp;
		size_t k = tmpl_u8_dec(s + i, n - i, &cp);
		char esc[12];
		int len = 0;

		if (!k)
			return -EINVAL;
		if (cp == (uint32_t)quote || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			len = 2;
		} else if (cp == '\t' || cp == '\n' || cp == '\r') {
			esc[0] = '\\';
			esc[1] = cp == '\t' ? 't' : cp == '\n' ? 'n' : 'r';
			len = 2;
		} else if (!py_isprintable(cp)) {
			int digits = cp < 0x100 ? 2 : cp < 0x10000 ? 4 : 8, d;

			esc[0] = '\\';
			esc[1] = digits == 2 ? 'x' : digits == 4 ? 'u' : 'U';
			for (d = 0; d < digits; d++)
				esc[2 + d] = hex[cp >> (4 * (digits - 1 - d)) & 15];
			len = 2 + digits;
		}
		ret = len ? sbuf_add(sb, esc, (size_t)len) : sbuf_add(sb, s + i, k);
		i += k;
	}
	return ret ? ret : sbuf_addch(sb, quote);
}

/* str() (repr for items of containers) of a JSON value. */
static int json_py_str(struct sbuf *sb, const json_t *j, bool repr, int depth)
{
	size_t i, n;
	int ret = 0;

	if (depth > MAX_VALUE_DEPTH)
		return -EINVAL;
	switch (json_typeof(j)) {
	case JSON_STRING:
		if (repr)
			return repr_str(sb, json_string_value(j),
					json_string_length(j));
		return sbuf_add(sb, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
	case JSON_REAL:
		return fjson_dump(sb, j);	/* Python's int and float repr */
	case JSON_TRUE:
		return sbuf_addstr(sb, "True");
	case JSON_FALSE:
		return sbuf_addstr(sb, "False");
	case JSON_NULL:
		return sbuf_addstr(sb, "None");
	case JSON_ARRAY:
		n = json_array_size(j);
		ret = sbuf_addch(sb, '[');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_add(sb, ", ", 2);
			if (!ret)
				ret = json_py_str(sb, json_array_get(j, i), true,
						  depth + 1);
		}
		return ret ? ret : sbuf_addch(sb, ']');
	case JSON_OBJECT: {
		void *it = json_object_iter((json_t *)j);

		ret = sbuf_addch(sb, '{');
		for (i = 0; !ret && it; i++, it = json_object_iter_next((json_t *)j, it)) {
			if (i)
				ret = sbuf_add(sb, ", ", 2);
			if (!ret)
				ret = repr_str(sb, json_object_iter_key(it),
					       json_object_iter_key_len(it));
			if (!ret)
				ret = sbuf_add(sb, ": ", 2);
			if (!ret)
				ret = json_py_str(sb, json_object_iter_value(it),
						  true, depth + 1);
		}
		return ret ? ret : sbuf_addch(sb, '}');
	}
	}
	return -EINVAL;
}

int tmpl_py_str(struct render *r, struct sbuf *sb, const struct val *v)
{
	size_t start = sb->len;
	int ret;

	if (v->k == V_UNDEF)
		return 0;
	if (v->k == V_LOOP)
		return tmpl_r_fail(r, NULL, "%s", "unsupported: printing the loop object");
	ret = json_py_str(sb, v->j, false, 0);
	if (ret == -EINVAL) {
		sbuf_setlen(sb, start);
		return tmpl_r_fail(r, NULL, "unsupported: printing a value nested deeper than %d levels (or not UTF-8)",
				   MAX_VALUE_DEPTH);
	}
	return ret;
}

/* A new str value from a buffer, within the size limit. */
int tmpl_v_from_sbuf(struct render *r, struct val *v, const struct sbuf *sb)
{
	if (sb->len > MAX_OUTPUT)
		return tmpl_r_fail(r, NULL, "string larger than %zu bytes", MAX_OUTPUT);
	return tmpl_v_json(v, json_stringn_nocheck(sb->buf, sb->len));
}

/*** lookups (Jinja2's Environment.getattr / getitem) ***/

static int cmp_name(const void *key, const void *elem)
{
	const char *k = key, *e = *(const char *const *)elem;

	return strcmp(k, e);
}

static bool has_py_attr(const struct val *v, const char *name, size_t len)
{
	const char *const *list;
	size_t n;

	if (strlen(name) != len)	/* a NUL inside: never an attribute */
		return false;
	if (v->k == V_LOOP) {
		list = attrs_loop;
		n = ARRAY_SIZE(attrs_loop);
	} else {
		switch (json_typeof(v->j)) {
		case JSON_OBJECT: list = attrs_dict; n = ARRAY_SIZE(attrs_dict); break;
		case JSON_ARRAY: list = attrs_list; n = ARRAY_SIZE(attrs_list); break;
		case JSON_STRING: list = attrs_str; n = ARRAY_SIZE(attrs_str); break;
		case JSON_REAL: list = attrs_float; n = ARRAY_SIZE(attrs_float); break;
		case JSON_NULL: list = attrs_none; n = ARRAY_SIZE(attrs_none); break;
		default: list = attrs_int; n = ARRAY_SIZE(attrs_int); break;
		}
	}
	return bsearch(name, list, n, sizeof(*list), cmp_name) != NULL;
}

/* getattr(obj, name) found something: the loop's supported attributes, or
 * a refusal. */
static int py_attr(struct render *r, const struct val *obj, const char *name,
		   struct val *out)
{
	if (obj->k == V_LOOP) {
		const struct loopst *lp = obj->loop;
		size_t len = lp->length, i0 = lp->index0;

		if (!strcmp(name, "index"))
			return tmpl_v_json(out, json_integer((json_int_t)i0 + 1));
		if (!strcmp(name, "index0"))
			return tmpl_v_json(out, json_integer((json_int_t)i0));
		if (!strcmp(name, "revindex"))
			return tmpl_v_json(out, json_integer((json_int_t)(len - i0)));
		if (!strcmp(name, "revindex0"))
			return tmpl_v_json(out, json_integer((json_int_t)(len - i0 - 1)));
		if (!strcmp(name, "first"))
			return tmpl_v_json(out, json_boolean(i0 == 0));
		if (!strcmp(name, "last"))
			return tmpl_v_json(out, json_boolean(i0 + 1 == len));
		if (!strcmp(name, "length"))
			return tmpl_v_json(out, json_integer((json_int_t)len));
		return tmpl_r_fail(r, NULL, "unsupported: loop.%s", name);
	}
	return tmpl_r_fail(r, NULL, "unsupported: '%s' is an attribute of Python's %s, not a value",
			   name, tmpl_type_name(obj));
}

void tmpl_set_undef(struct val *out, const char *name, const char *type)
{
	out->k = V_UNDEF;
	out->j = NULL;
	out->uname = name;
	out->utype = type;
}

/* One character of a str as a new str value. */
static int str_char(const json_t *s, json_int_t idx, struct val *out, bool *found)
{
	const char *p = json_string_value(s);
	size_t n = json_string_length(s), i = 0, count = 0, k;
	uint32_t cp;

	*found = false;
	if (idx < 0) {
		idx += (json_int_t)utf8_count(p, n);
		if (idx < 0)
			return 0;
		i = 0;
	}
	for (count = 0; i < n; i += k, count++) {
		k = tmpl_u8_dec(p + i, n - i, &cp);
		if (!k)
			return -EINVAL;
		if ((json_int_t)count == idx) {
			*found = true;
			return tmpl_v_json(out, json_stringn_nocheck(p + i, k));
		}
	}
	return 0;
}

/* obj[key] as Python does it for our types: 1 found, 0 not found (a
 * LookupError or TypeError). */
static int py_getitem(const struct val *obj, const struct val *key,
		      struct val *out)
{
	json_int_t idx;
	bool found;
	int ret;

	if (obj->k != V_JSON || key->k == V_LOOP)
		return 0;
	if (json_is_object(obj->j)) {
		json_t *v;

		if (key->k != V_JSON || !json_is_string(key->j))
			return 0;
		v = json_object_getn(obj->j, json_string_value(key->j),
				     json_string_length(key->j));
		if (!v)
			return 0;
		tmpl_v_json(out, json_incref(v));
		return 1;
	}
	if (key->k != V_JSON || !tmpl_is_intlike(key->j, &idx))
		return 0;
	if (json_is_array(obj->j)) {
		json_int_t n = (json_int_t)json_array_size(obj->j);

		if (idx < 0)
			idx += n;
		if (idx < 0 || idx >= n)
			return 0;
		tmpl_v_json(out, json_incref(json_array_get(obj->j, (size_t)idx)));
		return 1;
	}
	if (json_is_string(obj->j)) {
		ret = str_char(obj->j, idx, out, &found);
		if (ret < 0)
			return ret;
		return found;
	}
	return 0;
}

static const char *owner_name(const struct val *v)
{
	return v->k == V_LOOP ? "LoopContext" : tmpl_type_name(v);
}

/* a.name: getattr first, then getitem. */
int tmpl_do_getattr(struct render *r, const struct val *obj,
		    const char *name, struct val *out)
{
	struct val key = { 0 };
	int ret;

	if (obj->k == V_UNDEF)
		return tmpl_undefined_error(r, obj);
	if (has_py_attr(obj, name, strlen(name)))
		return py_attr(r, obj, name, out);
	ret = tmpl_v_json(&key, json_string(name));
	if (ret < 0)
		return ret;
	ret = py_getitem(obj, &key, out);
	tmpl_v_release(&key);
	if (ret < 0)
		return ret == -EINVAL ? tmpl_r_fail(r, NULL, "%s", "invalid UTF-8 in a value") : ret;
	if (!ret)
		tmpl_set_undef(out, name, owner_name(obj));
	return 0;
}

/* a[key]: getitem first, then getattr for str keys. */
int tmpl_do_getitem(struct render *r, const struct val *obj,
		    const struct val *key, struct val *out)
{
	int ret;

	if (obj->k == V_UNDEF)
		return tmpl_undefined_error(r, obj);
	ret = py_getitem(obj, key, out);
	if (ret < 0)
		return ret == -EINVAL ? tmpl_r_fail(r, NULL, "%s", "invalid UTF-8 in a value") : ret;
	if (ret)
		return 0;
	if (key->k == V_JSON && json_is_string(key->j)) {
		const char *name = json_string_value(key->j);

		if (has_py_attr(obj, name, json_string_length(key->j)))
			return py_attr(r, obj, name, out);
	}
	tmpl_set_undef(out, NULL, NULL);
	return 0;
}

/*** iteration ***/

int tmpl_iter_init(struct render *r, const struct val *v, struct iter *it)
{
	memset(it, 0, sizeof(*it));
	if (v->k == V_UNDEF)
		return 0;
	if (v->k == V_LOOP)
		return tmpl_r_fail(r, NULL, "%s", "unsupported: iterating the loop object");
	it->j = v->j;
	switch (json_typeof(v->j)) {
	case JSON_ARRAY:
		it->kind = IT_LIST;
		it->n = json_array_size(v->j);
		return 0;
	case JSON_OBJECT:
		it->kind = IT_DICT;
		it->n = json_object_size(v->j);
		it->it = json_object_iter((json_t *)v->j);
		return 0;
	case JSON_STRING: {
		it->kind = IT_STR;
		it->n = utf8_count(json_string_value(v->j),
				   json_string_length(v->j));
		return 0;
	}
	default:
		return tmpl_r_fail(r, NULL, "'%s' object is not iterable", tmpl_type_name(v));
	}
}

/* Next item as a new reference in *out; 0 = done, 1 = got one. */
int tmpl_iter_next(struct render *r, struct iter *it, json_t **out)
{
	switch (it->kind) {
	case IT_LIST:
		if (it->i >= it->n)
			return 0;
		*out = json_incref(json_array_get(it->j, it->i++));
		return 1;
	case IT_DICT:
		if (!it->it)
			return 0;
		*out = json_stringn_nocheck(json_object_iter_key(it->it),
					    json_object_iter_key_len(it->it));
		it->it = json_object_iter_next((json_t *)it->j, it->it);
		return *out ? 1 : -ENOMEM;
	case IT_STR: {
		const char *s = json_string_value(it->j);
		size_t n = json_string_length(it->j);
		uint32_t cp;
		size_t k;

		if (it->i >= n)
			return 0;
		k = tmpl_u8_dec(s + it->i, n - it->i, &cp);
		if (!k)
			return tmpl_r_fail(r, NULL, "%s", "invalid UTF-8 in a value");
		*out = json_stringn_nocheck(s + it->i, k);
		it->i += k;
		return *out ? 1 : -ENOMEM;
	}
	default:
		return 0;
	}
}
