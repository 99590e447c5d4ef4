"""Timing, inside a worker of benchmarks/run.py: throughput passes, latencies, TF threads."""

import time


class Timing:
    """Wall-clock and process CPU seconds of `calls` calls over `num_batches` cycling batches."""

    def __init__(self, durations, cpu, num_batches):
        self.durations, self.cpu, self.num_batches = durations, cpu, num_batches
        self.calls, self.wall = len(durations), sum(durations)

    def best_pass(self):
        """Seconds of one pass over the batches, each batch at its fastest call.

        On a machine shared with other work this is the least disturbed estimate (every
        batch is timed several times; other processes only ever slow a call down).
        """
        return sum(min(self.durations[i::self.num_batches]) for i in range(self.num_batches))

    def rates(self, per_call):
        """`per_call` items per call -> dict(per_s=items/s wall (mean), best_per_s=items/s of
        the best pass, per_cpu_s=items per CPU-second)."""
        return dict(per_s=per_call * self.calls / self.wall,
                    best_per_s=per_call * self.num_batches / self.best_pass(),
                    per_cpu_s=per_call * self.calls / self.cpu)


def time_calls(fn, batches, seconds, warmup=2, min_passes=3):
    """Calls `fn` over `batches` (cycling) for about `seconds` and at least `min_passes`
    whole passes; returns a Timing."""
    for i in range(warmup):
        fn(batches[i % len(batches)])
    durations, cpu_start, start = [], time.process_time(), time.perf_counter()
    while True:
        t = time.perf_counter()
        fn(batches[len(durations) % len(batches)])
        durations.append(time.perf_counter() - t)
        passes, rest = divmod(len(durations), len(batches))
        if not rest and passes >= min_passes and time.perf_counter() - start >= seconds:
            return Timing(durations, time.process_time() - cpu_start, len(batches))


def latencies(fn, batch, seconds, warmup=3, min_calls=20):
    """Seconds of each call of `fn(batch)`, over about `seconds` and at least `min_calls`."""
    for _ in range(warmup):
        fn(batch)
    times, start = [], time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < min_calls:
        t = time.perf_counter()
        fn(batch)
        times.append(time.perf_counter() - t)
    return times


def configure_tf(spec):
    import tensorflow as tf

    if spec.get("intra_threads"):
        tf.config.threading.set_intra_op_parallelism_threads(spec["intra_threads"])
    if spec.get("inter_threads"):
        tf.config.threading.set_inter_op_parallelism_threads(spec["inter_threads"])
