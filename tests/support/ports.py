"""Free TCP ports on loopback, for the TF_CONFIG of local multi-worker tests."""

import socket


def free_ports(n):
    """`n` ports that were free when asked (bound once, then released)."""
    sockets = [socket.socket() for _ in range(n)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports
