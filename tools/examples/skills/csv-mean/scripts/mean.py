#!/usr/bin/env python3
"""mean.py FILE COLUMN: the mean of COLUMN of the CSV file FILE (a header
row first), printed as {"column": ..., "mean": ..., "rows": ...}.  Cells
that are empty or not numbers are left out; no number at all is an error."""

import csv
import json
import sys


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, column = argv[1], argv[2]
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    if rows and column not in rows[0]:
        print(f"mean.py: {path} has no column {column!r}", file=sys.stderr)
        return 1
    values = []
    for row in rows:
        try:
            values.append(float(row[column]))
        except (TypeError, ValueError):
            pass
    if not values:
        print(f"mean.py: column {column!r} holds no number", file=sys.stderr)
        return 1
    print(json.dumps({"column": column, "mean": sum(values) / len(values),
                      "rows": len(values)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
