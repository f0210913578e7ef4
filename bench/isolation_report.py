"""docs/benchmarks/isolation.{json,md}: one object a line in the JSON, `bench` naming the item of
issue 16 it measures (see `line_report`)."""

from line_report import record_lines


def record(entry, markdown):
    record_lines("isolation", "Isolation under attack and fault (issue 16)", [dict(entry, markdown=markdown)])
