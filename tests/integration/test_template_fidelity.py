"""Differential test of core/template against Python Jinja2.

Many templates x many contexts are rendered by tests/unit/tmpl_render (one
batch process) and by Debian's Jinja2 3.1 (`jinja2.Environment()`,
`env.from_string(t).render(**ctx)`).  Whenever ours renders, the bytes must be
identical; whenever Jinja2 raises, ours must fail too.  Ours may refuse what
Jinja2 accepts only outside the subset of core/template.h: the random
templates drawn from the subset's grammar must never be refused.

Seeded randomness, so a failure reproduces.  tmpl_render is built by meson;
the build dir is $FLOWFS_BUILD_DIR (default <repo>/build-test).
"""

import json
import os
import random
import subprocess
from pathlib import Path

import jinja2
import pytest

from conftest import DEFAULT_PROMPT

# Jinja2 itself warns (DeprecationWarning) on the odd escapes the generated
# templates hold; that is the oracle talking, not flowfs.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FLOWFS_BUILD_DIR", REPO / "build-test"))
RENDER = BUILD / "tests" / "unit" / "tmpl_render"
SKILLS = REPO.parent / "shared" / "fixtures" / "skill-runner"

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

ENV = jinja2.Environment()



@pytest.fixture(scope="module")
def render():
    if not (RENDER.is_file() and os.access(RENDER, os.X_OK)):
        pytest.fail(
            f"tmpl_render is missing: {RENDER} does not exist. Build it "
            f"first (meson setup {BUILD} {REPO} && ninja -C {BUILD}) or "
            f"point FLOWFS_BUILD_DIR at a build directory that has it.")
    return RENDER


def ours(render, cases):
    """[(template, context)] -> [(kind, text)]: '+' output, '!' parse
    error, '?' render error."""
    parts = []
    for t, ctx in cases:
        tb = t.encode("utf-8")
        cb = json.dumps(ctx).encode("utf-8")
        parts.append(b"%d\n%s%d\n%s" % (len(tb), tb, len(cb), cb))
    p = subprocess.run([str(render), "-b"], input=b"".join(parts),
                       capture_output=True, timeout=600)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    out, pos, buf = [], 0, p.stdout
    while pos < len(buf):
        kind = chr(buf[pos])
        nl = buf.index(b"\n", pos)
        n = int(buf[pos + 1:nl])
        out.append((kind, buf[nl + 1:nl + 1 + n].decode("utf-8")))
        pos = nl + 1 + n
    assert len(out) == len(cases)
    return out


def jinja(t, ctx):
    try:
        return ("+", ENV.from_string(t).render(**ctx))
    except Exception as e:  # what Jinja2 raises is the point
        return ("!", f"{type(e).__name__}: {e}")


def compare(render, cases):
    """Returns (identical, refused list, mismatch list)."""
    identical, refused, mismatched = 0, [], []
    for (t, ctx), mine in zip(cases, ours(render, cases)):
        theirs = jinja(t, ctx)
        if mine[0] == "+" and theirs[0] == "+":
            if mine[1] == theirs[1]:
                identical += 1
            else:
                mismatched.append((t, ctx, mine, theirs))
        elif mine[0] == "+":
            mismatched.append((t, ctx, mine, theirs))
        elif theirs[0] == "+":
            refused.append((t, ctx, mine, theirs))
    return identical, refused, mismatched


def show(items, n=5):
    return "\n".join(
        f"template={t!r}\n  context={json.dumps(c)[:300]}\n  ours={m!r}\n"
        f"  jinja2={j!r}" for t, c, m, j in items[:n])


# --- contexts -------------------------------------------------------------

WEIRD_STRINGS = [
    "", " ", "plain", "it's", 'say "hi"', "both ' and \"", "back\\slash",
    "tab\there", "new\nline", "cr\rlf\r\n", "nul\x00byte", "\x7f\x1b\x01",
    "héllo wörld", "中文字符", "emoji 😀 🎉", "zero\u200bwidth",
    "soft\xadhyphen", "line\u2028sep", "nbsp\xa0x", "\u3000ideo\u3000",
    "combining e\u0301", "private \ue000", "ﬁ ligature", "straße",
    "İstanbul", "ǅ titlecase", "<b>&amp;</b>", "  padded  ", "\t\n x \x0b",
    "\x1c\x1dseps\x1e\x1f", "\x85next", "unassigned \u0378", "astral 𝔘",
    "\U000e0001 tag", "{{ not a tag }}", "{% nor this %}",
]

NUMBERS = [0, 1, -1, 42, INT64_MAX, INT64_MIN, INT64_MAX - 1, 2**53 + 1,
           0.0, -0.0, 0.1, 1.5, -2.25, 1e16, 1e15, 123456789012345678.0,
           1e-5, 1e-4, 5e-324, 1.7976931348623157e308, 1e22, 2.0, 100.0,
           3.141592653589793, 1 / 3]


def contexts():
    rng = random.Random(20240601)
    ctxs = [
        {},
        {"input": {}, "parameter": {}, "skill": {"id": "empty"}},
        {
            "input": {"input_file": "/mnt/s1/uploads/input_file",
                      "query": "what's up", "n": 3},
            "parameter": {"divisor": 2, "language": "中文", "ratio": 0.5,
                          "flags": [True, False, None], "opts": {}},
            "skill": {"id": "demo", "version": "1.0.0",
                      "engines": ["gemini", "codex"],
                      "entrypoint": {"prompts": {"gemini": "x"}}},
            "skill_id": "demo", "run_dir": "/mnt/s1",
            "params_json": json.dumps({"input": {"n": 3}}, indent=2),
        },
        {"a": WEIRD_STRINGS, "b": NUMBERS, "x": {"a": 1, "b": [1, {"k": "v"}]},
         "name": "n", "nested": [[[]], [{}], {"a": {"b": {"a": [None]}}}]},
    ]
    for _ in range(8):
        ctxs.append({k: random_value(rng, 3) for k in
                     ("a", "b", "x", "input", "parameter", "k")})
    return ctxs


KEYS = ["a", "b", "name", "id", "k", "x", "nested", "value", "path", "n0"]


def random_value(rng, depth):
    r = rng.random()
    if depth <= 0 or r < 0.45:
        return rng.choice(WEIRD_STRINGS + NUMBERS + [True, False, None])
    if r < 0.7:
        return [random_value(rng, depth - 1)
                for _ in range(rng.randrange(4))]
    return {rng.choice(KEYS + WEIRD_STRINGS[:8]): random_value(rng, depth - 1)
            for _ in range(rng.randrange(4))}


# --- random templates from the subset's grammar ---------------------------

STRING_LITERALS = [
    "''", "'a'", '"b"', "'it\\'s'", '"say \\"x\\""', "'\\n\\t\\\\'",
    "'\\x41\\u00e9\\U0001F600'", "'\\101\\0'", "'é中'", "'<&>'",
    "'\\q'", "' '", "'a' 'b'", '"a"\'b\'', "'{{ x }}'", "'%}'",
]
NUMBER_LITERALS = ["0", "1", "-1", "42", "9223372036854775807",
                   "-9223372036854775808", "1.5", "-0.0", "0.1", "1e16",
                   "1.5e3", "2E-5", "1e-4", "00", "3.0"]
CONSTS = ["true", "false", "none", "True", "False", "None"]
NAMES = ["a", "b", "x", "k", "name", "nested", "input", "parameter", "skill",
         "missing", "nope"]


class Gen:
    def __init__(self, rng):
        self.rng = rng
        self.loop_vars = []
        self.in_loop = 0

    def ws(self):
        return self.rng.choice(["", " ", " ", "  ", "\n"])

    def sp(self):
        return self.rng.choice([" ", " ", "  ", "\n", "\t"])

    def literal(self):
        return self.rng.choice(STRING_LITERALS * 2 + NUMBER_LITERALS +
                               CONSTS)

    def name(self):
        names = NAMES + self.loop_vars * 3
        return self.rng.choice(names)

    def primary(self, depth):
        r = self.rng.random()
        if r < 0.25:
            return self.literal()
        if r < 0.35 and depth > 0:
            return "(" + self.ws() + self.expr(depth - 1) + self.ws() + ")"
        if r < 0.42 and self.in_loop:
            return "loop." + self.rng.choice(
                ["index", "index0", "revindex", "revindex0", "first",
                 "last", "length", "nothere"])
        e = self.name()
        for _ in range(self.rng.choice([0, 0, 1, 1, 2, 3])):
            r = self.rng.random()
            if r < 0.5:
                e += "." + self.rng.choice(KEYS)
            elif r < 0.65:
                e += "." + self.rng.choice(["0", "1", "2"])
            elif depth > 0:
                e += "[" + self.ws() + self.rng.choice([
                    "'" + self.rng.choice(KEYS) + "'", "0", "1", "-1", "5",
                    "true", "1.0", "none",
                    self.expr(depth - 1)]) + self.ws() + "]"
        return e

    def filtered(self, depth):
        e = self.primary(depth)
        for _ in range(self.rng.choice([0, 0, 0, 1, 1, 2])):
            e += self.ws() + "|" + self.ws() + self.filter(depth)
        if self.rng.random() < 0.1:
            e += self.sp() + "is" + self.sp() + self.rng.choice(
                ["defined", "not defined", "undefined", "not undefined"])
        return e

    def arg(self, depth):
        if depth > 0 and self.rng.random() < 0.3:
            return self.expr(depth - 1)
        return self.literal()

    def filter(self, depth):
        r = self.rng.random()
        f = self.rng.choice(["default", "d", "tojson", "length", "count",
                             "join", "upper", "lower", "trim"])
        if f in ("length", "count", "upper", "lower"):
            return f if r < 0.8 else f + "()"
        if f in ("default", "d"):
            return self.rng.choice([
                f, f + "(" + self.arg(depth) + ")",
                f + "(" + self.arg(depth) + ", " + self.rng.choice(
                    ["true", "false", "1", "''"]) + ")",
                f + "(" + self.arg(depth) + ", boolean=true)",
                f + "(default_value=" + self.arg(depth) + ")",
            ])
        if f == "tojson":
            return self.rng.choice([
                "tojson", "tojson()", "tojson(2)", "tojson(indent=4)",
                "tojson(0)", "tojson('\\t')", "tojson(none)", "tojson(-1)",
                "tojson(true)"])
        if f == "join":
            return self.rng.choice([
                "join", "join(', ')", "join('-')", "join(d='|')",
                "join(" + self.arg(depth) + ")"])
        return self.rng.choice(["trim", "trim()", "trim('ab ')",
                                "trim(none)", "trim(chars='x\\n')",
                                "trim(" + self.arg(depth) + ")"])

    def expr(self, depth):
        r = self.rng.random()
        if depth <= 0 or r < 0.5:
            return self.filtered(depth)
        if r < 0.6:
            return "not" + self.sp() + self.expr(depth - 1)
        if r < 0.75:
            return (self.filtered(depth - 1) + self.sp() +
                    self.rng.choice(["and", "or"]) + self.sp() +
                    self.expr(depth - 1))
        if r < 0.9:
            e = self.filtered(depth - 1)
            for _ in range(self.rng.choice([1, 1, 2])):
                e += self.ws() + self.rng.choice(["==", "!="]) + self.ws() + \
                    self.filtered(depth - 1)
            return e
        return self.filtered(depth)

    def text(self):
        return self.rng.choice([
            "", "", " ", "\n", "  \n  ", "text", "é中😀", "\t", "a{b", "}",
            "%", "#", "\r\n", "\u3000", "\xa0 ", "x\n\n", " \r ", "}}",
            "-", "line1\nline2\n"])

    def tag(self, inner, kind="%"):
        left = self.rng.choice(["", "", "", "-", "+"] if kind == "%"
                               else ["", "", "-"])
        right = self.rng.choice(["", "", "", "-", "+"] if kind == "%"
                                else ["", "", "-"])
        close = "}" if kind == "{" else kind
        return ("{" + kind + left + self.sp() + inner + self.sp() + right +
                close + "}")

    def block(self, depth, n):
        out = []
        for _ in range(n):
            out.append(self.stmt(depth))
        return "".join(out)

    def stmt(self, depth):
        r = self.rng.random()
        if r < 0.3:
            return self.text()
        if r < 0.6 or depth <= 0:
            return self.tag(self.expr(2), "{")
        if r < 0.65:
            return self.tag(self.rng.choice([" comment ", "", "{{ x }}",
                                             "multi\nline"]), "#")
        if r < 0.82:
            s = self.tag("if" + self.sp() + self.expr(2))
            s += self.block(depth - 1, self.rng.randrange(3))
            for _ in range(self.rng.choice([0, 0, 1, 2])):
                s += self.tag("elif" + self.sp() + self.expr(2))
                s += self.block(depth - 1, self.rng.randrange(3))
            if self.rng.random() < 0.5:
                s += self.tag("else")
                s += self.block(depth - 1, self.rng.randrange(3))
            return s + self.tag("endif")
        names = ["v", "w", "item", "k", "a"]
        if self.rng.random() < 0.4:
            tv = self.rng.sample(names, 2)
            head = "for " + tv[0] + ", " + tv[1] + " in " + self.rng.choice(
                ["x", "a", "input", "parameter", "nested", "k", "b",
                 "missing"] + self.loop_vars) + ".items()"
        else:
            tv = self.rng.sample(names, self.rng.choice([1, 1, 1, 2]))
            head = "for " + ", ".join(tv) + " in " + self.rng.choice(
                [self.filtered(1), self.name(), self.name() + "." +
                 self.rng.choice(KEYS)])
        s = self.tag(head)
        saved = self.loop_vars
        self.loop_vars = saved + tv
        self.in_loop += 1
        s += self.block(depth - 1, self.rng.randrange(1, 4))
        self.in_loop -= 1
        self.loop_vars = saved
        if self.rng.random() < 0.3:
            s += self.tag("else") + self.block(depth - 1, 2)
        return s + self.tag("endfor")


def generated(n, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        g = Gen(rng)
        t = g.block(3, rng.randrange(1, 6))
        if rng.random() < 0.3:
            t += rng.choice(["\n", "\r\n", "\n\n", "\r"])
        out.append(t)
    return out


# --- fixed templates ------------------------------------------------------

HANDWRITTEN = [
    DEFAULT_PROMPT,
    "Hello {{ input.query }}!",
    "{{ input }}|{{ parameter }}|{{ skill }}",
    "{% for k, v in parameter.items() %}{{ loop.index }}. {{ k }}={{ v|tojson }}\n{% endfor %}",
    "{% for e in skill.engines %}{{ e|upper }}{% if not loop.last %}, {% endif %}{% endfor %}",
    "{% for x in missing %}never{% else %}empty{% endfor %}",
    "{% for c in 'héllo' %}[{{ c }}]{% endfor %}",
    "{% for k in skill %}{{ k }};{% endfor %}",
    "{% for a, b in [[1, 2]] %}{% endfor %}",
    "{{ params_json }}",
    "{{ input|tojson(indent=2) }}",
    "{{ parameter|tojson }}",
    "{{ input.query|default('none given') }} {{ input.nope|default('none given') }}",
    "{{ ''|default('empty', true) }}{{ 0|default('zero', boolean=True) }}",
    "{{ skill.engines|join(', ') }} {{ skill.engines|length }}",
    "{{ '  x  '|trim }}|{{ 'xxhixx'|trim('x') }}",
    "{% if input.n is defined and input.n == 3 %}three{% endif %}",
    "{% if input.nope is not defined %}undef{% endif %}",
    "{{ missing }}|{{ missing is defined }}|{{ missing|length }}",
    "{{ missing.attr }}",
    "{{ missing['k'] }}",
    "{% for x in 42 %}{% endfor %}",
    "{% for k, v in skill.engines.items() %}{% endfor %}",
    "{% for k, v in missing.items() %}{% endfor %}",
    "{{ 1|tojson(indent=1.5) }}",
    "{{ 'x'|tojson(indent=1.5) }}",
    "{{ [1] }}",
    "{{ x|capitalize }}",
    "{% set x = 1 %}",
    "{% macro m() %}{% endmacro %}",
    "{{ input.items() }}",
    "{{ input.items }}",
    "{% for x in y %}",
    "{% if x %}",
    "{{ x",
    "{# unterminated",
    "{{ 1 + 1 }}",
    "{{ x if y else z }}",
    "{{ 'unterminated }}",
    "{% endfor %}",
    "{% if a %}{% else %}{% elif b %}{% endif %}",
    "{{ '\\xZZ' }}",
    "{{ '\\ud800' }}",
    "{{ 99999999999999999999 }}",
    "{{ 1e400 }}",
    "  {%- if true -%}  yes  {%- endif -%}  ",
    "a {#- comment -#} b {#+ c +#} d",
    "{%+ if true +%}\n x \n{%- endif %}",
    "line\n",
    "line\n\n",
    "line\r\n",
    "\r\n\r\n",
    "{{ 'a' == 'a' == 'a' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ none != false }}",
    "{{ 9223372036854775807 == 9223372036854775807.0 }}",
    "{{ 9007199254740993 == 9007199254740992.0 }}",
    "{{ x.a == {'a': 1} }}",
    "{{ nested == nested }}",
    "{{ a.0 }}{{ a[-1] }}{{ a.1.0 }}{{ a['0'] }}{{ a[true] }}{{ a[1.0] }}",
    "{{ x.keys }}",
    "{{ x['keys'] }}",
    "{{ loop }}",
    "{% for i in b %}{{ loop.cycle }}{% endfor %}",
    "{% for i in b %}{{ loop.nothere }}{% endfor %}",
    "{{ range }}",
    "{{ 'ΑΣ'|lower }}",
    "{{ 'ß'|upper }}{{ 'ﬁ'|upper }}{{ 'İ'|lower }}{{ 'ǅ'|upper }}{{ 'ǅ'|lower }}",
    "{#", "text  {#-", "{{ x }} {#+\n", "{# x", "{#--#} {#",
    "{{ 1|tojson(90199259) }}{{ []|length|tojson(indent=90199259) }}",
    "{{ b|tojson(1.5) }}",
]


def skill_templates():
    out = []
    if not SKILLS.is_dir():
        return out
    for d in sorted(SKILLS.iterdir()):
        runner = d / "assets" / "runner.json"
        if runner.is_file():
            doc = json.loads(runner.read_text())
            out.extend((doc.get("entrypoint") or {}).get("prompts", {})
                       .values())
        md = d / "SKILL.md"
        if md.is_file():
            out.append(md.read_text())
    return out


def skill_contexts():
    out = []
    if not SKILLS.is_dir():
        return out
    for d in sorted(SKILLS.iterdir()):
        runner = d / "assets" / "runner.json"
        if not runner.is_file():
            continue
        doc = json.loads(runner.read_text())
        inp = {"input_file": f"/mnt/flowfs/{d.name}/uploads/input_file",
               "csv_file": "/tmp/data.csv", "divisor": 3}
        par = {"language": "中文", "column": "price", "divisor": 7}
        out.append({"input": inp, "parameter": par, "skill": doc,
                    "skill_id": doc["id"], "run_dir": f"/mnt/flowfs/{d.name}",
                    "skill_dir": f"/usr/share/flowfs/skills/{d.name}",
                    "params_json": json.dumps({"input": inp, "parameter": par},
                                              indent=2)})
    return out


# --- the tests --------------------------------------------------------------

def test_fixed_templates_match_jinja2(render):
    templates = HANDWRITTEN + skill_templates()
    ctxs = contexts() + skill_contexts()
    cases = [(t, c) for t in templates for c in ctxs]
    identical, refused, mismatched = compare(render, cases)
    print(f"fixed: {len(cases)} cases, {identical} identical, "
          f"{len(refused)} refused")
    assert not mismatched, show(mismatched)
    assert identical > len(cases) // 3


def test_real_skill_prompts_render(render):
    templates = skill_templates()
    if not templates:
        pytest.skip("../shared/fixtures/skill-runner is not there")
    cases = [(t, c) for t in templates for c in skill_contexts()]
    identical, refused, mismatched = compare(render, cases)
    assert not mismatched, show(mismatched)
    assert not refused, show(refused)
    assert identical == len(cases)


@pytest.mark.parametrize("seed", range(4))
def test_generated_templates_match_jinja2(render, seed):
    templates = generated(600, seed)
    ctxs = contexts()
    rng = random.Random(seed)
    cases = [(t, rng.choice(ctxs)) for t in templates for _ in range(2)]
    identical, refused, mismatched = compare(render, cases)
    print(f"generated seed {seed}: {len(cases)} cases, {identical} "
          f"identical, {len(refused)} refused")
    assert not mismatched, show(mismatched)
    # everything the generator writes is inside the subset
    assert not refused, show(refused)
    # and the generator is not only writing errors
    assert identical > len(cases) // 6


@pytest.mark.parametrize("seed", range(2))
def test_mutated_templates_never_differ(render, seed):
    """Broken and out-of-subset variants: ours may refuse, never differ."""
    rng = random.Random(1000 + seed)
    pieces = ["{{", "}}", "{%", "%}", "{#", "#}", "-", "+", "|", ".", "[",
              "]", "(", ")", "'", '"', "\\", ",", "=", "==", " if ",
              " for ", " in ", " not ", " and ", " is ", " endfor ",
              " endif ", " else ", "x", "0", "1.5", "\n", " ", "items()"]
    ctxs = contexts()
    cases = []
    for t in generated(500, 50 + seed):
        for _ in range(rng.randrange(1, 4)):
            i = rng.randrange(len(t) + 1)
            j = min(len(t), i + rng.randrange(4))
            t = t[:i] + rng.choice(pieces + [""]) + t[j:]
        cases.append((t, rng.choice(ctxs)))
    identical, refused, mismatched = compare(render, cases)
    print(f"mutated seed {seed}: {len(cases)} cases, {identical} identical, "
          f"{len(refused)} refused")
    assert not mismatched, show(mismatched)


def fuzz_context():
    """The fixed context of tests/fuzz/fuzz_template.c (C adjacent string
    literals read the same as Python's)."""
    src = (REPO / "tests" / "fuzz" / "fuzz_template.c").read_text()
    start = src.index("context_json[] =") + len("context_json[] =")
    literal = src[start:src.index(";", start)]
    return json.loads(eval("(" + literal.replace("\n", " ") + ")"))


def test_fuzz_corpus_matches_jinja2(render):
    ctx = fuzz_context()
    cases = []
    for f in sorted((REPO / "tests" / "fuzz" / "corpus" / "template").iterdir()):
        try:
            cases.append((f.read_bytes().decode("utf-8"), ctx))
        except UnicodeDecodeError:
            continue
    identical, refused, mismatched = compare(render, cases)
    print(f"fuzz corpus: {len(cases)} cases, {identical} identical, "
          f"{len(refused)} refused")
    assert not mismatched, show(mismatched)
    assert identical > len(cases) // 3
