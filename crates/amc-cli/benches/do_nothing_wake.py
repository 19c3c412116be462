"""A do-nothing long-poll server on a Unix socket: the peer of
`cargo bench -p amc-cli --bench relay_socket`.

It holds every `POST /mcp/relay` until a `POST /post`, then answers each held request
with the answer AMC gave (its HTTP body, read once from the file named on the command
line), written to each connection in turn; `GET /waiting` says how many it holds. The
bench drives it with the same clients as AMC, in the same run: what the machine, the
clients and the kernel's sockets cost a fan-out of that many answers, with a server that
does nothing else (Python's asyncio, one thread).

    python3 do_nothing_wake.py SOCKET ANSWER_FILE
"""

import asyncio
import json
import sys

answer = open(sys.argv[2], "rb").read()
held = []


def respond(writer, body, status=b"200 OK"):
    writer.write(b"HTTP/1.1 %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
                 % (status, len(body), body))


async def serve(reader, writer):
    try:
        while True:
            head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
            method, path = head[0].split(" ")[:2]
            length = next((int(v) for k, _, v in (line.partition(":") for line in head[1:])
                           if k.strip().lower() == "content-length"), 0)
            if length:
                await reader.readexactly(length)
            if method == "POST" and path == "/mcp/relay":
                held.append(writer)
            elif path == "/waiting":
                respond(writer, json.dumps({"waiting": len(held)}).encode())
            elif method == "POST" and path == "/post":
                woken = held[:]
                held.clear()
                for w in woken:
                    respond(w, answer)
                respond(writer, b'{"posted":true}')
            else:
                respond(writer, b"{}", b"404 Not Found")
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


async def main():
    server = await asyncio.start_unix_server(serve, path=sys.argv[1], backlog=4096)
    async with server:
        await server.serve_forever()


asyncio.run(main())
