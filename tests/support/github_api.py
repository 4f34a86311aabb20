"""A local stand-in for api.github.com, held to GitHub's own OpenAPI description.

Every request body the client sends is validated against the operation's request schema in
@octokit/openapi (generated/api.github.com.json), and every canned response, taken from the
examples in that same description, against the response schema. `.ci/run` installs the npm
packages into .ci/npm; REPROGATE_OCTOKIT points elsewhere.
"""

from __future__ import annotations

import copy
import http.server
import json
import os
import re
import threading
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import REPO

OCTOKIT = Path(os.environ.get("REPROGATE_OCTOKIT", REPO / ".ci" / "npm" / "node_modules" / "@octokit"))


def _nullable(node: Any) -> None:
    """OpenAPI 3.0's `nullable: true` as JSON Schema: add "null" to the type."""
    if isinstance(node, dict):
        if node.get("nullable") is True and isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if isinstance(node.get("enum"), list) and None not in node["enum"]:
                node["enum"].append(None)  # OpenAPI 3.0: nullable allows null whatever the enum lists
        for value in node.values():
            _nullable(value)
    elif isinstance(node, list):
        for value in node:
            _nullable(value)


class OpenAPI:
    def __init__(self) -> None:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT4

        self.doc = json.loads((OCTOKIT / "openapi" / "generated" / "api.github.com.json").read_text())
        _nullable(self.doc)
        self.registry = Registry().with_resource("urn:github", Resource(self.doc, DRAFT4))
        self.templates = [(re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", p) + "$"), p) for p in self.doc["paths"]]

    def operation(self, method: str, path: str) -> tuple[str, dict[str, Any]]:
        route = path.split("?")[0]
        for regex, template in self.templates:
            if regex.match(route) and method.lower() in self.doc["paths"][template]:
                return template, self.doc["paths"][template][method.lower()]
        raise AssertionError(f"{method} {route} is not an operation in GitHub's OpenAPI description")

    def _validate(self, pointer: str, value: Any) -> None:
        from jsonschema import Draft4Validator

        Draft4Validator({"$ref": f"urn:github#{pointer}"}, registry=self.registry).validate(value)

    @staticmethod
    def _escape(text: str) -> str:
        return text.replace("~", "~0").replace("/", "~1")

    def check_request(self, method: str, path: str, body: Any) -> str:
        template, op = self.operation(method, path)
        schema = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
        if schema is not None:
            self._validate(f"/paths/{self._escape(template)}/{method.lower()}/requestBody/content/application~1json/schema", body)
        return op["operationId"]

    def example(self, method: str, path: str, status: int) -> Any:
        _, op = self.operation(method, path)
        content = self._deref(op["responses"][str(status)]).get("content", {}).get("application/json", {})
        examples = content.get("examples") or {}
        first = next(iter(examples.values()), {})
        return copy.deepcopy(self._deref(first).get("value"))

    def check_response(self, method: str, path: str, status: int, body: Any) -> None:
        template, op = self.operation(method, path)
        response = op["responses"].get(str(status))
        assert response is not None, f"{op['operationId']} documents no {status} response"
        if body is None:
            return
        pointer = f"/paths/{self._escape(template)}/{method.lower()}/responses/{status}"
        if "$ref" in response:
            pointer = response["$ref"].lstrip("#")
            response = self._deref(response)
        if "application/json" in response.get("content", {}):
            self._validate(pointer + "/content/application~1json/schema", body)

    def _deref(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part.replace("~1", "/").replace("~0", "~")]
            node = target
        return node


def webhook(event: str, action: str | None, index: int = 0) -> dict[str, Any]:
    examples = json.loads((OCTOKIT / "webhooks-examples" / "api.github.com" / "index.json").read_text())
    entry = next(e for e in examples if e["name"] == event)
    matching = [e for e in entry["examples"] if action is None or e.get("action") == action]
    return copy.deepcopy(matching[index])


@dataclass
class FakeGitHub:
    api: OpenAPI
    repo: str
    requests: list[tuple[str, str, Any, str]] = field(default_factory=list)  # method, path, body, operationId
    faults: dict[str, list[tuple[int, dict[str, str], Any]]] = field(default_factory=dict)  # operationId -> queued answers
    comments: list[dict[str, Any]] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=dict)
    dispatch_status: int = 200
    statuses: list[dict[str, Any]] = field(default_factory=list)  # every status posted, oldest first; "sha" is the commit
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)  # number -> pulls/get answer (see add_pull)
    runs: dict[int, dict[str, Any]] = field(default_factory=dict)  # run id -> actions/get-workflow-run answer (see add_run)
    issue_events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # number -> issues/list-events answer
    check_runs: list[dict[str, Any]] = field(default_factory=list)  # every check run, as GitHub keeps it (annotations appended)
    token_app: str = "github-actions"  # the app GitHub names as a created check run's creator
    link: str | None = None  # a Link header to send with list answers (pagination attacks)
    url: str = ""
    _clock: int = 0

    def operations(self) -> list[str]:
        return [r[3] for r in self.requests]

    def now(self) -> str:
        """A server clock that moves one second per call, as GitHub's created_at values do."""
        import datetime

        self._clock += 1
        return (datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(seconds=self._clock)).strftime("%Y-%m-%dT%H:%M:%SZ")

    def post_status(
        self, sha: str, state: str, context: str, description: str = "", target_url: str | None = None, creator: str = "github-actions[bot]"
    ) -> dict[str, Any]:
        """A status as GitHub stores it (also used by tests to stand for a status another workflow posted)."""
        status = self.api.example("POST", f"/repos/{self.repo}/statuses/{sha}", 201)
        status.update(id=len(self.statuses) + 1, state=state, context=context, description=description, target_url=target_url, created_at=self.now())
        status["updated_at"] = status["created_at"]
        status["creator"]["login"] = creator
        self.statuses.append(dict(status, sha=sha))
        return status

    def statuses_on(self, sha: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in s.items() if k != "sha"} for s in self.statuses if s["sha"] == sha]

    @staticmethod
    def _annotate(run: dict[str, Any], body: dict[str, Any]) -> None:
        """GitHub appends the annotations of each request (at most 50 each: the schema says so)."""
        annotations = (body.get("output") or {}).get("annotations") or []
        run["annotations"].extend(annotations)
        run["output"]["annotations_count"] = len(run["annotations"])

    def add_pull(
        self, number: int, head: str, base: str, *, fork: bool = False, labels: tuple[str, ...] = (), state: str = "open", base_repo: str | None = None
    ) -> None:
        pr = self.api.example("GET", f"/repos/{self.repo}/pulls/{number}", 200)
        pr.update(number=number, state=state, requested_teams=[])  # GitHub's own example team lacks a field its schema requires
        pr["head"]["sha"], pr["base"]["sha"] = head, base
        pr["base"]["repo"]["full_name"] = base_repo or self.repo
        pr["head"]["repo"]["full_name"] = "someone/repro-fork" if fork else self.repo
        template = pr["labels"][0] if pr["labels"] else {}
        pr["labels"] = [dict(template, name=name) for name in labels]
        self.pulls[number] = pr

    def add_run(self, run_id: int, *, path: str, event: str = "workflow_dispatch", branch: str = "main", title: str | None = None) -> str:
        run = self.api.example("GET", f"/repos/{self.repo}/actions/runs/{run_id}", 200)
        run.update(id=run_id, path=path, event=event, head_branch=branch, html_url=f"https://github.com/{self.repo}/actions/runs/{run_id}")
        if title is not None:
            run["display_title"] = title
        self.runs[run_id] = run
        return run["html_url"]

    def label_event(self, number: int, label: str, actor: str, event: str = "labeled") -> None:
        example = self.api.example("GET", f"/repos/{self.repo}/issues/{number}/events", 200)
        item = next((e for e in example if e.get("event") == "labeled"), example[0])
        item = dict(item, event=event, created_at=self.now(), label={"name": label, "color": "ededed"})
        item["actor"] = dict(item["actor"], login=actor)
        self.issue_events.setdefault(number, []).append(item)

    @staticmethod
    def _summary_too_large(operation: str, body: Any) -> tuple[int, dict[str, str], Any] | None:
        """GitHub's own refusal of a check run whose summary or text is over 65,535 bytes of UTF-8
        (the OpenAPI description says characters; the API counts bytes: github/docs#35252)."""
        if operation not in ("checks/create", "checks/update") or not isinstance(body, dict):
            return None
        for name in ("summary", "text"):
            value = (body.get("output") or {}).get(name)
            if isinstance(value, str) and len(value.encode("utf-8")) > 65_535:
                error = {"resource": "CheckRun", "code": "custom", "field": name, "message": f"{name} exceeds a maximum bytesize of 65535"}
                docs = "https://docs.github.com/rest/checks/runs"
                return 422, {}, {"message": "Validation Failed", "errors": [error], "documentation_url": docs, "status": "422"}
        return None

    def answer(self, method: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
        operation = self.api.check_request(method, path, body)
        self.requests.append((method, path, body, operation))
        queued = self.faults.get(operation)
        if queued:
            return queued.pop(0)
        route = path.split("?")[0]
        too_large = self._summary_too_large(operation, body)
        if too_large is not None:
            return too_large
        if operation == "repos/create-commit-status":
            return 201, {}, self.post_status(route.rsplit("/", 1)[-1], body["state"], body["context"], body.get("description") or "", body.get("target_url"))
        if operation == "repos/list-commit-statuses-for-ref":
            sha = route.split("/")[-2]
            return 200, ({"Link": self.link} if self.link else {}), list(reversed(self.statuses_on(sha)))
        if operation == "checks/create":
            run = self.api.example(method, path, 201)
            run.update(id=len(self.check_runs) + 1, name=body["name"], head_sha=body["head_sha"], details_url=body.get("details_url"))
            run["app"] = dict(run["app"] or {}, slug=self.token_app)  # the app of the token that asked (GITHUB_TOKEN: github-actions)
            run["external_id"] = body.get("external_id")
            run.update(status=body.get("status", "queued"), conclusion=body.get("conclusion"), started_at=body.get("started_at") or self.now())
            run["completed_at"] = body.get("completed_at")
            if body.get("conclusion"):
                run["status"] = "completed"
            run["output"] = dict(run["output"], title=body["output"]["title"], summary=body["output"]["summary"], annotations_count=0)
            run["annotations"] = []
            self._annotate(run, body)
            self.check_runs.append(run)
            return 201, {}, {k: v for k, v in run.items() if k != "annotations"}
        if operation == "checks/update":
            run = next((r for r in self.check_runs if r["id"] == int(route.rsplit("/", 1)[-1])), None)
            if run is None:
                return 404, {}, {"message": "Not Found"}
            for key in ("status", "conclusion", "started_at", "completed_at", "details_url"):
                if key in body:
                    run[key] = body[key]
            if body.get("conclusion"):
                run["status"] = "completed"
            if "output" in body:
                run["output"].update(title=body["output"]["title"], summary=body["output"]["summary"])
            self._annotate(run, body)
            return 200, {}, {k: v for k, v in run.items() if k != "annotations"}
        if operation == "checks/list-for-ref":
            sha, query = route.split("/")[-2], urllib.parse.parse_qs(path.partition("?")[2])
            named = [r for r in self.check_runs if r["head_sha"] == sha and r["name"] in query.get("check_name", [r["name"]])]
            return 200, {}, {"total_count": len(named), "check_runs": [{k: v for k, v in r.items() if k != "annotations"} for r in reversed(named)]}
        if operation == "pulls/get":
            number = int(route.rsplit("/", 1)[-1])
            if number not in self.pulls:
                return 404, {}, {"message": "Not Found"}
            return 200, {}, self.pulls[number]
        if operation == "actions/get-workflow-run":
            run_id = int(route.rsplit("/", 1)[-1])
            if run_id not in self.runs:
                return 404, {}, {"message": "Not Found"}
            return 200, {}, self.runs[run_id]
        if operation == "issues/list-events":
            return 200, {}, self.issue_events.get(int(route.split("/")[-2]), [])
        if operation == "actions/create-workflow-dispatch":
            if self.dispatch_status == 204:
                return 204, {}, None
            return (
                200,
                {},
                {
                    "workflow_run_id": 4242,
                    "run_url": f"{self.url}/repos/{self.repo}/actions/runs/4242",
                    "html_url": f"https://github.com/{self.repo}/actions/runs/4242",
                },
            )
        if operation == "actions/list-workflow-runs":
            runs = self.api.example(method, path, 200)
            dispatched = next(r[2] for r in reversed(self.requests) if r[3] == "actions/create-workflow-dispatch")
            runs["workflow_runs"][0].update(
                display_title=f"rebuild {dispatched['inputs']['correlation']}", html_url=f"https://github.com/{self.repo}/actions/runs/777"
            )
            return 200, {}, runs
        if operation == "issues/list-comments":
            return 200, {}, self.comments
        if operation == "issues/create-comment":
            comment = self.api.example(method, path, 201)
            comment.update(id=1000 + len(self.comments), body=body["body"])
            comment["user"]["login"] = "github-actions[bot]"
            self.comments.append(comment)
            return 201, {}, comment
        if operation == "issues/update-comment":
            comment_id = int(route.rsplit("/", 1)[-1])
            comment = next(c for c in self.comments if c["id"] == comment_id)
            comment["body"] = body["body"]
            return 200, {}, comment
        if operation == "repos/get-collaborator-permission-level":
            user = route.split("/")[-2]
            answer = self.api.example(method, path, 200)
            answer["permission"] = self.permissions.get(user, "read")
            answer["role_name"] = answer["permission"]
            answer["user"].update(login=user, role_name=answer["permission"])
            return 200, {}, answer
        if operation == "issues/remove-label":
            return 200, {}, []
        if operation == "repos/get-combined-status-for-ref":
            combined = self.api.example(method, path, 200)
            mine = self.statuses_on(route.split("/")[-2])
            combined["statuses"] = [dict(combined["statuses"][0], **{k: s[k] for k in ("state", "context", "description")}) for s in mine]
            combined["state"] = "success" if all(s["state"] == "success" for s in mine) and mine else "pending"
            return 200, {}, combined
        raise AssertionError(f"the fake GitHub has no answer for {operation}")


def serve(fake: FakeGitHub) -> tuple[http.server.ThreadingHTTPServer, str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else None
            assert self.headers.get("X-GitHub-Api-Version"), "requests must name the API version"
            assert self.headers.get("Authorization", "").startswith("Bearer "), "requests must carry the token"
            try:
                status, headers, answer = fake.answer(self.command, self.path, body)
                if answer is not None and status < 300 and not isinstance(answer, bytes):  # bytes: a hostile answer, sent as it is
                    fake.api.check_response(self.command, self.path, status, answer)
            except AssertionError as exc:
                status, headers, answer = 599, {}, {"message": f"contract violation: {exc}"}
            except Exception as exc:  # noqa: BLE001 - surface schema errors to the test
                status, headers, answer = 598, {}, {"message": f"contract violation: {exc}"[:2000]}
            payload = b"" if answer is None else answer if isinstance(answer, bytes) else json.dumps(answer).encode()
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PATCH = do_DELETE = _handle

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    return server, fake.url
