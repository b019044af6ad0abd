/* jobspec_values: what a node's values may become in a job — an image
 * reference, an argument that reads as an option — and the container
 * runner's words; see jobspec.h ("Images", "Options") and jobspec_i.h. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/jobspec.h"
#include "graph/jobspec_i.h"
#include "lib/sbuf.h"
#include "lib/template.h"
#include "lib/utf8.h"

#define NAME_MAX_BYTES 255
#define TAG_MAX 128
#define DIGEST_HEX_MIN 32
#define DIGEST_HEX_MAX 128

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_alnum(char c)
{
	return is_alpha(c) || is_digit(c);
}

static bool is_hex(char c)
{
	return utf8_hexval(c) >= 0;
}

/* ---- image references (jobspec.h, "Images") ----------------------------- */

/* path-component: [a-z0-9]+ *( ("." | "_" | "__" | 1*"-") [a-z0-9]+ ) */
static bool path_component(const char *s, size_t n)
{
	size_t i = 0;

	if (!n || !is_lower_alnum(s[0]))
		return false;
	while (i < n) {
		size_t sep = 0;

		if (is_lower_alnum(s[i])) {
			i++;
			continue;
		}
		if (s[i] == '.')
			sep = 1;
		else if (s[i] == '_')
			sep = i + 1 < n && s[i + 1] == '_' ? 2 : 1;
		else
			while (i + sep < n && s[i + sep] == '-')
				sep++;
		if (!sep)
			return false;
		i += sep;
		/* a separator stands between alphanumerics */
		if (i >= n || !is_lower_alnum(s[i]))
			return false;
	}
	return true;
}

/* path: path-component *( "/" path-component ) */
static bool image_path(const char *s, size_t n)
{
	if (!n)
		return false;
	while (n) {
		const char *slash = memchr(s, '/', n);
		size_t k = slash ? (size_t)(slash - s) : n;

		if (!path_component(s, k) || (slash && k + 1 == n))
			return false;
		s += k + (slash != NULL);
		n -= k + (slash != NULL);
	}
	return true;
}

/* domain: host [ ":" port ]; host: domain-components joined by ".", or
 * "[" IPv6 "]" */
static bool image_domain(const char *s, size_t n)
{
	size_t i = 0;

	if (n && s[0] == '[') {
		for (i = 1; i < n && (is_hex(s[i]) || s[i] == ':'); i++)
			;
		if (i == 1 || i >= n || s[i] != ']')
			return false;
		i++;
	} else {
		for (;;) {
			size_t start = i;

			while (i < n && (is_alnum(s[i]) || s[i] == '-'))
				i++;
			if (i == start || s[start] == '-' || s[i - 1] == '-')
				return false;
			if (i < n && s[i] == '.') {
				i++;
				continue;
			}
			break;
		}
	}
	if (i == n)
		return true;
	if (s[i] != ':' || i + 1 == n)
		return false;
	for (i++; i < n; i++)
		if (!is_digit(s[i]))
			return false;
	return true;
}

/* digest: algorithm ":" 32..128 hex digits; algorithm: components
 * [A-Za-z][A-Za-z0-9]* joined by one of "+._-" */
static bool image_digest(const char *s)
{
	const char *colon = strchr(s, ':');
	size_t i = 0, hex;

	if (!colon)
		return false;
	for (;;) {
		if (!is_alpha(s[i]))
			return false;
		while (is_alnum(s[i]))
			i++;
		if (s + i == colon)
			break;
		if (!strchr("+._-", s[i]) || !s[i])
			return false;
		i++;
	}
	hex = strlen(colon + 1);
	if (hex < DIGEST_HEX_MIN || hex > DIGEST_HEX_MAX)
		return false;
	for (i = 1; colon[i]; i++)
		if (!is_hex(colon[i]))
			return false;
	return true;
}

int jobspec_image_check(const char *ref, const char **why)
{
	size_t n = strlen(ref), name_len;
	const char *at, *slash, *colon;

	*why = NULL;
	if (!n)
		*why = "it is empty";
	else if (ref[0] == '-')
		*why = "it begins with \"-\"";
	for (size_t i = 0; !*why && i < n; i++) {
		unsigned char c = (unsigned char)ref[i];

		if (c <= ' ' || c == 0x7f)
			*why = "it holds a blank or a control character";
		else if (c >= 0x80)
			*why = "it holds a character outside ASCII";
	}
	if (*why)
		return -EINVAL;
	at = strchr(ref, '@');
	if (at && !image_digest(at + 1)) {
		*why = "its digest is not algorithm:hex (e.g. sha256: and 64 "
		       "hex digits; 32 to 128 of them)";
		return -EINVAL;
	}
	name_len = at ? (size_t)(at - ref) : n;
	/* the tag: after a ":" in the last part (a ":" before a "/" is
	 * the domain's port) */
	slash = NULL;
	for (size_t i = 0; i < name_len; i++)
		if (ref[i] == '/')
			slash = ref + i;
	colon = memchr(slash ? slash : ref, ':',
		       name_len - (size_t)((slash ? slash : ref) - ref));
	if (colon) {
		size_t tag = name_len - (size_t)(colon + 1 - ref);

		if (!tag || tag > TAG_MAX ||
		    !(is_alnum(colon[1]) || colon[1] == '_')) {
			*why = "its tag is not 1 to 128 of A-Z a-z 0-9 _ . - "
			       "beginning with a letter, digit or _";
			return -EINVAL;
		}
		for (size_t i = 1; i < tag; i++)
			if (!is_alnum(colon[1 + i]) &&
			    !strchr("_.-", colon[1 + i])) {
				*why = "its tag is not 1 to 128 of A-Z a-z 0-9 _ . "
				       "- beginning with a letter, digit or _";
				return -EINVAL;
			}
		name_len = (size_t)(colon - ref);
	}
	if (name_len > NAME_MAX_BYTES) {
		*why = "its name is longer than 255 bytes";
		return -EINVAL;
	}
	if (image_path(ref, name_len))
		return 0;
	slash = memchr(ref, '/', name_len);
	if (slash && image_domain(ref, (size_t)(slash - ref)) &&
	    image_path(slash + 1, name_len - (size_t)(slash + 1 - ref)))
		return 0;
	*why = "its name is not [domain/]path, a path being parts of lower-case "
	       "letters and digits joined by \".\", \"_\", \"__\" or \"-\", "
	       "between \"/\"";
	return -EINVAL;
}

/* ---- options (jobspec.h, "Options") ------------------------------------- */

bool jobspec_is_option(const char *arg)
{
	const char *p = arg + 1;
	bool digits = false;

	if (arg[0] != '-')
		return false;
	for (; is_digit(*p); p++)
		digits = true;
	if (*p == '.')
		for (p++; is_digit(*p); p++)
			digits = true;
	if (!digits)
		return true;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!is_digit(*p))
			return true;
		while (is_digit(*p))
			p++;
	}
	return *p != '\0';
}

/* ---- tags of a template, as template_lex.c finds them -------------------- */

/*
 * What is needed here of a template is where its tags are and which names
 * they read; template.h keeps its tree to itself, so this reads the text
 * again with the same rules: a tag begins at "{{", "{%" or "{#" (with an
 * optional "-" or "+"), a string literal inside {{ }} and {% %} may hold
 * their end, whitespace control is a "-" before the end.  Should this ever
 * read a text otherwise than the template's lexer, jobspec_arg_origin()
 * sees its render disagree and refuses; it never guesses.
 */
struct tag {
	size_t start, end;		/* "{{" .. past "}}" */
	size_t in_start, in_end;	/* inside, without whitespace control */
	char kind;			/* '{', '%' or '#' */
	bool lstrip, rstrip;		/* "-" after the opening, before the end */
};

static bool starts(const char *s, size_t n, size_t at, const char *word)
{
	size_t k = strlen(word);

	return at + k <= n && !memcmp(s + at, word, k);
}

static bool blank(char c)
{
	return c && strchr(" \t\n\r\f\v", c);
}

/* The next tag at or after `from`: 1, 0 when none, -EINVAL when one
 * begins and does not end. */
static int next_tag(const char *s, size_t n, size_t from, struct tag *t)
{
	size_t at = from, p;

	while (at + 1 < n && !(s[at] == '{' && s[at + 1] &&
			       strchr("{%#", s[at + 1])))
		at++;
	if (at + 1 >= n)
		return 0;
	t->start = at;
	t->kind = s[at + 1];
	p = at + 2;
	t->lstrip = p < n && s[p] == '-';
	if (p < n && (s[p] == '-' || s[p] == '+'))
		p++;
	t->in_start = p;
	t->rstrip = false;
	if (t->kind == '#') {
		/* "{#" at the very end: the lexer stops there, quietly */
		if (p >= n) {
			t->in_end = t->end = n;
			return 1;
		}
		while (p < n && !starts(s, n, p, "-#}") &&
		       !starts(s, n, p, "+#}") && !starts(s, n, p, "#}"))
			p++;
		if (p >= n)
			return -EINVAL;
		t->in_end = p;
		t->rstrip = s[p] == '-';
		t->end = p + (s[p] == '#' ? 2 : 3);
		return 1;
	}
	for (;;) {
		while (p < n && blank(s[p]))
			p++;
		if (p >= n)
			return -EINVAL;
		if (t->kind == '{' ? starts(s, n, p, "-}}") ||
				     starts(s, n, p, "}}")
				   : starts(s, n, p, "-%}") ||
				     starts(s, n, p, "+%}") ||
				     starts(s, n, p, "%}")) {
			t->in_end = p;
			t->rstrip = s[p] == '-';
			t->end = p + (s[p] == '-' || s[p] == '+' ? 3 : 2);
			return 1;
		}
		if (s[p] == '\'' || s[p] == '"') {
			char q = s[p];

			for (p++; p < n && s[p] != q; p++)
				if (s[p] == '\\' && p + 1 < n)
					p++;
			if (p >= n)
				return -EINVAL;
		}
		p++;
	}
}

static bool name_start(char c)
{
	return is_alpha(c) || c == '_';
}

static bool name_char(char c)
{
	return name_start(c) || is_digit(c);
}

/* Words of an expression that are no name it reads. */
static const char *const not_names[] = {
	"and", "or", "not", "is", "in", "if", "else", "elif", "for", "true",
	"false", "none", "True", "False", "None", NULL
};

static bool among(const char *const *words, const char *w, size_t n)
{
	for (; *words; words++)
		if (strlen(*words) == n && !memcmp(*words, w, n))
			return true;
	return false;
}

static int add_name(json_t *set, const char *s, size_t n)
{
	char *name = strndup(s, n);
	int ret = name && !json_object_set_new(set, name, json_true())
		  ? 0 : -ENOMEM;

	free(name);
	return ret;
}

/*
 * Every name expression s[0..n) reads, added to the set `names` (an
 * object): not an attribute (after "."), a filter (after "|"), a test
 * (after "is" or "is not"), a keyword argument (before a lone "="), a
 * keyword or a constant.  A name in a subscript (a[b]) is read: b.
 */
static int expr_names(const char *s, size_t n, json_t *names)
{
	char prev = ' ';	/* the last operator; 'w' after a word */
	bool test = false;	/* after "is" [not]: a test's name comes */
	size_t p = 0;

	while (p < n) {
		size_t k = p, q;
		bool skip;

		if (blank(s[p])) {
			p++;
			continue;
		}
		if (s[p] == '\'' || s[p] == '"') {
			char quote = s[p];

			for (p++; p < n && s[p] != quote; p++)
				if (s[p] == '\\' && p + 1 < n)
					p++;
			p++;
			prev = 'w';
			continue;
		}
		if (is_digit(s[p])) {
			while (p < n && (name_char(s[p]) || s[p] == '.'))
				p++;
			prev = 'w';
			continue;
		}
		if (!name_start(s[p])) {
			prev = s[p++];
			test = false;
			continue;
		}
		while (k < n && name_char(s[k]))
			k++;
		for (q = k; q < n && blank(s[q]); q++)
			;
		skip = prev == '.' || prev == '|' || test ||
		       (q < n && s[q] == '=' && !(q + 1 < n && s[q + 1] == '=')) ||
		       among(not_names, s + p, k - p);
		if (k - p == 2 && !memcmp(s + p, "is", 2))
			test = true;
		else if (!(test && k - p == 3 && !memcmp(s + p, "not", 3)))
			test = false;
		if (!skip && add_name(names, s + p, k - p) < 0)
			return -ENOMEM;
		prev = 'w';
		p = k;
	}
	return 0;
}

/* What an item's text says of its names. */
struct item_scan {
	struct tag *prints;	/* its {{ }}, in order */
	size_t nprints;
	json_t *binds;		/* loop target -> {names its for iterates} */
	json_t *reads;		/* every name a {{ }}, if, elif or for's
				 * iterable reads */
	json_t *targets;	/* every name a for binds */
};

static void scan_release(struct item_scan *sc)
{
	free(sc->prints);
	json_decref(sc->binds);
	json_decref(sc->reads);
	json_decref(sc->targets);
	memset(sc, 0, sizeof(*sc));
}

/* A {% %} tag's inside: "for a, b in <expr>", "if <expr>", "elif <expr>"
 * add what they read; the rest read nothing. */
static int scan_block(struct item_scan *sc, const char *s, size_t n)
{
	size_t p = 0, k;
	json_t *iterates = NULL, *mine = NULL;
	const char *t;
	json_t *v;
	int ret = 0;

	while (p < n && blank(s[p]))
		p++;
	for (k = p; k < n && name_char(s[k]); k++)
		;
	if ((k - p == 2 && !memcmp(s + p, "if", 2)) ||
	    (k - p == 4 && !memcmp(s + p, "elif", 4)))
		return expr_names(s + k, n - k, sc->reads);
	if (k - p != 3 || memcmp(s + p, "for", 3))
		return 0;
	/* its targets up to "in", then the iterable */
	iterates = json_object();
	mine = json_object();
	if (!iterates || !mine) {
		ret = -ENOMEM;
		goto out;
	}
	for (p = k; !ret && p < n;) {
		if (!name_start(s[p])) {
			p++;
			continue;
		}
		for (k = p; k < n && name_char(s[k]); k++)
			;
		if (k - p == 2 && !memcmp(s + p, "in", 2))
			break;
		ret = add_name(mine, s + p, k - p);
		p = k;
	}
	if (!ret)
		ret = expr_names(s + k, n - k, iterates);
	if (!ret && (json_object_update(sc->reads, iterates) < 0 ||
		     json_object_update(sc->targets, mine) < 0))
		ret = -ENOMEM;
	/* a target bound by several loops stands for all they iterate */
	json_object_foreach(mine, t, v) {
		json_t *had = json_object_get(sc->binds, t);

		if (ret)
			break;
		if (!had) {
			had = json_object();
			if (!had || json_object_set_new(sc->binds, t, had) < 0) {
				ret = -ENOMEM;
				break;
			}
		}
		if (json_object_update(had, iterates) < 0)
			ret = -ENOMEM;
	}
out:
	json_decref(iterates);
	json_decref(mine);
	return ret;
}

/* Scan `item`: -EINVAL when a tag does not end, -ENOMEM. */
static int scan_item(const char *item, size_t n, struct item_scan *sc)
{
	struct tag t;
	size_t pos = 0;
	int ret = 0, found;

	memset(sc, 0, sizeof(*sc));
	sc->binds = json_object();
	sc->reads = json_object();
	sc->targets = json_object();
	if (!sc->binds || !sc->reads || !sc->targets)
		ret = -ENOMEM;
	while (!ret && (found = next_tag(item, n, pos, &t)) != 0) {
		if (found < 0) {
			ret = found;
			break;
		}
		pos = t.end;
		if (t.kind == '%') {
			ret = scan_block(sc, item + t.in_start,
					 t.in_end - t.in_start);
		} else if (t.kind == '{') {
			struct tag *grown = realloc(sc->prints,
				(sc->nprints + 1) * sizeof(*grown));

			if (!grown) {
				ret = -ENOMEM;
				break;
			}
			sc->prints = grown;
			sc->prints[sc->nprints++] = t;
			ret = expr_names(item + t.in_start,
					 t.in_end - t.in_start, sc->reads);
		}
	}
	if (ret < 0)
		scan_release(sc);
	return ret;
}

/* The names print `k` reads, a loop's target standing also for what its
 * for iterates, into the set `out`. */
static int print_names(const char *item, const struct item_scan *sc,
		       size_t k, json_t *out)
{
	json_t *todo = json_array();
	const char *name;
	json_t *v;
	int ret;

	if (!todo)
		return -ENOMEM;
	ret = expr_names(item + sc->prints[k].in_start,
			 sc->prints[k].in_end - sc->prints[k].in_start, out);
	json_object_foreach(out, name, v)
		if (!ret && json_array_append_new(todo, json_string(name)) < 0)
			ret = -ENOMEM;
	/* a worklist: the set grows while it is walked */
	for (size_t i = 0; !ret && i < json_array_size(todo); i++) {
		const json_t *bound = json_object_get(sc->binds,
			json_string_value(json_array_get(todo, i)));

		json_object_foreach((json_t *)bound, name, v) {
			if (json_object_get(out, name))
				continue;
			if (json_object_set(out, name, json_true()) < 0 ||
			    json_array_append_new(todo, json_string(name)) < 0) {
				ret = -ENOMEM;
				break;
			}
		}
	}
	json_decref(todo);
	return ret;
}

/* ---- where an argument begins ------------------------------------------ */

/* Bytes that mark a print's output in the item's marked render: control
 * bytes Python's str.isspace() does not take (the template strips
 * whitespace around "-" tags, and a mark must not be). */
static const char mark_bytes[] = "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f"
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x7f";

/*
 * The item with each {{ X }} made  OPEN k CLOSE {{ X }} END  (k its index
 * in decimal), its whitespace control moved to empty prints around it
 * ({{- '' }} before, {{ '' -}} after) so the marks do not stop it.
 */
static int marked_item(const char *item, size_t n,
		       const struct item_scan *sc, const char *marks,
		       struct sbuf *out)
{
	size_t pos = 0;
	int ret = 0;

	for (size_t k = 0; !ret && k < sc->nprints; k++) {
		const struct tag *t = &sc->prints[k];

		ret = sbuf_add(out, item + pos, t->start - pos);
		if (!ret && t->lstrip)
			ret = sbuf_addstr(out, "{{- '' }}");
		if (!ret)
			ret = sbuf_addf(out, "%c%zu%c{{ ", marks[0], k,
					marks[2]);
		if (!ret)
			ret = sbuf_add(out, item + t->in_start,
				       t->in_end - t->in_start);
		if (!ret)
			ret = sbuf_addf(out, " }}%c", marks[1]);
		if (!ret && t->rstrip)
			ret = sbuf_addstr(out, "{{ '' -}}");
		pos = t->end;
	}
	return ret ? ret : sbuf_add(out, item + pos, n - pos);
}

/*
 * The print whose output holds the first byte of `arg`, from the marked
 * render `m`: its index, -1 for the item's own text, -2 when `m` without
 * its marks is not `arg` (the item was read otherwise than the template
 * reads it).
 */
static long first_byte_print(const struct sbuf *m, const char *marks,
			     const char *arg, size_t len, size_t nprints)
{
	long at = -1, first = -2;
	size_t i = 0, j = 0;

	while (i < m->len) {
		char c = m->buf[i];

		if (c == marks[0]) {
			size_t k = 0, d = 0;

			for (i++; i < m->len && is_digit(m->buf[i]) && d < 9;
			     i++, d++)
				k = k * 10 + (size_t)(m->buf[i] - '0');
			if (!d || i >= m->len || m->buf[i] != marks[2] ||
			    k >= nprints || at != -1)
				return -2;
			at = (long)k;
			i++;
		} else if (c == marks[1]) {
			if (at == -1)
				return -2;
			at = -1;
			i++;
		} else {
			if (j >= len || c != arg[j])
				return -2;
			if (!j)
				first = at;
			i++;
			j++;
		}
	}
	return j == len && at == -1 ? first : -2;
}

/* `s` (n bytes) into out, cut to fit `size` at a character with "...". */
static void shown(const char *s, size_t n, char *out, size_t size)
{
	size_t cut = n + 1 > size ? utf8_cut(s, n, size - 4) : n;

	snprintf(out, size, "%.*s%s", (int)cut, s, cut < n ? "..." : "");
}

int jobspec_arg_origin(const char *item, const json_t *context,
		       const char *arg, size_t len, const json_t *options,
		       char *expr, size_t size)
{
	struct item_scan sc = { 0 };
	struct sbuf src = SBUF_INIT, out = SBUF_INIT;
	struct ferr terr = FERR_INIT;
	struct tmpl *t = NULL;
	json_t *names = NULL;
	char marks[3];
	size_t n = strlen(item), nm = 0;
	long k;
	int ret;

	*expr = '\0';
	if (!jobspec_is_option(arg) || item[0] == '-')
		return 0;
	/* three marks the argument does not hold: none of its bytes can
	 * pass for one */
	for (const char *b = mark_bytes; *b && nm < 3; b++)
		if (!memchr(arg, *b, len))
			marks[nm++] = *b;
	if (nm < 3)
		return 1;
	ret = scan_item(item, n, &sc);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		return 1;
	ret = marked_item(item, n, &sc, marks, &src);
	if (!ret)
		ret = tmpl_parse(&t, src.buf, src.len, &terr);
	if (!ret)
		ret = tmpl_render(t, context, &out, &terr);
	if (ret == -ENOMEM)
		goto out;
	k = ret < 0 ? -2 : first_byte_print(&out, marks, arg, len, sc.nprints);
	ret = 1;
	if (k == -2)
		goto out;
	ret = 0;
	if (k == -1)
		goto out;
	names = json_object();
	if (!names || print_names(item, &sc, (size_t)k, names) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	{
		const char *name;
		json_t *v;

		json_object_foreach(names, name, v) {
			bool listed = false;
			size_t i;
			json_t *o;

			json_array_foreach(options, i, o)
				listed = listed ||
					 !strcmp(json_string_value(o), name);
			if (!listed)
				ret = 1;
		}
	}
	if (ret == 1) {
		const struct tag *p = &sc.prints[k];
		size_t a = p->in_start, b = p->in_end;
		char inner[160];

		while (a < b && blank(item[a]))
			a++;
		while (b > a && blank(item[b - 1]))
			b--;
		shown(item + a, b - a, inner, sizeof(inner));
		snprintf(expr, size, "{{ %s }}", inner);
	}
out:
	tmpl_free(t);
	json_decref(names);
	scan_release(&sc);
	sbuf_release(&src);
	sbuf_release(&out);
	return ret;
}

/* ---- the container runner's words --------------------------------------- */

void jobspec_runner_free(char **words)
{
	for (size_t i = 0; words && words[i]; i++)
		free(words[i]);
	free(words);
}

/* Word `i` (1-based in messages) parses and reads only image, job_dir. */
static int check_word(const char *w, size_t i, struct ferr *err)
{
	struct ferr terr = FERR_INIT;
	struct item_scan sc;
	struct tmpl *t = NULL;
	char show[96], where[FERR_MESSAGE_MAX];
	const char *name;
	json_t *v;
	int ret;

	shown(w, strlen(w), show, sizeof(show));
	if (strlen(w) > JOBSPEC_ITEM_MAX)
		return ferr_set(err, -EINVAL, "word %zu is %zu bytes; at most "
				"%d", i, strlen(w), JOBSPEC_ITEM_MAX);
	ret = tmpl_parse(&t, w, strlen(w), &terr);
	tmpl_free(t);
	if (ret == -ENOMEM)
		return ret;
	if (ret < 0)
		return ferr_set(err, -EINVAL, "word %zu \"%s\": %s", i, show,
				ferr_format(&terr, where, sizeof(where)));
	ret = scan_item(w, strlen(w), &sc);
	if (ret < 0)	/* it parsed: its tags end */
		return ret;
	json_object_foreach(sc.reads, name, v) {
		if (!strcmp(name, "image") || !strcmp(name, "job_dir") ||
		    !strcmp(name, "loop") || json_object_get(sc.targets, name))
			continue;
		ret = ferr_set(err, -EINVAL, "word %zu \"%s\" reads \"%s\": the "
			       "runner sees only image and job_dir", i, show,
			       name);
		break;
	}
	scan_release(&sc);
	return ret;
}

int jobspec_runner_words(const char *text, char ***out, struct ferr *err)
{
	size_t n = strlen(text), p = 0, count = 0;
	char **words = NULL;
	int ret = 0;

	*out = NULL;
	while (!ret && p < n) {
		size_t start;
		char **grown;

		if (blank(text[p])) {
			p++;
			continue;
		}
		/* a word runs to a blank outside a tag */
		for (start = p; !ret && p < n && !blank(text[p]);) {
			struct tag t;
			int found = 0;

			if (text[p] == '{' && p + 1 < n &&
			    strchr("{%#", text[p + 1]))
				found = next_tag(text, n, p, &t);
			if (found > 0) {
				p = t.end;
			} else if (found < 0) {
				p = n;	/* the template's parser says why */
			} else if (strchr("'\"\\", text[p])) {
				ret = ferr_set(err, -EINVAL, "word %zu holds a "
					       "quote or a backslash: no shell "
					       "reads the runner, its words are "
					       "split at blanks", count + 1);
			} else {
				p++;
			}
		}
		if (ret)
			break;
		if (count == JOBSPEC_ARGV_MAX) {
			ret = ferr_set(err, -EINVAL, "more than %d words",
				       JOBSPEC_ARGV_MAX);
			break;
		}
		grown = realloc(words, (count + 2) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		words = grown;
		words[count] = strndup(text + start, p - start);
		words[count + 1] = NULL;
		if (!words[count]) {
			ret = -ENOMEM;
			break;
		}
		ret = check_word(words[count], count + 1, err);
		count++;
	}
	if (!ret && !count)
		ret = ferr_set(err, -EINVAL, "it has no words");
	if (ret < 0) {
		jobspec_runner_free(words);
		return ret;
	}
	*out = words;
	return 0;
}
