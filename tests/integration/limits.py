"""The input limits README's "Bounded work" table states (core/deck.h,
core/graph.h, core/roundstore.h, core/context.h, fs/ops.c), for the
tests that go just past them (test_limits.py) and the bench that goes
right up to them (tests/bench/bench_limits.py)."""

MiB = 1024 * 1024
DECK_MAX_SIZE = MiB
DECK_MAX_CASES = 300
DECK_MAX_NAMELISTS = 3000
GRAPH_MAX_NODES = 20000
GRAPH_MAX_EDGES = 20000
GRAPH_PENDING_MAX = 1000
GRAPH_PENDING_SIZE = 4096
ROUND_MAX = MiB
ROUNDS_TOTAL_MAX = 16 * MiB
CONTEXT_MAX = MiB
DOC_MAX = 16 * MiB
DOC_SESSION_BUDGET = 64 * MiB
DOC_MOUNT_BUDGET = 256 * MiB

# The limits of names and files (README "The tree", "The job graph",
# "Scientific rounds"; core/lib/fname.h, core/graph/graph_check.c,
# core/store/tree.h, core/session/roundstore.h, session.h, inputs.c)
NAME_MAX = 255
GRAPH_ID_MAX = 250
FILE_MAX = 2 ** 44 - 4096
ROUNDS_MAX = 1000
LOG_KEEP = 500
URL_MAX = 8191

# The job graph's picture (core/graph/picture.h): laid out up to these
PICTURE_MAX_NODES = 500
PICTURE_MAX_EDGES = 1000
