"""A free TCP port on loopback, for a server this process is about to start."""

from __future__ import annotations

import socket


def free_loopback_port() -> int:
    """Ask the OS for a port nobody holds now; the caller binds it next."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
