"""A stand-in for a model provider's API, so that a real agent CLI (Claude Code, Codex)
runs a session here: each request is answered, streamed as the provider streams, with the
next scripted turn (a tool call by name, or text), and kept for the test to read. A turn
may wait for `release` first, so that a test can act while the session waits for its
model. Each provider's stream is a function from a turn to its server-sent events."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

Turn = dict
Stream = Callable[[Turn, int], list[dict]]


def cli(variable: str) -> str:
    """The agent CLI the environment variable names (scripts/test installs each from npm)."""
    explicit = os.environ.get(variable)
    if not explicit:
        pytest.skip(f"{variable} names no agent CLI (scripts/test installs them)")
    return explicit


class Model:
    def __init__(self, stream: Stream, turns: list[Turn], path: str = "/v1/messages") -> None:
        self.turns = turns
        self.requests: list[dict] = []
        self.waiting = threading.Event()
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                if self.path.split("?")[0] != path:
                    self.send_response(404)
                    self.end_headers()
                    return
                n = len(outer.requests)
                turn = outer.turns[min(n, len(outer.turns) - 1)]
                outer.requests.append(body)
                if turn.get("wait"):
                    outer.waiting.set()
                    outer.release.wait(120)
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()
                for event in stream(turn, n):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())

            def log_message(self, *_args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def anthropic_turn(turn: Turn, n: int) -> list[dict]:
    """One assistant turn as the Messages API streams it (Claude Code)."""
    if "tool" in turn:
        start = {"type": "tool_use", "id": f"toolu_{n}", "name": turn["tool"], "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(turn.get("input", {}))}
        stop = "tool_use"
    else:
        start, delta, stop = {"type": "text", "text": ""}, {"type": "text_delta", "text": turn["text"]}, "end_turn"
    message = {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": "stand-in", "content": [],
               "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
    return [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]


def openai_turn(turn: Turn, n: int) -> list[dict]:
    """One response as the Responses API streams it (Codex). An MCP tool is called in its
    server's namespace (`mcp__amc`), as Codex lists it."""
    if "tool" in turn:
        namespace, name = turn["tool"].rsplit("__", 1)
        item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}", "namespace": namespace,
                "name": name, "arguments": json.dumps(turn.get("input", {})), "status": "completed"}
    else:
        item = {"type": "message", "id": f"m_{n}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": turn["text"], "annotations": []}]}
    usage = {"input_tokens": 1, "output_tokens": 1, "total_tokens": 2, "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}
    response = {"id": f"resp_{n}", "object": "response", "status": "completed", "output": [item], "usage": usage}
    return [
        {"type": "response.created", "response": {**response, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {"type": "response.completed", "response": response},
    ]
