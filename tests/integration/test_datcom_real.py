"""DATCOM in the loop (issue 28): the decks flowfs writes, run through the
real USAF Digital DATCOM (datcom_oracle.py builds it from
../shared/datcom/aircraft-datcom; the tests skip saying why where it
cannot be had).  DATCOM's own output is the oracle:

- no deck flowfs writes draws an input-error marker (its input checker
  CONERR's `** ERROR **`, ILLEGAL CONTROL CARD, NAMELIST errors, THIS
  CASE NOT RUN), and where status says `ready` without a note DATCOM
  prints a coefficient table with numbers;
- what flowfs refuses, DATCOM computes nothing for (shown on the deck
  just past each limit), and what status notes, DATCOM prints as noted;
- every deck of the unit programs, the public decks imported and
  written again, and a seeded random sample over the whole parameter
  model (FLOWFS_DATCOM_SEED replays one; it is printed) pass the first
  rule; DATCOM's breakdowns on odd geometry flowfs cannot foresee stay
  under 5 % of the sample.

test_datcom.py runs every deck it reads through DATCOM too.
"""

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

import datcom_oracle as D
from conftest import bind, errname, put_json, read_bytes, status_json, \
    write_bytes
from test_datcom import PC9, pc9

EXAMPLES = D.REPO.parent / "shared" / "datcom" / "examples"


@pytest.fixture(scope="module")
def datcom():
    return D.require()


@pytest.fixture
def session(make_flowfs, isolated_config):
    fs = make_flowfs()
    s = fs.mnt / "s"
    os.mkdir(s)
    assert bind(s, "datcom") == 0
    return s


def request(s, params):
    return put_json(s / "request.json", {"parameter": params})


def deck_for(s, params):
    """The deck flowfs writes for `params` (which it must take whole)."""
    assert request(s, params) == 0, status_json(s)
    doc = status_json(s)
    assert doc["problems"] == [], doc
    return read_bytes(s / "output" / "for005.dat"), doc["notes"]


def without(p, *surfaces):
    drop = {"wing": ("xw", "zw", "aliw"), "htail": ("xh", "zh", "alih"),
            "vtail": ("xv", "zv")}
    p = dict(p)
    for sf in surfaces:
        for k in list(p):
            if k.startswith(sf + "_") or k in drop[sf]:
                del p[k]
    return p


def cd_cl(table):
    """The CD and CL cells of a table's rows."""
    return [(row[1].get("CD", ""), row[1].get("CL", "")) for row in
            table.rows]


def report(line):
    """A line for the end of tools/test (FLOWFS_DATCOM_REPORT)."""
    path = os.environ.get("FLOWFS_DATCOM_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(line + "\n")


# -- the oracle can fail -----------------------------------------------------

def test_the_oracle_sees_errors_tables_and_breakdowns(datcom):
    """BUILD.md's self-check (the F-16 in data/for005.dat: clean, one
    table), and the same deck broken three ways: each is seen."""
    f16 = (D.SOURCE / "data" / "for005.dat").read_bytes()
    r = D.run(datcom, f16)
    assert D.judge(r, noted=False) == "clean", r.summary()
    assert len(r.tables) == 1 and len(r.tables[0].rows) == 13
    # the build prints what the program's own sample output shows
    ref = D.classify((D.SOURCE / "data" / "sprob.out").read_text(
        errors="replace"))
    r = D.run(datcom, (D.SOURCE / "data" / "sprob.in").read_bytes())
    assert len(r.tables) == len(ref.tables) > 60
    assert [t.rows for t in r.tables[:3]] == [t.rows for t in
                                              ref.tables[:3]]
    # an exponent of 0, DATCOM's input check marks it (F1)
    marked = f16.replace(b"NMACH=1.0,", b"NMACH=1.0E0,")
    assert marked != f16
    r = D.run(datcom, marked)
    assert r.input_errors and "** ERROR **" in r.input_errors[0]
    with pytest.raises(AssertionError):
        D.judge(r, noted=True)
    # a body of X alone computes nothing: a breakdown, unless noted
    text = f16.decode()
    body = text[text.index(" $BODY"):text.index("DERIV")]
    r = D.run(datcom, text.replace(body, body[:body.index("R(1)")] + "$\n")
              .encode())
    assert not r.input_errors and not r.numeric_tables(), r.summary()
    assert D.judge(r, noted=False) == "broke"
    assert D.breakdown_kind(r) == "body not adequately defined"


# -- what flowfs refuses computes nothing -----------------------------------

def computes_nothing(r):
    return r.timed_out or r.crashed or not r.numeric_tables()


# A wing-body whose deck, with its Mach numbers out of order, stopped
# DATCOM in TBFUNX (issue 28's runs: every such crash came from a list
# going down, none once sorted).
ORDER_CRASHER = {
    "dim": "CM", "nalpha": 12,
    "alschd": [-83.9, -74.1, -64.12, -62.97, -56.1, -53.15, -52.68, -51.42,
               7.27, 18.27, 40.99, 69.9],
    "nmach": 4, "mach": [0.121, 0.208, 2.0, 3.0], "nalt": 4,
    "alt": [6679.4, 737.9, 11011.1, 12366.3], "tsmach": 1.31,
    "sref": 418904.0322, "cbarr": 292.0345, "blref": 1683.293,
    "xcg": 666.1677, "zcg": -7.1756, "xw": 611.9149, "zw": -4.1379,
    "nx": 4, "x_coords": [294.568, 869.138, 1567.278, 1752.234],
    "r_coords": [0.0, 289.027, 172.279, 86.708],
    "zu_coords": [0.0, 345.155, 141.537, 100.704],
    "zl_coords": [-0.0, -250.791, -199.632, -94.893],
    "itype": 3, "method": 2,
    "wing_naca": "0024", "wing_chrdr": 486.7786, "wing_chrdtp": 0.0,
    "wing_sspn": 792.3409, "wing_sspne": 575.1214, "wing_savsi": 1.12,
    "wing_type": 2, "wing_sspnop": 305.8048, "wing_chrdbp": 280.2717,
    "wing_savso": 39.17, "damp": True,
}


# (what flowfs takes, what it refuses, the deck of the refused edited
# from the taken one's, where flowfs says no: "write" for a request.json
# refused with EINVAL, "status" for a complete set named in status)
REFUSED = {
    # F2: X alone
    "body by X alone": (
        pc9(), pc9(r_coords=None),
        lambda t: D.edit(t, "BODY", "R", None), "status"),
    # F3: LOOP 2 with altitudes but no NALT
    "LOOP 2 without nalt": (
        pc9(loop=2), pc9(loop=2, nalt=None),
        lambda t: D.edit(t, "FLTCON", "NALT", None), "status"),
    # F4: a body alone without SREF
    "no wing, no sref": (
        without(PC9, "wing", "htail", "vtail"),
        without(pc9(sref=None), "wing", "htail", "vtail"),
        lambda t: D.edit(t, "OPTINS", "SREF", None), "status"),
    # F5: a section without thickness
    "NACA 64-000": (
        pc9(), pc9(wing_naca="64-000"),
        lambda t: D.edit(t, control="NACA-W", new="NACA-W-6-64-000"),
        "write"),
    "NACA 6015 (camber, no position)": (
        pc9(), pc9(wing_naca="6015"),
        lambda t: D.edit(t, control="NACA-W", new="NACA-W-4-6015"),
        "write"),
    # the Mach floor: on this section DATCOM did not finish at 0.0051
    "Mach 0.0051": (
        pc9(mach=[0.01], wing_naca="2415"),
        pc9(mach=[0.0051], wing_naca="2415"),
        lambda t: D.edit(t, "FLTCON", "MACH", ["0.0051"]), "write"),
    "Mach numbers going down": (
        ORDER_CRASHER, dict(ORDER_CRASHER, mach=[2.0, 0.208, 3.0, 0.121]),
        lambda t: D.edit(t, "FLTCON", "MACH",
                         ["2.0", "0.208", "3.0", "0.121"]), "write"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_what_flowfs_refuses_computes_nothing(datcom, session, case):
    taken, refused, edit, where = REFUSED[case]
    deck, notes = deck_for(session, taken)
    r = D.run(datcom, deck, timeout=3)
    assert not computes_nothing(r), f"{case}: the taken deck: {r.summary()}"
    # the refused set's deck, as flowfs would have written it: nothing
    bad = edit(deck.decode()).encode()
    assert bad != deck
    # a deck DATCOM answers takes it a tenth of a second at most
    r = D.run(datcom, bad, timeout=3)
    assert not r.input_errors, r.input_errors
    assert computes_nothing(r), f"{case}: DATCOM computed: {r.summary()}"
    # and flowfs says no, naming the parameter
    got = request(session, refused)
    if where == "write":
        assert got != 0, f"{case}: accepted"
        assert "parameter" in read_bytes(session / "log").decode() or \
            "(" in read_bytes(session / "log").decode()
    else:
        assert got == 0, errname(got)
        doc = status_json(session)
        assert doc["ready"] is False and any(
            p.startswith("output/for005.dat: parameter.")
            for p in doc["problems"]), doc
        assert not os.path.exists(session / "output" / "for005.dat")


# -- what status notes is what DATCOM prints --------------------------------

def test_transonic_tables_are_mostly_ndm(datcom, session):
    # at STMACH itself DATCOM is subsonic (main00.f): no note, numbers
    deck, notes = deck_for(session, pc9(mach=[0.6]))
    assert notes == []
    assert D.judge(D.run(datcom, deck), noted=False) == "clean"
    deck, notes = deck_for(session, pc9(mach=[0.7]))
    assert len(notes) == 1 and "(transonic)" in notes[0], notes
    r = D.run(datcom, deck)
    assert D.judge(r, noted=True) == "noted"
    # CD at best, in the first row; CL no number anywhere
    assert r.tables and not r.numeric_tables(), r.summary()
    assert all(cl in ("NDM", "") for t in r.tables
               for _, cl in cd_cl(t)), r.summary()


def test_supersonic_body_needs_bln_and_bla(datcom, session):
    deck, notes = deck_for(session, pc9(mach=[2.0]))
    assert len(notes) == 1 and "BLN and BLA" in notes[0], notes
    r = D.run(datcom, deck)
    assert D.judge(r, noted=True) == "noted"
    assert r.tables and all(cd == "NaN" and cl == "NaN" for t in r.tables
                            for cd, cl in cd_cl(t)), r.summary()
    # a deck carrying them: no note, and numbers
    write_bytes(session / "uploads" / "deck.dat",
                b" $BODY BLN=7.0,BLA=11.0$\nNEXT CASE\n")
    deck, notes = deck_for(session, pc9(mach=[2.0]))
    assert notes == [], notes
    assert b"BLN=7.0,BLA=11.0" in deck
    r = D.run(datcom, deck)
    assert D.judge(r, noted=False) == "clean", r.summary()


def test_cranked_wing_with_tails_is_ndm_with_them(datcom, session):
    # swept: a cranked planform with little sweep breaks down alone
    # (SAVSI 2: CD ****; README)
    p = pc9(wing_type=3, wing_chrdbp=5.2, wing_sspnop=9.5, wing_savsi=30.0,
            wing_savso=12.5)
    deck, notes = deck_for(session, p)
    assert len(notes) == 1 and "TYPE 3 (cranked)" in notes[0], notes
    r = D.run(datcom, deck)
    assert D.judge(r, noted=True) == "noted"
    titles = {t.title: t for t in r.tables}
    assert titles["WING-BODY CONFIGURATION"].numeric()
    full = titles["WING-BODY-VERTICAL TAIL-HORIZONTAL TAIL CONFIGURATION"]
    assert all(cd == cl == "NDM" for cd, cl in cd_cl(full)), r.summary()
    # without the tails: no note, numbers
    deck, notes = deck_for(session, without(p, "htail", "vtail"))
    assert notes == []
    assert D.judge(D.run(datcom, deck), noted=False) == "clean"


def test_no_wing_without_cbarr(datcom, session):
    deck, notes = deck_for(session, without(pc9(cbarr=None), "wing"))
    assert len(notes) == 1 and "without cbarr" in notes[0], notes
    r = D.run(datcom, deck)
    assert D.judge(r, noted=True) == "noted"
    cms = {row[1].get("CM") for t in r.tables for row in t.rows}
    assert cms and all(cm.startswith("*") or cm in ("Inf", "NaN", "NA")
                       for cm in cms), cms


def test_corrections_datcom_makes_are_noted(datcom, session):
    """DATCOM's own *** ERROR *** lines, where it changes a value and
    goes on: each deck that draws one has a note."""
    for p, says in (
            (pc9(nalt=2, alt=[10000.0, 20000.0]), "NALT IS NOT"),
            (pc9(loop=3, alt=None, nalt=None, rnnub=[2.9e6]),
             "ATMOSPHERIC")):
        deck, notes = deck_for(session, p)
        assert len(notes) == 1, notes
        r = D.run(datcom, deck)
        assert any(says in line for line in r.corrections), r.summary()
        assert D.judge(r, noted=True) == "noted"
        assert r.numeric_tables()


# -- the decks of the unit programs, and the public decks -------------------

def test_unit_program_decks(datcom, tmp_path):
    """The unit programs keep every deck they render (FLOWFS_DECK_DUMP):
    each through DATCOM."""
    build = D.build_dir()
    dump = tmp_path / "decks"
    dump.mkdir()
    for prog in ("unit_datcom", "unit_datcom_deck"):
        exe = build / "tests" / "unit" / prog
        if not exe.is_file():
            pytest.skip(f"{exe} is not built")
        r = subprocess.run([str(exe)], env=dict(
            os.environ, FLOWFS_DECK_DUMP=str(dump),
            CMOCKA_MESSAGE_OUTPUT="stdout"), capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=300)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    decks = sorted(dump.glob("*.dat"))
    assert len(decks) > 100, len(decks)
    verdicts, broke = Counter(), []
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda p: D.run(datcom, p.read_bytes()),
                                decks))
    for path, res in zip(decks, results):
        notes = path.with_suffix(".notes").read_text()
        try:
            v = D.judge(res, noted=bool(notes))
        except AssertionError as e:
            raise AssertionError(f"{path.name}: {e}\n{path.read_text()}") \
                from None
        verdicts[v] += 1
        if v == "broke":
            broke.append((path.name, D.breakdown_kind(res)))
    report(f"DATCOM, the unit programs' decks: {len(decks)}: "
           f"{verdicts['clean']} clean, {verdicts['noted']} noted, "
           f"{verdicts['broke']} broke down (schema-range random sets: "
           f"{Counter(k for _, k in broke)})")
    # the unit decks are the PC-9 and its variants, and schema-range
    # random sets (no aircraft: values anywhere in their ranges), where
    # DATCOM's breakdowns are no news; no input error in any
    assert verdicts["clean"] + verdicts["noted"] > 0, verdicts
    pc9_like = [b for b in broke if "random" not in b[0]]
    assert not pc9_like, pc9_like


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*"))
                         if EXAMPLES.is_dir() else ["(none)"])
def test_public_decks_imported_and_written_again(datcom, session, name):
    src = EXAMPLES / name
    if not src.is_file():
        pytest.skip(f"{src} is absent")
    write_bytes(session / "uploads" / "deck.dat", src.read_bytes())
    doc = status_json(session)
    assert doc["problems"] == [], doc
    deck = read_bytes(session / "output" / "for005.dat")
    notes = [n for n in doc["notes"]
             if not n.startswith("uploads/deck.dat: ")]
    r = D.run(datcom, deck)
    assert D.judge(r, noted=bool(notes)) != "broke", r.summary()


# -- a seeded random sample over the whole parameter model ------------------

SAMPLE = 300            # sets drawn
SAMPLE_SECONDS = 60     # the loop stops drawing after this
BREAKDOWN_SHARE = 0.05


def r4(r, x):
    """x with 4 decimals mostly, sometimes every digit a double has (the
    numbers DATCOM's input check marked as 1.00001E0)."""
    return x if r.random() < 0.15 else round(x, 4)


def naca(r):
    """A section of any series, mostly ones aircraft fly, sometimes one
    flowfs refuses."""
    k = r.random()
    if k < 0.02:
        return r.choice(["64-000", "6015", "16-000", "0000"])
    if k < 0.35:
        m = r.choice([0, 0, 1, 2, 3, 4])
        return f"{m}{r.randint(2, 6) if m else 0}{r.randint(6, 24):02d}" + \
            (f"-{r.choice([3, 6])}{r.randint(1, 5)}" if r.random() < 0.1
             else "")
    if k < 0.5:
        return f"{r.choice([2, 3])}{r.choice([1, 2, 3, 4, 5])}" \
            f"{r.choice([0, 1])}{r.randint(8, 24):02d}"
    if k < 0.85:
        fam = r.choice(["63", "64", "65", "66", "631", "641", "642", "65A",
                        "64A", "63A"])
        d = f"{fam}{'' if fam.endswith('A') else '-'}" \
            f"{r.choice([0, 0, 1, 2, 3, 4])}{r.randint(6, 21):02d}"
        if fam.endswith("A") and r.random() < 0.3:
            d += f" A={r.choice(['0.8', '1.0', '0.5'])}"
        return d
    if k < 0.95:
        return f"16-{r.choice([0, 1, 2, 3])}{r.randint(6, 21):02d}"
    return f"S-1-{round(r.uniform(20, 60), 1)}-{round(r.uniform(2, 10), 1)}"


def surface(r, p, kind, length, rmax, wing_end):
    """A planform of `kind` sized and placed as on an aircraft: aspect
    ratios 1 to 12, tails behind the wing."""
    if kind == "wing":
        sspn = length * r.uniform(0.3, 0.8)
        chrdr = 4 * sspn / (1.5 * r.uniform(2, 12))
        x = length * r.uniform(0.2, 0.45)
    elif kind == "htail":
        sspn = length * r.uniform(0.1, 0.3)
        chrdr = 4 * sspn / (1.5 * r.uniform(2, 6))
        x = max(wing_end, length * r.uniform(0.75, 0.9))
    else:
        sspn = length * r.uniform(0.08, 0.25)
        chrdr = 2 * sspn / (1.5 * r.uniform(1, 3))
        x = max(wing_end, length * r.uniform(0.7, 0.9))
    pre = kind + "_"
    taper = r.choice([0.0, r.uniform(0.15, 1.0), r.uniform(0.15, 1.0)])
    p[pre + "naca"] = naca(r)
    p[pre + "chrdr"] = r4(r, chrdr)
    p[pre + "chrdtp"] = r4(r, chrdr * taper)
    p[pre + "sspn"] = r4(r, sspn)
    p[pre + "sspne"] = r4(r, sspn - min(rmax, 0.3 * sspn) *
                          r.uniform(0.5, 1.0))
    p[pre + "savsi"] = r4(r, r.uniform(-5, 60))
    if r.random() < 0.7:
        p[pre + "chstat"] = r.choice([0.0, 0.25, 1.0, r4(r, r.random())])
    if kind != "vtail":
        for k, lo, hi in (("twista", -5, 2), ("dhdadi", -5, 10)):
            if r.random() < 0.6:
                p[pre + k] = r4(r, r.uniform(lo, hi))
    p[pre + "type"] = r.choices([1, 2, 3], [0.7, 0.15, 0.15])[0]
    if p[pre + "type"] != 1 and r.random() < 0.95:
        p[pre + "sspnop"] = r4(r, sspn * r.uniform(0.3, 0.7))
        p[pre + "chrdbp"] = r4(r, p[pre + "chrdtp"] + (
            chrdr - p[pre + "chrdtp"]) * r.uniform(0.1, 0.6))
        p[pre + "savso"] = r4(r, r.uniform(-5, 60))
        if kind != "vtail" and r.random() < 0.4:
            p[pre + "dhdado"] = r4(r, r.uniform(-5, 10))
    xk, zk, ik = {"wing": ("xw", "zw", "aliw"),
                  "htail": ("xh", "zh", "alih"), "vtail": ("xv", "zv", "")}[
        kind]
    p[xk] = r4(r, x)
    p[zk] = r4(r, rmax * (r.uniform(-0.8, 0.8) if kind != "vtail"
                          else r.uniform(0.3, 1.0)))
    if ik and r.random() < 0.6:
        p[ik] = r4(r, r.uniform(-3, 5))
    return x + chrdr


def random_aircraft(r):
    """Every parameter of the model, present or left out, LOOP 1/2/3,
    DIM FT/IN/M/CM, any subset of surfaces, TYPE 1/2/3, Mach numbers
    subsonic to 25; sized like an aircraft so that what DATCOM answers is
    about flowfs, not about a wing inside the tail."""
    p = {}
    dim = r.choice([None, "FT", "IN", "M", "CM"])
    if dim:
        p["dim"] = dim
    length = r.uniform(4, 250) * {"FT": 1, "IN": 12, "M": 0.3048,
                                  "CM": 30.48}[dim or "FT"]
    if r.random() < 0.7:
        p["case_id"] = "".join(r.choice("ABCXYZ 0123456789-.()/'")
                               for _ in range(r.randint(1, 73))).strip() \
            or "C"
    n_a = r.randint(1, 20)
    wide = 89.9 if r.random() < 0.15 else None
    while True:
        a = sorted(r4(r, r.uniform(-(wide or 20), wide or 30))
                   for _ in range(n_a))
        if len(set(a)) == n_a:
            break
    p["nalpha"], p["alschd"] = n_a, a
    n_m = r.randint(1, 20) if r.random() < 0.5 else r.randint(1, 4)
    ranges = {"sub": (0.01, 0.59), "trans": (0.6, 1.39), "super": (1.4, 25)}
    regime = r.choices(["sub", "trans", "super", "mix"],
                       [0.6, 0.12, 0.12, 0.16])[0]
    m = [r4(r, r.uniform(*ranges[regime if regime != "mix" else
                                 r.choice(list(ranges))]))
         for _ in range(n_m)]
    p["nmach"], p["mach"] = n_m, sorted(m) if r.random() < 0.97 else m
    loop = r.choices([None, 1, 2, 3], [0.5, 0.2, 0.15, 0.15])[0]
    if loop:
        p["loop"] = loop
    n_h = n_m if loop in (None, 1) else r.randint(1, 20)
    alt = [r4(r, r.uniform(0, 60000) * (0.3048 if dim in ("M", "CM")
                                        else 1)) for _ in range(n_h)]
    if r.random() < 0.2:
        p["rnnub"] = [round(r.uniform(1e5, 5e7)) for _ in range(n_m)]
        if r.random() < 0.5:
            p["nalt"], p["alt"] = n_h, alt
    else:
        p["alt"] = alt
        if r.random() < 0.9:
            p["nalt"] = n_h
    if r.random() < 0.5:
        p["wt"] = r4(r, r.uniform(1, 1e6))
    n_x = r.randint(2, 20)
    x0 = r.choice([0.0, r.uniform(-0.1, 0.1) * length])
    while True:
        xs = sorted(r4(r, r.uniform(x0, x0 + length)) for _ in range(n_x))
        if len(set(xs)) == n_x:
            break
    p["nx"], p["x_coords"] = n_x, xs
    rmax = length / r.uniform(6, 15)

    def radius(x):
        u = (x - xs[0]) / (xs[-1] - xs[0])
        return rmax * (min(1.0, (u / 0.25) ** 0.6) if u < 0.7 else
                       1 - 0.7 * (u - 0.7) / 0.3)
    rs = [r4(r, radius(x)) for x in xs]
    if r.random() < 0.95:
        p["r_coords"] = rs
    if r.random() < 0.3:
        p["zu_coords"] = [r4(r, v * r.uniform(0.8, 1.2)) for v in rs]
        p["zl_coords"] = [r4(r, -v * r.uniform(0.8, 1.2)) for v in rs]
    for k, hi in (("itype", 3), ("method", 2)):
        if r.random() < 0.5:
            p[k] = r.randint(1, hi)
    p["xcg"] = r4(r, length * r.uniform(0.3, 0.6))
    p["zcg"] = r4(r, r.uniform(-0.3, 0.3) * rmax)
    wing_end = 0.0
    for kind, share in (("wing", 0.8), ("htail", 0.6), ("vtail", 0.6)):
        if r.random() < share:
            end = surface(r, p, kind, length, rmax, wing_end)
            if kind == "wing":
                wing_end = end
    if "wing_chrdr" in p:
        cr, ct, b = p["wing_chrdr"], p["wing_chrdtp"], p["wing_sspn"]
        ref = ((cr + ct) * b, 2 / 3 * (cr + ct - cr * ct / (cr + ct)), 2 * b)
    else:
        ref = (3.14 * rmax ** 2, 2 * rmax, 2 * rmax)
    for k, v in zip(("sref", "cbarr", "blref"), ref):
        if r.random() < 0.85:
            p[k] = r4(r, v * r.uniform(0.8, 1.2))
    if r.random() < 0.1:
        p["stmach"] = round(r.uniform(0.6, 0.99), 2)
    if r.random() < 0.1:
        p["tsmach"] = round(r.uniform(1.01, 1.4), 2)
    if r.random() < 0.3:
        p["deriv"] = r.choice(["DEG", "RAD"])
    for k in ("damp", "build"):
        if r.random() < 0.2:
            p[k] = r.random() < 0.7
    for k in ("alschd", "mach", "alt", "x_coords", "r_coords", "zu_coords",
              "zl_coords", "rnnub"):
        if k in p and r.random() < 0.2:
            p[k] = ",".join(repr(x) for x in p[k])
    return p


def test_random_sample(datcom, session, capsys):
    seed = int(os.environ.get("FLOWFS_DATCOM_SEED") or
               random.SystemRandom().randrange(1 << 32))
    r = random.Random(seed)
    replay = f"seed {seed} (FLOWFS_DATCOM_SEED={seed} replays it)"
    counts, kinds, started = Counter(), Counter(), time.monotonic()
    for i in range(SAMPLE):
        if time.monotonic() - started > SAMPLE_SECONDS:
            break
        p = random_aircraft(r)
        got = request(session, p)
        if got != 0:
            counts["refused"] += 1
            continue
        doc = status_json(session)
        if doc["problems"]:
            assert all(x.startswith(("output/for005.dat: parameter.",
                                     "missing required parameters: "))
                       for x in doc["problems"]), (replay, i, doc, p)
            counts["refused"] += 1
            continue
        deck = read_bytes(session / "output" / "for005.dat")
        res = D.run(datcom, deck)
        try:
            v = D.judge(res, noted=bool(doc["notes"]))
        except AssertionError as e:
            raise AssertionError(f"{replay}, set {i}: {e}\n{json.dumps(p)}"
                                 f"\n{deck.decode()}") from None
        counts[v] += 1
        if v == "broke":
            kinds[D.breakdown_kind(res)] += 1
    run = counts["clean"] + counts["noted"] + counts["broke"]
    line = (f"DATCOM random sample, {replay}: {sum(counts.values())} sets "
            f"in {time.monotonic() - started:.0f} s: {counts['clean']} "
            f"clean, {counts['noted']} noted, {counts['refused']} refused, "
            f"{counts['broke']} broke down ({dict(kinds)})")
    with capsys.disabled():
        print(f"\n{line}", file=sys.stderr)
    report(line)
    assert run >= 100, line
    assert counts["clean"] >= run / 3, line
    assert counts["broke"] < BREAKDOWN_SHARE * run, line
