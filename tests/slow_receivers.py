"""Hostile webhook receivers on 127.0.0.1: a tarpit (accepts, never answers) and a dripper (answers one header
byte at a time, each just inside a read time-out), for tests of delivery deadlines and isolation."""

import socket
import threading


class SlowReceiver:
    """A TCP server on 127.0.0.1 that reads each request and then either says nothing (`drip_every` None) or
    sends a status line and then one header byte every `drip_every` seconds, for ever. Stopped on exit."""

    def __init__(self, drip_every: float | None = None) -> None:
        self.drip_every = drip_every
        self.accepted = 0
        self._stop = threading.Event()
        self._server = socket.create_server(("127.0.0.1", 0), backlog=128)
        self._server.settimeout(0.1)
        self.port = self._server.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/hook"
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def __enter__(self) -> "SlowReceiver":
        accepting = threading.Thread(target=self._accept, name="slow-receiver", daemon=True)
        accepting.start()
        self._threads.append(accepting)
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        for thread in list(self._threads):
            thread.join(timeout=5)
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.accepted += 1
            serving = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            serving.start()
            self._threads.append(serving)

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(0.2)
            try:
                while b"\r\n\r\n" not in conn.recv(65536) and not self._stop.is_set():
                    pass
                if self.drip_every is not None:
                    conn.sendall(b"HTTP/1.1 200 OK\r\n")
                while not self._stop.wait(self.drip_every or 0.2):
                    if self.drip_every is not None:
                        conn.sendall(b"X")  # a header line that never ends
            except OSError:
                return
