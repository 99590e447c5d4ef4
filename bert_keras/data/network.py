"""Whether a download can reach its hosts, found out in seconds: one probe, a TCP connection to
each of a few of the download's hosts at once (or to the proxy the environment names for
them, as requests connects), bounded by a timeout. Without it, a machine without network
spends minutes in the DNS and connection retries of every URL before the download fails.

Example (the .invalid domain never resolves):
    >>> unreachable(["https://tfds-probe.invalid/data.tsv"])  # doctest: +ELLIPSIS
    'tfds-probe.invalid: ...'
    >>> unreachable(["gs://bucket/data.tsv"]) is None  # not a network URL: nothing to probe
    True
"""

import collections
import queue
import socket
import threading
import time
import urllib.parse
import urllib.request

PORTS = {"http": 80, "https": 443, "ftp": 21}


def unreachable(urls, timeout=3.0, max_hosts=3):
    """None when one of the hosts of `urls` (the `max_hosts` that most of them name) takes a
    TCP connection within `timeout` seconds, else why not, in one line
    ("HOST: reason; HOST: reason"). URLs of other schemes (gs://, files) are not probed."""
    targets = _targets(urls)[:max_hosts]
    answers = queue.Queue()
    for target in targets:  # daemon threads: a resolver that never answers holds no exit
        threading.Thread(target=_connect, args=(target, timeout, answers), daemon=True).start()
    reasons = dict.fromkeys(targets, f"no answer in {timeout:g} s")
    deadline = time.monotonic() + timeout
    for _ in targets:
        try:
            target, error = answers.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            break
        if error is None:
            return None
        reasons[target] = error
    return "; ".join(f"{host}: {reason}" for (host, _), reason in reasons.items()) or None


def _targets(urls):
    """(host, port) to connect to for `urls`, the most named first: each URL's host, or the
    proxy that the environment gives its scheme (HTTPS_PROXY, ...) unless NO_PROXY bypasses
    it."""
    proxies = urllib.request.getproxies()
    counts = collections.Counter()
    for url in urls:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in PORTS or not parts.hostname:
            continue
        target = parts.hostname, parts.port or PORTS[parts.scheme]
        if parts.scheme in proxies and not urllib.request.proxy_bypass(parts.hostname):
            proxy = urllib.parse.urlsplit(proxies[parts.scheme])
            target = proxy.hostname, proxy.port or PORTS.get(proxy.scheme, 80)
        counts[target] += 1
    return [target for target, _ in counts.most_common()]


def _connect(target, timeout, answers):
    try:
        with socket.create_connection(target, timeout=timeout):
            answers.put((target, None))
    except socket.gaierror as e:  # the name does not resolve: no DNS, or no such host
        answers.put((target, e.strerror or str(e)))
    except TimeoutError:
        answers.put((target, f"no answer in {timeout:g} s"))
    except OSError as e:
        answers.put((target, e.strerror or type(e).__name__))


__all__ = ["unreachable"]
