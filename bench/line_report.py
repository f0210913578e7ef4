"""docs/benchmarks/NAME.{json,md} kept as one object a line in the JSON, `bench` naming what each
measures; the Markdown is rebuilt from those lines, each carrying its own section. A benchmark
replaces its own line (or lines, `replaces` naming them) and leaves the others'."""

import json
import pathlib

DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs" / "benchmarks"


def record_lines(name, title, entries, replaces=None):
    """Writes `entries` (each with its `markdown` list) over the lines whose `bench` is in
    `replaces` (by default, the entries' own)."""
    out = DOCS / f"{name}.json"
    replaces = set(replaces or (e["bench"] for e in entries))
    lines = []
    if out.exists():
        lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    lines = [line for line in lines if line["bench"] not in replaces] + list(entries)
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    md = [f"# {title}", "",
          f"Each section is written by its benchmark; `{name}.json` holds the same figures, one object a line, "
          "`bench` naming what it measures.", ""]
    for line in lines:
        md += line.get("markdown", []) + ([""] if line.get("markdown") else [])
    out.with_suffix(".md").write_text("\n".join(md))
