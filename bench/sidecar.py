"""A `skillmem serve` child spoken to as a host does: LSP-framed JSON-RPC over its stdin and
stdout. Shared by the bench scripts (`from sidecar import Sidecar`; they run from this folder).
"""
import json
import subprocess


class Sidecar:
    def __init__(self, binary, env, stderr=subprocess.DEVNULL):
        self.p = subprocess.Popen([binary, "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)

    def send(self, m):
        b = json.dumps(m).encode()
        self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
        self.p.stdin.flush()

    def recv(self):
        n = None
        while True:
            line = self.p.stdout.readline()
            if line in (b"\r\n", b"\n"):
                break
            if line.lower().startswith(b"content-length"):
                n = int(line.split(b":")[1])
        return json.loads(self.p.stdout.read(n))

    def call(self, i, method, params):
        """Sends request `i` and returns its answer (notifications before it are skipped)."""
        self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        while True:
            r = self.recv()
            if r.get("id") == i:
                return r

    def initialize(self, root):
        self.call(0, "initialize", {"processId": None, "rootUri": "file://" + root, "capabilities": {}})
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def stop(self, i):
        self.call(i, "shutdown", None)
        self.send({"jsonrpc": "2.0", "method": "exit"})
        self.p.wait()
