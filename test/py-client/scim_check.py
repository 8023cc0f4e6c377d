"""scim2-tester's checks of a SCIM 2.0 server, for test/integration/scim-compliance.test.ts.

Usage: scim_check.py BASE_URL [TAG...]
  BASE_URL   the SCIM base, e.g. http://127.0.0.1:4000/scim/v2
  TAG        run only the checks with one of these tags (scim2-tester's include_tags:
             discovery, crud, crud:read, patch, misc, ...); none: all of them
Environment: SCIM_TOKEN, the bearer token every request carries (an environment
variable rather than an argument, so that no process listing shows it).

Output, standard output: one JSON object per line and per result of a check:
  {"name": "User object_creation", "title": "object_creation", "resource_type": "User",
   "status": "SUCCESS" | "COMPLIANT" | "ACCEPTABLE" | "DEVIATION" | "ERROR" | "CRITICAL" | "SKIPPED",
   "reason": ..., "description": the first line of the check's docstring, "data": ...,
   "exchanges": [{"method", "url", "request", "status", "response"}, ...]}
"name" is the title, prefixed by the resource type and suffixed by the attribute a
PATCH check tried, when there are. "exchanges" (only on ERROR and CRITICAL) are the
HTTP requests the check sent and what the server answered; for a PATCH check, those
from the PATCH of the attribute that failed; not the deletions scim2-tester cleans up
with after each check. No header is recorded: the token stays out.
Exit status 0 whatever the checks found; 1 when the driver itself fails.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from typing import Any

import httpx2
import scim2_tester.checker
import scim2_tester.checkers.patch_add
import scim2_tester.checkers.patch_replace
import scim2_tester.filling
from pydantic import BaseModel
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_tester import CheckResult, Status, check_server
from scim2_tester.utils import ResourceManager

FAILED = {Status.ERROR, Status.CRITICAL}

# Every HTTP exchange, in order; those of scim2-tester's clean-up between checks are marked.
exchanges: list[dict[str, Any]] = []
cleaning = False
# id(result) -> the exchanges of the check that made it.
result_exchanges: dict[int, list[dict[str, Any]]] = {}


class RecordingClient(SyncSCIMClient):
    """scim2-client's httpx2 engine, keeping each request and response for the report."""

    def request(self, method: str, url: str, **kwargs: Any) -> httpx2.Response:
        entry: dict[str, Any] = {"method": method, "url": url}
        if cleaning:
            entry["cleanup"] = True
        if kwargs.get("params"):
            entry["params"] = kwargs["params"]
        if kwargs.get("json") is not None:
            entry["request"] = kwargs["json"]
        exchanges.append(entry)
        response = super().request(method, url, **kwargs)
        entry["status"] = response.status_code
        try:
            entry["response"] = response.json() if response.text else None
        except ValueError:
            entry["response"] = response.text
        return response


def marking_cleanup(cleanup: Any) -> Any:
    """Wraps ResourceManager.cleanup, which deletes after each check what it created (and, as it
    never forgets them, everything created before: 404s), so that a report leaves those out."""

    @functools.wraps(cleanup)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        global cleaning
        cleaning = True
        try:
            return cleanup(*args, **kwargs)
        finally:
            cleaning = False

    return wrapped


def exchange_recording(check: Any) -> Any:
    """Wraps a check so that the results it returns know the exchanges it made.

    Checks call one another through their modules' globals (check_server the
    discovery checks, resource_type_tests the CRUD ones), so wrapping those names
    reaches every check; the innermost one claims a result first.
    """

    @functools.wraps(check)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        start = len(exchanges)
        results = check(*args, **kwargs)
        for result in results:
            result_exchanges.setdefault(id(result), exchanges[start:])
        return results

    return wrapped


def instrument() -> None:
    ResourceManager.cleanup = marking_cleanup(ResourceManager.cleanup)
    for module in [scim2_tester.checker, *_checker_modules()]:
        for name, value in list(vars(module).items()):
            if callable(value) and (hasattr(value, "tags") or name == "resource_type_tests"):
                setattr(module, name, exchange_recording(value))


def _checker_modules() -> list[Any]:
    return [module for name, module in sys.modules.items() if name.startswith("scim2_tester.checkers.")]


def plain(value: Any) -> Any:
    """What JSON can hold of a check's data: models dumped, responses as status and body."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, httpx2.Response):
        try:
            body: Any = value.json() if value.text else None
        except ValueError:
            body = value.text
        return {"status": value.status_code, "body": body}
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(item) for item in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return repr(value)


def report(result: CheckResult) -> dict[str, Any]:
    attribute = result.data.get("urn") if isinstance(result.data, dict) else None
    name = " ".join(part for part in (result.resource_type, result.title, attribute) if part)
    line: dict[str, Any] = {
        "name": name,
        "title": result.title,
        "resource_type": result.resource_type,
        "status": result.status.name,
        "reason": result.reason,
        "description": (result.description or "").strip().split("\n")[0],
        "data": plain(result.data),
    }
    if result.status in FAILED:
        made = [entry for entry in result_exchanges.get(id(result), []) if not entry.get("cleanup")]
        if attribute:
            made = of_attribute(made, attribute)
        elif (method := (result.reason or "").split(" ")[0]) in {"POST", "PUT", "PATCH", "DELETE"}:
            # The discovery endpoints' method checks: one result per method tried.
            made = [entry for entry in made if entry["method"] == method] or made
        line["exchanges"] = made
    return line


def of_attribute(made: list[dict[str, Any]], attribute: str) -> list[dict[str, Any]]:
    """The exchanges from the PATCH of this attribute to the next PATCH: a PATCH check tries each attribute in turn."""
    start = next((i for i, entry in enumerate(made) if attribute in patched_paths(entry)), None)
    if start is None:
        return made
    end = next((i for i in range(start + 1, len(made)) if made[i]["method"] == "PATCH"), len(made))
    return made[start:end]


def patched_paths(entry: dict[str, Any]) -> list[str]:
    body = entry.get("request") if entry["method"] == "PATCH" else None
    operations = body.get("Operations", []) if isinstance(body, dict) else []
    return [str(operation.get("path")) for operation in operations if isinstance(operation, dict)]


def main() -> int:
    if len(sys.argv) < 2 or "SCIM_TOKEN" not in os.environ:
        print(__doc__, file=sys.stderr)
        return 2
    base_url, tags = sys.argv[1], set(sys.argv[2:]) or None
    instrument()
    http = httpx2.Client(
        base_url=base_url,
        headers={"Authorization": f"Bearer {os.environ['SCIM_TOKEN']}"},
        timeout=30,
    )
    with http:
        results = check_server(RecordingClient(http), include_tags=tags)
    for result in results:
        print(json.dumps(report(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
