"""URL inputs when a session is bound to another skill: the request it
holds gets the new skill's downloads at once (they once waited for the
next write of request.json).  A regression from the review of issue 11."""

import os

from conftest import put_json
from test_engine import (bind, bind_with, csv_skill, engine, files,  # noqa: F401
                         run_mount, wait_fetch)


def test_rebinding_fetches_the_new_skills_url_inputs(run_mount, skill_folder,
                                                     files):
    csv_skill(skill_folder)
    # the same input as text: a URL there is no file to fetch
    skill_folder.add("notes", input={"type": "object", "properties": {
        "csv_file": {"type": "string", "x-input-source": "inline"}}})
    files.files["train.csv"] = b"name,fare\nx,7.25\n"
    fs = run_mount()
    s = fs.mnt / "s"
    os.mkdir(s)
    bind_with(s, "notes", {"input": {"csv_file": f"{files.base}/file/train.csv"}})
    assert os.listdir(s / "uploads") == []
    assert bind(s, "stats") == 0
    assert wait_fetch(s) == "fetch uploads/csv_file.csv: done: 0.0 MiB"
    assert os.listdir(s / "uploads") == ["csv_file.csv"]
    assert put_json(s / "session.json", {"title": "unchanged skill"}) == 0
    assert files.hits.get("/file/train.csv") == 1
