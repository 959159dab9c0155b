#!/usr/bin/env python3
"""A tiny MCP server over stdio (newline-delimited JSON-RPC 2.0) for baton's tests.

Tools: echo, image, fail, crash, sleep, whoami, spawn, odd.name.
  crash   writes a line to stderr and exits at once without answering.
  whoami  answers with the process id, the working directory, $MCP_TEST_VAR and $HOME.
Option: --fail-start  print a message to stderr and exit 2 before reading anything.
"""
import json
import os
import subprocess
import sys
import time

# A 1x1 red PNG.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

TOOLS = [
    {
        "name": "echo",
        "description": "Answer with the text given.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    },
    {
        "name": "image",
        "description": "Answer with a caption and a 1x1 PNG.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "fail",
        "description": "Answer with isError set.",
        "inputSchema": {
            "type": "object",
            "properties": {"message": {"type": "string"}},
        },
    },
    {
        "name": "crash",
        "description": "Exit at once without answering.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "sleep",
        "description": "Sleep, then answer.",
        "inputSchema": {
            "type": "object",
            "properties": {"seconds": {"type": "number"}},
        },
    },
    {
        "name": "whoami",
        "description": "Process id, working directory, $MCP_TEST_VAR and $HOME.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "spawn",
        "description": "Start `sleep 300` in a session of its own (as browsers do); answer its pid.",
        "inputSchema": {"type": "object", "properties": {}},
    },
    {
        "name": "odd.name",
        "description": "A tool whose name has a dot.",
        "inputSchema": {"type": "object", "properties": {}},
    },
]


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def text(t):
    return {"type": "text", "text": t}


def call(name, args):
    if name == "echo":
        return {"content": [text(args.get("text", ""))]}
    if name == "image":
        return {
            "content": [
                text("a red pixel"),
                {"type": "image", "data": PNG, "mimeType": "image/png"},
            ]
        }
    if name == "fail":
        return {"content": [text(args.get("message", "it failed"))], "isError": True}
    if name == "crash":
        sys.stderr.write("test server: crashing on purpose\n")
        sys.stderr.flush()
        os._exit(3)
    if name == "sleep":
        time.sleep(float(args.get("seconds", 1)))
        return {"content": [text("slept")]}
    if name == "whoami":
        who = {
            "pid": os.getpid(),
            "cwd": os.getcwd(),
            "var": os.environ.get("MCP_TEST_VAR"),
            "home": os.environ.get("HOME"),
        }
        return {"content": [text(json.dumps(who))]}
    if name == "spawn":
        p = subprocess.Popen(
            ["sleep", "300"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return {"content": [text(str(p.pid))]}
    if name == "odd.name":
        return {"content": [text("odd")]}
    return None


def main():
    if "--fail-start" in sys.argv:
        sys.stderr.write("test server: cannot start: missing widget\n")
        sys.stderr.flush()
        sys.exit(2)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        msg = json.loads(line)
        method = msg.get("method")
        mid = msg.get("id")
        if mid is None:
            continue  # a notification
        if method == "initialize":
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "baton-test-server", "version": "1.0"},
                    },
                }
            )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": TOOLS}})
        elif method == "tools/call":
            params = msg.get("params") or {}
            result = call(params.get("name"), params.get("arguments") or {})
            if result is None:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": -32602, "message": "unknown tool " + str(params.get("name"))},
                    }
                )
            else:
                send({"jsonrpc": "2.0", "id": mid, "result": result})
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "error": {"code": -32601, "message": "method not found: " + str(method)},
                }
            )


if __name__ == "__main__":
    main()
