"""The client's error codes are the protocol's: checked against schema/methods.json, which the
pod generates from its own list, so a code added to the pod fails here until the client has it."""

from __future__ import annotations

import json
import pathlib
import unittest

from pod_client import errors

METHODS_JSON = pathlib.Path(__file__).resolve().parents[3] / "schema" / "methods.json"


class ErrorCodesTest(unittest.TestCase):
    def test_every_code_of_the_protocol_has_its_name(self) -> None:
        listed = {e["code"]: e["name"] for e in json.loads(METHODS_JSON.read_text())["errors"]}
        self.assertEqual(errors.ERROR_NAMES, listed)


if __name__ == "__main__":
    unittest.main()
