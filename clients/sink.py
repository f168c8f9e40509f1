"""A destination for the clients' live tests: answers every POST with 410
Gone (a permanent failure, so hookd dead-letters the delivery at once) and
counts the POSTs per path; `GET /seen/<path>` answers that count.

usage: python3 sink.py PORT_FILE  (writes the port it listens on there)
"""

import sys
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

seen: Counter[str] = Counter()


class Sink(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", "0")))
        seen[self.path] += 1
        self.send_response(410)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        count = str(seen[self.path.removeprefix("/seen")]).encode()
        self.send_response(200)
        self.send_header("content-length", str(len(count)))
        self.end_headers()
        self.wfile.write(count)

    def log_message(self, format: str, *args: object) -> None:
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
