/* template_filter: the filters default, tojson, length, join, upper, lower
 * and trim, as Jinja2 3.1 computes them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/fjson.h"
#include "lib/template_i.h"
#include "lib/template_tables.h"
#include "lib/utf8.h"

/*** filters ***/

/* One code point's str.upper()/str.lower(): up to 3 code points. */
static int case_map(const struct case_run *runs, size_t nruns,
		    const struct case_multi *multi, size_t nmulti, uint32_t cp,
		    uint32_t out[3])
{
	size_t i;

	for (i = 0; i < nmulti; i++) {
		if (multi[i].cp == cp) {
			int n = 0;

			while (n < 3 && multi[i].map[n])
				n++;
			memcpy(out, multi[i].map, sizeof(uint32_t) * 3);
			return n;
		}
	}
	for (i = 0; i < nruns && runs[i].first <= cp; i++) {
		if (cp <= runs[i].last &&
		    (cp - runs[i].first) % runs[i].stride == 0) {
			out[0] = (uint32_t)((int32_t)cp + runs[i].delta);
			return 1;
		}
	}
	out[0] = cp;
	return 1;
}

static int tojson_str(struct sbuf *sb, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0;
	int ret = sbuf_addch(sb, '"');

	while (!ret && i < n) {
		uint32_t cp;
		size_t k = tmpl_u8_dec(s + i, n - i, &cp);
		char esc[14];
		int len;

		if (!k)
			return -EINVAL;
		i += k;
		if (cp == '"' || cp == '\\') {
			esc[0] = '\\';
			esc[1] = (char)cp;
			len = 2;
		} else if (cp == '\n' || cp == '\r' || cp == '\t' || cp == '\b' ||
			   cp == '\f') {
			esc[0] = '\\';
			esc[1] = cp == '\n' ? 'n' : cp == '\r' ? 'r' : cp == '\t' ? 't'
				 : cp == '\b' ? 'b' : 'f';
			len = 2;
		} else if (cp >= 0x20 && cp < 0x7F) {
			esc[0] = (char)cp;
			len = 1;
		} else if (cp < 0x10000) {
			len = snprintf(esc, sizeof(esc), "\\u%c%c%c%c",
				       hex[cp >> 12], hex[cp >> 8 & 15],
				       hex[cp >> 4 & 15], hex[cp & 15]);
		} else {
			uint32_t v = cp - 0x10000, hi = 0xD800 | v >> 10,
				 lo = 0xDC00 | (v & 0x3FF);

			len = snprintf(esc, sizeof(esc), "\\u%c%c%c%c\\u%c%c%c%c",
				       hex[hi >> 12], hex[hi >> 8 & 15],
				       hex[hi >> 4 & 15], hex[hi & 15],
				       hex[lo >> 12], hex[lo >> 8 & 15],
				       hex[lo >> 4 & 15], hex[lo & 15]);
		}
		ret = sbuf_add(sb, esc, (size_t)len);
	}
	return ret ? ret : sbuf_addch(sb, '"');
}

static int cmp_keys(const void *a, const void *b)
{
	const char *const *x = a, *const *y = b;

	return strcmp(*x, *y);
}

static int newline_indent(struct sbuf *sb, const struct sbuf *ind, int level)
{
	int ret = sbuf_addch(sb, '\n');

	while (!ret && level-- > 0)
		ret = sbuf_add(sb, ind->buf, ind->len);
	return ret;
}

/* json.dumps(j, sort_keys=True[, indent]) with ensure_ascii. */
static int tojson_value(struct sbuf *sb, const json_t *j,
			const struct sbuf *ind, int level)
{
	size_t i, n;
	int ret = 0;

	if (level > MAX_VALUE_DEPTH)
		return -EINVAL;
	if (sb->len > MAX_OUTPUT)
		return -EFBIG;
	switch (json_typeof(j)) {
	case JSON_STRING:
		return tojson_str(sb, json_string_value(j), json_string_length(j));
	case JSON_INTEGER:
	case JSON_REAL:
		return fjson_dump(sb, j);
	case JSON_TRUE:
		return sbuf_addstr(sb, "true");
	case JSON_FALSE:
		return sbuf_addstr(sb, "false");
	case JSON_NULL:
		return sbuf_addstr(sb, "null");
	case JSON_ARRAY:
		n = json_array_size(j);
		if (!n)
			return sbuf_addstr(sb, "[]");
		ret = sbuf_addch(sb, '[');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_addstr(sb, ind ? "," : ", ");
			if (!ret && ind)
				ret = newline_indent(sb, ind, level + 1);
			if (!ret)
				ret = tojson_value(sb, json_array_get(j, i), ind,
						   level + 1);
		}
		if (!ret && ind)
			ret = newline_indent(sb, ind, level);
		return ret ? ret : sbuf_addch(sb, ']');
	case JSON_OBJECT: {
		const char **keys;
		const char *key;
		json_t *v;

		n = json_object_size(j);
		if (!n)
			return sbuf_addstr(sb, "{}");
		keys = malloc(n * sizeof(*keys));
		if (!keys)
			return -ENOMEM;
		i = 0;
		json_object_foreach((json_t *)j, key, v)
			keys[i++] = key;
		/* Python sorts by code point, which is UTF-8 byte order. */
		qsort(keys, n, sizeof(*keys), cmp_keys);
		ret = sbuf_addch(sb, '{');
		for (i = 0; !ret && i < n; i++) {
			if (i)
				ret = sbuf_addstr(sb, ind ? "," : ", ");
			if (!ret && ind)
				ret = newline_indent(sb, ind, level + 1);
			if (!ret)
				ret = tojson_str(sb, keys[i], strlen(keys[i]));
			if (!ret)
				ret = sbuf_add(sb, ": ", 2);
			if (!ret)
				ret = tojson_value(sb, json_object_get(j, keys[i]),
						   ind, level + 1);
		}
		free(keys);
		if (!ret && ind)
			ret = newline_indent(sb, ind, level);
		return ret ? ret : sbuf_addch(sb, '}');
	}
	}
	return -EINVAL;
}

/* Jinja2's htmlsafe_json_dumps: json.dumps, then <>&' as \u escapes. */
static int f_tojson(struct render *r, const struct expr *e,
		    const struct val *v, const struct val *indent,
		    struct val *out)
{
	struct sbuf sb = SBUF_INIT, ind = SBUF_INIT, esc = SBUF_INIT;
	bool use_indent = indent->k != V_UNDEF || e->args[0];
	size_t i;
	int ret;

	if (v->k != V_JSON) {
		ret = tmpl_r_fail(r, e, "Object of type %s is not JSON serializable",
				  tmpl_type_name(v));
		goto out;
	}
	if (use_indent && indent->k == V_JSON && json_is_null(indent->j))
		use_indent = false;
	/* json.dumps turns indent into a string only for non-str values */
	if (use_indent && !json_is_string(v->j)) {
		json_int_t n;
		/* only a non-empty container ever writes the indent */
		bool needed = (json_is_array(v->j) && json_array_size(v->j)) ||
			      (json_is_object(v->j) && json_object_size(v->j));

		if (indent->k == V_JSON && tmpl_is_intlike(indent->j, &n)) {
			if (!needed)
				n = 0;
			if (n > (json_int_t)MAX_OUTPUT) {
				ret = tmpl_r_fail(r, e, "%s", "tojson indent too large");
				goto out;
			}
			for (; n > 0 && !(ret = sbuf_addch(&ind, ' ')); n--)
				;
			if (n > 0)
				goto out;
		} else if (indent->k == V_JSON && json_is_string(indent->j)) {
			ret = sbuf_add(&ind, json_string_value(indent->j),
				       json_string_length(indent->j));
			if (ret < 0)
				goto out;
		} else {
			ret = tmpl_r_fail(r, e, "can't multiply sequence by non-int of type '%s'",
					  tmpl_type_name(indent));
			goto out;
		}
	}
	ret = tojson_value(&sb, v->j, use_indent ? &ind : NULL, 0);
	if (ret == -EINVAL) {
		ret = tmpl_r_fail(r, e, "unsupported: tojson of a value nested deeper than %d levels",
				  MAX_VALUE_DEPTH);
		goto out;
	}
	if (ret == -EFBIG) {
		ret = tmpl_r_fail(r, e, "string larger than %zu bytes", MAX_OUTPUT);
		goto out;
	}
	if (ret < 0)
		goto out;
	for (i = 0; !ret && i < sb.len; i++) {
		switch (sb.buf[i]) {
		case '<': ret = sbuf_addstr(&esc, "\\u003c"); break;
		case '>': ret = sbuf_addstr(&esc, "\\u003e"); break;
		case '&': ret = sbuf_addstr(&esc, "\\u0026"); break;
		case '\'': ret = sbuf_addstr(&esc, "\\u0027"); break;
		default: ret = sbuf_addch(&esc, sb.buf[i]); break;
		}
	}
	if (!ret)
		ret = tmpl_v_from_sbuf(r, out, &esc);
out:
	sbuf_release(&sb);
	sbuf_release(&ind);
	sbuf_release(&esc);
	return ret;
}

/* soft_str(): str values as they are, anything else through str(). */
static int soft_str(struct render *r, const struct val *v, struct sbuf *sb)
{
	if (v->k == V_JSON && json_is_string(v->j))
		return sbuf_add(sb, json_string_value(v->j),
				json_string_length(v->j));
	return tmpl_py_str(r, sb, v);
}

static int f_case(struct render *r, const struct expr *e, const struct val *v,
		  bool upper, struct val *out)
{
	struct sbuf in = SBUF_INIT, sb = SBUF_INIT;
	size_t i = 0;
	int ret = soft_str(r, v, &in);

	while (!ret && i < in.len) {
		uint32_t cp, m[3];
		size_t k = tmpl_u8_dec(in.buf + i, in.len - i, &cp);
		char buf[12];
		int n, j;
		size_t o = 0;

		if (!k) {
			ret = tmpl_r_fail(r, e, "%s", "invalid UTF-8 in a value");
			break;
		}
		i += k;
		if (cp < 0x80) {
			if (upper && cp >= 'a' && cp <= 'z')
				cp -= 32;
			else if (!upper && cp >= 'A' && cp <= 'Z')
				cp += 32;
			ret = sbuf_addch(&sb, (char)cp);
			continue;
		}
		if (!upper && cp == 0x3A3) {
			ret = tmpl_r_fail(r, e, "%s", "unsupported: lower() of a string with U+03A3 (final sigma)");
			break;
		}
		n = upper ? case_map(upper_runs, ARRAY_SIZE(upper_runs), upper_multi,
				     ARRAY_SIZE(upper_multi), cp, m)
			  : case_map(lower_runs, ARRAY_SIZE(lower_runs), lower_multi,
				     ARRAY_SIZE(lower_multi), cp, m);
		for (j = 0; j < n; j++)
			o += tmpl_u8_enc(buf + o, m[j]);
		ret = sbuf_add(&sb, buf, o);
	}
	if (!ret)
		ret = tmpl_v_from_sbuf(r, out, &sb);
	sbuf_release(&in);
	sbuf_release(&sb);
	return ret;
}

static bool cp_in(const uint32_t *set, size_t n, uint32_t cp)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (set[i] == cp)
			return true;
	return false;
}

/* str.strip(chars) */
static int f_trim(struct render *r, const struct expr *e, const struct val *v,
		  const struct val *chars, struct val *out)
{
	struct sbuf in = SBUF_INIT, sb = SBUF_INIT;
	uint32_t *set = NULL;
	size_t nset = 0, a, b;
	bool ws = true;
	int ret;

	if (e->args[0] && !(chars->k == V_JSON && json_is_null(chars->j))) {
		const char *s;
		size_t n, i;

		if (chars->k != V_JSON || !json_is_string(chars->j))
			return tmpl_r_fail(r, e, "%s", "strip arg must be None or str");
		ws = false;
		s = json_string_value(chars->j);
		n = json_string_length(chars->j);
		set = malloc((n + 1) * sizeof(*set));
		if (!set)
			return -ENOMEM;
		for (i = 0; i < n;) {
			size_t k = tmpl_u8_dec(s + i, n - i, &set[nset]);

			if (!k) {
				free(set);
				return tmpl_r_fail(r, e, "%s", "invalid UTF-8 in a value");
			}
			i += k;
			nset++;
		}
	}
	ret = soft_str(r, v, &in);
	if (ret < 0)
		goto out;
	a = 0;
	b = in.len;
	while (a < b) {
		uint32_t cp;
		size_t k = tmpl_u8_dec(in.buf + a, b - a, &cp);

		if (!k || !(ws ? tmpl_py_isspace(cp) : cp_in(set, nset, cp)))
			break;
		a += k;
	}
	while (b > a) {
		size_t k = b - 1;
		uint32_t cp;

		while (k > a && ((unsigned char)in.buf[k] & 0xC0) == 0x80)
			k--;
		if (!tmpl_u8_dec(in.buf + k, b - k, &cp) ||
		    !(ws ? tmpl_py_isspace(cp) : cp_in(set, nset, cp)))
			break;
		b = k;
	}
	ret = sbuf_add(&sb, in.buf + a, b - a);
	if (!ret)
		ret = tmpl_v_from_sbuf(r, out, &sb);
out:
	free(set);
	sbuf_release(&in);
	sbuf_release(&sb);
	return ret;
}

static int f_join(struct render *r, const struct expr *e, const struct val *v,
		  const struct val *sep, struct val *out)
{
	struct sbuf sb = SBUF_INIT, ssep = SBUF_INIT;
	struct iter it;
	json_t *item = NULL;
	bool first = true;
	int ret;

	ret = tmpl_py_str(r, &ssep, sep);
	if (ret < 0)
		goto out;
	ret = tmpl_iter_init(r, v, &it);
	if (ret < 0)
		goto out;
	while ((ret = tmpl_iter_next(r, &it, &item)) > 0) {
		struct val iv = { 0 };

		tmpl_v_json(&iv, item);
		ret = 0;
		if (!first)
			ret = sbuf_add(&sb, ssep.buf, ssep.len);
		first = false;
		if (!ret)
			ret = tmpl_py_str(r, &sb, &iv);
		tmpl_v_release(&iv);
		if (!ret && sb.len > MAX_OUTPUT)
			ret = tmpl_r_fail(r, e, "string larger than %zu bytes", MAX_OUTPUT);
		if (ret < 0)
			goto out;
	}
	if (!ret)
		ret = tmpl_v_from_sbuf(r, out, &sb);
out:
	sbuf_release(&sb);
	sbuf_release(&ssep);
	return ret;
}

static int f_length(struct render *r, const struct expr *e,
		    const struct val *v, struct val *out)
{
	size_t n = 0;

	if (v->k == V_LOOP)
		return tmpl_r_fail(r, e, "%s", "unsupported: the loop object as a value");
	if (v->k == V_JSON) {
		switch (json_typeof(v->j)) {
		case JSON_ARRAY: n = json_array_size(v->j); break;
		case JSON_OBJECT: n = json_object_size(v->j); break;
		case JSON_STRING:
			n = utf8_count(json_string_value(v->j),
				       json_string_length(v->j));
			break;
		default:
			return tmpl_r_fail(r, e, "object of type '%s' has no len()",
					   tmpl_type_name(v));
		}
	}
	return tmpl_v_json(out, json_integer((json_int_t)n));
}

int tmpl_apply_filter(struct render *r, const struct expr *e,
		      struct val *v, struct val args[2], struct val *out)
{
	bool b;
	int ret;

	switch ((enum filter_id)e->op) {
	case F_DEFAULT:
		if (v->k != V_UNDEF) {
			if (!e->args[1])
				goto keep;
			ret = tmpl_truth(r, &args[1], &b);
			if (ret < 0)
				return ret;
			if (b) {
				ret = tmpl_truth(r, v, &b);
				if (ret < 0)
					return ret;
				if (b)
					goto keep;
			} else {
				goto keep;
			}
		}
		if (!e->args[0])
			return tmpl_v_json(out, json_string(""));
		*out = args[0];
		args[0].k = V_UNDEF;
		return 0;
	case F_TOJSON:
		return f_tojson(r, e, v, &args[0], out);
	case F_LENGTH:
		return f_length(r, e, v, out);
	case F_JOIN:
		if (!e->args[0]) {
			struct val empty = { 0 };

			ret = tmpl_v_json(&empty, json_string(""));
			if (ret < 0)
				return ret;
			ret = f_join(r, e, v, &empty, out);
			tmpl_v_release(&empty);
			return ret;
		}
		return f_join(r, e, v, &args[0], out);
	case F_UPPER:
	case F_LOWER:
		return f_case(r, e, v, e->op == F_UPPER, out);
	case F_TRIM:
		return f_trim(r, e, v, &args[0], out);
	}
	return -EINVAL;
keep:
	*out = *v;
	v->k = V_UNDEF;
	return 0;
}
