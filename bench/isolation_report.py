"""docs/benchmarks/isolation.{json,md}: one object a line in the JSON, `bench` naming the item of
issue 16 it measures; the Markdown is rebuilt from those lines, each carrying its own section.
A benchmark replaces its own line and leaves the others'."""

import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "benchmarks" / "isolation.json"


def record(entry, markdown):
    lines = []
    if OUT.exists():
        lines = [json.loads(line) for line in OUT.read_text().splitlines() if line.strip()]
    lines = [line for line in lines if line["bench"] != entry["bench"]] + [dict(entry, markdown=markdown)]
    OUT.write_text("".join(json.dumps(line) + "\n" for line in lines))
    md = ["# Isolation under attack and fault (issue 16)", "",
          "Each section is written by its benchmark; `isolation.json` holds the same figures, one object a line, "
          "`bench` naming the item.", ""]
    for line in lines:
        md += line["markdown"] + [""]
    OUT.with_suffix(".md").write_text("\n".join(md))
