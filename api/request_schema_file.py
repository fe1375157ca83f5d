"""examples/request.schema.json, generated from the one request schema (workflows/request_shape.py).

After changing that schema, regenerate the file with `python -m api.request_schema_file`;
tests/workflows/test_requests.py fails while the committed file differs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic.json_schema import GenerateJsonSchema

from workflows.request_shape import request_schema

COMMAND = "python -m api.request_schema_file"
PATH = Path(__file__).resolve().parents[1] / "examples" / "request.schema.json"


class _NamedFields(GenerateJsonSchema):
    """Fields are documented by their names, without titles made from them ("Request Id")."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


def request_json_schema() -> str:
    """The request file's JSON Schema, as committed (2020-12, two-space indents)."""
    schema = _NamedFields().generate(request_schema(nested=True))
    document = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    """Write the request's JSON Schema over examples/request.schema.json."""
    PATH.write_text(request_json_schema(), encoding="utf-8")
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
