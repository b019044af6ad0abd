"""A loopback stand-in for an OpenAI-compatible chat completions server
(Python stdlib only), for tests that drive flowfs's engine runs through
libcurl for real.

A test scripts the replies, one per request, in order:

    engine.reply(content="text")                      a plain answer
    engine.reply(tool_calls=[("set_parameters", {...})])
    engine.fail(500, "boom")                          an HTTP error
    engine.raw(b"{not json")                          a malformed body
    engine.slow(3.0, content="late")                  an answer after a delay
    engine.hold()  ...  engine.release()              an answer the test lets go
    engine.reply_with(func)                           func(request) -> reply dict

and reads what flowfs sent in engine.requests (the parsed bodies) and
engine.headers.  When the script is used up, the server answers 500
"script exhausted" so that a test never hangs on a missing reply.
"""
import json
import select
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    """What both servers' handlers share: HTTP/1.1, quiet, _send()."""
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, code, data, content_type="application/json", headers=None):
        try:
            self.send_response(code)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _client_gone(self):
        """Whether the client closed its end (the request was read whole,
        so a readable socket with nothing to read is its hang-up)."""
        ready, _, _ = select.select([self.connection], [], [], 0)
        try:
            return bool(ready) and not self.connection.recv(1, socket.MSG_PEEK)
        except OSError:
            return True


class FakeEngine:
    def __init__(self):
        self.script = []
        self.held = threading.Event()
        self.client_gone = threading.Event()   # it hung up on a held answer
        self.release_event = threading.Event()
        self.requests = []
        self.headers = []
        self.times = []         # when each request came
        self.lock = threading.Lock()
        engine = self

        class Chat(Handler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                with engine.lock:
                    engine.times.append(time.monotonic())
                    engine.headers.append(dict(self.headers))
                    try:
                        engine.requests.append(json.loads(body))
                    except ValueError:
                        engine.requests.append(None)
                    step = engine.script.pop(0) if engine.script else None
                if self.path.rstrip("/") != "/v1/chat/completions":
                    return self._send(404, b'{"error": "not found"}')
                if step is None:
                    return self._send(500, b'{"error": "script exhausted"}')
                kind, value, delay = step
                if delay:
                    time.sleep(delay)
                if kind == "hold":
                    # until the test lets go, or the client gives up
                    # (client_gone is set then)
                    engine.held.set()
                    deadline = time.monotonic() + 60
                    while not engine.release_event.wait(0.05):
                        if self._client_gone():
                            engine.client_gone.set()
                            return
                        if time.monotonic() > deadline:
                            break
                    kind, value = "json", value
                if kind == "status":
                    code, text, headers = value
                    body = text if isinstance(text, bytes) else text.encode()
                    return self._send(code, body, headers=headers)
                if kind == "drop":
                    # the connection closes with no answer at all
                    self.close_connection = True
                    return
                if kind == "raw":
                    return self._send(200, value)
                if kind == "func":
                    value = value(engine.requests[-1])
                return self._send(200, json.dumps(value).encode())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Chat)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def close(self):
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def completion(content=None, tool_calls=(), usage=(12, 34)):
        calls = [{"id": f"call_{i}", "type": "function",
                  "function": {"name": name,
                               "arguments": args if isinstance(args, str)
                               else json.dumps(args)}}
                 for i, (name, args) in enumerate(tool_calls)]
        msg = {"role": "assistant", "content": content}
        if calls:
            msg["tool_calls"] = calls
        return {"id": "chatcmpl-1", "object": "chat.completion",
                "choices": [{"index": 0, "message": msg,
                             "finish_reason": "tool_calls" if calls else "stop"}],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1],
                          "total_tokens": usage[0] + usage[1]}}

    def _add(self, kind, value, delay=0.0):
        with self.lock:
            self.script.append((kind, value, delay))

    def reply(self, content=None, tool_calls=(), delay=0.0):
        self._add("json", self.completion(content, tool_calls), delay)

    def slow(self, delay, content="late"):
        self.reply(content=content, delay=delay)

    def hold(self, content="held"):
        """A reply that waits for release(); held is set once it waits."""
        self._add("hold", self.completion(content))

    def release(self):
        self.release_event.set()

    def fail(self, code, text="error", delay=0.0, retry_after=None):
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        self._add("status", (code, text, headers), delay)

    def drop(self):
        """Close the connection without answering."""
        self._add("drop", None)

    def raw(self, data):
        self._add("raw", data)

    def reply_with(self, func):
        self._add("func", lambda req: func(req))

    def left(self):
        with self.lock:
            return len(self.script)


class FileServer:
    """A file server for URL inputs, on loopback unless `host` says:
    /file/<name> serves files[name]; /redirect/<n>/<name> redirects n
    times before it; /to-ftp redirects to an ftp:// URL; /goto/<URL,
    percent-encoded> redirects there; /slow/<name> sends files[name] in
    small pieces over `slow_seconds`; /chunked/<name> sends it without a
    Content-Length; /trickle/<name> sends it a byte every
    `trickle_seconds`; /hold/<name> sends 1 KiB pieces of it (over and
    over) every 0.1 s until `release` is set, then the end of the body
    (closing the connection).  hits counts requests per path; slow_ended
    maps the path of each /slow/ request whose handler has returned to
    whether it stopped early because the client went away (broken pipe,
    reset)."""

    def __init__(self, host="127.0.0.1"):
        self.files = {}
        self.hits = {}
        self.slow_ended = {}
        self.slow_seconds = 5.0
        self.trickle_seconds = 0.5
        self.release = threading.Event()
        server = self

        class Files(Handler):
            def do_GET(self):
                server.hits[self.path] = server.hits.get(self.path, 0) + 1
                parts = self.path.strip("/").split("/")
                try:
                    if parts[0] == "redirect":
                        n = int(parts[1])
                        to = f"/redirect/{n - 1}/{parts[2]}" if n > 1 else f"/file/{parts[2]}"
                        return self._redirect(to)
                    if parts[0] == "to-ftp":
                        return self._redirect("ftp://127.0.0.1/x.csv")
                    if parts[0] == "goto":
                        return self._redirect(urllib.parse.unquote(
                            self.path.split("/", 2)[2]))
                    data = server.files[parts[1]]
                except (KeyError, IndexError, ValueError):
                    return self._send(404, b"no such file")
                if parts[0] == "file":
                    return self._send(200, data, "application/octet-stream")
                if parts[0] == "chunked":
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for i in range(0, len(data), 1024):
                        piece = data[i:i + 1024]
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.write(b"0\r\n\r\n")
                    return
                if parts[0] in ("trickle", "hold"):
                    try:
                        self._drip(parts[0], data)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    self.close_connection = True
                    return
                if parts[0] == "slow":
                    pieces = 50
                    cut = False
                    try:
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        for i in range(pieces):
                            self.wfile.write(data[i * len(data) // pieces:
                                                  (i + 1) * len(data) // pieces])
                            self.wfile.flush()
                            time.sleep(server.slow_seconds / pieces)
                    except (BrokenPipeError, ConnectionResetError):
                        cut = True
                        self.close_connection = True
                    finally:
                        server.slow_ended[self.path] = cut
                    return
                return self._send(404, b"no such route")

            def _drip(self, how, data):
                self.send_response(200)
                if how == "trickle":
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if how == "trickle":
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(server.trickle_seconds)
                    return
                # no Content-Length: the body ends when the connection does
                while not server.release.wait(0.1):
                    self.wfile.write(data[:1024])
                    self.wfile.flush()
                self.wfile.write(data)

            def _redirect(self, to):
                self.send_response(302)
                self.send_header("Location", to)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer((host, 0), Files)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://{host}:{self.server.server_address[1]}"

    def close(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
