"""Issue 5: the built-in datcom skill through a real mount — binding,
request.json refusals, status, and output/for005.dat (DESIGN §6,
../shared/datcom/CARDS.md).  Plain file I/O only.

Every deck read is passed through check_cards(), a card-rule checker written
here from CARDS.md and DESIGN §6 alone, and compared value by value with the
parameters written (expected_values(), fmt()), never with output of the code
under test.
"""

import decimal
import errno
import json
import os
import random
import re
import stat
import time

import pytest

import datcom_oracle
from conftest import (REPO, bind, errname, oserror, put, put_json, read_bytes,
                      status_json, status_of, write_bytes)

SKILL_SRC = REPO / "core" / "skills" / "datcom"
EXAMPLES = REPO.parent / "shared" / "datcom" / "examples"

# tests/unit/test_datcom.c pc9_text: angles of attack 1..6 deg, Mach 0.5489,
# 10,000 ft.
PC9 = {
    "case_id": "PC-9 TURBOPROP TRAINER", "dim": "FT",
    "nalpha": 6, "alschd": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    "nmach": 1, "mach": [0.5489], "nalt": 1, "alt": [10000.0],
    "wt": 4960.0, "sref": 175.3, "cbarr": 5.58, "blref": 33.43,
    "xcg": 10.9, "zcg": 0.0, "xw": 8.7, "zw": -1.2, "aliw": 1.0,
    "xh": 28.5, "zh": 0.6, "alih": 0.0, "xv": 27.9, "zv": 0.9,
    "nx": 8, "x_coords": [0.0, 1.5, 3.5, 7.0, 12.0, 18.0, 25.0, 33.27],
    "r_coords": [0.0, 1.1, 1.6, 1.9, 1.9, 1.5, 0.9, 0.25],
    "zu_coords": [0.0, 1.0, 1.7, 2.5, 2.6, 2.0, 1.2, 0.5],
    "zl_coords": [0.0, -1.0, -1.5, -1.8, -1.8, -1.3, -0.6, -0.1],
    "itype": 2, "method": 1,
    "wing_naca": "64A415", "wing_chrdtp": 3.6, "wing_sspn": 16.7,
    "wing_sspne": 14.9, "wing_chrdr": 7.2, "wing_savsi": 2.0,
    "wing_chstat": 0.25, "wing_twista": -2.0, "wing_dhdadi": 7.0,
    "wing_type": 1,
    "htail_naca": "0012", "htail_chrdtp": 2.0, "htail_sspn": 6.6,
    "htail_sspne": 5.9, "htail_chrdr": 3.7, "htail_savsi": 8.0,
    "htail_chstat": 0.25, "htail_twista": 0.0, "htail_dhdadi": 0.0,
    "htail_type": 1,
    "vtail_naca": "0010", "vtail_chrdtp": 2.1, "vtail_sspn": 5.6,
    "vtail_sspne": 5.2, "vtail_chrdr": 5.0, "vtail_savsi": 35.0,
    "vtail_chstat": 0.25, "vtail_type": 1,
}

LISTS = ("alschd", "mach", "alt", "x_coords", "r_coords", "zu_coords",
         "zl_coords", "rnnub")


def pc9(**changes):
    p = dict(PC9)
    p.update(changes)
    return {k: v for k, v in p.items() if v is not None}


# -- an independent card-rule checker (CARDS.md) -----------------------------

NAME = r"[A-Z][A-Z0-9]{0,5}"
# DATCOM's input check (rvalue.f) marks an exponent of 0 an error
NUM_ANY = re.compile(r"^[+-]?(\d+\.\d*|\.\d+)(E[+-]?0*[1-9]\d*)?$")
ASSIGN = re.compile(rf"^({NAME})(?:\((\d+)\))?=(.*)$")
CONTROL = [re.compile(p) for p in (
    r"^CASEID( [ -~]{1,73})?$", r"^DIM (FT|IN|M|CM)$", r"^DERIV (DEG|RAD)$",
    r"^DAMP$", r"^BUILD$", r"^SAVE$", r"^TRIM$", r"^PART$", r"^PLOT$",
    r"^(DUMP|WRITE|NAMELIST)( [ -~]+)?$",
    r"^NACA[- ][WHVF][- ][1456S][- ][ -~]+$", r"^NEXT CASE$")]


class Deck:
    """What check_cards() read: cards in order."""

    def __init__(self):
        self.cards = []        # ("control", line) | ("namelist", name, items)

    def controls(self):
        return [c[1] for c in self.cards if c[0] == "control"]

    def namelists(self, name=None):
        return [c for c in self.cards
                if c[0] == "namelist" and (name is None or c[1] == name)]

    def values(self, nl):
        """{VAR: [spellings]} of the (single) namelist nl."""
        found = self.namelists(nl)
        assert len(found) == 1, f"{len(found)} ${nl} namelists"
        out = {}
        for var, index, vals in found[0][2]:
            assert var not in out, f"${nl} {var} given twice"
            out[var] = (index, vals)
        return out


def check_number(tok, where, ours):
    assert "e" not in tok, f"{where}: lower-case exponent in {tok!r}"
    assert NUM_ANY.match(tok), f"{where}: {tok!r} is not a DATCOM REAL"
    if not ours:
        return
    assert tok == fmt(float(tok)), \
        f"{where}: {tok!r}, not {fmt(float(tok))!r} (README: numbers)"


def check_cards(data, ours=True):
    """Assert every card rule on deck bytes; returns a Deck.  `ours`: the
    numbers must also be in flowfs's own format (DESIGN §6)."""
    assert isinstance(data, bytes)
    text = data.decode("ascii")
    assert text.endswith("\n"), "deck does not end with a newline"
    assert "\r" not in text and "\t" not in text, "CR or TAB in the deck"
    lines = text[:-1].split("\n")
    deck = Deck()
    open_nl = None          # [name, items] while a namelist is open
    cur = None              # the variable bare values continue
    for no, line in enumerate(lines, 1):
        where = f"line {no} {line!r}"
        assert line.strip(), f"line {no}: blank line"
        assert len(line) <= 80, f"{where}: {len(line)} columns"
        assert all(" " <= ch <= "~" for ch in line), f"{where}: character"
        assert "!" not in line and line[0] not in "*#$", f"{where}: comment"
        if line[0] != " ":
            assert open_nl is None, f"{where}: control card inside a namelist"
            assert any(p.match(line) for p in CONTROL), \
                f"{where}: not a legal control card"
            deck.cards.append(("control", line))
            continue
        m = re.match(rf"^ \$({NAME}) (.*)$", line)
        if m:
            assert open_nl is None, f"{where}: previous namelist not closed"
            open_nl = [m.group(1), []]
            cur = None
            seg = m.group(2)
        else:
            assert line.startswith("  ") and line[2] != " " \
                and line[2] != "$" or line == "  $", \
                f"{where}: neither a namelist start nor a continuation"
            assert open_nl is not None, f"{where}: continuation outside one"
            assert lines[no - 2].endswith(","), \
                f"{where}: previous line does not end with a comma"
            seg = line[2:]
        closes = seg.endswith("$")
        body = seg[:-1] if closes else seg
        assert "$" not in body, f"{where}: `$` inside"
        pieces = body.split(",")
        if not closes:
            assert pieces[-1] == "", f"{where}: wraps other than after a comma"
            pieces = pieces[:-1]
        elif pieces[-1] == "":
            pieces = pieces[:-1]       # trailing comma before `$`
        for p in pieces:
            assert p and p == p.strip(), f"{where}: empty or padded item {p!r}"
            a = ASSIGN.match(p)
            if a:
                cur = [a.group(1), int(a.group(2) or 0), []]
                open_nl[1].append(cur)
                val = a.group(3)
            else:
                assert cur is not None, f"{where}: value {p!r} without a name"
                assert re.match(r"^[-+.\d]", p), f"{where}: item {p!r}"
                val = p
            if val in (".TRUE.", ".FALSE."):
                cur[2].append(val)
                continue
            check_number(val.split("*")[-1], where, ours)
            cur[2].append(val)
        if closes:
            deck.cards.append(("namelist", open_nl[0],
                               [tuple(v) for v in open_nl[1]]))
            open_nl, cur = None, None
    assert open_nl is None, "namelist left open at the end"
    assert lines[-1] == "NEXT CASE", "the deck does not end with NEXT CASE"
    return deck


# -- what the deck must say for given parameters ------------------------------

def fmt(v):
    """The README's number format, restated with Python's own formatting:
    the shortest decimal that reads back as the value (Python's repr
    gives its digits), in plain form (X.0 for whole values) when that has
    at most 9 digits before the point, 9 after it from its first non-zero
    one (DATCOM's reader adds each part up in a 32-bit integer) and 64
    characters; else as a mantissa with one digit before the point, or as
    many as leave 9 after it, and E<exponent> (never 0)."""
    v = float(v)
    if v == 0:
        return "0.0"
    d = decimal.Decimal(repr(v))
    plain = format(d, "f")
    if "." not in plain:
        plain += ".0"
    whole, frac = plain.lstrip("-").split(".")
    if len(whole.lstrip("0")) <= 9 and len(frac.lstrip("0")) <= 9 and \
            len(plain) <= 64:
        return plain
    sign, digits, exp = d.as_tuple()
    digits = "".join(map(str, digits)).rstrip("0") or "0"
    first = len(d.as_tuple().digits) + exp - 1      # power of the first
    k = len(digits) - 9 if len(digits) > 10 else 1
    return f"{'-' if sign else ''}{digits[:k]}.{digits[k:] or '0'}" \
        f"E{first - k + 1}"


def as_list(v):
    if isinstance(v, str):
        return [float(x) for x in v.split(",")]
    return [float(x) for x in v]


NACA_CARD = {   # designation given -> <series>-<designation> on the card
    "0012": "4-0012", "2412": "4-2412", "0010": "4-0010",
    "0012-25": "4-0012-25", "23012": "5-23012", "63-415": "6-63-415",
    "64A204": "6-64A204", "64A415": "6-64A415", "631-012": "6-631-012",
    "64A204 A=0.8": "6-64A204 A=0.8", "16-212": "1-16-212",
    "S-1-40.0-9.0": "S-1-40.0-9.0", "4-0012": "4-0012",
    "NACA 2412": "4-2412", "naca-64a204": "6-64A204",
}

SURFACES = (("wing", "WGPLNF", "W"), ("htail", "HTPLNF", "H"),
            ("vtail", "VTPLNF", "V"))
PLANFORM = ("chrdtp", "sspn", "sspne", "chrdr", "savsi", "chstat", "twista",
            "dhdadi", "type", "chrdbp", "sspnop", "savso", "dhdado")


def expected_values(p):
    """{namelist: {VAR: (index, [spellings])}} the parameters call for."""
    def one(v):
        return (0, [fmt(v)])

    def arr(v):
        return (1, [fmt(x) for x in as_list(v)])

    # what DATCOM needs is there; what it does not, only when given
    flt = {"NMACH": one(p["nmach"]), "MACH": arr(p["mach"]),
           "ALT": arr(p["alt"]),
           "NALPHA": one(p["nalpha"]), "ALSCHD": arr(p["alschd"])}
    for k in ("nalt", "wt", "stmach", "tsmach"):
        if k in p:
            flt[k.upper()] = one(p[k])
    if "loop" in p:
        flt["LOOP"] = one(p["loop"])
    if "rnnub" in p:
        flt["RNNUB"] = arr(p["rnnub"])
    out = {"FLTCON": flt}
    opt = {k.upper(): one(p[k]) for k in ("sref", "cbarr", "blref") if k in p}
    if opt:
        out["OPTINS"] = opt
    out["SYNTHS"] = {k.upper(): one(p[k]) for k in (
        "xcg", "zcg", "xw", "zw", "aliw", "xh", "zh", "alih", "xv", "zv")
        if k in p}
    out["BODY"] = {"NX": one(p["nx"]), "X": arr(p["x_coords"])}
    for k, var in (("r_coords", "R"), ("zu_coords", "ZU"),
                   ("zl_coords", "ZL")):
        if k in p:
            out["BODY"][var] = arr(p[k])
    for k in ("itype", "method"):
        if k in p:
            out["BODY"][k.upper()] = one(p[k])
    for pre, nl, _ in SURFACES:
        if any(k.startswith(f"{pre}_") for k in p):   # the surface is there
            out[nl] = {k.upper(): one(p[f"{pre}_{k}"]) for k in PLANFORM
                       if f"{pre}_{k}" in p}
    return out


def expected_controls(p):
    """The control cards, as a set (their order is the writer's choice but
    NEXT CASE, checked by check_cards)."""
    cards = {"NEXT CASE"}
    if "case_id" in p:
        cards.add(f"CASEID {p['case_id']}")
    # the skill's schema gives dim its default, FT
    cards.add(f"DIM {p.get('dim', 'FT')}")
    for pre, _, s in SURFACES:
        if pre + "_naca" in p:
            cards.add(f"NACA-{s}-{NACA_CARD[p[pre + '_naca']]}")
    if "deriv" in p:
        cards.add(f"DERIV {p['deriv']}")
    if p.get("damp"):
        cards.add("DAMP")
    if p.get("build"):
        cards.add("BUILD")
    return cards


def check_deck_for(data, p):
    """Card rules, then every value the parameters call for, nothing else."""
    deck = check_cards(data)
    if "case_id" in p:
        assert deck.controls()[0] == f"CASEID {p['case_id']}"
    ctl = deck.controls()
    assert len(ctl) == len(set(ctl)) and set(ctl) == expected_controls(p), \
        f"control cards {ctl}"
    exp = expected_values(p)
    assert sorted(c[1] for c in deck.namelists()) == sorted(exp)
    for nl, want in exp.items():
        assert deck.values(nl) == want, nl
    return deck


# -- session helpers -----------------------------------------------------------

def request(session, params, inputs=None):
    body = {"parameter": params}
    if inputs is not None:
        body["input"] = inputs
    return put_json(session / "request.json", body)


# Every deck read here also goes through the real DATCOM when it is built
# (issue 28; datcom_oracle.py): no input-error marker, and a table with
# numbers where status says ready without a note.  Where it is not built,
# test_datcom_real.py skips saying why.
DATCOM = None if datcom_oracle.unavailable() or \
    not datcom_oracle.binary_path().is_file() else datcom_oracle.binary_path()
_judged = {}


def through_datcom(data, session, breakdowns=None):
    """judge() of the deck `data` of `session`; a breakdown fails, unless
    `breakdowns` (a list) is given: it gets the deck and what broke."""
    if DATCOM is None:
        return None
    noted = bool(status_json(session)["notes"])
    key = (data, noted)
    if key not in _judged:
        r = datcom_oracle.run(DATCOM, data)
        try:
            _judged[key] = (datcom_oracle.judge(r, noted), r)
        except AssertionError as e:
            raise AssertionError(f"{e}\n{data.decode()}") from None
    verdict, r = _judged[key]
    if verdict == "broke":
        if breakdowns is None:
            raise AssertionError(
                f"DATCOM broke down on a deck flowfs said ready for "
                f"({datcom_oracle.breakdown_kind(r)}): {r.summary()}\n"
                f"{data.decode()}")
        breakdowns.append((data, datcom_oracle.breakdown_kind(r)))
    return verdict


def deck_of(session, breakdowns=None, datcom=True):
    """Read output/for005.dat; st_size (stat and fstat) equals bytes read;
    through_datcom() checks it (unless `datcom` is false)."""
    path = session / "output" / "for005.dat"
    size = os.stat(path).st_size
    fd = os.open(path, os.O_RDONLY)
    try:
        fsize = os.fstat(fd).st_size
        chunks = []
        while True:
            b = os.read(fd, 4096)
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    assert size == len(data) == fsize, (size, fsize, len(data))
    if datcom:
        through_datcom(data, session, breakdowns)
    return data


def absent(session):
    out = session / "output"
    assert oserror(os.stat, out / "for005.dat") == errno.ENOENT
    assert oserror(open, out / "for005.dat", "rb") == errno.ENOENT
    assert "for005.dat" not in os.listdir(out)


@pytest.fixture
def dsession(make_flowfs, isolated_config):
    """A session bound to datcom."""
    fs = make_flowfs()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    return s


@pytest.fixture
def pc9_session(dsession):
    assert request(dsession, PC9) == 0
    return dsession


# -- the skill -------------------------------------------------------------------

def test_skill_listed_and_bindable(make_flowfs, isolated_config):
    fs = make_flowfs()
    listed = fs.mnt / ".flowfs" / "skills" / "datcom"
    assert "datcom" in os.listdir(fs.mnt / ".flowfs" / "skills")
    for rel in ("SKILL.md", "assets/runner.json",
                "assets/parameter.schema.json", "assets/input.schema.json",
                "assets/output.schema.json"):
        assert read_bytes(listed / rel) == (SKILL_SRC / rel).read_bytes(), rel
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    doc = json.loads(read_bytes(s / "session.json"))
    runner = json.loads((SKILL_SRC / "assets" / "runner.json").read_text())
    assert (doc["skill"], doc["engine"]) == ("datcom", runner["engines"][0])
    assert read_bytes(s / "skill" / "SKILL.md") == \
        (SKILL_SRC / "SKILL.md").read_bytes()
    manifest = json.loads(read_bytes(s / "output" / ".manifest.json"))
    # DATCOM's results (issue 30) are there with --datcom only
    assert [(m["pattern"], m["required"]) for m in manifest] == [
        ("for005.dat", True), ("for006.dat", False),
        ("coefficients.csv", False), ("coefficients.svg", False)]


# -- PC-9 walk-through -------------------------------------------------------------

def test_pc9_walk_through(pc9_session):
    s = pc9_session
    assert "for005.dat" in os.listdir(s / "output")
    st = os.stat(s / "output" / "for005.dat")
    # the owner may write it (a copy of the session comes back so):
    # what is written is dropped
    assert stat.S_IMODE(st.st_mode) == 0o644
    data = deck_of(s)
    lines = data.decode().split("\n")
    assert lines[0] == "CASEID PC-9 TURBOPROP TRAINER"
    assert lines[1] == "DIM FT"
    assert lines[2].startswith(
        " $FLTCON NMACH=1.0,MACH(1)=0.5489,NALT=1.0,ALT(1)=10000.0,"
        "NALPHA=6.0,")
    for card in ("NACA-W-6-64A415", "NACA-H-4-0012", "NACA-V-4-0010"):
        assert card in lines
    deck = check_deck_for(data, PC9)
    assert deck.values("FLTCON")["ALSCHD"] == \
        (1, ["1.0", "2.0", "3.0", "4.0", "5.0", "6.0"])
    assert deck.values("BODY")["X"][1][-1] == "33.27"
    assert status_of(s) == (["ready"], [])
    assert put(s / "output" / "for005.dat", b"x") == 0
    assert deck_of(s) == data
    assert status_of(s) == (["ready"], [(
        "output/for005.dat",
        "flowfs makes this file: the 1 bytes written to it were dropped")])


def test_checker_catches_broken_decks(pc9_session):
    """The checker itself must be able to fail: break a real deck in every
    way CARDS.md forbids."""
    good = deck_of(pc9_session)
    check_cards(good)
    text = good.decode()
    broken = [
        text.replace("NEXT CASE\n", ""),
        text.replace("DIM FT\n", "DIM FT\n\n"),
        text.replace("DIM FT", "DIM\tFT"),
        text.replace("DIM FT\n", "DIM FT\n* comment\n"),
        text.replace("WT=4960.0", "WT=4960"),
        text.replace("WT=4960.0", "WT=4.96e3"),
        text.replace("WT=4960.0", "WT=4960.00"),
        text.replace("MACH(1)=0.5489", "MACH(1)=5.489E-1"),
        text.replace("WT=4960.0", "WT=4960.0E0"),
        text.replace("WT=4960.0", "WT=4.96E3"),
        text.replace(" $OPTINS", "$OPTINS"),
        text.replace(" $OPTINS ", " $optins "),
        text.replace("BLREF=33.43$", "BLREF=33.43"),
        text.replace("\n  ALSCHD", "\n ALSCHD"),
        text.replace("NALPHA=6.0,\n", "NALPHA=6.0\n"),
        text.replace("NALPHA=6.0,\n  ALSCHD(1)=1.0,", "NALPHA=6.0,ALSCHD(1)=1."
                     "\n  0,"),
        text.replace("CASEID PC-9 TURBOPROP TRAINER", "CASEID " + "X" * 74),
        text.replace("XV=27.9,ZV=0.9$", "XV=27.9,ZV=0.9,XY=" + "1" * 80 +
                     ".0$"),
        text.replace("NACA-W-6-64A415", "NACA W 7 64A415"),
        text.replace("DIM FT", "DIM FEET"),
    ]
    for b in broken:
        assert b != text
        with pytest.raises(AssertionError):
            check_cards(b.encode())


def test_incomplete_request_has_no_deck(dsession):
    s = dsession
    absent(s)
    assert status_of(s)[0][0].startswith("missing required parameters: ")
    assert request(s, pc9(case_id=None, wing_naca=None, htail_naca=None,
                          vtail_type=None)) == 0
    absent(s)
    problems, _ = status_of(s)
    # case_id is optional (DATCOM needs no CASEID card)
    assert problems == ["missing required parameters: wing_naca, "
                        "htail_naca, vtail_type"]
    # the optional ones are not missing: what DATCOM does without them
    # (its defaults) is left to it, so the deck leaves them out
    optional = dict(sref=None, cbarr=None, blref=None, dim=None,
                    case_id=None, nalt=None, wt=None, zu_coords=None,
                    zl_coords=None, itype=None, method=None)
    assert request(s, pc9(**optional)) == 0
    assert status_of(s) == (["ready"], [])
    deck = check_deck_for(deck_of(s), pc9(**optional))
    text = deck_of(s).decode()
    assert not deck.namelists("OPTINS")
    assert "DIM FT" in text and "CASEID" not in text
    for var in ("NALT", "WT", "ZU(", "ZL(", "ITYPE", "METHOD"):
        assert var not in text, var
    # the body's radii are not optional without S from a deck (issue 28:
    # with X alone DATCOM computes nothing): accepted, and named in status
    assert request(s, pc9(r_coords=None, **optional)) == 0
    absent(s)
    assert status_of(s)[0] == [
        "output/for005.dat: parameter.r_coords: The body is given by its "
        "stations X alone: DATCOM needs its radii R (r_coords), or its "
        "areas S in a $BODY of a deck, and without either prints THE BODY "
        "IS NOT ADEQUATELY DEFINED and computes nothing"]
    assert request(s, pc9(nx=None)) == 0
    absent(s)
    assert status_of(s)[0] == ["missing required parameters: nx"]


# -- refusals ----------------------------------------------------------------------

REFUSALS = [
    ({"nalpha": 25}, "parameter.nalpha: 25 is greater than the maximum of 20"),
    ({"alschd": [1.0, 2.0, 3.0, 4.0, 5.0]},
     "The number of angles of attack (5) must match NALPHA (6)"),
    ({"alschd": "1,2,3,4,5"},
     "The number of angles of attack (5) must match NALPHA (6)"),
    ({"alschd": [1.0, 2.0, 2.0, 4.0, 5.0, 6.0]},
     "The angles of attack (ALSCHD) must be strictly ascending: value 3 "
     "(2.0) does not exceed value 2 (2.0)"),
    ({"x_coords": [0.0, 1.5, 3.5, 7.0, 18.0, 12.0, 25.0, 33.27]},
     "The body stations (X) must be ascending: value 6 (12.0) is less than "
     "value 5 (18.0)"),
    ({"wing_sspne": 20.0},
     "The wing's exposed semi-span SSPNE (wing_sspne = 20.0) must not exceed "
     "its semi-span SSPN (wing_sspn = 16.7)"),
    ({"wing_chstat": 1.5},
     "parameter.wing_chstat: 1.5 is greater than the maximum of 1"),
    ({"wing_type": 4}, "parameter.wing_type: 4 is greater than the maximum "
     "of 3"),
    ({"wing_naca": "12"}, 'NACA-W of the wing (wing_naca): "12" is not a '
     "NACA designation DATCOM reads (*"),
    ({"alschd": "1,2,3,abc,5,6"}, 'ALSCHD (alschd) is not a list of numbers: '
     'item 4 ("abc") is not a number'),
    ({"xcg": 1e300}, "XCG (xcg) is 1e+300, beyond what a DATCOM REAL holds "
     "(about 3.4E38)"),
]


@pytest.mark.parametrize("changes,message", REFUSALS,
                         ids=[str(i) for i in range(len(REFUSALS))])
def test_refusals(pc9_session, changes, message):
    s = pc9_session
    before_req = read_bytes(s / "request.json")
    before_deck = deck_of(s)
    body = json.dumps({"parameter": pc9(**changes)})
    # once through a with-block, once with os-level calls: close says EINVAL
    with pytest.raises(OSError) as e:
        with open(s / "request.json", "w") as f:
            f.write(body)
    assert e.value.errno == errno.EINVAL, errname(e.value.errno)
    fd = os.open(s / "request.json", os.O_WRONLY | os.O_TRUNC)
    os.write(fd, body.encode())
    assert oserror(os.close, fd) == errno.EINVAL
    assert read_bytes(s / "request.json") == before_req
    assert deck_of(s) == before_deck
    problems, log = status_of(s)
    # the refusal is state until request.json is written well (issue 29)
    assert problems == [f"request.json: your last write was refused:"
                        f" {log[-1][1]}; the file still holds the earlier"
                        f" version"]
    assert len(log) == 2 and log[0] == log[1]
    path, got = log[-1]
    assert path == "request.json"
    if message.endswith("*"):       # datcom.h gives only the start
        assert got.startswith(message[:-1]), got
    else:
        assert got == message


def test_missing_values_accepted_but_present_ones_checked(dsession):
    s = dsession
    assert request(s, {"nalpha": 6, "alschd": [1, 2, 3, 4, 5, 6]}) == 0
    assert put_json(s / "request.json", {"parameter": {
        "nalpha": 6, "alschd": [1, 2, 3]}}) == errno.EINVAL
    assert status_of(s)[1][-1] == (
        "request.json",
        "The number of angles of attack (3) must match NALPHA (6)")
    assert json.loads(read_bytes(s / "request.json"))["parameter"] == \
        {"nalpha": 6, "alschd": [1, 2, 3, 4, 5, 6]}
    absent(s)


# -- lists, options, units -------------------------------------------------------

def test_comma_separated_lists_give_the_same_deck(dsession):
    s = dsession
    assert request(s, PC9) == 0
    arrays = deck_of(s)
    strings = {k: ",".join(repr(float(x)) for x in PC9[k])
               for k in LISTS if k in PC9}
    assert request(s, pc9(**strings)) == 0
    assert deck_of(s) == arrays
    spaced = pc9(alschd=" 1, 2.0 ,3,4 , 5,6.0 ", mach="0.5489",
                 alt="1e4", x_coords="0,1.5,3.5,7,12,18,25,33.27")
    assert request(s, spaced) == 0
    assert deck_of(s) == arrays
    assert json.loads(read_bytes(s / "request.json"))["parameter"]["alschd"] \
        == " 1, 2.0 ,3,4 , 5,6.0 "


@pytest.mark.parametrize("extras", [
    {"deriv": "DEG"}, {"deriv": "RAD", "damp": True, "build": True},
    {"damp": True}, {"build": True, "damp": False},
    {"loop": 2, "nalt": 2, "alt": [0.0, 5000.0], "rnnub": [2.5e6]},
])
def test_deriv_damp_build_loop(dsession, extras):
    s = dsession
    assert request(s, pc9(**extras)) == 0
    deck = check_deck_for(deck_of(s), pc9(**extras))
    ctl = deck.controls()
    assert ("DAMP" in ctl) == bool(extras.get("damp"))
    assert ("BUILD" in ctl) == bool(extras.get("build"))
    assert any(c.startswith("DERIV") for c in ctl) == ("deriv" in extras)


@pytest.mark.parametrize("dim", ["M", "CM", "IN", "FT"])
def test_dim(dsession, dim):
    s = dsession
    assert request(s, pc9(dim=dim)) == 0
    data = deck_of(s)
    assert data.decode().split("\n")[1] == f"DIM {dim}"
    check_deck_for(data, pc9(dim=dim))


def test_big_weight_in_exponent_form(dsession):
    """More than nine digits before the point: DATCOM's reader would
    overflow on them (todec.f, issue 28)."""
    assert request(dsession, pc9(wt=1.5e10, dim="M")) == 0
    deck = check_cards(deck_of(dsession))
    assert deck.values("FLTCON")["WT"] == (0, ["1.5E10"])


def test_configurations_of_any_surfaces(dsession):
    """A body alone, a body and wing, no horizontal tail: each surface is
    there when given, and then whole (issue 15: the orbiter, the rocket,
    the first cases of sprob.in and DanAlex03)."""
    s = dsession

    def without(*surfaces):
        drop = {"wing": ("xw", "zw", "aliw"), "htail": ("xh", "zh", "alih"),
                "vtail": ("xv", "zv")}
        p = pc9()
        for sf in surfaces:
            for k in list(p):
                if k.startswith(sf + "_") or k in drop[sf]:
                    del p[k]
        return p

    for gone in (("wing", "htail", "vtail"), ("htail", "vtail"), ("htail",)):
        p = without(*gone)
        assert request(s, p) == 0
        assert status_of(s)[0] == ["ready"], (gone, status_of(s))
        deck = check_deck_for(deck_of(s), p)
        for sf, nl, letter in SURFACES:
            assert (sf in gone) == (nl not in [c[1] for c in deck.namelists()])
    # a tail begun is a tail: what it needs is missing
    p = without("htail")
    p["htail_sspn"] = 6.6
    assert request(s, p) == 0
    assert status_of(s)[0] == ["missing required parameters: xh, zh, "
                               "htail_naca, htail_chrdtp, htail_sspne, "
                               "htail_chrdr, htail_savsi, htail_type"]


def test_mach_above_stmach_is_said_in_status(dsession):
    """Above DATCOM's default STMACH (0.6) and below TSMACH (1.4) its
    tables are mostly NDM, and from TSMACH on a body without BLN and BLA
    is NaN: the deck is made, and status says what DATCOM prints there
    (issue 28; at 0.6 itself DATCOM is subsonic, main00.f)."""
    s = dsession
    assert request(s, pc9(nmach=3, mach=[0.5, 0.7, 2.0], nalt=3,
                          alt=[10000, 10000, 10000])) == 0
    doc = json.loads(read_bytes(s / "status.json"))
    assert doc["ready"] is True, doc
    assert doc["notes"] == [
        "MACH 0.7 is above STMACH 0.6 and below TSMACH 1.4 (transonic), where"
        " DATCOM has few methods: its tables there print NDM (no method)"
        " for most coefficients, CD alone at best (stmach, up to 0.99, and"
        " tsmach, 1.01 to 1.4, move the limits)",
        "MACH 2.0 is at or above TSMACH 1.4 (supersonic): there DATCOM's"
        " body method needs the nose and afterbody lengths BLN and BLA,"
        " which only a deck's $BODY carries through, and without them CD"
        " and CL print NaN or NDM wherever the body is"], doc
    check_cards(deck_of(s))
    # BLN and BLA from a deck answer the second
    upload(s, "deck.dat", b" $BODY BLN=7.0,BLA=11.0$\nNEXT CASE\n")
    assert json.loads(read_bytes(s / "status.json"))["notes"] == \
        doc["notes"][:1]
    os.unlink(s / "uploads" / "deck.dat")
    # STMACH above it: DATCOM computes there, and the deck says so
    assert request(s, pc9(nmach=2, mach=[0.5, 0.7], nalt=2,
                          alt=[10000, 10000], stmach=0.9)) == 0
    assert json.loads(read_bytes(s / "status.json"))["notes"] == []
    assert check_cards(deck_of(s)).values("FLTCON")["STMACH"] == (0, ["0.9"])
    assert request(s, pc9()) == 0
    assert json.loads(read_bytes(s / "status.json"))["notes"] == []
    assert request(s, pc9(mach=[0.6])) == 0
    assert json.loads(read_bytes(s / "status.json"))["notes"] == []


def test_nalt_unlike_nmach_is_said_in_status(dsession):
    """NALT other than NMACH under LOOP 1 is in a public deck DATCOM runs
    (SenecaII): the deck is made as given and status says it (it was
    refused before issue 15's every-deck-imports rule)."""
    s = dsession
    assert request(s, pc9(nalt=2, alt=[10000.0, 20000.0])) == 0
    doc = json.loads(read_bytes(s / "status.json"))
    assert doc["ready"] is True, doc
    assert doc["notes"] == [
        "NALT (2) differs from NMACH (1) while LOOP is 1 (Mach number and"
        " altitude vary together, in pairs): DATCOM says so and takes the"
        " first 1 of each (loop 2 or 3 computes every combination)"], doc
    flt = check_cards(deck_of(s)).values("FLTCON")
    assert flt["NALT"][1] == ["2.0"] and flt["ALT"][1] == ["10000.0",
                                                           "20000.0"]
    assert request(s, pc9(nalt=2, alt=[10000.0, 20000.0], loop=2)) == 0
    assert json.loads(read_bytes(s / "status.json"))["notes"] == []


@pytest.mark.parametrize("changes,why", [
    ({"nx": 1, "x_coords": [0.0], "r_coords": [0.0], "zu_coords": [0.0],
      "zl_coords": [0.0]}, "NX (nx) is 1: DATCOM needs at least 2 body"),
    ({"mach": [0.0099]}, "parameter.mach[0]: 0.0099 is less than the "
     "minimum of 0.01"),
    ({"mach": [25.001]}, "parameter.mach[0]: 25.001 is greater than the "
     "maximum of 25"),
    ({"nmach": 2, "mach": [0.5, 0.4], "nalt": 2, "alt": [0.0, 0.0]},
     "The Mach numbers (MACH) must be ascending: value 2 (0.4) is less "
     "than value 1 (0.5) (DATCOM interpolates over them in order"),
    ({"wing_naca": "64-000"}, 'NACA-W of the wing (wing_naca): "64-000" has '
     "no thickness"),
    ({"htail_naca": "6015"}, 'NACA-H of the horizontal tail (htail_naca): '
     '"6015" has camber but no camber position'),
    ({"alschd": [-90, 1, 2, 3, 4, 5]}, "ALSCHD(1) (alschd) is -90.0: DATCOM"
     " gives no coefficients at 90 degrees or beyond"),
    ({"wing_type": 3}, "TYPE of the wing (wing_type) is 3 (cranked): DATCOM"
     " needs its break point, wing_chrdbp, wing_sspnop, wing_savso"),
    ({"vtail_naca": "00120"}, 'NACA-V of the vertical tail (vtail_naca):'
     ' "00120" is not a NACA designation'),
])
def test_what_datcom_cannot_compute_is_refused(dsession, changes, why):
    s = dsession
    body = json.dumps({"parameter": pc9(**changes)})
    with pytest.raises(OSError) as e:
        with open(s / "request.json", "w") as f:
            f.write(body)
    assert e.value.errno == errno.EINVAL
    assert why in read_bytes(s / "log").decode()


def test_cranked_wing_with_its_break_point(dsession):
    s = dsession
    p = pc9(wing_type=3, wing_chrdbp=5.2, wing_sspnop=9.5, wing_savso=12.5,
            wing_dhdado=3.0)
    assert request(s, p) == 0
    assert status_of(s)[0] == ["ready"]
    deck = check_deck_for(deck_of(s), p)
    assert deck.values("WGPLNF")["SSPNOP"] == (0, ["9.5"])


def test_no_value_changes_in_print(dsession):
    """Issue 15's cases: four decimals would have printed SREF's decimals
    0.0001753 as 0.0002, R 0.00025 as 0.0003, Mach 0.2418852 as 0.2419,
    and the alphas 1.00001 and 1.00002 both as 1.0 (and refused 0.00001).
    Each prints as a number that reads back as itself, and re-imports as
    it was (SREF 175 m^2 and not 0.0001753 since issue 28: DATCOM runs the
    deck, and with that area its tables overflow to ****)."""
    s = dsession
    params = pc9(sref=175.0001753, mach=[0.2418852], wing_twista=0.00001,
                 alschd=[1.00001, 1.00002, 3, 4, 5, 6], dim="M",
                 r_coords=[0.0, 0.00025, 1.6, 1.9, 1.9, 1.5, 0.9, 0.25])
    assert request(s, params) == 0
    assert status_of(s)[0] == ["ready"], status_of(s)
    deck = check_cards(deck_of(s))
    # the shortest decimal, plain: DATCOM's input check marked 1.00001E0
    # (issue 28)
    assert deck.values("OPTINS")["SREF"] == (0, ["175.0001753"])
    assert deck.values("FLTCON")["MACH"] == (1, ["0.2418852"])
    assert deck.values("FLTCON")["ALSCHD"][1][:2] == ["1.00001", "1.00002"]
    assert deck.values("BODY")["R"][1][:2] == ["0.0", "0.00025"]
    assert deck.values("WGPLNF")["TWISTA"] == (0, ["0.00001"])
    check_deck_for(deck_of(s), params)
    # the deck, copied back in, gives the same deck again
    before = deck_of(s)
    (s / "uploads" / "deck.dat").write_bytes(before)
    assert deck_of(s) == before


# -- binding ---------------------------------------------------------------------------

def test_rebinding_makes_the_deck_disappear(skill_folder, mount_skills):
    skill_folder.add("other", parameter={"type": "object"},
                     output={"type": "object", "properties": {}})
    fs = mount_skills()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    assert request(s, PC9) == 0
    deck = deck_of(s)
    assert bind(s, "other") == 0
    absent(s)
    assert bind(s, "datcom") == 0
    assert deck_of(s) == deck          # the request was kept
    assert put_json(s / "session.json", {"skill": None}) == 0
    assert oserror(os.stat, s / "output" / "for005.dat") == errno.ENOENT
    assert "for005.dat" not in os.listdir(s / "output")


def test_unbound_session_has_no_deck(make_flowfs, isolated_config):
    fs = make_flowfs()
    s = fs.mnt / "s"
    os.mkdir(s)
    absent(s)


# -- many random valid sets --------------------------------------------------------

def rnd(r, lo, hi, nd=3):
    return round(r.uniform(lo, hi), nd)


def ascending(r, n, lo, hi, strict):
    while True:
        v = sorted(rnd(r, lo, hi, 2) for _ in range(n))
        if not strict or len(set(v)) == n:
            return v


def random_params(r):
    # what DATCOM computes: 2 body stations or more, angles strictly
    # within +-90, straight tapered planforms (check_computable)
    n_a, n_m, n_x = r.randint(1, 20), r.randint(1, 20), r.randint(2, 20)
    p = {"case_id": "".join(r.choice("ABCXYZ 0123456789-.()/'")
                            for _ in range(r.randint(1, 73))).strip() or "C",
         "nalpha": n_a, "alschd": ascending(r, n_a, -89.9, 89.9, True),
         "nmach": n_m, "mach": ascending(r, n_m, 0.01, 5, False),
         "wt": rnd(r, 1, 900000000)}
    if r.random() < 0.3:
        p["loop"] = r.choice([2, 3])
        n_h = r.randint(1, 20)
    else:
        if r.random() < 0.3:
            p["loop"] = 1
        n_h = n_m
    p["nalt"] = n_h
    p["alt"] = [rnd(r, -1000, 60000, 1) for _ in range(n_h)]
    for k in ("sref", "cbarr", "blref"):
        if r.random() < 0.5:
            p[k] = rnd(r, 0.01, 5000)
    for k in ("xcg", "zcg", "xw", "zw", "xh", "zh", "xv", "zv"):
        p[k] = rnd(r, -500, 5000)
    for k in ("aliw", "alih"):
        p[k] = rnd(r, -90, 90)
    p["nx"] = n_x
    p["x_coords"] = ascending(r, n_x, -100, 100000, False)
    p["r_coords"] = [rnd(r, 0, 1000) for _ in range(n_x)]
    p["zu_coords"] = [rnd(r, -1000, 1000) for _ in range(n_x)]
    p["zl_coords"] = [rnd(r, -1000, 1000) for _ in range(n_x)]
    p["itype"], p["method"] = r.randint(1, 3), r.randint(1, 2)
    for pre, _, _ in SURFACES:
        p[f"{pre}_naca"] = r.choice(sorted(NACA_CARD))
        p[f"{pre}_chrdtp"] = rnd(r, 0, 300)
        p[f"{pre}_sspn"] = rnd(r, 0.01, 1000)
        p[f"{pre}_sspne"] = rnd(r, 0.001, p[f"{pre}_sspn"])
        p[f"{pre}_chrdr"] = rnd(r, 0.01, 300)
        p[f"{pre}_savsi"] = rnd(r, -89.9, 89.9)
        p[f"{pre}_chstat"] = r.choice([0, 1, rnd(r, 0, 1, 4)])
        if pre != "vtail":
            p[f"{pre}_twista"] = rnd(r, -90, 90)
            p[f"{pre}_dhdadi"] = rnd(r, -90, 90)
        p[f"{pre}_type"] = 1
    if r.random() < 0.5:
        p["dim"] = r.choice(["FT", "IN", "M", "CM"])
    if r.random() < 0.3:
        p["rnnub"] = [rnd(r, 1000, 9e7, 0) for _ in range(n_m)]
    if r.random() < 0.4:
        p["deriv"] = r.choice(["DEG", "RAD"])
    for k in ("damp", "build"):
        if r.random() < 0.3:
            p[k] = r.random() < 0.5
    for k in LISTS:     # some lists as comma-separated strings
        if k in p and r.random() < 0.3:
            p[k] = ",".join(repr(x) for x in p[k])
    return p


def test_random_valid_sets(dsession):
    s = dsession
    r = random.Random(20265)
    done = 0
    # a fixed number of sets, so every run checks the same ones (200 take
    # about a second)
    for i in range(200):
        p = random_params(r)
        got = request(s, p)
        assert got == 0, (errname(got), status_of(s)[1][-1:], p)
        try:
            # one in ten through DATCOM (a quarter second each: values
            # anywhere in their ranges make long runs)
            check_deck_for(deck_of(s, datcom=i % 10 == 0), p)
        except AssertionError as e:
            raise AssertionError(f"set {i}: {e}\n{json.dumps(p)}\n"
                                 f"{deck_of(s).decode()}") from None
        done += 1
    assert done == 200


# -- reads and mtime ------------------------------------------------------------------

def test_reads_repeat_and_mtime_follows_parameters(pc9_session):
    s = pc9_session
    path = s / "output" / "for005.dat"
    m1 = os.stat(path).st_mtime_ns
    a, b = deck_of(s), deck_of(s)
    assert a == b
    read_bytes(s / "status")
    read_bytes(s / "request.json")
    read_bytes(s / "parameter.json")
    assert os.stat(path).st_mtime_ns == m1
    # a refused write changes no parameter
    assert request(s, pc9(nalpha=25)) == errno.EINVAL
    assert os.stat(path).st_mtime_ns == m1
    time.sleep(0.01)    # let the clock move past m1 (not a timing assertion)
    assert request(s, pc9(wt=5000.0)) == 0
    m2 = os.stat(path).st_mtime_ns
    assert m2 > m1
    c = deck_of(s)
    assert c != a and b"WT=5000.0" in c
    assert deck_of(s) == c and os.stat(path).st_mtime_ns == m2


# -- deck import (uploads/deck) ---------------------------------------------------

def upload(session, name, data):
    write_bytes(session / "uploads" / name, data)


def joined(deck_text, nl):
    """The body of namelist nl in a deck's first case, whitespace removed,
    as its list of items `NAME[(i)]=v,v,...`."""
    first = re.split(r"(?m)^NEXT CASE", deck_text)[0]
    m = re.search(rf"(?ms)^ *\${nl}\b(.*?)\$", first)
    assert m, f"${nl} not found"
    body = re.sub(r"\s+", "", m.group(1)).rstrip(",")
    return re.split(r",(?=[A-Z][A-Z0-9]*(?:\(\d+\))?=)", body)


def test_import_fixed_point(pc9_session):
    s = pc9_session
    deck = deck_of(s)
    upload(s, "deck.dat", deck)
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    assert deck_of(s) == deck
    assert status_of(s)[0] == ["ready"]


def test_import_example_merged_with_request(dsession):
    src = EXAMPLES / "katiakms_DATCOM_for005.dat"
    if not src.is_file():
        pytest.skip(f"{src} is absent")
    s = dsession
    raw = src.read_bytes()
    upload(s, "deck.dat", raw)
    assert request(s, PC9) == 0
    data = deck_of(s)
    deck = check_cards(data, ours=False)
    text, orig = data.decode(), raw.decode()
    # the namelist outside the 57 comes through verbatim
    assert joined(text, "WGSCHR") == joined(orig, "WGSCHR")
    # variables outside the 57 too; the request's values win
    flt, syn = deck.values("FLTCON"), deck.values("SYNTHS")
    assert flt["GAMMA"][1] == ["0.0"] and syn["SCALE"][1] == ["1.00"]
    assert flt["MACH"][1] == ["0.5489"] and flt["NALPHA"][1] == ["6.0"]
    assert "CASEID PC-9 TURBOPROP TRAINER" in deck.controls()
    assert "DIM FT" in deck.controls()


@pytest.mark.parametrize("name", [
    "aircraftdatcom_F16_for005.dat", "aircraftdatcom_sprob.in",
    "OpenDatcom_orbiter_for005.dat", "katiakms_DATCOM_for005.dat",
    "OpenPost_PUB_ROCKET_for005.dat", "pydatcom_Navion.dcm",
    "pydatcom_B-737.dcm", "DanAlex03_SysID_for005.dat",
    "pydatcom_SenecaII.dcm",
])
def test_public_deck_imports_as_it_is(make_flowfs, isolated_config, name):
    """Issue 15: a deck DATCOM runs comes in as it is, with nothing in
    request.json, and the deck flowfs generates from it comes in again to
    the same deck (the same namelists and values)."""
    src = EXAMPLES / name
    if not src.is_file():
        pytest.skip(f"{src} is absent")
    fs = make_flowfs()
    decks = []
    for session, raw in (("a", src.read_bytes()), ("b", None)):
        s = fs.mnt / session
        os.mkdir(s)
        assert bind(s, "datcom") == 0
        upload(s, "deck.dat", raw if raw is not None else decks[-1])
        assert status_of(s)[0] == ["ready"], (name, status_of(s))
        decks.append(deck_of(s))
        check_cards(decks[-1], ours=False)
    assert decks[0] == decks[1]


def test_import_several_cases_noted(pc9_session):
    s = pc9_session
    deck = deck_of(s)
    second = deck.replace(b"WT=4960.0", b"WT=1.0")
    assert second != deck
    upload(s, "deck.dat", deck + second)
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    assert deck_of(s) == deck
    # a remark, not a problem: status reads exactly "ready", status.json
    # has it
    assert status_of(s)[0] == ["ready"]
    notes = status_json(s)["notes"]
    assert any("case" in p.lower() and "first" in p.lower() for p in notes), \
        notes


def test_import_broken_deck_named_in_status(pc9_session):
    s = pc9_session
    lines = deck_of(s).decode().split("\n")
    assert lines[3].startswith("  ALSCHD(1)=1.0,2.0")
    lines[3] = lines[3].replace("1.0,2.0", "1.0,,2.0", 1)
    upload(s, "deck.dat", "\n".join(lines).encode())
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    absent(s)
    problems, _ = status_of(s)
    assert any("deck" in p and re.search(r"line 4, column \d+", p)
               for p in problems), problems


def test_import_inconsistent_deck_named_in_status(pc9_session):
    """Complete but inconsistent parameters (only reachable through a deck):
    no for005.dat, and status says why."""
    s = pc9_session
    deck = deck_of(s)
    bad = deck.replace(b"NALPHA=6.0,", b"NALPHA=5.0,")
    assert bad != deck
    upload(s, "deck.dat", bad)
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    absent(s)
    problems, _ = status_of(s)
    assert any(p.startswith("output/for005.dat: ") and p.endswith(
        "The number of angles of attack (6) must match NALPHA (5)")
        for p in problems), problems


def test_import_datcom_plus_dialect(pc9_session):
    """A deck in DATCOM+'s looser dialect — comment lines, TABs, blank
    lines, which Digital DATCOM itself rejects (CARDS.md) — imports to the
    same parameters; the generated deck is the clean one, and status says
    which lines DATCOM would have rejected."""
    s = pc9_session
    clean = deck_of(s)
    text = clean.decode()
    loose = (text.replace("DIM FT\n", "* PC-9, from the manufacturer's data\nDIM\tFT\n\n")
             .replace(" $OPTINS", "# reference values\n $OPTINS"))
    assert loose != text
    with pytest.raises(AssertionError):
        check_cards(loose.encode())
    upload(s, "deck.dat", loose.encode())
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    assert deck_of(s) == clean
    check_cards(deck_of(s))
    assert status_of(s)[0] == ["ready"]
    notes = [p for p in status_json(s)["notes"]
             if p.startswith("uploads/deck.dat: ")]
    assert len(notes) == 1, notes
    assert re.fullmatch(r"uploads/deck\.dat: 4 lines DATCOM would reject or misread"
                        r" \(line 2: .+\); the deck flowfs generates from it"
                        r" leaves them out or writes them so DATCOM reads them",
                        notes[0]), notes[0]


def test_import_number_beyond_a_double(pc9_session):
    """A deck number too big for any double (WT=1.0E999) is read as the
    largest one: status names the parameter, the session's other files
    still read, and there is no deck."""
    s = pc9_session
    deck = deck_of(s)
    big = deck.replace(b"WT=4960.0$", b"WT=1.0E999$")
    assert big != deck
    upload(s, "deck.dat", big)
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    absent(s)
    problems, _ = status_of(s)
    assert any(p.startswith("output/for005.dat: parameter.wt: WT (wt) is ")
               and p.endswith("beyond what a DATCOM REAL holds (about 3.4E38)")
               for p in problems), problems
    notes = status_json(s)["notes"]
    assert any(p.startswith("uploads/deck.dat: ") and "1.0E999" in p
               for p in notes), notes
    params = json.loads(read_bytes(s / "parameter.json"))
    assert params["wt"] == 1.7976931348623157e308
    assert params["xcg"] == PC9["xcg"]
    assert read_bytes(s / "prompt.txt")
    assert json.loads(read_bytes(s / "input.json"))["deck"].endswith(
        "uploads/deck.dat")


def test_empty_deck_is_named_in_status(pc9_session):
    """Issue 28: an empty uploads/deck.dat was silently no deck."""
    s = pc9_session
    upload(s, "deck.dat", b"")
    absent(s)
    problems, _ = status_of(s)
    assert problems == [
        "uploads/deck.dat: the file is empty (0 bytes): no deck to read"]
    assert status_json(s)["ready"] is False
    os.unlink(s / "uploads" / "deck.dat")
    assert status_of(s)[0] == ["ready"]


def test_import_numbers_datcom_marks_or_misreads(pc9_session):
    """Spellings DATCOM's input check marks (an exponent of 0) or its
    reader overflows on (more than 2147483647 in the digits after the
    point) come through with their values, written so DATCOM reads them,
    and status.json says so (issue 28)."""
    s = pc9_session
    deck = deck_of(s)
    odd = deck.replace(b"WT=4960.0$", b"WT=4960.0,GAMMA=1.5E0,\n"
                       b"  TR=0.12345678901$")
    assert odd != deck
    upload(s, "deck.dat", odd)
    assert put_json(s / "request.json", {"input": {}, "parameter": {}}) == 0
    assert status_of(s)[0] == ["ready"]
    notes = status_json(s)["notes"]
    assert len(notes) == 1 and re.fullmatch(
        r"uploads/deck\.dat: 2 lines DATCOM would reject or misread \(line "
        r"4: exponent 0 in `1\.5E0`: .+", notes[0]), notes
    flt = check_cards(deck_of(s), ours=False).values("FLTCON")
    assert flt["GAMMA"] == (0, ["1.5"])
    assert flt["TR"] == (0, ["12.345678901E-2"])
    assert float(flt["TR"][1][0]) == 0.12345678901
