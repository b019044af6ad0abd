"""Differential test of flowfs's JSON module against Python's json.

Random documents (seeded, so a failure reproduces) are written as raw JSON
text in many spellings, piped through json_echo (fjson_parse then
fjson_dump), and the bytes compared with

    json.dumps(json.loads(text), indent=2, ensure_ascii=False)

Broken variants of the same texts check that fjson refuses exactly what
Python refuses, apart from the documented divergences (see core/fjson.h).

json_echo is built by meson; the build dir is $FLOWFS_BUILD_DIR (default
<repo>/build-test).
"""

import json
import math
import os
import random
import re
import struct
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("FLOWFS_BUILD_DIR", REPO / "build-test"))
ECHO = BUILD / "tests" / "unit" / "json_echo"

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

# What Python accepts and fjson refuses on purpose (core/fjson.h).
DIVERGENCE_MESSAGES = (
    "is out of range",          # integers beyond int64
    "is too large",             # reals that overflow a double
    "surrogate",                # lone UTF-16 surrogate escapes
    "must not contain \\u0000",  # NUL inside object keys
    "is not a JSON value",      # NaN, Infinity, -Infinity
    "invalid number '-Infinity'",
    "nested too deeply",
)

POSITIONED = re.compile(r"^line (\d+), column (\d+): (.+)$", re.S)


@pytest.fixture(scope="module")
def echo():
    if not (ECHO.is_file() and os.access(ECHO, os.X_OK)):
        pytest.fail(
            f"json_echo is missing: {ECHO} does not exist. Build it first "
            f"(meson setup {BUILD} {REPO} && ninja -C {BUILD}) or point "
            f"FLOWFS_BUILD_DIR at a build directory that has it.")
    return ECHO


def echo_batch(echo, texts):
    """One json_echo -b process for many documents; list of answers: the
    dump, or b'!' + the error message."""
    data = b"".join(b"%d\n%s" % (len(t), t) for t in texts)
    p = subprocess.run([str(echo), "-b"], input=data, capture_output=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    out, pos = [], 0
    buf = p.stdout
    while pos < len(buf):
        kind = buf[pos:pos + 1]
        nl = buf.index(b"\n", pos)
        n = int(buf[pos + 1:nl])
        body = buf[nl + 1:nl + 1 + n]
        assert kind in (b"+", b"!") and len(body) == n
        out.append(body if kind == b"+" else b"!" + body)
        pos = nl + 1 + n
    assert len(out) == len(texts)
    return out


def python_dump(text_bytes):
    """Python's answer, or None when json.loads refuses the text."""
    try:
        value = json.loads(text_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    try:
        return json.dumps(value, indent=2, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return None  # lone surrogates cannot be written as UTF-8


# --- random values -------------------------------------------------------

SPECIAL_CHARS = ['"', "\\", "/", "\n", "\r", "\t", "\b", "\f", "\x00",
                 "\x01", "\x1f", "\x7f", "\x80", "\xa0", "\u2028", "\u2029",
                 "\ufeff", "\ufffd", "\uffff", "\U0001f600", "\U00010000",
                 "\U0010ffff", "é", "中", "'"]


def rand_char(rng, allow_nul=True):
    r = rng.random()
    if r < 0.45:
        c = chr(rng.randint(0x20, 0x7e))
    elif r < 0.60:
        c = rng.choice(SPECIAL_CHARS)
    elif r < 0.70:
        c = chr(rng.randint(0, 0x1f))
    elif r < 0.85:
        cp = rng.randint(0x80, 0xffff)
        while 0xd800 <= cp <= 0xdfff:
            cp = rng.randint(0x80, 0xffff)
        c = chr(cp)
    else:
        c = chr(rng.randint(0x10000, 0x10ffff))
    if c == "\x00" and not allow_nul:
        return "a"
    return c


def rand_str(rng, allow_nul=True):
    n = rng.choice([0, 1, 2, 3, 5, 8, 13, 40])
    return "".join(rand_char(rng, allow_nul) for _ in range(n))


NICE_FLOATS = [0.0, -0.0, 0.1, 0.5, 1.0, 6.0, 100.0, 1e16, 1e15, 1e-4, 1e-5,
               9999999999999998.0, 1234567890123456.0, 1e22, 1e23, 5e-324,
               2.2250738585072014e-308, 1.7976931348623157e308, 123456789.123,
               0.30000000000000004, 2.5e-5, 4.35, 1e300, 1e-300]


def rand_float(rng):
    r = rng.random()
    if r < 0.5:
        while True:
            f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
            if math.isfinite(f):
                return f
    if r < 0.65:
        return rng.choice(NICE_FLOATS) * rng.choice([1, -1])
    if r < 0.8:  # short decimals near the fixed/exponent switch points
        return float(f"{rng.randint(1, 99999)}e{rng.randint(-10, 20)}")
    if r < 0.9:
        return float(rng.randint(-2**60, 2**60))
    return round(rng.uniform(-1e6, 1e6), rng.randint(0, 8))


def rand_int(rng):
    r = rng.random()
    if r < 0.3:
        return rng.randint(INT64_MIN, INT64_MAX)
    if r < 0.4:
        return rng.choice([INT64_MIN, INT64_MAX, 0, -1, 1, 2**53, -(2**53)])
    return rng.randint(-1000, 1000)


def rand_value(rng, depth=0):
    r = rng.random()
    if depth < 5 and r < 0.35:
        if rng.random() < 0.5:
            return ("array", [rand_value(rng, depth + 1)
                              for _ in range(rng.choice([0, 1, 2, 3, 6]))])
        items = []
        for _ in range(rng.choice([0, 1, 2, 3, 6])):
            items.append((rand_str(rng, allow_nul=False),
                          rand_value(rng, depth + 1)))
        if items and rng.random() < 0.3:  # a repeated key in the text
            items.insert(rng.randint(0, len(items)),
                         (rng.choice(items)[0], rand_value(rng, depth + 1)))
        return ("object", items)
    r = rng.random()
    if r < 0.3:
        return ("str", rand_str(rng))
    if r < 0.55:
        return ("float", rand_float(rng))
    if r < 0.8:
        return ("int", rand_int(rng))
    return ("lit", rng.choice(["true", "false", "null"]))


# --- writing them as text in many spellings ------------------------------

SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def write_char(rng, c):
    cp = ord(c)
    if c in SHORT_ESCAPES and (cp < 0x20 or rng.random() < 0.8 or
                               c in '"\\'):
        return SHORT_ESCAPES[c]
    if cp < 0x20 or rng.random() < 0.1:
        if cp >= 0x10000:
            v = cp - 0x10000
            hi, lo = 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff)
            fmt = rng.choice(["\\u%04x\\u%04x", "\\u%04X\\u%04X"])
            return fmt % (hi, lo)
        return rng.choice(["\\u%04x", "\\u%04X"]) % cp
    if c == "/" and rng.random() < 0.5:
        return "\\/"
    return c


def write_str(rng, s):
    return '"' + "".join(write_char(rng, c) for c in s) + '"'


def write_float(rng, f):
    r = rng.random()
    if r < 0.5:
        t = repr(f)
    elif r < 0.7:
        t = "%.17e" % f
    elif r < 0.8:
        t = "%.25e" % f   # more digits than needed, still rounds to f
    elif r < 0.9:
        t = ("%.17E" % f).replace("E+", "E")
    else:
        t = "%.17g" % f
    if not re.search(r"[.eE]", t):
        t += ".0"
    return t


def ws(rng):
    if rng.random() < 0.7:
        return ""
    return "".join(rng.choice(" \t\n\r") for _ in range(rng.randint(1, 3)))


def write_value(rng, v):
    kind, x = v
    if kind == "array":
        if not x:
            return "[" + ws(rng) + "]"
        return "[" + ",".join(ws(rng) + write_value(rng, e) + ws(rng)
                              for e in x) + "]"
    if kind == "object":
        if not x:
            return "{" + ws(rng) + "}"
        return "{" + ",".join(
            ws(rng) + write_str(rng, k) + ws(rng) + ":" + ws(rng) +
            write_value(rng, e) + ws(rng) for k, e in x) + "}"
    if kind == "str":
        return write_str(rng, x)
    if kind == "float":
        return write_float(rng, x)
    if kind == "int":
        return str(x)
    return x


def documents(seed, count):
    rng = random.Random(seed)
    return [(ws(rng) + write_value(rng, rand_value(rng)) + ws(rng))
            .encode("utf-8") for _ in range(count)]


# --- tests ---------------------------------------------------------------

def compare(echo, texts):
    ours = echo_batch(echo, texts)
    for text, got in zip(texts, ours):
        want = python_dump(text)
        assert want is not None, f"generator produced invalid JSON: {text!r}"
        assert got == want, (f"for {text!r}\n ours:   {got!r}\n python: "
                             f"{want!r}")


@pytest.mark.parametrize("seed", range(4))
def test_random_documents_match_python(echo, seed):
    compare(echo, documents(seed, 1500))


def test_top_level_scalars_and_empties(echo):
    texts = [b"[]", b"{}", b" [ ] ", b"{\n}", b"0", b"-0", b"-0.0", b"1E2",
             b"0e0", b'""', b"true", b"null", b"[[], {}, [[]], {\"\": {}}]",
             b'{"a": 1, "b": 2, "a": 3}', b'{"a": {"x": 1}, "a": []}',
             b'"\\u0000\\u001f\\u007f\\u2028\\ud83d\\ude00"']
    compare(echo, texts)


def test_every_single_character(echo):
    """Each code point (a sample of the astral planes), raw and escaped."""
    cps = [c for c in range(0x30000) if not 0xd800 <= c <= 0xdfff]
    cps += list(range(0xe0000, 0x110000, 97)) + [0x10ffff]
    texts = []
    for i in range(0, len(cps), 64):
        chunk = "".join(chr(c) for c in cps[i:i + 64])
        raw = "".join(SHORT_ESCAPES.get(c, c) if ord(c) >= 0x20 or c in
                      SHORT_ESCAPES else "\\u%04x" % ord(c) for c in chunk)
        texts.append(json.dumps([chunk]).encode())  # all \u escaped
        key = raw.replace("\\u0000", "")  # NUL in keys: a divergence
        texts.append(('{"' + key + '": "' + raw + '"}').encode())
    compare(echo, texts)


def test_random_float_bits(echo):
    rng = random.Random(1234)
    floats = []
    while len(floats) < 20000:
        f = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(f):
            floats.append(f)
    # subnormals and values near powers of ten are where shortcuts break
    floats += [5e-324 * rng.randint(1, 2**52) for _ in range(2000)]
    floats += [float(f"{rng.randint(1, 10**17)}e{rng.randint(-340, 290)}")
               for _ in range(4000)]
    texts = [("[" + ", ".join(repr(f) for f in floats[i:i + 100]) + "]")
             .encode() for i in range(0, len(floats), 100)]
    compare(echo, texts)


def test_large_graph_document(echo):
    """A parameters.json-sized document (10,000 nodes and edges)."""
    rng = random.Random(7)
    nodes = [{"id": f"node-${i}", "node_uuid": f"{rng.getrandbits(128):032x}",
              "label": rand_str(rng, allow_nul=False),
              "position_x": rand_float(rng), "position_y": float(i),
              "input_parameters": [{"name": "input_file", "type": "file",
                                    "value": None}],
              "output_parameters": []} for i in range(10000)]
    edges = [{"id": f"edge-${i}", "source_node_id": f"node-${i}",
              "target_node_id": f"node-${i + 1}"} for i in range(9999)]
    doc = {"nodes": nodes, "edges": edges, "meta": {"template_uuid": "t"}}
    compare(echo, [json.dumps(doc).encode()])


def mutations(texts, seed):
    rng = random.Random(seed)
    out = []
    for t in texts:
        for _ in range(3):
            b = bytearray(t)
            op = rng.random()
            if not b:
                continue
            i = rng.randrange(len(b))
            if op < 0.35:
                del b[i]
            elif op < 0.6:
                b.insert(i, rng.choice(b'{}[],:"\\ 0e.-tn\n\x00\xff\xc3'))
            elif op < 0.8:
                b = b[:i]
            else:
                b[i] = rng.randrange(256)
            out.append(bytes(b))
    return out


def test_refuses_what_python_refuses(echo):
    texts = mutations(documents(99, 1500), 5)
    texts += [b"", b" \n", b"[", b"]", b"{]", b"[1,]", b'{"a":1,}', b"[01]",
              b"[1.]", b"[.5]", b"[+1]", b"tru", b"'a'", b"[1] [2]",
              b"\xef\xbb\xbf[]", b'"\xed\xa0\x80"', b'"\xc0\x80"',
              b'"\xf4\x90\x80\x80"', b"\x00", b"[\x00]", b'"a\x00"']
    ours = echo_batch(echo, texts)
    for text, got in zip(texts, ours):
        want = python_dump(text)
        if not got.startswith(b"!"):
            assert want is not None, f"accepted what Python refuses: {text!r}"
            assert got == want, f"for {text!r}: {got!r} != {want!r}"
            continue
        msg = got[1:].decode("utf-8", errors="replace")
        if want is not None:
            assert any(d in msg for d in DIVERGENCE_MESSAGES), (
                f"refused what Python accepts: {text!r}: {msg}")
        if msg != "the document is empty":
            m = POSITIONED.match(msg)
            assert m, f"error without a position: {msg!r} for {text!r}"
            line = int(m.group(1))
            assert 1 <= line <= text.count(b"\n") + 1, (text, msg)


def test_known_divergences_are_refused_clearly(echo):
    cases = {
        b"[1, 123456789012345678901]":
            "line 1, column 5: integer 123456789012345678901 is out of range",
        b"-9223372036854775809":
            "line 1, column 1: integer -9223372036854775809 is out of range",
        b"[1e400]": "line 1, column 2: number 1e400 is too large",
        b'["\\ud800"]': "line 1, column 2: string contains '\\uD800'",
        b'{"\\u0000": 1}': "line 1, column 2: object keys must not contain",
        b"NaN": "line 1, column 1: 'NaN' is not a JSON value",
        b"[Infinity]": "line 1, column 2: 'Infinity' is not a JSON value",
    }
    ours = echo_batch(echo, list(cases))
    for (text, prefix), got in zip(cases.items(), ours):
        assert python_dump(text) is not None or b"ud800" in text
        assert got.decode().startswith("!" + prefix), (text, got)


def test_single_document_mode(echo):
    ok = subprocess.run([str(echo)], input=b'{"a": [1.5]}',
                        capture_output=True)
    assert ok.returncode == 0
    assert ok.stdout == b'{\n  "a": [\n    1.5\n  ]\n}'
    bad = subprocess.run([str(echo)], input=b'{\n  "a": 1\n  "b": 2\n}',
                         capture_output=True)
    assert bad.returncode == 1
    assert bad.stdout == b""
    assert bad.stderr == b"line 3, column 3: expected ',' or '}'\n"
